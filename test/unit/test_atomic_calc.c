/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Unit tests for an atomic's element arithmetic (src/nrma_atomic_calc.c):
 * hand-worked values, each in a word of known bytes, checking both the
 * element's new value and that its neighbours kept theirs.
 */
#include <complex.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "nrma_atomic_calc.h"

/* Bytes 0x10, 0x11, ... 0x17: every neighbour is told apart. */
static uint64_t word_of_bytes(void)
{
	unsigned char b[8];
	uint64_t w;

	for (int i = 0; i < 8; i++)
		b[i] = (unsigned char) (0x10 + i);
	memcpy(&w, b, sizeof(w));
	return w;
}

static uint64_t word_with(uint64_t w, size_t offset, const void *v, size_t size)
{
	memcpy((unsigned char *) &w + offset, v, size);
	return w;
}

/* Runs op at offset and checks the element and the bytes around it. */
static void check_apply(enum fi_datatype dt, enum fi_op op, uint64_t word,
			size_t offset, const void *operand, const void *compare,
			const void *want)
{
	size_t size = nrma_atomic_calc_size(dt);
	uint64_t got =
		nrma_atomic_calc_apply(dt, op, word, offset, operand, compare);

	assert_int_equal(got, word_with(word, offset, want, size));
}

static void test_sizes_and_table(void **state)
{
	(void) state;
	assert_int_equal(nrma_atomic_calc_size(FI_UINT8), 1);
	assert_int_equal(nrma_atomic_calc_size(FI_INT16), 2);
	assert_int_equal(nrma_atomic_calc_size(FI_FLOAT), 4);
	assert_int_equal(nrma_atomic_calc_size(FI_FLOAT_COMPLEX), 8);
	assert_int_equal(nrma_atomic_calc_size(FI_DOUBLE_COMPLEX), 0);
	assert_int_equal(nrma_atomic_calc_size(FI_LONG_DOUBLE), 0);
	assert_int_equal(nrma_atomic_calc_size(FI_UINT128), 0);
	/* Each form's operations. */
	assert_true(nrma_atomic_calc_valid(FI_INT8, FI_BXOR, NRMA_ATOMIC_BASE));
	assert_true(nrma_atomic_calc_valid(FI_INT8, FI_ATOMIC_WRITE,
					   NRMA_ATOMIC_BASE));
	assert_false(nrma_atomic_calc_valid(FI_INT8, FI_ATOMIC_READ,
					    NRMA_ATOMIC_BASE));
	assert_false(
		nrma_atomic_calc_valid(FI_INT8, FI_CSWAP, NRMA_ATOMIC_BASE));
	assert_true(nrma_atomic_calc_valid(FI_UINT16, FI_ATOMIC_READ,
					   NRMA_ATOMIC_FETCH));
	assert_false(
		nrma_atomic_calc_valid(FI_UINT16, FI_MSWAP, NRMA_ATOMIC_FETCH));
	assert_true(nrma_atomic_calc_valid(FI_UINT32, FI_MSWAP,
					   NRMA_ATOMIC_COMPARE));
	assert_false(
		nrma_atomic_calc_valid(FI_UINT32, FI_SUM, NRMA_ATOMIC_COMPARE));
	/* Reals have no bits, complex numbers no order. */
	assert_true(
		nrma_atomic_calc_valid(FI_DOUBLE, FI_LXOR, NRMA_ATOMIC_FETCH));
	assert_false(
		nrma_atomic_calc_valid(FI_DOUBLE, FI_BOR, NRMA_ATOMIC_BASE));
	assert_false(nrma_atomic_calc_valid(FI_FLOAT, FI_MSWAP,
					    NRMA_ATOMIC_COMPARE));
	assert_true(nrma_atomic_calc_valid(FI_FLOAT, FI_CSWAP_GT,
					   NRMA_ATOMIC_COMPARE));
	assert_true(nrma_atomic_calc_valid(FI_FLOAT_COMPLEX, FI_PROD,
					   NRMA_ATOMIC_BASE));
	assert_false(nrma_atomic_calc_valid(FI_FLOAT_COMPLEX, FI_MIN,
					    NRMA_ATOMIC_BASE));
	assert_false(nrma_atomic_calc_valid(FI_FLOAT_COMPLEX, FI_CSWAP_LE,
					    NRMA_ATOMIC_COMPARE));
	assert_true(nrma_atomic_calc_valid(FI_FLOAT_COMPLEX, FI_CSWAP_NE,
					   NRMA_ATOMIC_COMPARE));
	assert_false(nrma_atomic_calc_valid(FI_DOUBLE_COMPLEX, FI_SUM,
					    NRMA_ATOMIC_BASE));
	assert_false(nrma_atomic_calc_valid(
		FI_INT64, (enum fi_op)(FI_MSWAP + 1), NRMA_ATOMIC_FETCH));
}

