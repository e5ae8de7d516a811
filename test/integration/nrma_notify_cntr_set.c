/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Notified RMA and the target's own counter updates.  The parent is the
 * target, its child the initiator (see itest_notify.h).
 *
 * fi_cntr_set and fi_cntr_add on the target while remote writes land
 * keep the value exact.
 */
#include "itest_notify.h"

#define P5_WARM 300
#define P5_M1	2000
#define P5_M2	2000

static void target(void)
{
	uint64_t *buf = rt_guarded(4096);
	struct keymsg km = { 0 };
	struct fid_mr *mr;
	struct rt_node t;
	struct fid_cntr *c;
	struct {
		uint64_t at; /* add when the count is at this */
		uint64_t add;
		uint64_t seen; /* the count when it was added */
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
			rt_check_deadline(deadline,
					  "the count to reach %" PRIu64,
					  adds[i].at + bias);
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
			rt_check_deadline(deadline,
					  "the count to reach %" PRIu64,
					  adds[2].at);
			itest_progress();
		}
		RT_OK(fi_cntr_add(c, adds[2].add));
		adds[2].seen = v - 1000;
	}
	rt_expect(&pc[0], SIG_DONE, "%d writes after the second set", P5_M2);
	expect_cntr(c, 1000 + P5_M2 + adds[2].add,
		    "set(1000), %d writes and "
		    "add(7)",
		    P5_M2);
	itest_idle(100);
	expect_cntr(c, 1000 + P5_M2 + adds[2].add, "after some progress");
	EXPECT(fi_cntr_readerr(c) == 0, "no counter errors");
	rt_note("set/add while writes land: exact (adds after %" PRIu64
		", %" PRIu64 " of %d and %" PRIu64 " of %d writes)",
		adds[0].seen, adds[1].seen, P5_M1, adds[2].seen, P5_M2);
	target_close(&t, 1);
	RT_OK(fi_close(&mr->fid));
	rt_guarded_free(buf);
}

static void initiator(uint64_t me)
{
	struct keymsg km;
	struct rt_node n;
	struct stamps p;

	(void) me;
	stamps_open(&n, &km, &p);
	run_ops(&n, P5_WARM, 32, stamps_write, &p, "the first writes");
	itest_signal(&cc, SIG_DONE);
	rt_expect(&cc, SIG_GO, "the target's fi_cntr_set(0)");
	run_ops(&n, P5_M1, 32, stamps_write, &p, "writes after set(0)");
	itest_signal(&cc, SIG_DONE);
	rt_expect(&cc, SIG_GO, "the target's fi_cntr_set(1000)");
	run_ops(&n, P5_M2, 32, stamps_write, &p, "writes after set(1000)");
	itest_signal(&cc, SIG_DONE);
	init_close(&n);
}

int main(void)
{
	return nt_main("nrma_notify_cntr_set", 1, target, initiator);
}
