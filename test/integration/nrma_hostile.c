/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A peer that is not nrma: what arrives from the network is checked
 * before it is used.  The parent ("V", the victim) is an nrma endpoint;
 * child "P" is an honest nrma peer; child "H" speaks nrma's wire format
 * itself, over rdmacm and verbs, and lies:
 *  1. it claims the name of an endpoint on another host, P's name (of its
 *     own host), and a name of its host that nobody listens on: V refuses
 *     each, saying why (it asks P, who did not make the request);
 *  2. it connects under a name of its own (it listens there and confirms
 *     its requests when V asks, as nrma does), takes a rendezvous message
 *     from V, and then, while V's rendezvous send to P waits for P's ACK,
 *     forges ACKs for the tokens it could guess from the one it saw (other
 *     generations, generation 0, every slot nearby): none completes
 *     anything; P's ACK then completes V's send to P, and H's true ACK
 *     V's send to H;
 *  3. it sends a message shorter than a header: V drops it and the
 *     connection (H sees it go), and goes on working with P;
 *  4. it connects again and takes a rendezvous message that V sends from
 *     inside a larger registration of its own (FI_REMOTE_READ and
 *     FI_REMOTE_WRITE, its descriptor passed): H reads the message with
 *     the key it was given, ACKs, and once V's send completed the key
 *     reads nothing more;
 *  5. it connects a third time and sends a segmented message's first
 *     segment, which V holds, having no receive posted; V posts one, and
 *     the rest lands in it, whole.  Then the first segment of a message
 *     that V's next receive takes, and a segment back over what that one
 *     brought: V drops the connection, and the receive fails
 *     (FI_ECONNRESET).  Then, a fourth time, a first segment that V holds
 *     and a next one that changes the message's length: V drops the
 *     connection and the held part, as if it never came: the receive V
 *     posts next takes P's message;
 *  6. it connects a fifth time and sends while V's credits last, which
 *     V tops up as its spare buffers replace those H's messages hold, and
 *     one message more once they stop coming: V drops the connection;
 *  7. it connects a sixth time, granting credits but posting no receive:
 *     V's message to it waits in the device's receiver-not-ready retries,
 *     which never end, until V's stall watch (FI_NRMA_STALL_MS, here
 *     STALL_MS) fails the connection: the send ends in FI_ETIMEDOUT, no
 *     sooner, and H sees the connection go.
 */
#include <sys/random.h>

#include <rdma/rdma_cma.h>

#include "itest_msg.h"
#include "nrma_credit_calc.h"
#include "nrma_proto.h"

#define RNDV_LEN	 131072 /* past FI_NRMA_SAR_SIZE: rendezvous */
#define FAKE_BUFS	 32
#define FAKE_BUF	 4096
#define FORGE_SLOTS	 256
#define FORGE_GENS	 8
/* H keeps to credits (a peer past them loses its connection): it grants
 * V buffers for messages and ACKs out of its FAKE_BUFS. */
#define FAKE_CREDITS_CTL 8
#define FAKE_CREDITS_MSG (FAKE_BUFS - FAKE_CREDITS_CTL)
#define FAKE_CELL	 4096
#define STALL_MS	 2000
/* H's segmented messages: SEG_LEN bytes, in pieces of SEG_PIECE. */
#define SEG_LEN		 3000
#define SEG_PIECE	 1000
#define SEG_SEED	 7
/* H's overrun: V's spare buffers run out well before this many. */
#define FAKE_OVERRUN_MAX 4096
#define FAKE_QUIET_MS	 1000

enum {
	STEP_NAMES = 1,	 /* H and P are up */
	STEP_H_NAME,	 /* H connected and says its name */
	STEP_H_GOT,	 /* H holds V's rendezvous request */
	STEP_P_SENT,	 /* V's send to P waits for P */
	STEP_FORGED,	 /* H sent its forged ACKs */
	STEP_P_RECV,	 /* P may take its message */
	STEP_H_ACK,	 /* H may send its true ACK */
	STEP_RUNT,	 /* H sent a runt and saw its connection go */
	STEP_H_AGAIN,	 /* H connected again */
	STEP_KEY_SENT,	 /* V's send to H completed */
	STEP_KEY_READ,	 /* H tried the key again */
	STEP_OVERRUN,	 /* H sent past its credits and saw its connection go */
	STEP_MUTE,	 /* H connected with no receive posted */
	STEP_MUTE_GONE,	 /* and saw its connection go */
	STEP_SEG_HELD,	 /* H sent a first segment, and nothing more */
	STEP_SEG_POSTED, /* V posted a receive for it */
	STEP_SEG_PLACING, /* V posted a receive for the next */
	STEP_SEG_OVERLAP, /* H sent a segment back, and saw its connection go */
	STEP_SEG_LENGTH,  /* H changed a length, and saw its connection go */
	STEP_P_SEG,	  /* P may send V its last message */
	STEP_SEG_DONE,	  /* V took it: H may go on */
	STEP_DONE,
};

