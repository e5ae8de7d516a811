/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Progress.  Data progress is manual: reading a CQ or counter progresses
 * the endpoints bound to it (their endpoint set), and an endpoint's
 * progress reaps its device completions, hands each to the side of the
 * protocol it belongs to, retries what a full queue held back, and reaps
 * connection events.  Control progress is automatic as well: a thread per
 * domain sleeps on its endpoints' connection channels and handles their
 * events as they come, so that a peer is accepted while the application
 * makes no call (a target of notified RMA only reads its counters).
 * Connection management reports back through the callbacks at the end of
 * this file.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "nrma_comp.h"
#include "nrma_xfer.h"

#define NRMA_POLL_BATCH 16

/* Endpoint sets of CQs and counters */

void nrma_ep_set_init(struct nrma_ep_set *set)
{
	pthread_mutex_init(&set->lock, NULL);
	set->eps = NULL;
	set->count = 0;
}

void nrma_ep_set_fini(struct nrma_ep_set *set)
{
	free(set->eps);
	pthread_mutex_destroy(&set->lock);
}

/* The fds whose readiness means the endpoint has progress to make. */
static int progress_watch(struct nrma_ep *ep, struct nrma_wait *wait)
{
	int ret = nrma_wait_add_fd(wait, nrma_verbs_ep_fd(ep->verbs));

	if (!ret)
		ret = nrma_wait_add_fd(wait, nrma_cm_fd(ep->cm));
	return ret;
}

static void progress_unwatch(struct nrma_ep *ep, struct nrma_wait *wait)
{
	nrma_wait_del_fd(wait, nrma_verbs_ep_fd(ep->verbs));
	nrma_wait_del_fd(wait, nrma_cm_fd(ep->cm));
}

int nrma_ep_set_add(struct nrma_ep_set *set, struct nrma_ep *ep,
		    struct nrma_wait *wait)
{
	struct nrma_ep **eps;
	int ret = 0;

	pthread_mutex_lock(&set->lock);
	for (size_t i = 0; i < set->count; i++)
		if (set->eps[i] == ep)
			goto out; /* bound for both directions */
	eps = realloc(set->eps, (set->count + 1) * sizeof(*eps));
	if (!eps) {
		ret = -FI_ENOMEM;
		goto out;
	}
	set->eps = eps;
	ret = progress_watch(ep, wait);
	if (!ret)
		set->eps[set->count++] = ep;
out:
	pthread_mutex_unlock(&set->lock);
	return ret;
}

void nrma_ep_set_del(struct nrma_ep_set *set, struct nrma_ep *ep,
		     struct nrma_wait *wait)
{
	pthread_mutex_lock(&set->lock);
	for (size_t i = 0; i < set->count; i++) {
		if (set->eps[i] != ep)
			continue;
		progress_unwatch(ep, wait);
		set->eps[i] = set->eps[--set->count];
		break;
	}
	pthread_mutex_unlock(&set->lock);
}

void nrma_ep_set_progress(struct nrma_ep_set *set)
{
	pthread_mutex_lock(&set->lock);
	for (size_t i = 0; i < set->count; i++)
		nrma_ep_progress(set->eps[i]);
	pthread_mutex_unlock(&set->lock);
}

int nrma_ep_set_arm(struct nrma_ep_set *set)
{
	int ret = 0;

	pthread_mutex_lock(&set->lock);
	for (size_t i = 0; i < set->count && !ret; i++)
		ret = nrma_ep_arm(set->eps[i]);
	pthread_mutex_unlock(&set->lock);
	return ret;
}

/*
 * How long a wait on ep may sleep (< 0: for ever) without missing what
 * raises no event: credits that remote atomics give back, counters that
 * held triggered operations wait for, and, with stalls, a device that
 * stopped ending the work in flight.
 */
static int progress_sleep_bound(struct nrma_ep *ep, bool stalls)
{
	int bound = -1;

	pthread_mutex_lock(ep->lock);
	if (!ep->enabled)
		bound = -1;
	else if (!nrma_dlist_empty(&ep->xfer->blocked_conns) ||
		 !nrma_dlist_empty(&ep->xfer->triggered))
		bound = nrma_params.notify_wake_ms;
	else if (stalls && nrma_params.stall_ms && nrma_cm_busy(ep->cm))
		bound = NRMA_STALL_CHECK_MS;
	pthread_mutex_unlock(ep->lock);
	return bound;
}

