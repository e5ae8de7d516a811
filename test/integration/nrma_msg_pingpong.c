/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Two-sided data transfer between two processes (this one, "A", and a
 * forked peer, "B"), all data checked:
 *  - ping-pong with fi_send/fi_recv at sizes across the eager limit (8192)
 *    and up to 4 MiB, with unregistered and registered (desc) buffers;
 *  - one message of max_msg_size (and -FI_EINVAL for one byte more);
 *  - streaming: N receives posted, N messages back to back, message i in
 *    receive i (FI_ORDER_SAS), eager and rendezvous;
 *  - fi_sendv/fi_recvv with 3 and 4 iov pieces cut at different places;
 *  - fi_tsend/fi_trecv: matching by tag, with ignore bits, out of order,
 *    apart from untagged messages, and with unexpected messages.
 */
#include "itest_msg.h"

#define MIB	 (1024 * 1024)
#define MAX_SIZE (4 * MIB)
#define BUF_SIZE (9 * MIB) /* 8 streamed MiB and their guards */

static struct itest_link link_ab;
static struct itest_node node;
static struct itest_chan chan;
static bool is_a;
static uint32_t step_tag; /* signals, in step on both sides */

static unsigned char *sbuf, *rbuf;
static struct fid_mr *smr, *rmr;
static char ctx[1024]; /* op contexts: &ctx[i] */

#define CTX(i)	     ((void *) &ctx[i])
#define CTX_INDEX(p) ((size_t) ((char *) (p) -ctx))

static const char *me(void)
{
	return is_a ? "A" : "B";
}

static void next_step(const char *what)
{
	itest_sync(&chan, ++step_tag, what);
}

/* Ping-pong */

static const size_t pp_sizes[] = {
	0, 1, 63, 4096, 8191, 8192, 8193, 65536, MIB, 4 * MIB,
};

struct pp_step {
	size_t size;
	int iter;
};

static size_t pp_schedule(struct pp_step *steps)
{
	size_t n = 0;

	for (size_t i = 0; i < sizeof(pp_sizes) / sizeof(pp_sizes[0]); i++) {
		int iters = pp_sizes[i] >= MIB ? 2 : 3;

		for (int it = 0; it < iters; it++)
			steps[n++] = (struct pp_step){ pp_sizes[i], it };
	}
	return n;
}

/* Iteration 1 of a size passes registered buffers' descriptors. */
static void *pp_desc(const struct pp_step *s, struct fid_mr *mr)
{
	return s->iter == 1 ? fi_mr_desc(mr) : NULL;
}

static uint64_t pp_seed(const struct pp_step *s, size_t k, int dir)
{
	return (uint64_t) s->size << 32 | (uint32_t) (2 * k + dir);
}

static void pp_post_recv(const struct pp_step *s, size_t k)
{
	itest_guard_reset(rbuf, s->size, 0);
	ITEST_POST(fi_recv(node.ep, rbuf, s->size, pp_desc(s, rmr),
			   FI_ADDR_UNSPEC, CTX(k % 2)),
		   "ping-pong fi_recv");
}

static void pp_check_recv(const struct pp_step *s, size_t k, int dir)
{
	const char *what = itest_fmt("%s: ping-pong receive of %zu bytes "
				     "(iteration %d)",
				     me(), s->size, s->iter);
	struct itest_comp c = itest_cq_wait(node.rx, what);

	EXPECT_COMP(c, CTX(k % 2), FI_RECV | FI_MSG,
		    FI_SEND | FI_TAGGED | FI_REMOTE_CQ_DATA | FI_MULTI_RECV,
		    what);
	EXPECT(c.len == s->size, "%s: len %zu", what, c.len);
	EXPECT(c.src == node.peer, "%s: src_addr %" PRIu64 ", peer is %" PRIu64,
	       what, c.src, node.peer);
	itest_msg_check(rbuf, s->size, pp_seed(s, k, dir), what);
	itest_guard_check(rbuf, s->size, what);
}

static void pp_send(const struct pp_step *s, size_t k, int dir)
{
	const char *what = itest_fmt("%s: ping-pong send of %zu bytes "
				     "(iteration %d)",
				     me(), s->size, s->iter);
	struct itest_comp c;

	itest_msg_fill(sbuf, s->size, pp_seed(s, k, dir));
	ITEST_POST(fi_send(node.ep, sbuf, s->size, pp_desc(s, smr), node.peer,
			   CTX(2)),
		   what);
	c = itest_cq_wait(node.tx, what);
	EXPECT_COMP(c, CTX(2), FI_SEND | FI_MSG, FI_RECV | FI_TAGGED, what);
}

