/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Helpers for the data transfer tests (nrma_msg_*, and through itest_rma.h
 * nrma_rma_* and nrma_notify_*): peer processes, pipes between them,
 * endpoints, and bounded waits.  They are compiled once, in itest_msg.c,
 * into libitest.la, which every integration test links.
 *
 * A test forks its peers before it touches libfabric, so that no verbs
 * state crosses a fork; each process then opens its own fabric, domain and
 * endpoints.  Endpoint names travel through pipes (fi_getname -> pipe ->
 * fi_av_insert).  Every wait has a deadline (itest_wait_ms()) and
 * fails the test when it passes.  While a
 * process waits it keeps all its endpoints progressing (completions go to
 * a per-CQ stash, read back in order) and watches its children: a child
 * that fails fails its parent at once, a parent that dies takes its
 * children with it (PR_SET_PDEATHSIG), and a parent that fails kills its
 * children.
 */
#ifndef NRMA_ITEST_MSG_H
#define NRMA_ITEST_MSG_H

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fi_tagged.h>

#include "itest.h"

#define ITEST_WAIT_MS_DEFAULT	   60000
#define ITEST_MAX_KIDS		   16 /* room for children */
#define ITEST_MAX_CQS		   16 /* room for CQs */
/* How much longer waits last under valgrind (NRMA_VALGRIND=1). */
#define ITEST_WAIT_VALGRIND_FACTOR 5
#define ITEST_MAX_CNTRS		   16
#define ITEST_GUARD		   64 /* bytes checked after a receive */
#define ITEST_GUARD_BYTE	   0xa5

/*
 * How many children and CQs a process may have, and how much longer waits
 * last under valgrind: ITEST_MAX_KIDS, ITEST_MAX_CQS and
 * ITEST_WAIT_VALGRIND_FACTOR unless a test lowers them before it forks
 * (the RMA tests do, with rt_init()).
 */
extern int itest_max_kids;
extern int itest_max_cqs;
extern int itest_wait_valgrind_factor;

/* Who we are, for failure messages: "parent", "sender 3"... */
extern char itest_who[32];
/* What the test is doing, for failure messages; set by the test. */
extern const char *itest_step;

void itest_fail_at(const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4), noreturn));

/* Fails the test with a printf-style message. */
#define FAIL(...) itest_fail_at(__FILE__, __LINE__, __VA_ARGS__)

/* Fails unless expr holds, saying why in printf style. */
#define EXPECT(expr, ...)                                                  \
	do {                                                               \
		if (!(expr))                                               \
			itest_fail_at(__FILE__, __LINE__,                  \
				      "expected " #expr ": " __VA_ARGS__); \
	} while (0)

/* snprintf into a static buffer, for "what" arguments. */
const char *itest_fmt(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));

/* Time */

/* Milliseconds on the monotonic clock. */
int64_t itest_now_ms(void);

/* How long a wait may last: NRMA_TEST_WAIT_S, else 60 s (300 s when
 * test/run-tests.sh runs the tests under valgrind, but for the RMA tests). */
int64_t itest_wait_ms(void);

/* When a wait that starts now must end. */
int64_t itest_deadline(void);

/* This process's resident set (VmRSS), in KiB. */
long itest_rss_kb(void);

/* Children */

/* Fails when a child has failed; notes the ones that are done. */
void itest_check_kids(void);

/* Runs fn(arg) in a child process named who; it exits 0 when fn returns. */
pid_t itest_fork(const char *who, void (*fn)(void *), void *arg);

/* Waits (bounded) for child pid (or, with pid 0, every child) to exit 0. */
void itest_wait_kid(pid_t pid);
void itest_wait_kids(void);

/* Progress: every CQ and counter this process opened. */

struct itest_comp {
	void *op_context;
	uint64_t flags;
	size_t len;
	void *buf;
	uint64_t data;
	uint64_t tag;
	fi_addr_t src;
};

