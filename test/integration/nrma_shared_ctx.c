/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Shared contexts (fi_endpoint(3), SHARED CONTEXTS) between a receiver
 * ("R", three endpoints bound to one shared receive context) and a forked
 * sender ("S", two endpoints bound to one shared transmit context):
 *   - receives posted to the context take the messages that reach any of
 *     R's endpoints, eager and rendezvous, expected and unexpected, and
 *     each completion goes to the CQ of the endpoint the message reached;
 *   - a receive posted to an endpoint goes to its context;
 *   - an FI_MULTI_RECV buffer of the context fills from two endpoints;
 *   - tagged receives, FI_PEEK and cancel on the context;
 *   - S's two endpoints share tx_attr->size transmits in flight;
 *   - an endpoint that closes with messages held takes them with it;
 *   - a context reports the attributes it got, and a short option
 *     buffer gets -FI_ETOOSMALL and the size needed;
 *   - what is refused: binding without FI_SHARED_CONTEXT, enabling
 *     without the context, closing a context in use, sending on one.
 */
#include <rdma/fi_tagged.h>

#include "itest_rs.h"

/* fi_tx_size_left and fi_rx_size_left are deprecated, and served. */
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

#define NR	   3  /* R's endpoints */
#define NS	   2  /* S's endpoints */
#define STX_SIZE   4  /* transmits S's endpoints may have in flight */
#define SMALL	   64 /* an eager message */
#define MULTI_SIZE 4096

static struct fid_ep *srx;
static struct fid_stx *stx;

/* Nodes whose endpoints are made for, and bound to, shared contexts. */
static void bind_shared(struct fid_ep *ep)
{
	if (srx)
		CHECK_OK(fi_ep_bind(ep, &srx->fid, 0));
	if (stx)
		CHECK_OK(fi_ep_bind(ep, &stx->fid, 0));
}

static struct fi_info *shared_info(void)
{
	struct fi_info *info = fi_dupinfo(itest_info);

	CHECK(info != NULL);
	if (srx)
		info->ep_attr->rx_ctx_cnt = FI_SHARED_CONTEXT;
	if (stx)
		info->ep_attr->tx_ctx_cnt = FI_SHARED_CONTEXT;
	return info;
}

static void open_nodes(struct itest_node *n, size_t count, const char *who)
{
	struct fi_info *info = shared_info();
	struct itest_node_opts o = { .info = info,
				     .before_enable = bind_shared };

	for (size_t i = 0; i < count; i++)
		itest_node_open(&n[i], &o, itest_fmt("%s%zu", who, i));
	fi_freeinfo(info);
}

/* Swaps every endpoint's name; each node's AV gets all the peer's. */
static void exchange(struct itest_node *n, size_t count, fi_addr_t *peers,
		     size_t npeers)
{
	struct sockaddr_in names[NR];

	for (size_t i = 0; i < count; i++)
		itest_chan_write(&chan, &n[i].name, sizeof(n[i].name));
	itest_chan_read(&chan, names, npeers * sizeof(names[0]),
			"the peer's names");
	for (size_t i = 0; i < count; i++)
		for (size_t j = 0; j < npeers; j++)
			peers[j] = itest_av_insert1(n[i].av, &names[j]);
}

static void send_to(struct itest_node *n, const void *buf, size_t len,
		    fi_addr_t dest, void *context)
{
	ITEST_POST(fi_send(n->ep, buf, len, NULL, dest, context), "fi_send");
}

/* Two send completions on n's CQ, for contexts a and b in any order. */
static void wait_two(struct itest_node *n, void *a, void *b, const char *what)
{
	bool seen_a = false, seen_b = false;

	for (int i = 0; i < 2; i++) {
		struct itest_comp c = itest_cq_wait(n->tx, what);

		EXPECT((c.op_context == a && !seen_a) ||
			       (c.op_context == b && !seen_b),
		       "%s: op_context %p", what, c.op_context);
		seen_a |= c.op_context == a;
		seen_b |= c.op_context == b;
	}
}

static void close_nodes(struct itest_node *n, size_t count)
{
	for (size_t i = 0; i < count; i++)
		itest_node_close(&n[i]);
}

