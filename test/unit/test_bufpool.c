/* SPDX-License-Identifier: BSD-2-Clause */
/* Unit tests for the registered-buffer pool in src/nrma_bufpool.[ch]. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdint.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "nrma_bufpool.h"

#define PAGE_SIZE 4096

static void test_init_errors(void **state)
{
	struct nrma_bufpool pool;

	(void) state;
	assert_int_equal(nrma_bufpool_init(&pool, 0, 64), -EINVAL);
	assert_int_equal(nrma_bufpool_init(&pool, 16, 0), -EINVAL);
	assert_int_equal(nrma_bufpool_init(&pool, 0, 0), -EINVAL);
	/* Indices are 32-bit. */
	assert_int_equal(nrma_bufpool_init(&pool, (size_t) UINT32_MAX + 1, 1),
			 -EINVAL);
}

static void test_init(void **state)
{
	struct nrma_bufpool pool;

	(void) state;
	assert_int_equal(nrma_bufpool_init(&pool, 10, 100), 0);
	assert_non_null(pool.mem);
	assert_non_null(pool.free);
	assert_int_equal(pool.count, 10);
	assert_int_equal(pool.buf_size, 100);
	assert_int_equal(pool.nfree, 10);
	assert_int_equal(nrma_bufpool_bytes(&pool), 1000);
	/* One page-aligned block, so that it can be registered at once. */
	assert_int_equal((uintptr_t) pool.mem % PAGE_SIZE, 0);
	nrma_bufpool_fini(&pool);
	assert_null(pool.mem);
	assert_null(pool.free);
	assert_int_equal(pool.count, 0);
	assert_int_equal(pool.nfree, 0);
}

/* Takes every buffer: distinct indices in range, then -1. */
static void test_get_until_empty(void **state)
{
	enum { COUNT = 37 };
	struct nrma_bufpool pool;
	bool seen[COUNT] = { false };

	(void) state;
	assert_int_equal(nrma_bufpool_init(&pool, COUNT, 24), 0);
	for (size_t i = 0; i < COUNT; i++) {
		int64_t index = nrma_bufpool_get(&pool);

		assert_in_range(index, 0, COUNT - 1);
		assert_false(seen[index]);
		seen[index] = true;
		assert_int_equal(pool.nfree, COUNT - 1 - i);
	}
	for (size_t i = 0; i < COUNT; i++)
		assert_true(seen[i]);
	assert_int_equal(nrma_bufpool_get(&pool), -1);
	assert_int_equal(nrma_bufpool_get(&pool), -1);
	assert_int_equal(pool.nfree, 0);

	/* One back, one out again. */
	nrma_bufpool_put(&pool, 5);
	assert_int_equal(nrma_bufpool_get(&pool), 5);
	assert_int_equal(nrma_bufpool_get(&pool), -1);
	nrma_bufpool_fini(&pool);
}

/* A single-buffer pool alternates between full and empty. */
static void test_count_one(void **state)
{
	struct nrma_bufpool pool;

	(void) state;
	assert_int_equal(nrma_bufpool_init(&pool, 1, 8), 0);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(nrma_bufpool_get(&pool), 0);
		assert_int_equal(nrma_bufpool_get(&pool), -1);
		nrma_bufpool_put(&pool, 0);
	}
	nrma_bufpool_fini(&pool);
}

/* The buffer put back last is the next one out. */
static void test_put_get_lifo(void **state)
{
	enum { COUNT = 8 };
	struct nrma_bufpool pool;
	int64_t taken[COUNT];

	(void) state;
	assert_int_equal(nrma_bufpool_init(&pool, COUNT, 32), 0);
	for (size_t i = 0; i < COUNT; i++)
		taken[i] = nrma_bufpool_get(&pool);

	nrma_bufpool_put(&pool, taken[2]);
	nrma_bufpool_put(&pool, taken[6]);
	nrma_bufpool_put(&pool, taken[0]);
	assert_int_equal(pool.nfree, 3);
	assert_int_equal(nrma_bufpool_get(&pool), taken[0]);
	assert_int_equal(nrma_bufpool_get(&pool), taken[6]);
	nrma_bufpool_put(&pool, taken[4]);
	assert_int_equal(nrma_bufpool_get(&pool), taken[4]);
	assert_int_equal(nrma_bufpool_get(&pool), taken[2]);
	assert_int_equal(nrma_bufpool_get(&pool), -1);

	/* Everything back, then out again in reverse order of return. */
	for (size_t i = 0; i < COUNT; i++)
		nrma_bufpool_put(&pool, taken[i]);
	assert_int_equal(pool.nfree, COUNT);
	for (size_t i = COUNT; i-- > 0;)
		assert_int_equal(nrma_bufpool_get(&pool), taken[i]);
	assert_int_equal(nrma_bufpool_get(&pool), -1);
	nrma_bufpool_fini(&pool);
}

