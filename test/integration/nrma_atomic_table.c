/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The whole atomic table (fi_atomic(3): every operation, every datatype
 * whose element fits in 64 bits, plain, fetching and compare forms),
 * against a reference this test computes itself.  The parent is the
 * target; three children initiate.
 *
 *  1. (initiator 0) Every valid (form, op, datatype), 3 elements at once,
 *     into a slot of its own whose first element is not word-aligned: the
 *     fetched old values are the slot's first ones, and the target finds
 *     exactly the reference's values there, the bytes around them as
 *     they were.  Unsigned values near their top wrap inside the element.
 *  2. (all initiators at once) On one word: a fetching FI_SUM of 1 on a
 *     16-bit element by everyone (the old values are 0 .. N - 1, once
 *     each), and each initiator's own byte of the same word counted up by
 *     plain FI_SUMs; FI_MIN and FI_MAX of 32-bit halves of a second word;
 *     fetching FI_ATOMIC_WRITE of doubles on a third (the old values and
 *     the last one are everything written, once each).
 *  3. (initiator 0) The valid calls and fi_query_atomic for every
 *     (form, op, datatype); -FI_EINVAL for a
 *     misaligned element, a count of 0 or past the limit, vectors that do
 *     not match; an error entry for an element whose word the region does
 *     not cover; a registration's own counter counts each loop once; a
 *     write posted right after an atomic's loop lands after it.
 * The target's FI_REMOTE_WRITE counter ends at the plain atomics and the
 * fetching and compare ones that may change the target, its
 * FI_REMOTE_READ counter at those and the FI_ATOMIC_READs: once each.
 */
#include <complex.h>

#include <rdma/fi_atomic.h>

#include "itest_rma.h"

#define NINIT	  3
#define COUNT	  3   /* elements of each part 1 atomic */
#define SLOT	  32  /* bytes of target memory for each */
#define SLOTS	  320 /* more than the table's entries */
#define P2_OPS	  100
#define P3_ORDERS 20
#define MEM	  (SLOTS * SLOT + 64)
#define MAX_BYTES 64 /* FI_OPT_MAX_ATOMIC_SIZE (nrma_ep_api checks it) */

/* Part 2's and part 3's words, after the slots. */
enum {
	W_SUM = SLOTS * SLOT,
	W_MINMAX = W_SUM + 8,
	W_SWAP = W_SUM + 16,
	W_ORDER = W_SUM + 24,
	W_EVENTED = W_SUM + 32
};

static struct itest_link links[NINIT];
static struct itest_chan pc[NINIT];
static struct itest_chan cc;

struct keymsg {
	struct sockaddr_in name;
	struct rt_rkey plain;
	struct rt_rkey evented; /* counted by the target's mr_cntr */
	struct rt_rkey edge;	/* 4 bytes: the rest of their word is not */
};

struct report {
	uint64_t writes;  /* plain atomics and RMA writes: remote writes */
	uint64_t reads;	  /* FI_ATOMIC_READ: remote reads */
	uint64_t updates; /* other fetching and compare atomics: both */
	uint16_t fetched_sum[P2_OPS];
	double fetched_swap[P2_OPS];
};

enum { SIG_DONE = 0x300 };

static struct rt_node n;
static struct keymsg km;
static struct report rep;

/* The table, as fi_atomic(3) has it */

static const enum fi_datatype types[] = {
	FI_INT8,  FI_UINT8,  FI_INT16, FI_UINT16, FI_INT32,	    FI_UINT32,
	FI_INT64, FI_UINT64, FI_FLOAT, FI_DOUBLE, FI_FLOAT_COMPLEX,
};
#define NTYPES (sizeof(types) / sizeof(types[0]))

static const uint64_t forms[] = { 0, FI_FETCH_ATOMIC, FI_COMPARE_ATOMIC };

static size_t type_size(enum fi_datatype dt)
{
	static const size_t size[] = { 1, 1, 2, 2, 4, 4, 8, 8, 4, 8, 8 };

	return size[dt];
}

static bool type_signed(enum fi_datatype dt)
{
	return dt == FI_INT8 || dt == FI_INT16 || dt == FI_INT32 ||
	       dt == FI_INT64;
}

