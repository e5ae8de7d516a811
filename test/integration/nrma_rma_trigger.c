/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Triggered operations (fi_trigger(3), FI_TRIGGER_THRESHOLD), in one
 * process: a target endpoint, and an initiator endpoint with FI_TRIGGER.
 *  1. A write posted with FI_TRIGGER on the initiator's write counter,
 *     threshold 2: posting it returns 0 and nothing moves; two plain
 *     writes to the same place bring the counter there, and then it goes,
 *     after them (the target holds its data), completing with its
 *     triggered context, and the counter reads 3.
 *  2. Through an alias with FI_TRANSMIT | FI_TRIGGER: a write, a read, an
 *     atomic add, a send and a tagged send, all held on a counter that
 *     only fi_cntr_add moves.  None goes before the add, all go after it,
 *     and the other side holds what each carried.
 *  3. A threshold already reached: the write goes at once.
 *  4. A held write cancelled (fi_cancel): one FI_ECANCELED entry with its
 *     context, and it never goes; while it was held its counter could not
 *     close (-FI_EBUSY).
 *  5. What cannot be triggered is -FI_EINVAL at once: no context, an event
 *     other than FI_TRIGGER_THRESHOLD, no counter, and the fi_inject calls
 *     (write, atomic, message, tagged) through the triggered alias.
 */
#include <rdma/fi_atomic.h>
#include <rdma/fi_tagged.h>
#include <rdma/fi_trigger.h>

#include "itest_rma.h"

#define LEN	 4096
#define TLEN	 (8 * LEN)
#define MSG_LEN	 100
#define TAG	 7
#define WORD_OFF (5 * LEN) /* the atomic's word */

struct trig_test {
	struct rt_node target, ini;
	struct rt_rkey t;
	unsigned char *tbuf;  /* the target's, registered */
	unsigned char *local; /* the initiator's */
};

static struct fi_triggered_context trig_on(struct fid_cntr *cntr,
					   uint64_t threshold)
{
	return (struct fi_triggered_context){
		.event_type = FI_TRIGGER_THRESHOLD,
		.trigger.threshold = { .cntr = cntr, .threshold = threshold },
	};
}

static ssize_t write_msg(struct trig_test *tt, struct fid_ep *ep, size_t off,
			 const void *src, void *context, uint64_t flags)
{
	struct iovec iov = { .iov_base = (void *) src, .iov_len = LEN };
	struct fi_rma_iov rma = { .addr = tt->t.addr + off,
				  .len = LEN,
				  .key = tt->t.key };
	struct fi_msg_rma msg = { .msg_iov = &iov,
				  .iov_count = 1,
				  .addr = tt->ini.peer,
				  .rma_iov = &rma,
				  .rma_iov_count = 1,
				  .context = context };

	return fi_writemsg(ep, &msg, flags);
}

/* fi_write through the alias: its default flags hold FI_TRIGGER. */
static ssize_t write_alias(struct trig_test *tt, struct fid_ep *alias,
			   size_t off, void *context)
{
	return fi_write(alias, tt->local, LEN, NULL, tt->ini.peer,
			tt->t.addr + off, tt->t.key, context);
}

/* Nothing a held operation would do happened. */
static void expect_held(struct trig_test *tt, const char *what)
{
	itest_idle(200);
	rt_cq_expect_empty(tt->ini.tx, "%s: held", what);
	rt_cq_expect_empty(tt->target.rx, "%s: nothing arrived", what);
}

static void test_threshold(struct trig_test *tt)
{
	struct fi_triggered_context tc = trig_on(tt->ini.write_cntr, 2);
	struct itest_comp c;

	rt_pat_gen(tt->local, 1, 0, LEN);
	rt_pat_gen(tt->local + LEN, 2, 0, LEN);
	RT_OK(write_msg(tt, tt->ini.ep, 0, tt->local, &tc, FI_TRIGGER));
	expect_held(tt, "a write on threshold 2");
	rt_fill_check(tt->tbuf, 0, LEN, "before its threshold");
	for (int i = 0; i < 2; i++) {
		RT_POST(fi_write(tt->ini.ep, tt->local + LEN, LEN, NULL,
				 tt->ini.peer, tt->t.addr, tt->t.key, tt),
			"plain write %d", i);
		c = rt_cq_wait(tt->ini.tx, "plain write %d", i);
		RT_EXPECT_COMP(c, tt, FI_RMA | FI_WRITE, FI_READ, "plain %d",
			       i);
	}
	c = rt_cq_wait(tt->ini.tx, "the triggered write");
	RT_EXPECT_COMP(c, &tc, FI_RMA | FI_WRITE, FI_READ, "triggered");
	rt_pat_check(tt->tbuf, 1, 0, LEN, "the triggered write, last");
	EXPECT(fi_cntr_read(tt->ini.write_cntr) == 3, "write counter %" PRIu64,
	       fi_cntr_read(tt->ini.write_cntr));
}

