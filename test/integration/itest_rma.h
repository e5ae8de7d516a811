/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * RMA-specific helpers for the RMA tests (nrma_rma_*): endpoints with RMA
 * counters, registrations, remote counters, two-sided guards and the RMA
 * data patterns.  The shared machinery (peer processes, pipes, bounded
 * waits, CQ stashes, progress) is itest_msg.h's; the rt_ wrappers below
 * only give its calls a printf-style "what", and rt_init() the RMA tests'
 * limits.  They are compiled once, in itest_rma.c, into libitest.la.
 *
 * A test forks all its peers before it touches libfabric, so that no verbs
 * state crosses a fork; each process then opens its own fabric and domain
 * (rt_domain) and, per part of the test, its own endpoints.  Names, MR
 * addresses and keys travel through pipes.  Every wait has a deadline
 * (ITEST_WAIT_MS_DEFAULT, or NRMA_TEST_WAIT_S seconds) and fails the test,
 * saying what it waited for, when it passes.
 */
#ifndef NRMA_ITEST_RMA_H
#define NRMA_ITEST_RMA_H

#include <stddef.h>

#include <rdma/fi_rma.h>

#include "itest_msg.h"

#define RT_GUARD      64 /* guard bytes on each side */
#define RT_GUARD_BYTE 0xa5

/*
 * Sets the RMA tests' limits: 8 children, 8 CQs, and waits that do not
 * stretch under valgrind.  A test calls it first, before it forks.
 */
void rt_init(void);

/* Fails unless a libfabric call returns want. */
#define RT_CALL(expr, want)                                                    \
	do {                                                                   \
		long rc_got_ = (long) (expr), rc_want_ = (long) (want);        \
		if (rc_got_ != rc_want_)                                       \
			itest_fail_at(__FILE__, __LINE__,                      \
				      "%s returned %ld"                        \
				      " (%s), expected %ld (%s)",              \
				      #expr, rc_got_, itest_strerror(rc_got_), \
				      rc_want_, itest_strerror(rc_want_));     \
	} while (0)
#define RT_OK(expr) RT_CALL(expr, 0)

/* itest_msg.h's waits and checks, with a printf-style "what". */
#define rt_check_deadline(deadline, ...) \
	itest_check_deadline(deadline, itest_fmt(__VA_ARGS__))
#define rt_cq_wait(c, ...) \
	itest_cq_wait_at(__FILE__, __LINE__, c, itest_fmt(__VA_ARGS__))
/* A successful completion that comes first fails it. */
#define rt_cq_wait_err(c, ...)                            \
	itest_cq_wait_err_at(__FILE__, __LINE__, c, true, \
			     itest_fmt(__VA_ARGS__))
/* After 20 ms of progress. */
#define rt_cq_expect_empty(c, ...)                          \
	itest_cq_expect_empty_at(__FILE__, __LINE__, c, 20, \
				 itest_fmt(__VA_ARGS__))
#define RT_EXPECT_COMP(comp, ctx, want, deny, ...) \
	EXPECT_COMP(comp, ctx, want, deny, itest_fmt(__VA_ARGS__))
#define rt_chan_read(ch, buf, len, ...)                            \
	itest_chan_read_at(__FILE__, __LINE__, ch, buf, len, true, \
			   itest_fmt(__VA_ARGS__))
#define rt_chan_read_idle(ch, buf, len, ...)                        \
	itest_chan_read_at(__FILE__, __LINE__, ch, buf, len, false, \
			   itest_fmt(__VA_ARGS__))
#define rt_expect(ch, tag, ...)                            \
	itest_expect_at(__FILE__, __LINE__, ch, tag, true, \
			itest_fmt(__VA_ARGS__))
#define rt_expect_idle(ch, tag, ...)                        \
	itest_expect_at(__FILE__, __LINE__, ch, tag, false, \
			itest_fmt(__VA_ARGS__))
/*
 * Posts an operation, retrying (and progressing) while it returns
 * -FI_EAGAIN, e.g. while the connection is being made or the queue is
 * full.  Fails on any other error.
 */
#define RT_POST(call, ...) ITEST_POST(call, itest_fmt(__VA_ARGS__))

/* Waits (progressing everything) until cntr reads at least value. */
#define rt_cntr_reach(cntr, value, ...)                   \
	rt_cntr_reach_at(__FILE__, __LINE__, cntr, value, \
			 itest_fmt(__VA_ARGS__))
uint64_t rt_cntr_reach_at(const char *file, int line, struct fid_cntr *cntr,
			  uint64_t value, const char *what);

/* Peers: one target (the parent) and n initiators (its children). */

/*
 * Forks n initiators, each running fn with its index as the argument; the
 * target keeps its ends of the links in pc.
 */
void rt_fork_initiators(struct itest_link *links, struct itest_chan *pc, int n,
			void (*fn)(void *));