static bool type_real(enum fi_datatype dt)
{
	return dt == FI_FLOAT || dt == FI_DOUBLE;
}

/* What each form of call takes, and what each kind of number has. */
static bool table_has(uint64_t form, enum fi_op op, enum fi_datatype dt)
{
	bool bits = op == FI_BOR || op == FI_BAND || op == FI_BXOR ||
		    op == FI_MSWAP;
	bool order = op == FI_MIN || op == FI_MAX || op == FI_CSWAP_LE ||
		     op == FI_CSWAP_LT || op == FI_CSWAP_GE ||
		     op == FI_CSWAP_GT;

	if (form == FI_COMPARE_ATOMIC && (op < FI_CSWAP || op > FI_MSWAP))
		return false;
	if (form == FI_FETCH_ATOMIC && op > FI_ATOMIC_WRITE)
		return false;
	if (!form && op > FI_ATOMIC_WRITE)
		return false;
	if (!form && op == FI_ATOMIC_READ)
		return false;
	if (dt == FI_FLOAT_COMPLEX)
		return !bits && !order;
	return !type_real(dt) || !bits;
}

/* Values: integers (sign- or zero-extended), reals, complex numbers */

struct val {
	int64_t i;
	double re, im;
};

static struct val val_load(enum fi_datatype dt, const unsigned char *p)
{
	struct val v = { 0 };
	uint64_t bits = 0;
	float f[2];

	if (dt == FI_FLOAT || dt == FI_FLOAT_COMPLEX) {
		memcpy(f, p, type_size(dt));
		v.re = f[0];
		v.im = dt == FI_FLOAT_COMPLEX ? f[1] : 0;
		return v;
	}
	if (dt == FI_DOUBLE) {
		memcpy(&v.re, p, 8);
		return v;
	}
	/* The test runs on little-endian hosts. */
	for (size_t b = type_size(dt); b-- > 0;)
		bits = bits << 8 | p[b];
	if (type_signed(dt) && type_size(dt) < 8 &&
	    (bits >> (8 * type_size(dt) - 1) & 1))
		bits |= ~0ULL << 8 * type_size(dt);
	v.i = (int64_t) bits;
	return v;
}

static void val_store(enum fi_datatype dt, struct val v, unsigned char *p)
{
	float f[2] = { (float) v.re, (float) v.im };

	if (dt == FI_FLOAT || dt == FI_FLOAT_COMPLEX) {
		memcpy(p, f, type_size(dt));
		return;
	}
	if (dt == FI_DOUBLE) {
		memcpy(p, &v.re, 8);
		return;
	}
	for (size_t b = 0; b < type_size(dt); b++) /* truncates: wraps */
		p[b] = (unsigned char) ((uint64_t) v.i >> 8 * b);
}

static bool val_true(enum fi_datatype dt, struct val v)
{
	if (dt == FI_FLOAT_COMPLEX || type_real(dt))
		return v.re != 0 || v.im != 0;
	return v.i != 0;
}

static struct val val_bool(bool b)
{
	return (struct val){ .i = b, .re = b };
}

/* -1, 0 or 1: a against b (complex numbers: 0 when equal, else 1). */
static int val_cmp(enum fi_datatype dt, struct val a, struct val b)
{
	if (dt == FI_FLOAT_COMPLEX)
		return a.re != b.re || a.im != b.im;
	if (type_real(dt))
		return (a.re > b.re) - (a.re < b.re);
	if (dt == FI_UINT64)
		return ((uint64_t) a.i > (uint64_t) b.i) -
		       ((uint64_t) a.i < (uint64_t) b.i);
	return (a.i > b.i) - (a.i < b.i);
}

static struct val val_arith(enum fi_datatype dt, enum fi_op op, struct val o,
			    struct val a)
{
	struct val r = o;

	if (op == FI_SUM) {
		r.i = (int64_t) ((uint64_t) o.i + (uint64_t) a.i);
		r.re = o.re + a.re;
		r.im = o.im + a.im;
	} else if (dt == FI_FLOAT_COMPLEX) { /* FI_PROD */
		r.re = o.re * a.re - o.im * a.im;
		r.im = o.re * a.im + o.im * a.re;
	} else {
		r.i = (int64_t) ((uint64_t) o.i * (uint64_t) a.i);
		r.re = o.re * a.re;
	}
	return r;
}

