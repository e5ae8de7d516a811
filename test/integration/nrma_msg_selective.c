/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Message features between a receiver (this process, "R") and a
 * forked sender ("S"), on fresh endpoints (see itest_rs.h):
 * FI_SELECTIVE_COMPLETION on both sides, with counters that count all.
 */
#include "itest_rs.h"

#define SEL_N 8

static size_t sel_len(size_t i)
{
	return i >= 6 ? SEG_A : 100 + i;
}

static void phase_selective(void)
{
	const char *phase = "selective completion";
	struct itest_node_opts o = {
		.tx_bind = FI_SELECTIVE_COMPLETION,
		.rx_bind = FI_SELECTIVE_COMPLETION,
		.send_cntr = true,
		.recv_cntr = true,
	};
	size_t off[SEL_N];
	struct itest_node n;
	unsigned char *buf;

	buf = msg_layout(off, SEL_N, sel_len, 0);
	open_pair(&n, &o, is_r ? "R" : "S");
	if (!is_r) {
		struct iovec iov;
		struct fi_msg m = { .msg_iov = &iov,
				    .iov_count = 1,
				    .addr = n.peer };
		bool seen4 = false, seen6 = false;

		for (size_t i = 0; i < SEL_N; i++)
			itest_msg_fill(buf + off[i], sel_len(i), 0x600 + i);
		await_peer("R's receives");
		for (size_t i = 0; i < 3; i++)
			send_msg(&n, buf + off[i], sel_len(i), CTX(i), phase);
		for (size_t i = 3; i < 5; i++) {
			iov = (struct iovec){ buf + off[i], sel_len(i) };
			m.context = CTX(i);
			ITEST_POST(fi_sendmsg(n.ep, &m,
					      i == 4 ? FI_COMPLETION : 0),
				   "fi_sendmsg");
		}
		ITEST_POST(fi_inject(n.ep, buf + off[5], sel_len(5), n.peer),
			   "fi_inject");
		iov = (struct iovec){ buf + off[6], sel_len(6) };
		m.context = CTX(6);
		ITEST_POST(fi_sendmsg(n.ep, &m, FI_COMPLETION),
			   "fi_sendmsg (rendezvous)");
		send_msg(&n, buf + off[7], sel_len(7), CTX(7), phase);
		itest_cntr_wait(n.send_cntr, SEL_N,
				"the selective send counter");
		/* Only the two FI_COMPLETION sends have CQ entries. */
		for (int i = 0; i < 2; i++) {
			struct itest_comp c = itest_cq_wait(
				n.tx,
				"the "
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
				     "for one)",
				     c.op_context);
		}
		itest_idle(50);
		itest_cq_expect_empty(n.tx, "selective completion: sends "
					    "without FI_COMPLETION");
		EXPECT(fi_cntr_read(n.send_cntr) == SEL_N &&
			       !fi_cntr_readerr(n.send_cntr),
		       "send counter %" PRIu64 ", errors %" PRIu64,
		       fi_cntr_read(n.send_cntr), fi_cntr_readerr(n.send_cntr));
	} else {
		struct iovec iov;
		struct fi_msg m = { .msg_iov = &iov,
				    .iov_count = 1,
				    .addr = FI_ADDR_UNSPEC };

		/* Receives 2 and 6 ask for completions; the rest do not. */
		for (size_t i = 0; i < SEL_N; i++) {
			if (i == 2 || i == 6) {
				iov = (struct iovec){ buf + off[i],
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
		itest_cntr_wait(n.recv_cntr, SEL_N,
				"the selective receive "
				"counter");
		for (size_t want = 2; want <= 6; want += 4) {
			struct itest_comp c = itest_cq_wait(
				n.rx,
				"the "
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
						  "receive %zu",
						  i));
		EXPECT(fi_cntr_read(n.recv_cntr) == SEL_N &&
			       !fi_cntr_readerr(n.recv_cntr),
		       "receive counter %" PRIu64 ", errors %" PRIu64,
		       fi_cntr_read(n.recv_cntr), fi_cntr_readerr(n.recv_cntr));
	}
	close_pair(&n, phase);
	free(buf);
}

int main(void)
{
	static const struct rs_phase phases[] = {
		{ phase_selective, "selective completion" },
	};

	return rs_main("nrma_msg_selective", phases,
		       sizeof(phases) / sizeof(phases[0]));
}
