/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The message protocol behind fi_msg and fi_tagged, over the endpoint's
 * RC queue pairs.
 *
 * Messages up to eager_size are copied into a registered bounce buffer
 * and sent into one of the endpoint's shared receive buffers.  Larger
 * ones go by rendezvous: the sender registers its buffer and sends its
 * address; the receiver reads the data straight into the posted receive
 * buffer with RDMA read, then tells the sender with an ACK.  An eager
 * message sent with FI_DELIVERY_COMPLETE also asks for an ACK, which the
 * receiver sends once the data is in the application's buffer.
 *
 * A message with no posted receive waits in its receive buffer on the
 * unexpected list.  Buffers are replaced while the pool lasts; then the
 * shared receive queue runs dry and RC's receiver-not-ready retries
 * (infinite) slow the senders down.  Nothing is dropped.
 *
 * Tagged and untagged messages have their own posted and unexpected
 * queues; each is matched in arrival order (FI_ORDER_SAS).
 *
 * The wire format is in host byte order: peers must share it.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "nrma.h"
#include "nrma_iov.h"
#include "nrma_verbs.h"

#define NRMA_WR_RECV		(1ULL << 63)	/* wr_id of a receive buffer */
#define NRMA_POLL_BATCH		16

enum nrma_hdr_op {
	NRMA_HDR_EAGER = 1,
	NRMA_HDR_RNDV,
	NRMA_HDR_ACK,
};

#define NRMA_HDR_CQ_DATA	(1 << 0)
#define NRMA_HDR_ACK_REQ	(1 << 1)
#define NRMA_HDR_TAGGED		(1 << 2)

struct nrma_hdr {
	uint8_t op;
	uint8_t flags;
	uint8_t seg_count;		/* rendezvous segments that follow */
	uint8_t reserved;
	uint32_t cq_data;
	uint64_t token;			/* the sender's operation, for ACK */
	uint64_t len;			/* message length */
	uint64_t tag;
};

struct nrma_rndv_seg {
	uint64_t addr;
	uint64_t len;
	uint32_t rkey;
	uint32_t reserved;
};

enum nrma_op_kind {
	NRMA_OP_SEND,		/* an application send */
	NRMA_OP_ACK,		/* our ACK of a peer's message */
	NRMA_OP_READ,		/* rendezvous read into a posted receive */
	NRMA_OP_RMA,		/* an application RMA read or write */
};

struct nrma_rx_entry;

struct nrma_op {
	enum nrma_op_kind kind;
	uint32_t gen;			/* tells a stale token from a live one */
	struct nrma_conn *conn;
	void *context;
	uint64_t flags;			/* completion flags, FI_COMPLETION */
	size_t len;
	int64_t buf;			/* bounce buffer, or -1 */
	unsigned int wc_pending;	/* posted work requests not yet done */
	bool ack_pending;		/* waiting for the peer's ACK */
	int error;			/* first failure, positive */
	int prov_errno;			/* its ibv_wc_status */
	struct nrma_verbs_mr *mr[NRMA_IOV_LIMIT];
	size_t mr_count;
	/* NRMA_OP_READ: segments not yet read wait on pending_reads */
	struct nrma_dlist link;
	struct nrma_rndv_seg seg[NRMA_IOV_LIMIT];
	size_t seg_count;
	size_t seg_done;
	size_t rx_offset;		/* where the next segment lands */
	size_t left;			/* bytes still to read */
	uint32_t lkey[NRMA_IOV_LIMIT];
	bool queued;
	/* NRMA_OP_RMA: a small read lands in the bounce buffer first */
	struct iovec iov[NRMA_IOV_LIMIT];
	size_t iov_count;
	struct nrma_rx_entry *rx;
	uint64_t peer_token;
	bool peer_wants_ack;
	uint32_t cq_data;
	uint64_t tag;
	uint64_t rx_flags;
	void *rx_buf;
	size_t truncated;
};

struct nrma_rx_entry {
	struct nrma_dlist link;
	struct iovec iov[NRMA_IOV_LIMIT];
	void *desc[NRMA_IOV_LIMIT];
	size_t count;
	void *context;
	uint64_t flags;
	uint64_t tag;
	uint64_t ignore;
	fi_addr_t src;			/* FI_DIRECTED_RECV, else FI_ADDR_UNSPEC */
	size_t offset;			/* FI_MULTI_RECV: bytes used */
	size_t reads;			/* rendezvous reads landing in it */
	bool released;			/* off the posted list */
};

struct nrma_unexp {
	struct nrma_dlist link;
	uint32_t buf;
	uint32_t len;
	struct nrma_conn *conn;
};

/* Receives waiting for messages, and messages waiting for receives. */
struct nrma_match_queue {
	struct nrma_dlist posted;	/* struct nrma_rx_entry */
	struct nrma_dlist unexp;	/* struct nrma_unexp */
};

struct nrma_pending_ack {
	struct nrma_dlist link;
	struct nrma_conn *conn;
	uint64_t token;
};

