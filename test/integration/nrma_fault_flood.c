/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Two hosts.  Floods, across the link, at a receiver on host 1:
 *  1. Unexpected messages: FLOOD_SENDERS processes on host 0 send
 *     FLOOD_MSGS small messages and FLOOD_RNDV rendezvous ones each while
 *     the receiver posts no receive for FLOOD_HOLD_S.  The senders are
 *     held back (-FI_EAGAIN, the transport's receiver-not-ready retries),
 *     nothing is dropped: once the receiver posts receives it gets every
 *     message exactly once, and every send completes.
 *  2. Connection requests: FLOOD_PROCS processes on host 0 open
 *     FLOOD_EPS endpoints each and all connect at once, each sending one
 *     message: the receiver accepts them all.
 * The receiver's memory stays bounded: its resident set grows by less
 * than FLOOD_RSS_MB over the floods.  It prints what it measured.
 */
#include <stdio.h>

#include "itest_host.h"
#include "itest_msg.h"

#define FLOOD_SENDERS 4
#define FLOOD_MSGS    2000
#define FLOOD_RNDV    20
#define FLOOD_HOLD_S  10
#define FLOOD_PROCS   8
#define FLOOD_EPS     8
#define FLOOD_RSS_MB  32
#define FLOOD_SMALL   64
#define FLOOD_BIG     65536
#define FLOOD_TOTAL   (FLOOD_SENDERS * (FLOOD_MSGS + FLOOD_RNDV))
#define FLOOD_CONNS   (FLOOD_PROCS * FLOOD_EPS)

/* Message i of sender s carries its number in its first 8 bytes. */
static uint64_t flood_id(int s, int i)
{
	return (uint64_t) s << 32 | (uint32_t) i;
}

/* Takes the send completions already read; returns how many. */
static size_t flood_reap(struct itest_cq *tx)
{
	size_t n = 0;

	for (; tx->count; n++)
		itest_cq_wait(tx, "a send");
	return n;
}

static void flood_sender(void *arg)
{
	int me = (int) (uintptr_t) arg;
	static char buf[FLOOD_BIG];
	struct sockaddr_in rx;
	struct itest_node n;
	size_t done = 0, held = 0;

	itest_node_open(&n, NULL, itest_fmt("sender %d", me));
	itest_host_get("receiver", &rx, sizeof(rx));
	itest_node_insert(&n, &rx);
	for (int i = 0; i < FLOOD_MSGS + FLOOD_RNDV; i++) {
		uint64_t id = flood_id(me, i);
		size_t len = i < FLOOD_MSGS ? FLOOD_SMALL : FLOOD_BIG;
		ssize_t ret;

		memcpy(buf, &id, sizeof(id));
		while ((ret = fi_send(n.ep, buf, len, NULL, n.peer, NULL)) ==
		       -FI_EAGAIN) {
			held++;
			itest_progress();
			done += flood_reap(n.tx);
		}
		EXPECT(!ret, "a send returns 0 or -FI_EAGAIN, not %zd", ret);
		/* the peer reads a rendezvous send from buf: one at a time */
		while (len == FLOOD_BIG && done <= (size_t) i) {
			itest_cq_wait(n.tx, "a send");
			done++;
		}
	}
	while (done < FLOOD_MSGS + FLOOD_RNDV) {
		itest_cq_wait(n.tx, "a send");
		done++;
	}
	printf("sender %d: %d sends, -FI_EAGAIN %zu times\n", me,
	       FLOOD_MSGS + FLOOD_RNDV, held);
	itest_host_wait("received");
	itest_node_close(&n);
}

static void flood_connector(void *arg)
{
	int me = (int) (uintptr_t) arg;
	struct itest_node n[FLOOD_EPS];
	struct sockaddr_in rx;
	uint64_t id[FLOOD_EPS];

	itest_host_get("receiver", &rx, sizeof(rx));
	for (int e = 0; e < FLOOD_EPS; e++) {
		itest_node_open(&n[e], NULL, itest_fmt("ep %d.%d", me, e));
		itest_node_insert(&n[e], &rx);
	}
	itest_host_wait("connect");
	for (int e = 0; e < FLOOD_EPS; e++) {
		id[e] = flood_id(100 + me, e);
		ITEST_POST(fi_send(n[e].ep, &id[e], sizeof(id[e]), NULL,
				   n[e].peer, NULL),
			   "a connecting endpoint's message");
	}
	for (int e = 0; e < FLOOD_EPS; e++)
		itest_cq_wait(n[e].tx, "its send");
	itest_host_wait("accepted");
	for (int e = 0; e < FLOOD_EPS; e++)
		itest_node_close(&n[e]);
}

static void flood_senders(void)
{
	for (int s = 0; s < FLOOD_SENDERS; s++)
		itest_fork(itest_fmt("sender %d", s), flood_sender,
			   (void *) (uintptr_t) s);
	for (int p = 0; p < FLOOD_PROCS; p++)
		itest_fork(itest_fmt("connector %d", p), flood_connector,
			   (void *) (uintptr_t) p);
	itest_wait_kids();
}

#define FLOOD_SLOTS 64

static void flood_post(struct itest_node *n, char *bufs, size_t len, int slot)
{
	ITEST_POST(fi_recv(n->ep, bufs + (size_t) slot * len, len, NULL,
			   FI_ADDR_UNSPEC, (void *) (uintptr_t) slot),
		   "a receive");
}

/*
 * Receives count messages of up to len bytes, from senders first_sender
 * on, ids messages each; marks each id once.  A slot is posted again
 * only once its receive completed: rendezvous receives end out of order.
 */
static void flood_take(struct itest_node *n, size_t count, size_t len,
		       int first_sender, int ids, bool *seen)
{
	char *bufs = malloc(FLOOD_SLOTS * len);
	int senders = (int) (count / (size_t) ids);
	size_t got = 0, posted = 0;

	CHECK(bufs != NULL);
	for (; posted < count && posted < FLOOD_SLOTS; posted++)
		flood_post(n, bufs, len, (int) posted);
	while (got < count) {
		struct itest_comp c = itest_cq_wait(n->rx, "a message");
		int slot = (int) (uintptr_t) c.op_context;
		uint64_t id;
		int s, i;

		CHECK(slot >= 0 && slot < FLOOD_SLOTS);
		memcpy(&id, bufs + (size_t) slot * len, sizeof(id));
		s = (int) (id >> 32) - first_sender;
		i = (int) (uint32_t) id;
		EXPECT(s >= 0 && s < senders && i < ids,
		       "a message sent (id 0x%" PRIx64 ")", id);
		EXPECT(!seen[s * ids + i], "message 0x%" PRIx64 " comes once",
		       id);
		seen[s * ids + i] = true;
		got++;
		if (posted < count) {
			flood_post(n, bufs, len, slot);
			posted++;
		}
	}
	free(bufs);
}

static void flood_receiver(void)
{
	static bool seen[FLOOD_TOTAL], conns[FLOOD_CONNS];
	struct itest_node n;
	long rss0, rss1, rss2;

	itest_node_open(&n, NULL, "receiver");
	rss0 = itest_rss_kb();
	itest_host_put("receiver", &n.name, sizeof(n.name));
	/* 1. Nothing posted while the flood comes. */
	itest_idle(FLOOD_HOLD_S * 1000);
	flood_take(&n, FLOOD_TOTAL, FLOOD_BIG, 0, FLOOD_MSGS + FLOOD_RNDV,
		   seen);
	rss1 = itest_rss_kb();
	itest_host_signal("received");
	/* 2. Every connector's endpoints at once. */
	itest_host_signal("connect");
	flood_take(&n, FLOOD_CONNS, 64, 100, FLOOD_EPS, conns);
	rss2 = itest_rss_kb();
	itest_host_signal("accepted");
	printf("receiver RSS: %ld KiB after opening, %ld after %d unexpected "
	       "messages, %ld after %d connections (%ld per connection)\n",
	       rss0, rss1, FLOOD_TOTAL, rss2, FLOOD_CONNS,
	       (rss2 - rss1) / FLOOD_CONNS);
	EXPECT(rss2 - rss0 < FLOOD_RSS_MB * 1024,
	       "memory grows by %ld KiB, less than %d MiB", rss2 - rss0,
	       FLOOD_RSS_MB);
	itest_idle(500);
	itest_node_close(&n);
}

int main(void)
{
	if (itest_host())
		flood_receiver();
	else
		flood_senders();
	itest_pass("nrma_fault_flood");
	return 0;
}
