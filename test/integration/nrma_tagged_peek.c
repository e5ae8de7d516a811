/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Message features between a receiver (this process, "R") and a
 * forked sender ("S"), on fresh endpoints (see itest_rs.h): FI_PEEK
 * (FI_ENOMSG, then the message's length, tag and data while it stays
 * queued), FI_PEEK | FI_CLAIM and the paired FI_CLAIM receive (no other
 * receive gets the claimed message), FI_PEEK | FI_DISCARD and FI_CLAIM |
 * FI_DISCARD (gone; a discarded rendezvous still completes at the
 * sender), and the calls these flags refuse.
 */
#include "itest_rs.h"

enum {
	PK_DATA = 0x10,
	PK_CLAIM = 0x20,
	PK_DROP = 0x30,
	PK_CLAIM_DROP = 0x40,
	PK_NEVER = 0x99
};

#define PK_N	   4
#define PK_CQ_DATA 0x1010

static const uint64_t pk_tag[PK_N] = { PK_DATA, PK_CLAIM, PK_DROP,
				       PK_CLAIM_DROP };
static const size_t pk_len[PK_N] = { 200, SEG_A, 300, RNDV_B };

static ssize_t pk_post(struct itest_node *n, uint64_t tag, uint64_t flags,
		       void *buf, size_t len, void *context)
{
	struct iovec iov = { .iov_base = buf, .iov_len = len };
	struct fi_msg_tagged msg = {
		.msg_iov = &iov,
		.iov_count = buf ? 1 : 0,
		.addr = FI_ADDR_UNSPEC,
		.tag = tag,
		.context = context,
	};

	return fi_trecvmsg(n->ep, &msg, flags);
}

/* A peek's one result: true and the entry if a message matched. */
static bool pk_result(struct itest_node *n, void *context, struct itest_comp *c,
		      const char *what)
{
	int64_t deadline = itest_deadline();
	struct fi_cq_err_entry e;

	while (!n->rx->count && !n->rx->ecount) {
		itest_check_deadline(deadline, what);
		itest_progress();
	}
	if (n->rx->count) {
		*c = itest_cq_wait(n->rx, what);
		EXPECT(c->op_context == context, "%s: op_context %p", what,
		       c->op_context);
		return true;
	}
	e = itest_cq_wait_err(n->rx, what);
	EXPECT(e.err == FI_ENOMSG && e.op_context == context &&
		       (e.flags & (FI_RECV | FI_TAGGED)) ==
			       (FI_RECV | FI_TAGGED),
	       "%s: err %d (%s), op_context %p, flags 0x%" PRIx64, what, e.err,
	       fi_strerror(e.err), e.op_context, e.flags);
	return false;
}

/* Peeks (with flags) until the message with this tag has arrived. */
static struct itest_comp pk_find(struct itest_node *n, uint64_t tag,
				 uint64_t flags, void *context,
				 const char *what)
{
	int64_t deadline = itest_deadline();
	struct itest_comp c;

	do {
		itest_check_deadline(deadline, what);
		ITEST_POST(pk_post(n, tag, FI_PEEK | flags, NULL, 0, context),
			   what);
	} while (!pk_result(n, context, &c, what));
	EXPECT(c.tag == tag, "%s: tag 0x%" PRIx64, what, c.tag);
	return c;
}

static void pk_expect_gone(struct itest_node *n, uint64_t tag, const char *what)
{
	struct itest_comp c;

	ITEST_POST(pk_post(n, tag, FI_PEEK, NULL, 0, CTX(9)), what);
	EXPECT(!pk_result(n, CTX(9), &c, what), "%s: a message matched", what);
}

