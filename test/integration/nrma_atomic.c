/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Atomics between processes: the parent is the target, four children
 * initiate.  The target's endpoint has a FI_REMOTE_WRITE counter and a
 * FI_REMOTE_READ counter.
 *
 *  1. Every initiator does P1_OPS fi_fetch_atomic(FI_SUM, +1) on one
 *     word: the word ends at 4 * P1_OPS and the fetched values are
 *     0 .. 4 * P1_OPS - 1, each once.
 *  2. fi_atomic(FI_SUM) with negative operands, fi_inject_atomic (no
 *     completion entry) and fi_atomicmsg(FI_INJECT) (an entry, as for
 *     any fi_atomicmsg) on INT64: the sum is exact.
 *  3. A lock made of fi_compare_atomic(FI_CSWAP): inside it, a
 *     FI_ATOMIC_READ and a fetch-add of a second word see no one else's
 *     update; the release finds the holder's own value in the lock.
 *  4. (initiator 0) A registration with FI_RMA_EVENT and its own counter
 *     counts the atomics that use its key; FI_ATOMIC_READ changes nothing.
 *  5. (initiator 0) The valid calls and fi_query_atomic of a few
 *     (nrma_atomic_table checks the whole table), -FI_EOPNOTSUPP /
 *     -FI_EINVAL at once for what is not in it, a count past 8 64-bit
 *     elements or a misaligned address; a wrong key gives an error entry
 *     and the next atomic works.
 * At the end the target's counters hold exactly what the initiators
 * completed: FI_REMOTE_WRITE the base atomics and the fetching and
 * comparing ones that may change the word, FI_REMOTE_READ those and the
 * FI_ATOMIC_READs; the registration's counter, bound for both, counts
 * each of its atomics once; nothing outside the words moved.
 */
#include <rdma/fi_atomic.h>

#include "itest_rma.h"

#define NINIT	   4
#define P1_OPS	   300
#define P2_OPS	   60
#define P3_ROUNDS  40
#define P4_FETCHES 10
#define P4_BASE	   5
#define WORDS	   512

enum { W_SUM, W_BASE, W_LOCK, W_INLOCK, W_READ, W_P4 };

static struct itest_link links[NINIT];
static struct itest_chan pc[NINIT];
static struct itest_chan cc;

struct keymsg {
	struct sockaddr_in name;
	struct rt_rkey plain;	/* the target's words */
	struct rt_rkey evented; /* the same, counted by mr_cntr */
};

/* What an initiator reports when it is done. */
struct report {
	uint64_t base_ops;	  /* completed fi_atomic / inject */
	uint64_t fetch_ops;	  /* completed fetch and compare that update */
	uint64_t read_ops;	  /* completed FI_ATOMIC_READ */
	uint64_t fetched[P1_OPS]; /* part 1's old values */
};

enum { SIG_DONE = 0x200 };

static struct rt_node n;
static struct keymsg km;
static struct report rep;

static uint64_t word_addr(int w)
{
	return km.plain.addr + (uint64_t) w * 8;
}

/*
 * Waits for the one completion of the atomic just posted: a base one
 * (FI_WRITE), a fetching one that updates, or FI_ATOMIC_READ (reads).
 */
static void atomic_done(void *ctx, uint64_t rw, bool reads, const char *what)
{
	struct itest_comp c = rt_cq_wait(n.tx, "%s", what);

	RT_EXPECT_COMP(c, ctx, FI_ATOMIC | rw, FI_RMA | FI_MSG, "%s", what);
	if (rw == FI_WRITE)
		rep.base_ops++;
	else if (reads)
		rep.read_ops++;
	else
		rep.fetch_ops++;
}

static uint64_t fetch_add(int w, uint64_t add, uint64_t key, const char *what)
{
	uint64_t result = ~0ULL;

	RT_POST(fi_fetch_atomic(n.ep, &add, 1, NULL, &result, NULL, n.peer,
				word_addr(w), key, FI_UINT64, FI_SUM, &result),
		"%s", what);
	atomic_done(&result, FI_READ, false, what);
	return result;
}

static uint64_t atomic_read(int w, const char *what)
{
	uint64_t result = ~0ULL;

	RT_POST(fi_fetch_atomic(n.ep, NULL, 1, NULL, &result, NULL, n.peer,
				word_addr(w), km.plain.key, FI_UINT64,
				FI_ATOMIC_READ, &result),
		"%s", what);
	atomic_done(&result, FI_READ, true, what);
	return result;
}

