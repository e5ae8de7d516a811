/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The sending side of fi_msg and fi_tagged (see nrma_xfer.h): eager
 * copies, whole or in segments, rendezvous requests, and the ACKs that
 * complete them.
 */
#include <string.h>

#include "nrma_credit.h"
#include "nrma_iov.h"
#include "nrma_send.h"
#include "nrma_trigger.h"
#include "nrma_xfer.h"

/*
 * A send that waits for the peer's ACK names itself in its header, with a
 * token the peer cannot guess from others it saw; other sends name none.
 */
static void send_await_ack(struct nrma_xfer *x, struct nrma_op *op,
			   struct nrma_hdr *hdr)
{
	op->ack_pending = true;
	nrma_op_seal(x, op);
	hdr->token = nrma_op_token(x, op);
}

/*
 * A message sent by copy, whole or in segments: with FI_DELIVERY_COMPLETE
 * its receiver ACKs once the data is in the application's buffer.
 */
static void send_fill_copy(struct nrma_xfer *x, struct nrma_op *op,
			   struct nrma_hdr *hdr, const struct nrma_send_args *a,
			   enum nrma_hdr_op kind)
{
	hdr->op = kind;
	if (a->flags & FI_DELIVERY_COMPLETE) {
		hdr->flags |= NRMA_HDR_ACK_REQ;
		send_await_ack(x, op, hdr);
	}
}

static void send_fill_eager(struct nrma_xfer *x, struct nrma_op *op,
			    struct nrma_hdr *hdr,
			    const struct nrma_send_args *a)
{
	send_fill_copy(x, op, hdr, a, NRMA_HDR_EAGER);
	nrma_iov_gather(hdr + 1, a->iov, a->count, 0, hdr->len);
}

/*
 * Registers exactly what the peer will read, for as long as it may: an
 * application's descriptor would hand the receiver the key of its whole
 * registration, with whatever remote access that has, for good.
 */
static int send_fill_rndv(struct nrma_ep *ep, struct nrma_op *op,
			  struct nrma_hdr *hdr, const struct nrma_send_args *a)
{
	struct nrma_rndv_seg *seg = (void *) (hdr + 1);
	int ret;

	hdr->op = NRMA_HDR_RNDV;
	for (size_t i = 0; i < a->count; i++) {
		struct nrma_verbs_mr *vmr;
		uint64_t key;

		if (!a->iov[i].iov_len)
			continue; /* nothing to read, nothing to register */
		ret = nrma_op_buf_mr(ep, op, NULL, &a->iov[i], FI_REMOTE_READ,
				     &vmr, &key);
		if (ret)
			return ret;
		seg[hdr->seg_count++] = (struct nrma_rndv_seg){
			.addr = (uintptr_t) a->iov[i].iov_base,
			.len = a->iov[i].iov_len,
			.rkey = (uint32_t) key,
		};
	}
	send_await_ack(ep->xfer, op, hdr);
	return 0;
}

/*
 * A segmented message keeps its header and vectors: each segment copies
 * its piece as its credit lets it go (send_segment_go).
 */
static void send_fill_segmented(struct nrma_xfer *x, struct nrma_op *op,
				struct nrma_hdr *hdr,
				const struct nrma_send_args *a)
{
	send_fill_copy(x, op, hdr, a, NRMA_HDR_SEG);
	memcpy(op->iov, a->iov, a->count * sizeof(*a->iov));
	op->iov_count = a->count;
	op->sar.sent = 0;
	op->sar.posted = 0;
	op->sar.done = 0;
}

/* The receive context dest names (fi_rx_addr), of a scalable endpoint. */
static unsigned int send_rx_ctx(const struct nrma_ep *ep,
				const struct nrma_send_args *a)
{
	return ep->rx_ctx_bits ? nrma_addr_rx_ctx(&ep->av->table, a->dest) : 0;
}

