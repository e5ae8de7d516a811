/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Coalesced notifications (FI_NRMA_NOTIFY_COALESCE=8).  The parent is the
 * target, its child the initiator (see itest_notify.h); write g carries
 * stamp(g) to word g of the target's buffer.
 *
 * 1. Bursts: the initiator posts 8 notified writes at a time, with no
 *    progress call between them, so one atomic of +8 announces them.  The
 *    target, which only reads its counter, sees it move by 8 at once and
 *    never ahead of the data (the last write a value counts is in place).
 * 2. A pause: 3 writes, then the initiator only waits.  Their atomic goes
 *    once the writes have completed; the counter is exact as soon as the
 *    initiator has their completions.
 * 3. The target goes: 5 writes posted, then the target closes its
 *    endpoint before the initiator makes a progress call.  Their atomic
 *    cannot reach it: each write ends in exactly one error entry.
 */
#include "itest_notify.h"

#define NC_K	   8 /* FI_NRMA_NOTIFY_COALESCE */
#define NC_BURSTS  50
#define NC_PAUSE   3
#define NC_ORPHANS 5
#define NC_WORDS   (1 + NC_BURSTS * NC_K + NC_PAUSE + NC_ORPHANS)

/* Reads the counter until it reaches want; each value it shows is 1 (the
 * warm-up write) plus whole bursts, and its last write is in place. */
static void watch_bursts(struct fid_cntr *cntr, const uint64_t *buf,
			 uint64_t want)
{
	int64_t deadline = itest_deadline();
	uint64_t last = 1;

	while (last != want) {
		uint64_t v = fi_cntr_read(cntr);

		if (v == last) {
			rt_check_deadline(deadline,
					  "the counter at %" PRIu64
					  ", expected %" PRIu64,
					  v, want);
			sched_yield();
			continue;
		}
		if (v > want || (v - 1) % NC_K)
			FAIL("the counter moved from %" PRIu64 " to %" PRIu64
			     ": not by whole bursts of %d",
			     last, v, NC_K);
		EXPECT(buf[v - 1] == stamp(v - 1),
		       "the counter reads %" PRIu64 " before write %" PRIu64
		       " is in place (0x%" PRIx64 ")",
		       v, v - 1, buf[v - 1]);
		last = v;
	}
}

static void target(void)
{
	uint64_t *buf = rt_guarded(NC_WORDS * 8);
	uint64_t bursts = 1 + NC_BURSTS * NC_K;
	struct keymsg km = { 0 };
	struct fid_mr *mr;
	struct rt_node t;

	mr = rt_mr_reg(buf, NC_WORDS * 8, FI_REMOTE_WRITE, 0);
	km.k[0] = rt_rkey_of(mr, buf, NC_WORDS * 8);
	target_open(&t, FI_REMOTE_WRITE, &km, 1);
	rt_expect(&pc[0], SIG_WARM, "the initiator's first write");
	expect_cntr(t.remote_cntr, 1, "the warm-up write, once completed");

	itest_signal(&pc[0], SIG_GO);
	watch_bursts(t.remote_cntr, buf, bursts);
	rt_expect_idle(&pc[0], SIG_DONE, "the bursts");
	expect_cntr(t.remote_cntr, bursts, "%d bursts of %d", NC_BURSTS, NC_K);

	itest_signal(&pc[0], SIG_GO);
	rt_expect_idle(&pc[0], SIG_DONE, "the writes before the pause");
	expect_cntr(t.remote_cntr, bursts + NC_PAUSE,
		    "%d writes and a pause, once completed", NC_PAUSE);
	for (uint64_t g = 0; g < bursts + NC_PAUSE; g++)
		EXPECT(buf[g] == stamp(g), "write %" PRIu64 ": 0x%" PRIx64, g,
		       buf[g]);
	rt_guard_check(buf, NC_WORDS * 8, "the target's buffer");

	itest_signal(&pc[0], SIG_GO);
	rt_expect_idle(&pc[0], SIG_DONE, "the last writes, posted");
	rt_node_close(&t);
	RT_OK(fi_close(&mr->fid));
	itest_signal(&pc[0], SIG_GO);
	rt_expect_idle(&pc[0], SIG_DONE, "the last writes' errors");
	itest_signal(&pc[0], SIG_PART_OVER);
	rt_note("coalesced notifications: whole bursts, never ahead of the "
		"data, exact at completion, errors when the target goes");
	rt_guarded_free(buf);
}

