/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Message features between a receiver (this process, "R") and a
 * forked sender ("S"), on fresh endpoints (see itest_rs.h):
 * FI_DELIVERY_COMPLETE, which waits for the receive to be matched.
 */
#include "itest_rs.h"

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
		itest_msg_check(buf, 200, 0x900,
				"delivery-complete eager "
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

int main(void)
{
	static const struct rs_phase phases[] = {
		{ phase_delivery_complete, "FI_DELIVERY_COMPLETE" },
	};

	return rs_main("nrma_msg_delivery_complete", phases,
		       sizeof(phases) / sizeof(phases[0]));
}
