/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Message features between a receiver (this process, "R") and a
 * forked sender ("S"), on fresh endpoints (see itest_rs.h):
 * FI_MULTI_RECV with FI_OPT_MIN_MULTI_RECV; with libfabric 2.x, tagged
 * multi-receive buffers (FI_TAGGED_MULTI_RECV).
 */
#include "itest_rs.h"

#define MR_BUF	     (64 * 1024)
#define MR_MIN	     4096
#define MR_MAX_MSGS  80
#define MR_SPARE     16
#define MR_SPARE_LEN 1000

/*
 * One multi-receive buffer (64 KiB, FI_OPT_MIN_MULTI_RECV 4 KiB) and
 * MR_SPARE ordinary receives behind it; the sender sends count messages.
 * Messages 0..k-1 must land in the buffer at increasing offsets, in the
 * order sent, until less than the minimum is left; the rest go to the
 * spares in order.  Completions may come in any order (rendezvous ones
 * complete late); the one flagged FI_MULTI_RECV must be the buffer's last.
 */
static void multi_recv_round(struct itest_node *n, const size_t *lens,
			     size_t count, uint32_t id, const char *label)
{
	unsigned char *buf =
		calloc(1, MR_BUF + ITEST_GUARD +
				  MR_SPARE * (MR_SPARE_LEN + ITEST_GUARD));
	unsigned char *spare = buf + MR_BUF + ITEST_GUARD;
	size_t k = 0, spares = 0, buf_comps = 0, off[MR_MAX_MSGS];
	bool placed[MR_MAX_MSGS] = { false }, released = false;
	size_t total = 0;

	CHECK(buf != NULL && count <= MR_MAX_MSGS);
	for (size_t i = 0; i < count; i++)
		total += lens[i];
	if (!is_r) {
		unsigned char *msgs = malloc(total);
		size_t o = 0;

		CHECK(msgs != NULL);
		await_peer("R's multi-receive buffer");
		for (size_t i = 0; i < count; i++) {
			itest_msg_fill(msgs + o, lens[i],
				       (uint64_t) id << 32 | i);
			send_msg(n, msgs + o, lens[i], CTX(i), label);
			o += lens[i];
		}
		wait_sends(n, 0, count, label);
		free(msgs);
		free(buf);
		return;
	}

	struct iovec iov = { .iov_base = buf, .iov_len = MR_BUF };
	struct fi_msg msg = { .msg_iov = &iov,
			      .iov_count = 1,
			      .addr = FI_ADDR_UNSPEC,
			      .context = CTX(200) };

	itest_guard_reset(buf, MR_BUF, 0);
	ITEST_POST(fi_recvmsg(n->ep, &msg, FI_MULTI_RECV), "fi_recvmsg");
	for (size_t i = 0; i < MR_SPARE; i++)
		recv_msg(n, spare + i * (MR_SPARE_LEN + ITEST_GUARD),
			 MR_SPARE_LEN, CTX(i), "a spare receive");
	signal_peer();
	for (size_t got = 0; got < count; got++) {
		const char *what = itest_fmt("%s: completion %zu of %zu", label,
					     got, count);
		struct itest_comp c = itest_cq_wait(n->rx, what);
		unsigned char *b = c.buf;
		uint32_t hdr[2];
		size_t seq;

		if (c.op_context != CTX(200)) {
			EXPECT(CTX_INDEX(c.op_context) < MR_SPARE,
			       "%s: op_context %p", what, c.op_context);
			EXPECT_COMP(c, c.op_context, FI_RECV | FI_MSG,
				    FI_MULTI_RECV, what);
			spares++;
			continue;
		}
		EXPECT(!released,
		       "%s: a completion for the multi-receive "
		       "buffer after the one flagged FI_MULTI_RECV",
		       what);
		EXPECT_COMP(c, CTX(200), FI_RECV | FI_MSG, 0, what);
		EXPECT(b >= buf && c.len <= MR_BUF && b + c.len <= buf + MR_BUF,
		       "%s: buf %p, len %zu outside the %d-byte buffer %p",
		       what, (void *) b, c.len, MR_BUF, (void *) buf);
		memcpy(hdr, b, sizeof(hdr));
		seq = hdr[1];
		EXPECT(hdr[0] == ITEST_MSG_MAGIC && seq < count &&
			       !placed[seq] && c.len == lens[seq],
		       "%s: no valid message at offset "
		       "%td (len %zu)",
		       what, b - buf, c.len);
		placed[seq] = true;
		off[seq] = b - buf;
		buf_comps++;
		released = c.flags & FI_MULTI_RECV;
	}
	EXPECT(released,
	       "%s: all %zu messages arrived and the multi-receive "
	       "buffer was never released",
	       label, count);
	/* The buffer holds messages 0..k-1, in order, non-overlapping. */
	while (k < count && placed[k])
		k++;
	EXPECT(k == buf_comps,
	       "%s: the buffer holds %zu messages, not the "
	       "first %zu sent",
	       label, buf_comps, k);
	EXPECT(count - k == spares, "%s: %zu spares used for %zu messages",
	       label, spares, count - k);
	for (size_t i = 0; i < k; i++) {
		size_t left = MR_BUF - (off[i] + lens[i]);
		const char *what = itest_fmt("%s: message %zu in the buffer at "
					     "offset %zu",
					     label, i, off[i]);

		EXPECT(i == 0 || off[i] >= off[i - 1] + lens[i - 1],
		       "%s: "
		       "overlaps message %zu (offset %zu, %zu bytes)",
		       what, i - 1, off[i - 1], lens[i - 1]);
		/* Released exactly when less than the minimum was left. */
		EXPECT(i + 1 < k ? left >= MR_MIN : left < MR_MIN,
		       "%s: %zu "
		       "bytes left after it, minimum %d, %s",
		       what, left, MR_MIN,
		       i + 1 < k ? "but the buffer was released" :
				   "and the buffer was released only now");
		itest_msg_check(buf + off[i], lens[i], (uint64_t) id << 32 | i,
				what);
	}
	itest_guard_check(buf, MR_BUF, "the multi-receive buffer");
	for (size_t i = 0; i < count - k; i++)
		itest_msg_check(spare + i * (MR_SPARE_LEN + ITEST_GUARD),
				lens[k + i], (uint64_t) id << 32 | (k + i),
				itest_fmt("%s: spare receive %zu", label, i));
	/* Cancel the spare receives that no message used. */
	n->rx->errors_ok = true;
	for (size_t i = count - k; i < MR_SPARE; i++) {
		struct fi_cq_err_entry e;

		CHECK_OK(fi_cancel(&n->ep->fid, CTX(i)));
		e = itest_cq_wait_err(n->rx, "a cancelled spare receive");
		EXPECT(e.err == FI_ECANCELED && e.op_context == CTX(i),
		       "cancelled spare %zu: err %d, op_context %p", i, e.err,
		       e.op_context);
	}
	n->rx->errors_ok = false;
	free(buf);
}

