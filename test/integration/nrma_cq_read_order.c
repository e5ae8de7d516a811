/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What fi_cq_read and fi_cq_readfrom return, in each CQ format, while
 * writes complete under them.  The parent is the target, its child the
 * initiator (see itest_notify.h); the target makes no call.
 *
 * A read's progress writes the successes it reaps straight into the
 * application's buffer while the CQ holds nothing older, and queues the
 * rest (nrma_comp_reader).  So the initiator keeps a window of 8-byte
 * writes in flight and reads with counts that cycle through 1, 2, 3, 5
 * and 16, half of them with fi_cq_readfrom; every few writes one is
 * refused before it goes (past the end of the region: an FI_EACCES error
 * entry, queued at once).  Each read must return at most count entries,
 * each the next success of its endpoint in the order posted (an RC queue
 * pair completes in order), with FI_RMA | FI_WRITE and zeros where the
 * format has more fields, FI_ADDR_NOTAVAIL as its source, and leave every
 * byte past them untouched; each refused write comes once, through
 * fi_cq_readerr.  Then two endpoints share one CQ.
 */
#include "itest_notify.h"

#define RO_OPS	      1000
#define RO_WINDOW     48
#define RO_REFUSE     37 /* every RO_REFUSE-th write is refused */
#define RO_EPS	      2
#define RO_READ_MAX   16
#define RO_POISON     0xa5
#define RO_SRC_POISON ((fi_addr_t) 0x5a5a5a5a5a5a5a5aULL)

/* One endpoint's writes: their contexts, and the next success due. */
struct ro_stream {
	struct fid_ep *ep;
	char ctx[RO_OPS];
	bool errored[RO_OPS];
	uint64_t posted, next;
	uint64_t successes, errors;
};

struct ro_run {
	struct fid_cq *cq;
	enum fi_cq_format format;
	size_t size;
	struct fid_av *av;
	fi_addr_t peer;
	struct ro_stream s[RO_EPS];
	int neps;
	unsigned reads;
	const char *what;
};

static bool ro_refused(uint64_t i)
{
	return i % RO_REFUSE == RO_REFUSE - 1;
}

static void target(void)
{
	uint64_t *words = rt_guarded(4096);
	struct keymsg km = { 0 };
	struct fid_mr *mr;
	struct rt_node t;

	mr = rt_mr_reg(words, 4096, FI_REMOTE_WRITE, 0);
	km.k[0] = rt_rkey_of(mr, words, 4096);
	target_open(&t, 0, &km, 1);
	rt_expect(&pc[0], SIG_DONE, "the initiator's reads");
	target_close(&t, 1);
	RT_OK(fi_close(&mr->fid));
	rt_guarded_free(words);
}

/* Which stream and write an entry's context names, or fails. */
static struct ro_stream *ro_owner(struct ro_run *r, void *context,
				  uint64_t *index)
{
	for (int e = 0; e < r->neps; e++) {
		char *c = context;

		if (c >= r->s[e].ctx && c < r->s[e].ctx + RO_OPS) {
			*index = (uint64_t) (c - r->s[e].ctx);
			return &r->s[e];
		}
	}
	FAIL("%s: an entry with context %p, no write's", r->what, context);
}

static void ro_check_success(struct ro_run *r, const unsigned char *slot)
{
	struct fi_cq_tagged_entry e = { 0 };
	struct ro_stream *s;
	uint64_t i;

	memcpy(&e, slot, r->size);
	s = ro_owner(r, e.op_context, &i);
	while (ro_refused(s->next))
		s->next++;
	EXPECT(i == s->next,
	       "%s: write %" PRIu64 " completed, expected %" PRIu64, r->what, i,
	       s->next);
	if (r->format != FI_CQ_FORMAT_CONTEXT)
		EXPECT(e.flags == (FI_RMA | FI_WRITE) && !e.len && !e.buf &&
			       !e.data && !e.tag,
		       "%s: write %" PRIu64 ": flags 0x%" PRIx64 ", len %zu, "
		       "buf %p, data %" PRIu64 ", tag %" PRIu64,
		       r->what, i, e.flags, e.len, e.buf, e.data, e.tag);
	s->next++;
	s->successes++;
}