struct nrma_proto {
	size_t eager_size;
	size_t buf_size;
	struct nrma_bufpool tx_bufs;
	struct nrma_bufpool rx_bufs;
	struct nrma_verbs_mr *tx_mr;
	struct nrma_verbs_mr *rx_mr;
	struct nrma_bufpool ops;	/* struct nrma_op */
	struct nrma_bufpool rx_entries;	/* struct nrma_rx_entry */
	struct nrma_bufpool unexp_entries;
	size_t sends;			/* application sends in flight */
	size_t sends_max;
	size_t srq_posted;
	size_t srq_target;
	struct nrma_match_queue msgq;
	struct nrma_match_queue tagq;
	struct nrma_dlist pending_acks;
	struct nrma_dlist pending_reads;	/* struct nrma_op */
	size_t acks;			/* ACKs posted, not yet completed */
	uint64_t *scratch;		/* where notification atomics fetch to */
	struct nrma_verbs_mr *scratch_mr;
	uint32_t gen;
};

/* Operations */

static struct nrma_op *op_at(struct nrma_proto *m, uint32_t index)
{
	return nrma_bufpool_buf(&m->ops, index);
}

static uint32_t op_index(const struct nrma_proto *m,
			 const struct nrma_op *op)
{
	return ((const char *) op - m->ops.mem) / m->ops.buf_size;
}

static uint64_t op_token(const struct nrma_proto *m,
			 const struct nrma_op *op)
{
	return (uint64_t) op->gen << 32 | op_index(m, op);
}

static struct nrma_op *op_alloc(struct nrma_proto *m,
				enum nrma_op_kind kind, struct nrma_conn *conn)
{
	int64_t index = nrma_bufpool_get(&m->ops);
	struct nrma_op *op;

	if (index < 0)
		return NULL;
	op = op_at(m, index);
	memset(op, 0, sizeof(*op));
	op->kind = kind;
	op->gen = ++m->gen;
	op->conn = conn;
	op->buf = -1;
	return op;
}

static void op_free(struct nrma_proto *m, struct nrma_op *op)
{
	for (size_t i = 0; i < op->mr_count; i++)
		nrma_verbs_mr_dereg(op->mr[i]);
	if (op->buf >= 0)
		nrma_bufpool_put(&m->tx_bufs, op->buf);
	op->gen = 0;		/* no token matches a free operation */
	nrma_bufpool_put(&m->ops, op_index(m, op));
}

/* The op a peer's ACK names, if it is still waiting for one. */
static struct nrma_op *op_by_token(struct nrma_proto *m, uint64_t token)
{
	uint32_t index = (uint32_t) token;
	struct nrma_op *op;

	if (index >= m->ops.count)
		return NULL;
	op = op_at(m, index);
	return op->gen == token >> 32 && op->ack_pending ? op : NULL;
}

static struct nrma_sge tx_buf_sge(const struct nrma_proto *m,
				  const struct nrma_op *op, size_t len)
{
	return (struct nrma_sge) {
		.addr = (uintptr_t) nrma_bufpool_buf(&m->tx_bufs, op->buf),
		.len = len,
		.lkey = nrma_verbs_mr_lkey(m->tx_mr),
	};
}

/* Posts an operation's work requests if its queue pair has room for all. */
static int op_post(struct nrma_proto *m, struct nrma_op *op,
		   struct nrma_wr *wr, size_t count)
{
	int ret;

	if (op->conn->state != NRMA_CONN_CONNECTED)
		return -FI_ECONNRESET;
	if (op->conn->sq_free < count)
		return -FI_EAGAIN;
	for (size_t i = 0; i < count; i++)
		wr[i].wr_id = op_index(m, op);
	ret = nrma_verbs_post(op->conn->qp, wr, count);
	if (ret)
		return ret;
	op->conn->sq_free -= count;
	op->wc_pending += count;
	return 0;
}

/* Completions */

static struct nrma_cntr *tx_cntr(const struct nrma_ep *ep, uint64_t flags)
{
	if (flags & FI_READ)
		return ep->read_cntr;
	return flags & FI_WRITE ? ep->write_cntr : ep->send_cntr;
}

/* The completion of a send or an RMA operation we initiated. */
static void report_tx(struct nrma_ep *ep, struct nrma_op *op)
{
	struct nrma_cntr *cntr = tx_cntr(ep, op->flags);

	if (op->error) {
		struct fi_cq_err_entry err = {
			.op_context = op->context,
			.flags = op->flags & ~FI_COMPLETION,
			.err = op->error,
			.prov_errno = op->prov_errno,
		};

		if (ep->tx_cq)
			nrma_cq_write_err(ep->tx_cq, &err);
		if (cntr)
			nrma_cntr_inc_err(cntr);
		return;
	}
	if (ep->tx_cq && (op->flags & FI_COMPLETION)) {
		struct nrma_cq_entry entry = {
			.comp = { .op_context = op->context,
				  .flags = op->flags & ~FI_COMPLETION },
			.src_addr = FI_ADDR_NOTAVAIL,
		};

		nrma_cq_write(ep->tx_cq, &entry);
	}
	if (cntr)
		nrma_cntr_inc(cntr);
}

