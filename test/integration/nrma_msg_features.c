/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Message features between a receiver (this process, "R") and a forked
 * sender ("S"), each phase on fresh endpoints:
 *  - unexpected messages: 32 sent (two by rendezvous) before any receive;
 *    and 1200, more than the receiver has buffers for;
 *  - FI_REMOTE_CQ_DATA with fi_senddata, fi_injectdata and fi_tsenddata
 *    (FI_CQ_FORMAT_DATA);
 *  - FI_SOURCE: the sender's fi_addr_t, FI_ADDR_NOTAVAIL while it is not
 *    in the AV, and its fi_addr_t once inserted;
 *  - FI_MULTI_RECV with FI_OPT_MIN_MULTI_RECV;
 *  - fi_cancel of posted receives;
 *  - FI_SELECTIVE_COMPLETION on both sides, with counters that count all;
 *  - fi_inject: no CQ entry, buffer reusable at once, inject_size limit;
 *  - truncation: FI_ETRUNC with olen, eager and rendezvous;
 *  - FI_DELIVERY_COMPLETE, which waits for the receive to be matched;
 *  - endpoints with counters and no CQs;
 *  - FI_PEEK (FI_ENOMSG, then the message's length, tag and data while it
 *    stays queued), FI_PEEK | FI_CLAIM and the paired FI_CLAIM receive (no
 *    other receive gets the claimed message), FI_PEEK | FI_DISCARD and
 *    FI_CLAIM | FI_DISCARD (gone; a discarded rendezvous still completes
 *    at the sender), and the calls these flags refuse.
 */
#include "itest_msg.h"

/* Rendezvous sizes (eager messages end at 8192 bytes). */
#define RNDV_A		20000
#define RNDV_B		100000

static struct itest_link link_rs;
static struct itest_chan chan;
static bool is_r;
static uint32_t step_tag;
static char ctx[256];		/* op contexts: &ctx[i] */

#define CTX(i)		((void *) &ctx[i])
#define CTX_INDEX(p)	((size_t) ((char *) (p) - ctx))

static void next_step(const char *what)
{
	itest_sync(&chan, ++step_tag, what);
}

static void signal_peer(void)
{
	itest_signal(&chan, ++step_tag);
}

static void await_peer(const char *what)
{
	itest_expect(&chan, ++step_tag, what);
}

/* Opens a node and swaps names with the peer. */
static void open_pair(struct itest_node *n, const struct itest_node_opts *o,
		      const char *name)
{
	itest_node_open(n, o, name);
	itest_node_exchange(n, &chan);
}

/* Both sides are done: checks for stray completions and closes. */
static void close_pair(struct itest_node *n, const char *phase)
{
	next_step(phase);
	if (n->tx)
		itest_cq_expect_empty(n->tx, phase);
	if (n->rx)
		itest_cq_expect_empty(n->rx, phase);
	next_step(phase);
	itest_node_close(n);
}

/* Fails unless len bytes at p are all zero (never written). */
static void check_untouched(const void *p, size_t len, const char *what)
{
	const unsigned char *b = p;

	for (size_t i = 0; i < len; i++)
		if (b[i])
			FAIL("%s: byte %zu of a region that must stay "
			     "untouched is 0x%02x", what, i, b[i]);
}

/*
 * One zeroed buffer for n messages: message i (len(i) bytes plus slack)
 * starts at off[i], and an untouched guard follows each.
 */
static unsigned char *msg_layout(size_t *off, size_t n, size_t (*len)(size_t),
				 size_t slack)
{
	size_t total = 0;
	unsigned char *buf;

	for (size_t i = 0; i < n; i++) {
		off[i] = total;
		total += len(i) + slack + ITEST_GUARD;
	}
	buf = calloc(1, total);
	CHECK(buf != NULL);
	return buf;
}

/* Sends, retrying on -FI_EAGAIN. */
static void send_msg(struct itest_node *n, const void *buf, size_t len,
		     void *context, const char *what)
{
	ITEST_POST(fi_send(n->ep, buf, len, NULL, n->peer, context), what);
}

static void recv_msg(struct itest_node *n, void *buf, size_t len,
		     void *context, const char *what)
{
	ITEST_POST(fi_recv(n->ep, buf, len, NULL, FI_ADDR_UNSPEC, context),
		   what);
}

/* Waits for count send completions with contexts CTX(first)... in any order. */
static void wait_sends(struct itest_node *n, size_t first, size_t count,
		       const char *what)
{
	bool seen[128] = { false };

	CHECK(count <= 128);
	for (size_t i = 0; i < count; i++) {
		struct itest_comp c = itest_cq_wait(n->tx, what);
		size_t k = CTX_INDEX(c.op_context) - first;

		EXPECT(k < count && !seen[k], "%s: send completion with "
		       "op_context %p", what, c.op_context);
		seen[k] = true;
		EXPECT_COMP(c, c.op_context, FI_SEND, FI_RECV, what);
	}
}

/* Unexpected messages */

static size_t unexp_len(size_t i)
{
	if (i == 9)
		return RNDV_A;
	if (i == 22)
		return RNDV_B;
	return i % 4 ? 64 + i * 37 : i * 100;	/* 0 for i == 0 */
}

#define UNEXP_N		32
#define UNEXP_SLACK	16

static void phase_unexpected(void)
{
	const char *phase = "unexpected messages";
	struct itest_node n;
	size_t off[UNEXP_N];
	unsigned char *buf;

	buf = msg_layout(off, UNEXP_N, unexp_len, UNEXP_SLACK);
	open_pair(&n, NULL, is_r ? "R" : "S");
	if (!is_r) {
		size_t eager = 0;

		for (size_t i = 0; i < UNEXP_N; i++) {
			itest_msg_fill(buf + off[i], unexp_len(i), 0x100 + i);
			send_msg(&n, buf + off[i], unexp_len(i), CTX(i), phase);
			eager += unexp_len(i) <= 8192;
		}
		/* An eager send completes once its data is at R. */
		for (size_t i = 0; i < eager; i++) {
			struct itest_comp c = itest_cq_wait(n.tx, phase);
			size_t k = CTX_INDEX(c.op_context);

			EXPECT(k < UNEXP_N && unexp_len(k) <= 8192,
			       "send %zu (%zu bytes) completed before R posted "
			       "any receive", k,
			       k < UNEXP_N ? unexp_len(k) : 0);
		}
		signal_peer();
		for (size_t i = eager; i < UNEXP_N; i++) {
			struct itest_comp c = itest_cq_wait(n.tx, phase);
			size_t k = CTX_INDEX(c.op_context);

			EXPECT(k < UNEXP_N && unexp_len(k) > 8192,
			       "rendezvous send completion: op_context %p",
			       c.op_context);
		}
	} else {
		bool seen[UNEXP_N] = { false };

		await_peer("the sender's 32 messages");
		itest_idle(100);
		itest_cq_expect_empty(n.rx, "no receive is posted yet");
		for (size_t i = 0; i < UNEXP_N; i++) {
			itest_guard_reset(buf + off[i],
					  unexp_len(i) + UNEXP_SLACK, 0);
			recv_msg(&n, buf + off[i], unexp_len(i) + UNEXP_SLACK,
				 CTX(i), phase);
		}
		for (size_t j = 0; j < UNEXP_N; j++) {
			struct itest_comp c = itest_cq_wait(n.rx, phase);
			size_t i = CTX_INDEX(c.op_context);

			EXPECT(i < UNEXP_N && !seen[i], "receive completion "
			       "with op_context %p", c.op_context);
			seen[i] = true;
			EXPECT_COMP(c, c.op_context, FI_RECV | FI_MSG, FI_SEND,
				    phase);
			EXPECT(c.len == unexp_len(i), "receive %zu: len %zu, "
			       "expected %zu", i, c.len, unexp_len(i));
		}
		/* FI_ORDER_SAS: message i went to receive i. */
		for (size_t i = 0; i < UNEXP_N; i++) {
			const char *what = itest_fmt("unexpected message "
						     "receive %zu (%zu bytes)",
						     i, unexp_len(i));

			itest_msg_check(buf + off[i], unexp_len(i), 0x100 + i,
					what);
			check_untouched(buf + off[i] + unexp_len(i),
					UNEXP_SLACK, what);
			itest_guard_check(buf + off[i],
					  unexp_len(i) + UNEXP_SLACK, what);
		}
	}
	close_pair(&n, phase);
	free(buf);
}

