/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * nrma_bench's memory and set-up figures: a target endpoint with a remote
 * counter, which makes no call, and an initiator process that connects to
 * it from 1 to max_peers endpoints of its own.  The target measures its
 * heap and its mappings as peers arrive; the initiator times each new
 * peer's first write (connection, key lookup and the write) against a
 * second one.  Run at two receive depths, to show what depth costs.
 */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_rma.h>

#include "nrma_bench.h"
#include "nrma_try.h"

struct peers_target {
	char name[64];
	size_t namelen;
	uint64_t addr, key;
};

/* What the initiator reports after k peers, and the target adds. */
struct peers_row {
	size_t peers;
	double connect_s, write_s; /* sums over the peers */
	long heap, verbs_maps, rss;
};

struct peers_mem {
	long heap, verbs_maps, rss;
};

/*
 * The heap in use, the device's rings mapped into us (the queue pairs),
 * and all resident memory.
 */
static void peers_measure(struct peers_mem *m)
{
	struct mallinfo2 mi = mallinfo2();
	FILE *f = fopen("/proc/self/maps", "r");
	unsigned long lo, hi, pages;
	char line[512];

	*m = (struct peers_mem){ (long) (mi.uordblks + mi.hblkhd), 0, 0 };
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "%lx-%lx", &lo, &hi) == 2 &&
		    strstr(line, "/dev/infiniband/"))
			m->verbs_maps += (long) (hi - lo);
	if (f)
		fclose(f);
	f = fopen("/proc/self/statm", "r");
	if (f && fscanf(f, "%*u %lu", &pages) == 1)
		m->rss = (long) pages * sysconf(_SC_PAGESIZE);
	if (f)
		fclose(f);
}

static void peers_run_target(int sock, int result_fd)
{
	struct fi_cntr_attr cntr_attr = { .events = FI_CNTR_EVENTS_COMP };
	struct peers_target t = { .namelen = sizeof(t.name) };
	struct peers_mem base, now;
	struct peers_row row;
	struct try_node n;
	struct fid_cntr *cntr;
	struct fid_mr *mr;
	static char buf[64];

	try_domain_open(&n, FI_RMA | FI_RMA_EVENT);
	try_ep_open(&n, 64);
	TRY(fi_cntr_open(n.domain, &cntr_attr, &cntr, NULL));
	TRY(fi_ep_bind(n.ep, &cntr->fid, FI_REMOTE_WRITE));
	TRY(fi_enable(n.ep));
	TRY(fi_mr_reg(n.domain, buf, sizeof(buf), FI_REMOTE_WRITE, 0, 0, 0, &mr,
		      NULL));
	TRY(fi_getname(&n.ep->fid, t.name, &t.namelen));
	t.addr = try_mr_base(n.info, buf);
	t.key = fi_mr_key(mr);
	peers_measure(&base);
	if (write(sock, &t, sizeof(t)) != sizeof(t))
		exit(1);
	/* No call into the provider from here on: its own thread accepts. */
	while (read(sock, &row, sizeof(row)) == sizeof(row)) {
		peers_measure(&now);
		row.heap = now.heap - base.heap;
		row.verbs_maps = now.verbs_maps - base.verbs_maps;
		row.rss = now.rss - base.rss;
		if (write(result_fd, &row, sizeof(row)) != sizeof(row) ||
		    write(sock, "k", 1) != 1)
			exit(1);
	}
	if (fi_cntr_read(cntr) != 2 * row.peers)
		exit(1);
	TRY(fi_close(&mr->fid));
	try_ep_close(&n);
	TRY(fi_close(&cntr->fid));
	try_domain_close(&n);
	exit(0);
}

/* Seconds one 8-byte write from ep takes to complete. */
static double peers_write(struct try_node *n, struct fid_ep *ep, fi_addr_t peer,
			  const struct peers_target *t, void *src,
			  struct fid_mr *mr)
{
	struct fi_cq_entry comp;
	double start = try_now();
	ssize_t rc;