static struct itest_link link_p, link_h;

/* H: an rdmacm connection of its own, with buffers to send and receive. */
struct fake {
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	char *buf; /* FAKE_BUFS receive buffers, then one to send from */
	unsigned int sends;
	/* Where V gives credits back, at remote address 0, and ours. */
	volatile uint64_t *cell;
	struct ibv_mr *cell_mr;
	struct nrma_credit_tx credit[NRMA_CREDIT_CLASSES];
};

/*
 * H's own name: a listener that answers V's checks of H's requests, as
 * nrma's listeners do (nrma_proto.h): confirmed for H's nonce only.
 */
struct claimer {
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id;
	struct sockaddr_in name;
	uint64_t nonce; /* of H's request under way */
	int asked;	/* checks answered */
};

static void claimer_open(struct claimer *c, const struct sockaddr_in *host)
{
	struct sockaddr_in addr = *host;

	memset(c, 0, sizeof(*c));
	addr.sin_port = 0;
	c->ch = rdma_create_event_channel();
	CHECK(c->ch != NULL);
	CHECK(!rdma_create_id(c->ch, &c->id, NULL, RDMA_PS_TCP));
	CHECK(!rdma_bind_addr(c->id, (struct sockaddr *) &addr));
	CHECK(!rdma_listen(c->id, 8));
	memcpy(&c->name, rdma_get_local_addr(c->id), sizeof(c->name));
}

static void claimer_close(struct claimer *c)
{
	rdma_destroy_id(c->id);
	rdma_destroy_event_channel(c->ch);
}

static void claimer_answer(struct claimer *c)
{
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;
	const struct nrma_cm_data *q;
	struct nrma_cm_data a;
	bool ours;

	CHECK(!rdma_get_cm_event(c->ch, &ev));
	q = nrma_proto_cm_data_parse(ev->param.conn.private_data,
				     ev->param.conn.private_data_len);
	EXPECT(ev->event == RDMA_CM_EVENT_CONNECT_REQUEST && q &&
		       nrma_proto_cm_data_kind(q) == NRMA_CM_CHECK,
	       "V asks whether the request is H's (%s)",
	       rdma_event_str(ev->event));
	ours = q->nonce == c->nonce;
	nrma_proto_cm_data_init(&a, &c->name, 0,
				ours ? NRMA_REJECT_CONFIRMED :
				       NRMA_REJECT_IDENTITY);
	a.kind = htons(NRMA_CM_CHECK);
	a.nonce = q->nonce;
	CHECK(!rdma_reject(ev->id, &a, sizeof(a)));
	id = ev->id;
	rdma_ack_cm_event(ev);
	rdma_destroy_id(id);
	c->asked++;
}

static struct rdma_cm_event *fake_event(struct fake *f)
{
	struct pollfd pfd = { .fd = f->ch->fd, .events = POLLIN };
	struct rdma_cm_event *ev;

	EXPECT(poll(&pfd, 1, (int) itest_wait_ms()) == 1,
	       "an rdmacm event within the deadline");
	CHECK(!rdma_get_cm_event(f->ch, &ev));
	return ev;
}

static void fake_expect(struct fake *f, enum rdma_cm_event_type want)
{
	struct rdma_cm_event *ev = fake_event(f);

	EXPECT(ev->event == want, "rdmacm event %s, got %s",
	       rdma_event_str(want), rdma_event_str(ev->event));
	rdma_ack_cm_event(ev);
}

static void fake_post_recv(struct fake *f, int i)
{
	struct ibv_sge sge = { .addr = (uintptr_t) f->buf + i * FAKE_BUF,
			       .length = FAKE_BUF,
			       .lkey = f->mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = i, .sg_list = &sge, .num_sge = 1 },
			   *bad;

	CHECK(!ibv_post_recv(f->id->qp, &wr, &bad));
}

