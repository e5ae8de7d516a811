/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Notification sets (fi_ext_nrma.h): many counters in one registration,
 * an index per operation.  The parent is the target, its three children
 * the initiators (see itest_notify.h).  From its endpoint's opening on,
 * the target makes no libfabric call but the set's reads, resets and
 * waits, which only read its memory, until it reads the CQ entry of the
 * writedata-notify in step 7.
 *
 *   1. Three initiators x 3000 write-notifies over 9000 indices of a set
 *      of 2^20 counters, from their first contact: every counter exact,
 *      their sum never ahead of the writes in place.
 *   2. Read-notify: the counter moves only once the read has taken its
 *      data (the target then overwrites it; the reads never see that).
 *   3. Atomic-notify, fetching and not, of the 64-bit word and (an
 *      initiator's compare-and-swap loop) of its low 32-bit half: the
 *      counter never ahead of the atomics done; a signal that adds 7
 *      adds 7.
 *   4. A reset returns the old value exactly while 20,000 write-notifies
 *      land: the resets' sum is 20,000.
 *   5. wait and waitsome: time out on idle counters, find the right one.
 *   6. Bounds: an index the descriptor puts outside the set is -FI_EINVAL
 *      at once; one a forged descriptor puts inside, a key that names a
 *      registration rather than a set, and a set key in fi_write end in
 *      FI_EACCES error entries; nothing counts.  Calls at the target with
 *      bad indices or sizes are -FI_EINVAL.
 *   7. Grow while idle: counters keep their values, the new descriptor
 *      reaches the new counters (also with writedata-notify, whose data
 *      the target's CQ gets), the old one fails at the initiator with
 *      FI_EACCES before it reaches the device, and the next operation
 *      works.
 */
#include <stdatomic.h>

#include <rdma/fi_ext_nrma.h>

#include "itest_notify.h"

#define S1_INIT	      3
#define S1_OPS	      3000
#define S1_COUNT      (UINT64_C(1) << 20)
#define S2_COUNT      256
#define S2_GROWN      1024
#define S2_READS      50
#define S2_READ_WORDS 8192		     /* 64 KiB */
#define DATA_WORDS    (S1_INIT * S1_OPS + 8) /* the last 8: atomics' */
#define DATA_BYTES    (DATA_WORDS * 8)
#define SA_WORD	      (S1_INIT * S1_OPS)
#define SA_OPS	      200
#define S6_DATA	      0xda7a
#define S3_OPS	      20000

enum { K_DATA, K_BIG, K_SMALL, K_READ }; /* keymsg.k[]: k[K_BIG] is a set */

/* Write g of all (me * S1_OPS + i) notifies the counter of write g + 4500
 * too, and write 0 the set's last. */
static uint64_t s1_index(uint64_t me, uint64_t i)
{
	uint64_t g = me * S1_OPS + i;

	return S1_COUNT - 1 - g % 4500 * 7919 % S1_COUNT;
}

static struct fi_nrma_nset_desc desc_of(const struct rt_rkey *rk)
{
	return (struct fi_nrma_nset_desc){ .key = rk->key, .count = rk->len };
}

static struct rt_rkey rkey_of_set(struct fid_nrma_nset *set)
{
	struct fi_nrma_nset_desc d;

	RT_OK(fi_nrma_nset_desc(set, &d));
	return (struct rt_rkey){ .addr = 0, .len = d.count, .key = d.key };
}

static uint64_t set_read(struct fid_nrma_nset *set, uint64_t index)
{
	uint64_t v;

	RT_OK(fi_nrma_nset_read(set, index, &v));
	return v;
}

static struct fid_nrma_nset *set_open(uint64_t count)
{
	struct fi_nrma_ops_domain *ops;
	struct fi_nrma_nset_attr attr = { .count = count };
	struct fid_nrma_nset *set;

	RT_OK(fi_nrma_domain_ops(rt_domain(), &ops));
	RT_OK(fi_nrma_nset_open(ops, rt_domain(), &attr, &set, NULL));
	return set;
}

/* Step 1 at the target: sums of reads, checked against the data. */
static void s1_target(struct fid_nrma_nset *big, const uint64_t *data)
{
	const uint64_t total = S1_INIT * S1_OPS;
	uint64_t sum = 0, landed;
	int64_t deadline = itest_deadline();
	uint8_t *want;

	while (sum != total) {
		sum = 0;
		/* Writes g and g + 4500 share a counter: each counter once. */
		for (uint64_t g = 0; g < 4500; g++)
			sum += set_read(big, s1_index(0, g));
		atomic_thread_fence(memory_order_acquire);
		landed = 0;
		for (uint64_t g = 0; g < total; g++)
			landed += data[g] == stamp(g);
		if (sum > landed || sum > total)
			FAIL("the counters sum to %" PRIu64 " with %" PRIu64
			     " of %" PRIu64 " writes in place",
			     sum, landed, total);
		if (itest_now_ms() > deadline)
			FAIL("the counters sum to %" PRIu64 " of %" PRIu64
			     " after %" PRId64 " s",
			     sum, total, itest_wait_ms() / 1000);
	}
	want = calloc(S1_COUNT, sizeof(*want));
	CHECK(want != NULL);
	for (uint64_t me = 0; me < S1_INIT; me++)
		for (uint64_t i = 0; i < S1_OPS; i++)
			want[s1_index(me, i)]++;
	for (uint64_t x = 0; x < S1_COUNT; x++)
		EXPECT(set_read(big, x) == want[x],
		       "counter %" PRIu64 " reads %" PRIu64 ", expected %u", x,
		       set_read(big, x), want[x]);
	EXPECT(want[S1_COUNT - 1] == 2, "the last counter is notified");
	free(want);
	rt_note("1. %d initiators x %d write-notifies over 2^20 counters: "
		"exact, never ahead of the data",
		S1_INIT, S1_OPS);
}

/* Step 2: the counter moves only once the read has its data. */
static void s2_target(struct fid_nrma_nset *small, uint64_t *rbuf)
{
	for (uint64_t k = 0; k < S2_READS; k++) {
		int64_t deadline = itest_deadline();

		while (set_read(small, 1) != k + 1)
			rt_check_deadline(deadline, "read-notify %" PRIu64, k);
		for (int w = 0; w < S2_READ_WORDS; w++)
			rbuf[w] = stamp(k + 1);
		itest_signal(&pc[0], SIG_GO);
	}
	rt_note("2. %d read-notifies of 64 KiB: each counted only once "
		"its data was read",
		S2_READS);
}

/* Step 3: the atomics' word never behind its counter. */
static void sa_target(struct fid_nrma_nset *small, volatile uint64_t *word)
{
	uint64_t w0 = *word, v = 0;
	int64_t deadline = itest_deadline();

	itest_signal(&pc[0], SIG_GO);
	while (v < SA_OPS) {
		v = set_read(small, 3);
		atomic_thread_fence(memory_order_acquire);
		if (*word - w0 < v)
			FAIL("counter 3 reads %" PRIu64 " with %" PRIu64
			     " atomics done",
			     v, *word - w0);
		rt_check_deadline(deadline, "atomic-notify %" PRIu64, v);
	}
	rt_expect_idle(&pc[0], SIG_DONE, "the atomics and signals");
	EXPECT(*word - w0 == SA_OPS && set_read(small, 3) == SA_OPS,
	       "%" PRIu64 " atomics done, counter 3 reads %" PRIu64
	       ", expected %d",
	       *word - w0, set_read(small, 3), SA_OPS);
	EXPECT(set_read(small, 4) == 3 * 7,
	       "three signals of 7: counter 4 reads %" PRIu64,
	       set_read(small, 4));
	rt_note("3. %d atomic-notifies, fetching and not: never ahead; "
		"signals add their value",
		SA_OPS);
}

static void s3_target(struct fid_nrma_nset *small)
{
	uint64_t sum = 0, old, resets = 0;
	int64_t deadline = itest_deadline();

	itest_signal(&pc[0], SIG_GO);
	while (sum < S3_OPS) {
		RT_OK(fi_nrma_nset_reset(small, 2, &old));
		sum += old;
		resets += old != 0;
		rt_check_deadline(deadline, "the resets to take %d", S3_OPS);
	}
	rt_expect_idle(&pc[0], SIG_DONE, "the stream's completions");
	EXPECT(sum == S3_OPS && set_read(small, 2) == 0,
	       "the resets took %" PRIu64 ", %" PRIu64 " left, of %d", sum,
	       set_read(small, 2), S3_OPS);
	rt_note("4. %" PRIu64 " resets under %d write-notifies: exact", resets,
		S3_OPS);
}

static void s4_target(struct fid_nrma_nset *small)
{
	uint64_t index = 0;

	EXPECT(fi_nrma_nset_waitsome(small, 100, 100, 50, &index) ==
		       -FI_ETIMEDOUT,
	       "waitsome on idle counters times out");
	itest_signal(&pc[0], SIG_GO);
	RT_OK(fi_nrma_nset_waitsome(small, 100, 100, 10000, &index));
	EXPECT(index == 137, "waitsome found %" PRIu64 ", expected 137", index);
	RT_OK(fi_nrma_nset_wait(small, 137, 3, 10000));
	EXPECT(set_read(small, 137) == 3, "counter 137 reads %" PRIu64,
	       set_read(small, 137));
	EXPECT(fi_nrma_nset_wait(small, 138, 1, 20) == -FI_ETIMEDOUT,
	       "wait on an idle counter times out");
	rt_note("5. wait and waitsome: timeouts, and the right index");
}

/* What the small set's counters read after steps 2-5 (3's resets leave 0). */
static uint64_t small_count(uint64_t x)
{
	switch (x) {
	case 1:
		return S2_READS;
	case 3:
		return SA_OPS;
	case 4:
		return 3 * 7;
	case 137:
		return 3;
	default:
		return 0;
	}
}

static void s5_target_calls(struct fid_nrma_nset *small)
{
	struct fi_nrma_ops_domain *ops;
	struct fi_nrma_nset_attr bad[] = { { .count = 0 },
					   { .count = FI_NRMA_NSET_MAX + 1 },
					   { .count = 4, .flags = 1 } };
	struct fid_nrma_nset *set;
	uint64_t v, index;

	RT_OK(fi_nrma_domain_ops(rt_domain(), &ops));
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		EXPECT(fi_nrma_nset_open(ops, rt_domain(), &bad[i], &set,
					 NULL) == -FI_EINVAL,
		       "a set of %" PRIu64 " counters, flags %" PRIu64,
		       bad[i].count, bad[i].flags);
	EXPECT(fi_nrma_nset_read(small, S2_COUNT, &v) == -FI_EINVAL &&
		       fi_nrma_nset_reset(small, S2_COUNT, &v) == -FI_EINVAL &&
		       fi_nrma_nset_wait(small, S2_COUNT, 1, 0) == -FI_EINVAL &&
		       fi_nrma_nset_waitsome(small, S2_COUNT - 1, 2, 0,
					     &index) == -FI_EINVAL &&
		       fi_nrma_nset_waitsome(small, 0, 0, 0, &index) ==
			       -FI_EINVAL &&
		       fi_nrma_nset_grow(small, S2_COUNT - 1) == -FI_EINVAL,
	       "indices and sizes outside the set are -FI_EINVAL");
	EXPECT(fi_open_ops(&rt_domain()->fid, "nrma_domain_ops_0", 0,
			   (void **) &ops, NULL) == -FI_ENOSYS,
	       "an ops name nrma does not have is -FI_ENOSYS");
}

static void s5_target(struct fid_nrma_nset *small)
{
	s5_target_calls(small);
	itest_signal(&pc[0], SIG_GO);
	rt_expect_idle(&pc[0], SIG_DONE, "the refused operations");
	for (uint64_t x = 0; x < S2_COUNT; x++)
		EXPECT(set_read(small, x) == small_count(x),
		       "counter %" PRIu64 " reads %" PRIu64 " after refused "
		       "operations, expected %" PRIu64,
		       x, set_read(small, x), small_count(x));
	rt_note("6. bad indices, keys and descriptors: refused, nothing "
		"counted");
}

static void s6_target(struct rt_node *t, struct fid_nrma_nset *small)
{
	struct itest_comp c;
	struct rt_rkey grown;

	RT_OK(fi_nrma_nset_grow(small, S2_GROWN));
	grown = rkey_of_set(small);
	EXPECT(grown.len == S2_GROWN, "the grown set has %" PRIu64 " counters",
	       grown.len);
	for (uint64_t x = 0; x < S2_GROWN; x++)
		EXPECT(set_read(small, x) ==
			       (x < S2_COUNT ? small_count(x) : 0),
		       "after growing, counter %" PRIu64 " reads %" PRIu64, x,
		       set_read(small, x));
	itest_chan_write(&pc[0], &grown, sizeof(grown));
	rt_expect_idle(&pc[0], SIG_DONE, "notifies with the new descriptor");
	EXPECT(set_read(small, 137) == 4 && set_read(small, 1000) == 1 &&
		       set_read(small, 5) == 1,
	       "after growing, counters 137, 1000 and 5 read %" PRIu64
	       ", %" PRIu64 " and %" PRIu64 ", expected 4, 1 and 1",
	       set_read(small, 137), set_read(small, 1000), set_read(small, 5));
	/* Read before the initiator's next write-notify to 1000 lands. */
	itest_signal(&pc[0], SIG_GO);
	c = rt_cq_wait(t->rx, "the writedata-notify's entry");
	RT_EXPECT_COMP(c, NULL, FI_RMA | FI_REMOTE_WRITE | FI_REMOTE_CQ_DATA,
		       FI_SEND | FI_RECV, "the writedata-notify's entry");
	EXPECT(c.data == S6_DATA, "writedata-notify: data 0x%" PRIx64, c.data);
	rt_note("7. grown while idle: values kept, new counters reached, "
		"the old descriptor refused");
}

static void target(void)
{
	uint64_t *data = rt_guarded(DATA_BYTES);
	uint64_t *rbuf = rt_guarded(S2_READ_WORDS * 8);
	struct fid_nrma_nset *big = set_open(S1_COUNT);
	struct fid_nrma_nset *small = set_open(S2_COUNT);
	struct fid_mr *mr, *rmr;
	struct keymsg km = { 0 };
	struct rt_node t;

	for (int w = 0; w < S2_READ_WORDS; w++)
		rbuf[w] = stamp(0);
	mr = rt_mr_reg(data, DATA_BYTES, FI_REMOTE_WRITE, 0);
	rmr = rt_mr_reg(rbuf, S2_READ_WORDS * 8, FI_REMOTE_READ, 0);
	km.k[K_DATA] = rt_rkey_of(mr, data, DATA_BYTES);
	km.k[K_BIG] = rkey_of_set(big);
	km.k[K_SMALL] = rkey_of_set(small);
	km.k[K_READ] = rt_rkey_of(rmr, rbuf, S2_READ_WORDS * 8);
	target_open(&t, 0, &km, S1_INIT);
	s1_target(big, data);
	s2_target(small, rbuf);
	sa_target(small, &data[SA_WORD]);
	s3_target(small);
	s4_target(small);
	s5_target(small);
	s6_target(&t, small);
	for (int i = 0; i < S1_INIT; i++)
		rt_expect_idle(&pc[i], SIG_DONE, "initiator %d's end", i);
	EXPECT(set_read(small, 137) == 4 && set_read(small, 1000) == 2,
	       "counters 137 and 1000 read %" PRIu64 " and %" PRIu64
	       " after the old descriptor's write and one more, expected 4 "
	       "and 2",
	       set_read(small, 137), set_read(small, 1000));
	rt_guard_check(data, DATA_BYTES, "the written buffer");
	rt_guard_check(rbuf, S2_READ_WORDS * 8, "the read buffer");
	target_close(&t, S1_INIT);
	RT_OK(fi_close(&big->fid));
	RT_OK(fi_close(&small->fid));
	RT_OK(fi_close(&mr->fid));
	RT_OK(fi_close(&rmr->fid));
	rt_guarded_free(data);
	rt_guarded_free(rbuf);
}

/* What an initiator's operations need. */
struct notifier {
	struct fi_nrma_ops_ep *ops;
	struct keymsg km;
	uint64_t me;
	uint64_t src[S1_OPS];
	struct fi_nrma_nset_desc set;
	uint64_t index;
};

static ssize_t notify_write(struct rt_node *n, struct notifier *p,
			    const uint64_t *src, uint64_t addr, uint64_t key,
			    void *context)
{
	struct iovec iov = { .iov_base = (void *) src, .iov_len = 8 };
	struct fi_rma_iov rma = { .addr = addr, .len = 8, .key = key };
	struct fi_msg_rma msg = { .msg_iov = &iov,
				  .iov_count = 1,
				  .addr = n->peer,
				  .rma_iov = &rma,
				  .rma_iov_count = 1,
				  .context = context };
	struct fi_nrma_notify note = { .set = p->set, .index = p->index };

	return p->ops->writemsg(n->ep, &msg, &note, FI_COMPLETION);
}

static ssize_t s1_post(struct rt_node *n, uint64_t i, void *arg)
{
	struct notifier *p = arg;
	uint64_t g = p->me * S1_OPS + i;

	p->set = desc_of(&p->km.k[K_BIG]);
	p->index = s1_index(p->me, i);
	return notify_write(n, p, &p->src[i], p->km.k[K_DATA].addr + g * 8,
			    p->km.k[K_DATA].key, NULL);
}

/* Writes to the small set's index p->index, data to word 0. */
static ssize_t small_post(struct rt_node *n, uint64_t i, void *arg)
{
	struct notifier *p = arg;

	(void) i;
	return notify_write(n, p, &p->src[0], p->km.k[K_DATA].addr,
			    p->km.k[K_DATA].key, NULL);
}

static void s2_initiator(struct rt_node *n, struct notifier *p)
{
	uint64_t *local = calloc(S2_READ_WORDS, 8);
	struct fi_nrma_nset_desc set = desc_of(&p->km.k[K_SMALL]);
	const struct rt_rkey *rk = &p->km.k[K_READ];

	CHECK(local != NULL);
	for (uint64_t k = 0; k < S2_READS; k++) {
		RT_POST(fi_nrma_read_notify(p->ops, n->ep, local,
					    S2_READ_WORDS * 8, NULL, n->peer,
					    rk->addr, rk->key, &set, 1, local),
			"read-notify %" PRIu64, k);
		rt_cq_wait(n->tx, "read-notify %" PRIu64, k);
		for (int w = 0; w < S2_READ_WORDS; w++)
			if (local[w] != stamp(k))
				FAIL("read-notify %" PRIu64 " word %d is "
				     "0x%" PRIx64 ", expected 0x%" PRIx64
				     ": the target overwrote it on a "
				     "counter that came first",
				     k, w, local[w], stamp(k));
		rt_expect(&cc, SIG_GO, "the target's next data");
	}
	free(local);
}

/*
 * Adds 1 to the atomics' word, notifying counter 3: to the word, or
 * (half) to its low 32 bits on this little-endian host, which the
 * initiator does with a compare-and-swap loop.  The old value fetched.
 */
static uint64_t sa_post(struct rt_node *n, struct notifier *p, bool fetch,
			bool half)
{
	const struct rt_rkey *data = &p->km.k[K_DATA];
	struct fi_nrma_notify note = { .set = desc_of(&p->km.k[K_SMALL]),
				       .index = 3 };
	uint64_t one = 1, old = 0;
	struct fi_ioc ioc = { .addr = &one, .count = 1 };
	struct fi_ioc res = { .addr = &old, .count = 1 };
	struct fi_rma_ioc rioc = { .addr = data->addr + SA_WORD * 8,
				   .count = 1,
				   .key = data->key };
	struct fi_msg_atomic msg = { .msg_iov = &ioc,
				     .iov_count = 1,
				     .addr = n->peer,
				     .rma_iov = &rioc,
				     .rma_iov_count = 1,
				     .datatype = half ? FI_UINT32 : FI_UINT64,
				     .op = FI_SUM };

	RT_POST(fetch ? p->ops->fetch_atomicmsg(n->ep, &msg, &res, NULL, 1,
						&note, FI_COMPLETION) :
			p->ops->atomicmsg(n->ep, &msg, &note, FI_COMPLETION),
		"atomic-notify");
	rt_cq_wait(n->tx, "atomic-notify");
	return old;
}

static void sa_initiator(struct rt_node *n, struct notifier *p)
{
	struct fi_nrma_notify signal = { .set = desc_of(&p->km.k[K_SMALL]),
					 .index = 4,
					 .op = FI_NRMA_NOTIFY_ADD,
					 .value = 7 };
	struct iovec iov = { .iov_base = &p->src[0], .iov_len = 8 };
	struct fi_rma_iov rma = { .addr = p->km.k[K_DATA].addr,
				  .len = 8,
				  .key = p->km.k[K_DATA].key };
	struct fi_msg_rma msg = { .msg_iov = &iov,
				  .iov_count = 1,
				  .addr = n->peer,
				  .rma_iov = &rma,
				  .rma_iov_count = 1 };
	uint64_t first = 0;

	rt_expect(&cc, SIG_GO, "the atomics");
	for (uint64_t k = 0; k < SA_OPS; k++) {
		bool fetched = k & 1;
		uint64_t old = sa_post(n, p, fetched, k & 2);

		if (k == 1)
			first = old;
		EXPECT(!fetched || old == first + k - 1,
		       "atomic-notify %" PRIu64 " fetched %" PRIu64
		       ", expected %" PRIu64,
		       k, old, first + k - 1);
	}
	for (int k = 0; k < 3; k++) {
		RT_POST(p->ops->writemsg(n->ep, &msg, &signal, FI_COMPLETION),
			"signal %d", k);
		rt_cq_wait(n->tx, "signal %d", k);
	}
	itest_signal(&cc, SIG_DONE);
}

static void expect_refused(struct rt_node *n, ssize_t ret, const char *what)
{
	struct fi_cq_err_entry e;

	RT_POST(ret, "%s", what);
	e = rt_cq_wait_err(n->tx, "the error entry of %s", what);
	EXPECT(e.err == FI_EACCES, "%s: err %d, expected FI_EACCES", what,
	       e.err);
}

static void s5_initiator(struct rt_node *n, struct notifier *p)
{
	const struct rt_rkey *data = &p->km.k[K_DATA];

	p->set = desc_of(&p->km.k[K_SMALL]);
	p->index = S2_COUNT;
	EXPECT(small_post(n, 0, p) == -FI_EINVAL,
	       "an index the descriptor puts outside the set");
	p->set.count = 2 * S2_COUNT;
	expect_refused(n, small_post(n, 0, p),
		       "an index a forged descriptor puts inside");
	p->set = (struct fi_nrma_nset_desc){ .key = data->key, .count = 8 };
	p->index = 0;
	expect_refused(n, small_post(n, 0, p),
		       "a registration's key as a set's");
	expect_refused(n,
		       fi_write(n->ep, &p->src[0], 8, NULL, n->peer, 0,
				p->km.k[K_SMALL].key, NULL),
		       "a set's key in fi_write");
	rt_cq_expect_empty(n->tx, "after the refused operations");
	itest_signal(&cc, SIG_DONE);
}

static void s6_initiator(struct rt_node *n, struct notifier *p)
{
	struct fi_nrma_nset_desc old = desc_of(&p->km.k[K_SMALL]);
	struct fi_cq_err_entry e;
	struct rt_rkey grown;

	rt_chan_read(&cc, &grown, sizeof(grown), "the grown set");
	p->set = desc_of(&grown);
	for (p->index = 137; p->index <= 1000; p->index += 863) {
		RT_POST(small_post(n, 0, p), "index %" PRIu64, p->index);
		rt_cq_wait(n->tx, "write-notify to %" PRIu64, p->index);
	}
	RT_POST(fi_nrma_writedata_notify(p->ops, n->ep, &p->src[0], 8, NULL,
					 S6_DATA, n->peer, p->km.k[K_DATA].addr,
					 p->km.k[K_DATA].key, &p->set, 5, NULL),
		"writedata-notify to 5");
	rt_cq_wait(n->tx, "writedata-notify to 5");
	itest_signal(&cc, SIG_DONE);
	rt_expect(&cc, SIG_GO, "the target's look at the grown set");
	p->set = old;
	p->index = 137;
	RT_POST(small_post(n, 0, p), "the old descriptor");
	e = rt_cq_wait_err(n->tx, "the old descriptor's error");
	rt_note("   the old descriptor: err %d (%s), prov_errno %d", e.err,
		fi_strerror(e.err), e.prov_errno);
	/* The grow told us: refused here, not by the device. */
	EXPECT(e.err == FI_EACCES,
	       "the old descriptor: err %d, expected "
	       "FI_EACCES",
	       e.err);
	/* The connection stays up: the new descriptor works on. */
	p->set = desc_of(&grown);
	p->index = 1000;
	run_ops(n, 1, 1, small_post, p, "a write-notify after the error");
}

static void first_initiator(struct rt_node *n, struct notifier *p)
{
	s2_initiator(n, p);
	sa_initiator(n, p);
	rt_expect(&cc, SIG_GO, "the resets");
	p->set = desc_of(&p->km.k[K_SMALL]);
	p->index = 2;
	run_ops(n, S3_OPS, 64, small_post, p, "the stream to be reset");
	itest_cq_forget(n->tx);
	itest_signal(&cc, SIG_DONE);
	rt_expect(&cc, SIG_GO, "the waits");
	for (int k = 0; k < 3; k++) {
		RT_POST(fi_nrma_write_notify(p->ops, n->ep, &p->src[0], 8, NULL,
					     n->peer, p->km.k[K_DATA].addr,
					     p->km.k[K_DATA].key, &p->set, 137,
					     NULL),
			"write-notify %d to 137", k);
		rt_cq_wait(n->tx, "write-notify %d to 137", k);
	}
	rt_expect(&cc, SIG_GO, "the bounds");
	s5_initiator(n, p);
	s6_initiator(n, p);
}

static void initiator(uint64_t me)
{
	struct rt_node_opts o = { .tx_errors_ok = true };
	struct notifier *p = calloc(1, sizeof(*p));
	struct rt_node n;

	CHECK(p != NULL);
	p->me = me;
	for (uint64_t i = 0; i < S1_OPS; i++)
		p->src[i] = stamp(me * S1_OPS + i);
	rt_node_open(&n, &o, itest_who);
	rt_chan_read(&cc, &p->km, sizeof(p->km), "the target's keys");
	rt_node_insert(&n, &p->km.name);
	RT_OK(fi_nrma_ep_ops(n.ep, &p->ops));
	run_ops(&n, S1_OPS, 64, s1_post, p, "the write-notifies");
	itest_cq_forget(n.tx); /* counted: the steps below wait for theirs */
	if (me == 0)
		first_initiator(&n, p);
	itest_signal(&cc, SIG_DONE);
	rt_expect_idle(&cc, SIG_PART_OVER, "the end of the test");
	rt_node_close(&n);
	free(p);
}

int main(void)
{
	return NT_MAIN("nrma_notify_sets", S1_INIT, target, initiator);
}