/* "compare op *addr" of the conditional swaps. */
static bool val_swaps(enum fi_datatype dt, enum fi_op op, struct val o,
		      struct val c)
{
	int d = val_cmp(dt, c, o);

	switch (op) {
	case FI_CSWAP:
		return d == 0;
	case FI_CSWAP_NE:
		return d != 0;
	case FI_CSWAP_LE:
		return d <= 0;
	case FI_CSWAP_LT:
		return d < 0;
	case FI_CSWAP_GE:
		return d >= 0;
	default:
		return d > 0;
	}
}

/* The reference: what op makes of old with operand a and compare c. */
static struct val reference(enum fi_datatype dt, enum fi_op op, struct val o,
			    struct val a, struct val c)
{
	switch (op) {
	case FI_MIN:
		return val_cmp(dt, a, o) < 0 ? a : o;
	case FI_MAX:
		return val_cmp(dt, a, o) > 0 ? a : o;
	case FI_SUM:
	case FI_PROD:
		return val_arith(dt, op, o, a);
	case FI_LOR:
		return val_bool(val_true(dt, o) || val_true(dt, a));
	case FI_LAND:
		return val_bool(val_true(dt, o) && val_true(dt, a));
	case FI_LXOR:
		return val_bool(val_true(dt, o) != val_true(dt, a));
	case FI_BOR:
		return (struct val){ .i = o.i | a.i };
	case FI_BAND:
		return (struct val){ .i = o.i & a.i };
	case FI_BXOR:
		return (struct val){ .i = o.i ^ a.i };
	case FI_MSWAP:
		return (struct val){ .i = (a.i & c.i) | (o.i & ~c.i) };
	case FI_ATOMIC_READ:
		return o;
	case FI_ATOMIC_WRITE:
		return a;
	default:
		return val_swaps(dt, op, o, c) ? a : o;
	}
}

/* A value of its type from seed: small, some zero, some near the top. */
static struct val val_gen(enum fi_datatype dt, unsigned seed)
{
	int64_t small = (int64_t) ((seed * 37 + 11) % 19) - 9;
	struct val v = { .i = small, .re = small / 4.0 };

	if (seed % 4 == 1)
		return (struct val){ 0 };
	if (dt == FI_FLOAT_COMPLEX)
		v.im = (double) ((seed * 13 + 5) % 7) - 3;
	if (!type_signed(dt) && !type_real(dt) && dt != FI_FLOAT_COMPLEX) {
		v.i = small < 0 ? -small : small;
		if (seed % 3 == 0) /* near the top: a sum wraps */
			v.i = (int64_t) ((dt == FI_UINT64 ?
						  ~0ULL :
						  (1ULL << 8 * type_size(dt)) -
							  1) -
					 (uint64_t) (seed % 5));
	}
	return v;
}

/* Part 1's slot s: its bytes before the atomic, at byte 0 of the slot. */
static void slot_init(unsigned s, enum fi_datatype dt, unsigned char *slot)
{
	for (int b = 0; b < SLOT; b++)
		slot[b] = (unsigned char) (0x40 + s * 7 + b);
	for (int e = 0; e < COUNT; e++)
		val_store(dt, val_gen(dt, s * 11 + e),
			  slot + type_size(dt) * (1 + e));
}

/* The operand's and compare's elements: half of the compares match. */
static void slot_operands(unsigned s, enum fi_datatype dt,
			  const unsigned char *slot, unsigned char *operand,
			  unsigned char *compare)
{
	size_t size = type_size(dt);

	for (int e = 0; e < COUNT; e++) {
		val_store(dt, val_gen(dt, s * 5 + e + 3), operand + e * size);
		if (e % 2)
			val_store(dt, val_gen(dt, s * 3 + e + 7),
				  compare + e * size);
		else
			memcpy(compare + e * size, slot + size * (1 + e), size);
	}
}

