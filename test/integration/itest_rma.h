/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Helpers for the RMA tests (nrma_rma_*): peer processes, pipes between
 * them, endpoints with RMA counters, registrations, bounded waits and data
 * patterns.  Adapted from itest_msg.h (which the messaging tests own) so
 * that the two can change independently; names here start with rt_/RT_.
 *
 * A test forks all its peers before it touches libfabric, so that no verbs
 * state crosses a fork; each process then opens its own fabric and domain
 * (rt_domain) and, per part of the test, its own endpoints.  Names, MR
 * addresses and keys travel through pipes.  Every wait has a deadline
 * (RT_WAIT_MS_DEFAULT, or NRMA_TEST_WAIT_S seconds) and fails the test,
 * saying what it waited for, when it passes.  While a process waits for
 * a pipe or a completion it progresses every CQ and counter it opened
 * (completions go to a per-CQ stash) and watches its children: a child
 * that fails fails its parent at once, a parent that dies takes its
 * children with it (PR_SET_PDEATHSIG), and a parent that fails kills them.
 */
#ifndef NRMA_ITEST_RMA_H
#define NRMA_ITEST_RMA_H

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

#include <rdma/fi_rma.h>

#include "itest.h"

#define RT_WAIT_MS_DEFAULT	60000
#define RT_MAX_KIDS		8
#define RT_MAX_CQS		8
#define RT_MAX_CNTRS		16
#define RT_GUARD		64	/* guard bytes on each side */
#define RT_GUARD_BYTE		0xa5

/* Who we are, for failure messages: "target", "initiator 2"... */
static char rt_who[32] = "parent";

static inline void rt_fail_at(const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4), noreturn));
static inline void rt_fail_at(const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fprintf(stderr, "%s:%d: [%s, pid %d] ", file, line, rt_who,
		(int) getpid());
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

/* Fails the test with a printf-style message. */
#define RFAIL(...)	rt_fail_at(__FILE__, __LINE__, __VA_ARGS__)

/* Fails unless expr holds, saying why in printf style. */
#define REXPECT(expr, ...)						\
	do {								\
		if (!(expr))						\
			rt_fail_at(__FILE__, __LINE__, "expected "	\
				   #expr ": " __VA_ARGS__);		\
	} while (0)

/* Fails unless a libfabric call returns want. */
#define RT_CALL(expr, want)						\
	do {								\
		long rc_got_ = (long) (expr), rc_want_ = (long) (want);	\
		if (rc_got_ != rc_want_)				\
			rt_fail_at(__FILE__, __LINE__, "%s returned %ld"\
				   " (%s), expected %ld (%s)", #expr,	\
				   rc_got_, itest_strerror(rc_got_),	\
				   rc_want_, itest_strerror(rc_want_));	\
	} while (0)
#define RT_OK(expr)	RT_CALL(expr, 0)

/* Time */

static inline int64_t rt_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

static inline int64_t rt_wait_ms(void)
{
	const char *s = getenv("NRMA_TEST_WAIT_S");

	return s && atoi(s) > 0 ? atoi(s) * 1000LL : RT_WAIT_MS_DEFAULT;
}

static inline int64_t rt_deadline(void)
{
	return rt_now_ms() + rt_wait_ms();
}

#define rt_check_deadline(deadline, ...)				\
	do {								\
		if (rt_now_ms() > (deadline))				\
			rt_fail_at(__FILE__, __LINE__, "timed out after "\
				   "%" PRId64 " s waiting for %s",	\
				   rt_wait_ms() / 1000,			\
				   rt_fmt(__VA_ARGS__));		\
	} while (0)

/* snprintf into a static buffer, for "what" arguments. */
static inline const char *rt_fmt(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));
static inline const char *rt_fmt(const char *fmt, ...)
{
	static char bufs[16][200];
	static int next;
	char *b = bufs[next++ % 16];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(b, sizeof(bufs[0]), fmt, ap);
	va_end(ap);
	return b;
}

/* Children */

static struct {
	pid_t pid;
	char who[32];
	bool done;
} rt_kids[RT_MAX_KIDS];
static int rt_nkids;
static bool rt_exit_hooked;

static inline void rt_on_exit(int status, void *arg)
{
	(void) arg;
	if (!status)
		return;
	for (int i = 0; i < rt_nkids; i++)
		if (!rt_kids[i].done)
			kill(rt_kids[i].pid, SIGKILL);
}

static inline void rt_kid_status(int i, int status)
{
	rt_kids[i].done = true;
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return;
	if (WIFEXITED(status))
		RFAIL("%s (pid %d) failed: exit status %d", rt_kids[i].who,
		      (int) rt_kids[i].pid, WEXITSTATUS(status));
	RFAIL("%s (pid %d) died of signal %d", rt_kids[i].who,
	      (int) rt_kids[i].pid, WTERMSIG(status));
}

/* Fails when a child has failed; notes the ones that are done. */
static inline void rt_check_kids(void)
{
	for (int i = 0; i < rt_nkids; i++) {
		int status;

		if (!rt_kids[i].done &&
		    waitpid(rt_kids[i].pid, &status, WNOHANG) == rt_kids[i].pid)
			rt_kid_status(i, status);
	}
}

/* Runs fn(arg) in a child process named who; it exits 0 when fn returns. */
static inline pid_t rt_fork(const char *who, void (*fn)(void *), void *arg)
{
	pid_t parent = getpid(), pid;

	CHECK(rt_nkids < RT_MAX_KIDS);
	if (!rt_exit_hooked) {
		CHECK(on_exit(rt_on_exit, NULL) == 0);
		rt_exit_hooked = true;
	}
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		rt_nkids = 0;
		snprintf(rt_who, sizeof(rt_who), "%s", who);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(1);
		fn(arg);
		exit(0);
	}
	rt_kids[rt_nkids].pid = pid;
	snprintf(rt_kids[rt_nkids].who, sizeof(rt_kids[0].who), "%s", who);
	rt_kids[rt_nkids].done = false;
	rt_nkids++;
	return pid;
}