static uint64_t cswap(int w, uint64_t compare, uint64_t swap, const char *what)
{
	uint64_t result = ~0ULL;

	RT_POST(fi_compare_atomic(n.ep, &swap, 1, NULL, &compare, NULL, &result,
				  NULL, n.peer, word_addr(w), km.plain.key,
				  FI_UINT64, FI_CSWAP, &result),
		"%s", what);
	atomic_done(&result, FI_READ, false, what);
	return result;
}

static void add_base(int w, int64_t add, uint64_t key, const char *what)
{
	RT_POST(fi_atomic(n.ep, &add, 1, NULL, n.peer, word_addr(w), key,
			  FI_INT64, FI_SUM, &add),
		"%s", what);
	atomic_done(&add, FI_WRITE, false, what);
}

/*
 * Injected: the operand is ours again at once.  fi_inject_atomic makes no
 * completion entry (the write counter says when it is done);
 * fi_atomicmsg with FI_INJECT makes one, like any fi_atomicmsg.
 */
static void add_injected(int w, int64_t add, bool by_msg, const char *what)
{
	struct fi_ioc ioc = { .addr = &add, .count = 1 };
	struct fi_rma_ioc rma = { .addr = word_addr(w),
				  .count = 1,
				  .key = km.plain.key };
	struct fi_msg_atomic msg = {
		.msg_iov = &ioc,
		.iov_count = 1,
		.addr = n.peer,
		.rma_iov = &rma,
		.rma_iov_count = 1,
		.datatype = FI_INT64,
		.op = FI_SUM,
		.context = &msg,
	};
	uint64_t done = fi_cntr_read(n.write_cntr);

	if (by_msg)
		RT_POST(fi_atomicmsg(n.ep, &msg, FI_INJECT), "%s", what);
	else
		RT_POST(fi_inject_atomic(n.ep, &add, 1, n.peer, word_addr(w),
					 km.plain.key, FI_INT64, FI_SUM),
			"%s", what);
	add = 0x7fff; /* the operand is ours again at once */
	rt_cntr_reach(n.write_cntr, done + 1, "%s", what);
	if (by_msg) {
		atomic_done(&msg, FI_WRITE, false, what);
		return;
	}
	rep.base_ops++;
}

static void part1(void)
{
	for (int i = 0; i < P1_OPS; i++)
		rep.fetched[i] =
			fetch_add(W_SUM, 1, km.plain.key, "a fetch-add of 1");
}

static void part2(void)
{
	for (int i = 0; i < P2_OPS; i++) {
		add_base(W_BASE, -3, km.plain.key, "fi_atomic(FI_SUM, -3)");
		add_injected(W_BASE, 5, i % 2, "an injected add of 5");
	}
}

static void part3(uint64_t me)
{
	for (int r = 0; r < P3_ROUNDS; r++) {
		uint64_t inside, old;

		while (cswap(W_LOCK, 0, me + 1, "taking the lock"))
			;
		inside = atomic_read(W_INLOCK, "FI_ATOMIC_READ in the lock");
		old = fetch_add(W_INLOCK, 1, km.plain.key,
				"an add in the lock");
		EXPECT(old == inside,
		       "round %d: the word moved from %" PRIu64 " to %" PRIu64
		       " while we held the lock",
		       r, inside, old);
		old = cswap(W_LOCK, me + 1, 0, "releasing the lock");
		EXPECT(old == me + 1,
		       "round %d: the lock held %" PRIu64 ", not our %" PRIu64,
		       r, old, me + 1);
	}
}

static void part4(void)
{
	uint64_t before = atomic_read(W_P4, "FI_ATOMIC_READ of a word");

	EXPECT(before == 7,
	       "part 4's word reads %" PRIu64 ", the target "
	       "put 7 there",
	       before);
	EXPECT(atomic_read(W_P4, "FI_ATOMIC_READ again") == 7,
	       "FI_ATOMIC_READ changed the word");
	for (int i = 0; i < P4_FETCHES; i++)
		EXPECT(fetch_add(W_P4, 2, km.evented.key,
				 "a fetch-add with the counted key") ==
			       7 + 2 * (uint64_t) i,
		       "fetch-add %d", i);
	for (int i = 0; i < P4_BASE; i++)
		add_base(W_P4, 1, km.evented.key,
			 "an add with the counted key");
}