/* The slot after (form, op): the reference applied to each element. */
static void slot_expect(unsigned s, enum fi_datatype dt, enum fi_op op,
			unsigned char *slot)
{
	unsigned char operand[8 * COUNT], compare[8 * COUNT];
	size_t size = type_size(dt);

	slot_init(s, dt, slot);
	slot_operands(s, dt, slot, operand, compare);
	for (int e = 0; e < COUNT; e++) {
		unsigned char *p = slot + size * (1 + e);

		val_store(dt,
			  reference(dt, op, val_load(dt, p),
				    val_load(dt, operand + e * size),
				    val_load(dt, compare + e * size)),
			  p);
	}
}

/* Calls each (form, op, datatype) of the table with its slot number. */
static void table_each(void (*fn)(unsigned s, uint64_t form, enum fi_op op,
				  enum fi_datatype dt, void *arg),
		       void *arg)
{
	unsigned s = 0;

	for (size_t f = 0; f < 3; f++)
		for (size_t t = 0; t < NTYPES; t++)
			for (int op = FI_MIN; op <= FI_MSWAP; op++)
				if (table_has(forms[f], op, types[t]))
					fn(s++, forms[f], op, types[t], arg);
	if (s > SLOTS)
		FAIL("the table has %u entries, more than %d slots", s, SLOTS);
}

/* The initiators */

static void atomic_done(void *ctx, bool fetch, enum fi_op op, const char *what)
{
	struct itest_comp c = rt_cq_wait(n.tx, "%s", what);

	RT_EXPECT_COMP(c, ctx, FI_ATOMIC | (fetch ? FI_READ : FI_WRITE),
		       FI_RMA | FI_MSG, "%s", what);
	if (!fetch)
		rep.writes++;
	else if (op == FI_ATOMIC_READ)
		rep.reads++;
	else
		rep.updates++;
}

/* Posts one atomic of form and waits for it; result: the old values. */
static void atomic_call(uint64_t form, enum fi_op op, enum fi_datatype dt,
			uint64_t addr, uint64_t key, size_t count,
			void *operand, void *compare, void *result,
			const char *what)
{
	void *buf = op == FI_ATOMIC_READ ? NULL : operand;

	if (!form)
		RT_POST(fi_atomic(n.ep, buf, count, NULL, n.peer, addr, key, dt,
				  op, result),
			"%s", what);
	else if (form == FI_FETCH_ATOMIC)
		RT_POST(fi_fetch_atomic(n.ep, buf, count, NULL, result, NULL,
					n.peer, addr, key, dt, op, result),
			"%s", what);
	else
		RT_POST(fi_compare_atomic(n.ep, buf, count, NULL, compare, NULL,
					  result, NULL, n.peer, addr, key, dt,
					  op, result),
			"%s", what);
	atomic_done(result, form != 0, op, what);
}

static void part1_one(unsigned s, uint64_t form, enum fi_op op,
		      enum fi_datatype dt, void *arg)
{
	unsigned char slot[SLOT], operand[8 * COUNT], compare[8 * COUNT];
	unsigned char result[8 * COUNT];
	size_t size = type_size(dt);

	(void) arg;
	slot_init(s, dt, slot);
	slot_operands(s, dt, slot, operand, compare);
	memset(result, 0xee, sizeof(result));
	atomic_call(form, op, dt, km.plain.addr + s * SLOT + size, km.plain.key,
		    COUNT, operand, compare, result,
		    itest_fmt("part 1: form %#" PRIx64 " op %d datatype %d",
			      form, op, dt));
	if (form && memcmp(result, slot + size, COUNT * size))
		FAIL("part 1, slot %u (form %#" PRIx64
		     " op %d datatype %d): the "
		     "fetched values are not the slot's old ones",
		     s, form, op, dt);
}