static void ping_pong(void)
{
	struct pp_step steps[64];
	size_t n = pp_schedule(steps);

	if (is_a) {
		for (size_t k = 0; k < n; k++) {
			pp_post_recv(&steps[k], k);
			pp_send(&steps[k], k, 0);
			pp_check_recv(&steps[k], k, 1);
		}
	} else {
		pp_post_recv(&steps[0], 0);
		for (size_t k = 0; k < n; k++) {
			pp_check_recv(&steps[k], k, 0);
			if (k + 1 < n)
				pp_post_recv(&steps[k + 1], k + 1);
			pp_send(&steps[k], k, 1);
		}
	}
	itest_cq_expect_empty(node.tx, "after the ping-pong");
	itest_cq_expect_empty(node.rx, "after the ping-pong");
	next_step("the end of the ping-pong");
}

/* A message of max_msg_size, A -> B; one byte more is refused. */
static void max_size(void)
{
	size_t max = itest_info->ep_attr->max_msg_size;
	const char *what = itest_fmt("%s: a message of max_msg_size (%zu "
				     "bytes)",
				     me(), max);
	struct itest_comp c;

	CHECK(max >= MAX_SIZE);
	if (max > BUF_SIZE) {
		printf("max_msg_size %zu is over %d: not checked\n", max,
		       BUF_SIZE);
		return;
	}
	if (is_a) {
		itest_msg_fill(sbuf, max, 0x3a3a);
		CHECK_RET(fi_send(node.ep, sbuf, max + 1, NULL, node.peer,
				  CTX(3)),
			  -FI_EINVAL);
		CHECK_RET(fi_tsend(node.ep, sbuf, max + 1, NULL, node.peer, 1,
				   CTX(3)),
			  -FI_EINVAL);
		itest_expect(&chan, ++step_tag, "B's receive");
		ITEST_POST(fi_send(node.ep, sbuf, max, NULL, node.peer, CTX(3)),
			   what);
		c = itest_cq_wait(node.tx, what);
		EXPECT_COMP(c, CTX(3), FI_SEND | FI_MSG, 0, what);
	} else {
		itest_guard_reset(rbuf, max, 0);
		ITEST_POST(fi_recv(node.ep, rbuf, max, NULL, FI_ADDR_UNSPEC,
				   CTX(4)),
			   what);
		itest_signal(&chan, ++step_tag);
		c = itest_cq_wait(node.rx, what);
		EXPECT_COMP(c, CTX(4), FI_RECV | FI_MSG, 0, what);
		EXPECT(c.len == max, "%s: len %zu", what, c.len);
		itest_msg_check(rbuf, max, 0x3a3a, what);
		itest_guard_check(rbuf, max, what);
	}
	next_step("the end of the max_msg_size message");
}

/* Streaming: N receives posted, then N sends back to back. */