/* Initiator me's end of its link to the target; the others' are closed. */
struct itest_chan rt_initiator_chan(struct itest_link *links, int n, int me);

/* Fabric, domain and endpoints */

/* Hints for RMA and atomics with remote counters; FI_MR_RMA_EVENT as an
 * app would; rt_extra_caps, rt_threading and rt_data_progress (set
 * before the first call) asked for too.  rt_mr_mode_none: mr_mode 0
 * instead, as Sandia OpenSHMEM's default build asks (keys the
 * application picks, regions addressed by offset). */
extern uint64_t rt_extra_caps;
extern enum fi_threading rt_threading;
extern enum fi_progress rt_data_progress;
extern bool rt_mr_mode_none;
struct fi_info *rt_getinfo(void);

/* This process's domain (itest_info, itest_domain_fid), opened on first
 * use; itest_domain_close closes it. */
struct fid_domain *rt_domain(void);

struct rt_node_opts {
	bool tx_selective;  /* FI_SELECTIVE_COMPLETION on tx CQ */
	bool tx_count_only; /* tx CQ entries counted, not kept */
	bool tx_errors_ok;  /* tx CQ error entries are expected */
	bool write_cntr;    /* counters bound FI_WRITE, FI_READ */
	bool read_cntr;
	/* A remote counter: bound with FI_REMOTE_WRITE and/or FI_REMOTE_READ */
	uint64_t remote_flags;
	/* A second one, bound FI_REMOTE_READ only (remote_flags lacks it) */
	bool rread_cntr;
};

struct rt_node {
	struct fid_av *av;
	struct fid_ep *ep;
	struct itest_cq *tx;
	struct itest_cq *rx;
	struct fid_cntr *write_cntr;
	struct fid_cntr *read_cntr;
	struct fid_cntr *remote_cntr;
	struct fid_cntr *rread_cntr;
	struct sockaddr_in name;
	fi_addr_t peer; /* the last address inserted */
};

/* An enabled RDM endpoint with its own AV, CQs and counters. */
void rt_node_open(struct rt_node *n, const struct rt_node_opts *o,
		  const char *name);

void rt_node_close(struct rt_node *n);

/*
 * rt_node_insert inserts a name into n's AV; rt_node_exchange swaps names
 * with the peer over ch and inserts the peer's.  Both return (and
 * remember) the fi_addr_t.
 */
fi_addr_t rt_node_insert(struct rt_node *n, const struct sockaddr_in *name);
fi_addr_t rt_node_exchange(struct rt_node *n, struct itest_chan *ch);

/* Memory registrations; what a peer needs to address one. */

struct rt_rkey {
	uint64_t addr; /* of byte 0: virtual (FI_MR_VIRT_ADDR) or offset 0 */
	uint64_t len;
	uint64_t key;
};

struct fid_mr *rt_mr_reg(void *buf, size_t len, uint64_t access,
			 uint64_t flags);

/* A registration for remote events whose ops bump cntr; enabled. */
struct fid_mr *rt_mr_reg_cntr(void *buf, size_t len, uint64_t access,
			      struct fid_cntr *cntr, uint64_t bind_flags);

struct rt_rkey rt_rkey_of(struct fid_mr *mr, const void *buf, size_t len);

/* Data patterns: itest_msg.h's, starting at word 1 (bias 1). */

/* Writes bytes [off, off + len) of pattern seed to dst. */
void rt_pat_gen(void *dst, uint64_t seed, size_t off, size_t len);

/* Fails unless buf holds bytes [off, off + len) of pattern seed. */
#define rt_pat_check(buf, seed, off, len, ...)                        \
	itest_pat_check_b(__FILE__, __LINE__, buf, seed, off, len, 1, \
			  itest_fmt(__VA_ARGS__))

/* Fails unless len bytes at buf all equal byte. */
#define rt_fill_check(buf, byte, len, ...)                   \
	rt_fill_check_at(__FILE__, __LINE__, buf, byte, len, \
			 itest_fmt(__VA_ARGS__))
void rt_fill_check_at(const char *file, int line, const void *buf, int byte,
		      size_t len, const char *what);

/*
 * A buffer of len bytes with RT_GUARD guard bytes on each side; returns
 * the start of the len bytes.  rt_guard_check fails if a guard changed.
 */
void *rt_guarded(size_t len);

void rt_guarded_free(void *buf);

#define rt_guard_check(buf, len, ...) \
	rt_guard_check_at(__FILE__, __LINE__, buf, len, itest_fmt(__VA_ARGS__))
void rt_guard_check_at(const char *file, int line, const void *buf, size_t len,
		       const char *what);

/* Says that test name passed, and how long it took since start_ms. */
void rt_pass(const char *name, int64_t start_ms);

/* A line of output, tagged with who we are. */
void rt_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif /* NRMA_ITEST_RMA_H */
