/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Scalable endpoints (fi_scalable_ep, fi_endpoint(3) SCALABLE ENDPOINTS):
 * one name, tx_ctx_cnt transmit contexts and rx_ctx_cnt named receive
 * contexts (FI_NAMED_RX_CTX, fi_rx_addr).
 *
 * A hidden RDM endpoint, the core, holds the name: its listener, the
 * connections peers make to it and its receive buffers.  Each receive
 * context is a receive context (nrma_xfer.h) of the core that a message
 * names in its header; its completions go to the CQ and counters bound
 * to the context, which is a view of the core (same lock, no resources
 * of its own).  Each transmit context is an RDM endpoint of its own
 * (role NRMA_EP_TX_CTX): its own lock, and one queue pair per peer that
 * says, when it connects, that it is context i + 1 of the scalable
 * endpoint's name; contexts share no lock.  Reading a receive context's
 * CQ progresses the core; a transmit context's, the context.
 */
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "nrma.h"
#include "nrma_enosys.h"
#include "nrma_progress.h"
#include "nrma_recv.h"
#include "nrma_xfer.h"

/* A receive context: a view of the core, with a receive context. */
struct nrma_rxc {
	struct nrma_ep view; /* path, lock (the core's), rx CQ, counter */
	struct nrma_rx_ctx rc;
	struct nrma_sep *sep;
	size_t index;
};

struct nrma_sep {
	struct fid_ep ep_fid;
	struct nrma_domain *domain;
	struct fi_info *info;
	struct nrma_ep *core;
	struct nrma_av *av;
	size_t ntx, nrx;
	struct nrma_ep **tx;	  /* opened by fi_tx_context */
	struct nrma_rxc **rx;	  /* by fi_rx_context */
	struct nrma_rx_ctx **rcs; /* what messages name, by index */
	atomic_int ref;		  /* contexts open */
	bool enabled;
	struct nrma_ep_owner owner; /* in each transmit context */
};

static struct fi_ops_cm nrma_ctx_cm_ops;

static struct nrma_sep *sep_of_fid(struct fid *fid)
{
	return nrma_container_of(fid, struct nrma_sep, ep_fid.fid);
}

static struct nrma_rxc *rxc_of_fid(struct fid *fid)
{
	return nrma_container_of(
		nrma_container_of(fid, struct nrma_ep, path.ep_fid.fid),
		struct nrma_rxc, view);
}

static struct nrma_sep *sep_of_owner(struct nrma_ep_owner *owner)
{
	return nrma_container_of(owner, struct nrma_sep, owner);
}

/*
 * An endpoint of the scalable endpoint's: one context each way, and, for
 * a transmit context, any port (the core binds the one asked for).
 */
static int sep_ep_open(struct nrma_sep *sep, bool any_port, void *context,
		       struct fid_ep **ep_fid)
{
	struct fi_info *info = fi_dupinfo(sep->info);
	int ret;

	if (!info)
		return -FI_ENOMEM;
	info->ep_attr->tx_ctx_cnt = info->ep_attr->rx_ctx_cnt = 1;
	if (any_port && info->src_addr)
		((struct sockaddr_in *) info->src_addr)->sin_port = 0;
	ret = nrma_ep_open(&sep->domain->domain_fid, info, ep_fid, context);
	fi_freeinfo(info);
	return ret;
}

/* Transmit contexts (endpoints of their own) */

/* At fi_enable: the scalable endpoint's AV and name. */
static int sep_tx_enable(struct nrma_ep *ep)
{
	struct nrma_sep *sep = sep_of_owner(ep->owner);

	if (!sep->av)
		return -FI_ENOAV;
	if (!ep->av) {
		ep->av = sep->av;
		atomic_fetch_add(&sep->av->ref, 1);
	}
	return nrma_cm_name(sep->core->cm, &ep->name);
}

