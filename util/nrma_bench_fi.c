/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * nrma_bench through libfabric: the same operations on an RDM endpoint of
 * any provider (nrma's notified variants need nrma).  Where the target
 * learns of an operation from a counter or from memory it makes no call
 * but the read; fi_writedata and messages need its CQ, and providers other
 * than nrma need it driven for progress.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_ext_nrma.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

#include "nrma_bench.h"
#include "nrma_try.h"

struct bench_xport {
	const struct bench_variant *v;
	struct try_node n; /* the provider's objects, opened here */
	struct fid_cntr *cntr;
	struct fid_mr *mr;
	struct fid_nrma_nset *nset;
	struct fi_nrma_ops_ep *nrma_ops;
	struct fi_nrma_nset_desc peer_set;
	uint8_t *buf; /* what peers write or read, then what we send */
	size_t max_size;
	fi_addr_t peer;
	struct bench_blob peer_blob;
	uint64_t tx_unreported, rx_count;
	bool progress_target; /* not nrma: the target drives progress */
};

static int lf_fail(const char *what, int rc)
{
	fprintf(stderr, "nrma_bench: %s: %s\n", what, fi_strerror(-rc));
	return rc ? rc : -FI_EOTHER;
}

static bool op_is_msg(enum bench_op op)
{
	return op == BENCH_OP_SEND || op == BENCH_OP_TSEND;
}

static bool op_counts(enum bench_op op)
{
	return op == BENCH_OP_WRITE_CNTR || op == BENCH_OP_READ_CNTR;
}

int bench_lf_threading(const char *name)
{
	static const char *const names[] = {
		[FI_THREAD_SAFE] = "safe",
		[FI_THREAD_DOMAIN] = "domain",
		[FI_THREAD_COMPLETION] = "completion",
		[FI_THREAD_ENDPOINT] = "endpoint",
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (names[i] && !strcmp(name, names[i]))
			return (int) i;
	return -1;
}

/* What -T asked for (parse checked it), else the provider's default. */
static enum fi_threading lf_threading(void)
{
	const char *want = getenv("NRMA_BENCH_THREADING");

	return want ? (enum fi_threading) bench_lf_threading(want) :
		      FI_THREAD_UNSPEC;
}

static int lf_getinfo_for(struct bench_xport *x, const struct bench_variant *v)
{
	struct fi_info *hints = fi_allocinfo();
	int rc;

	if (!hints)
		return -FI_ENOMEM;
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_RMA | (op_counts(v->op) ? FI_RMA_EVENT : 0) |
		      (v->op == BENCH_OP_SEND ? FI_MSG : 0) |
		      (v->op == BENCH_OP_TSEND ? FI_TAGGED : 0);
	hints->domain_attr->mr_mode = (v->no_desc ? 0 : FI_MR_LOCAL) |
				      FI_MR_VIRT_ADDR | FI_MR_ALLOCATED |
				      FI_MR_PROV_KEY;
	hints->domain_attr->threading = lf_threading();
	hints->tx_attr->op_flags = v->tx_op_flags;
	hints->fabric_attr->prov_name = strdup(v->prov);
	rc = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &x->n.info);
	fi_freeinfo(hints);
	if (rc == -FI_ENODATA)
		fprintf(stderr, "nrma_bench: no provider %s here\n", v->prov);
	return rc == -FI_ENODATA ? rc : rc ? lf_fail(v->prov, rc) : 0;
}

/* The set a WRITE_NSET variant's peers notify: one counter. */
static int lf_open_nset(struct bench_xport *x, struct bench_blob *me)
{
	struct fi_nrma_nset_attr attr = { .count = 1 };
	struct fi_nrma_ops_domain *dom_ops;
	struct fi_nrma_nset_desc desc;
	int rc;

	rc = fi_nrma_domain_ops(x->n.domain, &dom_ops);
	rc = rc	   ?:
		     fi_nrma_nset_open(dom_ops, x->n.domain, &attr, &x->nset,
				       NULL);
	rc = rc ?: fi_nrma_nset_desc(x->nset, &desc);
	rc = rc ?: fi_nrma_ep_ops(x->n.ep, &x->nrma_ops);
	me->nset_key = desc.key;
	return rc ? lf_fail("notification set", rc) : 0;
}

static int lf_open_ep(struct bench_xport *x)
{
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_DATA,
				      .size = 4096 };
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE };
	struct fi_cntr_attr cntr_attr = { .events = FI_CNTR_EVENTS_COMP };
	int rc;

	rc = fi_fabric(x->n.info->fabric_attr, &x->n.fabric, NULL);
	rc = rc ?: fi_domain(x->n.fabric, x->n.info, &x->n.domain, NULL);
	rc = rc ?: fi_av_open(x->n.domain, &av_attr, &x->n.av, NULL);
	rc = rc ?: fi_cq_open(x->n.domain, &cq_attr, &x->n.cq, NULL);
	rc = rc ?: fi_endpoint(x->n.domain, x->n.info, &x->n.ep, NULL);
	rc = rc ?: fi_ep_bind(x->n.ep, &x->n.av->fid, 0);
	rc = rc ?: fi_ep_bind(x->n.ep, &x->n.cq->fid, FI_TRANSMIT | FI_RECV);
	if (!rc && op_counts(x->v->op)) {
		rc = fi_cntr_open(x->n.domain, &cntr_attr, &x->cntr, NULL);
		rc = rc	   ?:
			     fi_ep_bind(x->n.ep, &x->cntr->fid,
					FI_REMOTE_WRITE | FI_REMOTE_READ);
	}
	rc = rc ?: fi_enable(x->n.ep);
	return rc ? lf_fail("endpoint", rc) : 0;
}

