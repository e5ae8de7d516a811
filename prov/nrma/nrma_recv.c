/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The receiving side of fi_msg and fi_tagged (see nrma_xfer.h): the
 * shared receive queue's buffers, delivery of eager messages by copy, of
 * segmented ones by copy as their segments come, and of rendezvous ones
 * by RDMA read, the ACKs that tell senders, and the receive calls,
 * FI_PEEK, FI_CLAIM and FI_DISCARD among them.  Which receive takes which
 * message is nrma_match.c's business.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "nrma_comp.h"
#include "nrma_credit.h"
#include "nrma_iov.h"
#include "nrma_recv.h"
#include "nrma_send.h"
#include "nrma_xfer.h"

/* Completions of receives */

/* Who reports rx's completions: its context's reporter, else ep. */
static struct nrma_ep *recv_reporter_of(struct nrma_ep *ep,
					const struct nrma_rx_entry *rx)
{
	const struct nrma_rx_ctx *rc = rx->ctx;

	return rc->reporter ? rc->reporter : ep;
}

static uint64_t recv_comp_flags(const struct nrma_rx_entry *rx)
{
	return FI_RECV | (rx->flags & FI_TAGGED ? FI_TAGGED : FI_MSG);
}

/*
 * Whether ep reports rx's success: a receive may be posted to a shared
 * context, so the selective completion is that of the endpoint the
 * message reached.
 */
static uint64_t recv_completion(const struct nrma_ep *ep,
				const struct nrma_rx_entry *rx)
{
	return (rx->flags & FI_COMPLETION) ||
			       !(ep->rx_cq_flags & FI_SELECTIVE_COMPLETION) ?
		       FI_COMPLETION :
		       0;
}

/* A received message's completion; truncated is how much did not fit. */
static void recv_report(struct nrma_ep *ep, struct nrma_rx_entry *rx, void *buf,
			size_t len, uint64_t flags, uint32_t cq_data,
			uint64_t tag, fi_addr_t src, size_t truncated)
{
	struct nrma_ep *rep = recv_reporter_of(ep, rx);
	struct nrma_comp comp = {
		.context = rx->context,
		.flags = flags | recv_comp_flags(rx) |
			 (rx->flags & FI_MULTI_RECV && rx->released &&
					  !rx->reads && !rx->cancelled ?
				  FI_MULTI_RECV :
				  0) |
			 recv_completion(rep, rx),
		.len = len,
		.buf = buf,
		.data = cq_data,
		.tag = tag,
		.src = src,
	};

	if (truncated) {
		comp.olen = truncated;
		comp.err = FI_ETRUNC;
	}
	nrma_comp_recv(rep, &comp);
}

/* A receive that failed, with its error (positive). */
static void recv_report_error(struct nrma_ep *ep, struct nrma_rx_entry *rx,
			      int err, int prov_errno)
{
	struct nrma_comp comp = {
		.context = rx->context,
		.flags = recv_comp_flags(rx),
		.err = err,
		.prov_errno = prov_errno,
	};

	nrma_comp_recv(recv_reporter_of(ep, rx), &comp);
}

/*
 * A cancelled receive reports FI_ECANCELED once the device is done with
 * it: an FI_MULTI_RECV buffer may still have rendezvous reads landing in
 * it, whose completions come first.
 */
static void recv_rx_done(struct nrma_ep *ep, struct nrma_rx_entry *rx)
{
	struct nrma_comp comp = {
		.context = rx->context,
		.flags = FI_RECV | (rx->flags & (FI_MULTI_RECV | FI_TAGGED)) |
			 (rx->flags & FI_TAGGED ? 0 : FI_MSG),
		.tag = rx->tag,
		.err = FI_ECANCELED,
	};

	if (rx->cancelled && !rx->reads) {
		rx->cancelled = false;
		nrma_comp_recv(recv_reporter_of(ep, rx), &comp);
	}
	nrma_match_entry_done(&((struct nrma_rx_ctx *) rx->ctx)->match, rx);
}

/* Receive buffers */

/* The queue is filled again, and what it posts, the peers that want
 * credits get. */
static void recv_srq_refill(struct nrma_ep *ep)
{
	nrma_rx_srq_fill(ep);
	nrma_credit_refill(ep);
}

/* The buffer goes back on the queue before its credit goes back. */
void nrma_recv_buf_release(struct nrma_ep *ep, uint32_t buf)
{
	nrma_credit_released(ep, buf);
	nrma_chunkpool_put(&ep->xfer->rx_bufs, buf);
	recv_srq_refill(ep);
}

static const struct nrma_hdr *recv_hdr(struct nrma_ep *ep, uint32_t buf)
{
	return nrma_rx_buf(ep->xfer, buf);
}

/* ACKs */

static int recv_ack_post(struct nrma_ep *ep, struct nrma_conn *conn,
			 uint64_t token, bool failed)
{
	struct nrma_xfer *x = ep->xfer;
	struct nrma_hdr *hdr;
	struct nrma_sge sge;
	struct nrma_op *op;
	int ret;

	if (!nrma_credit_take(conn, NRMA_CREDIT_CTL))
		return -FI_EAGAIN;
	op = nrma_op_alloc_buf(x, NRMA_OP_ACK, conn);
	if (!op) {
		nrma_credit_untake(conn, NRMA_CREDIT_CTL);
		return -FI_EAGAIN;
	}
	hdr = nrma_bufpool_buf(&x->tx_bufs, op->buf);
	*hdr = (struct nrma_hdr){ .op = NRMA_HDR_ACK,
				  .token = token,
				  .flags = failed ? NRMA_HDR_NACK : 0 };
	sge = nrma_tx_buf_sge(x, op->buf, sizeof(*hdr));
	ret = nrma_credit_post(op, hdr, &sge);
	if (ret) {
		nrma_credit_untake(conn, NRMA_CREDIT_CTL);
		nrma_op_free(x, op);
	} else {
		x->acks++;
	}
	return ret;
}

/*
 * Sends an ACK now, or later when buffers are back; never drops one while
 * the connection lives.  A peer that takes none of the ACKs it asks for
 * is not kept waiting on forever: past NRMA_ACKS_OWED_MAX its connection
 * fails.
 */