/*
 * More unexpected messages than the receiver has buffers for: the sender
 * is held back (-FI_EAGAIN, receiver-not-ready retries) and nothing is
 * lost, reordered or duplicated.
 */
#define FLOOD_N		1200
#define FLOOD_LEN	100

static void phase_flood(void)
{
	const char *phase = "a flood of unexpected messages";
	unsigned char *buf = calloc(FLOOD_N, FLOOD_LEN + ITEST_GUARD);
	const size_t stride = FLOOD_LEN + ITEST_GUARD;
	struct itest_node n;

	CHECK(buf != NULL);
	open_pair(&n, NULL, is_r ? "R" : "S");
	if (!is_r) {
		for (size_t i = 0; i < FLOOD_N; i++) {
			itest_msg_fill(buf + i * stride, FLOOD_LEN, 0x1000 + i);
			send_msg(&n, buf + i * stride, FLOOD_LEN, NULL, phase);
		}
		for (size_t i = 0; i < FLOOD_N; i++)
			(void) itest_cq_wait(n.tx, phase);
	} else {
		bool *seen = calloc(FLOOD_N, sizeof(*seen));
		size_t posted = 0;

		CHECK(seen != NULL);
		/* Let them pile up (the receiver has 768 buffers). */
		itest_idle(1500);
		itest_cq_expect_empty(n.rx, "no receive is posted yet");
		for (size_t got = 0; got < FLOOD_N; got++) {
			unsigned char *b;
			struct itest_comp c;
			size_t i;

			/* The receive is its own context. */
			for (ssize_t r = 0; posted < FLOOD_N; posted++) {
				b = buf + posted * stride;
				itest_guard_reset(b, FLOOD_LEN, 0);
				r = fi_recv(n.ep, b, FLOOD_LEN, NULL,
					    FI_ADDR_UNSPEC, b);
				if (r == -FI_EAGAIN)
					break;	/* receive queue full */
				CHECK_OK(r);
			}
			c = itest_cq_wait(n.rx, phase);
			i = ((unsigned char *) c.op_context - buf) / stride;
			EXPECT(i < posted && !seen[i] && c.len == FLOOD_LEN,
			       "flood completion %zu: op_context %p, len %zu",
			       got, c.op_context, c.len);
			seen[i] = true;
		}
		/* FI_ORDER_SAS: receive i holds message i. */
		for (size_t i = 0; i < FLOOD_N; i++) {
			const char *what = itest_fmt("flood receive %zu", i);

			itest_msg_check(buf + i * stride, FLOOD_LEN, 0x1000 + i,
					what);
			itest_guard_check(buf + i * stride, FLOOD_LEN, what);
		}
		free(seen);
	}
	close_pair(&n, phase);
	free(buf);
}

/* Remote CQ data */

static const size_t cqd_lens[5] = { 100, 64, RNDV_B, 10, 30 };

static size_t cqd_len(size_t i)
{
	return cqd_lens[i];
}

static void phase_cq_data(void)
{
	const char *phase = "remote CQ data";
	struct itest_node_opts o = { .rx_format = FI_CQ_FORMAT_DATA,
				     .send_cntr = true };
	static const uint32_t data[5] = { 0xdeadbeef, 0x12345678, 0xcafef00d,
					  0, 0x0badf00d };
	size_t off[5];
	struct itest_node n;
	unsigned char *buf;

	buf = msg_layout(off, 5, cqd_len, 0);
	open_pair(&n, &o, is_r ? "R" : "S");
	if (!is_r) {
		for (size_t i = 0; i < 5; i++)
			itest_msg_fill(buf + off[i], cqd_lens[i], 0x200 + i);
		await_peer("R's receives");
		ITEST_POST(fi_senddata(n.ep, buf + off[0], cqd_lens[0], NULL,
				       data[0], n.peer, CTX(0)), "fi_senddata");
		ITEST_POST(fi_injectdata(n.ep, buf + off[1], cqd_lens[1], data[1],
					 n.peer), "fi_injectdata");
		ITEST_POST(fi_senddata(n.ep, buf + off[2], cqd_lens[2], NULL,
				       data[2], n.peer, CTX(2)),
			   "fi_senddata (rendezvous)");
		send_msg(&n, buf + off[3], cqd_lens[3], CTX(3), "fi_send");
		ITEST_POST(fi_tsenddata(n.ep, buf + off[4], cqd_lens[4], NULL,
					data[4], n.peer, 9, CTX(4)),
			   "fi_tsenddata");
		itest_cntr_wait(n.send_cntr, 5, "S's send counter");
		/* fi_injectdata has no completion: 4 of them. */
		for (int i = 0; i < 4; i++) {
			struct itest_comp c = itest_cq_wait(n.tx, phase);

			EXPECT(c.op_context == CTX(0) ||
			       c.op_context == CTX(2) ||
			       c.op_context == CTX(3) ||
			       c.op_context == CTX(4),
			       "send completion with op_context %p",
			       c.op_context);
		}
		EXPECT(fi_cntr_read(n.send_cntr) == 5, "send counter %" PRIu64,
		       fi_cntr_read(n.send_cntr));
	} else {
		for (size_t i = 0; i < 4; i++)
			recv_msg(&n, buf + off[i], cqd_lens[i] + 8, CTX(i), phase);
		ITEST_POST(fi_trecv(n.ep, buf + off[4], cqd_lens[4], NULL,
				    FI_ADDR_UNSPEC, 9, 0, CTX(4)), "fi_trecv");
		signal_peer();
		for (size_t j = 0; j < 5; j++) {
			struct itest_comp c = itest_cq_wait(n.rx, phase);
			size_t i = CTX_INDEX(c.op_context);
			const char *what = itest_fmt("remote CQ data: receive "
						     "%zu", i);

			EXPECT(i < 5, "%s: op_context %p", what, c.op_context);
			EXPECT(c.len == cqd_lens[i], "%s: len %zu, expected %zu",
			       what, c.len, cqd_lens[i]);
			if (data[i]) {
				EXPECT_COMP(c, c.op_context,
					    FI_RECV | FI_REMOTE_CQ_DATA |
					    (i == 4 ? FI_TAGGED : FI_MSG), 0,
					    what);
				EXPECT(c.data == data[i], "%s: data 0x%" PRIx64
				       ", expected 0x%" PRIx32, what, c.data,
				       data[i]);
			} else {
				EXPECT_COMP(c, c.op_context, FI_RECV | FI_MSG,
					    FI_REMOTE_CQ_DATA, what);
			}
			itest_msg_check(buf + off[i], cqd_lens[i], 0x200 + i, what);
		}
	}
	close_pair(&n, phase);
	free(buf);
}