static void expect_valid(int (*valid)(struct fid_ep *, enum fi_datatype,
				      enum fi_op, size_t *),
			 enum fi_datatype dt, enum fi_op op, int want,
			 const char *what)
{
	size_t count = 0;
	int ret = valid(n.ep, dt, op, &count);

	EXPECT(ret == want, "%s: %d (%s), expected %d", what, ret,
	       fi_strerror(-ret), want);
	EXPECT(ret || count == 8, "%s: count %zu", what, count);
}

static void part5_support(void)
{
	struct fi_atomic_attr attr = { 0 };

	expect_valid(fi_atomicvalid, FI_UINT64, FI_SUM, 0, "base SUM u64");
	expect_valid(fi_atomicvalid, FI_INT64, FI_SUM, 0, "base SUM i64");
	expect_valid(fi_atomicvalid, FI_UINT64, FI_PROD, 0, "base PROD u64");
	expect_valid(fi_atomicvalid, FI_DOUBLE, FI_SUM, 0, "base SUM double");
	expect_valid(fi_atomicvalid, FI_DOUBLE, FI_BOR, -FI_EOPNOTSUPP,
		     "base BOR double");
	expect_valid(fi_atomicvalid, FI_DOUBLE_COMPLEX, FI_SUM, -FI_EOPNOTSUPP,
		     "base SUM double complex");
	expect_valid(fi_atomicvalid, FI_UINT128, FI_SUM, -FI_EOPNOTSUPP,
		     "base SUM u128");
	expect_valid(fi_atomicvalid, FI_UINT128 + 5, FI_SUM, -FI_EINVAL,
		     "a datatype past the last");
	expect_valid(fi_fetch_atomicvalid, FI_UINT64, FI_ATOMIC_READ, 0,
		     "fetch READ u64");
	expect_valid(fi_fetch_atomicvalid, FI_UINT64, FI_ATOMIC_WRITE, 0,
		     "fetch WRITE u64");
	expect_valid(fi_fetch_atomicvalid, FI_UINT64, FI_CSWAP, -FI_EOPNOTSUPP,
		     "fetch CSWAP u64");
	expect_valid(fi_compare_atomicvalid, FI_INT64, FI_CSWAP, 0,
		     "CSWAP i64");
	expect_valid(fi_compare_atomicvalid, FI_INT64, FI_CSWAP_NE, 0,
		     "CSWAP_NE i64");
	expect_valid(fi_compare_atomicvalid, FI_INT64, FI_SUM, -FI_EOPNOTSUPP,
		     "compare SUM i64");
	RT_OK(fi_query_atomic(rt_domain(), FI_UINT64, FI_CSWAP, &attr,
			      FI_COMPARE_ATOMIC));
	EXPECT(attr.count == 8 && attr.size == 8,
	       "fi_query_atomic: count %zu "
	       "size %zu",
	       attr.count, attr.size);
	RT_CALL(fi_query_atomic(rt_domain(), FI_UINT64, FI_SUM, &attr,
				FI_FETCH_ATOMIC | FI_COMPARE_ATOMIC),
		-FI_EINVAL);
	RT_CALL(fi_query_atomic(rt_domain(), FI_UINT64, FI_SUM, &attr, 0), 0);
}