static void phase_multi_recv(void)
{
	const char *phase = "FI_MULTI_RECV";
	/* Rendezvous messages complete after the eager ones behind them. */
	static const size_t mixed[] = {
		SEG_A, 1000, SEG_A, 1000, SEG_A, 1000, 700, 700,
	};
	size_t small[70];
	struct itest_node n;

	for (size_t i = 0; i < 70; i++)
		small[i] = 1000;
	open_pair(&n, NULL, is_r ? "R" : "S");
	if (is_r) {
		size_t min = MR_MIN, optlen = sizeof(min);

		CHECK_OK(fi_setopt(&n.ep->fid, FI_OPT_ENDPOINT,
				   FI_OPT_MIN_MULTI_RECV, &min, sizeof(min)));
		min = 0;
		CHECK_OK(fi_getopt(&n.ep->fid, FI_OPT_ENDPOINT,
				   FI_OPT_MIN_MULTI_RECV, &min, &optlen));
		CHECK(min == MR_MIN && optlen == sizeof(min));
	}
	multi_recv_round(&n, small, 70, 0x400,
			 "FI_MULTI_RECV, 70 x 1000 "
			 "bytes");
	next_step(phase);
	multi_recv_round(&n, mixed, sizeof(mixed) / sizeof(mixed[0]), 0x410,
			 "FI_MULTI_RECV, eager and rendezvous");
	close_pair(&n, phase);
}