static void part2(uint64_t me)
{
	uint8_t one8 = 1;
	uint16_t one16 = 1;
	int32_t lo = (int32_t) (me * 1000) - 500, hi = (int32_t) me * 7;
	uint64_t result;
	double swap;

	for (int i = 0; i < P2_OPS; i++) {
		atomic_call(FI_FETCH_ATOMIC, FI_SUM, FI_UINT16,
			    km.plain.addr + W_SUM + 2, km.plain.key, 1, &one16,
			    NULL, &rep.fetched_sum[i], "a shared 16-bit add");
		atomic_call(0, FI_SUM, FI_UINT8, km.plain.addr + W_SUM + 4 + me,
			    km.plain.key, 1, &one8, NULL, &result,
			    "an add to our own byte");
		lo -= i;
		hi += i;
		atomic_call(0, FI_MIN, FI_INT32, km.plain.addr + W_MINMAX,
			    km.plain.key, 1, &lo, NULL, &result, "FI_MIN");
		atomic_call(0, FI_MAX, FI_INT32, km.plain.addr + W_MINMAX + 4,
			    km.plain.key, 1, &hi, NULL, &result, "FI_MAX");
		swap = (double) (me * P2_OPS + (uint64_t) i) + 0.5;
		atomic_call(FI_FETCH_ATOMIC, FI_ATOMIC_WRITE, FI_DOUBLE,
			    km.plain.addr + W_SWAP, km.plain.key, 1, &swap,
			    NULL, &rep.fetched_swap[i], "a fetching write");
	}
}

static void expect_support(uint64_t form, enum fi_op op, enum fi_datatype dt)
{
	struct fi_atomic_attr attr = { 0 };
	size_t count = 0;
	bool want = table_has(form, op, dt);
	int ret = !form ? fi_atomicvalid(n.ep, dt, op, &count) :
		  form == FI_FETCH_ATOMIC ?
			  fi_fetch_atomicvalid(n.ep, dt, op, &count) :
			  fi_compare_atomicvalid(n.ep, dt, op, &count);

	EXPECT(ret == (want ? 0 : -FI_EOPNOTSUPP),
	       "valid call form %#" PRIx64 " op %d datatype %d: %d", form, op,
	       dt, ret);
	EXPECT(!want || count == MAX_BYTES / type_size(dt),
	       "form %#" PRIx64 " datatype %d: count %zu", form, dt, count);
	ret = fi_query_atomic(rt_domain(), dt, op, &attr, (uint64_t) form);
	EXPECT(ret == (want ? 0 : -FI_EOPNOTSUPP),
	       "fi_query_atomic form %#" PRIx64 " op %d datatype %d: %d", form,
	       op, dt, ret);
	EXPECT(!want || (attr.size == type_size(dt) &&
			 attr.count == MAX_BYTES / type_size(dt)),
	       "fi_query_atomic datatype %d: size %zu count %zu", dt, attr.size,
	       attr.count);
}

static void part3_support(void)
{
	size_t count;

	for (size_t f = 0; f < 3; f++) {
		for (size_t t = 0; t < NTYPES; t++)
			for (int op = FI_MIN; op <= FI_MSWAP; op++)
				expect_support(forms[f], op, types[t]);
		/* To libfabric 2.0's FI_FLOAT8_E5M2, which 1.x does not name */
		for (int dt = FI_DOUBLE_COMPLEX; dt <= FI_UINT128 + 4; dt++)
			RT_CALL(fi_fetch_atomicvalid(n.ep, dt, FI_SUM, &count),
				-FI_EOPNOTSUPP);
	}
	/* libfabric 2.0's FI_DIFF; then numbers no version names. */
	RT_CALL(fi_atomicvalid(n.ep, FI_INT8, (enum fi_op)(FI_MSWAP + 1),
			       &count),
		-FI_EOPNOTSUPP);
	RT_CALL(fi_atomicvalid(n.ep, FI_INT8, (enum fi_op)(FI_MSWAP + 2),
			       &count),
		-FI_EINVAL);
	RT_CALL(fi_atomicvalid(n.ep, FI_UINT128 + 5, FI_SUM, &count),
		-FI_EINVAL);
}

