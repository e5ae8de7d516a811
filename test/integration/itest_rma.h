/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * RMA-specific helpers for the RMA tests (nrma_rma_*): endpoints with RMA
 * counters, registrations, remote counters, two-sided guards and the RMA
 * data patterns.  The shared machinery (peer processes, pipes, bounded
 * waits, CQ stashes, progress) is itest_msg.h's; the rt_ wrappers below
 * only give its calls a printf-style "what" (and the RMA tests' limits).
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

/* The RMA tests' limits; their waits do not stretch under valgrind. */
#define ITEST_MAX_KIDS			8
#define ITEST_MAX_CQS			8
#define ITEST_WAIT_VALGRIND_FACTOR	1
#include "itest_msg.h"

#define RT_GUARD		64	/* guard bytes on each side */
#define RT_GUARD_BYTE		0xa5

/* Fails unless a libfabric call returns want. */
#define RT_CALL(expr, want)						\
	do {								\
		long rc_got_ = (long) (expr), rc_want_ = (long) (want);	\
		if (rc_got_ != rc_want_)				\
			itest_fail_at(__FILE__, __LINE__, "%s returned %ld"\
				      " (%s), expected %ld (%s)", #expr,\
				      rc_got_, itest_strerror(rc_got_),	\
				      rc_want_, itest_strerror(rc_want_));\
	} while (0)
#define RT_OK(expr)	RT_CALL(expr, 0)

/* itest_msg.h's waits and checks, with a printf-style "what". */
#define rt_check_deadline(deadline, ...)				\
	itest_check_deadline(deadline, itest_fmt(__VA_ARGS__))
#define rt_cq_wait(c, ...)						\
	itest_cq_wait_at(__FILE__, __LINE__, c, itest_fmt(__VA_ARGS__))
/* A successful completion that comes first fails it. */
#define rt_cq_wait_err(c, ...)						\
	itest_cq_wait_err_at(__FILE__, __LINE__, c, true,		\
			     itest_fmt(__VA_ARGS__))
/* After 20 ms of progress. */
#define rt_cq_expect_empty(c, ...)					\
	itest_cq_expect_empty_at(__FILE__, __LINE__, c, 20,		\
				 itest_fmt(__VA_ARGS__))
#define RT_EXPECT_COMP(comp, ctx, want, deny, ...)			\
	EXPECT_COMP(comp, ctx, want, deny, itest_fmt(__VA_ARGS__))
#define rt_chan_read(ch, buf, len, ...)					\
	itest_chan_read_at(__FILE__, __LINE__, ch, buf, len, true,	\
			   itest_fmt(__VA_ARGS__))
#define rt_chan_read_idle(ch, buf, len, ...)				\
	itest_chan_read_at(__FILE__, __LINE__, ch, buf, len, false,	\
			   itest_fmt(__VA_ARGS__))
#define rt_expect(ch, tag, ...)						\
	itest_expect_at(__FILE__, __LINE__, ch, tag, true,		\
			itest_fmt(__VA_ARGS__))
#define rt_expect_idle(ch, tag, ...)					\
	itest_expect_at(__FILE__, __LINE__, ch, tag, false,		\
			itest_fmt(__VA_ARGS__))
/*
 * Posts an operation, retrying (and progressing) while it returns
 * -FI_EAGAIN, e.g. while the connection is being made or the queue is
 * full.  Fails on any other error.
 */
#define RT_POST(call, ...)	ITEST_POST(call, itest_fmt(__VA_ARGS__))

/* Waits (progressing everything) until cntr reads at least value. */
#define rt_cntr_reach(cntr, value, ...)					\
	rt_cntr_reach_at(__FILE__, __LINE__, cntr, value, itest_fmt(__VA_ARGS__))
static inline uint64_t rt_cntr_reach_at(const char *file, int line,
					struct fid_cntr *cntr, uint64_t value,
					const char *what)
{
	int64_t deadline = itest_deadline();
	uint64_t v;

	while ((v = fi_cntr_read(cntr)) < value) {
		if (itest_now_ms() > deadline)
			itest_fail_at(file, line, "timed out after %" PRId64
				      " s waiting for %s to reach %" PRIu64
				      ": it reads %" PRIu64 " (errors %"
				      PRIu64 ")", itest_wait_ms() / 1000, what,
				      value, v, fi_cntr_readerr(cntr));
		itest_progress();
	}
	return v;
}

/* Peers: one target (the parent) and n initiators (its children). */

/*
 * Forks n initiators, each running fn with its index as the argument; the
 * target keeps its ends of the links in pc.
 */
static inline void rt_fork_initiators(struct itest_link *links,
				      struct itest_chan *pc, int n,
				      void (*fn)(void *))
{
	for (int i = 0; i < n; i++)
		itest_link_init(&links[i]);
	for (uintptr_t i = 0; i < (uintptr_t) n; i++)
		itest_fork(itest_fmt("initiator %u", (unsigned) i), fn,
			   (void *) i);
	snprintf(itest_who, sizeof(itest_who), "target");
	for (int i = 0; i < n; i++)
		pc[i] = itest_link_parent(&links[i]);
}

/* Initiator me's end of its link to the target; the others' are closed. */
static inline struct itest_chan rt_initiator_chan(struct itest_link *links,
						  int n, int me)
{
	for (int i = 0; i < n; i++)
		if (i != me)
			itest_link_close_all(&links[i]);
	return itest_link_child(&links[me]);
}

/* Fabric, domain and endpoints */

/* Hints for RMA and atomics with remote counters; FI_MR_RMA_EVENT as an
 * app would. */
static inline struct fi_info *rt_getinfo(void)
{
	struct fi_info *hints = itest_hints(), *info;

	hints->caps = FI_MSG | FI_RMA | FI_ATOMIC | FI_RMA_EVENT;
	hints->domain_attr->mr_mode = FI_MR_PROV_KEY | FI_MR_VIRT_ADDR |
				      FI_MR_ALLOCATED | FI_MR_RMA_EVENT;
	hints->domain_attr->name = strdup(itest_device());
	CHECK(hints->domain_attr->name != NULL);
	RT_OK(fi_getinfo(ITEST_VERSION, NULL, NULL, 0, hints, &info));
	CHECK(info != NULL);
	fi_freeinfo(hints);
	EXPECT((info->caps & (FI_RMA | FI_ATOMIC | FI_RMA_EVENT)) ==
	       (FI_RMA | FI_ATOMIC | FI_RMA_EVENT), "caps 0x%" PRIx64,
	       info->caps);
	return info;
}

/* This process's domain (itest_info, itest_domain_fid), opened on first
 * use; itest_domain_close closes it. */
static inline struct fid_domain *rt_domain(void)
{
	if (!itest_domain_fid) {
		itest_info = rt_getinfo();
		RT_OK(fi_fabric(itest_info->fabric_attr, &itest_fabric_fid,
				NULL));
		RT_OK(fi_domain(itest_fabric_fid, itest_info,
				&itest_domain_fid, NULL));
	}
	return itest_domain_fid;
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
	struct itest_cq *tx;
	struct itest_cq *rx;
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
	RT_OK(fi_endpoint(domain, itest_info, &n->ep, NULL));
	RT_OK(fi_ep_bind(n->ep, &n->av->fid, 0));
	n->tx = itest_cq_open(domain, FI_CQ_FORMAT_DATA,
			      itest_fmt("%s tx CQ", name));
	n->tx->count_only = o->tx_count_only;
	n->tx->errors_ok = o->tx_errors_ok;
	RT_OK(fi_ep_bind(n->ep, &n->tx->cq->fid, FI_TRANSMIT |
			 (o->tx_selective ? FI_SELECTIVE_COMPLETION : 0)));
	n->rx = itest_cq_open(domain, FI_CQ_FORMAT_DATA,
			      itest_fmt("%s rx CQ", name));
	RT_OK(fi_ep_bind(n->ep, &n->rx->cq->fid, FI_RECV));
	if (o->write_cntr) {
		n->write_cntr = itest_cntr_open(domain);
		RT_OK(fi_ep_bind(n->ep, &n->write_cntr->fid, FI_WRITE));
	}
	if (o->read_cntr) {
		n->read_cntr = itest_cntr_open(domain);
		RT_OK(fi_ep_bind(n->ep, &n->read_cntr->fid, FI_READ));
	}
	if (o->remote_flags) {
		n->remote_cntr = itest_cntr_open(domain);
		RT_OK(fi_ep_bind(n->ep, &n->remote_cntr->fid, o->remote_flags));
	}
	if (o->rread_cntr) {
		CHECK(!(o->remote_flags & FI_REMOTE_READ));
		n->rread_cntr = itest_cntr_open(domain);
		RT_OK(fi_ep_bind(n->ep, &n->rread_cntr->fid, FI_REMOTE_READ));
	}
	RT_OK(fi_enable(n->ep));
	RT_OK(fi_getname(&n->ep->fid, &n->name, &len));
	CHECK(len == sizeof(n->name));
}

static inline void rt_node_close(struct rt_node *n)
{
	RT_OK(fi_close(&n->ep->fid));
	itest_cq_close(n->tx);
	itest_cq_close(n->rx);
	itest_cntr_close(n->write_cntr);
	itest_cntr_close(n->read_cntr);
	itest_cntr_close(n->remote_cntr);
	itest_cntr_close(n->rread_cntr);
	RT_OK(fi_close(&n->av->fid));
	memset(n, 0, sizeof(*n));
}

/*
 * rt_node_insert inserts a name into n's AV; rt_node_exchange swaps names
 * with the peer over ch and inserts the peer's.  Both return (and
 * remember) the fi_addr_t.
 */
static inline fi_addr_t rt_node_insert(struct rt_node *n,
				       const struct sockaddr_in *name)
{
	return n->peer = itest_av_insert1(n->av, name);
}

static inline fi_addr_t rt_node_exchange(struct rt_node *n,
					 struct itest_chan *ch)
{
	struct sockaddr_in peer = itest_name_swap(ch, &n->name);

	return n->peer = itest_av_insert1(n->av, &peer);
}

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

/* Data patterns: itest_msg.h's, starting at word 1 (bias 1). */

/* Writes bytes [off, off + len) of pattern seed to dst. */
static inline void rt_pat_gen(void *dst, uint64_t seed, size_t off, size_t len)
{
	itest_pat_gen_b(dst, seed, off, len, 1);
}

/* Fails unless buf holds bytes [off, off + len) of pattern seed. */
#define rt_pat_check(buf, seed, off, len, ...)				\
	itest_pat_check_b(__FILE__, __LINE__, buf, seed, off, len, 1,	\
			  itest_fmt(__VA_ARGS__))

/* Fails unless len bytes at buf all equal byte. */
#define rt_fill_check(buf, byte, len, ...)				\
	rt_fill_check_at(__FILE__, __LINE__, buf, byte, len,		\
			 itest_fmt(__VA_ARGS__))
static inline void rt_fill_check_at(const char *file, int line,
				    const void *buf, int byte, size_t len,
				    const char *what)
{
	const unsigned char *p = buf;

	for (size_t i = 0; i < len; i++)
		if (p[i] != (unsigned char) byte)
			itest_fail_at(file, line, "%s: byte %zu of %zu is 0x%02x, "
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
	rt_guard_check_at(__FILE__, __LINE__, buf, len, itest_fmt(__VA_ARGS__))
static inline void rt_guard_check_at(const char *file, int line,
				     const void *buf, size_t len,
				     const char *what)
{
	const unsigned char *b = buf;

	for (size_t i = 1; i <= RT_GUARD; i++)
		if (b[-(ptrdiff_t) i] != RT_GUARD_BYTE)
			itest_fail_at(file, line, "%s: guard byte %zu before the "
				   "%zu-byte buffer was overwritten (0x%02x)",
				   what, i, len, b[-(ptrdiff_t) i]);
	for (size_t i = 0; i < RT_GUARD; i++)
		if (b[len + i] != RT_GUARD_BYTE)
			itest_fail_at(file, line, "%s: guard byte %zu after the "
				   "%zu-byte buffer was overwritten (0x%02x)",
				   what, i, len, b[len + i]);
}

static inline void rt_pass(const char *name, int64_t start_ms)
{
	printf("%s: all checks passed (%.1f s)\n", name,
	       (itest_now_ms() - start_ms) / 1000.0);
	fflush(stdout);
}

static inline void rt_note(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));
static inline void rt_note(const char *fmt, ...)
{
	va_list ap;

	printf("[%s] ", itest_who);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

#endif /* NRMA_ITEST_RMA_H */