static int progress_set_sleep_bound(struct nrma_ep_set *set, int left_ms,
				    bool stalls)
{
	pthread_mutex_lock(&set->lock);
	for (size_t i = 0; i < set->count; i++) {
		int bound = progress_sleep_bound(set->eps[i], stalls);

		if (bound >= 0 && (left_ms < 0 || bound < left_ms))
			left_ms = bound;
	}
	pthread_mutex_unlock(&set->lock);
	return left_ms;
}

int nrma_ep_set_sleep_ms(struct nrma_ep_set *set, int left_ms)
{
	return progress_set_sleep_bound(set, left_ms, true);
}

bool nrma_ep_set_polled(struct nrma_ep_set *set)
{
	return progress_set_sleep_bound(set, -1, false) >= 0;
}

/* Work completions */

static void progress_send_wc(struct nrma_ep *ep, struct nrma_op *op)
{
	if (op->error)
		op->ack_pending = false;
	/* the payload is in the peer's memory: the bounce buffer is free */
	if (op->buf >= 0) {
		nrma_bufpool_put(&ep->xfer->tx_bufs, op->buf);
		op->buf = -1;
	}
	nrma_send_finish(ep, op);
}

/* What flushed a request: a connection that timed out times it out. */
static int progress_wc_errno(const struct nrma_conn *conn,
			     const struct nrma_wc *wc)
{
	if (wc->status == nrma_verbs_status_flushed &&
	    conn->error == -FI_ETIMEDOUT)
		return FI_ETIMEDOUT;
	return nrma_verbs_status_errno(wc->status);
}

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
		op->error = progress_wc_errno(op->conn, wc);
		op->prov_errno = wc->status;
		nrma_conn_fail(op->conn, -op->error);
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

static void progress_op_wc(struct nrma_ep *ep, const struct nrma_wc *wc)
{
	struct nrma_op *op = nrma_op_at(ep->xfer, (uint32_t) wc->wr_id);

	if (!progress_chain_done(op, wc))
		return;
	switch (op->kind) {
	case NRMA_OP_SEND:
		progress_send_wc(ep, op);
		break;
	case NRMA_OP_ACK:
		ep->xfer->acks--;
		nrma_op_free(ep->xfer, op);
		break;
	case NRMA_OP_READ:
		if (op->read.rx) /* else its receive context closed */
			op->read.rx->reads--;
		if (!op->wc_pending && !op->queued)
			nrma_read_finish(ep, op);
		break;
	case NRMA_OP_RMA:
		nrma_rma_finish(ep, op);
		break;
	case NRMA_OP_PROBE:
		op->conn->probing = false;
		nrma_op_free(ep->xfer, op);
		break;
	case NRMA_OP_CREDIT:
		nrma_credit_returned(ep, op);
		break;
	case NRMA_OP_RESOLVE:
		nrma_rkey_read_done(ep, op);
		break;
	case NRMA_OP_NOTIFY:
		nrma_batch_notified(ep, op);
		break;
	}
}

static void progress_recv_wc(struct nrma_ep *ep, const struct nrma_wc *wc)
{
	uint32_t buf = (uint32_t) wc->wr_id;
	struct nrma_conn *conn;

	ep->xfer->srq_posted--;
	if (wc->status) {
		nrma_rx_buf_release(ep, buf);
		return;
	}
	conn = nrma_conn_by_qp(ep->cm, wc->qp_num);
	if (conn)
		nrma_conn_heard(conn);
	if (wc->op == NRMA_WC_RECV_IMM) {
		bool kept = !conn || nrma_credit_arrived(ep, conn, buf,
							 NRMA_CREDIT_CTL, NULL);

		nrma_rx_buf_release(ep, buf);
		if (kept)
			nrma_rma_write_data(ep, wc, conn);
		else
			nrma_conn_fail(conn, -FI_EIO); /* past its credits */
		return;
	}
	nrma_recv_message(ep, buf, wc->len, conn);
}

/* Stop reaping the device while the application's CQs are full. */
static int progress_budget(struct nrma_ep *ep)
{
	size_t room = nrma_comp_room(ep);

	return room < NRMA_POLL_BATCH ? (int) room : NRMA_POLL_BATCH;
}

/*
 * What completions may have let go: work that waited for them; and sends
 * in flight long without their ACK.  Nothing, on an idle endpoint.
 */