static int lf_post_recv(struct bench_xport *x)
{
	ssize_t rc = x->v->op == BENCH_OP_TSEND ?
			     fi_trecv(x->n.ep, x->buf, x->max_size,
				      fi_mr_desc(x->mr), FI_ADDR_UNSPEC, 1, 0,
				      NULL) :
			     fi_recv(x->n.ep, x->buf, x->max_size,
				     fi_mr_desc(x->mr), FI_ADDR_UNSPEC, NULL);

	return rc ? lf_fail("fi_recv", (int) rc) : 0;
}

static int lf_open(struct bench_xport **xp, const struct bench_variant *v,
		   size_t max_size, size_t max_window, struct bench_blob *me)
{
	struct bench_xport *x = calloc(1, sizeof(*x));
	int rc;

	(void) max_window;
	*xp = x;
	if (!x)
		return -FI_ENOMEM;
	x->v = v;
	x->max_size = max_size;
	x->progress_target = strcmp(v->prov, FI_NRMA_PROV_NAME_NATIVE) != 0;
	x->buf = calloc(2, max_size);
	if (!x->buf)
		return -FI_ENOMEM;
	rc = lf_getinfo_for(x, v);
	if (rc || (rc = lf_open_ep(x)))
		return rc;
	rc = fi_mr_reg(x->n.domain, x->buf, 2 * max_size,
		       FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE |
			       FI_SEND | FI_RECV,
		       0, 0, 0, &x->mr, NULL);
	if (rc)
		return lf_fail("fi_mr_reg", rc);
	if (v->op == BENCH_OP_WRITE_NSET && lf_open_nset(x, me))
		return -FI_EOTHER;
	me->addrlen = sizeof(me->addr);
	rc = fi_getname(&x->n.ep->fid, me->addr, &me->addrlen);
	me->buf_addr = x->n.info->domain_attr->mr_mode & FI_MR_VIRT_ADDR ?
			       (uintptr_t) x->buf :
			       0;
	me->buf_key = fi_mr_key(x->mr);
	if (!rc && op_is_msg(v->op))
		rc = lf_post_recv(x);
	return rc ? lf_fail("fi_getname", rc) : 0;
}

static int lf_connect(struct bench_xport *x, const struct bench_blob *peer,
		      bool initiator)
{
	(void) initiator;
	x->peer_blob = *peer;
	x->peer_set =
		(struct fi_nrma_nset_desc){ .key = peer->nset_key, .count = 1 };
	return fi_av_insert(x->n.av, peer->addr, 1, &x->peer, 0, NULL) == 1 ?
		       0 :
		       lf_fail("fi_av_insert", -FI_EINVAL);
}

static ssize_t lf_post_rma(struct bench_xport *x, uint8_t *src, size_t size,
			   uint64_t seq)
{
	const struct bench_blob *p = &x->peer_blob;
	void *desc = x->v->no_desc ? NULL : fi_mr_desc(x->mr);

	switch (x->v->op) {
	case BENCH_OP_READ_CNTR:
		return fi_read(x->n.ep, src, size, desc, x->peer, p->buf_addr,
			       p->buf_key, NULL);
	case BENCH_OP_WRITE_NSET:
		return fi_nrma_write_notify(x->nrma_ops, x->n.ep, src, size,
					    desc, x->peer, p->buf_addr,
					    p->buf_key, &x->peer_set, 0, NULL);
	case BENCH_OP_WRITEDATA:
		return fi_writedata(x->n.ep, src, size, desc, seq, x->peer,
				    p->buf_addr, p->buf_key, NULL);
	default:
		return fi_write(x->n.ep, src, size, desc, x->peer, p->buf_addr,
				p->buf_key, NULL);
	}
}

