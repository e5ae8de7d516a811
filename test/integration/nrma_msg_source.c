/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Message features between a receiver (this process, "R") and a
 * forked sender ("S"), on fresh endpoints (see itest_rs.h): FI_SOURCE:
 * the sender's fi_addr_t, FI_ADDR_NOTAVAIL while it is not in the AV, and
 * its fi_addr_t once inserted; after fi_av_remove, FI_ADDR_NOTAVAIL, then
 * the new fi_addr_t of a second insert, and a removed index given to
 * another peer leads to that peer.
 */
#include "itest_rs.h"

static const struct sockaddr_in *dummy_addr(uint16_t port)
{
	static struct sockaddr_in sin;

	sin = (struct sockaddr_in){ .sin_family = AF_INET,
				    .sin_port = htons(port) };
	CHECK(inet_pton(AF_INET, itest_addr(), &sin.sin_addr) == 1);
	return &sin;
}

static void phase_source(void)
{
	const char *phase = "FI_SOURCE";
	struct itest_node r1, r2, s;
	char buf[3][128];

	if (is_r) {
		struct sockaddr_in peer;
		struct itest_comp c;

		itest_node_open(&r1, NULL, "R1");
		itest_node_open(&r2, NULL, "R2");
		itest_chan_write(&chan, &r1.name, sizeof(r1.name));
		itest_chan_write(&chan, &r2.name, sizeof(r2.name));
		itest_chan_read(&chan, &peer, sizeof(peer), "S's name");
		/* S is fi_addr 2 of R1, and unknown to R2. */
		CHECK(itest_node_insert(&r1, dummy_addr(9)) == 0);
		CHECK(itest_node_insert(&r1, dummy_addr(10)) == 1);
		CHECK(itest_node_insert(&r1, &peer) == 2);
		recv_msg(&r1, buf[0], sizeof(buf[0]), CTX(0), phase);
		recv_msg(&r2, buf[1], sizeof(buf[1]), CTX(1), phase);
		signal_peer();
		c = itest_cq_wait(r1.rx, "the message to R1");
		EXPECT_COMP(c, CTX(0), FI_RECV | FI_MSG, 0, "R1's receive");
		EXPECT(c.src == 2,
		       "R1: src_addr %" PRIu64 ", expected 2 (the "
		       "sender's fi_addr_t)",
		       c.src);
		itest_msg_check(buf[0], 100, 0x300, "R1's receive");
		c = itest_cq_wait(r2.rx, "the message to R2");
		EXPECT_COMP(c, CTX(1), FI_RECV | FI_MSG, 0, "R2's receive");
		EXPECT(c.src == FI_ADDR_NOTAVAIL,
		       "R2 (whose AV lacks the "
		       "sender): src_addr %" PRIu64 ", expected "
		       "FI_ADDR_NOTAVAIL",
		       c.src);
		itest_msg_check(buf[1], 101, 0x301, "R2's receive");
		/* Once R2 knows the sender, its messages say who it is. */
		CHECK(itest_node_insert(&r2, dummy_addr(11)) == 0);
		CHECK(itest_node_insert(&r2, &peer) == 1);
		recv_msg(&r2, buf[2], sizeof(buf[2]), CTX(2), phase);
		signal_peer();
		c = itest_cq_wait(r2.rx, "the second message to R2");
		EXPECT_COMP(c, CTX(2), FI_RECV | FI_MSG, 0, "R2's 2nd receive");
		EXPECT(c.src == 1,
		       "R2, after inserting the sender as "
		       "fi_addr 1: src_addr %" PRIu64,
		       c.src);
		itest_msg_check(buf[2], 102, 0x302, "R2's 2nd receive");
		next_step(phase);
		itest_cq_expect_empty(r1.rx, phase);
		itest_cq_expect_empty(r2.rx, phase);
		next_step(phase);
		itest_node_close(&r1);
		itest_node_close(&r2);
	} else {
		struct sockaddr_in name1, name2;
		fi_addr_t a1, a2;

		itest_node_open(&s, NULL, "S");
		itest_chan_read(&chan, &name1, sizeof(name1), "R1's name");
		itest_chan_read(&chan, &name2, sizeof(name2), "R2's name");
		itest_chan_write(&chan, &s.name, sizeof(s.name));
		a1 = itest_node_insert(&s, &name1);
		a2 = itest_node_insert(&s, &name2);
		for (int i = 0; i < 3; i++)
			itest_msg_fill(buf[i], 100 + i, 0x300 + i);
		await_peer("R's receives");
		ITEST_POST(fi_send(s.ep, buf[0], 100, NULL, a1, CTX(0)),
			   "send to R1");
		ITEST_POST(fi_send(s.ep, buf[1], 101, NULL, a2, CTX(1)),
			   "send to R2");
		wait_sends(&s, 0, 2, phase);
		await_peer("R2 inserting us");
		ITEST_POST(fi_send(s.ep, buf[2], 102, NULL, a2, CTX(2)),
			   "second send to R2");
		wait_sends(&s, 2, 1, phase);
		next_step(phase);
		itest_cq_expect_empty(s.tx, phase);
		next_step(phase);
		itest_node_close(&s);
	}
}

