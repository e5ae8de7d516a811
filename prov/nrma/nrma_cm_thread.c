/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Control progress: a thread per domain sleeps on the connection channels
 * of its enabled endpoints (and a fabric's on its passive endpoints'
 * listeners) and handles their events as they come, so that a peer is
 * accepted while the application makes no call.  It also reads the
 * device's asynchronous events and hands them to the endpoints they break,
 * and, in a domain opened with automatic data progress, progresses the
 * endpoints that the application leaves alone: on their device CQs'
 * events, and on a tick while one has work out, since work that waits for
 * credits or for the application's CQ room raises no event.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "nrma_progress.h"
#include "nrma_xfer.h"

#define NRMA_CM_THREAD_BATCH   16
/* With automatic data progress and no work out: a look now and then. */
#define NRMA_CM_THREAD_IDLE_MS 100

/*
 * What the thread watches: an endpoint's connections, its device CQ's
 * channel (data, with automatic data progress), or a passive endpoint's
 * listener (handled by fn).  key is its epoll ptr.
 */
struct cm_thread_watch {
	void *key;
	struct nrma_ep *ep;
	bool data;
	void (*fn)(void *arg);
};

struct nrma_cm_thread {
	pthread_t thread;
	pthread_mutex_t lock; /* held while it handles what it watches */
	int epoll_fd;
	int wake_fd; /* in the epoll set with a NULL ptr */
	atomic_bool stopping;
	/* The device's events, if any: in the epoll set with the thread's
	 * ptr. */
	struct nrma_verbs_domain *vdom;
	nrma_async_report_fn report;
	struct cm_thread_watch *watches;
	size_t count;
	/* Automatic data progress: endpoints it progresses, whether one
	 * had work out at the last tick, and when the next is due. */
	bool auto_data;
	size_t data_count;
	bool busy;
	int64_t next_tick_ms;
	struct nrma_dlist running; /* in cm_threads while it runs */
	pid_t pid;		   /* the process that started it */
};

/*
 * Threads still running when libfabric unloads the provider: an
 * application may exit with its domains open, and a thread left in code
 * that dlclose unmapped faults on its next connection event.
 */
static struct nrma_dlist cm_threads = { &cm_threads, &cm_threads };
static pthread_mutex_t cm_threads_lock = PTHREAD_MUTEX_INITIALIZER;

static struct cm_thread_watch *cm_thread_watch_of(struct nrma_cm_thread *t,
						  void *key)
{
	for (size_t i = 0; i < t->count; i++)
		if (t->watches[i].key == key)
			return &t->watches[i];
	return NULL;
}

/*
 * What was unwatched since epoll_wait returned is left alone.  An endpoint
 * found with work out on its CQ's event has the ticks start.
 */
static void cm_thread_handle(struct nrma_cm_thread *t, void *key)
{
	struct cm_thread_watch *w;

	pthread_mutex_lock(&t->lock);
	w = cm_thread_watch_of(t, key);
	if (w && w->data) {
		if (nrma_progress_auto(w->ep) && !t->busy) {
			t->busy = true;
			t->next_tick_ms = nrma_wait_now_ms() +
					  nrma_params.progress_ms;
		}
	} else if (w && w->ep) {
		pthread_mutex_lock(w->ep->lock);
		nrma_cm_progress(w->ep->cm);
		pthread_mutex_unlock(w->ep->lock);
	} else if (w) {
		w->fn(key);
	}
	pthread_mutex_unlock(&t->lock);
}

