/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Writing completions.  Entries go into the CQ's ring, errors onto its
 * error list, and each wakes the CQ's or counter's waiters.  Progress
 * reaps no more device completions than nrma_comp_room allows, so a full
 * ring only grows as a backstop.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "nrma_comp.h"

_Static_assert(offsetof(struct fi_cq_err_entry, op_context) ==
			       offsetof(struct fi_cq_tagged_entry,
					op_context) &&
		       offsetof(struct fi_cq_err_entry, flags) ==
			       offsetof(struct fi_cq_tagged_entry, flags) &&
		       offsetof(struct fi_cq_err_entry, len) ==
			       offsetof(struct fi_cq_tagged_entry, len) &&
		       offsetof(struct fi_cq_err_entry, buf) ==
			       offsetof(struct fi_cq_tagged_entry, buf) &&
		       offsetof(struct fi_cq_err_entry, data) ==
			       offsetof(struct fi_cq_tagged_entry, data) &&
		       offsetof(struct fi_cq_err_entry, tag) ==
			       offsetof(struct fi_cq_tagged_entry, tag),
	       "an error entry begins with a tagged entry's fields");

/*
 * A slot at the ring's tail for an entry, with the CQ's lock held, or NULL
 * when the ring, full, cannot grow (its backstop).
 */
static struct nrma_cq_entry *comp_cq_slot(struct nrma_cq *cq)
{
	struct nrma_cq_entry *slot = nrma_ring_push(&cq->comps);

	if (!slot && !nrma_ring_grow(&cq->comps))
		slot = nrma_ring_push(&cq->comps);
	if (!slot)
		NRMA_WARN(FI_LOG_CQ, "out of memory: completion lost\n");
	return slot;
}

/* Takes the CQ's lock and a slot (comp_cq_slot); comp_cq_end lets go. */
static struct nrma_cq_entry *comp_cq_begin(struct nrma_cq *cq)
{
	pthread_mutex_lock(&cq->lock);
	return comp_cq_slot(cq);
}

static void comp_cq_end(struct nrma_cq *cq)
{
	nrma_cq_room_update(cq);
	nrma_wait_raise(&cq->wait);
	pthread_mutex_unlock(&cq->lock);
}

/*
 * Queues one entry, written in its ring slot; err (allocated, or NULL)
 * makes it an error entry.
 */
static void comp_cq_push(struct nrma_cq *cq, const struct nrma_comp *comp,
			 struct fi_cq_err_entry *err)
{
	struct nrma_cq_entry *slot = comp_cq_begin(cq);

	if (slot) {
		slot->comp = (struct fi_cq_tagged_entry){
			.op_context = comp->context,
			.flags = comp->flags & ~FI_COMPLETION,
			.len = comp->len,
			.buf = comp->buf,
			.data = comp->data,
			.tag = comp->tag,
		};
		slot->src_addr = comp->src;
		slot->err = err;
		if (err) /* its first fields are an fi_cq_tagged_entry's */
			memcpy(err, &slot->comp, sizeof(slot->comp));
		cq->errors += err != NULL;
	} else {
		free(err);
	}
	comp_cq_end(cq);
}

static void comp_cq_write_err(struct nrma_cq *cq, const struct nrma_comp *comp)
{
	struct fi_cq_err_entry *err = malloc(sizeof(*err));

	if (!err) {
		NRMA_WARN(FI_LOG_CQ, "out of memory: error completion lost\n");
		return;
	}
	/* comp_cq_push fills in what a tagged entry has. */
	*err = (struct fi_cq_err_entry){
		.olen = comp->olen,
		.err = comp->err,
		.prov_errno = comp->prov_errno,
	};
	comp_cq_push(cq, comp, err);
}

uint64_t nrma_comp_cntr_words(const struct nrma_cntr *cntr)
{
	/* Acquire: a set is filled before it is published. */
	return nrma_wordset_sum(
		atomic_load_explicit(&cntr->words, memory_order_acquire));
}

/*
 * Without the counter's lock: fi_cntr_read is what a target polls.  A
 * sequence lock whose readers load with acquire (no fence, which thread
 * checkers do not model): what a change stored is seen only with its odd
 * count (nrma_cntr.c, cntr_words_change).
 */