/* R1 receives message i from S, whose fi_addr_t is now want. */
static void r_expect_from(struct itest_node *r1, char *buf, size_t i,
			  fi_addr_t want, const char *what)
{
	struct itest_comp c;

	recv_msg(r1, buf, 128, CTX(i), what);
	signal_peer();
	c = itest_cq_wait(r1->rx, what);
	EXPECT_COMP(c, CTX(i), FI_RECV | FI_MSG, 0, what);
	EXPECT(c.src == want,
	       "%s: src_addr %" PRIu64 ", expected %" PRIu64 " (%s)", what,
	       c.src, want, want == FI_ADDR_NOTAVAIL ? "FI_ADDR_NOTAVAIL" : "");
	itest_msg_check(buf, 100 + i, 0x300 + i, what);
}

static void r_remove(struct itest_node *n, fi_addr_t fi_addr)
{
	CHECK_OK(fi_av_remove(n->av, &fi_addr, 1, 0));
}

/*
 * fi_av(3): fi_av_remove invalidates an fi_addr_t, and FI_AV_TABLE gives
 * the lowest unused index to the next address inserted.  R1 reports S
 * by the index the AV holds it at, or not at all; R2 is the other peer.
 */
static void phase_source_removed(void)
{
	const char *phase = "FI_SOURCE after fi_av_remove";
	struct itest_node r1, r2, s;
	char buf[6][128];

	if (is_r) {
		struct sockaddr_in peer;
		struct itest_comp c;

		itest_node_open(&r1, NULL, "R1");
		itest_node_open(&r2, NULL, "R2");
		itest_chan_write(&chan, &r1.name, sizeof(r1.name));
		itest_chan_read(&chan, &peer, sizeof(peer), "S's name");
		CHECK(itest_node_insert(&r1, dummy_addr(9)) == 0);
		CHECK(itest_node_insert(&r1, &peer) == 1);
		r_expect_from(&r1, buf[0], 0, 1, "S at fi_addr 1");
		r_remove(&r1, 1);
		r_expect_from(&r1, buf[1], 1, FI_ADDR_NOTAVAIL, "S removed");
		CHECK(itest_node_insert(&r1, dummy_addr(12)) == 1);
		CHECK(itest_node_insert(&r1, &peer) == 2);
		r_expect_from(&r1, buf[2], 2, 2, "S inserted again");
		/* R1's connection to S was at 2: R2 takes that index. */
		r_remove(&r1, 2);
		CHECK(itest_node_insert(&r1, &r2.name) == 2);
		recv_msg(&r2, buf[3], sizeof(buf[3]), CTX(3), phase);
		itest_msg_fill(buf[4], 103, 0x303);
		send_msg(&r1, buf[4], 103, CTX(4), "R1 to fi_addr 2 (R2)");
		c = itest_cq_wait(r2.rx, "R1's message to R2");
		EXPECT_COMP(c, CTX(3), FI_RECV | FI_MSG, 0, "R2's receive");
		itest_msg_check(buf[3], 103, 0x303, "R2's receive");
		wait_sends(&r1, 4, 1, phase);
		r_expect_from(&r1, buf[5], 5, FI_ADDR_NOTAVAIL,
			      "S's index given to R2");
		next_step(phase);
		itest_cq_expect_empty(r1.rx, phase);
		itest_cq_expect_empty(r2.rx, phase);
		next_step(phase);
		itest_node_close(&r1);
		itest_node_close(&r2);
	} else {
		static const size_t sends[] = { 0, 1, 2, 5 };
		struct sockaddr_in name1;
		fi_addr_t a1;

		itest_node_open(&s, NULL, "S");
		itest_chan_read(&chan, &name1, sizeof(name1), "R1's name");
		itest_chan_write(&chan, &s.name, sizeof(s.name));
		a1 = itest_node_insert(&s, &name1);
		for (size_t k = 0; k < 4; k++) {
			size_t i = sends[k];

			itest_msg_fill(buf[i], 100 + i, 0x300 + i);
			await_peer("R1's receive");
			ITEST_POST(fi_send(s.ep, buf[i], 100 + i, NULL, a1,
					   CTX(i)),
				   "send to R1");
			wait_sends(&s, i, 1, phase);
		}
		next_step(phase);
		itest_cq_expect_empty(s.tx, phase);
		itest_cq_expect_empty(s.rx, phase);
		next_step(phase);
		itest_node_close(&s);
	}
}

int main(void)
{
	static const struct rs_phase phases[] = {
		{ phase_source, "FI_SOURCE" },
		{ phase_source_removed, "FI_SOURCE after fi_av_remove" },
	};

	return rs_main("nrma_msg_source", phases,
		       sizeof(phases) / sizeof(phases[0]));
}