/* Opening and binding: what fi_endpoint(3) refuses. */
static void phase_refused(void)
{
	struct fi_rx_attr rx_attr = { .size = 8 };
	struct fi_info *plain = fi_dupinfo(itest_info);
	struct fid_ep *ep, *ctx;
	struct fid_stx *tctx;
	char buf[8];

	size_t min_multi, len = 1;

	CHECK_OK(fi_srx_context(itest_domain(), &rx_attr, &ctx, NULL));
	CHECK(rx_attr.size == 8 &&
	      rx_attr.iov_limit == itest_info->rx_attr->iov_limit);
	CHECK_RET(fi_getopt(&ctx->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV,
			    &min_multi, &len),
		  -FI_ETOOSMALL);
	CHECK(len == sizeof(min_multi));
	CHECK_OK(fi_stx_context(itest_domain(), NULL, &tctx, NULL));
	/* An endpoint not made for shared contexts takes none. */
	CHECK_OK(fi_endpoint(itest_domain(), plain, &ep, NULL));
	CHECK_RET(fi_ep_bind(ep, &ctx->fid, 0), -FI_EINVAL);
	CHECK_RET(fi_ep_bind(ep, &tctx->fid, 0), -FI_EINVAL);
	CHECK_OK(fi_close(&ep->fid));
	/* One made for them must have them before fi_enable. */
	plain->ep_attr->rx_ctx_cnt = FI_SHARED_CONTEXT;
	CHECK_OK(fi_endpoint(itest_domain(), plain, &ep, NULL));
	CHECK_RET(fi_ep_bind(ep, &ctx->fid, FI_RECV), -FI_EBADFLAGS);
	CHECK_OK(fi_ep_bind(ep, &ctx->fid, 0));
	CHECK_RET(fi_ep_bind(ep, &ctx->fid, 0), -FI_EINVAL);
	CHECK_RET(fi_close(&ctx->fid), -FI_EBUSY);
	CHECK_OK(fi_close(&ep->fid));
	/* A context receives; it sends nothing. */
	CHECK_RET(fi_send(ctx, buf, sizeof(buf), NULL, 0, NULL), -FI_ENOSYS);
	CHECK_RET(fi_tsend(ctx, buf, sizeof(buf), NULL, 0, 1, NULL),
		  -FI_ENOSYS);
	CHECK_RET(fi_read(ctx, buf, sizeof(buf), NULL, 0, 0, 0, NULL),
		  -FI_ENOSYS);
	CHECK_OK(fi_close(&ctx->fid));
	CHECK_OK(fi_close(&tctx->fid));
	fi_freeinfo(plain);
}

/* R: the context's receives take what reaches each endpoint. */
static void r_receives(struct itest_node *n)
{
	size_t big = SEG_A;
	unsigned char *buf = itest_guarded(NR * big);

	/* Posted before anything arrives: through the context and through
	 * an endpoint, which posts to its context. */
	ITEST_POST(fi_recv(srx, buf, big, NULL, FI_ADDR_UNSPEC, CTX(0)),
		   "fi_recv on the context");
	ITEST_POST(
		fi_recv(n[1].ep, buf + big, big, NULL, FI_ADDR_UNSPEC, CTX(1)),
		"fi_recv on an endpoint bound to the context");
	EXPECT(fi_rx_size_left(srx) == 14, "rx_size_left %zd",
	       fi_rx_size_left(srx));
	signal_peer();
	/* One message to each endpoint: 0 and 1 land in the posted
	 * receives, in order; 2 waits, held by endpoint 2. */
	for (size_t i = 0; i < 2; i++) {
		struct itest_comp c = itest_cq_wait(n[i].rx, "a message");

		EXPECT_COMP(c, CTX(i), FI_RECV | FI_MSG, 0, "a receive");
		itest_msg_check(buf + i * big, big, 0x100 + i, "a message");
	}
	await_peer("S's third message");
	itest_idle(100);
	ITEST_POST(
		fi_recv(srx, buf + 2 * big, big, NULL, FI_ADDR_UNSPEC, CTX(2)),
		"fi_recv for the held message");
	{
		struct itest_comp c = itest_cq_wait(n[2].rx, "the held one");

		EXPECT_COMP(c, CTX(2), FI_RECV | FI_MSG, 0, "held");
		itest_msg_check(buf + 2 * big, big, 0x102, "the held one");
	}
	itest_cq_expect_empty(n[0].rx, "one completion each");
	itest_cq_expect_empty(n[1].rx, "one completion each");
	free(buf);
}