static void recv_ack_send(struct nrma_ep *ep, struct nrma_conn *conn,
			  uint64_t token, bool failed)
{
	struct nrma_pending_ack *pending;

	if (!conn || conn->state != NRMA_CONN_CONNECTED)
		return; /* the sender learns from the broken connection */
	if (recv_ack_post(ep, conn, token, failed) != -FI_EAGAIN)
		return;
	pending = conn->xfer->acks_owed < NRMA_ACKS_OWED_MAX ?
			  malloc(sizeof(*pending)) :
			  NULL;
	if (!pending) {
		NRMA_WARN(FI_LOG_EP_DATA, "cannot keep an ACK: failing its "
					  "connection\n");
		nrma_cm_conn_fail(conn, -FI_ENOMEM);
		return;
	}
	pending->conn = conn;
	pending->token = token;
	pending->failed = failed;
	nrma_conn_hold(conn);
	conn->xfer->acks_owed++;
	nrma_xfer_wait(ep->xfer, &pending->link, &ep->xfer->pending_acks);
}

/*
 * A peer whose send queue is full, or who has no credit for us, waits;
 * the others' ACKs go ahead.  Out of operations or buffers, all wait.
 */
void nrma_recv_acks_retry(struct nrma_ep *ep)
{
	struct nrma_dlist *head = &ep->xfer->pending_acks, *item = head->next;

	while (item != head) {
		struct nrma_pending_ack *pending =
			nrma_container_of(item, struct nrma_pending_ack, link);
		struct nrma_conn *conn = pending->conn;

		item = item->next;
		if (conn->state == NRMA_CONN_CONNECTED) {
			if (!conn->sq_free ||
			    !nrma_credit_has(conn, NRMA_CREDIT_CTL))
				continue;
			if (recv_ack_post(ep, conn, pending->token,
					  pending->failed) == -FI_EAGAIN)
				return;
		}
		nrma_dlist_remove(&pending->link);
		nrma_conn_release(conn);
		conn->xfer->acks_owed--;
		free(pending);
	}
}

/* Delivery of a message into a matched receive */

static size_t recv_min_multi(const struct nrma_rx_entry *rx)
{
	return ((const struct nrma_rx_ctx *) rx->ctx)->min_multi_recv;
}

static void recv_deliver_eager(struct nrma_ep *ep, struct nrma_rx_entry *rx,
			       const struct nrma_hdr *hdr, size_t len,
			       struct nrma_conn *conn)
{
	size_t room = nrma_match_space(rx), copy = len < room ? len : room;
	size_t offset = rx->offset;
	uint64_t flags = hdr->flags & NRMA_HDR_CQ_DATA ? FI_REMOTE_CQ_DATA : 0;
	void *buf = nrma_match_take(rx, copy, recv_min_multi(rx));

	nrma_iov_scatter(rx->iov, rx->count, offset, hdr + 1, copy);
	recv_report(ep, rx, buf, copy, flags, hdr->cq_data, hdr->tag,
		    nrma_rx_source(ep, conn), len - copy);
	if (hdr->flags & NRMA_HDR_ACK_REQ)
		recv_ack_send(ep, conn, hdr->token, false);
	recv_rx_done(ep, rx);
}

/* lkeys of a receive's iovs, which rendezvous reads write into. */
static int recv_lkeys(struct nrma_ep *ep, struct nrma_op *op,
		      const struct nrma_rx_entry *rx, uint32_t *lkey)
{
	for (size_t i = 0; i < rx->count; i++) {
		struct nrma_verbs_mr *vmr;
		uint64_t key;
		int ret;

		lkey[i] = 0;
		if (!rx->iov[i].iov_len)
			continue; /* nothing lands there, nothing to register */
		ret = nrma_op_buf_mr(ep, op, rx->desc[i], &rx->iov[i], FI_RECV,
				     &vmr, &key);
		if (ret)
			return ret;
		lkey[i] = nrma_verbs_mr_lkey(vmr);
	}
	return 0;
}

/* The read of the next remote segment into the receive's iovs. */
static int recv_post_read(struct nrma_op *op, size_t take)
{
	const struct nrma_rndv_seg *seg = &op->seg[op->read.seg_done];
	struct nrma_rx_entry *rx = op->read.rx;
	struct nrma_sge sge[NRMA_IOV_LIMIT];
	struct iovec piece[NRMA_IOV_LIMIT];
	size_t idx[NRMA_IOV_LIMIT];
	size_t n = nrma_iov_slice(rx->iov, rx->count, op->read.rx_offset, take,
				  piece, idx, NRMA_IOV_LIMIT);
	struct nrma_wr_chain chain;

	for (size_t j = 0; j < n; j++)
		sge[j] = (struct nrma_sge){
			.addr = (uintptr_t) piece[j].iov_base,
			.len = piece[j].iov_len,
			.lkey = op->lkey[idx[j]],
		};
	if (!n)
		return -FI_EINVAL;
	nrma_wr_chain_init(&chain);
	nrma_wr_rdma(&chain, NRMA_WR_READ, sge, n, seg->addr, seg->rkey, 0, 0);
	return nrma_op_post(op, &chain);
}

/*
 * One RDMA read per remote segment, scattered over the receive's iovs.
 * Stops at a full send queue; the rest is posted by a later progress.
 */
static int recv_post_reads(struct nrma_op *op)
{
	while (op->read.seg_done < op->read.seg_count && op->read.left) {
		size_t seg_len = op->seg[op->read.seg_done].len;
		size_t take = seg_len < op->read.left ? seg_len : op->read.left;
		int ret = recv_post_read(op, take);

		if (ret)
			return ret;
		op->read.rx->reads++;
		op->read.rx_offset += take;
		op->read.left -= take;
		op->read.seg_done++;
	}
	return 0;
}

