/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Connections between several processes:
 *  1. many to one: 8 sender processes send 20 messages each (some by
 *     rendezvous) to one server, which checks per-sender counts and order
 *     by FI_SOURCE;
 *  2. both sides connect at once: two fresh endpoints insert each other
 *     and send at the same moment, 10 times; both messages arrive, and
 *     the one connection left carries more traffic both ways;
 *  3. a fresh connection whose first message needs the receiver to answer
 *     (rendezvous, FI_DELIVERY_COMPLETE), 10 times each way;
 *  4. senders that close their endpoints as soon as their sends complete:
 *     the server still gets every message, with its source;
 *  5. a peer that does not exist: sends wait while the provider retries
 *     (10 s), then all end in FI_ECONNREFUSED together, and nothing
 *     hangs (in a process of its own, while the others run);
 *  6. local communication (FI_LOCAL_COMM), last: two endpoints of one
 *     process, and an endpoint that sends to itself.
 */
#include "itest_msg.h"

#define NSENDERS   8
#define PER_SENDER 20
#define RECV_LEN   17000
#define ROUNDS	   10

/* Signals between the server and its senders. */
enum {
	SIG_DONE = 1, /* server: all received; sender: closed (part 4) */
	SIG_SENT,     /* sender: all my sends have completed */
};

static struct itest_link links[NSENDERS + 1]; /* the last: the peer */
static struct itest_chan chans[NSENDERS + 1];
/* Endpoints that open quickly: the many-to-one server keeps the default. */
static const struct itest_node_opts small = { .tx_size = 32, .rx_size = 32 };
static char ctx[512];

#define CTX(i)	     ((void *) &ctx[i])
#define CTX_INDEX(p) ((size_t) ((char *) (p) -ctx))

/* 1 and 4: many to one */

static size_t m2o_len(size_t sender, size_t seq)
{
	if (seq % 5 == 4) /* rendezvous */
		return 16384 + sender * 10 + seq;
	return 200 + seq * 3 + sender;
}

static uint64_t m2o_seed(size_t part, size_t sender, size_t seq)
{
	return (uint64_t) part << 32 | sender << 16 | seq;
}

struct sender_arg {
	size_t index;
};

/* A sender of part part (1 or 4). */
static void m2o_sender(struct itest_chan *ch, size_t me, size_t part)
{
	unsigned char *buf = malloc(PER_SENDER * RECV_LEN);
	struct sockaddr_in server;
	struct itest_node n;
	bool seen[PER_SENDER] = { false };

	CHECK(buf != NULL);
	itest_node_open(&n, &small, itest_who);
	itest_chan_write(ch, &n.name, sizeof(n.name));
	/* The server waits for all 8 senders, which start slowly in a VM. */
	itest_chan_wait_idle(ch, 3 * itest_wait_ms(), "the server's name");
	itest_chan_read(ch, &server, sizeof(server), "the server's name");
	itest_node_insert(&n, &server);
	for (size_t s = 0; s < PER_SENDER; s++) {
		unsigned char *b = buf + s * RECV_LEN;

		itest_msg_fill(b, m2o_len(me, s), m2o_seed(part, me, s));
		ITEST_POST(
			fi_send(n.ep, b, m2o_len(me, s), NULL, n.peer, CTX(s)),
			"a sender's fi_send");
	}
	for (size_t s = 0; s < PER_SENDER; s++) {
		struct itest_comp c = itest_cq_wait(n.tx, "a send completion");
		size_t k = CTX_INDEX(c.op_context);

		EXPECT(k < PER_SENDER && !seen[k], "op_context %p",
		       c.op_context);
		seen[k] = true;
		EXPECT_COMP(c, c.op_context, FI_SEND | FI_MSG, 0, "send");
	}
	itest_cq_expect_empty(n.tx, "after the sends");
	itest_cq_expect_empty(n.rx, "a sender receives nothing");
	if (part == 1) {
		/* Wait, idle, until the server has everything. */
		itest_signal(ch, SIG_SENT);
		itest_expect_idle(ch, SIG_DONE, itest_wait_ms(),
				  "the server's verdict");
		itest_node_close(&n);
	} else {
		/* Part 4: close at once, and say so. */
		itest_node_close(&n);
		itest_signal(ch, SIG_DONE);
	}
	itest_domain_close();
	free(buf);
}