static void sep_tx_closed(struct nrma_ep *ep)
{
	struct nrma_sep *sep = sep_of_owner(ep->owner);

	pthread_mutex_lock(sep->core->lock);
	sep->tx[ep->ctx_id - 1] = NULL;
	pthread_mutex_unlock(sep->core->lock);
	atomic_fetch_sub(&sep->ref, 1);
}

/* Whether index names a context that is not open yet. */
static int sep_ctx_check(struct nrma_sep *sep, int index, bool tx)
{
	int ret = 0;

	if (index < 0 || (size_t) index >= (tx ? sep->ntx : sep->nrx))
		return -FI_EINVAL;
	pthread_mutex_lock(sep->core->lock);
	if (tx ? sep->tx[index] != NULL : sep->rx[index] != NULL)
		ret = -FI_EINVAL;
	pthread_mutex_unlock(sep->core->lock);
	return ret;
}

/*
 * Context index is tx's or rx's from now on, unless another thread took
 * it meanwhile; a receive context's messages reach it from now on.
 */
static int sep_ctx_publish(struct nrma_sep *sep, int index, struct nrma_ep *tx,
			   struct nrma_rxc *rx)
{
	int ret = 0;

	pthread_mutex_lock(sep->core->lock);
	if (tx && !sep->tx[index]) {
		sep->tx[index] = tx;
	} else if (rx && !sep->rx[index]) {
		sep->rx[index] = rx;
		sep->rcs[index] = &rx->rc;
	} else {
		ret = -FI_EINVAL;
	}
	pthread_mutex_unlock(sep->core->lock);
	if (!ret)
		atomic_fetch_add(&sep->ref, 1);
	return ret;
}

static void sep_tx_init(struct nrma_sep *sep, struct nrma_ep *ep, int index,
			const struct fi_tx_attr *attr)
{
	ep->role = NRMA_EP_TX_CTX;
	ep->owner = &sep->owner;
	ep->ctx_id = (uint16_t) (index + 1);
	ep->path.ep_fid.fid.fclass = FI_CLASS_TX_CTX;
	ep->path.ep_fid.cm = &nrma_ctx_cm_ops;
	ep->path.ep_fid.msg = &nrma_txc_msg_ops;
	ep->path.ep_fid.tagged = &nrma_txc_tagged_ops;
	ep->path.tx_op_flags = attr->op_flags;
}

static int nrma_sep_tx_ctx(struct fid_ep *sep_fid, int index,
			   struct fi_tx_attr *attr, struct fid_ep **tx_fid,
			   void *context)
{
	struct nrma_sep *sep = sep_of_fid(&sep_fid->fid);
	struct fi_tx_attr actual;
	struct fid_ep *ep_fid;
	struct nrma_ep *ep;
	int ret = tx_fid ? nrma_srx_tx_attr_set(&actual, sep->info->tx_attr,
						attr) :
			   -FI_EINVAL;

	if (!ret)
		ret = sep_ctx_check(sep, index, true);
	if (!ret)
		ret = sep_ep_open(sep, true, context, &ep_fid);
	if (ret)
		return ret;
	ep = nrma_ep_of(ep_fid);
	sep_tx_init(sep, ep, index, &actual);
	ret = sep_ctx_publish(sep, index, ep, NULL);
	if (ret) {
		ep->owner = NULL; /* never its */
		fi_close(&ep_fid->fid);
		return ret;
	}
	/* The attributes it got, as fi_endpoint(3) returns them. */
	if (attr)
		*attr = actual;
	*tx_fid = ep_fid;
	return 0;
}

/* Receive contexts (views of the core) */

/*
 * Whether another enabled receive context reports to the CQ or counter
 * whose endpoint set this is: then the core stays in it.  Called with
 * the core's lock held.
 */