/* Resolves V and makes a QP, with recvs buffers posted, ready to connect. */
static void fake_open(struct fake *f, const struct sockaddr_in *dst, int recvs)
{
	struct ibv_qp_init_attr qa = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 64,
			 .max_recv_wr = FAKE_BUFS,
			 .max_send_sge = 1,
			 .max_recv_sge = 1 },
	};

	memset(f, 0, sizeof(*f));
	f->ch = rdma_create_event_channel();
	CHECK(f->ch != NULL);
	CHECK(!rdma_create_id(f->ch, &f->id, NULL, RDMA_PS_TCP));
	CHECK(!rdma_resolve_addr(f->id, NULL, (struct sockaddr *) dst, 2000));
	fake_expect(f, RDMA_CM_EVENT_ADDR_RESOLVED);
	CHECK(!rdma_resolve_route(f->id, 2000));
	fake_expect(f, RDMA_CM_EVENT_ROUTE_RESOLVED);
	f->pd = ibv_alloc_pd(f->id->verbs);
	f->cq = ibv_create_cq(f->id->verbs, 256, NULL, NULL, 0);
	CHECK(f->pd && f->cq);
	qa.send_cq = qa.recv_cq = f->cq;
	CHECK(!rdma_create_qp(f->id, f->pd, &qa));
	f->buf = calloc(FAKE_BUFS + 1, FAKE_BUF);
	CHECK(f->buf != NULL);
	f->mr = ibv_reg_mr(f->pd, f->buf, (FAKE_BUFS + 1) * FAKE_BUF,
			   IBV_ACCESS_LOCAL_WRITE);
	CHECK(f->mr != NULL);
	for (int i = 0; i < recvs; i++)
		fake_post_recv(f, i);
	f->cell = aligned_alloc(FAKE_CELL, FAKE_CELL);
	CHECK(f->cell != NULL);
	memset((void *) f->cell, 0, FAKE_CELL);
	f->cell_mr = ibv_reg_mr_iova(f->pd, (void *) f->cell, FAKE_CELL, 0,
				     IBV_ACCESS_LOCAL_WRITE |
					     IBV_ACCESS_REMOTE_ATOMIC);
	CHECK(f->cell_mr != NULL);
}

static void fake_close(struct fake *f)
{
	rdma_destroy_qp(f->id);
	ibv_dereg_mr(f->mr);
	ibv_dereg_mr(f->cell_mr);
	free((void *) f->cell);
	ibv_destroy_cq(f->cq);
	ibv_dealloc_pd(f->pd);
	rdma_destroy_id(f->id);
	rdma_destroy_event_channel(f->ch);
	free(f->buf);
}

/*
 * H's answers to V's checks while V takes its request, then V's answer:
 * c NULL: H does not listen where it claims to be.
 */
static struct rdma_cm_event *fake_reply(struct fake *f, struct claimer *c)
{
	struct pollfd pfd[2] = { { .fd = f->ch->fd, .events = POLLIN },
				 { .fd = c ? c->ch->fd : -1,
				   .events = POLLIN } };
	int64_t deadline = itest_deadline();
	struct rdma_cm_event *ev;

	for (;;) {
		EXPECT(poll(pfd, 2, 100) >= 0, "poll: %s", strerror(errno));
		if (pfd[1].revents & POLLIN)
			claimer_answer(c);
		if ((pfd[0].revents & POLLIN) && !rdma_get_cm_event(f->ch, &ev))
			return ev;
		itest_check_deadline(deadline, "V's answer to H's request");
	}
}

/* Connects claiming name; returns the event and V's reject reason. */
static enum rdma_cm_event_type fake_connect(struct fake *f,
					    const struct sockaddr_in *name,
					    struct claimer *c, int *reason)
{
	struct nrma_cm_data data;
	struct rdma_conn_param param = {
		.private_data = &data,
		.private_data_len = sizeof(data),
		.responder_resources = 1,
		.initiator_depth = 1,
		.retry_count = 7,
		.rnr_retry_count = 7,
	};
	struct rdma_cm_event *ev;
	enum rdma_cm_event_type type;
	const struct nrma_cm_data *reply;

	nrma_proto_cm_data_init(&data, name, 0, NRMA_REJECT_NONE);
	data.grant.credit_rkey = f->cell_mr->rkey;
	data.grant.credits_msg = FAKE_CREDITS_MSG;
	data.grant.credits_ctl = FAKE_CREDITS_CTL;
	CHECK(getrandom(&data.nonce, sizeof(data.nonce), 0) ==
	      sizeof(data.nonce));
	if (c)
		c->nonce = data.nonce;
	CHECK(!rdma_connect(f->id, &param));
	ev = fake_reply(f, c);
	type = ev->event;
	reply = nrma_proto_cm_data_parse(ev->param.conn.private_data,
					 ev->param.conn.private_data_len);
	*reason = reply ? (int) nrma_proto_cm_data_reason(reply) : -1;
	if (reply && type == RDMA_CM_EVENT_ESTABLISHED) {
		f->credit[NRMA_CREDIT_MSG].grant = reply->grant.credits_msg;
		f->credit[NRMA_CREDIT_CTL].grant = reply->grant.credits_ctl;
	}
	rdma_ack_cm_event(ev);
	return type;
}

/*
 * Posts wr (its sge: the send buffer, len bytes) and waits for its
 * completion; returns its status, or -1 if it could not be posted.
 */
static int fake_post(struct fake *f, struct ibv_send_wr *wr, size_t len)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t) f->buf + FAKE_BUFS * FAKE_BUF,
		.length = (uint32_t) len,
		.lkey = f->mr->lkey,
	};
	int64_t deadline = itest_deadline();
	struct ibv_send_wr *bad;
	struct ibv_wc wc;

	wr->wr_id = 1000 + f->sends++;
	wr->sg_list = &sge;
	wr->num_sge = 1;
	wr->send_flags = IBV_SEND_SIGNALED;
	if (ibv_post_send(f->id->qp, wr, &bad))
		return -1;
	for (;;) {
		int n = ibv_poll_cq(f->cq, 1, &wc);

		CHECK(n >= 0);
		if (n && wc.wr_id >= 1000)
			return (int) wc.status;
		EXPECT(!n, "no receive completes meanwhile (status %d)",
		       wc.status);
		itest_check_deadline(deadline, "H's work request to complete");
	}
}