static void send_finish(struct nrma_ep *ep, struct nrma_op *op)
{
	if (op->wc_pending || op->ack_pending)
		return;
	report_tx(ep, op);
	ep->proto->sends--;
	op_free(ep->proto, op);
}

static fi_addr_t source_of(struct nrma_ep *ep, struct nrma_conn *conn)
{
	if (!(ep->info->caps & FI_SOURCE) || !conn)
		return FI_ADDR_NOTAVAIL;
	return nrma_conn_fi_addr(conn);
}

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
static void srq_refill(struct nrma_ep *ep)
{
	struct nrma_proto *m = ep->proto;

	while (m->srq_posted < m->srq_target) {
		int64_t buf = nrma_bufpool_get(&m->rx_bufs);

		if (buf < 0 || srq_post(ep, buf))
			return;
	}
}

static void rx_buf_release(struct nrma_ep *ep, uint32_t buf)
{
	nrma_bufpool_put(&ep->proto->rx_bufs, buf);
	srq_refill(ep);
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

	op = op_alloc(m, NRMA_OP_ACK, conn);
	if (!op)
		return -FI_EAGAIN;
	op->buf = nrma_bufpool_get(&m->tx_bufs);
	if (op->buf < 0) {
		op_free(m, op);
		return -FI_EAGAIN;
	}
	hdr = nrma_bufpool_buf(&m->tx_bufs, op->buf);
	*hdr = (struct nrma_hdr) { .op = NRMA_HDR_ACK, .token = token };
	sge = tx_buf_sge(m, op, sizeof(*hdr));
	wr = (struct nrma_wr) { .op = NRMA_WR_SEND, .sge = &sge, .sge_count = 1 };
	ret = op_post(m, op, &wr, 1);
	if (ret)
		op_free(m, op);
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

static void acks_retry(struct nrma_ep *ep)
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
		    source_of(ep, conn), len - copy);
	if (hdr->flags & NRMA_HDR_ACK_REQ)
		ack_send(ep, conn, hdr->token);
	rx_done(ep->proto, rx);
}

/*
 * The registration the device uses for an application buffer: its
 * descriptor's, if that allows the access (without FI_MR_LOCAL an
 * application may pass any descriptor), else one the operation makes and
 * holds until it completes.  The device may always read a write's source.
 */
static int op_buf_mr(struct nrma_ep *ep, struct nrma_op *op,
		     struct nrma_mr *desc, const struct iovec *iov,
		     uint64_t access, struct nrma_verbs_mr **vmr, uint64_t *key)
{
	uint64_t needed = access == FI_WRITE ? 0 : access;
	int ret;

	if (desc && (desc->access & needed) == needed) {
		*vmr = desc->verbs;
		*key = desc->mr_fid.key;
		return 0;
	}
	ret = nrma_verbs_mr_reg(ep->domain->verbs, iov->iov_base, iov->iov_len,
				access, &op->mr[op->mr_count], key);
	if (ret)
		return ret;
	*vmr = op->mr[op->mr_count++];
	return 0;
}

/* lkeys of a receive's iovs, which rendezvous reads write into. */
static int rx_lkeys(struct nrma_ep *ep, struct nrma_op *op,
		    const struct nrma_rx_entry *rx, uint32_t *lkey)
{
	for (size_t i = 0; i < rx->count; i++) {
		struct nrma_verbs_mr *vmr;
		uint64_t key;
		int ret;

		ret = op_buf_mr(ep, op, rx->desc[i], &rx->iov[i], FI_RECV, &vmr,
				&key);
		if (ret)
			return ret;
		lkey[i] = nrma_verbs_mr_lkey(vmr);
	}
	return 0;
}

static void read_finish(struct nrma_ep *ep, struct nrma_op *op);

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

		ret = n ? op_post(ep->proto, op, &wr, 1) : -FI_EINVAL;
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
		read_finish(ep, op);
}

static void reads_retry(struct nrma_ep *ep)
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

	op = op_alloc(ep->proto, NRMA_OP_READ, conn);
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
		read_finish(ep, op);
		return;
	}
	reads_advance(ep, op);
}

static void read_finish(struct nrma_ep *ep, struct nrma_op *op)
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
			    op->cq_data, op->tag, source_of(ep, op->conn),
			    op->truncated);
		ack_send(ep, op->conn, op->peer_token);
	}
	rx_done(ep->proto, rx);
	op_free(ep->proto, op);
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
	nrma_dlist_insert_tail(&unexp->link,
			       &queue_of(m, hdr->flags & NRMA_HDR_TAGGED)->unexp);
}

