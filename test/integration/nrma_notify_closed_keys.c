/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Notified RMA with keys that name nothing, or no longer.  The parent is
 * the target, its child the initiator (see itest_notify.h).
 *
 * The target closes one of its counted registrations (its counter keeps
 * its count and then closes).  First the closed key itself, which the
 * initiator used before: the target's fi_close told it that its keys
 * changed, so it ends in an FI_EACCES error entry before it reaches the
 * device, whose refusal would break the connection, and a write posted
 * right behind it on the same connection lands.  Then a key the target
 * never handed out, the closed key's slot under its next key, a range
 * past a region's end and a read of a region registered for writes only
 * each end in an error entry (FI_EACCES) at the initiator and bump its
 * error count, with the connection still up.  No counter moves; writes
 * with another counted key then work and count.
 */
#include "itest_notify.h"

#define P8_LEN	 4096
#define P8_AFTER 3 /* operations with the live key at the end */

enum { P8_PLAIN, P8_GONE, P8_LIVE, P8_WONLY, P8_KEYS };

static void target(void)
{
	uint64_t *buf = rt_guarded(P8_LEN);
	struct fid_cntr *gone = itest_cntr_open(rt_domain());
	struct fid_cntr *live = itest_cntr_open(rt_domain());
	const uint64_t rw = FI_REMOTE_WRITE | FI_REMOTE_READ;
	struct fid_mr *mr[P8_KEYS];
	struct keymsg km = { 0 };
	struct rt_node t;

	mr[P8_PLAIN] = rt_mr_reg(buf, P8_LEN, rw, 0);
	mr[P8_GONE] = rt_mr_reg_cntr(buf, P8_LEN, rw, gone, rw);
	mr[P8_LIVE] = rt_mr_reg_cntr(buf, P8_LEN, rw, live, rw);
	mr[P8_WONLY] = rt_mr_reg(buf, P8_LEN, FI_REMOTE_WRITE, 0);
	for (int k = 0; k < P8_KEYS; k++)
		km.k[k] = rt_rkey_of(mr[k], buf, P8_LEN);
	target_open(&t, 0, &km, 1);
	rt_expect(&pc[0], SIG_WARM, "a write and a read with each key");
	expect_cntr(gone, 2, "the counter of the registration to be closed");
	expect_cntr(live, 2, "the counter of the live registration");
	RT_OK(fi_close(&mr[P8_GONE]->fid));
	expect_cntr(gone, 2,
		    "a counter whose registration was closed keeps "
		    "its count");
	itest_cntr_close(gone);
	itest_signal(&pc[0], SIG_GO);
	rt_expect(&pc[0], SIG_DONE,
		  "the initiator's operations with keys "
		  "of the closed binding");
	expect_cntr(live, 2 + P8_AFTER,
		    "the live registration's counter: "
		    "only its own key's operations");
	for (int i = 0; i < P8_AFTER; i++)
		EXPECT(buf[16 + i] == stamp(8100 + i),
		       "write %d with the live "
		       "key after the errors: 0x%" PRIx64,
		       i, buf[16 + i]);
	rt_guard_check(buf, P8_LEN, "the target's buffer");
	rt_note("keys that name nothing: error completions, nothing "
		"counted, the next operations work");
	target_close(&t, 1);
	RT_OK(fi_close(&mr[P8_PLAIN]->fid));
	RT_OK(fi_close(&mr[P8_LIVE]->fid));
	RT_OK(fi_close(&mr[P8_WONLY]->fid));
	itest_cntr_close(live);
	rt_guarded_free(buf);
}

static ssize_t p8_post(struct rt_node *n, bool read, uint64_t *local,
		       const struct rt_rkey *rk, uint64_t key, uint64_t word)
{
	return read ? fi_read(n->ep, local, 8, NULL, n->peer,
			      rk->addr + word * 8, key, local) :
		      fi_write(n->ep, local, 8, NULL, n->peer,
			       rk->addr + word * 8, key, local);
}

static void p8_ok(struct rt_node *n, bool read, uint64_t *local,
		  const struct rt_rkey *rk, uint64_t word, const char *what)
{
	struct itest_comp c;

	RT_POST(p8_post(n, read, local, rk, rk->key, word), "%s", what);
	c = rt_cq_wait(n->tx, "%s", what);
	RT_EXPECT_COMP(c, local, FI_RMA | (read ? FI_READ : FI_WRITE), 0, "%s",
		       what);
}

/*
 * An error the provider raises before the operation goes: an FI_EACCES
 * entry at the initiator, its error count, and no other entry.
 */