/* Integer arithmetic wraps in the element, never into its neighbour. */
static void test_integers(void **state)
{
	uint64_t w = word_of_bytes();
	uint8_t u8 = 0xf0, u8_want = 0x13 + 0xf0 - 0x100;
	int16_t i16 = -5, i16_want = -5, i16_three = 3;
	uint16_t u16 = 0xffff, u16_want;
	int32_t i32 = -2, i32_want;
	uint64_t u64 = 0x0f0f0f0f0f0f0f0fULL;
	int64_t i64_lo = 7, i64_want;

	(void) state;
	check_apply(FI_UINT8, FI_SUM, w, 3, &u8, &u8, &u8_want);
	w = word_with(word_of_bytes(), 2, &i16_three, 2);
	check_apply(FI_INT16, FI_MIN, w, 2, &i16, &i16, &i16_want);
	check_apply(FI_INT16, FI_MAX, w, 2, &i16, &i16, &i16_three);
	w = word_of_bytes();
	memcpy(&u16_want, (unsigned char *) &w + 6, 2);
	u16_want = (uint16_t) ((uint32_t) u16_want * 0xffffu);
	check_apply(FI_UINT16, FI_PROD, w, 6, &u16, &u16, &u16_want);
	memcpy(&i32_want, (unsigned char *) &w + 4, 4);
	i32_want = (int32_t) ((uint32_t) i32_want * (uint32_t) i32);
	check_apply(FI_INT32, FI_PROD, w, 4, &i32, &i32, &i32_want);
	i64_want = (int64_t) (w | (uint64_t) i64_lo);
	check_apply(FI_INT64, FI_BOR, w, 0, &i64_lo, &i64_lo, &i64_want);
	i64_want = (int64_t) (w ^ u64);
	check_apply(FI_UINT64, FI_BXOR, w, 0, &u64, &u64, &i64_want);
	i64_want = (int64_t) (w & u64);
	check_apply(FI_UINT64, FI_BAND, w, 0, &u64, &u64, &i64_want);
}

static void test_logic_and_writes(void **state)
{
	uint64_t w = word_of_bytes();
	uint8_t zero = 0, one = 1, seven = 7, old = 0x15;

	(void) state;
	check_apply(FI_UINT8, FI_LOR, w, 5, &zero, &zero, &one);
	check_apply(FI_UINT8, FI_LAND, w, 5, &zero, &zero, &zero);
	check_apply(FI_UINT8, FI_LAND, w, 5, &seven, &zero, &one);
	check_apply(FI_UINT8, FI_LXOR, w, 5, &seven, &zero, &zero);
	check_apply(FI_UINT8, FI_LXOR, w, 5, &zero, &zero, &one);
	check_apply(FI_INT8, FI_ATOMIC_WRITE, w, 5, &seven, &zero, &seven);
	check_apply(FI_INT8, FI_ATOMIC_READ, w, 5, &seven, &zero, &old);
}