static void progress_retry(struct nrma_ep *ep)
{
	struct nrma_xfer *x = ep->xfer;

	if (nrma_xfer_waiting(x)) {
		nrma_stalled_retry(ep);
		nrma_reads_retry(ep);
		nrma_acks_retry(ep);
		nrma_batch_retry(ep);
		nrma_send_connecting(ep);
		nrma_credit_progress(ep);
	}
	if (x->sends)
		nrma_send_check_peers(ep);
}

/*
 * Connections whose work the device stopped ending (FI_NRMA_STALL_MS),
 * looked for when its completion queue was just emptied: a completion
 * still in it would look like a stall.
 */
static void progress_watch_stalls(struct nrma_ep *ep)
{
	struct nrma_xfer *x = ep->xfer;
	int64_t now;

	if (!nrma_params.stall_ms || !nrma_token_any(&x->ops))
		return;
	now = nrma_now_ms();
	if (now - x->stalls_checked_ms < NRMA_STALL_CHECK_MS)
		return;
	x->stalls_checked_ms = now;
	/* nrma_now_ms() is up to a tick behind: fail only once stall_ms
	 * surely passed. */
	nrma_cm_fail_stalled(ep->cm, now,
			     nrma_params.stall_ms + NRMA_CLOCK_TICK_MS);
}

/* A disabled endpoint's device completes nothing more (nrma_ep_disable). */
int nrma_progress_poll(struct nrma_ep *ep)
{
	struct nrma_wc wc[NRMA_POLL_BATCH];
	int budget, n;

	if (!ep->enabled)
		return 0;
	nrma_verbs_ep_ack_events(ep->verbs);
	budget = progress_budget(ep);
	n = nrma_verbs_poll(ep->verbs, wc, budget);
	for (int i = 0; i < n; i++) {
		if (wc[i].wr_id & NRMA_WR_RECV)
			progress_recv_wc(ep, &wc[i]);
		else
			progress_op_wc(ep, &wc[i]);
	}
	if (n < budget)
		progress_watch_stalls(ep);
	progress_retry(ep);
	return n > 0 ? n : 0;
}

/*
 * The work requests the device still held for ep end as flushed, each
 * once, through the path of the device's own completions.  A chain's
 * last request frees one send queue slot here: its connection failed.
 */
static void progress_flush_ops(struct nrma_ep *ep)
{
	struct nrma_xfer *x = ep->xfer;

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
}

/*
 * A critical error (fi_endpoint(3)): ep's device resources are broken.
 * It goes back to the disabled state for good, and every operation
 * pending on it is discarded with an error completion: its connections
 * fail, what the device held is flushed, what waited for either fails,
 * and posted receives are cancelled.  Peers see the connections close.
 */
static void nrma_ep_disable(struct nrma_ep *ep, int err)
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
void nrma_ep_progress(struct nrma_ep *ep)
{
	bool triggered = false;

	pthread_mutex_lock(ep->lock);
	if (ep->enabled) {
		nrma_progress_poll(ep);
		nrma_cm_reap(ep->cm);
		triggered = !nrma_dlist_empty(&ep->xfer->triggered);
	}
	pthread_mutex_unlock(ep->lock);
	if (triggered)
		nrma_trigger_fire_ready(ep);
}

/*
 * Asks for a channel event on the next completion, then looks once more:
 * one that arrived before arming raises no event.
 */
int nrma_ep_arm(struct nrma_ep *ep)
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
 * ACKs tell peers that their sends completed: let them leave.  Another
 * thread may still progress ep through a shared CQ, hence the lock.
 */
#define NRMA_LINGER_MS 1000

void nrma_ep_linger(struct nrma_ep *ep)
{
	struct nrma_xfer *x = ep->xfer;
	struct timespec start;

	clock_gettime(CLOCK_MONOTONIC, &start);
	pthread_mutex_lock(ep->lock);
	while ((x->acks || !nrma_dlist_empty(&x->pending_acks)) &&
	       nrma_timeout_left(&start, NRMA_LINGER_MS))
		nrma_progress_poll(ep);
	pthread_mutex_unlock(ep->lock);
}

/*
 * A connection ended by the application (fi_shutdown): what was posted
 * on it completes, with errors, before the call returns.
 */