static bool rxc_set_shared(const struct nrma_rxc *rxc,
			   const struct nrma_ep_set *set)
{
	for (size_t i = 0; i < rxc->sep->nrx; i++) {
		const struct nrma_rxc *o = rxc->sep->rx[i];

		if (!o || o == rxc || !o->view.enabled)
			continue;
		if ((o->view.rx_cq && &o->view.rx_cq->eps == set) ||
		    (o->view.recv_cntr && &o->view.recv_cntr->eps == set))
			return true;
	}
	return false;
}

static int rxc_bind_cq(struct nrma_rxc *rxc, struct nrma_cq *cq, uint64_t flags)
{
	if (flags & ~(FI_RECV | FI_SELECTIVE_COMPLETION))
		return -FI_EBADFLAGS;
	if (!(flags & FI_RECV) || rxc->view.rx_cq)
		return -FI_EINVAL;
	rxc->view.rx_cq = cq;
	rxc->view.rx_cq_flags = flags;
	atomic_fetch_add(&cq->ref, 1);
	return 0;
}

static int rxc_bind_cntr(struct nrma_rxc *rxc, struct nrma_cntr *cntr,
			 uint64_t flags)
{
	if (flags & ~FI_RECV)
		return -FI_EBADFLAGS;
	if (!flags || rxc->view.recv_cntr)
		return -FI_EINVAL;
	rxc->view.recv_cntr = cntr;
	atomic_fetch_add(&cntr->ref, 1);
	return 0;
}

/* A receive context reports to a CQ and a counter of its own. */
static int rxc_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	struct nrma_rxc *rxc = rxc_of_fid(fid);
	struct nrma_domain *domain = rxc->sep->domain;
	int ret = -FI_EINVAL;

	if (!bfid)
		return -FI_EINVAL;
	pthread_mutex_lock(rxc->view.lock);
	if (rxc->view.enabled)
		ret = -FI_EOPBADSTATE;
	else if (bfid->fclass == FI_CLASS_CQ &&
		 nrma_cq_of_fid(bfid)->domain == domain)
		ret = rxc_bind_cq(rxc, nrma_cq_of_fid(bfid), flags);
	else if (bfid->fclass == FI_CLASS_CNTR &&
		 nrma_cntr_of_fid(bfid)->domain == domain)
		ret = rxc_bind_cntr(rxc, nrma_cntr_of_fid(bfid), flags);
	pthread_mutex_unlock(rxc->view.lock);
	return ret;
}

/* The core leaves the sets of the CQ and counter no other context uses. */
static void rxc_leave_sets(struct nrma_rxc *rxc, bool cq, bool cntr)
{
	struct nrma_ep *core = rxc->sep->core;

	if (cq)
		nrma_ep_set_del(&rxc->view.rx_cq->eps, core,
				&rxc->view.rx_cq->wait);
	if (cntr)
		nrma_ep_set_del(&rxc->view.recv_cntr->eps, core,
				&rxc->view.recv_cntr->wait);
}

/* Which of its sets the core leaves as rxc stops reporting. */
static void rxc_disable(struct nrma_rxc *rxc)
{
	bool cq, cntr;

	pthread_mutex_lock(rxc->view.lock);
	cq = rxc->view.enabled && rxc->view.rx_cq &&
	     !rxc_set_shared(rxc, &rxc->view.rx_cq->eps);
	cntr = rxc->view.enabled && rxc->view.recv_cntr &&
	       !rxc_set_shared(rxc, &rxc->view.recv_cntr->eps);
	rxc->view.enabled = false;
	pthread_mutex_unlock(rxc->view.lock);
	rxc_leave_sets(rxc, cq, cntr);
}

/*
 * Receives need somewhere to complete; a context that is only an RMA or
 * atomic target (Open MPI's one-sided btl opens such) needs nothing.
 */
static bool rxc_receives(const struct nrma_rxc *rxc)
{
	return nrma_attr_caps_with_directions(rxc->rc.caps) & FI_RECV;
}

/*
 * Reading the context's CQ or counter progresses the core.  Enabled
 * first, so that a context closing meanwhile keeps the core in a set
 * they share; the sets are joined without the core's lock (nrma.h).
 */
