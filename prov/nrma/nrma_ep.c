/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * RDM endpoints.  An endpoint is named by the address of its rdmacm
 * listener, which it binds when opened, so fi_getname works at once and
 * the name never changes after fi_enable.
 */
#include <stdlib.h>
#include <string.h>

#include "nrma.h"
#include "nrma_enosys.h"
#include "nrma_verbs.h"

#define NRMA_CQ_BIND_FLAGS	(FI_TRANSMIT | FI_RECV | FI_SELECTIVE_COMPLETION)
#define NRMA_CNTR_BIND_FLAGS	(FI_SEND | FI_RECV | FI_READ | FI_WRITE | \
				 FI_REMOTE_READ | FI_REMOTE_WRITE)

static struct nrma_ep *ep_of_fid(struct fid *fid)
{
	return nrma_container_of(fid, struct nrma_ep, ep_fid.fid);
}

/* Endpoint sets of CQs and counters */

void nrma_ep_set_init(struct nrma_ep_set *set)
{
	pthread_mutex_init(&set->lock, NULL);
	set->eps = NULL;
	set->count = 0;
}

void nrma_ep_set_fini(struct nrma_ep_set *set)
{
	free(set->eps);
	pthread_mutex_destroy(&set->lock);
}

/* The fds whose readiness means the endpoint has progress to make. */
static int ep_watch(struct nrma_ep *ep, struct nrma_wait *wait)
{
	int ret = nrma_wait_add_fd(wait, nrma_verbs_ep_fd(ep->verbs));

	if (!ret)
		ret = nrma_wait_add_fd(wait, nrma_ep_cm_fd(ep));
	return ret;
}

static void ep_unwatch(struct nrma_ep *ep, struct nrma_wait *wait)
{
	nrma_wait_del_fd(wait, nrma_verbs_ep_fd(ep->verbs));
	nrma_wait_del_fd(wait, nrma_ep_cm_fd(ep));
}

int nrma_ep_set_add(struct nrma_ep_set *set, struct nrma_ep *ep,
		    struct nrma_wait *wait)
{
	struct nrma_ep **eps;
	int ret = 0;

	pthread_mutex_lock(&set->lock);
	for (size_t i = 0; i < set->count; i++)
		if (set->eps[i] == ep)
			goto out;	/* bound for both directions */
	eps = realloc(set->eps, (set->count + 1) * sizeof(*eps));
	if (!eps) {
		ret = -FI_ENOMEM;
		goto out;
	}
	set->eps = eps;
	ret = ep_watch(ep, wait);
	if (!ret)
		set->eps[set->count++] = ep;
out:
	pthread_mutex_unlock(&set->lock);
	return ret;
}

void nrma_ep_set_del(struct nrma_ep_set *set, struct nrma_ep *ep,
		     struct nrma_wait *wait)
{
	pthread_mutex_lock(&set->lock);
	for (size_t i = 0; i < set->count; i++) {
		if (set->eps[i] != ep)
			continue;
		ep_unwatch(ep, wait);
		set->eps[i] = set->eps[--set->count];
		break;
	}
	pthread_mutex_unlock(&set->lock);
}

void nrma_ep_set_progress(struct nrma_ep_set *set)
{
	pthread_mutex_lock(&set->lock);
	for (size_t i = 0; i < set->count; i++)
		nrma_ep_progress(set->eps[i]);
	pthread_mutex_unlock(&set->lock);
}

int nrma_ep_set_arm(struct nrma_ep_set *set)
{
	int ret = 0;

	pthread_mutex_lock(&set->lock);
	for (size_t i = 0; i < set->count && !ret; i++)
		ret = nrma_ep_arm(set->eps[i]);
	pthread_mutex_unlock(&set->lock);
	return ret;
}

/* Progress: connection events, then device completions. */
void nrma_ep_progress(struct nrma_ep *ep)
{
	pthread_mutex_lock(&ep->lock);
	if (ep->enabled) {
		nrma_proto_progress(ep);
		nrma_cm_progress(ep);
	}
	pthread_mutex_unlock(&ep->lock);
}

/*
 * Asks for a channel event on the next completion, then looks once more:
 * one that arrived before arming raises no event.
 */
int nrma_ep_arm(struct nrma_ep *ep)
{
	int ret = 0;

	pthread_mutex_lock(&ep->lock);
	if (ep->enabled) {
		ret = nrma_verbs_ep_arm(ep->verbs);
		if (!ret && nrma_proto_progress(ep))
			ret = -FI_EAGAIN;
	}
	pthread_mutex_unlock(&ep->lock);
	return ret;
}