/* FI_SOURCE */

static const struct sockaddr_in *dummy_addr(uint16_t port)
{
	static struct sockaddr_in sin;

	sin = (struct sockaddr_in) { .sin_family = AF_INET,
				     .sin_port = htons(port) };
	CHECK(inet_pton(AF_INET, itest_addr(), &sin.sin_addr) == 1);
	return &sin;
}

static void phase_source(void)
{
	const char *phase = "FI_SOURCE";
	struct itest_node r1, r2, s;
	char buf[3][128];

	if (is_r) {
		struct sockaddr_in peer;
		struct itest_comp c;

		itest_node_open(&r1, NULL, "R1");
		itest_node_open(&r2, NULL, "R2");
		itest_chan_write(&chan, &r1.name, sizeof(r1.name));
		itest_chan_write(&chan, &r2.name, sizeof(r2.name));
		itest_chan_read(&chan, &peer, sizeof(peer), "S's name");
		/* S is fi_addr 2 of R1, and unknown to R2. */
		CHECK(itest_node_insert(&r1, dummy_addr(9)) == 0);
		CHECK(itest_node_insert(&r1, dummy_addr(10)) == 1);
		CHECK(itest_node_insert(&r1, &peer) == 2);
		recv_msg(&r1, buf[0], sizeof(buf[0]), CTX(0), phase);
		recv_msg(&r2, buf[1], sizeof(buf[1]), CTX(1), phase);
		signal_peer();
		c = itest_cq_wait(r1.rx, "the message to R1");
		EXPECT_COMP(c, CTX(0), FI_RECV | FI_MSG, 0, "R1's receive");
		EXPECT(c.src == 2, "R1: src_addr %" PRIu64 ", expected 2 (the "
		       "sender's fi_addr_t)", c.src);
		itest_msg_check(buf[0], 100, 0x300, "R1's receive");
		c = itest_cq_wait(r2.rx, "the message to R2");
		EXPECT_COMP(c, CTX(1), FI_RECV | FI_MSG, 0, "R2's receive");
		EXPECT(c.src == FI_ADDR_NOTAVAIL, "R2 (whose AV lacks the "
		       "sender): src_addr %" PRIu64 ", expected "
		       "FI_ADDR_NOTAVAIL", c.src);
		itest_msg_check(buf[1], 101, 0x301, "R2's receive");
		/* Once R2 knows the sender, its messages say who it is. */
		CHECK(itest_node_insert(&r2, dummy_addr(11)) == 0);
		CHECK(itest_node_insert(&r2, &peer) == 1);
		recv_msg(&r2, buf[2], sizeof(buf[2]), CTX(2), phase);
		signal_peer();
		c = itest_cq_wait(r2.rx, "the second message to R2");
		EXPECT_COMP(c, CTX(2), FI_RECV | FI_MSG, 0, "R2's 2nd receive");
		EXPECT(c.src == 1, "R2, after inserting the sender as "
		       "fi_addr 1: src_addr %" PRIu64, c.src);
		itest_msg_check(buf[2], 102, 0x302, "R2's 2nd receive");
		next_step(phase);
		itest_cq_expect_empty(r1.rx, phase);
		itest_cq_expect_empty(r2.rx, phase);
		next_step(phase);
		itest_node_close(&r1);
		itest_node_close(&r2);
	} else {
		struct sockaddr_in name1, name2;
		fi_addr_t a1, a2;

		itest_node_open(&s, NULL, "S");
		itest_chan_read(&chan, &name1, sizeof(name1), "R1's name");
		itest_chan_read(&chan, &name2, sizeof(name2), "R2's name");
		itest_chan_write(&chan, &s.name, sizeof(s.name));
		a1 = itest_node_insert(&s, &name1);
		a2 = itest_node_insert(&s, &name2);
		for (int i = 0; i < 3; i++)
			itest_msg_fill(buf[i], 100 + i, 0x300 + i);
		await_peer("R's receives");
		ITEST_POST(fi_send(s.ep, buf[0], 100, NULL, a1, CTX(0)),
			   "send to R1");
		ITEST_POST(fi_send(s.ep, buf[1], 101, NULL, a2, CTX(1)),
			   "send to R2");
		wait_sends(&s, 0, 2, phase);
		await_peer("R2 inserting us");
		ITEST_POST(fi_send(s.ep, buf[2], 102, NULL, a2, CTX(2)),
			   "second send to R2");
		wait_sends(&s, 2, 1, phase);
		next_step(phase);
		itest_cq_expect_empty(s.tx, phase);
		next_step(phase);
		itest_node_close(&s);
	}
}

/* FI_MULTI_RECV */

#define MR_BUF		(64 * 1024)
#define MR_MIN		4096
#define MR_MAX_MSGS	80
#define MR_SPARE	16
#define MR_SPARE_LEN	1000

/*
 * One multi-receive buffer (64 KiB, FI_OPT_MIN_MULTI_RECV 4 KiB) and
 * MR_SPARE ordinary receives behind it; the sender sends count messages.
 * Messages 0..k-1 must land in the buffer at increasing offsets, in the
 * order sent, until less than the minimum is left; the rest go to the
 * spares in order.  Completions may come in any order (rendezvous ones
 * complete late); the one flagged FI_MULTI_RECV must be the buffer's last.
 */
