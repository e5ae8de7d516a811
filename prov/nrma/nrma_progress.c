/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Data progress, manual unless the domain asked for automatic: reading a
 * CQ or counter progresses the endpoints bound to it (their endpoint set),
 * and in a domain opened FI_PROGRESS_AUTO the domain's thread progresses
 * those the application leaves alone (nrma_progress_auto).  An
 * endpoint's progress reaps its device completions, hands each to the side
 * of the protocol it belongs to, retries what a full queue held back, and
 * frees the connections they released.  Control progress, automatic, is the
 * thread of nrma_cm_thread.c.  Connection management reports back
 * through the callbacks at the end of this file.
 */
#include <time.h>

#include "nrma_atomic_loop.h"
#include "nrma_batch.h"
#include "nrma_comp.h"
#include "nrma_credit.h"
#include "nrma_progress.h"
#include "nrma_recv.h"
#include "nrma_rkey.h"
#include "nrma_rma.h"
#include "nrma_send.h"
#include "nrma_trigger.h"
#include "nrma_xfer.h"

/* Work completions */

/*
 * Whether a completion ends its chain of work requests: the signaled last
 * one does, and frees the slots of all; an unsignaled one only completes
 * in error, before the last one flushes, unless the last was never
 * posted.
 */
static bool progress_chain_done(struct nrma_op *op, const struct nrma_wc *wc)
{
	uint64_t slots = wc->wr_id >> NRMA_WR_SLOTS_SHIFT & NRMA_WR_SLOTS_MASK;

	if (wc->status && !op->error) {
		op->error = nrma_op_wc_errno(op->conn, wc->status);
		op->prov_errno = wc->status;
		nrma_cm_conn_fail(op->conn, -op->error);
	}
	if (slots) {
		op->conn->sq_free += slots;
		op->wc_pending--;
	} else if (!op->wc_orphans) {
		return false;
	} else {
		op->conn->sq_free++;
		if (--op->wc_orphans)
			return false;
	}
	op->conn->sq_done++;
	return true;
}

static NRMA_INLINE void progress_op_wc(struct nrma_ep *ep,
				       const struct nrma_wc *wc)
{
	struct nrma_op *op = nrma_op_at(ep->xfer, (uint32_t) wc->wr_id);

	if (!progress_chain_done(op, wc))
		return;
	switch (op->kind) {
	case NRMA_OP_SEND:
		nrma_send_sent(ep, op);
		break;
	case NRMA_OP_ACK:
		ep->xfer->acks--;
		nrma_op_free(ep->xfer, op);
		break;
	case NRMA_OP_READ:
		if (op->read.rx) /* else its receive context closed */
			op->read.rx->reads--;
		if (!op->wc_pending && !op->queued)
			nrma_recv_read_finish(ep, op);
		break;
	case NRMA_OP_RMA:
		nrma_rma_finish(ep, op);
		break;
	case NRMA_OP_PROBE:
		op->conn->xfer->probing = false;
		nrma_op_free(ep->xfer, op);
		break;
	case NRMA_OP_CREDIT:
		nrma_credit_returned(ep, op);
		break;
	case NRMA_OP_RESOLVE:
		nrma_rkey_read_done(ep, op);
		break;
	case NRMA_OP_NOTIFY:
		nrma_rma_notified(ep, op);
		break;
	case NRMA_OP_ATOMIC:
		nrma_atomic_loop_wc(ep, op);
		break;
	}
}

/* A chain posted without a record (nrma_op_post_light): RMA, a send. */
static NRMA_INLINE void progress_light_wc(struct nrma_ep *ep,
					  const struct nrma_wc *wc)
{
	const struct nrma_op_light *done = nrma_op_light_wc(wc);

	if (done)
		nrma_tx_light_done(ep, done);
}

static void progress_recv_wc(struct nrma_ep *ep, const struct nrma_wc *wc)
{
	uint32_t buf = (uint32_t) wc->wr_id;
	struct nrma_conn *conn;

	ep->xfer->srq_posted--;
	if (wc->status) {
		nrma_recv_buf_release(ep, buf);
		return;
	}
	conn = nrma_cm_conn_by_qp(ep->cm, wc->qp_num);
	if (conn)
		nrma_cm_conn_heard(conn);
	if (wc->op == NRMA_WC_RECV_IMM) {
		bool kept = !conn || nrma_credit_arrived(ep, conn, buf,
							 NRMA_CREDIT_CTL, NULL);

		nrma_recv_buf_release(ep, buf);
		if (kept)
			nrma_rma_write_data(ep, wc, conn);
		else
			nrma_cm_conn_fail(conn, -FI_EIO); /* past its credits */
		return;
	}
	nrma_recv_message(ep, buf, wc->len, conn);
}

