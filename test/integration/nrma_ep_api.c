/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The endpoint calls of fi_endpoint(3) (libfabric 2.x) beyond binding and
 * enabling, between a receiver ("R") and a forked sender ("S"): every
 * FI_OPT_ENDPOINT option, what each answers and when it may be set; the
 * per-class sizes (FI_OPT_MAX_*, FI_OPT_INJECT_*) holding on the data
 * path; FI_GETOPSFLAG and FI_SETOPSFLAG; aliases (fi_ep_alias), whose
 * flags are theirs alone; fi_endpoint2; fi_tx_size_left and
 * fi_rx_size_left; FI_COMMIT_COMPLETE, refused for want of persistent
 * memory; an info that asks for more than fi_getinfo offered; the
 * completion queues each direction needs to enable; and counter binds
 * that take all their events or none.
 */
#include <rdma/fi_atomic.h>
#include <rdma/fi_rma.h>

#include "itest_rs.h"

/* fi_tx_size_left and fi_rx_size_left are deprecated, and served. */
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

/* libfabric 2.0's option numbers; 1.x headers do not name them. */
#if FI_MAJOR_VERSION >= 2
#define OPT_CUDA_API_PERMITTED	    FI_OPT_CUDA_API_PERMITTED
#define OPT_SHARED_MEMORY_PERMITTED FI_OPT_SHARED_MEMORY_PERMITTED
#define OPT_MAX_MSG_SIZE	    FI_OPT_MAX_MSG_SIZE
#define OPT_MAX_TAGGED_SIZE	    FI_OPT_MAX_TAGGED_SIZE
#define OPT_MAX_RMA_SIZE	    FI_OPT_MAX_RMA_SIZE
#define OPT_MAX_ATOMIC_SIZE	    FI_OPT_MAX_ATOMIC_SIZE
#define OPT_INJECT_MSG_SIZE	    FI_OPT_INJECT_MSG_SIZE
#define OPT_INJECT_TAGGED_SIZE	    FI_OPT_INJECT_TAGGED_SIZE
#define OPT_INJECT_RMA_SIZE	    FI_OPT_INJECT_RMA_SIZE
#define OPT_INJECT_ATOMIC_SIZE	    FI_OPT_INJECT_ATOMIC_SIZE
#else
enum {
	OPT_CUDA_API_PERMITTED = FI_OPT_XPU_TRIGGER + 1,
	OPT_SHARED_MEMORY_PERMITTED,
	OPT_MAX_MSG_SIZE,
	OPT_MAX_TAGGED_SIZE,
	OPT_MAX_RMA_SIZE,
	OPT_MAX_ATOMIC_SIZE,
	OPT_INJECT_MSG_SIZE,
	OPT_INJECT_TAGGED_SIZE,
	OPT_INJECT_RMA_SIZE,
	OPT_INJECT_ATOMIC_SIZE,
};
#endif

#define LIMIT_MSG    64
#define LIMIT_INJECT 16

static size_t get_size(struct fid_ep *ep, int opt)
{
	size_t v = 0, len = sizeof(v);

	CHECK_OK(fi_getopt(&ep->fid, FI_OPT_ENDPOINT, opt, &v, &len));
	CHECK(len == sizeof(v));
	return v;
}

static int set_size(struct fid_ep *ep, int opt, size_t v)
{
	return fi_setopt(&ep->fid, FI_OPT_ENDPOINT, opt, &v, sizeof(v));
}

/* Each class's size: its default, its bound, and a smaller value. */
static void check_class_sizes(struct fid_ep *ep, const struct fi_info *info)
{
	static const int max_opts[] = { OPT_MAX_MSG_SIZE, OPT_MAX_TAGGED_SIZE,
					OPT_MAX_RMA_SIZE };
	static const int inject_opts[] = { OPT_INJECT_MSG_SIZE,
					   OPT_INJECT_TAGGED_SIZE,
					   OPT_INJECT_RMA_SIZE };
	size_t max = info->ep_attr->max_msg_size;
	size_t inject = info->tx_attr->inject_size;

	for (size_t i = 0; i < 3; i++) {
		CHECK(get_size(ep, max_opts[i]) == max);
		CHECK(get_size(ep, inject_opts[i]) == inject);
		CHECK_RET(set_size(ep, inject_opts[i], inject + 1), -FI_EINVAL);
		CHECK_OK(set_size(ep, max_opts[i], 1000));
		CHECK(get_size(ep, max_opts[i]) == 1000);
		CHECK_OK(set_size(ep, max_opts[i], max));
	}
	if (max != SIZE_MAX)
		CHECK_RET(set_size(ep, OPT_MAX_MSG_SIZE, max + 1), -FI_EINVAL);
	/* An atomic moves 64 bytes of elements at most. */
	CHECK(get_size(ep, OPT_MAX_ATOMIC_SIZE) == 64);
	CHECK(get_size(ep, OPT_INJECT_ATOMIC_SIZE) == 64);
	CHECK_RET(set_size(ep, OPT_MAX_ATOMIC_SIZE, 65), -FI_EINVAL);
}