static void multi_recv_round(struct itest_node *n, const size_t *lens,
			     size_t count, uint32_t id, const char *label)
{
	unsigned char *buf = calloc(1, MR_BUF + ITEST_GUARD +
				    MR_SPARE * (MR_SPARE_LEN + ITEST_GUARD));
	unsigned char *spare = buf + MR_BUF + ITEST_GUARD;
	size_t k = 0, spares = 0, buf_comps = 0, off[MR_MAX_MSGS];
	bool placed[MR_MAX_MSGS] = { false }, released = false;
	size_t total = 0;

	CHECK(buf != NULL && count <= MR_MAX_MSGS);
	for (size_t i = 0; i < count; i++)
		total += lens[i];
	if (!is_r) {
		unsigned char *msgs = malloc(total);
		size_t o = 0;

		CHECK(msgs != NULL);
		await_peer("R's multi-receive buffer");
		for (size_t i = 0; i < count; i++) {
			itest_msg_fill(msgs + o, lens[i],
				       (uint64_t) id << 32 | i);
			send_msg(n, msgs + o, lens[i], CTX(i), label);
			o += lens[i];
		}
		wait_sends(n, 0, count, label);
		free(msgs);
		free(buf);
		return;
	}

	struct iovec iov = { .iov_base = buf, .iov_len = MR_BUF };
	struct fi_msg msg = { .msg_iov = &iov, .iov_count = 1,
			      .addr = FI_ADDR_UNSPEC, .context = CTX(200) };

	itest_guard_reset(buf, MR_BUF, 0);
	ITEST_POST(fi_recvmsg(n->ep, &msg, FI_MULTI_RECV), "fi_recvmsg");
	for (size_t i = 0; i < MR_SPARE; i++)
		recv_msg(n, spare + i * (MR_SPARE_LEN + ITEST_GUARD),
			 MR_SPARE_LEN, CTX(i), "a spare receive");
	signal_peer();
	for (size_t got = 0; got < count; got++) {
		const char *what = itest_fmt("%s: completion %zu of %zu", label,
					     got, count);
		struct itest_comp c = itest_cq_wait(n->rx, what);
		unsigned char *b = c.buf;
		uint32_t hdr[2];
		size_t seq;

		if (c.op_context != CTX(200)) {
			EXPECT(CTX_INDEX(c.op_context) < MR_SPARE,
			       "%s: op_context %p", what, c.op_context);
			EXPECT_COMP(c, c.op_context, FI_RECV | FI_MSG,
				    FI_MULTI_RECV, what);
			spares++;
			continue;
		}
		EXPECT(!released, "%s: a completion for the multi-receive "
		       "buffer after the one flagged FI_MULTI_RECV", what);
		EXPECT_COMP(c, CTX(200), FI_RECV | FI_MSG, 0, what);
		EXPECT(b >= buf && c.len <= MR_BUF && b + c.len <= buf + MR_BUF,
		       "%s: buf %p, len %zu outside the %d-byte buffer %p",
		       what, (void *) b, c.len, MR_BUF, (void *) buf);
		memcpy(hdr, b, sizeof(hdr));
		seq = hdr[1];
		EXPECT(hdr[0] == ITEST_MSG_MAGIC && seq < count && !placed[seq]
		       && c.len == lens[seq], "%s: no valid message at offset "
		       "%td (len %zu)", what, b - buf, c.len);
		placed[seq] = true;
		off[seq] = b - buf;
		buf_comps++;
		released = c.flags & FI_MULTI_RECV;
	}
	EXPECT(released, "%s: all %zu messages arrived and the multi-receive "
	       "buffer was never released", label, count);
	/* The buffer holds messages 0..k-1, in order, non-overlapping. */
	while (k < count && placed[k])
		k++;
	EXPECT(k == buf_comps, "%s: the buffer holds %zu messages, not the "
	       "first %zu sent", label, buf_comps, k);
	EXPECT(count - k == spares, "%s: %zu spares used for %zu messages",
	       label, spares, count - k);
	for (size_t i = 0; i < k; i++) {
		size_t left = MR_BUF - (off[i] + lens[i]);
		const char *what = itest_fmt("%s: message %zu in the buffer at "
					     "offset %zu", label, i, off[i]);

		EXPECT(i == 0 || off[i] >= off[i - 1] + lens[i - 1], "%s: "
		       "overlaps message %zu (offset %zu, %zu bytes)", what,
		       i - 1, off[i - 1], lens[i - 1]);
		/* Released exactly when less than the minimum was left. */
		EXPECT(i + 1 < k ? left >= MR_MIN : left < MR_MIN, "%s: %zu "
		       "bytes left after it, minimum %d, %s", what, left,
		       MR_MIN, i + 1 < k ? "but the buffer was released" :
		       "and the buffer was released only now");
		itest_msg_check(buf + off[i], lens[i], (uint64_t) id << 32 | i,
				what);
	}
	itest_guard_check(buf, MR_BUF, "the multi-receive buffer");
	for (size_t i = 0; i < count - k; i++)
		itest_msg_check(spare + i * (MR_SPARE_LEN + ITEST_GUARD),
				lens[k + i], (uint64_t) id << 32 | (k + i),
				itest_fmt("%s: spare receive %zu", label, i));
	/* Cancel the spare receives that no message used. */
	n->rx->errors_ok = true;
	for (size_t i = count - k; i < MR_SPARE; i++) {
		struct fi_cq_err_entry e;

		CHECK_OK(fi_cancel(&n->ep->fid, CTX(i)));
		e = itest_cq_wait_err(n->rx, "a cancelled spare receive");
		EXPECT(e.err == FI_ECANCELED && e.op_context == CTX(i),
		       "cancelled spare %zu: err %d, op_context %p", i, e.err,
		       e.op_context);
	}
	n->rx->errors_ok = false;
	free(buf);
}

static void phase_multi_recv(void)
{
	const char *phase = "FI_MULTI_RECV";
	/* Rendezvous messages complete after the eager ones behind them. */
	static const size_t mixed[] = {
		RNDV_A, 1000, RNDV_A, 1000, RNDV_A, 1000, 700, 700,
	};
	size_t small[70];
	struct itest_node n;

	for (size_t i = 0; i < 70; i++)
		small[i] = 1000;
	open_pair(&n, NULL, is_r ? "R" : "S");
	if (is_r) {
		size_t min = MR_MIN, optlen = sizeof(min);

		CHECK_OK(fi_setopt(&n.ep->fid, FI_OPT_ENDPOINT,
				   FI_OPT_MIN_MULTI_RECV, &min, sizeof(min)));
		min = 0;
		CHECK_OK(fi_getopt(&n.ep->fid, FI_OPT_ENDPOINT,
				   FI_OPT_MIN_MULTI_RECV, &min, &optlen));
		CHECK(min == MR_MIN && optlen == sizeof(min));
	}
	multi_recv_round(&n, small, 70, 0x400, "FI_MULTI_RECV, 70 x 1000 "
			 "bytes");
	next_step(phase);
	multi_recv_round(&n, mixed, sizeof(mixed) / sizeof(mixed[0]), 0x410,
			 "FI_MULTI_RECV, eager and rendezvous");
	close_pair(&n, phase);
}

/* fi_cancel */

