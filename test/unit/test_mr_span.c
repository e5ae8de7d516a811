/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Unit tests for the MR index (prov/nrma/nrma_mr_span.c): which span a
 * buffer may borrow.  The spans are made here, with no registration: the
 * index reads only their range, their access and their count.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "nrma_mr_span.h"

static struct nrma_mr_span span_at(uintptr_t addr, size_t len, bool local_write)
{
	struct nrma_mr_span s = {
		.addr = addr,
		.len = len,
		.local_write = local_write,
	};

	nrma_dlist_init(&s.link);
	atomic_init(&s.refs, 1);
	return s;
}

static struct nrma_mr_span *find(struct nrma_mr_span_index *idx, uintptr_t addr,
				 size_t len, bool local_write)
{
	return nrma_mr_span_index_find(idx, (const void *) addr, len,
				       local_write);
}

/* Inside, at either end, or not at all; a find takes a reference. */
static void test_bounds(void **state)
{
	struct nrma_mr_span_index *idx;
	struct nrma_mr_span s = span_at(0x10000, 0x1000, false);

	(void) state;
	assert_int_equal(nrma_mr_span_index_open(&idx), 0);
	nrma_mr_span_index_add(idx, &s);
	assert_ptr_equal(find(idx, 0x10000, 0x1000, false), &s);
	assert_ptr_equal(find(idx, 0x10fff, 1, false), &s);
	assert_ptr_equal(find(idx, 0x10800, 0x800, false), &s);
	assert_int_equal(atomic_load(&s.refs), 4);
	assert_null(find(idx, 0xffff, 2, false));	  /* starts before */
	assert_null(find(idx, 0x10800, 0x801, false));	  /* ends past */
	assert_null(find(idx, 0x11000, 1, false));	  /* just after */
	assert_null(find(idx, 0x10001, SIZE_MAX, false)); /* wraps */
	assert_int_equal(atomic_load(&s.refs), 4);
	nrma_mr_span_index_remove(idx, &s);
	assert_null(find(idx, 0x10000, 1, false));
	nrma_mr_span_index_close(idx);
}

/* A buffer the device writes needs a span it may write. */
static void test_local_write(void **state)
{
	struct nrma_mr_span_index *idx;
	struct nrma_mr_span ro = span_at(0x20000, 0x1000, false);
	struct nrma_mr_span rw = span_at(0x20800, 0x1000, true);

	(void) state;
	assert_int_equal(nrma_mr_span_index_open(&idx), 0);
	nrma_mr_span_index_add(idx, &ro);
	nrma_mr_span_index_add(idx, &rw);
	assert_ptr_equal(find(idx, 0x20000, 0x100, false), &ro);
	assert_null(find(idx, 0x20000, 0x100, true));
	assert_ptr_equal(find(idx, 0x20900, 0x100, true), &rw);
	assert_null(find(idx, 0x21000, 0x1000, false)); /* past both */
	nrma_mr_span_index_remove(idx, &ro);
	nrma_mr_span_index_remove(idx, &rw);
	nrma_mr_span_index_close(idx);
}

/* A span at the top of the address space: no sum overflows. */
static void test_top(void **state)
{
	struct nrma_mr_span_index *idx;
	uintptr_t top = UINTPTR_MAX - 0xfff;
	struct nrma_mr_span s = span_at(top, 0x1000, true);

	(void) state;
	assert_int_equal(nrma_mr_span_index_open(&idx), 0);
	nrma_mr_span_index_add(idx, &s);
	assert_ptr_equal(find(idx, UINTPTR_MAX, 1, true), &s);
	assert_null(find(idx, UINTPTR_MAX, 2, true));
	assert_null(find(idx, top - 1, 0x1000, true));
	nrma_mr_span_index_remove(idx, &s);
	nrma_mr_span_index_close(idx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bounds),
		cmocka_unit_test(test_local_write),
		cmocka_unit_test(test_top),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
