/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Critical errors (fi_endpoint(3)) between a receiver ("R") and a forked
 * sender ("S").  A device event that breaks the completion queue of R's
 * endpoint (made up with itest_inject.h) disables that endpoint: its EQ
 * gets the error (FI_EOVERRUN, prov_errno the ibv_event_type), every
 * operation it had pending ends exactly once (posted receives with
 * FI_ECANCELED, a triggered send held for a counter that never moves
 * with FI_ECANCELED too, and writes to S's memory that nothing reaped
 * before, in error), posts then answer -FI_EOPBADSTATE, fi_enable
 * answers the critical error, and fi_close works.  A second endpoint of
 * R's domain still talks to S.  Then a fatal device event disables that
 * one too, and the first is not told twice.
 */
#include <unistd.h>

#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>
#include <rdma/fi_trigger.h>

#include "itest_inject.h"
#include "itest_rs.h"

#define SENDS  40 /* past S's credits for R: some wait at R */
#define WRITES 8  /* 8-byte writes, after the sends in ctx[] */
#define EAGER  500
#define OTHER  100 /* the second endpoint's message, in ctx[] */
#define WARM   101 /* the write that has R learn S's key, in ctx[] */

/* Where R may write in S's memory. */
struct target {
	uint64_t addr, key;
};

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

/*
 * The error entry that a device event leaves on eq; with reap false,
 * nothing is progressed meanwhile, so that what the device completed
 * stays unread.
 */
static struct fi_eq_err_entry eq_wait_err(struct fid_eq *eq, bool reap,
					  const char *what)
{
	int64_t deadline = itest_deadline();
	struct fi_eq_err_entry e = { 0 };
	struct fi_eq_entry entry;
	uint32_t event;
	ssize_t ret;

	while ((ret = fi_eq_read(eq, &event, &entry, sizeof(entry), 0)) ==
	       -FI_EAGAIN) {
		itest_check_deadline(deadline, what);
		if (reap)
			itest_progress();
		else
			usleep(1000);
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
 * and so did the held triggered send (context held), cancelled; failed[i]
 * says whether the operation at first + i ended in error.
 */
static void expect_each_once(struct itest_cq *c, size_t first, size_t count,
			     const void *held, bool *failed, const char *what)
{
	int64_t deadline = itest_deadline();
	bool seen[SENDS + WRITES + 2] = { false }, held_seen = false;

	CHECK(count <= SENDS + WRITES + 2);
	while (c->count + c->ecount < count + 1) {
		itest_check_deadline(deadline, what);
		itest_progress();
	}
	for (size_t i = 0; i < count + 1; i++) {
		struct fi_cq_err_entry e;
		bool error = !c->count;
		void *context;

		if (!error) {
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
		}
		EXPECT(CTX_INDEX(context) >= first &&
			       CTX_INDEX(context) < first + count &&
			       !seen[CTX_INDEX(context) - first],
		       "%s: context %zu unknown or ended twice", what,
		       CTX_INDEX(context));
		seen[CTX_INDEX(context) - first] = true;
		failed[CTX_INDEX(context) - first] = error;
	}
	itest_cq_expect_empty_at(__FILE__, __LINE__, c, 300, what);
}

/*
 * R learns S's key with a first write, reaped: the writes after it go
 * at once, with nothing held.
 */
static struct target r_target(struct itest_node *n, const char *phase)
{
	static uint64_t word = 1;
	struct itest_comp c;
	struct target t;
	ssize_t ret;

	itest_chan_read(&chan, &t, sizeof(t), "S's key");
	while ((ret = fi_write(n->ep, &word, sizeof(word), NULL, n->peer,
			       t.addr, t.key, CTX(WARM))) == -FI_EAGAIN)
		itest_progress(); /* the connection is being made */
	CHECK_OK(ret);
	c = itest_cq_wait(n->tx, phase);
	EXPECT_COMP(c, CTX(WARM), FI_RMA | FI_WRITE, 0, phase);
	return t;
}

/* Writes that the device ends but no one reaps before the CQ breaks. */
static void r_write_unreaped(struct itest_node *n, const struct target *t)
{
	static uint64_t words[WRITES];

	for (size_t i = 0; i < WRITES; i++)
		CHECK_OK(fi_write(n->ep, &words[i], sizeof(words[i]), NULL,
				  n->peer, t->addr + 8 * i, t->key,
				  CTX(2 + SENDS + i)));
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
	struct target t = r_target(n, phase);
	bool failed[1 + SENDS + WRITES];
	struct fi_cq_err_entry ce;
	struct fi_eq_err_entry e;
	size_t sends_failed = 0;

	n->tx->errors_ok = n->rx->errors_ok = true;
	recv_msg(n, rbuf, sizeof(rbuf), CTX(0), phase);
	send_msg(n, big, sizeof(big), CTX(1), phase); /* S never takes it */
	for (size_t i = 0; i < SENDS; i++)
		send_msg(n, eager[i], EAGER, CTX(2 + i), phase);
	CHECK_OK(fi_tsendmsg(n->ep, &held_msg, FI_TRIGGER));
	itest_idle(300);
	r_write_unreaped(n, &t);
	itest_inject_event(IBV_EVENT_CQ_ERR, cq);
	e = eq_wait_err(ep_eq, false, phase);
	EXPECT(e.err == FI_EOVERRUN && e.prov_errno == IBV_EVENT_CQ_ERR &&
		       e.fid == &n->ep->fid,
	       "%s: EQ error %d (%s), prov_errno %d, fid %p (ep %p)", phase,
	       e.err, fi_strerror(e.err), e.prov_errno, (void *) e.fid,
	       (void *) &n->ep->fid);
	/* The rendezvous send waited for S: it cannot have succeeded. */
	expect_each_once(n->tx, 1, 1 + SENDS + WRITES, &held, failed,
			 "R's sends and writes");
	for (size_t i = 0; i < 1 + SENDS; i++)
		sends_failed += failed[i];
	EXPECT(sends_failed >= 1, "%s: no send failed", phase);
	printf("R: %zu of %d sends ended in error\n", sends_failed, 1 + SENDS);
	for (size_t i = 1 + SENDS; i < 1 + SENDS + WRITES; i++)
		EXPECT(failed[i], "%s: write %zu succeeded, never reaped",
		       phase, i - 1 - SENDS);
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
	e = eq_wait_err(ep2_eq, true, phase);
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

/* Memory R writes to: its address and key go over the pipe. */
static struct fid_mr *s_expose(void)
{
	static uint64_t words[WRITES];
	struct fid_mr *mr;
	struct target t = { .addr = itest_mr_addr(itest_info, words, words) };

	CHECK_OK(fi_mr_reg(itest_domain(), words, sizeof(words),
			   FI_REMOTE_WRITE, 0, 0, 0, &mr, NULL));
	t.key = fi_mr_key(mr);
	itest_chan_write(&chan, &t, sizeof(t));
	return mr;
}

static void phase_s(void)
{
	const char *phase = "S";
	struct itest_node n, n2;
	char buf[EAGER + 100];
	struct fid_mr *mr;

	open_pair(&n, NULL, "S");
	mr = s_expose();
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
	CHECK_OK(fi_close(&mr->fid));
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

	itest_extra_caps = FI_RMA; /* R writes to S's memory */
	return rs_main_r_init("nrma_ep_critical", phases,
			      sizeof(phases) / sizeof(phases[0]),
			      itest_inject_init);
}
