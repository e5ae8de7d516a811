/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The receiving side of the message protocol (see nrma_proto.c): the
 * shared receive queue's buffers, posted receives and their matching,
 * unexpected messages, delivery of eager messages by copy and of
 * rendezvous ones by RDMA read, and the ACKs that tell senders.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "nrma_iov.h"
#include "nrma_proto.h"

/* Completions of receives */

/* A received message's completion; truncated is how much did not fit. */
static void report_recv(struct nrma_ep *ep, struct nrma_rx_entry *rx,
			void *buf, size_t len, uint64_t flags, uint32_t cq_data,
			uint64_t tag, fi_addr_t src, size_t truncated)
{
	flags |= FI_RECV | (rx->flags & FI_TAGGED ? FI_TAGGED : FI_MSG) |
		 (rx->flags & FI_MULTI_RECV && rx->released && !rx->reads ?
		  FI_MULTI_RECV : 0);
	if (truncated) {
		struct fi_cq_err_entry err = {
			.op_context = rx->context,
			.flags = flags,
			.len = len,
			.buf = buf,
			.data = cq_data,
			.tag = tag,
			.olen = truncated,
			.err = FI_ETRUNC,
		};

		if (ep->rx_cq)
			nrma_cq_write_err(ep->rx_cq, &err);
		if (ep->recv_cntr)
			nrma_cntr_inc_err(ep->recv_cntr);
		return;
	}
	if (ep->rx_cq && (!(ep->rx_cq_flags & FI_SELECTIVE_COMPLETION) ||
			  (rx->flags & FI_COMPLETION))) {
		struct nrma_cq_entry entry = {
			.comp = { .op_context = rx->context, .flags = flags,
				  .len = len, .buf = buf, .data = cq_data,
				  .tag = tag },
			.src_addr = src,
		};

		nrma_cq_write(ep->rx_cq, &entry);
	}
	if (ep->recv_cntr)
		nrma_cntr_inc(ep->recv_cntr);
}

/* Receive buffers and posted receives */

static int srq_post(struct nrma_ep *ep, uint32_t buf)
{
	struct nrma_proto *m = ep->proto;
	struct nrma_sge sge = {
		.addr = (uintptr_t) nrma_bufpool_buf(&m->rx_bufs, buf),
		.len = m->buf_size,
		.lkey = nrma_verbs_mr_lkey(m->rx_mr),
	};
	int ret;

	ret = nrma_verbs_post_srq_recv(ep->verbs, NRMA_WR_RECV | buf, &sge);
	if (ret) {
		nrma_bufpool_put(&m->rx_bufs, buf);
		return ret;
	}
	m->srq_posted++;
	return 0;
}

/* Keeps the shared receive queue full while free buffers last. */
void nrma_srq_refill(struct nrma_ep *ep)
{
	struct nrma_proto *m = ep->proto;

	while (m->srq_posted < m->srq_target) {
		int64_t buf = nrma_bufpool_get(&m->rx_bufs);

		if (buf < 0 || srq_post(ep, buf))
			return;
	}
}

void nrma_rx_buf_release(struct nrma_ep *ep, uint32_t buf)
{
	nrma_bufpool_put(&ep->proto->rx_bufs, buf);
	nrma_srq_refill(ep);
}

static void rx_entry_free(struct nrma_proto *m, struct nrma_rx_entry *rx)
{
	nrma_bufpool_put(&m->rx_entries,
			 ((char *) rx - m->rx_entries.mem) / m->rx_entries.buf_size);
}

static size_t rx_space(const struct nrma_rx_entry *rx)
{
	return nrma_iov_len(rx->iov, rx->count) - rx->offset;
}

/* Takes len bytes of a receive for one message; NULL buf when none fit. */
static void *rx_claim(struct nrma_ep *ep, struct nrma_rx_entry *rx, size_t len)
{
	void *buf = (char *) rx->iov[0].iov_base + rx->offset;

	if (!(rx->flags & FI_MULTI_RECV)) {
		nrma_dlist_remove(&rx->link);
		rx->released = true;
		return rx->iov[0].iov_base;
	}
	rx->offset += len < rx_space(rx) ? len : rx_space(rx);
	if (rx_space(rx) < ep->min_multi_recv) {
		nrma_dlist_remove(&rx->link);
		rx->released = true;
	}
	return buf;
}