/* Waits for a credit of class at V, then takes it. */
static void fake_credit(struct fake *f, enum nrma_credit_class class)
{
	int64_t deadline = itest_deadline();

	while (!nrma_credit_avail(&f->credit[class], f->cell[class]))
		itest_check_deadline(deadline, "V's credits");
	f->credit[class].sent++;
}

/* Sends len bytes of the send buffer; waits for its completion. */
static int fake_send(struct fake *f, size_t len, enum nrma_credit_class class)
{
	struct ibv_send_wr wr = { .opcode = IBV_WR_SEND };

	fake_credit(f, class);
	return fake_post(f, &wr, len) == IBV_WC_SUCCESS ? 0 : -1;
}

/* Reads FAKE_BUF bytes of seg into the send buffer: the status. */
static int fake_read(struct fake *f, const struct nrma_rndv_seg *seg)
{
	struct ibv_send_wr wr = { .opcode = IBV_WR_RDMA_READ,
				  .wr.rdma = { .remote_addr = seg->addr,
					       .rkey = seg->rkey } };

	return fake_post(f, &wr, FAKE_BUF);
}

/* The next message V sends H; seg, if any, gets its first segment. */
static struct nrma_hdr fake_recv(struct fake *f, struct nrma_rndv_seg *seg)
{
	int64_t deadline = itest_deadline();
	struct nrma_hdr hdr;
	struct ibv_wc wc;

	for (;;) {
		int n = ibv_poll_cq(f->cq, 1, &wc);

		CHECK(n >= 0);
		if (n) {
			EXPECT(wc.status == IBV_WC_SUCCESS &&
				       wc.opcode == IBV_WC_RECV &&
				       wc.byte_len >= sizeof(hdr),
			       "a message from V (status %d)", wc.status);
			memcpy(&hdr, f->buf + wc.wr_id * FAKE_BUF, sizeof(hdr));
			f->credit[NRMA_CREDIT_MSG].back += hdr.credits_msg;
			f->credit[NRMA_CREDIT_CTL].back += hdr.credits_ctl;
			if (seg && wc.byte_len >= sizeof(hdr) + sizeof(*seg))
				memcpy(seg,
				       f->buf + wc.wr_id * FAKE_BUF +
					       sizeof(hdr),
				       sizeof(*seg));
			fake_post_recv(f, (int) wc.wr_id);
			return hdr;
		}
		itest_check_deadline(deadline, "V's message to H");
	}
}

static void fake_ack(struct fake *f, uint64_t token)
{
	struct nrma_hdr *hdr = (void *) (f->buf + FAKE_BUFS * FAKE_BUF);

	*hdr = (struct nrma_hdr){ .op = NRMA_HDR_ACK, .token = token };
	CHECK(!fake_send(f, sizeof(*hdr), NRMA_CREDIT_CTL));
}

/* Every token near the one seen: other generations, and generation 0. */
static void fake_forge(struct fake *f, uint64_t seen)
{
	uint32_t gen = (uint32_t) (seen >> 32), slot = (uint32_t) seen;
	uint32_t first = slot > FORGE_SLOTS / 2 ? slot - FORGE_SLOTS / 2 : 0;

	for (uint32_t s = first; s < first + FORGE_SLOTS; s++) {
		fake_ack(f, s);
		for (uint32_t d = 1; d <= FORGE_GENS; d++) {
			fake_ack(f, (uint64_t) (gen + d) << 32 | s);
			if (gen > d)
				fake_ack(f, (uint64_t) (gen - d) << 32 | s);
		}
	}
}

/* 4. The key of a rendezvous message reads it, and only until it is sent. */
static void hostile_key(struct itest_chan *ch, const struct sockaddr_in *v,
			struct claimer *c)
{
	static char want[RNDV_LEN];
	struct nrma_rndv_seg seg = { 0 };
	struct nrma_hdr hdr;
	struct fake f;
	int reason, status;

