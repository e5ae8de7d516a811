/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Connection-oriented endpoints (FI_EP_MSG) and passive endpoints, as
 * fi_cm(3) and fi_endpoint(3) describe them, between a server ("S", with
 * a passive endpoint) and a forked client ("C"):
 *   - FI_OPT_CM_DATA_SIZE, FI_BACKLOG, fi_listen;
 *   - a request refused with fi_reject: the client's error entry is
 *     FI_ECONNREFUSED with the server's data; fi_connect only once;
 *   - a request accepted: FI_CONNREQ and FI_CONNECTED carry each side's
 *     data, the server's FI_CONNECTED none; fi_getpeer and fi_getname;
 *   - messages, tagged messages, RMA, atomics, and a notified write
 *     counted by the server's counter bound to its region;
 *   - fi_shutdown: FI_SHUTDOWN on both sides, transmits refused after;
 *   - a connection to a port nobody listens on: FI_ECONNREFUSED;
 *   - an active endpoint that takes a passive endpoint's address
 *     (fi_info handle);
 *   - a request that an endpoint answers: no second endpoint or
 *     fi_reject takes it, and fi_accept works after the passive endpoint
 *     closed;
 *   - a client that dies: the server's FI_SHUTDOWN, and its send that
 *     waited for the client ends in an error entry.
 */
#include <rdma/fi_atomic.h>
#include <rdma/fi_rma.h>

#include "itest_msg.h"

#define CM_MAX	 32 /* nrma's FI_OPT_CM_DATA_SIZE */
#define BIG	 100000
#define REGION	 4096
#define TAG	 7
#define WELCOME	 "welcome"
#define HELLO	 "hello"
#define RMA_SEED 0x5eed

static struct itest_link sc_link;
static struct itest_chan chan;
static struct fi_info *info; /* FI_EP_MSG, of this side */
static struct fid_fabric *fabric;
static struct fid_domain *domain;
static struct fid_eq *eq;

/* Steps both sides reach in turn. */
enum { STEP_NAME = 1, STEP_ACCEPTED, STEP_DONE, STEP_DIE };

static struct fi_info *msg_info(uint64_t flags, const char *node,
				struct fid *handle)
{
	struct fi_info *hints = itest_hints(), *fi;

	hints->ep_attr->type = FI_EP_MSG;
	hints->caps = FI_MSG | FI_TAGGED | FI_RMA | FI_ATOMIC | FI_RMA_EVENT;
	hints->domain_attr->name = strdup(itest_device());
	hints->handle = handle;
	CHECK_OK(fi_getinfo(ITEST_VERSION, node, NULL, flags, hints, &fi));
	CHECK(fi->ep_attr->type == FI_EP_MSG);
	CHECK(!(fi->caps & (FI_SOURCE | FI_DIRECTED_RECV)));
	CHECK(fi->handle == handle);
	hints->handle = NULL;
	fi_freeinfo(hints);
	return fi;
}

static void open_fabric(void)
{
	struct fi_eq_attr attr = { .wait_obj = FI_WAIT_UNSPEC };

	info = msg_info(FI_SOURCE, itest_addr(), NULL);
	CHECK_OK(fi_fabric(info->fabric_attr, &fabric, NULL));
	CHECK_OK(fi_eq_open(fabric, &attr, &eq, NULL));
	CHECK_OK(fi_domain(fabric, info, &domain, NULL));
}

/*
 * The next EQ event, within the deadline; an error entry fails unless
 * err is given, which then receives it (and the event is 0).
 */
static uint32_t eq_wait(void *buf, size_t len, ssize_t *got,
			struct fi_eq_err_entry *err, const char *what)
{
	int64_t deadline = itest_deadline();
	struct fi_eq_cm_entry scratch;
	uint32_t event = 0;
	ssize_t ret;

