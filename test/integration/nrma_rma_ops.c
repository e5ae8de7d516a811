/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * RMA operations between two processes: the parent is the target, the
 * child the initiator.  The target keeps a shadow of what its buffer must
 * hold and, at each step the initiator asks for, compares all of it (and
 * the guard bytes around it) with the shadow, so a write that lands in the
 * wrong place or where it was not allowed is caught.
 *
 *  1. fi_write and fi_read of 0, 1, 4096, 8192, 8193 bytes and 1 MiB (with
 *     and without a descriptor), data checked at the other side;
 *  2. fi_writev and fi_readv of 3 iovs (inline, below and above the eager
 *     size);
 *  3. fi_inject_write: the source may change at once, no CQ entry, the
 *     write counter counts it; inject_size + 1 bytes is -FI_EINVAL;
 *     then a window of 48 small writes in flight at once (every fifth
 *     injected): their entries come in posting order, all are counted;
 *  4. fi_writedata and fi_inject_writedata: the target's receive CQ
 *     (FI_CQ_FORMAT_DATA) gets FI_RMA | FI_REMOTE_WRITE | FI_REMOTE_CQ_DATA
 *     with the data and the length;
 *  5. fi_writemsg with FI_DELIVERY_COMPLETE, small (the light path) and
 *     large: the data is there when it completes; a read followed at once
 *     by a FI_FENCE write to the same place, small and large, reads the
 *     old data;
 *  6. invalid arguments: rma_iov_count 2 (and 0), more iovs than
 *     tx_attr->iov_limit: -FI_EINVAL at once, nothing posted;
 *  7. selective completion: only FI_COMPLETION operations have CQ entries,
 *     the counters count all;
 *  8. errors: a write with a wrong key, one past the end of the MR, one to
 *     an MR without FI_REMOTE_WRITE, and a read with a wrong key each give
 *     an error entry (err > 0, prov_errno != 0) and bump the error count
 *     of the initiator's counter, change nothing at the target outside
 *     what the MR allows, and the next operation to that peer succeeds
 *     (after -FI_EAGAIN while the provider reconnects, if need be).
 *
 * Built again as nrma_rma_ops_thread_domain (RT_THREADING), all of it in
 * a domain opened FI_THREAD_DOMAIN: each process makes its calls from
 * one thread, and the provider leaves out the locks that serializes.
 */
#include "itest_rma.h"

#define TLEN	  (2u << 20) /* the target's buffer */
#define ROLEN	  65536	     /* the target's read-only buffer */
#define LLEN	  (2u << 20) /* the initiator's buffer */
#define MiB	  (1u << 20)
#define UNTOUCHED 0xee /* fill of local buffers before a read */

/* What the initiator asks of the target, over the pipe. */
enum {
	REQ_CHECK = 1, /* [off, off + len) now holds pattern seed */
	REQ_FILL,      /* put pattern seed at [off, off + len) */
	REQ_UNCHANGED, /* nothing changed since the last request */
	REQ_RXDATA,    /* as CHECK, after an rx CQ entry with data */
	REQ_DONE,
};

#define REPLY_OK 0x600d

struct req {
	uint32_t op;
	uint32_t pad;
	uint64_t off;
	uint64_t len;
	uint64_t seed;
	uint64_t data;
	char what[80];
};

struct target_keys {
	struct rt_rkey t;  /* TLEN bytes, FI_REMOTE_WRITE | FI_REMOTE_READ */
	struct rt_rkey ro; /* ROLEN bytes, FI_REMOTE_READ only */
};

static struct itest_link link_;
static char ctx[256];

#define CTX(i) ((void *) &ctx[i])

/* The target */

static void target_check_all(const unsigned char *tbuf,
			     const unsigned char *shadow,
			     const unsigned char *robuf, const char *what)
{
	if (memcmp(tbuf, shadow, TLEN)) {
		size_t i = 0;

		while (tbuf[i] == shadow[i])
			i++;
		FAIL("%s: the target's buffer differs from what it should "
		     "hold at byte %zu: 0x%02x, expected 0x%02x",
		     what, i, tbuf[i], shadow[i]);
	}
	rt_guard_check(tbuf, TLEN, "%s: the target's buffer", what);
	rt_pat_check(robuf, 77, 0, ROLEN, "%s: the read-only buffer", what);
	rt_guard_check(robuf, ROLEN, "%s: the read-only buffer", what);
}

