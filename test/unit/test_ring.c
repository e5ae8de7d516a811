/* SPDX-License-Identifier: BSD-2-Clause */
/* Unit tests for the bounded FIFO in src/nrma_ring.[ch]. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <errno.h>
#include <string.h>
#include <cmocka.h>

#include "nrma_ring.h"

struct elem {
	uint64_t seq;
	char pad[12]; /* an element size that is not a power of two */
};

static void test_init_errors(void **state)
{
	struct nrma_ring ring;

	(void) state;
	assert_int_equal(nrma_ring_init(&ring, 0, sizeof(struct elem)),
			 -EINVAL);
	assert_int_equal(nrma_ring_init(&ring, 4, 0), -EINVAL);
}

static void test_init_empty(void **state)
{
	struct nrma_ring ring;

	(void) state;
	assert_int_equal(nrma_ring_init(&ring, 3, sizeof(struct elem)), 0);
	assert_non_null(ring.elems);
	assert_int_equal(ring.capacity, 3);
	assert_int_equal(ring.elem_size, sizeof(struct elem));
	assert_int_equal(ring.count, 0);
	assert_true(nrma_ring_empty(&ring));
	assert_false(nrma_ring_full(&ring));
	nrma_ring_fini(&ring);
	assert_null(ring.elems);
	assert_int_equal(ring.capacity, 0);
	assert_int_equal(ring.count, 0);
}

static void test_push_until_full(void **state)
{
	struct nrma_ring ring;
	struct elem *slots[4];

	(void) state;
	assert_int_equal(nrma_ring_init(&ring, 4, sizeof(struct elem)), 0);
	for (int i = 0; i < 4; i++) {
		assert_false(nrma_ring_full(&ring));
		slots[i] = nrma_ring_push(&ring);
		assert_non_null(slots[i]);
		slots[i]->seq = 100 + i;
		assert_int_equal(ring.count, i + 1);
		assert_false(nrma_ring_empty(&ring));
	}
	assert_true(nrma_ring_full(&ring));
	assert_null(nrma_ring_push(&ring));
	assert_int_equal(ring.count, 4);

	/* Distinct slots, each inside the buffer, in order. */
	for (int i = 0; i < 4; i++) {
		assert_ptr_equal(slots[i],
				 ring.elems + i * sizeof(struct elem));
		assert_ptr_equal(nrma_ring_at(&ring, i), slots[i]);
		assert_int_equal(((struct elem *) nrma_ring_at(&ring, i))->seq,
				 100 + i);
	}
	nrma_ring_fini(&ring);
}

/* Pushes and pops many times the capacity; order must stay FIFO. */
static void test_fifo_wraparound(void **state)
{
	struct nrma_ring ring;
	uint64_t next_in = 0, next_out = 0;

	(void) state;
	assert_int_equal(nrma_ring_init(&ring, 5, sizeof(struct elem)), 0);
	for (int round = 0; round < 50; round++) {
		/* Uneven batch sizes so the head visits every slot. */
		size_t in = 1 + round % 5, out = 1 + (round * 3) % 4;

		for (size_t i = 0; i < in && !nrma_ring_full(&ring); i++) {
			struct elem *e = nrma_ring_push(&ring);

			assert_non_null(e);
			e->seq = next_in++;
		}
		assert_int_equal(ring.count, next_in - next_out);
		for (size_t i = 0; i < ring.count; i++) {
			struct elem *e = nrma_ring_at(&ring, i);

			assert_int_equal(e->seq, next_out + i);
		}
		if (out > ring.count)
			out = ring.count;
		nrma_ring_consume(&ring, out);
		next_out += out;
		assert_int_equal(ring.count, next_in - next_out);
		if (ring.count)
			assert_int_equal(
				((struct elem *) nrma_ring_at(&ring, 0))->seq,
				next_out);
	}
	assert_true(next_in > 5 * ring.capacity);
	nrma_ring_fini(&ring);
}

