/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Notified RMA: remote counters that the initiator's fetch-and-add bumps
 * behind each RMA operation.  The parent is the target; four children are
 * initiators (child 0 in every part, all four in part 2).
 *
 *  1. Producer/consumer: the producer does ~103,000 notified fi_writes
 *     (1 byte to 4 MiB, most of them 8 bytes, each with a sequence stamp
 *     and its own place in the consumer's buffer) with a window of
 *     outstanding operations.  The consumer calls nothing but fi_cntr_read
 *     and, each time the counter moves to c, checks that the first c
 *     writes are all in place: the counter is never ahead of the data.
 *  2. Four initiators do 2000 notified writes each to one target endpoint:
 *     its counter ends at exactly 8000 and stays there.
 *  3. Reads bump the target's counter (bound FI_REMOTE_WRITE |
 *     FI_REMOTE_READ, once per operation) and read the right data, and so
 *     do fi_write, fi_writemsg(FI_DELIVERY_COMPLETE), fi_inject_write and
 *     fi_writedata (whose CQ data reaches the target's rx CQ too); the
 *     count is exact as soon as the initiator has its completions; data
 *     the target overwrites once the counter moved was read before.
 *  4. MR-bound counters: one buffer registered four times with
 *     FI_RMA_EVENT, each bound to its own counter (three for FI_REMOTE_WRITE
 *     | FI_REMOTE_READ, one for FI_REMOTE_WRITE only), and once plainly.
 *     Operations with key k bump counter k only, once each; the target
 *     makes no progress call at all meanwhile (the counters are bound to
 *     no endpoint); an endpoint-bound FI_REMOTE_WRITE counter counts every
 *     write.
 *  5. fi_cntr_set and fi_cntr_add on the target while remote writes land
 *     keep the value exact.
 *  6. The other way: the initiator's endpoint has the remote counter and
 *     the target writes to and reads from it over the connection that the
 *     initiator made (the accepting side learned the counter's word from
 *     the connection request).
 *  7. fi_cntr_wait on the target: returns 0 once remote writes reach the
 *     threshold (endpoint- and MR-bound counters), 0 at once when it is
 *     reached already, and -FI_ETIMEDOUT after about its timeout when it
 *     is not reached.
 *  8. Keys whose counter binding is gone: the target closes one of its
 *     counted registrations (its counter keeps its count and then closes).
 *     A write and a read with a live data key but that registration's
 *     notification cell, a write with its whole key, and a write whose
 *     cell part is a data rkey each end in an error entry at the
 *     initiator and bump its error count; no counter moves; writes with
 *     another counted key then work and count.
 */
#include "itest_rma.h"

#define NINIT		4
#define MiB		(1u << 20)
#define STAMP_MAGIC	0x6e726d6100000000ULL	/* "nrma" */

static struct itest_link links[NINIT];
static struct itest_chan pc[NINIT];	/* the target's ends */
static struct itest_chan cc;		/* an initiator's end */

/* What the target tells its initiators about itself. */
struct keymsg {
	struct sockaddr_in name;
	struct rt_rkey k[8];
};

/* Steps */
enum {
	SIG_DONE = 0x100,	/* an initiator's operations all completed */
	SIG_GO,			/* the target is ready for the next step */
	SIG_PART_OVER,		/* close the endpoints */
	SIG_WARM,		/* the connection is up */
};

static uint64_t stamp(uint64_t g)
{
	return STAMP_MAGIC | (uint32_t) g;
}

/* Target-side set-up: an endpoint, then our name and keys to each peer. */
static void target_open(struct rt_node *t, uint64_t remote_flags,
			const struct keymsg *km, int npeers)
{
	struct rt_node_opts o = { .remote_flags = remote_flags,
				  .tx_count_only = true };
	struct keymsg m = *km;

	rt_node_open(t, &o, "target");
	m.name = t->name;
	for (int i = 0; i < npeers; i++)
		itest_chan_write(&pc[i], &m, sizeof(m));
}

static void target_close(struct rt_node *t, int npeers)
{
	for (int i = 0; i < npeers; i++)
		itest_signal(&pc[i], SIG_PART_OVER);
	rt_node_close(t);
}

/* Initiator-side set-up: a count-only tx CQ, the target's keys. */
static void init_open_remote(struct rt_node *n, struct keymsg *km,
			     uint64_t remote_flags)
{
	/* The write counter sees injected writes, which have no CQ entry. */
	struct rt_node_opts o = { .tx_count_only = true, .write_cntr = true,
				  .remote_flags = remote_flags };

	rt_node_open(n, &o, itest_who);
	rt_chan_read(&cc, km, sizeof(*km), "the target's name and keys");
	rt_node_insert(n, &km->name);
}

static void init_open(struct rt_node *n, struct keymsg *km)
{
	init_open_remote(n, km, 0);
}

static void init_close(struct rt_node *n)
{
	rt_expect_idle(&cc, SIG_PART_OVER, "the end of the part");
	rt_node_close(n);
}

/*
 * Posts operations first..count-1 with post(n, i, arg), at most window of
 * them outstanding, and waits until all completed.  Fails when no
 * operation completes for the test's wait time.
 */
typedef ssize_t (*post_fn)(struct rt_node *n, uint64_t i, void *arg);

static void run_ops_from(struct rt_node *n, uint64_t first, uint64_t count,
			 uint64_t window, post_fn post, void *arg,
			 const char *what)
{
	uint64_t base = n->tx->seen - first, last = n->tx->seen;
	int64_t deadline = itest_deadline();

	for (uint64_t i = first; i < count;) {
		ssize_t ret = -FI_EAGAIN;

		if (i - (n->tx->seen - base) < window)
			ret = post(n, i, arg);
		if (ret == -FI_EAGAIN) {
			if (!itest_cq_poll(n->tx))
				sched_yield();
		} else if (ret) {
			FAIL("%s: operation %" PRIu64 " of %" PRIu64 " could "
			      "not be posted: %zd (%s)", what, i, count, ret,
			      fi_strerror((int) -ret));
		} else if (++i % 16 == 0) {
			itest_cq_poll(n->tx);
		}
		if (n->tx->seen != last) {
			last = n->tx->seen;
			deadline = itest_deadline();
		}
		if (itest_now_ms() > deadline)
			FAIL("%s: no completion for %" PRId64 " s; %" PRIu64
			      " of %" PRIu64 " posted, %" PRIu64 " completed",
			      what, itest_wait_ms() / 1000, i, count,
			      n->tx->seen - base);
	}
	while (n->tx->seen - base < count) {
		if (!itest_cq_poll(n->tx))
			sched_yield();
		if (n->tx->seen != last) {
			last = n->tx->seen;
			deadline = itest_deadline();
		}
		if (itest_now_ms() > deadline)
			FAIL("%s: no completion for %" PRId64 " s; %" PRIu64
			      " of %" PRIu64 " completed", what,
			      itest_wait_ms() / 1000, n->tx->seen - base, count);
	}
}

static void run_ops(struct rt_node *n, uint64_t count, uint64_t window,
		    post_fn post, void *arg, const char *what)
{
	run_ops_from(n, 0, count, window, post, arg, what);
}

/*
 * Operation 0 alone, retried while the connection is made; tells the
 * target when it completed.  Until then the target progresses its
 * endpoint (set-up); after it, it may make no progress call at all.
 */
static void warm_up(struct rt_node *n, post_fn post, void *arg)
{
	uint64_t done = n->tx->seen;
	int64_t deadline = itest_deadline();

	RT_POST(post(n, 0, arg), "the first operation (connecting)");
	while (n->tx->seen == done) {
		rt_check_deadline(deadline, "the first operation to complete");
		itest_progress();
	}
	itest_signal(&cc, SIG_WARM);
}

/* Fails unless cntr reads exactly want now. */
#define expect_cntr(cntr, want, ...)					\
	do {								\
		uint64_t ec_v_ = fi_cntr_read(cntr);			\
		uint64_t ec_w_ = (want);				\
		if (ec_v_ != ec_w_)					\
			FAIL("%s: the counter reads %" PRIu64 ", "	\
			      "expected %" PRIu64, itest_fmt(__VA_ARGS__),	\
			      ec_v_, ec_w_);				\
	} while (0)

/* 1. Producer and consumer */

struct phase {
	size_t len;		/* 0: cycle through mixed[] */
	size_t count;
};

static const struct phase phases[] = {
	{ 1, 2000 }, { 8, 100000 }, { 4096, 200 }, { 65536, 32 },
	{ MiB, 6 }, { 4 * MiB, 3 }, { 0, 1000 },
};
static const size_t mixed[] = { 1, 8, 4096, 65536, 8, 1, 8193, 8192, 100, 3 };

static uint32_t *op_len;
static uint64_t *op_off;
static uint64_t nops, img_len;

/* Where each write goes: one place per write, never reused. */
static void plan(void)
{
	uint64_t off = 0, g = 0;

	nops = 0;
	for (size_t p = 0; p < sizeof(phases) / sizeof(phases[0]); p++)
		nops += phases[p].count;
	op_len = malloc(nops * sizeof(*op_len));
	op_off = malloc(nops * sizeof(*op_off));
	CHECK(op_len && op_off);
	for (size_t p = 0; p < sizeof(phases) / sizeof(phases[0]); p++)
		for (size_t i = 0; i < phases[p].count; i++, g++) {
			size_t len = phases[p].len ? phases[p].len :
				     mixed[i % (sizeof(mixed) / sizeof(mixed[0]))];

			if (len >= 8)
				off = (off + 7) & ~7ULL;
			op_len[g] = len;
			op_off[g] = off;
			off += len;
		}
	img_len = (off + 7) & ~7ULL;
}

/* What write g carries: a stamp, then a pattern; one byte for 1-byte ones. */
static void build_image(unsigned char *img)
{
	memset(img, 0, img_len);
	for (uint64_t g = 0; g < nops; g++) {
		unsigned char *p = img + op_off[g];
		uint64_t s = stamp(g);

		if (op_len[g] == 1) {
			p[0] = (unsigned char) (1 + g % 255);
			continue;
		}
		rt_pat_gen(p, g + 1, 0, op_len[g]);
		if (op_len[g] >= 8)
			memcpy(p, &s, sizeof(s));
	}
}

static void consumer_check(const unsigned char *img, const unsigned char *exp,
			   uint64_t from, uint64_t to)
{
	for (uint64_t g = from; g < to; g++) {
		const unsigned char *got = img + op_off[g];
		const unsigned char *want = exp + op_off[g];
		size_t i = 0;

		if (!memcmp(got, want, op_len[g]))
			continue;
		while (got[i] == want[i])
			i++;
		FAIL("the counter reads %" PRIu64 " (it was %" PRIu64 ") but "
		      "write %" PRIu64 " (%u bytes at offset %" PRIu64 ") is "
		      "not in place: byte %zu is 0x%02x, expected 0x%02x: the "
		      "counter is ahead of the data", to, from, g, op_len[g],
		      op_off[g], i, got[i], want[i]);
	}
}

static void part1_consumer(void)
{
	unsigned char *img, *exp;
	struct keymsg km = { 0 };
	struct fid_mr *mr;
	struct rt_node t;
	uint64_t prev = 0, moves = 0, max_jump = 0, spins = 0, v;
	int64_t start, deadline, last_kid_check = 0;

	plan();
	img = rt_guarded(img_len);
	exp = malloc(img_len);
	CHECK(exp != NULL);
	build_image(exp);
	mr = rt_mr_reg(img, img_len, FI_REMOTE_WRITE, 0);
	km.k[0] = rt_rkey_of(mr, img, img_len);
	target_open(&t, FI_REMOTE_WRITE, &km, 1);
	expect_cntr(t.remote_cntr, 0, "a fresh counter");
	rt_expect(&pc[0], SIG_WARM, "the producer's first write (set-up)");

	/* From here on: fi_cntr_read only. */
	start = itest_now_ms();
	deadline = itest_deadline();
	while (prev < nops) {
		v = fi_cntr_read(t.remote_cntr);
		if (v == prev) {
			if (++spins % 1024 == 0) {
				int64_t now = itest_now_ms();

				if (now > deadline)
					FAIL("the counter stayed at %" PRIu64
					      " of %" PRIu64 " for %" PRId64
					      " s", v, nops,
					      itest_wait_ms() / 1000);
				if (now - last_kid_check > 100) {
					last_kid_check = now;
					itest_check_kids();
				}
			}
			sched_yield();
			continue;
		}
		if (v < prev || v > nops)
			FAIL("the counter went from %" PRIu64 " to %" PRIu64
			      " (%" PRIu64 " writes in all)", prev, v, nops);
		consumer_check(img, exp, prev, v);
		moves++;
		if (v - prev > max_jump)
			max_jump = v - prev;
		prev = v;
		deadline = itest_deadline();
	}
	rt_note("1. consumer: the counter reached %" PRIu64 " in %.1f s "
		"(%.0f writes/s); it moved %" PRIu64 " times (at most %"
		PRIu64 " at once) and was never ahead of the data", nops,
		(itest_now_ms() - start) / 1000.0,
		nops * 1000.0 / (double) (itest_now_ms() - start + 1), moves,
		max_jump);
	rt_expect(&pc[0], SIG_DONE, "the producer's completions");
	itest_idle(100);
	expect_cntr(t.remote_cntr, nops, "after all writes and some progress");
	EXPECT(fi_cntr_readerr(t.remote_cntr) == 0, "no counter errors");
	consumer_check(img, exp, 0, nops);
	EXPECT(!memcmp(img, exp, img_len), "the whole image is as written");
	rt_guard_check(img, img_len, "the consumer's buffer");
	target_close(&t, 1);
	RT_OK(fi_close(&mr->fid));
	rt_guarded_free(img);
	free(exp);
	free(op_len);
	free(op_off);
}

struct producer {
	const unsigned char *src;
	void *desc;
	struct rt_rkey rk;
};

static ssize_t producer_post(struct rt_node *n, uint64_t g, void *arg)
{
	struct producer *p = arg;

	return fi_write(n->ep, p->src + op_off[g], op_len[g],
			g % 2 ? NULL : p->desc, n->peer,
			p->rk.addr + op_off[g], p->rk.key, NULL);
}

static void part1_producer(void)
{
	struct keymsg km;
	struct rt_node n;
	struct producer p;
	unsigned char *src;
	struct fid_mr *mr;
	int64_t start;

	plan();
	src = malloc(img_len);
	CHECK(src != NULL);
	build_image(src);
	mr = rt_mr_reg(src, img_len, FI_WRITE, 0);
	init_open(&n, &km);
	p = (struct producer) { .src = src, .desc = fi_mr_desc(mr),
				.rk = km.k[0] };
	EXPECT(km.k[0].len == img_len, "the consumer's buffer has %" PRIu64
		" bytes, expected %" PRIu64, km.k[0].len, img_len);
	warm_up(&n, producer_post, &p);
	start = itest_now_ms();
	run_ops_from(&n, 1, nops, 64, producer_post, &p,
		     "the producer's writes");
	rt_note("1. producer: %" PRIu64 " notified writes (%" PRIu64
		" bytes) completed in %.1f s", nops, img_len,
		(itest_now_ms() - start) / 1000.0);
	itest_signal(&cc, SIG_DONE);
	init_close(&n);
	RT_OK(fi_close(&mr->fid));
	free(src);
	free(op_len);
	free(op_off);
}

/* 2. Many initiators, one target */

#define P2_OPS	2000

static void part2_target(void)
{
	const uint64_t total = (uint64_t) NINIT * P2_OPS;
	uint64_t *buf = rt_guarded(total * 8), prev = 0, v;
	struct keymsg km = { 0 };
	struct fid_mr *mr;
	struct rt_node t;
	int64_t start = itest_now_ms(), deadline = itest_deadline(), last_check = 0;

	mr = rt_mr_reg(buf, total * 8, FI_REMOTE_WRITE, 0);
	km.k[0] = rt_rkey_of(mr, buf, total * 8);
	target_open(&t, FI_REMOTE_WRITE, &km, NINIT);
	for (int i = 0; i < NINIT; i++)
		rt_expect(&pc[i], SIG_WARM, "initiator %d's first write "
			  "(set-up)", i);
	/* From here on: fi_cntr_read only. */
	while ((v = fi_cntr_read(t.remote_cntr)) != total) {
		int64_t now = itest_now_ms();

		if (v > total || v < prev)
			FAIL("the counter went from %" PRIu64 " to %" PRIu64
			      " (%d x %d writes)", prev, v, NINIT, P2_OPS);
		if (v != prev)
			deadline = itest_deadline();
		prev = v;
		if (now > deadline)
			FAIL("the counter stayed at %" PRIu64 " of %" PRIu64
			      " for %" PRId64 " s", v, total,
			      itest_wait_ms() / 1000);
		if (now - last_check > 50) {
			last_check = now;
			itest_check_kids();
		}
		sched_yield();
	}
	for (int i = 0; i < NINIT; i++)
		rt_expect(&pc[i], SIG_DONE, "initiator %d's completions", i);
	itest_idle(200);
	expect_cntr(t.remote_cntr, total, "%d initiators x %d writes, after "
		    "they all completed and some progress", NINIT, P2_OPS);
	for (uint64_t k = 0; k < NINIT; k++)
		for (uint64_t j = 0; j < P2_OPS; j++)
			EXPECT(buf[k * P2_OPS + j] == stamp(k << 24 | j),
				"initiator %" PRIu64 "'s write %" PRIu64 ": "
				"0x%" PRIx64, k, j, buf[k * P2_OPS + j]);
	rt_guard_check(buf, total * 8, "the target's buffer");
	rt_note("2. %d initiators x %d notified writes: the counter reads "
		"exactly %" PRIu64 " (%.1f s)", NINIT, P2_OPS, total,
		(itest_now_ms() - start) / 1000.0);
	target_close(&t, NINIT);
	RT_OK(fi_close(&mr->fid));
	rt_guarded_free(buf);
}

struct p2 {
	uint64_t me;
	uint64_t *src;
	struct rt_rkey rk;
};

static ssize_t p2_post(struct rt_node *n, uint64_t j, void *arg)
{
	struct p2 *p = arg;
	uint64_t slot = p->me * P2_OPS + j;

	return fi_write(n->ep, &p->src[j], 8, NULL, n->peer,
			p->rk.addr + slot * 8, p->rk.key, NULL);
}

static void part2_initiator(uint64_t me)
{
	struct keymsg km;
	struct rt_node n;
	struct p2 p = { .me = me };

	p.src = malloc(P2_OPS * 8);
	CHECK(p.src != NULL);
	for (uint64_t j = 0; j < P2_OPS; j++)
		p.src[j] = stamp(me << 24 | j);
	init_open(&n, &km);
	p.rk = km.k[0];
	warm_up(&n, p2_post, &p);
	run_ops_from(&n, 1, P2_OPS, 32, p2_post, &p, "an initiator's writes");
	itest_signal(&cc, SIG_DONE);
	init_close(&n);
	free(p.src);
}

/* 3. Reads */

#define P3_READS	120
#define P3_WRITES	100
#define P3_RACES	8
#define P3_DC		3	/* fi_writemsg(FI_DELIVERY_COMPLETE) */
#define P3_INJECT	10	/* fi_inject_write */
#define P3_DATA		2	/* fi_writedata */
#define P3_OTHER	(P3_DC + P3_INJECT + P3_DATA)
#define P3_MORE		(2 * MiB + 16384)	/* where those land */

static const size_t p3_dc_lens[P3_DC] = { 64, 9000, 65536 };

/* Offset in buf + P3_MORE and length of "other" write i. */
static uint64_t p3_other_off(int i)
{
	return (uint64_t) i * 65536;
}

static size_t p3_other_len(int i)
{
	return i < P3_DC ? p3_dc_lens[i] : i < P3_DC + P3_INJECT ? 100 : 3000;
}
#define P3_LEN		(4 * MiB)	/* reads from the first half */

static const size_t p3_lens[12] = {
	8, 4096, 65536, 1, 9000, 100, 8, 4096, MiB, 16, 8193, 512,
};

static uint64_t p3_off(uint64_t i)
{
	return (i * 4099) % (2 * MiB - p3_lens[i % 12]);
}

static void part3_target(void)
{
	unsigned char *buf = rt_guarded(P3_LEN);
	struct keymsg km = { 0 };
	struct fid_mr *mr;
	struct rt_node t;
	uint64_t base;

	rt_pat_gen(buf, 3000, 0, 2 * MiB);
	mr = rt_mr_reg(buf, P3_LEN, FI_REMOTE_WRITE | FI_REMOTE_READ, 0);
	km.k[0] = rt_rkey_of(mr, buf, P3_LEN);
	target_open(&t, FI_REMOTE_WRITE | FI_REMOTE_READ, &km, 1);

	rt_expect(&pc[0], SIG_DONE, "the initiator's reads");
	/* The initiator's completions come with the atomics': no wait. */
	expect_cntr(t.remote_cntr, P3_READS, "%d notified reads, at once",
		    P3_READS);
	itest_signal(&pc[0], SIG_GO);
	rt_expect(&pc[0], SIG_DONE, "the initiator's writes");
	expect_cntr(t.remote_cntr, P3_READS + P3_WRITES, "%d reads and %d "
		    "writes (one counter bound for both)", P3_READS,
		    P3_WRITES);
	for (uint64_t i = 0; i < P3_WRITES; i++)
		rt_pat_check(buf + 2 * MiB + i * 64, 3100 + i, 0, 64,
			     "write %" PRIu64, i);
	rt_pat_check(buf, 3000, 0, 2 * MiB, "the data the initiator read");
	itest_signal(&pc[0], SIG_GO);
	rt_expect(&pc[0], SIG_DONE, "the initiator's other writes");
	expect_cntr(t.remote_cntr, P3_READS + P3_WRITES + P3_OTHER, "after "
		    "%d fi_writemsg(FI_DELIVERY_COMPLETE), %d fi_inject_write "
		    "and %d fi_writedata", P3_DC, P3_INJECT, P3_DATA);
	for (int i = 0; i < P3_OTHER; i++)
		rt_pat_check(buf + P3_MORE + p3_other_off(i), 3200 + i, 0,
			     p3_other_len(i), "notified write %d (%s)", i,
			     i < P3_DC ? "delivery complete" :
			     i < P3_DC + P3_INJECT ? "inject" : "writedata");
	for (int i = 0; i < P3_DATA; i++) {
		struct itest_comp c = rt_cq_wait(t.rx, "the rx CQ entry of "
					      "fi_writedata %d", i);

		RT_EXPECT_COMP(c, NULL, FI_RMA | FI_REMOTE_WRITE |
			       FI_REMOTE_CQ_DATA, FI_RECV | FI_MSG,
			       "fi_writedata %d at the target", i);
		EXPECT(c.data == 0xda7a0000u + (uint64_t) i && c.len == 3000,
			"fi_writedata %d: data 0x%" PRIx64 ", len %zu", i,
			c.data, c.len);
	}
	rt_cq_expect_empty(t.rx, "one rx CQ entry per fi_writedata");

	/* The counter moves only once the data was taken. */
	base = P3_READS + P3_WRITES + P3_OTHER;
	for (uint64_t i = 0; i < P3_RACES; i++) {
		int64_t deadline = itest_deadline();
		uint64_t seed = 4000 + i;

		rt_pat_gen(buf, seed, 0, MiB);
		itest_chan_write(&pc[0], &seed, sizeof(seed));
		while (fi_cntr_read(t.remote_cntr) == base + i) {
			rt_check_deadline(deadline, "race read %" PRIu64
					  " to bump the counter", i);
			sched_yield();
		}
		rt_pat_gen(buf, seed + 1000, 0, MiB);	/* too late to read */
		expect_cntr(t.remote_cntr, base + i + 1, "race read %" PRIu64,
			    i);
		itest_signal(&pc[0], SIG_GO);
	}
	rt_expect(&pc[0], SIG_DONE, "the initiator's checks");
	EXPECT(fi_cntr_readerr(t.remote_cntr) == 0, "no counter errors");
	rt_guard_check(buf, P3_LEN, "the target's buffer");
	rt_note("3. notified reads: counted once each, with their data");
	target_close(&t, 1);
	RT_OK(fi_close(&mr->fid));
	rt_guarded_free(buf);
}

struct p3 {
	unsigned char *dst;
	uint64_t *dst_off;
	void *desc;
	struct rt_rkey rk;
	unsigned char *src;
};

static ssize_t p3_read(struct rt_node *n, uint64_t i, void *arg)
{
	struct p3 *p = arg;

	return fi_read(n->ep, p->dst + p->dst_off[i], p3_lens[i % 12],
		       i % 3 ? p->desc : NULL, n->peer, p->rk.addr + p3_off(i),
		       p->rk.key, NULL);
}

static ssize_t p3_write(struct rt_node *n, uint64_t i, void *arg)
{
	struct p3 *p = arg;

	return fi_write(n->ep, p->src + i * 64, 64, NULL, n->peer,
			p->rk.addr + 2 * MiB + i * 64, p->rk.key, NULL);
}

/* Notified writes of other kinds, one at a time. */
static void part3_other_writes(struct rt_node *n, struct p3 *p)
{
	unsigned char *src = malloc(65536);
	struct fid_mr *mr = rt_mr_reg(src, 65536, FI_WRITE, 0);
	void *desc = fi_mr_desc(mr);
	uint64_t done = n->tx->seen;
	int64_t deadline;

	CHECK(src != NULL);
	for (int i = 0; i < P3_OTHER; i++) {
		uint64_t raddr = p->rk.addr + P3_MORE + p3_other_off(i);
		size_t len = p3_other_len(i);

		rt_pat_gen(src, 3200 + i, 0, len);
		if (i < P3_DC) {
			struct iovec iov = { .iov_base = src, .iov_len = len };
			struct fi_rma_iov rma = { .addr = raddr, .len = len,
						  .key = p->rk.key };
			struct fi_msg_rma msg = {
				.msg_iov = &iov, .desc = &desc, .iov_count = 1,
				.addr = n->peer, .rma_iov = &rma,
				.rma_iov_count = 1,
			};

			RT_POST(fi_writemsg(n->ep, &msg, FI_DELIVERY_COMPLETE |
					    FI_COMPLETION),
				"notified fi_writemsg(FI_DELIVERY_COMPLETE)");
			done++;
		} else if (i < P3_DC + P3_INJECT) {
			RT_POST(fi_inject_write(n->ep, src, len, n->peer,
						raddr, p->rk.key),
				"notified fi_inject_write");
			memset(src, 0, len);	/* ours again at once */
		} else {
			RT_POST(fi_writedata(n->ep, src, len, desc,
					     0xda7a0000u + (i - P3_DC -
							    P3_INJECT),
					     n->peer, raddr, p->rk.key, NULL),
				"notified fi_writedata");
			done++;
		}
		/* Each completes (or, injected, counts) before the next. */
		deadline = itest_deadline();
		while (n->tx->seen < done || fi_cntr_read(n->write_cntr) <
					     P3_WRITES + (uint64_t) i + 1) {
			rt_check_deadline(deadline, "notified write %d to "
					  "complete", i);
			itest_progress();
		}
	}
	EXPECT(fi_cntr_read(n->write_cntr) == P3_WRITES + P3_OTHER &&
		fi_cntr_readerr(n->write_cntr) == 0, "the write counter reads "
		"%" PRIu64 " (errors %" PRIu64 ")", fi_cntr_read(n->write_cntr),
		fi_cntr_readerr(n->write_cntr));
	RT_OK(fi_close(&mr->fid));
	free(src);
}

static void part3_initiator(void)
{
	uint64_t dst_off[P3_READS], total = 0;
	struct keymsg km;
	struct rt_node n;
	struct fid_mr *mr;
	struct p3 p;

	for (uint64_t i = 0; i < P3_READS; i++) {
		dst_off[i] = total;
		total += p3_lens[i % 12];
	}
	p = (struct p3) { .dst = malloc(total), .dst_off = dst_off,
			  .src = malloc(P3_WRITES * 64) };
	CHECK(p.dst && p.src);
	memset(p.dst, 0, total);
	mr = rt_mr_reg(p.dst, total, FI_READ, 0);
	p.desc = fi_mr_desc(mr);
	init_open(&n, &km);
	p.rk = km.k[0];

	run_ops(&n, P3_READS, 16, p3_read, &p, "notified reads");
	for (uint64_t i = 0; i < P3_READS; i++)
		rt_pat_check(p.dst + dst_off[i], 3000, p3_off(i),
			     p3_lens[i % 12], "read %" PRIu64 " (%zu bytes)",
			     i, p3_lens[i % 12]);
	itest_signal(&cc, SIG_DONE);
	rt_expect(&cc, SIG_GO, "the target's check of the reads");
	for (uint64_t i = 0; i < P3_WRITES; i++)
		rt_pat_gen(p.src + i * 64, 3100 + i, 0, 64);
	run_ops(&n, P3_WRITES, 32, p3_write, &p, "notified writes");
	itest_signal(&cc, SIG_DONE);
	rt_expect(&cc, SIG_GO, "the target's check of the writes");
	part3_other_writes(&n, &p);
	itest_signal(&cc, SIG_DONE);

	for (uint64_t i = 0; i < P3_RACES; i++) {
		uint64_t seed, done = n.tx->seen;
		int64_t deadline = itest_deadline();

		rt_chan_read(&cc, &seed, sizeof(seed), "race %" PRIu64, i);
		memset(p.dst, 0, MiB);
		RT_POST(fi_read(n.ep, p.dst, MiB, p.desc, n.peer, p.rk.addr,
				p.rk.key, NULL), "race read %" PRIu64, i);
		while (n.tx->seen == done) {
			rt_check_deadline(deadline, "race read %" PRIu64, i);
			itest_progress();
		}
		rt_expect(&cc, SIG_GO, "the target's overwrite");
		rt_pat_check(p.dst, seed, 0, MiB, "race read %" PRIu64 ": the "
			     "data from before the counter moved", i);
	}
	itest_signal(&cc, SIG_DONE);
	init_close(&n);
	RT_OK(fi_close(&mr->fid));
	free(p.dst);
	free(p.src);
}

/* 4. MR-bound counters */

#define P4_MRS		4	/* 0-2: write + read, 3: write only */
#define P4_PLAIN	4	/* the key of the plain registration */
#define P4_SLOTS	64
#define P4_PLAIN_WRITES	5

static const uint64_t p4_writes[P4_MRS + 1] = { 10, 15, 20, 12,
						P4_PLAIN_WRITES };
static const uint64_t p4_reads[P4_MRS + 1] = { 4, 7, 10, 6, 3 };

static uint64_t p4_slot(uint64_t k, uint64_t r)
{
	return k * P4_SLOTS + r;
}

static void part4_target(void)
{
	const size_t len = (P4_MRS + 1) * P4_SLOTS * 8;
	uint64_t *buf = rt_guarded(len), want[P4_MRS], all_writes = 0;
	struct fid_cntr *cntr[P4_MRS];
	struct fid_mr *mr[P4_MRS + 1];
	struct keymsg km = { 0 };
	struct rt_node t;
	int64_t deadline;
	bool reached = false;

	for (int k = 0; k < P4_MRS; k++) {
		cntr[k] = itest_cntr_open(rt_domain());
		mr[k] = rt_mr_reg_cntr(buf, len, FI_REMOTE_WRITE |
				       FI_REMOTE_READ, cntr[k],
				       k < 3 ? FI_REMOTE_WRITE | FI_REMOTE_READ :
					       FI_REMOTE_WRITE);
		km.k[k] = rt_rkey_of(mr[k], buf, len);
		want[k] = p4_writes[k] + (k < 3 ? p4_reads[k] : 0);
	}
	mr[P4_PLAIN] = rt_mr_reg(buf, len, FI_REMOTE_WRITE | FI_REMOTE_READ, 0);
	km.k[P4_PLAIN] = rt_rkey_of(mr[P4_PLAIN], buf, len);
	for (int i = 0; i <= P4_MRS; i++)
		for (int j = 0; j < i; j++)
			EXPECT(km.k[i].key != km.k[j].key, "registrations %d "
				"and %d have the same key 0x%" PRIx64, i, j,
				km.k[i].key);
	for (int k = 0; k <= P4_MRS; k++)
		all_writes += p4_writes[k];
	target_open(&t, FI_REMOTE_WRITE, &km, 1);
	rt_expect(&pc[0], SIG_WARM, "the initiator's first write");
	expect_cntr(t.remote_cntr, 1, "the endpoint's counter after a write "
		    "with the plain key");

	/* No progress call from here: these counters have no endpoint. */
	for (int k = 0; k < P4_MRS; k++)
		expect_cntr(cntr[k], 0, "MR counter %d before its operations",
			    k);
	itest_signal(&pc[0], SIG_GO);
	deadline = itest_deadline();
	while (!reached) {
		reached = true;
		for (int k = 0; k < P4_MRS; k++) {
			uint64_t v = fi_cntr_read(cntr[k]);

			if (v > want[k])
				FAIL("MR counter %d reads %" PRIu64 ", more "
				      "than the %" PRIu64 " operations with "
				      "its key", k, v, want[k]);
			reached = reached && v == want[k];
		}
		if (itest_now_ms() > deadline)
			FAIL("the MR counters read %" PRIu64 " %" PRIu64 " %"
			      PRIu64 " %" PRIu64 ", expected %" PRIu64 " %"
			      PRIu64 " %" PRIu64 " %" PRIu64 " (no progress "
			      "call meanwhile)", fi_cntr_read(cntr[0]),
			      fi_cntr_read(cntr[1]), fi_cntr_read(cntr[2]),
			      fi_cntr_read(cntr[3]), want[0], want[1],
			      want[2], want[3]);
		sched_yield();
	}
	rt_expect_idle(&pc[0], SIG_DONE, "the initiator's operations");
	for (int k = 0; k < P4_MRS; k++) {
		expect_cntr(cntr[k], want[k], "MR counter %d (key %d only: %"
			    PRIu64 " writes, %" PRIu64 " reads%s)", k, k,
			    p4_writes[k], p4_reads[k],
			    k < 3 ? "" : ", not counted");
		EXPECT(fi_cntr_readerr(cntr[k]) == 0, "no errors");
	}
	expect_cntr(t.remote_cntr, 1 + all_writes, "the endpoint's "
		    "FI_REMOTE_WRITE counter: every write, whatever its key");
	for (uint64_t k = 0; k <= P4_MRS; k++)
		for (uint64_t r = 0; r < p4_writes[k]; r++)
			EXPECT(buf[p4_slot(k, r)] == stamp(k << 16 | r),
				"write %" PRIu64 " with key %" PRIu64 ": 0x%"
				PRIx64, r, k, buf[p4_slot(k, r)]);
	rt_guard_check(buf, len, "the target's buffer");
	rt_note("4. MR-bound counters: each counts only its key's "
		"operations, with no progress at the target");
	target_close(&t, 1);
	for (int k = 0; k <= P4_MRS; k++)
		RT_OK(fi_close(&mr[k]->fid));
	for (int k = 0; k < P4_MRS; k++)
		itest_cntr_close(cntr[k]);
	rt_guarded_free(buf);
}

struct p4 {
	struct keymsg *km;
	uint64_t src[(P4_MRS + 1) * P4_SLOTS];
	uint64_t dst[(P4_MRS + 1) * P4_SLOTS];
	uint64_t order[128][2];		/* (key, index), interleaved */
	uint64_t norder;
};

static void p4_interleave(struct p4 *p, const uint64_t *counts)
{
	p->norder = 0;
	for (uint64_t r = 0; r < P4_SLOTS; r++)
		for (uint64_t k = 0; k <= P4_MRS; k++)
			if (r < counts[k]) {
				CHECK(p->norder < 128);
				p->order[p->norder][0] = k;
				p->order[p->norder++][1] = r;
			}
}

static ssize_t p4_write(struct rt_node *n, uint64_t i, void *arg)
{
	struct p4 *p = arg;
	uint64_t k = p->order[i][0], s = p4_slot(k, p->order[i][1]);

	return fi_write(n->ep, &p->src[s], 8, NULL, n->peer,
			p->km->k[k].addr + s * 8, p->km->k[k].key, NULL);
}

static ssize_t p4_read(struct rt_node *n, uint64_t i, void *arg)
{
	struct p4 *p = arg;
	uint64_t k = p->order[i][0], s = p4_slot(k, p->order[i][1]);

	return fi_read(n->ep, &p->dst[s], 8, NULL, n->peer,
		       p->km->k[k].addr + s * 8, p->km->k[k].key, NULL);
}

static void part4_initiator(void)
{
	struct keymsg km;
	struct rt_node n;
	struct p4 *p = calloc(1, sizeof(*p));
	uint64_t warm = stamp(0xffff);

	CHECK(p != NULL);
	p->km = &km;
	for (uint64_t k = 0; k <= P4_MRS; k++)
		for (uint64_t r = 0; r < P4_SLOTS; r++)
			p->src[p4_slot(k, r)] = stamp(k << 16 | r);
	init_open(&n, &km);
	/* Connect with a write through the plain key, to a slot not used. */
	RT_POST(fi_write(n.ep, &warm, 8, NULL, n.peer,
			 km.k[P4_PLAIN].addr + p4_slot(P4_PLAIN, 63) * 8,
			 km.k[P4_PLAIN].key, NULL), "the first write");
	while (n.tx->seen < 1)
		itest_progress();
	itest_signal(&cc, SIG_WARM);
	rt_expect(&cc, SIG_GO, "the target's go");
	p4_interleave(p, p4_writes);
	run_ops(&n, p->norder, 16, p4_write, p, "writes with 5 keys");
	p4_interleave(p, p4_reads);
	run_ops(&n, p->norder, 16, p4_read, p, "reads with 5 keys");
	for (uint64_t i = 0; i < p->norder; i++) {
		uint64_t k = p->order[i][0], r = p->order[i][1];

		EXPECT(p->dst[p4_slot(k, r)] == stamp(k << 16 | r),
			"read %" PRIu64 " with key %" PRIu64 ": 0x%" PRIx64,
			r, k, p->dst[p4_slot(k, r)]);
	}
	itest_signal(&cc, SIG_DONE);
	init_close(&n);
	free(p);
}

/* 5. fi_cntr_set and fi_cntr_add while remote writes land */

#define P5_WARM		300
#define P5_M1		2000
#define P5_M2		2000

static void part5_target(void)
{
	uint64_t *buf = rt_guarded(4096);
	struct keymsg km = { 0 };
	struct fid_mr *mr;
	struct rt_node t;
	struct fid_cntr *c;
	struct {
		uint64_t at;		/* add when the count reaches this */
		uint64_t add;
		uint64_t seen;		/* the count when it was added */
	} adds[3] = { { 500, 5 }, { 1200, 3 }, { 1000 + 300, 7 } };
	uint64_t bias = 0, v;

	mr = rt_mr_reg(buf, 4096, FI_REMOTE_WRITE, 0);
	km.k[0] = rt_rkey_of(mr, buf, 4096);
	target_open(&t, FI_REMOTE_WRITE, &km, 1);
	c = t.remote_cntr;
	rt_expect(&pc[0], SIG_DONE, "the first %d writes", P5_WARM);
	expect_cntr(c, P5_WARM, "after %d writes", P5_WARM);

	RT_OK(fi_cntr_set(c, 0));
	expect_cntr(c, 0, "fi_cntr_set(0) after %d remote writes", P5_WARM);
	itest_signal(&pc[0], SIG_GO);
	/* Two adds while the writes land, then all of them done. */
	for (int i = 0; i < 2; i++) {
		int64_t deadline = itest_deadline();

		while ((v = fi_cntr_read(c)) < adds[i].at + bias) {
			rt_check_deadline(deadline, "the count to reach %"
					  PRIu64, adds[i].at + bias);
			itest_progress();
		}
		RT_OK(fi_cntr_add(c, adds[i].add));
		adds[i].seen = v - bias;
		bias += adds[i].add;
	}
	rt_expect(&pc[0], SIG_DONE, "%d writes after the set", P5_M1);
	expect_cntr(c, P5_M1 + bias, "set(0), %d writes, add(5) and add(3)",
		    P5_M1);

	RT_OK(fi_cntr_set(c, 1000));
	expect_cntr(c, 1000, "fi_cntr_set(1000)");
	itest_signal(&pc[0], SIG_GO);
	{
		int64_t deadline = itest_deadline();

		while ((v = fi_cntr_read(c)) < adds[2].at) {
			rt_check_deadline(deadline, "the count to reach %"
					  PRIu64, adds[2].at);
			itest_progress();
		}
		RT_OK(fi_cntr_add(c, adds[2].add));
		adds[2].seen = v - 1000;
	}
	rt_expect(&pc[0], SIG_DONE, "%d writes after the second set", P5_M2);
	expect_cntr(c, 1000 + P5_M2 + adds[2].add, "set(1000), %d writes and "
		    "add(7)", P5_M2);
	itest_idle(100);
	expect_cntr(c, 1000 + P5_M2 + adds[2].add, "after some progress");
	EXPECT(fi_cntr_readerr(c) == 0, "no counter errors");
	rt_note("5. set/add while writes land: exact (adds after %" PRIu64
		", %" PRIu64 " of %d and %" PRIu64 " of %d writes)",
		adds[0].seen, adds[1].seen, P5_M1, adds[2].seen, P5_M2);
	target_close(&t, 1);
	RT_OK(fi_close(&mr->fid));
	rt_guarded_free(buf);
}

struct p5 {
	uint64_t src[512];
	struct rt_rkey rk;
};

static ssize_t p5_write(struct rt_node *n, uint64_t i, void *arg)
{
	struct p5 *p = arg;

	return fi_write(n->ep, &p->src[i % 512], 8, NULL, n->peer,
			p->rk.addr + (i % 512) * 8, p->rk.key, NULL);
}

/* Stamped sources and the target's first key, as parts 5 and 7 write. */
static void p5_open(struct rt_node *n, struct keymsg *km, struct p5 *p)
{
	for (int i = 0; i < 512; i++)
		p->src[i] = stamp(i);
	init_open(n, km);
	p->rk = km->k[0];
}

static void part5_initiator(void)
{
	struct keymsg km;
	struct rt_node n;
	struct p5 p;

	p5_open(&n, &km, &p);
	run_ops(&n, P5_WARM, 32, p5_write, &p, "the first writes");
	itest_signal(&cc, SIG_DONE);
	rt_expect(&cc, SIG_GO, "the target's fi_cntr_set(0)");
	run_ops(&n, P5_M1, 32, p5_write, &p, "writes after set(0)");
	itest_signal(&cc, SIG_DONE);
	rt_expect(&cc, SIG_GO, "the target's fi_cntr_set(1000)");
	run_ops(&n, P5_M2, 32, p5_write, &p, "writes after set(1000)");
	itest_signal(&cc, SIG_DONE);
	init_close(&n);
}

/* 6. The other way round */

#define P6_WRITES	50
#define P6_READS	20
#define P6_LEN		65536	/* reads from the first half */

struct p6 {
	unsigned char src[P6_WRITES * 64];
	unsigned char dst[P6_READS * 1024];
	struct rt_rkey rk;
};

static ssize_t p6_write(struct rt_node *n, uint64_t i, void *arg)
{
	struct p6 *p = arg;

	return fi_write(n->ep, p->src + i * 64, 64, NULL, n->peer,
			p->rk.addr + P6_LEN / 2 + i * 64, p->rk.key, NULL);
}

static ssize_t p6_read(struct rt_node *n, uint64_t i, void *arg)
{
	struct p6 *p = arg;

	return fi_read(n->ep, p->dst + i * 1024, 1024, NULL, n->peer,
		       p->rk.addr + i * 1024, p->rk.key, NULL);
}

static void part6_target(void)
{
	struct keymsg km = { 0 }, theirs;
	struct p6 *p = calloc(1, sizeof(*p));
	uint64_t warm_dst = 0;
	struct fid_mr *mr;
	struct rt_node t;

	CHECK(p != NULL);
	mr = rt_mr_reg(&warm_dst, 8, FI_REMOTE_WRITE, 0);
	km.k[0] = rt_rkey_of(mr, &warm_dst, 8);
	target_open(&t, FI_REMOTE_WRITE, &km, 1);
	rt_chan_read(&pc[0], &theirs, sizeof(theirs), "the initiator's name "
		     "and key");
	rt_expect(&pc[0], SIG_WARM, "the initiator's connection");
	rt_node_insert(&t, &theirs.name);	/* the connection it made */
	p->rk = theirs.k[0];
	for (int i = 0; i < P6_WRITES; i++)
		rt_pat_gen(p->src + i * 64, 6100 + i, 0, 64);
	run_ops(&t, P6_WRITES, 16, p6_write, p, "writes to the initiator");
	run_ops(&t, P6_READS, 16, p6_read, p, "reads from the initiator");
	for (int i = 0; i < P6_READS; i++)
		rt_pat_check(p->dst + i * 1024, 6000, i * 1024, 1024,
			     "read %d from the initiator", i);
	itest_signal(&pc[0], SIG_DONE);
	rt_expect(&pc[0], SIG_DONE, "the initiator's checks");
	expect_cntr(t.remote_cntr, 1, "the target's own counter (the "
		    "initiator's one write)");
	rt_note("6. the other way: the accepting side's notified writes and "
		"reads bump the connecting side's counter");
	target_close(&t, 1);
	RT_OK(fi_close(&mr->fid));
	free(p);
}

static void part6_initiator(void)
{
	unsigned char *buf = rt_guarded(P6_LEN);
	uint64_t one = stamp(1);
	struct keymsg km, mine = { 0 };
	struct fid_mr *mr;
	struct rt_node n;

	rt_pat_gen(buf, 6000, 0, P6_LEN / 2);
	mr = rt_mr_reg(buf, P6_LEN, FI_REMOTE_WRITE | FI_REMOTE_READ, 0);
	init_open_remote(&n, &km, FI_REMOTE_WRITE | FI_REMOTE_READ);
	mine.name = n.name;
	mine.k[0] = rt_rkey_of(mr, buf, P6_LEN);
	itest_chan_write(&cc, &mine, sizeof(mine));
	/* We connect, and the target will use this connection. */
	RT_POST(fi_write(n.ep, &one, 8, NULL, n.peer, km.k[0].addr,
			 km.k[0].key, NULL), "the first write (connecting)");
	while (n.tx->seen < 1)
		itest_progress();
	itest_signal(&cc, SIG_WARM);
	rt_expect(&cc, SIG_DONE, "the target's writes and reads");
	expect_cntr(n.remote_cntr, P6_WRITES + P6_READS, "the initiator's "
		    "counter after the target's %d writes and %d reads",
		    P6_WRITES, P6_READS);
	for (int i = 0; i < P6_WRITES; i++)
		rt_pat_check(buf + P6_LEN / 2 + i * 64, 6100 + i, 0, 64,
			     "the target's write %d", i);
	rt_pat_check(buf, 6000, 0, P6_LEN / 2, "what the target read");
	rt_guard_check(buf, P6_LEN, "the initiator's buffer");
	itest_signal(&cc, SIG_DONE);
	init_close(&n);
	RT_OK(fi_close(&mr->fid));
	rt_guarded_free(buf);
}

/* 7. fi_cntr_wait */

#define P7_WRITES	500
#define P7_MR_WRITES	100
#define P7_TIMEOUT_MS	1500
#define P7_WAIT_MS	20000

static void part7_target(void)
{
	uint64_t *buf = rt_guarded(4096);
	struct keymsg km = { 0 };
	struct fid_mr *mr, *emr;
	struct fid_cntr *mc;
	struct rt_node t;
	int64_t t0, el, el_mr;
	int ret;

	mc = itest_cntr_open(rt_domain());
	mr = rt_mr_reg(buf, 4096, FI_REMOTE_WRITE, 0);
	emr = rt_mr_reg_cntr(buf, 4096, FI_REMOTE_WRITE, mc, FI_REMOTE_WRITE);
	km.k[0] = rt_rkey_of(mr, buf, 4096);
	km.k[1] = rt_rkey_of(emr, buf, 4096);
	target_open(&t, FI_REMOTE_WRITE, &km, 1);

	/*
	 * The initiator connects and writes once the wait has (about)
	 * begun: fi_cntr_wait must progress the endpoint the counter is
	 * bound to (FI_PROGRESS_MANUAL), or the connection is never accepted.
	 */
	itest_signal(&pc[0], SIG_GO);
	t0 = itest_now_ms();
	ret = fi_cntr_wait(t.remote_cntr, P7_WRITES, P7_WAIT_MS);
	el = itest_now_ms() - t0;
	EXPECT(ret == 0, "fi_cntr_wait(%d, %d ms) on a counter bound to the "
		"endpoint with FI_REMOTE_WRITE, while the initiator connects "
		"and writes, returned %d (%s) after %" PRId64 " ms; the counter "
		"reads %" PRIu64 " (does fi_cntr_wait progress the endpoint, "
		"e.g. accept its connections?)", P7_WRITES, P7_WAIT_MS, ret,
		fi_strerror(-ret), el, fi_cntr_read(t.remote_cntr));
	EXPECT(fi_cntr_read(t.remote_cntr) >= P7_WRITES, "%" PRIu64,
		fi_cntr_read(t.remote_cntr));
	rt_expect(&pc[0], SIG_DONE, "the initiator's writes");
	expect_cntr(t.remote_cntr, P7_WRITES, "after fi_cntr_wait");
	rt_note("7. fi_cntr_wait(%d) returned 0 after %" PRId64 " ms",
		P7_WRITES, el);

	t0 = itest_now_ms();
	RT_OK(fi_cntr_wait(t.remote_cntr, P7_WRITES, 0));
	RT_OK(fi_cntr_wait(t.remote_cntr, P7_WRITES - 1, 1000));
	EXPECT(itest_now_ms() - t0 < 2000, "a threshold reached already returns "
		"at once (took %" PRId64 " ms)", itest_now_ms() - t0);

	t0 = itest_now_ms();
	ret = fi_cntr_wait(t.remote_cntr, P7_WRITES + 1000, P7_TIMEOUT_MS);
	el = itest_now_ms() - t0;
	RT_CALL(ret, -FI_ETIMEDOUT);
	EXPECT(el >= P7_TIMEOUT_MS - 50 && el <= P7_TIMEOUT_MS + 8000,
		"fi_cntr_wait(timeout %d ms) returned -FI_ETIMEDOUT after %"
		PRId64 " ms", P7_TIMEOUT_MS, el);
	rt_note("   fi_cntr_wait(unreachable, %d ms) returned -FI_ETIMEDOUT "
		"after %" PRId64 " ms", P7_TIMEOUT_MS, el);

	/* An MR-bound counter, bound to no endpoint. */
	itest_signal(&pc[0], SIG_GO);
	t0 = itest_now_ms();
	ret = fi_cntr_wait(mc, P7_MR_WRITES, P7_WAIT_MS);
	el = itest_now_ms() - t0;
	el_mr = el;
	EXPECT(ret == 0, "fi_cntr_wait(%d) on an MR-bound counter returned "
		"%d (%s) after %" PRId64 " ms; it reads %" PRIu64,
		P7_MR_WRITES, ret, fi_strerror(-ret), el, fi_cntr_read(mc));
	rt_expect(&pc[0], SIG_DONE, "the initiator's writes with the MR key");
	expect_cntr(mc, P7_MR_WRITES, "the MR-bound counter");
	expect_cntr(t.remote_cntr, P7_WRITES + P7_MR_WRITES, "the endpoint's "
		    "counter");
	t0 = itest_now_ms();
	ret = fi_cntr_wait(mc, P7_MR_WRITES + 1, 300);
	el = itest_now_ms() - t0;
	RT_CALL(ret, -FI_ETIMEDOUT);
	EXPECT(el >= 250 && el <= 300 + 8000, "-FI_ETIMEDOUT after %" PRId64
		" ms (timeout 300 ms)", el);
	rt_note("   fi_cntr_wait on an MR-bound counter: 0 after %" PRId64
		" ms, then -FI_ETIMEDOUT after %" PRId64 " ms (timeout 300)",
		el_mr, el);
	target_close(&t, 1);
	RT_OK(fi_close(&mr->fid));
	RT_OK(fi_close(&emr->fid));
	itest_cntr_close(mc);
	rt_guarded_free(buf);
}

static void part7_initiator(void)
{
	struct keymsg km;
	struct rt_node n;
	struct p5 p;

	p5_open(&n, &km, &p);
	rt_expect(&cc, SIG_GO, "the target's go");
	usleep(100000);		/* let the target go to sleep */
	run_ops(&n, P7_WRITES, 32, p5_write, &p, "writes for fi_cntr_wait");
	itest_signal(&cc, SIG_DONE);
	rt_expect(&cc, SIG_GO, "the target's go for the MR key");
	usleep(100000);
	p.rk = km.k[1];
	run_ops(&n, P7_MR_WRITES, 32, p5_write, &p, "writes with the MR key");
	itest_signal(&cc, SIG_DONE);
	init_close(&n);
}

/* Processes */

/* 8. Keys whose counter binding is gone */

#define P8_LEN		4096
#define P8_AFTER	3	/* operations with the live key at the end */

enum { P8_PLAIN, P8_GONE, P8_LIVE, P8_KEYS };

static void part8_target(void)
{
	uint64_t *buf = rt_guarded(P8_LEN);
	struct fid_cntr *gone = itest_cntr_open(rt_domain());
	struct fid_cntr *live = itest_cntr_open(rt_domain());
	const uint64_t rw = FI_REMOTE_WRITE | FI_REMOTE_READ;
	struct fid_mr *mr[P8_KEYS];
	struct keymsg km = { 0 };
	struct rt_node t;

	mr[P8_PLAIN] = rt_mr_reg(buf, P8_LEN, rw, 0);
	mr[P8_GONE] = rt_mr_reg_cntr(buf, P8_LEN, rw, gone, rw);
	mr[P8_LIVE] = rt_mr_reg_cntr(buf, P8_LEN, rw, live, rw);
	for (int k = 0; k < P8_KEYS; k++)
		km.k[k] = rt_rkey_of(mr[k], buf, P8_LEN);
	target_open(&t, 0, &km, 1);
	rt_expect(&pc[0], SIG_WARM, "a write and a read with each key");
	expect_cntr(gone, 2, "the counter of the registration to be closed");
	expect_cntr(live, 2, "the counter of the live registration");
	RT_OK(fi_close(&mr[P8_GONE]->fid));
	expect_cntr(gone, 2, "a counter whose registration was closed keeps "
		    "its count");
	itest_cntr_close(gone);
	itest_signal(&pc[0], SIG_GO);
	rt_expect(&pc[0], SIG_DONE, "the initiator's operations with keys "
		  "of the closed binding");
	expect_cntr(live, 2 + P8_AFTER, "the live registration's counter: "
		    "only its own key's operations");
	for (int i = 0; i < P8_AFTER; i++)
		EXPECT(buf[16 + i] == stamp(8100 + i), "write %d with the live "
			"key after the errors: 0x%" PRIx64, i, buf[16 + i]);
	rt_guard_check(buf, P8_LEN, "the target's buffer");
	rt_note("8. keys of a closed counter binding: error completions, "
		"nothing counted, the next operations work");
	target_close(&t, 1);
	RT_OK(fi_close(&mr[P8_PLAIN]->fid));
	RT_OK(fi_close(&mr[P8_LIVE]->fid));
	itest_cntr_close(live);
	rt_guarded_free(buf);
}

static ssize_t p8_post(struct rt_node *n, bool read, uint64_t *local,
		       const struct rt_rkey *rk, uint64_t key, uint64_t word)
{
	return read ? fi_read(n->ep, local, 8, NULL, n->peer,
			      rk->addr + word * 8, key, local) :
		      fi_write(n->ep, local, 8, NULL, n->peer,
			       rk->addr + word * 8, key, local);
}

static void p8_ok(struct rt_node *n, bool read, uint64_t *local,
		  const struct rt_rkey *rk, uint64_t word, const char *what)
{
	struct itest_comp c;

	RT_POST(p8_post(n, read, local, rk, rk->key, word), "%s", what);
	c = rt_cq_wait(n->tx, "%s", what);
	RT_EXPECT_COMP(c, local, FI_RMA | (read ? FI_READ : FI_WRITE), 0,
		       "%s", what);
}

/* An error entry at the initiator, its error count, and no other entry. */
static void p8_fail(struct rt_node *n, bool read, const struct rt_rkey *rk,
		    uint64_t key, const char *what)
{
	struct fid_cntr *cntr = read ? n->read_cntr : n->write_cntr;
	uint64_t errs = fi_cntr_readerr(cntr), local = stamp(8000);
	struct fi_cq_err_entry e;

	RT_POST(p8_post(n, read, &local, rk, key, 8), "%s", what);
	e = rt_cq_wait_err(n->tx, "the error entry of %s", what);
	rt_note("   %s: err %d (%s), prov_errno %d", what, e.err,
		fi_strerror(e.err), e.prov_errno);
	EXPECT(e.err > 0 && e.prov_errno != 0, "%s: err %d, prov_errno %d",
		what, e.err, e.prov_errno);
	EXPECT(e.op_context == &local, "%s: op_context %p, expected %p", what,
		e.op_context, (void *) &local);
	rt_cq_expect_empty(n->tx, "after the error of %s", what);
	EXPECT(fi_cntr_readerr(cntr) == errs + 1, "%s: the error count went "
		"from %" PRIu64 " to %" PRIu64, what, errs,
		fi_cntr_readerr(cntr));
}

static void part8_initiator(void)
{
	struct rt_node_opts o = { .tx_errors_ok = true, .write_cntr = true,
				  .read_cntr = true };
	uint64_t local[P8_AFTER + 1], data_rkey, gone_cell, plain_as_cell;
	struct keymsg km;
	struct rt_node n;

	rt_node_open(&n, &o, itest_who);
	rt_chan_read(&cc, &km, sizeof(km), "the target's name and keys");
	rt_node_insert(&n, &km.name);
	for (int k = P8_GONE; k <= P8_LIVE; k++) {
		local[0] = stamp(k);
		p8_ok(&n, false, &local[0], &km.k[k], k, "a write with a "
		      "counted key");
		p8_ok(&n, true, &local[0], &km.k[k], k, "a read with a "
		      "counted key");
	}
	itest_signal(&cc, SIG_WARM);
	rt_expect(&cc, SIG_GO, "the target closing a registration");

	/* Live data rkey, gone cell; gone key; a data rkey as the cell. */
	data_rkey = km.k[P8_PLAIN].key & 0xffffffffu;
	gone_cell = km.k[P8_GONE].key & ~0xffffffffULL;
	plain_as_cell = data_rkey << 32;
	p8_fail(&n, false, &km.k[P8_PLAIN], data_rkey | gone_cell,
		"a write with a live data key and a closed binding's cell");
	p8_fail(&n, true, &km.k[P8_PLAIN], data_rkey | gone_cell,
		"a read with a live data key and a closed binding's cell");
	p8_fail(&n, false, &km.k[P8_GONE], km.k[P8_GONE].key,
		"a write with the closed registration's key");
	p8_fail(&n, false, &km.k[P8_PLAIN], data_rkey | plain_as_cell,
		"a write whose cell part is a data rkey");
	for (int i = 0; i < P8_AFTER; i++) {
		local[i] = stamp(8100 + i);
		p8_ok(&n, false, &local[i], &km.k[P8_LIVE], 16 + i,
		      "a write with the live key after the errors");
	}
	itest_signal(&cc, SIG_DONE);
	init_close(&n);
}

static void initiator(void *arg)
{
	uint64_t me = (uintptr_t) arg;

	cc = rt_initiator_chan(links, NINIT, (int) me);
	rt_expect_idle(&cc, SIG_GO, "the start of part 2");
	part2_initiator(me);
	if (me == 0) {
		part1_producer();
		part3_initiator();
		part4_initiator();
		part5_initiator();
		part6_initiator();
		part7_initiator();
		part8_initiator();
	}
	itest_domain_close();
}

static void run(const char *name, void (*fn)(void))
{
	int64_t t0 = itest_now_ms();

	fn();
	rt_note("   (%s took %.1f s)", name, (itest_now_ms() - t0) / 1000.0);
}

int main(void)
{
	int64_t start = itest_now_ms();

	setvbuf(stdout, NULL, _IOLBF, 0);
	rt_fork_initiators(links, pc, NINIT, initiator);
	for (int i = 0; i < NINIT; i++)
		itest_signal(&pc[i], SIG_GO);
	run("part 2", part2_target);
	run("part 1", part1_consumer);
	run("part 3", part3_target);
	run("part 4", part4_target);
	run("part 5", part5_target);
	run("part 6", part6_target);
	run("part 7", part7_target);
	run("part 8", part8_target);
	itest_wait_kids();
	itest_domain_close();
	rt_pass("nrma_rma_notify", start);
	return 0;
}