/* Stop reaping the device while the application's CQs are full. */
static int progress_budget(struct nrma_ep *ep)
{
	size_t room = nrma_comp_room(ep);

	return room < NRMA_XFER_POLL_BATCH ? (int) room : NRMA_XFER_POLL_BATCH;
}

/* Work that waited for queue room, credits, a connection or a key. */
static NRMA_NOINLINE void progress_retry_waiting(struct nrma_ep *ep)
{
	struct nrma_xfer *x = ep->xfer;

	x->waiting = false;
	nrma_recv_stalled_retry(ep);
	nrma_recv_reads_retry(ep);
	nrma_recv_acks_retry(ep);
	nrma_batch_retry(ep);
	nrma_send_connecting(ep);
	nrma_atomic_loop_retry(ep);
	nrma_tx_held_retry(ep);
	nrma_credit_refill(ep);
	nrma_send_resume_blocked(ep);
	nrma_credit_tell_owed(ep);
	x->waiting |= nrma_xfer_waiting(x);
}

/*
 * What completions may have let go: work that waited for them; and sends
 * in flight long without their ACK.  Nothing, on an idle endpoint, nor
 * for transmits that have no record (nrma_op_post_light): none waits for
 * an ACK.
 */
static void progress_retry(struct nrma_ep *ep)
{
	const struct nrma_xfer *x = ep->xfer;

	if (x->waiting)
		progress_retry_waiting(ep);
	if (x->sends && nrma_token_any(&x->ops))
		nrma_send_check_peers(ep);
}

/*
 * Connections whose work the device stopped ending (FI_NRMA_STALL_MS),
 * looked for when its completion queue was just emptied: a completion
 * still in it would look like a stall.
 */
static NRMA_NOINLINE void progress_check_stalls(struct nrma_ep *ep)
{
	struct nrma_xfer *x = ep->xfer;
	int64_t now = nrma_xfer_now_ms();

	if (now - x->stalls_checked_ms < NRMA_STALL_CHECK_MS)
		return;
	x->stalls_checked_ms = now;
	/* nrma_xfer_now_ms() is up to a tick behind: fail only once stall_ms
	 * surely passed. */
	nrma_cm_fail_stalled(ep->cm, now,
			     nrma_params.stall_ms + NRMA_CLOCK_TICK_MS);
}

static void progress_watch_stalls(struct nrma_ep *ep)
{
	const struct nrma_xfer *x = ep->xfer;

	/* Chains without a record are application transmits (x->sends). */
	if (nrma_params.stall_ms && (nrma_token_any(&x->ops) || x->sends))
		progress_check_stalls(ep);
}

/*
 * Whether progress has more to do than poll the device: work waits, or
 * operations or transmits are out, whose stalls are watched.
 */
static bool progress_busy(const struct nrma_xfer *x)
{
	return x->waiting || x->sends || nrma_token_any(&x->ops);
}

/* What the poll brought (x->wc, n of them), and what it let go. */
static NRMA_NOINLINE void progress_reaped(struct nrma_ep *ep,
					  struct nrma_comp_reader *reader,
					  int n, int budget)
{
	const struct nrma_wc *wc = ep->xfer->wc;
	struct nrma_comp_batch batch;
	bool batched = n > 0 && nrma_comp_batch_begin(ep, &batch, reader);

	for (int i = 0; i < n; i++) {
		if (wc[i].wr_id & NRMA_WR_RECV)
			progress_recv_wc(ep, &wc[i]);
		else if (wc[i].wr_id & NRMA_WR_LIGHT)
			progress_light_wc(ep, &wc[i]);
		else
			progress_op_wc(ep, &wc[i]);
	}
	if (batched)
		nrma_comp_batch_end(ep);
	if (n < budget)
		progress_watch_stalls(ep);
	progress_retry(ep);
}

/*
 * A disabled endpoint's device completes nothing more
 * (nrma_progress_disable).  Inline in nrma_progress_ep_read, the path of
 * every CQ and counter read: a poll that finds nothing on an idle
 * endpoint goes no further.  The completions land in the endpoint's own
 * array, not on this frame's stack: ep->lock is held, and a frame that
 * needs none keeps the empty read short.
 */