static void check_other_options(struct fid_ep *ep)
{
	int mode = -1;
	bool yes = true;
	size_t len = sizeof(mode), v = 0, vlen = sizeof(v);
	char tiny;

	CHECK_OK(fi_getopt(&ep->fid, FI_OPT_ENDPOINT, FI_OPT_FI_HMEM_P2P, &mode,
			   &len));
	CHECK(mode == FI_HMEM_P2P_ENABLED && len == sizeof(int));
	mode = FI_HMEM_P2P_REQUIRED;
	CHECK_RET(fi_setopt(&ep->fid, FI_OPT_ENDPOINT, FI_OPT_FI_HMEM_P2P,
			    &mode, sizeof(mode)),
		  -FI_EOPNOTSUPP);
	mode = FI_HMEM_P2P_DISABLED;
	CHECK_OK(fi_setopt(&ep->fid, FI_OPT_ENDPOINT, FI_OPT_FI_HMEM_P2P, &mode,
			   sizeof(mode)));
	mode = -1;
	CHECK_OK(fi_getopt(&ep->fid, FI_OPT_ENDPOINT, FI_OPT_FI_HMEM_P2P, &mode,
			   &len));
	CHECK(mode == FI_HMEM_P2P_DISABLED);
	/* No FI_HMEM, so no CUDA; no shared memory ever, so either answer. */
	CHECK_RET(fi_setopt(&ep->fid, FI_OPT_ENDPOINT, OPT_CUDA_API_PERMITTED,
			    &yes, sizeof(yes)),
		  -FI_ENOPROTOOPT);
	CHECK_OK(fi_setopt(&ep->fid, FI_OPT_ENDPOINT,
			   OPT_SHARED_MEMORY_PERMITTED, &yes, sizeof(yes)));
	/* Connection data belongs to connected endpoints; read only. */
	CHECK_RET(fi_getopt(&ep->fid, FI_OPT_ENDPOINT, FI_OPT_CM_DATA_SIZE, &v,
			    &vlen),
		  -FI_ENOPROTOOPT);
	CHECK_RET(fi_setopt(&ep->fid, FI_OPT_ENDPOINT, FI_OPT_CM_DATA_SIZE, &v,
			    sizeof(v)),
		  -FI_ENOPROTOOPT);
	CHECK_RET(fi_getopt(&ep->fid, FI_OPT_ENDPOINT, FI_OPT_BUFFERED_MIN, &v,
			    &vlen),
		  -FI_ENOPROTOOPT);
	CHECK_RET(fi_getopt(&ep->fid, FI_OPT_ENDPOINT + 1,
			    FI_OPT_MIN_MULTI_RECV, &v, &vlen),
		  -FI_ENOPROTOOPT);
	len = sizeof(tiny);
	CHECK_RET(fi_getopt(&ep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV,
			    &tiny, &len),
		  -FI_ETOOSMALL);
	CHECK(len == sizeof(size_t));
}