static void stream(bool sender, size_t count, size_t size, uint32_t id)
{
	size_t stride = size + ITEST_GUARD;
	unsigned char *bufs = NULL;
	struct itest_comp c;
	bool seen[64] = { false };
	const char *what;

	CHECK(count <= 64 && count * stride <= BUF_SIZE);
	bufs = sender ? sbuf : rbuf;
	if (!sender) {
		for (size_t i = 0; i < count; i++) {
			itest_guard_reset(bufs + i * stride, size, 0);
			ITEST_POST(fi_recv(node.ep, bufs + i * stride, size,
					   NULL, FI_ADDR_UNSPEC, CTX(i)),
				   "stream fi_recv");
		}
		itest_signal(&chan, ++step_tag);
		for (size_t i = 0; i < count; i++) {
			what = itest_fmt("%s: stream %u: completion %zu of "
					 "%zu (%zu bytes)",
					 me(), id, i, count, size);
			c = itest_cq_wait(node.rx, what);
			EXPECT(CTX_INDEX(c.op_context) < count &&
				       !seen[CTX_INDEX(c.op_context)],
			       "%s: op_context %p", what, c.op_context);
			seen[CTX_INDEX(c.op_context)] = true;
			EXPECT_COMP(c, c.op_context, FI_RECV | FI_MSG, FI_SEND,
				    what);
			EXPECT(c.len == size, "%s: len %zu", what, c.len);
		}
		/* FI_ORDER_SAS: message i matched receive i. */
		for (size_t i = 0; i < count; i++) {
			what = itest_fmt("%s: stream %u: receive %zu (posted "
					 "%zu-th)",
					 me(), id, i, i);
			itest_msg_check(bufs + i * stride, size,
					(uint64_t) id << 32 | i, what);
			itest_guard_check(bufs + i * stride, size, what);
		}
	} else {
		itest_expect(&chan, ++step_tag, "the peer's stream receives");
		for (size_t i = 0; i < count; i++)
			itest_msg_fill(bufs + i * stride, size,
				       (uint64_t) id << 32 | i);
		for (size_t i = 0; i < count; i++)
			ITEST_POST(fi_send(node.ep, bufs + i * stride, size,
					   NULL, node.peer, CTX(i)),
				   "stream fi_send");
		for (size_t i = 0; i < count; i++) {
			what = itest_fmt("%s: stream %u: send completion %zu",
					 me(), id, i);
			c = itest_cq_wait(node.tx, what);
			EXPECT(CTX_INDEX(c.op_context) < count &&
				       !seen[CTX_INDEX(c.op_context)],
			       "%s: op_context %p", what, c.op_context);
			seen[CTX_INDEX(c.op_context)] = true;
			EXPECT_COMP(c, c.op_context, FI_SEND | FI_MSG, FI_RECV,
				    what);
		}
	}
	itest_cq_expect_empty(node.tx, "after a stream");
	itest_cq_expect_empty(node.rx, "after a stream");
	next_step("the end of a stream");
}

/* Vectors */

struct pieces {
	size_t count;
	size_t off[4];
	struct iovec iov[4];
};

/* Cuts len at the given per-mille points into separate guarded buffers. */
static void pieces_make(struct pieces *p, size_t len, const int *cuts,
			size_t ncuts)
{
	size_t prev = 0;

	p->count = ncuts + 1;
	for (size_t i = 0; i < p->count; i++) {
		size_t end = len;

		/* A negative cut makes a zero-length piece. */
		if (i < ncuts)
			end = cuts[i] < 0 ? prev : len * cuts[i] / 1000;
		p->off[i] = prev;
		p->iov[i].iov_len = end - prev;
		p->iov[i].iov_base = itest_guarded(end - prev);
		prev = end;
	}
}

static void pieces_free(struct pieces *p)
{
	for (size_t i = 0; i < p->count; i++)
		free(p->iov[i].iov_base);
}

static const int cuts3[] = { 143, 571 };      /* 1/7, 4/7 */
static const int cuts4[] = { 200, 300, 800 }; /* 1/5, 3/10, 4/5 */
static const int cuts3z[] = { 400, -1 };      /* a, 0, b */
static const int cuts4z[] = { -1, 300, 700 }; /* 0, a, b, c */

static void vector_one(bool sender, size_t len, const int *cuts, size_t ncuts,
		       uint64_t seed, const char *label)
{
	const char *what = itest_fmt("%s: %s of %zu bytes in %zu pieces", me(),
				     label, len, ncuts + 1);
	struct pieces p;
	struct itest_comp c;

	pieces_make(&p, len, cuts, ncuts);
	if (sender) {
		for (size_t i = 0; i < p.count; i++)
			itest_pat_gen(p.iov[i].iov_base, seed, p.off[i],
				      p.iov[i].iov_len);
		itest_expect(&chan, ++step_tag, "the peer's fi_recvv");
		ITEST_POST(fi_sendv(node.ep, p.iov, NULL, p.count, node.peer,
				    CTX(7)),
			   what);
		c = itest_cq_wait(node.tx, what);
		EXPECT_COMP(c, CTX(7), FI_SEND | FI_MSG, FI_RECV, what);
	} else {
		ITEST_POST(fi_recvv(node.ep, p.iov, NULL, p.count,
				    FI_ADDR_UNSPEC, CTX(8)),
			   what);
		itest_signal(&chan, ++step_tag);
		c = itest_cq_wait(node.rx, what);
		EXPECT_COMP(c, CTX(8), FI_RECV | FI_MSG, FI_SEND, what);
		EXPECT(c.len == len, "%s: len %zu", what, c.len);
		for (size_t i = 0; i < p.count; i++) {
			const char *pw = itest_fmt("%s, piece %zu", what, i);

			itest_pat_check(p.iov[i].iov_base, seed, p.off[i],
					p.iov[i].iov_len, pw);
			itest_guard_check(p.iov[i].iov_base, p.iov[i].iov_len,
					  pw);
		}
	}
	pieces_free(&p);
}