static void part3_invalid(void)
{
	uint8_t v[MAX_BYTES + 1] = { 0 };
	uint64_t at = km.plain.addr + W_EVENTED;

	RT_CALL(fi_atomic(n.ep, v, 1, NULL, n.peer, at + 2, km.plain.key,
			  FI_INT32, FI_SUM, NULL),
		-FI_EINVAL);
	RT_CALL(fi_atomic(n.ep, v, 0, NULL, n.peer, at, km.plain.key, FI_INT8,
			  FI_SUM, NULL),
		-FI_EINVAL);
	RT_CALL(fi_atomic(n.ep, v, MAX_BYTES + 1, NULL, n.peer, at,
			  km.plain.key, FI_INT8, FI_SUM, NULL),
		-FI_EINVAL);
	RT_CALL(fi_atomic(n.ep, v, MAX_BYTES / 2 + 1, NULL, n.peer, at,
			  km.plain.key, FI_INT16, FI_SUM, NULL),
		-FI_EINVAL);
	RT_CALL(fi_atomicmsg(n.ep,
			     &(struct fi_msg_atomic){
				     .msg_iov = &(struct fi_ioc){ .addr = v,
								  .count = 2 },
				     .iov_count = 1,
				     .addr = n.peer,
				     .rma_iov =
					     &(struct fi_rma_ioc){
						     .addr = at,
						     .count = 3,
						     .key = km.plain.key },
				     .rma_iov_count = 1,
				     .datatype = FI_UINT8,
				     .op = FI_BOR },
			     0),
		-FI_EINVAL);
	rt_cq_expect_empty(n.tx, "after atomics refused at once");
}

/* A 16-bit element in a 4-byte region: its word is not all there. */
static void part3_edge(void)
{
	uint16_t v = 1, result;
	struct fi_cq_err_entry e;

	RT_POST(fi_fetch_atomic(n.ep, &v, 1, NULL, &result, NULL, n.peer,
				km.edge.addr + 2, km.edge.key, FI_UINT16,
				FI_SUM, &result),
		"an add whose word the region cuts");
	e = rt_cq_wait_err(n.tx, "its error entry");
	EXPECT(e.err == FI_EACCES && e.op_context == &result,
	       "err %d (%s), context %p", e.err, fi_strerror(e.err),
	       e.op_context);
}

/* Two loops with the counted key: its counter moves once for each. */
static void part3_evented(void)
{
	uint8_t add[COUNT] = { 1, 2, 3 }, result[COUNT];

	atomic_call(0, FI_SUM, FI_UINT8, km.evented.addr + W_EVENTED + 1,
		    km.evented.key, COUNT, add, NULL, result, "a counted loop");
	atomic_call(FI_FETCH_ATOMIC, FI_BXOR, FI_UINT8,
		    km.evented.addr + W_EVENTED + 1, km.evented.key, COUNT, add,
		    NULL, result, "a counted fetching loop");
	EXPECT(result[0] == 1 && result[1] == 2 && result[2] == 3,
	       "the counted loop's bytes: %u %u %u", result[0], result[1],
	       result[2]);
}

/* A write right behind an atomic's loop to the same word lands after. */
static void part3_order(void)
{
	uint64_t last = 0, got;
	uint16_t add = 0x101;

	for (uint64_t i = 1; i <= P3_ORDERS; i++) {
		uint64_t word = 0x1111111111111111ULL * (i % 15 + 1);

		RT_POST(fi_atomic(n.ep, &add, 1, NULL, n.peer,
				  km.plain.addr + W_ORDER + 6, km.plain.key,
				  FI_UINT16, FI_SUM, &add),
			"an add");
		RT_POST(fi_write(n.ep, &word, 8, NULL, n.peer,
				 km.plain.addr + W_ORDER, km.plain.key, &word),
			"a write behind it");
		for (int k = 0; k < 2; k++) {
			struct itest_comp c =
				rt_cq_wait(n.tx, "the add and the write");

			EXPECT(c.op_context == &add || c.op_context == &word,
			       "a completion for context %p", c.op_context);
		}
		rep.writes += 2;
		last = word;
	}
	atomic_call(FI_FETCH_ATOMIC, FI_ATOMIC_READ, FI_UINT64,
		    km.plain.addr + W_ORDER, km.plain.key, 1, NULL, NULL, &got,
		    "the word");
	EXPECT(got == last,
	       "the ordered word holds %#" PRIx64 ", the last write %#" PRIx64,
	       got, last);
}