static void s_sends(struct itest_node *n, const fi_addr_t *peers)
{
	size_t big = SEG_A;
	unsigned char *buf = itest_guarded(NR * big);

	for (size_t i = 0; i < NR; i++)
		itest_msg_fill(buf + i * big, big, 0x100 + i);
	await_peer("R's receives");
	/* One after the other: R's receives take them in that order. */
	for (size_t i = 0; i < 2; i++) {
		send_to(&n[i], buf + i * big, big, peers[i], CTX(i));
		wait_sends(&n[i], i, 1, "a send");
	}
	send_to(&n[0], buf + 2 * big, big, peers[2], CTX(2));
	signal_peer();
	wait_sends(&n[0], 2, 1, "send 2");
	free(buf);
}

/*
 * R's endpoints share a receive context (of rx_size receives, 0: the
 * default), S's do not; r and s are each side's part.
 */
static void srx_round(size_t rx_size, void (*r)(struct itest_node *),
		      void (*s)(struct itest_node *, const fi_addr_t *),
		      const char *what)
{
	struct itest_node n[NR];
	fi_addr_t peers[NR];
	struct fi_rx_attr attr = { .size = rx_size };

	if (is_r) {
		CHECK_OK(fi_srx_context(itest_domain(), rx_size ? &attr : NULL,
					&srx, NULL));
		open_nodes(n, NR, "R");
		exchange(n, NR, peers, NS);
		r(n);
	} else {
		open_nodes(n, NS, "S");
		exchange(n, NS, peers, NR);
		s(n, peers);
	}
	next_step(what);
	close_nodes(n, is_r ? NR : NS);
	if (srx)
		CHECK_OK(fi_close(&srx->fid));
	srx = NULL;
}

static void phase_srx(void)
{
	srx_round(16, r_receives, s_sends, "messages through the context");
}

/* R: tagged receives, FI_PEEK, an FI_MULTI_RECV buffer, cancel. */
static void r_more(struct itest_node *n)
{
	char *multi = itest_guarded(MULTI_SIZE), tagged[SMALL];
	struct fi_msg m = { .msg_iov = &(struct iovec){ multi, MULTI_SIZE },
			    .iov_count = 1,
			    .addr = FI_ADDR_UNSPEC,
			    .context = CTX(0) };
	struct fi_cq_err_entry err;
	struct itest_comp c;
	size_t got = 0, min = SMALL;

	CHECK_OK(fi_setopt(&srx->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV,
			   &min, sizeof(min)));
	ITEST_POST(fi_recvmsg(srx, &m, FI_MULTI_RECV), "a multi-receive");
	ITEST_POST(fi_recv(srx, tagged, SMALL, NULL, FI_ADDR_UNSPEC, CTX(9)),
		   "a receive to cancel");
	CHECK_OK(fi_cancel(&srx->fid, CTX(9)));
	n[0].rx->errors_ok = true;
	err = itest_cq_wait_err(n[0].rx, "the cancelled receive");
	CHECK(err.op_context == CTX(9) && err.err == FI_ECANCELED);
	signal_peer();
	/* Two messages to endpoint 0, two to 1: one buffer takes all. */
	for (size_t i = 0; i < 4; i++) {
		c = itest_cq_wait(n[i / 2].rx, "a message in the buffer");
		EXPECT_COMP(c, CTX(0), FI_RECV | FI_MSG, 0, "multi");
		got += c.len;
	}
	CHECK(got == 4 * SMALL);
	await_peer("the tagged message");
	ITEST_POST(fi_trecv(srx, tagged, SMALL, NULL, FI_ADDR_UNSPEC, 77, 0,
			    CTX(3)),
		   "a tagged receive");
	c = itest_cq_wait(n[2].rx, "the tagged message");
	EXPECT_COMP(c, CTX(3), FI_RECV | FI_TAGGED, 0, "tagged");
	CHECK(c.tag == 77);
	free(multi);
}

static void s_more(struct itest_node *n, const fi_addr_t *peers)
{
	char buf[SMALL] = "x";

	await_peer("R's multi-receive");
	for (size_t i = 0; i < 4; i++)
		send_to(&n[i / 2], buf, SMALL, peers[i / 2], CTX(i));
	wait_sends(&n[0], 0, 2, "sends 0 and 1");
	wait_sends(&n[1], 2, 2, "sends 2 and 3");
	ITEST_POST(fi_tsend(n[0].ep, buf, SMALL, NULL, peers[2], 77, CTX(5)),
		   "fi_tsend");
	wait_sends(&n[0], 5, 1, "the tagged send");
	signal_peer();
}

static void phase_srx_more(void)
{
	srx_round(0, r_more, s_more, "more through the context");
}

/*
 * S: four rendezvous sends in flight (R holds them unreceived), two from
 * each endpoint, use the whole shared budget of both.
 */