static void p8_refused(struct rt_node *n, bool read, const struct rt_rkey *rk,
		       uint64_t key, const char *what)
{
	struct fid_cntr *cntr = read ? n->read_cntr : n->write_cntr;
	uint64_t errs = fi_cntr_readerr(cntr), local = stamp(8000);
	struct fi_cq_err_entry e;

	RT_POST(p8_post(n, read, &local, rk, key, 8), "%s", what);
	e = rt_cq_wait_err(n->tx, "the error entry of %s", what);
	rt_note("   %s: err %d (%s), prov_errno %d", what, e.err,
		fi_strerror(e.err), e.prov_errno);
	EXPECT(e.err == FI_EACCES && e.prov_errno != 0,
	       "%s: err %d, prov_errno %d; expected FI_EACCES", what, e.err,
	       e.prov_errno);
	EXPECT(e.op_context == &local, "%s: op_context %p, expected %p", what,
	       e.op_context, (void *) &local);
	rt_cq_expect_empty(n->tx, "after the error of %s", what);
	EXPECT(fi_cntr_readerr(cntr) == errs + 1,
	       "%s: the error count went "
	       "from %" PRIu64 " to %" PRIu64,
	       what, errs, fi_cntr_readerr(cntr));
}

/*
 * The closed key, read before the close, then a write with the live key
 * at once behind it: the first is refused, the second lands.
 */
static void p8_refused_behind(struct rt_node *n, const struct rt_rkey *gone,
			      const struct rt_rkey *live, uint64_t *local)
{
	const char *what = "a write with the closed registration's key";
	uint64_t errs = fi_cntr_readerr(n->write_cntr), refused = stamp(8000);
	struct fi_cq_err_entry e;
	struct itest_comp c;

	RT_POST(p8_post(n, false, &refused, gone, gone->key, 8), "%s", what);
	RT_POST(p8_post(n, false, local, live, live->key, 16),
		"the write behind it");
	e = rt_cq_wait_err(n->tx, "the error entry of %s", what);
	rt_note("   %s: err %d (%s), prov_errno %d", what, e.err,
		fi_strerror(e.err), e.prov_errno);
	EXPECT(e.err == FI_EACCES && e.op_context == &refused,
	       "%s: err %d, context %p; expected FI_EACCES, %p", what, e.err,
	       e.op_context, (void *) &refused);
	c = rt_cq_wait(n->tx, "the write behind %s", what);
	RT_EXPECT_COMP(c, local, FI_RMA | FI_WRITE, 0,
		       "the write with the live key behind it");
	rt_cq_expect_empty(n->tx, "after %s", what);
	EXPECT(fi_cntr_readerr(n->write_cntr) == errs + 1,
	       "%s: the error count went from %" PRIu64 " to %" PRIu64, what,
	       errs, fi_cntr_readerr(n->write_cntr));
}

static void initiator(uint64_t me)
{
	struct rt_node_opts o = { .tx_errors_ok = true,
				  .write_cntr = true,
				  .read_cntr = true };
	uint64_t local[P8_AFTER + 1];
	struct rt_rkey past_end;
	struct keymsg km;
	struct rt_node n;

	(void) me;
	init_open_opts(&n, &km, &o);
	for (int k = P8_GONE; k <= P8_LIVE; k++) {
		local[0] = stamp(k);
		p8_ok(&n, false, &local[0], &km.k[k], k,
		      "a write with a "
		      "counted key");
		p8_ok(&n, true, &local[0], &km.k[k], k,
		      "a read with a "
		      "counted key");
	}
	itest_signal(&cc, SIG_WARM);
	rt_expect(&cc, SIG_GO, "the target closing a registration");

	/* First: the slot under another key would make us read it again. */
	local[0] = stamp(8100);
	p8_refused_behind(&n, &km.k[P8_GONE], &km.k[P8_LIVE], &local[0]);
	p8_refused(&n, false, &km.k[P8_PLAIN], km.k[P8_LIVE].key + 100,
		   "a write with a key the target never handed out");
	p8_refused(&n, false, &km.k[P8_GONE], km.k[P8_GONE].key + (1ULL << 32),
		   "a write with the closed key's slot under its next key");
	past_end = km.k[P8_PLAIN];
	past_end.addr += P8_LEN - 8 * 8;
	p8_refused(&n, false, &past_end, past_end.key,
		   "a write that ends past its region");
	p8_refused(&n, true, &km.k[P8_WONLY], km.k[P8_WONLY].key,
		   "a read of a region registered for remote writes only");
	for (int i = 1; i < P8_AFTER; i++) {
		local[i] = stamp(8100 + i);
		p8_ok(&n, false, &local[i], &km.k[P8_LIVE], 16 + i,
		      "a write with the live key after the errors");
	}
	itest_signal(&cc, SIG_DONE);
	init_close(&n);
}

int main(void)
{
	return nt_main("nrma_notify_closed_keys", 1, target, initiator);
}