#ifdef FI_TAGGED_MULTI_RECV
#define TMR_TAG	  0x51
#define TMR_COUNT 3
#define TMR_LEN	  100

/*
 * A tagged buffer takes the messages its tag matches, each at the next
 * offset; one with another tag waits for a receive of its own.
 */
static void phase_tagged_multi_recv(void)
{
	const char *phase = "FI_TAGGED_MULTI_RECV";
	char buf[TMR_COUNT * TMR_LEN + ITEST_GUARD] = "", other[TMR_LEN] = "";
	struct fi_info *hints = itest_hints(), *info;
	struct itest_node_opts o = { 0 };
	size_t min = TMR_LEN;
	struct itest_node n;

	hints->caps = ITEST_MSG_CAPS | FI_TAGGED_MULTI_RECV;
	hints->domain_attr->name = strdup(itest_device());
	CHECK_OK(fi_getinfo(ITEST_VERSION, NULL, NULL, 0, hints, &info));
	fi_freeinfo(hints);
	CHECK(info->rx_attr->caps & FI_TAGGED_MULTI_RECV);
	o.info = info;
	open_pair(&n, &o, is_r ? "R" : "S");
	if (is_r) {
		struct iovec iov = { buf, sizeof(buf) };
		struct fi_msg_tagged m = { .msg_iov = &iov,
					   .iov_count = 1,
					   .addr = FI_ADDR_UNSPEC,
					   .tag = TMR_TAG,
					   .context = CTX(0) };

		CHECK_OK(fi_setopt(&n.ep->fid, FI_OPT_ENDPOINT,
				   FI_OPT_MIN_MULTI_RECV, &min, sizeof(min)));
		ITEST_POST(fi_trecvmsg(n.ep, &m, FI_MULTI_RECV), phase);
		signal_peer();
		/* Messages 0, 2 and 3: message 1 has the other tag. */
		for (size_t i = 0; i < TMR_COUNT; i++) {
			struct itest_comp c = itest_cq_wait(n.rx, phase);

			EXPECT_COMP(c, CTX(0), FI_RECV | FI_TAGGED, 0, phase);
			EXPECT(c.buf == buf + i * TMR_LEN && c.tag == TMR_TAG,
			       "message %zu at offset %td", i,
			       (char *) c.buf - buf);
			itest_msg_check(c.buf, TMR_LEN, 0x700 + i + (i > 0),
					phase);
		}
		ITEST_POST(fi_trecv(n.ep, other, sizeof(other), NULL,
				    FI_ADDR_UNSPEC, TMR_TAG + 1, 0, CTX(1)),
			   phase);
		{
			struct itest_comp c = itest_cq_wait(n.rx, phase);

			EXPECT_COMP(c, CTX(1), FI_RECV | FI_TAGGED, 0, phase);
			itest_msg_check(other, TMR_LEN, 0x701, phase);
		}
	} else {
		char msg[TMR_COUNT + 1][TMR_LEN];

		await_peer("R's tagged buffer");
		for (size_t i = 0; i <= TMR_COUNT; i++) {
			itest_msg_fill(msg[i], TMR_LEN, 0x700 + i);
			/* The odd one out goes second: the buffer skips it. */
			ITEST_POST(fi_tsend(n.ep, msg[i], TMR_LEN, NULL, n.peer,
					    i == 1 ? TMR_TAG + 1 : TMR_TAG,
					    CTX(i)),
				   phase);
		}
		wait_sends(&n, 0, TMR_COUNT + 1, phase);
	}
	close_pair(&n, phase);
	fi_freeinfo(info);
}
#endif

int main(void)
{
	static const struct rs_phase phases[] = {
		{ phase_multi_recv, "FI_MULTI_RECV" },
#ifdef FI_TAGGED_MULTI_RECV
		{ phase_tagged_multi_recv, "FI_TAGGED_MULTI_RECV" },
#endif
	};

	return rs_main("nrma_msg_multi_recv", phases,
		       sizeof(phases) / sizeof(phases[0]));
}
