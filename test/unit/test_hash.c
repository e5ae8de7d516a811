/* SPDX-License-Identifier: BSD-2-Clause */
/* Unit tests for the 32-bit key to pointer map in src/nrma_hash.[ch]. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "nrma_hash.h"

/* A distinct, non-NULL value for each key. */
static void *val(uint32_t key)
{
	return (void *) ((uintptr_t) key * 8 + 8);
}

static void test_empty(void **state)
{
	struct nrma_hash hash;

	(void) state;
	nrma_hash_init(&hash);
	assert_int_equal(hash.count, 0);
	assert_null(nrma_hash_find(&hash, 0));
	assert_null(nrma_hash_find(&hash, 1));
	assert_null(nrma_hash_find(&hash, UINT32_MAX));
	/* Removing from an empty table is harmless. */
	nrma_hash_remove(&hash, 7);
	assert_int_equal(hash.count, 0);
	nrma_hash_fini(&hash);
	/* fini on a never-used table, twice, is harmless too. */
	nrma_hash_fini(&hash);
	assert_null(hash.slots);
	assert_int_equal(hash.capacity, 0);
}

static void test_insert_find_remove(void **state)
{
	struct nrma_hash hash;
	int a, b, c;

	(void) state;
	nrma_hash_init(&hash);
	assert_int_equal(nrma_hash_insert(&hash, 17, &a), 0);
	assert_int_equal(nrma_hash_insert(&hash, 42, &b), 0);
	assert_int_equal(nrma_hash_insert(&hash, 0xdeadbeef, &c), 0);
	assert_int_equal(hash.count, 3);
	assert_ptr_equal(nrma_hash_find(&hash, 17), &a);
	assert_ptr_equal(nrma_hash_find(&hash, 42), &b);
	assert_ptr_equal(nrma_hash_find(&hash, 0xdeadbeef), &c);
	assert_null(nrma_hash_find(&hash, 18));
	assert_null(nrma_hash_find(&hash, 0));

	nrma_hash_remove(&hash, 42);
	assert_int_equal(hash.count, 2);
	assert_null(nrma_hash_find(&hash, 42));
	assert_ptr_equal(nrma_hash_find(&hash, 17), &a);
	assert_ptr_equal(nrma_hash_find(&hash, 0xdeadbeef), &c);

	/* Removing what is not there changes nothing. */
	nrma_hash_remove(&hash, 42);
	nrma_hash_remove(&hash, 99);
	assert_int_equal(hash.count, 2);
	assert_ptr_equal(nrma_hash_find(&hash, 17), &a);

	/* A removed key can come back, with a new value. */
	assert_int_equal(nrma_hash_insert(&hash, 42, &a), 0);
	assert_ptr_equal(nrma_hash_find(&hash, 42), &a);
	assert_int_equal(hash.count, 3);

	nrma_hash_remove(&hash, 17);
	nrma_hash_remove(&hash, 42);
	nrma_hash_remove(&hash, 0xdeadbeef);
	assert_int_equal(hash.count, 0);
	assert_null(nrma_hash_find(&hash, 17));
	nrma_hash_fini(&hash);
}

/* Inserting a present key replaces its value; it is still one entry. */
static void test_overwrite(void **state)
{
	struct nrma_hash hash;
	int a, b;

	(void) state;
	nrma_hash_init(&hash);
	assert_int_equal(nrma_hash_insert(&hash, 5, &a), 0);
	assert_int_equal(nrma_hash_insert(&hash, 5, &b), 0);
	assert_int_equal(hash.count, 1);
	assert_ptr_equal(nrma_hash_find(&hash, 5), &b);
	nrma_hash_remove(&hash, 5);
	assert_null(nrma_hash_find(&hash, 5));
	assert_int_equal(hash.count, 0);

	/* Overwriting after a neighbour's removal still finds the key. */
	assert_int_equal(nrma_hash_insert(&hash, 5, &a), 0);
	assert_int_equal(nrma_hash_insert(&hash, 6, &a), 0);
	nrma_hash_remove(&hash, 6);
	assert_int_equal(nrma_hash_insert(&hash, 5, &b), 0);
	assert_ptr_equal(nrma_hash_find(&hash, 5), &b);
	assert_int_equal(hash.count, 1);
	nrma_hash_fini(&hash);
}