int nrma_ep_cm_fd(const struct nrma_ep *ep)
{
	return nrma_listener_fd(ep->listener);
}

static int bind_cq(struct nrma_ep *ep, struct nrma_cq *cq, uint64_t flags)
{
	if (flags & ~NRMA_CQ_BIND_FLAGS)
		return -FI_EBADFLAGS;
	if (!(flags & (FI_TRANSMIT | FI_RECV)))
		return -FI_EINVAL;
	if (((flags & FI_TRANSMIT) && ep->tx_cq) ||
	    ((flags & FI_RECV) && ep->rx_cq))
		return -FI_EINVAL;
	if (flags & FI_TRANSMIT) {
		ep->tx_cq = cq;
		ep->tx_cq_flags = flags;
		atomic_fetch_add(&cq->ref, 1);
	}
	if (flags & FI_RECV) {
		ep->rx_cq = cq;
		ep->rx_cq_flags = flags;
		atomic_fetch_add(&cq->ref, 1);
	}
	return 0;
}

static int bind_cntr_slot(struct nrma_cntr **slot, struct nrma_cntr *cntr)
{
	if (*slot)
		return -FI_EINVAL;
	*slot = cntr;
	atomic_fetch_add(&cntr->ref, 1);
	return 0;
}

/*
 * Peers bump a word of the endpoint's notification cell, whose rkey they
 * learn when they connect: no progress is needed to count.
 */
static int bind_remote_cntr(struct nrma_ep *ep, struct nrma_cntr **slot,
			    struct nrma_cntr *cntr, uint64_t flag)
{
	int ret;

	if (*slot)
		return -FI_EINVAL;
	if (!ep->notify_cell) {
		ret = nrma_notify_cell_open(ep->domain, &ep->notify_cell);
		if (ret)
			return ret;
	}
	ret = nrma_notify_cell_bind(ep->notify_cell, cntr, flag);
	return ret ? ret : bind_cntr_slot(slot, cntr);
}

static int bind_cntr(struct nrma_ep *ep, struct nrma_cntr *cntr, uint64_t flags)
{
	int ret = 0;

	if (flags & ~NRMA_CNTR_BIND_FLAGS)
		return -FI_EBADFLAGS;
	if (!flags)
		return -FI_EINVAL;
	if ((flags & (FI_REMOTE_READ | FI_REMOTE_WRITE)) &&
	    !(ep->info->caps & FI_RMA_EVENT))
		return -FI_EINVAL;
	if (flags & FI_REMOTE_WRITE)
		ret = bind_remote_cntr(ep, &ep->rwrite_cntr, cntr,
				       FI_REMOTE_WRITE);
	if ((flags & FI_REMOTE_READ) && !ret)
		ret = bind_remote_cntr(ep, &ep->rread_cntr, cntr,
				       FI_REMOTE_READ);
	if ((flags & FI_SEND) && !ret)
		ret = bind_cntr_slot(&ep->send_cntr, cntr);
	if ((flags & FI_RECV) && !ret)
		ret = bind_cntr_slot(&ep->recv_cntr, cntr);
	if ((flags & FI_READ) && !ret)
		ret = bind_cntr_slot(&ep->read_cntr, cntr);
	if ((flags & FI_WRITE) && !ret)
		ret = bind_cntr_slot(&ep->write_cntr, cntr);
	return ret;
}

static int bind_av(struct nrma_ep *ep, struct nrma_av *av, uint64_t flags)
{
	if (flags)
		return -FI_EBADFLAGS;
	if (ep->av)
		return -FI_EINVAL;
	ep->av = av;
	atomic_fetch_add(&av->ref, 1);
	return 0;
}

static int bind_eq(struct nrma_ep *ep, struct nrma_eq *eq, uint64_t flags)
{
	if (flags)
		return -FI_EBADFLAGS;
	if (ep->eq)
		return -FI_EINVAL;
	ep->eq = eq;
	atomic_fetch_add(&eq->ref, 1);
	return 0;
}

/* The domain of a fid that may be bound to an endpoint, or NULL. */
static struct nrma_domain *bound_domain(struct fid *bfid)
{
	switch (bfid->fclass) {
	case FI_CLASS_CQ:
		return nrma_container_of(bfid, struct nrma_cq, cq_fid.fid)->domain;
	case FI_CLASS_CNTR:
		return nrma_container_of(bfid, struct nrma_cntr,
					 cntr_fid.fid)->domain;
	case FI_CLASS_AV:
		return nrma_container_of(bfid, struct nrma_av, av_fid.fid)->domain;
	default:
		return NULL;
	}
}

