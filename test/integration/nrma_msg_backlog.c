/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A legal exchange that a receiver's full buffers must not deadlock.  A
 * sends B more small messages than B has receive buffers (B posts no
 * receive yet), then talks to C, then posts a receive for B's large
 * message; B sends that and waits for it to complete before it receives
 * A's messages.  A's sends past B's credits wait at A, so its rendezvous
 * read of B's message and its ACK are not stuck behind them, C is not
 * slowed down by B, B's send completes, and then every one of A's
 * messages arrives, whole and in order.
 */
#include "itest_msg.h"

#define FLOOD 400 /* B holds its receive size (8) + FI_NRMA_UNEXP_MAX (256) */
#define SMALL 64
#define LARGE (1u << 20)
#define TALKS 8

static struct itest_link b_a, b_c, a_c;
static unsigned char small[FLOOD][SMALL];

static uint64_t flood_seed(size_t i)
{
	return 0xf100d + i;
}

/* Receives the next small message from peer: message seed. */
static void recv_small(struct itest_node *n, fi_addr_t peer, uint64_t seed,
		       const char *what)
{
	unsigned char buf[SMALL];
	struct itest_comp c;

	ITEST_POST(fi_recv(n->ep, buf, sizeof(buf), NULL, peer, buf), what);
	c = itest_cq_wait(n->rx, what);
	EXPECT(c.op_context == buf && c.len == SMALL,
	       "%s: op_context %p, len %zu", what, c.op_context, c.len);
	itest_msg_check(buf, SMALL, seed, what);
}

/* Round trips with C while B holds A's messages. */
static void a_talk(struct itest_node *n, fi_addr_t c, unsigned char *talk)
{
	unsigned char reply[SMALL];

	for (size_t t = 0; t < TALKS; t++) {
		struct itest_comp comp;

		ITEST_POST(fi_recv(n->ep, reply, sizeof(reply), NULL, c, reply),
			   "a receive for C's reply");
		itest_msg_fill(&talk[t * SMALL], SMALL, 0xc0 + t);
		ITEST_POST(fi_send(n->ep, &talk[t * SMALL], SMALL, NULL, c,
				   &talk[t * SMALL]),
			   "a message to C");
		comp = itest_cq_wait(n->rx, "C's reply, while B holds ours");
		EXPECT(comp.op_context == reply && comp.len == SMALL,
		       "C's reply %zu: op_context %p, len %zu", t,
		       comp.op_context, comp.len);
		itest_msg_check(reply, SMALL, 0xe0 + t, "C's reply");
	}
}

/* Every send of A completes once: the flood's and the talk's. */
static void a_sends_done(struct itest_node *n, unsigned char *talk)
{
	static bool done[FLOOD + TALKS];

	for (size_t i = 0; i < FLOOD + TALKS; i++) {
		struct itest_comp c = itest_cq_wait(n->tx, "A's sends");
		unsigned char *p = c.op_context;
		size_t k;

		if (p >= &small[0][0] && p < &small[0][0] + sizeof(small))
			k = (size_t) (p - &small[0][0]) / SMALL;
		else if (p >= talk && p < talk + TALKS * SMALL)
			k = FLOOD + (size_t) (p - talk) / SMALL;
		else
			FAIL("a send completion for no send (%p)", p);
		EXPECT(!done[k], "send %zu completes once", k);
		done[k] = true;
	}
}