/* Posts what it can; a read stuck on a full queue waits its turn. */
static void recv_reads_advance(struct nrma_ep *ep, struct nrma_op *op)
{
	int ret = recv_post_reads(op);

	if (ret == -FI_EAGAIN) {
		if (!op->queued)
			nrma_xfer_wait(ep->xfer, &op->link,
				       &ep->xfer->pending_reads);
		op->queued = true;
		return;
	}
	if (op->queued)
		nrma_dlist_remove(&op->link);
	op->queued = false;
	if (ret) {
		op->error = -ret;
		op->read.truncated = 0;
	}
	if (!op->wc_pending)
		nrma_recv_read_finish(ep, op);
}

void nrma_recv_reads_retry(struct nrma_ep *ep)
{
	struct nrma_dlist *head = &ep->xfer->pending_reads;

	struct nrma_dlist *item = head->next;

	/* A read waits for its own peer's send queue only. */
	while (item != head) {
		struct nrma_op *op =
			nrma_container_of(item, struct nrma_op, link);

		item = item->next;
		if (op->conn->state != NRMA_CONN_CONNECTED || op->conn->sq_free)
			recv_reads_advance(ep, op);
	}
}

static void recv_read_init(struct nrma_op *op, struct nrma_rx_entry *rx,
			   const struct nrma_hdr *hdr, size_t len)
{
	op->read.rx = rx;
	op->len = len;
	op->read.truncated = hdr->len - len;
	op->read.peer_token = hdr->token;
	op->read.cq_data = hdr->cq_data;
	op->read.tag = hdr->tag;
	op->read.rx_flags = hdr->flags & NRMA_HDR_CQ_DATA ? FI_REMOTE_CQ_DATA :
							    0;
	op->read.left = len;
	op->read.seg_count =
		hdr->seg_count; /* checked by nrma_proto_hdr_check */
	op->read.seg_done = 0;
	memcpy(op->seg, hdr + 1, op->read.seg_count * sizeof(*op->seg));
}

/* Reads len bytes of a rendezvous message into rx at offset. */
static void recv_read_start(struct nrma_ep *ep, struct nrma_op *op,
			    const struct nrma_hdr *hdr,
			    const struct nrma_stalled_read *where)
{
	int ret;

	recv_read_init(op, where->rx, hdr, where->len);
	op->read.rx_offset = where->rx_offset;
	op->read.rx_buf = where->rx_buf;
	ret = op->conn ? recv_lkeys(ep, op, where->rx, op->lkey) :
			 -FI_ECONNRESET;
	if (ret) {
		op->error = -ret;
		op->read.truncated = 0;
		nrma_recv_read_finish(ep, op);
		return;
	}
	recv_reads_advance(ep, op);
}

/*
 * With every operation in use (many rendezvous messages into one
 * FI_MULTI_RECV buffer can do that), the message keeps its place in the
 * receive and its receive buffer until one is free.
 */
static void recv_stall(struct nrma_ep *ep, const struct nrma_stalled_read *s)
{
	struct nrma_xfer *x = ep->xfer;
	/* The message's receive buffer keeps its place. */
	struct nrma_stalled_read *stall = &nrma_rx_slot_of(x, s->buf)->stall;

	*stall = *s;
	stall->rx->reads++; /* keeps the receive */
	if (stall->conn)
		nrma_conn_hold(stall->conn);
	nrma_xfer_wait(x, &stall->link, &x->stalled_reads);
}

void nrma_recv_stalled_retry(struct nrma_ep *ep)
{
	struct nrma_xfer *x = ep->xfer;

	while (!nrma_dlist_empty(&x->stalled_reads)) {
		struct nrma_stalled_read *s = nrma_container_of(
			x->stalled_reads.next, struct nrma_stalled_read, link);
		struct nrma_op *op = nrma_op_alloc(x, NRMA_OP_READ, s->conn);

		if (!op)
			return;
		nrma_dlist_remove(&s->link);
		s->rx->reads--;
		if (s->conn)
			nrma_conn_release(s->conn);
		recv_read_start(ep, op, recv_hdr(ep, s->buf), s);
		nrma_recv_buf_release(ep, s->buf);
	}
}

/* Returns whether it kept the receive buffer buf, which holds hdr. */
static bool recv_deliver_rndv(struct nrma_ep *ep, struct nrma_rx_entry *rx,
			      const struct nrma_hdr *hdr, uint32_t buf,
			      struct nrma_conn *conn)
{
	size_t room = nrma_match_space(rx);
	struct nrma_stalled_read where = {
		.buf = buf,
		.conn = conn,
		.rx = rx,
		.rx_offset = rx->offset,
		.len = hdr->len < room ? hdr->len : room,
	};
	struct nrma_op *op;

	where.rx_buf = nrma_match_take(rx, where.len, recv_min_multi(rx));
	op = nrma_dlist_empty(&ep->xfer->stalled_reads) ?
		     nrma_op_alloc(ep->xfer, NRMA_OP_READ, conn) :
		     NULL;
	if (!op) {
		recv_stall(ep, &where);
		return true;
	}
	recv_read_start(ep, op, hdr, &where);
	return false;
}

void nrma_recv_read_finish(struct nrma_ep *ep, struct nrma_op *op)
{
	struct nrma_rx_entry *rx = op->read.rx;

	/* Its receive's context closed: nothing to report; the sender's
	 * send fails. */
	if (!rx) {
		recv_ack_send(ep, op->conn, op->read.peer_token, true);
		nrma_op_free(ep->xfer, op);
		return;
	}
	if (op->error) {
		recv_report_error(ep, rx, op->error, op->prov_errno);
	} else {
		recv_report(ep, rx, op->read.rx_buf, op->len, op->read.rx_flags,
			    op->read.cq_data, op->read.tag,
			    nrma_rx_source(ep, op->conn), op->read.truncated);
	}
	/* The sender waits for word either way. */
	recv_ack_send(ep, op->conn, op->read.peer_token, op->error);
	recv_rx_done(ep, rx);
	nrma_op_free(ep->xfer, op);
}

/*
 * Segmented messages.  A connection receives one at a time
 * (conn->xfer->sar_rx): its segments come back to back, in order.  A
 * message whose first segment a receive matched is copied into it as
 * they come; one that no receive wanted is held, its segments' buffers
 * chained from the first's (struct nrma_sar_piece), until a receive
 * takes it, whole or in part; one dropped meanwhile has the rest of its
 * segments dropped as they come.  The sender hears at the last segment.
 */