	fake_open(&f, v, FAKE_BUFS);
	EXPECT(fake_connect(&f, &c->name, c, &reason) ==
		       RDMA_CM_EVENT_ESTABLISHED,
	       "H connects again (reason %d)", reason);
	itest_signal(ch, STEP_H_AGAIN);
	hdr = fake_recv(&f, &seg);
	EXPECT(hdr.op == NRMA_HDR_RNDV && hdr.seg_count == 1 &&
		       seg.len == RNDV_LEN,
	       "V's rendezvous request (op %u, %u segments of %" PRIu64 ")",
	       hdr.op, hdr.seg_count, seg.len);
	status = fake_read(&f, &seg);
	EXPECT(status == IBV_WC_SUCCESS, "H reads the message (status %d)",
	       status);
	itest_msg_fill(want, RNDV_LEN, 4);
	EXPECT(!memcmp(f.buf + FAKE_BUFS * FAKE_BUF, want, FAKE_BUF),
	       "what H read is V's message");
	fake_ack(&f, hdr.token);
	itest_expect_idle(ch, STEP_KEY_SENT, itest_wait_ms(), "V's completion");
	status = fake_read(&f, &seg);
	EXPECT(status == IBV_WC_REM_ACCESS_ERR,
	       "the key reads nothing once the send completed (status %d)",
	       status);
	itest_signal(ch, STEP_KEY_READ);
	fake_close(&f);
}

/*
 * 6. A message past the credits V told H of loses H its connection.  V
 * tops H up as its spare buffers replace those H's messages hold; once
 * they stop coming (FAKE_QUIET_MS), H sends one more.
 */
static bool fake_credit_within(struct fake *f, int ms)
{
	int64_t until = itest_now_ms() + ms;

	while (!nrma_credit_avail(&f->credit[NRMA_CREDIT_MSG],
				  f->cell[NRMA_CREDIT_MSG]))
		if (itest_now_ms() >= until)
			return false;
	return true;
}

static void hostile_overrun(struct itest_chan *ch, const struct sockaddr_in *v,
			    struct claimer *c)
{
	struct ibv_send_wr wr = { .opcode = IBV_WR_SEND };
	struct nrma_hdr *hdr;
	struct fake f;
	uint64_t i;
	int reason;

	fake_open(&f, v, FAKE_BUFS);
	EXPECT(fake_connect(&f, &c->name, c, &reason) ==
		       RDMA_CM_EVENT_ESTABLISHED,
	       "H connects a fifth time (reason %d)", reason);
	hdr = (void *) (f.buf + FAKE_BUFS * FAKE_BUF);
	for (i = 0; fake_credit_within(&f, FAKE_QUIET_MS); i++) {
		EXPECT(i < FAKE_OVERRUN_MAX,
		       "V stops granting within %d "
		       "messages",
		       FAKE_OVERRUN_MAX);
		f.credit[NRMA_CREDIT_MSG].sent++;
		*hdr = (struct nrma_hdr){ .op = NRMA_HDR_EAGER, .token = i };
		EXPECT(fake_post(&f, &wr, sizeof(*hdr)) == IBV_WC_SUCCESS,
		       "message %" PRIu64 " within H's credits goes", i);
	}
	/* Into a buffer that another peer's credits hold. */
	*hdr = (struct nrma_hdr){ .op = NRMA_HDR_EAGER, .token = i };
	EXPECT(fake_post(&f, &wr, sizeof(*hdr)) == IBV_WC_SUCCESS,
	       "message %" PRIu64 ", past H's credits, goes", i);
	fake_expect(&f, RDMA_CM_EVENT_DISCONNECTED);
	itest_signal(ch, STEP_OVERRUN);
	fake_close(&f);
}

/* Sends the piece at offset of a SEG_LEN-byte message, saying len. */
static void fake_segment(struct fake *f, uint64_t len, uint32_t offset)
{
	static unsigned char msg[SEG_LEN];
	struct nrma_hdr *hdr = (void *) (f->buf + FAKE_BUFS * FAKE_BUF);

	itest_msg_fill(msg, SEG_LEN, SEG_SEED);
	*hdr = (struct nrma_hdr){ .op = NRMA_HDR_SEG,
				  .len = len,
				  .seg_offset = offset };
	memcpy(hdr + 1, msg + offset, SEG_PIECE);
	CHECK(!fake_send(f, sizeof(*hdr) + SEG_PIECE, NRMA_CREDIT_MSG));
}

static void fake_connect_again(struct fake *f, const struct sockaddr_in *v,
			       struct claimer *c, const char *what)
{
	int reason;

	fake_open(f, v, FAKE_BUFS);
	EXPECT(fake_connect(f, &c->name, c, &reason) ==
		       RDMA_CM_EVENT_ESTABLISHED,
	       "H connects %s (reason %d)", what, reason);
}

/* 5. Segments, held and taken, and segments that lie. */
static void hostile_segments(struct itest_chan *ch, const struct sockaddr_in *v,
			     struct claimer *c)
{
	struct fake f;

	fake_connect_again(&f, v, c, "a third time");
	fake_segment(&f, SEG_LEN, 0);
	itest_signal(ch, STEP_SEG_HELD);
	itest_expect_idle(ch, STEP_SEG_POSTED, itest_wait_ms(), "V's receive");
	fake_segment(&f, SEG_LEN, SEG_PIECE);
	fake_segment(&f, SEG_LEN, 2 * SEG_PIECE);
	itest_expect_idle(ch, STEP_SEG_PLACING, itest_wait_ms(),
			  "V's next receive");
	fake_segment(&f, SEG_LEN, 0);
	fake_segment(&f, SEG_LEN, SEG_PIECE / 2);
	fake_expect(&f, RDMA_CM_EVENT_DISCONNECTED);
	itest_signal(ch, STEP_SEG_OVERLAP);
	fake_close(&f);

