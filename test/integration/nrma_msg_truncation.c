/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Message features between a receiver (this process, "R") and a
 * forked sender ("S"), on fresh endpoints (see itest_rs.h): truncation:
 * FI_ETRUNC with olen, eager and rendezvous.
 */
#include "itest_rs.h"

static void phase_truncation(void)
{
	const char *phase = "truncation";
	struct itest_node_opts o = { .recv_cntr = true };
	static const size_t post[2] = { 100, 10000 }, sent[2] = { 300, SEG_A };
	unsigned char *buf = calloc(1, SEG_A + 2 * ITEST_GUARD + 200);
	struct itest_node n;

	CHECK(buf != NULL);
	open_pair(&n, &o, is_r ? "R" : "S");
	for (int i = 0; i < 3; i++) {
		/* i == 2: a message that fits, after the truncated ones. */
		size_t plen = i < 2 ? post[i] : 100;
		size_t slen = i < 2 ? sent[i] : 100;
		const char *what =
			itest_fmt("truncation: %zu bytes into %zu", slen, plen);

		if (!is_r) {
			itest_msg_fill(buf, slen, 0x800 + i);
			await_peer("R's small receive");
			send_msg(&n, buf, slen, CTX(i), what);
			wait_sends(&n, i, 1, what);
			continue;
		}
		itest_guard_reset(buf, plen, 0);
		recv_msg(&n, buf, plen, CTX(i), what);
		signal_peer();
		if (i < 2) {
			struct fi_cq_err_entry e;

			n.rx->errors_ok = true;
			e = itest_cq_wait_err(n.rx, what);
			n.rx->errors_ok = false;
			EXPECT(e.err == FI_ETRUNC, "%s: err %d (%s)", what,
			       e.err, fi_strerror(e.err));
			EXPECT(e.op_context == CTX(i), "%s: op_context %p",
			       what, e.op_context);
			EXPECT(e.olen == slen - plen,
			       "%s: olen %zu, expected "
			       "%zu",
			       what, e.olen, slen - plen);
			EXPECT(e.len == plen, "%s: len %zu, expected %zu", what,
			       e.len, plen);
			EXPECT((e.flags & (FI_RECV | FI_MSG)) ==
				       (FI_RECV | FI_MSG),
			       "%s: flags 0x%" PRIx64, what, e.flags);
			itest_cq_expect_empty(n.rx, what);
		} else {
			struct itest_comp c = itest_cq_wait(n.rx, what);

			EXPECT_COMP(c, CTX(i), FI_RECV | FI_MSG, 0, what);
			EXPECT(c.len == slen, "%s: len %zu", what, c.len);
		}
		itest_msg_check(buf, plen, 0x800 + i, what);
		itest_guard_check(buf, plen, what);
	}
	if (is_r)
		EXPECT(fi_cntr_read(n.recv_cntr) == 1 &&
			       fi_cntr_readerr(n.recv_cntr) == 2,
		       "receive counter %" PRIu64
		       " (expected 1), errors %" PRIu64 " (expected 2)",
		       fi_cntr_read(n.recv_cntr), fi_cntr_readerr(n.recv_cntr));
	close_pair(&n, phase);
	free(buf);
}

int main(void)
{
	static const struct rs_phase phases[] = {
		{ phase_truncation, "truncation" },
	};

	return rs_main("nrma_msg_truncation", phases,
		       sizeof(phases) / sizeof(phases[0]));
}