static void send_fill_hdr(struct nrma_ep *ep, struct nrma_hdr *hdr,
			  const struct nrma_send_args *a, size_t msg_len)
{
	*hdr = (struct nrma_hdr){ .len = msg_len,
				  .tag = a->tag,
				  .rx_ctx = (uint8_t) send_rx_ctx(ep, a) };
	if (a->flags & FI_TAGGED)
		hdr->flags |= NRMA_HDR_TAGGED;
	if (a->flags & FI_REMOTE_CQ_DATA) {
		hdr->flags |= NRMA_HDR_CQ_DATA;
		hdr->cq_data = (uint32_t) a->data;
	}
}

/* What goes on the wire: the header, and an eager payload or segments. */
static size_t send_wire_len(const struct nrma_hdr *hdr)
{
	return sizeof(*hdr) +
	       (hdr->op == NRMA_HDR_EAGER ?
			hdr->len :
			hdr->seg_count * sizeof(struct nrma_rndv_seg));
}

/*
 * Posts a segmented send's next segment from a bounce buffer of its own,
 * which its completion frees (nrma_send_sent).
 */
static int send_segment_go(struct nrma_xfer *x, struct nrma_op *op)
{
	size_t left = op->len - op->sar.sent;
	size_t len = left < x->seg_size ? left : x->seg_size;
	int64_t buf = nrma_bufpool_get(&x->tx_bufs);
	struct nrma_hdr *hdr;
	struct nrma_sge sge;
	int ret;

	if (buf < 0)
		return -FI_EAGAIN;
	hdr = nrma_bufpool_buf(&x->tx_bufs, buf);
	*hdr = op->sar.hdr;
	hdr->seg_offset = (uint32_t) op->sar.sent;
	nrma_iov_gather(hdr + 1, op->iov, op->iov_count, op->sar.sent, len);
	sge = nrma_tx_buf_sge(x, buf, sizeof(*hdr) + len);
	ret = nrma_credit_post(op, hdr, &sge);
	if (ret) {
		nrma_bufpool_put(&x->tx_bufs, buf);
		return ret;
	}
	op->sar.bufs[op->sar.posted++ % NRMA_SAR_WINDOW] = buf;
	op->sar.sent += len;
	return 0;
}

static int send_whole_go(struct nrma_xfer *x, struct nrma_op *op)
{
	struct nrma_hdr *hdr = nrma_bufpool_buf(&x->tx_bufs, op->buf);
	struct nrma_sge sge = nrma_tx_buf_sge(x, op->buf, send_wire_len(hdr));

	return nrma_credit_post(op, hdr, &sge);
}

/* Posts a send, or its next segment, whose credit is taken. */
static int send_go(struct nrma_xfer *x, struct nrma_op *op)
{
	int ret = op->segmented ? send_segment_go(x, op) : send_whole_go(x, op);

	if (ret)
		nrma_credit_untake(op->conn, NRMA_CREDIT_MSG);
	else if (op->ack_pending) /* nrma_send_check_peers times its wait */
		op->sent_ms = nrma_xfer_now_ms();
	return ret;
}

/* Whether a segmented send has segments to post, and room for one. */
static bool send_more(const struct nrma_op *op)
{
	return op->segmented && op->sar.sent < op->len;
}

static bool send_window_open(const struct nrma_op *op)
{
	return !op->segmented ||
	       op->sar.posted - op->sar.done < NRMA_SAR_WINDOW;
}

/*
 * A send ends once the device is done with it and its ACK, if it waits for
 * one, came; a segmented one may be ACKed (refused) before its last
 * segment went.
 */
static void send_finish(struct nrma_ep *ep, struct nrma_op *op)
{
	if (op->wc_pending || op->ack_pending || op->queued)
		return;
	nrma_tx_report(ep, op);
	nrma_tx_ended(ep->xfer);
	nrma_op_free(ep->xfer, op);
}

/* A send that will not complete, with its error (positive). */
static void send_fail(struct nrma_ep *ep, struct nrma_op *op, int error)
{
	op->ack_pending = false;
	if (!op->error)
		op->error = error;
	send_finish(ep, op);
}

/*
 * Sends that waited for credits go, in order, while credits last.  A
 * segmented one stays first until its last segment goes: nothing else
 * to that peer comes between its segments.
 */
