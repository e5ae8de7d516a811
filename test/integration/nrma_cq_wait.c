/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Blocking CQ reads on the device: fi_cq_sread under FI_CQ_COND_THRESHOLD
 * (cond is the threshold's value, as libfabric's own CQs take it), with
 * enough completions and with too few (it sleeps, without spinning, until
 * its timeout); fi_cq_signal waking two threads in fi_cq_sread; fi_poll
 * over a threshold CQ; fi_cq_readerr for an application built for API
 * 1.17; and the FI_AFFINITY hint.  One process, whose endpoint sends to
 * itself.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdint.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "itest.h"

/* libfabric 2.0 deprecates poll sets; nrma keeps serving them. */
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

#define WAIT_MS	     500   /* an sread that must sleep this long */
#define MARGIN_MS    300   /* how late it may return */
#define LONG_WAIT_MS 10000 /* an sread that must end well before */
#define DEADLINE_MS  30000 /* for sends and their completions */
#define NMSG	     4

struct node {
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	struct fid_ep *ep;
	struct fid_cq *tx;
	struct fid_cq *rx; /* FI_CQ_COND_THRESHOLD */
	fi_addr_t self;
	int sent; /* send completions read */
	char sbuf[NMSG][16];
	char rbuf[NMSG][16];
};

static int ctx[NMSG];
#define CTX(i) ((void *) &ctx[i])

static int64_t clock_ms(clockid_t clock)
{
	struct timespec ts;

	CHECK(clock_gettime(clock, &ts) == 0);
	return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int64_t now_ms(void)
{
	return clock_ms(CLOCK_MONOTONIC);
}

static struct fi_info *node_info(uint32_t version)
{
	return itest_getinfo_at(version, FI_MSG | FI_SEND | FI_RECV);
}

/* Both CQs take FI_AFFINITY, a hint the provider may ignore. */
static void node_open_cqs(struct node *n)
{
	struct fi_cq_attr attr = {
		.format = FI_CQ_FORMAT_CONTEXT,
		.wait_obj = FI_WAIT_NONE,
		.flags = FI_AFFINITY,
	};

	CHECK_OK(fi_cq_open(n->domain, &attr, &n->tx, NULL));
	attr.wait_obj = FI_WAIT_FD;
	attr.wait_cond = FI_CQ_COND_THRESHOLD;
	CHECK_OK(fi_cq_open(n->domain, &attr, &n->rx, &n->rx));
}

/* An enabled RDM endpoint that knows its own address. */
static void node_open(struct node *n, uint32_t version)
{
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE };
	struct fi_info *info = node_info(version);
	char name[64];
	size_t len = sizeof(name);

	memset(n, 0, sizeof(*n));
	CHECK_OK(fi_fabric(info->fabric_attr, &n->fabric, NULL));
	CHECK_OK(fi_domain(n->fabric, info, &n->domain, NULL));
	CHECK_OK(fi_av_open(n->domain, &av_attr, &n->av, NULL));
	node_open_cqs(n);
	CHECK_OK(fi_endpoint(n->domain, info, &n->ep, NULL));
	fi_freeinfo(info);
	CHECK_OK(fi_ep_bind(n->ep, &n->av->fid, 0));
	CHECK_OK(fi_ep_bind(n->ep, &n->tx->fid, FI_TRANSMIT));
	CHECK_OK(fi_ep_bind(n->ep, &n->rx->fid, FI_RECV));
	CHECK_OK(fi_enable(n->ep));
	CHECK_OK(fi_getname(&n->ep->fid, name, &len));
	CHECK_RET(fi_av_insert(n->av, name, 1, &n->self, 0, NULL), 1);
}

static void node_close(struct node *n)
{
	CHECK_OK(fi_close(&n->ep->fid));
	CHECK_OK(fi_close(&n->rx->fid));
	CHECK_OK(fi_close(&n->tx->fid));
	CHECK_OK(fi_close(&n->av->fid));
	CHECK_OK(fi_close(&n->domain->fid));
	CHECK_OK(fi_close(&n->fabric->fid));
}

/* Reads send completions, which progresses the endpoint. */
static void node_poll_tx(struct node *n)
{
	struct fi_cq_entry e;
	ssize_t ret = fi_cq_read(n->tx, &e, 1);

	if (ret == 1)
		n->sent++;
	else
		CHECK_RET(ret, -FI_EAGAIN);
}