static void test_consume_more_than_count(void **state)
{
	struct nrma_ring ring;
	struct elem *e;

	(void) state;
	assert_int_equal(nrma_ring_init(&ring, 4, sizeof(struct elem)), 0);
	/* Move the head off slot 0 first. */
	for (int i = 0; i < 3; i++)
		((struct elem *) nrma_ring_push(&ring))->seq = i;
	nrma_ring_consume(&ring, 2);
	assert_int_equal(ring.count, 1);
	assert_int_equal(((struct elem *) nrma_ring_at(&ring, 0))->seq, 2);

	nrma_ring_consume(&ring, 10);
	assert_int_equal(ring.count, 0);
	assert_true(nrma_ring_empty(&ring));

	/* Still usable, and to full capacity, after over-consuming. */
	for (int i = 0; i < 4; i++) {
		e = nrma_ring_push(&ring);
		assert_non_null(e);
		e->seq = 10 + i;
	}
	assert_true(nrma_ring_full(&ring));
	for (int i = 0; i < 4; i++)
		assert_int_equal(((struct elem *) nrma_ring_at(&ring, i))->seq,
				 10 + i);
	nrma_ring_consume(&ring, 0);
	assert_int_equal(ring.count, 4);
	nrma_ring_fini(&ring);
}

/* nrma_ring_at(i) is the i-th oldest element, across the buffer's end. */
static void test_at_wraps(void **state)
{
	struct nrma_ring ring;

	(void) state;
	assert_int_equal(nrma_ring_init(&ring, 4, sizeof(struct elem)), 0);
	for (int i = 0; i < 3; i++)
		((struct elem *) nrma_ring_push(&ring))->seq = i;
	nrma_ring_consume(&ring, 3); /* head is now slot 3 */
	for (int i = 0; i < 4; i++)
		((struct elem *) nrma_ring_push(&ring))->seq = 20 + i;
	assert_int_equal(ring.head, 3);
	/* The oldest is in the last slot, the rest from slot 0 on. */
	assert_ptr_equal(nrma_ring_at(&ring, 0),
			 ring.elems + 3 * sizeof(struct elem));
	assert_ptr_equal(nrma_ring_at(&ring, 1), ring.elems);
	assert_ptr_equal(nrma_ring_at(&ring, 3),
			 ring.elems + 2 * sizeof(struct elem));
	for (int i = 0; i < 4; i++)
		assert_int_equal(((struct elem *) nrma_ring_at(&ring, i))->seq,
				 20 + i);
	nrma_ring_fini(&ring);
}

/* A capacity-1 ring alternates between empty and full. */
static void test_capacity_one(void **state)
{
	struct nrma_ring ring;

	(void) state;
	assert_int_equal(nrma_ring_init(&ring, 1, sizeof(int)), 0);
	for (int i = 0; i < 5; i++) {
		int *slot = nrma_ring_push(&ring);

		assert_non_null(slot);
		*slot = i;
		assert_true(nrma_ring_full(&ring));
		assert_null(nrma_ring_push(&ring));
		assert_int_equal(*(int *) nrma_ring_at(&ring, 0), i);
		nrma_ring_consume(&ring, 1);
		assert_true(nrma_ring_empty(&ring));
	}
	nrma_ring_fini(&ring);
}

/*
 * Growing a ring whose contents wrap past the end of its buffer: the
 * capacity doubles, the elements keep their order, and the new room is
 * usable, across further wraps.
 */
