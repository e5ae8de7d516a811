/* SPDX-License-Identifier: BSD-2-Clause */
#include <string.h>

#include <rdma/fi_tagged.h>

#include "nrma_iov.h"
#include "nrma_match.h"

int nrma_match_init(struct nrma_match *m, size_t rx_count,
		    nrma_peer_addr_fn peer_addr, void *arg)
{
	memset(m, 0, sizeof(*m));
	nrma_dlist_init(&m->msg.posted);
	nrma_dlist_init(&m->msg.unexp);
	nrma_dlist_init(&m->tagged.posted);
	nrma_dlist_init(&m->tagged.unexp);
	nrma_dlist_init(&m->claimed);
	m->peer_addr = peer_addr;
	m->arg = arg;
	return nrma_bufpool_init(&m->rx_entries, rx_count,
				 sizeof(struct nrma_rx_entry));
}

void nrma_match_fini(struct nrma_match *m)
{
	nrma_bufpool_fini(&m->rx_entries);
}

static struct nrma_match_queue *match_queue(struct nrma_match *m, bool tagged)
{
	return tagged ? &m->tagged : &m->msg;
}

struct nrma_rx_entry *nrma_match_entry_alloc(struct nrma_match *m)
{
	int64_t index = nrma_bufpool_get(&m->rx_entries);
	struct nrma_rx_entry *rx;

	if (index < 0)
		return NULL;
	rx = nrma_bufpool_buf(&m->rx_entries, index);
	memset(rx, 0, sizeof(*rx));
	nrma_dlist_init(&rx->link);
	return rx;
}

void nrma_match_entry_done(struct nrma_match *m, struct nrma_rx_entry *rx)
{
	if (rx->released && !rx->reads)
		nrma_bufpool_put(&m->rx_entries,
				 nrma_bufpool_index(&m->rx_entries, rx));
}

void nrma_match_post(struct nrma_match *m, struct nrma_rx_entry *rx)
{
	nrma_dlist_insert_tail(&rx->link,
			       &match_queue(m, rx->flags & FI_TAGGED)->posted);
}

/* Whether a message with this tag from peer may fill rx. */
static bool match_rx(struct nrma_match *m, const struct nrma_rx_entry *rx,
		     uint64_t tag, void *peer)
{
	if ((rx->flags & FI_TAGGED) && ((rx->tag ^ tag) & ~rx->ignore))
		return false;
	return rx->src == FI_ADDR_UNSPEC ||
	       (peer && m->peer_addr(m->arg, peer) == rx->src);
}

struct nrma_rx_entry *nrma_match_posted(struct nrma_match *m, bool tagged,
					uint64_t tag, void *peer)
{
	struct nrma_dlist *item;

	nrma_dlist_foreach (&match_queue(m, tagged)->posted, item) {
		struct nrma_rx_entry *rx =
			nrma_container_of(item, struct nrma_rx_entry, link);

		if (match_rx(m, rx, tag, peer))
			return rx;
	}
	return NULL;
}

size_t nrma_match_space(const struct nrma_rx_entry *rx)
{
	return nrma_iov_len(rx->iov, rx->count) - rx->offset;
}

static void match_release(struct nrma_rx_entry *rx)
{
	nrma_dlist_remove(&rx->link);
	rx->released = true;
}

void *nrma_match_take(struct nrma_rx_entry *rx, size_t len, size_t min_left)
{
	void *buf = (char *) rx->iov[0].iov_base + rx->offset;
	size_t space = nrma_match_space(rx);

	if (!(rx->flags & FI_MULTI_RECV)) {
		match_release(rx);
		return rx->iov[0].iov_base;
	}
	rx->offset += len < space ? len : space;
	/* A full buffer goes, even when min_left is 0. */
	if (nrma_match_space(rx) < min_left || !nrma_match_space(rx))
		match_release(rx);
	return buf;
}

static struct nrma_rx_entry *match_cancel_in(struct nrma_dlist *posted,
					     void *context)
{
	struct nrma_dlist *item;

	nrma_dlist_foreach (posted, item) {
		struct nrma_rx_entry *rx =
			nrma_container_of(item, struct nrma_rx_entry, link);

		if (rx->context == context) {
			match_release(rx);
			return rx;
		}
	}
	return NULL;
}

struct nrma_rx_entry *nrma_match_cancel(struct nrma_match *m, void *context)
{
	struct nrma_rx_entry *rx = match_cancel_in(&m->msg.posted, context);

	return rx ? rx : match_cancel_in(&m->tagged.posted, context);
}

struct nrma_rx_entry *nrma_match_cancel_first(struct nrma_match *m)
{
	struct nrma_dlist *posted = nrma_dlist_empty(&m->msg.posted) ?
					    &m->tagged.posted :
					    &m->msg.posted;
	struct nrma_rx_entry *rx;

	if (nrma_dlist_empty(posted))
		return NULL;
	rx = nrma_container_of(posted->next, struct nrma_rx_entry, link);
	match_release(rx);
	return rx;
}

void nrma_match_hold(struct nrma_match *m, struct nrma_unexp *unexp,
		     bool tagged)
{
	unexp->claimed = false;
	nrma_dlist_insert_tail(&unexp->link, &match_queue(m, tagged)->unexp);
}

struct nrma_unexp *nrma_match_unexp(struct nrma_match *m,
				    const struct nrma_rx_entry *rx)
{
	struct nrma_dlist *item;

	nrma_dlist_foreach (&match_queue(m, rx->flags & FI_TAGGED)->unexp,
			    item) {
		struct nrma_unexp *unexp =
			nrma_container_of(item, struct nrma_unexp, link);

		if (match_rx(m, rx, unexp->tag, unexp->peer))
			return unexp;
	}
	return NULL;
}

void nrma_match_forget(struct nrma_unexp *unexp)
{
	nrma_dlist_remove(&unexp->link);
	unexp->claimed = false; /* a stale context finds nothing */
}

void nrma_match_claim(struct nrma_match *m, struct nrma_unexp *unexp,
		      void *context)
{
	nrma_dlist_remove(&unexp->link);
	nrma_dlist_insert_tail(&unexp->link, &m->claimed);
	unexp->claimed = true;
	((struct fi_context *) context)->internal[0] = unexp;
}

/* The context is the application's: it names a claim only if it is one. */
struct nrma_unexp *nrma_match_claimed(struct nrma_match *m, void *context)
{
	void *want = ((struct fi_context *) context)->internal[0];
	struct nrma_dlist *item;

	nrma_dlist_foreach (&m->claimed, item) {
		struct nrma_unexp *unexp =
			nrma_container_of(item, struct nrma_unexp, link);

		if (unexp == want)
			return unexp;
	}
	return NULL;
}

void nrma_match_unclaim(void *context)
{
	((struct fi_context *) context)->internal[0] = NULL;
}

static void match_purge_list(struct nrma_dlist *head, const void *owner,
			     void (*drop)(struct nrma_unexp *))
{
	struct nrma_dlist *item = head->next;

	while (item != head) {
		struct nrma_unexp *unexp =
			nrma_container_of(item, struct nrma_unexp, link);

		item = item->next;
		if (unexp->owner == owner) {
			nrma_match_forget(unexp);
			drop(unexp);
		}
	}
}

void nrma_match_purge(struct nrma_match *m, const void *owner,
		      void (*drop)(struct nrma_unexp *))
{
	match_purge_list(&m->msg.unexp, owner, drop);
	match_purge_list(&m->tagged.unexp, owner, drop);
	match_purge_list(&m->claimed, owner, drop);
}