static NRMA_INLINE int progress_poll(struct nrma_ep *ep,
				     struct nrma_comp_reader *reader)
{
	int budget, n;

	if (!ep->enabled)
		return 0;
	nrma_verbs_ep_ack_events(ep->verbs);
	budget = progress_budget(ep);
	n = nrma_verbs_poll(ep->verbs, ep->xfer->wc, budget);
	if (n || progress_busy(ep->xfer))
		progress_reaped(ep, reader, n, budget);
	return n > 0 ? n : 0;
}

int nrma_progress_poll(struct nrma_ep *ep)
{
	return progress_poll(ep, NULL);
}

ssize_t nrma_progress_rx_ctx_recv(struct nrma_rx_ctx *rc,
				  const struct nrma_recv_args *args)
{
	if (args->flags & FI_PEEK)
		for (size_t i = 0; i < rc->count; i++)
			nrma_progress_poll(rc->eps[i]);
	return nrma_recv_ctx_recv(rc, args);
}

/*
 * The work requests the device still held for ep end as flushed, each
 * once, through the path of the device's own completions: operations',
 * then each connection's chains without a record.  A chain's last
 * request frees one send queue slot here: its connection failed.
 */
static void progress_flush_ops(struct nrma_ep *ep)
{
	struct nrma_xfer *x = ep->xfer;
	struct nrma_dlist *item, *next;

	for (uint32_t i = 0; i < nrma_token_count(&x->ops); i++) {
		struct nrma_op *op = nrma_op_at(x, i);
		uint64_t token;

		if (!nrma_token_in_use(&x->ops, i))
			continue;
		token = nrma_op_token(x, op);
		while (nrma_token_find(&x->ops, token) == i &&
		       (op->wc_pending || op->wc_orphans)) {
			uint64_t slots = op->wc_pending ? 1 : 0;
			struct nrma_wc wc = {
				.wr_id = i | slots << NRMA_WR_SLOTS_SHIFT,
				.status = nrma_verbs_status_flushed,
			};

			progress_op_wc(ep, &wc);
		}
	}
	nrma_dlist_foreach_safe (nrma_cm_conns(ep->cm), item, next) {
		struct nrma_conn *conn =
			nrma_container_of(item, struct nrma_conn, link);

		while (nrma_op_light_busy(conn)) {
			struct nrma_wc wc = nrma_op_light_flush_wc(
				conn, nrma_verbs_status_flushed);

			progress_light_wc(ep, &wc);
		}
	}
}

/*
 * A critical error (fi_endpoint(3)): ep's device resources are broken.
 * It goes back to the disabled state for good, and every operation
 * pending on it is discarded with an error completion: its connections
 * fail, what the device held is flushed, what waited for either fails,
 * and posted receives are cancelled.  Peers see the connections close.
 */
void nrma_progress_disable(struct nrma_ep *ep, int err)
{
	NRMA_WARN(FI_LOG_EP_CTRL, "endpoint disabled: %s\n", fi_strerror(err));
	nrma_cm_disable(ep->cm, -FI_ECANCELED);
	progress_flush_ops(ep);
	progress_retry(ep);
	nrma_recv_discard(ep);
	nrma_trigger_cancel_all(ep);
	ep->enabled = false;
	ep->critical = err;
}

/* Endpoints */

/*
 * Device completions, then the connections they released.  Connection
 * events are the control progress thread's: reaping them here would cost
 * every poll a system call and an allocation in librdmacm.
 */
void nrma_progress_ep_read(struct nrma_ep *ep, struct nrma_comp_reader *reader)
{
	bool triggered = false;

	pthread_mutex_lock(ep->lock);
	if (ep->enabled) {
		progress_poll(ep, reader);
		nrma_cm_reap(ep->cm);
		triggered = !nrma_dlist_empty(&ep->xfer->triggered);
		ep->app_progressed = true;
	}
	pthread_mutex_unlock(ep->lock);
	if (triggered)
		nrma_trigger_fire_ready(ep);
}

void nrma_progress_ep(struct nrma_ep *ep)
{
	nrma_progress_ep_read(ep, NULL);
}

/*
 * Asks for a channel event on the next completion, then looks once more:
 * one that arrived before arming raises no event.
 */
int nrma_progress_arm(struct nrma_ep *ep)
{
	int ret = 0;

	pthread_mutex_lock(ep->lock);
	if (ep->enabled) {
		ret = nrma_verbs_ep_arm(ep->verbs);
		if (!ret && nrma_progress_poll(ep))
			ret = -FI_EAGAIN;
	}
	pthread_mutex_unlock(ep->lock);
	return ret;
}

