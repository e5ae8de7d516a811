/* SPDX-License-Identifier: BSD-2-Clause */
/* Unit tests for the iovec arithmetic in src/nrma_iov.[ch]. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <sys/uio.h>
#include <cmocka.h>

#include "nrma_iov.h"

#define GUARD '#'

/*
 * The fixture: four iovs of 5, 0, 3 and 7 bytes (15 in all) carved from
 * one backing array with guard bytes around each, so that a copy that
 * strays outside its iov is seen.  Byte i of the message is 'A' + i.
 *
 *   backing: # AAAAA # (empty) # BBB # CCCCCCC #
 */
#define NIOV  4
#define TOTAL 15

struct fixture {
	char backing[64];
	struct iovec iov[NIOV];
	char flat[TOTAL]; /* the message, contiguous */
};

static const size_t seg_len[NIOV] = { 5, 0, 3, 7 };

static void fixture_init(struct fixture *f, int fill)
{
	size_t pos = 1, byte = 0;

	memset(f->backing, GUARD, sizeof(f->backing));
	for (size_t i = 0; i < NIOV; i++) {
		/* An empty iov has no memory behind it. */
		f->iov[i].iov_base = seg_len[i] ? &f->backing[pos] : NULL;
		f->iov[i].iov_len = seg_len[i];
		for (size_t j = 0; j < seg_len[i]; j++, byte++) {
			f->flat[byte] = 'A' + byte;
			f->backing[pos + j] = fill ? f->flat[byte] : 0;
		}
		pos += seg_len[i] + 1;
	}
	assert_int_equal(byte, TOTAL);
}

/* Every byte between the iovs still holds its guard. */
static void assert_guards(const struct fixture *f)
{
	size_t pos = 0;

	for (size_t i = 0; i < NIOV; i++) {
		assert_int_equal(f->backing[pos], GUARD);
		pos += seg_len[i] + 1;
	}
	for (; pos < sizeof(f->backing); pos++)
		assert_int_equal(f->backing[pos], GUARD);
}

/* Byte n of the message as the iovs hold it now. */
static char iov_byte(const struct fixture *f, size_t n)
{
	for (size_t i = 0; i < NIOV; i++) {
		if (n < f->iov[i].iov_len)
			return ((const char *) f->iov[i].iov_base)[n];
		n -= f->iov[i].iov_len;
	}
	fail_msg("byte %zu is past the end", n);
	return 0;
}

/* nrma_iov_len */

static void test_len(void **state)
{
	struct fixture f;
	struct iovec zeros[3] = {
		{ NULL, 0 },
		{ NULL, 0 },
		{ NULL, 0 },
	};

	(void) state;
	fixture_init(&f, 1);
	assert_int_equal(nrma_iov_len(f.iov, NIOV), TOTAL);
	assert_int_equal(nrma_iov_len(f.iov, 0), 0);
	assert_int_equal(nrma_iov_len(f.iov, 1), 5);
	assert_int_equal(nrma_iov_len(f.iov, 2), 5);
	assert_int_equal(nrma_iov_len(f.iov, 3), 8);
	assert_int_equal(nrma_iov_len(&f.iov[1], 1), 0);
	assert_int_equal(nrma_iov_len(zeros, 3), 0);
}

/* nrma_iov_gather */

/* Lengths that wrap around saturate: no operation passes as short. */
static void test_len_wraps(void **state)
{
	struct iovec iov[3] = {
		{ .iov_base = NULL, .iov_len = SIZE_MAX - 10 },
		{ .iov_base = NULL, .iov_len = 20 },
		{ .iov_base = NULL, .iov_len = 1 },
	};

	(void) state;
	assert_int_equal(nrma_iov_len(iov, 1), SIZE_MAX - 10);
	assert_int_equal(nrma_iov_len(iov, 2), SIZE_MAX);
	assert_int_equal(nrma_iov_len(iov, 3), SIZE_MAX);
	iov[1].iov_len = 10;
	assert_int_equal(nrma_iov_len(iov, 2), SIZE_MAX);
}

