/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Scalable endpoints (fi_endpoint(3), SCALABLE ENDPOINTS) between two
 * processes, "R" and a forked "S", each with one scalable endpoint of
 * NTX transmit and NRX named receive contexts (FI_NAMED_RX_CTX), every
 * context with a CQ of its own:
 *   - each transmit context of S sends to each receive context of R by
 *     fi_rx_addr; each of R's contexts gets exactly the messages that
 *     named it, in order per sender, on its own CQ, with S's address as
 *     the source; each send completes on its own context's CQ;
 *   - a rendezvous message and a tagged one through a context;
 *   - RMA from a transmit context into R's memory, and the write's
 *     data reported on R's receive context 0;
 *   - a receive context that closes while a rendezvous read fills one of
 *     its receives: fi_close returns once the device is done with the
 *     buffer, and the sender's send fails (a read that ends before the
 *     close completes both sides, and they try again);
 *   - one name: every context's is the scalable endpoint's;
 *   - a receive context for messages enables only with a CQ; one of a
 *     scalable endpoint for RMA and atomics only (as Open MPI's one-sided
 *     btl opens them) enables without, and S's writes, atomics and reads
 *     through its transmit contexts land while R makes no call;
 *   - each context reports the attributes it got;
 *   - what is refused: contexts out of range or taken twice, transfers
 *     on the scalable endpoint itself, receives on a transmit context
 *     and sends on a receive context, closing with contexts open.
 */
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

#include "itest_rs.h"

/* fi_rx_size_left is deprecated, and served. */
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

#define NTX	    2
#define NRX	    2
#define RX_BITS	    2
#define SMALL	    32
#define REGION	    4096
#define BIG	    (8u << 20) /* Soft-RoCE's max_msg_size: a read that takes a while */
#define TAIL	    (64u << 10)
#define CLOSE_TRIES 5

struct sep {
	struct fid_ep *ep;
	struct fid_av *av;
	struct fid_ep *tx[NTX], *rx[NRX];
	struct itest_cq *txcq[NTX], *rxcq[NRX];
	fi_addr_t peer; /* the other side's scalable endpoint */
};

static struct fi_info *sep_info(uint64_t caps)
{
	struct fi_info *hints = itest_hints(), *info;

	hints->caps = caps;
	hints->domain_attr->name = strdup(itest_device());
	hints->ep_attr->tx_ctx_cnt = NTX;
	hints->ep_attr->rx_ctx_cnt = NRX;
	CHECK_OK(fi_getinfo(ITEST_VERSION, NULL, NULL, 0, hints, &info));
	fi_freeinfo(hints);
	CHECK((info->caps & caps) == caps);
	CHECK(info->domain_attr->max_ep_tx_ctx >= NTX &&
	      info->domain_attr->max_ep_rx_ctx >= NRX);
	CHECK(info->ep_attr->tx_ctx_cnt == NTX &&
	      info->ep_attr->rx_ctx_cnt == NRX);
	return info;
}

static void check_refused(struct sep *s)
{
	struct fid_ep *ep;
	char buf[8];

	CHECK_RET(fi_tx_context(s->ep, NTX, NULL, &ep, NULL), -FI_EINVAL);
	CHECK_RET(fi_rx_context(s->ep, -1, NULL, &ep, NULL), -FI_EINVAL);
	CHECK_RET(fi_tx_context(s->ep, 0, NULL, &ep, NULL), -FI_EINVAL);
	CHECK_RET(fi_send(s->ep, buf, sizeof(buf), NULL, 0, NULL), -FI_ENOSYS);
	CHECK_RET(fi_recv(s->ep, buf, sizeof(buf), NULL, 0, NULL), -FI_ENOSYS);
	CHECK_RET(fi_recv(s->tx[0], buf, sizeof(buf), NULL, 0, NULL),
		  -FI_ENOSYS);
	CHECK_RET(fi_send(s->rx[0], buf, sizeof(buf), NULL, 0, NULL),
		  -FI_ENOSYS);
	CHECK_RET(fi_close(&s->ep->fid), -FI_EBUSY);
}

