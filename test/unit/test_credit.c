/* SPDX-License-Identifier: BSD-2-Clause */
/* Unit tests for the credit arithmetic of src/nrma_credit.h. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "nrma_credit.h"

static void test_avail_counts_down_and_back(void **state)
{
	struct nrma_credit_tx tx = { .grant = 4 };

	(void) state;
	assert_int_equal(nrma_credit_avail(&tx, 0), 4);
	tx.sent = 4;
	assert_int_equal(nrma_credit_avail(&tx, 0), 0);
	tx.back = 1; /* a header gave one back */
	assert_int_equal(nrma_credit_avail(&tx, 0), 1);
	assert_int_equal(nrma_credit_avail(&tx, 2), 3); /* atomics two more */
	tx.sent = 7;
	assert_int_equal(nrma_credit_avail(&tx, 2), 0);
}

/* A peer cannot give us more than its grant, by any path. */
static void test_avail_never_above_grant(void **state)
{
	struct nrma_credit_tx tx = { .grant = 4, .sent = 2, .back = 5 };

	(void) state;
	assert_int_equal(nrma_credit_avail(&tx, 0), 4);
	tx.back = 0;
	assert_int_equal(nrma_credit_avail(&tx, UINT64_MAX), 4);
	tx.back = 1;
	assert_int_equal(nrma_credit_avail(&tx, 1), 4);
}

static void test_overrun(void **state)
{
	struct nrma_credit_rx rx = { .grant = 4, .received = 4 };

	(void) state;
	assert_false(nrma_credit_overrun(&rx));
	rx.received = 5;
	assert_true(nrma_credit_overrun(&rx));
	rx.released = rx.returned = 1;
	assert_false(nrma_credit_overrun(&rx));
}

/* Atomics only when the peer may be over half its grant. */
static void test_due(void **state)
{
	struct nrma_credit_rx rx = { .grant = 8, .received = 1, .released = 1 };

	(void) state;
	assert_false(nrma_credit_due(&rx)); /* a ping-pong: headers carry it */
	rx.received = rx.released = 5;
	assert_true(nrma_credit_due(&rx));
	rx.released = 0; /* all held: nothing to give */
	assert_false(nrma_credit_due(&rx));
}

/* A sender with no credit left is always answered once a buffer frees. */
static void test_due_for_a_stalled_sender(void **state)
{
	for (uint64_t grant = 1; grant <= 64; grant++) {
		struct nrma_credit_rx rx = { .grant = grant,
					     .received = grant + 100,
					     .returned = 100,
					     .released = 101 };

		(void) state;
		assert_true(nrma_credit_due(&rx));
	}
}

static void test_take(void **state)
{
	struct nrma_credit_rx rx = { .grant = 8, .received = 6, .released = 5 };

	(void) state;
	assert_int_equal(nrma_credit_take_back(&rx, 2), 2);
	assert_int_equal(rx.returned, 2);
	assert_int_equal(nrma_credit_take_back(&rx, 100), 3);
	assert_int_equal(nrma_credit_take_back(&rx, 100), 0);
	assert_int_equal(rx.returned, 5);
	assert_false(nrma_credit_due(&rx));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_avail_counts_down_and_back),
		cmocka_unit_test(test_avail_never_above_grant),
		cmocka_unit_test(test_overrun),
		cmocka_unit_test(test_due),
		cmocka_unit_test(test_due_for_a_stalled_sender),
		cmocka_unit_test(test_take),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