static void phase_cancel(void)
{
	const char *phase = "fi_cancel";
	struct itest_node n;
	char bx[600] = "", by[600] = "", bt[600] = "", msg[500];

	open_pair(&n, NULL, is_r ? "R" : "S");
	if (is_r) {
		struct fi_cq_err_entry e;
		struct itest_comp c;
		char unknown;

		n.rx->errors_ok = true;
		recv_msg(&n, bx, sizeof(bx), CTX(1), phase);
		CHECK_OK(fi_cancel(&n.ep->fid, CTX(1)));
		e = itest_cq_wait_err(n.rx, "the cancelled receive's entry");
		EXPECT(e.err == FI_ECANCELED, "cancelled receive: err %d (%s)",
		       e.err, fi_strerror(e.err));
		EXPECT(e.op_context == CTX(1), "cancelled receive: op_context "
		       "%p, expected %p", e.op_context, CTX(1));
		EXPECT((e.flags & (FI_RECV | FI_MSG)) == (FI_RECV | FI_MSG),
		       "cancelled receive: flags 0x%" PRIx64, e.flags);
		CHECK_RET(fi_cancel(&n.ep->fid, CTX(1)), -FI_ENOENT);
		CHECK_RET(fi_cancel(&n.ep->fid, &unknown), -FI_ENOENT);
		/* A tagged receive. */
		ITEST_POST(fi_trecv(n.ep, bt, sizeof(bt), NULL, FI_ADDR_UNSPEC,
				    3, 0, CTX(3)), "fi_trecv");
		CHECK_OK(fi_cancel(&n.ep->fid, CTX(3)));
		e = itest_cq_wait_err(n.rx, "the cancelled tagged receive");
		EXPECT(e.err == FI_ECANCELED && e.op_context == CTX(3),
		       "cancelled tagged receive: err %d, op_context %p",
		       e.err, e.op_context);
		EXPECT(e.flags & FI_TAGGED, "cancelled tagged receive: flags "
		       "0x%" PRIx64, e.flags);
		n.rx->errors_ok = false;
		/* The message goes to the receive posted after. */
		recv_msg(&n, by, sizeof(by), CTX(2), phase);
		signal_peer();
		c = itest_cq_wait(n.rx, "the message after the cancel");
		EXPECT_COMP(c, CTX(2), FI_RECV | FI_MSG, 0,
			    "the receive after the cancelled one");
		EXPECT(c.len == sizeof(msg), "len %zu", c.len);
		itest_msg_check(by, sizeof(msg), 0x500, "the receive after "
				"the cancelled one");
		check_untouched(bx, sizeof(bx), "the cancelled receive");
		check_untouched(bt, sizeof(bt), "the cancelled tagged receive");
		itest_cq_expect_empty(n.rx, phase);
	} else {
		itest_msg_fill(msg, sizeof(msg), 0x500);
		await_peer("R's cancels");
		send_msg(&n, msg, sizeof(msg), CTX(0), phase);
		wait_sends(&n, 0, 1, phase);
	}
	close_pair(&n, phase);
}

/* Selective completion, inject, counters */

#define SEL_N		8

static size_t sel_len(size_t i)
{
	return i >= 6 ? RNDV_A : 100 + i;
}

static void phase_selective(void)
{
	const char *phase = "selective completion";
	struct itest_node_opts o = {
		.tx_bind = FI_SELECTIVE_COMPLETION,
		.rx_bind = FI_SELECTIVE_COMPLETION,
		.send_cntr = true, .recv_cntr = true,
	};
	size_t off[SEL_N];
	struct itest_node n;
	unsigned char *buf;

	buf = msg_layout(off, SEL_N, sel_len, 0);
	open_pair(&n, &o, is_r ? "R" : "S");
	if (!is_r) {
		struct iovec iov;
		struct fi_msg m = { .msg_iov = &iov, .iov_count = 1,
				    .addr = n.peer };
		bool seen4 = false, seen6 = false;

		for (size_t i = 0; i < SEL_N; i++)
			itest_msg_fill(buf + off[i], sel_len(i), 0x600 + i);
		await_peer("R's receives");
		for (size_t i = 0; i < 3; i++)
			send_msg(&n, buf + off[i], sel_len(i), CTX(i), phase);
		for (size_t i = 3; i < 5; i++) {
			iov = (struct iovec) { buf + off[i], sel_len(i) };
			m.context = CTX(i);
			ITEST_POST(fi_sendmsg(n.ep, &m, i == 4 ? FI_COMPLETION
					      : 0), "fi_sendmsg");
		}
		ITEST_POST(fi_inject(n.ep, buf + off[5], sel_len(5), n.peer),
			   "fi_inject");
		iov = (struct iovec) { buf + off[6], sel_len(6) };
		m.context = CTX(6);
		ITEST_POST(fi_sendmsg(n.ep, &m, FI_COMPLETION),
			   "fi_sendmsg (rendezvous)");
		send_msg(&n, buf + off[7], sel_len(7), CTX(7), phase);
		itest_cntr_wait(n.send_cntr, SEL_N,
				"the selective send counter");
		/* Only the two FI_COMPLETION sends have CQ entries. */
		for (int i = 0; i < 2; i++) {
			struct itest_comp c = itest_cq_wait(n.tx, "the "
				"completions of sends with FI_COMPLETION");

			EXPECT_COMP(c, c.op_context, FI_SEND | FI_MSG, 0,
				    phase);
			if (c.op_context == CTX(4) && !seen4)
				seen4 = true;
			else if (c.op_context == CTX(6) && !seen6)
				seen6 = true;
			else
				FAIL("selective completion: a CQ entry for "
				     "op_context %p (only sends 4 and 6 asked "
				     "for one)", c.op_context);
		}
		itest_idle(50);
		itest_cq_expect_empty(n.tx, "selective completion: sends "
				      "without FI_COMPLETION");
		EXPECT(fi_cntr_read(n.send_cntr) == SEL_N &&
		       !fi_cntr_readerr(n.send_cntr), "send counter %" PRIu64
		       ", errors %" PRIu64, fi_cntr_read(n.send_cntr),
		       fi_cntr_readerr(n.send_cntr));
	} else {
		struct iovec iov;
		struct fi_msg m = { .msg_iov = &iov, .iov_count = 1,
				    .addr = FI_ADDR_UNSPEC };

		/* Receives 2 and 6 ask for completions; the rest do not. */
		for (size_t i = 0; i < SEL_N; i++) {
			if (i == 2 || i == 6) {
				iov = (struct iovec) { buf + off[i],
						       sel_len(i) };
				m.context = CTX(i);
				ITEST_POST(fi_recvmsg(n.ep, &m, FI_COMPLETION),
					   "fi_recvmsg");
			} else {
				recv_msg(&n, buf + off[i], sel_len(i), CTX(i),
					 phase);
			}
		}
		signal_peer();
		itest_cntr_wait(n.recv_cntr, SEL_N, "the selective receive "
				"counter");
		for (size_t want = 2; want <= 6; want += 4) {
			struct itest_comp c = itest_cq_wait(n.rx, "the "
				"completions of receives with FI_COMPLETION");

			EXPECT(c.op_context == CTX(2) || c.op_context == CTX(6),
			       "selective completion: a receive CQ entry for "
			       "op_context %p (only 2 and 6 asked for one)",
			       c.op_context);
			EXPECT_COMP(c, c.op_context, FI_RECV | FI_MSG, 0,
				    phase);
		}
		itest_idle(50);
		itest_cq_expect_empty(n.rx, "selective completion: receives "
				      "without FI_COMPLETION");
		for (size_t i = 0; i < SEL_N; i++)
			itest_msg_check(buf + off[i], sel_len(i), 0x600 + i,
					itest_fmt("selective completion: "
						  "receive %zu", i));
		EXPECT(fi_cntr_read(n.recv_cntr) == SEL_N &&
		       !fi_cntr_readerr(n.recv_cntr), "receive counter %"
		       PRIu64 ", errors %" PRIu64, fi_cntr_read(n.recv_cntr),
		       fi_cntr_readerr(n.recv_cntr));
	}
	close_pair(&n, phase);
	free(buf);
}

#define INJ_N		7

static size_t inj_len(size_t i)
{
	static const size_t lens[INJ_N] = { 0, 100, 8192, 50, 60, 1, 10 };

	return lens[i];
}

