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
 *
 * This file has the operations, the sending side and the dispatch of
 * work completions; the receiving side is in nrma_recv.c, and RMA in
 * nrma_rma.c.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "nrma_iov.h"
#include "nrma_proto.h"

#define NRMA_POLL_BATCH		16

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

struct nrma_op *nrma_op_alloc(struct nrma_proto *m,
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

void nrma_op_free(struct nrma_proto *m, struct nrma_op *op)
{
	for (size_t i = 0; i < op->mr_count; i++)
		nrma_verbs_mr_dereg(op->mr[i]);
	if (op->buf >= 0)
		nrma_bufpool_put(&m->tx_bufs, op->buf);
	op->gen = 0;		/* no token matches a free operation */
	nrma_bufpool_put(&m->ops, op_index(m, op));
}

/* An operation with a bounce buffer, or NULL when either has run out. */
struct nrma_op *nrma_op_alloc_buf(struct nrma_proto *m, enum nrma_op_kind kind,
				  struct nrma_conn *conn)
{
	struct nrma_op *op = nrma_op_alloc(m, kind, conn);

	if (op && (op->buf = nrma_bufpool_get(&m->tx_bufs)) < 0) {
		nrma_op_free(m, op);
		return NULL;
	}
	return op;
}

/* An application's transmit, while tx_attr->size allows one more. */
struct nrma_op *nrma_tx_op_alloc(struct nrma_ep *ep, enum nrma_op_kind kind,
				 struct nrma_conn *conn, bool bounce)
{
	struct nrma_proto *m = ep->proto;

	if (m->sends == m->sends_max)
		return NULL;
	return bounce ? nrma_op_alloc_buf(m, kind, conn) :
			nrma_op_alloc(m, kind, conn);
}

/* The op a peer's ACK names, if it is still waiting for one. */
struct nrma_op *nrma_op_by_token(struct nrma_proto *m, uint64_t token)
{
	uint32_t index = (uint32_t) token;
	struct nrma_op *op;

	if (index >= m->ops.count)
		return NULL;
	op = op_at(m, index);
	return op->gen == token >> 32 && op->ack_pending ? op : NULL;
}

struct nrma_sge nrma_tx_buf_sge(const struct nrma_proto *m,
				const struct nrma_op *op, size_t len)
{
	return (struct nrma_sge) {
		.addr = (uintptr_t) nrma_bufpool_buf(&m->tx_bufs, op->buf),
		.len = len,
		.lkey = nrma_verbs_mr_lkey(m->tx_mr),
	};
}

/* Where atomics whose old value nobody wants fetch it to. */
struct nrma_sge nrma_scratch_sge(const struct nrma_proto *m)
{
	return (struct nrma_sge) {
		.addr = (uintptr_t) m->scratch, .len = sizeof(*m->scratch),
		.lkey = nrma_verbs_mr_lkey(m->scratch_mr),
	};
}

/* Posts an operation's work requests if its queue pair has room for all. */
int nrma_op_post(struct nrma_proto *m, struct nrma_op *op,
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

static struct nrma_cntr *tx_cntr(const struct nrma_ep *ep, uint64_t flags)
{
	if (flags & FI_READ)
		return ep->read_cntr;
	return flags & FI_WRITE ? ep->write_cntr : ep->send_cntr;
}

/* The completion of a send or an RMA operation we initiated. */
void nrma_report_tx(struct nrma_ep *ep, struct nrma_op *op)
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

void nrma_send_finish(struct nrma_ep *ep, struct nrma_op *op)
{
	if (op->wc_pending || op->ack_pending)
		return;
	nrma_report_tx(ep, op);
	ep->proto->sends--;
	nrma_op_free(ep->proto, op);
}

fi_addr_t nrma_source_of(struct nrma_ep *ep, struct nrma_conn *conn)
{
	if (!(ep->info->caps & FI_SOURCE) || !conn)
		return FI_ADDR_NOTAVAIL;
	return nrma_conn_fi_addr(conn);
}

/*
 * The registration the device uses for an application buffer: its
 * descriptor's, if that allows the access (without FI_MR_LOCAL an
 * application may pass any descriptor), else one the operation makes and
 * holds until it completes.  The device may always read a write's source.
 */
int nrma_op_buf_mr(struct nrma_ep *ep, struct nrma_op *op,
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

/* Work completions */

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
		nrma_send_finish(ep, op);
		break;
	case NRMA_OP_ACK:
		ep->proto->acks--;
		nrma_op_free(ep->proto, op);
		break;
	case NRMA_OP_READ:
		op->rx->reads--;
		if (!op->wc_pending && !op->queued)
			nrma_read_finish(ep, op);
		break;
	case NRMA_OP_RMA:
		nrma_rma_finish(ep, op);
		break;
	}
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
		nrma_rx_buf_release(ep, buf);
		return;
	}
	conn = nrma_conn_by_qp(ep, wc->qp_num);
	if (conn)
		nrma_conn_heard(conn);
	if (wc->op == NRMA_WC_RECV_IMM) {
		nrma_rx_buf_release(ep, buf);
		nrma_rma_write_data(ep, wc, conn);
		return;
	}
	nrma_recv_message(ep, buf, wc->len, conn);
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
	nrma_reads_retry(ep);
	nrma_acks_retry(ep);
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
		nrma_send_finish(ep, op);
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
		ret = nrma_op_buf_mr(ep, op, a->desc ? a->desc[i] : NULL,
				     &a->iov[i], FI_REMOTE_READ, &vmr, &key);
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

uint64_t nrma_tx_comp_flags(const struct nrma_ep *ep, uint64_t flags)
{
	if (flags & FI_INJECT)
		return 0;
	return !(ep->tx_cq_flags & FI_SELECTIVE_COMPLETION) ||
	       (flags & FI_COMPLETION) ? FI_COMPLETION : 0;
}

static ssize_t post_send(struct nrma_ep *ep, struct nrma_conn *conn,
			 const void *args, size_t msg_len)
{
	const struct nrma_send_args *a = args;
	struct nrma_proto *m = ep->proto;
	struct nrma_hdr *hdr;
	struct nrma_sge sge;
	struct nrma_wr wr;
	struct nrma_op *op;
	int len;

	op = nrma_tx_op_alloc(ep, NRMA_OP_SEND, conn, true);
	if (!op)
		return -FI_EAGAIN;
	op->context = a->context;
	op->len = msg_len;
	op->flags = FI_SEND | (a->flags & FI_TAGGED ? FI_TAGGED : FI_MSG) |
		    nrma_tx_comp_flags(ep, a->flags);
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
		nrma_op_free(m, op);
		return len;
	}
	sge = nrma_tx_buf_sge(m, op, len);
	wr = (struct nrma_wr) { .op = NRMA_WR_SEND, .sge = &sge, .sge_count = 1 };
	len = nrma_op_post(m, op, &wr, 1);
	if (len) {
		nrma_op_free(m, op);
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
ssize_t nrma_tx_len(const struct nrma_ep *ep, const struct iovec *iov,
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

/*
 * Posts an application's transmit with post() once the connection to
 * dest is up.  A full queue progresses the endpoint and says -FI_EAGAIN.
 */
ssize_t nrma_tx_submit(struct nrma_ep *ep, fi_addr_t dest,
		       nrma_tx_post_fn post, const void *args, size_t len)
{
	struct nrma_conn *conn;
	ssize_t ret;

	pthread_mutex_lock(&ep->lock);
	ret = ep_connection(ep, dest, &conn);
	if (!ret) {
		ret = post(ep, conn, args, len);
		if (ret == -FI_EAGAIN)
			nrma_proto_progress(ep);
	}
	pthread_mutex_unlock(&ep->lock);
	return ret;
}

ssize_t nrma_proto_send(struct nrma_ep *ep, const struct nrma_send_args *a)
{
	ssize_t len = nrma_tx_len(ep, a->iov, a->count, a->flags);

	return len < 0 ? len : nrma_tx_submit(ep, a->dest, post_send, a, len);
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
	nrma_srq_refill(ep);
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