static void m2o_server(size_t part)
{
	unsigned char *buf =
		malloc(NSENDERS * PER_SENDER * (RECV_LEN + ITEST_GUARD));
	struct itest_comp comp[NSENDERS * PER_SENDER];
	bool done[NSENDERS * PER_SENDER] = { false };
	size_t next[NSENDERS] = { 0 };
	const size_t total = NSENDERS * PER_SENDER;
	struct itest_node n;

	CHECK(buf != NULL);
	itest_node_open(&n, NULL, "server");
	for (size_t i = 0; i < NSENDERS; i++) {
		struct sockaddr_in name;

		itest_chan_read(&chans[i], &name, sizeof(name),
				"a sender's name");
		EXPECT(itest_node_insert(&n, &name) == i,
		       "sender %zu's "
		       "fi_addr_t is %" PRIu64,
		       i, n.peer);
	}
	/*
	 * Part 4 directs receive j to sender j % NSENDERS (FI_DIRECTED_RECV):
	 * then message k of sender s must land in receive s + k * NSENDERS.
	 */
	for (size_t j = 0; j < total; j++) {
		unsigned char *b = buf + j * (RECV_LEN + ITEST_GUARD);
		fi_addr_t from = part == 4 ? j % NSENDERS : FI_ADDR_UNSPEC;

		itest_guard_reset(b, RECV_LEN, 0);
		ITEST_POST(fi_recv(n.ep, b, RECV_LEN, NULL, from, CTX(j)),
			   "the server's fi_recv");
	}
	for (size_t i = 0; i < NSENDERS; i++)
		itest_chan_write(&chans[i], &n.name, sizeof(n.name));
	for (size_t k = 0; k < total; k++) {
		const char *what = itest_fmt("part %zu: receive completion %zu "
					     "of %zu",
					     part, k, total);
		struct itest_comp c = itest_cq_wait(n.rx, what);
		size_t j = CTX_INDEX(c.op_context);

		EXPECT(j < total && !done[j], "%s: op_context %p", what,
		       c.op_context);
		done[j] = true;
		comp[j] = c;
	}
	/* Receive j got the j-th message to arrive; each sender's arrive
	 * in the order sent. */
	for (size_t j = 0; j < total; j++) {
		const char *what = itest_fmt("part %zu: receive %zu", part, j);
		unsigned char *b = buf + j * (RECV_LEN + ITEST_GUARD);
		fi_addr_t src = comp[j].src;
		size_t seq, directed;

		EXPECT_COMP(comp[j], CTX(j), FI_RECV | FI_MSG, 0, what);
		EXPECT(src < NSENDERS,
		       "%s: src_addr %" PRIu64 " is not a "
		       "sender's fi_addr_t",
		       what, src);
		seq = next[src]++;
		EXPECT(seq < PER_SENDER,
		       "%s: more than %d messages from "
		       "sender %" PRIu64,
		       what, PER_SENDER, src);
		directed = j % NSENDERS;
		EXPECT(part != 4 || (src == directed && seq == j / NSENDERS),
		       "%s: directed to sender %zu, got message %zu of sender "
		       "%" PRIu64,
		       what, directed, seq, src);
		EXPECT(comp[j].len == m2o_len(src, seq),
		       "%s: len %zu, "
		       "expected %zu (message %zu of sender %" PRIu64 ")",
		       what, comp[j].len, m2o_len(src, seq), seq, src);
		itest_msg_check(b, comp[j].len, m2o_seed(part, src, seq),
				itest_fmt("%s (message %zu of sender %" PRIu64
					  " by src_addr)",
					  what, seq, src));
		itest_guard_check(b, RECV_LEN, what);
	}
	for (size_t i = 0; i < NSENDERS; i++)
		EXPECT(next[i] == PER_SENDER,
		       "part %zu: %zu messages from "
		       "sender %zu, expected %d",
		       part, next[i], i, PER_SENDER);
	itest_cq_expect_empty(n.rx, "after all messages");
	/*
	 * Progress until every sender has its send completions: a rendezvous
	 * send completes on our ACK, which manual progress sends.
	 */
	for (size_t i = 0; i < NSENDERS; i++) {
		if (part == 1)
			itest_expect(&chans[i], SIG_SENT,
				     "a sender's last send completion");
		else
			itest_expect(&chans[i], SIG_DONE, "a sender's close");
	}
	for (size_t i = 0; part == 1 && i < NSENDERS; i++)
		itest_signal(&chans[i], SIG_DONE);
	itest_cq_expect_empty(n.tx, "the server sent nothing");
	itest_cq_expect_empty(n.rx, "after all messages");
	itest_node_close(&n);
	free(buf);
}

