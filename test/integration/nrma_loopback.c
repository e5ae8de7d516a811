/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * An endpoint that is its own peer (its name in its own AV), as an
 * OpenSHMEM PE is for its own symmetric memory: writes, reads, a device
 * atomic and a compare-and-swap loop on its own registration, with NULL
 * descriptors, a notified write, and its remote counters counting them.
 * One process; nothing else runs.
 */
#include <rdma/fi_atomic.h>

#include "itest_rma.h"

#define WORDS 16

static struct rt_node n;

static void wait_done(void *ctx, uint64_t flags, const char *what)
{
	struct itest_comp c = rt_cq_wait(n.tx, "%s", what);

	RT_EXPECT_COMP(c, ctx, flags, FI_MSG, "%s", what);
}

static void loop_rma(uint64_t *mem, const struct rt_rkey *k)
{
	uint64_t src[2] = { 0x1122334455667788ULL, 0x99aabbccddeeff00ULL };
	uint64_t back[2] = { 0 };

	RT_POST(fi_write(n.ep, src, sizeof(src), NULL, n.peer, k->addr + 8,
			 k->key, src),
		"a write to ourselves");
	wait_done(src, FI_RMA | FI_WRITE, "the write");
	EXPECT(mem[1] == src[0] && mem[2] == src[1],
	       "the write landed as %#" PRIx64 " %#" PRIx64, mem[1], mem[2]);
	RT_POST(fi_read(n.ep, back, sizeof(back), NULL, n.peer, k->addr + 8,
			k->key, back),
		"a read from ourselves");
	wait_done(back, FI_RMA | FI_READ, "the read");
	EXPECT(back[0] == src[0] && back[1] == src[1], "the read brought "
						       "something else");
}

static void loop_atomics(uint64_t *mem, const struct rt_rkey *k)
{
	uint64_t add = 5, old = 0;
	uint32_t max = 77, old32 = 0;

	mem[4] = 100;
	RT_POST(fi_fetch_atomic(n.ep, &add, 1, NULL, &old, NULL, n.peer,
				k->addr + 32, k->key, FI_UINT64, FI_SUM, &old),
		"a fetch-add on ourselves");
	wait_done(&old, FI_ATOMIC | FI_READ, "the fetch-add");
	EXPECT(old == 100 && mem[4] == 105,
	       "fetch-add: old %" PRIu64 ", word %" PRIu64, old, mem[4]);
	RT_POST(fi_fetch_atomic(n.ep, &max, 1, NULL, &old32, NULL, n.peer,
				k->addr + 36, k->key, FI_UINT32, FI_MAX,
				&old32),
		"a 32-bit FI_MAX on ourselves");
	wait_done(&old32, FI_ATOMIC | FI_READ, "the FI_MAX");
	EXPECT(old32 == 0 && mem[4] == (105 | (uint64_t) 77 << 32),
	       "FI_MAX: old %u, word %#" PRIx64, old32, mem[4]);
}

int main(void)
{
	int64_t start = itest_now_ms();
	uint64_t *mem;
	struct rt_node_opts o = { .remote_flags = FI_REMOTE_WRITE,
				  .rread_cntr = true };
	struct fid_mr *mr;
	struct rt_rkey k;

	rt_init();
	setvbuf(stdout, NULL, _IOLBF, 0);
	mem = rt_guarded(WORDS * 8);
	memset(mem, 0, WORDS * 8);
	mr = rt_mr_reg(mem, WORDS * 8, FI_REMOTE_WRITE | FI_REMOTE_READ, 0);
	k = rt_rkey_of(mr, mem, WORDS * 8);
	rt_node_open(&n, &o, "loopback");
	rt_node_insert(&n, &n.name);
	loop_rma(mem, &k);
	loop_atomics(mem, &k);
	/* The write, the read and two fetching atomics that update: both. */
	EXPECT(fi_cntr_read(n.remote_cntr) == 3,
	       "FI_REMOTE_WRITE counter %" PRIu64, fi_cntr_read(n.remote_cntr));
	EXPECT(fi_cntr_read(n.rread_cntr) == 3,
	       "FI_REMOTE_READ counter %" PRIu64, fi_cntr_read(n.rread_cntr));
	rt_guard_check(mem, WORDS * 8, "our own memory");
	rt_node_close(&n);
	RT_OK(fi_close(&mr->fid));
	rt_guarded_free(mem);
	itest_domain_close();
	rt_pass("nrma_loopback", start);
	return 0;
}