struct itest_cq {
	struct fid_cq *cq;
	enum fi_cq_format format;
	char name[40];
	bool count_only;	  /* count completions, stash nothing */
	uint64_t seen;		  /* completions read, in all */
	struct itest_comp *comps; /* FIFO of completions read */
	size_t head, count, cap;
	struct fi_cq_err_entry *errs; /* FIFO of error entries read */
	size_t ehead, ecount, ecap;
	bool errors_ok; /* else an error entry fails */
};

/* Reads what the CQ has into its stash; returns how many were read. */
size_t itest_cq_poll(struct itest_cq *c);

/*
 * Progresses every endpoint of this process and watches the children.
 * A process with nothing to progress sleeps a little instead of spinning.
 */
void itest_progress(void);

/* Fails, saying what we waited for, once deadline has passed. */
void itest_check_deadline(int64_t deadline, const char *what);

/* Progresses for ms milliseconds. */
void itest_idle(int ms);

/* CQs */

/* A CQ that itest_progress polls into its stash until itest_cq_close. */
struct itest_cq *itest_cq_open(struct fid_domain *domain,
			       enum fi_cq_format format, const char *name);
void itest_cq_close(struct itest_cq *c);
/* Drops the successful completions stashed so far (counted ones, say). */
void itest_cq_forget(struct itest_cq *c);

/* The next completion of c, within the deadline. */
#define itest_cq_wait(c, what) itest_cq_wait_at(__FILE__, __LINE__, c, what)
struct itest_comp itest_cq_wait_at(const char *file, int line,
				   struct itest_cq *c, const char *what);

/* n completions, in the order read. */
void itest_cq_wait_n(struct itest_cq *c, struct itest_comp *out, size_t n,
		     const char *what);

/*
 * The next error entry of c (c->errors_ok must be set), within the
 * deadline; with no_comp, a successful completion that comes first fails.
 */
#define itest_cq_wait_err(c, what) \
	itest_cq_wait_err_at(__FILE__, __LINE__, c, false, what)
struct fi_cq_err_entry itest_cq_wait_err_at(const char *file, int line,
					    struct itest_cq *c, bool no_comp,
					    const char *what);

/*
 * Fails if c has (after one more progress, or with idle_ms after that
 * long of progress) any completion or error.
 */
#define itest_cq_expect_empty(c, why) \
	itest_cq_expect_empty_at(__FILE__, __LINE__, c, 0, why)
void itest_cq_expect_empty_at(const char *file, int line, struct itest_cq *c,
			      int idle_ms, const char *why);

/* Checks a completion's context and flags (all of want_flags, and no
 * flag of deny_flags). */
#define EXPECT_COMP(comp, ctx, want_flags, deny_flags, what)             \
	do {                                                             \
		const struct itest_comp *ec_ = &(comp);                  \
		if (ec_->op_context != (void *) (ctx))                   \
			FAIL("%s: op_context %p, expected %p", what,     \
			     ec_->op_context, (void *) (ctx));           \
		if ((ec_->flags & (want_flags)) != (want_flags) ||       \
		    (ec_->flags & (deny_flags)))                         \
			FAIL("%s: flags 0x%" PRIx64 ", expected all of " \
			     "0x%" PRIx64 " and none of 0x%" PRIx64,     \
			     what, ec_->flags, (uint64_t) (want_flags),  \
			     (uint64_t) (deny_flags));                   \
	} while (0)

/* Counters */

/* A counter that itest_progress reads until itest_cntr_close. */
struct fid_cntr *itest_cntr_open(struct fid_domain *domain);
void itest_cntr_close(struct fid_cntr *cntr);

/* fi_cntr_wait for value, bounded; fails on error counts or timeout. */
void itest_cntr_wait(struct fid_cntr *cntr, uint64_t value, const char *what);

/* Pipes between a parent and one child */

struct itest_link {
	int p2c[2];
	int c2p[2];
};