static int lf_post(struct bench_xport *x, size_t size, uint64_t seq)
{
	uint8_t *src = x->buf + x->max_size;
	void *desc = fi_mr_desc(x->mr);
	ssize_t rc;

	src[size - 1] = bench_seq_byte(seq);
	if (x->v->op == BENCH_OP_SEND)
		rc = fi_send(x->n.ep, src, size, desc, x->peer, NULL);
	else if (x->v->op == BENCH_OP_TSEND)
		rc = fi_tsend(x->n.ep, src, size, desc, x->peer, 1, NULL);
	else
		rc = lf_post_rma(x, src, size, seq);
	return rc == 0 || rc == -FI_EAGAIN ? (int) rc :
					     lf_fail("post", (int) rc);
}

static int lf_cq_error(struct bench_xport *x)
{
	struct fi_cq_err_entry err = { 0 };

	if (fi_cq_readerr(x->n.cq, &err, 0) != 1)
		return lf_fail("fi_cq_readerr", -FI_EOTHER);
	fprintf(stderr, "nrma_bench: completion error: %s (prov_errno %d)\n",
		fi_strerror(err.err), err.prov_errno);
	return -err.err;
}

/* Drains the CQ: our operations' completions, and what arrived. */
static int lf_poll(struct bench_xport *x)
{
	struct fi_cq_data_entry comp[16];
	ssize_t n;

	while ((n = fi_cq_read(x->n.cq, comp, 16)) > 0) {
		for (ssize_t i = 0; i < n; i++) {
			if (!(comp[i].flags & (FI_RECV | FI_REMOTE_WRITE))) {
				x->tx_unreported++;
				continue;
			}
			x->rx_count++;
			if (op_is_msg(x->v->op) && lf_post_recv(x))
				return -FI_EOTHER;
		}
	}
	return n == -FI_EAVAIL ? lf_cq_error(x) :
	       n == -FI_EAGAIN ? 0 :
				 lf_fail("fi_cq_read", (int) n);
}

static int lf_tx_done(struct bench_xport *x)
{
	int rc = lf_poll(x);
	int n = (int) x->tx_unreported;

	x->tx_unreported = 0;
	return rc ? rc : n;
}

static int lf_arrived(struct bench_xport *x, size_t size, uint64_t seq)
{
	uint64_t value;
	int rc;

	switch (x->v->op) {
	case BENCH_OP_WRITE_CNTR:
	case BENCH_OP_READ_CNTR:
		return fi_cntr_read(x->cntr) >= seq;
	case BENCH_OP_WRITE_NSET:
		rc = fi_nrma_nset_read(x->nset, 0, &value);
		return rc ? lf_fail("fi_nrma_nset_read", rc) : value >= seq;
	case BENCH_OP_WRITE:
		if (x->progress_target && (rc = lf_poll(x)))
			return rc;
		return ((volatile uint8_t *) x->buf)[size - 1] ==
		       bench_seq_byte(seq);
	default:
		rc = lf_poll(x);
		return rc ? rc : x->rx_count >= seq;
	}
}

static void lf_prepare(struct bench_xport *x, size_t size)
{
	memset(x->buf, 0, size);
}

static bool lf_target_idle(struct bench_xport *x)
{
	return !x->progress_target && x->v->op != BENCH_OP_WRITEDATA &&
	       !op_is_msg(x->v->op);
}

static void lf_close_fid(struct fid *fid)
{
	if (fid)
		fi_close(fid);
}

static void lf_close_all(struct bench_xport *x)
{
	if (!x)
		return;
	lf_close_fid(x->n.ep ? &x->n.ep->fid : NULL);
	lf_close_fid(x->mr ? &x->mr->fid : NULL);
	lf_close_fid(x->nset ? &x->nset->fid : NULL);
	lf_close_fid(x->cntr ? &x->cntr->fid : NULL);
	lf_close_fid(x->n.cq ? &x->n.cq->fid : NULL);
	lf_close_fid(x->n.av ? &x->n.av->fid : NULL);
	lf_close_fid(x->n.domain ? &x->n.domain->fid : NULL);
	lf_close_fid(x->n.fabric ? &x->n.fabric->fid : NULL);
	if (x->n.info)
		fi_freeinfo(x->n.info);
	free(x->buf);
	free(x);
}

const struct bench_xport_ops bench_fi_ops = {
	.open = lf_open,
	.connect = lf_connect,
	.post = lf_post,
	.tx_done = lf_tx_done,
	.arrived = lf_arrived,
	.prepare = lf_prepare,
	.target_idle = lf_target_idle,
	.close = lf_close_all,
};