static void post_recv(struct node *n, int i)
{
	CHECK_OK(fi_recv(n->ep, n->rbuf[i], sizeof(n->rbuf[i]), NULL,
			 FI_ADDR_UNSPEC, CTX(i)));
}

/* Sends message i to ourselves and waits for its send completion. */
static void send_self(struct node *n, int i)
{
	int64_t deadline = now_ms() + DEADLINE_MS;
	int want = n->sent + 1;
	ssize_t ret;

	while ((ret = fi_send(n->ep, n->sbuf[i], sizeof(n->sbuf[i]), NULL,
			      n->self, CTX(i))) == -FI_EAGAIN) {
		CHECK(now_ms() < deadline);
		node_poll_tx(n);
	}
	CHECK_OK(ret);
	while (n->sent < want) {
		CHECK(now_ms() < deadline);
		node_poll_tx(n);
	}
}

struct timed {
	ssize_t ret;
	int64_t wall_ms;
	int64_t cpu_ms; /* the whole process's */
};

static struct timed timed_sread(struct fid_cq *cq, void *buf, size_t count,
				const void *cond, int timeout)
{
	int64_t wall = now_ms(), cpu = clock_ms(CLOCK_PROCESS_CPUTIME_ID);
	struct timed t;

	t.ret = fi_cq_sread(cq, buf, count, cond, timeout);
	t.wall_ms = now_ms() - wall;
	t.cpu_ms = clock_ms(CLOCK_PROCESS_CPUTIME_ID) - cpu;
	return t;
}

/* A wait that must sleep out its timeout, without spinning. */
static void check_sleeps(struct fid_cq *cq, size_t count, const void *cond,
			 const char *what)
{
	struct fi_cq_entry buf[NMSG];
	struct timed t = timed_sread(cq, buf, count, cond, WAIT_MS);

	printf("%s: %zd after %" PRId64 " ms, %" PRId64 " ms of CPU\n", what,
	       t.ret, t.wall_ms, t.cpu_ms);
	CHECK_RET(t.ret, -FI_EAGAIN);
	CHECK(t.wall_ms >= WAIT_MS - 10);
	CHECK(t.wall_ms <= WAIT_MS + MARGIN_MS);
	CHECK(t.cpu_ms < t.wall_ms / 2);
}

/* Two completions, a threshold of 3 passed as a value: no spin. */
static void check_below_threshold(struct node *n)
{
	for (int i = 0; i < NMSG; i++)
		post_recv(n, i);
	send_self(n, 0);
	send_self(n, 1);
	check_sleeps(n->rx, NMSG, (void *) 3, "sread, 2 of threshold 3");
}

/* A poll set reports the CQ, not empty though below its threshold. */
static void check_poll(struct node *n)
{
	struct fi_poll_attr attr = { 0 };
	struct fid_poll *poll;
	void *got[2] = { NULL, NULL };

	CHECK_OK(fi_poll_open(n->domain, &attr, &poll));
	CHECK_OK(fi_poll_add(poll, &n->rx->fid, 0));
	CHECK_RET(fi_poll(poll, got, 2), 1);
	CHECK(got[0] == &n->rx);
	CHECK_OK(fi_poll_del(poll, &n->rx->fid, 0));
	CHECK_OK(fi_close(&poll->fid));
}

/* The third completion meets the threshold: all three are read. */
static void check_threshold_met(struct node *n)
{
	struct fi_cq_entry buf[NMSG];
	struct timed t;

	send_self(n, 2);
	t = timed_sread(n->rx, buf, NMSG, (void *) 3, LONG_WAIT_MS);
	printf("sread, 3 of threshold 3: %zd after %" PRId64 " ms\n", t.ret,
	       t.wall_ms);
	CHECK_RET(t.ret, 3);
	CHECK(t.wall_ms < LONG_WAIT_MS / 2);
	for (int i = 0; i < 3; i++)
		CHECK(buf[i].op_context == CTX(i));
}

struct sreader {
	pthread_t thread;
	struct fid_cq *cq;
	struct timed t;
};

static void *sreader_fn(void *arg)
{
	struct sreader *r = arg;
	struct fi_cq_entry buf[1];

	r->t = timed_sread(r->cq, buf, 1, NULL, LONG_WAIT_MS);
	return NULL;
}

