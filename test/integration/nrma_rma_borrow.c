/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Transfers with no descriptor (no FI_MR_LOCAL, as Sandia OpenSHMEM's)
 * whose buffers lie in the application's own registrations: the provider
 * may borrow those, but only where the device may do what the transfer
 * needs, and a registration closed while a transfer uses it stays the
 * transfer's until it ends.  Each case moves megabytes, long enough on
 * Soft-RoCE for fi_close to come while the device is still at work.
 *   - A write from a registration made for local reads of the device
 *     alone (FI_WRITE), closed at once: it lands whole.
 *   - A read into such a registration, which the device may not write:
 *     the read lands whole all the same.
 *   - A read into a registration made for FI_READ, closed at once.
 *   - A write from a buffer only half inside a registration.
 * One process, its endpoint its own peer; nothing else runs.
 */
#include "itest_rma.h"

#define LEN (4u << 20)

static struct rt_node n;

struct borrow_mem {
	uint8_t *target; /* the peer's, registered for remote access */
	uint8_t *local;	 /* where the cases read from or land */
	struct rt_rkey k;
};

static void borrow_wait(void *ctx, uint64_t flags, const char *what)
{
	struct itest_comp c = rt_cq_wait(n.tx, "%s", what);

	RT_EXPECT_COMP(c, ctx, flags, FI_MSG, "%s", what);
}

static void borrow_write(struct borrow_mem *m, void *src, uint64_t seed,
			 struct fid_mr *close_at_once, const char *what)
{
	memset(m->target, 0, LEN);
	rt_pat_gen(src, seed, 0, LEN);
	RT_POST(fi_write(n.ep, src, LEN, NULL, n.peer, m->k.addr, m->k.key, m),
		"%s", what);
	if (close_at_once)
		RT_OK(fi_close(&close_at_once->fid));
	borrow_wait(m, FI_RMA | FI_WRITE, what);
	rt_pat_check(m->target, seed, 0, LEN, "%s: what landed", what);
}

static void borrow_read(struct borrow_mem *m, uint64_t seed,
			struct fid_mr *close_at_once, const char *what)
{
	memset(m->local, 0, LEN);
	rt_pat_gen(m->target, seed, 0, LEN);
	RT_POST(fi_read(n.ep, m->local, LEN, NULL, n.peer, m->k.addr, m->k.key,
			m),
		"%s", what);
	if (close_at_once)
		RT_OK(fi_close(&close_at_once->fid));
	borrow_wait(m, FI_RMA | FI_READ, what);
	rt_pat_check(m->local, seed, 0, LEN, "%s: what it brought", what);
}

int main(void)
{
	int64_t start = itest_now_ms();
	struct borrow_mem m;
	struct fid_mr *target_mr, *mr;
	uint8_t *wide;

	rt_init();
	setvbuf(stdout, NULL, _IOLBF, 0);
	m.target = rt_guarded(LEN);
	m.local = rt_guarded(LEN);
	wide = rt_guarded(2 * LEN);
	target_mr =
		rt_mr_reg(m.target, LEN, FI_REMOTE_WRITE | FI_REMOTE_READ, 0);
	m.k = rt_rkey_of(target_mr, m.target, LEN);
	rt_node_open(&n, &(struct rt_node_opts){ 0 }, "borrow");
	rt_node_insert(&n, &n.name);

	borrow_write(&m, m.local, 11, rt_mr_reg(m.local, LEN, FI_WRITE, 0),
		     "a write from a registration closed at once");
	mr = rt_mr_reg(m.local, LEN, FI_WRITE, 0);
	borrow_read(&m, 12, NULL, "a read into a registration for FI_WRITE");
	RT_OK(fi_close(&mr->fid));
	borrow_read(&m, 13, rt_mr_reg(m.local, LEN, FI_READ, 0),
		    "a read into a registration closed at once");
	mr = rt_mr_reg(wide, LEN, FI_WRITE, 0);
	borrow_write(&m, wide + LEN / 2, 14, NULL,
		     "a write from half inside a registration");
	RT_OK(fi_close(&mr->fid));

	rt_guard_check(m.target, LEN, "the target");
	rt_guard_check(m.local, LEN, "the local buffer");
	rt_guard_check(wide, 2 * LEN, "the wide buffer");
	rt_node_close(&n);
	RT_OK(fi_close(&target_mr->fid));
	rt_guarded_free(wide);
	rt_guarded_free(m.local);
	rt_guarded_free(m.target);
	itest_domain_close();
	rt_pass("nrma_rma_borrow", start);
	return 0;
}