uint64_t nrma_comp_cntr_value(const struct nrma_cntr *cntr)
{
	unsigned seq;
	uint64_t value;

	do {
		seq = atomic_load_explicit(&cntr->words_seq,
					   memory_order_acquire);
		value = atomic_load_explicit(&cntr->value,
					     memory_order_acquire) +
			nrma_comp_cntr_words(cntr);
	} while ((seq & 1) ||
		 seq != atomic_load_explicit(&cntr->words_seq,
					     memory_order_relaxed));
	return value;
}

static void comp_cntr_bump(struct nrma_cntr *cntr, bool error)
{
	if (!cntr)
		return;
	atomic_fetch_add(error ? &cntr->err : &cntr->value, 1);
	nrma_wait_raise(&cntr->wait);
}

/* An error always makes an entry; a success only with FI_COMPLETION. */
static void comp_report(struct nrma_cq *cq, struct nrma_cntr *cntr,
			const struct nrma_comp *comp)
{
	if (cq && comp->err)
		comp_cq_write_err(cq, comp);
	else if (cq && (comp->flags & FI_COMPLETION))
		comp_cq_push(cq, comp, NULL);
	comp_cntr_bump(cntr, comp->err);
}

static struct nrma_cntr *comp_tx_cntr(const struct nrma_ep *ep, uint64_t flags)
{
	if (flags & FI_READ)
		return ep->read_cntr;
	return flags & FI_WRITE ? ep->write_cntr : ep->send_cntr;
}

/*
 * A success's entry as the application's CQ format has it, size bytes (the
 * formats are prefixes of fi_cq_tagged_entry): its context and flags, the
 * rest 0.
 */
static NRMA_INLINE void comp_done_put(char *dst, void *context, uint64_t flags,
				      size_t size)
{
	const size_t at_flags = offsetof(struct fi_cq_msg_entry, flags);

	flags &= ~FI_COMPLETION;
	memcpy(dst, &context, sizeof(context));
	if (size == sizeof(struct fi_cq_entry))
		return;
	memcpy(dst + at_flags, &flags, sizeof(flags));
	memset(dst + at_flags + sizeof(flags), 0,
	       size - at_flags - sizeof(flags));
}

/* A success's entry in the CQ's ring, as nrma_comp_tx_done writes it. */
static void comp_cq_write_done(struct nrma_cq_entry *slot, void *context,
			       uint64_t flags)
{
	comp_done_put((char *) &slot->comp, context, flags, sizeof(slot->comp));
	slot->src_addr = FI_ADDR_NOTAVAIL;
	slot->err = NULL;
}

/*
 * The batch's first n entries at the reader's next slots.  Inline in each
 * case of comp_batch_read, where size is a constant.
 */
static NRMA_INLINE void comp_batch_read_run(const struct nrma_comp_batch *b,
					    struct nrma_comp_reader *r,
					    size_t n, size_t size)
{
	char *dst = r->buf + r->n * size;

	for (size_t i = 0; i < n; i++)
		comp_done_put(dst + i * size, b->done[i].context,
			      b->done[i].flags, size);
	if (r->src_addr)
		for (size_t i = 0; i < n; i++)
			r->src_addr[r->n + i] = FI_ADDR_NOTAVAIL;
	r->n += n;
}

/*
 * How many of the batch's entries for cq its reader takes: none while
 * cq's ring holds entries, which come first.  Another endpoint's entry
 * that another thread queues meanwhile is as if it came after.
 */
static size_t comp_batch_read(const struct nrma_comp_batch *b,
			      const struct nrma_cq *cq)
{
	struct nrma_comp_reader *r = b->reader;
	size_t n;

	if (!r || r->cq != cq ||
	    atomic_load_explicit(&cq->queued, memory_order_relaxed))
		return 0;
	n = r->count - r->n < b->count ? r->count - r->n : b->count;
	switch (cq->format_size) {
	case sizeof(struct fi_cq_entry):
		comp_batch_read_run(b, r, n, sizeof(struct fi_cq_entry));
		break;
	case sizeof(struct fi_cq_msg_entry):
		comp_batch_read_run(b, r, n, sizeof(struct fi_cq_msg_entry));
		break;
	case sizeof(struct fi_cq_data_entry):
		comp_batch_read_run(b, r, n, sizeof(struct fi_cq_data_entry));
		break;
	default:
		comp_batch_read_run(b, r, n, sizeof(struct fi_cq_tagged_entry));
	}
	return n;
}

