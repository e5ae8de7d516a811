/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Notified RMA: the counter is never ahead of the data.  The parent is the
 * target (the consumer), its child the initiator (the producer); the
 * remote counter is the one the initiator's fetch-and-add bumps behind
 * each notified operation (see itest_notify.h).
 *
 * Producer/consumer: the producer does ~103,000 notified fi_writes
 * (1 byte to 4 MiB, most of them 8 bytes, each with a sequence stamp and
 * its own place in the consumer's buffer) with a window of outstanding
 * operations.  The consumer calls nothing but fi_cntr_read and, each time
 * the counter moves to c, checks that the first c writes are all in
 * place: the counter is never ahead of the data.
 */
#include "itest_notify.h"

struct phase {
	size_t len; /* 0: cycle through mixed[] */
	size_t count;
};

static const struct phase phases[] = {
	{ 1, 2000 }, { 8, 100000 },  { 4096, 200 }, { 65536, 32 },
	{ MiB, 6 },  { 4 * MiB, 3 }, { 0, 1000 },
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
			size_t nmixed = sizeof(mixed) / sizeof(mixed[0]);
			size_t len = phases[p].len ? phases[p].len :
						     mixed[i % nmixed];

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
		     "counter is ahead of the data",
		     to, from, g, op_len[g], op_off[g], i, got[i], want[i]);
	}
}

static void consume(void)
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
					     " s",
					     v, nops, itest_wait_ms() / 1000);
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
			     " (%" PRIu64 " writes in all)",
			     prev, v, nops);
		consumer_check(img, exp, prev, v);
		moves++;
		if (v - prev > max_jump)
			max_jump = v - prev;
		prev = v;
		deadline = itest_deadline();
	}
	rt_note("consumer: the counter reached %" PRIu64 " in %.1f s "
		"(%.0f writes/s); it moved %" PRIu64 " times (at most %" PRIu64
		" at once) and was never ahead of the data",
		nops, (itest_now_ms() - start) / 1000.0,
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
			g % 2 ? NULL : p->desc, n->peer, p->rk.addr + op_off[g],
			p->rk.key, NULL);
}

static void produce(uint64_t me)
{
	struct keymsg km;
	struct rt_node n;
	struct producer p;
	unsigned char *src;
	struct fid_mr *mr;
	int64_t start;

	(void) me;
	plan();
	src = malloc(img_len);
	CHECK(src != NULL);
	build_image(src);
	mr = rt_mr_reg(src, img_len, FI_WRITE, 0);
	init_open(&n, &km);
	p = (struct producer){ .src = src,
			       .desc = fi_mr_desc(mr),
			       .rk = km.k[0] };
	EXPECT(km.k[0].len == img_len,
	       "the consumer's buffer has %" PRIu64 " bytes, expected %" PRIu64,
	       km.k[0].len, img_len);
	warm_up(&n, producer_post, &p);
	start = itest_now_ms();
	run_ops_from(&n, 1, nops, 64, producer_post, &p,
		     "the producer's writes");
	rt_note("producer: %" PRIu64 " notified writes (%" PRIu64
		" bytes) completed in %.1f s",
		nops, img_len, (itest_now_ms() - start) / 1000.0);
	itest_signal(&cc, SIG_DONE);
	init_close(&n);
	RT_OK(fi_close(&mr->fid));
	free(src);
	free(op_len);
	free(op_off);
}

int main(void)
{
	return NT_MAIN("nrma_notify_order", 1, consume, produce);
}