static void target_rxdata(struct rt_node *n, const struct req *r)
{
	struct itest_comp c =
		rt_cq_wait(n->rx, "the rx CQ entry of %s", r->what);

	RT_EXPECT_COMP(c, NULL, FI_RMA | FI_REMOTE_WRITE | FI_REMOTE_CQ_DATA,
		       FI_SEND | FI_RECV | FI_MSG | FI_TAGGED, "%s: rx entry",
		       r->what);
	EXPECT(c.data == r->data, "%s: data 0x%" PRIx64 ", expected 0x%" PRIx64,
	       r->what, c.data, r->data);
	EXPECT(c.len == r->len, "%s: len %zu, expected %" PRIu64, r->what,
	       c.len, r->len);
	rt_cq_expect_empty(n->rx, "after the entry of %s", r->what);
}

static void target(struct itest_chan *ch)
{
	unsigned char *tbuf = rt_guarded(TLEN), *robuf = rt_guarded(ROLEN);
	unsigned char *shadow = calloc(1, TLEN);
	struct target_keys keys;
	struct fid_mr *tmr, *romr;
	struct rt_node n;
	struct req r;
	uint32_t ok = REPLY_OK;
	size_t nreq = 0;

	CHECK(shadow != NULL);
	rt_pat_gen(robuf, 77, 0, ROLEN);
	rt_node_open(&n, NULL, "target");
	tmr = rt_mr_reg(tbuf, TLEN, FI_REMOTE_WRITE | FI_REMOTE_READ, 0);
	romr = rt_mr_reg(robuf, ROLEN, FI_REMOTE_READ, 0);
	keys.t = rt_rkey_of(tmr, tbuf, TLEN);
	keys.ro = rt_rkey_of(romr, robuf, ROLEN);
	rt_node_exchange(&n, ch);
	itest_chan_write(ch, &keys, sizeof(keys));
	for (;;) {
		rt_chan_read(ch, &r, sizeof(r),
			     "the initiator's next request "
			     "(after %zu)",
			     nreq);
		nreq++;
		r.what[sizeof(r.what) - 1] = 0;
		if (r.op == REQ_DONE)
			break;
		CHECK(r.off <= TLEN && r.len <= TLEN - r.off);
		switch (r.op) {
		case REQ_FILL:
			rt_pat_gen(tbuf + r.off, r.seed, 0, r.len);
			rt_pat_gen(shadow + r.off, r.seed, 0, r.len);
			break;
		case REQ_RXDATA:
			target_rxdata(&n, &r);
			/* fall through */
		case REQ_CHECK:
			rt_pat_check(tbuf + r.off, r.seed, 0, r.len,
				     "%s: at the target", r.what);
			rt_pat_gen(shadow + r.off, r.seed, 0, r.len);
			/* fall through */
		case REQ_UNCHANGED:
			target_check_all(tbuf, shadow, robuf, r.what);
			break;
		default:
			FAIL("unknown request %u", r.op);
		}
		if (r.op != REQ_RXDATA)
			rt_cq_expect_empty(n.rx,
					   "%s: nothing for the target's "
					   "rx CQ",
					   r.what);
		itest_chan_write(ch, &ok, sizeof(ok));
	}
	itest_chan_write(ch, &ok, sizeof(ok));
	RT_OK(fi_close(&tmr->fid));
	RT_OK(fi_close(&romr->fid));
	rt_node_close(&n);
	itest_domain_close();
	rt_guarded_free(tbuf);
	rt_guarded_free(robuf);
	free(shadow);
}

/* The initiator */

static struct itest_chan *ich;
static struct target_keys tk;
static struct rt_node in;
static unsigned char *lbuf;
static struct fid_mr *lmr;
static void *ldesc;
static uint64_t nwrites, nreads, nwrite_errs, nread_errs;

static void ask(uint32_t op, uint64_t off, uint64_t len, uint64_t seed,
		uint64_t data, const char *what)
{
	struct req r = {
		.op = op, .off = off, .len = len, .seed = seed, .data = data
	};
	uint32_t reply;

	snprintf(r.what, sizeof(r.what), "%s", what);
	itest_chan_write(ich, &r, sizeof(r));
	rt_chan_read(ich, &reply, sizeof(reply), "the target's check of %s",
		     what);
	EXPECT(reply == REPLY_OK, "reply 0x%x", reply);
}

static void check_counts(const struct rt_node *n, uint64_t w, uint64_t r,
			 uint64_t werr, uint64_t rerr, const char *what)
{
	uint64_t v;

	v = fi_cntr_read(n->write_cntr);
	EXPECT(v == w,
	       "%s: the write counter reads %" PRIu64 ", expected %" PRIu64,
	       what, v, w);
	v = fi_cntr_read(n->read_cntr);
	EXPECT(v == r,
	       "%s: the read counter reads %" PRIu64 ", expected %" PRIu64,
	       what, v, r);
	v = fi_cntr_readerr(n->write_cntr);
	EXPECT(v == werr,
	       "%s: the write counter's errors read %" PRIu64
	       ", expected %" PRIu64,
	       what, v, werr);
	v = fi_cntr_readerr(n->read_cntr);
	EXPECT(v == rerr,
	       "%s: the read counter's errors read %" PRIu64
	       ", expected %" PRIu64,
	       what, v, rerr);
}