static void check_ops_flags(struct fid_ep *ep)
{
	uint64_t flags = 0;

	CHECK_RET(fi_control(&ep->fid, FI_GETOPSFLAG, &flags), -FI_EINVAL);
	flags = FI_TRANSMIT | FI_RECV;
	CHECK_RET(fi_control(&ep->fid, FI_GETOPSFLAG, &flags), -FI_EINVAL);
	flags = FI_TRANSMIT | FI_COMMIT_COMPLETE;
	CHECK_RET(fi_control(&ep->fid, FI_SETOPSFLAG, &flags), -FI_EINVAL);
	flags = FI_RECV | FI_INJECT;
	CHECK_RET(fi_control(&ep->fid, FI_SETOPSFLAG, &flags), -FI_EINVAL);
	flags = FI_TRANSMIT | FI_DELIVERY_COMPLETE;
	CHECK_OK(fi_control(&ep->fid, FI_SETOPSFLAG, &flags));
	flags = FI_RECV | FI_MULTI_RECV;
	CHECK_OK(fi_control(&ep->fid, FI_SETOPSFLAG, &flags));
	flags = FI_TRANSMIT;
	CHECK_OK(fi_control(&ep->fid, FI_GETOPSFLAG, &flags));
	CHECK(flags == FI_DELIVERY_COMPLETE);
	flags = FI_RECV;
	CHECK_OK(fi_control(&ep->fid, FI_GETOPSFLAG, &flags));
	CHECK(flags == FI_MULTI_RECV);
}

/* Aliases: their own flags, and the endpoint stays while they are open. */
static void check_aliases(struct fid_ep *ep)
{
	struct fid_ep *a, *b;
	uint64_t flags;

	CHECK_RET(fi_ep_alias(ep, &a, FI_TRANSMIT | FI_RECV), -FI_EINVAL);
	CHECK_RET(fi_ep_alias(ep, &a, FI_TRANSMIT | FI_COMMIT_COMPLETE),
		  -FI_EINVAL);
	CHECK_OK(fi_ep_alias(ep, &a, 0));
	CHECK_OK(fi_ep_alias(ep, &b, FI_TRANSMIT | FI_INJECT_COMPLETE));
	flags = FI_TRANSMIT;
	CHECK_OK(fi_control(&a->fid, FI_GETOPSFLAG, &flags));
	CHECK(flags == FI_DELIVERY_COMPLETE); /* the parent's */
	flags = FI_TRANSMIT;
	CHECK_OK(fi_control(&b->fid, FI_GETOPSFLAG, &flags));
	CHECK(flags == FI_INJECT_COMPLETE);
	flags = FI_TRANSMIT | FI_TRANSMIT_COMPLETE;
	CHECK_OK(fi_control(&a->fid, FI_SETOPSFLAG, &flags));
	flags = FI_TRANSMIT;
	CHECK_OK(fi_control(&ep->fid, FI_GETOPSFLAG, &flags));
	CHECK(flags == FI_DELIVERY_COMPLETE); /* the parent keeps its own */
	CHECK(get_size(a, FI_OPT_MIN_MULTI_RECV) ==
	      get_size(ep, FI_OPT_MIN_MULTI_RECV));
	CHECK_RET(fi_close(&ep->fid), -FI_EBUSY);
	CHECK_OK(fi_close(&a->fid));
	CHECK_RET(fi_close(&ep->fid), -FI_EBUSY);
	CHECK_OK(fi_close(&b->fid));
}

/* fi_endpoint2's flags ask for the peer API, which nrma does not offer. */
static void check_endpoint2(struct fid_domain *domain)
{
	struct fid_ep *ep;

	CHECK_RET(fi_endpoint2(domain, itest_info, &ep, FI_PEER, NULL),
		  -FI_ENOSYS);
	CHECK_RET(fi_endpoint2(domain, itest_info, &ep, 1ULL << 62, NULL),
		  -FI_EINVAL);
	CHECK_OK(fi_endpoint2(domain, itest_info, &ep, 0, NULL));
	CHECK_RET(fi_tx_size_left(ep), -FI_EOPBADSTATE);
	CHECK_RET(fi_rx_size_left(ep), -FI_EOPBADSTATE);
	CHECK_OK(fi_close(&ep->fid));
}

