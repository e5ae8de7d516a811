/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Shared contexts (fi_endpoint(3), SHARED CONTEXTS).  A shared receive
 * context (fi_srx_context) is a receive context (nrma_xfer.h) that the
 * endpoints bound to it match their messages against: receives are
 * posted to it, and each message is reported through the endpoint it
 * reached.  A shared transmit context (fi_stx_context) is a transmit
 * budget its endpoints draw on together: tx_attr->size transmits in
 * flight among them all.  Each endpoint keeps its own queue pairs and
 * buffers.  The contexts of a domain, and every endpoint bound to one of
 * them, share one lock (nrma_domain.ctx_lock): the cost fi_endpoint(3)
 * allows, of serializing access across endpoints.
 */
#include <stdlib.h>
#include <string.h>

#include "nrma.h"
#include "nrma_enosys.h"
#include "nrma_progress.h"
#include "nrma_recv.h"
#include "nrma_xfer.h"

struct nrma_srx {
	struct fid_ep ep_fid;
	struct nrma_domain *domain;
	struct fi_rx_attr attr;
	struct nrma_rx_ctx rc;
	atomic_int ref; /* endpoints bound */
};

struct nrma_stx {
	struct fid_stx stx_fid;
	struct nrma_domain *domain;
	struct fi_tx_attr attr;
	struct nrma_tx_budget budget;
	atomic_int ref; /* endpoints bound */
};

static struct nrma_srx *srx_of_fid(struct fid *fid)
{
	return nrma_container_of(fid, struct nrma_srx, ep_fid.fid);
}

static struct nrma_stx *stx_of_fid(struct fid *fid)
{
	return nrma_container_of(fid, struct nrma_stx, stx_fid.fid);
}

ssize_t nrma_srx_recv(struct fid_ep *srx_fid, const struct nrma_recv_args *a)
{
	struct nrma_srx *srx = srx_of_fid(&srx_fid->fid);
	ssize_t ret;

	pthread_mutex_lock(&srx->domain->ctx_lock);
	ret = nrma_progress_rx_ctx_recv(&srx->rc, a);
	pthread_mutex_unlock(&srx->domain->ctx_lock);
	return ret;
}

uint64_t nrma_srx_op_flags(struct fid_ep *srx_fid)
{
	return srx_of_fid(&srx_fid->fid)->attr.op_flags;
}

/* Binding endpoints */

/*
 * From now on the endpoint takes the domain's ctx_lock for its own; it
 * is not enabled yet, so nobody else holds, or waits for, its own lock.
 */
static int ctx_bind_check(struct nrma_ep *ep, struct nrma_domain *domain,
			  size_t ctx_cnt, bool bound)
{
	if (domain != ep->domain || ctx_cnt != FI_SHARED_CONTEXT || bound)
		return -FI_EINVAL;
	if (ep->enabled)
		return -FI_EOPBADSTATE;
	ep->lock = &domain->ctx_lock;
	return 0;
}

int nrma_srx_bind(struct nrma_ep *ep, struct fid *srx_fid)
{
	struct nrma_srx *srx = srx_of_fid(srx_fid);
	int ret;

	pthread_mutex_lock(&srx->domain->ctx_lock);
	ret = ctx_bind_check(ep, srx->domain, ep->info->ep_attr->rx_ctx_cnt,
			     ep->srx);
	if (!ret)
		ret = nrma_rx_ctx_join(&srx->rc, ep);
	if (!ret) {
		ep->srx = srx_fid;
		atomic_fetch_add(&srx->ref, 1);
	}
	pthread_mutex_unlock(&srx->domain->ctx_lock);
	return ret;
}

int nrma_srx_stx_bind(struct nrma_ep *ep, struct fid *stx_fid)
{
	struct nrma_stx *stx = stx_of_fid(stx_fid);
	int ret;

	pthread_mutex_lock(&stx->domain->ctx_lock);
	ret = ctx_bind_check(ep, stx->domain, ep->info->ep_attr->tx_ctx_cnt,
			     ep->stx);
	if (!ret) {
		nrma_xfer_share_tx(ep, &stx->budget);
		ep->stx = stx_fid;
		atomic_fetch_add(&stx->ref, 1);
	}
	pthread_mutex_unlock(&stx->domain->ctx_lock);
	return ret;
}