static void wait_tx(void *context, uint64_t flags, const char *what)
{
	struct itest_comp c = rt_cq_wait(in.tx, "the completion of %s", what);

	RT_EXPECT_COMP(c, context, FI_RMA | flags,
		       FI_SEND | FI_RECV | FI_MSG | FI_TAGGED |
			       (flags == FI_WRITE ? FI_READ : FI_WRITE),
		       "%s", what);
}

static void write_one(size_t len, uint64_t off, uint64_t seed, void *desc,
		      const char *what)
{
	rt_pat_gen(lbuf, seed, 0, len);
	RT_POST(fi_write(in.ep, lbuf, len, desc, in.peer, tk.t.addr + off,
			 tk.t.key, CTX(1)),
		"%s", what);
	wait_tx(CTX(1), FI_WRITE, what);
	nwrites++;
	check_counts(&in, nwrites, nreads, nwrite_errs, nread_errs, what);
	rt_guard_check(lbuf, LLEN, "%s: the initiator's buffer", what);
	ask(REQ_CHECK, off, len, seed, 0, what);
}

/* Reads [off, off + len) after the target put pattern seed there. */
static void read_one(size_t len, uint64_t off, uint64_t seed, void *desc,
		     const char *what)
{
	size_t tail = LLEN - len < 4096 ? LLEN - len : 4096;

	ask(REQ_FILL, off, len, seed, 0, what);
	memset(lbuf, UNTOUCHED, len + tail);
	RT_POST(fi_read(in.ep, lbuf, len, desc, in.peer, tk.t.addr + off,
			tk.t.key, CTX(2)),
		"%s", what);
	wait_tx(CTX(2), FI_READ, what);
	nreads++;
	check_counts(&in, nwrites, nreads, nwrite_errs, nread_errs, what);
	rt_pat_check(lbuf, seed, 0, len, "%s: read data", what);
	rt_fill_check(lbuf + len, UNTOUCHED, tail, "%s: past the read data",
		      what);
	rt_guard_check(lbuf, LLEN, "%s: the initiator's buffer", what);
}

static void part_sizes(void)
{
	static const size_t sizes[] = { 0, 1, 4096, 8192, 8193, MiB };
	const size_t n = sizeof(sizes) / sizeof(sizes[0]);

	for (size_t i = 0; i < n; i++)
		for (int d = 0; d < 2; d++)
			write_one(sizes[i], 13 * (i + 1) + 8, 100 + 2 * i + d,
				  d ? ldesc : NULL,
				  itest_fmt("fi_write of %zu bytes (%s desc)",
					    sizes[i], d ? "with" : "no"));
	for (size_t i = 0; i < n; i++)
		for (int d = 0; d < 2; d++)
			read_one(sizes[i], 17 * (i + 1) + 5, 200 + 2 * i + d,
				 d ? ldesc : NULL,
				 itest_fmt("fi_read of %zu bytes (%s desc)",
					   sizes[i], d ? "with" : "no"));
	rt_note("1. fi_write/fi_read of 0..1 MiB: ok");
}

/* 3 iovs at scattered places of lbuf, with untouched gaps between. */
static size_t make_iovs(struct iovec *iov, const size_t *lens, size_t count)
{
	size_t at = 100, total = 0;

	for (size_t i = 0; i < count; i++) {
		iov[i].iov_base = lbuf + at;
		iov[i].iov_len = lens[i];
		at += lens[i] + 333;
		total += lens[i];
	}
	return total;
}