/*
 * Buffer i lives at mem + i * buf_size: the buffers tile the block
 * without overlap, and every byte of the block can be written.
 */
static void test_buffer_addresses(void **state)
{
	enum { COUNT = 9, SIZE = 100 }; /* a size that is not a power of 2 */
	struct nrma_bufpool pool;

	(void) state;
	assert_int_equal(nrma_bufpool_init(&pool, COUNT, SIZE), 0);
	assert_int_equal((uintptr_t) pool.mem % PAGE_SIZE, 0);
	for (uint32_t i = 0; i < COUNT; i++) {
		char *buf = nrma_bufpool_buf(&pool, i);

		assert_ptr_equal(buf, pool.mem + (size_t) i * SIZE);
		assert_int_equal(nrma_bufpool_index(&pool, buf), i);
		memset(buf, 'a' + i, SIZE);
	}
	/* No buffer overwrote a neighbour. */
	for (uint32_t i = 0; i < COUNT; i++) {
		const char *buf = nrma_bufpool_buf(&pool, i);

		for (size_t j = 0; j < SIZE; j++)
			assert_int_equal(buf[j], 'a' + i);
	}
	/* The last buffer ends where the block does. */
	assert_ptr_equal((char *) nrma_bufpool_buf(&pool, COUNT - 1) + SIZE,
			 pool.mem + nrma_bufpool_bytes(&pool));

	/* The buffers handed out are the ones at those addresses. */
	for (int n = 0; n < COUNT; n++) {
		int64_t index = nrma_bufpool_get(&pool);

		assert_true(index >= 0);
		assert_int_equal(*(char *) nrma_bufpool_buf(&pool, index),
				 'a' + index);
	}
	nrma_bufpool_fini(&pool);
}

/* Page-sized buffers are each page-aligned. */
static void test_page_buffers_aligned(void **state)
{
	struct nrma_bufpool pool;

	(void) state;
	assert_int_equal(nrma_bufpool_init(&pool, 4, PAGE_SIZE), 0);
	for (uint32_t i = 0; i < 4; i++)
		assert_int_equal(
			(uintptr_t) nrma_bufpool_buf(&pool, i) % PAGE_SIZE, 0);
	assert_int_equal(nrma_bufpool_bytes(&pool), 4 * PAGE_SIZE);
	nrma_bufpool_fini(&pool);
}

/* Many get/put rounds keep every index unique and the count right. */
static void test_churn(void **state)
{
	enum { COUNT = 64 };
	struct nrma_bufpool pool;
	int64_t held[COUNT];
	size_t nheld = 0;
	unsigned int seed = 12345;
	bool ran_dry = false;

	(void) state;
	assert_int_equal(nrma_bufpool_init(&pool, COUNT, 16), 0);
	for (int round = 0; round < 20000; round++) {
		/* Mostly gets at first, so that the pool runs dry; then puts. */
		bool put;

		seed = seed * 1103515245 + 12345;
		put = round < 10000 ? (seed >> 16) % 3 == 0 :
				      (seed >> 16) % 3 != 0;
		if (put && nheld) {
			size_t k = (seed >> 8) % nheld;

			nrma_bufpool_put(&pool, held[k]);
			held[k] = held[--nheld];
		} else {
			int64_t index = nrma_bufpool_get(&pool);

			if (nheld == COUNT) {
				assert_int_equal(index, -1);
				continue;
			}
			assert_in_range(index, 0, COUNT - 1);
			for (size_t j = 0; j < nheld; j++)
				assert_int_not_equal(held[j], index);
			held[nheld++] = index;
		}
		assert_int_equal(pool.nfree, COUNT - nheld);
		if (nheld == COUNT)
			ran_dry = true;
	}
	assert_true(ran_dry);
	nrma_bufpool_fini(&pool);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_init_errors),
		cmocka_unit_test(test_init),
		cmocka_unit_test(test_get_until_empty),
		cmocka_unit_test(test_count_one),
		cmocka_unit_test(test_put_get_lifo),
		cmocka_unit_test(test_buffer_addresses),
		cmocka_unit_test(test_page_buffers_aligned),
		cmocka_unit_test(test_churn),
	};

	return cmocka_run_group_tests_name("nrma_bufpool", tests, NULL, NULL);
}
