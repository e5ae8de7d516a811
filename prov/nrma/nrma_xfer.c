/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The data path's state (see nrma_xfer.h): its buffer pools and
 * registrations, operations, and the posting of an application's
 * transmits once the connection to their peer is up.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "nrma_comp.h"
#include "nrma_iov.h"
#include "nrma_xfer.h"

/* Operations */

struct nrma_op *nrma_op_at(struct nrma_xfer *x, uint32_t index)
{
	return nrma_token_slot(&x->ops, index);
}

uint64_t nrma_op_token(const struct nrma_xfer *x, const struct nrma_op *op)
{
	return nrma_token_of(&x->ops, nrma_token_index(&x->ops, op));
}

struct nrma_op *nrma_op_alloc(struct nrma_xfer *x, enum nrma_op_kind kind,
			      struct nrma_conn *conn)
{
	/* Only a send's token goes to the peer (its ACK names it). */
	int64_t index = kind == NRMA_OP_SEND ? nrma_token_get(&x->ops) :
					       nrma_token_get_local(&x->ops);
	struct nrma_op *op;

	if (index < 0)
		return NULL;
	op = nrma_op_at(x, index);
	memset(op, 0, offsetof(struct nrma_op, resolving));
	op->kind = kind;
	op->conn = conn;
	op->buf = -1;
	if (conn)
		conn->refs++;
	return op;
}

void nrma_op_free(struct nrma_xfer *x, struct nrma_op *op)
{
	for (size_t i = 0; i < op->mr_count; i++)
		nrma_verbs_mr_dereg(op->mr[i]);
	if (op->buf >= 0)
		nrma_bufpool_put(&x->tx_bufs, op->buf);
	if (op->conn)
		op->conn->refs--;
	nrma_token_put(&x->ops, nrma_token_index(&x->ops, op));
}

/* An operation with a bounce buffer, or NULL when either has run out. */
struct nrma_op *nrma_op_alloc_buf(struct nrma_xfer *x, enum nrma_op_kind kind,
				  struct nrma_conn *conn)
{
	struct nrma_op *op = nrma_op_alloc(x, kind, conn);

	if (op && (op->buf = nrma_bufpool_get(&x->tx_bufs)) < 0) {
		nrma_op_free(x, op);
		return NULL;
	}
	return op;
}

/* An application's transmit, while tx_attr->size allows one more. */
struct nrma_op *nrma_tx_op_alloc(struct nrma_ep *ep, enum nrma_op_kind kind,
				 struct nrma_conn *conn, bool bounce)
{
	struct nrma_xfer *x = ep->xfer;

	if (x->tx->sends == x->tx->max)
		return NULL;
	return bounce ? nrma_op_alloc_buf(x, kind, conn) :
			nrma_op_alloc(x, kind, conn);
}

struct nrma_sge nrma_tx_buf_sge(const struct nrma_xfer *x,
				const struct nrma_op *op, size_t len)
{
	return (struct nrma_sge){
		.addr = (uintptr_t) nrma_bufpool_buf(&x->tx_bufs, op->buf),
		.len = len,
		.lkey = nrma_verbs_mr_lkey(x->tx_mr),
	};
}

/*
 * Posts an operation's work requests if its queue pair has room for all.
 * A queue pair that breaks halfway fails its connection; the operation
 * then ends, with its error, once what did go out is flushed.
 */
int nrma_op_post(struct nrma_xfer *x, struct nrma_op *op, struct nrma_wr *wr,
		 size_t count)
{
	size_t posted;
	int ret;

	if (op->conn->state != NRMA_CONN_CONNECTED)
		return -FI_ECONNRESET;
	if (op->conn->sq_free < count)
		return -FI_EAGAIN;
	/* RC completes in order: one completion covers the whole chain. */
	for (size_t i = 0; i < count; i++) {
		wr[i].wr_id = nrma_token_index(&x->ops, op);
		wr[i].signaled = i + 1 == count;
	}
	wr[count - 1].wr_id |= (uint64_t) count << NRMA_WR_SLOTS_SHIFT;
	ret = nrma_verbs_post(op->conn->qp, wr, count, &posted);
	op->conn->sq_free -= posted;
	if (posted == count)
		op->wc_pending++;
	else /* each is flushed with a completion of its own */
		op->wc_orphans += (unsigned int) posted;
	if (!ret || (ret == -FI_EAGAIN && !posted))
		return ret;
	/* Half an operation (a write without its notification) is none. */
	nrma_conn_fail(op->conn, ret == -FI_EAGAIN ? -FI_EIO : ret);
	if (!posted)
		return ret;
	op->error = FI_EIO;
	return 0;
}