static void vectors(void)
{
	static const size_t lens[] = { 100, 8192, 8193, 30000, MIB + 3 };

	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		/* A sends 3 pieces into B's 4, then B sends 4 into A's 3. */
		vector_one(is_a, lens[i], is_a ? cuts3 : cuts4, is_a ? 2 : 3,
			   0x5e0000 + i, "fi_sendv A->B");
		vector_one(!is_a, lens[i], is_a ? cuts3 : cuts4, is_a ? 2 : 3,
			   0x5f0000 + i, "fi_sendv B->A");
	}
	next_step("the end of the vector transfers");
}

/* Zero-length iov pieces among others, eager and rendezvous. */
static void vectors_zero_pieces(void)
{
	static const size_t lens[] = { 1000, 40000 };

	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++)
		vector_one(is_a, lens[i], is_a ? cuts3z : cuts4z, is_a ? 2 : 3,
			   0x600000 + i, "fi_sendv with a zero-length piece");
	next_step("the end of the zero-length piece transfers");
}

/* Tagged */

struct tmsg {
	uint64_t tag;
	size_t len;
};

static void tsend_all(const struct tmsg *m, size_t n, uint32_t stream_id)
{
	size_t off = 0;

	for (size_t i = 0; i < n; i++) {
		uint64_t seed = (uint64_t) stream_id << 32 |
				(uint32_t) m[i].tag;

		itest_msg_fill(sbuf + off, m[i].len, seed);
		ITEST_POST(fi_tsend(node.ep, sbuf + off, m[i].len, NULL,
				    node.peer, m[i].tag, CTX(100 + i)),
			   "fi_tsend");
		off += m[i].len;
	}
}

/* count send completions of the n messages tsend_all sent. */
static void tsend_wait(size_t count, size_t n, const char *what)
{
	bool seen[16] = { false };

	for (size_t i = 0; i < count; i++) {
		struct itest_comp c = itest_cq_wait(node.tx, what);
		size_t k = CTX_INDEX(c.op_context) - 100;

		EXPECT(k < n && !seen[k], "%s: op_context %p", what,
		       c.op_context);
		seen[k] = true;
		EXPECT_COMP(c, c.op_context, FI_SEND | FI_TAGGED, FI_MSG, what);
	}
}

struct trecv {
	uint64_t tag;
	uint64_t ignore;
	size_t len;	   /* buffer */
	uint64_t want_tag; /* the message it must get */
	size_t want_len;
	bool untagged;
};

static void trecv_post(const struct trecv *r, size_t n)
{
	size_t off = 0;

	for (size_t i = 0; i < n; i++) {
		itest_guard_reset(rbuf + off, r[i].len, 0);
		if (r[i].untagged)
			ITEST_POST(fi_recv(node.ep, rbuf + off, r[i].len, NULL,
					   FI_ADDR_UNSPEC, CTX(200 + i)),
				   "fi_recv");
		else
			ITEST_POST(fi_trecv(node.ep, rbuf + off, r[i].len, NULL,
					    FI_ADDR_UNSPEC, r[i].tag,
					    r[i].ignore, CTX(200 + i)),
				   "fi_trecv");
		off += r[i].len + ITEST_GUARD;
	}
}

static void trecv_check(const struct trecv *r, size_t n, uint32_t stream_id,
			const char *label)
{
	size_t offs[16], off = 0;
	bool seen[16] = { false };

	for (size_t i = 0; i < n; i++) {
		offs[i] = off;
		off += r[i].len + ITEST_GUARD;
	}
	for (size_t j = 0; j < n; j++) {
		const char *what =
			itest_fmt("%s: %s: completion %zu", me(), label, j);
		struct itest_comp c = itest_cq_wait(node.rx, what);
		size_t i = CTX_INDEX(c.op_context) - 200;

		EXPECT(i < n && !seen[i], "%s: op_context %p", what,
		       c.op_context);
		seen[i] = true;
		what = itest_fmt("%s: %s: receive %zu (tag 0x%" PRIx64
				 ", ignore 0x%" PRIx64 "%s)",
				 me(), label, i, r[i].tag, r[i].ignore,
				 r[i].untagged ? ", untagged" : "");
		if (r[i].untagged) {
			EXPECT_COMP(c, c.op_context, FI_RECV | FI_MSG,
				    FI_TAGGED, what);
		} else {
			EXPECT_COMP(c, c.op_context, FI_RECV | FI_TAGGED,
				    FI_MSG, what);
			EXPECT(c.tag == r[i].want_tag,
			       "%s: got tag 0x%" PRIx64 ", expected 0x%" PRIx64,
			       what, c.tag, r[i].want_tag);
		}
		EXPECT(c.len == r[i].want_len, "%s: len %zu, expected %zu",
		       what, c.len, r[i].want_len);
		itest_msg_check(rbuf + offs[i], r[i].want_len,
				(uint64_t) stream_id << 32 |
					(uint32_t) r[i].want_tag,
				what);
		itest_guard_check(rbuf + offs[i], r[i].len, what);
	}
}

