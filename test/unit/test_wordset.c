/* SPDX-License-Identifier: BSD-2-Clause */
/* Unit tests for word sets (src/nrma_wordset.c). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "nrma_wordset.h"

#define WORDS 5

/* Adds word, replacing *set when it is full. */
static void wordset_add(struct nrma_wordset **set, volatile uint64_t *word)
{
	struct nrma_wordset *room = nrma_wordset_room(*set);

	assert_non_null(room);
	if (room != *set)
		assert_ptr_equal(room->replaced, *set);
	*set = room;
	nrma_wordset_add(*set, word);
}

/* The first slots are always readable: an unused one reads 0. */
static void assert_first_slots_read(const struct nrma_wordset *set)
{
	size_t count = atomic_load(&set->count);

	for (size_t i = count; i < NRMA_WORDSET_FIRST; i++)
		assert_int_equal(nrma_wordset_word(set, i), 0);
}

static void test_empty(void **state)
{
	struct nrma_wordset *set = nrma_wordset_new();
	volatile uint64_t word = 7;

	(void) state;
	assert_non_null(set);
	assert_true(set->cap >= NRMA_WORDSET_FIRST);
	assert_int_equal(nrma_wordset_sum(set), 0);
	assert_first_slots_read(set);
	assert_false(nrma_wordset_remove(set, &word));
	nrma_wordset_free(set);
}

/* Growing keeps the words and the set it replaced (a reader's). */
static void test_grow_and_sum(void **state)
{
	static volatile uint64_t words[WORDS] = { 1, 10, 100, 1000, 10000 };
	struct nrma_wordset *set = nrma_wordset_new(), *first = set;
	uint64_t want = 0, held = 0;

	(void) state;
	for (size_t i = 0; i < NRMA_WORDSET_FIRST; i++)
		held += words[i];
	for (size_t i = 0; i < WORDS; i++) {
		wordset_add(&set, &words[i]);
		want += words[i];
		assert_int_equal(nrma_wordset_sum(set), want);
		assert_first_slots_read(set);
	}
	assert_ptr_not_equal(set, first);
	assert_int_equal(nrma_wordset_sum(first), held); /* what it held */
	words[3] += 5;					 /* a device's bump */
	assert_int_equal(nrma_wordset_sum(set), want + 5);
	words[3] -= 5;
	nrma_wordset_free(set); /* and first: ASan and valgrind tell */
}

/* Removed from the middle, the front and the end, down to none. */
static void test_remove(void **state)
{
	static volatile uint64_t words[WORDS] = { 1, 10, 100, 1000, 10000 };
	static const size_t order[WORDS] = { 2, 0, 4, 1, 3 };
	struct nrma_wordset *set = nrma_wordset_new();
	uint64_t want = 11111;

	(void) state;
	for (size_t i = 0; i < WORDS; i++)
		wordset_add(&set, &words[i]);
	for (size_t i = 0; i < WORDS; i++) {
		assert_true(nrma_wordset_remove(set, &words[order[i]]));
		assert_false(nrma_wordset_remove(set, &words[order[i]]));
		want -= words[order[i]];
		assert_int_equal(atomic_load(&set->count), WORDS - 1 - i);
		assert_int_equal(nrma_wordset_sum(set), want);
		assert_first_slots_read(set);
	}
	wordset_add(&set, &words[4]); /* room again where words were */
	assert_int_equal(nrma_wordset_sum(set), 10000);
	nrma_wordset_free(set);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_empty),
		cmocka_unit_test(test_grow_and_sum),
		cmocka_unit_test(test_remove),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