/* fi_getinfo(3): an endpoint is opened with what was offered, or less. */
static void check_open_limits(struct fid_domain *domain)
{
	struct fi_info *info = fi_dupinfo(itest_info), *hints, *none = NULL;
	size_t *limits[] = { &info->tx_attr->iov_limit,
			     &info->rx_attr->iov_limit,
			     &info->tx_attr->inject_size,
			     &info->ep_attr->max_msg_size };
	struct fid_ep *ep;

	CHECK(info != NULL);
	for (size_t i = 0; i < sizeof(limits) / sizeof(limits[0]); i++) {
		(*limits[i])++;
		CHECK_RET(fi_endpoint(domain, info, &ep, NULL), -FI_EINVAL);
		(*limits[i])--;
	}
	info->caps |= FI_HMEM;
	CHECK_RET(fi_endpoint(domain, info, &ep, NULL), -FI_EINVAL);
	/* Default flags that need a capability the endpoint lacks. */
	info->caps = FI_MSG | FI_SEND | FI_RECV;
	info->tx_attr->op_flags = FI_TRIGGER;
	CHECK_RET(fi_endpoint(domain, info, &ep, NULL), -FI_EINVAL);
	info->tx_attr->op_flags = 0;
	info->rx_attr->op_flags = FI_MULTI_RECV;
	CHECK_RET(fi_endpoint(domain, info, &ep, NULL), -FI_EINVAL);
	info->rx_attr->op_flags = 0;
	info->tx_attr->iov_limit = 1;
	CHECK_OK(fi_endpoint(domain, info, &ep, NULL));
	CHECK_OK(fi_close(&ep->fid));
	fi_freeinfo(info);

	hints = itest_hints();
	hints->caps = FI_MSG;
	hints->tx_attr->op_flags = FI_TRIGGER;
	CHECK_RET(fi_getinfo(ITEST_VERSION, NULL, NULL, 0, hints, &none),
		  -FI_ENODATA);
	fi_freeinfo(hints);
}

/* An endpoint of info with a CQ bound for the given directions. */
static int enable_with(struct fid_domain *domain, const struct fi_info *info,
		       struct fid_av *av, struct fid_cq *cq, uint64_t dirs)
{
	struct fid_ep *ep;
	int ret;

	CHECK_OK(fi_endpoint(domain, (struct fi_info *) info, &ep, NULL));
	CHECK_OK(fi_ep_bind(ep, &av->fid, 0));
	if (dirs)
		CHECK_OK(fi_ep_bind(ep, &cq->fid, dirs));
	ret = fi_enable(ep);
	CHECK_OK(fi_close(&ep->fid));
	return ret;
}

/*
 * fi_endpoint(3): CQs for the directions the endpoint uses; one that is
 * only an RMA target needs a receive CQ to be progressed through.
 */
static void check_enable_directions(struct fid_domain *domain)
{
	struct fi_info *info = itest_getinfo();
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_CONTEXT };
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE };
	struct fid_cq *cq;
	struct fid_av *av;

	CHECK_OK(fi_cq_open(domain, &cq_attr, &cq, NULL));
	CHECK_OK(fi_av_open(domain, &av_attr, &av, NULL));
	info->caps = FI_MSG | FI_SEND;
	CHECK_OK(enable_with(domain, info, av, cq, FI_TRANSMIT));
	CHECK_RET(enable_with(domain, info, av, cq, FI_RECV), -FI_ENOCQ);
	info->caps = FI_MSG;
	CHECK_RET(enable_with(domain, info, av, cq, FI_TRANSMIT), -FI_ENOCQ);
	CHECK_OK(enable_with(domain, info, av, cq, FI_TRANSMIT | FI_RECV));
	info->caps = FI_RMA | FI_REMOTE_READ | FI_REMOTE_WRITE;
	CHECK_OK(enable_with(domain, info, av, cq, FI_RECV));
	CHECK_RET(enable_with(domain, info, av, cq, 0), -FI_ENOCQ);
	CHECK_OK(fi_close(&av->fid));
	CHECK_OK(fi_close(&cq->fid));
	fi_freeinfo(info);
}

/* A counter bind that is refused leaves none of its events bound. */
static void check_cntr_bind_whole(struct fid_domain *domain)
{
	struct fi_info *info = itest_getinfo();
	struct fi_cntr_attr attr = { .events = FI_CNTR_EVENTS_COMP };
	struct fid_cntr *sends, *other;
	struct fid_ep *ep;

	CHECK(info->caps & FI_RMA_EVENT);
	CHECK_OK(fi_cntr_open(domain, &attr, &sends, NULL));
	CHECK_OK(fi_cntr_open(domain, &attr, &other, NULL));
	CHECK_OK(fi_endpoint(domain, info, &ep, NULL));
	CHECK_OK(fi_ep_bind(ep, &sends->fid, FI_SEND));
	CHECK_RET(fi_ep_bind(ep, &other->fid, FI_REMOTE_WRITE | FI_SEND),
		  -FI_EINVAL);
	CHECK_OK(fi_ep_bind(ep, &other->fid, FI_REMOTE_WRITE | FI_RECV));
	CHECK_OK(fi_close(&ep->fid));
	CHECK_OK(fi_close(&other->fid));
	CHECK_OK(fi_close(&sends->fid));
	fi_freeinfo(info);
}