static void initiator(void *arg)
{
	uint64_t me = (uintptr_t) arg;
	struct rt_node_opts o = { .tx_errors_ok = true };

	cc = rt_initiator_chan(links, NINIT, (int) me);
	rt_node_open(&n, &o, itest_who);
	rt_chan_read(&cc, &km, sizeof(km), "the target's name and keys");
	rt_node_insert(&n, &km.name);
	if (me == 0)
		table_each(part1_one, NULL);
	itest_chan_write(&cc, &rep, sizeof(rep)); /* part 1 is done */
	rt_expect(&cc, SIG_DONE, "the start of part 2");
	part2(me);
	if (me == 0) {
		part3_support();
		part3_invalid();
		part3_edge();
		part3_evented();
		part3_order();
	}
	itest_chan_write(&cc, &rep, sizeof(rep));
	rt_expect(&cc, SIG_DONE, "the target's checks");
	rt_node_close(&n);
	itest_domain_close();
}

/* The target */

static void target_slot(unsigned s, uint64_t form, enum fi_op op,
			enum fi_datatype dt, void *arg)
{
	unsigned char want[SLOT];
	const unsigned char *mem = arg;

	slot_expect(s, dt, op, want);
	if (memcmp(mem + s * SLOT, want, SLOT))
		FAIL("part 1, slot %u (form %#" PRIx64
		     " op %d datatype %d): the "
		     "target's bytes are not the reference's",
		     s, form, op, dt);
}

static void target_init_slot(unsigned s, uint64_t form, enum fi_op op,
			     enum fi_datatype dt, void *arg)
{
	(void) form;
	(void) op;
	slot_init(s, dt, (unsigned char *) arg + s * SLOT);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *) a, y = *(const double *) b;

	return (x > y) - (x < y);
}

/* Part 2's swaps: the first word and every write, once each in all. */
static void check_swaps(const struct report *r, double last)
{
	static double all[NINIT * P2_OPS + 1];

	for (int i = 0; i < NINIT; i++)
		memcpy(&all[i * P2_OPS], r[i].fetched_swap,
		       sizeof(r[i].fetched_swap));
	all[NINIT * P2_OPS] = last;
	qsort(all, NINIT * P2_OPS + 1, sizeof(*all), cmp_double);
	EXPECT(all[0] == 0, "the swapped word's first value, 0, is missing");
	for (int i = 1; i <= NINIT * P2_OPS; i++)
		EXPECT(all[i] == (i - 1) + 0.5,
		       "the swaps saw %g where %g was written once", all[i],
		       (i - 1) + 0.5);
}

static void check_part2(const unsigned char *mem, const struct report *r)
{
	static bool seen[NINIT * P2_OPS];
	uint16_t sum;
	int32_t min, max;
	double last;

	for (int i = 0; i < NINIT; i++)
		for (int k = 0; k < P2_OPS; k++) {
			uint16_t v = r[i].fetched_sum[k];

			EXPECT(v < NINIT * P2_OPS && !seen[v],
			       "the 16-bit add fetched %u twice or out of "
			       "range",
			       v);
			seen[v] = true;
		}
	memcpy(&sum, mem + W_SUM + 2, 2);
	EXPECT(sum == NINIT * P2_OPS, "the shared 16-bit word: %u", sum);
	for (int i = 0; i < NINIT; i++)
		EXPECT(mem[W_SUM + 4 + i] == P2_OPS, "initiator %d's byte: %u",
		       i, mem[W_SUM + 4 + i]);
	EXPECT(mem[W_SUM] == 0 && mem[W_SUM + 1] == 0 && mem[W_SUM + 7] == 0,
	       "the word's other bytes moved");
	memcpy(&min, mem + W_MINMAX, 4);
	memcpy(&max, mem + W_MINMAX + 4, 4);
	EXPECT(min == -500 - P2_OPS * (P2_OPS - 1) / 2, "FI_MIN: %d", min);
	EXPECT(max == (NINIT - 1) * 7 + P2_OPS * (P2_OPS - 1) / 2, "FI_MAX: %d",
	       max);
	memcpy(&last, mem + W_SWAP, 8);
	check_swaps(r, last);
}