/* The swaps: "compare op *addr" decides; MSWAP takes compare's bits. */
static void test_swaps(void **state)
{
	uint64_t w = word_of_bytes();
	uint16_t old, lo = 0x1000, hi = 0x2000, swap = 0xbeef, mask = 0x00ff;
	uint16_t masked;

	(void) state;
	memcpy(&old, (unsigned char *) &w + 2, 2); /* 0x1312 or 0x1213 */
	masked = (uint16_t) ((swap & mask) | (old & ~mask));
	check_apply(FI_UINT16, FI_CSWAP, w, 2, &swap, &old, &swap);
	check_apply(FI_UINT16, FI_CSWAP, w, 2, &swap, &lo, &old);
	check_apply(FI_UINT16, FI_CSWAP_NE, w, 2, &swap, &lo, &swap);
	check_apply(FI_UINT16, FI_CSWAP_NE, w, 2, &swap, &old, &old);
	check_apply(FI_UINT16, FI_CSWAP_LE, w, 2, &swap, &old, &swap);
	check_apply(FI_UINT16, FI_CSWAP_LE, w, 2, &swap, &hi, &old);
	check_apply(FI_UINT16, FI_CSWAP_LT, w, 2, &swap, &lo, &swap);
	check_apply(FI_UINT16, FI_CSWAP_LT, w, 2, &swap, &old, &old);
	check_apply(FI_UINT16, FI_CSWAP_GE, w, 2, &swap, &hi, &swap);
	check_apply(FI_UINT16, FI_CSWAP_GE, w, 2, &swap, &lo, &old);
	check_apply(FI_UINT16, FI_CSWAP_GT, w, 2, &swap, &hi, &swap);
	check_apply(FI_UINT16, FI_CSWAP_GT, w, 2, &swap, &old, &old);
	check_apply(FI_UINT16, FI_MSWAP, w, 2, &swap, &mask, &masked);
}

static void test_reals(void **state)
{
	float f = 1.5f, f_add = 2.25f, f_sum = 3.75f, f_small = -1.0f;
	double d = 2.0, d_big = 8.5, d_prod = 17.0;
	float complex c = 1.0f + 2.0f * I, c_add = 3.0f - 1.0f * I;
	float complex c_sum = 4.0f + 1.0f * I, c_prod = 5.0f + 5.0f * I;
	uint64_t w = word_with(word_of_bytes(), 4, &f, 4);

	(void) state;
	check_apply(FI_FLOAT, FI_SUM, w, 4, &f_add, &f_add, &f_sum);
	check_apply(FI_FLOAT, FI_MIN, w, 4, &f_small, &f_small, &f_small);
	check_apply(FI_FLOAT, FI_CSWAP_LT, w, 4, &f_small, &f_small, &f_small);
	w = word_with(0, 0, &d, 8);
	check_apply(FI_DOUBLE, FI_MAX, w, 0, &d_big, &d_big, &d_big);
	check_apply(FI_DOUBLE, FI_PROD, w, 0, &d_big, &d_big, &d_prod);
	w = word_with(0, 0, &c, 8);
	check_apply(FI_FLOAT_COMPLEX, FI_SUM, w, 0, &c_add, &c_add, &c_sum);
	check_apply(FI_FLOAT_COMPLEX, FI_PROD, w, 0, &c_add, &c_add, &c_prod);
	check_apply(FI_FLOAT_COMPLEX, FI_CSWAP, w, 0, &c_add, &c, &c_add);
}

/* An element that would cross the word, or no element, changes nothing. */
static void test_out_of_place(void **state)
{
	uint64_t w = word_of_bytes();
	uint32_t v = 1;
	unsigned char b;

	(void) state;
	assert_int_equal(
		nrma_atomic_calc_apply(FI_UINT32, FI_SUM, w, 2, &v, &v), w);
	assert_int_equal(
		nrma_atomic_calc_apply(FI_UINT32, FI_SUM, w, 8, &v, &v), w);
	assert_int_equal(
		nrma_atomic_calc_apply(FI_DOUBLE_COMPLEX, FI_SUM, w, 0, &v, &v),
		w);
	nrma_atomic_calc_get(w, 6, 1, &b);
	assert_int_equal(b, 0x16);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sizes_and_table),
		cmocka_unit_test(test_integers),
		cmocka_unit_test(test_logic_and_writes),
		cmocka_unit_test(test_swaps),
		cmocka_unit_test(test_reals),
		cmocka_unit_test(test_out_of_place),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
