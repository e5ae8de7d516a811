/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * nrma_halo: an example of notification sets (fi_ext_nrma.h), a 1-D halo
 * exchange on a ring of ranks.  Each rank holds cells of a global array
 * and, every iteration, writes its two edge cells into its neighbours'
 * ghost cells with write-notify: counter 0 of the neighbour's set counts
 * left ghosts, counter 1 right ones.  A rank waits on its own counters
 * (fi_nrma_nset_wait) and never makes a progress call for its neighbours:
 * their writes count themselves.  Ghosts alternate between two slots by
 * iteration parity, as a neighbour may be one iteration ahead.
 *
 * The ranks are processes of this one (fork); at the end the parent
 * checks every cell against the same computation done serially.
 * Usage: nrma_halo [-p ranks] [-n cells] [-i iterations]
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_ext_nrma.h>

#include "nrma_try.h"

enum { LEFT, RIGHT }; /* ghost sides, and the counter of each */

/* What a rank tells the others. */
struct card {
	char name[64];
	uint64_t ghost_addr; /* of ghost[0][0] at the rank */
	uint64_t key;
	struct fi_nrma_nset_desc set;
};

struct rank {
	int me, ranks;
	size_t cells;
	struct try_node n;
	struct fid_mr *mr;
	struct fid_nrma_nset *nset;
	struct fi_nrma_ops_ep *ops;
	uint64_t ghost[2][2]; /* [parity][side], registered */
	uint64_t edge[2];     /* what goes out: [LEFT] to the left rank */
	fi_addr_t peer[2];    /* [LEFT] and [RIGHT] neighbours */
	struct card card[2];
};

static uint64_t step(uint64_t left, uint64_t mid, uint64_t right)
{
	return left + 2 * mid + right;
}

static void rank_open(struct rank *r)
{
	struct fi_nrma_nset_attr set_attr = { .count = 2 };
	struct fi_nrma_ops_domain *dops;

	try_domain_open(&r->n, FI_RMA);
	try_ep_open(&r->n, 0);
	TRY(fi_enable(r->n.ep));
	TRY(fi_mr_reg(r->n.domain, r->ghost, sizeof(r->ghost), FI_REMOTE_WRITE,
		      0, 0, 0, &r->mr, NULL));
	TRY(fi_nrma_domain_ops(r->n.domain, &dops));
	TRY(fi_nrma_nset_open(dops, r->n.domain, &set_attr, &r->nset, NULL));
	TRY(fi_nrma_ep_ops(r->n.ep, &r->ops));
}

static struct card rank_card(struct rank *r)
{
	struct card c = { .key = fi_mr_key(r->mr) };
	size_t len = sizeof(c.name);

	TRY(fi_getname(&r->n.ep->fid, c.name, &len));
	c.ghost_addr = try_mr_base(r->n.info, r->ghost);
	TRY(fi_nrma_nset_desc(r->nset, &c.set));
	return c;
}

/* Edge side goes to the neighbour on that side, into its other ghost. */
static void send_edge(struct rank *r, int side, int parity)
{
	const struct card *to = &r->card[side];
	int ghost = side == LEFT ? RIGHT : LEFT;
	uint64_t addr = to->ghost_addr +
			(uint64_t) (parity * 2 + ghost) * sizeof(uint64_t);
	ssize_t ret;

	/* The first write to a neighbour waits while it connects. */
	while ((ret = fi_nrma_write_notify(
			r->ops, r->n.ep, &r->edge[side], sizeof(uint64_t), NULL,
			r->peer[side], addr, to->key, &to->set, ghost, NULL)) ==
	       -FI_EAGAIN)
		;
	TRY(ret);
}

static void wait_sent(struct rank *r, int n)
{
	struct fi_cq_entry e[2];

	while (n > 0) {
		ssize_t got = fi_cq_read(r->n.cq, e, n);

		if (got == -FI_EAGAIN)
			continue;
		if (got < 0) {
			fprintf(stderr, "rank %d: a write-notify failed: %s\n",
				r->me, fi_strerror((int) -got));
			exit(1);
		}
		n -= (int) got;
	}
}

static void iterate(struct rank *r, uint64_t *u, int iter)
{
	int parity = iter % 2;
	uint64_t left, prev;

	r->edge[LEFT] = u[0];
	r->edge[RIGHT] = u[r->cells - 1];
	send_edge(r, LEFT, parity);
	send_edge(r, RIGHT, parity);
	wait_sent(r, 2);
	/* Counter side has counted every ghost of iterations 0..iter. */
	TRY(fi_nrma_nset_wait(r->nset, LEFT, iter + 1, -1));
	TRY(fi_nrma_nset_wait(r->nset, RIGHT, iter + 1, -1));
	left = r->ghost[parity][LEFT];
	for (size_t i = 0; i < r->cells; i++) {
		uint64_t right = i + 1 < r->cells ? u[i + 1] :
						    r->ghost[parity][RIGHT];

		prev = u[i];
		u[i] = step(left, prev, right);
		left = prev;
	}
}

