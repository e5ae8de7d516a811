/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Regions addressed by offset, with provider keys.  The parent is the
 * target, its child the initiator (see itest_notify.h).
 *
 * With hints that allow FI_MR_VIRT_ADDR and FI_MR_PROV_KEY, nrma asks for
 * provider keys and offsets.  The target registers two regions that start
 * at odd addresses, each counted by its own counter, and a third at an
 * aligned one; it makes no call but counter reads while the initiator
 * writes whole regions from offset 0, and their last words, which land
 * exactly there (the bytes between the regions stay untouched).  Reads
 * from an offset, atomics wherever base plus offset is aligned (and
 * -FI_EINVAL where it is not, whatever the offset), and a registration
 * of the same memory again under a new key follow.
 */
#include <rdma/fi_atomic.h>

#include "itest_notify.h"

#define OF_LEN	 4096
#define OF_GAP	 2 /* untouched bytes after each odd region */
#define OF_BYTES (3 * OF_LEN + 64)
#define OF_WORD	 8 /* the atomic word's offset in region 2 */

enum { OF_ODD1, OF_ODD3, OF_ALIGNED, OF_AGAIN, OF_KEYS };

static char *of_base(char *buf, int k)
{
	static const size_t start[OF_KEYS] = { 1, OF_LEN + 1 + OF_GAP + 2,
					       2 * OF_LEN + 8, 2 * OF_LEN + 8 };

	return buf + start[k];
}

static void of_check_mode(const struct fi_info *info)
{
	uint64_t mode = info->domain_attr->mr_mode;

	EXPECT(mode & FI_MR_PROV_KEY, "mr_mode 0x%" PRIx64 ": provider keys",
	       mode);
	EXPECT(!(mode & FI_MR_VIRT_ADDR),
	       "mr_mode 0x%" PRIx64 ": regions are addressed by offset", mode);
}

static void of_check_data(char *buf)
{
	for (int k = OF_ODD1; k <= OF_ODD3; k++) {
		char *r = of_base(buf, k);
		uint64_t last;

		rt_pat_check(r, k, 0, OF_LEN - 8, "region %d from offset 0", k);
		memcpy(&last, r + OF_LEN - 8, 8);
		EXPECT(last == stamp(k), "region %d's last word: 0x%" PRIx64, k,
		       last);
	}
	rt_fill_check(buf, 0, 1, "the byte before region 0");
	rt_fill_check(of_base(buf, OF_ODD1) + OF_LEN, 0,
		      of_base(buf, OF_ODD3) - of_base(buf, OF_ODD1) - OF_LEN,
		      "the bytes between regions 0 and 1");
}

/* A region with a new key on the same memory as the aligned one. */
static struct fid_mr *of_register_again(char *buf, struct rt_rkey *rk)
{
	char *r = of_base(buf, OF_AGAIN);
	struct fid_mr *mr = rt_mr_reg(r, 64, FI_REMOTE_WRITE, 0);
	uint64_t first = fi_mr_key(mr);

	RT_OK(fi_close(&mr->fid));
	mr = rt_mr_reg(r, 64, FI_REMOTE_WRITE, 0);
	EXPECT(fi_mr_key(mr) != first,
	       "a registration after a closed one has a new key (0x%" PRIx64
	       " both)",
	       first);
	*rk = rt_rkey_of(mr, r, 64);
	return mr;
}

static void target(void)
{
	char *buf = rt_guarded(OF_BYTES);
	struct fid_cntr *cntr[2];
	struct fid_mr *mr[OF_KEYS];
	struct keymsg km = { 0 };
	struct rt_node t;
	uint64_t word;

	memset(buf, 0, OF_BYTES);
	rt_domain();
	of_check_mode(itest_info);
	for (int k = OF_ODD1; k <= OF_ODD3; k++) {
		cntr[k] = itest_cntr_open(rt_domain());
		mr[k] = rt_mr_reg_cntr(of_base(buf, k), OF_LEN,
				       FI_REMOTE_WRITE | FI_REMOTE_READ,
				       cntr[k], FI_REMOTE_WRITE);
		km.k[k] = rt_rkey_of(mr[k], of_base(buf, k), OF_LEN);
	}
	mr[OF_ALIGNED] = rt_mr_reg(of_base(buf, OF_ALIGNED), 64,
				   FI_REMOTE_WRITE | FI_REMOTE_READ, 0);
	km.k[OF_ALIGNED] =
		rt_rkey_of(mr[OF_ALIGNED], of_base(buf, OF_ALIGNED), 64);
	mr[OF_AGAIN] = of_register_again(buf, &km.k[OF_AGAIN]);
	target_open(&t, 0, &km, 1);
	/* Counter reads alone until the writes have landed. */
	for (int k = OF_ODD1; k <= OF_ODD3; k++)
		rt_cntr_reach(cntr[k], 2, "region %d's counter", k);
	of_check_data(buf);
	itest_signal(&pc[0], SIG_GO);
	rt_expect(&pc[0], SIG_DONE, "the initiator's reads and atomics");
	memcpy(&word, of_base(buf, OF_ALIGNED) + OF_WORD, 8);
	EXPECT(word == 5 + 7, "the atomic word: %" PRIu64 ", expected 12",
	       word);
	memcpy(&word, of_base(buf, OF_AGAIN) + 16, 8);
	EXPECT(word == stamp(OF_AGAIN),
	       "the write under the new key: 0x%" PRIx64, word);
	/* Reads leave FI_REMOTE_WRITE counters alone; the fetch-add of 0 on
	 * region 1 may change its word, so it counts as a write too. */
	for (int k = OF_ODD1; k <= OF_ODD3; k++)
		expect_cntr(cntr[k], 2 + (k == OF_ODD1),
			    "region %d's counter after reads and atomics", k);
	rt_guard_check(buf, OF_BYTES, "the target's buffer");
	rt_note("offsets: data in place at odd bases, atomics where the "
		"address is aligned, new keys for new registrations");
	target_close(&t, 1);
	for (int k = 0; k < OF_KEYS; k++)
		RT_OK(fi_close(&mr[k]->fid));
	for (int k = OF_ODD1; k <= OF_ODD3; k++)
		itest_cntr_close(cntr[k]);
	rt_guarded_free(buf);
}