/* Transmit context i, with a CQ of its own, enabled. */
static void tx_open(struct sep *s, int i, struct fi_tx_attr *attr,
		    const char *who)
{
	CHECK_OK(fi_tx_context(s->ep, i, attr, &s->tx[i], NULL));
	s->txcq[i] = itest_cq_open(itest_domain(), FI_CQ_FORMAT_TAGGED,
				   itest_fmt("%s tx%d", who, i));
	CHECK_OK(fi_ep_bind(s->tx[i], &s->txcq[i]->cq->fid, FI_TRANSMIT));
	CHECK_OK(fi_enable(s->tx[i]));
}

static void sep_open(struct sep *s, const char *who)
{
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE,
				      .rx_ctx_bits = RX_BITS };
	struct fi_info *info =
		sep_info(ITEST_MSG_CAPS | FI_RMA | FI_NAMED_RX_CTX);
	struct fid_domain *domain = itest_domain();
	struct sockaddr_in name, ctx_name, peer;
	size_t len = sizeof(name);

	CHECK_OK(fi_scalable_ep(domain, info, &s->ep, NULL));
	CHECK_OK(fi_av_open(domain, &av_attr, &s->av, NULL));
	CHECK_OK(fi_scalable_ep_bind(s->ep, &s->av->fid, 0));
	for (int i = 0; i < NTX; i++) {
		struct fi_tx_attr got = { 0 };

		tx_open(s, i, &got, who);
		CHECK(got.size == info->tx_attr->size &&
		      got.iov_limit == info->tx_attr->iov_limit &&
		      got.inject_size == info->tx_attr->inject_size);
	}
	for (int i = 0; i < NRX; i++) {
		struct fi_rx_attr got = { .size = 16 };

		CHECK_OK(fi_rx_context(s->ep, i, &got, &s->rx[i], NULL));
		CHECK(got.size == 16 &&
		      got.iov_limit == info->rx_attr->iov_limit);
		CHECK_RET(fi_rx_size_left(s->rx[i]), -FI_EOPBADSTATE);
		/* It receives messages: they need somewhere to complete. */
		CHECK_RET(fi_enable(s->rx[i]), -FI_ENOCQ);
		s->rxcq[i] = itest_cq_open(domain, FI_CQ_FORMAT_TAGGED,
					   itest_fmt("%s rx%d", who, i));
		CHECK_OK(fi_ep_bind(s->rx[i], &s->rxcq[i]->cq->fid, FI_RECV));
		CHECK_OK(fi_enable(s->rx[i]));
	}
	CHECK_OK(fi_enable(s->ep));
	CHECK_OK(fi_getname(&s->ep->fid, &name, &len));
	len = sizeof(ctx_name);
	CHECK_OK(fi_getname(&s->tx[1]->fid, &ctx_name, &len));
	CHECK(!memcmp(&name, &ctx_name, sizeof(name)));
	check_refused(s);
	peer = itest_name_swap(&chan, &name);
	s->peer = itest_av_insert1(s->av, &peer);
	fi_freeinfo(info);
}

static void sep_close(struct sep *s)
{
	for (int i = 0; i < NTX; i++) {
		CHECK_OK(fi_close(&s->tx[i]->fid));
		itest_cq_close(s->txcq[i]);
	}
	for (int i = 0; i < NRX; i++) {
		if (s->rx[i])
			CHECK_OK(fi_close(&s->rx[i]->fid));
		if (s->rxcq[i])
			itest_cq_close(s->rxcq[i]);
	}
	CHECK_OK(fi_close(&s->ep->fid));
	CHECK_OK(fi_close(&s->av->fid));
}

/* The next completion on c, which must be context's, with flags. */
static void wait_comp_on(struct itest_cq *c, void *context, uint64_t flags)
{
	struct itest_comp comp = itest_cq_wait(c, "a transmit");

	EXPECT_COMP(comp, context, flags, 0, "a transmit");
}

/* Message (tx i, rx j): its first byte says who sent it to whom. */
static char msg_id(int i, int j)
{
	return (char) ('a' + 4 * i + j);
}

static void r_messages(struct sep *s)
{
	char buf[NRX][NTX][SMALL];

	for (int j = 0; j < NRX; j++)
		for (int i = 0; i < NTX; i++)
			ITEST_POST(fi_recv(s->rx[j], buf[j][i], SMALL, NULL,
					   FI_ADDR_UNSPEC, CTX(4 * j + i)),
				   "fi_recv on a receive context");
	signal_peer();
	for (int j = 0; j < NRX; j++) {
		bool seen[NTX] = { false };

		for (int i = 0; i < NTX; i++) {
			struct itest_comp c =
				itest_cq_wait(s->rxcq[j], "a message");
			char *got = c.buf;

			EXPECT_COMP(c, c.op_context, FI_RECV | FI_MSG, 0,
				    "a context's receive");
			EXPECT(got[0] == msg_id(got[0] >= 'e', j) &&
				       !seen[got[0] >= 'e'],
			       "context %d got message '%c'", j, got[0]);
			seen[got[0] >= 'e'] = true;
			EXPECT(c.src == s->peer, "source %" PRIu64, c.src);
		}
		itest_cq_expect_empty(s->rxcq[j], "one message per sender");
	}
}