struct itest_chan {
	int rd;
	int wr;
};

/* Before the fork; then each side takes its end of the link. */
void itest_link_init(struct itest_link *l);
struct itest_chan itest_link_parent(struct itest_link *l);
struct itest_chan itest_link_child(struct itest_link *l);

/* A child's end of a link that is not its own. */
void itest_link_close_all(struct itest_link *l);

void itest_chan_close(struct itest_chan *ch);

/* Writes len bytes to the peer; fails if it cannot. */
void itest_chan_write(struct itest_chan *ch, const void *buf, size_t len);

/*
 * Reads len bytes from the peer within the deadline; with progress, keeps
 * this process's CQs and counters progressing meanwhile (else it sleeps
 * in poll, leaving the CPU to others, and only watches the children).
 */
#define itest_chan_read(ch, buf, len, what) \
	itest_chan_read_at(__FILE__, __LINE__, ch, buf, len, true, what)
void itest_chan_read_at(const char *file, int line, struct itest_chan *ch,
			void *buf, size_t len, bool progress, const char *what);

/* Whether the peer has written something (without reading it). */
bool itest_chan_ready(struct itest_chan *ch);

/* Tells the peer that step tag is reached. */
void itest_signal(struct itest_chan *ch, uint32_t tag);

/*
 * Waits (progressing, or with progress false idle) for the peer's signal
 * tag.
 */
#define itest_expect(ch, tag, what) \
	itest_expect_at(__FILE__, __LINE__, ch, tag, true, what)
void itest_expect_at(const char *file, int line, struct itest_chan *ch,
		     uint32_t tag, bool progress, const char *what);

/* Both sides reach step tag. */
void itest_sync(struct itest_chan *ch, uint32_t tag, const char *what);

/*
 * Waits up to wait_ms for the peer to write something, without
 * progressing anything: for a process whose part is over (or not begun),
 * so that it does not take the CPU from the others.
 */
void itest_chan_wait_idle(struct itest_chan *ch, int64_t wait_ms,
			  const char *what);

/* itest_expect, idle, waiting up to wait_ms. */
void itest_expect_idle(struct itest_chan *ch, uint32_t tag, int64_t wait_ms,
		       const char *what);

/* Fabric, domain and endpoints */

/* This process's (itest_domain or rt_domain), until itest_domain_close. */
extern struct fi_info *itest_info;
extern struct fid_fabric *itest_fabric_fid;
extern struct fid_domain *itest_domain_fid;

/* What the message tests use. */
#define ITEST_MSG_CAPS                                                        \
	(FI_MSG | FI_TAGGED | FI_SEND | FI_RECV | FI_SOURCE | FI_MULTI_RECV | \
	 FI_DIRECTED_RECV | FI_TRIGGER)
/* What a test asks of itest_domain besides, set before its first call. */
extern uint64_t itest_extra_caps;

/* This process's domain, opened on first use. */
struct fid_domain *itest_domain(void);
void itest_domain_close(void);

struct itest_node_opts {
	enum fi_cq_format tx_format; /* 0: FI_CQ_FORMAT_TAGGED */
	enum fi_cq_format rx_format;
	uint64_t tx_bind; /* added to FI_TRANSMIT / FI_RECV */
	uint64_t rx_bind;
	bool no_tx_cq;
	bool no_rx_cq;
	bool send_cntr;
	bool recv_cntr;
	size_t tx_size; /* 0: the provider's default */
	size_t rx_size;
	const struct fi_info *info; /* NULL: the domain's (itest_info) */
	/* Called on the bound endpoint just before fi_enable, if set. */
	void (*before_enable)(struct fid_ep *ep);
};

struct itest_node {
	struct fid_av *av;
	struct fid_ep *ep;
	struct itest_cq *tx;
	struct itest_cq *rx;
	struct fid_cntr *send_cntr;
	struct fid_cntr *recv_cntr;
	struct sockaddr_in name;
	fi_addr_t peer; /* the last address inserted */
};

