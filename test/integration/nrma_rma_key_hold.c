/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Operations with a key the initiator has not used yet: the provider
 * reads the key's slot at the target first, and holds the operation, and
 * what follows it to that peer, until it has the answer.  The parent is
 * the target, its child the initiator (see itest_notify.h).  Each key
 * below is used first where it says "fresh", on a connection that is up.
 *
 *  1. An fi_inject_write with a fresh key whose buffer is overwritten at
 *     once lands what the buffer held at the call; a write to the same
 *     word with a known key, right behind it, lands after it
 *     (FI_ORDER_WAW); a read of a word written with a fresh key reads
 *     the write (FI_ORDER_RAW).  The fresh key's registration counts its
 *     one write at the target.
 *  2. A send right behind a write with a fresh key finds the write's data
 *     in place when the target's receive completes (FI_ORDER_SAW).
 *  3. fi_atomic and fi_fetch_atomic with fresh keys.
 *  4. A key the target never handed out, in a slot it uses, ends in an
 *     FI_EACCES error entry once the slot is read; the write held behind
 *     it lands.
 *  5. A window of writes with a fresh key, then writes with a known key
 *     behind them: each ends in exactly one completion, and each word
 *     holds its write.
 *  6. A write and a read with a known key that run past its region's
 *     end end in FI_EACCES error entries before they reach the device
 *     (the light path leaves them to the generic one, which refuses
 *     them); the connection stays up, and a write behind them lands.
 */
#include <rdma/fi_atomic.h>

#include "itest_notify.h"

#define KH_WORDS 512
#define KH_LEN	 (KH_WORDS * sizeof(uint64_t))
#define KH_BURST 32

enum {
	KH_WARM,
	KH_INJECT,
	KH_RAW,
	KH_SAW,
	KH_SUM,
	KH_FETCH,
	KH_BURST_KEY,
	KH_KEYS
};

/* Words of the target's buffer, by step. */
enum {
	W_WAW = 2,
	W_RAW,
	W_SAW,
	W_SUM,
	W_REFUSED,
	W_BEHIND,
	W_PAST_BEHIND,
	W_BURST = 16, /* 2 * KH_BURST words */
};

static void target_check(const uint64_t *buf)
{
	EXPECT(buf[W_WAW] == stamp(12),
	       "the write behind the injected one: 0x%" PRIx64, buf[W_WAW]);
	EXPECT(buf[W_RAW] == stamp(13),
	       "the injected write with a fresh key: 0x%" PRIx64, buf[W_RAW]);
	EXPECT(buf[W_SUM] == 5 + 7, "the atomics' word: %" PRIu64, buf[W_SUM]);
	EXPECT(buf[W_REFUSED] == 0, "the refused write's word: 0x%" PRIx64,
	       buf[W_REFUSED]);
	EXPECT(buf[W_BEHIND] == stamp(31),
	       "the write behind the refused one: 0x%" PRIx64, buf[W_BEHIND]);
	for (int i = 0; i < 2 * KH_BURST; i++)
		EXPECT(buf[W_BURST + i] == stamp(100 + i),
		       "burst write %d: 0x%" PRIx64, i, buf[W_BURST + i]);
	EXPECT(buf[KH_WORDS - 1] == 0,
	       "the last word, under the refused write: 0x%" PRIx64,
	       buf[KH_WORDS - 1]);
	EXPECT(buf[W_PAST_BEHIND] == stamp(34),
	       "the write behind the refused ones: 0x%" PRIx64,
	       buf[W_PAST_BEHIND]);
}

static void target(void)
{
	uint64_t *buf = rt_guarded(KH_LEN), msg = 0;
	struct fid_cntr *counted = itest_cntr_open(rt_domain());
	const uint64_t rw = FI_REMOTE_WRITE | FI_REMOTE_READ;
	struct fid_mr *mr[KH_KEYS];
	struct keymsg km = { 0 };
	struct itest_comp c;
	struct rt_node t;

	memset(buf, 0, KH_LEN);
	for (int k = 0; k < KH_KEYS; k++)
		mr[k] = k == KH_INJECT ?
				rt_mr_reg_cntr(buf, KH_LEN, rw, counted, rw) :
				rt_mr_reg(buf, KH_LEN, rw, 0);
	for (int k = 0; k < KH_KEYS; k++)
		km.k[k] = rt_rkey_of(mr[k], buf, KH_LEN);
	target_open(&t, 0, &km, 1);
	RT_POST(fi_recv(t.ep, &msg, sizeof(msg), NULL, FI_ADDR_UNSPEC, &msg),
		"the receive for the send behind a held write");
	itest_signal(&pc[0], SIG_GO);
	c = rt_cq_wait(t.rx, "the send behind a write with a fresh key");
	RT_EXPECT_COMP(c, &msg, FI_RECV | FI_MSG, 0, "the send");
	EXPECT(buf[W_SAW] == stamp(20),
	       "the write before the send, as the send arrives: 0x%" PRIx64,
	       buf[W_SAW]);
	rt_expect(&pc[0], SIG_DONE, "the initiator's operations");
	target_check(buf);
	expect_cntr(counted, 1, "the fresh counted key's registration");
	rt_guard_check(buf, KH_LEN, "the target's buffer");
	rt_note("operations with fresh keys: held in order, then done");
	target_close(&t, 1);
	for (int k = 0; k < KH_KEYS; k++)
		RT_OK(fi_close(&mr[k]->fid));
	itest_cntr_close(counted);
	rt_guarded_free(buf);
}