static int rxc_enable(struct nrma_rxc *rxc)
{
	struct nrma_ep *view = &rxc->view, *core = rxc->sep->core;
	int ret = 0;

	pthread_mutex_lock(view->lock);
	if (view->enabled)
		ret = -FI_EOPBADSTATE;
	else if (rxc_receives(rxc) && !view->rx_cq && !view->recv_cntr)
		ret = -FI_ENOCQ;
	else
		view->enabled = true;
	pthread_mutex_unlock(view->lock);
	if (ret)
		return ret;
	if (view->rx_cq)
		ret = nrma_ep_set_add(&view->rx_cq->eps, core,
				      &view->rx_cq->wait);
	if (!ret && view->recv_cntr)
		ret = nrma_ep_set_add(&view->recv_cntr->eps, core,
				      &view->recv_cntr->wait);
	if (ret)
		rxc_disable(rxc);
	return ret;
}

static int rxc_control(struct fid *fid, int command, void *arg)
{
	struct nrma_rxc *rxc = rxc_of_fid(fid);

	switch (command) {
	case FI_ENABLE:
		return rxc_enable(rxc);
	case FI_GETOPSFLAG:
		return nrma_ep_opt_flags_get(&rxc->view.path, arg);
	case FI_SETOPSFLAG:
		return nrma_ep_opt_flags_set(&rxc->view.path, arg);
	default:
		return -FI_ENOSYS;
	}
}

/*
 * The device may still be writing into the closed context's receive
 * buffers: fi_close returns once it is done with them, so that the
 * application may free them.  Progress ends the reads, or the stall watch
 * fails their connection (FI_NRMA_STALL_MS).
 */
static void rxc_await_reads(struct nrma_ep *core)
{
	bool busy;

	for (;;) {
		pthread_mutex_lock(core->lock);
		busy = core->enabled && nrma_recv_reads_orphaned(core);
		pthread_mutex_unlock(core->lock);
		if (!busy)
			return;
		nrma_progress_ep(core);
		sched_yield();
	}
}

/*
 * What the core holds or reads for the context's receives is refused,
 * and messages that name it from now on are malformed.
 */
static int rxc_close(struct fid *fid)
{
	struct nrma_rxc *rxc = rxc_of_fid(fid);
	struct nrma_sep *sep = rxc->sep;

	rxc_disable(rxc);
	pthread_mutex_lock(sep->core->lock);
	nrma_recv_ctx_drop(&rxc->rc, sep->core);
	sep->rx[rxc->index] = NULL;
	sep->rcs[rxc->index] = NULL;
	pthread_mutex_unlock(sep->core->lock);
	rxc_await_reads(sep->core);
	if (rxc->view.rx_cq)
		atomic_fetch_sub(&rxc->view.rx_cq->ref, 1);
	if (rxc->view.recv_cntr)
		atomic_fetch_sub(&rxc->view.recv_cntr->ref, 1);
	nrma_rx_ctx_fini(&rxc->rc);
	free(rxc);
	atomic_fetch_sub(&sep->ref, 1);
	return 0;
}

static struct fi_ops nrma_rxc_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = rxc_close,
	.bind = rxc_bind,
	.control = rxc_control,
	.ops_open = nrma_no_ops_open,
};

ssize_t nrma_sep_rxc_recv(struct fid_ep *ep_fid, const struct nrma_recv_args *a)
{
	struct nrma_rxc *rxc = rxc_of_fid(&ep_fid->fid);
	ssize_t ret;

	pthread_mutex_lock(rxc->view.lock);
	ret = rxc->view.enabled && !rxc->sep->core->critical ?
		      nrma_progress_rx_ctx_recv(&rxc->rc, a) :
		      -FI_EOPBADSTATE;
	pthread_mutex_unlock(rxc->view.lock);
	return ret;
}