static void on_message(struct nrma_ep *ep, uint32_t buf, uint32_t len,
		       struct nrma_conn *conn)
{
	struct nrma_proto *m = ep->proto;
	const struct nrma_hdr *hdr = nrma_bufpool_buf(&m->rx_bufs, buf);
	struct nrma_rx_entry *rx;
	struct nrma_op *op;

	if (len < sizeof(*hdr)) {
		NRMA_WARN(FI_LOG_EP_DATA, "runt message (%u bytes) dropped\n", len);
		rx_buf_release(ep, buf);
		return;
	}
	if (hdr->op == NRMA_HDR_ACK) {
		op = op_by_token(m, hdr->token);
		NRMA_DBG(FI_LOG_EP_DATA, "ACK for %s operation\n",
			 op ? "a waiting" : "no");
		rx_buf_release(ep, buf);
		if (op) {
			op->ack_pending = false;
			send_finish(ep, op);
		}
		return;
	}
	rx = match_posted(m, hdr, conn);
	NRMA_DBG(FI_LOG_EP_DATA, "message op %u len %" PRIu64 " flags 0x%x: %s\n",
		 hdr->op, hdr->len, hdr->flags, rx ? "matched" : "unexpected");
	if (!rx) {
		hold_unexpected(ep, hdr, buf, len, conn);
		srq_refill(ep);
		return;
	}
	deliver(ep, rx, hdr, len, conn);
	rx_buf_release(ep, buf);
}

/* Work completions */

static void rma_finish(struct nrma_ep *ep, struct nrma_op *op);

static void on_op_wc(struct nrma_ep *ep, const struct nrma_wc *wc)
{
	struct nrma_op *op = op_at(ep->proto, (uint32_t) wc->wr_id);

	op->conn->sq_free++;
	if (wc->status && !op->error) {
		op->error = nrma_verbs_status_errno(wc->status);
		op->prov_errno = wc->status;
		nrma_conn_fail(op->conn, -op->error);
	}
	op->wc_pending--;
	switch (op->kind) {
	case NRMA_OP_SEND:
		if (op->error)
			op->ack_pending = false;
		/* the payload is in the peer's memory: the bounce buffer is free */
		if (op->buf >= 0) {
			nrma_bufpool_put(&ep->proto->tx_bufs, op->buf);
			op->buf = -1;
		}
		send_finish(ep, op);
		break;
	case NRMA_OP_ACK:
		ep->proto->acks--;
		op_free(ep->proto, op);
		break;
	case NRMA_OP_READ:
		op->rx->reads--;
		if (!op->wc_pending && !op->queued)
			read_finish(ep, op);
		break;
	case NRMA_OP_RMA:
		rma_finish(ep, op);
		break;
	}
}

static void rma_finish(struct nrma_ep *ep, struct nrma_op *op)
{
	if (op->wc_pending)
		return;
	if (!op->error && op->buf >= 0 && (op->flags & FI_READ))
		nrma_iov_scatter(op->iov, op->iov_count, 0,
				 nrma_bufpool_buf(&ep->proto->tx_bufs, op->buf),
				 op->len);
	report_tx(ep, op);
	ep->proto->sends--;
	op_free(ep->proto, op);
}

/* An RDMA write with immediate data: the data is in place already. */
static void on_write_data(struct nrma_ep *ep, const struct nrma_wc *wc,
			  struct nrma_conn *conn)
{
	struct nrma_cq_entry entry = {
		.comp = { .flags = FI_RMA | FI_REMOTE_WRITE | FI_REMOTE_CQ_DATA,
			  .len = wc->len, .data = wc->imm },
		.src_addr = source_of(ep, conn),
	};

	if (ep->rx_cq)
		nrma_cq_write(ep->rx_cq, &entry);
}

static void on_wc(struct nrma_ep *ep, const struct nrma_wc *wc)
{
	struct nrma_conn *conn;
	uint32_t buf;

	if (!(wc->wr_id & NRMA_WR_RECV)) {
		on_op_wc(ep, wc);
		return;
	}
	buf = (uint32_t) wc->wr_id;
	ep->proto->srq_posted--;
	if (wc->status) {
		rx_buf_release(ep, buf);
		return;
	}
	conn = nrma_conn_by_qp(ep, wc->qp_num);
	if (conn)
		nrma_conn_heard(conn);
	if (wc->op == NRMA_WC_RECV_IMM) {
		rx_buf_release(ep, buf);
		on_write_data(ep, wc, conn);
		return;
	}
	on_message(ep, buf, wc->len, conn);
}

static size_t poll_budget(struct nrma_ep *ep)
{
	size_t budget = NRMA_POLL_BATCH, room;

	/* Stop reaping the device while the application's CQs are full. */
	if (ep->tx_cq && (room = nrma_cq_room(ep->tx_cq)) < budget)
		budget = room;
	if (ep->rx_cq && (room = nrma_cq_room(ep->rx_cq)) < budget)
		budget = room;
	return budget;
}