static void ro_check_error(struct ro_run *r)
{
	struct fi_cq_err_entry err = { 0 };
	struct ro_stream *s;
	uint64_t i;

	RT_CALL(fi_cq_readerr(r->cq, &err, 0), 1);
	s = ro_owner(r, err.op_context, &i);
	EXPECT(err.err == FI_EACCES && ro_refused(i),
	       "%s: error %d (%s) for write %" PRIu64, r->what, err.err,
	       fi_strerror(err.err), i);
	EXPECT(!s->errored[i], "%s: write %" PRIu64 "'s error twice", r->what,
	       i);
	s->errored[i] = true;
	s->errors++;
}

/* One read of the next count; the entries it returned. */
static ssize_t ro_read(struct ro_run *r)
{
	static const size_t counts[] = { 1, 2, 3, 5, RO_READ_MAX };
	size_t count = counts[r->reads % 5];
	bool from = r->reads++ % 2;
	unsigned char buf[(RO_READ_MAX + 1) * sizeof(struct fi_cq_tagged_entry)];
	fi_addr_t src[RO_READ_MAX + 1];
	ssize_t n;

	memset(buf, RO_POISON, sizeof(buf));
	for (size_t i = 0; i <= RO_READ_MAX; i++)
		src[i] = RO_SRC_POISON;
	n = from ? fi_cq_readfrom(r->cq, buf, count, src) :
		   fi_cq_read(r->cq, buf, count);
	if (n == -FI_EAGAIN)
		return 0;
	if (n == -FI_EAVAIL) {
		ro_check_error(r);
		return 1;
	}
	EXPECT(n > 0 && (size_t) n <= count, "%s: a read of %zu returned %zd",
	       r->what, count, n);
	for (ssize_t i = 0; i < n; i++) {
		ro_check_success(r, buf + i * r->size);
		EXPECT(!from || src[i] == FI_ADDR_NOTAVAIL,
		       "%s: entry %zd's source 0x%" PRIx64, r->what, i,
		       (uint64_t) src[i]);
	}
	rt_fill_check(buf + n * r->size, RO_POISON, sizeof(buf) - n * r->size,
		      "%s: the buffer past %zd entries", r->what, n);
	for (size_t i = from ? (size_t) n : 0; i <= RO_READ_MAX; i++)
		EXPECT(src[i] == RO_SRC_POISON,
		       "%s: the source array past %zd entries", r->what, n);
	return n;
}

static uint64_t ro_completed(const struct ro_run *r)
{
	uint64_t done = 0;

	for (int e = 0; e < r->neps; e++)
		done += r->s[e].successes + r->s[e].errors;
	return done;
}

static ssize_t ro_post(struct ro_run *r, struct ro_stream *s,
		       const struct rt_rkey *rk, const uint64_t *word)
{
	uint64_t i = s->posted;
	uint64_t addr = ro_refused(i) ? rk->addr + rk->len :
					rk->addr + (i % 64) * 8;

	return fi_write(s->ep, word, 8, NULL, r->peer, addr, rk->key,
			&s->ctx[i]);
}

