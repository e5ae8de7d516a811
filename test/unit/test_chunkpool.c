/* SPDX-License-Identifier: BSD-2-Clause */
/* Unit tests for the growing buffer pool in src/nrma_chunkpool.[ch]. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdint.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "nrma_chunkpool.h"

#define PAGE_SIZE 4096

static void test_init_errors(void **state)
{
	struct nrma_chunkpool pool;

	(void) state;
	assert_int_equal(nrma_chunkpool_init(&pool, 0, 4, 64, 8), -EINVAL);
	assert_int_equal(nrma_chunkpool_init(&pool, 4, 0, 64, 8), -EINVAL);
	assert_int_equal(nrma_chunkpool_init(&pool, 4, 4, 0, 8), -EINVAL);
	/* Indices are 32-bit. */
	assert_int_equal(
		nrma_chunkpool_init(&pool, (size_t) UINT32_MAX + 1, 1, 1, 0),
		-EOVERFLOW);
}

/* Takes every free buffer: indices below count not seen yet, then -1. */
static void take_all(struct nrma_chunkpool *pool, bool *seen)
{
	for (size_t n = pool->nfree; n; n--) {
		int64_t b = nrma_chunkpool_get(pool);

		assert_true(b >= 0 && (size_t) b < pool->count);
		assert_false(seen[b]);
		seen[b] = true;
	}
	assert_int_equal(nrma_chunkpool_get(pool), -1);
}

/*
 * Growing keeps every buffer and record where it was; the new chunk's
 * buffers are free, page-aligned, and its records zeroed.
 */
static void test_grow_keeps_addresses(void **state)
{
	enum { FIRST = 5, GROW = 3, SIZE = 100 };
	struct nrma_chunkpool pool;
	void *buf[FIRST], *rec[FIRST];
	bool seen[FIRST + 2 * GROW] = { false };

	(void) state;
	assert_int_equal(nrma_chunkpool_init(&pool, FIRST, GROW, SIZE, 16), 0);
	assert_int_equal(pool.count, FIRST);
	take_all(&pool, seen);
	for (uint32_t i = 0; i < FIRST; i++) {
		buf[i] = nrma_chunkpool_buf(&pool, i);
		rec[i] = nrma_chunkpool_rec(&pool, i);
		memset(rec[i], 0x5a, 16);
	}
	assert_int_equal(nrma_chunkpool_grow(&pool), 0);
	assert_int_equal(nrma_chunkpool_grow(&pool), 0);
	assert_int_equal(pool.count, FIRST + 2 * GROW);
	assert_int_equal(pool.nchunks, 3);
	for (uint32_t i = 0; i < FIRST; i++) {
		assert_ptr_equal(nrma_chunkpool_buf(&pool, i), buf[i]);
		assert_ptr_equal(nrma_chunkpool_rec(&pool, i), rec[i]);
	}
	take_all(&pool, seen);
	for (size_t i = 0; i < FIRST + 2 * GROW; i++)
		assert_true(seen[i]);
	for (uint32_t i = FIRST; i < FIRST + 2 * GROW; i++) {
		char zero[16] = { 0 };
		size_t c = nrma_chunkpool_chunk_of(&pool, i);

		assert_int_equal(c, 1 + (i - FIRST) / GROW);
		assert_memory_equal(nrma_chunkpool_rec(&pool, i), zero, 16);
		assert_ptr_equal(nrma_chunkpool_buf(&pool, i),
				 pool.chunks[c].mem +
					 (i - FIRST) % GROW * SIZE);
	}
	for (size_t c = 0; c < pool.nchunks; c++)
		assert_int_equal((uintptr_t) pool.chunks[c].mem % PAGE_SIZE, 0);
	assert_int_equal(nrma_chunkpool_chunk_bytes(&pool, 0), FIRST * SIZE);
	assert_int_equal(nrma_chunkpool_chunk_bytes(&pool, 2), GROW * SIZE);
	nrma_chunkpool_fini(&pool);
	assert_null(pool.chunks);
	assert_int_equal(pool.count, 0);
}

/* Buffers do not overlap, within a chunk or across chunks. */
static void test_buffers_disjoint(void **state)
{
	enum { FIRST = 4, GROW = 2, SIZE = 64, N = FIRST + 3 * GROW };
	struct nrma_chunkpool pool;

	(void) state;
	assert_int_equal(nrma_chunkpool_init(&pool, FIRST, GROW, SIZE, 0), 0);
	for (int g = 0; g < 3; g++)
		assert_int_equal(nrma_chunkpool_grow(&pool), 0);
	for (uint32_t i = 0; i < N; i++)
		memset(nrma_chunkpool_buf(&pool, i), (int) i + 1, SIZE);
	for (uint32_t i = 0; i < N; i++) {
		unsigned char *b = nrma_chunkpool_buf(&pool, i);

		for (size_t j = 0; j < SIZE; j++)
			assert_int_equal(b[j], i + 1);
	}
	nrma_chunkpool_fini(&pool);
}

/* What goes back comes out again, last in first out. */
static void test_put_get(void **state)
{
	struct nrma_chunkpool pool;
	int64_t a, b;

	(void) state;
	assert_int_equal(nrma_chunkpool_init(&pool, 2, 2, 8, 0), 0);
	a = nrma_chunkpool_get(&pool);
	b = nrma_chunkpool_get(&pool);
	assert_int_equal(a, 0);
	assert_int_equal(b, 1);
	assert_int_equal(nrma_chunkpool_get(&pool), -1);
	nrma_chunkpool_put(&pool, (uint32_t) a);
	assert_int_equal(nrma_chunkpool_grow(&pool), 0);
	assert_int_equal(nrma_chunkpool_get(&pool), 2);
	assert_int_equal(nrma_chunkpool_get(&pool), 3);
	assert_int_equal(nrma_chunkpool_get(&pool), a);
	assert_int_equal(nrma_chunkpool_get(&pool), -1);
	nrma_chunkpool_fini(&pool);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_init_errors),
		cmocka_unit_test(test_grow_keeps_addresses),
		cmocka_unit_test(test_buffers_disjoint),
		cmocka_unit_test(test_put_get),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