/*
 * The registration the device uses for an application buffer: its
 * descriptor's, if that allows the access (without FI_MR_LOCAL an
 * application may pass any descriptor), else one the operation makes and
 * holds until it completes.  The device may always read a write's source.
 */
int nrma_op_buf_mr(struct nrma_ep *ep, struct nrma_op *op, struct nrma_mr *desc,
		   const struct iovec *iov, uint64_t access,
		   struct nrma_verbs_mr **vmr, uint64_t *key)
{
	uint64_t needed = access == FI_WRITE ? 0 : access;
	int ret;

	if (desc && (desc->access & needed) == needed) {
		*vmr = desc->verbs;
		*key = desc->verbs_key;
		return 0;
	}
	ret = nrma_verbs_mr_reg(ep->domain->verbs, iov->iov_base, iov->iov_len,
				access, &op->mr[op->mr_count], key);
	if (ret)
		return ret;
	*vmr = op->mr[op->mr_count++];
	return 0;
}

/*
 * A zero-byte RDMA write needs no key and changes nothing at the peer:
 * it only succeeds while the peer's queue pair is there.  One at a time.
 */
void nrma_probe(struct nrma_ep *ep, struct nrma_conn *conn)
{
	struct nrma_wr wr = { .op = NRMA_WR_WRITE };
	struct nrma_op *op;

	if (conn->probing || conn->state != NRMA_CONN_CONNECTED)
		return;
	op = nrma_op_alloc(ep->xfer, NRMA_OP_PROBE, conn);
	if (!op)
		return; /* busy with other work, which tells as much */
	if (nrma_op_post(ep->xfer, op, &wr, 1))
		nrma_op_free(ep->xfer, op);
	else
		conn->probing = true;
}

static void xfer_tx_report(struct nrma_ep *ep, void *context, uint64_t flags,
			   int err, int prov_errno)
{
	struct nrma_comp comp = {
		.context = context,
		.flags = flags,
		.src = FI_ADDR_NOTAVAIL,
		.err = err,
		.prov_errno = prov_errno,
	};

	nrma_comp_tx(ep, &comp);
}

void nrma_op_report(struct nrma_ep *ep, const struct nrma_op *op)
{
	xfer_tx_report(ep, op->context, op->flags, op->error, op->prov_errno);
}

/*
 * Ends a transmit that the peer would refuse before it goes: an error
 * entry, FI_EACCES (also for fi_inject calls, which have no other way to
 * tell), and the connection stays up.
 */
ssize_t nrma_tx_refuse(struct nrma_ep *ep, void *context, uint64_t flags)
{
	xfer_tx_report(ep, context, flags, FI_EACCES,
		       nrma_verbs_status_rem_access);
	return 0;
}

/*
 * A connection's peer in ep's AV.  The fi_addr_t a connection holds counts
 * only while the AV still names its peer by it: fi_av_remove invalidates
 * it and a later insert may give it to another peer (fi_av(3)).  It is
 * checked again, under the AV's lock, only after a removal; peers that
 * connected to us, or lost theirs, are looked up again.
 */
fi_addr_t nrma_peer_fi_addr(struct nrma_ep *ep, struct nrma_conn *conn)
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
	nrma_conn_forget_addr(conn->cm, conn, conn->fi_addr);
	fi_addr = nrma_addr_table_find(table, &conn->peer);
	if (fi_addr != FI_ADDR_NOTAVAIL)
		nrma_conn_learn_addr(conn->cm, conn, fi_addr);
	conn->av_removals = removals;
	return fi_addr;
}

fi_addr_t nrma_source_of(struct nrma_ep *ep, struct nrma_conn *conn)
{
	if (!(ep->info->caps & FI_SOURCE) || !conn)
		return FI_ADDR_NOTAVAIL;
	return nrma_peer_fi_addr(ep, conn);
}

/* Transmits */

/*
 * The connection to dest, once it is up; a connected endpoint's one, and
 * dest means nothing.  One that dest led to, up, while the AV removed
 * nothing since (conn->av_removals), goes without a look at the AV.
 * Called with ep->lock held.
 */
int nrma_xfer_connection(struct nrma_ep *ep, fi_addr_t dest,
			 struct nrma_conn **conn)
{
	struct nrma_addr_table *table;
	struct nrma_conn *up;
	struct sockaddr_in peer;
	uint64_t removals;
	int ret;