static void test_grow_wrapped(void **state)
{
	struct nrma_ring ring;
	uint64_t next_in = 0, next_out = 0;

	(void) state;
	assert_int_equal(nrma_ring_init(&ring, 4, sizeof(struct elem)), 0);
	for (int i = 0; i < 3; i++)
		((struct elem *) nrma_ring_push(&ring))->seq = next_in++;
	nrma_ring_consume(&ring, 3);
	next_out = 3;
	/* Full, with the oldest in the last slot and the rest from slot 0. */
	for (int i = 0; i < 4; i++)
		((struct elem *) nrma_ring_push(&ring))->seq = next_in++;
	assert_true(nrma_ring_full(&ring));
	assert_int_equal(ring.head, 3);

	assert_int_equal(nrma_ring_grow(&ring), 0);
	assert_int_equal(ring.capacity, 8);
	assert_int_equal(ring.elem_size, sizeof(struct elem));
	assert_int_equal(ring.count, 4);
	assert_false(nrma_ring_full(&ring));
	for (size_t i = 0; i < 4; i++)
		assert_int_equal(((struct elem *) nrma_ring_at(&ring, i))->seq,
				 next_out + i);

	/* Four more fit now, after the old ones. */
	for (int i = 0; i < 4; i++) {
		struct elem *e = nrma_ring_push(&ring);

		assert_non_null(e);
		e->seq = next_in++;
	}
	assert_true(nrma_ring_full(&ring));
	assert_null(nrma_ring_push(&ring));
	for (size_t i = 0; i < ring.count; i++)
		assert_int_equal(((struct elem *) nrma_ring_at(&ring, i))->seq,
				 next_out + i);

	/* FIFO order holds as the bigger ring wraps in its turn. */
	for (int round = 0; round < 20; round++) {
		nrma_ring_consume(&ring, 3);
		next_out += 3;
		for (int i = 0; i < 3; i++)
			((struct elem *) nrma_ring_push(&ring))->seq =
				next_in++;
		assert_true(nrma_ring_full(&ring));
		for (size_t i = 0; i < ring.count; i++)
			assert_int_equal(
				((struct elem *) nrma_ring_at(&ring, i))->seq,
				next_out + i);
	}

	/* And it grows again, from a wrapped state, to 16. */
	assert_int_not_equal(ring.head, 0);
	assert_int_equal(nrma_ring_grow(&ring), 0);
	assert_int_equal(ring.capacity, 16);
	assert_int_equal(ring.count, 8);
	for (int i = 0; i < 8; i++)
		((struct elem *) nrma_ring_push(&ring))->seq = next_in++;
	assert_true(nrma_ring_full(&ring));
	for (size_t i = 0; i < ring.count; i++)
		assert_int_equal(((struct elem *) nrma_ring_at(&ring, i))->seq,
				 next_out + i);
	nrma_ring_fini(&ring);
}

/* Growing an empty ring, and a capacity-1 ring. */
static void test_grow_small(void **state)
{
	struct nrma_ring ring;

	(void) state;
	assert_int_equal(nrma_ring_init(&ring, 1, sizeof(int)), 0);
	assert_int_equal(nrma_ring_grow(&ring), 0);
	assert_int_equal(ring.capacity, 2);
	assert_true(nrma_ring_empty(&ring));
	*(int *) nrma_ring_push(&ring) = 7;
	assert_int_equal(nrma_ring_grow(&ring), 0);
	assert_int_equal(ring.capacity, 4);
	assert_int_equal(ring.count, 1);
	assert_int_equal(*(int *) nrma_ring_at(&ring, 0), 7);
	for (int i = 0; i < 3; i++)
		*(int *) nrma_ring_push(&ring) = 8 + i;
	assert_true(nrma_ring_full(&ring));
	for (int i = 0; i < 4; i++)
		assert_int_equal(*(int *) nrma_ring_at(&ring, i), 7 + i);
	nrma_ring_fini(&ring);
}

/* Dropping one at a time keeps FIFO order across the wrap. */
static void test_drop_wraps(void **state)
{
	struct nrma_ring ring;
	int next_in = 0, next_out = 0;

	(void) state;
	assert_int_equal(nrma_ring_init(&ring, 3, sizeof(struct elem)), 0);
	for (int round = 0; round < 10; round++) {
		while (!nrma_ring_full(&ring))
			((struct elem *) nrma_ring_push(&ring))->seq =
				next_in++;
		for (int i = 0; i < 2; i++) {
			assert_int_equal(
				((struct elem *) nrma_ring_at(&ring, 0))->seq,
				next_out++);
			nrma_ring_drop(&ring);
		}
		assert_int_equal(ring.count, ring.capacity - 2);
	}
	while (!nrma_ring_empty(&ring)) {
		assert_int_equal(((struct elem *) nrma_ring_at(&ring, 0))->seq,
				 next_out++);
		nrma_ring_drop(&ring);
	}
	assert_int_equal(next_out, next_in);
	nrma_ring_fini(&ring);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_init_errors),
		cmocka_unit_test(test_init_empty),
		cmocka_unit_test(test_push_until_full),
		cmocka_unit_test(test_fifo_wraparound),
		cmocka_unit_test(test_consume_more_than_count),
		cmocka_unit_test(test_drop_wraps),
		cmocka_unit_test(test_at_wraps),
		cmocka_unit_test(test_capacity_one),
		cmocka_unit_test(test_grow_wrapped),
		cmocka_unit_test(test_grow_small),
	};

	return cmocka_run_group_tests_name("nrma_ring", tests, NULL, NULL);
}