static int ep_bind_locked(struct nrma_ep *ep, struct fid *bfid, uint64_t flags)
{
	if (ep->enabled)
		return -FI_EOPBADSTATE;
	if (bfid->fclass != FI_CLASS_EQ && bound_domain(bfid) != ep->domain)
		return -FI_EINVAL;
	switch (bfid->fclass) {
	case FI_CLASS_CQ:
		return bind_cq(ep, nrma_container_of(bfid, struct nrma_cq,
						     cq_fid.fid), flags);
	case FI_CLASS_CNTR:
		return bind_cntr(ep, nrma_container_of(bfid, struct nrma_cntr,
						       cntr_fid.fid), flags);
	case FI_CLASS_AV:
		return bind_av(ep, nrma_container_of(bfid, struct nrma_av,
						     av_fid.fid), flags);
	case FI_CLASS_EQ:
		return bind_eq(ep, nrma_container_of(bfid, struct nrma_eq,
						     eq_fid.fid), flags);
	default:
		return -FI_EINVAL;
	}
}

static int nrma_ep_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	struct nrma_ep *ep = ep_of_fid(fid);
	int ret;

	if (!bfid)
		return -FI_EINVAL;
	pthread_mutex_lock(&ep->lock);
	ret = ep_bind_locked(ep, bfid, flags);
	pthread_mutex_unlock(&ep->lock);
	return ret;
}

/* Each direction needs somewhere to report completions. */
static int ep_enable_check(const struct nrma_ep *ep)
{
	if (ep->enabled)
		return -FI_EOPBADSTATE;
	if (!ep->av)
		return -FI_ENOAV;
	if (!ep->tx_cq && !ep->send_cntr && !ep->read_cntr && !ep->write_cntr)
		return -FI_ENOCQ;
	if (!ep->rx_cq && !ep->recv_cntr)
		return -FI_ENOCQ;
	return 0;
}

/*
 * Reading a bound CQ or counter progresses the endpoint.  The sets are
 * joined without ep->lock held: their locks order before it.
 */
static int ep_join_sets(struct nrma_ep *ep)
{
	struct nrma_cntr *cntrs[] = { ep->send_cntr, ep->recv_cntr,
				      ep->read_cntr, ep->write_cntr,
				      ep->rread_cntr, ep->rwrite_cntr };
	int ret = 0;

	if (ep->tx_cq)
		ret = nrma_ep_set_add(&ep->tx_cq->eps, ep, &ep->tx_cq->wait);
	if (!ret && ep->rx_cq)
		ret = nrma_ep_set_add(&ep->rx_cq->eps, ep, &ep->rx_cq->wait);
	for (size_t i = 0; !ret && i < sizeof(cntrs) / sizeof(cntrs[0]); i++)
		if (cntrs[i])
			ret = nrma_ep_set_add(&cntrs[i]->eps, ep,
					      &cntrs[i]->wait);
	return ret;
}

static int ep_enable(struct nrma_ep *ep)
{
	int ret;

	pthread_mutex_lock(&ep->lock);
	ret = ep_enable_check(ep);
	if (!ret)
		ret = nrma_listener_name(ep->listener, &ep->name);
	pthread_mutex_unlock(&ep->lock);
	if (!ret)
		ret = ep_join_sets(ep);
	pthread_mutex_lock(&ep->lock);
	if (!ret)
		ret = nrma_listener_listen(ep->listener);
	if (!ret)
		ep->enabled = true;
	pthread_mutex_unlock(&ep->lock);
	return ret;
}

static int nrma_ep_control(struct fid *fid, int command, void *arg)
{
	struct nrma_ep *ep = ep_of_fid(fid);

	switch (command) {
	case FI_ENABLE:
		return ep_enable(ep);
	case FI_GETOPSFLAG:
		if (!arg)
			return -FI_EINVAL;
		*(uint64_t *) arg = (*(uint64_t *) arg & FI_TRANSMIT) ?
				    ep->info->tx_attr->op_flags :
				    ep->info->rx_attr->op_flags;
		return 0;
	default:
		return -FI_ENOSYS;
	}
}

static void unbind_cq(struct nrma_ep *ep, struct nrma_cq *cq)
{
	if (!cq)
		return;
	nrma_ep_set_del(&cq->eps, ep, &cq->wait);
	atomic_fetch_sub(&cq->ref, 1);
}

static void unbind_cntr(struct nrma_ep *ep, struct nrma_cntr *cntr)
{
	if (!cntr)
		return;
	nrma_ep_set_del(&cntr->eps, ep, &cntr->wait);
	atomic_fetch_sub(&cntr->ref, 1);
}