	if (!buf) {
		buf = &scratch;
		len = sizeof(scratch);
	}
	while ((ret = fi_eq_sread(eq, &event, buf, len, 100, 0)) == -FI_EAGAIN)
		itest_check_deadline(deadline, what);
	if (ret == -FI_EAVAIL && err) {
		CHECK_RET(fi_eq_readerr(eq, err, 0), sizeof(*err));
		return 0;
	}
	if (ret < 0)
		FAIL("%s: fi_eq_sread returned %zd (%s)", what, ret,
		     fi_strerror((int) -ret));
	if (got)
		*got = ret;
	return event;
}

struct msg_ep {
	struct fid_ep *ep;
	struct itest_cq *cq;
};

/* An endpoint with one CQ for both directions, bound to the EQ. */
static void ep_open(struct msg_ep *e, struct fi_info *fi, const char *name)
{
	CHECK_OK(fi_endpoint(domain, fi, &e->ep, NULL));
	e->cq = itest_cq_open(domain, FI_CQ_FORMAT_TAGGED, name);
	CHECK_OK(fi_ep_bind(e->ep, &e->cq->cq->fid, FI_TRANSMIT | FI_RECV));
	CHECK_OK(fi_ep_bind(e->ep, &eq->fid, 0));
}

static void ep_close(struct msg_ep *e)
{
	CHECK_OK(fi_close(&e->ep->fid));
	itest_cq_close(e->cq);
}

static struct sockaddr_in name_of(struct fid *fid)
{
	struct sockaddr_in sin;
	size_t len = sizeof(sin);

	CHECK_OK(fi_getname(fid, &sin, &len));
	CHECK(len == sizeof(sin) && sin.sin_port);
	return sin;
}

static void check_same(const struct sockaddr_in *a, const struct sockaddr_in *b,
		       const char *what)
{
	EXPECT(a->sin_addr.s_addr == b->sin_addr.s_addr &&
		       a->sin_port == b->sin_port,
	       "%s: ports %u and %u", what, ntohs(a->sin_port),
	       ntohs(b->sin_port));
}

static void fill(uint8_t *buf, size_t len, uint8_t seed)
{
	for (size_t i = 0; i < len; i++)
		buf[i] = (uint8_t) (seed + i * 7);
}

/* Server */

struct cm_event {
	struct fi_eq_cm_entry entry;
	uint8_t data[CM_MAX];
};

static struct fi_info *wait_connreq(struct fid_pep *pep, const void *want,
				    size_t len)
{
	struct cm_event ev;
	ssize_t got;

	CHECK(eq_wait(&ev, sizeof(ev), &got, NULL, "a request") == FI_CONNREQ);
	EXPECT(got == (ssize_t) (sizeof(ev.entry) + len),
	       "FI_CONNREQ of %zd bytes, expected %zu", got,
	       sizeof(ev.entry) + len);
	CHECK(ev.entry.fid == &pep->fid);
	CHECK(ev.entry.info && ev.entry.info->handle);
	CHECK(ev.entry.info->ep_attr->type == FI_EP_MSG);
	CHECK(!len || !memcmp(ev.data, want, len));
	return ev.entry.info;
}

static void wait_cm(uint32_t want, struct fid_ep *ep, const char *what)
{
	struct cm_event ev;
	ssize_t got;

	EXPECT(eq_wait(&ev, sizeof(ev), &got, NULL, what) == want,
	       "%s: another event", what);
	EXPECT(got == sizeof(ev.entry), "%s: %zd bytes", what, got);
	CHECK(ev.entry.fid == &ep->fid);
}

static struct fid_pep *server_listen(void)
{
	struct fid_pep *pep;
	size_t size = 0, len = sizeof(size);
	int backlog = 4;