/* Waits (bounded) for every child to exit 0. */
static inline void rt_wait_kids(void)
{
	int64_t deadline = rt_deadline();

	for (;;) {
		bool all = true;

		rt_check_kids();
		for (int i = 0; i < rt_nkids; i++)
			all = all && rt_kids[i].done;
		if (all)
			return;
		rt_check_deadline(deadline, "the children to exit");
		usleep(1000);
	}
}

/* Completion queues and counters, progressed while waiting */

struct rt_comp {
	void *op_context;
	uint64_t flags;
	size_t len;
	void *buf;
	uint64_t data;
};

struct rt_cq {
	struct fid_cq *cq;
	char name[40];
	bool count_only;		/* count completions, stash nothing */
	bool errors_ok;			/* else an error entry fails at once */
	uint64_t seen;			/* completions read, in all */
	struct rt_comp *comps;		/* FIFO of completions read */
	size_t head, count, cap;
	struct fi_cq_err_entry errs[16];/* FIFO of error entries read */
	size_t ehead, ecount;
};

static struct rt_cq *rt_cqs[RT_MAX_CQS];
static struct fid_cntr *rt_cntrs[RT_MAX_CNTRS];

static inline void rt_cq_push(struct rt_cq *c, const struct rt_comp *comp)
{
	if (c->count == c->cap) {
		size_t cap = c->cap ? 2 * c->cap : 64;
		struct rt_comp *n = calloc(cap, sizeof(*n));

		CHECK(n != NULL);
		for (size_t i = 0; i < c->count; i++)
			n[i] = c->comps[(c->head + i) % c->cap];
		free(c->comps);
		c->comps = n;
		c->head = 0;
		c->cap = cap;
	}
	c->comps[(c->head + c->count++) % c->cap] = *comp;
}

/* Reads what the CQ has; returns how many entries (or errors) it read. */
static inline size_t rt_cq_poll(struct rt_cq *c)
{
	struct fi_cq_data_entry e[16];
	struct fi_cq_err_entry err;
	ssize_t n;

	n = fi_cq_read(c->cq, e, 16);
	if (n == -FI_EAGAIN)
		return 0;
	if (n == -FI_EAVAIL) {
		memset(&err, 0, sizeof(err));
		n = fi_cq_readerr(c->cq, &err, 0);
		if (n != 1)
			RFAIL("%s: fi_cq_readerr returned %zd (%s) after "
			      "-FI_EAVAIL", c->name, n, fi_strerror((int) -n));
		if (!c->errors_ok)
			RFAIL("%s: unexpected error completion: err %d (%s), "
			      "prov_errno %d (%s), op_context %p, flags 0x%"
			      PRIx64, c->name, err.err, fi_strerror(err.err),
			      err.prov_errno,
			      fi_cq_strerror(c->cq, err.prov_errno,
					     err.err_data, NULL, 0),
			      err.op_context, err.flags);
		CHECK(c->ecount < 16);
		c->errs[(c->ehead + c->ecount++) % 16] = err;
		return 1;
	}
	if (n < 0)
		RFAIL("%s: fi_cq_read returned %zd (%s)", c->name, n,
		      fi_strerror((int) -n));
	c->seen += n;
	for (ssize_t i = 0; i < n && !c->count_only; i++) {
		struct rt_comp comp = {
			.op_context = e[i].op_context, .flags = e[i].flags,
			.len = e[i].len, .buf = e[i].buf, .data = e[i].data,
		};

		rt_cq_push(c, &comp);
	}
	return n;
}

