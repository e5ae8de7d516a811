/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The data path's state (see nrma_xfer.h): set-up and close, its pools
 * and registrations, and the budgets of its transmits and receives.
 * Operations are nrma_op.c's, transmits nrma_tx.c's, receive buffers and
 * contexts nrma_rx.c's.
 */
#include <stdlib.h>
#include <time.h>

#include "nrma_mr_span.h"
#include "nrma_xfer.h"

size_t nrma_xfer_tx_left(const struct nrma_ep *ep)
{
	return ep->xfer->tx->max - ep->xfer->tx->sends;
}

size_t nrma_xfer_rx_left(const struct nrma_ep *ep)
{
	return nrma_match_rx_left(&ep->xfer->rx->match);
}

void nrma_xfer_name_rx(struct nrma_ep *ep, struct nrma_rx_ctx **rcs, size_t n)
{
	ep->xfer->named = rcs;
	ep->xfer->nnamed = n;
}

void nrma_xfer_share_tx(struct nrma_ep *ep, struct nrma_tx_budget *tx)
{
	struct nrma_xfer *x = ep->xfer;

	/* What never completes leaves the budget it counted against. */
	x->tx->sends -= x->sends;
	x->tx = tx ? tx : &x->own_tx;
	x->tx->sends += x->sends;
}

/* A cheap clock for timeouts: a tick (NRMA_CLOCK_TICK_MS) behind at most. */
int64_t nrma_xfer_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

/* Set-up */