/* Receives posted first, then messages whose tags come in another order. */
static void tagged_posted(const struct trecv *r, size_t nr,
			  const struct tmsg *m, size_t nm, uint32_t id,
			  const char *label)
{
	if (is_a) {
		itest_expect(&chan, ++step_tag, "the peer's tagged receives");
		tsend_all(m, nm, id);
		tsend_wait(nm, nm, label);
	} else {
		trecv_post(r, nr);
		itest_signal(&chan, ++step_tag);
		trecv_check(r, nr, id, label);
	}
	itest_cq_expect_empty(node.tx, label);
	itest_cq_expect_empty(node.rx, label);
	next_step(label);
}

/*
 * Messages first (B waits until A's eager ones have completed, so they
 * are held as unexpected), then the receives.
 */
static void tagged_unexpected(const struct trecv *r, size_t nr,
			      const struct tmsg *m, size_t nm, uint32_t id,
			      const char *label)
{
	if (is_a) {
		size_t eager = 0;

		tsend_all(m, nm, id);
		for (size_t i = 0; i < nm; i++)
			eager += m[i].len <= 8192;
		/* Eager sends complete once the data is at B. */
		for (size_t i = 0; i < eager; i++) {
			struct itest_comp c = itest_cq_wait(node.tx, label);
			size_t k = CTX_INDEX(c.op_context) - 100;

			EXPECT(k < nm && m[k].len <= 8192,
			       "%s: send %zu (%zu "
			       "bytes) completed before B posted receives",
			       label, k, k < nm ? m[k].len : 0);
		}
		itest_signal(&chan, ++step_tag);
		tsend_wait(nm - eager, nm, label);
	} else {
		itest_expect(&chan, ++step_tag, "the peer's tagged sends");
		itest_cq_expect_empty(node.rx, "no receive was posted yet");
		trecv_post(r, nr);
		trecv_check(r, nr, id, label);
	}
	itest_cq_expect_empty(node.tx, label);
	itest_cq_expect_empty(node.rx, label);
	next_step(label);
}