struct nc {
	uint64_t src[NC_WORDS];
	struct rt_rkey rk;
	int ctx[NC_WORDS];
};

static ssize_t nc_write(struct rt_node *n, uint64_t g, void *arg)
{
	struct nc *p = arg;

	return fi_write(n->ep, &p->src[g], 8, NULL, n->peer, p->rk.addr + g * 8,
			p->rk.key, &p->ctx[g]);
}

/* Writes first..first+count-1, with no progress call between them. */
static void nc_post(struct rt_node *n, struct nc *p, uint64_t first,
		    uint64_t count)
{
	for (uint64_t g = first; g < first + count; g++) {
		ssize_t ret = nc_write(n, g, p);

		EXPECT(ret == 0, "write %" PRIu64 ": %zd (%s)", g, ret,
		       fi_strerror((int) -ret));
	}
}

static void nc_complete(struct rt_node *n, uint64_t want, const char *what)
{
	int64_t deadline = itest_deadline();

	while (n->tx->seen < want) {
		rt_check_deadline(deadline, "%s to complete", what);
		itest_progress();
	}
}

/* Each of the writes ends in one error entry; nothing else comes. */
static void nc_orphans(struct rt_node *n, struct nc *p, uint64_t first)
{
	bool seen[NC_ORPHANS] = { false };

	for (int i = 0; i < NC_ORPHANS; i++) {
		struct fi_cq_err_entry e =
			itest_cq_wait_err_at(__FILE__, __LINE__, n->tx, true,
					     "a write whose target went");
		int g = (int *) e.op_context - p->ctx - (int) first;

		EXPECT(g >= 0 && g < NC_ORPHANS && !seen[g],
		       "error entry %d: context %p is none of the writes "
		       "still owed (or came twice)",
		       i, e.op_context);
		EXPECT(e.err != 0, "error entry %d has an error code", i);
		seen[g] = true;
	}
	itest_cq_expect_empty_at(__FILE__, __LINE__, n->tx, 500,
				 "each write ended once");
}

static void initiator(uint64_t me)
{
	struct rt_node_opts o = { .tx_count_only = true, .tx_errors_ok = true };
	struct nc *p = calloc(1, sizeof(*p));
	uint64_t g = 1;
	struct keymsg km;
	struct rt_node n;

	(void) me;
	CHECK(p != NULL);
	for (uint64_t i = 0; i < NC_WORDS; i++)
		p->src[i] = stamp(i);
	rt_node_open(&n, &o, itest_who);
	rt_chan_read(&cc, &km, sizeof(km), "the target's name and keys");
	rt_node_insert(&n, &km.name);
	p->rk = km.k[0];
	warm_up(&n, nc_write, p);

	rt_expect(&cc, SIG_GO, "the target's go for the bursts");
	for (int b = 0; b < NC_BURSTS; b++, g += NC_K) {
		nc_post(&n, p, g, NC_K);
		nc_complete(&n, g + NC_K, "a burst");
	}
	itest_signal(&cc, SIG_DONE);

	rt_expect(&cc, SIG_GO, "the target's go for the pause");
	nc_post(&n, p, g, NC_PAUSE);
	nc_complete(&n, g + NC_PAUSE, "the writes before the pause");
	g += NC_PAUSE;
	itest_signal(&cc, SIG_DONE);

	rt_expect(&cc, SIG_GO, "the target's go for the last writes");
	nc_post(&n, p, g, NC_ORPHANS);
	itest_signal(&cc, SIG_DONE);
	rt_expect_idle(&cc, SIG_GO, "the target's endpoint closed");
	nc_orphans(&n, p, g);
	itest_signal(&cc, SIG_DONE);
	init_close(&n);
	free(p);
}

int main(void)
{
	setenv("FI_NRMA_NOTIFY_COALESCE", "8", 1);
	return nt_main("nrma_notify_coalesce", 1, target, initiator);
}