static void s_messages(struct sep *s)
{
	char buf[NTX][NRX][SMALL];

	await_peer("R's receives");
	for (int i = 0; i < NTX; i++)
		for (int j = 0; j < NRX; j++) {
			buf[i][j][0] = msg_id(i, j);
			ITEST_POST(fi_send(s->tx[i], buf[i][j], SMALL, NULL,
					   fi_rx_addr(s->peer, j, RX_BITS),
					   CTX(4 * i + j)),
				   "fi_send to a receive context");
		}
	for (int i = 0; i < NTX; i++) {
		for (int j = 0; j < NRX; j++) {
			struct itest_comp c =
				itest_cq_wait(s->txcq[i], "a send");

			EXPECT_COMP(c, CTX(4 * i + j), FI_SEND, 0, "a send");
		}
		itest_cq_expect_empty(s->txcq[i], "its own sends only");
	}
}

/* A rendezvous message to context 1, a tagged one to context 0. */
static void r_more(struct sep *s)
{
	unsigned char *big = itest_guarded(SEG_A);
	char tagged[SMALL] = "";
	struct itest_comp c;

	ITEST_POST(fi_recv(s->rx[1], big, SEG_A, NULL, FI_ADDR_UNSPEC, CTX(20)),
		   "a rendezvous receive");
	ITEST_POST(fi_trecv(s->rx[0], tagged, SMALL, NULL, FI_ADDR_UNSPEC, 9, 0,
			    CTX(21)),
		   "a tagged receive");
	signal_peer();
	c = itest_cq_wait(s->rxcq[1], "the rendezvous message");
	EXPECT_COMP(c, CTX(20), FI_RECV | FI_MSG, 0, "rendezvous");
	itest_msg_check(big, SEG_A, 0x5e9, "the rendezvous message");
	c = itest_cq_wait(s->rxcq[0], "the tagged message");
	EXPECT_COMP(c, CTX(21), FI_RECV | FI_TAGGED, 0, "tagged");
	CHECK(c.tag == 9 && !strcmp(tagged, "tagged"));
	free(big);
}

static void s_more(struct sep *s)
{
	unsigned char *big = itest_guarded(SEG_A);
	char tagged[SMALL] = "tagged";

	itest_msg_fill(big, SEG_A, 0x5e9);
	await_peer("R's receives");
	ITEST_POST(fi_send(s->tx[0], big, SEG_A, NULL,
			   fi_rx_addr(s->peer, 1, RX_BITS), CTX(0)),
		   "a rendezvous send");
	ITEST_POST(fi_tsend(s->tx[1], tagged, SMALL, NULL,
			    fi_rx_addr(s->peer, 0, RX_BITS), 9, CTX(1)),
		   "a tagged send");
	wait_comp_on(s->txcq[0], CTX(0), FI_SEND);
	wait_comp_on(s->txcq[1], CTX(1), FI_SEND);
	free(big);
}

/*
 * R closes context 1 while S's message is being read into its receive:
 * the close waits for the device, so the buffer stays as it was left.
 * The read fills it front to back: its tail shows a device still at work.
 * A read that ends before R looks proves nothing: the receive completes,
 * and the two sides try again, up to CLOSE_TRIES times.
 */