static ssize_t rxc_cancel(fid_t fid, void *context)
{
	struct nrma_rxc *rxc = rxc_of_fid(fid);
	ssize_t ret;

	pthread_mutex_lock(rxc->view.lock);
	ret = nrma_recv_ctx_cancel(&rxc->rc, context);
	pthread_mutex_unlock(rxc->view.lock);
	return ret;
}

static ssize_t rxc_size_left(struct fid_ep *ep_fid)
{
	struct nrma_rxc *rxc = rxc_of_fid(&ep_fid->fid);
	ssize_t left;

	pthread_mutex_lock(rxc->view.lock);
	left = rxc->view.enabled ?
		       (ssize_t) nrma_match_rx_left(&rxc->rc.match) :
		       -FI_EOPBADSTATE;
	pthread_mutex_unlock(rxc->view.lock);
	return left;
}

static struct fi_ops_ep nrma_rxc_ops = {
	.size = sizeof(struct fi_ops_ep),
	.cancel = rxc_cancel,
	.getopt = nrma_no_getopt,
	.setopt = nrma_no_setopt,
	.tx_ctx = nrma_no_tx_ctx,
	.rx_ctx = nrma_no_rx_ctx,
	.rx_size_left = rxc_size_left,
	.tx_size_left = nrma_no_size_left,
};

/* The fid: only receives, reported to its own CQ and counter. */
static void rxc_view_init(struct nrma_rxc *rxc, const struct fi_rx_attr *attr,
			  void *context)
{
	struct nrma_ep *view = &rxc->view, *core = rxc->sep->core;

	view->path = (struct nrma_ep_path){
		.ep_fid = {
			.fid = { .fclass = FI_CLASS_RX_CTX,
				 .context = context,
				 .ops = &nrma_rxc_fi_ops },
			.ops = &nrma_rxc_ops,
			.cm = &nrma_ctx_cm_ops,
			.msg = &nrma_srx_msg_ops,
			.tagged = &nrma_srx_tagged_ops,
			.rma = &nrma_no_rma_ops,
			.atomic = &nrma_no_atomic_ops,
			.collective = &nrma_no_collective_ops,
		},
		.ep = view,
		.rx_op_flags = attr->op_flags,
	};
	view->domain = core->domain;
	view->info = core->info;
	view->lock = core->lock;
	rxc->rc.reporter = view;
}

static int nrma_sep_rx_ctx(struct fid_ep *sep_fid, int index,
			   struct fi_rx_attr *want, struct fid_ep **rx_fid,
			   void *context)
{
	struct nrma_sep *sep = sep_of_fid(&sep_fid->fid);
	struct fi_rx_attr attr;
	struct nrma_rxc *rxc;
	int ret =
		rx_fid ? nrma_srx_rx_attr_set(&attr, sep->info->rx_attr, want) :
			 -FI_EINVAL;

	if (!ret)
		ret = sep_ctx_check(sep, index, false);
	if (ret)
		return ret;
	rxc = calloc(1, sizeof(*rxc));
	if (!rxc)
		return -FI_ENOMEM;
	rxc->sep = sep;
	rxc->index = (size_t) index;
	ret = nrma_rx_ctx_init(&rxc->rc, attr.size, attr.caps, attr.iov_limit);
	if (!ret)
		ret = nrma_rx_ctx_join(&rxc->rc, sep->core);
	if (!ret) {
		rxc_view_init(rxc, &attr, context);
		ret = sep_ctx_publish(sep, index, NULL, rxc);
	}
	if (ret) {
		nrma_rx_ctx_fini(&rxc->rc);
		free(rxc);
		return ret;
	}
	if (want)
		*want = attr;
	*rx_fid = &rxc->view.path.ep_fid;
	return 0;
}

/* The scalable endpoint */