static void part_iov(void)
{
	/* Tiny goes inline where the device has it, an empty iov among. */
	static const size_t tiny[3] = { 5, 0, 20 };	       /* 25 */
	static const size_t small[3] = { 100, 3000, 5000 };    /* 8100 */
	static const size_t large[3] = { 4096, 10000, 50000 }; /* 64096 */
	static const size_t *const sets[3] = { tiny, small, large };
	void *descs[3] = { ldesc, ldesc, ldesc };
	struct iovec iov[3];

	for (int set = 0; set < 3; set++) {
		const size_t *lens = sets[set];
		int big = set == 2;
		size_t total = make_iovs(iov, lens, 3), cum = 0;
		uint64_t seed = 300 + set, off = 1000 + set * 7;
		const char *what =
			itest_fmt("fi_writev of 3 iovs, %zu bytes", total);

		memset(lbuf, UNTOUCHED, LLEN);
		for (int i = 0; i < 3; i++) {
			rt_pat_gen(iov[i].iov_base, seed, cum, lens[i]);
			cum += lens[i];
		}
		RT_POST(fi_writev(in.ep, iov, big ? descs : NULL, 3, in.peer,
				  tk.t.addr + off, tk.t.key, CTX(3)),
			"%s", what);
		wait_tx(CTX(3), FI_WRITE, what);
		nwrites++;
		check_counts(&in, nwrites, nreads, 0, 0, what);
		ask(REQ_CHECK, off, total, seed, 0, what);

		seed = 310 + set;
		what = itest_fmt("fi_readv of 3 iovs, %zu bytes", total);
		ask(REQ_FILL, off, total, seed, 0, what);
		memset(lbuf, UNTOUCHED, LLEN);
		RT_POST(fi_readv(in.ep, iov, big ? descs : NULL, 3, in.peer,
				 tk.t.addr + off, tk.t.key, CTX(4)),
			"%s", what);
		wait_tx(CTX(4), FI_READ, what);
		nreads++;
		check_counts(&in, nwrites, nreads, 0, 0, what);
		cum = 0;
		for (int i = 0; i < 3; i++) {
			unsigned char *p = iov[i].iov_base;

			rt_pat_check(p, seed, cum, lens[i], "%s: iov %d", what,
				     i);
			rt_fill_check(p + lens[i], UNTOUCHED, 333,
				      "%s: the gap after iov %d", what, i);
			cum += lens[i];
		}
		rt_fill_check(lbuf, UNTOUCHED, 100, "%s: before iov 0", what);
	}
	rt_note("2. fi_writev/fi_readv of 3 iovs: ok");
}

static void part_inject(void)
{
	size_t inject_size = itest_info->tx_attr->inject_size;
	unsigned char src[64];
	const char *what;

	EXPECT(inject_size >= 64 && inject_size <= LLEN, "inject_size %zu",
	       inject_size);
	what = "fi_inject_write of 64 bytes";
	rt_pat_gen(src, 400, 0, sizeof(src));
	RT_POST(fi_inject_write(in.ep, src, sizeof(src), in.peer,
				tk.t.addr + 5000, tk.t.key),
		"%s", what);
	memset(src, 0x11, sizeof(src)); /* ours again at once */
	nwrites++;
	rt_cntr_reach(in.write_cntr, nwrites, "the write counter after %s",
		      what);
	rt_cq_expect_empty(in.tx, "%s has no CQ entry", what);
	check_counts(&in, nwrites, nreads, 0, 0, what);
	ask(REQ_CHECK, 5000, sizeof(src), 400, 0, what);

	what = itest_fmt("fi_inject_write of inject_size (%zu) bytes",
			 inject_size);
	rt_pat_gen(lbuf, 401, 0, inject_size);
	RT_POST(fi_inject_write(in.ep, lbuf, inject_size, in.peer,
				tk.t.addr + 7, tk.t.key),
		"%s", what);
	memset(lbuf, 0x22, inject_size);
	nwrites++;
	rt_cntr_reach(in.write_cntr, nwrites, "the write counter after %s",
		      what);
	rt_cq_expect_empty(in.tx, "%s has no CQ entry", what);
	ask(REQ_CHECK, 7, inject_size, 401, 0, what);

	RT_CALL(fi_inject_write(in.ep, lbuf, inject_size + 1, in.peer,
				tk.t.addr, tk.t.key),
		-FI_EINVAL);
	rt_note("3. fi_inject_write: ok");
}

/*
 * A window of small writes in flight at once, reaped together: their
 * entries come in posting order, one for each write but the injected ones
 * (every fifth), and the write counter counts them all.  Progress writes
 * the entries of one poll to the CQ as a batch (nrma_comp.h).
 */
static void part_window(void)
{
	enum { WIN = 48, WIN_OFF = 9000, WIN_SEED = 450 };
	const char *what = "a window of 48 8-byte writes";

	rt_pat_gen(lbuf, WIN_SEED, 0, WIN * 8);
	for (int i = 0; i < WIN; i++) {
		if (i % 5 == 4)
			RT_POST(fi_inject_write(in.ep, lbuf + i * 8, 8, in.peer,
						tk.t.addr + WIN_OFF + i * 8,
						tk.t.key),
				"%s: injected write %d", what, i);
		else
			RT_POST(fi_write(in.ep, lbuf + i * 8, 8, ldesc, in.peer,
					 tk.t.addr + WIN_OFF + i * 8, tk.t.key,
					 CTX(i)),
				"%s: write %d", what, i);
	}
	for (int i = 0; i < WIN; i++)
		if (i % 5 != 4)
			wait_tx(CTX(i), FI_WRITE,
				itest_fmt("%s: write %d, in order", what, i));
	rt_cq_expect_empty(in.tx, "%s: no more entries", what);
	nwrites += WIN;
	check_counts(&in, nwrites, nreads, nwrite_errs, nread_errs, what);
	ask(REQ_CHECK, WIN_OFF, WIN * 8, WIN_SEED, 0, what);
	rt_note("3b. a window of writes: entries in order, all counted");
}