static uint64_t word_addr(const struct rt_rkey *rk, int word)
{
	return rk->addr + (uint64_t) word * sizeof(uint64_t);
}

static void wait_ok(struct rt_node *n, void *ctx, uint64_t flags,
		    const char *what)
{
	struct itest_comp c = rt_cq_wait(n->tx, "%s", what);

	RT_EXPECT_COMP(c, ctx, flags, 0, "%s", what);
}

/* The error entry of a refused operation. */
static void wait_refused(struct rt_node *n, void *ctx, const char *what)
{
	struct fi_cq_err_entry e = rt_cq_wait_err(n->tx, "%s", what);

	EXPECT(e.err == FI_EACCES && e.op_context == ctx,
	       "%s: err %d, context %p", what, e.err, e.op_context);
}

/* Step 1: an injected write held, a write behind it, a read behind one. */
static void kh_inject(struct rt_node *n, const struct keymsg *km)
{
	const struct rt_rkey *warm = &km->k[KH_WARM];
	uint64_t src = stamp(10), behind = stamp(12), got = 0;

	RT_POST(fi_inject_write(n->ep, &src, 8, n->peer,
				word_addr(&km->k[KH_INJECT], W_WAW),
				km->k[KH_INJECT].key),
		"an fi_inject_write with a fresh key");
	src = stamp(99); /* the call returned: the buffer is ours again */
	RT_POST(fi_write(n->ep, &behind, 8, NULL, n->peer,
			 word_addr(warm, W_WAW), warm->key, &behind),
		"a write to the same word with a known key");
	wait_ok(n, &behind, FI_RMA | FI_WRITE, "the write behind");
	src = stamp(13);
	RT_POST(fi_inject_write(n->ep, &src, 8, n->peer,
				word_addr(&km->k[KH_RAW], W_RAW),
				km->k[KH_RAW].key),
		"an fi_inject_write with another fresh key");
	src = stamp(99);
	RT_POST(fi_read(n->ep, &got, 8, NULL, n->peer, word_addr(warm, W_RAW),
			warm->key, &got),
		"a read of the word with a known key");
	wait_ok(n, &got, FI_RMA | FI_READ, "the read behind");
	EXPECT(got == stamp(13), "the read after the held write: 0x%" PRIx64,
	       got);
	rt_cntr_reach(n->write_cntr, 4, "the writes' counter");
}

/* Step 2: a send behind a write with a fresh key. */
static void kh_send(struct rt_node *n, const struct keymsg *km)
{
	uint64_t src = stamp(20), msg = 4;

	RT_POST(fi_write(n->ep, &src, 8, NULL, n->peer,
			 word_addr(&km->k[KH_SAW], W_SAW), km->k[KH_SAW].key,
			 &src),
		"a write with a fresh key");
	RT_POST(fi_send(n->ep, &msg, sizeof(msg), NULL, n->peer, &msg),
		"a send right behind it");
	wait_ok(n, &src, FI_RMA | FI_WRITE, "the write before the send");
	wait_ok(n, &msg, FI_SEND | FI_MSG, "the send");
}

/* Step 3: atomics with fresh keys, one after the other. */
static void kh_atomics(struct rt_node *n, const struct keymsg *km)
{
	uint64_t add = 5, fetch_add = 7, old = 0;

	RT_POST(fi_atomic(n->ep, &add, 1, NULL, n->peer,
			  word_addr(&km->k[KH_SUM], W_SUM), km->k[KH_SUM].key,
			  FI_UINT64, FI_SUM, &add),
		"fi_atomic with a fresh key");
	add = 1000; /* the operand was read at the call */
	wait_ok(n, &add, FI_ATOMIC | FI_WRITE, "fi_atomic");
	RT_POST(fi_fetch_atomic(n->ep, &fetch_add, 1, NULL, &old, NULL, n->peer,
				word_addr(&km->k[KH_FETCH], W_SUM),
				km->k[KH_FETCH].key, FI_UINT64, FI_SUM, &old),
		"fi_fetch_atomic with a fresh key");
	wait_ok(n, &old, FI_ATOMIC | FI_READ, "fi_fetch_atomic");
	EXPECT(old == 5, "fi_fetch_atomic fetched %" PRIu64 ", expected 5",
	       old);
}