static void rx_done(struct nrma_proto *m, struct nrma_rx_entry *rx)
{
	if (rx->released && !rx->reads)
		rx_entry_free(m, rx);
}

/* ACKs */

static int ack_post(struct nrma_ep *ep, struct nrma_conn *conn, uint64_t token)
{
	struct nrma_proto *m = ep->proto;
	struct nrma_hdr *hdr;
	struct nrma_sge sge;
	struct nrma_wr wr;
	struct nrma_op *op;
	int ret;

	op = nrma_op_alloc_buf(m, NRMA_OP_ACK, conn);
	if (!op)
		return -FI_EAGAIN;
	hdr = nrma_bufpool_buf(&m->tx_bufs, op->buf);
	*hdr = (struct nrma_hdr) { .op = NRMA_HDR_ACK, .token = token };
	sge = nrma_tx_buf_sge(m, op, sizeof(*hdr));
	wr = (struct nrma_wr) { .op = NRMA_WR_SEND, .sge = &sge, .sge_count = 1 };
	ret = nrma_op_post(m, op, &wr, 1);
	if (ret)
		nrma_op_free(m, op);
	else
		m->acks++;
	return ret;
}

/* Sends an ACK now, or later when buffers are back; never drops it. */
static void ack_send(struct nrma_ep *ep, struct nrma_conn *conn, uint64_t token)
{
	struct nrma_pending_ack *pending;

	if (!conn || conn->state != NRMA_CONN_CONNECTED)
		return;		/* the sender learns from the broken connection */
	if (nrma_dlist_empty(&ep->proto->pending_acks) &&
	    ack_post(ep, conn, token) != -FI_EAGAIN)
		return;
	pending = malloc(sizeof(*pending));
	if (!pending) {
		NRMA_WARN(FI_LOG_EP_DATA, "out of memory: ACK lost\n");
		return;
	}
	pending->conn = conn;
	pending->token = token;
	nrma_dlist_insert_tail(&pending->link, &ep->proto->pending_acks);
}

void nrma_acks_retry(struct nrma_ep *ep)
{
	struct nrma_dlist *item;

	while ((item = ep->proto->pending_acks.next) != &ep->proto->pending_acks) {
		struct nrma_pending_ack *pending =
			nrma_container_of(item, struct nrma_pending_ack, link);

		if (pending->conn->state == NRMA_CONN_CONNECTED &&
		    ack_post(ep, pending->conn, pending->token) == -FI_EAGAIN)
			return;
		nrma_dlist_remove(item);
		free(pending);
	}
}

/* Delivery of a message into a matched receive */

static void deliver_eager(struct nrma_ep *ep, struct nrma_rx_entry *rx,
			  const struct nrma_hdr *hdr, size_t len,
			  struct nrma_conn *conn)
{
	size_t room = rx_space(rx), copy = len < room ? len : room;
	size_t offset = rx->offset;
	uint64_t flags = hdr->flags & NRMA_HDR_CQ_DATA ? FI_REMOTE_CQ_DATA : 0;
	void *buf = rx_claim(ep, rx, copy);

	nrma_iov_scatter(rx->iov, rx->count, offset, hdr + 1, copy);
	report_recv(ep, rx, buf, copy, flags, hdr->cq_data, hdr->tag,
		    nrma_source_of(ep, conn), len - copy);
	if (hdr->flags & NRMA_HDR_ACK_REQ)
		ack_send(ep, conn, hdr->token);
	rx_done(ep->proto, rx);
}