static void ro_stream_all(struct ro_run *r, const struct rt_rkey *rk)
{
	const uint64_t total = (uint64_t) r->neps * RO_OPS, word = stamp(1);
	int64_t deadline = itest_deadline();
	uint64_t posted = 0;

	while (ro_completed(r) < total) {
		struct ro_stream *s = &r->s[posted % r->neps];
		ssize_t ret = -FI_EAGAIN;

		if (posted < total && posted - ro_completed(r) < RO_WINDOW)
			ret = ro_post(r, s, rk, &word);
		if (!ret) {
			s->posted++;
			posted++;
		} else if (ret != -FI_EAGAIN) {
			FAIL("%s: write %" PRIu64 ": %zd (%s)", r->what,
			     s->posted, ret, fi_strerror((int) -ret));
		}
		if (!ro_read(r))
			rt_check_deadline(deadline,
					  "%s: %" PRIu64 " of %" PRIu64
					  " completions",
					  r->what, ro_completed(r), total);
	}
	for (int e = 0; e < r->neps; e++)
		EXPECT(r->s[e].errors == RO_OPS / RO_REFUSE,
		       "%s: %" PRIu64 " errors, expected %d", r->what,
		       r->s[e].errors, RO_OPS / RO_REFUSE);
	for (int i = 0; i < 20; i++)
		EXPECT(!ro_read(r), "%s: an entry after all of them", r->what);
}

static void ro_open(struct ro_run *r, enum fi_cq_format format, size_t size,
		    int neps, const struct keymsg *km)
{
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE };
	struct fi_cq_attr cq_attr = { .format = format, .size = 64 };
	struct fid_domain *domain = rt_domain();

	memset(r, 0, sizeof(*r));
	r->format = format;
	r->size = size;
	r->neps = neps;
	RT_OK(fi_av_open(domain, &av_attr, &r->av, NULL));
	RT_OK(fi_cq_open(domain, &cq_attr, &r->cq, NULL));
	for (int e = 0; e < neps; e++) {
		struct fid_ep *ep;

		RT_OK(fi_endpoint(domain, itest_info, &ep, NULL));
		RT_OK(fi_ep_bind(ep, &r->av->fid, 0));
		RT_OK(fi_ep_bind(ep, &r->cq->fid, FI_TRANSMIT | FI_RECV));
		RT_OK(fi_enable(ep));
		r->s[e].ep = ep;
	}
	RT_CALL(fi_av_insert(r->av, &km->name, 1, &r->peer, 0, NULL), 1);
}

static void ro_close(struct ro_run *r)
{
	for (int e = 0; e < r->neps; e++)
		RT_OK(fi_close(&r->s[e].ep->fid));
	RT_OK(fi_close(&r->cq->fid));
	RT_OK(fi_close(&r->av->fid));
}

static void initiator(uint64_t me)
{
	static const struct {
		enum fi_cq_format format;
		size_t size;
		int neps;
		const char *what;
	} runs[] = {
		{ FI_CQ_FORMAT_CONTEXT, sizeof(struct fi_cq_entry), 1,
		  "context format" },
		{ FI_CQ_FORMAT_MSG, sizeof(struct fi_cq_msg_entry), 1,
		  "msg format" },
		{ FI_CQ_FORMAT_DATA, sizeof(struct fi_cq_data_entry), 1,
		  "data format" },
		{ FI_CQ_FORMAT_TAGGED, sizeof(struct fi_cq_tagged_entry), 1,
		  "tagged format" },
		{ FI_CQ_FORMAT_DATA, sizeof(struct fi_cq_data_entry), RO_EPS,
		  "two endpoints, one CQ" },
	};
	static struct ro_run r;
	struct keymsg km;

	(void) me;
	rt_domain();
	rt_chan_read(&cc, &km, sizeof(km), "the target's name and keys");
	for (size_t i = 0; i < sizeof(runs) / sizeof(runs[0]); i++) {
		ro_open(&r, runs[i].format, runs[i].size, runs[i].neps, &km);
		r.what = runs[i].what;
		ro_stream_all(&r, &km.k[0]);
		rt_note("%s: %u reads, every entry in order", r.what, r.reads);
		ro_close(&r);
	}
	itest_signal(&cc, SIG_DONE);
	rt_expect_idle(&cc, SIG_PART_OVER, "the end of the test");
}

int main(void)
{
	return nt_main("nrma_cq_read_order", 1, target, initiator);
}
