/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Message features between a receiver (this process, "R") and a
 * forked sender ("S"), on fresh endpoints (see itest_rs.h): fi_cancel
 * of posted receives.
 */
#include "itest_rs.h"

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
		EXPECT(e.op_context == CTX(1),
		       "cancelled receive: op_context "
		       "%p, expected %p",
		       e.op_context, CTX(1));
		EXPECT((e.flags & (FI_RECV | FI_MSG)) == (FI_RECV | FI_MSG),
		       "cancelled receive: flags 0x%" PRIx64, e.flags);
		CHECK_RET(fi_cancel(&n.ep->fid, CTX(1)), -FI_ENOENT);
		CHECK_RET(fi_cancel(&n.ep->fid, &unknown), -FI_ENOENT);
		/* A tagged receive. */
		ITEST_POST(fi_trecv(n.ep, bt, sizeof(bt), NULL, FI_ADDR_UNSPEC,
				    3, 0, CTX(3)),
			   "fi_trecv");
		CHECK_OK(fi_cancel(&n.ep->fid, CTX(3)));
		e = itest_cq_wait_err(n.rx, "the cancelled tagged receive");
		EXPECT(e.err == FI_ECANCELED && e.op_context == CTX(3),
		       "cancelled tagged receive: err %d, op_context %p", e.err,
		       e.op_context);
		EXPECT(e.flags & FI_TAGGED,
		       "cancelled tagged receive: flags "
		       "0x%" PRIx64,
		       e.flags);
		n.rx->errors_ok = false;
		/* The message goes to the receive posted after. */
		recv_msg(&n, by, sizeof(by), CTX(2), phase);
		signal_peer();
		c = itest_cq_wait(n.rx, "the message after the cancel");
		EXPECT_COMP(c, CTX(2), FI_RECV | FI_MSG, 0,
			    "the receive after the cancelled one");
		EXPECT(c.len == sizeof(msg), "len %zu", c.len);
		itest_msg_check(by, sizeof(msg), 0x500,
				"the receive after "
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

int main(void)
{
	static const struct rs_phase phases[] = {
		{ phase_cancel, "fi_cancel" },
	};

	return rs_main("nrma_msg_cancel", phases,
		       sizeof(phases) / sizeof(phases[0]));
}
