/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Message features between a receiver (this process, "R") and a forked
 * sender ("S"), on fresh endpoints (see itest_rs.h): fi_cancel of an
 * FI_MULTI_RECV buffer while rendezvous reads land in it.  R lets three
 * 4 MiB rendezvous messages arrive, makes one progress call (which starts
 * their reads into the buffer) and cancels the buffer at once.  The
 * messages whose reads were under way complete first; FI_ECANCELED comes
 * last, and after it nothing completes and nothing more is written into
 * the buffer.  What the buffer did not take, ordinary receives do.
 */
#include "itest_rs.h"

#define BIG  (4u << 20)
#define MSGS 3

/* Reads completions until FI_ECANCELED; returns how many came before. */
static size_t cancel_collect(struct itest_node *n, unsigned char *buf,
			     bool *seen)
{
	int64_t deadline = itest_deadline();
	size_t got = 0;

	for (;;) {
		itest_cq_poll(n->rx);
		/* The CQ keeps entries in order: what the stash holds beside
		 * the error came before it. */
		while (n->rx->count) {
			struct itest_comp c = itest_cq_wait(n->rx, "a message");
			size_t seq = ((unsigned char *) c.buf - buf) / BIG;

			EXPECT_COMP(c, CTX(9), FI_RECV | FI_MSG, FI_MULTI_RECV,
				    "a message before the cancel");
			EXPECT(c.len == BIG && seq < MSGS && !seen[seq],
			       "a whole message in its place (len %zu, "
			       "offset %td)",
			       c.len, (unsigned char *) c.buf - buf);
			seen[seq] = true;
			got++;
		}
		if (n->rx->ecount) {
			struct fi_cq_err_entry e = itest_cq_wait_err(n->rx, "");

			EXPECT(e.err == FI_ECANCELED && e.op_context == CTX(9),
			       "the cancel's entry: err %d, op_context %p",
			       e.err, e.op_context);
			return got;
		}
		itest_check_deadline(deadline, "the cancel's entry");
		itest_progress();
	}
}

static void phase_cancel_inflight(void)
{
	const char *phase = "cancel with reads in flight";
	/* Room for one more, so that the buffer is still posted. */
	unsigned char *buf = calloc(MSGS + 1, BIG), *snap = malloc(MSGS * BIG);
	unsigned char *spare = calloc(MSGS, BIG);
	struct iovec iov = { .iov_base = buf, .iov_len = (MSGS + 1) * BIG };
	struct fi_msg msg = { .msg_iov = &iov,
			      .iov_count = 1,
			      .addr = FI_ADDR_UNSPEC,
			      .context = CTX(9) };
	bool seen[MSGS] = { false };
	struct itest_node n;

	CHECK(buf && snap && spare);
	open_pair(&n, NULL, is_r ? "R" : "S");
	if (!is_r) {
		for (int i = 0; i < MSGS; i++)
			itest_msg_fill(spare + (size_t) i * BIG, BIG,
				       0xa00 + i);
		await_peer("R's buffer");
		for (int i = 0; i < MSGS; i++)
			send_msg(&n, spare + (size_t) i * BIG, BIG, CTX(i),
				 phase);
		itest_idle(300); /* the requests reach R */
		signal_peer();
		wait_sends(&n, 0, MSGS, phase);
	} else {
		size_t got, extra = 0;

		n.rx->errors_ok = true;
		ITEST_POST(fi_recvmsg(n.ep, &msg, FI_MULTI_RECV), phase);
		signal_peer();
		await_peer_idle("S's messages");
		itest_cq_poll(n.rx); /* starts the reads */
		CHECK_OK(fi_cancel(&n.ep->fid, CTX(9)));
		got = cancel_collect(&n, buf, seen);
		memcpy(snap, buf, MSGS * BIG);
		/* The rest go to ordinary receives. */
		for (size_t i = got; i < MSGS; i++)
			recv_msg(&n, spare + i * BIG, BIG, CTX(20 + i), phase);
		while (got + extra < MSGS) {
			struct itest_comp c = itest_cq_wait(n.rx, phase);

			EXPECT(c.op_context != CTX(9),
			       "nothing completes in the buffer after the "
			       "cancel");
			extra++;
		}
		itest_idle(500);
		EXPECT(!memcmp(snap, buf, MSGS * BIG),
		       "the buffer is not written after FI_ECANCELED");
		for (int i = 0; i < MSGS; i++)
			if (seen[i])
				itest_msg_check(buf + (size_t) i * BIG, BIG,
						0xa00 + i, phase);
		printf("%zu of %d messages were in the buffer\n", got, MSGS);
	}
	close_pair(&n, phase);
	free(buf);
	free(snap);
	free(spare);
}

int main(void)
{
	static const struct rs_phase phases[] = {
		{ phase_cancel_inflight, "cancel in flight" },
	};

	return rs_main("nrma_msg_cancel_inflight", phases,
		       sizeof(phases) / sizeof(phases[0]));
}
