/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Message features between a receiver (this process, "R") and a
 * forked sender ("S"), on fresh endpoints (see itest_rs.h):
 * FI_DELIVERY_COMPLETE, which waits for the receive to be matched: eager,
 * segmented and rendezvous messages, unexpected and into posted receives.
 */
#include "itest_rs.h"

/* Unexpected at R, then into posted receives. */
static const size_t dc_unexp_lens[] = { 200, SEG_A };
static const size_t dc_posted_lens[] = { 300, SEG_A, RNDV_B };

#define DC_N(a) (sizeof(a) / sizeof((a)[0]))

static void dc_send(struct itest_node *n, void *buf, size_t len, void *context)
{
	struct iovec iov = { .iov_base = buf, .iov_len = len };
	struct fi_msg m = { .msg_iov = &iov,
			    .iov_count = 1,
			    .addr = n->peer,
			    .context = context };

	ITEST_POST(fi_sendmsg(n->ep, &m, FI_DELIVERY_COMPLETE),
		   "fi_sendmsg(FI_DELIVERY_COMPLETE)");
}

/* S: a send that waits, unexpected, at R: it completes only after R posts. */
static void dc_send_unexpected(struct itest_node *n, unsigned char *buf,
			       size_t len, size_t i)
{
	int64_t deadline;
	struct itest_comp c;

	itest_msg_fill(buf, len, 0x900 + i);
	dc_send(n, buf, len, CTX(i));
	signal_peer();
	deadline = itest_deadline();
	while (!itest_chan_ready(&chan)) {
		itest_check_deadline(deadline, "R to post its receive");
		itest_progress();
		if (n->tx->count && !itest_chan_ready(&chan))
			FAIL("a FI_DELIVERY_COMPLETE send of %zu bytes "
			     "completed before the receiver posted a "
			     "receive for it",
			     len);
	}
	await_peer("R posting its receive");
	c = itest_cq_wait(n->tx, "the delivery-complete send");
	EXPECT_COMP(c, CTX(i), FI_SEND | FI_MSG, 0,
		    "delivery-complete send, unexpected");
}

/* R: the message waits until R posts its receive. */
static void dc_recv_unexpected(struct itest_node *n, unsigned char *buf,
			       size_t len, size_t i, const char *phase)
{
	struct itest_comp c;

	await_peer("S's delivery-complete send");
	itest_idle(500);
	itest_cq_expect_empty(n->rx, "no receive is posted yet");
	signal_peer();
	itest_guard_reset(buf, len, 0);
	recv_msg(n, buf, len, CTX(i), phase);
	c = itest_cq_wait(n->rx, "the delivery-complete message");
	EXPECT_COMP(c, CTX(i), FI_RECV | FI_MSG, 0, phase);
	EXPECT(c.len == len, "len %zu", c.len);
	itest_msg_check(buf, len, 0x900 + i,
			"delivery-complete message, unexpected");
	itest_guard_check(buf, len, "delivery-complete message, unexpected");
}

static void phase_delivery_complete(void)
{
	const char *phase = "FI_DELIVERY_COMPLETE";
	unsigned char *buf = calloc(1, RNDV_B + ITEST_GUARD);
	size_t first = DC_N(dc_unexp_lens);
	struct itest_node n;

	CHECK(buf != NULL);
	open_pair(&n, NULL, is_r ? "R" : "S");
	for (size_t i = 0; i < first; i++) {
		if (is_r)
			dc_recv_unexpected(&n, buf, dc_unexp_lens[i], i, phase);
		else
			dc_send_unexpected(&n, buf, dc_unexp_lens[i], i);
	}
	for (size_t i = first; i < first + DC_N(dc_posted_lens); i++) {
		size_t len = dc_posted_lens[i - first];
		struct itest_comp c;

		if (!is_r) {
			itest_msg_fill(buf, len, 0x900 + i);
			await_peer("R's receive");
			dc_send(&n, buf, len, CTX(i));
			c = itest_cq_wait(n.tx, "a delivery-complete send");
			EXPECT_COMP(c, CTX(i), FI_SEND | FI_MSG, 0,
				    "delivery-complete send");
			continue;
		}
		itest_guard_reset(buf, len, 0);
		recv_msg(&n, buf, len, CTX(i), phase);
		signal_peer();
		c = itest_cq_wait(n.rx, "a delivery-complete message");
		EXPECT_COMP(c, CTX(i), FI_RECV | FI_MSG, 0, phase);
		EXPECT(c.len == len, "len %zu", c.len);
		itest_msg_check(buf, len, 0x900 + i,
				"delivery-complete message");
		itest_guard_check(buf, len, "delivery-complete message");
	}
	close_pair(&n, phase);
	free(buf);
}

int main(void)
{
	static const struct rs_phase phases[] = {
		{ phase_delivery_complete, "FI_DELIVERY_COMPLETE" },
	};

	return rs_main("nrma_msg_delivery_complete", phases,
		       sizeof(phases) / sizeof(phases[0]));
}