void nrma_ep_settle(struct nrma_ep *ep)
{
	struct nrma_conn *conn;
	struct timespec start;

	clock_gettime(CLOCK_MONOTONIC, &start);
	pthread_mutex_lock(ep->lock);
	while ((conn = nrma_cm_msg_conn(ep->cm)) && conn->refs &&
	       nrma_timeout_left(&start, NRMA_LINGER_MS))
		nrma_progress_poll(ep);
	pthread_mutex_unlock(ep->lock);
}

/* Control progress */

#define NRMA_CM_THREAD_BATCH 16

/*
 * What the thread watches: an endpoint's connections, or a passive
 * endpoint's listener (handled by fn).  key is its epoll ptr.
 */
struct progress_watch {
	void *key;
	struct nrma_ep *ep;
	void (*fn)(void *arg);
};

struct nrma_cm_thread {
	pthread_t thread;
	pthread_mutex_t lock; /* held while it handles what it watches */
	int epoll_fd;
	int stop_fd; /* in the epoll set with a NULL ptr */
	/* The device's events, if any: in the epoll set with the thread's
	 * ptr. */
	struct nrma_verbs_domain *vdom;
	nrma_async_report_fn report;
	struct progress_watch *watches;
	size_t count;
	struct nrma_dlist running; /* in progress_threads while it runs */
	pid_t pid;		   /* the process that started it */
};

/*
 * Threads still running when libfabric unloads the provider: an
 * application may exit with its domains open, and a thread left in code
 * that dlclose unmapped faults on its next connection event.
 */
static struct nrma_dlist progress_threads = { &progress_threads,
					      &progress_threads };
static pthread_mutex_t progress_threads_lock = PTHREAD_MUTEX_INITIALIZER;

static struct progress_watch *progress_thread_watch_of(struct nrma_cm_thread *t,
						       void *key)
{
	for (size_t i = 0; i < t->count; i++)
		if (t->watches[i].key == key)
			return &t->watches[i];
	return NULL;
}

/* What was unwatched since epoll_wait returned is left alone. */
static void progress_thread_handle(struct nrma_cm_thread *t, void *key)
{
	struct progress_watch *w;

	pthread_mutex_lock(&t->lock);
	w = progress_thread_watch_of(t, key);
	if (w && w->ep) {
		pthread_mutex_lock(w->ep->lock);
		nrma_cm_progress(w->ep->cm);
		pthread_mutex_unlock(w->ep->lock);
	} else if (w) {
		w->fn(key);
	}
	pthread_mutex_unlock(&t->lock);
}

/* What a device event means for one endpoint on its device. */
static void progress_device_event_ep(struct nrma_cm_thread *t,
				     struct nrma_ep *ep,
				     const struct nrma_verbs_event *ev)
{
	struct nrma_conn *conn;
	int err = 0;

	pthread_mutex_lock(ep->lock);
	switch (ev->kind) {
	case NRMA_VERBS_EVENT_QP:
		conn = nrma_conn_by_qp(ep->cm, ev->qp_num);
		if (conn) {
			nrma_conn_fail(conn, -FI_EIO);
			err = FI_EIO;
		}
		break;
	case NRMA_VERBS_EVENT_EP:
		/* Its completion or receive queue broke. */
		if (ep->verbs == ev->vep)
			err = FI_EOVERRUN;
		break;
	case NRMA_VERBS_EVENT_DEVICE:
		err = FI_EIO;
		break;
	case NRMA_VERBS_EVENT_OTHER:
		break;
	}
	if (err && ev->kind != NRMA_VERBS_EVENT_QP) {
		if (ep->critical)
			err = 0; /* it was told */
		else
			nrma_ep_disable(ep, err);
	}
	pthread_mutex_unlock(ep->lock);
	if (err)
		t->report(ep, err, ev->type);
}

/*
 * The device context is shared by every domain on the device, whose
 * threads all watch its events: the one that reads an event hands it to
 * the endpoints of all of them.
 */
static void progress_device_event(struct nrma_cm_thread *reader,
				  const struct nrma_verbs_event *ev)
{
	struct nrma_dlist *item;
	pid_t self = getpid();

	NRMA_INFO(FI_LOG_DOMAIN, "device event: %s\n",
		  nrma_verbs_event_str(ev->type));
	pthread_mutex_lock(&progress_threads_lock);
	nrma_dlist_foreach (&progress_threads, item) {
		struct nrma_cm_thread *t =
			nrma_container_of(item, struct nrma_cm_thread, running);

		if (t->pid != self || !t->vdom ||
		    !nrma_verbs_domain_same_device(t->vdom, reader->vdom))
			continue;
		pthread_mutex_lock(&t->lock);
		for (size_t i = 0; i < t->count; i++)
			if (t->watches[i].ep)
				progress_device_event_ep(t, t->watches[i].ep,
							 ev);
		pthread_mutex_unlock(&t->lock);
	}
	pthread_mutex_unlock(&progress_threads_lock);
}

