/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Coalesced notifications (FI_NRMA_NOTIFY_COALESCE=K, K > 1).  Notified
 * writes to one peer that bump the same words share one fetch-and-add
 * per word of +n behind their n writes, n <= K, so the device runs about
 * one atomic per K writes instead of one per write.
 *
 * Such a write goes out alone, signaled, and its operation waits in its
 * connection's batch.  The batch's atomics follow its writes on the same
 * queue pair: the counters never count a write before it is placed (they
 * may lag, never lead), and each operation completes only once the
 * atomics have, so that its completion still means its notification is
 * at the target.  A batch goes out once it holds K writes, when a write
 * for other targets comes, or when its last write has completed and no
 * other followed: the stream paused, and waiting longer only delays.
 * One that finds no room on its queue pair is retried on each progress.
 */
#include "nrma_batch.h"
#include "nrma_rkey.h"
#include "nrma_xfer.h"

static bool batch_same_target(const struct nrma_batch_target *a,
			      const struct nrma_batch_target *b)
{
	return a->cell_rkey == b->cell_rkey && a->has_set == b->has_set &&
	       (!a->has_set ||
		(a->set_rkey == b->set_rkey && a->set_addr == b->set_addr));
}

/* One atomic a word: each adds what the batch's writes would have. */
static void batch_wrs(struct nrma_wr_chain *chain, const struct nrma_conn *conn,
		      const struct nrma_sge *scratch)
{
	const struct nrma_notify_batch *b = &conn->xfer->batch;

	nrma_wr_chain_init(chain);
	nrma_rkey_notify_wrs(chain, conn, b->target.cell_rkey,
			     NRMA_RKEY_COUNTS_WRITE, false, b->count, scratch);
	if (b->target.has_set) {
		struct nrma_remote set = { .addr = b->target.set_addr,
					   .rkey = b->target.set_rkey };

		nrma_rkey_notify_set_wr(chain, b->set_add, &set, scratch,
					false);
	}
}

static void batch_defer(struct nrma_xfer *x, struct nrma_conn *conn)
{
	struct nrma_notify_batch *b = &conn->xfer->batch;

	if (b->deferred)
		return;
	NRMA_DBG(FI_LOG_EP_DATA,
		 "%zu coalesced notifications wait for send queue room\n",
		 b->count);
	b->deferred = true;
	nrma_xfer_wait(x, &b->deferred_link, &x->batch_deferred);
}

static void batch_undefer(struct nrma_conn *conn)
{
	struct nrma_notify_batch *b = &conn->xfer->batch;

	if (!b->deferred)
		return;
	b->deferred = false;
	nrma_dlist_remove(&b->deferred_link);
}

/* The batch's writes go on the list of the operation that counts them. */
static void batch_hand_over(struct nrma_notify_batch *b, struct nrma_op *notify)
{
	struct nrma_dlist *item;

	nrma_dlist_init(&notify->notified);
	while ((item = nrma_dlist_pop_front(&b->ops))) {
		struct nrma_op *op =
			nrma_container_of(item, struct nrma_op, link);

		op->batch = NRMA_BATCH_POSTED;
		nrma_dlist_insert_tail(&op->link, &notify->notified);
	}
	b->count = b->writing = 0;
	b->set_add = 0;
}

/* Posts the batch's atomics; -FI_EAGAIN: it is retried on progress. */
static int batch_flush(struct nrma_ep *ep, struct nrma_conn *conn)
{
	struct nrma_xfer *x = ep->xfer;
	const struct nrma_sge *scratch = nrma_scratch_sge(x);
	struct nrma_wr_chain chain;
	struct nrma_op *op;
	int ret = -FI_EAGAIN;

	if (!conn->xfer->batch.count)
		return 0;
	op = nrma_op_alloc(x, NRMA_OP_NOTIFY, conn);
	if (op) {
		batch_wrs(&chain, conn, scratch);
		ret = nrma_op_post(op, &chain);
	}
	if (ret == -FI_EAGAIN) {
		batch_defer(x, conn);
	} else if (!ret) {
		batch_undefer(conn);
		batch_hand_over(&conn->xfer->batch, op);
	}
	if (ret && op)
		nrma_op_free(x, op);
	return ret;
}

int nrma_batch_open(struct nrma_ep *ep, struct nrma_conn *conn,
		    const struct nrma_batch_target *t)
{
	struct nrma_notify_batch *b = &conn->xfer->batch;
	int ret;

	if (!nrma_batch_enabled() ||
	    (!conn->grant.notify_rkey && !t->cell_rkey && !t->has_set))
		return 0;
	/* One full (its atomics wait for room) or for other words goes first. */
	if (b->count && (b->count >= nrma_params.notify_coalesce ||
			 !batch_same_target(&b->target, t))) {
		ret = batch_flush(ep, conn);
		if (ret)
			return ret == -FI_EAGAIN ? ret : 0;
	}
	return 1;
}

void nrma_batch_add(struct nrma_ep *ep, struct nrma_op *op,
		    const struct nrma_batch_target *t, uint64_t set_add)
{
	struct nrma_notify_batch *b = &op->conn->xfer->batch;

	if (!b->count)
		b->target = *t;
	op->batch = NRMA_BATCH_WAITING;
	nrma_dlist_insert_tail(&op->link, &b->ops);
	b->count++;
	b->writing++;
	b->set_add += set_add;
	if (b->count >= nrma_params.notify_coalesce)
		batch_flush(ep, op->conn);
}

/* op's notification will not go: it ends with the connection's error. */
static void batch_drop(struct nrma_op *op)
{
	nrma_dlist_remove(&op->link);
	op->conn->xfer->batch.count--;
	op->batch = NRMA_BATCH_NONE;
	if (!op->error)
		op->error = FI_ECONNRESET;
}

bool nrma_batch_holds(struct nrma_ep *ep, struct nrma_op *op)
{
	struct nrma_conn *conn = op->conn;

	if (op->batch != NRMA_BATCH_WAITING)
		return op->batch == NRMA_BATCH_POSTED;
	conn->xfer->batch.writing--;
	if (conn->state != NRMA_CONN_CONNECTED) {
		batch_drop(op);
		return false;
	}
	if (!conn->xfer->batch.writing)
		batch_flush(ep, conn); /* the stream paused */
	return true;
}

struct nrma_op *nrma_batch_notified_next(struct nrma_op *notify)
{
	struct nrma_dlist *item = nrma_dlist_pop_front(&notify->notified);
	struct nrma_op *op;

	if (!item)
		return NULL;
	op = nrma_container_of(item, struct nrma_op, link);
	op->batch = NRMA_BATCH_NONE;
	if (!op->error) {
		op->error = notify->error;
		op->prov_errno = notify->prov_errno;
	}
	return op;
}

void nrma_batch_conn_failed(struct nrma_conn *conn, struct nrma_dlist *ended)
{
	struct nrma_dlist *item, *next;

	batch_undefer(conn);
	nrma_dlist_foreach_safe (&conn->xfer->batch.ops, item, next) {
		struct nrma_op *op =
			nrma_container_of(item, struct nrma_op, link);

		if (op->wc_pending)
			continue;
		batch_drop(op);
		nrma_dlist_insert_tail(&op->link, ended);
	}
}

void nrma_batch_retry(struct nrma_ep *ep)
{
	struct nrma_xfer *x = ep->xfer;
	struct nrma_dlist *item, *next;

	nrma_dlist_foreach_safe (&x->batch_deferred, item, next) {
		struct nrma_conn *conn =
			nrma_xfer_conn_of(item, batch.deferred_link);

		batch_flush(ep, conn);
	}
}