static void part_writedata(void)
{
	static const size_t lens[] = { 2000, MiB, 0 };
	const char *what;

	EXPECT(itest_info->domain_attr->cq_data_size >= 4, "cq_data_size %zu",
	       itest_info->domain_attr->cq_data_size);
	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		uint64_t data = 0xc0de0000u + i, off = 3000 + i;

		what = itest_fmt("fi_writedata of %zu bytes", lens[i]);
		rt_pat_gen(lbuf, 500 + i, 0, lens[i]);
		RT_POST(fi_writedata(in.ep, lbuf, lens[i], i ? ldesc : NULL,
				     data, in.peer, tk.t.addr + off, tk.t.key,
				     CTX(5)),
			"%s", what);
		wait_tx(CTX(5), FI_WRITE, what);
		nwrites++;
		check_counts(&in, nwrites, nreads, 0, 0, what);
		ask(REQ_RXDATA, off, lens[i], 500 + i, data, what);
	}

	what = "fi_inject_writedata of 100 bytes";
	rt_pat_gen(lbuf, 510, 0, 100);
	RT_POST(fi_inject_writedata(in.ep, lbuf, 100, 0xfeed0001u, in.peer,
				    tk.t.addr + 9000, tk.t.key),
		"%s", what);
	memset(lbuf, 0x33, 100);
	nwrites++;
	rt_cntr_reach(in.write_cntr, nwrites, "the write counter after %s",
		      what);
	rt_cq_expect_empty(in.tx, "%s has no CQ entry", what);
	ask(REQ_RXDATA, 9000, 100, 510, 0xfeed0001u, what);
	rt_note("4. fi_writedata/fi_inject_writedata: ok");
}

static void rma_msg(struct fi_msg_rma *msg, struct fi_rma_iov *rma,
		    struct iovec *iov, void **desc, size_t len, uint64_t off,
		    void *context)
{
	iov->iov_base = lbuf;
	iov->iov_len = len;
	rma->addr = tk.t.addr + off;
	rma->len = len;
	rma->key = tk.t.key;
	*msg = (struct fi_msg_rma){
		.msg_iov = iov,
		.desc = desc,
		.iov_count = 1,
		.addr = in.peer,
		.rma_iov = rma,
		.rma_iov_count = 1,
		.context = context,
	};
}

/*
 * A read of len bytes, then at once a fenced write of the same bytes: the
 * read gets what was there before.  Small ones take the light path.
 */
static void fence_after_read(unsigned char *rd, void *rdesc, size_t len,
			     uint64_t seed)
{
	const char *what = itest_fmt(
		"a %zu-byte fi_read and a fenced fi_writemsg to the same bytes",
		len);
	struct fi_msg_rma msg;
	struct fi_rma_iov rma;
	struct iovec iov;

	ask(REQ_FILL, 4096, len, seed, 0, what);
	memset(rd, UNTOUCHED, len);
	rt_pat_gen(lbuf, seed + 1, 0, len);
	RT_POST(fi_read(in.ep, rd, len, rdesc, in.peer, tk.t.addr + 4096,
			tk.t.key, CTX(7)),
		"%s", what);
	rma_msg(&msg, &rma, &iov, &ldesc, len, 4096, CTX(8));
	RT_POST(fi_writemsg(in.ep, &msg, FI_FENCE | FI_COMPLETION), "%s", what);
	for (int i = 0; i < 2; i++) {
		struct itest_comp c = rt_cq_wait(in.tx, "%s", what);

		EXPECT(c.op_context == CTX(7) || c.op_context == CTX(8),
		       "%s: op_context %p", what, c.op_context);
		EXPECT(c.flags & (c.op_context == CTX(7) ? FI_READ : FI_WRITE),
		       "%s: flags 0x%" PRIx64, what, c.flags);
	}
	nwrites++;
	nreads++;
	check_counts(&in, nwrites, nreads, 0, 0, what);
	rt_pat_check(rd, seed, 0, len,
		     "%s: the read got the data from before "
		     "the fenced write",
		     what);
	ask(REQ_CHECK, 4096, len, seed + 1, 0, what);
}

