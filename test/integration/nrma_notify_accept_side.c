/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Notified RMA from the side that accepted the connection.  The parent is
 * the target, its child the initiator (see itest_notify.h).
 *
 * The other way: the initiator's endpoint has the remote counter and the
 * target writes to and reads from it over the connection that the
 * initiator made (the accepting side learned the counter's word from the
 * connection request).
 */
#include "itest_notify.h"

#define P6_WRITES 50
#define P6_READS  20
#define P6_LEN	  65536 /* reads from the first half */

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

static void target(void)
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
	rt_chan_read(&pc[0], &theirs, sizeof(theirs),
		     "the initiator's name "
		     "and key");
	rt_expect(&pc[0], SIG_WARM, "the initiator's connection");
	rt_node_insert(&t, &theirs.name); /* the connection it made */
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
	expect_cntr(t.remote_cntr, 1,
		    "the target's own counter (the "
		    "initiator's one write)");
	rt_note("the other way: the accepting side's notified writes and "
		"reads bump the connecting side's counter");
	target_close(&t, 1);
	RT_OK(fi_close(&mr->fid));
	free(p);
}

static void initiator(uint64_t me)
{
	unsigned char *buf = rt_guarded(P6_LEN);
	uint64_t one = stamp(1);
	struct keymsg km, mine = { 0 };
	struct fid_mr *mr;
	struct rt_node n;

	(void) me;
	rt_pat_gen(buf, 6000, 0, P6_LEN / 2);
	mr = rt_mr_reg(buf, P6_LEN, FI_REMOTE_WRITE | FI_REMOTE_READ, 0);
	init_open_remote(&n, &km, FI_REMOTE_WRITE | FI_REMOTE_READ);
	mine.name = n.name;
	mine.k[0] = rt_rkey_of(mr, buf, P6_LEN);
	itest_chan_write(&cc, &mine, sizeof(mine));
	/* We connect, and the target will use this connection. */
	RT_POST(fi_write(n.ep, &one, 8, NULL, n.peer, km.k[0].addr, km.k[0].key,
			 NULL),
		"the first write (connecting)");
	while (n.tx->seen < 1)
		itest_progress();
	itest_signal(&cc, SIG_WARM);
	rt_expect(&cc, SIG_DONE, "the target's writes and reads");
	expect_cntr(n.remote_cntr, P6_WRITES + P6_READS,
		    "the initiator's "
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

int main(void)
{
	return nt_main("nrma_notify_accept_side", 1, target, initiator);
}