	CHECK_OK(fi_passive_ep(fabric, info, &pep, NULL));
	CHECK_RET(fi_listen(pep), -FI_ENOEQ);
	CHECK_OK(fi_pep_bind(pep, &eq->fid, 0));
	CHECK_OK(fi_getopt(&pep->fid, FI_OPT_ENDPOINT, FI_OPT_CM_DATA_SIZE,
			   &size, &len));
	EXPECT(size == CM_MAX, "FI_OPT_CM_DATA_SIZE %zu", size);
	CHECK_OK(fi_control(&pep->fid, FI_BACKLOG, &backlog));
	CHECK_OK(fi_listen(pep));
	CHECK_RET(fi_control(&pep->fid, FI_BACKLOG, &backlog), -FI_EOPBADSTATE);
	CHECK_RET(fi_listen(pep), -FI_EOPBADSTATE);
	return pep;
}

static void server_reject(struct fid_pep *pep)
{
	uint8_t want[CM_MAX], no[CM_MAX];
	struct fi_info *req;

	fill(want, sizeof(want), 'A');
	fill(no, sizeof(no), 'B');
	req = wait_connreq(pep, want, sizeof(want));
	CHECK_RET(fi_reject(pep, req->handle, no, CM_MAX + 1), -FI_EINVAL);
	CHECK_OK(fi_reject(pep, req->handle, no, sizeof(no)));
	fi_freeinfo(req);
}

/* A region whose writes a counter counts, with no call at this side. */
struct counted {
	uint64_t *buf;
	struct fid_mr *mr;
	struct fid_cntr *cntr;
};

static void counted_open(struct counted *c)
{
	struct fi_cntr_attr attr = { .events = FI_CNTR_EVENTS_COMP };
	struct iovec iov;
	struct fi_mr_attr mr_attr = { .mr_iov = &iov,
				      .iov_count = 1,
				      .access = FI_REMOTE_READ |
						FI_REMOTE_WRITE };

	c->buf = calloc(1, REGION);
	CHECK(c->buf != NULL);
	iov = (struct iovec){ c->buf, REGION };
	CHECK_OK(fi_cntr_open(domain, &attr, &c->cntr, NULL));
	CHECK_OK(fi_mr_regattr(domain, &mr_attr, FI_RMA_EVENT, &c->mr));
	CHECK_OK(fi_mr_bind(c->mr, &c->cntr->fid, FI_REMOTE_WRITE));
	CHECK_OK(fi_mr_enable(c->mr));
}

static void counted_close(struct counted *c)
{
	CHECK_OK(fi_close(&c->mr->fid));
	CHECK_OK(fi_close(&c->cntr->fid));
	free(c->buf);
}

/* What the client needs to reach the region. */
struct region_msg {
	uint64_t addr;
	uint64_t key;
	struct sockaddr_in server; /* the accepted endpoint's name */
};

static void server_traffic(struct msg_ep *e, struct counted *c,
			   const char *hello)
{
	char tagged[8] = "tagged";
	struct itest_comp comp;
	int64_t deadline;

	comp = itest_cq_wait(e->cq, "the client's message");
	EXPECT_COMP(comp, hello, FI_RECV | FI_MSG, 0, "the receive");
	/* The receive was posted before fi_accept. */
	ITEST_POST(
		fi_tsend(e->ep, tagged, sizeof(tagged), NULL, 0, TAG, tagged),
		"fi_tsend");
	comp = itest_cq_wait(e->cq, "the tagged send");
	EXPECT_COMP(comp, tagged, FI_SEND | FI_TAGGED, 0, "the tagged send");
	/* The notified write: the counter moves with no call of ours. */
	deadline = itest_deadline();
	while (fi_cntr_read(c->cntr) < 1)
		itest_check_deadline(deadline, "the notified write");
	itest_pat_check(c->buf, RMA_SEED, 0, 64, "the written region");
	itest_expect(&chan, STEP_DONE, "the client's RMA and atomics");
	EXPECT(c->buf[REGION / 8 - 1] == 40, "atomic word %" PRIu64,
	       c->buf[REGION / 8 - 1]);
	/* The read is a remote read: not counted.  The two fetching adds
	 * read and change the word: remote writes too (fi_nrma(7)). */
	EXPECT(fi_cntr_read(c->cntr) == 3, "counter %" PRIu64,
	       fi_cntr_read(c->cntr));
}