/* Small ones (inline, or from the caller's registration) go light. */
static void part_delivery_fence(void)
{
	static const size_t lens[] = { 64, 64, 5000, MiB };
	struct fi_msg_rma msg;
	struct fi_rma_iov rma;
	struct iovec iov;
	unsigned char *rd = malloc(MiB);
	struct fid_mr *rdmr;
	const char *what;

	CHECK(rd != NULL);
	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		what = itest_fmt(
			"fi_writemsg(FI_DELIVERY_COMPLETE) of %zu bytes%s",
			lens[i], i % 2 ? " (registered)" : "");
		rt_pat_gen(lbuf, 600 + i, 0, lens[i]);
		rma_msg(&msg, &rma, &iov, i % 2 ? &ldesc : NULL, lens[i],
			20 + i, CTX(6));
		RT_POST(fi_writemsg(in.ep, &msg,
				    FI_DELIVERY_COMPLETE | FI_COMPLETION),
			"%s", what);
		wait_tx(CTX(6), FI_WRITE, what);
		nwrites++;
		check_counts(&in, nwrites, nreads, 0, 0, what);
		ask(REQ_CHECK, 20 + i, lens[i], 600 + i, 0, what);
	}
	rdmr = rt_mr_reg(rd, MiB, FI_READ, 0);
	fence_after_read(rd, fi_mr_desc(rdmr), 64, 612);
	fence_after_read(rd, fi_mr_desc(rdmr), MiB, 610);
	RT_OK(fi_close(&rdmr->fid));
	free(rd);
	rt_note("5. FI_DELIVERY_COMPLETE and FI_FENCE: ok");
}

static void part_invalid(void)
{
	size_t limit = itest_info->tx_attr->iov_limit;
	struct fi_rma_iov rma[2];
	struct iovec iov[8];
	void *descs[8];
	struct fi_msg_rma msg;

	EXPECT(itest_info->tx_attr->rma_iov_limit == 1, "rma_iov_limit %zu",
	       itest_info->tx_attr->rma_iov_limit);
	EXPECT(limit == 4, "tx_attr->iov_limit %zu", limit);
	for (int i = 0; i < 8; i++) {
		iov[i].iov_base = lbuf + i * 64;
		iov[i].iov_len = 64;
		descs[i] = ldesc;
	}
	for (int i = 0; i < 2; i++)
		rma[i] = (struct fi_rma_iov){ .addr = tk.t.addr + i * 64,
					      .len = 64,
					      .key = tk.t.key };
	msg = (struct fi_msg_rma){
		.msg_iov = iov,
		.desc = descs,
		.iov_count = 2,
		.addr = in.peer,
		.rma_iov = rma,
		.rma_iov_count = 2,
		.context = CTX(9),
	};
	RT_CALL(fi_writemsg(in.ep, &msg, FI_COMPLETION), -FI_EINVAL);
	RT_CALL(fi_readmsg(in.ep, &msg, FI_COMPLETION), -FI_EINVAL);
	msg.rma_iov_count = 0;
	RT_CALL(fi_writemsg(in.ep, &msg, FI_COMPLETION), -FI_EINVAL);
	/* More local iovs than iov_limit, with a remote segment to match. */
	rma[0].len = 64 * (limit + 1);
	msg.iov_count = limit + 1;
	msg.rma_iov_count = 1;
	RT_CALL(fi_writemsg(in.ep, &msg, FI_COMPLETION), -FI_EINVAL);
	RT_CALL(fi_readmsg(in.ep, &msg, FI_COMPLETION), -FI_EINVAL);
	RT_CALL(fi_writev(in.ep, iov, descs, limit + 1, in.peer, tk.t.addr,
			  tk.t.key, CTX(9)),
		-FI_EINVAL);
	RT_CALL(fi_readv(in.ep, iov, descs, limit + 1, in.peer, tk.t.addr,
			 tk.t.key, CTX(9)),
		-FI_EINVAL);
	rt_cq_expect_empty(in.tx, "invalid operations post nothing");
	check_counts(&in, nwrites, nreads, 0, 0, "after invalid operations");
	ask(REQ_UNCHANGED, 0, 0, 0, 0, "invalid operations");
	rt_note("6. invalid arguments: ok");
}

