/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Message features between a receiver (this process, "R") and a
 * forked sender ("S"), on fresh endpoints (see itest_rs.h): messages
 * past the eager size, which go in segments up to FI_NRMA_SAR_SIZE
 * (and, in itest_rs's second run, all by rendezvous):
 *  - lengths on each side of two segments' and of the segmented limit,
 *    into posted receives with room to spare: each lands whole, nothing
 *    past it is written;
 *  - a stream of 24 messages of 5 segments each, more segments than a
 *    send's window or the sender's credits, half into posted receives
 *    and half held until R posts theirs meanwhile: each goes to its
 *    receive, in order (FI_ORDER_SAS), whole;
 *  - tagged ones with remote CQ data, taken out of order by tag, one
 *    held and one posted.
 */
#include "itest_rs.h"

#define SEG_SLACK 16

/* A segment carries 8192 - 40 bytes (FI_NRMA_EAGER_SIZE less a header). */
#define SEG_PIECE 8152

static const size_t sizes_lens[] = { 8193,	    2 * SEG_PIECE - 1,
				     2 * SEG_PIECE, 2 * SEG_PIECE + 1,
				     16384,	    65535,
				     SAR_SIZE,	    SAR_SIZE + 1 };
#define SIZES_N (sizeof(sizes_lens) / sizeof(sizes_lens[0]))

static size_t sizes_len(size_t i)
{
	return sizes_lens[i];
}

/* R: n receives, all at once, then their completions in any order. */
static void recv_all(struct itest_node *n, unsigned char *buf,
		     const size_t *off, size_t count, size_t (*len)(size_t),
		     uint64_t seed, const char *what)
{
	bool seen[128] = { false };

	CHECK(count <= 128);
	for (size_t j = 0; j < count; j++) {
		struct itest_comp c = itest_cq_wait(n->rx, what);
		size_t i = CTX_INDEX(c.op_context);
		const char *msg = itest_fmt("%s: message %zu (%zu bytes)", what,
					    i, i < count ? len(i) : 0);

		EXPECT(i < count && !seen[i], "%s: op_context %p", what,
		       c.op_context);
		seen[i] = true;
		EXPECT_COMP(c, c.op_context, FI_RECV | FI_MSG, FI_TAGGED, msg);
		EXPECT(c.len == len(i), "%s: len %zu", msg, c.len);
		itest_msg_check(buf + off[i], len(i), seed + i, msg);
		check_untouched(buf + off[i] + len(i), SEG_SLACK, msg);
	}
}

/*
 * S sends count messages, len(i) bytes each, back to back; R posts the
 * first posted receives before, the rest while the messages come.
 */
static void seg_round(size_t count, size_t (*len)(size_t), size_t posted,
		      uint64_t seed, const char *phase)
{
	size_t off[128];
	unsigned char *buf;
	struct itest_node n;

	CHECK(count <= 128);
	buf = msg_layout(off, count, len, SEG_SLACK);
	open_pair(&n, NULL, is_r ? "R" : "S");
	if (!is_r) {
		await_peer("R's receives");
		for (size_t i = 0; i < count; i++) {
			itest_msg_fill(buf + off[i], len(i), seed + i);
			send_msg(&n, buf + off[i], len(i), CTX(i), phase);
		}
		wait_sends(&n, 0, count, phase);
	} else {
		for (size_t i = 0; i < count; i++) {
			if (i == posted)
				signal_peer();
			if (i >= posted)
				itest_progress();
			recv_msg(&n, buf + off[i], len(i) + SEG_SLACK, CTX(i),
				 phase);
		}
		if (posted == count)
			signal_peer();
		recv_all(&n, buf, off, count, len, seed, phase);
	}
	close_pair(&n, phase);
	free(buf);
}

static void phase_sizes(void)
{
	seg_round(SIZES_N, sizes_len, SIZES_N, 0x800,
		  "lengths around the segments");
}

#define STREAM_N   24
#define STREAM_LEN 40000 /* 5 segments */

static size_t stream_len(size_t i)
{
	(void) i;
	return STREAM_LEN;
}

static void phase_stream(void)
{
	seg_round(STREAM_N, stream_len, STREAM_N / 2, 0x880, "a stream");
}

#define TAGGED_LEN 30000

/* S sends tag 1 (held at R), then tag 2 (R's receive waits for it). */
static void phase_tagged(void)
{
	const char *phase = "tagged, with data";
	unsigned char *buf = calloc(2, TAGGED_LEN + ITEST_GUARD);
	struct itest_node_opts o = { .rx_format = FI_CQ_FORMAT_TAGGED };
	struct itest_node n;

	CHECK(buf != NULL);
	open_pair(&n, &o, is_r ? "R" : "S");
	if (!is_r) {
		for (uint64_t tag = 1; tag <= 2; tag++) {
			unsigned char *p = buf + (tag - 1) * TAGGED_LEN;

			itest_msg_fill(p, TAGGED_LEN, 0x8c0 + tag);
			if (tag == 2)
				await_peer("R's receive of tag 2");
			ITEST_POST(fi_tsenddata(n.ep, p, TAGGED_LEN, NULL,
						0x7a90 + tag, n.peer, tag,
						CTX(tag)),
				   "fi_tsenddata");
		}
		wait_sends(&n, 1, 2, phase);
	} else {
		unsigned char *p[3] = { NULL, buf,
					buf + TAGGED_LEN + ITEST_GUARD };

		itest_guard_reset(p[1], TAGGED_LEN, 0);
		itest_guard_reset(p[2], TAGGED_LEN, 0);
		ITEST_POST(fi_trecv(n.ep, p[2], TAGGED_LEN + ITEST_GUARD, NULL,
				    FI_ADDR_UNSPEC, 2, 0, CTX(2)),
			   "fi_trecv of tag 2");
		signal_peer();
		itest_idle(200); /* tag 1 is held meanwhile */
		ITEST_POST(fi_trecv(n.ep, p[1], TAGGED_LEN + ITEST_GUARD, NULL,
				    FI_ADDR_UNSPEC, 1, 0, CTX(1)),
			   "fi_trecv of tag 1");
		for (int j = 0; j < 2; j++) {
			struct itest_comp c = itest_cq_wait(n.rx, phase);
			uint64_t tag = CTX_INDEX(c.op_context);
			const char *what =
				itest_fmt("%s: tag %" PRIu64, phase, tag);

			EXPECT(tag == 1 || tag == 2, "%s: op_context %p", phase,
			       c.op_context);
			EXPECT_COMP(c, c.op_context,
				    FI_RECV | FI_TAGGED | FI_REMOTE_CQ_DATA, 0,
				    what);
			EXPECT(c.len == TAGGED_LEN && c.tag == tag &&
				       c.data == 0x7a90 + tag,
			       "%s: len %zu, tag 0x%" PRIx64
			       ", data 0x%" PRIx64,
			       what, c.len, c.tag, c.data);
			itest_msg_check(p[tag], TAGGED_LEN, 0x8c0 + tag, what);
			itest_guard_check(p[tag], TAGGED_LEN, what);
		}
	}
	close_pair(&n, phase);
	free(buf);
}

int main(void)
{
	static const struct rs_phase phases[] = {
		{ phase_sizes, "lengths around the segments" },
		{ phase_stream, "a stream" },
		{ phase_tagged, "tagged, with data" },
	};

	return rs_main("nrma_msg_segmented", phases,
		       sizeof(phases) / sizeof(phases[0]));
}