	/* A new peer's first write waits for its connection: -FI_EAGAIN. */
	while ((rc = fi_write(ep, src, 8, fi_mr_desc(mr), peer, t->addr, t->key,
			      NULL)) == -FI_EAGAIN)
		fi_cq_read(n->cq, &comp, 1);
	TRY((int) rc);
	while ((rc = fi_cq_read(n->cq, &comp, 1)) == -FI_EAGAIN)
		;
	TRY(rc == 1 ? 0 : (int) rc);
	return try_now() - start;
}

static void peers_run_initiator(int sock, size_t max_peers)
{
	struct peers_target t;
	struct peers_row row = { 0 };
	struct fid_ep **eps = calloc(max_peers, sizeof(*eps));
	struct try_node n;
	struct fid_mr *mr;
	static char src[8];
	fi_addr_t peer;
	char ack;

	try_domain_open(&n, FI_RMA);
	try_ep_open(&n, 64);
	TRY(fi_enable(n.ep));
	TRY(fi_mr_reg(n.domain, src, sizeof(src), FI_WRITE, 0, 0, 0, &mr,
		      NULL));
	if (!eps || read(sock, &t, sizeof(t)) != sizeof(t))
		exit(1);
	TRY(fi_av_insert(n.av, t.name, 1, &peer, 0, NULL) == 1 ? 0 :
								 -FI_EINVAL);
	for (size_t k = 0; k < max_peers; k++) {
		TRY(fi_endpoint(n.domain, n.info, &eps[k], NULL));
		TRY(fi_ep_bind(eps[k], &n.av->fid, 0));
		TRY(fi_ep_bind(eps[k], &n.cq->fid, FI_TRANSMIT | FI_RECV));
		TRY(fi_enable(eps[k]));
		row.connect_s += peers_write(&n, eps[k], peer, &t, src, mr);
		row.write_s += peers_write(&n, eps[k], peer, &t, src, mr);
		row.peers = k + 1;
		if ((row.peers & k) && row.peers != max_peers)
			continue; /* report at powers of two, and the last */
		if (write(sock, &row, sizeof(row)) != sizeof(row) ||
		    read(sock, &ack, 1) != 1)
			exit(1);
	}
	for (size_t k = 0; k < max_peers; k++)
		TRY(fi_close(&eps[k]->fid));
	free(eps);
	TRY(fi_close(&mr->fid));
	try_node_close(&n);
	exit(0);
}

/* One receive depth: a row per report, or -1. */
static int peers_depth(FILE *table, size_t max_peers, const char *depth)
{
	int sp[2], res[2], status, rc = 0;
	struct peers_row row;
	pid_t pid[2];

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sp) || pipe(res))
		return -1;
	fflush(NULL);
	setenv("FI_NRMA_RX_SIZE", depth, 1);
	pid[0] = fork();
	if (!pid[0] && !close(sp[1]))
		peers_run_target(sp[0], res[1]);
	pid[1] = fork();
	if (!pid[1] && !close(sp[0]) && !close(res[1]))
		peers_run_initiator(sp[1], max_peers);
	unsetenv("FI_NRMA_RX_SIZE");
	close(sp[0]);
	close(sp[1]);
	close(res[1]);
	while (read(res[0], &row, sizeof(row)) == sizeof(row)) {
		double k = (double) row.peers;

		fprintf(table, "%8s %6zu %10.1f %12.1f %12.1f %11.2f %9.1f\n",
			depth, row.peers, (double) row.heap / 1024 / k,
			(double) row.verbs_maps / 1024 / k,
			(double) row.rss / 1024 / k, row.connect_s / k * 1e3,
			row.write_s / k * 1e6);
	}
	close(res[0]);
	for (int i = 0; i < 2; i++)
		if (waitpid(pid[i], &status, 0) < 0 || !WIFEXITED(status) ||
		    WEXITSTATUS(status))
			rc = -1;
	return rc;
}

int bench_peers(FILE *table, size_t max_peers)
{
	int rc;

	fprintf(table,
		"\nmemory per connected peer at a target endpoint, and set-up "
		"time per peer\n%8s %6s %10s %12s %12s %11s %9s\n",
		"rx_size", "peers", "heap KiB", "verbs KiB", "RSS KiB",
		"connect ms", "write us");
	rc = peers_depth(table, max_peers, "64");
	return peers_depth(table, max_peers, "1024") || rc ? -1 : 0;
}