/* Whether hdr is the segment its connection expects. */
static bool recv_sar_expected(const struct nrma_conn *conn,
			      const struct nrma_hdr *hdr)
{
	const struct nrma_sar_rx *s;

	if (!conn)
		return false; /* a connection gone: its message is not whole */
	s = &conn->xfer->sar_rx;
	if (!hdr->seg_offset)
		return !s->next;
	return s->next == hdr->seg_offset && s->len == hdr->len;
}

static void recv_sar_init(struct nrma_sar_rx *s, const struct nrma_hdr *hdr)
{
	s->len = hdr->len;
	s->next = 0;
	s->rx = NULL;
	s->held = NULL;
	s->tag = hdr->tag;
	s->cq_data = hdr->cq_data;
	s->hdr_flags = hdr->flags;
	s->ack_owed = hdr->flags & NRMA_HDR_ACK_REQ;
	s->ack_failed = false;
	s->token = hdr->token;
}

/* conn starts receiving the message whose first segment is hdr. */
static struct nrma_sar_rx *recv_sar_begin(struct nrma_ep *ep,
					  struct nrma_conn *conn,
					  const struct nrma_hdr *hdr)
{
	struct nrma_sar_rx *s = &conn->xfer->sar_rx;

	recv_sar_init(s, hdr);
	nrma_dlist_insert_tail(&s->link, &ep->xfer->sar_receiving);
	return s;
}

/* The message lands in rx from here on: its room is taken now. */
static void recv_sar_place(struct nrma_sar_rx *s, struct nrma_rx_entry *rx)
{
	size_t room = nrma_match_space(rx);

	s->rx = rx;
	s->rx_offset = rx->offset;
	s->rx_len = s->len < room ? s->len : room;
	s->rx_buf = nrma_match_take(rx, s->rx_len, recv_min_multi(rx));
	rx->reads++; /* keeps the receive until the last segment */
}

/* A segment's payload into the receive, as much as fits. */
static void recv_sar_copy(const struct nrma_sar_rx *s, size_t offset,
			  const void *data, size_t len)
{
	size_t copy;

	if (offset >= s->rx_len)
		return;
	copy = len < s->rx_len - offset ? len : s->rx_len - offset;
	nrma_iov_scatter(s->rx->iov, s->rx->count, s->rx_offset + offset, data,
			 copy);
}

/* The whole message is in its receive: it completes, its sender hears. */
static void recv_sar_placed(struct nrma_ep *ep, struct nrma_conn *conn,
			    const struct nrma_sar_rx *s)
{
	struct nrma_rx_entry *rx = s->rx;

	rx->reads--;
	recv_report(ep, rx, s->rx_buf, s->rx_len,
		    s->hdr_flags & NRMA_HDR_CQ_DATA ? FI_REMOTE_CQ_DATA : 0,
		    s->cq_data, s->tag, nrma_rx_source(ep, conn),
		    s->len - s->rx_len);
	if (s->ack_owed)
		recv_ack_send(ep, conn, s->token, false);
	recv_rx_done(ep, rx);
}

/* conn's message is over: its last segment came. */
static void recv_sar_end(struct nrma_ep *ep, struct nrma_conn *conn)
{
	struct nrma_sar_rx *s = &conn->xfer->sar_rx;

	nrma_dlist_remove(&s->link);
	s->next = 0;
	if (s->rx)
		recv_sar_placed(ep, conn, s);
	else if (!s->held && s->ack_owed) /* dropped; a held one waits */
		recv_ack_send(ep, conn, s->token, s->ack_failed);
}

/* len more bytes of conn's message came: it ends if that was all. */
static void recv_sar_arrived(struct nrma_ep *ep, struct nrma_conn *conn,
			     size_t len)
{
	struct nrma_sar_rx *s = &conn->xfer->sar_rx;

	s->next += len;
	if (s->next == s->len)
		recv_sar_end(ep, conn);
}

/* A held message's receive buffers go back, all of them. */
static void recv_sar_release(struct nrma_ep *ep, uint32_t first)
{
	uint32_t buf = first;

	while (buf != UINT32_MAX) {
		uint32_t next = nrma_rx_slot_of(ep->xfer, buf)->piece.next;

		nrma_recv_buf_release(ep, buf);
		buf = next;
	}
}

/* A later segment: into its receive, onto its held message, or away. */
static void recv_sar_next(struct nrma_ep *ep, uint32_t buf, size_t wc_len,
			  struct nrma_conn *conn)
{
	struct nrma_sar_rx *s = &conn->xfer->sar_rx;
	const struct nrma_hdr *hdr = recv_hdr(ep, buf);
	size_t len = wc_len - sizeof(*hdr);

	if (s->held) {
		struct nrma_xfer *x = ep->xfer;

		nrma_rx_slot_of(x, s->held_last)->piece.next = buf;
		nrma_rx_slot_of(x, buf)->piece =
			(struct nrma_sar_piece){ UINT32_MAX, (uint32_t) len };
		s->held_last = buf;
		recv_srq_refill(ep); /* a spare takes its place */
	} else {
		if (s->rx)
			recv_sar_copy(s, hdr->seg_offset, hdr + 1, len);
		nrma_recv_buf_release(ep, buf);
	}
	recv_sar_arrived(ep, conn, len);
}

/* A first segment that a receive matched. */
static void recv_sar_first(struct nrma_ep *ep, struct nrma_rx_entry *rx,
			   uint32_t buf, size_t wc_len, struct nrma_conn *conn)
{
	const struct nrma_hdr *hdr = recv_hdr(ep, buf);
	struct nrma_sar_rx *s = recv_sar_begin(ep, conn, hdr);
	size_t len = wc_len - sizeof(*hdr);

	recv_sar_place(s, rx);
	recv_sar_copy(s, 0, hdr + 1, len);
	nrma_recv_buf_release(ep, buf);
	recv_sar_arrived(ep, conn, len);
}