/* Returns how many work completions it handled. Called with ep->lock. */
int nrma_proto_progress(struct nrma_ep *ep)
{
	struct nrma_wc wc[NRMA_POLL_BATCH];
	int n;

	nrma_verbs_ep_ack_events(ep->verbs);
	n = nrma_verbs_poll(ep->verbs, wc, poll_budget(ep));
	for (int i = 0; i < n; i++)
		on_wc(ep, &wc[i]);
	reads_retry(ep);
	acks_retry(ep);
	return n > 0 ? n : 0;
}

/*
 * ACKs we owe peers tell them their sends completed: before an endpoint
 * closes, let them leave, for a bounded time.
 */
#define NRMA_LINGER_MS	1000

void nrma_proto_linger(struct nrma_ep *ep)
{
	struct nrma_proto *m = ep->proto;
	struct timespec start;

	clock_gettime(CLOCK_MONOTONIC, &start);
	while ((m->acks || !nrma_dlist_empty(&m->pending_acks)) &&
	       nrma_timeout_left(&start, NRMA_LINGER_MS))
		nrma_proto_progress(ep);
}

/* Sends waiting for ACKs over a connection that failed will never get them. */
void nrma_proto_conn_failed(struct nrma_ep *ep, struct nrma_conn *conn)
{
	struct nrma_proto *m = ep->proto;

	for (size_t i = 0; i < m->ops.count; i++) {
		struct nrma_op *op = op_at(m, i);

		if (!op->gen || op->conn != conn || op->kind != NRMA_OP_SEND ||
		    !op->ack_pending)
			continue;
		op->ack_pending = false;
		op->error = FI_ECONNRESET;
		send_finish(ep, op);
	}
}

/* Sending */

static size_t fill_eager(struct nrma_op *op, struct nrma_hdr *hdr,
			 const struct nrma_send_args *a)
{
	hdr->op = NRMA_HDR_EAGER;
	if (a->flags & FI_DELIVERY_COMPLETE) {
		hdr->flags |= NRMA_HDR_ACK_REQ;
		op->ack_pending = true;
	}
	nrma_iov_gather(hdr + 1, a->iov, a->count, 0, hdr->len);
	return sizeof(*hdr) + hdr->len;
}

/* Registers what the peer will read, unless a descriptor allows it. */
static int fill_rndv(struct nrma_ep *ep, struct nrma_op *op,
		     struct nrma_hdr *hdr, const struct nrma_send_args *a)
{
	struct nrma_rndv_seg *seg = (void *) (hdr + 1);
	int ret;

	hdr->op = NRMA_HDR_RNDV;
	for (size_t i = 0; i < a->count; i++) {
		struct nrma_verbs_mr *vmr;
		uint64_t key;

		if (!a->iov[i].iov_len)
			continue;	/* nothing to read, nothing to register */
		ret = op_buf_mr(ep, op, a->desc ? a->desc[i] : NULL, &a->iov[i],
				FI_REMOTE_READ, &vmr, &key);
		if (ret)
			return ret;
		seg[hdr->seg_count++] = (struct nrma_rndv_seg) {
			.addr = (uintptr_t) a->iov[i].iov_base,
			.len = a->iov[i].iov_len,
			.rkey = (uint32_t) key,
		};
	}
	op->ack_pending = true;
	return sizeof(*hdr) + hdr->seg_count * sizeof(*seg);
}

static uint64_t tx_comp_flags(const struct nrma_ep *ep, uint64_t flags)
{
	if (flags & FI_INJECT)
		return 0;
	return !(ep->tx_cq_flags & FI_SELECTIVE_COMPLETION) ||
	       (flags & FI_COMPLETION) ? FI_COMPLETION : 0;
}

static ssize_t post_send(struct nrma_ep *ep, struct nrma_conn *conn,
			 const struct nrma_send_args *a, size_t msg_len)
{
	struct nrma_proto *m = ep->proto;
	struct nrma_hdr *hdr;
	struct nrma_sge sge;
	struct nrma_wr wr;
	struct nrma_op *op;
	int len;

	if (m->sends == m->sends_max)
		return -FI_EAGAIN;
	op = op_alloc(m, NRMA_OP_SEND, conn);
	if (!op)
		return -FI_EAGAIN;
	op->buf = nrma_bufpool_get(&m->tx_bufs);
	if (op->buf < 0) {
		op_free(m, op);
		return -FI_EAGAIN;
	}
	op->context = a->context;
	op->len = msg_len;
	op->flags = FI_SEND | (a->flags & FI_TAGGED ? FI_TAGGED : FI_MSG) |
		    tx_comp_flags(ep, a->flags);
	hdr = nrma_bufpool_buf(&m->tx_bufs, op->buf);
	*hdr = (struct nrma_hdr) { .len = msg_len, .token = op_token(m, op),
				   .tag = a->tag };
	if (a->flags & FI_TAGGED)
		hdr->flags |= NRMA_HDR_TAGGED;
	if (a->flags & FI_REMOTE_CQ_DATA) {
		hdr->flags |= NRMA_HDR_CQ_DATA;
		hdr->cq_data = (uint32_t) a->data;
	}
	len = msg_len <= m->eager_size ? (int) fill_eager(op, hdr, a) :
					 fill_rndv(ep, op, hdr, a);
	if (len < 0) {
		op_free(m, op);
		return len;
	}
	sge = tx_buf_sge(m, op, len);
	wr = (struct nrma_wr) { .op = NRMA_WR_SEND, .sge = &sge, .sge_count = 1 };
	len = op_post(m, op, &wr, 1);
	if (len) {
		op_free(m, op);
		return len;
	}
	m->sends++;
	return 0;
}