	fake_connect_again(&f, v, c, "a fourth time");
	fake_segment(&f, SEG_LEN, 0);
	fake_segment(&f, 2 * SEG_LEN, SEG_PIECE);
	fake_expect(&f, RDMA_CM_EVENT_DISCONNECTED);
	itest_signal(ch, STEP_SEG_LENGTH);
	fake_close(&f);
	/* Nothing of H's may reach V's receive for P's message. */
	itest_expect_idle(ch, STEP_SEG_DONE, itest_wait_ms(), "V's receive");
}

/* 7. A peer that takes nothing: V's stall watch gives up on it. */
static void hostile_mute(struct itest_chan *ch, const struct sockaddr_in *v,
			 struct claimer *c)
{
	struct fake f;
	int reason;

	fake_open(&f, v, 0);
	EXPECT(fake_connect(&f, &c->name, c, &reason) ==
		       RDMA_CM_EVENT_ESTABLISHED,
	       "H connects a sixth time (reason %d)", reason);
	itest_signal(ch, STEP_MUTE);
	fake_expect(&f, RDMA_CM_EVENT_DISCONNECTED);
	itest_signal(ch, STEP_MUTE_GONE);
	fake_close(&f);
}

/* 1. Names that are not H's: V refuses each, for why. */
static void hostile_claim(const struct sockaddr_in *v,
			  const struct sockaddr_in *claim, int why,
			  const char *what)
{
	struct fake f;
	int reason;

	fake_open(&f, v, FAKE_BUFS);
	EXPECT(fake_connect(&f, claim, NULL, &reason) == RDMA_CM_EVENT_REJECTED,
	       "%s is refused", what);
	EXPECT(reason == why, "%s: reason %d, not %d", what, reason, why);
	fake_close(&f);
}

static void hostile(void *arg)
{
	struct itest_chan ch = itest_link_child(&link_h);
	struct sockaddr_in v, p, claim;
	struct claimer c;
	struct fake f;
	struct nrma_hdr hdr;
	int reason;

	(void) arg;
	itest_chan_read(&ch, &v, sizeof(v), "V's name");
	itest_chan_read(&ch, &p, sizeof(p), "P's name");
	claim = v;
	claim.sin_addr.s_addr ^= htonl(0x42);
	hostile_claim(&v, &claim, NRMA_REJECT_IDENTITY, "a foreign name");
	hostile_claim(&v, &p, NRMA_REJECT_IDENTITY, "P's name");
	claim = v;
	claim.sin_port = htons(7);
	hostile_claim(&v, &claim, NRMA_REJECT_UNCHECKED,
		      "a name nobody listens on");
	/* 2. H's own name. */
	claimer_open(&c, &v);
	fake_open(&f, &v, FAKE_BUFS);
	EXPECT(fake_connect(&f, &c.name, &c, &reason) ==
		       RDMA_CM_EVENT_ESTABLISHED,
	       "H's own name is accepted (reason %d)", reason);
	EXPECT(c.asked == 1, "V asked H once (%d)", c.asked);
	itest_chan_write(&ch, &c.name, sizeof(c.name));
	itest_signal(&ch, STEP_H_NAME);
	hdr = fake_recv(&f, NULL);
	EXPECT(hdr.op == NRMA_HDR_RNDV && hdr.len == RNDV_LEN,
	       "V's rendezvous request (op %u, len %" PRIu64 ")", hdr.op,
	       hdr.len);
	itest_signal(&ch, STEP_H_GOT);
	itest_expect_idle(&ch, STEP_P_SENT, itest_wait_ms(), "V's send to P");
	fake_forge(&f, hdr.token);
	itest_signal(&ch, STEP_FORGED);
	itest_expect_idle(&ch, STEP_H_ACK, itest_wait_ms(), "leave to ACK");
	fake_ack(&f, hdr.token);
	/* 3. A runt. */
	CHECK(!fake_send(&f, 3, NRMA_CREDIT_MSG));
	fake_expect(&f, RDMA_CM_EVENT_DISCONNECTED);
	itest_signal(&ch, STEP_RUNT);
	fake_close(&f);
	hostile_key(&ch, &v, &c);
	hostile_segments(&ch, &v, &c);
	hostile_overrun(&ch, &v, &c);
	hostile_mute(&ch, &v, &c);
	itest_expect_idle(&ch, STEP_DONE, itest_wait_ms(), "the end");
	claimer_close(&c);
}

