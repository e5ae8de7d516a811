/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fi_atomic(3)'s operations on one element of a 64-bit word (see
 * nrma_atomic_calc.h).  Elements are read and written through memcpy at
 * their byte offset, which is where the word's memory holds them on a
 * host of either byte order.  Integer arithmetic wraps, as the device's
 * fetch-and-add does: it runs on the unsigned type of the same width.
 */
#include <complex.h>
#include <string.h>

#include "nrma_atomic_calc.h"

_Static_assert(sizeof(float complex) == sizeof(uint64_t),
	       "a complex float fills a word");

size_t nrma_atomic_calc_size(enum fi_datatype datatype)
{
	switch (datatype) {
	case FI_INT8:
	case FI_UINT8:
		return 1;
	case FI_INT16:
	case FI_UINT16:
		return 2;
	case FI_INT32:
	case FI_UINT32:
	case FI_FLOAT:
		return 4;
	case FI_INT64:
	case FI_UINT64:
	case FI_DOUBLE:
	case FI_FLOAT_COMPLEX:
		return 8;
	default:
		return 0;
	}
}

/* The operations each form of call takes (fi_atomic(3)). */
static bool calc_form_has(enum fi_op op, enum nrma_atomic_kind kind)
{
	switch (kind) {
	case NRMA_ATOMIC_BASE:
		return op <= FI_BXOR || op == FI_ATOMIC_WRITE;
	case NRMA_ATOMIC_FETCH:
		return op <= FI_ATOMIC_WRITE;
	default:
		return op >= FI_CSWAP && op <= FI_MSWAP;
	}
}

static bool calc_op_bitwise(enum fi_op op)
{
	return op == FI_BOR || op == FI_BAND || op == FI_BXOR || op == FI_MSWAP;
}

static bool calc_op_ordered(enum fi_op op)
{
	return op == FI_MIN || op == FI_MAX ||
	       (op >= FI_CSWAP_LE && op <= FI_CSWAP_GT);
}

/* Reals have no bits to operate on; complex numbers no order either. */
static bool calc_type_has(enum fi_datatype datatype, enum fi_op op)
{
	switch (datatype) {
	case FI_FLOAT_COMPLEX:
		return !calc_op_bitwise(op) && !calc_op_ordered(op);
	case FI_FLOAT:
	case FI_DOUBLE:
		return !calc_op_bitwise(op);
	default:
		return true;
	}
}

bool nrma_atomic_calc_valid(enum fi_datatype datatype, enum fi_op op,
			    enum nrma_atomic_kind kind)
{
	return nrma_atomic_calc_size(datatype) && (unsigned) op <= FI_MSWAP &&
	       calc_form_has(op, kind) && calc_type_has(datatype, op);
}

/* A bitwise operation, byte by byte: the same for every width. */
static unsigned char calc_byte(enum fi_op op, unsigned char old,
			       unsigned char operand, unsigned char compare)
{
	switch (op) {
	case FI_BOR:
		return old | operand;
	case FI_BAND:
		return old & operand;
	case FI_BXOR:
		return old ^ operand;
	default: /* FI_MSWAP: compare is the mask of bits to take */
		return (unsigned char) ((operand & compare) | (old & ~compare));
	}
}

/*
 * The new value of an element of type T (U: its wrapping type for sums
 * and products): the arithmetic and logical operations, the writes and
 * the conditional swaps, where "compare op *addr" holds.  FI_ATOMIC_READ
 * and a swap whose condition fails keep old.
 */
#define CALC_VALUE(name, T, U)                                        \
	static T calc_##name(enum fi_op op, T old, T a, T c)          \
	{                                                             \
		switch (op) {                                         \
		case FI_MIN:                                          \
			return a < old ? a : old;                     \
		case FI_MAX:                                          \
			return a > old ? a : old;                     \
		case FI_SUM:                                          \
			return (T) ((U) old + (U) a);                 \
		case FI_PROD:                                         \
			return (T) ((U) old * (U) a);                 \
		case FI_LOR:                                          \
			return old || a;                              \
		case FI_LAND:                                         \
			return old && a;                              \
		case FI_LXOR:                                         \
			return !old != !a;                            \
		case FI_ATOMIC_WRITE:                                 \
			return a;                                     \
		case FI_CSWAP:                                        \
			return c == old ? a : old;                    \
		case FI_CSWAP_NE:                                     \
			return c != old ? a : old;                    \
		case FI_CSWAP_LE:                                     \
			return c <= old ? a : old;                    \
		case FI_CSWAP_LT:                                     \
			return c < old ? a : old;                     \
		case FI_CSWAP_GE:                                     \
			return c >= old ? a : old;                    \
		case FI_CSWAP_GT:                                     \
			return c > old ? a : old;                     \
		default:                                              \
			return old;                                   \
		}                                                     \
	}                                                             \
	static void calc_##name##_at(enum fi_op op, unsigned char *e, \
				     const void *a, const void *c)    \
	{                                                             \
		T v, av, cv;                                          \
                                                                      \
		memcpy(&v, e, sizeof(v));                             \
		memcpy(&av, a, sizeof(av));                           \
		memcpy(&cv, c, sizeof(cv));                           \
		v = calc_##name(op, v, av, cv);                       \
		memcpy(e, &v, sizeof(v));                             \
	}