	if (!ep->enabled)
		return -FI_EOPBADSTATE;
	if (nrma_ep_is_msg(ep)) {
		*conn = nrma_cm_msg_conn(ep->cm);
		return *conn && (*conn)->state == NRMA_CONN_CONNECTED ?
			       0 :
			       -FI_ENOTCONN;
	}
	table = &ep->av->table;
	/* A scalable peer's receive contexts share one connection. */
	dest = nrma_addr_base(table, dest);
	removals = nrma_addr_table_removals(table);
	up = nrma_conn_up(ep->cm, dest);
	if (up && up->av_removals == removals) {
		*conn = up;
		return 0;
	}
	if (nrma_addr_table_get(table, dest, &peer))
		return -FI_EINVAL;
	ret = nrma_conn_get(ep->cm, dest, &peer, conn);
	if (!ret)
		(*conn)->av_removals = removals;
	return ret;
}

/*
 * Flags no transmit may carry: nrma has no persistent memory to commit
 * to (FI_COMMIT_COMPLETE).
 */
int nrma_tx_flags_check(uint64_t flags)
{
	return (flags & FI_COMMIT_COMPLETE) ? -FI_EOPNOTSUPP : 0;
}

/*
 * The length of what an operation of a class transmits, or -FI_EINVAL at
 * once when the class's sizes (FI_OPT_MAX_*, FI_OPT_INJECT_*) rule it out.
 */
ssize_t nrma_tx_len(const struct nrma_ep *ep, enum nrma_xfer_class class,
		    const struct iovec *iov, size_t count, uint64_t flags)
{
	size_t len;
	int ret;

	ret = nrma_tx_flags_check(flags);
	if (ret)
		return ret;
	if (count > ep->info->tx_attr->iov_limit || (count && !iov))
		return -FI_EINVAL;
	len = nrma_iov_len(iov, count);
	if (len > ep->max_size[class] ||
	    ((flags & FI_INJECT) && len > ep->inject_size[class]))
		return -FI_EINVAL;
	return len;
}

size_t nrma_xfer_tx_left(const struct nrma_ep *ep)
{
	return ep->xfer->tx->max - ep->xfer->tx->sends;
}

size_t nrma_xfer_rx_left(const struct nrma_ep *ep)
{
	return nrma_match_rx_left(&ep->xfer->rx->match);
}

void nrma_tx_started(struct nrma_xfer *x)
{
	x->tx->sends++;
	x->sends++;
}

