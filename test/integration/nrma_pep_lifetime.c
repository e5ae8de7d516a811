/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The lifetime of a connection request (an FI_CONNREQ's info->handle)
 * against its passive endpoint, in every order of close, take
 * (fi_endpoint), accept and reject that fi_cm(3) lets an application
 * reach; run under AddressSanitizer, a use of a request that is gone is a
 * failure.  One process is both sides: clients connect to a passive
 * endpoint, each order answers (or abandons) the request, and the client
 * sees the outcome the order promises:
 *   - the passive endpoint closes with the request unread in the EQ, or
 *     read and unanswered: the client is refused, fi_endpoint on the
 *     request says -FI_ECONNABORTED once and -FI_EINVAL after;
 *   - closed and never answered: the fabric's close frees the request;
 *   - fi_reject, then fi_reject or fi_endpoint again: -FI_EINVAL;
 *   - fi_endpoint, then fi_reject or fi_endpoint again: -FI_EINVAL; the
 *     passive endpoint closes, fi_accept still connects;
 *   - fi_endpoint, then the endpoint closes unaccepted: refused;
 *   - fi_endpoint and fi_reject from two threads at once: exactly one
 *     wins, and the client sees that one's answer.
 */
#include <pthread.h>

#include "itest_msg.h"

#define RACE_ROUNDS 20

static struct fi_info *info;
static struct fid_fabric *fabric;
static struct fid_domain *domain;
static struct fid_eq *srv_eq; /* the passive endpoint's and its answers' */
static struct fid_eq *cli_eq; /* the clients' */

static struct fi_info *msg_info(void)
{
	struct fi_info *hints = itest_hints(), *fi;

	hints->ep_attr->type = FI_EP_MSG;
	hints->caps = FI_MSG;
	hints->domain_attr->name = strdup(itest_device());
	CHECK_OK(fi_getinfo(ITEST_VERSION, itest_addr(), NULL, FI_SOURCE, hints,
			    &fi));
	fi_freeinfo(hints);
	return fi;
}

static struct fid_eq *eq_open(void)
{
	struct fi_eq_attr attr = { .wait_obj = FI_WAIT_UNSPEC };
	struct fid_eq *eq;

	CHECK_OK(fi_eq_open(fabric, &attr, &eq, NULL));
	return eq;
}

static void open_all(void)
{
	info = msg_info();
	CHECK_OK(fi_fabric(info->fabric_attr, &fabric, NULL));
	CHECK_OK(fi_domain(fabric, info, &domain, NULL));
	srv_eq = eq_open();
	cli_eq = eq_open();
}

/*
 * The next event of eq within the deadline: its type, or 0 for an error
 * entry, whose error goes to *err.
 */
static uint32_t eq_next(struct fid_eq *eq, struct fi_eq_cm_entry *entry,
			int *err, const char *what)
{
	int64_t deadline = itest_deadline();
	struct fi_eq_err_entry e = { 0 };
	uint32_t event = 0;
	ssize_t ret;

	while ((ret = fi_eq_sread(eq, &event, entry, sizeof(*entry), 100, 0)) ==
	       -FI_EAGAIN)
		itest_check_deadline(deadline, what);
	if (ret == -FI_EAVAIL) {
		CHECK_RET(fi_eq_readerr(eq, &e, 0), sizeof(e));
		*err = e.err;
		return 0;
	}
	EXPECT(ret >= (ssize_t) sizeof(entry->fid), "%s: fi_eq_sread %zd", what,
	       ret);
	return event;
}

static struct fid_pep *listen_new(struct sockaddr_in *name)
{
	struct fid_pep *pep;
	size_t len = sizeof(*name);

	CHECK_OK(fi_passive_ep(fabric, info, &pep, NULL));
	CHECK_OK(fi_pep_bind(pep, &srv_eq->fid, 0));
	CHECK_OK(fi_listen(pep));
	CHECK_OK(fi_getname(&pep->fid, name, &len));
	return pep;
}

static struct fid_ep *ep_new(struct fi_info *fi, struct fid_eq *eq,
			     struct fid_cq **cq)
{
	struct fi_cq_attr attr = { .format = FI_CQ_FORMAT_CONTEXT };
	struct fid_ep *ep;

	CHECK_OK(fi_endpoint(domain, fi, &ep, NULL));
	CHECK_OK(fi_cq_open(domain, &attr, cq, NULL));
	CHECK_OK(fi_ep_bind(ep, &(*cq)->fid, FI_TRANSMIT | FI_RECV));
	CHECK_OK(fi_ep_bind(ep, &eq->fid, 0));
	return ep;
}

static void ep_free(struct fid_ep *ep, struct fid_cq *cq)
{
	CHECK_OK(fi_close(&ep->fid));
	CHECK_OK(fi_close(&cq->fid));
}

struct client {
	struct fid_ep *ep;
	struct fid_cq *cq;
};

static void client_connect(struct client *c, const struct sockaddr_in *to)
{
	c->ep = ep_new(info, cli_eq, &c->cq);
	CHECK_OK(fi_connect(c->ep, to, NULL, 0));
}

/* The client's answer: connected (true) or refused (false); it closes. */
static bool client_outcome(struct client *c, const char *what)
{
	struct fi_eq_cm_entry entry;
	int err = 0;
	uint32_t event = eq_next(cli_eq, &entry, &err, what);

	EXPECT(event == FI_CONNECTED || (!event && err == FI_ECONNREFUSED),
	       "%s: event %u, error %d", what, event, err);
	ep_free(c->ep, c->cq);
	return event == FI_CONNECTED;
}

static struct fi_info *connreq_next(struct fid_pep *pep)
{
	struct fi_eq_cm_entry entry;
	int err = 0;

	EXPECT(eq_next(srv_eq, &entry, &err, "FI_CONNREQ") == FI_CONNREQ,
	       "error %d", err);
	CHECK(entry.fid == &pep->fid && entry.info && entry.info->handle);
	return entry.info;
}

/* Waits until the request is in the EQ, and leaves it there. */
static void connreq_peek(void)
{
	int64_t deadline = itest_deadline();
	struct fi_eq_cm_entry entry;
	uint32_t event;
	ssize_t ret;

	while ((ret = fi_eq_read(srv_eq, &event, &entry, sizeof(entry),
				 FI_PEEK)) == -FI_EAGAIN)
		itest_check_deadline(deadline, "a request to peek at");
	EXPECT(ret > 0 && event == FI_CONNREQ, "peek: %zd, event %u", ret,
	       event);
}

/* An endpoint for a request that must not be taken. */
static void take_refused(struct fi_info *req, int want)
{
	struct fid_ep *ep = NULL;

	CHECK_RET(fi_endpoint(domain, req, &ep, NULL), want);
	CHECK(ep == NULL);
}

/* The passive endpoint closes with its request still in the EQ. */
static void close_unread(void)
{
	struct sockaddr_in name;
	struct fid_pep *pep = listen_new(&name);
	struct client c;
	struct fi_info *req;

	client_connect(&c, &name);
	connreq_peek();
	CHECK_OK(fi_close(&pep->fid));
	EXPECT(!client_outcome(&c, "close unread"), "connected");
	req = connreq_next(pep);
	take_refused(req, -FI_ECONNABORTED);
	take_refused(req, -FI_EINVAL);
	fi_freeinfo(req);
}

/* ...with its request read and unanswered; or never answered at all. */
static void close_unanswered(bool answer)
{
	struct sockaddr_in name;
	struct fid_pep *pep = listen_new(&name);
	struct client c;
	struct fi_info *req;

	client_connect(&c, &name);
	req = connreq_next(pep);
	CHECK_OK(fi_close(&pep->fid));
	EXPECT(!client_outcome(&c, "close unanswered"), "connected");
	if (answer) {
		take_refused(req, -FI_ECONNABORTED);
		take_refused(req, -FI_EINVAL);
	}
	fi_freeinfo(req); /* unanswered: the fabric's close frees it */
}

static void reject_then_use(void)
{
	struct sockaddr_in name;
	struct fid_pep *pep = listen_new(&name), *other;
	struct sockaddr_in other_name;
	struct client c;
	struct fi_info *req;

	other = listen_new(&other_name);
	client_connect(&c, &name);
	req = connreq_next(pep);
	CHECK_RET(fi_reject(other, req->handle, NULL, 0), -FI_EINVAL);
	CHECK_OK(fi_reject(pep, req->handle, NULL, 0));
	EXPECT(!client_outcome(&c, "rejected"), "connected");
	CHECK_RET(fi_reject(pep, req->handle, NULL, 0), -FI_EINVAL);
	take_refused(req, -FI_EINVAL);
	fi_freeinfo(req);
	CHECK_OK(fi_close(&other->fid));
	CHECK_OK(fi_close(&pep->fid));
}

/*
 * The server's FI_CONNECTED for ep, then its FI_SHUTDOWN: the client
 * closed once it saw its answer.
 */
static void server_connected(struct fid_ep *ep)
{
	struct fi_eq_cm_entry entry;
	int err = 0;

	EXPECT(eq_next(srv_eq, &entry, &err, "FI_CONNECTED") == FI_CONNECTED,
	       "error %d", err);
	CHECK(entry.fid == &ep->fid);
	EXPECT(eq_next(srv_eq, &entry, &err, "FI_SHUTDOWN") == FI_SHUTDOWN,
	       "error %d", err);
	CHECK(entry.fid == &ep->fid);
}

/* A client's request to a new passive endpoint, taken by an endpoint. */
struct taken {
	struct fid_pep *pep;
	struct client c;
	struct fi_info *req;
	struct fid_ep *ep;
	struct fid_cq *cq;
};

static void take_new(struct taken *t)
{
	struct sockaddr_in name;

	t->pep = listen_new(&name);
	client_connect(&t->c, &name);
	t->req = connreq_next(t->pep);
	t->ep = ep_new(t->req, srv_eq, &t->cq);
}

static void take_then_use(void)
{
	struct taken t;

	take_new(&t);
	CHECK_RET(fi_reject(t.pep, t.req->handle, NULL, 0), -FI_EINVAL);
	take_refused(t.req, -FI_EINVAL);
	CHECK_OK(fi_close(&t.pep->fid));
	CHECK_OK(fi_accept(t.ep, NULL, 0));
	EXPECT(client_outcome(&t.c, "accepted after the close"), "refused");
	server_connected(t.ep);
	take_refused(t.req, -FI_EINVAL);
	fi_freeinfo(t.req);
	ep_free(t.ep, t.cq);
}

static void take_then_close(void)
{
	struct taken t;

	take_new(&t);
	ep_free(t.ep, t.cq);
	EXPECT(!client_outcome(&t.c, "taken, closed"), "connected");
	CHECK_RET(fi_reject(t.pep, t.req->handle, NULL, 0), -FI_EINVAL);
	take_refused(t.req, -FI_EINVAL);
	fi_freeinfo(t.req);
	CHECK_OK(fi_close(&t.pep->fid));
}

struct race {
	struct fid_pep *pep;
	struct fi_info *req;
	pthread_barrier_t go;
	int rejected;
};

static void *race_reject(void *arg)
{
	struct race *r = arg;

	pthread_barrier_wait(&r->go);
	r->rejected = fi_reject(r->pep, r->req->handle, NULL, 0);
	return NULL;
}

/* fi_endpoint here, fi_reject in a thread: one wins, the client agrees. */
static void take_reject_race(struct fid_pep *pep,
			     const struct sockaddr_in *name)
{
	struct race r = { .pep = pep };
	struct fid_ep *ep = NULL;
	struct fid_cq *cq = NULL;
	struct client c;
	pthread_t thread;
	int taken;

	client_connect(&c, name);
	r.req = connreq_next(pep);
	CHECK(!pthread_barrier_init(&r.go, NULL, 2));
	CHECK(!pthread_create(&thread, NULL, race_reject, &r));
	pthread_barrier_wait(&r.go);
	taken = fi_endpoint(domain, r.req, &ep, NULL);
	CHECK(!pthread_join(thread, NULL));
	pthread_barrier_destroy(&r.go);
	EXPECT((taken == 0) != (r.rejected == 0),
	       "fi_endpoint %d, fi_reject %d", taken, r.rejected);
	EXPECT(!taken || taken == -FI_EINVAL, "fi_endpoint %d", taken);
	EXPECT(!r.rejected || r.rejected == -FI_EINVAL, "fi_reject %d",
	       r.rejected);
	if (!taken) {
		struct fi_cq_attr attr = { .format = FI_CQ_FORMAT_CONTEXT };

		CHECK_OK(fi_cq_open(domain, &attr, &cq, NULL));
		CHECK_OK(fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV));
		CHECK_OK(fi_ep_bind(ep, &srv_eq->fid, 0));
		CHECK_OK(fi_accept(ep, NULL, 0));
	}
	EXPECT(client_outcome(&c, "the race's answer") == !taken,
	       "fi_endpoint said %d", taken);
	if (!taken) {
		server_connected(ep);
		ep_free(ep, cq);
	}
	fi_freeinfo(r.req);
}

int main(void)
{
	struct sockaddr_in name;
	struct fid_pep *pep;

	open_all();
	itest_step = "closed, request unread";
	close_unread();
	itest_step = "closed, request unanswered";
	close_unanswered(true);
	itest_step = "closed, request never answered";
	close_unanswered(false);
	itest_step = "rejected, then used";
	reject_then_use();
	itest_step = "taken, then used";
	take_then_use();
	itest_step = "taken, then closed";
	take_then_close();
	itest_step = "taken and rejected at once";
	pep = listen_new(&name);
	for (int i = 0; i < RACE_ROUNDS; i++)
		take_reject_race(pep, &name);
	CHECK_OK(fi_close(&pep->fid));
	CHECK_OK(fi_close(&srv_eq->fid));
	CHECK_OK(fi_close(&cli_eq->fid));
	CHECK_OK(fi_close(&domain->fid));
	CHECK_OK(fi_close(&fabric->fid));
	fi_freeinfo(info);
	itest_pass("nrma_pep_lifetime");
	return 0;
}