/* Progresses every CQ and counter of this process; watches the children. */
static inline void rt_progress(void)
{
	static int64_t last_kid_check;
	int64_t now;

	for (int i = 0; i < RT_MAX_CQS; i++)
		if (rt_cqs[i])
			rt_cq_poll(rt_cqs[i]);
	for (int i = 0; i < RT_MAX_CNTRS; i++)
		if (rt_cntrs[i])
			(void) fi_cntr_read(rt_cntrs[i]);
	now = rt_now_ms();
	if (rt_nkids && now - last_kid_check >= 5) {
		last_kid_check = now;
		rt_check_kids();
	}
	/* The VM has two CPUs and several spinning processes. */
	sched_yield();
}

/* Progresses for ms milliseconds. */
static inline void rt_idle(int ms)
{
	int64_t end = rt_now_ms() + ms;

	while (rt_now_ms() < end)
		rt_progress();
}

static inline struct rt_cq *rt_cq_open(struct fid_domain *domain,
				       const char *name)
{
	struct fi_cq_attr attr = { .size = 1024, .format = FI_CQ_FORMAT_DATA,
				   .wait_obj = FI_WAIT_NONE };
	struct rt_cq *c = calloc(1, sizeof(*c));
	int i;

	CHECK(c != NULL);
	snprintf(c->name, sizeof(c->name), "%s", name);
	RT_OK(fi_cq_open(domain, &attr, &c->cq, NULL));
	for (i = 0; i < RT_MAX_CQS && rt_cqs[i]; i++)
		;
	CHECK(i < RT_MAX_CQS);
	rt_cqs[i] = c;
	return c;
}

static inline void rt_cq_close(struct rt_cq *c)
{
	for (int i = 0; i < RT_MAX_CQS; i++)
		if (rt_cqs[i] == c)
			rt_cqs[i] = NULL;
	RT_OK(fi_close(&c->cq->fid));
	free(c->comps);
	free(c);
}

/* The next completion of c, within the deadline. */
#define rt_cq_wait(c, ...)	rt_cq_wait_at(__FILE__, __LINE__, c,	\
					      rt_fmt(__VA_ARGS__))
static inline struct rt_comp rt_cq_wait_at(const char *file, int line,
					   struct rt_cq *c, const char *what)
{
	int64_t deadline = rt_deadline();
	struct rt_comp comp;

	CHECK(!c->count_only);
	while (!c->count) {
		if (c->ecount)
			rt_fail_at(file, line, "%s: an error completion (err "
				   "%d, %s, prov_errno %d) came while waiting "
				   "for %s", c->name, c->errs[c->ehead].err,
				   fi_strerror(c->errs[c->ehead].err),
				   c->errs[c->ehead].prov_errno, what);
		if (rt_now_ms() > deadline)
			rt_fail_at(file, line, "%s: timed out after %" PRId64
				   " s waiting for %s", c->name,
				   rt_wait_ms() / 1000, what);
		rt_progress();
	}
	comp = c->comps[c->head];
	c->head = (c->head + 1) % c->cap;
	c->count--;
	return comp;
}

/* The next error entry of c (c->errors_ok must be set), within the deadline. */
#define rt_cq_wait_err(c, ...)	rt_cq_wait_err_at(__FILE__, __LINE__, c, \
						  rt_fmt(__VA_ARGS__))
static inline struct fi_cq_err_entry rt_cq_wait_err_at(const char *file,
						       int line,
						       struct rt_cq *c,
						       const char *what)
{
	int64_t deadline = rt_deadline();
	struct fi_cq_err_entry err;

	CHECK(c->errors_ok);
	while (!c->ecount) {
		if (c->count)
			rt_fail_at(file, line, "%s: a successful completion "
				   "(op_context %p, flags 0x%" PRIx64 ") came "
				   "while waiting for %s", c->name,
				   c->comps[c->head].op_context,
				   c->comps[c->head].flags, what);
		if (rt_now_ms() > deadline)
			rt_fail_at(file, line, "%s: timed out after %" PRId64
				   " s waiting for %s", c->name,
				   rt_wait_ms() / 1000, what);
		rt_progress();
	}
	err = c->errs[c->ehead];
	c->ehead = (c->ehead + 1) % 16;
	c->ecount--;
	return err;
}

