/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Message features between a receiver (this process, "R") and a
 * forked sender ("S"), on fresh endpoints (see itest_rs.h):
 * endpoints with counters and no CQs.
 */
#include "itest_rs.h"

#define CNT_N 10

static size_t cnt_len(size_t i)
{
	return i % 3 == 2 ? SEG_A + i : 10 + 100 * i;
}

static void phase_counters(void)
{
	const char *phase = "counters only";
	struct itest_node_opts o = {
		.no_rx_cq = is_r,
		.recv_cntr = is_r,
		.no_tx_cq = !is_r,
		.send_cntr = !is_r,
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
			       !fi_cntr_readerr(n.send_cntr),
		       "send counter %" PRIu64 ", errors %" PRIu64,
		       fi_cntr_read(n.send_cntr), fi_cntr_readerr(n.send_cntr));
	} else {
		for (size_t i = 0; i < CNT_N; i++) {
			itest_guard_reset(buf + off[i], cnt_len(i), 0);
			recv_msg(&n, buf + off[i], cnt_len(i), CTX(i), phase);
		}
		signal_peer();
		itest_cntr_wait(n.recv_cntr, CNT_N, "the receive counter");
		for (size_t i = 0; i < CNT_N; i++) {
			const char *what = itest_fmt("counters only: receive "
						     "%zu",
						     i);

			itest_msg_check(buf + off[i], cnt_len(i), 0xa00 + i,
					what);
			itest_guard_check(buf + off[i], cnt_len(i), what);
		}
		itest_idle(50);
		EXPECT(fi_cntr_read(n.recv_cntr) == CNT_N &&
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
		{ phase_counters, "counters only" },
	};

	return rs_main("nrma_msg_counters", phases,
		       sizeof(phases) / sizeof(phases[0]));
}