static void send_resume(struct nrma_ep *ep, struct nrma_conn *conn)
{
	struct nrma_op *op;

	while (!nrma_tx_held_waits(conn) && (op = nrma_credit_queued(conn)) &&
	       conn->sq_free && send_window_open(op) &&
	       nrma_credit_take(conn, NRMA_CREDIT_MSG)) {
		int ret;

		/* Off the queue first: a post that fails the connection
		 * fails what waits on it. */
		nrma_credit_unqueue(op);
		ret = send_go(ep->xfer, op);
		if (ret == -FI_EAGAIN) {
			nrma_credit_queue_send(ep, op, true);
			return;
		}
		if (ret)
			send_fail(ep, op, -ret);
		else if (send_more(op))
			nrma_credit_queue_send(ep, op, true);
	}
}

/*
 * In order behind those already waiting for credits, and behind the
 * writes held for a key (FI_ORDER_SAW).
 */
static int send_start(struct nrma_ep *ep, struct nrma_op *op)
{
	if (nrma_tx_held_waits(op->conn) || nrma_credit_send_waits(op->conn) ||
	    !nrma_credit_take(op->conn, NRMA_CREDIT_MSG)) {
		nrma_credit_queue_send(ep, op, false);
		return 0;
	}
	return send_go(ep->xfer, op);
}

static int send_wait_connection(struct nrma_xfer *x, struct nrma_op *op)
{
	op->sent_ms = nrma_xfer_now_ms();
	nrma_xfer_wait(x, &op->link, &x->connecting);
	return 0;
}

static uint64_t send_comp_flags(const struct nrma_ep *ep,
				const struct nrma_send_args *a)
{
	return FI_SEND | (a->flags & FI_TAGGED ? FI_TAGGED : FI_MSG) |
	       nrma_tx_comp_flags(ep, a->flags, a->silent);
}

/* A send's operation, with a bounce buffer for its header if asked. */
static struct nrma_op *send_op_new(struct nrma_ep *ep, struct nrma_conn *conn,
				   const struct nrma_send_args *a,
				   size_t msg_len, bool bounce)
{
	struct nrma_op *op;

	if (conn && !nrma_dlist_empty(&ep->xfer->connecting))
		nrma_send_connecting(ep); /* those first */
	op = nrma_tx_op_alloc(ep, NRMA_OP_SEND, conn, bounce);
	if (!op)
		return NULL;
	op->dest = a->dest;
	op->context = a->context;
	op->len = msg_len;
	op->flags = send_comp_flags(ep, a);
	return op;
}

/* The most an eager send built on the stack (send_post_light) takes. */
#define NRMA_SEND_INLINE_MAX 256

/*
 * Whether an eager send of msg_len bytes may go as send_post_light: the
 * device copies it whole as it is posted, it waits for no ACK, and
 * nothing to that peer waits before it (a connection, credits, a key).
 */
static bool send_light_fits(const struct nrma_ep *ep,
			    const struct nrma_conn *conn,
			    const struct nrma_send_args *a, size_t msg_len)
{
	/* First what a stream past its credits meets: sends queued. */
	return conn && !nrma_credit_send_waits(conn) &&
	       nrma_op_light_fits(conn) &&
	       msg_len < conn->xfer->light_send_below &&
	       !(a->flags & FI_DELIVERY_COMPLETE) &&
	       nrma_dlist_empty(&ep->xfer->connecting) &&
	       !nrma_tx_held_waits(conn) && nrma_tx_room(ep->xfer);
}

void nrma_send_conn_open(struct nrma_ep *ep, struct nrma_conn *conn)
{
	size_t wire = conn->max_inline < NRMA_SEND_INLINE_MAX ?
			      conn->max_inline :
			      NRMA_SEND_INLINE_MAX;
	/* One past the longest: 0 where not even a header fits. */
	size_t below = wire >= sizeof(struct nrma_hdr) ?
			       wire - sizeof(struct nrma_hdr) + 1 :
			       0;

	conn->xfer->light_send_below = below <= ep->xfer->eager_size ?
					       below :
					       ep->xfer->eager_size + 1;
}

/*
 * Such a send: header and payload built on the stack, no bounce buffer
 * and no operation record (nrma_op_post_light).  1 when it has no credit
 * now: it then queues as any other.
 */