/* A first segment that no receive wanted: held, the rest chained to it. */
static void recv_sar_hold(struct nrma_ep *ep, uint32_t buf, size_t wc_len,
			  struct nrma_conn *conn)
{
	struct nrma_rx_slot *slot = nrma_rx_slot_of(ep->xfer, buf);
	const struct nrma_hdr *hdr = recv_hdr(ep, buf);
	struct nrma_sar_rx *s = recv_sar_begin(ep, conn, hdr);

	slot->piece =
		(struct nrma_sar_piece){ UINT32_MAX,
					 (uint32_t) (wc_len - sizeof(*hdr)) };
	s->held = &slot->unexp;
	s->held_last = buf;
	recv_sar_arrived(ep, conn, slot->piece.len);
}

/* The connection still receiving a held message, or NULL. */
static struct nrma_sar_rx *recv_sar_receiving(const struct nrma_unexp *unexp)
{
	struct nrma_conn *conn = unexp->peer;
	struct nrma_sar_rx *s = conn ? &conn->xfer->sar_rx : NULL;

	return s && s->next && s->held == unexp ? s : NULL;
}

/*
 * A held message into rx: what came so far is copied, the rest lands as
 * it comes.  A claimed one whose connection failed before its end fails
 * rx.
 */
static void recv_sar_deliver_held(struct nrma_ep *ep, struct nrma_rx_entry *rx,
				  struct nrma_unexp *unexp)
{
	struct nrma_xfer *x = ep->xfer;
	struct nrma_sar_rx whole, *s = recv_sar_receiving(unexp);
	struct nrma_conn *conn = unexp->peer; /* its buffers go back below */
	size_t offset = 0;

	if (nrma_rx_slot_of(x, unexp->buf)->piece.broken) {
		recv_report_error(ep, rx, FI_ECONNRESET, 0);
		recv_rx_done(ep, rx);
		recv_sar_release(ep, unexp->buf);
		return;
	}
	if (!s) {
		s = &whole;
		recv_sar_init(s, recv_hdr(ep, unexp->buf));
	}
	s->held = NULL;
	recv_sar_place(s, rx);
	for (uint32_t buf = unexp->buf, next; buf != UINT32_MAX; buf = next) {
		const struct nrma_sar_piece *piece =
			&nrma_rx_slot_of(x, buf)->piece;

		next = piece->next;
		recv_sar_copy(s, offset,
			      (const struct nrma_hdr *) nrma_rx_buf(x, buf) + 1,
			      piece->len);
		offset += piece->len;
		nrma_recv_buf_release(ep, buf);
	}
	if (s == &whole)
		recv_sar_placed(ep, conn, s);
}

/*
 * A held message is dropped (FI_DISCARD, its context gone): whether its
 * sender hears later, at the last segment, that failed says.
 */
static bool recv_sar_drop_held(struct nrma_unexp *unexp, bool failed)
{
	struct nrma_sar_rx *s = recv_sar_receiving(unexp);

	if (!s)
		return false;
	s->held = NULL;
	s->ack_failed = failed;
	return true;
}

void nrma_recv_conn_close(struct nrma_conn *conn)
{
	struct nrma_sar_rx *s = &conn->xfer->sar_rx;

	if (s->next)
		nrma_dlist_remove(&s->link);
	s->next = 0;
}

void nrma_recv_conn_failed(struct nrma_ep *ep, struct nrma_conn *conn)
{
	struct nrma_sar_rx *s = &conn->xfer->sar_rx;

	if (!s->next)
		return;
	nrma_recv_conn_close(conn);
	if (s->rx) {
		s->rx->reads--;
		recv_report_error(ep, s->rx, FI_ECONNRESET, 0);
		recv_rx_done(ep, s->rx);
	} else if (s->held && !s->held->claimed) {
		/* It never came whole: as if it never came. */
		nrma_match_forget(s->held);
		recv_sar_release(ep, s->held->buf);
	} else if (s->held) {
		/* Its claim's receive fails (recv_sar_deliver_held). */
		struct nrma_sar_piece *first =
			&nrma_rx_slot_of(ep->xfer, s->held->buf)->piece;

		recv_sar_release(ep, first->next);
		first->next = UINT32_MAX;
		first->broken = true;
	}
}

/* Returns whether it kept the receive buffer buf. */
static bool recv_deliver(struct nrma_ep *ep, struct nrma_rx_entry *rx,
			 uint32_t buf, size_t wc_len, struct nrma_conn *conn)
{
	const struct nrma_hdr *hdr = recv_hdr(ep, buf);

	if (hdr->op == NRMA_HDR_RNDV)
		return recv_deliver_rndv(ep, rx, hdr, buf, conn);
	recv_deliver_eager(ep, rx, hdr, wc_len - sizeof(*hdr), conn);
	return false;
}

/* Every receive buffer has its entry for the message it may hold. */
static void recv_hold(struct nrma_ep *ep, struct nrma_rx_ctx *rc,
		      const struct nrma_hdr *hdr, uint32_t buf, uint32_t len,
		      struct nrma_conn *conn)
{
	struct nrma_unexp *unexp = &nrma_rx_slot_of(ep->xfer, buf)->unexp;

	*unexp = (struct nrma_unexp){
		.buf = buf,
		.len = len,
		.tag = hdr->tag,
		.peer = conn,
		.owner = ep,
	};
	nrma_match_hold(&rc->match, unexp, hdr->flags & NRMA_HDR_TAGGED);
	recv_srq_refill(ep);
}

/*
 * A peer that sends what nrma does not send, or more than its credits,
 * is not talked to any more.
 */
static void recv_malformed(struct nrma_ep *ep, uint32_t buf, uint32_t len,
			   struct nrma_conn *conn)
{
	NRMA_WARN(FI_LOG_EP_DATA, "malformed message (%u bytes) dropped%s\n",
		  len, conn ? "; closing its connection" : "");
	nrma_recv_buf_release(ep, buf);
	if (conn)
		nrma_cm_conn_fail(conn, -FI_EIO);
}