/* lkeys of a receive's iovs, which rendezvous reads write into. */
static int rx_lkeys(struct nrma_ep *ep, struct nrma_op *op,
		    const struct nrma_rx_entry *rx, uint32_t *lkey)
{
	for (size_t i = 0; i < rx->count; i++) {
		struct nrma_verbs_mr *vmr;
		uint64_t key;
		int ret;

		ret = nrma_op_buf_mr(ep, op, rx->desc[i], &rx->iov[i], FI_RECV,
				     &vmr, &key);
		if (ret)
			return ret;
		lkey[i] = nrma_verbs_mr_lkey(vmr);
	}
	return 0;
}

/*
 * One RDMA read per remote segment, scattered over the receive's iovs.
 * Stops at a full send queue; the rest is posted by a later progress.
 */
static int post_reads(struct nrma_ep *ep, struct nrma_op *op)
{
	struct nrma_sge sge[NRMA_IOV_LIMIT];
	struct iovec piece[NRMA_IOV_LIMIT];
	size_t idx[NRMA_IOV_LIMIT];
	struct nrma_rx_entry *rx = op->rx;

	while (op->seg_done < op->seg_count && op->left) {
		const struct nrma_rndv_seg *seg = &op->seg[op->seg_done];
		size_t take = seg->len < op->left ? seg->len : op->left;
		size_t n = nrma_iov_slice(rx->iov, rx->count, op->rx_offset,
					  take, piece, idx, NRMA_IOV_LIMIT);
		int ret;

		for (size_t j = 0; j < n; j++)
			sge[j] = (struct nrma_sge) {
				.addr = (uintptr_t) piece[j].iov_base,
				.len = piece[j].iov_len,
				.lkey = op->lkey[idx[j]],
			};
		struct nrma_wr wr = {
			.op = NRMA_WR_READ, .sge = sge, .sge_count = n,
			.raddr = seg->addr, .rkey = seg->rkey,
		};

		ret = n ? nrma_op_post(ep->proto, op, &wr, 1) : -FI_EINVAL;
		if (ret)
			return ret;
		rx->reads++;
		op->rx_offset += take;
		op->left -= take;
		op->seg_done++;
	}
	return 0;
}

/* Posts what it can; a read stuck on a full queue waits its turn. */
static void reads_advance(struct nrma_ep *ep, struct nrma_op *op)
{
	int ret = post_reads(ep, op);

	if (ret == -FI_EAGAIN) {
		if (!op->queued)
			nrma_dlist_insert_tail(&op->link,
					       &ep->proto->pending_reads);
		op->queued = true;
		return;
	}
	if (op->queued)
		nrma_dlist_remove(&op->link);
	op->queued = false;
	if (ret) {
		op->error = -ret;
		op->truncated = 0;
	}
	if (!op->wc_pending)
		nrma_read_finish(ep, op);
}

void nrma_reads_retry(struct nrma_ep *ep)
{
	struct nrma_dlist *head = &ep->proto->pending_reads;

	while (!nrma_dlist_empty(head)) {
		struct nrma_op *op =
			nrma_container_of(head->next, struct nrma_op, link);

		reads_advance(ep, op);
		if (op->queued)
			return;		/* the queue is still full */
	}
}

static void deliver_rndv(struct nrma_ep *ep, struct nrma_rx_entry *rx,
			 const struct nrma_hdr *hdr, struct nrma_conn *conn)
{
	const struct nrma_rndv_seg *seg = (const void *) (hdr + 1);
	size_t room = rx_space(rx), len = hdr->len < room ? hdr->len : room;
	size_t offset = rx->offset;
	struct nrma_op *op;
	int ret;

	op = nrma_op_alloc(ep->proto, NRMA_OP_READ, conn);
	if (!op) {	/* cannot happen: reads are bounded by receives */
		NRMA_WARN(FI_LOG_EP_DATA, "no operation for a rendezvous\n");
		return;
	}
	op->rx = rx;
	op->len = len;
	op->truncated = hdr->len - len;
	op->peer_token = hdr->token;
	op->cq_data = hdr->cq_data;
	op->tag = hdr->tag;
	op->rx_flags = hdr->flags & NRMA_HDR_CQ_DATA ? FI_REMOTE_CQ_DATA : 0;
	op->rx_buf = rx_claim(ep, rx, len);
	op->rx_offset = offset;
	op->left = len;
	op->seg_count = hdr->seg_count < NRMA_IOV_LIMIT ? hdr->seg_count :
							  NRMA_IOV_LIMIT;
	memcpy(op->seg, seg, op->seg_count * sizeof(*seg));
	ret = conn ? rx_lkeys(ep, op, rx, op->lkey) : -FI_ECONNRESET;
	if (ret) {
		op->error = -ret;
		op->truncated = 0;
		nrma_read_finish(ep, op);
		return;
	}
	reads_advance(ep, op);
}

