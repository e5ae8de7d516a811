/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The helpers of itest_notify.h: set-up, operations in flight and the
 * target/initiators harness of the notified-RMA tests.
 */
#include "itest_notify.h"

struct itest_chan pc[NINIT];
struct itest_chan cc;

static struct itest_link links[NINIT];
static int ninit_;
static void (*initiator_fn)(uint64_t me);

uint64_t stamp(uint64_t g)
{
	return STAMP_MAGIC | (uint32_t) g;
}

void target_open(struct rt_node *t, uint64_t remote_flags,
		 const struct keymsg *km, int npeers)
{
	struct rt_node_opts o = { .remote_flags = remote_flags,
				  .tx_count_only = true };
	struct keymsg m = *km;

	rt_node_open(t, &o, "target");
	m.name = t->name;
	for (int i = 0; i < npeers; i++)
		itest_chan_write(&pc[i], &m, sizeof(m));
}

void target_close(struct rt_node *t, int npeers)
{
	for (int i = 0; i < npeers; i++)
		itest_signal(&pc[i], SIG_PART_OVER);
	rt_node_close(t);
}

void init_open_opts(struct rt_node *n, struct keymsg *km,
		    const struct rt_node_opts *o)
{
	rt_node_open(n, o, itest_who);
	rt_chan_read(&cc, km, sizeof(*km), "the target's name and keys");
	rt_node_insert(n, &km->name);
}

void init_open_remote(struct rt_node *n, struct keymsg *km,
		      uint64_t remote_flags)
{
	/* The write counter sees injected writes, which have no CQ entry. */
	struct rt_node_opts o = { .tx_count_only = true,
				  .write_cntr = true,
				  .remote_flags = remote_flags };

	init_open_opts(n, km, &o);
}

void init_open(struct rt_node *n, struct keymsg *km)
{
	init_open_remote(n, km, 0);
}

void init_close(struct rt_node *n)
{
	rt_expect_idle(&cc, SIG_PART_OVER, "the end of the test");
	rt_node_close(n);
}

void run_ops_from(struct rt_node *n, uint64_t first, uint64_t count,
		  uint64_t window, post_fn post, void *arg, const char *what)
{
	uint64_t base = n->tx->seen - first, last = n->tx->seen;
	int64_t deadline = itest_deadline();

	for (uint64_t i = first; i < count;) {
		ssize_t ret = -FI_EAGAIN;

		if (i - (n->tx->seen - base) < window)
			ret = post(n, i, arg);
		if (ret == -FI_EAGAIN) {
			if (!itest_cq_poll(n->tx))
				sched_yield();
		} else if (ret) {
			FAIL("%s: operation %" PRIu64 " of %" PRIu64 " could "
			     "not be posted: %zd (%s)",
			     what, i, count, ret, fi_strerror((int) -ret));
		} else if (++i % 16 == 0) {
			itest_cq_poll(n->tx);
		}
		if (n->tx->seen != last) {
			last = n->tx->seen;
			deadline = itest_deadline();
		}
		if (itest_now_ms() > deadline)
			FAIL("%s: no completion for %" PRId64 " s; %" PRIu64
			     " of %" PRIu64 " posted, %" PRIu64 " completed",
			     what, itest_wait_ms() / 1000, i, count,
			     n->tx->seen - base);
	}
	while (n->tx->seen - base < count) {
		if (!itest_cq_poll(n->tx))
			sched_yield();
		if (n->tx->seen != last) {
			last = n->tx->seen;
			deadline = itest_deadline();
		}
		if (itest_now_ms() > deadline)
			FAIL("%s: no completion for %" PRId64 " s; %" PRIu64
			     " of %" PRIu64 " completed",
			     what, itest_wait_ms() / 1000, n->tx->seen - base,
			     count);
	}
}

void run_ops(struct rt_node *n, uint64_t count, uint64_t window, post_fn post,
	     void *arg, const char *what)
{
	run_ops_from(n, 0, count, window, post, arg, what);
}

void warm_up(struct rt_node *n, post_fn post, void *arg)
{
	uint64_t done = n->tx->seen;
	int64_t deadline = itest_deadline();

	RT_POST(post(n, 0, arg), "the first operation (connecting)");
	while (n->tx->seen == done) {
		rt_check_deadline(deadline, "the first operation to complete");
		itest_progress();
	}
	itest_signal(&cc, SIG_WARM);
}

ssize_t stamps_write(struct rt_node *n, uint64_t i, void *arg)
{
	struct stamps *p = arg;

	return fi_write(n->ep, &p->src[i % 512], 8, NULL, n->peer,
			p->rk.addr + (i % 512) * 8, p->rk.key, NULL);
}

void stamps_open(struct rt_node *n, struct keymsg *km, struct stamps *p)
{
	for (int i = 0; i < 512; i++)
		p->src[i] = stamp(i);
	init_open(n, km);
	p->rk = km->k[0];
}

/* An initiator: waits for the target's go, runs its side, closes. */
static void initiator_main(void *arg)
{
	uint64_t me = (uintptr_t) arg;

	cc = rt_initiator_chan(links, ninit_, (int) me);
	rt_expect_idle(&cc, SIG_GO, "the start of the test");
	initiator_fn(me);
	itest_domain_close();
}

int nt_main(const char *name, int ninit, void (*target)(void),
	    void (*initiator)(uint64_t me))
{
	int64_t start = itest_now_ms();

	rt_init();
	setvbuf(stdout, NULL, _IOLBF, 0);
	CHECK(ninit >= 1 && ninit <= NINIT);
	ninit_ = ninit;
	initiator_fn = initiator;
	rt_fork_initiators(links, pc, ninit, initiator_main);
	for (int i = 0; i < ninit; i++)
		itest_signal(&pc[i], SIG_GO);
	target();
	itest_wait_kids();
	itest_domain_close();
	rt_pass(name, start);
	return 0;
}