static void before_enable_options(struct fid_ep *ep)
{
	check_class_sizes(ep, itest_info);
	check_other_options(ep);
	check_ops_flags(ep);
	check_aliases(ep);
}

/* Checked on R's own endpoint; S only waits. */
static void phase_options(void)
{
	const char *phase = "options";
	struct itest_node_opts o = { .before_enable = before_enable_options };
	struct itest_node n;
	size_t v = 123;

	if (!is_r) {
		await_peer_idle(phase);
		return;
	}
	check_endpoint2(itest_domain());
	check_open_limits(itest_domain());
	check_enable_directions(itest_domain());
	check_cntr_bind_whole(itest_domain());
	itest_node_open(&n, &o, "R");
	/* Sizes are fixed at fi_enable; the multi-receive minimum is not. */
	CHECK_RET(set_size(n.ep, OPT_MAX_MSG_SIZE, 100), -FI_EOPBADSTATE);
	CHECK_RET(set_size(n.ep, OPT_INJECT_RMA_SIZE, 8), -FI_EOPBADSTATE);
	CHECK_OK(set_size(n.ep, FI_OPT_MIN_MULTI_RECV, v));
	CHECK(get_size(n.ep, FI_OPT_MIN_MULTI_RECV) == v);
	itest_node_close(&n);
	signal_peer();
}

static void before_enable_limits(struct fid_ep *ep)
{
	CHECK_OK(set_size(ep, OPT_MAX_MSG_SIZE, LIMIT_MSG));
	CHECK_OK(set_size(ep, OPT_INJECT_TAGGED_SIZE, LIMIT_INJECT));
	CHECK_OK(set_size(ep, OPT_MAX_RMA_SIZE, LIMIT_MSG));
}

/*
 * S's sizes hold on its data path: too long is -FI_EINVAL at once, at
 * the bound goes; R sees exactly the messages that went.
 */
static void phase_limits(void)
{
	const char *phase = "sizes on the data path";
	struct itest_node_opts o = { .before_enable = before_enable_limits };
	char buf[LIMIT_MSG + 1] = { 0 };
	struct itest_node n;

	open_pair(&n, is_r ? NULL : &o, is_r ? "R" : "S");
	if (is_r) {
		char got[3][LIMIT_MSG + 1];

		recv_msg(&n, got[0], sizeof(got[0]), CTX(0), phase);
		ITEST_POST(fi_trecv(n.ep, got[1], sizeof(got[1]), NULL,
				    FI_ADDR_UNSPEC, 0, 0, CTX(1)),
			   "fi_trecv");
		recv_msg(&n, got[2], sizeof(got[2]), CTX(2), phase);
		signal_peer();
		for (size_t i = 0; i < 3; i++) {
			struct itest_comp c = itest_cq_wait(n.rx, phase);

			EXPECT(c.len == (i == 1 ? LIMIT_INJECT : LIMIT_MSG),
			       "receive %zu: %zu bytes", i, c.len);
		}
	} else {
		struct iovec iov = { buf, sizeof(buf) };
		struct fi_msg_rma rm = { 0 };
		struct fi_rma_iov rio = { 0, 8, 1 };

		await_peer("R's receives");
		CHECK_RET(
			fi_send(n.ep, buf, LIMIT_MSG + 1, NULL, n.peer, CTX(0)),
			-FI_EINVAL);
		send_msg(&n, buf, LIMIT_MSG, CTX(0), phase);
		CHECK_RET(fi_tinject(n.ep, buf, LIMIT_INJECT + 1, n.peer, 1),
			  -FI_EINVAL);
		ITEST_POST(fi_tinject(n.ep, buf, LIMIT_INJECT, n.peer, 0),
			   "fi_tinject");
		/* Untagged messages keep the provider's inject size. */
		ITEST_POST(fi_inject(n.ep, buf, LIMIT_MSG, n.peer),
			   "fi_inject");
		CHECK_RET(fi_write(n.ep, buf, LIMIT_MSG + 1, NULL, n.peer, 0, 1,
				   CTX(1)),
			  -FI_EINVAL);
		iov.iov_len = 8;
		rm = (struct fi_msg_rma){ .msg_iov = &iov,
					  .iov_count = 1,
					  .addr = n.peer,
					  .rma_iov = &rio,
					  .rma_iov_count = 1,
					  .context = CTX(2) };
		CHECK_RET(fi_writemsg(n.ep, &rm, FI_COMMIT_COMPLETE),
			  -FI_EOPNOTSUPP);
		wait_sends(&n, 0, 1, phase);
	}
	close_pair(&n, phase);
}