void nrma_tx_ended(struct nrma_xfer *x)
{
	x->tx->sends--;
	x->sends--;
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

/*
 * Posts an application's transmit with post() once the connection to
 * dest is up, or, if it may wait, while it is being made; -FI_EAGAIN
 * when there is no room.
 */
ssize_t nrma_tx_submit(struct nrma_ep *ep, fi_addr_t dest, nrma_tx_post_fn post,
		       const void *args, size_t len, bool may_wait)
{
	struct nrma_conn *conn = NULL;
	ssize_t ret;

	pthread_mutex_lock(ep->lock);
	ret = nrma_xfer_connection(ep, dest, &conn);
	if (ret == -FI_EAGAIN && may_wait)
		ret = 0;
	if (!ret)
		ret = post(ep, conn, args, len);
	pthread_mutex_unlock(ep->lock);
	return ret;
}

/* A cheap clock for timeouts: a tick (NRMA_CLOCK_TICK_MS) behind at most. */
int64_t nrma_now_ms(void)
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

/* Receive buffers */

/* The pool grows this many buffers at a time, one registration each. */
#define NRMA_RX_CHUNK 64

uint32_t nrma_rx_lkey(const struct nrma_xfer *x, uint32_t buf)
{
	return nrma_verbs_mr_lkey(nrma_chunkpool_chunk(&x->rx_bufs, buf)->reg);
}

static int xfer_rx_chunk_reg(struct nrma_ep *ep, size_t c)
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
static int xfer_rx_grow(struct nrma_ep *ep)
{
	struct nrma_chunkpool *pool = &ep->xfer->rx_bufs;
	int ret;

	while (pool->count < ep->xfer->rx_capacity) {
		/* A chunk with its buffers free but unregistered must not
		 * stay: its buffers would be posted. */
		ret = nrma_chunkpool_grow(pool);
		if (ret)
			return ret == -EOVERFLOW ? -FI_ENOSPC : -FI_ENOMEM;
		ret = xfer_rx_chunk_reg(ep, pool->nchunks - 1);
		if (ret) {
			pool->nfree -= pool->grow;
			return ret;
		}
	}
	return 0;
}

static int xfer_srq_post(struct nrma_ep *ep, uint32_t buf)
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

void nrma_srq_fill(struct nrma_ep *ep)
{
	struct nrma_xfer *x = ep->xfer;

	while (x->srq_posted < x->srq_target) {
		int64_t buf = nrma_chunkpool_get(&x->rx_bufs);

		if (buf < 0 || xfer_srq_post(ep, buf))
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
	ret = xfer_rx_grow(ep);
	if (ret) {
		x->rx_capacity -= n;
		return ret;
	}
	x->srq_target += n;
	nrma_srq_fill(ep);
	return 0;
}

static void xfer_rx_bufs_fini(struct nrma_xfer *x)
{
	for (size_t c = 0; c < x->rx_bufs.nchunks; c++)
		if (x->rx_bufs.chunks[c].reg)
			nrma_verbs_mr_dereg(x->rx_bufs.chunks[c].reg);
	nrma_chunkpool_fini(&x->rx_bufs);
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

/* Receive contexts */

/* The match queues ask who a connection's peer is, in its endpoint's AV. */
static fi_addr_t xfer_match_peer_addr(void *arg, void *peer)
{
	(void) arg;
	return nrma_peer_fi_addr(nrma_conn_owner(peer), peer);
}

int nrma_rx_ctx_init(struct nrma_rx_ctx *rc, size_t size, uint64_t caps,
		     size_t iov_limit)
{
	*rc = (struct nrma_rx_ctx){
		.caps = caps,
		.iov_limit = iov_limit,
		.min_multi_recv = NRMA_DEFAULT_MIN_MULTI_RECV,
	};
	return nrma_match_init(&rc->match, size, xfer_match_peer_addr, rc);
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

/*
 * Receive buffers: rx_attr->size on the shared receive queue, unexp_max
 * more for unexpected messages to take off it, and two a connection
 * (nrma_rx_bufs_add: its floor, nrma_credit.c), chunk by chunk.
 */
static int xfer_rx_bufs_init(struct nrma_ep *ep, struct nrma_xfer *x)
{
	size_t rx = ep->info->rx_attr->size;
	int ret;

	x->srq_target = rx;
	x->srq_max = nrma_xfer_sizes(ep->info, &ep->domain->device->limits).srq;
	x->rx_capacity = rx + nrma_params.unexp_max;
	ret = nrma_chunkpool_init(&x->rx_bufs, x->rx_capacity, NRMA_RX_CHUNK,
				  x->buf_size, sizeof(struct nrma_rx_slot));
	return ret ? ret : xfer_rx_chunk_reg(ep, 0);
}

static int xfer_pools_init(struct nrma_ep *ep, struct nrma_xfer *x)
{
	size_t tx = ep->info->tx_attr->size, rx = ep->info->rx_attr->size;
	size_t rndv_size = sizeof(struct nrma_rndv_seg) * NRMA_IOV_LIMIT;
	int ret;

	x->eager_size = nrma_params.eager_size;
	/* A buffer holds an eager payload or a rendezvous request. */
	x->buf_size = sizeof(struct nrma_hdr) +
		      (x->eager_size > rndv_size ? x->eager_size : rndv_size);
	x->own_tx.max = tx;
	x->tx = &x->own_tx;
	xfer_credits_init(x);
	/* Small RMA reads land in bounce buffers too: FI_RECV for local write. */
	ret = xfer_register_pool(ep, &x->tx_bufs, tx + rx, x->buf_size,
				 FI_SEND | FI_RECV, &x->tx_mr);
	if (!ret)
		ret = xfer_rx_bufs_init(ep, x);
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
	nrma_dlist_init(&x->blocked_conns);
	nrma_dlist_init(&x->credit_owed);
	for (int c = 0; c < NRMA_CREDIT_CLASSES; c++)
		nrma_dlist_init(&x->credit_wanting[c]);
	nrma_dlist_init(&x->batch_deferred);
	nrma_dlist_init(&x->connecting);
	nrma_dlist_init(&x->triggered);
	ep->xfer = x;
	ret = xfer_pools_init(ep, x);
	if (ret) {
		nrma_xfer_close(ep);
		return ret;
	}
	nrma_srq_fill(ep);
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
			nrma_verbs_mr_dereg(op->mr[j]);
	}
	xfer_mr_dereg(x->tx_mr);
	xfer_mr_dereg(x->scratch_mr);
	free(x->scratch);
	nrma_bufpool_fini(&x->tx_bufs);
	xfer_rx_bufs_fini(x);
	nrma_token_table_fini(&x->ops);
	nrma_rx_ctx_fini(&x->own_rx);
	free(x);
	ep->xfer = NULL;
}