static void node_a(void *arg)
{
	struct itest_chan to_b = itest_link_child(&b_a);
	struct itest_chan to_c = itest_link_parent(&a_c);
	struct itest_node_opts o = { .tx_size = FLOOD + TALKS };
	/* calloc: the device writes it, where valgrind does not look */
	unsigned char *large = calloc(1, LARGE), talk[TALKS * SMALL];
	struct itest_node n;
	struct itest_comp c;
	fi_addr_t b, peer_c;

	(void) arg;
	CHECK(large != NULL);
	itest_link_close_all(&b_c);
	itest_node_open(&n, &o, "A");
	b = itest_node_exchange(&n, &to_b);
	peer_c = itest_node_exchange(&n, &to_c);
	itest_expect(&to_b, 1, "B's go");
	for (size_t i = 0; i < FLOOD; i++) {
		itest_msg_fill(small[i], SMALL, flood_seed(i));
		ITEST_POST(fi_send(n.ep, small[i], SMALL, NULL, b, small[i]),
			   "a message to B, past its buffers");
	}
	a_talk(&n, peer_c, talk);
	ITEST_POST(fi_recv(n.ep, large, LARGE, NULL, b, large),
		   "a receive for B's large message");
	itest_signal(&to_b, 2);
	c = itest_cq_wait(n.rx, "B's large message");
	EXPECT(c.op_context == large && c.len == LARGE,
	       "B's message: op_context %p, len %zu", c.op_context, c.len);
	itest_msg_check(large, LARGE, 0x1a, "B's large message");
	a_sends_done(&n, talk);
	itest_sync(&to_b, 3, "the end");
	itest_sync(&to_c, 3, "the end");
	itest_node_close(&n);
	free(large);
}

static void node_c(void *arg)
{
	struct itest_chan to_a = itest_link_child(&a_c);
	struct itest_chan to_b = itest_link_child(&b_c);
	unsigned char reply[TALKS][SMALL];
	struct itest_node n;
	fi_addr_t a;

	(void) arg;
	itest_link_close_all(&b_a);
	itest_node_open(&n, NULL, "C");
	a = itest_node_exchange(&n, &to_a);
	for (size_t t = 0; t < TALKS; t++) {
		recv_small(&n, a, 0xc0 + t, "A's message to C");
		itest_msg_fill(reply[t], SMALL, 0xe0 + t);
		ITEST_POST(fi_send(n.ep, reply[t], SMALL, NULL, a, reply[t]),
			   "a reply to A");
	}
	for (size_t t = 0; t < TALKS; t++)
		itest_cq_wait(n.tx, "C's replies");
	itest_sync(&to_a, 3, "the end");
	itest_sync(&to_b, 3, "the end");
	itest_node_close(&n);
}

/* B's large message, sent and completed before B receives any of A's. */
static void b_send_large(struct itest_node *n, fi_addr_t a)
{
	unsigned char *large = malloc(LARGE);
	struct itest_comp c;

	CHECK(large != NULL);
	itest_msg_fill(large, LARGE, 0x1a);
	ITEST_POST(fi_send(n->ep, large, LARGE, NULL, a, large),
		   "B's large message");
	c = itest_cq_wait(n->tx, "B's large send, with A's messages held");
	EXPECT(c.op_context == large, "the large send completes");
	free(large);
}

int main(void)
{
	struct itest_node_opts o = { .rx_size = 8 };
	struct itest_chan to_a, to_c;
	struct itest_node n;
	fi_addr_t a;

	itest_link_init(&b_a);
	itest_link_init(&b_c);
	itest_link_init(&a_c);
	itest_fork("A", node_a, NULL);
	itest_fork("C", node_c, NULL);
	itest_link_close_all(&a_c);
	to_a = itest_link_parent(&b_a);
	to_c = itest_link_parent(&b_c);
	itest_node_open(&n, &o, "B");
	a = itest_node_exchange(&n, &to_a);
	itest_signal(&to_a, 1);
	itest_expect(&to_a, 2, "A's receive for our message");
	b_send_large(&n, a);
	for (size_t i = 0; i < FLOOD; i++)
		recv_small(&n, a, flood_seed(i), "A's messages, in order");
	itest_sync(&to_a, 3, "the end");
	itest_sync(&to_c, 3, "the end");
	itest_wait_kids();
	itest_node_close(&n);
	itest_pass("nrma_msg_backlog");
	return 0;
}