static void ep_unbind_all(struct nrma_ep *ep)
{
	unbind_cq(ep, ep->tx_cq);
	unbind_cq(ep, ep->rx_cq);
	unbind_cntr(ep, ep->send_cntr);
	unbind_cntr(ep, ep->recv_cntr);
	unbind_cntr(ep, ep->read_cntr);
	unbind_cntr(ep, ep->write_cntr);
	unbind_cntr(ep, ep->rread_cntr);
	unbind_cntr(ep, ep->rwrite_cntr);
	if (ep->notify_cell)
		nrma_notify_cell_close(ep->notify_cell);
	if (ep->av)
		atomic_fetch_sub(&ep->av->ref, 1);
	if (ep->eq)
		atomic_fetch_sub(&ep->eq->ref, 1);
}

static int nrma_ep_close(struct fid *fid)
{
	struct nrma_ep *ep = ep_of_fid(fid);

	if (ep->enabled)
		nrma_proto_linger(ep);
	ep_unbind_all(ep);
	nrma_conns_close(ep);
	nrma_hash_fini(&ep->qp_conns);
	nrma_proto_close(ep);
	nrma_verbs_ep_close(ep->verbs);
	nrma_listener_close(ep->listener);
	pthread_mutex_destroy(&ep->lock);
	atomic_fetch_sub(&ep->domain->ref, 1);
	fi_freeinfo(ep->info);
	free(ep);
	return 0;
}

static struct fi_ops nrma_ep_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = nrma_ep_close,
	.bind = nrma_ep_bind,
	.control = nrma_ep_control,
	.ops_open = nrma_no_ops_open,
};

static int nrma_ep_getname(fid_t fid, void *addr, size_t *addrlen)
{
	struct nrma_ep *ep = ep_of_fid(fid);
	struct sockaddr_in name;
	size_t room;
	int ret;

	if (!addrlen)
		return -FI_EINVAL;
	pthread_mutex_lock(&ep->lock);
	ret = nrma_listener_name(ep->listener, &name);
	pthread_mutex_unlock(&ep->lock);
	if (ret)
		return ret;
	room = *addrlen;
	*addrlen = sizeof(name);
	if (room < sizeof(name))
		return -FI_ETOOSMALL;
	memcpy(addr, &name, sizeof(name));
	return 0;
}

/* Rebinds the listener; only before fi_enable, while nobody knows us. */
static int nrma_ep_setname(fid_t fid, void *addr, size_t addrlen)
{
	struct nrma_ep *ep = ep_of_fid(fid);
	struct nrma_listener *listener;
	int ret;

	if (!addr || addrlen != sizeof(struct sockaddr_in) ||
	    ((struct sockaddr *) addr)->sa_family != AF_INET)
		return -FI_EINVAL;
	pthread_mutex_lock(&ep->lock);
	if (ep->enabled) {
		ret = -FI_EOPBADSTATE;
		goto out;
	}
	ret = nrma_listener_open(addr, &listener);
	if (!ret) {
		nrma_listener_close(ep->listener);
		ep->listener = listener;
	}
out:
	pthread_mutex_unlock(&ep->lock);
	return ret;
}

static struct fi_ops_cm nrma_ep_cm_ops = {
	.size = sizeof(struct fi_ops_cm),
	.setname = nrma_ep_setname,
	.getname = nrma_ep_getname,
	.getpeer = nrma_no_getpeer,
	.connect = nrma_no_connect,
	.listen = nrma_no_listen,
	.accept = nrma_no_accept,
	.reject = nrma_no_reject,
	.shutdown = nrma_no_shutdown,
	.join = nrma_no_join,
};

/* Only posted receives can be cancelled: sends are already on the wire. */
static ssize_t nrma_ep_cancel(fid_t fid, void *context)
{
	struct nrma_ep *ep = ep_of_fid(fid);
	ssize_t ret;

	pthread_mutex_lock(&ep->lock);
	ret = nrma_proto_cancel(ep, context);
	pthread_mutex_unlock(&ep->lock);
	return ret;
}

static bool multi_recv_opt(const struct nrma_ep *ep, int level, int optname)
{
	return level == FI_OPT_ENDPOINT && optname == FI_OPT_MIN_MULTI_RECV &&
	       (ep->info->caps & FI_MULTI_RECV);
}

static int nrma_ep_getopt(fid_t fid, int level, int optname, void *optval,
			  size_t *optlen)
{
	struct nrma_ep *ep = ep_of_fid(fid);

	if (!multi_recv_opt(ep, level, optname))
		return -FI_ENOPROTOOPT;
	if (!optval || !optlen || *optlen < sizeof(size_t))
		return -FI_EINVAL;
	*(size_t *) optval = ep->min_multi_recv;
	*optlen = sizeof(size_t);
	return 0;
}

