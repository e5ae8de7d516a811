/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Notified RMA with each kind of operation.  The parent is the target,
 * its child the initiator (see itest_notify.h).
 *
 * Reads bump the target's counter (bound FI_REMOTE_WRITE |
 * FI_REMOTE_READ, once per operation) and read the right data, and so do
 * fi_write, fi_writemsg(FI_DELIVERY_COMPLETE), fi_inject_write and
 * fi_writedata (whose CQ data reaches the target's rx CQ too); the count
 * is exact as soon as the initiator has its completions; data the target
 * overwrites once the counter moved was read before.
 *
 * Built a second time as nrma_notify_ops_always, with every notification
 * atomic fenced (FI_NRMA_NOTIFY_FENCE=always): a fence waits for what is
 * before it, so the same checks must hold, and nothing may wait forever;
 * and as nrma_notify_ops_coalesce (NT_MAIN).
 */
#include "itest_notify.h"

#define P3_READS  120
#define P3_WRITES 100
#define P3_RACES  8
#define P3_DC	  3  /* fi_writemsg(FI_DELIVERY_COMPLETE) */
#define P3_INJECT 10 /* fi_inject_write */
#define P3_DATA	  2  /* fi_writedata */
#define P3_OTHER  (P3_DC + P3_INJECT + P3_DATA)
#define P3_MORE	  (2 * MiB + 16384) /* where those land */

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
#define P3_LEN (4 * MiB) /* reads from the first half */

static const size_t p3_lens[12] = {
	8, 4096, 65536, 1, 9000, 100, 8, 4096, MiB, 16, 8193, 512,
};

static uint64_t p3_off(uint64_t i)
{
	return (i * 4099) % (2 * MiB - p3_lens[i % 12]);
}

static void target(void)
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
	expect_cntr(t.remote_cntr, P3_READS + P3_WRITES,
		    "%d reads and %d "
		    "writes (one counter bound for both)",
		    P3_READS, P3_WRITES);
	for (uint64_t i = 0; i < P3_WRITES; i++)
		rt_pat_check(buf + 2 * MiB + i * 64, 3100 + i, 0, 64,
			     "write %" PRIu64, i);
	rt_pat_check(buf, 3000, 0, 2 * MiB, "the data the initiator read");
	itest_signal(&pc[0], SIG_GO);
	rt_expect(&pc[0], SIG_DONE, "the initiator's other writes");
	expect_cntr(t.remote_cntr, P3_READS + P3_WRITES + P3_OTHER,
		    "after "
		    "%d fi_writemsg(FI_DELIVERY_COMPLETE), %d fi_inject_write "
		    "and %d fi_writedata",
		    P3_DC, P3_INJECT, P3_DATA);
	for (int i = 0; i < P3_OTHER; i++)
		rt_pat_check(buf + P3_MORE + p3_other_off(i), 3200 + i, 0,
			     p3_other_len(i), "notified write %d (%s)", i,
			     i < P3_DC		   ? "delivery complete" :
			     i < P3_DC + P3_INJECT ? "inject" :
						     "writedata");
	for (int i = 0; i < P3_DATA; i++) {
		struct itest_comp c = rt_cq_wait(t.rx,
						 "the rx CQ entry of "
						 "fi_writedata %d",
						 i);

		RT_EXPECT_COMP(
			c, NULL, FI_RMA | FI_REMOTE_WRITE | FI_REMOTE_CQ_DATA,
			FI_RECV | FI_MSG, "fi_writedata %d at the target", i);
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
			rt_check_deadline(
				deadline,
				"race read %" PRIu64 " to bump the counter", i);
			sched_yield();
		}
		/* Too late to be read. */
		rt_pat_gen(buf, seed + 1000, 0, MiB);
		expect_cntr(t.remote_cntr, base + i + 1, "race read %" PRIu64,
			    i);
		itest_signal(&pc[0], SIG_GO);
	}
	rt_expect(&pc[0], SIG_DONE, "the initiator's checks");
	EXPECT(fi_cntr_readerr(t.remote_cntr) == 0, "no counter errors");
	rt_guard_check(buf, P3_LEN, "the target's buffer");
	rt_note("notified reads: counted once each, with their data");
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
static void other_writes(struct rt_node *n, struct p3 *p)
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
			struct fi_rma_iov rma = { .addr = raddr,
						  .len = len,
						  .key = p->rk.key };
			struct fi_msg_rma msg = {
				.msg_iov = &iov,
				.desc = &desc,
				.iov_count = 1,
				.addr = n->peer,
				.rma_iov = &rma,
				.rma_iov_count = 1,
			};

			RT_POST(fi_writemsg(n->ep, &msg,
					    FI_DELIVERY_COMPLETE |
						    FI_COMPLETION),
				"notified fi_writemsg(FI_DELIVERY_COMPLETE)");
			done++;
		} else if (i < P3_DC + P3_INJECT) {
			RT_POST(fi_inject_write(n->ep, src, len, n->peer, raddr,
						p->rk.key),
				"notified fi_inject_write");
			memset(src, 0, len); /* ours again at once */
		} else {
			RT_POST(fi_writedata(n->ep, src, len, desc,
					     0xda7a0000u +
						     (i - P3_DC - P3_INJECT),
					     n->peer, raddr, p->rk.key, NULL),
				"notified fi_writedata");
			done++;
		}
		/* Each completes (or, injected, counts) before the next. */
		deadline = itest_deadline();
		while (n->tx->seen < done ||
		       fi_cntr_read(n->write_cntr) <
			       P3_WRITES + (uint64_t) i + 1) {
			rt_check_deadline(deadline,
					  "notified write %d to "
					  "complete",
					  i);
			itest_progress();
		}
	}
	EXPECT(fi_cntr_read(n->write_cntr) == P3_WRITES + P3_OTHER &&
		       fi_cntr_readerr(n->write_cntr) == 0,
	       "the write counter reads "
	       "%" PRIu64 " (errors %" PRIu64 ")",
	       fi_cntr_read(n->write_cntr), fi_cntr_readerr(n->write_cntr));
	RT_OK(fi_close(&mr->fid));
	free(src);
}