/*
 * An endpoint that the application holds, or progressed since the last
 * look, is left to it: the thread would only contend for its lock.  One
 * left alone is progressed, and its CQ armed (then polled once more, as
 * in nrma_progress_arm) so that its next completion wakes the thread.
 */
bool nrma_progress_auto(struct nrma_ep *ep)
{
	bool busy = false, triggered = false;

	if (pthread_mutex_trylock(ep->lock))
		return true;
	if (ep->enabled && ep->app_progressed) {
		ep->app_progressed = false;
		busy = progress_busy(ep->xfer);
	} else if (ep->enabled) {
		progress_poll(ep, NULL);
		nrma_cm_reap(ep->cm);
		if (!nrma_verbs_ep_arm(ep->verbs))
			progress_poll(ep, NULL);
		triggered = !nrma_dlist_empty(&ep->xfer->triggered);
		busy = triggered || progress_busy(ep->xfer);
	}
	pthread_mutex_unlock(ep->lock);
	if (triggered)
		nrma_trigger_fire_ready(ep);
	return busy;
}

/*
 * ACKs tell peers that their sends completed: let them leave.  Another
 * thread may still progress ep through a shared CQ, hence the lock.
 */
#define NRMA_LINGER_MS 1000

void nrma_progress_linger(struct nrma_ep *ep)
{
	struct nrma_xfer *x = ep->xfer;
	struct timespec start;

	clock_gettime(CLOCK_MONOTONIC, &start);
	pthread_mutex_lock(ep->lock);
	while ((x->acks || !nrma_dlist_empty(&x->pending_acks)) &&
	       nrma_wait_timeout_left(&start, NRMA_LINGER_MS))
		nrma_progress_poll(ep);
	pthread_mutex_unlock(ep->lock);
}

/*
 * A connection ended by the application (fi_shutdown): what was posted
 * on it completes, with errors, before the call returns.
 */
void nrma_progress_settle(struct nrma_ep *ep)
{
	struct nrma_conn *conn;
	struct timespec start;

	clock_gettime(CLOCK_MONOTONIC, &start);
	pthread_mutex_lock(ep->lock);
	while ((conn = nrma_cm_msg_conn(ep->cm)) && conn->refs &&
	       nrma_wait_timeout_left(&start, NRMA_LINGER_MS))
		nrma_progress_poll(ep);
	pthread_mutex_unlock(ep->lock);
}

/* What connection management reports */

static void progress_conn_failed(void *arg, struct nrma_conn *conn)
{
	if (!conn->xfer)
		return; /* it never opened: nothing of ours uses it */
	nrma_tx_held_fail(arg, conn, FI_ECONNRESET);
	nrma_send_conn_failed(arg, conn);
	nrma_rma_conn_failed(arg, conn);
	nrma_recv_conn_failed(arg, conn);
}

void nrma_progress_drain(void *arg)
{
	while (nrma_progress_poll(arg) > 0)
		;
}

void nrma_progress_probe(void *arg, struct nrma_conn *conn)
{
	nrma_tx_probe(arg, conn);
}

int nrma_progress_conn_open(void *arg, struct nrma_conn *conn)
{
	int ret = nrma_xfer_conn_open(conn);

	if (ret)
		return ret;
	nrma_send_conn_open(arg, conn);
	return nrma_credit_conn_open(arg, conn);
}

void nrma_progress_conn_close(void *arg, struct nrma_conn *conn)
{
	if (!conn->xfer) /* it never opened */
		return;
	nrma_recv_conn_close(conn);
	nrma_credit_conn_close(arg, conn);
	nrma_rkey_conn_close(conn);
	nrma_tx_held_drop(conn);
	nrma_xfer_conn_close(conn);
}

/*
 * Sends that waited for a connection go as it comes up, with no call of
 * the application's: connections are made by control progress, which is
 * automatic.
 */
static void progress_connected(void *arg, struct nrma_conn *conn,
			       const void *app, size_t len)
{
	(void) app;
	(void) len;
	nrma_credit_connected(arg, conn);
	nrma_send_connecting(arg);
}

const struct nrma_cm_ops nrma_progress_cm_ops = {
	.conn_failed = progress_conn_failed,
	.drain = nrma_progress_drain,
	.probe = nrma_progress_probe,
	.conn_open = nrma_progress_conn_open,
	.conn_close = nrma_progress_conn_close,
	.connected = progress_connected,
};
