/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Completions (nrma_comp.c): the one way the protocol reports to the
 * application, as CQ entries and counter bumps.  The CQ and counter
 * objects only read what is written here.
 */
#ifndef NRMA_COMP_H
#define NRMA_COMP_H

#include "nrma.h"

/* What one completion says; err 0 for success. */
struct nrma_comp {
	void *context;
	uint64_t flags; /* its flags; FI_COMPLETION: write an entry */
	size_t len;
	void *buf;
	uint64_t data;
	uint64_t tag;
	size_t olen; /* bytes that did not fit */
	fi_addr_t src;
	int err;	/* positive libfabric error */
	int prov_errno; /* a verbs completion status */
};

/*
 * The successes one poll reaps (nrma_comp_tx_done) go into the transmit CQ
 * together, when the poll is done or the batch full: one lock, one ring
 * update and one wake for all of them.  Any other entry the endpoint
 * writes meanwhile writes them first, so that its entries keep their
 * order; their counters are bumped with them.
 */
#define NRMA_COMP_BATCH_MAX 16

/*
 * The fi_cq_read that progresses the endpoint, if one does: while its
 * CQ's ring is empty, the batch's successes for that CQ go straight into
 * the application's buffer, in the CQ's format, with no ring slot, lock
 * or second copy.  From the first that does not fit, or that would pass
 * an entry already queued, they go to the ring as any other.
 */
struct nrma_comp_reader {
	struct nrma_cq *cq;
	char *buf;
	fi_addr_t *src_addr; /* fi_cq_readfrom's, or NULL */
	size_t count;	     /* entries buf holds, cq->format_size each */
	size_t n;	     /* entries written there */
};

struct nrma_comp_batch {
	struct nrma_comp_reader *reader; /* or NULL */
	size_t count;
	struct {
		void *context;
		uint64_t flags;
	} done[NRMA_COMP_BATCH_MAX];
};

/*
 * Opens batch on ep, with ep->lock held, for reader (or NULL): false when
 * one is open already (the entries go in that one).  nrma_comp_batch_end
 * writes them.
 */
bool nrma_comp_batch_begin(struct nrma_ep *ep, struct nrma_comp_batch *batch,
			   struct nrma_comp_reader *reader);
void nrma_comp_batch_end(struct nrma_ep *ep);

/* An operation the endpoint initiated: its entry, and a bump of its
 * send, read or write counter.  Errors are always reported. */
void nrma_comp_tx(struct nrma_ep *ep, const struct nrma_comp *comp);
/* One that succeeded and says only its context and flags: the same entry
 * and bump, with no struct nrma_comp to fill and read. */
void nrma_comp_tx_done(struct nrma_ep *ep, void *context, uint64_t flags);
/* A receive the application posted, with its receive counter. */
void nrma_comp_recv(struct nrma_ep *ep, const struct nrma_comp *comp);
/* An entry on the receive CQ that no receive or counter stands for. */
void nrma_comp_rx_event(struct nrma_ep *ep, const struct nrma_comp *comp);
/* What peers added to the words a counter watches (torn while they change:
 * with its lock held, or as nrma_comp_cntr_value reads it). */
uint64_t nrma_comp_cntr_words(const struct nrma_cntr *cntr);
/* A counter's value: its local count (the bias) plus its words. */
uint64_t nrma_comp_cntr_value(const struct nrma_cntr *cntr);
/* How many completions the endpoint's CQs have room for. */
size_t nrma_comp_room(struct nrma_ep *ep);

#endif /* NRMA_COMP_H */