static void part5_invalid(void)
{
	uint64_t v[9] = { 1, 1 }, result;

	RT_CALL(fi_atomic(n.ep, v, 9, NULL, n.peer, word_addr(W_READ),
			  km.plain.key, FI_UINT64, FI_SUM, NULL),
		-FI_EINVAL);
	RT_CALL(fi_atomic(n.ep, v, 1, NULL, n.peer, word_addr(W_READ) + 4,
			  km.plain.key, FI_UINT64, FI_SUM, NULL),
		-FI_EINVAL);
	RT_CALL(fi_atomic(n.ep, v, 1, NULL, n.peer, word_addr(W_READ),
			  km.plain.key, FI_LONG_DOUBLE, FI_SUM, NULL),
		-FI_EOPNOTSUPP);
	RT_CALL(fi_fetch_atomic(n.ep, v, 1, NULL, &result, NULL, n.peer,
				word_addr(W_READ), km.plain.key, FI_UINT64,
				FI_MSWAP, NULL),
		-FI_EOPNOTSUPP);
	RT_CALL(fi_atomic(n.ep, v, 1, NULL, n.peer, word_addr(W_READ),
			  km.plain.key, FI_UINT64, FI_CSWAP, NULL),
		-FI_EOPNOTSUPP);
	RT_CALL(fi_atomicmsg(n.ep,
			     &(struct fi_msg_atomic){
				     .msg_iov = &(struct fi_ioc){ .addr = v,
								  .count = 1 },
				     .iov_count = 1,
				     .addr = n.peer,
				     .rma_iov =
					     &(struct fi_rma_ioc){
						     .addr = word_addr(W_READ),
						     .count = 1,
						     .key = km.plain.key },
				     .rma_iov_count = 1,
				     .datatype = FI_UINT64,
				     .op = FI_SUM },
			     FI_TAGGED),
		-FI_EOPNOTSUPP);
	rt_cq_expect_empty(n.tx, "after atomics refused at once");
}

/* A wrong key: an error entry, its error count, then the next one works. */
static void part5_bad_key(void)
{
	uint64_t add = 1, result, errs = fi_cntr_readerr(n.read_cntr);
	struct fi_cq_err_entry e;

	RT_POST(fi_fetch_atomic(n.ep, &add, 1, NULL, &result, NULL, n.peer,
				word_addr(W_READ), km.plain.key ^ 0x00ff00ffu,
				FI_UINT64, FI_SUM, &result),
		"a fetch-add with a wrong key");
	e = rt_cq_wait_err(n.tx, "the error entry of a wrong key");
	rt_note("   a fetch-add with a wrong key: err %d (%s), prov_errno %d",
		e.err, fi_strerror(e.err), e.prov_errno);
	EXPECT(e.err > 0 && e.prov_errno != 0 && e.op_context == &result,
	       "err %d prov_errno %d context %p", e.err, e.prov_errno,
	       e.op_context);
	EXPECT((e.flags & (FI_ATOMIC | FI_READ)) == (FI_ATOMIC | FI_READ),
	       "flags 0x%" PRIx64, e.flags);
	EXPECT(fi_cntr_readerr(n.read_cntr) == errs + 1, "the read counter's "
							 "error count");
	EXPECT(fetch_add(W_READ, 1, km.plain.key, "the next fetch-add") == 0,
	       "the wrong key's add landed");
}

static void initiator(void *arg)
{
	uint64_t me = (uintptr_t) arg;
	struct rt_node_opts o = { .tx_errors_ok = true,
				  .write_cntr = true,
				  .read_cntr = true };

	cc = rt_initiator_chan(links, NINIT, (int) me);
	rt_node_open(&n, &o, itest_who);
	rt_chan_read(&cc, &km, sizeof(km), "the target's name and keys");
	rt_node_insert(&n, &km.name);
	part1();
	part2();
	part3(me);
	if (me == 0) {
		part4();
		part5_support();
		part5_invalid();
		part5_bad_key();
	}
	itest_chan_write(&cc, &rep, sizeof(rep));
	rt_expect(&cc, SIG_DONE, "the target's checks");
	rt_node_close(&n);
	itest_domain_close();
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;

	return (x > y) - (x < y);
}

/* Part 1's fetched values, all initiators together: 0 .. N - 1, once each. */
static void check_fetched(const struct report *r)
{
	static uint64_t all[NINIT * P1_OPS];

	for (int i = 0; i < NINIT; i++)
		memcpy(&all[i * P1_OPS], r[i].fetched, sizeof(r[i].fetched));
	qsort(all, NINIT * P1_OPS, sizeof(*all), cmp_u64);
	for (uint64_t i = 0; i < NINIT * P1_OPS; i++)
		if (all[i] != i)
			FAIL("part 1: the sorted fetched values hold %" PRIu64
			     " at %" PRIu64 ": a value fetched twice or never",
			     all[i], i);
}

static void target_checks(const uint64_t *words, const struct report *r,
			  struct rt_node *t, struct fid_cntr *mr_cntr)
{
	uint64_t base = 0, fetch = 0, reads = 0;

