/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Notified RMA with MR-bound counters.  The parent is the target, its
 * child the initiator (see itest_notify.h).
 *
 * MR-bound counters: one buffer registered four times with FI_RMA_EVENT,
 * each bound to its own counter (three for FI_REMOTE_WRITE |
 * FI_REMOTE_READ, one for FI_REMOTE_WRITE only), and once plainly.
 * Operations with key k bump counter k only, once each; the target makes
 * no progress call at all meanwhile (the counters are bound to no
 * endpoint); an endpoint-bound FI_REMOTE_WRITE counter counts every
 * write.
 */
#include "itest_notify.h"

#define P4_MRS		4 /* 0-2: write + read, 3: write only */
#define P4_PLAIN	4 /* the key of the plain registration */
#define P4_SLOTS	64
#define P4_PLAIN_WRITES 5

static const uint64_t p4_writes[P4_MRS + 1] = { 10, 15, 20, 12,
						P4_PLAIN_WRITES };
static const uint64_t p4_reads[P4_MRS + 1] = { 4, 7, 10, 6, 3 };

static uint64_t p4_slot(uint64_t k, uint64_t r)
{
	return k * P4_SLOTS + r;
}

static void target(void)
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
		uint64_t bind = k < 3 ? FI_REMOTE_WRITE | FI_REMOTE_READ :
					FI_REMOTE_WRITE;

		cntr[k] = itest_cntr_open(rt_domain());
		mr[k] = rt_mr_reg_cntr(buf, len,
				       FI_REMOTE_WRITE | FI_REMOTE_READ,
				       cntr[k], bind);
		km.k[k] = rt_rkey_of(mr[k], buf, len);
		want[k] = p4_writes[k] + (k < 3 ? p4_reads[k] : 0);
	}
	mr[P4_PLAIN] = rt_mr_reg(buf, len, FI_REMOTE_WRITE | FI_REMOTE_READ, 0);
	km.k[P4_PLAIN] = rt_rkey_of(mr[P4_PLAIN], buf, len);
	for (int i = 0; i <= P4_MRS; i++)
		for (int j = 0; j < i; j++)
			EXPECT(km.k[i].key != km.k[j].key,
			       "registrations %d "
			       "and %d have the same key 0x%" PRIx64,
			       i, j, km.k[i].key);
	for (int k = 0; k <= P4_MRS; k++)
		all_writes += p4_writes[k];
	target_open(&t, FI_REMOTE_WRITE, &km, 1);
	rt_expect(&pc[0], SIG_WARM, "the initiator's first write");
	expect_cntr(t.remote_cntr, 1,
		    "the endpoint's counter after a write "
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
				     "its key",
				     k, v, want[k]);
			reached = reached && v == want[k];
		}
		if (itest_now_ms() > deadline)
			FAIL("the MR counters read %" PRIu64 " %" PRIu64
			     " %" PRIu64 " %" PRIu64 ", expected %" PRIu64
			     " %" PRIu64 " %" PRIu64 " %" PRIu64
			     " (no progress "
			     "call meanwhile)",
			     fi_cntr_read(cntr[0]), fi_cntr_read(cntr[1]),
			     fi_cntr_read(cntr[2]), fi_cntr_read(cntr[3]),
			     want[0], want[1], want[2], want[3]);
		sched_yield();
	}
	rt_expect_idle(&pc[0], SIG_DONE, "the initiator's operations");
	for (int k = 0; k < P4_MRS; k++) {
		expect_cntr(cntr[k], want[k],
			    "MR counter %d (key %d only: %" PRIu64
			    " writes, %" PRIu64 " reads%s)",
			    k, k, p4_writes[k], p4_reads[k],
			    k < 3 ? "" : ", not counted");
		EXPECT(fi_cntr_readerr(cntr[k]) == 0, "no errors");
	}
	expect_cntr(t.remote_cntr, 1 + all_writes,
		    "the endpoint's "
		    "FI_REMOTE_WRITE counter: every write, whatever its key");
	for (uint64_t k = 0; k <= P4_MRS; k++)
		for (uint64_t r = 0; r < p4_writes[k]; r++)
			EXPECT(buf[p4_slot(k, r)] == stamp(k << 16 | r),
			       "write %" PRIu64 " with key %" PRIu64
			       ": 0x%" PRIx64,
			       r, k, buf[p4_slot(k, r)]);
	rt_guard_check(buf, len, "the target's buffer");
	rt_note("MR-bound counters: each counts only its key's "
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
	uint64_t order[128][2]; /* (key, index), interleaved */
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

static void initiator(uint64_t me)
{
	struct keymsg km;
	struct rt_node n;
	struct p4 *p = calloc(1, sizeof(*p));
	uint64_t warm = stamp(0xffff);

	(void) me;
	CHECK(p != NULL);
	p->km = &km;
	for (uint64_t k = 0; k <= P4_MRS; k++)
		for (uint64_t r = 0; r < P4_SLOTS; r++)
			p->src[p4_slot(k, r)] = stamp(k << 16 | r);
	init_open(&n, &km);
	/* Connect with a write through the plain key, to a slot not used. */
	RT_POST(fi_write(n.ep, &warm, 8, NULL, n.peer,
			 km.k[P4_PLAIN].addr + p4_slot(P4_PLAIN, 63) * 8,
			 km.k[P4_PLAIN].key, NULL),
		"the first write");
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
		       "read %" PRIu64 " with key %" PRIu64 ": 0x%" PRIx64, r,
		       k, p->dst[p4_slot(k, r)]);
	}
	itest_signal(&cc, SIG_DONE);
	init_close(&n);
	free(p);
}

int main(void)
{
	return NT_MAIN("nrma_notify_mr_cntrs", 1, target, initiator);
}
