/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A word set: pointers to 64-bit words that a device may bump at any
 * time, summed by readers that take no lock while one writer at a time
 * adds and removes words.  A full set is replaced, not reallocated (a
 * reader may still walk the old one), and keeps the set it replaced
 * until nrma_wordset_free.  The first NRMA_WORDSET_FIRST slots always
 * point at a word (one that stays 0 when unused), so a sum reads them
 * without a loop: a counter bound to a registration for both remote
 * writes and remote reads watches three words (writes, reads, and updates:
 * fetching atomics that may change the target).  Readers that may race
 * with a change need a sequence count around it (nrma_cntr.c).
 */
#ifndef NRMA_WORDSET_H
#define NRMA_WORDSET_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define NRMA_WORDSET_FIRST 3 /* nrma_wordset_sum reads them one by one */

struct nrma_wordset {
	struct nrma_wordset *replaced; /* the set before this one */
	size_t cap;
	_Atomic size_t count;
	volatile uint64_t *_Atomic word[];
};

/* An empty set, or NULL when out of memory. */
struct nrma_wordset *nrma_wordset_new(void);
/*
 * set, or a larger copy of it that replaces it (NULL when out of memory)
 * when it has no room for one more word.
 */
struct nrma_wordset *nrma_wordset_room(struct nrma_wordset *set);
/*
 * Adds word to a set with room (nrma_wordset_room).  This and
 * nrma_wordset_remove store sequentially consistent: a reader that sees
 * one of their stores sees what the writer stored before it (the odd
 * value of a sequence count around the change).
 */
void nrma_wordset_add(struct nrma_wordset *set, volatile uint64_t *word);
/* Whether word was in set; it is not any more. */
bool nrma_wordset_remove(struct nrma_wordset *set, volatile uint64_t *word);
/* Frees set and the sets it replaced. */
void nrma_wordset_free(struct nrma_wordset *set);

static inline uint64_t nrma_wordset_word(const struct nrma_wordset *set,
					 size_t i)
{
	return __atomic_load_n(
		atomic_load_explicit(&set->word[i], memory_order_acquire),
		__ATOMIC_RELAXED);
}

/*
 * The words' sum.  Loads with acquire, so that a reader that sees a
 * change's store sees what the writer stored before it (a sequence
 * count's odd value).  A word read from a set being changed may be one
 * reused meanwhile: a read the caller's sequence count discards, atomic
 * so that it races with nothing.
 */
static inline uint64_t nrma_wordset_sum(const struct nrma_wordset *set)
{
	size_t count = atomic_load_explicit(&set->count, memory_order_acquire);
	uint64_t sum = nrma_wordset_word(set, 0) + nrma_wordset_word(set, 1) +
		       nrma_wordset_word(set, 2);

	for (size_t i = NRMA_WORDSET_FIRST; i < count; i++)
		sum += nrma_wordset_word(set, i);
	return sum;
}

#endif