	for (int i = 0; i < NINIT; i++) {
		base += r[i].base_ops;
		fetch += r[i].fetch_ops;
		reads += r[i].read_ops;
	}
	check_fetched(r);
	EXPECT(words[W_SUM] == NINIT * P1_OPS, "part 1's word: %" PRIu64,
	       words[W_SUM]);
	EXPECT((int64_t) words[W_BASE] == NINIT * P2_OPS * 2,
	       "part 2's sum: %" PRId64 ", expected %d",
	       (int64_t) words[W_BASE], NINIT * P2_OPS * 2);
	EXPECT(words[W_LOCK] == 0 && words[W_INLOCK] == NINIT * P3_ROUNDS,
	       "part 3: lock %" PRIu64 ", adds in the lock %" PRIu64,
	       words[W_LOCK], words[W_INLOCK]);
	EXPECT(words[W_P4] == 7 + 2 * P4_FETCHES + P4_BASE,
	       "part 4's word: %" PRIu64, words[W_P4]);
	EXPECT(words[W_READ] == 1, "part 5's word: %" PRIu64, words[W_READ]);
	for (int w = W_P4 + 1; w < WORDS; w++)
		EXPECT(words[w] == 0, "word %d moved: %" PRIu64, w, words[w]);
	rt_guard_check(words, WORDS * 8, "the target's words");
	EXPECT(fi_cntr_read(t->remote_cntr) == base + fetch,
	       "FI_REMOTE_WRITE counter %" PRIu64 ", base atomics %" PRIu64
	       ", updating fetches %" PRIu64,
	       fi_cntr_read(t->remote_cntr), base, fetch);
	EXPECT(fi_cntr_read(t->rread_cntr) == fetch + reads,
	       "FI_REMOTE_READ counter %" PRIu64 ", updating fetches %" PRIu64
	       ", FI_ATOMIC_READs %" PRIu64,
	       fi_cntr_read(t->rread_cntr), fetch, reads);
	EXPECT(fi_cntr_read(mr_cntr) == P4_FETCHES + P4_BASE,
	       "the "
	       "registration's counter: %" PRIu64,
	       fi_cntr_read(mr_cntr));
	rt_note("%" PRIu64 " base and %" PRIu64 " fetching atomics from %d "
		"initiators: words, old values and counters exact",
		base, fetch + reads, NINIT);
}

static void target(void)
{
	uint64_t *words = rt_guarded(WORDS * 8);
	struct rt_node_opts o = { .remote_flags = FI_REMOTE_WRITE,
				  .rread_cntr = true };
	static struct report r[NINIT];
	struct fid_cntr *mr_cntr = itest_cntr_open(rt_domain());
	const uint64_t rw = FI_REMOTE_WRITE | FI_REMOTE_READ;
	struct fid_mr *plain, *evented;
	struct keymsg m;
	struct rt_node t;

	words[W_P4] = 7;
	plain = rt_mr_reg(words, WORDS * 8, rw, 0);
	evented = rt_mr_reg_cntr(words, WORDS * 8, rw, mr_cntr, rw);
	rt_node_open(&t, &o, "target");
	m = (struct keymsg){ .name = t.name,
			     .plain = rt_rkey_of(plain, words, WORDS * 8),
			     .evented = rt_rkey_of(evented, words, WORDS * 8) };
	for (int i = 0; i < NINIT; i++)
		itest_chan_write(&pc[i], &m, sizeof(m));
	/* Progress accepts the connections; the atomics need none. */
	for (int i = 0; i < NINIT; i++)
		rt_chan_read(&pc[i], &r[i], sizeof(r[i]),
			     "initiator %d's "
			     "report",
			     i);
	target_checks(words, r, &t, mr_cntr);
	for (int i = 0; i < NINIT; i++)
		itest_signal(&pc[i], SIG_DONE);
	rt_node_close(&t);
	RT_OK(fi_close(&plain->fid));
	RT_OK(fi_close(&evented->fid));
	itest_cntr_close(mr_cntr);
	rt_guarded_free(words);
}

int main(void)
{
	int64_t start = itest_now_ms();

	rt_init();
	setvbuf(stdout, NULL, _IOLBF, 0);
	rt_fork_initiators(links, pc, NINIT, initiator);
	target();
	itest_wait_kids();
	itest_domain_close();
	rt_pass("nrma_atomic", start);
	return 0;
}