/* What a device event means for one endpoint on its device. */
static void cm_thread_device_event_ep(struct nrma_cm_thread *t,
				      struct nrma_ep *ep,
				      const struct nrma_verbs_event *ev)
{
	struct nrma_conn *conn;
	int err = 0;

	pthread_mutex_lock(ep->lock);
	switch (ev->kind) {
	case NRMA_VERBS_EVENT_QP:
		conn = nrma_cm_conn_by_qp(ep->cm, ev->qp_num);
		if (conn) {
			nrma_cm_conn_fail(conn, -FI_EIO);
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
			nrma_progress_disable(ep, err);
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
static void cm_thread_device_event(struct nrma_cm_thread *reader,
				   const struct nrma_verbs_event *ev)
{
	struct nrma_dlist *item;
	pid_t self = getpid();

	NRMA_INFO(FI_LOG_DOMAIN, "device event: %s\n",
		  nrma_verbs_event_str(ev->type));
	pthread_mutex_lock(&cm_threads_lock);
	nrma_dlist_foreach (&cm_threads, item) {
		struct nrma_cm_thread *t =
			nrma_container_of(item, struct nrma_cm_thread, running);

		if (t->pid != self || !t->vdom ||
		    !nrma_verbs_domain_same_device(t->vdom, reader->vdom))
			continue;
		pthread_mutex_lock(&t->lock);
		for (size_t i = 0; i < t->count; i++)
			if (t->watches[i].ep && !t->watches[i].data)
				cm_thread_device_event_ep(t, t->watches[i].ep,
							  ev);
		pthread_mutex_unlock(&t->lock);
	}
	pthread_mutex_unlock(&cm_threads_lock);
}

static void cm_thread_device_events(struct nrma_cm_thread *t)
{
	struct nrma_verbs_event ev;

	while (!nrma_verbs_domain_event(t->vdom, &ev))
		cm_thread_device_event(t, &ev);
}

/*
 * Every endpoint it progresses, when a tick is due: the next comes after
 * FI_NRMA_PROGRESS_MS while one has work out, else after a while.  How
 * long to sleep until then; -1, forever, with no such endpoint.
 */
static int cm_thread_tick(struct nrma_cm_thread *t)
{
	int64_t now = nrma_wait_now_ms();
	int left = -1;

	pthread_mutex_lock(&t->lock);
	if (t->data_count && now >= t->next_tick_ms) {
		t->busy = false;
		for (size_t i = 0; i < t->count; i++)
			if (t->watches[i].data)
				t->busy |= nrma_progress_auto(t->watches[i].ep);
		t->next_tick_ms = now + (t->busy ? nrma_params.progress_ms :
						   NRMA_CM_THREAD_IDLE_MS);
	}
	if (t->data_count)
		left = (int) (t->next_tick_ms - now);
	pthread_mutex_unlock(&t->lock);
	return left;
}

/* A write to wake_fd: to stop, or to look at a new endpoint. */
static bool cm_thread_woken(struct nrma_cm_thread *t)
{
	uint64_t count;

	if (read(t->wake_fd, &count, sizeof(count)) < 0 && errno != EAGAIN)
		NRMA_WARN(FI_LOG_EP_CTRL, "wake event lost: %s\n",
			  strerror(errno));
	return !atomic_load(&t->stopping);
}

static void *cm_thread_main(void *arg)
{
	struct nrma_cm_thread *t = arg;
	struct epoll_event ev[NRMA_CM_THREAD_BATCH];
	int timeout = -1;

	for (;;) {
		int n = epoll_wait(t->epoll_fd, ev, NRMA_CM_THREAD_BATCH,
				   timeout);

		if (n < 0 && errno != EINTR) {
			NRMA_WARN(FI_LOG_EP_CTRL,
				  "control progress stops: %s\n",
				  strerror(errno));
			return NULL;
		}
		for (int i = 0; i < n; i++) {
			if (!ev[i].data.ptr && !cm_thread_woken(t))
				return NULL;
			if (ev[i].data.ptr == t)
				cm_thread_device_events(t);
			else if (ev[i].data.ptr)
				cm_thread_handle(t, ev[i].data.ptr);
		}
		if (t->auto_data)
			timeout = cm_thread_tick(t);
	}
}

static int cm_thread_epoll_add(int epoll_fd, int fd, uint32_t events, void *ptr)
{
	struct epoll_event ev = { .events = events, .data.ptr = ptr };

	return epoll_ctl(epoll_fd, EPOLL_CTL_ADD, fd, &ev) ? -errno : 0;
}

static void cm_thread_wake(struct nrma_cm_thread *t)
{
	uint64_t one = 1;

	if (write(t->wake_fd, &one, sizeof(one)) != sizeof(one))
		NRMA_WARN(FI_LOG_DOMAIN, "cannot wake control progress: %s\n",
			  strerror(errno));
}

/* The application's signals are for its own threads. */
static int cm_thread_start(struct nrma_cm_thread *t)
{
	sigset_t all, old;
	int ret;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	ret = -pthread_create(&t->thread, NULL, cm_thread_main, t);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (ret)
		return ret;
	t->pid = getpid();
	pthread_mutex_lock(&cm_threads_lock);
	nrma_dlist_insert_tail(&t->running, &cm_threads);
	pthread_mutex_unlock(&cm_threads_lock);
	return 0;
}

/*
 * A forked child inherits the list but not the threads, and shares their
 * stop eventfds with its parent: it leaves its parent's threads alone.
 */
static void cm_thread_stop(struct nrma_cm_thread *t)
{
	bool running;

	pthread_mutex_lock(&cm_threads_lock);
	running = !nrma_dlist_empty(&t->running) && t->pid == getpid();
	if (running)
		nrma_dlist_remove(&t->running);
	pthread_mutex_unlock(&cm_threads_lock);
	if (!running)
		return;
	atomic_store(&t->stopping, true);
	cm_thread_wake(t);
	pthread_join(t->thread, NULL);
}

static void cm_thread_free(struct nrma_cm_thread *t)
{
	if (t->wake_fd >= 0)
		close(t->wake_fd);
	if (t->epoll_fd >= 0)
		close(t->epoll_fd);
	pthread_mutex_destroy(&t->lock);
	free(t->watches);
	free(t);
}

static int cm_thread_fds(struct nrma_cm_thread *t)
{
	int event_fd;

	t->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
	t->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (t->epoll_fd < 0 || t->wake_fd < 0)
		return -errno;
	if (cm_thread_epoll_add(t->epoll_fd, t->wake_fd, EPOLLIN, NULL))
		return -errno;
	if (!t->vdom)
		return 0;
	event_fd = nrma_verbs_domain_event_fd(t->vdom);
	if (event_fd < 0)
		return event_fd;
	return cm_thread_epoll_add(t->epoll_fd, event_fd, EPOLLIN, t);
}

int nrma_cm_thread_open(struct nrma_verbs_domain *vdom,
			nrma_async_report_fn report, bool auto_data,
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
	t->auto_data = auto_data;
	ret = cm_thread_fds(t);
	if (!ret)
		ret = cm_thread_start(t);
	if (ret) {
		NRMA_WARN(FI_LOG_DOMAIN, "no control progress thread: %s\n",
			  fi_strerror(-ret));
		cm_thread_free(t);
		return ret;
	}
	*thread = t;
	return 0;
}

void nrma_cm_thread_close(struct nrma_cm_thread *t)
{
	cm_thread_stop(t);
	cm_thread_free(t);
}

static struct nrma_cm_thread *cm_thread_next_own(void)
{
	struct nrma_cm_thread *own = NULL;
	struct nrma_dlist *item;
	pid_t self = getpid();

	pthread_mutex_lock(&cm_threads_lock);
	nrma_dlist_foreach (&cm_threads, item) {
		struct nrma_cm_thread *t =
			nrma_container_of(item, struct nrma_cm_thread, running);

		if (t->pid == self) {
			own = t;
			break;
		}
	}
	pthread_mutex_unlock(&cm_threads_lock);
	return own;
}

/* Called as libfabric unloads the provider, with domains still open. */
void nrma_cm_thread_stop_all(void)
{
	struct nrma_cm_thread *t;

	while ((t = cm_thread_next_own()))
		cm_thread_stop(t);
}

/*
 * A data watch's channel raises one event per arming, edge-triggered: the
 * application's own progress may consume it first.
 */
static int cm_thread_add(struct nrma_cm_thread *t, int fd,
			 struct cm_thread_watch w)
{
	struct cm_thread_watch *watches;
	int ret;

	pthread_mutex_lock(&t->lock);
	watches = realloc(t->watches, (t->count + 1) * sizeof(*watches));
	if (!watches) {
		ret = -FI_ENOMEM;
		goto out;
	}
	t->watches = watches;
	ret = cm_thread_epoll_add(t->epoll_fd, fd,
				  w.data ? EPOLLIN | EPOLLET : EPOLLIN, w.key);
	if (!ret) {
		t->watches[t->count++] = w;
		t->data_count += w.data;
	}
out:
	pthread_mutex_unlock(&t->lock);
	return ret;
}

/* Once it returns, the thread is done with key. */
static void cm_thread_del(struct nrma_cm_thread *t, int fd, void *key)
{
	struct cm_thread_watch *w;

	pthread_mutex_lock(&t->lock);
	w = cm_thread_watch_of(t, key);
	if (w) {
		epoll_ctl(t->epoll_fd, EPOLL_CTL_DEL, fd, NULL);
		t->data_count -= w->data;
		*w = t->watches[--t->count];
	}
	pthread_mutex_unlock(&t->lock);
}

/*
 * With automatic data progress, the endpoint's device CQ too, keyed by its
 * verbs resources; the thread looks at it at once.
 */
int nrma_cm_thread_watch(struct nrma_cm_thread *t, struct nrma_ep *ep)
{
	int ret =
		cm_thread_add(t, nrma_cm_fd(ep->cm),
			      (struct cm_thread_watch){ .key = ep, .ep = ep });

	if (ret || !t->auto_data)
		return ret;
	ret = cm_thread_add(t, nrma_verbs_ep_fd(ep->verbs),
			    (struct cm_thread_watch){
				    .key = ep->verbs, .ep = ep, .data = true });
	if (ret) {
		cm_thread_del(t, nrma_cm_fd(ep->cm), ep);
		return ret;
	}
	pthread_mutex_lock(&t->lock);
	t->next_tick_ms = 0;
	pthread_mutex_unlock(&t->lock);
	cm_thread_wake(t);
	return 0;
}

void nrma_cm_thread_unwatch(struct nrma_cm_thread *t, struct nrma_ep *ep)
{
	if (t->auto_data)
		cm_thread_del(t, nrma_verbs_ep_fd(ep->verbs), ep->verbs);
	cm_thread_del(t, nrma_cm_fd(ep->cm), ep);
}

int nrma_cm_thread_watch_fn(struct nrma_cm_thread *t, int fd,
			    void (*fn)(void *arg), void *arg)
{
	return cm_thread_add(t, fd,
			     (struct cm_thread_watch){ .key = arg, .fn = fn });
}

void nrma_cm_thread_each_ep(struct nrma_cm_thread *t,
			    void (*fn)(struct nrma_ep *ep, void *arg),
			    void *arg)
{
	pthread_mutex_lock(&t->lock);
	for (size_t i = 0; i < t->count; i++) {
		struct nrma_ep *ep = t->watches[i].ep;

		if (!ep || t->watches[i].data)
			continue;
		pthread_mutex_lock(ep->lock);
		fn(ep, arg);
		pthread_mutex_unlock(ep->lock);
	}
	pthread_mutex_unlock(&t->lock);
}

void nrma_cm_thread_unwatch_fn(struct nrma_cm_thread *t, int fd, void *arg)
{
	cm_thread_del(t, fd, arg);
}