/* The five kinds through a triggered alias, held on gate. */
static void post_five(struct trig_test *tt, struct fid_ep *alias,
		      struct fi_triggered_context *tc, uint64_t *add)
{
	unsigned char *l = tt->local;
	uint64_t word = tt->t.addr + WORD_OFF;

	RT_OK(fi_write(alias, l, LEN, NULL, tt->ini.peer, tt->t.addr + 2 * LEN,
		       tt->t.key, &tc[0]));
	RT_OK(fi_read(alias, l + LEN, LEN, NULL, tt->ini.peer,
		      tt->t.addr + 3 * LEN, tt->t.key, &tc[1]));
	RT_OK(fi_atomic(alias, add, 1, NULL, tt->ini.peer, word, tt->t.key,
			FI_UINT64, FI_SUM, &tc[2]));
	RT_OK(fi_send(alias, l + 2 * LEN, MSG_LEN, NULL, tt->ini.peer, &tc[3]));
	RT_OK(fi_tsend(alias, l + 3 * LEN, MSG_LEN, NULL, tt->ini.peer, TAG,
		       &tc[4]));
}

static void expect_five(struct trig_test *tt,
			const struct fi_triggered_context *tc,
			const unsigned char *rbuf)
{
	bool seen[5] = { false };

	for (int i = 0; i < 5; i++) {
		struct itest_comp c = rt_cq_wait(tt->ini.tx, "operation %d", i);
		int k = 0;

		while (k < 5 && c.op_context != &tc[k])
			k++;
		EXPECT(k < 5 && !seen[k], "context %p, once", c.op_context);
		seen[k] = true;
	}
	for (int i = 0; i < 2; i++) {
		struct itest_comp c =
			rt_cq_wait(tt->target.rx, "message %d", i);

		EXPECT(c.len == MSG_LEN, "message %d: %zu bytes", i, c.len);
	}
	rt_pat_check(tt->tbuf + 2 * LEN, 3, 0, LEN, "the triggered write");
	rt_pat_check(tt->local + LEN, 4, 0, LEN, "the triggered read");
	EXPECT(*(volatile uint64_t *) (tt->tbuf + WORD_OFF) == 15,
	       "the triggered add: %" PRIu64,
	       *(volatile uint64_t *) (tt->tbuf + WORD_OFF));
	rt_pat_check(rbuf, 5, 0, MSG_LEN, "the triggered send");
	rt_pat_check(rbuf + MSG_LEN, 6, 0, MSG_LEN, "the triggered tsend");
}

static void test_alias(struct trig_test *tt, struct fid_ep *alias,
		       struct fid_cntr *gate)
{
	static unsigned char rbuf[2 * MSG_LEN];
	struct fi_triggered_context tc[5];
	uint64_t add = 5;

	for (int i = 0; i < 5; i++)
		tc[i] = trig_on(gate, 1);
	rt_pat_gen(tt->local, 3, 0, LEN);
	rt_pat_gen(tt->tbuf + 3 * LEN, 4, 0, LEN);
	memset(tt->local + LEN, 0, LEN);
	*(volatile uint64_t *) (tt->tbuf + WORD_OFF) = 10;
	rt_pat_gen(tt->local + 2 * LEN, 5, 0, MSG_LEN);
	rt_pat_gen(tt->local + 3 * LEN, 6, 0, MSG_LEN);
	RT_POST(fi_recv(tt->target.ep, rbuf, MSG_LEN, NULL, FI_ADDR_UNSPEC,
			NULL),
		"the target's receive");
	RT_POST(fi_trecv(tt->target.ep, rbuf + MSG_LEN, MSG_LEN, NULL,
			 FI_ADDR_UNSPEC, TAG, 0, NULL),
		"the target's tagged receive");
	post_five(tt, alias, tc, &add);
	expect_held(tt, "five operations on an unmoved counter");
	rt_fill_check(tt->tbuf + 2 * LEN, 0, LEN, "before the add");
	rt_fill_check(tt->local + LEN, 0, LEN, "the read, before the add");
	RT_OK(fi_cntr_add(gate, 1));
	expect_five(tt, tc, rbuf);
}

static void test_reached(struct trig_test *tt, struct fid_ep *alias,
			 struct fid_cntr *gate)
{
	struct fi_triggered_context tc = trig_on(gate, 1);
	struct itest_comp c;

	rt_pat_gen(tt->local, 7, 0, LEN);
	RT_OK(write_alias(tt, alias, 4 * LEN, &tc));
	c = rt_cq_wait(tt->ini.tx, "a write on a reached threshold");
	RT_EXPECT_COMP(c, &tc, FI_RMA | FI_WRITE, FI_READ, "reached");
	rt_pat_check(tt->tbuf + 4 * LEN, 7, 0, LEN, "a reached threshold");
}

