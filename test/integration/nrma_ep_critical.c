/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Critical errors (fi_endpoint(3)) between a receiver ("R") and a forked
 * sender ("S").  A device event that breaks the completion queue of R's
 * endpoint (made up with itest_inject.h) disables that endpoint: its EQ
 * gets the error (FI_EOVERRUN, prov_errno the ibv_event_type), every
 * operation it had pending ends exactly once (posted receives with
 * FI_ECANCELED, and a triggered send held for a counter that never moves
 * with FI_ECANCELED too), posts then answer -FI_EOPBADSTATE, fi_enable
 * answers the critical error, and fi_close works.  A second endpoint of
 * R's domain still talks to S.  Then a fatal device event disables that
 * one too, and the first is not told twice.
 */
#include <rdma/fi_tagged.h>
#include <rdma/fi_trigger.h>

#include "itest_inject.h"
#include "itest_rs.h"

#define SENDS 40 /* past S's credits for R: some wait at R */
#define EAGER 500
#define OTHER 100 /* the second endpoint's message, in ctx[] */

static struct fid_eq *ep_eq, *ep2_eq;

static struct fid_eq *eq_open(void)
{
	struct fi_eq_attr attr = { .wait_obj = FI_WAIT_NONE };
	struct fid_eq *eq;

	CHECK_OK(fi_eq_open(itest_fabric_fid, &attr, &eq, NULL));
	return eq;
}

static void bind_ep_eq(struct fid_ep *ep)
{
	CHECK_OK(fi_ep_bind(ep, &ep_eq->fid, 0));
}

static void bind_ep2_eq(struct fid_ep *ep)
{
	CHECK_OK(fi_ep_bind(ep, &ep2_eq->fid, 0));
}

/* The error entry that a device event leaves on eq. */
static struct fi_eq_err_entry eq_wait_err(struct fid_eq *eq, const char *what)
{
	int64_t deadline = itest_deadline();
	struct fi_eq_err_entry e = { 0 };
	struct fi_eq_entry entry;
	uint32_t event;
	ssize_t ret;

	while ((ret = fi_eq_read(eq, &event, &entry, sizeof(entry), 0)) ==
	       -FI_EAGAIN) {
		itest_check_deadline(deadline, what);
		itest_progress();
	}
	EXPECT(ret == -FI_EAVAIL, "%s: fi_eq_read returned %zd, event %u", what,
	       ret, event);
	CHECK(fi_eq_readerr(eq, &e, 0) > 0);
	return e;
}

static void eq_expect_empty(struct fid_eq *eq, const char *what)
{
	struct fi_eq_entry entry;
	uint32_t event;
	ssize_t ret;

	itest_idle(300);
	ret = fi_eq_read(eq, &event, &entry, sizeof(entry), 0);
	EXPECT(ret == -FI_EAGAIN, "%s: fi_eq_read returned %zd", what, ret);
}

/*
 * Each of count operations, from ctx index first on, ended exactly once,
 * and so did the held triggered send (context held), cancelled; returns
 * how many of the count ended in error.
 */
static size_t expect_each_once(struct itest_cq *c, size_t first, size_t count,
			       const void *held, const char *what)
{
	int64_t deadline = itest_deadline();
	bool seen[SENDS + 2] = { false }, held_seen = false;
	size_t errors = 0;

	CHECK(count <= SENDS + 2);
	while (c->count + c->ecount < count + 1) {
		itest_check_deadline(deadline, what);
		itest_progress();
	}
	for (size_t i = 0; i < count + 1; i++) {
		struct fi_cq_err_entry e;
		void *context;

		if (c->count) {
			context = itest_cq_wait(c, what).op_context;
		} else {
			e = itest_cq_wait_err(c, what);
			context = e.op_context;
			if (context == held) {
				EXPECT(!held_seen && e.err == FI_ECANCELED,
				       "%s: the held send ended with %d, "
				       "or twice",
				       what, e.err);
				held_seen = true;
				continue;
			}
			errors++;
		}
		EXPECT(CTX_INDEX(context) >= first &&
			       CTX_INDEX(context) < first + count &&
			       !seen[CTX_INDEX(context) - first],
		       "%s: context %zu unknown or ended twice", what,
		       CTX_INDEX(context));
		seen[CTX_INDEX(context) - first] = true;
	}
	itest_cq_expect_empty_at(__FILE__, __LINE__, c, 300, what);
	return errors;
}