static void tagged(void)
{
	/* Receives for tags 1, 2, 3; messages come 3, 1, 2. */
	static const struct trecv r1[] = {
		{ .tag = 0x100, .len = 300, .want_tag = 0x100, .want_len = 100 },
		{ .tag = 0x200, .len = 300, .want_tag = 0x200, .want_len = 200 },
		{ .tag = 0x300, .len = 300, .want_tag = 0x300, .want_len = 300 },
	};
	static const struct tmsg m1[] = {
		{ 0x300, 300 },
		{ 0x100, 100 },
		{ 0x200, 200 },
	};
	/* Ignore bits: 0xAB00/0xFF takes 0xAB42, and not 0x1AB42 or 0xAC00. */
	static const struct trecv r2[] = {
		{ .tag = 0xab00,
		  .ignore = 0xff,
		  .len = 64,
		  .want_tag = 0xab42,
		  .want_len = 42 },
		{ .tag = 0x1ab42,
		  .len = 64,
		  .want_tag = 0x1ab42,
		  .want_len = 43 },
		{ .tag = 0xac00, .len = 64, .want_tag = 0xac00, .want_len = 44 },
		{ .tag = 0,
		  .ignore = ~0ULL,
		  .len = 64,
		  .want_tag = 0x7777,
		  .want_len = 45 },
	};
	static const struct tmsg m2[] = {
		{ 0xac00, 44 },
		{ 0x1ab42, 43 },
		{ 0xab42, 42 },
		{ 0x7777, 45 },
	};
	/* Tagged and untagged messages match only their own receives. */
	static const struct trecv r3[] = {
		{ .untagged = true, .len = 100, .want_len = 77 },
		{ .tag = 5, .len = 100, .want_tag = 5, .want_len = 55 },
	};
	/* Unexpected, matched by tag (and in order within one tag),
	 * with a rendezvous one. */
	static const struct trecv r4[] = {
		{ .tag = 0x10, .len = 1000, .want_tag = 0x10, .want_len = 500 },
		{ .tag = 0x20,
		  .len = 100000,
		  .want_tag = 0x20,
		  .want_len = 100000 },
		{ .tag = 0x10, .len = 1000, .want_tag = 0x10, .want_len = 600 },
		{ .tag = 0x30,
		  .ignore = 0x0f,
		  .len = 1000,
		  .want_tag = 0x3c,
		  .want_len = 700 },
	};
	static const struct tmsg m4[] = {
		{ 0x3c, 700 },
		{ 0x20, 100000 },
		{ 0x10, 500 },
		{ 0x10, 600 },
	};

	tagged_posted(r1, 3, m1, 3, 0x71, "tags out of order");
	tagged_posted(r2, 4, m2, 4, 0x72, "tags with ignore bits");
	/* r3: A sends tag 5 first, then an untagged message. */
	if (is_a) {
		itest_expect(&chan, ++step_tag, "the peer's receives");
		itest_msg_fill(sbuf, 55, (uint64_t) 0x73 << 32 | 5);
		ITEST_POST(fi_tsend(node.ep, sbuf, 55, NULL, node.peer, 5,
				    CTX(100)),
			   "fi_tsend");
		itest_msg_fill(sbuf + 64, 77, (uint64_t) 0x73 << 32);
		ITEST_POST(fi_send(node.ep, sbuf + 64, 77, NULL, node.peer,
				   CTX(101)),
			   "fi_send");
		for (int i = 0; i < 2; i++)
			(void) itest_cq_wait(node.tx, "tagged/untagged sends");
	} else {
		trecv_post(r3, 2);
		itest_signal(&chan, ++step_tag);
		trecv_check(r3, 2, 0x73, "tagged and untagged");
	}
	itest_cq_expect_empty(node.tx, "tagged and untagged");
	itest_cq_expect_empty(node.rx, "tagged and untagged");
	next_step("tagged and untagged");
	tagged_unexpected(r4, 4, m4, 4, 0x74, "unexpected tagged messages");
}

static void run(void)
{
	itest_node_open(&node, NULL, me());
	itest_node_exchange(&node, &chan);
	sbuf = itest_guarded(BUF_SIZE);
	rbuf = itest_guarded(BUF_SIZE);
	CHECK_OK(fi_mr_reg(itest_domain(), sbuf, MAX_SIZE,
			   FI_SEND | FI_REMOTE_READ, 0, 0, 0, &smr, NULL));
	CHECK_OK(fi_mr_reg(itest_domain(), rbuf, MAX_SIZE + ITEST_GUARD,
			   FI_RECV, 0, 0, 0, &rmr, NULL));

	itest_step = "ping-pong";
	ping_pong();
	itest_step = "max_msg_size";
	max_size();
	itest_step = "streaming 64 x 1 KiB";
	stream(is_a, 64, 1024, 1); /* A -> B, eager */
	itest_step = "streaming 8 x 1 MiB";
	stream(!is_a, 8, MIB, 2); /* B -> A, rendezvous */
	itest_step = "fi_sendv/fi_recvv";
	vectors();
	itest_step = "tagged";
	tagged();
	itest_step = "zero-length iov pieces";
	vectors_zero_pieces();

	CHECK_OK(fi_close(&smr->fid));
	CHECK_OK(fi_close(&rmr->fid));
	itest_node_close(&node);
	itest_domain_close();
	free(sbuf);
	free(rbuf);
}

static void peer_main(void *arg)
{
	(void) arg;
	is_a = false;
	chan = itest_link_child(&link_ab);
	run();
	itest_chan_close(&chan);
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	itest_link_init(&link_ab);
	itest_fork("B", peer_main, NULL);
	snprintf(itest_who, sizeof(itest_who), "A");
	is_a = true;
	chan = itest_link_parent(&link_ab);
	run();
	itest_wait_kids();
	itest_chan_close(&chan);
	itest_pass("nrma_msg_pingpong");
	return 0;
}