static void pk_receiver(struct itest_node *n, unsigned char *buf)
{
	static struct fi_context claim[2];
	struct itest_comp c;

	n->rx->errors_ok = true;
	pk_expect_gone(n, PK_NEVER, "a peek for a tag never sent");
	CHECK_RET(fi_recvmsg(n->ep,
			     &(struct fi_msg){ .addr = FI_ADDR_UNSPEC,
					       .context = CTX(9) },
			     FI_PEEK),
		  -FI_EINVAL);
	CHECK_RET(pk_post(n, PK_DATA, FI_CLAIM, buf, 64, &claim[0]),
		  -FI_EINVAL);
	signal_peer();
	await_peer("S's sends");

	c = pk_find(n, PK_DATA, 0, CTX(10), "a peek");
	EXPECT_COMP(c, CTX(10), FI_RECV | FI_TAGGED | FI_REMOTE_CQ_DATA, 0,
		    "a peek");
	EXPECT(c.len == pk_len[0] && c.data == PK_CQ_DATA,
	       "a peek: len %zu "
	       "data 0x%" PRIx64,
	       c.len, c.data);
	ITEST_POST(pk_post(n, PK_DATA, 0, buf, RNDV_B, CTX(11)),
		   "the receive after a peek");
	c = itest_cq_wait(n->rx, "the message a peek left in place");
	EXPECT(c.op_context == CTX(11) && c.len == pk_len[0], "len %zu", c.len);
	itest_msg_check(buf, pk_len[0], 0x700, "the message after a peek");

	c = pk_find(n, PK_CLAIM, FI_CLAIM, &claim[0], "a peek with FI_CLAIM");
	EXPECT(c.len == pk_len[1], "FI_CLAIM peek: len %zu", c.len);
	ITEST_POST(pk_post(n, PK_CLAIM, 0, buf + 2 * RNDV_B, RNDV_B, CTX(12)),
		   "a plain receive for the claimed tag");
	pk_expect_gone(n, PK_CLAIM, "a peek for the claimed tag");
	ITEST_POST(
		pk_post(n, PK_CLAIM, FI_CLAIM, buf + RNDV_B, RNDV_B, &claim[0]),
		"the FI_CLAIM receive");
	c = itest_cq_wait(n->rx, "the claimed message");
	EXPECT_COMP(c, &claim[0], FI_RECV | FI_TAGGED, 0, "claimed message");
	EXPECT(c.len == pk_len[1], "claimed message: len %zu", c.len);
	itest_msg_check(buf + RNDV_B, pk_len[1], 0x701, "claimed message");
	CHECK_OK(fi_cancel(&n->ep->fid, CTX(12)));
	EXPECT(itest_cq_wait_err(n->rx, "the plain receive's cancel").err ==
		       FI_ECANCELED,
	       "the plain receive matched the claimed message");
	check_untouched(buf + 2 * RNDV_B, RNDV_B,
			"the plain receive for the "
			"claimed tag");

	c = pk_find(n, PK_DROP, FI_DISCARD, CTX(13), "FI_PEEK | FI_DISCARD");
	EXPECT(c.len == pk_len[2], "discarding peek: len %zu", c.len);
	pk_expect_gone(n, PK_DROP, "a peek for the discarded message");

	pk_find(n, PK_CLAIM_DROP, FI_CLAIM, &claim[1], "a claim to discard");
	ITEST_POST(pk_post(n, PK_CLAIM_DROP, FI_CLAIM | FI_DISCARD, NULL, 0,
			   &claim[1]),
		   "FI_CLAIM | FI_DISCARD");
	c = itest_cq_wait(n->rx, "the discarded claim");
	EXPECT(c.op_context == &claim[1] && c.len == 0,
	       "discarded claim: len "
	       "%zu",
	       c.len);
	CHECK_RET(pk_post(n, PK_CLAIM_DROP, FI_CLAIM, buf, 64, &claim[1]),
		  -FI_EINVAL);
	pk_expect_gone(n, PK_CLAIM_DROP, "a peek for the discarded claim");
	n->rx->errors_ok = false;
}

static void phase_peek(void)
{
	const char *phase = "FI_PEEK and FI_CLAIM";
	unsigned char *buf = calloc(3, RNDV_B);
	struct itest_node n;

	CHECK(buf != NULL);
	open_pair(&n, NULL, is_r ? "R" : "S");
	if (is_r) {
		pk_receiver(&n, buf);
	} else {
		await_peer("R's first peeks");
		for (size_t i = 0; i < PK_N; i++) {
			itest_msg_fill(buf + i * (RNDV_B / 4), pk_len[i],
				       0x700 + i);
			ITEST_POST(fi_tsenddata(n.ep, buf + i * (RNDV_B / 4),
						pk_len[i], NULL, PK_CQ_DATA,
						n.peer, pk_tag[i], CTX(i)),
				   phase);
		}
		signal_peer();
		/* Discarded rendezvous messages complete too. */
		wait_sends(&n, 0, PK_N, phase);
	}
	close_pair(&n, phase);
	free(buf);
}

int main(void)
{
	static const struct rs_phase phases[] = {
		{ phase_peek, "FI_PEEK and FI_CLAIM" },
	};

	return rs_main("nrma_tagged_peek", phases,
		       sizeof(phases) / sizeof(phases[0]));
}