static void server_accept(struct fid_pep *pep, char *hello,
			  const struct sockaddr_in *listening)
{
	struct fi_info *req = wait_connreq(pep, HELLO, sizeof(HELLO));
	struct region_msg r;
	struct counted c;
	struct msg_ep e;
	struct sockaddr_in peer, client;
	size_t len = sizeof(peer);

	ep_open(&e, req, "S");
	counted_open(&c);
	CHECK_RET(fi_recv(e.ep, hello, 16, NULL, 0, hello), -FI_EOPBADSTATE);
	CHECK_OK(fi_enable(e.ep));
	ITEST_POST(fi_recv(e.ep, hello, 16, NULL, 0, hello), "fi_recv");
	CHECK_RET(fi_accept(e.ep, WELCOME, CM_MAX + 1), -FI_EINVAL);
	CHECK_OK(fi_accept(e.ep, WELCOME, sizeof(WELCOME)));
	wait_cm(FI_CONNECTED, e.ep, "the server's FI_CONNECTED");
	CHECK_OK(fi_getpeer(e.ep, &peer, &len));
	r = (struct region_msg){ .addr = itest_mr_addr(req, c.buf, c.buf),
				 .key = fi_mr_key(c.mr),
				 .server = name_of(&e.ep->fid) };
	check_same(&r.server, listening, "an accepted endpoint's name");
	itest_chan_write(&chan, &r, sizeof(r));
	itest_chan_read(&chan, &client, sizeof(client), "the client's name");
	check_same(&peer, &client, "fi_getpeer at the server");
	server_traffic(&e, &c, hello);
	EXPECT(!strcmp(hello, "msg"), "received '%s'", hello);
	wait_cm(FI_SHUTDOWN, e.ep, "the server's FI_SHUTDOWN");
	ep_close(&e);
	counted_close(&c);
	fi_freeinfo(req);
}

/* A passive endpoint's address, taken by an active endpoint. */
static void server_take_address(void)
{
	struct fid_pep *pep;
	struct sockaddr_in want, got;
	struct fi_info *fi;
	struct msg_ep e;

	CHECK_OK(fi_passive_ep(fabric, info, &pep, NULL));
	want = name_of(&pep->fid);
	itest_chan_write(&chan, &want, sizeof(want));
	fi = msg_info(FI_SOURCE, itest_addr(), &pep->fid);
	ep_open(&e, fi, "S taken");
	got = name_of(&e.ep->fid);
	check_same(&want, &got, "the address taken from the passive endpoint");
	CHECK_OK(fi_close(&pep->fid));
	ep_close(&e);
	fi_freeinfo(fi);
}

/*
 * The endpoint made from a request answers it, also once its passive
 * endpoint has closed.  Its client dies: the connection ends, so does
 * what waits on it.
 */
static void server_peer_dies(struct fid_pep *pep)
{
	struct fi_info *req = wait_connreq(pep, NULL, 0);
	struct fi_cq_err_entry err;
	struct fid_ep *twin;
	struct msg_ep e;
	char *big = calloc(1, BIG);

	ep_open(&e, req, "S dies");
	CHECK_RET(fi_endpoint(domain, req, &twin, NULL), -FI_EINVAL);
	CHECK_RET(fi_reject(pep, req->handle, NULL, 0), -FI_EINVAL);
	CHECK_OK(fi_close(&pep->fid));
	e.cq->errors_ok = true;
	CHECK_OK(fi_accept(e.ep, NULL, 0));
	wait_cm(FI_CONNECTED, e.ep, "FI_CONNECTED before the client dies");
	/* Nobody will receive it: it waits for the client's ACK. */
	ITEST_POST(fi_send(e.ep, big, BIG, NULL, 0, big), "fi_send");
	itest_signal(&chan, STEP_DIE);
	wait_cm(FI_SHUTDOWN, e.ep, "FI_SHUTDOWN when the client died");
	err = itest_cq_wait_err(e.cq, "the send to the dead client");
	CHECK(err.op_context == big && err.err);
	itest_cq_expect_empty(e.cq, "one entry for the send");
	ep_close(&e);
	fi_freeinfo(req);
	free(big);
}

