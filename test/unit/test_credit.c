/* SPDX-License-Identifier: BSD-2-Clause */
/* Unit tests for the credit arithmetic of src/nrma_credit.h. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "nrma_credit_calc.h"

static void test_avail_counts_down_and_back(void **state)
{
	struct nrma_credit_tx tx = { .grant = 4 };

	(void) state;
	assert_int_equal(nrma_credit_avail(&tx, 0), 4);
	tx.sent = 4;
	assert_int_equal(nrma_credit_avail(&tx, 0), 0);
	tx.back = 1; /* a header granted one more */
	assert_int_equal(nrma_credit_avail(&tx, 0), 1);
	assert_int_equal(nrma_credit_avail(&tx, 2), 3); /* atomics two more */
	tx.sent = 7;
	assert_int_equal(nrma_credit_avail(&tx, 2), 0);
}

/* The receiver tops a peer up from its pool: past the first grant too. */
static void test_avail_grows_past_first_grant(void **state)
{
	struct nrma_credit_tx tx = { .grant = 1, .sent = 1 };

	(void) state;
	assert_int_equal(nrma_credit_avail(&tx, 0), 0);
	tx.back = 15;
	assert_int_equal(nrma_credit_avail(&tx, 0), 15);
	assert_int_equal(nrma_credit_avail(&tx, 16), 31);
}

/* Words that a lying peer makes wrap do not come back round to few. */
static void test_avail_saturates(void **state)
{
	struct nrma_credit_tx tx = { .grant = 4, .sent = 2, .back = 5 };

	(void) state;
	assert_int_equal(nrma_credit_avail(&tx, UINT64_MAX), UINT64_MAX - 2);
	tx.back = UINT64_MAX;
	assert_int_equal(nrma_credit_avail(&tx, 0), UINT64_MAX - 2);
}

/* Credits known left go first; the peer's word is read when they run out. */
static void test_tx_take_from_left(void **state)
{
	struct nrma_credit_tx tx = { .grant = 2 };
	uint64_t remote = 0;

	(void) state;
	assert_true(nrma_credit_tx_take(&tx, &remote));
	assert_int_equal(tx.left, 1);
	remote = 5; /* granted meanwhile: not looked at while one is left */
	assert_true(nrma_credit_tx_take(&tx, &remote));
	assert_int_equal(tx.left, 0);
	assert_true(nrma_credit_tx_take(&tx, &remote));
	assert_int_equal(tx.left, 4);
	nrma_credit_tx_untake(&tx);
	assert_int_equal(tx.left, 5);
	assert_int_equal(tx.sent, 2);
	for (int i = 0; i < 5; i++)
		assert_true(nrma_credit_tx_take(&tx, &remote));
	assert_false(nrma_credit_tx_take(&tx, &remote));
	assert_int_equal(tx.sent, 7);
	assert_int_equal(nrma_credit_avail(&tx, remote), 0);
}

static void test_overrun(void **state)
{
	struct nrma_credit_rx rx = { .granted = 6, .told = 4, .received = 4 };

	(void) state;
	assert_false(nrma_credit_overrun(&rx));
	/* Granted, but the peer never heard of it: past its credits. */
	rx.received = 5;
	assert_true(nrma_credit_overrun(&rx));
	rx.told = 5;
	assert_false(nrma_credit_overrun(&rx));
}

/* Out: buffers the peer may fill; want: what brings it to its share. */
static void test_out_and_want(void **state)
{
	struct nrma_credit_rx rx = { .granted = 10, .told = 10, .received = 4 };

	(void) state;
	assert_int_equal(nrma_credit_out(&rx), 6);
	assert_int_equal(nrma_credit_want(&rx, 16), 10);
	assert_int_equal(nrma_credit_want(&rx, 6), 0);
	assert_int_equal(nrma_credit_want(&rx, 2), 0);
	rx.received = 11; /* an overrun: nothing out, not negative */
	assert_int_equal(nrma_credit_out(&rx), 0);
	assert_int_equal(nrma_credit_want(&rx, 16), 16);
}

/* Atomics only once the peer may hold half its share or less. */
static void test_due(void **state)
{
	struct nrma_credit_rx rx = { .granted = 8, .told = 8, .received = 1 };

	(void) state;
	assert_false(nrma_credit_due(&rx, 8)); /* nothing new to tell */
	rx.granted = 9;
	assert_false(nrma_credit_due(&rx, 8)); /* it holds 7: headers */
	rx.received = 4;
	assert_true(nrma_credit_due(&rx, 8)); /* it holds 4 */
}

/* A sender with no credit left is always told of a new one. */
static void test_due_for_a_stalled_sender(void **state)
{
	(void) state;
	for (uint64_t share = 1; share <= 64; share++) {
		struct nrma_credit_rx rx = { .granted = 101,
					     .told = 100,
					     .received = 100 };

		assert_true(nrma_credit_due(&rx, share));
	}
}

static void test_take(void **state)
{
	struct nrma_credit_rx rx = { .granted = 8, .told = 3, .received = 3 };

	(void) state;
	assert_int_equal(nrma_credit_take_back(&rx, 2), 2);
	assert_int_equal(rx.told, 5);
	assert_int_equal(nrma_credit_take_back(&rx, 100), 3);
	assert_int_equal(nrma_credit_take_back(&rx, 100), 0);
	assert_int_equal(rx.told, 8);
	assert_false(nrma_credit_due(&rx, 16));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_avail_counts_down_and_back),
		cmocka_unit_test(test_avail_grows_past_first_grant),
		cmocka_unit_test(test_avail_saturates),
		cmocka_unit_test(test_tx_take_from_left),
		cmocka_unit_test(test_overrun),
		cmocka_unit_test(test_out_and_want),
		cmocka_unit_test(test_due),
		cmocka_unit_test(test_due_for_a_stalled_sender),
		cmocka_unit_test(test_take),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