/*
 * The receive context a message names: one of a scalable endpoint's that
 * is open, else none (the message is malformed).
 */
static struct nrma_rx_ctx *recv_ctx_of(struct nrma_ep *ep,
				       const struct nrma_hdr *hdr)
{
	struct nrma_xfer *x = ep->xfer;

	if (!x->named)
		return hdr->rx_ctx ? NULL : x->rx;
	return hdr->rx_ctx < x->nnamed ? x->named[hdr->rx_ctx] : NULL;
}

void nrma_recv_message(struct nrma_ep *ep, uint32_t buf, uint32_t len,
		       struct nrma_conn *conn)
{
	const struct nrma_hdr *hdr = recv_hdr(ep, buf);
	struct nrma_rx_entry *rx;
	struct nrma_rx_ctx *rc = NULL;

	if (nrma_proto_hdr_check(hdr, len) ||
	    (hdr->op != NRMA_HDR_ACK && !(rc = recv_ctx_of(ep, hdr))) ||
	    (conn &&
	     !nrma_credit_arrived(ep, conn, buf,
				  hdr->op == NRMA_HDR_ACK ? NRMA_CREDIT_CTL :
							    NRMA_CREDIT_MSG,
				  hdr))) {
		recv_malformed(ep, buf, len, conn);
		return;
	}
	if (hdr->op == NRMA_HDR_SEG && !recv_sar_expected(conn, hdr)) {
		/* Its message ended with its connection, or the peer lies. */
		if (conn && conn->state != NRMA_CONN_CONNECTED)
			nrma_recv_buf_release(ep, buf);
		else
			recv_malformed(ep, buf, len, conn);
		return;
	}
	if (hdr->op == NRMA_HDR_ACK) {
		uint64_t token = hdr->token;
		bool failed = hdr->flags & NRMA_HDR_NACK;

		nrma_recv_buf_release(ep, buf);
		nrma_send_acked(ep, token, conn, failed);
		return;
	}
	if (hdr->op == NRMA_HDR_SEG && hdr->seg_offset) {
		recv_sar_next(ep, buf, len, conn);
		return;
	}
	rx = nrma_match_posted(&rc->match, hdr->flags & NRMA_HDR_TAGGED,
			       hdr->tag, conn);
	NRMA_DBG(FI_LOG_EP_DATA,
		 "message op %u len %" PRIu64 " flags 0x%x: %s\n", hdr->op,
		 hdr->len, hdr->flags, rx ? "matched" : "unexpected");
	if (!rx) {
		recv_hold(ep, rc, hdr, buf, len, conn);
		if (hdr->op == NRMA_HDR_SEG)
			recv_sar_hold(ep, buf, len, conn);
		return;
	}
	if (hdr->op == NRMA_HDR_SEG)
		recv_sar_first(ep, rx, buf, len, conn);
	else if (!recv_deliver(ep, rx, buf, len, conn))
		nrma_recv_buf_release(ep, buf);
}

/* Posting receives, to an endpoint's own context or a shared one */

/* Delivers a held message into rx, through the endpoint that holds it. */
static void recv_deliver_held(struct nrma_rx_entry *rx,
			      struct nrma_unexp *unexp)
{
	struct nrma_ep *ep = unexp->owner;
	uint32_t buf = unexp->buf;
	bool kept;

	nrma_match_forget(unexp);
	if (recv_hdr(ep, buf)->op == NRMA_HDR_SEG) {
		recv_sar_deliver_held(ep, rx, unexp);
		return;
	}
	kept = recv_deliver(ep, rx, buf, unexp->len, unexp->peer);
	if (!kept)
		nrma_recv_buf_release(ep, buf);
}

/*
 * Whether a receive matches only messages from its src_addr: all with
 * FI_DIRECTED_RECV, tagged ones with FI_TAGGED_DIRECTED_RECV, and, with
 * FI_EXACT_DIRECTED_RECV, all unless it modifies the tagged kind only.
 */
static bool recv_directed(const struct nrma_rx_ctx *rc, uint64_t flags)
{
	uint64_t caps = rc->caps;

	return (caps & FI_DIRECTED_RECV) ||
	       ((caps & NRMA_TAGGED_DIRECTED_RECV) && (flags & FI_TAGGED)) ||
	       ((caps & NRMA_EXACT_DIRECTED_RECV) &&
		!(caps & NRMA_TAGGED_DIRECTED_RECV));
}

/* FI_EXACT_DIRECTED_RECV: a directed receive names its source. */
static bool recv_src_valid(const struct nrma_rx_ctx *rc,
			   const struct nrma_recv_args *a)
{
	return !(rc->caps & NRMA_EXACT_DIRECTED_RECV) ||
	       !recv_directed(rc, a->flags) || a->src != FI_ADDR_UNSPEC;
}

/* FI_MULTI_RECV: untagged, or tagged with FI_TAGGED_MULTI_RECV. */
static bool recv_multi_valid(const struct nrma_rx_ctx *rc,
			     const struct nrma_recv_args *a)
{
	uint64_t cap = a->flags & FI_TAGGED ? NRMA_TAGGED_MULTI_RECV :
					      FI_MULTI_RECV;

	return !(a->flags & FI_MULTI_RECV) ||
	       (a->count == 1 && cap && (rc->caps & cap));
}

static bool recv_args_valid(const struct nrma_rx_ctx *rc,
			    const struct nrma_recv_args *a)
{
	if (a->count > rc->iov_limit || (a->count && !a->iov) ||
	    !recv_src_valid(rc, a))
		return false;
	/* Only tagged receives look at held messages; FI_CLAIM keeps one
	 * in the context, and FI_DISCARD drops what they found. */
	if ((a->flags & (FI_PEEK | FI_CLAIM | FI_DISCARD)) &&
	    (!(a->flags & FI_TAGGED) || (a->flags & FI_MULTI_RECV) ||
	     ((a->flags & FI_CLAIM) && !a->context) ||
	     ((a->flags & FI_DISCARD) && !(a->flags & (FI_PEEK | FI_CLAIM)))))
		return false;
	return recv_multi_valid(rc, a);
}