static void part_selective(void)
{
	struct rt_node_opts o = { .tx_selective = true,
				  .write_cntr = true,
				  .read_cntr = true };
	struct sockaddr_in target_name;
	struct fi_msg_rma msg;
	struct fi_rma_iov rma;
	struct iovec iov;
	size_t len = 0;
	struct rt_node s;
	uint64_t w = 0, r = 0;
	const char *what;

	rt_node_open(&s, &o, "initiator (selective)");
	/* The target's name, as the first endpoint has it. */
	len = sizeof(target_name);
	RT_OK(fi_av_lookup(in.av, in.peer, &target_name, &len));
	rt_node_insert(&s, &target_name);

	what = "fi_write without FI_COMPLETION (selective)";
	rt_pat_gen(lbuf, 700, 0, 300);
	RT_POST(fi_write(s.ep, lbuf, 300, NULL, s.peer, tk.t.addr + 50,
			 tk.t.key, CTX(10)),
		"%s", what);
	rt_cntr_reach(s.write_cntr, ++w, "the write counter after %s", what);
	ask(REQ_CHECK, 50, 300, 700, 0, what);

	what = "fi_writemsg(0) (selective)";
	rt_pat_gen(lbuf, 701, 0, 20000);
	iov = (struct iovec){ .iov_base = lbuf, .iov_len = 20000 };
	rma = (struct fi_rma_iov){ .addr = tk.t.addr + 60,
				   .len = 20000,
				   .key = tk.t.key };
	msg = (struct fi_msg_rma){ .msg_iov = &iov,
				   .iov_count = 1,
				   .addr = s.peer,
				   .rma_iov = &rma,
				   .rma_iov_count = 1,
				   .context = CTX(11) };
	RT_POST(fi_writemsg(s.ep, &msg, 0), "%s", what);
	rt_cntr_reach(s.write_cntr, ++w, "the write counter after %s", what);
	rt_cq_expect_empty(s.tx, "%s", what);
	ask(REQ_CHECK, 60, 20000, 701, 0, what);

	what = "fi_writemsg(FI_COMPLETION) (selective)";
	rt_pat_gen(lbuf, 702, 0, 20000);
	msg.context = CTX(12);
	RT_POST(fi_writemsg(s.ep, &msg, FI_COMPLETION), "%s", what);
	{
		struct itest_comp c = rt_cq_wait(s.tx, "%s", what);

		RT_EXPECT_COMP(c, CTX(12), FI_RMA | FI_WRITE, FI_READ, "%s",
			       what);
	}
	EXPECT(fi_cntr_read(s.write_cntr) == ++w, "%s: write counter %" PRIu64,
	       what, fi_cntr_read(s.write_cntr));
	ask(REQ_CHECK, 60, 20000, 702, 0, what);

	what = "fi_read without FI_COMPLETION (selective)";
	ask(REQ_FILL, 70, 5000, 703, 0, what);
	memset(lbuf, UNTOUCHED, 5000);
	RT_POST(fi_read(s.ep, lbuf, 5000, NULL, s.peer, tk.t.addr + 70,
			tk.t.key, CTX(13)),
		"%s", what);
	rt_cntr_reach(s.read_cntr, ++r, "the read counter after %s", what);
	rt_pat_check(lbuf, 703, 0, 5000, "%s", what);

	what = "fi_readmsg(FI_COMPLETION) (selective)";
	ask(REQ_FILL, 80, 20000, 704, 0, what);
	memset(lbuf, UNTOUCHED, 20000);
	rma.addr = tk.t.addr + 80;
	msg.context = CTX(14);
	RT_POST(fi_readmsg(s.ep, &msg, FI_COMPLETION), "%s", what);
	{
		struct itest_comp c = rt_cq_wait(s.tx, "%s", what);

		RT_EXPECT_COMP(c, CTX(14), FI_RMA | FI_READ, FI_WRITE, "%s",
			       what);
	}
	EXPECT(fi_cntr_read(s.read_cntr) == ++r, "%s: read counter %" PRIu64,
	       what, fi_cntr_read(s.read_cntr));
	rt_pat_check(lbuf, 704, 0, 20000, "%s", what);
	rt_cq_expect_empty(s.tx, "only FI_COMPLETION operations have entries");
	EXPECT(fi_cntr_readerr(s.write_cntr) == 0 &&
		       fi_cntr_readerr(s.read_cntr) == 0,
	       "no errors");
	rt_node_close(&s);
	rt_note("7. selective completion: ok");
}

/*
 * After an error completion: the next write to the peer must succeed,
 * after -FI_EAGAIN while the provider reconnects, and nothing else.
 */
static void write_after_error(const char *after)
{
	int64_t deadline = itest_deadline();
	const char *what = itest_fmt("the first fi_write after %s", after);
	ssize_t ret;
	size_t eagain = 0;

	rt_pat_gen(lbuf, 800 + nwrites, 0, 128);
	while ((ret = fi_write(in.ep, lbuf, 128, NULL, in.peer, tk.t.addr + 200,
			       tk.t.key, CTX(20))) == -FI_EAGAIN) {
		eagain++;
		rt_check_deadline(deadline, "%s to post", what);
		itest_progress();
	}
	if (ret)
		FAIL("%s returned %zd (%s) after %zu x -FI_EAGAIN: the failed "
		     "operation was reported already (error completion), so "
		     "the next one should reconnect and succeed",
		     what, ret, fi_strerror((int) -ret), eagain);
	wait_tx(CTX(20), FI_WRITE, what);
	nwrites++;
	check_counts(&in, nwrites, nreads, nwrite_errs, nread_errs, what);
	ask(REQ_CHECK, 200, 128, 800 + nwrites - 1, 0, what);
	rt_note("   %s: ok after %zu x -FI_EAGAIN", what, eagain);
}