/*
 * With FI_SELECTIVE_COMPLETION, an alias whose transmit flags hold
 * FI_COMPLETION reports what the endpoint itself (flags 0) leaves out;
 * the counter counts both.
 */
static void phase_alias(void)
{
	const char *phase = "an alias's flags";
	struct itest_node_opts o = { .tx_bind = FI_SELECTIVE_COMPLETION,
				     .send_cntr = true };
	char buf[4][32];
	struct itest_node n;

	open_pair(&n, is_r ? NULL : &o, is_r ? "R" : "S");
	if (is_r) {
		for (size_t i = 0; i < 4; i++)
			recv_msg(&n, buf[i], sizeof(buf[i]), CTX(i), phase);
		signal_peer();
		for (size_t i = 0; i < 4; i++)
			itest_cq_wait(n.rx, phase);
	} else {
		struct itest_comp comp;
		struct fid_ep *alias;

		CHECK_OK(
			fi_ep_alias(n.ep, &alias, FI_TRANSMIT | FI_COMPLETION));
		await_peer("R's receives");
		for (size_t i = 0; i < 4; i++)
			send_msg(&n, buf[i], sizeof(buf[i]), CTX(i), phase);
		ITEST_POST(fi_send(alias, buf[0], 8, NULL, n.peer, CTX(10)),
			   "fi_send through the alias");
		comp = itest_cq_wait(n.tx, phase);
		EXPECT_COMP(comp, CTX(10), FI_SEND, 0, phase);
		itest_cntr_wait(n.send_cntr, 5, "the send counter");
		itest_cq_expect_empty(n.tx, "sends without FI_COMPLETION");
		CHECK_OK(fi_close(&alias->fid));
		signal_peer();
	}
	if (is_r) {
		char last[32];

		recv_msg(&n, last, sizeof(last), CTX(10), phase);
		await_peer("S's alias");
		itest_cq_wait(n.rx, "the message sent through the alias");
	}
	close_pair(&n, phase);
}

/* What may still be posted: all of it, less the receives now posted. */
static void phase_size_left(void)
{
	const char *phase = "size left";
	struct itest_node_opts o = { .tx_size = 32, .rx_size = 16 };
	char buf[3][16];
	struct itest_node n;

	open_pair(&n, &o, is_r ? "R" : "S");
	EXPECT(fi_tx_size_left(n.ep) == 32, "tx_size_left %zd",
	       fi_tx_size_left(n.ep));
	EXPECT(fi_rx_size_left(n.ep) == 16, "rx_size_left %zd",
	       fi_rx_size_left(n.ep));
	if (is_r) {
		for (size_t i = 0; i < 3; i++)
			recv_msg(&n, buf[i], sizeof(buf[i]), CTX(i), phase);
		EXPECT(fi_rx_size_left(n.ep) == 13, "rx_size_left %zd",
		       fi_rx_size_left(n.ep));
		signal_peer();
		for (size_t i = 0; i < 3; i++)
			itest_cq_wait(n.rx, phase);
		EXPECT(fi_rx_size_left(n.ep) == 16, "rx_size_left %zd",
		       fi_rx_size_left(n.ep));
	} else {
		await_peer("R's receives");
		for (size_t i = 0; i < 3; i++)
			send_msg(&n, buf[i], sizeof(buf[i]), CTX(i), phase);
		wait_sends(&n, 0, 3, phase);
		EXPECT(fi_tx_size_left(n.ep) == 32, "tx_size_left %zd",
		       fi_tx_size_left(n.ep));
	}
	close_pair(&n, phase);
}

int main(void)
{
	static const struct rs_phase phases[] = {
		{ phase_options, "options" },
		{ phase_limits, "sizes on the data path" },
		{ phase_alias, "an alias's flags" },
		{ phase_size_left, "size left" },
	};

	return rs_main("nrma_ep_api", phases,
		       sizeof(phases) / sizeof(phases[0]));
}