static void initiator(uint64_t me)
{
	uint64_t dst_off[P3_READS], total = 0;
	struct keymsg km;
	struct rt_node n;
	struct fid_mr *mr;
	struct p3 p;

	(void) me;
	for (uint64_t i = 0; i < P3_READS; i++) {
		dst_off[i] = total;
		total += p3_lens[i % 12];
	}
	p = (struct p3){ .dst = malloc(total),
			 .dst_off = dst_off,
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
			     p3_lens[i % 12], "read %" PRIu64 " (%zu bytes)", i,
			     p3_lens[i % 12]);
	itest_signal(&cc, SIG_DONE);
	rt_expect(&cc, SIG_GO, "the target's check of the reads");
	for (uint64_t i = 0; i < P3_WRITES; i++)
		rt_pat_gen(p.src + i * 64, 3100 + i, 0, 64);
	run_ops(&n, P3_WRITES, 32, p3_write, &p, "notified writes");
	itest_signal(&cc, SIG_DONE);
	rt_expect(&cc, SIG_GO, "the target's check of the writes");
	other_writes(&n, &p);
	itest_signal(&cc, SIG_DONE);

	for (uint64_t i = 0; i < P3_RACES; i++) {
		uint64_t seed, done = n.tx->seen;
		int64_t deadline = itest_deadline();

		rt_chan_read(&cc, &seed, sizeof(seed), "race %" PRIu64, i);
		memset(p.dst, 0, MiB);
		RT_POST(fi_read(n.ep, p.dst, MiB, p.desc, n.peer, p.rk.addr,
				p.rk.key, NULL),
			"race read %" PRIu64, i);
		while (n.tx->seen == done) {
			rt_check_deadline(deadline, "race read %" PRIu64, i);
			itest_progress();
		}
		rt_expect(&cc, SIG_GO, "the target's overwrite");
		rt_pat_check(p.dst, seed, 0, MiB,
			     "race read %" PRIu64 ": the "
			     "data from before the counter moved",
			     i);
	}
	itest_signal(&cc, SIG_DONE);
	init_close(&n);
	RT_OK(fi_close(&mr->fid));
	free(p.dst);
	free(p.src);
}

int main(void)
{
#ifdef NT_FENCE_ALWAYS
	setenv("FI_NRMA_NOTIFY_FENCE", "always", 1);
	return nt_main("nrma_notify_ops_always", 1, target, initiator);
#else
	return NT_MAIN("nrma_notify_ops", 1, target, initiator);
#endif
}
