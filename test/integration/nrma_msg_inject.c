/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Message features between a receiver (this process, "R") and a
 * forked sender ("S"), on fresh endpoints (see itest_rs.h): fi_inject:
 * no CQ entry, buffer reusable at once, inject_size limit.
 */
#include "itest_rs.h"

#define INJ_N 7

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
				ITEST_POST(
					fi_injectdata(n.ep, b, len, 77, n.peer),
					"fi_injectdata");
			else if (i == 4)
				ITEST_POST(fi_tinject(n.ep, b, len, n.peer, 11),
					   "fi_tinject");
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
		EXPECT_COMP(c, CTX(6), FI_SEND | FI_MSG, 0,
			    "the fi_send after "
			    "the injects");
		itest_idle(50);
		itest_cq_expect_empty(n.tx, "fi_inject must not complete");
		EXPECT(fi_cntr_read(n.send_cntr) == INJ_N,
		       "send counter %" PRIu64, fi_cntr_read(n.send_cntr));
		free(big);
	} else {
		for (size_t i = 0; i < INJ_N; i++) {
			if (i == 4)
				ITEST_POST(fi_trecv(n.ep, buf + off[i],
						    inj_len(i) + 64, NULL,
						    FI_ADDR_UNSPEC, 11, 0,
						    CTX(i)),
					   "fi_trecv");
			else
				recv_msg(&n, buf + off[i], inj_len(i) + 64,
					 CTX(i), phase);
		}
		signal_peer();
		for (size_t j = 0; j < INJ_N; j++) {
			struct itest_comp c = itest_cq_wait(n.rx, phase);
			size_t i = CTX_INDEX(c.op_context);
			const char *what =
				itest_fmt("injected message %zu "
					  "(%zu bytes)",
					  i, i < INJ_N ? inj_len(i) : 0);

			EXPECT(i < INJ_N, "%s: op_context %p", what,
			       c.op_context);
			EXPECT(c.len == inj_len(i), "%s: len %zu", what, c.len);
			if (i == 3)
				EXPECT((c.flags & FI_REMOTE_CQ_DATA) &&
					       c.data == 77,
				       "%s: flags 0x%" PRIx64 ", data %" PRIu64,
				       what, c.flags, c.data);
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

int main(void)
{
	static const struct rs_phase phases[] = {
		{ phase_inject, "fi_inject" },
	};

	return rs_main("nrma_msg_inject", phases,
		       sizeof(phases) / sizeof(phases[0]));
}
