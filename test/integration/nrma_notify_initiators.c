/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Notified RMA from many initiators to one target.  The parent is the
 * target, its four children the initiators (see itest_notify.h).
 *
 * Four initiators do 2000 notified writes each to one target endpoint:
 * its counter ends at exactly 8000 and stays there.
 */
#include "itest_notify.h"

#define P2_OPS 2000

static void target(void)
{
	const uint64_t total = (uint64_t) NINIT * P2_OPS;
	uint64_t *buf = rt_guarded(total * 8), prev = 0, v;
	struct keymsg km = { 0 };
	struct fid_mr *mr;
	struct rt_node t;
	int64_t start = itest_now_ms(), deadline = itest_deadline();
	int64_t last_check = 0;

	mr = rt_mr_reg(buf, total * 8, FI_REMOTE_WRITE, 0);
	km.k[0] = rt_rkey_of(mr, buf, total * 8);
	target_open(&t, FI_REMOTE_WRITE, &km, NINIT);
	for (int i = 0; i < NINIT; i++)
		rt_expect(&pc[i], SIG_WARM,
			  "initiator %d's first write "
			  "(set-up)",
			  i);
	/* From here on: fi_cntr_read only. */
	while ((v = fi_cntr_read(t.remote_cntr)) != total) {
		int64_t now = itest_now_ms();

		if (v > total || v < prev)
			FAIL("the counter went from %" PRIu64 " to %" PRIu64
			     " (%d x %d writes)",
			     prev, v, NINIT, P2_OPS);
		if (v != prev)
			deadline = itest_deadline();
		prev = v;
		if (now > deadline)
			FAIL("the counter stayed at %" PRIu64 " of %" PRIu64
			     " for %" PRId64 " s",
			     v, total, itest_wait_ms() / 1000);
		if (now - last_check > 50) {
			last_check = now;
			itest_check_kids();
		}
		sched_yield();
	}
	for (int i = 0; i < NINIT; i++)
		rt_expect(&pc[i], SIG_DONE, "initiator %d's completions", i);
	itest_idle(200);
	expect_cntr(t.remote_cntr, total,
		    "%d initiators x %d writes, after "
		    "they all completed and some progress",
		    NINIT, P2_OPS);
	for (uint64_t k = 0; k < NINIT; k++)
		for (uint64_t j = 0; j < P2_OPS; j++)
			EXPECT(buf[k * P2_OPS + j] == stamp(k << 24 | j),
			       "initiator %" PRIu64 "'s write %" PRIu64 ": "
			       "0x%" PRIx64,
			       k, j, buf[k * P2_OPS + j]);
	rt_guard_check(buf, total * 8, "the target's buffer");
	rt_note("%d initiators x %d notified writes: the counter reads "
		"exactly %" PRIu64 " (%.1f s)",
		NINIT, P2_OPS, total, (itest_now_ms() - start) / 1000.0);
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

static void initiator(uint64_t me)
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

int main(void)
{
	return nt_main("nrma_notify_initiators", NINIT, target, initiator);
}