static void phase_inject(void)
{
	const char *phase = "fi_inject";
	struct itest_node_opts o = { .send_cntr = true };
	size_t off[INJ_N];
	struct itest_node n;
	unsigned char *buf;

	buf = msg_layout(off, INJ_N, inj_len, 64);
	open_pair(&n, &o, is_r ? "R" : "S");
	if (!is_r) {
		size_t inject_size = itest_info->tx_attr->inject_size;
		unsigned char *big = calloc(1, inject_size + 1);
		struct itest_comp c;

		CHECK(big != NULL);
		CHECK(inject_size >= 8192);
		await_peer("R's receives");
		/* Each injected buffer is overwritten at once. */
		for (size_t i = 0; i < INJ_N - 1; i++) {
			unsigned char *b = buf + off[i];
			size_t len = inj_len(i);

			itest_msg_fill(b, len, 0x700 + i);
			if (i == 3)
				ITEST_POST(fi_injectdata(n.ep, b, len, 77,
							 n.peer),
					   "fi_injectdata");
			else if (i == 4)
				ITEST_POST(fi_tinject(n.ep, b, len, n.peer,
						      11), "fi_tinject");
			else
				ITEST_POST(fi_inject(n.ep, b, len, n.peer),
					   itest_fmt("fi_inject of %zu bytes",
						     len));
			memset(b, 0xee, len);
		}
		CHECK_RET(fi_inject(n.ep, big, inject_size + 1, n.peer),
			  -FI_EINVAL);
		itest_msg_fill(buf + off[6], inj_len(6), 0x706);
		send_msg(&n, buf + off[6], inj_len(6), CTX(6), phase);
		itest_cntr_wait(n.send_cntr, INJ_N, "the send counter");
		c = itest_cq_wait(n.tx, "the fi_send after the injects");
		EXPECT_COMP(c, CTX(6), FI_SEND | FI_MSG, 0, "the fi_send after "
			    "the injects");
		itest_idle(50);
		itest_cq_expect_empty(n.tx, "fi_inject must not complete");
		EXPECT(fi_cntr_read(n.send_cntr) == INJ_N, "send counter %"
		       PRIu64, fi_cntr_read(n.send_cntr));
		free(big);
	} else {
		for (size_t i = 0; i < INJ_N; i++) {
			if (i == 4)
				ITEST_POST(fi_trecv(n.ep, buf + off[i],
						    inj_len(i) + 64, NULL,
						    FI_ADDR_UNSPEC, 11, 0,
						    CTX(i)), "fi_trecv");
			else
				recv_msg(&n, buf + off[i], inj_len(i) + 64,
					 CTX(i), phase);
		}
		signal_peer();
		for (size_t j = 0; j < INJ_N; j++) {
			struct itest_comp c = itest_cq_wait(n.rx, phase);
			size_t i = CTX_INDEX(c.op_context);
			const char *what = itest_fmt("injected message %zu "
						     "(%zu bytes)", i, i < INJ_N
						     ? inj_len(i) : 0);

			EXPECT(i < INJ_N, "%s: op_context %p", what,
			       c.op_context);
			EXPECT(c.len == inj_len(i), "%s: len %zu", what, c.len);
			if (i == 3)
				EXPECT((c.flags & FI_REMOTE_CQ_DATA) &&
				       c.data == 77, "%s: flags 0x%" PRIx64
				       ", data %" PRIu64, what, c.flags,
				       c.data);
			if (i == 4)
				EXPECT((c.flags & FI_TAGGED) && c.tag == 11,
				       "%s: flags 0x%" PRIx64 ", tag %" PRIu64,
				       what, c.flags, c.tag);
			itest_msg_check(buf + off[i], inj_len(i), 0x700 + i,
					what);
		}
	}
	close_pair(&n, phase);
	free(buf);
}

/* Truncation */

static void phase_truncation(void)
{
	const char *phase = "truncation";
	struct itest_node_opts o = { .recv_cntr = true };
	static const size_t post[2] = { 100, 10000 }, sent[2] = { 300, RNDV_A };
	unsigned char *buf = calloc(1, RNDV_A + 2 * ITEST_GUARD + 200);
	struct itest_node n;

	CHECK(buf != NULL);
	open_pair(&n, &o, is_r ? "R" : "S");
	for (int i = 0; i < 3; i++) {
		/* i == 2: a message that fits, after the truncated ones. */
		size_t plen = i < 2 ? post[i] : 100;
		size_t slen = i < 2 ? sent[i] : 100;
		const char *what = itest_fmt("truncation: %zu bytes into %zu",
					     slen, plen);

		if (!is_r) {
			itest_msg_fill(buf, slen, 0x800 + i);
			await_peer("R's small receive");
			send_msg(&n, buf, slen, CTX(i), what);
			wait_sends(&n, i, 1, what);
			continue;
		}
		itest_guard_reset(buf, plen, 0);
		recv_msg(&n, buf, plen, CTX(i), what);
		signal_peer();
		if (i < 2) {
			struct fi_cq_err_entry e;

			n.rx->errors_ok = true;
			e = itest_cq_wait_err(n.rx, what);
			n.rx->errors_ok = false;
			EXPECT(e.err == FI_ETRUNC, "%s: err %d (%s)", what,
			       e.err, fi_strerror(e.err));
			EXPECT(e.op_context == CTX(i), "%s: op_context %p",
			       what, e.op_context);
			EXPECT(e.olen == slen - plen, "%s: olen %zu, expected "
			       "%zu", what, e.olen, slen - plen);
			EXPECT(e.len == plen, "%s: len %zu, expected %zu", what,
			       e.len, plen);
			EXPECT((e.flags & (FI_RECV | FI_MSG)) ==
			       (FI_RECV | FI_MSG), "%s: flags 0x%" PRIx64, what,
			       e.flags);
			itest_cq_expect_empty(n.rx, what);
		} else {
			struct itest_comp c = itest_cq_wait(n.rx, what);

			EXPECT_COMP(c, CTX(i), FI_RECV | FI_MSG, 0, what);
			EXPECT(c.len == slen, "%s: len %zu", what, c.len);
		}
		itest_msg_check(buf, plen, 0x800 + i, what);
		itest_guard_check(buf, plen, what);
	}
	if (is_r)
		EXPECT(fi_cntr_read(n.recv_cntr) == 1 &&
		       fi_cntr_readerr(n.recv_cntr) == 2, "receive counter %"
		       PRIu64 " (expected 1), errors %" PRIu64 " (expected 2)",
		       fi_cntr_read(n.recv_cntr), fi_cntr_readerr(n.recv_cntr));
	close_pair(&n, phase);
	free(buf);
}

/* FI_DELIVERY_COMPLETE */

static void dc_send(struct itest_node *n, void *buf, size_t len, void *context)
{
	struct iovec iov = { .iov_base = buf, .iov_len = len };
	struct fi_msg m = { .msg_iov = &iov, .iov_count = 1, .addr = n->peer,
			    .context = context };

	ITEST_POST(fi_sendmsg(n->ep, &m, FI_DELIVERY_COMPLETE),
		   "fi_sendmsg(FI_DELIVERY_COMPLETE)");
}