/* An enabled RDM endpoint with its own AV, CQs and counters. */
void itest_node_open(struct itest_node *n, const struct itest_node_opts *o,
		     const char *name);
void itest_node_close(struct itest_node *n);

/* Inserts one name into av; returns its fi_addr_t. */
fi_addr_t itest_av_insert1(struct fid_av *av, const struct sockaddr_in *name);

/* Sends our endpoint name to the peer over ch; returns the peer's. */
struct sockaddr_in itest_name_swap(struct itest_chan *ch,
				   const struct sockaddr_in *name);

/* Inserts a name into n's AV; returns (and remembers) its fi_addr_t. */
fi_addr_t itest_node_insert(struct itest_node *n,
			    const struct sockaddr_in *name);

/* Swaps names with the peer over ch and inserts the peer's. */
fi_addr_t itest_node_exchange(struct itest_node *n, struct itest_chan *ch);

/*
 * Posts an operation, retrying (and progressing) while it returns
 * -FI_EAGAIN, e.g. while the connection is being made.
 */
#define ITEST_POST(call, what)                                                 \
	do {                                                                   \
		int64_t ip_deadline_ = itest_deadline();                       \
		ssize_t ip_ret_;                                               \
		while ((ip_ret_ = (call)) == -FI_EAGAIN) {                     \
			itest_check_deadline(ip_deadline_, what);              \
			itest_progress();                                      \
		}                                                              \
		if (ip_ret_)                                                   \
			FAIL("%s: %s returned %zd (%s)", what, #call, ip_ret_, \
			     fi_strerror((int) -ip_ret_));                     \
	} while (0)

/* Data patterns: byte i of stream seed is a function of (seed, i). */

/* (itest_rma.h's patterns start at word idx + 1: bias 1.) */
uint64_t itest_pat_word(uint64_t seed, uint64_t idx);

/* Writes bytes [off, off + len) of pattern seed (word bias) to dst. */
void itest_pat_gen_b(void *dst, uint64_t seed, size_t off, size_t len,
		     uint64_t bias);
void itest_pat_gen(void *dst, uint64_t seed, size_t off, size_t len);

/* Fails unless buf holds bytes [off, off + len) of pattern seed (bias). */
void itest_pat_check_b(const char *file, int line, const void *buf,
		       uint64_t seed, size_t off, size_t len, uint64_t bias,
		       const char *what);
void itest_pat_check_at(const char *file, int line, const void *buf,
			uint64_t seed, size_t off, size_t len,
			const char *what);

#define itest_pat_check(buf, seed, off, len, what) \
	itest_pat_check_at(__FILE__, __LINE__, buf, seed, off, len, what)

/*
 * A message: pattern seed, and when it has room an 8-byte header naming
 * its seed's low 32 bits (the sequence), so a misplaced message says which
 * one it is.
 */
#define ITEST_MSG_MAGIC 0x6d73676eU

void itest_msg_fill(void *buf, size_t len, uint64_t seed);
/* Fails unless buf holds message seed (itest_msg_fill's). */
void itest_msg_check_at(const char *file, int line, const void *buf, size_t len,
			uint64_t seed, const char *what);

#define itest_msg_check(buf, len, seed, what) \
	itest_msg_check_at(__FILE__, __LINE__, buf, len, seed, what)

/* A buffer of len bytes followed by ITEST_GUARD guard bytes. */
void *itest_guarded(size_t len);

/* Resets a guarded buffer: len bytes of fill, then the guard. */
void itest_guard_reset(void *buf, size_t len, int fill);

/* Fails if a guard byte after len bytes at buf changed. */
void itest_guard_check_at(const char *file, int line, const void *buf,
			  size_t len, const char *what);

#define itest_guard_check(buf, len, what) \
	itest_guard_check_at(__FILE__, __LINE__, buf, len, what)

#endif /* NRMA_ITEST_MSG_H */