static int nrma_sep_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	struct nrma_sep *sep = sep_of_fid(fid);
	struct nrma_av *av;
	int ret = 0;

	if (!bfid || bfid->fclass != FI_CLASS_AV)
		return -FI_EINVAL;
	if (flags)
		return -FI_EBADFLAGS;
	av = nrma_av_of_fid(bfid);
	if (av->domain != sep->domain)
		return -FI_EINVAL;
	pthread_mutex_lock(sep->core->lock);
	if (sep->enabled)
		ret = -FI_EOPBADSTATE;
	else if (sep->av)
		ret = -FI_EINVAL;
	else
		sep->av = sep->core->av = av; /* the core's reference */
	pthread_mutex_unlock(sep->core->lock);
	if (!ret)
		atomic_fetch_add(&av->ref, 1);
	return ret;
}

/* Enabled last: its contexts are (fi_endpoint(3)). */
static int nrma_sep_control(struct fid *fid, int command, void *arg)
{
	struct nrma_sep *sep = sep_of_fid(fid);
	int ret;

	(void) arg;
	if (command != FI_ENABLE)
		return -FI_ENOSYS;
	if (!sep->av)
		return -FI_ENOAV;
	ret = nrma_ep_enable(sep->core);
	if (!ret)
		sep->enabled = true;
	return ret;
}

static void sep_free(struct nrma_sep *sep)
{
	fi_freeinfo(sep->info);
	free(sep->tx);
	free(sep->rx);
	free(sep->rcs);
	free(sep);
}

static int nrma_sep_close(struct fid *fid)
{
	struct nrma_sep *sep = sep_of_fid(fid);
	int ret;

	if (atomic_load(&sep->ref))
		return -FI_EBUSY;
	ret = fi_close(&sep->core->path.ep_fid.fid);
	if (!ret)
		sep_free(sep);
	return ret;
}

static struct fi_ops nrma_sep_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = nrma_sep_close,
	.bind = nrma_sep_bind,
	.control = nrma_sep_control,
	.ops_open = nrma_no_ops_open,
};

static struct fi_ops_ep nrma_sep_ops = {
	.size = sizeof(struct fi_ops_ep),
	.cancel = nrma_no_cancel,
	.getopt = nrma_no_getopt,
	.setopt = nrma_no_setopt,
	.tx_ctx = nrma_sep_tx_ctx,
	.rx_ctx = nrma_sep_rx_ctx,
	.rx_size_left = nrma_no_size_left,
	.tx_size_left = nrma_no_size_left,
};

/* The scalable endpoint's name is its core's. */
static int nrma_sep_getname(fid_t fid, void *addr, size_t *addrlen)
{
	return nrma_ep_getname(&sep_of_fid(fid)->core->path.ep_fid.fid, addr,
			       addrlen);
}

static int nrma_sep_setname(fid_t fid, void *addr, size_t addrlen)
{
	return nrma_ep_setname(&sep_of_fid(fid)->core->path.ep_fid.fid, addr,
			       addrlen);
}

static struct fi_ops_cm nrma_sep_cm_ops = {
	.size = sizeof(struct fi_ops_cm),
	.setname = nrma_sep_setname,
	.getname = nrma_sep_getname,
	.getpeer = nrma_no_getpeer,
	.connect = nrma_no_connect,
	.listen = nrma_no_listen,
	.accept = nrma_no_accept,
	.reject = nrma_no_reject,
	.shutdown = nrma_no_shutdown,
	.join = nrma_no_join,
};

/* A context's name is its scalable endpoint's. */
static int ctx_getname(fid_t fid, void *addr, size_t *addrlen)
{
	struct nrma_sep *sep = fid->fclass == FI_CLASS_RX_CTX ?
				       rxc_of_fid(fid)->sep :
				       sep_of_owner(nrma_ep_of_fid(fid)->owner);

	return nrma_sep_getname(&sep->ep_fid.fid, addr, addrlen);
}

static int ctx_setname(fid_t fid, void *addr, size_t addrlen)
{
	(void) fid;
	(void) addr;
	(void) addrlen;
	return -FI_EOPBADSTATE; /* the scalable endpoint's to set */
}

