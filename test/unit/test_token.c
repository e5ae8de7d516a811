/* SPDX-License-Identifier: BSD-2-Clause */
/* Unit tests for the token table (src/nrma_token.c). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "nrma_token.h"

#define COUNT 4

static int token_setup(void **state)
{
	static struct nrma_token_table table;

	assert_int_equal(nrma_token_table_init(&table, COUNT, 24), 0);
	*state = &table;
	return 0;
}

static int token_teardown(void **state)
{
	nrma_token_table_fini(*state);
	return 0;
}

/* A slot whose token goes to a peer: random generations. */
static int64_t token_get_sealed(struct nrma_token_table *t)
{
	int64_t index = nrma_token_get_local(t);

	if (index >= 0)
		nrma_token_seal(t, (uint32_t) index);
	return index;
}

static void test_token_names_its_slot(void **state)
{
	struct nrma_token_table *t = *state;
	int64_t a = token_get_sealed(t), b = token_get_sealed(t);

	assert_true(a >= 0 && b >= 0 && a != b);
	assert_int_equal(nrma_token_find(t, nrma_token_of(t, a)), a);
	assert_int_equal(nrma_token_find(t, nrma_token_of(t, b)), b);
	assert_true(nrma_token_in_use(t, a));
	assert_int_equal(nrma_token_index(t, nrma_token_slot(t, b)), b);
	assert_true(nrma_token_of(t, a) != nrma_token_of(t, b));
}

/* A token outlives its slot's use: it must then find nothing. */
static void test_stale_token(void **state)
{
	struct nrma_token_table *t = *state;
	int64_t a = token_get_sealed(t);
	uint64_t old = nrma_token_of(t, a);
	int64_t again;

	nrma_token_put(t, a);
	assert_false(nrma_token_in_use(t, a));
	assert_int_equal(nrma_token_find(t, old), -1);
	again = token_get_sealed(t);
	assert_int_equal(again, a); /* the free stack hands it back */
	assert_int_equal(nrma_token_find(t, old), -1);
	assert_int_equal(nrma_token_find(t, nrma_token_of(t, again)), again);
}

static void test_forged_tokens(void **state)
{
	struct nrma_token_table *t = *state;
	int64_t a = token_get_sealed(t);
	uint64_t token = nrma_token_of(t, a);

	assert_int_equal(nrma_token_find(t, token ^ (1ULL << 40)), -1);
	assert_int_equal(nrma_token_find(t, (token & ~0xffffffffULL) | COUNT),
			 -1);
	assert_int_equal(nrma_token_find(t, (uint32_t) token), -1);
	assert_int_equal(nrma_token_find(t, UINT64_MAX), -1);
	/* a free slot answers no token, not even generation 0 */
	assert_int_equal(nrma_token_find(t, (a + 1) % COUNT), -1);
}

/* Sequential generations would let a peer guess the tokens of others. */
static void test_generations_unpredictable(void **state)
{
	struct nrma_token_table *t = *state;
	uint64_t prev = 0;
	int steps = 0, same = 0;

	for (int i = 0; i < 64; i++) {
		int64_t a = token_get_sealed(t);
		uint64_t gen = nrma_token_of(t, a) >> 32;

		assert_true(gen != 0);
		steps += gen == prev + 1;
		same += gen == prev;
		prev = gen;
		nrma_token_put(t, a);
	}
	assert_true(steps < 2);
	assert_true(same < 2);
}

/* Generations come in batches: they stay random across refills. */
static void test_generations_across_batches(void **state)
{
	struct nrma_token_table *t = *state;
	enum { N = 4 * NRMA_TOKEN_RANDOM_BATCH + 3 };
	uint32_t gen[N];
	int repeats = 0;

	for (int i = 0; i < N; i++) {
		int64_t a = token_get_sealed(t);

		gen[i] = nrma_token_of(t, a) >> 32;
		assert_true(gen[i] != 0);
		nrma_token_put(t, a);
	}
	/* a refill that handed out the same words again would repeat them */
	for (int i = 0; i < N; i++)
		for (int j = i + 1; j < N; j++)
			repeats += gen[i] == gen[j];
	assert_true(repeats < 2);
}

/* A local token finds its slot, and a stale one, its generation past,
 * finds nothing, also where the count wraps past 0. */
static void test_local_tokens(void **state)
{
	struct nrma_token_table *t = *state;
	int64_t a = nrma_token_get_local(t);
	uint64_t old = nrma_token_of(t, a);

	assert_true(a >= 0 && nrma_token_in_use(t, a));
	assert_int_equal(nrma_token_find(t, old), a);
	nrma_token_put(t, a);
	t->taken = UINT32_MAX - 1;
	for (int i = 0; i < 3; i++) {
		a = nrma_token_get_local(t);
		assert_true(nrma_token_in_use(t, a));
		assert_int_equal(nrma_token_find(t, old), -1);
		assert_int_equal(nrma_token_find(t, nrma_token_of(t, a)), a);
		old = nrma_token_of(t, a);
		nrma_token_put(t, a);
	}
}

/* A sealed slot's counted token, seen before it went out, finds nothing. */
static void test_seal_replaces_token(void **state)
{
	struct nrma_token_table *t = *state;
	int64_t a = nrma_token_get_local(t);
	uint64_t local = nrma_token_of(t, a);

	nrma_token_seal(t, (uint32_t) a);
	assert_true(nrma_token_in_use(t, a));
	assert_true(nrma_token_of(t, a) != local);
	assert_int_equal(nrma_token_find(t, local), -1);
	assert_int_equal(nrma_token_find(t, nrma_token_of(t, a)), a);
}

static void test_exhaustion(void **state)
{
	struct nrma_token_table *t = *state;
	int64_t got[COUNT];

	for (int i = 0; i < COUNT; i++)
		assert_true((got[i] = token_get_sealed(t)) >= 0);
	assert_int_equal(token_get_sealed(t), -1);
	nrma_token_put(t, got[1]);
	assert_int_equal(token_get_sealed(t), got[1]);
	assert_int_equal(nrma_token_count(t), COUNT);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, token_setup, token_teardown)
	const struct CMUnitTest tests[] = {
		T(test_token_names_its_slot),
		T(test_stale_token),
		T(test_forged_tokens),
		T(test_generations_unpredictable),
		T(test_generations_across_batches),
		T(test_local_tokens),
		T(test_seal_replaces_token),
		T(test_exhaustion),
	};
#undef T

	return cmocka_run_group_tests_name("nrma_token", tests, NULL, NULL);
}