static void test_gather_all(void **state)
{
	struct fixture f;
	char buf[TOTAL + 4];

	(void) state;
	fixture_init(&f, 1);
	memset(buf, '.', sizeof(buf));
	assert_int_equal(nrma_iov_gather(buf, f.iov, NIOV, 0, TOTAL), TOTAL);
	assert_memory_equal(buf, f.flat, TOTAL);
	assert_int_equal(buf[TOTAL], '.');
	assert_guards(&f);
}

/* Every offset and length, checked against the contiguous message. */
static void test_gather_ranges(void **state)
{
	struct fixture f;

	(void) state;
	fixture_init(&f, 1);
	for (size_t off = 0; off <= TOTAL + 2; off++) {
		for (size_t len = 0; len <= TOTAL + 2; len++) {
			size_t want = off >= TOTAL	? 0 :
				      len < TOTAL - off ? len :
							  TOTAL - off;
			char buf[TOTAL + 8];

			memset(buf, '.', sizeof(buf));
			assert_int_equal(
				nrma_iov_gather(buf, f.iov, NIOV, off, len),
				want);
			assert_memory_equal(buf, f.flat + off, want);
			/* Nothing is written past what was copied. */
			for (size_t j = want; j < sizeof(buf); j++)
				assert_int_equal(buf[j], '.');
		}
	}
	assert_guards(&f);
}

/* Ranges named by hand: across boundaries and the empty iov. */
static void test_gather_crossing(void **state)
{
	struct fixture f;
	char buf[TOTAL];

	(void) state;
	fixture_init(&f, 1);
	/* iov 0 into iov 2, past the empty iov 1. */
	assert_int_equal(nrma_iov_gather(buf, f.iov, NIOV, 3, 4), 4);
	assert_memory_equal(buf, "DEFG", 4);
	/* Starting exactly at a boundary that an empty iov sits on. */
	assert_int_equal(nrma_iov_gather(buf, f.iov, NIOV, 5, 3), 3);
	assert_memory_equal(buf, "FGH", 3);
	/* All three non-empty iovs. */
	assert_int_equal(nrma_iov_gather(buf, f.iov, NIOV, 4, 6), 6);
	assert_memory_equal(buf, "EFGHIJ", 6);
	/* The last iov alone, past its end: only what exists. */
	assert_int_equal(nrma_iov_gather(buf, f.iov, NIOV, 10, 100), 5);
	assert_memory_equal(buf, "KLMNO", 5);
	/* At and past the end: nothing. */
	assert_int_equal(nrma_iov_gather(buf, f.iov, NIOV, TOTAL, 1), 0);
	assert_int_equal(nrma_iov_gather(buf, f.iov, NIOV, 1000, 1), 0);
	assert_int_equal(nrma_iov_gather(buf, f.iov, 0, 0, 1), 0);
}

/* nrma_iov_scatter */

static void test_scatter_all(void **state)
{
	struct fixture f;
	char src[TOTAL];

	(void) state;
	fixture_init(&f, 0);
	for (size_t i = 0; i < TOTAL; i++)
		src[i] = 'a' + i;
	assert_int_equal(nrma_iov_scatter(f.iov, NIOV, 0, src, TOTAL), TOTAL);
	for (size_t i = 0; i < TOTAL; i++)
		assert_int_equal(iov_byte(&f, i), 'a' + i);
	assert_guards(&f);
}

/* Every offset and length: the range lands, the rest is untouched. */
static void test_scatter_ranges(void **state)
{
	char src[TOTAL + 8];

	(void) state;
	for (size_t i = 0; i < sizeof(src); i++)
		src[i] = 'a' + i;
	for (size_t off = 0; off <= TOTAL + 2; off++) {
		for (size_t len = 0; len <= TOTAL + 2; len++) {
			size_t want = off >= TOTAL	? 0 :
				      len < TOTAL - off ? len :
							  TOTAL - off;
			struct fixture f;

			fixture_init(&f, 1);
			assert_int_equal(
				nrma_iov_scatter(f.iov, NIOV, off, src, len),
				want);
			for (size_t n = 0; n < TOTAL; n++) {
				char expect = n >= off && n < off + want ?
						      src[n - off] :
						      f.flat[n];

				assert_int_equal(iov_byte(&f, n), expect);
			}
			assert_guards(&f);
		}
	}
}