static void server(void)
{
	struct fid_pep *pep;
	struct sockaddr_in name;
	char hello[16] = "";

	open_fabric();
	pep = server_listen();
	name = name_of(&pep->fid);
	itest_chan_write(&chan, &name, sizeof(name));
	itest_step = "fi_reject";
	server_reject(pep);
	itest_step = "fi_accept";
	server_accept(pep, hello, &name);
	itest_step = "an address taken";
	server_take_address();
	itest_step = "a client that dies";
	server_peer_dies(pep);
}

/* Client */

static void client_connect_to(struct msg_ep *e, const struct sockaddr_in *to,
			      const void *data, size_t len, const char *name)
{
	ep_open(e, info, name);
	CHECK_OK(fi_connect(e->ep, to, data, len));
}

static void client_refused(const struct sockaddr_in *server)
{
	uint8_t data[CM_MAX + 1], want[CM_MAX];
	struct fi_eq_err_entry err = { 0 };
	char buf[8];
	struct msg_ep e;

	fill(data, sizeof(data), 'A');
	fill(want, sizeof(want), 'B');
	ep_open(&e, info, "C refused");
	CHECK_OK(fi_enable(e.ep));
	CHECK_RET(fi_send(e.ep, buf, sizeof(buf), NULL, 0, NULL), -FI_ENOTCONN);
	CHECK_RET(fi_connect(e.ep, server, data, CM_MAX + 1), -FI_EINVAL);
	CHECK_OK(fi_connect(e.ep, server, data, CM_MAX));
	CHECK(eq_wait(NULL, 0, NULL, &err, "the refusal") == 0);
	EXPECT(err.err == FI_ECONNREFUSED, "error %d", err.err);
	CHECK(err.fid == &e.ep->fid);
	EXPECT(err.err_data_size == CM_MAX, "%zu bytes of reject data",
	       err.err_data_size);
	CHECK(!memcmp(err.err_data, want, CM_MAX));
	CHECK_RET(fi_connect(e.ep, server, NULL, 0), -FI_EOPBADSTATE);
	ep_close(&e);
}

static void client_traffic(struct msg_ep *e, const struct region_msg *r)
{
	uint8_t *buf = itest_guarded(REGION);
	uint64_t one = 20, fetched = 0;
	char tagged[8] = "";
	struct itest_comp comp;

	ITEST_POST(fi_send(e->ep, "msg", 4, NULL, 0, buf), "fi_send");
	comp = itest_cq_wait(e->cq, "the send");
	EXPECT_COMP(comp, buf, FI_SEND | FI_MSG, 0, "the send");
	ITEST_POST(fi_trecv(e->ep, tagged, sizeof(tagged), NULL, 0, TAG, 0,
			    tagged),
		   "fi_trecv");
	comp = itest_cq_wait(e->cq, "the tagged message");
	EXPECT_COMP(comp, tagged, FI_RECV | FI_TAGGED, 0, "the trecv");
	CHECK(!strcmp(tagged, "tagged") && comp.tag == TAG);
	itest_pat_gen(buf, RMA_SEED, 0, 64);
	ITEST_POST(fi_write(e->ep, buf, 64, NULL, 0, r->addr, r->key, buf),
		   "fi_write");
	itest_cq_wait(e->cq, "the notified write");
	memset(buf, 0, 64);
	ITEST_POST(fi_read(e->ep, buf, 64, NULL, 0, r->addr, r->key, buf),
		   "fi_read");
	itest_cq_wait(e->cq, "the read");
	itest_pat_check(buf, RMA_SEED, 0, 64, "what the read brought back");
	for (int i = 0; i < 2; i++) {
		ITEST_POST(fi_fetch_atomic(e->ep, &one, 1, NULL, &fetched, NULL,
					   0, r->addr + REGION - 8, r->key,
					   FI_UINT64, FI_SUM, &one),
			   "fi_fetch_atomic");
		itest_cq_wait(e->cq, "the fetching atomic");
		EXPECT(fetched == (uint64_t) i * 20, "fetched %" PRIu64,
		       fetched);
	}
	itest_signal(&chan, STEP_DONE);
	free(buf);
}