/* 2 and 3: one peer */

static uint32_t step_tag;

/*
 * Both sides at once: each sends to the other as soon as it knows it.
 * Returns the longest time (ms) a round's first exchange took.
 */
static int64_t simultaneous(struct itest_chan *ch, bool parent)
{
	char sbuf[2][256], rbuf[2][256 + ITEST_GUARD];
	int64_t slowest = 0;

	for (int round = 0; round < ROUNDS; round++) {
		const char *what =
			itest_fmt("simultaneous connect, round %d", round);
		uint64_t mine = 0xb00000 | round << 4 | parent;
		uint64_t theirs = 0xb00000 | round << 4 | !parent;
		struct itest_node n;
		struct itest_comp c;
		int64_t t0;

		itest_node_open(&n, &small, parent ? "parent" : "peer");
		itest_node_exchange(&n, ch);
		for (size_t k = 0; k < 2; k++) {
			itest_guard_reset(rbuf[k], 200 + k, 0);
			ITEST_POST(fi_recv(n.ep, rbuf[k], 200 + k, NULL,
					   FI_ADDR_UNSPEC, CTX(10 + k)),
				   what);
			itest_msg_fill(sbuf[k], 200 + k, mine + (k << 12));
		}
		itest_sync(ch, ++step_tag, what);
		t0 = itest_now_ms();
		/* Now: both connect to each other at the same time. */
		ITEST_POST(fi_send(n.ep, sbuf[0], 200, NULL, n.peer, CTX(0)),
			   what);
		c = itest_cq_wait(n.tx, what);
		EXPECT_COMP(c, CTX(0), FI_SEND | FI_MSG, 0, what);
		c = itest_cq_wait(n.rx, what);
		EXPECT_COMP(c, CTX(10), FI_RECV | FI_MSG, 0, what);
		EXPECT(c.len == 200 && c.src == n.peer,
		       "%s: len %zu, src_addr "
		       "%" PRIu64 " (peer %" PRIu64 ")",
		       what, c.len, c.src, n.peer);
		itest_msg_check(rbuf[0], 200, theirs, what);
		if (itest_now_ms() - t0 > slowest)
			slowest = itest_now_ms() - t0;
		/* The connection that won carries more, both ways. */
		itest_sync(ch, ++step_tag, what);
		ITEST_POST(fi_send(n.ep, sbuf[1], 201, NULL, n.peer, CTX(1)),
			   what);
		c = itest_cq_wait(n.tx, what);
		EXPECT_COMP(c, CTX(1), FI_SEND | FI_MSG, 0, what);
		c = itest_cq_wait(n.rx, what);
		EXPECT_COMP(c, CTX(11), FI_RECV | FI_MSG, 0, what);
		EXPECT(c.src == n.peer,
		       "%s: second message's src_addr %" PRIu64, what, c.src);
		itest_msg_check(rbuf[1], 201, theirs + (1 << 12), what);
		itest_guard_check(rbuf[0], 200, what);
		itest_guard_check(rbuf[1], 201, what);
		itest_sync(ch, ++step_tag, what);
		itest_cq_expect_empty(n.tx, what);
		itest_cq_expect_empty(n.rx, what);
		itest_sync(ch, ++step_tag, what);
		itest_node_close(&n);
	}
	return slowest;
}

#define FIRST_RNDV 65536

/*
 * The first message on a new connection needs an answer from its receiver
 * (the side that accepted the connection): a rendezvous read and ACK, or
 * an FI_DELIVERY_COMPLETE ACK.  Rounds alternate who connects.
 */
