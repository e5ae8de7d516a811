/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A token table: fixed-size slots, each in use named by a token that a
 * peer may echo back (an ACK names the send it completes).  A token is
 * the slot's index and the generation it got when it was taken, so a
 * token of a slot freed and taken again finds nothing.  Generations are
 * never 0, counted while a token stays here, and random once it is to go
 * to a peer (nrma_token_seal): a peer that sees some tokens cannot tell
 * others.
 * They come from a buffer that one arc4random_buf call fills: glibc's
 * arc4random makes a getrandom system call each time, which would cost
 * every operation a system call.
 */
#ifndef NRMA_TOKEN_H
#define NRMA_TOKEN_H

#include <stdbool.h>
#include <stdint.h>

#include "nrma_bufpool.h"

#define NRMA_TOKEN_RANDOM_BATCH 64 /* 256 bytes: one getrandom call */

struct nrma_token_table {
	struct nrma_bufpool slots;
	uint32_t *gen; /* by slot; 0: free */
	uint32_t random[NRMA_TOKEN_RANDOM_BATCH];
	unsigned int random_left; /* unused words at the front of random */
	uint32_t taken;		  /* slots nrma_token_get_local took */
};

int nrma_token_table_init(struct nrma_token_table *table, size_t count,
			  size_t slot_size);
void nrma_token_table_fini(struct nrma_token_table *table);
/*
 * A free slot's index, or -1 when all are in use.  Its generation only
 * tells this use from the slot's last (a count: no random word), while
 * its token stays here.
 */
int64_t nrma_token_get_local(struct nrma_token_table *table);
/*
 * Gives a slot in use a random generation, once its token is to go to a
 * peer: its old token finds nothing any more.
 */
void nrma_token_seal(struct nrma_token_table *table, uint32_t index);
void nrma_token_put(struct nrma_token_table *table, uint32_t index);
uint64_t nrma_token_of(const struct nrma_token_table *table, uint32_t index);
/* The index of the slot in use that token names, or -1. */
int64_t nrma_token_find(const struct nrma_token_table *table, uint64_t token);
bool nrma_token_in_use(const struct nrma_token_table *table, uint32_t index);

static inline void *nrma_token_slot(const struct nrma_token_table *table,
				    uint32_t index)
{
	return nrma_bufpool_buf(&table->slots, index);
}

static inline uint32_t nrma_token_index(const struct nrma_token_table *table,
					const void *slot)
{
	return nrma_bufpool_index(&table->slots, slot);
}

static inline size_t nrma_token_count(const struct nrma_token_table *table)
{
	return table->slots.count;
}

/* Whether any token is out. */
static inline bool nrma_token_any(const struct nrma_token_table *table)
{
	return table->slots.nfree < table->slots.count;
}

#endif /* NRMA_TOKEN_H */