static NRMA_INLINE int send_post_light(struct nrma_ep *ep,
				       struct nrma_conn *conn,
				       const struct nrma_send_args *a,
				       size_t msg_len)
{
	union {
		struct nrma_hdr hdr;
		char bytes[NRMA_SEND_INLINE_MAX];
	} wire;
	struct nrma_sge sge = {
		.addr = (uintptr_t) &wire,
		.len = (uint32_t) (sizeof(wire.hdr) + msg_len),
	};
	int ret;

	if (!nrma_credit_take(conn, NRMA_CREDIT_MSG))
		return 1;
	send_fill_hdr(ep, &wire.hdr, a, msg_len);
	wire.hdr.op = NRMA_HDR_EAGER;
	if (a->count == 1 && msg_len) /* most: msg_len is its one segment's */
		memcpy(&wire.hdr + 1, a->iov[0].iov_base, msg_len);
	else
		nrma_iov_gather(&wire.hdr + 1, a->iov, a->count, 0, msg_len);
	ret = nrma_credit_post_light(conn, &wire.hdr, &sge, a->context,
				     send_comp_flags(ep, a));
	if (ret) {
		nrma_credit_untake(conn, NRMA_CREDIT_MSG);
		return ret;
	}
	nrma_tx_started(ep->xfer);
	return 0;
}

/*
 * A segmented send goes through its connection's queue, which keeps its
 * segments together (send_resume), as far as credits and room let it now.
 */
static NRMA_NOINLINE ssize_t send_post_segmented(struct nrma_ep *ep,
						 struct nrma_conn *conn,
						 const struct nrma_send_args *a,
						 size_t msg_len)
{
	struct nrma_op *op = send_op_new(ep, conn, a, msg_len, false);

	if (!op)
		return -FI_EAGAIN;
	op->segmented = true;
	send_fill_hdr(ep, &op->sar.hdr, a, msg_len);
	send_fill_segmented(ep->xfer, op, &op->sar.hdr, a);
	if (conn)
		nrma_credit_queue_send(ep, op, false);
	else
		send_wait_connection(ep->xfer, op);
	nrma_tx_started(ep->xfer);
	if (conn)
		send_resume(ep, conn);
	return 0;
}

/* Any other send: an operation record, and a bounce buffer or a read. */
static NRMA_NOINLINE ssize_t send_post_op(struct nrma_ep *ep,
					  struct nrma_conn *conn,
					  const struct nrma_send_args *a,
					  size_t msg_len)
{
	struct nrma_xfer *x = ep->xfer;
	struct nrma_hdr *hdr;
	struct nrma_op *op;
	int ret = 0;

	/* Above the eager size, up to FI_NRMA_SAR_SIZE: by copy, in pieces. */
	if (msg_len > x->eager_size && msg_len <= x->sar_size)
		return send_post_segmented(ep, conn, a, msg_len);
	op = send_op_new(ep, conn, a, msg_len, true);
	if (!op)
		return -FI_EAGAIN;
	hdr = nrma_bufpool_buf(&x->tx_bufs, op->buf);
	send_fill_hdr(ep, hdr, a, msg_len);
	if (msg_len <= x->eager_size)
		send_fill_eager(x, op, hdr, a);
	else
		ret = send_fill_rndv(ep, op, hdr, a);
	if (!ret)
		ret = conn ? send_start(ep, op) : send_wait_connection(x, op);
	if (ret) {
		nrma_op_free(x, op);
		return ret;
	}
	nrma_tx_started(x);
	return 0;
}

/* Inline where it is called (nrma_send_buf, nrma_tx_submit): one frame. */
static NRMA_INLINE ssize_t send_post(struct nrma_ep *ep, struct nrma_conn *conn,
				     const void *args, size_t msg_len)
{
	const struct nrma_send_args *a = args;

	if (send_light_fits(ep, conn, a, msg_len)) {
		int light = send_post_light(ep, conn, a, msg_len);

		if (light <= 0)
			return light;
	}
	return send_post_op(ep, conn, a, msg_len);
}