static void test_scatter_crossing(void **state)
{
	struct fixture f;

	(void) state;
	fixture_init(&f, 1);
	/* "wxyz" over bytes 3..6: the end of iov 0 and the start of iov 2. */
	assert_int_equal(nrma_iov_scatter(f.iov, NIOV, 3, "wxyz", 4), 4);
	assert_memory_equal(f.iov[0].iov_base, "ABCwx", 5);
	assert_memory_equal(f.iov[2].iov_base, "yzH", 3);
	assert_memory_equal(f.iov[3].iov_base, "IJKLMNO", 7);
	/* Past the end only what fits is written. */
	assert_int_equal(nrma_iov_scatter(f.iov, NIOV, 13, "0123456789", 10),
			 2);
	assert_memory_equal(f.iov[3].iov_base, "IJKLM01", 7);
	assert_int_equal(nrma_iov_scatter(f.iov, NIOV, TOTAL, "x", 1), 0);
	assert_guards(&f);
}

/* One segment, the common message: whole, a prefix, capped, offset. */
static void test_one_segment(void **state)
{
	char seg[8] = "abcdefgh", buf[10] = "..........";
	struct iovec iov = { .iov_base = seg, .iov_len = sizeof(seg) };

	(void) state;
	assert_int_equal(nrma_iov_gather(buf, &iov, 1, 0, 8), 8);
	assert_memory_equal(buf, "abcdefgh..", 10);
	memset(buf, '.', sizeof(buf));
	assert_int_equal(nrma_iov_gather(buf, &iov, 1, 0, 3), 3);
	assert_memory_equal(buf, "abc.......", 10);
	/* Longer than the segment: only what it has, nothing past it. */
	memset(buf, '.', sizeof(buf));
	assert_int_equal(nrma_iov_gather(buf, &iov, 1, 0, 10), 8);
	assert_memory_equal(buf, "abcdefgh..", 10);
	memset(buf, '.', sizeof(buf));
	assert_int_equal(nrma_iov_gather(buf, &iov, 1, 6, 5), 2);
	assert_memory_equal(buf, "gh........", 10);
	assert_int_equal(nrma_iov_gather(buf, &iov, 1, 0, 0), 0);
	assert_int_equal(nrma_iov_scatter(&iov, 1, 0, "ABCDEFGHIJ", 10), 8);
	assert_memory_equal(seg, "ABCDEFGH", 8);
	assert_int_equal(nrma_iov_scatter(&iov, 1, 0, "xy", 2), 2);
	assert_memory_equal(seg, "xyCDEFGH", 8);
	assert_int_equal(nrma_iov_scatter(&iov, 1, 7, "zz", 2), 1);
	assert_memory_equal(seg, "xyCDEFGz", 8);
}

/* Round trip: scatter a message, gather it back at other splits. */
static void test_scatter_gather_roundtrip(void **state)
{
	char a[7], b[1], c[9], msg[17], out[17];
	struct iovec iov[] = {
		{ a, sizeof(a) }, { NULL, 0 },	    { b, sizeof(b) },
		{ NULL, 0 },	  { c, sizeof(c) },
	};

	(void) state;
	for (size_t i = 0; i < sizeof(msg); i++)
		msg[i] = (char) (i * 37 + 1);
	assert_int_equal(nrma_iov_len(iov, 5), sizeof(msg));
	/* In three unequal pieces. */
	assert_int_equal(nrma_iov_scatter(iov, 5, 0, msg, 6), 6);
	assert_int_equal(nrma_iov_scatter(iov, 5, 6, msg + 6, 5), 5);
	assert_int_equal(nrma_iov_scatter(iov, 5, 11, msg + 11, 6), 6);
	memset(out, 0, sizeof(out));
	assert_int_equal(nrma_iov_gather(out, iov, 5, 0, 8), 8);
	assert_int_equal(nrma_iov_gather(out + 8, iov, 5, 8, 100), 9);
	assert_memory_equal(out, msg, sizeof(msg));
}