/* A closing endpoint leaves its contexts; it has left every CQ. */
void nrma_srx_ctx_unbind(struct nrma_ep *ep)
{
	if (!ep->srx && !ep->stx)
		return;
	pthread_mutex_lock(ep->lock);
	if (ep->srx) {
		nrma_recv_ctx_leave(&srx_of_fid(ep->srx)->rc, ep);
		atomic_fetch_sub(&srx_of_fid(ep->srx)->ref, 1);
	}
	if (ep->stx) {
		nrma_xfer_share_tx(ep, NULL);
		atomic_fetch_sub(&stx_of_fid(ep->stx)->ref, 1);
	}
	pthread_mutex_unlock(ep->lock);
}

/* Shared receive contexts */

static ssize_t nrma_srx_cancel(fid_t fid, void *context)
{
	struct nrma_srx *srx = srx_of_fid(fid);
	ssize_t ret;

	pthread_mutex_lock(&srx->domain->ctx_lock);
	ret = nrma_recv_ctx_cancel(&srx->rc, context);
	pthread_mutex_unlock(&srx->domain->ctx_lock);
	return ret;
}

/* FI_OPT_MIN_MULTI_RECV, for the context's FI_MULTI_RECV receives. */
static int srx_opt_check(const struct nrma_srx *srx, int level, int optname)
{
	return level == FI_OPT_ENDPOINT && optname == FI_OPT_MIN_MULTI_RECV &&
			       (srx->rc.caps & FI_MULTI_RECV) ?
		       0 :
		       -FI_ENOPROTOOPT;
}

static int nrma_srx_getopt(fid_t fid, int level, int optname, void *optval,
			   size_t *optlen)
{
	struct nrma_srx *srx = srx_of_fid(fid);
	int ret = srx_opt_check(srx, level, optname);
	size_t value;

	if (ret)
		return ret;
	pthread_mutex_lock(&srx->domain->ctx_lock);
	value = srx->rc.min_multi_recv;
	pthread_mutex_unlock(&srx->domain->ctx_lock);
	return nrma_ep_opt_put(optval, optlen, &value, sizeof(value));
}

static int nrma_srx_setopt(fid_t fid, int level, int optname,
			   const void *optval, size_t optlen)
{
	struct nrma_srx *srx = srx_of_fid(fid);
	int ret = srx_opt_check(srx, level, optname);

	if (ret)
		return ret;
	if (!optval || optlen != sizeof(size_t))
		return -FI_EINVAL;
	pthread_mutex_lock(&srx->domain->ctx_lock);
	srx->rc.min_multi_recv = *(const size_t *) optval;
	pthread_mutex_unlock(&srx->domain->ctx_lock);
	return 0;
}

static ssize_t nrma_srx_rx_size_left(struct fid_ep *ep_fid)
{
	struct nrma_srx *srx = srx_of_fid(&ep_fid->fid);
	ssize_t left;

	pthread_mutex_lock(&srx->domain->ctx_lock);
	left = (ssize_t) nrma_match_rx_left(&srx->rc.match);
	pthread_mutex_unlock(&srx->domain->ctx_lock);
	return left;
}

static struct fi_ops_ep nrma_srx_ops = {
	.size = sizeof(struct fi_ops_ep),
	.cancel = nrma_srx_cancel,
	.getopt = nrma_srx_getopt,
	.setopt = nrma_srx_setopt,
	.tx_ctx = nrma_no_tx_ctx,
	.rx_ctx = nrma_no_rx_ctx,
	.rx_size_left = nrma_srx_rx_size_left,
	.tx_size_left = nrma_no_size_left,
};

static int nrma_srx_close(struct fid *fid)
{
	struct nrma_srx *srx = srx_of_fid(fid);

	if (atomic_load(&srx->ref))
		return -FI_EBUSY;
	nrma_rx_ctx_fini(&srx->rc);
	atomic_fetch_sub(&srx->domain->ref, 1);
	free(srx);
	return 0;
}

static struct fi_ops nrma_srx_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = nrma_srx_close,
	.bind = nrma_no_bind,
	.control = nrma_no_control,
	.ops_open = nrma_no_ops_open,
};

/* A context's attributes: the domain's endpoints', as far as asked. */
int nrma_srx_rx_attr_set(struct fi_rx_attr *attr, const struct fi_rx_attr *base,
			 const struct fi_rx_attr *want)
{
	*attr = *base;
	if (!want)
		return 0;
	if (want->size > base->size || want->iov_limit > base->iov_limit ||
	    (want->caps & ~base->caps) || (want->op_flags & ~NRMA_RX_OP_FLAGS))
		return -FI_EINVAL;
	attr->op_flags = want->op_flags;
	if (want->caps)
		attr->caps = want->caps;
	if (want->size)
		attr->size = want->size;
	if (want->iov_limit)
		attr->iov_limit = want->iov_limit;
	return nrma_op_flags_capped(attr->op_flags, attr->caps) ? 0 :
								  -FI_EINVAL;
}