/* A rank's life: its card out, all cards in, iterations, cells out. */
static int run_rank(struct rank *r, int to_parent, int from_parent, int iters)
{
	uint64_t *u = calloc(r->cells, sizeof(*u));
	struct card mine, *all = calloc(r->ranks, sizeof(*all));
	int sides[2] = { (r->me + r->ranks - 1) % r->ranks,
			 (r->me + 1) % r->ranks };

	if (!u || !all)
		return 1;
	rank_open(r);
	mine = rank_card(r);
	if (write(to_parent, &mine, sizeof(mine)) != sizeof(mine) ||
	    read(from_parent, all, r->ranks * sizeof(*all)) !=
		    (ssize_t) (r->ranks * sizeof(*all)))
		return 1;
	for (int side = LEFT; side <= RIGHT; side++) {
		r->card[side] = all[sides[side]];
		if (fi_av_insert(r->n.av, r->card[side].name, 1, &r->peer[side],
				 0, NULL) != 1)
			return 1;
	}
	for (size_t i = 0; i < r->cells; i++)
		u[i] = r->me * r->cells + i;
	for (int it = 0; it < iters; it++)
		iterate(r, u, it);
	if (write(to_parent, u, r->cells * sizeof(*u)) !=
	    (ssize_t) (r->cells * sizeof(*u)))
		return 1;
	/* Stay until every rank is done: our neighbours may still write. */
	if (read(from_parent, &mine, 1) != 1)
		return 1;
	TRY(fi_close(&r->nset->fid));
	TRY(fi_close(&r->mr->fid));
	try_node_close(&r->n);
	free(u);
	free(all);
	return 0;
}

/* The same iterations over the whole ring, in one array. */
static uint64_t *serial(size_t n, int iters)
{
	uint64_t *u = malloc(n * sizeof(*u)), *v = malloc(n * sizeof(*v));

	if (!u || !v)
		exit(1);
	for (size_t i = 0; i < n; i++)
		u[i] = i;
	for (int it = 0; it < iters; it++) {
		for (size_t i = 0; i < n; i++)
			v[i] = step(u[(i + n - 1) % n], u[i], u[(i + 1) % n]);
		memcpy(u, v, n * sizeof(*u));
	}
	free(v);
	return u;
}

static void die(const char *what)
{
	fprintf(stderr, "nrma_halo: %s\n", what);
	exit(1);
}

/* Forks the ranks; up[i] carries rank i's card and cells, down[i] ours. */
static void spawn(int ranks, size_t cells, int iters, int (*up)[2],
		  int (*down)[2])
{
	for (int i = 0; i < ranks; i++) {
		struct rank r = { .me = i, .ranks = ranks, .cells = cells };

		if (pipe(up[i]) || pipe(down[i]))
			die("no pipe");
		fflush(stdout);
		if (!fork())
			exit(run_rank(&r, up[i][1], down[i][0], iters));
	}
}

/* Every rank's card, to every rank. */
static void exchange(int ranks, int (*up)[2], int (*down)[2])
{
	struct card *all = calloc(ranks, sizeof(*all));
	ssize_t len = ranks * sizeof(*all);

	if (!all)
		die("out of memory");
	for (int i = 0; i < ranks; i++)
		if (read(up[i][0], &all[i], sizeof(*all)) != sizeof(*all))
			die("a rank did not start");
	for (int i = 0; i < ranks; i++)
		if (write(down[i][1], all, len) != len)
			die("a rank went away");
	free(all);
}

/* How many ranks' cells differ from want, or failed. */
static int check(int ranks, size_t cells, const uint64_t *want, int (*up)[2],
		 int (*down)[2])
{
	uint64_t *got = calloc(cells, sizeof(*got));
	ssize_t len = cells * sizeof(*got);
	int bad = 0, status;

	if (!got)
		die("out of memory");
	for (int i = 0; i < ranks; i++)
		bad += read(up[i][0], got, len) != len ||
		       memcmp(got, want + i * cells, len);
	for (int i = 0; i < ranks; i++)
		bad += write(down[i][1], "x", 1) != 1 || wait(&status) < 0 ||
		       !WIFEXITED(status) || WEXITSTATUS(status);
	free(got);
	return bad;
}

int main(int argc, char **argv)
{
	int ranks = 4, iters = 100, opt, (*up)[2], (*down)[2], bad;
	size_t cells = 1024;
	uint64_t *want;

	while ((opt = getopt(argc, argv, "p:n:i:")) != -1) {
		if (opt == 'p')
			ranks = atoi(optarg);
		else if (opt == 'n')
			cells = strtoul(optarg, NULL, 0);
		else if (opt == 'i')
			iters = atoi(optarg);
		else
			ranks = 0;
	}
	if (ranks < 2 || !cells || iters < 1) {
		fprintf(stderr,
			"usage: %s [-p ranks] [-n cells] "
			"[-i iterations]\n",
			argv[0]);
		return 2;
	}
	up = calloc(ranks, sizeof(*up));
	down = calloc(ranks, sizeof(*down));
	if (!up || !down)
		die("out of memory");
	spawn(ranks, cells, iters, up, down);
	exchange(ranks, up, down);
	want = serial(ranks * cells, iters);
	bad = check(ranks, cells, want, up, down);
	printf("nrma_halo: %d ranks x %zu cells, %d iterations of "
	       "write-notify halos: %s\n",
	       ranks, cells, iters,
	       bad ? "MISMATCH with the serial result" :
		     "every cell matches the serial result");
	free(want);
	free(up);
	free(down);
	return bad != 0;
}
