/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Notified RMA and the target's own counter updates.  The parent is the
 * target, its child the initiator (see itest_notify.h).
 *
 * fi_cntr_set and fi_cntr_add on the target while remote writes land
 * keep the value exact.  So do bindings that come and go meanwhile: a
 * thread registers memory regions bound to the counter and closes them
 * (each binding adds a notification word the counter sums, each close
 * moves that word's count into the counter's bias) while the target
 * reads the counter without a break, and no read may go backwards.
 */
#include <pthread.h>
#include <stdatomic.h>

#include "itest_notify.h"

#define P5_WARM 300
#define P5_M1	2000
#define P5_M2	2000
#define P5_M3	2000
#define P5_MRS	5 /* bindings open at once: the counter's words grow */

struct churn {
	struct fid_cntr *cntr;
	uint64_t *buf;
	atomic_bool stop;
	unsigned long rounds;
};

static void *churn_bindings(void *arg)
{
	struct churn *ch = arg;

	while (!atomic_load(&ch->stop)) {
		struct fid_mr *mr[P5_MRS];

		for (int i = 0; i < P5_MRS; i++)
			mr[i] = rt_mr_reg_cntr(ch->buf + i, 8, FI_REMOTE_WRITE,
					       ch->cntr, FI_REMOTE_WRITE);
		/* Not in the order they came: words leave from the middle. */
		for (int i = 0; i < P5_MRS; i++)
			RT_OK(fi_close(&mr[(i * 2) % P5_MRS]->fid));
		ch->rounds++;
	}
	return NULL;
}

/* Reads the counter until it reaches want; no read below the one before. */
static void read_rising(struct fid_cntr *c, uint64_t want)
{
	int64_t deadline = itest_deadline();
	uint64_t last = 0, v;

	while ((v = fi_cntr_read(c)) < want) {
		EXPECT(v >= last,
		       "the counter went from %" PRIu64 " back to %" PRIu64,
		       last, v);
		last = v;
		rt_check_deadline(deadline, "the count to reach %" PRIu64,
				  want);
	}
}

/* Phase 3: set(0), then writes while bindings come and go. */
static void target_churn(struct fid_cntr *c)
{
	struct churn ch = { .cntr = c, .buf = rt_guarded(4096) };
	pthread_t thread;

	RT_OK(fi_cntr_set(c, 0));
	RT_OK(pthread_create(&thread, NULL, churn_bindings, &ch));
	itest_signal(&pc[0], SIG_GO);
	read_rising(c, P5_M3);
	rt_expect(&pc[0], SIG_DONE, "%d writes while bindings change", P5_M3);
	atomic_store(&ch.stop, true);
	RT_OK(pthread_join(thread, NULL));
	expect_cntr(c, P5_M3,
		    "%d writes while %lu rounds of %d bindings came and went",
		    P5_M3, ch.rounds, P5_MRS);
	EXPECT(ch.rounds > 0, "no binding came and went");
	rt_note("bindings that came and went while writes landed: exact, "
		"%lu rounds of %d",
		ch.rounds, P5_MRS);
	rt_guarded_free(ch.buf);
}

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
	target_churn(c);
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
	rt_expect(&cc, SIG_GO, "the target's bindings to come and go");
	run_ops(&n, P5_M3, 32, stamps_write, &p,
		"writes while bindings change");
	itest_signal(&cc, SIG_DONE);
	init_close(&n);
}

int main(void)
{
	return nt_main("nrma_notify_cntr_set", 1, target, initiator);
}