static void first_message(struct itest_chan *ch, bool parent)
{
	unsigned char *buf = itest_guarded(FIRST_RNDV);

	for (int round = 0; round < 2 * ROUNDS; round++) {
		bool sender = (round & 1) == parent;
		bool dc = round % 4 >= 2;
		size_t len = dc ? 500 : FIRST_RNDV;
		const char *what = itest_fmt(
			"first message on a new connection"
			" (%s, %zu bytes), round %d",
			dc ? "FI_DELIVERY_COMPLETE" : "rendezvous", len, round);
		struct itest_node n;
		struct itest_comp c;

		itest_node_open(&n, &small, parent ? "parent" : "peer");
		itest_node_exchange(&n, ch);
		if (sender) {
			struct iovec iov = { .iov_base = buf, .iov_len = len };
			struct fi_msg m = { .msg_iov = &iov,
					    .iov_count = 1,
					    .addr = n.peer,
					    .context = CTX(0) };

			itest_msg_fill(buf, len, 0xc00 + round);
			itest_expect(ch, ++step_tag, "the peer's receive");
			ITEST_POST(fi_sendmsg(n.ep, &m,
					      dc ? FI_DELIVERY_COMPLETE : 0),
				   what);
			c = itest_cq_wait(n.tx, what);
			EXPECT_COMP(c, CTX(0), FI_SEND | FI_MSG, 0, what);
		} else {
			itest_guard_reset(buf, len, 0);
			ITEST_POST(fi_recv(n.ep, buf, len, NULL, FI_ADDR_UNSPEC,
					   CTX(1)),
				   what);
			itest_signal(ch, ++step_tag);
			c = itest_cq_wait(n.rx, what);
			EXPECT_COMP(c, CTX(1), FI_RECV | FI_MSG, 0, what);
			EXPECT(c.len == len, "%s: len %zu", what, c.len);
			itest_msg_check(buf, len, 0xc00 + round, what);
			itest_guard_check(buf, len, what);
		}
		itest_sync(ch, ++step_tag, what);
		itest_cq_expect_empty(n.tx, what);
		itest_cq_expect_empty(n.rx, what);
		itest_sync(ch, ++step_tag, what);
		itest_node_close(&n);
	}
	free(buf);
}

/* 5: nobody there */

/*
 * A name of the test address that nobody listens on: its port is free now
 * and below the ephemeral range, so that no endpoint of the other
 * processes can get it meanwhile.
 */
static struct sockaddr_in free_name(void)
{
	struct fid_domain *domain = itest_domain();
	struct fi_info *info = fi_dupinfo(itest_info);
	struct sockaddr_in sin = { .sin_family = AF_INET };
	struct fid_ep *ep;

	CHECK(info != NULL);
	info->tx_attr->size = info->rx_attr->size = 32;
	CHECK(inet_pton(AF_INET, itest_addr(), &sin.sin_addr) == 1);
	for (unsigned i = 0; i < 200; i++) {
		uint16_t port = 20000 + (getpid() * 7 + i * 131) % 12000;
		int ret;

		CHECK_OK(fi_endpoint(domain, info, &ep, NULL));
		sin.sin_port = htons(port);
		ret = fi_setname(&ep->fid, &sin, sizeof(sin));
		CHECK_OK(fi_close(&ep->fid));
		if (ret == -FI_EADDRINUSE)
			continue;
		CHECK_OK(ret);
		fi_freeinfo(info);
		return sin;
	}
	FAIL("no free port found for the refusal test");
}

#define REFUSED_SENDS 3

/*
 * Sends to a port nobody listens on wait for their connection, which
 * the provider keeps trying for about 10 s (the peer may just not be
 * listening yet), then end in one error entry each, all after that one
 * attempt; RMA to it says -FI_EAGAIN meanwhile.
 */