static void honest(void *arg)
{
	struct itest_chan ch = itest_link_child(&link_p);
	static char buf[RNDV_LEN];
	struct itest_node p;
	struct itest_comp c;

	(void) arg;
	itest_node_open(&p, NULL, "P");
	itest_node_exchange(&p, &ch);
	itest_expect(&ch, STEP_P_RECV, "leave to receive");
	ITEST_POST(fi_recv(p.ep, buf, sizeof(buf), NULL, FI_ADDR_UNSPEC, buf),
		   "P's receive");
	c = itest_cq_wait(p.rx, "V's rendezvous message");
	EXPECT(c.len == RNDV_LEN, "P's receive: len %zu", c.len);
	itest_msg_check(buf, RNDV_LEN, 2, "V's message to P");
	ITEST_POST(fi_recv(p.ep, buf, sizeof(buf), NULL, FI_ADDR_UNSPEC, buf),
		   "P's second receive");
	c = itest_cq_wait(p.rx, "V's message after H's runt");
	itest_msg_check(buf, c.len, 3, "V's last message to P");
	itest_expect(&ch, STEP_P_SEG, "leave to send");
	itest_msg_fill(buf, 100, 5);
	ITEST_POST(fi_send(p.ep, buf, 100, NULL, p.peer, buf), "P to V");
	c = itest_cq_wait(p.tx, "P's send to V");
	EXPECT(c.op_context == buf, "P's send: context %p", c.op_context);
	itest_sync(&ch, STEP_DONE, "the end");
	itest_node_close(&p);
}

/* Sends H a message from the middle of a registration it may not see. */
static void victim_key(struct itest_node *v, struct itest_chan *ch_h,
		       fi_addr_t h)
{
	static char big[3 * RNDV_LEN];
	char *msg = big + RNDV_LEN;
	struct itest_comp c;
	struct fid_mr *mr;

	CHECK_OK(fi_mr_reg(itest_domain(), big, sizeof(big),
			   FI_SEND | FI_REMOTE_READ | FI_REMOTE_WRITE, 0, 0, 0,
			   &mr, NULL));
	itest_msg_fill(msg, RNDV_LEN, 4);
	itest_expect(ch_h, STEP_H_AGAIN, "H's second connection");
	ITEST_POST(fi_send(v->ep, msg, RNDV_LEN, fi_mr_desc(mr), h, msg),
		   "V to H, with a descriptor");
	c = itest_cq_wait(v->tx, "H's ACK of the second message");
	EXPECT(c.op_context == msg, "context %p", c.op_context);
	itest_signal(ch_h, STEP_KEY_SENT);
	itest_expect(ch_h, STEP_KEY_READ, "H's second read");
	CHECK_OK(fi_close(&mr->fid));
}

/* Sends to H, which posted no receive: the send times out, not sooner. */
static void victim_mute(struct itest_node *v, struct itest_chan *ch_h,
			fi_addr_t h)
{
	static char msg[100];
	struct fi_cq_err_entry e;
	int64_t sent;

	itest_expect(ch_h, STEP_MUTE, "H's fourth connection");
	v->tx->errors_ok = true;
	sent = itest_now_ms();
	ITEST_POST(fi_send(v->ep, msg, sizeof(msg), NULL, h, msg),
		   "V to a mute H");
	e = itest_cq_wait_err(v->tx, "the send to a mute H");
	EXPECT(e.err == FI_ETIMEDOUT && e.op_context == msg,
	       "the send times out (err %d, context %p)", e.err, e.op_context);
	EXPECT(itest_now_ms() - sent >= STALL_MS,
	       "not before FI_NRMA_STALL_MS (%" PRId64 " ms)",
	       itest_now_ms() - sent);
	itest_expect(ch_h, STEP_MUTE_GONE, "H's connection to go");
}

/*
 * H's segments: a held message taken once a receive comes, a receive
 * broken by a segment that lies, and a held part dropped for one.
 */
static void victim_segments(struct itest_node *v, struct itest_chan *ch_h,
			    struct itest_chan *ch_p)
{
	static unsigned char buf[SEG_LEN + ITEST_GUARD];
	static char ctx[3];
	struct fi_cq_err_entry e;
	struct itest_comp c;

	itest_step = "segments: a held message";
	itest_expect(ch_h, STEP_SEG_HELD, "H's first segment");
	itest_cq_expect_empty_at(__FILE__, __LINE__, v->rx, 200,
				 "H's message is not whole");
	itest_guard_reset(buf, SEG_LEN, 0);
	ITEST_POST(
		fi_recv(v->ep, buf, sizeof(buf), NULL, FI_ADDR_UNSPEC, &ctx[0]),
		"V's receive of H's held message");
	itest_signal(ch_h, STEP_SEG_POSTED);
	c = itest_cq_wait(v->rx, "H's segmented message");
	EXPECT(c.op_context == &ctx[0] && c.len == SEG_LEN,
	       "H's message: context %p, len %zu", c.op_context, c.len);
	itest_msg_check(buf, SEG_LEN, SEG_SEED, "H's segmented message");
	itest_guard_check(buf, SEG_LEN, "H's segmented message");