static void phase_delivery_complete(void)
{
	const char *phase = "FI_DELIVERY_COMPLETE";
	unsigned char *buf = calloc(1, RNDV_B + ITEST_GUARD);
	struct itest_node n;

	CHECK(buf != NULL);
	open_pair(&n, NULL, is_r ? "R" : "S");
	if (!is_r) {
		int64_t deadline;
		struct itest_comp c;

		/* 1: an eager message that waits, unexpected, at R. */
		itest_msg_fill(buf, 200, 0x900);
		dc_send(&n, buf, 200, CTX(0));
		signal_peer();
		deadline = itest_deadline();
		while (!itest_chan_ready(&chan)) {
			itest_check_deadline(deadline, "R to post its receive");
			itest_progress();
			if (n.tx->count && !itest_chan_ready(&chan))
				FAIL("an eager FI_DELIVERY_COMPLETE send "
				     "completed before the receiver posted a "
				     "receive for it");
		}
		await_peer("R posting its receive");
		c = itest_cq_wait(n.tx, "the delivery-complete send");
		EXPECT_COMP(c, CTX(0), FI_SEND | FI_MSG, 0,
			    "delivery-complete eager send");
		/* 2 and 3: eager and rendezvous into posted receives. */
		for (int i = 1; i < 3; i++) {
			size_t len = i == 1 ? 300 : RNDV_B;

			itest_msg_fill(buf, len, 0x900 + i);
			await_peer("R's receive");
			dc_send(&n, buf, len, CTX(i));
			c = itest_cq_wait(n.tx, "a delivery-complete send");
			EXPECT_COMP(c, CTX(i), FI_SEND | FI_MSG, 0,
				    "delivery-complete send");
		}
	} else {
		struct itest_comp c;

		await_peer("S's delivery-complete send");
		itest_idle(500);
		itest_cq_expect_empty(n.rx, "no receive is posted yet");
		signal_peer();
		itest_guard_reset(buf, 200, 0);
		recv_msg(&n, buf, 200, CTX(0), phase);
		c = itest_cq_wait(n.rx, "the delivery-complete message");
		EXPECT_COMP(c, CTX(0), FI_RECV | FI_MSG, 0, phase);
		itest_msg_check(buf, 200, 0x900, "delivery-complete eager "
				"message, unexpected");
		for (int i = 1; i < 3; i++) {
			size_t len = i == 1 ? 300 : RNDV_B;

			itest_guard_reset(buf, len, 0);
			recv_msg(&n, buf, len, CTX(i), phase);
			signal_peer();
			c = itest_cq_wait(n.rx, "a delivery-complete message");
			EXPECT_COMP(c, CTX(i), FI_RECV | FI_MSG, 0, phase);
			EXPECT(c.len == len, "len %zu", c.len);
			itest_msg_check(buf, len, 0x900 + i,
					"delivery-complete message");
			itest_guard_check(buf, len,
					  "delivery-complete message");
		}
	}
	close_pair(&n, phase);
	free(buf);
}

/* Counters without CQs */

#define CNT_N		10

static size_t cnt_len(size_t i)
{
	return i % 3 == 2 ? RNDV_A + i : 10 + 100 * i;
}

static void phase_counters(void)
{
	const char *phase = "counters only";
	struct itest_node_opts o = {
		.no_rx_cq = is_r, .recv_cntr = is_r,
		.no_tx_cq = !is_r, .send_cntr = !is_r,
	};
	size_t off[CNT_N];
	struct itest_node n;
	unsigned char *buf;

	buf = msg_layout(off, CNT_N, cnt_len, 0);
	open_pair(&n, &o, is_r ? "R" : "S");
	if (!is_r) {
		for (size_t i = 0; i < CNT_N; i++)
			itest_msg_fill(buf + off[i], cnt_len(i), 0xa00 + i);
		await_peer("R's receives");
		for (size_t i = 0; i < CNT_N; i++)
			send_msg(&n, buf + off[i], cnt_len(i), CTX(i), phase);
		itest_cntr_wait(n.send_cntr, CNT_N, "the send counter");
		itest_idle(50);
		EXPECT(fi_cntr_read(n.send_cntr) == CNT_N &&
		       !fi_cntr_readerr(n.send_cntr), "send counter %" PRIu64
		       ", errors %" PRIu64, fi_cntr_read(n.send_cntr),
		       fi_cntr_readerr(n.send_cntr));
	} else {
		for (size_t i = 0; i < CNT_N; i++) {
			itest_guard_reset(buf + off[i], cnt_len(i), 0);
			recv_msg(&n, buf + off[i], cnt_len(i), CTX(i), phase);
		}
		signal_peer();
		itest_cntr_wait(n.recv_cntr, CNT_N, "the receive counter");
		for (size_t i = 0; i < CNT_N; i++) {
			const char *what = itest_fmt("counters only: receive "
						     "%zu", i);

			itest_msg_check(buf + off[i], cnt_len(i), 0xa00 + i,
					what);
			itest_guard_check(buf + off[i], cnt_len(i), what);
		}
		itest_idle(50);
		EXPECT(fi_cntr_read(n.recv_cntr) == CNT_N &&
		       !fi_cntr_readerr(n.recv_cntr), "receive counter %" PRIu64
		       ", errors %" PRIu64, fi_cntr_read(n.recv_cntr),
		       fi_cntr_readerr(n.recv_cntr));
	}
	close_pair(&n, phase);
	free(buf);
}

#define PHASE(fn, name)	(itest_step = (name), fn())

/* FI_PEEK, FI_CLAIM, FI_DISCARD */

enum { PK_DATA = 0x10, PK_CLAIM = 0x20, PK_DROP = 0x30, PK_CLAIM_DROP = 0x40,
       PK_NEVER = 0x99 };

#define PK_N		4
#define PK_CQ_DATA	0x1010

static const uint64_t pk_tag[PK_N] = { PK_DATA, PK_CLAIM, PK_DROP,
				       PK_CLAIM_DROP };
static const size_t pk_len[PK_N] = { 200, RNDV_A, 300, RNDV_B };

static ssize_t pk_post(struct itest_node *n, uint64_t tag, uint64_t flags,
		       void *buf, size_t len, void *context)
{
	struct iovec iov = { .iov_base = buf, .iov_len = len };
	struct fi_msg_tagged msg = {
		.msg_iov = &iov, .iov_count = buf ? 1 : 0,
		.addr = FI_ADDR_UNSPEC, .tag = tag, .context = context,
	};

	return fi_trecvmsg(n->ep, &msg, flags);
}

/* A peek's one result: true and the entry if a message matched. */
static bool pk_result(struct itest_node *n, void *context,
		      struct itest_comp *c, const char *what)
{
	int64_t deadline = itest_deadline();
	struct fi_cq_err_entry e;

	while (!n->rx->count && !n->rx->ecount) {
		itest_check_deadline(deadline, what);
		itest_progress();
	}
	if (n->rx->count) {
		*c = itest_cq_wait(n->rx, what);
		EXPECT(c->op_context == context, "%s: op_context %p", what,
		       c->op_context);
		return true;
	}
	e = itest_cq_wait_err(n->rx, what);
	EXPECT(e.err == FI_ENOMSG && e.op_context == context &&
	       (e.flags & (FI_RECV | FI_TAGGED)) == (FI_RECV | FI_TAGGED),
	       "%s: err %d (%s), op_context %p, flags 0x%" PRIx64, what,
	       e.err, fi_strerror(e.err), e.op_context, e.flags);
	return false;
}