static struct fi_ops_cm nrma_ctx_cm_ops = {
	.size = sizeof(struct fi_ops_cm),
	.setname = ctx_setname,
	.getname = ctx_getname,
	.getpeer = nrma_no_getpeer,
	.connect = nrma_no_connect,
	.listen = nrma_no_listen,
	.accept = nrma_no_accept,
	.reject = nrma_no_reject,
	.shutdown = nrma_no_shutdown,
	.join = nrma_no_join,
};

static int sep_info_check(const struct fi_info *info)
{
	const struct fi_domain_attr *dom = info ? info->domain_attr : NULL;

	if (!info || !info->ep_attr || !info->tx_attr || !info->rx_attr ||
	    !dom || info->ep_attr->type != FI_EP_RDM ||
	    info->ep_attr->tx_ctx_cnt > NRMA_SEP_CTX_MAX ||
	    info->ep_attr->rx_ctx_cnt > NRMA_SEP_CTX_MAX ||
	    info->ep_attr->tx_ctx_cnt == FI_SHARED_CONTEXT ||
	    info->ep_attr->rx_ctx_cnt == FI_SHARED_CONTEXT)
		return -FI_EINVAL;
	return 0;
}

/* The hidden endpoint that holds the name. */
static int sep_core_open(struct nrma_sep *sep)
{
	struct fid_ep *core_fid;
	int ret = sep_ep_open(sep, false, sep, &core_fid);

	if (ret)
		return ret;
	sep->core = nrma_ep_of(core_fid);
	sep->core->role = NRMA_EP_SEP_CORE;
	nrma_xfer_name_rx(sep->core, sep->rcs, sep->nrx);
	return 0;
}

static int sep_alloc(struct nrma_sep *sep, const struct fi_info *info)
{
	sep->ntx = info->ep_attr->tx_ctx_cnt ? info->ep_attr->tx_ctx_cnt : 1;
	sep->nrx = info->ep_attr->rx_ctx_cnt ? info->ep_attr->rx_ctx_cnt : 1;
	sep->info = fi_dupinfo(info);
	sep->tx = calloc(sep->ntx, sizeof(*sep->tx));
	sep->rx = calloc(sep->nrx, sizeof(*sep->rx));
	sep->rcs = calloc(sep->nrx, sizeof(*sep->rcs));
	return sep->info && sep->tx && sep->rx && sep->rcs ? 0 : -FI_ENOMEM;
}

int nrma_sep_open(struct fid_domain *domain_fid, struct fi_info *info,
		  struct fid_ep **sep_fid, void *context)
{
	struct nrma_sep *sep;
	int ret = sep_info_check(info);

	if (ret)
		return ret;
	sep = calloc(1, sizeof(*sep));
	if (!sep)
		return -FI_ENOMEM;
	sep->domain = nrma_domain_of(domain_fid);
	sep->owner = (struct nrma_ep_owner){ .enable = sep_tx_enable,
					     .closed = sep_tx_closed };
	ret = sep_alloc(sep, info);
	if (!ret)
		ret = sep_core_open(sep);
	if (ret) {
		sep_free(sep);
		return ret;
	}
	sep->ep_fid.fid.fclass = FI_CLASS_SEP;
	sep->ep_fid.fid.context = context;
	sep->ep_fid.fid.ops = &nrma_sep_fi_ops;
	sep->ep_fid.ops = &nrma_sep_ops;
	sep->ep_fid.cm = &nrma_sep_cm_ops;
	sep->ep_fid.msg = &nrma_no_msg_ops;
	sep->ep_fid.tagged = &nrma_no_tagged_ops;
	sep->ep_fid.rma = &nrma_no_rma_ops;
	sep->ep_fid.atomic = &nrma_no_atomic_ops;
	sep->ep_fid.collective = &nrma_no_collective_ops;
	*sep_fid = &sep->ep_fid;
	return 0;
}
