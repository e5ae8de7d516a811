/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Receive buffers, on the endpoint's shared receive queue, and receive
 * contexts (nrma_xfer.h); what arrives in them is nrma_recv.c's.
 */
#include <stdlib.h>

#include "nrma_xfer.h"

/*
 * A connection's peer in ep's AV.  The fi_addr_t a connection holds counts
 * only while the AV still names its peer by it: fi_av_remove invalidates
 * it and a later insert may give it to another peer (fi_av(3)).  It is
 * checked again, under the AV's lock, only after a removal; peers that
 * connected to us, or lost theirs, are looked up again.
 */
fi_addr_t nrma_rx_peer_addr(struct nrma_ep *ep, struct nrma_conn *conn)
{
	struct nrma_addr_table *table;
	uint64_t removals;
	fi_addr_t fi_addr;

	if (!ep->av)
		return conn->fi_addr;
	table = &ep->av->table;
	removals = nrma_addr_table_removals(table);
	if (conn->fi_addr != FI_ADDR_NOTAVAIL &&
	    (conn->av_removals == removals ||
	     nrma_addr_table_names(table, conn->fi_addr, &conn->peer))) {
		conn->av_removals = removals;
		return conn->fi_addr;
	}
	nrma_cm_conn_forget_addr(conn->cm, conn, conn->fi_addr);
	fi_addr = nrma_addr_table_find(table, &conn->peer);
	if (fi_addr != FI_ADDR_NOTAVAIL)
		nrma_cm_conn_learn_addr(conn->cm, conn, fi_addr);
	conn->av_removals = removals;
	return fi_addr;
}

fi_addr_t nrma_rx_source(struct nrma_ep *ep, struct nrma_conn *conn)
{
	if (!(ep->info->caps & FI_SOURCE) || !conn)
		return FI_ADDR_NOTAVAIL;
	return nrma_rx_peer_addr(ep, conn);
}

/* The pool grows this many buffers at a time, one registration each. */
#define NRMA_RX_CHUNK 64

uint32_t nrma_rx_lkey(const struct nrma_xfer *x, uint32_t buf)
{
	return nrma_verbs_mr_lkey(nrma_chunkpool_chunk(&x->rx_bufs, buf)->reg);
}

static int rx_chunk_reg(struct nrma_ep *ep, size_t c)
{
	struct nrma_chunkpool *pool = &ep->xfer->rx_bufs;
	struct nrma_chunk *chunk = &pool->chunks[c];
	struct nrma_verbs_mr *mr;
	uint64_t key;
	int ret;

	ret = nrma_verbs_mr_reg(ep->domain->verbs, chunk->mem,
				nrma_chunkpool_chunk_bytes(pool, c), FI_RECV,
				&mr, &key);
	if (!ret)
		chunk->reg = mr;
	return ret;
}

/* The pool grows to x->rx_capacity, registered. */
static int rx_grow(struct nrma_ep *ep)
{
	struct nrma_chunkpool *pool = &ep->xfer->rx_bufs;
	int ret;

	while (pool->count < ep->xfer->rx_capacity) {
		/* A chunk with its buffers free but unregistered must not
		 * stay: its buffers would be posted. */
		ret = nrma_chunkpool_grow(pool);
		if (ret)
			return ret == -EOVERFLOW ? -FI_ENOSPC : -FI_ENOMEM;
		ret = rx_chunk_reg(ep, pool->nchunks - 1);
		if (ret) {
			pool->nfree -= pool->grow;
			return ret;
		}
	}
	return 0;
}

static int rx_srq_post(struct nrma_ep *ep, uint32_t buf)
{
	struct nrma_xfer *x = ep->xfer;
	struct nrma_sge sge = {
		.addr = (uintptr_t) nrma_rx_buf(x, buf),
		.len = x->buf_size,
		.lkey = nrma_rx_lkey(x, buf),
	};
	int ret;

	ret = nrma_verbs_post_srq_recv(ep->verbs, NRMA_WR_RECV | buf, &sge);
	if (ret) {
		nrma_chunkpool_put(&x->rx_bufs, buf);
		return ret;
	}
	x->srq_posted++;
	return 0;
}

void nrma_rx_srq_fill(struct nrma_ep *ep)
{
	struct nrma_xfer *x = ep->xfer;

	while (x->srq_posted < x->srq_target) {
		int64_t buf = nrma_chunkpool_get(&x->rx_bufs);

		if (buf < 0 || rx_srq_post(ep, buf))
			return;
	}
}

int nrma_rx_bufs_add(struct nrma_ep *ep, size_t n)
{
	struct nrma_xfer *x = ep->xfer;
	int ret;

	if (x->srq_target + n > x->srq_max)
		return -FI_ENOSPC;
	x->rx_capacity += n;
	ret = rx_grow(ep);
	if (ret) {
		x->rx_capacity -= n;
		return ret;
	}
	x->srq_target += n;
	nrma_rx_srq_fill(ep);
	return 0;
}

void nrma_rx_bufs_fini(struct nrma_xfer *x)
{
	for (size_t c = 0; c < x->rx_bufs.nchunks; c++)
		if (x->rx_bufs.chunks[c].reg)
			nrma_verbs_mr_dereg(x->rx_bufs.chunks[c].reg);
	nrma_chunkpool_fini(&x->rx_bufs);
}

/*
 * Receive buffers: rx_attr->size on the shared receive queue, unexp_max
 * more for unexpected messages to take off it, and two a connection
 * (nrma_rx_bufs_add: its floor, nrma_credit.c), chunk by chunk.
 */
int nrma_rx_bufs_init(struct nrma_ep *ep, size_t srq_max)
{
	struct nrma_xfer *x = ep->xfer;
	size_t rx = ep->info->rx_attr->size;
	int ret;

	x->srq_target = rx;
	x->srq_max = srq_max;
	x->rx_capacity = rx + nrma_params.unexp_max;
	ret = nrma_chunkpool_init(&x->rx_bufs, x->rx_capacity, NRMA_RX_CHUNK,
				  x->buf_size, sizeof(struct nrma_rx_slot));
	return ret ? ret : rx_chunk_reg(ep, 0);
}

/* The match queues ask who a connection's peer is, in its endpoint's AV. */
static fi_addr_t rx_match_peer_addr(void *arg, void *peer)
{
	(void) arg;
	return nrma_rx_peer_addr(nrma_cm_conn_owner(peer), peer);
}

int nrma_rx_ctx_init(struct nrma_rx_ctx *rc, size_t size, uint64_t caps,
		     size_t iov_limit)
{
	*rc = (struct nrma_rx_ctx){
		.caps = caps,
		.iov_limit = iov_limit,
		.min_multi_recv = NRMA_DEFAULT_MIN_MULTI_RECV,
	};
	return nrma_match_init(&rc->match, size, rx_match_peer_addr, rc);
}

void nrma_rx_ctx_fini(struct nrma_rx_ctx *rc)
{
	nrma_match_fini(&rc->match);
	free(rc->eps);
}

int nrma_rx_ctx_join(struct nrma_rx_ctx *rc, struct nrma_ep *ep)
{
	struct nrma_ep **eps = realloc(rc->eps, (rc->count + 1) * sizeof(*eps));

	if (!eps)
		return -FI_ENOMEM;
	rc->eps = eps;
	rc->eps[rc->count++] = ep;
	/* A scalable endpoint's core keeps its own: messages name theirs. */
	if (!ep->xfer->named)
		ep->xfer->rx = rc;
	return 0;
}

/*
 * A peer's share of credits for ACKs and writes with immediate data is
 * half that for messages; at most UINT16_MAX each (the wire has 16 bits).
 */
