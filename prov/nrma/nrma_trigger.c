/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Triggered operations (fi_trigger(3), FI_TRIGGER_THRESHOLD): a transfer
 * posted with FI_TRIGGER is checked as any other, then held, with a copy
 * of its arguments and io vectors, until its counter reaches the
 * threshold; progress on its endpoint then submits it as if just posted.
 * The operation kinds (nrma_rma.c, nrma_atomic.c, nrma_send.c) hand over
 * their arguments and the function that submits them.
 */
#include <stdlib.h>
#include <string.h>

#include <rdma/fi_trigger.h>

#include "nrma_comp.h"
#include "nrma_trigger.h"
#include "nrma_xfer.h"

struct nrma_trigger {
	struct nrma_dlist link; /* nrma_xfer.triggered, in posting order */
	struct nrma_cntr *cntr; /* holds a reference */
	uint64_t threshold;
	nrma_trigger_fire_fn fire;
	uint64_t comp_flags; /* of its error entry, if it cannot go */
	void *context;
	size_t len;
	struct iovec *iov; /* copies of the caller's, after args */
	void **desc;
	max_align_t args[]; /* the kind's arguments, copied */
};

/* The counter and threshold of a triggered context, checked. */
static int trigger_condition(const struct nrma_ep *ep, uint64_t flags,
			     const void *context, struct nrma_cntr **cntr,
			     uint64_t *threshold)
{
	const struct fi_triggered_context *tc = context;
	struct fid_cntr *cntr_fid;

	if (!(ep->info->caps & FI_TRIGGER) || (flags & FI_INJECT) || !tc ||
	    tc->event_type != FI_TRIGGER_THRESHOLD)
		return -FI_EINVAL;
	cntr_fid = tc->trigger.threshold.cntr;
	if (!cntr_fid || cntr_fid->fid.fclass != FI_CLASS_CNTR ||
	    nrma_cntr_of(cntr_fid)->domain != ep->domain)
		return -FI_EINVAL;
	*cntr = nrma_cntr_of(cntr_fid);
	*threshold = tc->trigger.threshold.threshold;
	return 0;
}

static struct nrma_trigger *trigger_copy(const struct nrma_trigger_op *op,
					 const struct nrma_trigger_io *io)
{
	size_t args = nrma_tx_args_room(op->args_size);
	struct nrma_trigger *t =
		malloc(sizeof(*t) + args +
		       io->count * (sizeof(*t->iov) + sizeof(*t->desc)));

	if (!t)
		return NULL;
	memcpy(t->args, op->args, op->args_size);
	t->iov = (struct iovec *) ((char *) t->args + args);
	t->desc = (void **) (t->iov + io->count);
	for (size_t i = 0; i < io->count; i++) {
		t->iov[i] = io->iov[i];
		t->desc[i] = io->desc ? io->desc[i] : NULL;
	}
	t->fire = op->fire;
	t->comp_flags = op->comp_flags;
	t->context = op->context;
	t->len = io->len;
	return t;
}

static void trigger_free(struct nrma_trigger *t)
{
	atomic_fetch_sub(&t->cntr->ref, 1);
	free(t);
}

ssize_t nrma_trigger_hold(struct nrma_ep *ep, uint64_t flags,
			  struct nrma_trigger_op op, struct nrma_trigger_io io)
{
	struct nrma_trigger *t;
	struct nrma_cntr *cntr;
	uint64_t threshold;
	bool held;
	int ret;

	ret = trigger_condition(ep, flags, op.context, &cntr, &threshold);
	if (ret)
		return ret;
	t = trigger_copy(&op, &io);
	if (!t)
		return -FI_ENOMEM;
	t->cntr = cntr;
	t->threshold = threshold;
	atomic_fetch_add(&cntr->ref, 1);
	pthread_mutex_lock(ep->lock);
	held = ep->enabled;
	if (held)
		nrma_dlist_insert_tail(&t->link, &ep->xfer->triggered);
	pthread_mutex_unlock(ep->lock);
	if (!held) {
		trigger_free(t);
		return -FI_EOPBADSTATE;
	}
	nrma_trigger_fire_ready(ep);
	return 0;
}

/* The first held operation whose threshold its counter reached, unlinked. */
static struct nrma_trigger *trigger_next_ready(struct nrma_xfer *x)
{
	struct nrma_dlist *item;

	nrma_dlist_foreach (&x->triggered, item) {
		struct nrma_trigger *t =
			nrma_container_of(item, struct nrma_trigger, link);

		if (nrma_comp_cntr_value(t->cntr) >= t->threshold) {
			nrma_dlist_remove(&t->link);
			return t;
		}
	}
	return NULL;
}

/* An operation that could not go ends in an error entry, once. */
static void trigger_report(struct nrma_ep *ep, const struct nrma_trigger *t,
			   int err)
{
	struct nrma_comp comp = {
		.context = t->context,
		.flags = t->comp_flags,
		.err = err,
	};

	nrma_comp_tx(ep, &comp);
}

/*
 * Called without the endpoint's lock: a submission takes it.  One that
 * finds no room (-FI_EAGAIN) goes back first in line for the next call, unless the endpoint broke
 * meanwhile (nrma_trigger_cancel_all ran).
 */
void nrma_trigger_fire_ready(struct nrma_ep *ep)
{
	for (;;) {
		struct nrma_trigger *t;
		bool again = false, waits;
		ssize_t ret;

		pthread_mutex_lock(ep->lock);
		t = ep->enabled ? trigger_next_ready(ep->xfer) : NULL;
		pthread_mutex_unlock(ep->lock);
		if (!t)
			return;
		ret = t->fire(ep, t->args, t->iov, t->desc, t->len);
		waits = ret == -FI_EAGAIN;
		pthread_mutex_lock(ep->lock);
		if (waits && ep->enabled) {
			nrma_dlist_insert_head(&t->link, &ep->xfer->triggered);
			again = true;
		} else if (ret) {
			trigger_report(ep, t,
				       waits ? FI_ECANCELED : (int) -ret);
		}
		pthread_mutex_unlock(ep->lock);
		if (again)
			return;
		trigger_free(t);
	}
}

static void trigger_cancel(struct nrma_ep *ep, struct nrma_trigger *t)
{
	nrma_dlist_remove(&t->link);
	trigger_report(ep, t, FI_ECANCELED);
	trigger_free(t);
}

bool nrma_trigger_cancel(struct nrma_ep *ep, void *context)
{
	struct nrma_dlist *item;

	nrma_dlist_foreach (&ep->xfer->triggered, item) {
		struct nrma_trigger *t =
			nrma_container_of(item, struct nrma_trigger, link);

		if (t->context == context) {
			trigger_cancel(ep, t);
			return true;
		}
	}
	return false;
}

void nrma_trigger_cancel_all(struct nrma_ep *ep)
{
	struct nrma_dlist *item, *next;

	nrma_dlist_foreach_safe (&ep->xfer->triggered, item, next)
		trigger_cancel(
			ep, nrma_container_of(item, struct nrma_trigger, link));
}

void nrma_trigger_drop(struct nrma_ep *ep)
{
	struct nrma_dlist *item;

	while ((item = nrma_dlist_pop_front(&ep->xfer->triggered)))
		trigger_free(
			nrma_container_of(item, struct nrma_trigger, link));
}