static void recv_entry_init(struct nrma_rx_ctx *rc, struct nrma_rx_entry *rx,
			    const struct nrma_recv_args *a)
{
	/* A receive of nothing may come with no iov at all. */
	if (a->count)
		memcpy(rx->iov, a->iov, a->count * sizeof(*rx->iov));
	if (a->desc && a->count)
		memcpy(rx->desc, a->desc, a->count * sizeof(*rx->desc));
	rx->count = a->count;
	rx->context = a->context;
	rx->tag = a->tag;
	rx->ignore = a->ignore;
	rx->src = recv_directed(rc, a->flags) ? a->src : FI_ADDR_UNSPEC;
	rx->flags = a->flags;
	rx->ctx = rc;
}

static struct nrma_rx_entry *recv_entry_alloc(struct nrma_rx_ctx *rc,
					      const struct nrma_recv_args *a)
{
	struct nrma_rx_entry *rx = nrma_match_entry_alloc(&rc->match);

	if (rx)
		recv_entry_init(rc, rx, a);
	return rx;
}

/* Posts a receive, and feeds it the held messages it matches. */
static ssize_t recv_post(struct nrma_rx_ctx *rc, const struct nrma_recv_args *a)
{
	struct nrma_rx_entry *rx = recv_entry_alloc(rc, a);
	struct nrma_unexp *unexp;

	if (!rx)
		return -FI_EAGAIN;
	nrma_match_post(&rc->match, rx);
	while (!rx->released && (unexp = nrma_match_unexp(&rc->match, rx)))
		recv_deliver_held(rx, unexp);
	return 0;
}

/* FI_PEEK, FI_CLAIM and FI_DISCARD: held messages looked at, kept, dropped */

/* What a peek found, or what a discarded claim had: no data moves. */
static void recv_report_held(void *context, const struct nrma_unexp *unexp,
			     size_t len)
{
	struct nrma_ep *ep = unexp->owner;
	const struct nrma_hdr *hdr = recv_hdr(ep, unexp->buf);
	struct nrma_comp comp = {
		.context = context,
		.len = len,
		.flags =
			FI_RECV | FI_TAGGED |
			(hdr->flags & NRMA_HDR_CQ_DATA ? FI_REMOTE_CQ_DATA : 0),
		.data = hdr->cq_data,
		.tag = hdr->tag,
		.src = nrma_rx_source(ep, unexp->peer),
	};

	nrma_comp_rx_event(ep, &comp);
}

/*
 * A dropped message's sender may wait for its ACK: it gets one, which
 * fails its send unless the application discarded it (FI_DISCARD).
 */
static void recv_drop_held(struct nrma_unexp *unexp, bool failed)
{
	struct nrma_ep *ep = unexp->owner;
	const struct nrma_hdr *hdr = recv_hdr(ep, unexp->buf);
	uint32_t buf = unexp->buf;
	bool segmented = hdr->op == NRMA_HDR_SEG;

	/* One still coming is answered at its last segment. */
	if ((!segmented || !recv_sar_drop_held(unexp, failed)) &&
	    (hdr->op == NRMA_HDR_RNDV || (hdr->flags & NRMA_HDR_ACK_REQ)))
		recv_ack_send(ep, unexp->peer, hdr->token, failed);
	nrma_match_forget(unexp);
	if (segmented)
		recv_sar_release(ep, buf);
	else
		nrma_recv_buf_release(ep, buf);
}

static void recv_discard(struct nrma_unexp *unexp)
{
	recv_drop_held(unexp, false);
}

/*
 * What no message answers goes to the context's first endpoint: a shared
 * context has no CQ of its own.
 */
static struct nrma_ep *recv_reporter(const struct nrma_rx_ctx *rc)
{
	if (rc->reporter)
		return rc->reporter;
	return rc->count ? rc->eps[0] : NULL;
}

static ssize_t recv_peek(struct nrma_rx_ctx *rc, const struct nrma_recv_args *a)
{
	struct nrma_rx_entry probe = { 0 };
	struct nrma_unexp *unexp;

	recv_entry_init(rc, &probe, a);
	unexp = nrma_match_unexp(&rc->match, &probe);
	if (!unexp) {
		struct nrma_comp comp = {
			.context = a->context,
			.flags = FI_RECV | FI_TAGGED,
			.tag = a->tag,
			.err = FI_ENOMSG,
		};

		if (!recv_reporter(rc))
			return -FI_EOPBADSTATE;
		nrma_comp_rx_event(recv_reporter(rc), &comp);
		return 0;
	}
	recv_report_held(a->context, unexp,
			 recv_hdr(unexp->owner, unexp->buf)->len);
	if (a->flags & FI_DISCARD)
		recv_discard(unexp);
	else if (a->flags & FI_CLAIM)
		nrma_match_claim(&rc->match, unexp, a->context);
	return 0;
}

static ssize_t recv_claimed(struct nrma_rx_ctx *rc,
			    const struct nrma_recv_args *a)
{
	struct nrma_unexp *unexp = nrma_match_claimed(&rc->match, a->context);
	struct nrma_rx_entry *rx = NULL;

	if (!unexp)
		return -FI_EINVAL; /* nothing was claimed with it */
	if (!(a->flags & FI_DISCARD)) {
		rx = recv_entry_alloc(rc, a);
		if (!rx)
			return -FI_EAGAIN;
	}
	nrma_match_unclaim(a->context);
	if (!rx) {
		recv_report_held(a->context, unexp, 0);
		recv_discard(unexp);
		return 0;
	}
	recv_deliver_held(rx, unexp); /* on no queue: it takes this one */
	return 0;
}

ssize_t nrma_recv_ctx_recv(struct nrma_rx_ctx *rc,
			   const struct nrma_recv_args *a)
{
	if (!recv_args_valid(rc, a))
		return -FI_EINVAL;
	if (a->flags & FI_PEEK)
		return recv_peek(rc, a);
	if (a->flags & FI_CLAIM)
		return recv_claimed(rc, a);
	return recv_post(rc, a);
}

