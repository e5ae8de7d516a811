/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * nrma_soak: notified writes for a long time, checked.  A target gives
 * each of its initiators a ring of 8-byte slots, registered with
 * FI_RMA_EVENT and bound to a counter of that initiator's own; write j
 * (counting from 1) of an initiator puts the stamp j into slot
 * (j - 1) % ring.  The target calls nothing but fi_cntr_read: every time
 * counter i moves to c, slot (c - 1) % ring must already hold a stamp
 * that is c or a later write to the same slot (c + k * ring); at the end
 * every counter is exactly the number of writes, and stays there.  A line
 * of progress goes to stderr every few seconds; the result is a table.
 *
 * Usage: nrma_soak [-i initiators] [-n writes each] [-w window] [-r ring]
 * (defaults: 4, 2500000, 16, 4096: ten million writes).  Not a test: it
 * runs for as long as the writes take.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
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

#define MAX_INIT 16

static long opt_init = 4, opt_ops = 2500000, opt_window = 16, opt_ring = 4096;

/* What the target tells initiator i. */
struct soak_target {
	char name[64];
	size_t namelen;
	uint64_t addr;
	uint64_t key;
};

static void soak_open(struct try_node *n)
{
	try_domain_open(n, FI_RMA | FI_RMA_EVENT);
	try_ep_open(n, 1024);
	TRY(fi_enable(n->ep));
}

static void soak_io(int fd, void *buf, size_t len, bool out)
{
	for (size_t done = 0; done < len;) {
		ssize_t n = out ? write(fd, (char *) buf + done, len - done) :
				  read(fd, (char *) buf + done, len - done);

		if (n <= 0 && !(n < 0 && errno == EINTR)) {
			fprintf(stderr, "pipe: %s\n",
				n ? strerror(errno) : "EOF");
			exit(1);
		}
		if (n > 0)
			done += n;
	}
}

/* Initiator me: opt_ops stamps into its ring, opt_window at a time. */
static void soak_initiator(int fd)
{
	struct soak_target t;
	uint64_t *stamps = calloc(opt_window, sizeof(*stamps));
	struct try_node n;
	fi_addr_t dest;
	long posted = 0, done = 0;

	soak_io(fd, &t, sizeof(t), false);
	soak_open(&n);
	if (fi_av_insert(n.av, t.name, 1, &dest, 0, NULL) != 1)
		exit(1);
	while (done < opt_ops) {
		struct fi_cq_entry comp[16];
		ssize_t ret = -FI_EAGAIN;

		if (posted < opt_ops && posted - done < opt_window) {
			uint64_t *stamp = &stamps[posted % opt_window];

			*stamp = posted + 1;
			ret = fi_write(n.ep, stamp, sizeof(*stamp), NULL, dest,
				       t.addr + 8 * (posted % opt_ring), t.key,
				       NULL);
			if (ret && ret != -FI_EAGAIN)
				TRY(ret);
			posted += !ret;
		}
		ret = fi_cq_read(n.cq, comp, 16);
		if (ret == -FI_EAVAIL) {
			struct fi_cq_err_entry err = { 0 };

			fi_cq_readerr(n.cq, &err, 0);
			fprintf(stderr, "write failed: %s (%d)\n",
				fi_strerror(err.err), err.prov_errno);
			exit(1);
		}
		if (ret > 0)
			done += ret;
		else if (ret != -FI_EAGAIN)
			TRY(ret);
	}
	soak_io(fd, &done, sizeof(done), true);
	try_node_close(&n);
}

struct soak_ring {
	struct fid_mr *mr;
	struct fid_cntr *cntr;
	volatile uint64_t *slots;
	uint64_t seen; /* the counter's last value */
	uint64_t checks;
	double rate;
	double last;
};

/* Counter i moved from r->seen to c: the slots of c and before hold data. */
static void soak_check(struct soak_ring *r, long i, uint64_t c)
{
	uint64_t from = r->seen + 1 > c ? c : r->seen + 1;

	/* The latest write counted must be in place, and the ones before
	 * it, unless a later lap has overwritten their slot already. */
	for (uint64_t w = c; w >= from && w + opt_ring > c; w--) {
		uint64_t got = r->slots[(w - 1) % opt_ring];

		if (got < w || (got - w) % opt_ring) {
			fprintf(stderr,
				"initiator %ld: counter at %" PRIu64
				" but slot of write %" PRIu64 " holds %" PRIu64
				": the counter is ahead of the data\n",
				i, c, w, got);
			exit(1);
		}
		r->checks++;
		if (w == 1)
			break;
	}
	r->seen = c;
}