/* A triggered send's turn came (nrma_trigger.c). */
static ssize_t send_fire(struct nrma_ep *ep, void *args,
			 const struct iovec *iov, void **desc, size_t len)
{
	struct nrma_send_args *a = args;

	(void) desc;
	a->iov = iov;
	a->flags &= ~FI_TRIGGER;
	return nrma_tx_submit(ep, a->dest, send_post, a, len, true);
}

static ssize_t send_hold(struct nrma_ep *ep, const struct nrma_send_args *a,
			 size_t len)
{
	struct nrma_trigger_io io = { a->iov, NULL, a->count, len };
	uint64_t kind = a->flags & FI_TAGGED ? FI_TAGGED : FI_MSG;

	return nrma_trigger_hold(ep, a->flags,
				 NRMA_TRIGGER_OP(send_fire, a, FI_SEND | kind),
				 io);
}

static enum nrma_xfer_class send_class(const struct nrma_send_args *a)
{
	return a->flags & FI_TAGGED ? NRMA_XFER_TAGGED : NRMA_XFER_MSG;
}

ssize_t nrma_send(struct nrma_ep *ep, const struct nrma_send_args *a)
{
	ssize_t len =
		nrma_tx_len(ep, send_class(a), a->iov, a->count, a->flags);

	if (send_rx_ctx(ep, a) >= NRMA_RX_CTX_MAX)
		return -FI_EINVAL;
	if (len < 0)
		return len;
	if (a->flags & FI_TRIGGER)
		return send_hold(ep, a, (size_t) len);
	/* A send may wait for its connection, in order with the next. */
	return nrma_tx_submit(ep, a->dest, send_post, a, len, true);
}

/*
 * A send of one buffer no larger than an inject or FI_OPT_MAX_MSG_SIZE
 * needs no vector or size checks; of its flags, only those nrma_send
 * refuses or holds send it there.  Inline in nrma_msg_send_buf.
 */
NRMA_INLINE ssize_t nrma_send_buf(struct nrma_ep *ep,
				  const struct nrma_send_args *a)
{
	enum nrma_xfer_class class = send_class(a);
	size_t len = a->iov[0].iov_len;
	struct nrma_conn *conn;
	ssize_t ret;

	if (len > ep->inject_size[class] || len > ep->max_size[class] ||
	    (a->flags & (FI_TRIGGER | FI_COMMIT_COMPLETE)) ||
	    send_rx_ctx(ep, a) >= NRMA_RX_CTX_MAX)
		return nrma_send(ep, a);
	/* A send may wait for its connection, in order with the next. */
	ret = nrma_tx_enter(ep, a->dest, true, &conn);
	if (!ret)
		ret = send_post(ep, conn, a, len);
	nrma_tx_leave(ep);
	return ret;
}

/* A segment's bounce buffer is free, and the next segments may go. */
static NRMA_NOINLINE void send_segment_sent(struct nrma_ep *ep,
					    struct nrma_op *op)
{
	struct nrma_conn *conn = op->conn;
	bool more = op->queued;

	nrma_bufpool_put(&ep->xfer->tx_bufs,
			 op->sar.bufs[op->sar.done++ % NRMA_SAR_WINDOW]);
	send_finish(ep, op);
	if (more)
		send_resume(ep, conn);
}

void nrma_send_sent(struct nrma_ep *ep, struct nrma_op *op)
{
	if (op->error)
		op->ack_pending = false;
	if (op->segmented) {
		send_segment_sent(ep, op);
		return;
	}
	/* the payload is in the peer's memory: the bounce buffer is free */
	if (op->buf >= 0) {
		nrma_bufpool_put(&ep->xfer->tx_bufs, op->buf);
		op->buf = -1;
	}
	send_finish(ep, op);
}

/*
 * A peer's ACK completes the send it names, if that went to this peer
 * and still waits for one; any other is ignored.
 */