/* nrma_iov_slice */

struct piece {
	size_t off; /* from the start of its iov */
	size_t len;
	size_t idx;
};

/* Slices and compares against the expected pieces. */
static void check_slice(const struct fixture *f, size_t offset, size_t len,
			size_t max, const struct piece *want, size_t nwant)
{
	struct iovec out[NIOV + 1];
	size_t idx[NIOV + 1];
	size_t n;

	assert_true(max <= NIOV + 1);
	memset(out, 0, sizeof(out));
	n = nrma_iov_slice(f->iov, NIOV, offset, len, out, idx, max);
	assert_int_equal(n, nwant);
	for (size_t i = 0; i < n; i++) {
		assert_int_equal(idx[i], want[i].idx);
		assert_ptr_equal(out[i].iov_base,
				 (char *) f->iov[want[i].idx].iov_base +
					 want[i].off);
		assert_int_equal(out[i].iov_len, want[i].len);
	}
}

static void test_slice_one_iov(void **state)
{
	struct fixture f;

	(void) state;
	fixture_init(&f, 1);
	check_slice(&f, 0, 5, 1, (struct piece[]){ { 0, 5, 0 } }, 1);
	check_slice(&f, 1, 3, 4, (struct piece[]){ { 1, 3, 0 } }, 1);
	/* Bytes 5..7 are iov 2: the empty iov 1 is no piece. */
	check_slice(&f, 5, 3, 1, (struct piece[]){ { 0, 3, 2 } }, 1);
	check_slice(&f, 6, 1, 1, (struct piece[]){ { 1, 1, 2 } }, 1);
	check_slice(&f, 8, 7, 1, (struct piece[]){ { 0, 7, 3 } }, 1);
	check_slice(&f, 14, 1, 1, (struct piece[]){ { 6, 1, 3 } }, 1);
}

static void test_slice_two_iovs(void **state)
{
	struct fixture f;

	(void) state;
	fixture_init(&f, 1);
	check_slice(&f, 3, 4, 2, (struct piece[]){ { 3, 2, 0 }, { 0, 2, 2 } },
		    2);
	check_slice(&f, 0, 8, 4, (struct piece[]){ { 0, 5, 0 }, { 0, 3, 2 } },
		    2);
	check_slice(&f, 7, 8, 2, (struct piece[]){ { 2, 1, 2 }, { 0, 7, 3 } },
		    2);
	/* Two pieces do not fit in one. */
	check_slice(&f, 3, 4, 1, NULL, 0);
}

static void test_slice_three_iovs(void **state)
{
	struct fixture f;
	const struct piece whole[] = { { 0, 5, 0 }, { 0, 3, 2 }, { 0, 7, 3 } };

	(void) state;
	fixture_init(&f, 1);
	check_slice(&f, 0, TOTAL, 3, whole, 3);
	check_slice(&f, 0, TOTAL, 4, whole, 3);
	check_slice(&f, 4, 6, 3,
		    (struct piece[]){ { 4, 1, 0 }, { 0, 3, 2 }, { 0, 2, 3 } },
		    3);
	/* More pieces needed than allowed: 0, not a partial answer. */
	check_slice(&f, 0, TOTAL, 2, NULL, 0);
	check_slice(&f, 4, 6, 2, NULL, 0);
	check_slice(&f, 4, 6, 1, NULL, 0);
	check_slice(&f, 4, 6, 0, NULL, 0);
}