/* Key 0 is an ordinary key, not an empty-slot marker. */
static void test_key_zero(void **state)
{
	struct nrma_hash hash;
	int a, b;

	(void) state;
	nrma_hash_init(&hash);
	assert_null(nrma_hash_find(&hash, 0));
	assert_int_equal(nrma_hash_insert(&hash, 0, &a), 0);
	assert_ptr_equal(nrma_hash_find(&hash, 0), &a);
	/* Other keys do not hide it, before or after a rehash. */
	for (uint32_t k = 1; k <= 100; k++)
		assert_int_equal(nrma_hash_insert(&hash, k, &b), 0);
	assert_ptr_equal(nrma_hash_find(&hash, 0), &a);
	assert_int_equal(hash.count, 101);
	nrma_hash_remove(&hash, 0);
	assert_null(nrma_hash_find(&hash, 0));
	assert_ptr_equal(nrma_hash_find(&hash, 1), &b);
	assert_int_equal(nrma_hash_insert(&hash, 0, &b), 0);
	assert_ptr_equal(nrma_hash_find(&hash, 0), &b);
	nrma_hash_fini(&hash);
}

/* The extremes of the key range. */
static void test_key_extremes(void **state)
{
	static const uint32_t keys[] = {
		0, 1, UINT32_MAX, UINT32_MAX - 1, 0x80000000u, 0x7fffffffu,
	};
	struct nrma_hash hash;

	(void) state;
	nrma_hash_init(&hash);
	for (size_t i = 0; i < sizeof(keys) / sizeof(*keys); i++)
		assert_int_equal(nrma_hash_insert(&hash, keys[i], val(i)), 0);
	for (size_t i = 0; i < sizeof(keys) / sizeof(*keys); i++)
		assert_ptr_equal(nrma_hash_find(&hash, keys[i]), val(i));
	nrma_hash_fini(&hash);
}

/*
 * Keys that all hash to the same slot of a small table: multiples of the
 * capacity collide in (key * constant) & (capacity - 1).  They force
 * probing and, in numbers, rehashing.
 */
static void test_collisions(void **state)
{
	enum { N = 200 };
	struct nrma_hash hash;

	(void) state;
	nrma_hash_init(&hash);
	for (uint32_t i = 0; i < N; i++)
		assert_int_equal(nrma_hash_insert(&hash, i << 16, val(i)), 0);
	assert_int_equal(hash.count, N);
	for (uint32_t i = 0; i < N; i++)
		assert_ptr_equal(nrma_hash_find(&hash, i << 16), val(i));
	/* Neighbours of those keys are absent. */
	for (uint32_t i = 0; i < N; i++)
		assert_null(nrma_hash_find(&hash, (i << 16) + 1));
	/* Removing from the middle of a probe chain keeps the rest found. */
	for (uint32_t i = 0; i < N; i += 3)
		nrma_hash_remove(&hash, i << 16);
	for (uint32_t i = 0; i < N; i++) {
		if (i % 3 == 0)
			assert_null(nrma_hash_find(&hash, i << 16));
		else
			assert_ptr_equal(nrma_hash_find(&hash, i << 16),
					 val(i));
	}
	nrma_hash_fini(&hash);
}