/* Fails if c has (after a little progress) any completion or error. */
#define rt_cq_expect_empty(c, ...)					\
	rt_cq_expect_empty_at(__FILE__, __LINE__, c, rt_fmt(__VA_ARGS__))
static inline void rt_cq_expect_empty_at(const char *file, int line,
					 struct rt_cq *c, const char *why)
{
	rt_idle(20);
	if (c->count)
		rt_fail_at(file, line, "%s: %zu unexpected completion(s) (%s);"
			   " the first has op_context %p, flags 0x%" PRIx64
			   ", len %zu", c->name, c->count, why,
			   c->comps[c->head].op_context,
			   c->comps[c->head].flags, c->comps[c->head].len);
	if (c->ecount)
		rt_fail_at(file, line, "%s: %zu unexpected error completion(s) "
			   "(%s): err %d (%s)", c->name, c->ecount, why,
			   c->errs[c->ehead].err,
			   fi_strerror(c->errs[c->ehead].err));
}

/* Checks a completion's context and flags (all of want, none of deny). */
#define RT_EXPECT_COMP(comp, ctx, want, deny, ...)			\
	do {								\
		const struct rt_comp *ec_ = &(comp);			\
		if (ec_->op_context != (void *) (ctx))			\
			RFAIL("%s: op_context %p, expected %p",		\
			      rt_fmt(__VA_ARGS__), ec_->op_context,	\
			      (void *) (ctx));				\
		if ((ec_->flags & (want)) != (uint64_t) (want) ||	\
		    (ec_->flags & (deny)))				\
			RFAIL("%s: flags 0x%" PRIx64 ", expected all of "\
			      "0x%" PRIx64 " and none of 0x%" PRIx64,	\
			      rt_fmt(__VA_ARGS__), ec_->flags,		\
			      (uint64_t) (want), (uint64_t) (deny));	\
	} while (0)

static inline struct fid_cntr *rt_cntr_open(struct fid_domain *domain)
{
	struct fi_cntr_attr attr = { .events = FI_CNTR_EVENTS_COMP,
				     .wait_obj = FI_WAIT_UNSPEC };
	struct fid_cntr *cntr;
	int i;

	RT_OK(fi_cntr_open(domain, &attr, &cntr, NULL));
	for (i = 0; i < RT_MAX_CNTRS && rt_cntrs[i]; i++)
		;
	CHECK(i < RT_MAX_CNTRS);
	rt_cntrs[i] = cntr;
	return cntr;
}

static inline void rt_cntr_close(struct fid_cntr *cntr)
{
	if (!cntr)
		return;
	for (int i = 0; i < RT_MAX_CNTRS; i++)
		if (rt_cntrs[i] == cntr)
			rt_cntrs[i] = NULL;
	RT_OK(fi_close(&cntr->fid));
}

/* Waits (progressing everything) until cntr reads at least value. */
#define rt_cntr_reach(cntr, value, ...)					\
	rt_cntr_reach_at(__FILE__, __LINE__, cntr, value, rt_fmt(__VA_ARGS__))
static inline uint64_t rt_cntr_reach_at(const char *file, int line,
					struct fid_cntr *cntr, uint64_t value,
					const char *what)
{
	int64_t deadline = rt_deadline();
	uint64_t v;

	while ((v = fi_cntr_read(cntr)) < value) {
		if (rt_now_ms() > deadline)
			rt_fail_at(file, line, "timed out after %" PRId64 " s "
				   "waiting for %s to reach %" PRIu64 ": it "
				   "reads %" PRIu64 " (errors %" PRIu64 ")",
				   rt_wait_ms() / 1000, what, value, v,
				   fi_cntr_readerr(cntr));
		rt_progress();
	}
	return v;
}

/* Pipes between a parent and one child */

struct rt_link {
	int p2c[2];
	int c2p[2];
};

struct rt_chan {
	int rd;
	int wr;
};

static inline void rt_link_init(struct rt_link *l)
{
	CHECK(pipe(l->p2c) == 0);
	CHECK(pipe(l->c2p) == 0);
}

