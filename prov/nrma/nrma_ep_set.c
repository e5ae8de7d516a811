/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Endpoint sets: the endpoints a CQ or a counter progresses when it is
 * read, and whose fds its wait object watches (nrma.h).
 */
#include <stdlib.h>

#include "nrma_progress.h"
#include "nrma_wait.h"
#include "nrma_xfer.h"

void nrma_ep_set_init(struct nrma_ep_set *set, enum fi_threading threading)
{
	pthread_mutex_init(&set->lock, NULL);
	/* Under these the application serializes every call on the set's
	 * CQ or counter and its endpoints, and none of our threads reads a
	 * set: it needs no lock (fi_domain(3)). */
	set->serial = threading == FI_THREAD_DOMAIN ||
		      threading == FI_THREAD_COMPLETION;
	set->eps = NULL;
	set->count = 0;
}

static void ep_set_lock(struct nrma_ep_set *set)
{
	if (!set->serial)
		pthread_mutex_lock(&set->lock);
}

static void ep_set_unlock(struct nrma_ep_set *set)
{
	if (!set->serial)
		pthread_mutex_unlock(&set->lock);
}

void nrma_ep_set_fini(struct nrma_ep_set *set)
{
	free(set->eps);
	pthread_mutex_destroy(&set->lock);
}

/* The fds whose readiness means the endpoint has progress to make. */
static int ep_set_watch(struct nrma_ep *ep, struct nrma_wait *wait)
{
	int ret = nrma_wait_add_fd(wait, nrma_verbs_ep_fd(ep->verbs));

	if (!ret)
		ret = nrma_wait_add_fd(wait, nrma_cm_fd(ep->cm));
	return ret;
}

static void ep_set_unwatch(struct nrma_ep *ep, struct nrma_wait *wait)
{
	nrma_wait_del_fd(wait, nrma_verbs_ep_fd(ep->verbs));
	nrma_wait_del_fd(wait, nrma_cm_fd(ep->cm));
}

int nrma_ep_set_add(struct nrma_ep_set *set, struct nrma_ep *ep,
		    struct nrma_wait *wait)
{
	struct nrma_ep **eps;
	int ret = 0;

	ep_set_lock(set);
	for (size_t i = 0; i < set->count; i++)
		if (set->eps[i] == ep)
			goto out; /* bound for both directions */
	eps = realloc(set->eps, (set->count + 1) * sizeof(*eps));
	if (!eps) {
		ret = -FI_ENOMEM;
		goto out;
	}
	set->eps = eps;
	ret = ep_set_watch(ep, wait);
	if (!ret) {
		set->eps[set->count] = ep;
		/* nrma_ep_set_empty reads it without the lock */
		__atomic_store_n(&set->count, set->count + 1, __ATOMIC_RELAXED);
	}
out:
	ep_set_unlock(set);
	return ret;
}

void nrma_ep_set_del(struct nrma_ep_set *set, struct nrma_ep *ep,
		     struct nrma_wait *wait)
{
	ep_set_lock(set);
	for (size_t i = 0; i < set->count; i++) {
		if (set->eps[i] != ep)
			continue;
		ep_set_unwatch(ep, wait);
		set->eps[i] = set->eps[set->count - 1];
		__atomic_store_n(&set->count, set->count - 1, __ATOMIC_RELAXED);
		break;
	}
	ep_set_unlock(set);
}

void nrma_ep_set_progress(struct nrma_ep_set *set,
			  struct nrma_comp_reader *reader)
{
	ep_set_lock(set);
	for (size_t i = 0; i < set->count; i++)
		nrma_progress_ep_read(set->eps[i], reader);
	ep_set_unlock(set);
}

int nrma_ep_set_arm(struct nrma_ep_set *set)
{
	int ret = 0;

	ep_set_lock(set);
	for (size_t i = 0; i < set->count && !ret; i++)
		ret = nrma_progress_arm(set->eps[i]);
	ep_set_unlock(set);
	return ret;
}

/*
 * How long a wait on ep may sleep (< 0: for ever) without missing what
 * raises no event: credits that remote atomics give back, counters that
 * held triggered operations wait for, and, with stalls, a device that
 * stopped ending the work in flight.
 */
static int ep_set_sleep_bound(struct nrma_ep *ep, bool stalls)
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

static int ep_set_sleep_bound_all(struct nrma_ep_set *set, int left_ms,
				  bool stalls)
{
	ep_set_lock(set);
	for (size_t i = 0; i < set->count; i++) {
		int bound = ep_set_sleep_bound(set->eps[i], stalls);

		if (bound >= 0 && (left_ms < 0 || bound < left_ms))
			left_ms = bound;
	}
	ep_set_unlock(set);
	return left_ms;
}

int nrma_ep_set_sleep_ms(struct nrma_ep_set *set, int left_ms)
{
	return ep_set_sleep_bound_all(set, left_ms, true);
}

bool nrma_ep_set_polled(struct nrma_ep_set *set)
{
	return ep_set_sleep_bound_all(set, -1, false) >= 0;
}
