/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Two hosts.  Many peers at one receiver ("R", on host 1) that is busy:
 * it makes no libfabric call for BUSY_MS, longer than the stall watch
 * (FI_NRMA_STALL_MS, STALL_MS here), while they send.  Sender processes
 * on both hosts open endpoints (the peers), and each endpoint sends
 * messages to R, every RNDV_EVERY-th one RNDV_LEN bytes (rendezvous, read
 * by R), the others EAGER_LEN bytes:
 *   A. 64 peers, 40 messages each, each peer also making NOTIFIES
 *      notified writes of 8 bytes into its own words of R's region, whose
 *      counter counts them;
 *   B. 256 peers, 8 messages each (the last by rendezvous).
 * Every send and write completes without error (neither the device's
 * receiver-not-ready retries, which the credits of all peers together
 * never exceeding R's posted buffers rule out, nor the stall watch fail
 * any); R then receives every message exactly once and intact, its
 * counter reads every write and its region holds them.  R's device
 * answers no message with receiver-not-ready, where the device counts
 * that (rxe's send_rnr_err, host-wide; skipped elsewhere), and R's
 * resident memory grows by less than RSS_BASE_KB (an endpoint's buffers)
 * and RSS_PEER_KB a peer.  R prints what it measured.  Messages are tagged
 * with their sender and number, so that R can check each one's bytes.
 */
#include <stdio.h>

#include <rdma/fi_rma.h>

#include "itest_host.h"
#include "itest_rma.h"

#define STALL_MS   3000
#define BUSY_MS	   (STALL_MS + 2000)
#define MSGS_MAX   40
#define RNDV_EVERY 8
#define RNDV_LEN   32768
#define EAGER_LEN  1024
#define NOTIFIES   16
#define RECV_SLOTS 64
/*
 * R's memory: its endpoint's pools, then so much a peer (fi_nrma(7));
 * measured 18.8 MiB for 64 peers, 39.5 MiB for 256.  AddressSanitizer's
 * shadow and quarantine double it.
 */
#ifdef __SANITIZE_ADDRESS__
#define RSS_FACTOR 2
#else
#define RSS_FACTOR 1
#endif
#define RSS_BASE_KB (RSS_FACTOR * 24 * 1024)
#define RSS_PEER_KB (RSS_FACTOR * 128)

struct phase {
	const char *name;
	int procs; /* sender processes on each host */
	int eps;   /* endpoints in each */
	int msgs;  /* messages each, at most MSGS_MAX */
	bool notify;
};

static const struct phase phases[] = {
	{ "A", 4, 8, MSGS_MAX, true },
	{ "B", 8, 16, 8, false },
};

static int peers_of(const struct phase *ph)
{
	return 2 * ph->procs * ph->eps;
}

/* What R publishes: where peers send, and where they write. */
struct target {
	struct sockaddr_in name;
	struct rt_rkey region;
};

/* A key for itest_host_put: phase, what, and up to two numbers. */
static const char *key_of(const struct phase *ph, const char *what, int a,
			  int b)
{
	static char key[64];

	snprintf(key, sizeof(key), "%s-%s-%d-%d", ph->name, what, a, b);
	return key;
}

/* Message seq of peer p: its tag says whose it is. */
static size_t msg_len(int seq)
{
	return seq % RNDV_EVERY == RNDV_EVERY - 1 ? RNDV_LEN : EAGER_LEN;
}

static uint64_t msg_id(int p, int seq)
{
	return (uint64_t) p << 32 | (uint32_t) seq;
}

static uint64_t write_value(int p, int j)
{
	return ((uint64_t) p << 16 | (uint64_t) j) + 1;
}

/* rxe's count of receiver-not-ready answers; -1 where there is none. */
static long rnr_naks_sent(void)
{
	char path[256];
	long n = -1;
	FILE *f;

	snprintf(path, sizeof(path),
		 "/sys/class/infiniband/%s/ports/1/hw_counters/send_rnr_err",
		 itest_device());
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (fscanf(f, "%ld", &n) != 1)
		n = -1;
	fclose(f);
	return n;
}

/* Senders */

struct peer {
	struct itest_node n;
	int id;
	char *bufs; /* its messages, RNDV_LEN apart: each its own */
	uint64_t words[NOTIFIES];
	int ended;
};

static void peer_post(struct peer *p, const struct target *t,
		      const struct phase *ph)
{
	for (int seq = 0; seq < ph->msgs; seq++) {
		char *buf = p->bufs + (size_t) seq * RNDV_LEN;
		uint64_t id = msg_id(p->id, seq);

		itest_msg_fill(buf, msg_len(seq), id);
		ITEST_POST(fi_tsend(p->n.ep, buf, msg_len(seq), NULL, p->n.peer,
				    id, NULL),
			   itest_fmt("peer %d's message %d", p->id, seq));
	}
	for (int j = 0; ph->notify && j < NOTIFIES; j++) {
		uint64_t at = (uint64_t) (p->id * NOTIFIES + j) * 8;

		p->words[j] = write_value(p->id, j);
		ITEST_POST(fi_write(p->n.ep, &p->words[j], 8, NULL, p->n.peer,
				    t->region.addr + at, t->region.key, NULL),
			   itest_fmt("peer %d's write %d", p->id, j));
	}
}

static void sender(const struct phase *ph, int proc)
{
	struct itest_node_opts o = { .tx_size = MSGS_MAX + NOTIFIES,
				     .rx_size = 16,
				     .no_rx_cq = true };
	struct fi_info *info;
	int ops = ph->msgs + (ph->notify ? NOTIFIES : 0), done = 0;
	struct peer *peers = calloc(ph->eps, sizeof(*peers));
	int64_t deadline;
	struct target t;

	CHECK(peers != NULL);
	/* A sender's endpoints need few buffers of their own. */
	setenv("FI_NRMA_UNEXP_MAX", "8", 1);
	rt_extra_caps = FI_TAGGED;
	rt_domain();
	/* Transmits only: one CQ an endpoint. */
	info = fi_dupinfo(itest_info);
	CHECK(info != NULL);
	info->caps = FI_MSG | FI_TAGGED | FI_RMA | FI_SEND | FI_WRITE;
	o.info = info;
	itest_host_get(key_of(ph, "target", 0, 0), &t, sizeof(t));
	for (int e = 0; e < ph->eps; e++) {
		struct peer *p = &peers[e];

		p->id = (itest_host() * ph->procs + proc) * ph->eps + e;
		p->bufs = malloc((size_t) ph->msgs * RNDV_LEN);
		CHECK(p->bufs != NULL);
		itest_node_open(&p->n, &o, itest_fmt("peer %d", p->id));
		itest_node_insert(&p->n, &t.name);
	}
	fi_freeinfo(info);
	for (int e = 0; e < ph->eps; e++)
		peer_post(&peers[e], &t, ph);
	itest_host_signal(key_of(ph, "posted", itest_host(), proc));
	/* Every one ends in a completion: an error entry fails the test. */
	deadline = itest_deadline();
	while (done < ph->eps * ops) {
		itest_check_deadline(deadline, "every send and write to end");
		itest_progress();
		for (int e = 0; e < ph->eps; e++)
			for (; peers[e].n.tx->count; done++, peers[e].ended++)
				itest_cq_wait(peers[e].n.tx, "a send or write");
	}
	itest_host_wait(key_of(ph, "received", 0, 0));
	for (int e = 0; e < ph->eps; e++) {
		itest_node_close(&peers[e].n);
		free(peers[e].bufs);
	}
	free(peers);
}

static void sender_main(void *arg)
{
	const struct phase *ph = &phases[(uintptr_t) arg >> 8];

	sender(ph, (int) ((uintptr_t) arg & 0xff));
}

/* The receiver */

static void recv_post(struct itest_node *n, char *bufs, int slot)
{
	ITEST_POST(fi_trecv(n->ep, bufs + (size_t) slot * RNDV_LEN, RNDV_LEN,
			    NULL, FI_ADDR_UNSPEC, 0, ~0ULL,
			    (void *) (uintptr_t) slot),
		   "a receive");
}

/* One message: whose, which, once, and every byte. */
static void recv_check(const char *buf, size_t len, uint64_t id, bool *seen,
		       int peers)
{
	int p = (int) (id >> 32), seq = (int) (uint32_t) id;

	EXPECT(p >= 0 && p < peers && seq >= 0 && seq < MSGS_MAX,
	       "a message sent (tag 0x%" PRIx64 ")", id);
	EXPECT(!seen[p * MSGS_MAX + seq], "message 0x%" PRIx64 " comes once",
	       id);
	seen[p * MSGS_MAX + seq] = true;
	EXPECT(len == msg_len(seq), "message 0x%" PRIx64 ": %zu bytes", id,
	       len);
	itest_msg_check(buf, len, id, itest_fmt("message 0x%" PRIx64, id));
}

static void recv_all(struct itest_node *n, int peers, int msgs)
{
	char *bufs = malloc((size_t) RECV_SLOTS * RNDV_LEN);
	bool *seen = calloc((size_t) peers * MSGS_MAX, sizeof(*seen));
	int total = peers * msgs, posted = 0;

	CHECK(bufs && seen);
	for (; posted < total && posted < RECV_SLOTS; posted++)
		recv_post(n, bufs, posted);
	for (int got = 0; got < total; got++) {
		struct itest_comp c = itest_cq_wait(n->rx, "a message");
		int slot = (int) (uintptr_t) c.op_context;

		CHECK(slot >= 0 && slot < RECV_SLOTS);
		recv_check(bufs + (size_t) slot * RNDV_LEN, c.len, c.tag, seen,
			   peers);
		if (posted < total) {
			recv_post(n, bufs, slot);
			posted++;
		}
	}
	free(seen);
	free(bufs);
}

/* Waits for the senders without a call of libfabric's. */
static void busy_until_posted(const struct phase *ph)
{
	int64_t deadline = itest_deadline();

	for (int h = 0; h < 2; h++)
		for (int s = 0; s < ph->procs; s++) {
			const char *k = key_of(ph, "posted", h, s);

			while (!itest_host_has(k)) {
				itest_check_deadline(deadline, k);
				usleep(10000);
			}
		}
	usleep(BUSY_MS * 1000);
}

static void receiver_phase(const struct phase *ph, long rss0)
{
	int peers = peers_of(ph), writes = peers * NOTIFIES;
	uint64_t *region = calloc(writes, sizeof(uint64_t));
	struct fid_cntr *cntr = itest_cntr_open(rt_domain());
	long naks = rnr_naks_sent();
	struct itest_node n;
	struct target t;
	struct fid_mr *mr;
	int64_t t0;

	CHECK(region != NULL);
	itest_node_open(&n, NULL, "R");
	mr = rt_mr_reg_cntr(region, (size_t) writes * 8, FI_REMOTE_WRITE, cntr,
			    FI_REMOTE_WRITE);
	t = (struct target){ .name = n.name,
			     .region = rt_rkey_of(mr, region,
						  (size_t) writes * 8) };
	itest_host_put(key_of(ph, "target", 0, 0), &t, sizeof(t));
	busy_until_posted(ph);
	t0 = itest_now_ms();
	recv_all(&n, peers, ph->msgs);
	if (ph->notify) {
		EXPECT(fi_cntr_read(cntr) == (uint64_t) writes,
		       "the counter reads %" PRIu64, fi_cntr_read(cntr));
		for (int p = 0; p < peers; p++)
			for (int j = 0; j < NOTIFIES; j++)
				EXPECT(region[p * NOTIFIES + j] ==
					       write_value(p, j),
				       "peer %d's write %d", p, j);
	}
	printf("phase %s: %d peers, %d messages%s received in %" PRId64
	       " ms after %d ms busy; RSS %ld KiB (+%ld since the start)\n",
	       ph->name, peers, peers * ph->msgs,
	       ph->notify ? itest_fmt(" and %d notified writes", writes) : "",
	       itest_now_ms() - t0, BUSY_MS, itest_rss_kb(),
	       itest_rss_kb() - rss0);
	if (naks >= 0)
		EXPECT(rnr_naks_sent() == naks,
		       "no receiver-not-ready answer (%ld before, %ld after)",
		       naks, rnr_naks_sent());
	/* Under valgrind, the resident set is valgrind's. */
	EXPECT(getenv("NRMA_VALGRIND") ||
		       itest_rss_kb() - rss0 <
			       RSS_BASE_KB + (long) peers * RSS_PEER_KB,
	       "R's memory grows by %ld KiB, less than %d KiB and %d KiB a "
	       "peer",
	       itest_rss_kb() - rss0, RSS_BASE_KB, RSS_PEER_KB);
	itest_host_signal(key_of(ph, "received", 0, 0));
	itest_idle(500);
	CHECK_OK(fi_close(&mr->fid));
	itest_node_close(&n);
	itest_cntr_close(cntr);
	free(region);
}

static void receiver_main(void *arg)
{
	long rss0;

	(void) arg;
	rt_extra_caps = FI_TAGGED;
	rt_domain();
	rss0 = itest_rss_kb();
	for (size_t i = 0; i < sizeof(phases) / sizeof(phases[0]); i++)
		receiver_phase(&phases[i], rss0);
}

int main(void)
{
	char stall[16];

	snprintf(stall, sizeof(stall), "%d", STALL_MS);
	setenv("FI_NRMA_STALL_MS", stall, 1);
	if (itest_host())
		itest_fork("receiver", receiver_main, NULL);
	for (size_t i = 0; i < sizeof(phases) / sizeof(phases[0]); i++) {
		pid_t kids[16];

		CHECK(phases[i].procs <= 16);
		for (int s = 0; s < phases[i].procs; s++)
			kids[s] = itest_fork(
				itest_fmt("sender %s%d", phases[i].name, s),
				sender_main,
				(void *) (uintptr_t) (i << 8 | (size_t) s));
		for (int s = 0; s < phases[i].procs; s++)
			itest_wait_kid(kids[s]);
	}
	itest_wait_kids();
	itest_pass("nrma_fault_peers");
	return 0;
}
