/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Credits: how many messages one side of a connection may have in the
 * other's receive buffers.  The receiver grants its peer credits for
 * buffers it has posted and no other peer holds, first when they connect
 * and then as buffers come back, and tells it in the headers of what it
 * sends anyway or, when the sender may be running short, with a remote
 * atomic into a word of the sender's.  The sender counts what it sent.
 * A message without a credit waits at its sender, so a receiver's shared
 * receive queue never runs dry while peers keep to their credits, and
 * nothing waits in a queue pair behind a message the peer has no room
 * for.
 *
 * All counts are cumulative, so that returns may arrive by either path
 * in any order.  Pure arithmetic: the caller owns the words.
 */
#ifndef NRMA_CREDIT_CALC_H
#define NRMA_CREDIT_CALC_H

#include <stdbool.h>
#include <stdint.h>

enum nrma_credit_class {
	NRMA_CREDIT_MSG, /* messages an application receives */
	NRMA_CREDIT_CTL, /* ACKs and writes with immediate data */
	NRMA_CREDIT_CLASSES,
};

/* What we may send to the peer. */
struct nrma_credit_tx {
	uint64_t grant; /* the peer's first grant, in its connect data */
	uint64_t sent;
	uint64_t back; /* granted since, in the peer's headers */
	/* Credits known left, at most nrma_credit_avail's: taken from first,
	 * so that most sends add nothing up (nrma_credit_tx_take). */
	uint64_t left;
};

/*
 * Credits left, given what the peer granted since with atomics (remote).
 * A peer that grants more than it has buffers for harms only itself.
 */
static inline uint64_t nrma_credit_avail(const struct nrma_credit_tx *tx,
					 uint64_t remote)
{
	uint64_t granted = tx->grant + tx->back;

	/* Sums that wrap are lies: as many as the words hold. */
	if (granted < tx->grant || remote > UINT64_MAX - granted)
		granted = UINT64_MAX;
	else
		granted += remote;
	return granted > tx->sent ? granted - tx->sent : 0;
}

/*
 * Takes a credit, if there is one: from those known left, else from what
 * the peer granted since (*remote, nrma_credit_avail).  Grants only grow,
 * so what was left stays left.
 */
static inline bool nrma_credit_tx_take(struct nrma_credit_tx *tx,
				       const volatile uint64_t *remote)
{
	if (!tx->left)
		tx->left = nrma_credit_avail(tx, *remote);
	if (!tx->left)
		return false;
	tx->left--;
	tx->sent++;
	return true;
}

/* Gives back a credit taken for a message that did not go. */
static inline void nrma_credit_tx_untake(struct nrma_credit_tx *tx)
{
	tx->sent--;
	tx->left++;
}

/*
 * What the peer may send us.  The receiver grants credits from its pool
 * of posted buffers and tells the peer later, in a header or with an
 * atomic; granted ones count against the pool at once.
 */
struct nrma_credit_rx {
	uint64_t granted; /* in all, the first grant too */
	uint64_t told;	  /* of those, what the peer heard of */
	uint64_t received;
};

/* Credits granted and not used: buffers the peer may fill. */
static inline uint64_t nrma_credit_out(const struct nrma_credit_rx *rx)
{
	return rx->granted > rx->received ? rx->granted - rx->received : 0;
}

/* How many more credits bring the peer to its share. */
static inline uint64_t nrma_credit_want(const struct nrma_credit_rx *rx,
					uint64_t share)
{
	uint64_t out = nrma_credit_out(rx);

	return out < share ? share - out : 0;
}

/* A peer that sent past what it heard of does not keep to the protocol. */
static inline bool nrma_credit_overrun(const struct nrma_credit_rx *rx)
{
	return rx->received > rx->told;
}

/*
 * Whether to tell the peer of new credits with an atomic now rather than
 * wait for a header to carry them: only once it may hold half its share
 * or less, so that streams get credits before they stall and replies
 * carry them for free.  A sender that has none left is always told.
 */
static inline bool nrma_credit_due(const struct nrma_credit_rx *rx,
				   uint64_t share)
{
	return rx->granted > rx->told && (rx->told <= rx->received ||
					  rx->told - rx->received <= share / 2);
}

/* Takes up to max credits the peer has not heard of, to tell it. */
static inline uint64_t nrma_credit_take_back(struct nrma_credit_rx *rx,
					     uint64_t max)
{
	uint64_t n = rx->granted - rx->told;

	if (!n) /* most messages: nothing new to tell */
		return 0;
	if (n > max)
		n = max;
	rx->told += n;
	return n;
}

#endif /* NRMA_CREDIT_CALC_H */