static void client_accepted(const struct sockaddr_in *server)
{
	struct cm_event ev;
	struct region_msg r;
	struct sockaddr_in me, peer;
	size_t len = sizeof(peer);
	struct msg_ep e;
	ssize_t got;
	char buf[8];

	client_connect_to(&e, server, HELLO, sizeof(HELLO), "C");
	CHECK(eq_wait(&ev, sizeof(ev), &got, NULL, "FI_CONNECTED") ==
	      FI_CONNECTED);
	EXPECT(got == (ssize_t) (sizeof(ev.entry) + sizeof(WELCOME)),
	       "FI_CONNECTED of %zd bytes", got);
	CHECK(ev.entry.fid == &e.ep->fid);
	CHECK(!memcmp(ev.data, WELCOME, sizeof(WELCOME)));
	itest_chan_read(&chan, &r, sizeof(r), "the server's region");
	me = name_of(&e.ep->fid);
	itest_chan_write(&chan, &me, sizeof(me));
	CHECK_OK(fi_getpeer(e.ep, &peer, &len));
	check_same(&peer, &r.server, "fi_getpeer at the client");
	client_traffic(&e, &r);
	CHECK_RET(fi_shutdown(e.ep, 1), -FI_EBADFLAGS);
	CHECK_OK(fi_shutdown(e.ep, 0));
	wait_cm(FI_SHUTDOWN, e.ep, "the client's FI_SHUTDOWN");
	CHECK_RET(fi_send(e.ep, buf, sizeof(buf), NULL, 0, NULL), -FI_ENOTCONN);
	ep_close(&e);
}

/* Nobody listens there: the device's own refusal, with no data. */
static void client_nobody_listens(void)
{
	struct fi_eq_err_entry err = { 0 };
	struct sockaddr_in to;
	struct msg_ep e;

	itest_chan_read(&chan, &to, sizeof(to), "an address nobody listens on");
	client_connect_to(&e, &to, NULL, 0, "C nobody");
	CHECK(eq_wait(NULL, 0, NULL, &err, "the refusal") == 0);
	EXPECT(err.err == FI_ECONNREFUSED, "error %d (%s)", err.err,
	       fi_strerror(err.err));
	CHECK(err.err_data_size == 0);
	ep_close(&e);
}

static void client(void *arg)
{
	struct sockaddr_in server;
	struct msg_ep e;

	(void) arg;
	chan = itest_link_child(&sc_link);
	itest_chan_read(&chan, &server, sizeof(server), "the server's name");
	open_fabric();
	itest_step = "fi_reject";
	client_refused(&server);
	itest_step = "fi_accept";
	client_accepted(&server);
	itest_step = "an address taken";
	client_nobody_listens();
	itest_step = "a client that dies";
	client_connect_to(&e, &server, NULL, 0, "C dies");
	CHECK(eq_wait(NULL, 0, NULL, NULL, "FI_CONNECTED") == FI_CONNECTED);
	itest_step = "dying";
	itest_expect_idle(&chan, STEP_DIE, itest_wait_ms(),
			  "the server's send");
	_exit(0); /* no fi_close: the kernel ends the connection */
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	itest_link_init(&sc_link);
	itest_fork("C", client, NULL);
	snprintf(itest_who, sizeof(itest_who), "S");
	chan = itest_link_parent(&sc_link);
	server();
	itest_wait_kids();
	itest_chan_close(&chan);
	CHECK_OK(fi_close(&domain->fid));
	CHECK_OK(fi_close(&eq->fid));
	CHECK_OK(fi_close(&fabric->fid));
	fi_freeinfo(info);
	itest_pass("nrma_msg_conn");
	return 0;
}