/* The connection to dest, once it is up.  Called with ep->lock held. */
static int ep_connection(struct nrma_ep *ep, fi_addr_t dest,
			 struct nrma_conn **conn)
{
	int ret;

	if (!ep->enabled)
		return -FI_EOPBADSTATE;
	ret = nrma_conn_get(ep, dest, conn);
	if (ret == -FI_EAGAIN) {
		nrma_cm_progress(ep);
		ret = nrma_conn_get(ep, dest, conn);
	}
	return ret;
}

/* The length of what an operation transmits, or -FI_EINVAL at once. */
static ssize_t tx_len(const struct nrma_ep *ep, const struct iovec *iov,
		      size_t count, uint64_t flags)
{
	const struct fi_info *info = ep->info;
	size_t len;

	if (count > info->tx_attr->iov_limit || (count && !iov))
		return -FI_EINVAL;
	len = nrma_iov_len(iov, count);
	if (len > info->ep_attr->max_msg_size ||
	    ((flags & FI_INJECT) && len > info->tx_attr->inject_size))
		return -FI_EINVAL;
	return len;
}

ssize_t nrma_proto_send(struct nrma_ep *ep, const struct nrma_send_args *a)
{
	struct nrma_conn *conn;
	ssize_t len = tx_len(ep, a->iov, a->count, a->flags);
	ssize_t ret;

	if (len < 0)
		return len;
	pthread_mutex_lock(&ep->lock);
	ret = ep_connection(ep, a->dest, &conn);
	if (!ret) {
		ret = post_send(ep, conn, a, len);
		if (ret == -FI_EAGAIN)
			nrma_proto_progress(ep);
	}
	pthread_mutex_unlock(&ep->lock);
	return ret;
}

/* RMA */

/* Where the data comes from or lands: a bounce buffer, or the iovs. */
static int rma_local(struct nrma_ep *ep, struct nrma_op *op,
		     const struct nrma_rma_args *a, struct nrma_sge *sge)
{
	struct nrma_proto *m = ep->proto;
	uint64_t access = a->flags & FI_READ ? FI_READ : FI_WRITE;
	size_t n = 0;

	if (op->len <= m->eager_size) {
		op->buf = nrma_bufpool_get(&m->tx_bufs);
		if (op->buf < 0)
			return -FI_EAGAIN;
		if (access == FI_WRITE)
			nrma_iov_gather(nrma_bufpool_buf(&m->tx_bufs, op->buf),
					a->iov, a->count, 0, op->len);
		memcpy(op->iov, a->iov, a->count * sizeof(*a->iov));
		op->iov_count = a->count;
		sge[0] = tx_buf_sge(m, op, op->len);
		return 1;
	}
	for (size_t i = 0; i < a->count; i++) {
		struct nrma_verbs_mr *vmr;
		uint64_t key;
		int ret;

		if (!a->iov[i].iov_len)
			continue;
		ret = op_buf_mr(ep, op, a->desc ? a->desc[i] : NULL, &a->iov[i],
				access, &vmr, &key);
		if (ret)
			return ret;
		sge[n++] = (struct nrma_sge) {
			.addr = (uintptr_t) a->iov[i].iov_base,
			.len = a->iov[i].iov_len,
			.lkey = nrma_verbs_mr_lkey(vmr),
		};
	}
	return n;
}

/*
 * Bumps a word of a notification cell at the peer.  It follows its data
 * operation on the same queue pair: RC executes a write before it, but a
 * read only once fenced.
 */
static struct nrma_wr notify_wr(uint32_t cell_rkey,
				const struct nrma_sge *scratch, bool after_read)
{
	return (struct nrma_wr) {
		.op = NRMA_WR_FETCH_ADD,
		.sge = scratch,
		.sge_count = 1,
		.raddr = after_read ? NRMA_NOTIFY_READ_ADDR :
				      NRMA_NOTIFY_WRITE_ADDR,
		.rkey = cell_rkey,
		.add = 1,
		.fence = after_read || nrma_params.notify_fence_always,
	};
}

static size_t rma_wrs(const struct nrma_op *op,
		      const struct nrma_rma_args *a, const struct nrma_sge *sge,
		      size_t sge_count, const struct nrma_sge *scratch,
		      struct nrma_wr *wr)
{
	bool read = a->flags & FI_READ;
	uint32_t rkey, cell_rkey;
	size_t n = 0;

