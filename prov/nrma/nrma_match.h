/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Matching (nrma_match.c): receives waiting for messages and messages
 * waiting for receives, in arrival order (FI_ORDER_SAS), with tagged and
 * untagged ones in queues of their own; the receives of FI_MULTI_RECV
 * buffers, FI_PEEK and FI_CLAIM.  Pure bookkeeping: a message is known by
 * its receive buffer's index, its tag and an opaque peer, whose fi_addr_t
 * a callback tells when a directed receive asks.
 */
#ifndef NRMA_MATCH_H
#define NRMA_MATCH_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

#include <rdma/fabric.h>

#include "nrma_bufpool.h"
#include "nrma_list.h"
#include "nrma_proto.h"

/* A posted receive; FI_MULTI_RECV ones take many messages. */
struct nrma_rx_entry {
	struct nrma_dlist link; /* on its posted queue, until released */
	struct iovec iov[NRMA_IOV_LIMIT];
	void *desc[NRMA_IOV_LIMIT];
	size_t count;
	void *context;
	uint64_t flags; /* FI_TAGGED, FI_MULTI_RECV, FI_COMPLETION */
	uint64_t tag;
	uint64_t ignore;
	fi_addr_t src;	/* FI_DIRECTED_RECV, else FI_ADDR_UNSPEC */
	size_t offset;	/* FI_MULTI_RECV: bytes used */
	size_t reads;	/* rendezvous reads landing in it */
	bool released;	/* off the posted queue */
	bool cancelled; /* FI_ECANCELED once reads are done */
	void *ctx;	/* the receive context it was posted to */
};

/*
 * A message that arrived before its receive, held in its buffer: the
 * entry is its owner's (one per receive buffer), which fills it in.
 */
struct nrma_unexp {
	struct nrma_dlist link;
	uint32_t buf; /* the receive buffer holding it */
	uint32_t len; /* bytes received */
	uint64_t tag;
	void *peer;
	void *owner;  /* whose receive buffer it is */
	bool claimed; /* FI_CLAIM: on the claimed list, awaited */
};

struct nrma_match_queue {
	struct nrma_dlist posted; /* struct nrma_rx_entry */
	struct nrma_dlist unexp;  /* struct nrma_unexp */
};

/* The fi_addr_t of a message's peer, for directed receives. */
typedef fi_addr_t (*nrma_peer_addr_fn)(void *arg, void *peer);

struct nrma_match {
	struct nrma_match_queue msg;
	struct nrma_match_queue tagged;
	struct nrma_dlist claimed;	/* struct nrma_unexp, FI_CLAIM'ed */
	struct nrma_bufpool rx_entries; /* struct nrma_rx_entry */
	nrma_peer_addr_fn peer_addr;
	void *arg;
};

int nrma_match_init(struct nrma_match *m, size_t rx_count,
		    nrma_peer_addr_fn peer_addr, void *arg);
void nrma_match_fini(struct nrma_match *m);

/* Receives that may still be posted. */
static inline size_t nrma_match_rx_left(const struct nrma_match *m)
{
	return m->rx_entries.nfree;
}

/* A zeroed receive, or NULL when rx_count are in use. */
struct nrma_rx_entry *nrma_match_entry_alloc(struct nrma_match *m);
/* Frees rx once it is off its queue and no read lands in it any more. */
void nrma_match_entry_done(struct nrma_match *m, struct nrma_rx_entry *rx);
void nrma_match_post(struct nrma_match *m, struct nrma_rx_entry *rx);
/* The first posted receive a message with this tag from peer matches. */
struct nrma_rx_entry *nrma_match_posted(struct nrma_match *m, bool tagged,
					uint64_t tag, void *peer);
/* Space left in rx for the next message. */
size_t nrma_match_space(const struct nrma_rx_entry *rx);
/*
 * Takes len bytes of rx (all of it, unless FI_MULTI_RECV) for one message
 * and returns where they start.  A receive with less than min_left to
 * offer, or with nothing, is released from its queue.
 */
void *nrma_match_take(struct nrma_rx_entry *rx, size_t len, size_t min_left);
/* Takes the posted receive with this context off its queue, or NULL. */
struct nrma_rx_entry *nrma_match_cancel(struct nrma_match *m, void *context);
/* Takes any posted receive off its queue, or NULL when none is. */
struct nrma_rx_entry *nrma_match_cancel_first(struct nrma_match *m);

/* Holds a message, whose entry the caller filled in. */
void nrma_match_hold(struct nrma_match *m, struct nrma_unexp *unexp,
		     bool tagged);
/* The first held message a receive like rx would take. */
struct nrma_unexp *nrma_match_unexp(struct nrma_match *m,
				    const struct nrma_rx_entry *rx);
/* Forgets a held message (queued or claimed); its entry is the caller's. */
void nrma_match_forget(struct nrma_unexp *unexp);
/* FI_CLAIM: off the queue, kept for the receive that passes context. */
void nrma_match_claim(struct nrma_match *m, struct nrma_unexp *unexp,
		      void *context);
/* What a claim kept in this context, or NULL if it kept nothing. */
struct nrma_unexp *nrma_match_claimed(struct nrma_match *m, void *context);
/* The context no longer names a claim. */
void nrma_match_unclaim(void *context);
/* Forgets every held message of owner's, handing each to drop. */
void nrma_match_purge(struct nrma_match *m, const void *owner,
		      void (*drop)(struct nrma_unexp *));

#endif /* NRMA_MATCH_H */