static void test_cancel(struct trig_test *tt, struct fid_ep *alias,
			struct fid_cntr *gate)
{
	struct fi_triggered_context tc = trig_on(gate, 100);
	struct fi_cq_err_entry e;

	memset(tt->tbuf + 6 * LEN, 0, LEN);
	rt_pat_gen(tt->local, 8, 0, LEN);
	RT_OK(write_alias(tt, alias, 6 * LEN, &tc));
	RT_CALL(fi_close(&gate->fid), -FI_EBUSY);
	RT_OK(fi_cancel(&tt->ini.ep->fid, &tc));
	tt->ini.tx->errors_ok = true;
	e = rt_cq_wait_err(tt->ini.tx, "the cancelled write's entry");
	EXPECT(e.err == FI_ECANCELED && e.op_context == &tc,
	       "err %d, context %p", e.err, e.op_context);
	tt->ini.tx->errors_ok = false;
	RT_OK(fi_cntr_add(gate, 200));
	expect_held(tt, "a cancelled write");
	rt_fill_check(tt->tbuf + 6 * LEN, 0, LEN, "a cancelled write");
}

static void test_invalid(struct trig_test *tt, struct fid_ep *alias,
			 struct fid_cntr *gate)
{
	struct fi_triggered_context tc = trig_on(gate, 1);

	RT_CALL(write_msg(tt, tt->ini.ep, 0, tt->local, NULL, FI_TRIGGER),
		-FI_EINVAL);
	tc.event_type = FI_TRIGGER_XPU;
	RT_CALL(write_alias(tt, alias, 0, &tc), -FI_EINVAL);
	tc = trig_on(NULL, 1);
	RT_CALL(write_alias(tt, alias, 0, &tc), -FI_EINVAL);
	RT_CALL(fi_inject_write(alias, tt->local, 8, tt->ini.peer, tt->t.addr,
				tt->t.key),
		-FI_EINVAL);
	RT_CALL(fi_inject_atomic(alias, tt->local, 1, tt->ini.peer,
				 tt->t.addr + WORD_OFF, tt->t.key, FI_UINT64,
				 FI_SUM),
		-FI_EINVAL);
	RT_CALL(fi_inject(alias, tt->local, 8, tt->ini.peer), -FI_EINVAL);
	RT_CALL(fi_tinject(alias, tt->local, 8, tt->ini.peer, TAG), -FI_EINVAL);
	expect_held(tt, "refused operations");
}

int main(void)
{
	struct rt_node_opts ini_opts = { .write_cntr = true };
	int64_t start = itest_now_ms();
	struct trig_test tt = { 0 };
	struct fid_ep *alias;
	struct fid_cntr *gate;
	struct fid_mr *mr;

	rt_init();
	rt_extra_caps = FI_TAGGED | FI_TRIGGER;
	tt.tbuf = rt_guarded(TLEN);
	tt.local = rt_guarded(TLEN);
	memset(tt.tbuf, 0, TLEN);
	rt_node_open(&tt.target, NULL, "target");
	rt_node_open(&tt.ini, &ini_opts, "initiator");
	EXPECT(itest_info->caps & FI_TRIGGER, "caps 0x%" PRIx64,
	       itest_info->caps);
	mr = rt_mr_reg(tt.tbuf, TLEN, FI_REMOTE_WRITE | FI_REMOTE_READ, 0);
	tt.t = rt_rkey_of(mr, tt.tbuf, TLEN);
	rt_node_insert(&tt.ini, &tt.target.name);
	RT_OK(fi_ep_alias(tt.ini.ep, &alias, FI_TRANSMIT | FI_TRIGGER));
	gate = itest_cntr_open(rt_domain());

	itest_step = "a threshold";
	test_threshold(&tt);
	itest_step = "five kinds through a triggered alias";
	test_alias(&tt, alias, gate);
	itest_step = "a threshold reached";
	test_reached(&tt, alias, gate);
	itest_step = "a cancelled trigger";
	test_cancel(&tt, alias, gate);
	itest_step = "what cannot be triggered";
	test_invalid(&tt, alias, gate);

	rt_guard_check(tt.tbuf, TLEN, "the target's buffer");
	RT_OK(fi_close(&alias->fid));
	itest_cntr_close(gate);
	RT_OK(fi_close(&mr->fid));
	rt_node_close(&tt.ini);
	rt_node_close(&tt.target);
	rt_guarded_free(tt.tbuf);
	rt_guarded_free(tt.local);
	rt_pass("nrma_rma_trigger", start);
	return 0;
}
