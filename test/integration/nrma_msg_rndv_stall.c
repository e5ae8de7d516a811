/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Many rendezvous messages into one FI_MULTI_RECV buffer of a receiver
 * with small queues (transmit 2, receive 8: 18 operations): four senders
 * send eight 1 MiB messages each.  Every message arrives, whole and once,
 * and every send completes; should the receiver run out of operations to
 * read them with, a message waits for one, it is never dropped.
 */
#include "itest_msg.h"

#define SENDERS 4
#define EACH	8
#define LEN	(1u << 20)
#define TOTAL	(SENDERS * EACH)

static struct itest_link links[SENDERS];

static uint64_t stall_seed(size_t sender, size_t i)
{
	return 0xb00 + sender * EACH + i;
}

static void sender(void *arg)
{
	size_t me = (size_t) (uintptr_t) arg;
	struct itest_chan ch = itest_link_child(&links[me]);
	unsigned char *buf = malloc(EACH * LEN);
	struct itest_node n;
	bool done[EACH] = { false };

	CHECK(buf != NULL);
	itest_node_open(&n, NULL, itest_fmt("S%zu", me));
	itest_node_exchange(&n, &ch);
	itest_expect(&ch, 1, "the receiver's buffer");
	for (size_t i = 0; i < EACH; i++) {
		itest_msg_fill(buf + i * LEN, LEN, stall_seed(me, i));
		ITEST_POST(fi_send(n.ep, buf + i * LEN, LEN, NULL, n.peer,
				   &done[i]),
			   "a rendezvous send");
	}
	for (size_t i = 0; i < EACH; i++) {
		struct itest_comp c = itest_cq_wait(n.tx, "a send");
		bool *flag = c.op_context;

		EXPECT(flag >= done && flag < done + EACH && !*flag,
		       "a send's completion, once (%p)", c.op_context);
		*flag = true;
	}
	itest_sync(&ch, 2, "the end");
	itest_node_close(&n);
	free(buf);
}

/* Which message a completion holds: its header names its seed. */
static void stall_check(const struct itest_comp *c, bool *seen)
{
	for (size_t s = 0; s < SENDERS; s++)
		for (size_t i = 0; i < EACH; i++) {
			uint32_t hdr[2];

			memcpy(hdr, c->buf, sizeof(hdr));
			if (hdr[1] != (uint32_t) stall_seed(s, i))
				continue;
			EXPECT(!seen[s * EACH + i],
			       "message %zu of sender %zu arrives once", i, s);
			seen[s * EACH + i] = true;
			itest_msg_check(c->buf, LEN, stall_seed(s, i),
					"a message in the buffer");
			return;
		}
	FAIL("a completion that is no message sent");
}

int main(void)
{
	struct itest_node_opts o = { .tx_size = 2, .rx_size = 8 };
	unsigned char *buf = calloc(TOTAL, LEN);
	struct iovec iov = { .iov_base = buf, .iov_len = TOTAL * LEN };
	struct fi_msg msg = { .msg_iov = &iov,
			      .iov_count = 1,
			      .addr = FI_ADDR_UNSPEC,
			      .context = buf };
	struct itest_chan ch[SENDERS];
	bool seen[TOTAL] = { false };
	size_t min = LEN;
	struct itest_node n;

	CHECK(buf != NULL);
	for (size_t s = 0; s < SENDERS; s++) {
		itest_link_init(&links[s]);
		itest_fork(itest_fmt("S%zu", s), sender,
			   (void *) (uintptr_t) s);
		ch[s] = itest_link_parent(&links[s]);
	}
	itest_node_open(&n, &o, "R");
	CHECK_OK(fi_setopt(&n.ep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV,
			   &min, sizeof(min)));
	for (size_t s = 0; s < SENDERS; s++)
		itest_node_exchange(&n, &ch[s]);
	ITEST_POST(fi_recvmsg(n.ep, &msg, FI_MULTI_RECV), "the buffer");
	for (size_t s = 0; s < SENDERS; s++)
		itest_signal(&ch[s], 1);
	for (size_t got = 0; got < TOTAL; got++) {
		struct itest_comp c = itest_cq_wait(n.rx, "a message");

		EXPECT(c.op_context == buf && c.len == LEN,
		       "message %zu: op_context %p, len %zu", got, c.op_context,
		       c.len);
		EXPECT(!(c.flags & FI_MULTI_RECV) == (got + 1 < TOTAL),
		       "the buffer is released with its last message only");
		stall_check(&c, seen);
	}
	for (size_t s = 0; s < SENDERS; s++)
		itest_sync(&ch[s], 2, "the end");
	itest_wait_kids();
	itest_node_close(&n);
	free(buf);
	itest_pass("nrma_msg_rndv_stall");
	return 0;
}