static void progress_device_events(struct nrma_cm_thread *t)
{
	struct nrma_verbs_event ev;

	while (!nrma_verbs_domain_event(t->vdom, &ev))
		progress_device_event(t, &ev);
}

static void *progress_thread_main(void *arg)
{
	struct nrma_cm_thread *t = arg;
	struct epoll_event ev[NRMA_CM_THREAD_BATCH];

	for (;;) {
		int n = epoll_wait(t->epoll_fd, ev, NRMA_CM_THREAD_BATCH, -1);

		if (n < 0 && errno != EINTR) {
			NRMA_WARN(FI_LOG_EP_CTRL,
				  "control progress stops: %s\n",
				  strerror(errno));
			return NULL;
		}
		for (int i = 0; i < n; i++) {
			if (!ev[i].data.ptr)
				return NULL;
			if (ev[i].data.ptr == t)
				progress_device_events(t);
			else
				progress_thread_handle(t, ev[i].data.ptr);
		}
	}
}

static int progress_epoll_add(int epoll_fd, int fd, void *ptr)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = ptr };

	return epoll_ctl(epoll_fd, EPOLL_CTL_ADD, fd, &ev) ? -errno : 0;
}

/* The application's signals are for its own threads. */
static int progress_thread_start(struct nrma_cm_thread *t)
{
	sigset_t all, old;
	int ret;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	ret = -pthread_create(&t->thread, NULL, progress_thread_main, t);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (ret)
		return ret;
	t->pid = getpid();
	pthread_mutex_lock(&progress_threads_lock);
	nrma_dlist_insert_tail(&t->running, &progress_threads);
	pthread_mutex_unlock(&progress_threads_lock);
	return 0;
}

/*
 * A forked child inherits the list but not the threads, and shares their
 * stop eventfds with its parent: it leaves its parent's threads alone.
 */
static void progress_thread_stop(struct nrma_cm_thread *t)
{
	uint64_t one = 1;
	bool running;

	pthread_mutex_lock(&progress_threads_lock);
	running = !nrma_dlist_empty(&t->running) && t->pid == getpid();
	if (running)
		nrma_dlist_remove(&t->running);
	pthread_mutex_unlock(&progress_threads_lock);
	if (!running)
		return;
	if (write(t->stop_fd, &one, sizeof(one)) != sizeof(one))
		NRMA_WARN(FI_LOG_DOMAIN, "cannot stop control progress: %s\n",
			  strerror(errno));
	else
		pthread_join(t->thread, NULL);
}

static void progress_thread_free(struct nrma_cm_thread *t)
{
	if (t->stop_fd >= 0)
		close(t->stop_fd);
	if (t->epoll_fd >= 0)
		close(t->epoll_fd);
	pthread_mutex_destroy(&t->lock);
	free(t->watches);
	free(t);
}

static int progress_thread_fds(struct nrma_cm_thread *t)
{
	int event_fd;

	t->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
	t->stop_fd = eventfd(0, EFD_CLOEXEC);
	if (t->epoll_fd < 0 || t->stop_fd < 0)
		return -errno;
	if (progress_epoll_add(t->epoll_fd, t->stop_fd, NULL))
		return -errno;
	if (!t->vdom)
		return 0;
	event_fd = nrma_verbs_domain_event_fd(t->vdom);
	if (event_fd < 0)
		return event_fd;
	return progress_epoll_add(t->epoll_fd, event_fd, t);
}

int nrma_cm_thread_open(struct nrma_verbs_domain *vdom,
			nrma_async_report_fn report,
			struct nrma_cm_thread **thread)
{
	struct nrma_cm_thread *t = calloc(1, sizeof(*t));
	int ret;

	if (!t)
		return -FI_ENOMEM;
	pthread_mutex_init(&t->lock, NULL);
	nrma_dlist_init(&t->running);
	t->vdom = vdom;
	t->report = report;
	ret = progress_thread_fds(t);
	if (!ret)
		ret = progress_thread_start(t);
	if (ret) {
		NRMA_WARN(FI_LOG_DOMAIN, "no control progress thread: %s\n",
			  fi_strerror(-ret));
		progress_thread_free(t);
		return ret;
	}
	*thread = t;
	return 0;
}

