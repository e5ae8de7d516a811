/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Message features between a receiver (this process, "R") and a
 * forked sender ("S"), on fresh endpoints (see itest_rs.h): unexpected
 * messages: 32 sent (one in segments, one by rendezvous) before any
 * receive, more than
 * the sender's share of credits (FI_NRMA_CREDITS, set here), which the
 * receiver's spare buffers let it top up; and 1200, more than the
 * receiver has buffers for.
 */
#include "itest_rs.h"

static size_t unexp_len(size_t i)
{
	if (i == 9)
		return SEG_A;
	if (i == 22)
		return RNDV_B;
	return i % 4 ? 64 + i * 37 : i * 100; /* 0 for i == 0 */
}

/* Sent by copy, eager or in segments: complete before any receive. */
static bool unexp_by_copy(size_t i)
{
	return unexp_len(i) <= 8192 || unexp_len(i) <= rs_segmented_max();
}

#define UNEXP_N	      32
#define UNEXP_SLACK   16
#define UNEXP_CREDITS 12 /* a share smaller than the 30 eager messages */

/*
 * Every send by copy (eager, or in segments) completes while R posts no
 * receive (each once its data is at R), though they are more than S's
 * share of credits: R's pool tops S up as R's spare buffers replace those
 * its messages hold, so that a message R waits for never waits behind the
 * same peer's unexpected ones.  The rendezvous send waits for R's
 * receive, which reads it.
 */
static size_t unexp_sent_early(struct itest_node *n, bool *done,
			       const char *phase)
{
	size_t early = 0;

	for (size_t i = 0; i < UNEXP_N; i++)
		early += unexp_by_copy(i);
	EXPECT(early > UNEXP_CREDITS, "%zu sends by copy", early);
	for (size_t i = 0; i < early; i++) {
		struct itest_comp c = itest_cq_wait(n->tx, phase);
		size_t k = CTX_INDEX(c.op_context);

		EXPECT(k < UNEXP_N && unexp_by_copy(k) && !done[k],
		       "send %zu (%zu bytes) completed before R posted "
		       "any receive",
		       k, k < UNEXP_N ? unexp_len(k) : 0);
		done[k] = true;
	}
	itest_cq_expect_empty_at(__FILE__, __LINE__, n->tx, 200,
				 "rendezvous sends wait for their receives");
	return early;
}

static void phase_unexpected(void)
{
	const char *phase = "unexpected messages";
	struct itest_node n;
	size_t off[UNEXP_N];
	unsigned char *buf;

	buf = msg_layout(off, UNEXP_N, unexp_len, UNEXP_SLACK);
	open_pair(&n, NULL, is_r ? "R" : "S");
	if (!is_r) {
		bool done[UNEXP_N] = { false };

		for (size_t i = 0; i < UNEXP_N; i++) {
			itest_msg_fill(buf + off[i], unexp_len(i), 0x100 + i);
			send_msg(&n, buf + off[i], unexp_len(i), CTX(i), phase);
		}
		size_t early = unexp_sent_early(&n, done, phase);

		signal_peer();
		for (size_t i = early; i < UNEXP_N; i++) {
			struct itest_comp c = itest_cq_wait(n.tx, phase);
			size_t k = CTX_INDEX(c.op_context);

			EXPECT(k < UNEXP_N && !done[k],
			       "send completion: op_context %p, once",
			       c.op_context);
			done[k] = true;
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

			EXPECT(i < UNEXP_N && !seen[i],
			       "receive completion "
			       "with op_context %p",
			       c.op_context);
			seen[i] = true;
			EXPECT_COMP(c, c.op_context, FI_RECV | FI_MSG, FI_SEND,
				    phase);
			EXPECT(c.len == unexp_len(i),
			       "receive %zu: len %zu, "
			       "expected %zu",
			       i, c.len, unexp_len(i));
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
 * is held back (its sends wait for credits, then -FI_EAGAIN) and nothing
 * is lost, reordered or duplicated.
 */
#define FLOOD_N	  1200
#define FLOOD_LEN 100

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
					break; /* receive queue full */
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

int main(void)
{
	static const struct rs_phase phases[] = {
		{ phase_unexpected, "unexpected messages" },
		{ phase_flood, "a flood of unexpected messages" },
	};
	char credits[16];

	snprintf(credits, sizeof(credits), "%d", UNEXP_CREDITS);
	CHECK(setenv("FI_NRMA_CREDITS", credits, 1) == 0);
	return rs_main("nrma_msg_unexpected", phases,
		       sizeof(phases) / sizeof(phases[0]));
}