static void refused(void)
{
	struct sockaddr_in name = free_name();
	struct itest_node n;
	char buf[64] = "nobody will read this";
	struct fi_cq_err_entry err;
	int64_t t0, elapsed;
	bool ended[REFUSED_SENDS] = { false };

	itest_node_open(&n, &small, "refused");
	itest_node_insert(&n, &name);
	n.tx->errors_ok = true;
	t0 = itest_now_ms();
	for (int i = 0; i < REFUSED_SENDS; i++)
		CHECK_OK(fi_send(n.ep, buf, sizeof(buf), NULL, n.peer,
				 CTX(2 + i)));
	CHECK_RET(fi_write(n.ep, buf, 8, NULL, n.peer, 0, 1, CTX(1)),
		  -FI_EAGAIN);
	for (int i = 0; i < REFUSED_SENDS; i++) {
		int k;

		err = itest_cq_wait_err(n.tx, "a refused send");
		k = (int) CTX_INDEX(err.op_context) - 2;
		elapsed = itest_now_ms() - t0;
		printf("refused: a send failed with %d (%s) after %" PRId64
		       " ms\n",
		       err.err, fi_strerror(err.err), elapsed);
		EXPECT(err.err == FI_ECONNREFUSED && k >= 0 &&
			       k < REFUSED_SENDS && !ended[k],
		       "each send to a port nobody listens on ends once, "
		       "refused: %d (%s)",
		       err.err, fi_strerror(err.err));
		ended[k] = true;
		EXPECT(elapsed >= 8000 && elapsed <= 15000,
		       "refusal after %" PRId64 " ms: expected after about "
		       "10 s, the one attempt's patience",
		       elapsed);
	}
	/* Reported once; the next transmit tries again. */
	CHECK_RET(fi_write(n.ep, buf, 8, NULL, n.peer, 0, 1, CTX(1)),
		  -FI_EAGAIN);
	itest_idle(20);
	itest_cq_expect_empty(n.tx, "nothing else was sent");
	itest_cq_expect_empty(n.rx, "nothing was sent");
	itest_node_close(&n);
}

/* 6: local communication */

#define SELF_PATIENCE_MS 15000

/*
 * from sends len bytes to to (fi_addr dest), which receives them; the
 * send must be accepted within SELF_PATIENCE_MS.
 */
static void local_one(struct itest_node *from, fi_addr_t dest,
		      struct itest_node *to, fi_addr_t src, size_t len,
		      uint64_t seed, const char *what)
{
	unsigned char *sbuf = malloc(len), *rbuf = itest_guarded(len);
	int64_t t0 = itest_now_ms();
	struct itest_comp c;
	ssize_t ret;

	CHECK(sbuf != NULL);
	itest_msg_fill(sbuf, len, seed);
	ITEST_POST(fi_recv(to->ep, rbuf, len, NULL, FI_ADDR_UNSPEC, CTX(1)),
		   what);
	while ((ret = fi_send(from->ep, sbuf, len, NULL, dest, CTX(0))) ==
	       -FI_EAGAIN) {
		if (itest_now_ms() - t0 > SELF_PATIENCE_MS)
			FAIL("%s: fi_send still returns -FI_EAGAIN after %d s",
			     what, SELF_PATIENCE_MS / 1000);
		itest_progress();
	}
	if (ret)
		FAIL("%s: fi_send returned %zd (%s)", what, ret,
		     fi_strerror((int) -ret));
	c = itest_cq_wait(from->tx, what);
	EXPECT_COMP(c, CTX(0), FI_SEND | FI_MSG, 0, what);
	c = itest_cq_wait(to->rx, what);
	EXPECT_COMP(c, CTX(1), FI_RECV | FI_MSG, 0, what);
	EXPECT(c.len == len, "%s: len %zu", what, c.len);
	EXPECT(c.src == src, "%s: src_addr %" PRIu64 ", expected %" PRIu64,
	       what, c.src, src);
	itest_msg_check(rbuf, len, seed, what);
	itest_guard_check(rbuf, len, what);
	free(sbuf);
	free(rbuf);
}

static void local_comm(void)
{
	struct itest_node a, b;
	fi_addr_t a2b, b2a, a2a;

	itest_node_open(&a, &small, "local a");
	itest_node_open(&b, &small, "local b");
	a2b = itest_node_insert(&a, &b.name);
	b2a = itest_node_insert(&b, &a.name);
	a2a = itest_node_insert(&a, &a.name);
	local_one(&a, a2b, &b, b2a, 100, 0xd00,
		  "two endpoints of one process: a -> b, eager");
	local_one(&b, b2a, &a, a2b, 100000, 0xd01,
		  "two endpoints of one process: b -> a, rendezvous");
	local_one(&a, a2a, &a, a2a, 100, 0xd02,
		  "an endpoint that sends to itself, eager");
	local_one(&a, a2a, &a, a2a, 100000, 0xd03,
		  "an endpoint that sends to itself, rendezvous");
	itest_cq_expect_empty(a.tx, "local communication");
	itest_cq_expect_empty(a.rx, "local communication");
	itest_cq_expect_empty(b.tx, "local communication");
	itest_cq_expect_empty(b.rx, "local communication");
	itest_node_close(&a);
	itest_node_close(&b);
	printf("local communication: two endpoints of one process, and "
	       "sending to itself\n");
}