void nrma_read_finish(struct nrma_ep *ep, struct nrma_op *op)
{
	struct nrma_rx_entry *rx = op->rx;

	if (op->error) {
		struct fi_cq_err_entry err = {
			.op_context = rx->context,
			.flags = FI_RECV | (rx->flags & FI_TAGGED ? FI_TAGGED : FI_MSG),
			.err = op->error,
			.prov_errno = op->prov_errno,
		};

		if (ep->rx_cq)
			nrma_cq_write_err(ep->rx_cq, &err);
		if (ep->recv_cntr)
			nrma_cntr_inc_err(ep->recv_cntr);
	} else {
		report_recv(ep, rx, op->rx_buf, op->len, op->rx_flags,
			    op->cq_data, op->tag, nrma_source_of(ep, op->conn),
			    op->truncated);
		ack_send(ep, op->conn, op->peer_token);
	}
	rx_done(ep->proto, rx);
	nrma_op_free(ep->proto, op);
}

static void deliver(struct nrma_ep *ep, struct nrma_rx_entry *rx,
		    const struct nrma_hdr *hdr, size_t wc_len,
		    struct nrma_conn *conn)
{
	if (hdr->op == NRMA_HDR_RNDV)
		deliver_rndv(ep, rx, hdr, conn);
	else
		deliver_eager(ep, rx, hdr, wc_len - sizeof(*hdr), conn);
}

/* Whether a message with this tag from this connection may fill rx. */
static bool rx_match(const struct nrma_rx_entry *rx, uint64_t tag,
		     struct nrma_conn *conn)
{
	if ((rx->flags & FI_TAGGED) && ((rx->tag ^ tag) & ~rx->ignore))
		return false;
	return rx->src == FI_ADDR_UNSPEC ||
	       (conn && nrma_conn_fi_addr(conn) == rx->src);
}

static struct nrma_match_queue *queue_of(struct nrma_proto *m, bool tagged)
{
	return tagged ? &m->tagq : &m->msgq;
}

/* The first posted receive this message matches. */
static struct nrma_rx_entry *match_posted(struct nrma_proto *m,
					  const struct nrma_hdr *hdr,
					  struct nrma_conn *conn)
{
	struct nrma_match_queue *q = queue_of(m, hdr->flags & NRMA_HDR_TAGGED);
	struct nrma_dlist *item;

	nrma_dlist_foreach(&q->posted, item) {
		struct nrma_rx_entry *rx =
			nrma_container_of(item, struct nrma_rx_entry, link);

		if (rx_match(rx, hdr->tag, conn))
			return rx;
	}
	return NULL;
}

/* The first held message a new receive matches. */
static struct nrma_unexp *match_unexp(struct nrma_proto *m,
				      const struct nrma_rx_entry *rx)
{
	struct nrma_match_queue *q = queue_of(m, rx->flags & FI_TAGGED);
	struct nrma_dlist *item;

	nrma_dlist_foreach(&q->unexp, item) {
		struct nrma_unexp *unexp =
			nrma_container_of(item, struct nrma_unexp, link);
		const struct nrma_hdr *hdr =
			nrma_bufpool_buf(&m->rx_bufs, unexp->buf);

		if (rx_match(rx, hdr->tag, unexp->conn))
			return unexp;
	}
	return NULL;
}