/* rx, taken off its queue, ends with FI_ECANCELED. */
static void recv_cancelled(struct nrma_rx_ctx *rc, struct nrma_rx_entry *rx)
{
	rx->cancelled = true;
	if (recv_reporter(rc))
		recv_rx_done(recv_reporter(rc), rx);
	else
		nrma_match_entry_done(&rc->match, rx); /* nobody to tell */
}

ssize_t nrma_recv_ctx_cancel(struct nrma_rx_ctx *rc, void *context)
{
	struct nrma_rx_entry *rx = nrma_match_cancel(&rc->match, context);

	if (!rx)
		return -FI_ENOENT;
	recv_cancelled(rc, rx);
	return 0;
}

static void recv_cancel_all(struct nrma_rx_ctx *rc)
{
	struct nrma_rx_entry *rx;

	while ((rx = nrma_match_cancel_first(&rc->match)))
		recv_cancelled(rc, rx);
}

/*
 * ep is disabled: the receives posted to its own contexts end.  Those of
 * a shared context stay, for its other endpoints to take.
 */
void nrma_recv_discard(struct nrma_ep *ep)
{
	struct nrma_xfer *x = ep->xfer;

	if (x->rx == &x->own_rx)
		recv_cancel_all(x->rx);
	for (size_t i = 0; i < x->nnamed; i++)
		if (x->named[i])
			recv_cancel_all(x->named[i]);
}

ssize_t nrma_recv_cancel(struct nrma_ep *ep, void *context)
{
	return nrma_recv_ctx_cancel(ep->xfer->rx, context);
}

/* Closing */

static void recv_forget_held(struct nrma_unexp *unexp)
{
	/* Its buffers go with its endpoint; what still comes is dropped. */
	recv_sar_drop_held(unexp, true);
}

/* The receive reads of ep's land in no longer waits for them. */
static void recv_reads_dropped(struct nrma_rx_ctx *rc, struct nrma_rx_entry *rx,
			       size_t reads)
{
	rx->reads -= reads;
	nrma_match_entry_done(&rc->match, rx);
}

/*
 * rc's receives go: the messages landing in ep's receives of rc are
 * dropped as they come, their senders told if refused.
 */
static void recv_sar_ctx_gone(struct nrma_rx_ctx *rc, struct nrma_ep *ep,
			      bool refused)
{
	struct nrma_dlist *item;

	nrma_dlist_foreach (&ep->xfer->sar_receiving, item) {
		struct nrma_sar_rx *s =
			nrma_container_of(item, struct nrma_sar_rx, link);

		if (!s->rx || s->rx->ctx != rc)
			continue;
		if (!refused)
			recv_reads_dropped(rc, s->rx, 1);
		s->rx = NULL;
		s->ack_failed = refused;
	}
}

void nrma_recv_ctx_leave(struct nrma_rx_ctx *rc, struct nrma_ep *ep)
{
	struct nrma_xfer *x = ep->xfer;
	struct nrma_dlist *item;

	nrma_match_purge(&rc->match, ep, recv_forget_held);
	recv_sar_ctx_gone(rc, ep, false);
	nrma_dlist_foreach (&x->stalled_reads, item) {
		struct nrma_stalled_read *s =
			nrma_container_of(item, struct nrma_stalled_read, link);

		recv_reads_dropped(rc, s->rx, 1);
	}
	/* A read operation has one posted read a completion to come. */
	for (size_t i = 0; i < nrma_token_count(&x->ops); i++) {
		struct nrma_op *op = nrma_op_at(x, i);

		if (nrma_token_in_use(&x->ops, i) && op->kind == NRMA_OP_READ &&
		    op->read.rx)
			recv_reads_dropped(rc, op->read.rx, op->wc_pending);
	}
	for (size_t i = 0; i < rc->count; i++) {
		if (rc->eps[i] != ep)
			continue;
		rc->eps[i] = rc->eps[--rc->count];
		break;
	}
}

static void recv_refuse_held(struct nrma_unexp *unexp)
{
	recv_drop_held(unexp, true);
}

/*
 * rc closes while ep stays (a scalable endpoint's receive context): the
 * messages ep holds for it are refused, and ep's reads into its receives
 * end unreported, then refuse their messages (nrma_recv_read_finish).  The
 * device may still be writing into those receives' buffers until then
 * (nrma_recv_reads_orphaned).
 */
void nrma_recv_ctx_drop(struct nrma_rx_ctx *rc, struct nrma_ep *ep)
{
	struct nrma_xfer *x = ep->xfer;
	struct nrma_dlist *item, *next;

	nrma_match_purge(&rc->match, ep, recv_refuse_held);
	recv_sar_ctx_gone(rc, ep, true);
	nrma_dlist_foreach_safe (&x->stalled_reads, item, next) {
		struct nrma_stalled_read *st =
			nrma_container_of(item, struct nrma_stalled_read, link);

		if (st->rx->ctx != rc)
			continue;
		nrma_dlist_remove(&st->link);
		recv_ack_send(ep, st->conn, recv_hdr(ep, st->buf)->token, true);
		if (st->conn)
			nrma_conn_release(st->conn);
		nrma_recv_buf_release(ep, st->buf);
	}
	for (size_t i = 0; i < nrma_token_count(&x->ops); i++) {
		struct nrma_op *op = nrma_op_at(x, i);

		if (!nrma_token_in_use(&x->ops, i) ||
		    op->kind != NRMA_OP_READ || !op->read.rx ||
		    op->read.rx->ctx != rc)
			continue;
		op->read.rx = NULL;
		if (op->queued) {
			nrma_dlist_remove(&op->link);
			op->queued = false;
		}
		if (!op->wc_pending)
			nrma_recv_read_finish(ep, op);
	}
}

bool nrma_recv_reads_orphaned(struct nrma_ep *ep)
{
	struct nrma_xfer *x = ep->xfer;

	for (size_t i = 0; i < nrma_token_count(&x->ops); i++) {
		const struct nrma_op *op = nrma_op_at(x, i);

		if (nrma_token_in_use(&x->ops, i) && op->kind == NRMA_OP_READ &&
		    !op->read.rx)
			return true;
	}
	return false;
}