/* Processes */

static double secs(int64_t t0)
{
	return (itest_now_ms() - t0) / 1000.0;
}

static void close_other_links(size_t keep)
{
	for (size_t i = 0; i <= NSENDERS; i++)
		if (i != keep)
			itest_link_close_all(&links[i]);
}

static void sender_main(void *arg)
{
	const struct sender_arg *a = arg;
	struct itest_chan ch;

	close_other_links(a->index);
	ch = itest_link_child(&links[a->index]);
	itest_step = "part 1 (many to one)";
	m2o_sender(&ch, a->index, 1);
	itest_step = "part 4 (senders that close at once)";
	m2o_sender(&ch, a->index, 4);
	itest_chan_close(&ch);
}

static void peer_main(void *arg)
{
	struct itest_chan ch;

	(void) arg;
	close_other_links(NSENDERS);
	ch = itest_link_child(&links[NSENDERS]);
	(void) itest_domain(); /* slow in a VM: meanwhile, part 1 */
	itest_expect_idle(&ch, 100, 3 * itest_wait_ms(), "the parent's part 2");
	itest_step = "part 2 (simultaneous connect)";
	(void) simultaneous(&ch, false);
	itest_step = "part 3 (first message needing an answer)";
	first_message(&ch, false);
	itest_domain_close();
	itest_chan_close(&ch);
}

static void refuser_main(void *arg)
{
	(void) arg;
	close_other_links(NSENDERS + 1);
	itest_step = "part 5 (nobody listening)";
	refused();
	itest_domain_close();
}

int main(void)
{
	static struct sender_arg args[NSENDERS];
	int64_t t0 = itest_now_ms(), slowest;
	pid_t peer;

	setvbuf(stdout, NULL, _IOLBF, 0);
	/* Every process is forked before anyone opens libfabric. */
	for (size_t i = 0; i <= NSENDERS; i++)
		itest_link_init(&links[i]);
	for (size_t i = 0; i < NSENDERS; i++) {
		char who[32];

		args[i].index = i;
		snprintf(who, sizeof(who), "sender %zu", i);
		itest_fork(who, sender_main, &args[i]);
	}
	peer = itest_fork("peer", peer_main, NULL);
	itest_fork("refuser", refuser_main, NULL);
	snprintf(itest_who, sizeof(itest_who), "server");
	for (size_t i = 0; i <= NSENDERS; i++)
		chans[i] = itest_link_parent(&links[i]);

	itest_step = "part 1 (many to one)";
	m2o_server(1);
	printf("[%5.1f s] many to one: %d messages from %d senders checked\n",
	       secs(t0), NSENDERS * PER_SENDER, NSENDERS);
	itest_step = "part 4 (senders that close at once)";
	m2o_server(4);
	printf("[%5.1f s] senders that close at once, directed receives: "
	       "%d messages checked\n",
	       secs(t0), NSENDERS * PER_SENDER);
	for (size_t i = 0; i < NSENDERS; i++)
		itest_chan_close(&chans[i]);

	itest_signal(&chans[NSENDERS], 100);
	itest_step = "part 2 (simultaneous connect)";
	slowest = simultaneous(&chans[NSENDERS], true);
	/* Not checked: the VM's timing varies too much. */
	printf("[%5.1f s] simultaneous connect: %d rounds, the slowest first "
	       "exchange took %" PRId64 " ms\n",
	       secs(t0), ROUNDS, slowest);
	itest_step = "part 3 (first message needing an answer)";
	first_message(&chans[NSENDERS], true);
	printf("[%5.1f s] first message needing an answer: %d rounds\n",
	       secs(t0), 2 * ROUNDS);
	itest_wait_kid(peer);
	itest_step = "part 5 (nobody listening)";
	itest_wait_kids();
	printf("[%5.1f s] all other processes done\n", secs(t0));
	itest_step = "part 6 (local communication)";
	local_comm();
	itest_chan_close(&chans[NSENDERS]);
	itest_domain_close();
	itest_pass("nrma_msg_peers");
	return 0;
}