static int xfer_register_pool(struct nrma_ep *ep, struct nrma_bufpool *pool,
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

static int xfer_scratch_init(struct nrma_ep *ep, struct nrma_xfer *x)
{
	uint64_t key;
	int ret;

	x->scratch = calloc(1, sizeof(*x->scratch));
	if (!x->scratch)
		return -FI_ENOMEM;
	ret = nrma_verbs_mr_reg(ep->domain->verbs, x->scratch,
				sizeof(*x->scratch), FI_RECV, &x->scratch_mr,
				&key);
	if (!ret)
		x->scratch_sge = (struct nrma_sge){
			.addr = (uintptr_t) x->scratch,
			.len = sizeof(*x->scratch),
			.lkey = nrma_verbs_mr_lkey(x->scratch_mr),
		};
	return ret;
}

static void xfer_credits_init(struct nrma_xfer *x)
{
	size_t msg = nrma_params.credits;

	if (msg > UINT16_MAX)
		msg = UINT16_MAX;
	x->credits_msg = msg ? msg : 1;
	x->credits_ctl = msg / 2 ? msg / 2 : 1;
}

static int xfer_own_rx_init(struct nrma_ep *ep, struct nrma_xfer *x)
{
	const struct fi_info *info = ep->info;
	int ret = nrma_rx_ctx_init(&x->own_rx, info->rx_attr->size, info->caps,
				   info->rx_attr->iov_limit);

	x->rx = &x->own_rx;
	return ret ? ret : nrma_rx_ctx_join(&x->own_rx, ep);
}

static int xfer_pools_init(struct nrma_ep *ep, struct nrma_xfer *x)
{
	size_t tx = ep->info->tx_attr->size, rx = ep->info->rx_attr->size;
	/* A buffer holds an eager payload, a rendezvous request or an
	 * atomic loop's state. */
	size_t least = sizeof(struct nrma_rndv_seg) * NRMA_IOV_LIMIT;
	int ret;

	x->virt_addr = ep->info->domain_attr->mr_mode &
		       (FI_MR_VIRT_ADDR | NRMA_MR_BASIC);
	x->eager_size = nrma_params.eager_size;
	/* A segment says where it goes in 32 bits. */
	x->sar_size = nrma_params.sar_size < UINT32_MAX ? nrma_params.sar_size :
							  UINT32_MAX;
	/* A segment with its header fills eager_size bytes: whole packets of
	 * the path MTU, a power of two, where eager_size is a multiple. */
	x->seg_size = x->eager_size > 2 * sizeof(struct nrma_hdr) ?
			      x->eager_size - sizeof(struct nrma_hdr) :
			      x->eager_size;
	if (least < NRMA_XFER_BUF_MIN)
		least = NRMA_XFER_BUF_MIN;
	x->buf_size = sizeof(struct nrma_hdr) +
		      (x->eager_size > least ? x->eager_size : least);
	x->own_tx.max = tx;
	x->tx = &x->own_tx;
	xfer_credits_init(x);
	/* Small RMA reads land in bounce buffers too: FI_RECV for local write. */
	ret = xfer_register_pool(ep, &x->tx_bufs, tx + rx, x->buf_size,
				 FI_SEND | FI_RECV, &x->tx_mr);
	if (!ret)
		ret = nrma_rx_bufs_init(
			ep,
			nrma_xfer_sizes(ep->info, &ep->domain->device->limits)
				.srq);
	if (!ret)
		ret = nrma_token_table_init(&x->ops, tx + 2 * rx,
					    sizeof(struct nrma_op));
	if (!ret)
		ret = xfer_own_rx_init(ep, x);
	if (!ret)
		ret = xfer_scratch_init(ep, x);
	return ret;
}

/*
 * The shared receive queue holds rx_attr->size buffers and two a peer up
 * to FI_NRMA_PEERS_MAX peers.  Every work request may complete (an
 * operation posts up to NRMA_OP_MAX_WRS of them: a write, two
 * notification atomics and a delivery read; a rendezvous read one per
 * segment; unsignaled ones complete when they fail), and so may every
 * posted receive buffer: the CQ holds them all, within the device's
 * limits, which then bound the receive queue too.
 */
struct nrma_xfer_sizes nrma_xfer_sizes(const struct fi_info *info,
				       const struct nrma_dev_limits *lim)
{
	size_t tx = info->tx_attr->size, rx = info->rx_attr->size;
	size_t sends = (tx + 2 * rx) * NRMA_OP_MAX_WRS;
	struct nrma_xfer_sizes sz = {
		.srq = rx + 2 * nrma_params.peers_max,
	};

	if (sz.srq > lim->max_srq_wr)
		sz.srq = lim->max_srq_wr;
	if (sends + sz.srq > lim->max_cqe)
		sz.srq = lim->max_cqe > sends + rx ? lim->max_cqe - sends : rx;
	sz.cq = sends + sz.srq;
	return sz;
}

int nrma_xfer_open(struct nrma_ep *ep)
{
	struct nrma_xfer *x = calloc(1, sizeof(*x));
	int ret;

	if (!x)
		return -FI_ENOMEM;
	nrma_dlist_init(&x->pending_acks);
	nrma_dlist_init(&x->pending_reads);
	nrma_dlist_init(&x->stalled_reads);
	nrma_dlist_init(&x->sar_receiving);
	nrma_dlist_init(&x->blocked_conns);
	nrma_dlist_init(&x->credit_owed);
	for (int c = 0; c < NRMA_CREDIT_CLASSES; c++)
		nrma_dlist_init(&x->credit_wanting[c]);
	nrma_dlist_init(&x->batch_deferred);
	nrma_dlist_init(&x->connecting);
	nrma_dlist_init(&x->triggered);
	nrma_dlist_init(&x->held_conns);
	nrma_dlist_init(&x->atomic_waiting);
	ep->xfer = x;
	ret = xfer_pools_init(ep, x);
	if (ret) {
		nrma_xfer_close(ep);
		return ret;
	}
	nrma_rx_srq_fill(ep);
	return 0;
}

static void xfer_mr_dereg(struct nrma_verbs_mr *mr)
{
	if (mr)
		nrma_verbs_mr_dereg(mr);
}

void nrma_xfer_close(struct nrma_ep *ep)
{
	struct nrma_xfer *x = ep->xfer;
	struct nrma_dlist *item;

	while ((item = nrma_dlist_pop_front(&x->pending_acks)))
		free(nrma_container_of(item, struct nrma_pending_ack, link));
	for (size_t i = 0; x->ops.gen && i < nrma_token_count(&x->ops); i++) {
		struct nrma_op *op = nrma_op_at(x, i);

		for (size_t j = 0;
		     nrma_token_in_use(&x->ops, i) && j < op->mr_count; j++)
			nrma_mr_span_put(op->mr[j]);
	}
	xfer_mr_dereg(x->tx_mr);
	xfer_mr_dereg(x->scratch_mr);
	free(x->scratch);
	nrma_bufpool_fini(&x->tx_bufs);
	nrma_rx_bufs_fini(x);
	nrma_token_table_fini(&x->ops);
	nrma_rx_ctx_fini(&x->own_rx);
	free(x);
	ep->xfer = NULL;
}

int nrma_xfer_conn_open(struct nrma_conn *conn)
{
	struct nrma_xfer_conn *xc = calloc(1, sizeof(*xc));

	if (!xc)
		return -FI_ENOMEM;
	xc->conn = conn;
	for (int c = 0; c < NRMA_CREDIT_CLASSES; c++)
		nrma_dlist_init(&xc->credit_want[c]);
	nrma_dlist_init(&xc->send_queue);
	nrma_dlist_init(&xc->held);
	nrma_dlist_init(&xc->held_link);
	nrma_dlist_init(&xc->batch.ops);
	nrma_hash_init(&xc->rkeys);
	/* A ring for as many chains as the send queue holds, where this
	 * record's address fits a wr_id; without one (also when out of
	 * memory), every chain takes an operation record. */
	if (!((uintptr_t) xc & ~NRMA_WR_LIGHT_CONN))
		(void) nrma_ring_init(&xc->light, conn->sq_free,
				      sizeof(struct nrma_op_light));
	conn->xfer = xc;
	return 0;
}

void nrma_xfer_conn_close(struct nrma_conn *conn)
{
	nrma_ring_fini(&conn->xfer->light);
	free(conn->xfer);
	conn->xfer = NULL;
}
