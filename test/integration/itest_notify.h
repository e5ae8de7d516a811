/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What the notified-RMA tests (nrma_notify_*) share.  Notified RMA:
 * remote counters that the initiator's fetch-and-add bumps behind each
 * RMA operation.  In each test the parent is the target and its children
 * are initiators: one, or NINIT in nrma_notify_initiators.
 *
 * nt_main forks the initiators, tells each to start, runs the target's
 * side and waits for them.  The target opens its endpoint and sends its
 * name and keys (a struct keymsg) to every initiator (target_open); at
 * the end it tells them to close theirs (target_close, init_close).
 * Between the two, the test's steps are signals (SIG_*) over the pipes.
 * The helpers are compiled once, in itest_notify.c, into libitest.la.
 */
#ifndef NRMA_ITEST_NOTIFY_H
#define NRMA_ITEST_NOTIFY_H

#include "itest_rma.h"

#define NINIT	    4 /* the most initiators a test has */
#define MiB	    (1u << 20)
#define STAMP_MAGIC 0x6e726d6100000000ULL /* "nrma" */

/* The target's ends of the links to its initiators. */
extern struct itest_chan pc[NINIT];
/* An initiator's end of its link to the target. */
extern struct itest_chan cc;

/* What the target tells its initiators about itself. */
struct keymsg {
	struct sockaddr_in name;
	struct rt_rkey k[8];
};

/* Steps */
enum {
	SIG_DONE = 0x100, /* an initiator's operations all completed */
	SIG_GO,		  /* the target is ready: next step */
	SIG_PART_OVER,	  /* close the endpoints */
	SIG_WARM,	  /* the connection is up */
};

/* STAMP_MAGIC with g in the low 32 bits: what write g carries. */
uint64_t stamp(uint64_t g);

/* Target-side set-up: an endpoint, then our name and keys to each peer. */
void target_open(struct rt_node *t, uint64_t remote_flags,
		 const struct keymsg *km, int npeers);
void target_close(struct rt_node *t, int npeers);

/*
 * Initiator-side set-up: a count-only tx CQ, a write counter, with
 * remote_flags a remote counter too; then the target's name and keys.
 */
void init_open_remote(struct rt_node *n, struct keymsg *km,
		      uint64_t remote_flags);
/* The same with the caller's options. */
void init_open_opts(struct rt_node *n, struct keymsg *km,
		    const struct rt_node_opts *o);
void init_open(struct rt_node *n, struct keymsg *km);
/* Closes the endpoint once the target says the test is over. */
void init_close(struct rt_node *n);

/*
 * Posts operations first..count-1 with post(n, i, arg), at most window of
 * them outstanding, and waits until all completed.  Fails when no
 * operation completes for the test's wait time.
 */
typedef ssize_t (*post_fn)(struct rt_node *n, uint64_t i, void *arg);

void run_ops_from(struct rt_node *n, uint64_t first, uint64_t count,
		  uint64_t window, post_fn post, void *arg, const char *what);
void run_ops(struct rt_node *n, uint64_t count, uint64_t window, post_fn post,
	     void *arg, const char *what);

/*
 * Operation 0 alone, retried while the connection is made; tells the
 * target when it completed.  Until then the target progresses its
 * endpoint (set-up); after it, it may make no progress call at all.
 */
void warm_up(struct rt_node *n, post_fn post, void *arg);

/* Fails unless cntr reads exactly want now. */
#define expect_cntr(cntr, want, ...)                                \
	do {                                                        \
		uint64_t ec_v_ = fi_cntr_read(cntr);                \
		uint64_t ec_w_ = (want);                            \
		if (ec_v_ != ec_w_)                                 \
			FAIL("%s: the counter reads %" PRIu64 ", "  \
			     "expected %" PRIu64,                   \
			     itest_fmt(__VA_ARGS__), ec_v_, ec_w_); \
	} while (0)

/*
 * Stamped sources and the target's first key, as nrma_notify_cntr_set
 * and nrma_notify_wait write: write i goes to word i % 512.
 */
struct stamps {
	uint64_t src[512];
	struct rt_rkey rk;
};

ssize_t stamps_write(struct rt_node *n, uint64_t i, void *arg);
/* Fills p, opens n (init_open) and takes the target's first key. */
void stamps_open(struct rt_node *n, struct keymsg *km, struct stamps *p);

/*
 * Runs test name: forks ninit initiators, each running initiator with its
 * index, and runs target here; passes when both sides returned.
 */
int nt_main(const char *name, int ninit, void (*target)(void),
	    void (*initiator)(uint64_t me));

/*
 * nt_main, or, in a test built again with -DNT_COALESCE=K, nt_main under
 * the name with "_coalesce" and every notified write coalesced, up to K
 * to an atomic (FI_NRMA_NOTIFY_COALESCE): a completion still means its
 * notification is at the target, so the same checks must hold.  With
 * -DNT_QP_DEPTH=K as well ("_coalesce_sqfull"), each connection's send
 * queue holds only K requests: a full batch's writes fill it, so its
 * atomics find no room and wait for the writes' completions.
 */
#ifdef NT_COALESCE
#define NT_STR_(x) #x
#define NT_STR(x)  NT_STR_(x)
#ifdef NT_QP_DEPTH
#define NT_SUFFIX "_coalesce_sqfull"
#define NT_SETENV()                                                 \
	(setenv("FI_NRMA_NOTIFY_COALESCE", NT_STR(NT_COALESCE), 1), \
	 setenv("FI_NRMA_QP_DEPTH", NT_STR(NT_QP_DEPTH), 1))
#else
#define NT_SUFFIX   "_coalesce"
#define NT_SETENV() setenv("FI_NRMA_NOTIFY_COALESCE", NT_STR(NT_COALESCE), 1)
#endif
#define NT_MAIN(name, ninit, target, initiator) \
	(NT_SETENV(), nt_main(name NT_SUFFIX, ninit, target, initiator))
#else
#define NT_MAIN(name, ninit, target, initiator) \
	nt_main(name, ninit, target, initiator)
#endif

#endif /* NRMA_ITEST_NOTIFY_H */