static void target_counters(const struct report *r, struct rt_node *t,
			    struct fid_cntr *mr_cntr)
{
	uint64_t base = 0, reads = 0, updates = 0;

	for (int i = 0; i < NINIT; i++) {
		base += r[i].writes;
		reads += r[i].reads;
		updates += r[i].updates;
	}
	EXPECT(fi_cntr_read(t->remote_cntr) == base + updates,
	       "FI_REMOTE_WRITE counter %" PRIu64 ", plain atomics and "
	       "writes %" PRIu64 ", updating fetches %" PRIu64,
	       fi_cntr_read(t->remote_cntr), base, updates);
	EXPECT(fi_cntr_read(t->rread_cntr) == reads + updates,
	       "FI_REMOTE_READ counter %" PRIu64 ", FI_ATOMIC_READs %" PRIu64
	       ", updating fetches %" PRIu64,
	       fi_cntr_read(t->rread_cntr), reads, updates);
	EXPECT(fi_cntr_read(mr_cntr) == 2,
	       "the registration's counter: %" PRIu64, fi_cntr_read(mr_cntr));
	rt_note("%" PRIu64 " plain atomics and writes, %" PRIu64
		" fetching or compare atomics from %d initiators: values and "
		"counters exact",
		base, reads + updates, NINIT);
}

static void target_run(unsigned char *mem, struct rt_node *t,
		       struct fid_cntr *mr_cntr)
{
	static struct report r[NINIT];

	for (int i = 0; i < NINIT; i++)
		rt_chan_read(&pc[i], &r[i], sizeof(r[i]), "part 1's end");
	table_each(target_slot, mem);
	for (int i = 0; i < NINIT; i++)
		itest_signal(&pc[i], SIG_DONE);
	for (int i = 0; i < NINIT; i++)
		rt_chan_read(&pc[i], &r[i], sizeof(r[i]),
			     "initiator %d's "
			     "report",
			     i);
	check_part2(mem, r);
	target_counters(r, t, mr_cntr);
	rt_guard_check(mem, MEM, "the target's memory");
}

static void target(void)
{
	unsigned char *mem = rt_guarded(MEM);
	struct rt_node_opts o = { .remote_flags = FI_REMOTE_WRITE,
				  .rread_cntr = true };
	struct fid_cntr *mr_cntr = itest_cntr_open(rt_domain());
	const uint64_t rw = FI_REMOTE_WRITE | FI_REMOTE_READ;
	struct fid_mr *plain, *evented, *edge;
	struct keymsg m;
	struct rt_node t;

	memset(mem, 0, MEM);
	table_each(target_init_slot, mem);
	plain = rt_mr_reg(mem, MEM, rw, 0);
	evented = rt_mr_reg_cntr(mem, MEM, rw, mr_cntr, rw);
	edge = rt_mr_reg(mem + W_EVENTED + 8, 4, rw, 0);
	rt_node_open(&t, &o, "target");
	m = (struct keymsg){ .name = t.name,
			     .plain = rt_rkey_of(plain, mem, MEM),
			     .evented = rt_rkey_of(evented, mem, MEM),
			     .edge = rt_rkey_of(edge, mem + W_EVENTED + 8, 4) };
	for (int i = 0; i < NINIT; i++)
		itest_chan_write(&pc[i], &m, sizeof(m));
	target_run(mem, &t, mr_cntr);
	for (int i = 0; i < NINIT; i++)
		itest_signal(&pc[i], SIG_DONE);
	rt_node_close(&t);
	RT_OK(fi_close(&plain->fid));
	RT_OK(fi_close(&evented->fid));
	RT_OK(fi_close(&edge->fid));
	itest_cntr_close(mr_cntr);
	rt_guarded_free(mem);
}

int main(void)
{
	int64_t start = itest_now_ms();

	rt_init();
	setvbuf(stdout, NULL, _IOLBF, 0);
	rt_fork_initiators(links, pc, NINIT, initiator);
	target();
	itest_wait_kids();
	itest_domain_close();
	rt_pass("nrma_atomic_table", start);
	return 0;
}