/*
 * The batch's entries: as many as its reader takes, the rest under one
 * hold of the CQ's lock; then their bumps (most endpoints count with
 * their CQ alone: no look per entry).
 */
static NRMA_NOINLINE void comp_batch_flush(struct nrma_ep *ep)
{
	struct nrma_comp_batch *b = ep->comp_batch;
	struct nrma_cq *cq = ep->tx_cq;
	struct nrma_cq_entry *slot;
	size_t read = comp_batch_read(b, cq);

	if (read < b->count) {
		pthread_mutex_lock(&cq->lock);
		for (size_t i = read; i < b->count; i++)
			if ((slot = comp_cq_slot(cq)))
				comp_cq_write_done(slot, b->done[i].context,
						   b->done[i].flags);
		comp_cq_end(cq);
	}
	if (ep->send_cntr || ep->read_cntr || ep->write_cntr)
		for (size_t i = 0; i < b->count; i++)
			comp_cntr_bump(comp_tx_cntr(ep, b->done[i].flags),
				       false);
	b->count = 0;
}

/* Before any other entry of ep's: the batch's go first. */
static void comp_batch_settle(struct nrma_ep *ep)
{
	if (ep->comp_batch && ep->comp_batch->count)
		comp_batch_flush(ep);
}

bool nrma_comp_batch_begin(struct nrma_ep *ep, struct nrma_comp_batch *batch,
			   struct nrma_comp_reader *reader)
{
	if (ep->comp_batch)
		return false;
	batch->reader = reader;
	batch->count = 0;
	ep->comp_batch = batch;
	return true;
}

void nrma_comp_batch_end(struct nrma_ep *ep)
{
	comp_batch_settle(ep);
	ep->comp_batch = NULL;
}

void nrma_comp_tx(struct nrma_ep *ep, const struct nrma_comp *comp)
{
	comp_batch_settle(ep);
	comp_report(ep->tx_cq, comp_tx_cntr(ep, comp->flags), comp);
}

void nrma_comp_tx_done(struct nrma_ep *ep, void *context, uint64_t flags)
{
	struct nrma_comp_batch *b = ep->comp_batch;
	struct nrma_cq *cq = ep->tx_cq;
	struct nrma_cq_entry *slot;

	if (!cq || !(flags & FI_COMPLETION)) {
		comp_cntr_bump(comp_tx_cntr(ep, flags), false);
		return;
	}
	if (b) {
		if (b->count == NRMA_COMP_BATCH_MAX)
			comp_batch_flush(ep);
		b->done[b->count].context = context;
		b->done[b->count++].flags = flags;
		return;
	}
	slot = comp_cq_begin(cq);
	if (slot)
		comp_cq_write_done(slot, context, flags);
	comp_cq_end(cq);
	comp_cntr_bump(comp_tx_cntr(ep, flags), false);
}

void nrma_comp_recv(struct nrma_ep *ep, const struct nrma_comp *comp)
{
	comp_batch_settle(ep);
	comp_report(ep->rx_cq, ep->recv_cntr, comp);
}

void nrma_comp_rx_event(struct nrma_ep *ep, const struct nrma_comp *comp)
{
	struct nrma_comp entry = *comp;

	entry.flags |= FI_COMPLETION;
	comp_batch_settle(ep);
	comp_report(ep->rx_cq, NULL, &entry);
}

/*
 * Read without the CQ's lock: another endpoint's progress may fill the
 * room meanwhile, as it could once the lock was let go, and the ring
 * grows for what does not fit.
 */
static size_t comp_cq_room(struct nrma_cq *cq)
{
	return atomic_load_explicit(&cq->room, memory_order_relaxed);
}

size_t nrma_comp_room(struct nrma_ep *ep)
{
	size_t room = ep->tx_cq ? comp_cq_room(ep->tx_cq) : SIZE_MAX, cq_room;

	/* Most endpoints have one CQ for both: one look. */
	if (ep->rx_cq != ep->tx_cq && ep->rx_cq &&
	    (cq_room = comp_cq_room(ep->rx_cq)) < room)
		room = cq_room;
	return room;
}