/* One fi_cq_signal ends the sreads of both threads blocked in one. */
static void check_signal(struct node *n)
{
	struct sreader r[2] = { { .cq = n->rx }, { .cq = n->rx } };

	for (int i = 0; i < 2; i++)
		CHECK(pthread_create(&r[i].thread, NULL, sreader_fn, &r[i]) ==
		      0);
	usleep(500 * 1000); /* both are asleep in fi_cq_sread by now */
	CHECK_OK(fi_cq_signal(n->rx));
	for (int i = 0; i < 2; i++) {
		CHECK(pthread_join(r[i].thread, NULL) == 0);
		printf("signalled sread %d: %zd after %" PRId64 " ms\n", i,
		       r[i].t.ret, r[i].t.wall_ms);
		CHECK_RET(r[i].t.ret, -FI_EAGAIN);
		CHECK(r[i].t.wall_ms < LONG_WAIT_MS / 2);
	}
	/* The signal is spent: the next sread sleeps out its timeout. */
	check_sleeps(n->rx, 1, NULL, "sread after the signal");
}

/* Cancels the receive posted as i and returns its error entry. */
static void cancel_recv(struct node *n, int i, struct fi_cq_err_entry *e)
{
	int64_t deadline = now_ms() + DEADLINE_MS;
	struct fi_cq_entry buf[1];
	ssize_t ret;

	CHECK_OK(fi_cancel(&n->ep->fid, CTX(i)));
	while ((ret = fi_cq_read(n->rx, buf, 1)) == -FI_EAGAIN)
		CHECK(now_ms() < deadline);
	CHECK_RET(ret, -FI_EAVAIL);
	/* The op: under 2.x headers, fi_cq_readerr sets src_addr itself. */
	CHECK_RET(n->rx->ops->readerr(n->rx, e, 0), 1);
	CHECK(e->err == FI_ECANCELED);
	CHECK(e->op_context == CTX(i));
	CHECK(strcasecmp(fi_cq_strerror(n->rx, e->prov_errno, e->err_data, NULL,
					0),
			 "success") != 0);
}

/* The application's err_data stays its own: nrma has no error data. */
static void check_readerr_current(struct node *n)
{
	struct fi_cq_err_entry e;
	char mine[8];

	memset(&e, 0x5a, sizeof(e));
	e.err_data = mine;
	e.err_data_size = sizeof(mine);
	cancel_recv(n, 3, &e);
	CHECK(e.err_data == mine);
	CHECK(e.err_data_size == 0);
#if ITEST_VERSION >= FI_VERSION(1, 20)
	CHECK(e.src_addr == FI_ADDR_NOTAVAIL);
#endif
}

/* An application of API 1.17 has a shorter entry: nothing past it moves. */
static void check_readerr_v1_17(void)
{
	union {
		struct fi_cq_err_entry e;
		unsigned char b[sizeof(struct fi_cq_err_entry) + 16];
	} u;
	size_t v1_17 = sizeof(struct fi_cq_err_entry);
	struct node n;

#if ITEST_VERSION >= FI_VERSION(1, 20)
	v1_17 = offsetof(struct fi_cq_err_entry, src_addr);
#endif
	node_open(&n, FI_VERSION(1, 17));
	post_recv(&n, 0);
	memset(&u, 0x5a, sizeof(u));
	u.e.err_data_size = 0;
	cancel_recv(&n, 0, &u.e);
	CHECK(u.e.err_data == NULL);
	for (size_t i = v1_17; i < sizeof(u); i++)
		CHECK(u.b[i] == 0x5a);
	node_close(&n);
}

/* An EQ takes FI_AFFINITY too. */
static void check_eq_affinity(struct node *n)
{
	struct fi_eq_attr attr = { .wait_obj = FI_WAIT_FD,
				   .flags = FI_AFFINITY };
	struct fid_eq *eq;

	CHECK_OK(fi_eq_open(n->fabric, &attr, &eq, NULL));
	CHECK_OK(fi_close(&eq->fid));
}

int main(void)
{
	struct node n;

	node_open(&n, ITEST_VERSION);
	check_eq_affinity(&n);
	check_below_threshold(&n);
	check_poll(&n);
	check_threshold_met(&n);
	check_signal(&n);
	check_readerr_current(&n);
	node_close(&n);
	check_readerr_v1_17();
	itest_pass("nrma_cq_wait");
	return 0;
}