/* 10000 keys: insert, remove half, find the rest, reinsert. */
static void test_many_keys(void **state)
{
	enum { N = 10000 };
	struct nrma_hash hash;
	size_t capacity;

	(void) state;
	nrma_hash_init(&hash);
	for (uint32_t k = 0; k < N; k++) {
		/* Spread-out keys, and some in runs, as QP numbers come. */
		uint32_t key = k % 2 ? k * 7919u : k;

		assert_int_equal(nrma_hash_insert(&hash, key, val(k)), 0);
		assert_int_equal(hash.count, k + 1);
	}
	capacity = hash.capacity;
	/* The table grew, stays a power of two, and is at most half used. */
	assert_true(capacity >= 2 * N);
	assert_int_equal(capacity & (capacity - 1), 0);
	assert_true(2 * hash.used <= capacity);

	for (uint32_t k = 0; k < N; k++) {
		uint32_t key = k % 2 ? k * 7919u : k;

		assert_ptr_equal(nrma_hash_find(&hash, key), val(k));
	}
	/* Remove the even ones. */
	for (uint32_t k = 0; k < N; k += 2)
		nrma_hash_remove(&hash, k);
	assert_int_equal(hash.count, N / 2);
	for (uint32_t k = 0; k < N; k++) {
		uint32_t key = k % 2 ? k * 7919u : k;

		if (k % 2)
			assert_ptr_equal(nrma_hash_find(&hash, key), val(k));
		else
			assert_null(nrma_hash_find(&hash, key));
	}
	/* Put them back with other values; everything is found again. */
	for (uint32_t k = 0; k < N; k += 2)
		assert_int_equal(nrma_hash_insert(&hash, k, val(k + N)), 0);
	assert_int_equal(hash.count, N);
	for (uint32_t k = 0; k < N; k++) {
		uint32_t key = k % 2 ? k * 7919u : k;

		assert_ptr_equal(nrma_hash_find(&hash, key),
				 val(k % 2 ? k : k + N));
	}
	nrma_hash_fini(&hash);
	assert_null(hash.slots);
	assert_int_equal(hash.count, 0);
}

/*
 * Insert-remove churn over a few keys leaves deleted slots behind; the
 * table must reclaim them rather than grow or fill up with tombstones.
 */
static void test_tombstone_churn(void **state)
{
	struct nrma_hash hash;
	size_t max_capacity = 0;

	(void) state;
	nrma_hash_init(&hash);
	for (uint32_t k = 0; k < 100000; k++) {
		assert_int_equal(nrma_hash_insert(&hash, k, val(k)), 0);
		if (k >= 4)
			nrma_hash_remove(&hash, k - 4);
		assert_int_equal(hash.count, k < 4 ? k + 1 : 4);
		assert_true(hash.used < hash.capacity);
		if (hash.capacity > max_capacity)
			max_capacity = hash.capacity;
	}
	/* Four or five live keys never need a big table. */
	assert_true(max_capacity <= 64);
	for (uint32_t k = 100000 - 4; k < 100000; k++)
		assert_ptr_equal(nrma_hash_find(&hash, k), val(k));
	assert_null(nrma_hash_find(&hash, 100000 - 5));
	assert_null(nrma_hash_find(&hash, 100000));
	nrma_hash_fini(&hash);
}

static size_t released;
static uint64_t released_sum;

static void count_release(void *value)
{
	released++;
	released_sum += (uintptr_t) value;
}

/* Every live value, and only those, goes to release, once. */
static void test_fini_values(void **state)
{
	struct nrma_hash hash;

	(void) state;
	nrma_hash_init(&hash);
	nrma_hash_fini_values(&hash, count_release);
	assert_int_equal(released, 0);
	for (uint32_t k = 1; k <= 100; k++)
		assert_int_equal(nrma_hash_insert(&hash, k, val(k)), 0);
	for (uint32_t k = 1; k <= 100; k += 2)
		nrma_hash_remove(&hash, k);
	nrma_hash_fini_values(&hash, count_release);
	assert_int_equal(released, 50);
	/* val(k) = 8k + 8 for the even k in 2..100 */
	assert_int_equal(released_sum, 8 * 2550 + 8 * 50);
	assert_int_equal(hash.capacity, 0);
	assert_null(nrma_hash_find(&hash, 2));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_empty),
		cmocka_unit_test(test_insert_find_remove),
		cmocka_unit_test(test_overwrite),
		cmocka_unit_test(test_key_zero),
		cmocka_unit_test(test_key_extremes),
		cmocka_unit_test(test_collisions),
		cmocka_unit_test(test_many_keys),
		cmocka_unit_test(test_tombstone_churn),
		cmocka_unit_test(test_fini_values),
	};

	return cmocka_run_group_tests_name("nrma_hash", tests, NULL, NULL);
}