int nrma_srx_open(struct fid_domain *domain_fid, struct fi_rx_attr *attr,
		  struct fid_ep **srx_fid, void *context)
{
	struct nrma_domain *domain = nrma_domain_of(domain_fid);
	struct nrma_srx *srx = calloc(1, sizeof(*srx));
	int ret;

	if (!srx)
		return -FI_ENOMEM;
	srx->domain = domain;
	ret = nrma_srx_rx_attr_set(&srx->attr, domain->info->rx_attr, attr);
	if (!ret)
		ret = nrma_rx_ctx_init(&srx->rc, srx->attr.size, srx->attr.caps,
				       srx->attr.iov_limit);
	if (ret) {
		free(srx);
		return ret;
	}
	srx->ep_fid.fid.fclass = FI_CLASS_SRX_CTX;
	srx->ep_fid.fid.context = context;
	srx->ep_fid.fid.ops = &nrma_srx_fi_ops;
	srx->ep_fid.ops = &nrma_srx_ops;
	srx->ep_fid.msg = &nrma_srx_msg_ops;
	srx->ep_fid.tagged = &nrma_srx_tagged_ops;
	srx->ep_fid.rma = &nrma_no_rma_ops;
	srx->ep_fid.atomic = &nrma_no_atomic_ops;
	srx->ep_fid.collective = &nrma_no_collective_ops;
	atomic_fetch_add(&domain->ref, 1);
	/* The attributes it got, as fi_endpoint(3) returns them. */
	if (attr)
		*attr = srx->attr;
	*srx_fid = &srx->ep_fid;
	return 0;
}

/* Shared transmit contexts */

static int nrma_stx_close(struct fid *fid)
{
	struct nrma_stx *stx = stx_of_fid(fid);

	if (atomic_load(&stx->ref))
		return -FI_EBUSY;
	atomic_fetch_sub(&stx->domain->ref, 1);
	free(stx);
	return 0;
}

static struct fi_ops nrma_stx_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = nrma_stx_close,
	.bind = nrma_no_bind,
	.control = nrma_no_control,
	.ops_open = nrma_no_ops_open,
};

/*
 * A transmit context's attributes: the domain's endpoints', with the
 * operation flags asked for; it may ask for less than they offer.
 */
int nrma_srx_tx_attr_set(struct fi_tx_attr *attr, const struct fi_tx_attr *base,
			 const struct fi_tx_attr *want)
{
	*attr = *base;
	if (!want)
		return 0;
	if (want->size > base->size || want->iov_limit > base->iov_limit ||
	    want->inject_size > base->inject_size ||
	    (want->caps & ~base->caps) ||
	    (want->op_flags & ~NRMA_TX_OP_FLAGS) ||
	    !nrma_op_flags_capped(want->op_flags, base->caps))
		return -FI_EINVAL;
	attr->op_flags = want->op_flags;
	return 0;
}

/* A shared one sizes its budget as asked. */
static int stx_attr_set(struct nrma_stx *stx, const struct fi_tx_attr *want)
{
	int ret = nrma_srx_tx_attr_set(&stx->attr, stx->domain->info->tx_attr,
				       want);

	if (!ret && want && want->size)
		stx->attr.size = want->size;
	return ret;
}

int nrma_srx_stx_open(struct fid_domain *domain_fid, struct fi_tx_attr *attr,
		      struct fid_stx **stx_fid, void *context)
{
	struct nrma_domain *domain = nrma_domain_of(domain_fid);
	struct nrma_stx *stx = calloc(1, sizeof(*stx));
	int ret;

	if (!stx)
		return -FI_ENOMEM;
	stx->domain = domain;
	ret = stx_attr_set(stx, attr);
	if (ret) {
		free(stx);
		return ret;
	}
	stx->budget.max = stx->attr.size;
	stx->stx_fid.fid.fclass = FI_CLASS_STX_CTX;
	stx->stx_fid.fid.context = context;
	stx->stx_fid.fid.ops = &nrma_stx_fi_ops;
	atomic_fetch_add(&domain->ref, 1);
	if (attr)
		*attr = stx->attr;
	*stx_fid = &stx->stx_fid;
	return 0;
}