static void s_budget(struct itest_node *n, const fi_addr_t *peers)
{
	size_t big = RNDV_B;
	unsigned char *buf = itest_guarded(big);

	for (size_t i = 0; i < NS; i++)
		EXPECT(fi_tx_size_left(n[i].ep) == STX_SIZE, "tx_size_left %zd",
		       fi_tx_size_left(n[i].ep));
	for (size_t i = 0; i < STX_SIZE; i++)
		send_to(&n[i % NS], buf, big, peers[0], CTX(i));
	for (size_t i = 0; i < NS; i++) {
		EXPECT(fi_tx_size_left(n[i].ep) == 0, "tx_size_left %zd",
		       fi_tx_size_left(n[i].ep));
		CHECK_RET(fi_send(n[i].ep, buf, big, NULL, peers[0], CTX(9)),
			  -FI_EAGAIN);
	}
	signal_peer();
	wait_two(&n[0], CTX(0), CTX(2), "endpoint 0's sends");
	wait_two(&n[1], CTX(1), CTX(3), "endpoint 1's sends");
	for (size_t i = 0; i < NS; i++)
		EXPECT(fi_tx_size_left(n[i].ep) == STX_SIZE, "tx_size_left %zd",
		       fi_tx_size_left(n[i].ep));
	free(buf);
}

static void phase_stx(void)
{
	struct itest_node n[NR];
	fi_addr_t peers[NR];
	struct fi_tx_attr attr = { .size = STX_SIZE };

	if (!is_r) {
		CHECK_OK(fi_stx_context(itest_domain(), &attr, &stx, NULL));
		open_nodes(n, NS, "S");
		exchange(n, NS, peers, 1);
		s_budget(n, peers);
	} else {
		unsigned char *buf = itest_guarded(STX_SIZE * RNDV_B);

		open_nodes(n, 1, "R");
		exchange(n, 1, peers, NS);
		await_peer("S's budget");
		for (size_t i = 0; i < STX_SIZE; i++)
			recv_msg(&n[0], buf + i * RNDV_B, RNDV_B, CTX(i),
				 "a receive");
		for (size_t i = 0; i < STX_SIZE; i++)
			itest_cq_wait(n[0].rx, "a message");
		free(buf);
	}
	next_step("a shared transmit budget");
	close_nodes(n, is_r ? 1 : NS);
	if (stx)
		CHECK_OK(fi_close(&stx->fid));
	stx = NULL;
}

/* An endpoint that closes takes the messages it holds out of the context. */
static void phase_close_held(void)
{
	struct itest_node n[NR];
	fi_addr_t peers[NR];
	char buf[SMALL] = "", out[SMALL] = "held";

	if (is_r) {
		CHECK_OK(fi_srx_context(itest_domain(), NULL, &srx, NULL));
		open_nodes(n, NR, "R");
		exchange(n, NR, peers, NS);
		await_peer("S's message to endpoint 2");
		itest_idle(200); /* endpoint 2 holds it */
		itest_node_close(&n[2]);
		ITEST_POST(
			fi_recv(srx, buf, SMALL, NULL, FI_ADDR_UNSPEC, CTX(0)),
			"a receive after the close");
		itest_idle(200);
		itest_cq_expect_empty(n[0].rx, "the closed endpoint's");
		itest_cq_expect_empty(n[1].rx, "the closed endpoint's");
		CHECK_OK(fi_cancel(&srx->fid, CTX(0)));
		n[0].rx->errors_ok = true;
		itest_cq_wait_err(n[0].rx, "the cancelled receive");
	} else {
		open_nodes(n, NS, "S");
		exchange(n, NS, peers, NR);
		send_to(&n[0], out, SMALL, peers[2], CTX(0));
		wait_sends(&n[0], 0, 1, "to endpoint 2");
		signal_peer();
	}
	next_step("an endpoint closed with a held message");
	close_nodes(n, is_r ? NR - 1 : NS);
	if (srx)
		CHECK_OK(fi_close(&srx->fid));
	srx = NULL;
}

int main(void)
{
	static const struct rs_phase phases[] = {
		{ phase_refused, "refused" },
		{ phase_srx, "a shared receive context" },
		{ phase_srx_more, "tagged, multi-receive, cancel" },
		{ phase_stx, "a shared transmit context" },
		{ phase_close_held, "an endpoint closed with a held message" },
	};

	return rs_main("nrma_shared_ctx", phases,
		       sizeof(phases) / sizeof(phases[0]));
}