/* Zero-length iovs never become pieces, and use none of max. */
static void test_slice_skips_empty(void **state)
{
	char a[3], b[4];
	struct iovec iov[] = {
		{ NULL, 0 }, { a, sizeof(a) }, { NULL, 0 },
		{ NULL, 0 }, { b, sizeof(b) }, { NULL, 0 },
	};
	struct iovec out[2];
	size_t idx[2];

	(void) state;
	assert_int_equal(nrma_iov_slice(iov, 6, 0, 7, out, idx, 2), 2);
	assert_ptr_equal(out[0].iov_base, a);
	assert_int_equal(out[0].iov_len, 3);
	assert_int_equal(idx[0], 1);
	assert_ptr_equal(out[1].iov_base, b);
	assert_int_equal(out[1].iov_len, 4);
	assert_int_equal(idx[1], 4);

	/* Starting right after a, at the run of empty iovs. */
	assert_int_equal(nrma_iov_slice(iov, 6, 3, 2, out, idx, 1), 1);
	assert_ptr_equal(out[0].iov_base, b);
	assert_int_equal(out[0].iov_len, 2);
	assert_int_equal(idx[0], 4);
}

/* idx may be NULL when the caller does not need it. */
static void test_slice_no_idx(void **state)
{
	struct fixture f;
	struct iovec out[NIOV];

	(void) state;
	fixture_init(&f, 1);
	assert_int_equal(nrma_iov_slice(f.iov, NIOV, 3, 4, out, NULL, NIOV), 2);
	assert_ptr_equal(out[0].iov_base, (char *) f.iov[0].iov_base + 3);
	assert_int_equal(out[0].iov_len, 2);
	assert_ptr_equal(out[1].iov_base, f.iov[2].iov_base);
	assert_int_equal(out[1].iov_len, 2);
}

/*
 * Every offset and length: the pieces, laid end to end, are exactly the
 * bytes of the range that exist, in order, none empty, none outside its
 * iov, and each with the index of the iov it lies in.
 */
static void test_slice_ranges(void **state)
{
	struct fixture f;

	(void) state;
	fixture_init(&f, 1);
	for (size_t off = 0; off <= TOTAL + 1; off++) {
		for (size_t len = 0; len <= TOTAL + 1; len++) {
			size_t want = off >= TOTAL	? 0 :
				      len < TOTAL - off ? len :
							  TOTAL - off;
			struct iovec out[NIOV];
			size_t idx[NIOV], n, got = 0;
			char buf[TOTAL];

			n = nrma_iov_slice(f.iov, NIOV, off, len, out, idx,
					   NIOV);
			assert_true(n <= NIOV);
			assert_true(n > 0 || want == 0);
			for (size_t i = 0; i < n; i++) {
				const char *base = f.iov[idx[i]].iov_base;
				const char *p = out[i].iov_base;

				assert_true(out[i].iov_len > 0);
				assert_true(p >= base);
				assert_true(p + out[i].iov_len <=
					    base + f.iov[idx[i]].iov_len);
				if (i)
					assert_true(idx[i] > idx[i - 1]);
				memcpy(buf + got, p, out[i].iov_len);
				got += out[i].iov_len;
			}
			assert_int_equal(got, want);
			assert_memory_equal(buf, f.flat + off, got);
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_len),
		cmocka_unit_test(test_len_wraps),
		cmocka_unit_test(test_gather_all),
		cmocka_unit_test(test_gather_ranges),
		cmocka_unit_test(test_gather_crossing),
		cmocka_unit_test(test_scatter_all),
		cmocka_unit_test(test_scatter_ranges),
		cmocka_unit_test(test_scatter_crossing),
		cmocka_unit_test(test_one_segment),
		cmocka_unit_test(test_scatter_gather_roundtrip),
		cmocka_unit_test(test_slice_one_iov),
		cmocka_unit_test(test_slice_two_iovs),
		cmocka_unit_test(test_slice_three_iovs),
		cmocka_unit_test(test_slice_skips_empty),
		cmocka_unit_test(test_slice_no_idx),
		cmocka_unit_test(test_slice_ranges),
	};

	return cmocka_run_group_tests_name("nrma_iov", tests, NULL, NULL);
}