void nrma_cm_thread_close(struct nrma_cm_thread *t)
{
	progress_thread_stop(t);
	progress_thread_free(t);
}

static struct nrma_cm_thread *progress_thread_next_own(void)
{
	struct nrma_cm_thread *own = NULL;
	struct nrma_dlist *item;
	pid_t self = getpid();

	pthread_mutex_lock(&progress_threads_lock);
	nrma_dlist_foreach (&progress_threads, item) {
		struct nrma_cm_thread *t =
			nrma_container_of(item, struct nrma_cm_thread, running);

		if (t->pid == self) {
			own = t;
			break;
		}
	}
	pthread_mutex_unlock(&progress_threads_lock);
	return own;
}

/* Called as libfabric unloads the provider, with domains still open. */
void nrma_cm_threads_stop(void)
{
	struct nrma_cm_thread *t;

	while ((t = progress_thread_next_own()))
		progress_thread_stop(t);
}

static int progress_thread_add(struct nrma_cm_thread *t, int fd,
			       struct progress_watch w)
{
	struct progress_watch *watches;
	int ret;

	pthread_mutex_lock(&t->lock);
	watches = realloc(t->watches, (t->count + 1) * sizeof(*watches));
	if (!watches) {
		ret = -FI_ENOMEM;
		goto out;
	}
	t->watches = watches;
	ret = progress_epoll_add(t->epoll_fd, fd, w.key);
	if (!ret)
		t->watches[t->count++] = w;
out:
	pthread_mutex_unlock(&t->lock);
	return ret;
}

/* Once it returns, the thread is done with key. */
static void progress_thread_del(struct nrma_cm_thread *t, int fd, void *key)
{
	struct progress_watch *w;

	pthread_mutex_lock(&t->lock);
	w = progress_thread_watch_of(t, key);
	if (w) {
		epoll_ctl(t->epoll_fd, EPOLL_CTL_DEL, fd, NULL);
		*w = t->watches[--t->count];
	}
	pthread_mutex_unlock(&t->lock);
}

int nrma_cm_thread_watch(struct nrma_cm_thread *t, struct nrma_ep *ep)
{
	return progress_thread_add(
		t, nrma_cm_fd(ep->cm),
		(struct progress_watch){ .key = ep, .ep = ep });
}

void nrma_cm_thread_unwatch(struct nrma_cm_thread *t, struct nrma_ep *ep)
{
	progress_thread_del(t, nrma_cm_fd(ep->cm), ep);
}

int nrma_cm_thread_watch_fn(struct nrma_cm_thread *t, int fd,
			    void (*fn)(void *arg), void *arg)
{
	return progress_thread_add(
		t, fd, (struct progress_watch){ .key = arg, .fn = fn });
}

void nrma_cm_thread_each_ep(struct nrma_cm_thread *t,
			    void (*fn)(struct nrma_ep *ep, void *arg),
			    void *arg)
{
	pthread_mutex_lock(&t->lock);
	for (size_t i = 0; i < t->count; i++) {
		struct nrma_ep *ep = t->watches[i].ep;

		if (!ep)
			continue;
		pthread_mutex_lock(ep->lock);
		fn(ep, arg);
		pthread_mutex_unlock(ep->lock);
	}
	pthread_mutex_unlock(&t->lock);
}

void nrma_cm_thread_unwatch_fn(struct nrma_cm_thread *t, int fd, void *arg)
{
	progress_thread_del(t, fd, arg);
}

/* What connection management reports */

static void progress_conn_failed(void *arg, struct nrma_conn *conn)
{
	nrma_send_conn_failed(arg, conn);
	nrma_batch_conn_failed(arg, conn);
}

void nrma_progress_drain(void *arg)
{
	while (nrma_progress_poll(arg) > 0)
		;
}

void nrma_progress_probe(void *arg, struct nrma_conn *conn)
{
	nrma_probe(arg, conn);
}

int nrma_progress_conn_open(void *arg, struct nrma_conn *conn)
{
	return nrma_credit_conn_open(arg, conn);
}

void nrma_progress_conn_close(void *arg, struct nrma_conn *conn)
{
	nrma_credit_conn_close(arg, conn);
	nrma_rkey_conn_close(conn);
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