static bool r_close_caught_read(struct sep *s)
{
	unsigned char *big = calloc(1, BIG), *tail = big + BIG - TAIL;
	unsigned char *left = malloc(TAIL);
	struct fi_cq_tagged_entry e;
	int64_t deadline = itest_now_ms() + itest_wait_ms();
	bool caught;

	CHECK(big && left);
	ITEST_POST(fi_recv(s->rx[1], big, BIG, NULL, FI_ADDR_UNSPEC, CTX(30)),
		   "a large receive");
	signal_peer();
	/* Reading the context's CQ progresses it, and so starts the read. */
	while (!big[0]) {
		CHECK_RET(fi_cq_read(s->rxcq[1]->cq, &e, 1), -FI_EAGAIN);
		CHECK(itest_now_ms() < deadline);
	}
	caught = !big[BIG - 1];
	if (caught) {
		CHECK_OK(fi_close(&s->rx[1]->fid));
		s->rx[1] = NULL;
		memcpy(left, tail, TAIL);
		usleep(300 * 1000);
		EXPECT(!memcmp(left, tail, TAIL),
		       "the device wrote into a closed context's receive");
	} else {
		struct itest_comp c =
			itest_cq_wait(s->rxcq[1], "a large receive");

		EXPECT_COMP(c, CTX(30), FI_RECV | FI_MSG, 0, "a large receive");
		fprintf(stderr, "the read ended before the close: again\n");
	}
	free(left);
	free(big);
	return caught;
}

static void r_close_under_read(struct sep *s)
{
	bool caught = false;

	for (int i = 0; i < CLOSE_TRIES && !caught; i++) {
		caught = r_close_caught_read(s);
		itest_chan_write(&chan, &caught, sizeof(caught));
	}
	EXPECT(caught, "every read ended before the close");
}

/* S's send fails when R's close caught its read, else it completes. */
static void s_close_under_read(struct sep *s)
{
	unsigned char *big = malloc(BIG);
	bool caught = false;

	CHECK(big != NULL);
	memset(big, 0xab, BIG);
	s->txcq[0]->errors_ok = true;
	for (int i = 0; i < CLOSE_TRIES && !caught; i++) {
		await_peer("R's large receive");
		ITEST_POST(fi_send(s->tx[0], big, BIG, NULL,
				   fi_rx_addr(s->peer, 1, RX_BITS), CTX(30)),
			   "a large send");
		itest_chan_read(&chan, &caught, sizeof(caught),
				"whether R's close caught the read");
		if (caught) {
			struct fi_cq_err_entry err = itest_cq_wait_err(
				s->txcq[0], "the send to a closed context");

			CHECK(err.op_context == CTX(30));
		} else {
			wait_comp_on(s->txcq[0], CTX(30), FI_SEND);
		}
	}
	free(big);
}

struct rkey {
	uint64_t addr, key;
};

/* Registers region for the peer's RMA; swaps addresses and keys. */
static struct fid_mr *region_swap(uint64_t *region, struct rkey *theirs)
{
	struct fid_mr *mr;
	struct rkey mine;

	CHECK(region != NULL);
	CHECK_OK(fi_mr_reg(itest_domain(), region, REGION,
			   FI_REMOTE_READ | FI_REMOTE_WRITE, 0, 0, 0, &mr,
			   NULL));
	mine.addr = itest_mr_addr(itest_info, region, region);
	mine.key = fi_mr_key(mr);
	itest_chan_write(&chan, &mine, sizeof(mine));
	itest_chan_read(&chan, theirs, sizeof(*theirs), "the peer's region");
	return mr;
}

/* RMA from a transmit context; a write's data comes on context 0. */
static void rma_round(struct sep *s)
{
	uint64_t *region = calloc(1, REGION);
	struct rkey theirs;
	struct fid_mr *mr = region_swap(region, &theirs);

	if (is_r) {
		struct itest_comp c;

		/* What names no receive context goes to context 0. */
		await_peer("S's write");
		c = itest_cq_wait(s->rxcq[0], "the write's data");
		EXPECT_COMP(c, NULL, FI_REMOTE_CQ_DATA, 0, "write data");
		CHECK(c.data == 0xda7a);
		itest_pat_check(region, 0x77, 0, 64, "what S wrote");
	} else {
		uint64_t *src = calloc(1, 64);

		itest_pat_gen(src, 0x77, 0, 64);
		ITEST_POST(fi_writedata(s->tx[1], src, 64, NULL, 0xda7a,
					s->peer, theirs.addr, theirs.key,
					CTX(3)),
			   "fi_writedata from a transmit context");
		wait_comp_on(s->txcq[1], CTX(3), FI_RMA | FI_WRITE);
		signal_peer();
		free(src);
	}
	next_step("RMA done");
	CHECK_OK(fi_close(&mr->fid));
	free(region);
}