/* Peeks (with flags) until the message with this tag has arrived. */
static struct itest_comp pk_find(struct itest_node *n, uint64_t tag,
				 uint64_t flags, void *context, const char *what)
{
	int64_t deadline = itest_deadline();
	struct itest_comp c;

	do {
		itest_check_deadline(deadline, what);
		ITEST_POST(pk_post(n, tag, FI_PEEK | flags, NULL, 0, context),
			   what);
	} while (!pk_result(n, context, &c, what));
	EXPECT(c.tag == tag, "%s: tag 0x%" PRIx64, what, c.tag);
	return c;
}

static void pk_expect_gone(struct itest_node *n, uint64_t tag,
			   const char *what)
{
	struct itest_comp c;

	ITEST_POST(pk_post(n, tag, FI_PEEK, NULL, 0, CTX(9)), what);
	EXPECT(!pk_result(n, CTX(9), &c, what), "%s: a message matched",
	       what);
}

static void pk_receiver(struct itest_node *n, unsigned char *buf)
{
	static struct fi_context claim[2];
	struct itest_comp c;

	n->rx->errors_ok = true;
	pk_expect_gone(n, PK_NEVER, "a peek for a tag never sent");
	CHECK_RET(fi_recvmsg(n->ep, &(struct fi_msg) {
			.addr = FI_ADDR_UNSPEC, .context = CTX(9) }, FI_PEEK),
		  -FI_EINVAL);
	CHECK_RET(pk_post(n, PK_DATA, FI_CLAIM, buf, 64, &claim[0]),
		  -FI_EINVAL);
	signal_peer();
	await_peer("S's sends");

	c = pk_find(n, PK_DATA, 0, CTX(10), "a peek");
	EXPECT_COMP(c, CTX(10), FI_RECV | FI_TAGGED | FI_REMOTE_CQ_DATA, 0,
		    "a peek");
	EXPECT(c.len == pk_len[0] && c.data == PK_CQ_DATA, "a peek: len %zu "
	       "data 0x%" PRIx64, c.len, c.data);
	ITEST_POST(pk_post(n, PK_DATA, 0, buf, RNDV_B, CTX(11)),
		   "the receive after a peek");
	c = itest_cq_wait(n->rx, "the message a peek left in place");
	EXPECT(c.op_context == CTX(11) && c.len == pk_len[0], "len %zu",
	       c.len);
	itest_msg_check(buf, pk_len[0], 0x700, "the message after a peek");

	c = pk_find(n, PK_CLAIM, FI_CLAIM, &claim[0], "a peek with FI_CLAIM");
	EXPECT(c.len == pk_len[1], "FI_CLAIM peek: len %zu", c.len);
	ITEST_POST(pk_post(n, PK_CLAIM, 0, buf + 2 * RNDV_B, RNDV_B, CTX(12)),
		   "a plain receive for the claimed tag");
	pk_expect_gone(n, PK_CLAIM, "a peek for the claimed tag");
	ITEST_POST(pk_post(n, PK_CLAIM, FI_CLAIM, buf + RNDV_B, RNDV_B,
			   &claim[0]), "the FI_CLAIM receive");
	c = itest_cq_wait(n->rx, "the claimed message");
	EXPECT_COMP(c, &claim[0], FI_RECV | FI_TAGGED, 0, "claimed message");
	EXPECT(c.len == pk_len[1], "claimed message: len %zu", c.len);
	itest_msg_check(buf + RNDV_B, pk_len[1], 0x701, "claimed message");
	CHECK_OK(fi_cancel(&n->ep->fid, CTX(12)));
	EXPECT(itest_cq_wait_err(n->rx, "the plain receive's cancel").err ==
	       FI_ECANCELED, "the plain receive matched the claimed message");
	check_untouched(buf + 2 * RNDV_B, RNDV_B, "the plain receive for the "
			"claimed tag");

	c = pk_find(n, PK_DROP, FI_DISCARD, CTX(13), "FI_PEEK | FI_DISCARD");
	EXPECT(c.len == pk_len[2], "discarding peek: len %zu", c.len);
	pk_expect_gone(n, PK_DROP, "a peek for the discarded message");

	pk_find(n, PK_CLAIM_DROP, FI_CLAIM, &claim[1], "a claim to discard");
	ITEST_POST(pk_post(n, PK_CLAIM_DROP, FI_CLAIM | FI_DISCARD, NULL, 0,
			   &claim[1]), "FI_CLAIM | FI_DISCARD");
	c = itest_cq_wait(n->rx, "the discarded claim");
	EXPECT(c.op_context == &claim[1] && c.len == 0, "discarded claim: len "
	       "%zu", c.len);
	CHECK_RET(pk_post(n, PK_CLAIM_DROP, FI_CLAIM, buf, 64, &claim[1]),
		  -FI_EINVAL);
	pk_expect_gone(n, PK_CLAIM_DROP, "a peek for the discarded claim");
	n->rx->errors_ok = false;
}

static void phase_peek(void)
{
	const char *phase = "FI_PEEK and FI_CLAIM";
	unsigned char *buf = calloc(3, RNDV_B);
	struct itest_node n;

	CHECK(buf != NULL);
	open_pair(&n, NULL, is_r ? "R" : "S");
	if (is_r) {
		pk_receiver(&n, buf);
	} else {
		await_peer("R's first peeks");
		for (size_t i = 0; i < PK_N; i++) {
			itest_msg_fill(buf + i * (RNDV_B / 4), pk_len[i],
				       0x700 + i);
			ITEST_POST(fi_tsenddata(n.ep, buf + i * (RNDV_B / 4),
						pk_len[i], NULL, PK_CQ_DATA,
						n.peer, pk_tag[i], CTX(i)),
				   phase);
		}
		signal_peer();
		/* Discarded rendezvous messages complete too. */
		wait_sends(&n, 0, PK_N, phase);
	}
	close_pair(&n, phase);
	free(buf);
}

static void run(void)
{
	(void) itest_domain();
	PHASE(phase_unexpected, "unexpected messages");
	PHASE(phase_flood, "a flood of unexpected messages");
	PHASE(phase_cq_data, "remote CQ data");
	PHASE(phase_source, "FI_SOURCE");
	PHASE(phase_multi_recv, "FI_MULTI_RECV");
	PHASE(phase_cancel, "fi_cancel");
	PHASE(phase_selective, "selective completion");
	PHASE(phase_inject, "fi_inject");
	PHASE(phase_truncation, "truncation");
	PHASE(phase_delivery_complete, "FI_DELIVERY_COMPLETE");
	PHASE(phase_counters, "counters only");
	PHASE(phase_peek, "FI_PEEK and FI_CLAIM");
	itest_domain_close();
}

static void sender_main(void *arg)
{
	(void) arg;
	is_r = false;
	chan = itest_link_child(&link_rs);
	run();
	itest_chan_close(&chan);
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	itest_link_init(&link_rs);
	itest_fork("S", sender_main, NULL);
	snprintf(itest_who, sizeof(itest_who), "R");
	is_r = true;
	chan = itest_link_parent(&link_rs);
	run();
	itest_wait_kids();
	itest_chan_close(&chan);
	itest_pass("nrma_msg_features");
	return 0;
}