static void hold_unexpected(struct nrma_ep *ep, const struct nrma_hdr *hdr,
			    uint32_t buf, uint32_t len, struct nrma_conn *conn)
{
	struct nrma_proto *m = ep->proto;
	int64_t index = nrma_bufpool_get(&m->unexp_entries);
	struct nrma_unexp *unexp;

	/* unexp_entries has a slot for every receive buffer */
	unexp = nrma_bufpool_buf(&m->unexp_entries, index);
	unexp->buf = buf;
	unexp->len = len;
	unexp->conn = conn;
	unexp->claimed = false;
	nrma_dlist_insert_tail(&unexp->link,
			       &queue_of(m, hdr->flags & NRMA_HDR_TAGGED)->unexp);
}

void nrma_recv_message(struct nrma_ep *ep, uint32_t buf, uint32_t len,
		       struct nrma_conn *conn)
{
	struct nrma_proto *m = ep->proto;
	const struct nrma_hdr *hdr = nrma_bufpool_buf(&m->rx_bufs, buf);
	struct nrma_rx_entry *rx;
	struct nrma_op *op;

	if (len < sizeof(*hdr)) {
		NRMA_WARN(FI_LOG_EP_DATA, "runt message (%u bytes) dropped\n", len);
		nrma_rx_buf_release(ep, buf);
		return;
	}
	if (hdr->op == NRMA_HDR_ACK) {
		op = nrma_op_by_token(m, hdr->token);
		NRMA_DBG(FI_LOG_EP_DATA, "ACK for %s operation\n",
			 op ? "a waiting" : "no");
		nrma_rx_buf_release(ep, buf);
		if (op) {
			op->ack_pending = false;
			nrma_send_finish(ep, op);
		}
		return;
	}
	rx = match_posted(m, hdr, conn);
	NRMA_DBG(FI_LOG_EP_DATA, "message op %u len %" PRIu64 " flags 0x%x: %s\n",
		 hdr->op, hdr->len, hdr->flags, rx ? "matched" : "unexpected");
	if (!rx) {
		hold_unexpected(ep, hdr, buf, len, conn);
		nrma_srq_refill(ep);
		return;
	}
	deliver(ep, rx, hdr, len, conn);
	nrma_rx_buf_release(ep, buf);
}

/* Posting receives */

static void unexp_free(struct nrma_proto *m, struct nrma_unexp *unexp)
{
	nrma_dlist_remove(&unexp->link);
	unexp->claimed = false;		/* a stale context finds nothing */
	nrma_bufpool_put(&m->unexp_entries,
			 ((char *) unexp - m->unexp_entries.mem) /
			 m->unexp_entries.buf_size);
}

/* Delivers a held message into rx and gives its buffer back. */
static void deliver_held(struct nrma_ep *ep, struct nrma_rx_entry *rx,
			 struct nrma_unexp *unexp)
{
	struct nrma_proto *m = ep->proto;
	uint32_t buf = unexp->buf;

	deliver(ep, rx, nrma_bufpool_buf(&m->rx_bufs, buf), unexp->len,
		unexp->conn);
	unexp_free(m, unexp);
	nrma_rx_buf_release(ep, buf);
}

/* Feeds held messages to a receive that was just posted. */
static void drain_unexpected(struct nrma_ep *ep, struct nrma_rx_entry *rx)
{
	struct nrma_unexp *unexp;

	while (!rx->released && (unexp = match_unexp(ep->proto, rx)))
		deliver_held(ep, rx, unexp);
}

static bool recv_args_valid(const struct nrma_ep *ep,
			    const struct nrma_recv_args *a)
{
	if (a->count > ep->info->rx_attr->iov_limit || (a->count && !a->iov))
		return false;
	/* Only tagged receives look at held messages; FI_CLAIM keeps one
	 * in the context, and FI_DISCARD drops what they found. */
	if ((a->flags & (FI_PEEK | FI_CLAIM | FI_DISCARD)) &&
	    (!(a->flags & FI_TAGGED) || (a->flags & FI_MULTI_RECV) ||
	     ((a->flags & FI_CLAIM) && !a->context) ||
	     ((a->flags & FI_DISCARD) && !(a->flags & (FI_PEEK | FI_CLAIM)))))
		return false;
	return !(a->flags & FI_MULTI_RECV) ||
	       (a->count == 1 && !(a->flags & FI_TAGGED) &&
		(ep->info->caps & FI_MULTI_RECV));
}