static int nrma_ep_setopt(fid_t fid, int level, int optname,
			  const void *optval, size_t optlen)
{
	struct nrma_ep *ep = ep_of_fid(fid);

	if (!multi_recv_opt(ep, level, optname))
		return -FI_ENOPROTOOPT;
	if (!optval || optlen != sizeof(size_t))
		return -FI_EINVAL;
	ep->min_multi_recv = *(const size_t *) optval;
	return 0;
}

static struct fi_ops_ep nrma_ep_ops = {
	.size = sizeof(struct fi_ops_ep),
	.cancel = nrma_ep_cancel,
	.getopt = nrma_ep_getopt,
	.setopt = nrma_ep_setopt,
	.tx_ctx = nrma_no_tx_ctx,
	.rx_ctx = nrma_no_rx_ctx,
	.rx_size_left = nrma_no_size_left,
	.tx_size_left = nrma_no_size_left,
};

static int ep_info_check(const struct nrma_domain *domain,
			 const struct fi_info *info)
{
	if (!info || !info->ep_attr || !info->tx_attr || !info->rx_attr ||
	    info->ep_attr->type != FI_EP_RDM)
		return -FI_EINVAL;
	if (info->domain_attr && info->domain_attr->name &&
	    strcmp(info->domain_attr->name, domain->device->name))
		return -FI_EINVAL;
	/* Port 0 in a source address asks for any free port. */
	if (info->src_addr &&
	    (info->src_addrlen != sizeof(struct sockaddr_in) ||
	     ((struct sockaddr *) info->src_addr)->sa_family != AF_INET))
		return -FI_EINVAL;
	return 0;
}

#define NRMA_DEFAULT_MIN_MULTI_RECV	4096

static int ep_resources_open(struct nrma_ep *ep, const struct fi_info *info)
{
	struct sockaddr_in src = ep->domain->device->addr;
	int ret;

	src.sin_port = 0;
	if (info->src_addr)
		memcpy(&src, info->src_addr, sizeof(src));
	nrma_dlist_init(&ep->conns);
	nrma_hash_init(&ep->qp_conns);
	ep->tx_op_flags = info->tx_attr->op_flags;
	ep->rx_op_flags = info->rx_attr->op_flags;
	ep->min_multi_recv = NRMA_DEFAULT_MIN_MULTI_RECV;
	ret = nrma_listener_open(&src, &ep->listener);
	if (ret)
		return ret;
	ret = nrma_verbs_ep_open(ep->domain->verbs, nrma_proto_cq_size(info),
				 info->rx_attr->size, &ep->verbs);
	if (ret)
		goto err_listener;
	ret = nrma_proto_open(ep);
	if (ret)
		goto err_verbs;
	return 0;

err_verbs:
	nrma_verbs_ep_close(ep->verbs);
err_listener:
	nrma_listener_close(ep->listener);
	return ret;
}

int nrma_ep_open(struct fid_domain *domain_fid, struct fi_info *info,
		 struct fid_ep **ep_fid, void *context)
{
	struct nrma_domain *domain =
		nrma_container_of(domain_fid, struct nrma_domain, domain_fid);
	struct nrma_ep *ep;
	int ret;

	ret = ep_info_check(domain, info);
	if (ret)
		return ret;
	ep = calloc(1, sizeof(*ep));
	if (!ep)
		return -FI_ENOMEM;
	ep->domain = domain;
	ep->info = fi_dupinfo(info);
	if (!ep->info) {
		ret = -FI_ENOMEM;
		goto err;
	}
	ret = ep_resources_open(ep, info);
	if (ret)
		goto err;
	pthread_mutex_init(&ep->lock, NULL);
	ep->ep_fid.fid.fclass = FI_CLASS_EP;
	ep->ep_fid.fid.context = context;
	ep->ep_fid.fid.ops = &nrma_ep_fi_ops;
	ep->ep_fid.ops = &nrma_ep_ops;
	ep->ep_fid.cm = &nrma_ep_cm_ops;
	ep->ep_fid.msg = &nrma_msg_ops;
	ep->ep_fid.rma = &nrma_rma_ops;
	ep->ep_fid.tagged = &nrma_tagged_ops;
	ep->ep_fid.atomic = &nrma_atomic_ops;
	ep->ep_fid.collective = &nrma_no_collective_ops;
	atomic_fetch_add(&domain->ref, 1);
	*ep_fid = &ep->ep_fid;
	return 0;
err:
	fi_freeinfo(ep->info);
	free(ep);
	return ret;
}