static void of_wait(struct rt_node *n, void *ctx, uint64_t flags,
		    const char *what)
{
	struct itest_comp c = rt_cq_wait(n->tx, "%s", what);

	RT_EXPECT_COMP(c, ctx, flags, 0, "%s", what);
}

static void of_write(struct rt_node *n, const void *src, size_t len,
		     const struct rt_rkey *rk, uint64_t off, const char *what)
{
	RT_POST(fi_write(n->ep, src, len, NULL, n->peer, rk->addr + off,
			 rk->key, (void *) src),
		"%s", what);
	of_wait(n, (void *) src, FI_RMA | FI_WRITE, what);
}

static uint64_t of_atomic(struct rt_node *n, const struct rt_rkey *rk,
			  uint64_t off, uint64_t add, const char *what)
{
	uint64_t result = 0;

	RT_POST(fi_fetch_atomic(n->ep, &add, 1, NULL, &result, NULL, n->peer,
				rk->addr + off, rk->key, FI_UINT64, FI_SUM,
				&result),
		"%s", what);
	of_wait(n, &result, FI_ATOMIC | FI_READ, what);
	return result;
}

static void of_reads_and_atomics(struct rt_node *n, const struct keymsg *km)
{
	const struct rt_rkey *odd = &km->k[OF_ODD1];
	uint64_t again = stamp(OF_AGAIN), one = 1, result, want;
	char got[OF_LEN];
	ssize_t ret;

	RT_POST(fi_read(n->ep, got, 50, NULL, n->peer,
			km->k[OF_ODD3].addr + 100, km->k[OF_ODD3].key, got),
		"a read at offset 100");
	of_wait(n, got, FI_RMA | FI_READ, "a read at offset 100");
	rt_pat_check(got, OF_ODD3, 100, 50, "the read at offset 100");
	result = of_atomic(n, &km->k[OF_ALIGNED], OF_WORD, 5, "an atomic");
	EXPECT(result == 0, "the atomic's old value: %" PRIu64, result);
	result = of_atomic(n, &km->k[OF_ALIGNED], OF_WORD, 7, "an atomic");
	EXPECT(result == 5, "the atomic's old value: %" PRIu64, result);
	/* Offset 7 of a region at an odd address is an aligned word. */
	result = of_atomic(n, odd, 7, 0, "an atomic read at offset 7");
	rt_pat_gen(got, OF_ODD1, 0, 16);
	memcpy(&want, got + 7, 8);
	EXPECT(result == want,
	       "the word at offset 7: 0x%" PRIx64 ", expected 0x%" PRIx64,
	       result, want);
	ret = fi_atomic(n->ep, &one, 1, NULL, n->peer, odd->addr, odd->key,
			FI_UINT64, FI_SUM, NULL);
	EXPECT(ret == -FI_EINVAL,
	       "an atomic at an unaligned address returned %zd", ret);
	of_write(n, &again, 8, &km->k[OF_AGAIN], 16, "a write, new key");
}

static void initiator(uint64_t me)
{
	char src[OF_LEN];
	uint64_t last[2];
	struct keymsg km;
	struct rt_node n;

	(void) me;
	rt_node_open(&n, &(struct rt_node_opts){ 0 }, itest_who);
	rt_chan_read(&cc, &km, sizeof(km), "the target's name and keys");
	rt_node_insert(&n, &km.name);
	of_check_mode(itest_info);
	for (int k = OF_ODD1; k <= OF_ODD3; k++) {
		rt_pat_gen(src, k, 0, OF_LEN);
		last[k] = stamp(k);
		of_write(&n, src, OF_LEN, &km.k[k], 0, "a whole region");
		of_write(&n, &last[k], 8, &km.k[k], OF_LEN - 8,
			 "a region's last word");
	}
	rt_expect(&cc, SIG_GO, "the target's check of the writes");
	of_reads_and_atomics(&n, &km);
	itest_signal(&cc, SIG_DONE);
	init_close(&n);
}

int main(void)
{
	return nt_main("nrma_rma_offsets", 1, target, initiator);
}