static void rx_entry_init(struct nrma_ep *ep, struct nrma_rx_entry *rx,
			  const struct nrma_recv_args *a)
{
	memset(rx, 0, sizeof(*rx));
	memcpy(rx->iov, a->iov, a->count * sizeof(*rx->iov));
	if (a->desc)
		memcpy(rx->desc, a->desc, a->count * sizeof(*rx->desc));
	rx->count = a->count;
	rx->context = a->context;
	rx->tag = a->tag;
	rx->ignore = a->ignore;
	rx->src = ep->info->caps & FI_DIRECTED_RECV ? a->src : FI_ADDR_UNSPEC;
	rx->flags = a->flags | (ep->rx_cq_flags & FI_SELECTIVE_COMPLETION ?
				0 : FI_COMPLETION);
}

static struct nrma_rx_entry *rx_entry_alloc(struct nrma_ep *ep,
					    const struct nrma_recv_args *a)
{
	int64_t index = nrma_bufpool_get(&ep->proto->rx_entries);
	struct nrma_rx_entry *rx;

	if (index < 0)
		return NULL;
	rx = nrma_bufpool_buf(&ep->proto->rx_entries, index);
	rx_entry_init(ep, rx, a);
	return rx;
}

static ssize_t recv_post(struct nrma_ep *ep, const struct nrma_recv_args *a)
{
	struct nrma_rx_entry *rx = rx_entry_alloc(ep, a);

	if (!rx)
		return -FI_EAGAIN;
	nrma_dlist_insert_tail(&rx->link,
			       &queue_of(ep->proto, a->flags & FI_TAGGED)->posted);
	drain_unexpected(ep, rx);
	return 0;
}

/* FI_PEEK, FI_CLAIM and FI_DISCARD: held messages looked at, kept, dropped */

/* What a peek found, or what a discarded claim had: no data moves. */
static void report_held(struct nrma_ep *ep, void *context,
			const struct nrma_hdr *hdr, struct nrma_conn *conn,
			size_t len)
{
	struct nrma_cq_entry entry = {
		.comp = { .op_context = context, .len = len,
			  .flags = FI_RECV | FI_TAGGED |
				   (hdr->flags & NRMA_HDR_CQ_DATA ?
				    FI_REMOTE_CQ_DATA : 0),
			  .data = hdr->cq_data, .tag = hdr->tag },
		.src_addr = nrma_source_of(ep, conn),
	};

	if (ep->rx_cq)
		nrma_cq_write(ep->rx_cq, &entry);
}

/* A dropped message's sender may wait for its ACK: it gets one. */
static void unexp_discard(struct nrma_ep *ep, struct nrma_unexp *unexp)
{
	const struct nrma_hdr *hdr = nrma_bufpool_buf(&ep->proto->rx_bufs,
						      unexp->buf);
	uint32_t buf = unexp->buf;

	if (hdr->op == NRMA_HDR_RNDV || (hdr->flags & NRMA_HDR_ACK_REQ))
		ack_send(ep, unexp->conn, hdr->token);
	unexp_free(ep->proto, unexp);
	nrma_rx_buf_release(ep, buf);
}

static ssize_t recv_peek(struct nrma_ep *ep, const struct nrma_recv_args *a)
{
	struct nrma_proto *m = ep->proto;
	const struct nrma_hdr *hdr;
	struct nrma_rx_entry probe;
	struct nrma_unexp *unexp;

	nrma_proto_progress(ep);	/* look at what has arrived by now */
	rx_entry_init(ep, &probe, a);
	unexp = match_unexp(m, &probe);
	if (!unexp) {
		struct fi_cq_err_entry err = {
			.op_context = a->context, .flags = FI_RECV | FI_TAGGED,
			.tag = a->tag, .err = FI_ENOMSG,
		};

		if (ep->rx_cq)
			nrma_cq_write_err(ep->rx_cq, &err);
		return 0;
	}
	hdr = nrma_bufpool_buf(&m->rx_bufs, unexp->buf);
	report_held(ep, a->context, hdr, unexp->conn, hdr->len);
	if (a->flags & FI_DISCARD) {
		unexp_discard(ep, unexp);
	} else if (a->flags & FI_CLAIM) {
		nrma_dlist_remove(&unexp->link);
		unexp->claimed = true;
		((struct fi_context *) a->context)->internal[0] = unexp;
	}
	return 0;
}

