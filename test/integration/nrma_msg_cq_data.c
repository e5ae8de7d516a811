/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Message features between a receiver (this process, "R") and a
 * forked sender ("S"), on fresh endpoints (see itest_rs.h):
 * FI_REMOTE_CQ_DATA with fi_senddata, fi_injectdata and fi_tsenddata
 * (FI_CQ_FORMAT_DATA).
 */
#include "itest_rs.h"

/* Eager, segmented (or rendezvous), and a tagged one in segments. */
static const size_t cqd_lens[5] = { 100, 64, SEG_A, 10, 30000 };

static size_t cqd_len(size_t i)
{
	return cqd_lens[i];
}

static void phase_cq_data(void)
{
	const char *phase = "remote CQ data";
	struct itest_node_opts o = { .rx_format = FI_CQ_FORMAT_DATA,
				     .send_cntr = true };
	static const uint32_t data[5] = { 0xdeadbeef, 0x12345678, 0xcafef00d, 0,
					  0x0badf00d };
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
				       data[0], n.peer, CTX(0)),
			   "fi_senddata");
		ITEST_POST(fi_injectdata(n.ep, buf + off[1], cqd_lens[1],
					 data[1], n.peer),
			   "fi_injectdata");
		ITEST_POST(fi_senddata(n.ep, buf + off[2], cqd_lens[2], NULL,
				       data[2], n.peer, CTX(2)),
			   "fi_senddata (segmented)");
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
			recv_msg(&n, buf + off[i], cqd_lens[i] + 8, CTX(i),
				 phase);
		ITEST_POST(fi_trecv(n.ep, buf + off[4], cqd_lens[4], NULL,
				    FI_ADDR_UNSPEC, 9, 0, CTX(4)),
			   "fi_trecv");
		signal_peer();
		for (size_t j = 0; j < 5; j++) {
			struct itest_comp c = itest_cq_wait(n.rx, phase);
			size_t i = CTX_INDEX(c.op_context);
			const char *what = itest_fmt("remote CQ data: receive "
						     "%zu",
						     i);

			EXPECT(i < 5, "%s: op_context %p", what, c.op_context);
			EXPECT(c.len == cqd_lens[i],
			       "%s: len %zu, expected "
			       "%zu",
			       what, c.len, cqd_lens[i]);
			if (data[i]) {
				EXPECT_COMP(
					c, c.op_context,
					FI_RECV | FI_REMOTE_CQ_DATA |
						(i == 4 ? FI_TAGGED : FI_MSG),
					0, what);
				EXPECT(c.data == data[i],
				       "%s: data 0x%" PRIx64
				       ", expected 0x%" PRIx32,
				       what, c.data, data[i]);
			} else {
				EXPECT_COMP(c, c.op_context, FI_RECV | FI_MSG,
					    FI_REMOTE_CQ_DATA, what);
			}
			itest_msg_check(buf + off[i], cqd_lens[i], 0x200 + i,
					what);
		}
	}
	close_pair(&n, phase);
	free(buf);
}

int main(void)
{
	static const struct rs_phase phases[] = {
		{ phase_cq_data, "remote CQ data" },
	};

	return rs_main("nrma_msg_cq_data", phases,
		       sizeof(phases) / sizeof(phases[0]));
}