static void phase_scalable(void)
{
	struct sep s;

	sep_open(&s, is_r ? "R" : "S");
	if (is_r)
		r_messages(&s);
	else
		s_messages(&s);
	next_step("a message per pair of contexts");
	if (is_r)
		r_more(&s);
	else
		s_more(&s);
	next_step("rendezvous and tagged");
	rma_round(&s);
	if (is_r)
		r_close_under_read(&s);
	else
		s_close_under_read(&s);
	next_step("a context closed under a read");
	sep_close(&s);
}

/*
 * Scalable endpoints as Open MPI's one-sided btl opens them: RMA and
 * atomics only, transmit contexts asking for FI_DELIVERY_COMPLETE, receive
 * contexts enabled with no CQ (they receive nothing).
 */
static void one_sided_open(struct sep *s, const char *who)
{
	struct fi_av_attr av_attr = { .type = FI_AV_MAP };
	struct fi_info *info = sep_info(FI_RMA | FI_ATOMIC);
	struct fid_domain *domain = itest_domain();
	struct sockaddr_in name, peer;
	size_t len = sizeof(name);

	CHECK_OK(fi_scalable_ep(domain, info, &s->ep, NULL));
	CHECK_OK(fi_av_open(domain, &av_attr, &s->av, NULL));
	CHECK_OK(fi_scalable_ep_bind(s->ep, &s->av->fid, 0));
	for (int i = 0; i < NTX; i++) {
		struct fi_tx_attr want = { .op_flags = FI_DELIVERY_COMPLETE };

		tx_open(s, i, &want, who);
	}
	for (int i = 0; i < NRX; i++) {
		struct fi_rx_attr want = { 0 };

		CHECK_OK(fi_rx_context(s->ep, i, &want, &s->rx[i], NULL));
		CHECK_OK(fi_enable(s->rx[i]));
		s->rxcq[i] = NULL;
	}
	CHECK_OK(fi_enable(s->ep));
	CHECK_OK(fi_getname(&s->ep->fid, &name, &len));
	peer = itest_name_swap(&chan, &name);
	s->peer = itest_av_insert1(s->av, &peer);
	fi_freeinfo(info);
}

/* S writes, adds and reads back through both contexts; R makes no call. */
static void s_one_sided(struct sep *s, const struct rkey *r)
{
	uint64_t src[8], back[9], one = 1;

	itest_pat_gen(src, 0x51, 0, sizeof(src));
	ITEST_POST(fi_write(s->tx[0], src, sizeof(src), NULL, s->peer, r->addr,
			    r->key, CTX(40)),
		   "fi_write from transmit context 0");
	wait_comp_on(s->txcq[0], CTX(40), FI_RMA | FI_WRITE);
	for (int i = 0; i < NTX; i++) {
		ITEST_POST(fi_atomic(s->tx[i], &one, 1, NULL, s->peer,
				     r->addr + sizeof(src), r->key, FI_UINT64,
				     FI_SUM, CTX(41 + i)),
			   "fi_atomic(FI_SUM) from a transmit context");
		wait_comp_on(s->txcq[i], CTX(41 + i), FI_ATOMIC | FI_WRITE);
	}
	ITEST_POST(fi_read(s->tx[1], back, sizeof(back), NULL, s->peer, r->addr,
			   r->key, CTX(43)),
		   "fi_read from transmit context 1");
	wait_comp_on(s->txcq[1], CTX(43), FI_RMA | FI_READ);
	itest_pat_check(back, 0x51, 0, sizeof(src), "what S read back");
	CHECK(back[8] == NTX);
	signal_peer();
}

static void phase_one_sided(void)
{
	uint64_t *region = calloc(1, REGION);
	struct rkey theirs;
	struct fid_mr *mr;
	struct sep s;

	one_sided_open(&s, is_r ? "R" : "S");
	mr = region_swap(region, &theirs);
	if (is_r) {
		await_peer_idle("S's one-sided operations");
		itest_pat_check(region, 0x51, 0, 64, "what S wrote");
		CHECK(region[8] == NTX);
	} else {
		s_one_sided(&s, &theirs);
	}
	next_step("one-sided operations done");
	CHECK_OK(fi_close(&mr->fid));
	free(region);
	sep_close(&s);
}

int main(void)
{
	static const struct rs_phase phases[] = {
		{ phase_scalable, "scalable endpoints" },
		{ phase_one_sided, "one-sided scalable endpoints" },
	};

	return rs_main("nrma_scalable_ep", phases,
		       sizeof(phases) / sizeof(phases[0]));
}