	nrma_notify_key_decode(a->key, &rkey, &cell_rkey);
	wr[n++] = (struct nrma_wr) {
		.op = read ? NRMA_WR_READ : a->flags & FI_REMOTE_CQ_DATA ?
			NRMA_WR_WRITE_IMM : NRMA_WR_WRITE,
		.sge = sge, .sge_count = sge_count,
		.raddr = a->addr, .rkey = rkey, .imm = (uint32_t) a->data,
		.fence = a->flags & FI_FENCE,
	};
	if (op->conn->notify_rkey)
		wr[n++] = notify_wr(op->conn->notify_rkey, scratch, read);
	if (cell_rkey)
		wr[n++] = notify_wr(cell_rkey, scratch, read);
	/* A zero-byte read returns only once the write before it is placed. */
	if (!read && n == 1 && (a->flags & FI_DELIVERY_COMPLETE))
		wr[n++] = (struct nrma_wr) { .op = NRMA_WR_READ,
					     .raddr = a->addr, .rkey = rkey };
	return n;
}

static ssize_t post_rma(struct nrma_ep *ep, struct nrma_conn *conn,
			const struct nrma_rma_args *a, size_t len)
{
	struct nrma_proto *m = ep->proto;
	struct nrma_sge sge[NRMA_IOV_LIMIT], scratch = {
		.addr = (uintptr_t) m->scratch, .len = sizeof(*m->scratch),
		.lkey = nrma_verbs_mr_lkey(m->scratch_mr),
	};
	struct nrma_wr wr[3];
	struct nrma_op *op;
	int n;

	if (m->sends == m->sends_max)
		return -FI_EAGAIN;
	op = op_alloc(m, NRMA_OP_RMA, conn);
	if (!op)
		return -FI_EAGAIN;
	op->context = a->context;
	op->len = len;
	op->flags = FI_RMA | (a->flags & (FI_READ | FI_WRITE)) |
		    tx_comp_flags(ep, a->flags);
	n = rma_local(ep, op, a, sge);
	if (n >= 0)
		n = op_post(m, op, wr, rma_wrs(op, a, sge, n, &scratch, wr));
	if (n) {
		op_free(m, op);
		return n;
	}
	m->sends++;
	return 0;
}

ssize_t nrma_proto_rma(struct nrma_ep *ep, const struct nrma_rma_args *a)
{
	struct nrma_conn *conn;
	ssize_t len = tx_len(ep, a->iov, a->count, a->flags);
	ssize_t ret;

	if (len < 0)
		return len;
	/* The local and remote lengths agree, and reads are never injected. */
	if ((size_t) len != a->len || (a->flags & (FI_INJECT | FI_READ)) ==
				      (FI_INJECT | FI_READ))
		return -FI_EINVAL;
	pthread_mutex_lock(&ep->lock);
	ret = ep_connection(ep, a->dest, &conn);
	if (!ret) {
		ret = post_rma(ep, conn, a, len);
		if (ret == -FI_EAGAIN)
			nrma_proto_progress(ep);
	}
	pthread_mutex_unlock(&ep->lock);
	return ret;
}

/* Receiving */

static void unexp_free(struct nrma_proto *m, struct nrma_unexp *unexp)
{
	nrma_dlist_remove(&unexp->link);
	nrma_bufpool_put(&m->unexp_entries,
			 ((char *) unexp - m->unexp_entries.mem) /
			 m->unexp_entries.buf_size);
}

/* Feeds held messages to a receive that was just posted. */
static void drain_unexpected(struct nrma_ep *ep, struct nrma_rx_entry *rx)
{
	struct nrma_proto *m = ep->proto;
	struct nrma_unexp *unexp;

	while (!rx->released && (unexp = match_unexp(m, rx))) {
		uint32_t buf = unexp->buf;

		deliver(ep, rx, nrma_bufpool_buf(&m->rx_bufs, buf), unexp->len,
			unexp->conn);
		unexp_free(m, unexp);
		rx_buf_release(ep, buf);
	}
}

