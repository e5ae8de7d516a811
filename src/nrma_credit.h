/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Credits: how many messages one side of a connection may have in the
 * other's receive buffers.  The receiver keeps a number of buffers for
 * its peer (the grant) and says so when they connect; the sender counts
 * what it sent, and the receiver gives credits back as it frees buffers,
 * in the headers of what it sends anyway or, when the sender may be
 * running short, with a remote atomic into a word of the sender's.  A
 * message without a credit waits at its sender, so a receiver's shared
 * receive queue never runs dry for a peer that keeps to its grant, and
 * nothing waits in a queue pair behind a message the peer has no room
 * for.
 *
 * All counts are cumulative, so that returns may arrive by either path
 * in any order.  Pure arithmetic: the caller owns the words.
 */
#ifndef NRMA_CREDIT_H
#define NRMA_CREDIT_H

#include <stdbool.h>
#include <stdint.h>

enum nrma_credit_class {
	NRMA_CREDIT_MSG, /* messages an application receives */
	NRMA_CREDIT_CTL, /* ACKs and writes with immediate data */
	NRMA_CREDIT_CLASSES,
};

/* What we may send to the peer. */
struct nrma_credit_tx {
	uint64_t grant; /* buffers the peer keeps for us */
	uint64_t sent;
	uint64_t back; /* returned in the peer's headers */
};

/*
 * Credits left, given what the peer returned with atomics (remote): at
 * most the grant, however much a peer claims to have given back.
 */
static inline uint64_t nrma_credit_avail(const struct nrma_credit_tx *tx,
					 uint64_t remote)
{
	uint64_t returned = tx->back + remote;

	if (returned > tx->sent)
		return tx->grant;
	return tx->sent - returned >= tx->grant ?
		       0 :
		       tx->grant - (tx->sent - returned);
}

/* What the peer may send us. */
struct nrma_credit_rx {
	uint64_t grant;
	uint64_t received;
	uint64_t released; /* buffers freed again */
	uint64_t returned; /* credits given back */
};

/* A peer that sent past its grant does not keep to the protocol. */
static inline bool nrma_credit_overrun(const struct nrma_credit_rx *rx)
{
	return rx->received - rx->returned > rx->grant;
}

/*
 * Whether to return freed credits with an atomic now rather than wait
 * for a header to carry them: only when the peer may have used more
 * than half its grant, so that streams get credits back before they
 * stall and replies carry them for free.  A sender that has none left
 * has more than half outstanding, so it is always answered.
 */
static inline bool nrma_credit_due(const struct nrma_credit_rx *rx)
{
	return rx->released > rx->returned &&
	       rx->received - rx->returned > rx->grant / 2;
}

/* Takes up to max freed credits to give back. */
static inline uint64_t nrma_credit_take_back(struct nrma_credit_rx *rx,
					     uint64_t max)
{
	uint64_t n = rx->released - rx->returned;

	if (n > max)
		n = max;
	rx->returned += n;
	return n;
}

#endif /* NRMA_CREDIT_H */