CALC_VALUE(i8, int8_t, uint32_t)
CALC_VALUE(u8, uint8_t, uint32_t)
CALC_VALUE(i16, int16_t, uint32_t)
CALC_VALUE(u16, uint16_t, uint32_t)
CALC_VALUE(i32, int32_t, uint32_t)
CALC_VALUE(u32, uint32_t, uint32_t)
CALC_VALUE(i64, int64_t, uint64_t)
CALC_VALUE(u64, uint64_t, uint64_t)
CALC_VALUE(flt, float, float)
CALC_VALUE(dbl, double, double)

/* A complex float: sums, products, logic, writes and (in)equality. */
static float complex calc_cflt(enum fi_op op, float complex old,
			       float complex a, float complex c)
{
	switch (op) {
	case FI_SUM:
		return old + a;
	case FI_PROD:
		return old * a;
	case FI_LOR:
		return old != 0 || a != 0;
	case FI_LAND:
		return old != 0 && a != 0;
	case FI_LXOR:
		return (old != 0) != (a != 0);
	case FI_ATOMIC_WRITE:
		return a;
	case FI_CSWAP:
		return c == old ? a : old;
	case FI_CSWAP_NE:
		return c != old ? a : old;
	default:
		return old;
	}
}

static void calc_cflt_at(enum fi_op op, unsigned char *e, const void *a,
			 const void *c)
{
	float complex v, av, cv;

	memcpy(&v, e, sizeof(v));
	memcpy(&av, a, sizeof(av));
	memcpy(&cv, c, sizeof(cv));
	v = calc_cflt(op, v, av, cv);
	memcpy(e, &v, sizeof(v));
}

typedef void (*calc_at_fn)(enum fi_op op, unsigned char *e, const void *a,
			   const void *c);

static calc_at_fn calc_at_of(enum fi_datatype datatype)
{
	static const calc_at_fn by_type[] = {
		[FI_INT8] = calc_i8_at,
		[FI_UINT8] = calc_u8_at,
		[FI_INT16] = calc_i16_at,
		[FI_UINT16] = calc_u16_at,
		[FI_INT32] = calc_i32_at,
		[FI_UINT32] = calc_u32_at,
		[FI_INT64] = calc_i64_at,
		[FI_UINT64] = calc_u64_at,
		[FI_FLOAT] = calc_flt_at,
		[FI_DOUBLE] = calc_dbl_at,
		[FI_FLOAT_COMPLEX] = calc_cflt_at,
	};

	return (unsigned) datatype < sizeof(by_type) / sizeof(by_type[0]) ?
		       by_type[datatype] :
		       NULL;
}

uint64_t nrma_atomic_calc_apply(enum fi_datatype datatype, enum fi_op op,
				uint64_t word, size_t offset,
				const void *operand, const void *compare)
{
	unsigned char bytes[sizeof(word)];
	size_t size = nrma_atomic_calc_size(datatype);
	calc_at_fn at = calc_at_of(datatype);

	if (!size || !at || offset % size || offset + size > sizeof(word))
		return word;
	memcpy(bytes, &word, sizeof(word));
	if (calc_op_bitwise(op)) {
		const unsigned char *a = operand, *c = compare;

		for (size_t i = 0; i < size; i++)
			bytes[offset + i] =
				calc_byte(op, bytes[offset + i], a[i], c[i]);
	} else {
		at(op, bytes + offset, operand, compare);
	}
	memcpy(&word, bytes, sizeof(word));
	return word;
}

void nrma_atomic_calc_get(uint64_t word, size_t offset, size_t size, void *out)
{
	memcpy(out, (const unsigned char *) &word + offset, size);
}