static inline struct rt_chan rt_link_parent(struct rt_link *l)
{
	close(l->p2c[0]);
	close(l->c2p[1]);
	return (struct rt_chan) { .rd = l->c2p[0], .wr = l->p2c[1] };
}

static inline struct rt_chan rt_link_child(struct rt_link *l)
{
	close(l->p2c[1]);
	close(l->c2p[0]);
	return (struct rt_chan) { .rd = l->p2c[0], .wr = l->c2p[1] };
}

/* A child's copy of a link that is not its own. */
static inline void rt_link_close_all(struct rt_link *l)
{
	close(l->p2c[0]);
	close(l->p2c[1]);
	close(l->c2p[0]);
	close(l->c2p[1]);
}

static inline void rt_chan_write(struct rt_chan *ch, const void *buf,
				 size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = write(ch->wr, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			RFAIL("write to the peer's pipe failed: %s",
			      strerror(errno));
		p += n;
		len -= n;
	}
}

/*
 * Reads len bytes from the peer within the deadline; with progress, keeps
 * this process's CQs and counters progressing meanwhile (else it sleeps
 * in poll, leaving the CPU to others).
 */
static inline void rt_chan_read_at(const char *file, int line,
				   struct rt_chan *ch, void *buf, size_t len,
				   bool progress, const char *what)
{
	int64_t deadline = rt_deadline();
	char *p = buf;

	while (len) {
		struct pollfd pfd = { .fd = ch->rd, .events = POLLIN };
		ssize_t n;

		if (poll(&pfd, 1, progress ? 0 : 10) <= 0) {
			if (rt_now_ms() > deadline)
				rt_fail_at(file, line, "timed out after %"
					   PRId64 " s waiting for %s from the "
					   "peer", rt_wait_ms() / 1000, what);
			if (progress)
				rt_progress();
			else if (rt_nkids)
				rt_check_kids();
			continue;
		}
		n = read(ch->rd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n == 0) {
			/* Say so if the peer is a child that failed. */
			for (int i = 0; i < 100 && rt_nkids; i++) {
				rt_check_kids();
				usleep(10000);
			}
			rt_fail_at(file, line, "the peer closed its pipe while "
				   "we waited for %s", what);
		}
		if (n < 0)
			rt_fail_at(file, line, "read from the peer's pipe "
				   "failed: %s", strerror(errno));
		p += n;
		len -= n;
	}
}

#define rt_chan_read(ch, buf, len, ...)					\
	rt_chan_read_at(__FILE__, __LINE__, ch, buf, len, true,		\
			rt_fmt(__VA_ARGS__))
#define rt_chan_read_idle(ch, buf, len, ...)				\
	rt_chan_read_at(__FILE__, __LINE__, ch, buf, len, false,	\
			rt_fmt(__VA_ARGS__))

/* Whether the peer has written something (without reading it). */
static inline bool rt_chan_ready(struct rt_chan *ch)
{
	struct pollfd pfd = { .fd = ch->rd, .events = POLLIN };

	return poll(&pfd, 1, 0) > 0;
}

/* Steps: a 32-bit tag that both sides must agree on. */
static inline void rt_signal(struct rt_chan *ch, uint32_t tag)
{
	rt_chan_write(ch, &tag, sizeof(tag));
}

#define rt_expect(ch, tag, ...)						\
	rt_expect_at(__FILE__, __LINE__, ch, tag, true, rt_fmt(__VA_ARGS__))
#define rt_expect_idle(ch, tag, ...)					\
	rt_expect_at(__FILE__, __LINE__, ch, tag, false, rt_fmt(__VA_ARGS__))
static inline void rt_expect_at(const char *file, int line, struct rt_chan *ch,
				uint32_t tag, bool progress, const char *what)
{
	uint32_t got;

	rt_chan_read_at(file, line, ch, &got, sizeof(got), progress, what);
	if (got != tag)
		rt_fail_at(file, line, "out of step with the peer: got signal "
			   "0x%x, expected 0x%x (%s)", got, tag, what);
}

/* Fabric, domain and endpoints */

static struct fi_info *rt_info;
static struct fid_fabric *rt_fabric_fid;
static struct fid_domain *rt_domain_fid;