/* Step 4: a key the target never handed out, and a write behind it. */
static void kh_refused(struct rt_node *n, const struct keymsg *km)
{
	const struct rt_rkey *warm = &km->k[KH_WARM];
	uint64_t refused = stamp(30), behind = stamp(31);

	RT_POST(fi_write(n->ep, &refused, 8, NULL, n->peer,
			 word_addr(warm, W_REFUSED), warm->key + (1ULL << 32),
			 &refused),
		"a write with a slot's next key");
	RT_POST(fi_write(n->ep, &behind, 8, NULL, n->peer,
			 word_addr(warm, W_BEHIND), warm->key, &behind),
		"a write behind it");
	wait_refused(n, &refused, "the refused write");
	wait_ok(n, &behind, FI_RMA | FI_WRITE, "the write behind the refusal");
}

/* Step 6: a known key, past its region's end. */
static void kh_past_end(struct rt_node *n, const struct keymsg *km)
{
	const struct rt_rkey *warm = &km->k[KH_WARM];
	uint64_t last = word_addr(warm, KH_WORDS - 1);
	uint64_t past[2] = { stamp(32), stamp(32) }, got[2] = { 0, 0 };
	uint64_t behind = stamp(34);

	RT_POST(fi_write(n->ep, past, sizeof(past), NULL, n->peer, last,
			 warm->key, past),
		"a write with a known key past its region's end");
	wait_refused(n, past, "the write past the end");
	RT_POST(fi_read(n->ep, got, sizeof(got), NULL, n->peer, last, warm->key,
			got),
		"a read with a known key past its region's end");
	wait_refused(n, got, "the read past the end");
	EXPECT(got[0] == 0 && got[1] == 0, "the refused read landed data");
	RT_POST(fi_write(n->ep, &behind, 8, NULL, n->peer,
			 word_addr(warm, W_PAST_BEHIND), warm->key, &behind),
		"a write behind the refused ones");
	wait_ok(n, &behind, FI_RMA | FI_WRITE, "the write behind them");
}

/* Step 5: a window with a fresh key, then as many with a known one. */
static void kh_burst(struct rt_node *n, const struct keymsg *km)
{
	uint64_t src[2 * KH_BURST];
	struct itest_comp c[2 * KH_BURST];
	bool seen[2 * KH_BURST] = { false };

	for (int i = 0; i < 2 * KH_BURST; i++) {
		const struct rt_rkey *rk =
			&km->k[i < KH_BURST ? KH_BURST_KEY : KH_WARM];

		src[i] = stamp(100 + i);
		RT_POST(fi_write(n->ep, &src[i], 8, NULL, n->peer,
				 word_addr(rk, W_BURST + i), rk->key, &src[i]),
			"burst write %d", i);
	}
	itest_cq_wait_n(n->tx, c, 2 * KH_BURST, "the burst's completions");
	for (int i = 0; i < 2 * KH_BURST; i++) {
		ptrdiff_t k = (uint64_t *) c[i].op_context - src;

		CHECK(k >= 0 && k < 2 * KH_BURST);
		EXPECT(!seen[k], "burst write %td completed twice", k);
		seen[k] = true;
	}
	rt_cq_expect_empty(n->tx, "after the burst");
}

static void initiator(uint64_t me)
{
	struct rt_node_opts o = { .tx_errors_ok = true, .write_cntr = true };
	uint64_t warm = stamp(1);
	struct keymsg km;
	struct rt_node n;

	(void) me;
	init_open_opts(&n, &km, &o);
	rt_expect(&cc, SIG_GO, "the target's receive");
	/* The connection, and the known key. */
	RT_POST(fi_write(n.ep, &warm, 8, NULL, n.peer,
			 word_addr(&km.k[KH_WARM], 0), km.k[KH_WARM].key,
			 &warm),
		"the first write");
	wait_ok(&n, &warm, FI_RMA | FI_WRITE, "the first write");
	kh_inject(&n, &km);
	kh_send(&n, &km);
	kh_atomics(&n, &km);
	kh_refused(&n, &km);
	kh_burst(&n, &km);
	kh_past_end(&n, &km);
	itest_signal(&cc, SIG_DONE);
	init_close(&n);
}

int main(void)
{
	return nt_main("nrma_rma_key_hold", 1, target, initiator);
}