static void soak_target(int *fds, pid_t *kids)
{
	struct fi_cntr_attr cattr = { .events = FI_CNTR_EVENTS_COMP };
	struct soak_ring ring[MAX_INIT];
	struct try_node n;
	double start, report;
	long finished = 0;

	soak_open(&n);
	for (long i = 0; i < opt_init; i++) {
		struct soak_target t = { .namelen = sizeof(t.name) };
		struct soak_ring *r = &ring[i];

		memset(r, 0, sizeof(*r));
		r->slots = calloc(opt_ring, sizeof(uint64_t));
		TRY(fi_cntr_open(n.domain, &cattr, &r->cntr, NULL));
		TRY(fi_mr_reg(n.domain, (void *) r->slots,
			      opt_ring * sizeof(uint64_t), FI_REMOTE_WRITE, 0,
			      0, FI_RMA_EVENT, &r->mr, NULL));
		TRY(fi_mr_bind(r->mr, &r->cntr->fid, FI_REMOTE_WRITE));
		TRY(fi_mr_enable(r->mr));
		TRY(fi_getname(&n.ep->fid, t.name, &t.namelen));
		t.addr = try_mr_base(n.info, (const void *) r->slots);
		t.key = fi_mr_key(r->mr);
		soak_io(fds[i], &t, sizeof(t), true);
	}
	start = report = try_now();
	while (finished < opt_init) {
		finished = 0;
		for (long i = 0; i < opt_init; i++) {
			uint64_t c = fi_cntr_read(ring[i].cntr);

			if (c > (uint64_t) opt_ops) {
				fprintf(stderr,
					"counter %ld at %" PRIu64
					" of %ld writes\n",
					i, c, opt_ops);
				exit(1);
			}
			if (c != ring[i].seen)
				soak_check(&ring[i], i, c);
			finished += c == (uint64_t) opt_ops;
		}
		if (try_now() - report > 5) {
			uint64_t sum = 0;

			for (long i = 0; i < opt_init; i++)
				sum += ring[i].seen;
			report = try_now();
			fprintf(stderr,
				"%.0f s: %" PRIu64 " of %ld writes "
				"counted (%.0f/s)\n",
				report - start, sum, opt_init * opt_ops,
				sum / (report - start));
		}
	}
	printf("%-10s %12s %12s %12s\n", "initiator", "writes", "counted",
	       "checks");
	for (long i = 0; i < opt_init; i++) {
		long got;
		int status;

		soak_io(fds[i], &got, sizeof(got), false);
		waitpid(kids[i], &status, 0);
		if (got != opt_ops || !WIFEXITED(status) || WEXITSTATUS(status))
			exit(1);
		sleep(i ? 0 : 1); /* nothing counts late */
		printf("%-10ld %12ld %12" PRIu64 " %12" PRIu64 "\n", i, got,
		       fi_cntr_read(ring[i].cntr), ring[i].checks);
		if (fi_cntr_read(ring[i].cntr) != (uint64_t) opt_ops)
			exit(1);
	}
	printf("%ld notified writes in %.1f s (%.0f/s): counts exact, "
	       "no counter ahead of its data\n",
	       opt_init * opt_ops, try_now() - start,
	       opt_init * opt_ops / (try_now() - start));
	for (long i = 0; i < opt_init; i++) {
		TRY(fi_close(&ring[i].mr->fid));
		TRY(fi_close(&ring[i].cntr->fid));
		free((void *) ring[i].slots);
	}
	try_node_close(&n);
}

int main(int argc, char **argv)
{
	int fds[MAX_INIT], opt;
	pid_t kids[MAX_INIT];

	while ((opt = getopt(argc, argv, "i:n:w:r:")) != -1) {
		long v = strtol(optarg, NULL, 0);

		switch (opt) {
		case 'i':
			opt_init = v;
			break;
		case 'n':
			opt_ops = v;
			break;
		case 'w':
			opt_window = v;
			break;
		case 'r':
			opt_ring = v;
			break;
		default:
			fprintf(stderr,
				"usage: %s [-i initiators] [-n writes] "
				"[-w window] [-r ring]\n",
				argv[0]);
			return 2;
		}
	}
	if (opt_init < 1 || opt_init > MAX_INIT || opt_ops < 1 ||
	    opt_window < 1 || opt_ring < opt_window) {
		fprintf(stderr, "%s: bad option values\n", argv[0]);
		return 2;
	}
	/* Initiators first: no verbs state crosses a fork. */
	for (long i = 0; i < opt_init; i++) {
		int sv[2];

		if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
			return 1;
		kids[i] = fork();
		if (kids[i] < 0)
			return 1;
		if (!kids[i]) {
			close(sv[0]);
			soak_initiator(sv[1]);
			exit(0);
		}
		close(sv[1]);
		fds[i] = sv[0];
	}
	soak_target(fds, kids);
	return 0;
}