void nrma_send_acked(struct nrma_ep *ep, uint64_t token, struct nrma_conn *conn,
		     bool failed)
{
	int64_t index = nrma_token_find(&ep->xfer->ops, token);
	struct nrma_op *op = index < 0 ? NULL : nrma_op_at(ep->xfer, index);

	if (!op || op->kind != NRMA_OP_SEND || !op->ack_pending ||
	    op->conn != conn) {
		NRMA_INFO(FI_LOG_EP_DATA, "ACK for no waiting send ignored\n");
		return;
	}
	op->ack_pending = false;
	if (failed && !op->error)
		op->error = FI_EIO; /* the receiver could not take it */
	send_finish(ep, op);
}

/*
 * At most every NRMA_ACK_PROBE_MS: a scan of the operations.  Sends that
 * wait for credits have their peer probed too: one that died gives none.
 */
void nrma_send_check_peers(struct nrma_ep *ep)
{
	struct nrma_xfer *x = ep->xfer;
	int64_t now = nrma_xfer_now_ms();

	if (now - x->checked_ms < NRMA_ACK_PROBE_MS)
		return;
	x->checked_ms = now;
	for (size_t i = 0; i < nrma_token_count(&x->ops); i++) {
		struct nrma_op *op = nrma_op_at(x, i);

		if (nrma_token_in_use(&x->ops, i) && op->kind == NRMA_OP_SEND &&
		    op->conn && (op->ack_pending || op->queued) &&
		    !op->wc_pending && now - op->sent_ms >= NRMA_ACK_PROBE_MS)
			nrma_tx_probe(ep, op->conn);
	}
}

void nrma_send_resume_blocked(struct nrma_ep *ep)
{
	struct nrma_dlist *head = &ep->xfer->blocked_conns, *item = head->next;

	while (item != head) {
		struct nrma_conn *conn = nrma_xfer_conn_of(item, blocked_link);

		item = item->next;
		send_resume(ep, conn);
	}
}

/*
 * Every send that waits for a connection to peer fails with err: the
 * attempt they all waited for failed, and the next would be a new one.
 */
static void send_connecting_fail(struct nrma_ep *ep, fi_addr_t peer, int err)
{
	struct nrma_dlist *item, *next;

	nrma_dlist_foreach_safe (&ep->xfer->connecting, item, next) {
		struct nrma_op *op =
			nrma_container_of(item, struct nrma_op, link);

		if (nrma_tx_peer_addr(ep, op->dest) != peer)
			continue;
		nrma_dlist_remove(&op->link);
		send_fail(ep, op, err);
	}
}

/*
 * Sends that waited for their connections: each joins its connection's
 * send queue once that is up, in order, or fails with why the connection
 * could not be made.
 */
void nrma_send_connecting(struct nrma_ep *ep)
{
	struct nrma_dlist *item = ep->xfer->connecting.next;

	while (item != &ep->xfer->connecting) {
		struct nrma_op *op =
			nrma_container_of(item, struct nrma_op, link);
		struct nrma_conn *conn;
		int ret = nrma_tx_connection(ep, op->dest, &conn);

		if (ret && ret != -FI_EAGAIN) {
			send_connecting_fail(
				ep, nrma_tx_peer_addr(ep, op->dest), -ret);
			item = ep->xfer->connecting.next; /* it changed */
			continue;
		}
		item = item->next;
		if (ret)
			continue;
		nrma_dlist_remove(&op->link);
		op->conn = conn;
		nrma_conn_hold(conn);
		nrma_credit_queue_send(ep, op, false);
		send_resume(ep, conn);
	}
}

/*
 * Sends waiting for credits or ACKs over a connection that failed will
 * never get them.
 */
void nrma_send_conn_failed(struct nrma_ep *ep, struct nrma_conn *conn)
{
	struct nrma_xfer *x = ep->xfer;
	struct nrma_op *op;

	while ((op = nrma_credit_queued(conn))) {
		nrma_credit_unqueue(op);
		send_fail(ep, op, FI_ECONNRESET);
	}

	for (size_t i = 0; i < nrma_token_count(&x->ops); i++) {
		struct nrma_op *op = nrma_op_at(x, i);

		if (nrma_token_in_use(&x->ops, i) && op->conn == conn &&
		    op->kind == NRMA_OP_SEND && op->ack_pending)
			send_fail(ep, op, FI_ECONNRESET);
	}
}