static void expect_error(void *context, uint64_t flags, const char *what)
{
	struct fi_cq_err_entry e = rt_cq_wait_err(in.tx,
						  "the error entry "
						  "of %s",
						  what);

	rt_note("   %s: err %d (%s), prov_errno %d (%s)", what, e.err,
		fi_strerror(e.err), e.prov_errno,
		fi_cq_strerror(in.tx->cq, e.prov_errno, e.err_data, NULL, 0));
	EXPECT(e.err > 0, "%s: err %d", what, e.err);
	EXPECT(e.prov_errno != 0, "%s: prov_errno %d", what, e.prov_errno);
	EXPECT(e.op_context == context, "%s: op_context %p, expected %p", what,
	       e.op_context, context);
	EXPECT((e.flags & (FI_RMA | flags)) == (FI_RMA | flags),
	       "%s: flags 0x%" PRIx64, what, e.flags);
	rt_cq_expect_empty(in.tx, "after the error of %s", what);
}

static void bad_write(uint64_t addr, uint64_t key, size_t len, const char *what)
{
	rt_pat_gen(lbuf, 900, 0, len);
	RT_POST(fi_write(in.ep, lbuf, len, NULL, in.peer, addr, key, CTX(21)),
		"%s", what);
	expect_error(CTX(21), FI_WRITE, what);
	nwrite_errs++;
	check_counts(&in, nwrites, nreads, nwrite_errs, nread_errs, what);
	ask(REQ_UNCHANGED, 0, 0, 0, 0, what);
	write_after_error(what);
}

static void part_errors(void)
{
	/* Other rkey index and variant bits; the slots (none) stay. */
	uint64_t bad_key = tk.t.key ^ 0x00ff00ffu;
	const char *what;

	bad_write(tk.t.addr + 100, bad_key, 64, "a write with a wrong key");
	bad_write(tk.t.addr + TLEN - 64, tk.t.key, 128,
		  "a write 64 bytes past the end of the MR");
	bad_write(tk.ro.addr + 8, tk.ro.key, 64,
		  "a write to an MR without FI_REMOTE_WRITE");

	what = "a read with a wrong key";
	memset(lbuf, UNTOUCHED, 4096);
	RT_POST(fi_read(in.ep, lbuf, 64, NULL, in.peer, tk.t.addr, bad_key,
			CTX(22)),
		"%s", what);
	expect_error(CTX(22), FI_READ, what);
	nread_errs++;
	check_counts(&in, nwrites, nreads, nwrite_errs, nread_errs, what);
	ask(REQ_UNCHANGED, 0, 0, 0, 0, what);
	write_after_error(what);

	/* Reads of the read-only MR work (FI_REMOTE_READ). */
	what = "a read of the MR without FI_REMOTE_WRITE";
	memset(lbuf, UNTOUCHED, ROLEN);
	RT_POST(fi_read(in.ep, lbuf, ROLEN, ldesc, in.peer, tk.ro.addr,
			tk.ro.key, CTX(23)),
		"%s", what);
	wait_tx(CTX(23), FI_READ, what);
	nreads++;
	rt_pat_check(lbuf, 77, 0, ROLEN, "%s", what);
	check_counts(&in, nwrites, nreads, nwrite_errs, nread_errs, what);
	rt_note("8. error completions and recovery: ok");
}

static void initiator(void *arg)
{
	struct itest_chan ch = itest_link_child(&link_);
	struct rt_node_opts o = { .tx_errors_ok = true,
				  .write_cntr = true,
				  .read_cntr = true };

	(void) arg;
	ich = &ch;
	lbuf = rt_guarded(LLEN);
	rt_node_open(&in, &o, "initiator");
	lmr = rt_mr_reg(lbuf, LLEN, FI_READ | FI_WRITE, 0);
	ldesc = fi_mr_desc(lmr);
	rt_node_exchange(&in, &ch);
	rt_chan_read(&ch, &tk, sizeof(tk), "the target's keys");

	part_sizes();
	part_iov();
	part_inject();
	part_window();
	part_writedata();
	part_delivery_fence();
	part_invalid();
	part_selective();
	part_errors();

	ask(REQ_DONE, 0, 0, 0, 0, "the end");
	RT_OK(fi_close(&lmr->fid));
	rt_node_close(&in);
	itest_domain_close();
	rt_guarded_free(lbuf);
}

int main(void)
{
	int64_t start = itest_now_ms();
	struct itest_chan ch;

	rt_init();
#ifdef RT_THREADING
	rt_threading = RT_THREADING;
#endif
	setvbuf(stdout, NULL, _IOLBF, 0);
	itest_link_init(&link_);
	itest_fork("initiator", initiator, NULL);
	snprintf(itest_who, sizeof(itest_who), "target");
	ch = itest_link_parent(&link_);
	target(&ch);
	itest_wait_kids();
	rt_pass(rt_threading == FI_THREAD_UNSPEC ? "nrma_rma_ops" :
						   "nrma_rma_ops_thread_domain",
		start);
	return 0;
}