/* Hints for RMA with remote counters; FI_MR_RMA_EVENT as an app would. */
static inline struct fi_info *rt_getinfo(void)
{
	struct fi_info *hints = itest_hints(), *info;

	hints->caps = FI_MSG | FI_RMA | FI_RMA_EVENT;
	hints->domain_attr->mr_mode = FI_MR_PROV_KEY | FI_MR_VIRT_ADDR |
				      FI_MR_ALLOCATED | FI_MR_RMA_EVENT;
	hints->domain_attr->name = strdup(itest_device());
	CHECK(hints->domain_attr->name != NULL);
	RT_OK(fi_getinfo(ITEST_VERSION, NULL, NULL, 0, hints, &info));
	CHECK(info != NULL);
	fi_freeinfo(hints);
	REXPECT((info->caps & (FI_RMA | FI_RMA_EVENT)) ==
		(FI_RMA | FI_RMA_EVENT), "caps 0x%" PRIx64, info->caps);
	return info;
}

/* This process's domain, opened on first use. */
static inline struct fid_domain *rt_domain(void)
{
	if (!rt_domain_fid) {
		rt_info = rt_getinfo();
		RT_OK(fi_fabric(rt_info->fabric_attr, &rt_fabric_fid, NULL));
		RT_OK(fi_domain(rt_fabric_fid, rt_info, &rt_domain_fid, NULL));
	}
	return rt_domain_fid;
}

static inline void rt_domain_close(void)
{
	if (!rt_domain_fid)
		return;
	RT_OK(fi_close(&rt_domain_fid->fid));
	RT_OK(fi_close(&rt_fabric_fid->fid));
	fi_freeinfo(rt_info);
	rt_domain_fid = NULL;
	rt_fabric_fid = NULL;
	rt_info = NULL;
}

struct rt_node_opts {
	bool tx_selective;		/* FI_SELECTIVE_COMPLETION on tx CQ */
	bool tx_count_only;		/* tx CQ entries counted, not kept */
	bool tx_errors_ok;		/* tx CQ error entries are expected */
	bool write_cntr;		/* counters bound FI_WRITE, FI_READ */
	bool read_cntr;
	/* A remote counter: bound with FI_REMOTE_WRITE and/or FI_REMOTE_READ */
	uint64_t remote_flags;
	/* A second one, bound FI_REMOTE_READ only (remote_flags must lack it) */
	bool rread_cntr;
};

struct rt_node {
	struct fid_av *av;
	struct fid_ep *ep;
	struct rt_cq *tx;
	struct rt_cq *rx;
	struct fid_cntr *write_cntr;
	struct fid_cntr *read_cntr;
	struct fid_cntr *remote_cntr;
	struct fid_cntr *rread_cntr;
	struct sockaddr_in name;
	fi_addr_t peer;			/* the last address inserted */
};

/* An enabled RDM endpoint with its own AV, CQs and counters. */
static inline void rt_node_open(struct rt_node *n, const struct rt_node_opts *o,
				const char *name)
{
	static const struct rt_node_opts defaults;
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE };
	struct fid_domain *domain = rt_domain();
	size_t len = sizeof(n->name);

	if (!o)
		o = &defaults;
	memset(n, 0, sizeof(*n));
	n->peer = FI_ADDR_NOTAVAIL;
	RT_OK(fi_av_open(domain, &av_attr, &n->av, NULL));
	RT_OK(fi_endpoint(domain, rt_info, &n->ep, NULL));
	RT_OK(fi_ep_bind(n->ep, &n->av->fid, 0));
	n->tx = rt_cq_open(domain, rt_fmt("%s tx CQ", name));
	n->tx->count_only = o->tx_count_only;
	n->tx->errors_ok = o->tx_errors_ok;
	RT_OK(fi_ep_bind(n->ep, &n->tx->cq->fid, FI_TRANSMIT |
			 (o->tx_selective ? FI_SELECTIVE_COMPLETION : 0)));
	n->rx = rt_cq_open(domain, rt_fmt("%s rx CQ", name));
	RT_OK(fi_ep_bind(n->ep, &n->rx->cq->fid, FI_RECV));
	if (o->write_cntr) {
		n->write_cntr = rt_cntr_open(domain);
		RT_OK(fi_ep_bind(n->ep, &n->write_cntr->fid, FI_WRITE));
	}
	if (o->read_cntr) {
		n->read_cntr = rt_cntr_open(domain);
		RT_OK(fi_ep_bind(n->ep, &n->read_cntr->fid, FI_READ));
	}
	if (o->remote_flags) {
		n->remote_cntr = rt_cntr_open(domain);
		RT_OK(fi_ep_bind(n->ep, &n->remote_cntr->fid, o->remote_flags));
	}
	if (o->rread_cntr) {
		CHECK(!(o->remote_flags & FI_REMOTE_READ));
		n->rread_cntr = rt_cntr_open(domain);
		RT_OK(fi_ep_bind(n->ep, &n->rread_cntr->fid, FI_REMOTE_READ));
	}
	RT_OK(fi_enable(n->ep));
	RT_OK(fi_getname(&n->ep->fid, &n->name, &len));
	CHECK(len == sizeof(n->name));
}

