/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Message features between a receiver (this process, "R") and a forked
 * sender ("S"), on fresh endpoints (see itest_rs.h): a rendezvous receive
 * that fails tells its sender.
 *  - A receive the device cannot write into (read-only memory) ends in an
 *    error entry at R, and the send in an FI_EIO error entry at S, not in
 *    a wait for ever; the connection goes on working.
 *  - A receive whose iov has an empty entry takes a rendezvous message
 *    like any other.
 */
#include <sys/mman.h>

#include "itest_rs.h"

static void phase_unwritable(void)
{
	const char *phase = "a receive into read-only memory";
	unsigned char *ro = mmap(NULL, RNDV_B, PROT_READ,
				 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	unsigned char *buf = calloc(1, RNDV_B);
	struct itest_node n;

	CHECK(ro != MAP_FAILED && buf != NULL);
	open_pair(&n, NULL, is_r ? "R" : "S");
	if (is_r) {
		struct fi_cq_err_entry e;
		struct itest_comp c;

		n.rx->errors_ok = true;
		recv_msg(&n, ro, RNDV_B, CTX(1), phase);
		signal_peer();
		e = itest_cq_wait_err(n.rx, phase);
		EXPECT(e.op_context == CTX(1) && e.err,
		       "%s: op_context %p, err %d", phase, e.op_context, e.err);
		n.rx->errors_ok = false;
		recv_msg(&n, buf, RNDV_B, CTX(2), phase);
		signal_peer();
		c = itest_cq_wait(n.rx, "the message after the failed one");
		EXPECT_COMP(c, CTX(2), FI_RECV | FI_MSG, 0, phase);
		itest_msg_check(buf, RNDV_B, 0x902, phase);
	} else {
		struct fi_cq_err_entry e;

		n.tx->errors_ok = true;
		itest_msg_fill(buf, RNDV_B, 0x901);
		await_peer("R's read-only receive");
		send_msg(&n, buf, RNDV_B, CTX(1), phase);
		e = itest_cq_wait_err(n.tx, "the send R could not take");
		EXPECT(e.op_context == CTX(1) && e.err == FI_EIO,
		       "%s: op_context %p, err %d (%s)", phase, e.op_context,
		       e.err, fi_strerror(e.err));
		n.tx->errors_ok = false;
		itest_msg_fill(buf, RNDV_B, 0x902);
		await_peer("R's next receive");
		send_msg(&n, buf, RNDV_B, CTX(2), phase);
		wait_sends(&n, 2, 1, "the send after the failed one");
	}
	close_pair(&n, phase);
	munmap(ro, RNDV_B);
	free(buf);
}

static void phase_empty_iov(void)
{
	const char *phase = "a receive with an empty iov entry";
	unsigned char *buf = calloc(1, RNDV_B + ITEST_GUARD);
	unsigned char empty[8] = { 0 };
	struct itest_node n;

	CHECK(buf != NULL);
	open_pair(&n, NULL, is_r ? "R" : "S");
	if (is_r) {
		struct iovec iov[3] = {
			{ .iov_base = empty, .iov_len = 0 },
			{ .iov_base = buf, .iov_len = SEG_A },
			{ .iov_base = buf + SEG_A, .iov_len = RNDV_B - SEG_A },
		};
		struct itest_comp c;

		itest_guard_reset(buf, RNDV_B, 0);
		ITEST_POST(fi_recvv(n.ep, iov, NULL, 3, FI_ADDR_UNSPEC, CTX(3)),
			   phase);
		signal_peer();
		c = itest_cq_wait(n.rx, phase);
		EXPECT_COMP(c, CTX(3), FI_RECV | FI_MSG, 0, phase);
		EXPECT(c.len == RNDV_B, "%s: len %zu", phase, c.len);
		itest_msg_check(buf, RNDV_B, 0x903, phase);
		itest_guard_check(buf, RNDV_B, phase);
		check_untouched(empty, sizeof(empty), phase);
	} else {
		itest_msg_fill(buf, RNDV_B, 0x903);
		await_peer("R's receive");
		send_msg(&n, buf, RNDV_B, CTX(3), phase);
		wait_sends(&n, 3, 1, phase);
	}
	close_pair(&n, phase);
	free(buf);
}

int main(void)
{
	static const struct rs_phase phases[] = {
		{ phase_unwritable, "unwritable receive" },
		{ phase_empty_iov, "empty iov entry" },
	};

	return rs_main("nrma_msg_rndv_errors", phases,
		       sizeof(phases) / sizeof(phases[0]));
}
