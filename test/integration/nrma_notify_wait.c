/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Notified RMA and fi_cntr_wait.  The parent is the target, its child the
 * initiator (see itest_notify.h).
 *
 * fi_cntr_wait on the target: returns 0 once remote writes reach the
 * threshold (endpoint- and MR-bound counters), 0 at once when it is
 * reached already, and -FI_ETIMEDOUT after about its timeout when it is
 * not reached.
 */
#include "itest_notify.h"

#define P7_WRITES     500
#define P7_MR_WRITES  100
#define P7_TIMEOUT_MS 1500
#define P7_WAIT_MS    20000

static void target(void)
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
	EXPECT(ret == 0,
	       "fi_cntr_wait(%d, %d ms) on a counter bound to the "
	       "endpoint with FI_REMOTE_WRITE, while the initiator connects "
	       "and writes, returned %d (%s) after %" PRId64 " ms; the "
	       "counter reads %" PRIu64 " (does fi_cntr_wait progress the "
	       "endpoint, e.g. accept its connections?)",
	       P7_WRITES, P7_WAIT_MS, ret, fi_strerror(-ret), el,
	       fi_cntr_read(t.remote_cntr));
	EXPECT(fi_cntr_read(t.remote_cntr) >= P7_WRITES, "%" PRIu64,
	       fi_cntr_read(t.remote_cntr));
	rt_expect(&pc[0], SIG_DONE, "the initiator's writes");
	expect_cntr(t.remote_cntr, P7_WRITES, "after fi_cntr_wait");
	rt_note("fi_cntr_wait(%d) returned 0 after %" PRId64 " ms", P7_WRITES,
		el);

	t0 = itest_now_ms();
	RT_OK(fi_cntr_wait(t.remote_cntr, P7_WRITES, 0));
	RT_OK(fi_cntr_wait(t.remote_cntr, P7_WRITES - 1, 1000));
	EXPECT(itest_now_ms() - t0 < 2000,
	       "a threshold reached already "
	       "returns at once (took %" PRId64 " ms)",
	       itest_now_ms() - t0);

	t0 = itest_now_ms();
	ret = fi_cntr_wait(t.remote_cntr, P7_WRITES + 1000, P7_TIMEOUT_MS);
	el = itest_now_ms() - t0;
	RT_CALL(ret, -FI_ETIMEDOUT);
	EXPECT(el >= P7_TIMEOUT_MS - 50 && el <= P7_TIMEOUT_MS + 8000,
	       "fi_cntr_wait(timeout %d ms) returned -FI_ETIMEDOUT after %" PRId64
	       " ms",
	       P7_TIMEOUT_MS, el);
	rt_note("   fi_cntr_wait(unreachable, %d ms) returned -FI_ETIMEDOUT "
		"after %" PRId64 " ms",
		P7_TIMEOUT_MS, el);

	/* An MR-bound counter, bound to no endpoint. */
	itest_signal(&pc[0], SIG_GO);
	t0 = itest_now_ms();
	ret = fi_cntr_wait(mc, P7_MR_WRITES, P7_WAIT_MS);
	el = itest_now_ms() - t0;
	el_mr = el;
	EXPECT(ret == 0,
	       "fi_cntr_wait(%d) on an MR-bound counter returned "
	       "%d (%s) after %" PRId64 " ms; it reads %" PRIu64,
	       P7_MR_WRITES, ret, fi_strerror(-ret), el, fi_cntr_read(mc));
	rt_expect(&pc[0], SIG_DONE, "the initiator's writes with the MR key");
	expect_cntr(mc, P7_MR_WRITES, "the MR-bound counter");
	expect_cntr(t.remote_cntr, P7_WRITES + P7_MR_WRITES,
		    "the endpoint's "
		    "counter");
	t0 = itest_now_ms();
	ret = fi_cntr_wait(mc, P7_MR_WRITES + 1, 300);
	el = itest_now_ms() - t0;
	RT_CALL(ret, -FI_ETIMEDOUT);
	EXPECT(el >= 250 && el <= 300 + 8000,
	       "-FI_ETIMEDOUT after %" PRId64 " ms (timeout 300 ms)", el);
	rt_note("   fi_cntr_wait on an MR-bound counter: 0 after %" PRId64
		" ms, then -FI_ETIMEDOUT after %" PRId64 " ms (timeout 300)",
		el_mr, el);
	target_close(&t, 1);
	RT_OK(fi_close(&mr->fid));
	RT_OK(fi_close(&emr->fid));
	itest_cntr_close(mc);
	rt_guarded_free(buf);
}

static void initiator(uint64_t me)
{
	struct keymsg km;
	struct rt_node n;
	struct stamps p;

	(void) me;
	stamps_open(&n, &km, &p);
	rt_expect(&cc, SIG_GO, "the target's go");
	usleep(100000); /* let the target go to sleep */
	run_ops(&n, P7_WRITES, 32, stamps_write, &p, "writes for fi_cntr_wait");
	itest_signal(&cc, SIG_DONE);
	rt_expect(&cc, SIG_GO, "the target's go for the MR key");
	usleep(100000);
	p.rk = km.k[1];
	run_ops(&n, P7_MR_WRITES, 32, stamps_write, &p,
		"writes with the MR key");
	itest_signal(&cc, SIG_DONE);
	init_close(&n);
}

int main(void)
{
	return nt_main("nrma_notify_wait", 1, target, initiator);
}