static inline void rt_node_close(struct rt_node *n)
{
	RT_OK(fi_close(&n->ep->fid));
	rt_cq_close(n->tx);
	rt_cq_close(n->rx);
	rt_cntr_close(n->write_cntr);
	rt_cntr_close(n->read_cntr);
	rt_cntr_close(n->remote_cntr);
	rt_cntr_close(n->rread_cntr);
	RT_OK(fi_close(&n->av->fid));
	memset(n, 0, sizeof(*n));
}

/* Inserts a name into n's AV; returns (and remembers) its fi_addr_t. */
static inline fi_addr_t rt_node_insert(struct rt_node *n,
				       const struct sockaddr_in *name)
{
	fi_addr_t addr = FI_ADDR_NOTAVAIL;

	RT_CALL(fi_av_insert(n->av, name, 1, &addr, 0, NULL), 1);
	CHECK(addr != FI_ADDR_NOTAVAIL);
	n->peer = addr;
	return addr;
}

/* Swaps names with the peer over ch and inserts the peer's. */
static inline fi_addr_t rt_node_exchange(struct rt_node *n, struct rt_chan *ch)
{
	struct sockaddr_in peer;

	rt_chan_write(ch, &n->name, sizeof(n->name));
	rt_chan_read(ch, &peer, sizeof(peer), "the peer's endpoint name");
	return rt_node_insert(n, &peer);
}

/*
 * Posts an operation, retrying (and progressing) while it returns
 * -FI_EAGAIN, e.g. while the connection is being made or the queue is
 * full.  Fails on any other error.
 */
