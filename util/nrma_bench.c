/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * nrma_bench: what notification costs.  For each configuration a fresh
 * pair of processes (so that FI_NRMA_* settings apply) streams RMA writes
 * from an initiator to a target and prints the rate, as a table:
 *
 *   plain    writes without notification
 *   auto     notified writes, atomics fenced only after reads (default)
 *   always   notified writes, every atomic fenced (FI_NRMA_NOTIFY_FENCE)
 *   read     notified reads (fenced, as ordering needs)
 *
 * Compare ratios within one run: absolute numbers depend on the machine.
 * Usage: nrma_bench [-n ops] [-s size] [-w window]
 */
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

#include "nrma_try.h"

struct config {
	const char *name;
	const char *fence; /* FI_NRMA_NOTIFY_FENCE */
	int notify;
	int read;
};

struct side {
	struct try_node n;
	struct fid_cntr *cntr;
	struct fid_mr *mr;
	char *buf;
};

struct target_info {
	char name[64];
	size_t namelen;
	uint64_t addr;
	uint64_t key;
};

static size_t opt_ops = 20000, opt_size = 8, opt_window = 32;

static void open_side(struct side *s, int notify)
{
	struct fi_cntr_attr cntr_attr = { .events = FI_CNTR_EVENTS_COMP };

	try_domain_open(&s->n, FI_RMA | (notify ? FI_RMA_EVENT : 0));
	try_ep_open(&s->n, 4096);
	TRY(fi_cntr_open(s->n.domain, &cntr_attr, &s->cntr, NULL));
	if (notify)
		TRY(fi_ep_bind(s->n.ep, &s->cntr->fid,
			       FI_REMOTE_WRITE | FI_REMOTE_READ));
	TRY(fi_enable(s->n.ep));
	s->buf = calloc(1, opt_size ? opt_size : 1);
	TRY(fi_mr_reg(s->n.domain, s->buf, opt_size ? opt_size : 1,
		      FI_REMOTE_WRITE | FI_REMOTE_READ | FI_READ | FI_WRITE, 0,
		      0, 0, &s->mr, NULL));
}

static void close_side(struct side *s)
{
	TRY(fi_close(&s->mr->fid));
	try_ep_close(&s->n);
	TRY(fi_close(&s->cntr->fid));
	try_domain_close(&s->n);
	free(s->buf);
}

/*
 * Progresses (to accept the connection) until the initiator says it is
 * done; the counter itself needs no progress.
 */
static void run_target(const struct config *c, int to_init, int from_init)
{
	struct target_info ti = { .namelen = sizeof(ti.name) };
	struct pollfd pfd = { .fd = from_init, .events = POLLIN };
	struct fi_cq_entry comp;
	struct side s;
	char done;

	open_side(&s, c->notify);
	TRY(fi_getname(&s.n.ep->fid, ti.name, &ti.namelen));
	ti.addr = try_mr_base(s.n.info, s.buf);
	ti.key = fi_mr_key(s.mr);
	if (write(to_init, &ti, sizeof(ti)) != sizeof(ti))
		exit(1);
	while (poll(&pfd, 1, 0) == 0)
		fi_cq_read(s.n.cq, &comp, 1);
	if (read(from_init, &done, 1) != 1)
		exit(1);
	if (c->notify && fi_cntr_read(s.cntr) != opt_ops) {
		fprintf(stderr, "target counter %" PRIu64 ", expected %zu\n",
			fi_cntr_read(s.cntr), opt_ops);
		exit(1);
	}
	close_side(&s);
	exit(0);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static ssize_t post(struct side *s, const struct config *c, fi_addr_t peer,
		    const struct target_info *ti)
{
	void *desc = fi_mr_desc(s->mr);

	return c->read ? fi_read(s->n.ep, s->buf, opt_size, desc, peer,
				 ti->addr, ti->key, NULL) :
			 fi_write(s->n.ep, s->buf, opt_size, desc, peer,
				  ti->addr, ti->key, NULL);
}

static double run_initiator(const struct config *c, int from_target,
			    int to_target)
{
	struct target_info ti;
	struct fi_cq_entry comp[16];
	struct side s;
	fi_addr_t peer;
	size_t posted = 0, done = 0;
	double start;

	open_side(&s, 0);
	if (read(from_target, &ti, sizeof(ti)) != sizeof(ti))
		exit(1);
	if (fi_av_insert(s.n.av, ti.name, 1, &peer, 0, NULL) != 1)
		exit(1);
	start = now();
	while (done < opt_ops) {
		ssize_t n;

		while (posted < opt_ops && posted - done < opt_window) {
			n = post(&s, c, peer, &ti);
			if (n == -FI_EAGAIN)
				break;
			TRY((int) n);
			posted++;
		}
		n = fi_cq_read(s.n.cq, comp, 16);
		if (n > 0)
			done += n;
		else if (n != -FI_EAGAIN)
			TRY((int) n);
	}
	start = now() - start;
	if (write(to_target, "x", 1) != 1)
		exit(1);
	close_side(&s);
	return start;
}

/* One configuration in two fresh processes; returns seconds, or < 0. */
static double measure(const struct config *c)
{
	int t2i[2], i2t[2], res[2], status;
	double secs = -1;
	pid_t target, init;

	if (pipe(t2i) || pipe(i2t) || pipe(res))
		return -1;
	fflush(stdout); /* children must not print our buffer again */
	if (c->fence)
		setenv("FI_NRMA_NOTIFY_FENCE", c->fence, 1);
	target = fork();
	if (!target)
		run_target(c, t2i[1], i2t[0]);
	init = fork();
	if (!init) {
		secs = run_initiator(c, t2i[0], i2t[1]);
		exit(write(res[1], &secs, sizeof(secs)) != sizeof(secs));
	}
	unsetenv("FI_NRMA_NOTIFY_FENCE");
	if (read(res[0], &secs, sizeof(secs)) != sizeof(secs))
		secs = -1;
	waitpid(init, &status, 0);
	waitpid(target, &status, 0);
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		secs = -1;
	return secs;
}

int main(int argc, char **argv)
{
	static const struct config configs[] = {
		{ "plain", NULL, 0, 0 },
		{ "auto", "auto", 1, 0 },
		{ "always", "always", 1, 0 },
		{ "read", "auto", 1, 1 },
	};
	double base = 0;
	int opt;

	while ((opt = getopt(argc, argv, "n:s:w:")) != -1) {
		switch (opt) {
		case 'n':
			opt_ops = strtoul(optarg, NULL, 0);
			break;
		case 's':
			opt_size = strtoul(optarg, NULL, 0);
			break;
		case 'w':
			opt_window = strtoul(optarg, NULL, 0);
			break;
		default:
			fprintf(stderr,
				"usage: %s [-n ops] [-s size] [-w window]\n",
				argv[0]);
			return 2;
		}
	}
	printf("%-8s %10s %8s %8s %12s %10s\n", "config", "size", "window",
	       "ops", "ops/s", "vs plain");
	for (size_t i = 0; i < sizeof(configs) / sizeof(configs[0]); i++) {
		double secs = measure(&configs[i]);

		if (secs < 0) {
			printf("%-8s failed\n", configs[i].name);
			return 1;
		}
		if (!i)
			base = secs;
		printf("%-8s %10zu %8zu %8zu %12.0f %9.2fx\n", configs[i].name,
		       opt_size, opt_window, opt_ops, opt_ops / secs,
		       base / secs);
	}
	return 0;
}
