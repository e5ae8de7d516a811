/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fi_atomic(3)'s operations on one element that lies inside a naturally
 * aligned 64-bit word: the word an initiator's compare-and-swap loop
 * writes back in place of the one it found, so that the device's
 * compare-and-swap applies any operation, on any element that fits in
 * the word, with no CPU at the target.  Pure arithmetic on values.
 */
#ifndef NRMA_ATOMIC_CALC_H
#define NRMA_ATOMIC_CALC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rdma/fi_domain.h>

/* The three forms of fi_atomic(3). */
enum nrma_atomic_kind {
	NRMA_ATOMIC_BASE,    /* fi_atomic */
	NRMA_ATOMIC_FETCH,   /* fi_fetch_atomic */
	NRMA_ATOMIC_COMPARE, /* fi_compare_atomic */
};

/* The bytes of one element of datatype, 0 when none fits in a word. */
size_t nrma_atomic_calc_size(enum fi_datatype datatype);
/* Whether op, in the form kind, is defined on datatype. */
bool nrma_atomic_calc_valid(enum fi_datatype datatype, enum fi_op op,
			    enum nrma_atomic_kind kind);
/*
 * word after op on its element at byte offset (a multiple of the
 * element's size): operand and compare are one element each (compare
 * only read by the compare forms; FI_MSWAP's mask).  The other bytes of
 * word stay as they are.
 */
uint64_t nrma_atomic_calc_apply(enum fi_datatype datatype, enum fi_op op,
				uint64_t word, size_t offset,
				const void *operand, const void *compare);
/* Copies the element of size bytes at offset in word to out. */
void nrma_atomic_calc_get(uint64_t word, size_t offset, size_t size, void *out);

#endif /* NRMA_ATOMIC_CALC_H */