	itest_step = "segments: a receive broken";
	v->rx->errors_ok = true;
	ITEST_POST(
		fi_recv(v->ep, buf, sizeof(buf), NULL, FI_ADDR_UNSPEC, &ctx[1]),
		"V's receive of H's next message");
	itest_signal(ch_h, STEP_SEG_PLACING);
	e = itest_cq_wait_err(v->rx, "the receive H's lie broke");
	EXPECT(e.err == FI_ECONNRESET && e.op_context == &ctx[1],
	       "the receive fails (err %d, context %p)", e.err, e.op_context);
	itest_expect(ch_h, STEP_SEG_OVERLAP, "H's connection to go");

	itest_step = "segments: a held part dropped";
	itest_expect(ch_h, STEP_SEG_LENGTH, "H's fourth connection to go");
	ITEST_POST(
		fi_recv(v->ep, buf, sizeof(buf), NULL, FI_ADDR_UNSPEC, &ctx[2]),
		"V's receive after H's dropped message");
	itest_signal(ch_p, STEP_P_SEG);
	c = itest_cq_wait(v->rx, "P's message after H's dropped one");
	EXPECT(c.op_context == &ctx[2] && c.len == 100,
	       "P's message: context %p, len %zu", c.op_context, c.len);
	itest_msg_check(buf, 100, 5, "P's message");
	itest_cq_expect_empty(v->rx, "nothing of H's dropped message");
	itest_signal(ch_h, STEP_SEG_DONE);
}

int main(void)
{
	static char to_h[RNDV_LEN], to_p[RNDV_LEN];
	struct itest_chan ch_p, ch_h;
	struct itest_node v;
	struct itest_comp c;
	struct sockaddr_in h_name, p_name;
	fi_addr_t h, p;

	CHECK(setenv("FI_NRMA_STALL_MS", itest_fmt("%d", STALL_MS), 1) == 0);
	itest_link_init(&link_p);
	itest_link_init(&link_h);
	itest_fork("P", honest, NULL);
	itest_fork("H", hostile, NULL);
	ch_p = itest_link_parent(&link_p);
	ch_h = itest_link_parent(&link_h);
	itest_node_open(&v, NULL, "V");
	p_name = itest_name_swap(&ch_p, &v.name);
	p = itest_node_insert(&v, &p_name);
	itest_chan_write(&ch_h, &v.name, sizeof(v.name));
	itest_chan_write(&ch_h, &p_name, sizeof(p_name));

	itest_step = "H's honest connection";
	itest_chan_read(&ch_h, &h_name, sizeof(h_name), "H's name");
	itest_expect(&ch_h, STEP_H_NAME, "H's connection");
	h = itest_node_insert(&v, &h_name);
	itest_msg_fill(to_h, RNDV_LEN, 1);
	ITEST_POST(fi_send(v.ep, to_h, RNDV_LEN, NULL, h, to_h), "V to H");
	itest_expect(&ch_h, STEP_H_GOT, "H's receipt");

	itest_step = "forged ACKs";
	itest_msg_fill(to_p, RNDV_LEN, 2);
	ITEST_POST(fi_send(v.ep, to_p, RNDV_LEN, NULL, p, to_p), "V to P");
	itest_signal(&ch_h, STEP_P_SENT);
	itest_expect(&ch_h, STEP_FORGED, "H's forgeries");
	itest_idle(500);
	itest_cq_expect_empty(v.tx, "no send completes on a forged ACK");

	itest_step = "true ACKs";
	itest_signal(&ch_p, STEP_P_RECV);
	c = itest_cq_wait(v.tx, "P's ACK");
	EXPECT(c.op_context == to_p, "the send to P completes first (%p)",
	       c.op_context);
	itest_signal(&ch_h, STEP_H_ACK);
	c = itest_cq_wait(v.tx, "H's ACK");
	EXPECT(c.op_context == to_h, "then the send to H (%p)", c.op_context);

	itest_step = "a runt";
	itest_expect(&ch_h, STEP_RUNT, "H's runt and its disconnection");
	itest_msg_fill(to_p, 100, 3);
	ITEST_POST(fi_send(v.ep, to_p, 100, NULL, p, to_p), "V to P again");
	c = itest_cq_wait(v.tx, "the send to P after the runt");
	EXPECT(c.op_context == to_p, "context %p", c.op_context);

	itest_step = "a rendezvous key";
	victim_key(&v, &ch_h, h);

	victim_segments(&v, &ch_h, &ch_p);

	itest_step = "past its credits";
	itest_expect(&ch_h, STEP_OVERRUN, "H's overrun and its disconnection");

	itest_step = "a peer that takes nothing";
	victim_mute(&v, &ch_h, h);
	itest_sync(&ch_p, STEP_DONE, "P's end");
	itest_signal(&ch_h, STEP_DONE);
	itest_wait_kids();
	itest_node_close(&v);
	itest_pass("nrma_hostile");
	return 0;
}