/* The message an FI_PEEK | FI_CLAIM kept in this context, or NULL. */
static struct nrma_unexp *claimed_in(struct nrma_proto *m, void *context)
{
	uintptr_t unexp = (uintptr_t) ((struct fi_context *) context)->internal[0];
	uintptr_t base = (uintptr_t) m->unexp_entries.mem;
	size_t size = m->unexp_entries.buf_size;

	if (unexp < base || (unexp - base) % size ||
	    (unexp - base) / size >= m->unexp_entries.count ||
	    !((struct nrma_unexp *) unexp)->claimed)
		return NULL;
	return (struct nrma_unexp *) unexp;
}

static ssize_t recv_claimed(struct nrma_ep *ep, const struct nrma_recv_args *a)
{
	struct nrma_unexp *unexp = claimed_in(ep->proto, a->context);
	struct nrma_rx_entry *rx = NULL;

	if (!unexp)
		return -FI_EINVAL;	/* nothing was claimed with it */
	if (!(a->flags & FI_DISCARD)) {
		rx = rx_entry_alloc(ep, a);
		if (!rx)
			return -FI_EAGAIN;
	}
	((struct fi_context *) a->context)->internal[0] = NULL;
	if (!rx) {
		report_held(ep, a->context,
			    nrma_bufpool_buf(&ep->proto->rx_bufs, unexp->buf),
			    unexp->conn, 0);
		unexp_discard(ep, unexp);
		return 0;
	}
	nrma_dlist_init(&rx->link);	/* on no queue: it takes this one */
	deliver_held(ep, rx, unexp);
	return 0;
}

ssize_t nrma_proto_recv(struct nrma_ep *ep, const struct nrma_recv_args *a)
{
	ssize_t ret;

	if (!recv_args_valid(ep, a))
		return -FI_EINVAL;
	pthread_mutex_lock(&ep->lock);
	if (!ep->enabled)
		ret = -FI_EOPBADSTATE;
	else if (a->flags & FI_PEEK)
		ret = recv_peek(ep, a);
	else if (a->flags & FI_CLAIM)
		ret = recv_claimed(ep, a);
	else
		ret = recv_post(ep, a);
	pthread_mutex_unlock(&ep->lock);
	return ret;
}

static bool cancel_in(struct nrma_ep *ep, struct nrma_dlist *posted,
		      void *context)
{
	struct nrma_dlist *item;

	nrma_dlist_foreach(posted, item) {
		struct nrma_rx_entry *rx =
			nrma_container_of(item, struct nrma_rx_entry, link);
		struct fi_cq_err_entry err = {
			.op_context = context,
			.flags = FI_RECV | (rx->flags & (FI_MULTI_RECV | FI_TAGGED)) |
				 (rx->flags & FI_TAGGED ? 0 : FI_MSG),
			.tag = rx->tag,
			.err = FI_ECANCELED,
		};

		if (rx->context != context)
			continue;
		nrma_dlist_remove(&rx->link);
		rx->released = true;
		if (ep->rx_cq)
			nrma_cq_write_err(ep->rx_cq, &err);
		if (ep->recv_cntr)
			nrma_cntr_inc_err(ep->recv_cntr);
		rx_done(ep->proto, rx);
		return true;
	}
	return false;
}

/* Called with ep->lock held. */
ssize_t nrma_proto_cancel(struct nrma_ep *ep, void *context)
{
	struct nrma_proto *m = ep->proto;

	return cancel_in(ep, &m->msgq.posted, context) ||
	       cancel_in(ep, &m->tagq.posted, context) ? 0 : -FI_ENOENT;
}
