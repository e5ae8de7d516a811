/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Keys the application picks: mr_mode 0, as Sandia OpenSHMEM's default
 * build asks, gets RMA and atomics with the keys it passes to fi_mr_reg
 * (two bytes, below mr_cnt) and regions addressed by offset.
 *   - fi_getinfo answers mr_mode 0 and mr_key_size 2.
 *   - fi_mr_key is the key asked for; a key in use is -FI_ENOKEY, one past
 *     mr_cnt -FI_EKEYREJECTED.
 *   - Keys 0 and 1 (SOS's data and heap): a write, a read and an atomic
 *     land at their offsets, and a counter bound to the region for remote
 *     writes counts the write and the atomic.
 *   - A key nothing is registered under, and an offset past a region,
 *     end in -FI_EACCES.
 *   - A key registered again names the new region at once.
 * One process, its endpoint its own peer; nothing else runs.
 */
#include <rdma/fi_atomic.h>

#include "itest_rma.h"

#define LEN  4096
#define DATA 0 /* SOS's keys: its data segment, */
#define HEAP 1 /* and its symmetric heap */

static struct rt_node n;

static struct fid_mr *app_mr_reg(void *buf, uint64_t key)
{
	struct fid_mr *mr;
	int ret = fi_mr_reg(rt_domain(), buf, LEN,
			    FI_REMOTE_READ | FI_REMOTE_WRITE, 0, key, 0, &mr,
			    NULL);

	EXPECT(!ret, "fi_mr_reg under key %" PRIu64 ": %s", key,
	       fi_strerror(-ret));
	EXPECT(fi_mr_key(mr) == key,
	       "fi_mr_key %" PRIu64 ", asked for %" PRIu64, fi_mr_key(mr), key);
	return mr;
}

static void check_info(void)
{
	const struct fi_domain_attr *d;

	rt_domain();
	d = itest_info->domain_attr;
	EXPECT(d->mr_mode == 0, "mr_mode 0x%x, asked for 0", d->mr_mode);
	EXPECT(d->mr_key_size == 2, "mr_key_size %zu", d->mr_key_size);
}

static void check_keys_taken(void)
{
	static uint8_t buf[LEN];
	struct fid_mr *mr;
	size_t cnt = itest_info->domain_attr->mr_cnt;

	RT_CALL(fi_mr_reg(rt_domain(), buf, LEN, FI_REMOTE_WRITE, 0, HEAP, 0,
			  &mr, NULL),
		-FI_ENOKEY);
	RT_CALL(fi_mr_reg(rt_domain(), buf, LEN, FI_REMOTE_WRITE, 0, cnt, 0,
			  &mr, NULL),
		-FI_EKEYREJECTED);
	RT_CALL(fi_mr_reg(rt_domain(), buf, LEN, FI_REMOTE_WRITE, 0,
			  UINT64_C(1) << 40, 0, &mr, NULL),
		-FI_EKEYREJECTED);
	mr = app_mr_reg(buf, cnt - 1);
	RT_OK(fi_close(&mr->fid));
}

static void app_wait(void *ctx, uint64_t flags, const char *what)
{
	struct itest_comp c = rt_cq_wait(n.tx, "%s", what);

	RT_EXPECT_COMP(c, ctx, flags, FI_MSG, "%s", what);
}

static void app_refused(uint64_t key, uint64_t offset, const char *what)
{
	static uint8_t src[8];
	struct fi_cq_err_entry e;

	RT_POST(fi_write(n.ep, src, sizeof(src), NULL, n.peer, offset, key, &n),
		"%s", what);
	e = rt_cq_wait_err(n.tx, "the error entry of %s", what);
	EXPECT(e.err == FI_EACCES && e.op_context == &n,
	       "%s: err %d, context %p; expected FI_EACCES, %p", what, e.err,
	       e.op_context, (void *) &n);
}

int main(void)
{
	int64_t start = itest_now_ms();
	uint8_t *heap, *data, *moved, local[64];
	uint64_t sum = 5, was = 0;
	struct fi_cntr_attr ca = { .events = FI_CNTR_EVENTS_COMP };
	struct fid_mr *heap_mr, *data_mr;
	struct fid_cntr *cntr;

	rt_init();
	setvbuf(stdout, NULL, _IOLBF, 0);
	rt_mr_mode_none = true;
	check_info();
	heap = rt_guarded(LEN);
	data = rt_guarded(LEN);
	moved = rt_guarded(LEN);
	heap_mr = app_mr_reg(heap, HEAP);
	data_mr = app_mr_reg(data, DATA);
	check_keys_taken();
	RT_OK(fi_cntr_open(rt_domain(), &ca, &cntr, NULL));
	RT_OK(fi_mr_bind(heap_mr, &cntr->fid, FI_REMOTE_WRITE));
	rt_node_open(&n, &(struct rt_node_opts){ .tx_errors_ok = true },
		     "app-keys");
	rt_node_insert(&n, &n.name);

	memset(heap, 0, LEN);
	rt_pat_gen(local, 1, 0, sizeof(local));
	RT_POST(fi_write(n.ep, local, sizeof(local), NULL, n.peer, 128, HEAP,
			 local),
		"a write under key 1");
	app_wait(local, FI_RMA | FI_WRITE, "a write under key 1");
	rt_pat_check(heap + 128, 1, 0, sizeof(local), "key 1, offset 128");
	rt_fill_check(heap, 0, 128, "key 1 before offset 128");
	rt_cntr_reach(cntr, 1, "the heap's counter after the write");

	rt_pat_gen(data, 2, 0, LEN);
	RT_POST(fi_read(n.ep, local, sizeof(local), NULL, n.peer, 8, DATA,
			local),
		"a read under key 0");
	app_wait(local, FI_RMA | FI_READ, "a read under key 0");
	rt_pat_check(local, 2, 8, sizeof(local), "key 0, offset 8");

	memcpy(heap + 256, &(uint64_t){ 37 }, sizeof(uint64_t));
	RT_POST(fi_fetch_atomic(n.ep, &sum, 1, NULL, &was, NULL, n.peer, 256,
				HEAP, FI_UINT64, FI_SUM, &sum),
		"a fetching sum under key 1");
	app_wait(&sum, FI_ATOMIC | FI_READ, "a fetching sum under key 1");
	EXPECT(was == 37, "the sum fetched %" PRIu64 ", expected 37", was);
	EXPECT(*(uint64_t *) (heap + 256) == 42, "the sum left %" PRIu64,
	       *(uint64_t *) (heap + 256));
	rt_cntr_reach(cntr, 2, "the heap's counter after the sum");

	app_refused(2, 0, "a write under key 2, registered by no one");
	app_refused(HEAP, LEN - 4, "a write past the heap's end");

	RT_OK(fi_close(&data_mr->fid));
	data_mr = app_mr_reg(moved, DATA);
	memset(moved, 0, LEN);
	RT_POST(fi_write(n.ep, local, sizeof(local), NULL, n.peer, 0, DATA,
			 local),
		"a write under key 0 registered again");
	app_wait(local, FI_RMA | FI_WRITE,
		 "a write under key 0 registered again");
	rt_pat_check(moved, 2, 8, sizeof(local), "key 0's new region");
	rt_pat_check(data, 2, 0, LEN, "key 0's old region, untouched");

	EXPECT(fi_cntr_read(cntr) == 2,
	       "the heap's counter at %" PRIu64 ": it counted what it refused "
	       "or another region's write",
	       fi_cntr_read(cntr));
	rt_guard_check(heap, LEN, "the heap");
	rt_guard_check(data, LEN, "the data");
	rt_guard_check(moved, LEN, "the new data");
	rt_node_close(&n);
	RT_OK(fi_close(&data_mr->fid));
	RT_OK(fi_close(&heap_mr->fid));
	RT_OK(fi_close(&cntr->fid));
	rt_guarded_free(moved);
	rt_guarded_free(data);
	rt_guarded_free(heap);
	itest_domain_close();
	rt_pass("nrma_mr_app_keys", start);
	return 0;
}