static bool recv_args_valid(const struct nrma_ep *ep,
			    const struct nrma_recv_args *a)
{
	if (a->count > ep->info->rx_attr->iov_limit || (a->count && !a->iov))
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

ssize_t nrma_proto_recv(struct nrma_ep *ep, const struct nrma_recv_args *a)
{
	struct nrma_proto *m = ep->proto;
	struct nrma_rx_entry *rx;
	int64_t index;
	ssize_t ret = 0;

	if (!recv_args_valid(ep, a))
		return -FI_EINVAL;
	pthread_mutex_lock(&ep->lock);
	if (!ep->enabled) {
		ret = -FI_EOPBADSTATE;
		goto out;
	}
	index = nrma_bufpool_get(&m->rx_entries);
	if (index < 0) {
		ret = -FI_EAGAIN;
		goto out;
	}
	rx = nrma_bufpool_buf(&m->rx_entries, index);
	rx_entry_init(ep, rx, a);
	nrma_dlist_insert_tail(&rx->link,
			       &queue_of(m, a->flags & FI_TAGGED)->posted);
	drain_unexpected(ep, rx);
out:
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

/* Set-up */

static int register_pool(struct nrma_ep *ep, struct nrma_bufpool *pool,
			 size_t count, size_t size, uint64_t access,
			 struct nrma_verbs_mr **mr)
{
	uint64_t key;
	int ret;

	ret = nrma_bufpool_init(pool, count, size);
	if (ret)
		return ret;
	ret = nrma_verbs_mr_reg(ep->domain->verbs, pool->mem,
				nrma_bufpool_bytes(pool), access, mr, &key);
	if (ret)
		nrma_bufpool_fini(pool);
	return ret;
}

static int scratch_init(struct nrma_ep *ep, struct nrma_proto *m)
{
	uint64_t key;

	m->scratch = calloc(1, sizeof(*m->scratch));
	if (!m->scratch)
		return -FI_ENOMEM;
	return nrma_verbs_mr_reg(ep->domain->verbs, m->scratch,
				 sizeof(*m->scratch), FI_RECV, &m->scratch_mr,
				 &key);
}

static int msg_pools_init(struct nrma_ep *ep, struct nrma_proto *m)
{
	size_t tx = ep->info->tx_attr->size, rx = ep->info->rx_attr->size;
	size_t rx_bufs = rx + nrma_params.unexp_max;
	int ret;

	m->eager_size = nrma_params.eager_size;
	/* A buffer holds an eager payload or a rendezvous request. */
	m->buf_size = sizeof(struct nrma_hdr) +
		      (m->eager_size > sizeof(struct nrma_rndv_seg) * NRMA_IOV_LIMIT ?
		       m->eager_size :
		       sizeof(struct nrma_rndv_seg) * NRMA_IOV_LIMIT);
	m->sends_max = tx;
	m->srq_target = rx;
	/* Small RMA reads land in bounce buffers too: FI_RECV for local write. */
	ret = register_pool(ep, &m->tx_bufs, tx + rx, m->buf_size,
			    FI_SEND | FI_RECV, &m->tx_mr);
	if (ret)
		return ret;
	ret = register_pool(ep, &m->rx_bufs, rx_bufs, m->buf_size, FI_RECV,
			    &m->rx_mr);
	if (!ret)
		ret = nrma_bufpool_init(&m->ops, tx + 2 * rx,
					sizeof(struct nrma_op));
	if (!ret)
		ret = nrma_bufpool_init(&m->rx_entries, rx,
					sizeof(struct nrma_rx_entry));
	if (!ret)
		ret = nrma_bufpool_init(&m->unexp_entries, rx_bufs,
					sizeof(struct nrma_unexp));
	if (!ret)
		ret = scratch_init(ep, m);
	return ret;
}

/* Device completions an endpoint can have outstanding at once. */
size_t nrma_proto_cq_size(const struct fi_info *info)
{
	size_t tx = info->tx_attr->size, rx = info->rx_attr->size;

	return tx + 2 * rx + rx + nrma_params.unexp_max;
}

int nrma_proto_open(struct nrma_ep *ep)
{
	struct nrma_proto *m = calloc(1, sizeof(*m));
	int ret;

	if (!m)
		return -FI_ENOMEM;
	nrma_dlist_init(&m->msgq.posted);
	nrma_dlist_init(&m->msgq.unexp);
	nrma_dlist_init(&m->tagq.posted);
	nrma_dlist_init(&m->tagq.unexp);
	nrma_dlist_init(&m->pending_acks);
	nrma_dlist_init(&m->pending_reads);
	ep->proto = m;
	ret = msg_pools_init(ep, m);
	if (ret) {
		nrma_proto_close(ep);
		return ret;
	}
	srq_refill(ep);
	return 0;
}

void nrma_proto_close(struct nrma_ep *ep)
{
	struct nrma_proto *m = ep->proto;
	struct nrma_dlist *item;

	while ((item = nrma_dlist_pop_front(&m->pending_acks)))
		free(nrma_container_of(item, struct nrma_pending_ack, link));
	for (size_t i = 0; i < m->ops.count; i++) {
		struct nrma_op *op = op_at(m, i);

		for (size_t j = 0; op->gen && j < op->mr_count; j++)
			nrma_verbs_mr_dereg(op->mr[j]);
	}
	if (m->tx_mr)
		nrma_verbs_mr_dereg(m->tx_mr);
	if (m->rx_mr)
		nrma_verbs_mr_dereg(m->rx_mr);
	if (m->scratch_mr)
		nrma_verbs_mr_dereg(m->scratch_mr);
	free(m->scratch);
	nrma_bufpool_fini(&m->tx_bufs);
	nrma_bufpool_fini(&m->rx_bufs);
	nrma_bufpool_fini(&m->ops);
	nrma_bufpool_fini(&m->rx_entries);
	nrma_bufpool_fini(&m->unexp_entries);
	free(m);
	ep->proto = NULL;
}