/* R's endpoint has operations pending when its CQ breaks. */
static void r_cq_error(struct itest_node *n)
{
	const char *phase = "a broken completion queue";
	static char big[RNDV_B], eager[SENDS][EAGER], rbuf[600];
	struct ibv_cq *cq = itest_inject_last_cq();
	struct fid_cntr *never = itest_cntr_open(itest_domain());
	struct fi_triggered_context held = {
		.event_type = FI_TRIGGER_THRESHOLD,
		.trigger.threshold = { .cntr = never, .threshold = 1 },
	};
	struct fi_msg_tagged held_msg = { .addr = n->peer, .context = &held };
	struct fi_cq_err_entry ce;
	struct fi_eq_err_entry e;
	size_t failed;

	n->tx->errors_ok = n->rx->errors_ok = true;
	recv_msg(n, rbuf, sizeof(rbuf), CTX(0), phase);
	send_msg(n, big, sizeof(big), CTX(1), phase); /* S never takes it */
	for (size_t i = 0; i < SENDS; i++)
		send_msg(n, eager[i], EAGER, CTX(2 + i), phase);
	CHECK_OK(fi_tsendmsg(n->ep, &held_msg, FI_TRIGGER));
	itest_idle(300);
	itest_inject_event(IBV_EVENT_CQ_ERR, cq);
	e = eq_wait_err(ep_eq, phase);
	EXPECT(e.err == FI_EOVERRUN && e.prov_errno == IBV_EVENT_CQ_ERR &&
		       e.fid == &n->ep->fid,
	       "%s: EQ error %d (%s), prov_errno %d, fid %p (ep %p)", phase,
	       e.err, fi_strerror(e.err), e.prov_errno, (void *) e.fid,
	       (void *) &n->ep->fid);
	/* The rendezvous send waited for S: it cannot have succeeded. */
	failed = expect_each_once(n->tx, 1, 1 + SENDS, &held, "R's sends");
	EXPECT(failed >= 1, "%s: no send failed", phase);
	printf("R: %zu of %d sends ended in error\n", failed, 1 + SENDS);
	ce = itest_cq_wait_err(n->rx, "the discarded receive");
	EXPECT(ce.err == FI_ECANCELED && ce.op_context == CTX(0),
	       "%s: receive ended with %d (%s), context %p", phase, ce.err,
	       fi_strerror(ce.err), ce.op_context);
	itest_cq_expect_empty_at(__FILE__, __LINE__, n->rx, 300, phase);
	CHECK_RET(fi_send(n->ep, eager[0], EAGER, NULL, n->peer, CTX(2)),
		  -FI_EOPBADSTATE);
	CHECK_RET(fi_inject(n->ep, eager[0], 8, n->peer), -FI_EOPBADSTATE);
	CHECK_RET(fi_recv(n->ep, rbuf, sizeof(rbuf), NULL, FI_ADDR_UNSPEC,
			  CTX(0)),
		  -FI_EOPBADSTATE);
	CHECK_RET(fi_enable(n->ep), -FI_EOVERRUN);
	CHECK_RET(fi_ep_bind(n->ep, &n->tx->cq->fid, FI_TRANSMIT),
		  -FI_EOPBADSTATE);
	itest_cntr_close(never);
}

/* A second endpoint of the domain works on, until the device dies. */
static void r_device_fatal(struct itest_node *n2)
{
	const char *phase = "a fatal device event";
	char msg[EAGER];
	struct fi_eq_err_entry e;
	struct itest_comp c;

	itest_msg_fill(msg, sizeof(msg), 0x77);
	send_msg(n2, msg, sizeof(msg), CTX(OTHER), phase);
	c = itest_cq_wait(n2->tx, phase);
	EXPECT_COMP(c, CTX(OTHER), FI_SEND, 0, phase);
	await_peer("S's receive on the second endpoints");
	itest_inject_event(IBV_EVENT_DEVICE_FATAL, NULL);
	e = eq_wait_err(ep2_eq, phase);
	EXPECT(e.err == FI_EIO && e.prov_errno == IBV_EVENT_DEVICE_FATAL &&
		       e.fid == &n2->ep->fid,
	       "%s: EQ error %d (%s), prov_errno %d", phase, e.err,
	       fi_strerror(e.err), e.prov_errno);
	CHECK_RET(fi_enable(n2->ep), -FI_EIO);
	CHECK_RET(fi_send(n2->ep, msg, sizeof(msg), NULL, n2->peer, NULL),
		  -FI_EOPBADSTATE);
	eq_expect_empty(ep_eq, "the first endpoint, told once");
	eq_expect_empty(ep2_eq, "one entry for the second endpoint");
}

static void phase_r(void)
{
	const struct itest_node_opts o = { .before_enable = bind_ep_eq };
	const struct itest_node_opts o2 = { .before_enable = bind_ep2_eq };
	struct itest_node n, n2;

	ep_eq = eq_open();
	ep2_eq = eq_open();
	open_pair(&n, &o, "R");
	r_cq_error(&n);
	signal_peer();
	open_pair(&n2, &o2, "R2");
	r_device_fatal(&n2);
	itest_node_close(&n2);
	itest_node_close(&n);
	signal_peer();
	CHECK_OK(fi_close(&ep_eq->fid));
	CHECK_OK(fi_close(&ep2_eq->fid));
}

static void phase_s(void)
{
	const char *phase = "S";
	struct itest_node n, n2;
	char buf[EAGER + 100];

	open_pair(&n, NULL, "S");
	await_peer("R's endpoint disabled");
	open_pair(&n2, NULL, "S2");
	recv_msg(&n2, buf, sizeof(buf), CTX(OTHER), phase);
	EXPECT(itest_cq_wait(n2.rx, "R2's message").len == EAGER,
	       "R2's message: wrong length");
	itest_msg_check(buf, EAGER, 0x77, "R2's message");
	signal_peer();
	await_peer("R done");
	itest_node_close(&n2);
	itest_node_close(&n);
}

static void phase_critical(void)
{
	if (is_r)
		phase_r();
	else
		phase_s();
}

int main(void)
{
	static const struct rs_phase phases[] = {
		{ phase_critical, "critical errors" },
	};

	return rs_main_r_init("nrma_ep_critical", phases,
			      sizeof(phases) / sizeof(phases[0]),
			      itest_inject_init);
}