#define RT_POST(call, ...)						\
	do {								\
		int64_t rp_deadline_ = rt_deadline();			\
		ssize_t rp_ret_;					\
		while ((rp_ret_ = (call)) == -FI_EAGAIN) {		\
			rt_check_deadline(rp_deadline_, "%s to post "	\
					  "(it keeps returning "	\
					  "-FI_EAGAIN)", #call);	\
			rt_progress();					\
		}							\
		if (rp_ret_)						\
			RFAIL("%s: %s returned %zd (%s)",		\
			      rt_fmt(__VA_ARGS__), #call, rp_ret_,	\
			      fi_strerror((int) -rp_ret_));		\
	} while (0)

/* Memory registrations; what a peer needs to address one. */

struct rt_rkey {
	uint64_t addr;			/* virtual address (FI_MR_VIRT_ADDR) */
	uint64_t len;
	uint64_t key;
};

static inline struct fid_mr *rt_mr_reg(void *buf, size_t len, uint64_t access,
				       uint64_t flags)
{
	struct iovec iov = { .iov_base = buf, .iov_len = len };
	struct fi_mr_attr attr = {
		.mr_iov = &iov, .iov_count = 1, .access = access,
		.iface = FI_HMEM_SYSTEM,
	};
	struct fid_mr *mr;

	RT_OK(fi_mr_regattr(rt_domain(), &attr, flags, &mr));
	return mr;
}

/* A registration for remote events whose ops bump cntr; enabled. */
static inline struct fid_mr *rt_mr_reg_cntr(void *buf, size_t len,
					    uint64_t access,
					    struct fid_cntr *cntr,
					    uint64_t bind_flags)
{
	struct fid_mr *mr = rt_mr_reg(buf, len, access, FI_RMA_EVENT);

	RT_OK(fi_mr_bind(mr, &cntr->fid, bind_flags));
	RT_OK(fi_mr_enable(mr));
	return mr;
}

static inline struct rt_rkey rt_rkey_of(struct fid_mr *mr, const void *buf,
					size_t len)
{
	return (struct rt_rkey) { .addr = (uintptr_t) buf, .len = len,
				  .key = fi_mr_key(mr) };
}

/* Data patterns: byte i of stream seed is a function of (seed, i). */

static inline uint64_t rt_pat_word(uint64_t seed, uint64_t idx)
{
	uint64_t x = (seed * 0x9e3779b97f4a7c15ULL) ^
		     ((idx + 1) * 0xbf58476d1ce4e5b9ULL);

	x ^= x >> 31;
	x *= 0x94d049bb133111ebULL;
	x ^= x >> 29;
	return x;
}

/* Writes bytes [off, off + len) of pattern seed to dst. */
static inline void rt_pat_gen(void *dst, uint64_t seed, size_t off, size_t len)
{
	unsigned char *p = dst;

	while (len) {
		uint64_t w = rt_pat_word(seed, off / 8);
		size_t b = off % 8, take = 8 - b;

		if (take > len)
			take = len;
		if (b == 0 && take == 8) {
			memcpy(p, &w, 8);
		} else {
			for (size_t i = 0; i < take; i++)
				p[i] = (unsigned char) (w >> (8 * (b + i)));
		}
		p += take;
		off += take;
		len -= take;
	}
}

/* Fails unless buf holds bytes [off, off + len) of pattern seed. */
#define rt_pat_check(buf, seed, off, len, ...)				\
	rt_pat_check_at(__FILE__, __LINE__, buf, seed, off, len,	\
			rt_fmt(__VA_ARGS__))
static inline void rt_pat_check_at(const char *file, int line, const void *buf,
				   uint64_t seed, size_t off, size_t len,
				   const char *what)
{
	static unsigned char want[4096];
	const unsigned char *p = buf;

	for (size_t done = 0; done < len;) {
		size_t n = len - done < sizeof(want) ? len - done : sizeof(want);

		rt_pat_gen(want, seed, off + done, n);
		if (memcmp(p + done, want, n)) {
			size_t i = 0;

			while (p[done + i] == want[i])
				i++;
			rt_fail_at(file, line, "%s: data differs at byte %zu "
				   "of %zu: got 0x%02x, expected 0x%02x",
				   what, done + i, len, p[done + i], want[i]);
		}
		done += n;
	}
}

/* Fails unless len bytes at buf all equal byte. */
#define rt_fill_check(buf, byte, len, ...)				\
	rt_fill_check_at(__FILE__, __LINE__, buf, byte, len,		\
			 rt_fmt(__VA_ARGS__))
static inline void rt_fill_check_at(const char *file, int line,
				    const void *buf, int byte, size_t len,
				    const char *what)
{
	const unsigned char *p = buf;

	for (size_t i = 0; i < len; i++)
		if (p[i] != (unsigned char) byte)
			rt_fail_at(file, line, "%s: byte %zu of %zu is 0x%02x, "
				   "expected 0x%02x (untouched)", what, i, len,
				   p[i], (unsigned char) byte);
}

/*
 * A buffer of len bytes with RT_GUARD guard bytes on each side; returns
 * the start of the len bytes.  rt_guard_check fails if a guard changed.
 */
static inline void *rt_guarded(size_t len)
{
	unsigned char *p = malloc(len + 2 * RT_GUARD);

	CHECK(p != NULL);
	memset(p, RT_GUARD_BYTE, RT_GUARD);
	memset(p + RT_GUARD, 0, len);
	memset(p + RT_GUARD + len, RT_GUARD_BYTE, RT_GUARD);
	return p + RT_GUARD;
}

static inline void rt_guarded_free(void *buf)
{
	if (buf)
		free((unsigned char *) buf - RT_GUARD);
}

#define rt_guard_check(buf, len, ...)					\
	rt_guard_check_at(__FILE__, __LINE__, buf, len, rt_fmt(__VA_ARGS__))
static inline void rt_guard_check_at(const char *file, int line,
				     const void *buf, size_t len,
				     const char *what)
{
	const unsigned char *b = buf;

	for (size_t i = 1; i <= RT_GUARD; i++)
		if (b[-(ptrdiff_t) i] != RT_GUARD_BYTE)
			rt_fail_at(file, line, "%s: guard byte %zu before the "
				   "%zu-byte buffer was overwritten (0x%02x)",
				   what, i, len, b[-(ptrdiff_t) i]);
	for (size_t i = 0; i < RT_GUARD; i++)
		if (b[len + i] != RT_GUARD_BYTE)
			rt_fail_at(file, line, "%s: guard byte %zu after the "
				   "%zu-byte buffer was overwritten (0x%02x)",
				   what, i, len, b[len + i]);
}

static inline void rt_pass(const char *name, int64_t start_ms)
{
	printf("%s: all checks passed (%.1f s)\n", name,
	       (rt_now_ms() - start_ms) / 1000.0);
	fflush(stdout);
}

static inline void rt_note(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));
static inline void rt_note(const char *fmt, ...)
{
	va_list ap;

	printf("[%s] ", rt_who);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

#endif /* NRMA_ITEST_RMA_H */
