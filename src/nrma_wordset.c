/* SPDX-License-Identifier: BSD-2-Clause */
/* Word sets (nrma_wordset.h). */
#include <stdlib.h>

#include "nrma_wordset.h"

/* What an unused one of a set's first slots points at. */
static volatile uint64_t wordset_none;

/* A set of cap slots (at least NRMA_WORDSET_FIRST), old's copied in. */
static struct nrma_wordset *wordset_alloc(struct nrma_wordset *old, size_t cap)
{
	size_t count = old ? atomic_load(&old->count) : 0;
	struct nrma_wordset *set =
		malloc(sizeof(*set) + cap * sizeof(set->word[0]));

	if (!set)
		return NULL;
	set->replaced = old;
	set->cap = cap;
	for (size_t i = 0; i < cap; i++)
		atomic_init(&set->word[i], i < count ?
						   atomic_load(&old->word[i]) :
						   &wordset_none);
	atomic_init(&set->count, count);
	return set;
}

struct nrma_wordset *nrma_wordset_new(void)
{
	return wordset_alloc(NULL, NRMA_WORDSET_FIRST);
}

struct nrma_wordset *nrma_wordset_room(struct nrma_wordset *set)
{
	if (atomic_load(&set->count) < set->cap)
		return set;
	return wordset_alloc(set, 2 * set->cap);
}

/* Stored before the count that makes it read: a reader sees it whole. */
void nrma_wordset_add(struct nrma_wordset *set, volatile uint64_t *word)
{
	size_t count = atomic_load(&set->count);

	atomic_store(&set->word[count], word);
	atomic_store(&set->count, count + 1);
}

bool nrma_wordset_remove(struct nrma_wordset *set, volatile uint64_t *word)
{
	size_t count = atomic_load(&set->count);

	for (size_t i = 0; i < count; i++) {
		if (atomic_load(&set->word[i]) != word)
			continue;
		atomic_store(&set->word[i], atomic_load(&set->word[count - 1]));
		atomic_store(&set->word[count - 1], &wordset_none);
		atomic_store(&set->count, count - 1);
		return true;
	}
	return false;
}

void nrma_wordset_free(struct nrma_wordset *set)
{
	while (set) {
		struct nrma_wordset *replaced = set->replaced;

		free(set);
		set = replaced;
	}
}
