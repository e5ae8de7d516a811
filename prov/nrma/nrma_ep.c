/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * RDM endpoints.  An endpoint is named by the address of its rdmacm
 * listener, which it binds when opened, so fi_getname works at once and
 * the name never changes after fi_enable.  Its connections are
 * nrma_cm.c's, its data path nrma_xfer.c's, its progress
 * nrma_progress.c's.
 */
#include <stdlib.h>
#include <string.h>

#include "nrma.h"
#include "nrma_cm.h"
#include "nrma_enosys.h"
#include "nrma_keytab.h"
#include "nrma_notify.h"
#include "nrma_proto.h"
#include "nrma_verbs.h"
#include "nrma_wait.h"

/* RDMA reads and atomics a connection has in flight, at most. */
#define NRMA_RDMA_DEPTH	   16
#define NRMA_CQ_BIND_FLAGS (FI_TRANSMIT | FI_RECV | FI_SELECTIVE_COMPLETION)
#define NRMA_CNTR_BIND_FLAGS                                       \
	(FI_SEND | FI_RECV | FI_READ | FI_WRITE | FI_REMOTE_READ | \
	 FI_REMOTE_WRITE)

static int ep_bind_cq(struct nrma_ep *ep, struct nrma_cq *cq, uint64_t flags)
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

/* The local events a counter may count, and the endpoint's slot for each. */
static const uint64_t ep_cntr_events[] = { FI_SEND, FI_RECV, FI_READ,
					   FI_WRITE };
#define EP_CNTR_EVENTS (sizeof(ep_cntr_events) / sizeof(ep_cntr_events[0]))

static struct nrma_cntr **ep_cntr_slot(struct nrma_ep *ep, uint64_t event)
{
	switch (event) {
	case FI_SEND:
		return &ep->send_cntr;
	case FI_RECV:
		return &ep->recv_cntr;
	case FI_READ:
		return &ep->read_cntr;
	default:
		return &ep->write_cntr;
	}
}

static bool ep_cntr_slots_taken(struct nrma_ep *ep, uint64_t flags)
{
	for (size_t i = 0; i < EP_CNTR_EVENTS; i++)
		if ((flags & ep_cntr_events[i]) &&
		    *ep_cntr_slot(ep, ep_cntr_events[i]))
			return true;
	return false;
}

static int ep_bind_cntr(struct nrma_ep *ep, struct nrma_cntr *cntr,
			uint64_t flags)
{
	int ret = 0;

	if (flags & ~NRMA_CNTR_BIND_FLAGS)
		return -FI_EBADFLAGS;
	if (!flags)
		return -FI_EINVAL;
	if ((flags & (FI_REMOTE_READ | FI_REMOTE_WRITE)) &&
	    !(ep->info->caps & FI_RMA_EVENT))
		return -FI_EINVAL;
	/* All or nothing: a refused bind leaves no event counted. */
	if (ep_cntr_slots_taken(ep, flags))
		return -FI_EINVAL;
	/*
	 * Peers bump a word of the endpoint's notification cell, whose rkey
	 * they learn when they connect: no progress is needed to count.
	 */
	if (flags & (FI_REMOTE_WRITE | FI_REMOTE_READ))
		ret = nrma_cntr_remote_bind(
			&ep->remote, ep->domain, cntr,
			flags & (FI_REMOTE_WRITE | FI_REMOTE_READ));
	if (ret)
		return ret;
	for (size_t i = 0; i < EP_CNTR_EVENTS; i++) {
		if (!(flags & ep_cntr_events[i]))
			continue;
		*ep_cntr_slot(ep, ep_cntr_events[i]) = cntr;
		atomic_fetch_add(&cntr->ref, 1);
	}
	return 0;
}

static int ep_bind_av(struct nrma_ep *ep, struct nrma_av *av, uint64_t flags)
{
	if (flags)
		return -FI_EBADFLAGS;
	if (ep->av)
		return -FI_EINVAL;
	ep->av = av;
	atomic_fetch_add(&av->ref, 1);
	return 0;
}

static int ep_bind_eq(struct nrma_ep *ep, struct nrma_eq *eq, uint64_t flags)
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
static struct nrma_domain *ep_bound_domain(struct fid *bfid)
{
	switch (bfid->fclass) {
	case FI_CLASS_CQ:
		return nrma_cq_of_fid(bfid)->domain;
	case FI_CLASS_CNTR:
		return nrma_cntr_of_fid(bfid)->domain;
	case FI_CLASS_AV:
		return nrma_av_of_fid(bfid)->domain;
	default:
		return NULL;
	}
}

static int ep_bind_locked(struct nrma_ep *ep, struct fid *bfid, uint64_t flags)
{
	if (ep->enabled || ep->watched)
		return -FI_EOPBADSTATE;
	if (bfid->fclass != FI_CLASS_EQ && ep_bound_domain(bfid) != ep->domain)
		return -FI_EINVAL;
	switch (bfid->fclass) {
	case FI_CLASS_CQ:
		return ep_bind_cq(ep, nrma_cq_of_fid(bfid), flags);
	case FI_CLASS_CNTR:
		return ep_bind_cntr(ep, nrma_cntr_of_fid(bfid), flags);
	case FI_CLASS_AV: /* a connected endpoint knows its one peer */
		return nrma_ep_is_msg(ep) ?
			       -FI_EINVAL :
			       ep_bind_av(ep, nrma_av_of_fid(bfid), flags);
	case FI_CLASS_EQ:
		return ep_bind_eq(ep, nrma_eq_of_fid(bfid), flags);
	default:
		return -FI_EINVAL;
	}
}

static int nrma_ep_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	struct nrma_ep *ep = nrma_ep_of_fid(fid);
	int ret;

	if (!bfid)
		return -FI_EINVAL;
	/* Binding a shared context changes the endpoint's lock. */
	if (bfid->fclass == FI_CLASS_SRX_CTX ||
	    bfid->fclass == FI_CLASS_STX_CTX)
		return flags ? -FI_EBADFLAGS :
		       bfid->fclass == FI_CLASS_SRX_CTX ?
			       nrma_srx_bind(ep, bfid) :
			       nrma_srx_stx_bind(ep, bfid);
	pthread_mutex_lock(ep->lock);
	ret = ep_bind_locked(ep, bfid, flags);
	pthread_mutex_unlock(ep->lock);
	return ret;
}

/*
 * Each direction the endpoint uses needs somewhere to report completions
 * (fi_endpoint(3)), one that is only an RMA or atomic target a receive CQ
 * to be progressed through; an RDM endpoint needs an AV, a connected one
 * an EQ for its connection's events.
 */
static int ep_enable_check(const struct nrma_ep *ep)
{
	uint64_t caps = nrma_attr_caps_with_directions(ep->info->caps);
	bool transmits = !caps || (caps & (FI_SEND | FI_READ | FI_WRITE));
	bool receives = !transmits || (caps & FI_RECV);

	/* What broke its device resources cannot be undone here. */
	if (ep->critical)
		return -ep->critical;
	if (ep->enabled)
		return -FI_EOPBADSTATE;
	/* A scalable endpoint checks what its core needs itself. */
	if (ep->role == NRMA_EP_SEP_CORE)
		return 0;
	if (nrma_ep_is_msg(ep) && !ep->eq)
		return -FI_ENOEQ;
	/* Shared contexts the endpoint was made for must be bound. */
	if ((ep->info->ep_attr->tx_ctx_cnt == FI_SHARED_CONTEXT && !ep->stx) ||
	    (ep->info->ep_attr->rx_ctx_cnt == FI_SHARED_CONTEXT && !ep->srx))
		return -FI_EINVAL;
	if (!nrma_ep_is_msg(ep) && !ep->av)
		return -FI_ENOAV;
	if (transmits && !ep->tx_cq && !ep->send_cntr && !ep->read_cntr &&
	    !ep->write_cntr)
		return -FI_ENOCQ;
	/* A transmit context receives nothing but what its sends bring. */
	if (receives && !ep->rx_cq && !ep->recv_cntr &&
	    ep->role != NRMA_EP_TX_CTX)
		return -FI_ENOCQ;
	return 0;
}

/*
 * Reading a bound CQ or counter progresses the endpoint.  A counter bound
 * only for FI_REMOTE_WRITE or FI_REMOTE_READ is not one of them: peers
 * bump its words themselves, and nothing the endpoint does is reported
 * to it (fi_domain(3): manual progress advances what the CQ or counter
 * read would report).  The sets are joined without ep->lock held: their
 * locks order before it.
 */
static int ep_join_sets(struct nrma_ep *ep)
{
	struct nrma_cntr *cntrs[] = { ep->send_cntr, ep->recv_cntr,
				      ep->read_cntr, ep->write_cntr };
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

/* What connections need to know of the endpoint, fixed from now on. */
static struct nrma_cm_attr ep_cm_attr(struct nrma_ep *ep)
{
	size_t depth = ep->domain->device->limits.max_qp_rd_atom;

	return (struct nrma_cm_attr){
		.vdom = ep->domain->verbs,
		.claims = ep->domain->claims,
		.vep = ep->verbs,
		.sq_depth = nrma_params.qp_depth,
		.max_sge = NRMA_IOV_LIMIT,
		.rd_atomic_depth = depth < NRMA_RDMA_DEPTH ? depth :
							     NRMA_RDMA_DEPTH,
		.name = ep->name,
		.notify_rkey = nrma_cntr_remote_rkey(&ep->remote),
		.keytab_rkey = nrma_keytab_rkey(ep->domain->keytab),
		.keytab_slots = nrma_keytab_slots(ep->domain->keytab),
		.ops = nrma_ep_is_msg(ep) ? &nrma_ep_conn_cm_ops :
					    &nrma_progress_cm_ops,
		.arg = ep,
		.msg = nrma_ep_is_msg(ep),
		.ctx = ep->ctx_id,
		.no_listen = ep->role == NRMA_EP_TX_CTX,
	};
}

int nrma_ep_enable(struct nrma_ep *ep)
{
	struct nrma_cm_attr attr;
	int ret;

	pthread_mutex_lock(ep->lock);
	/* A transmit context takes its scalable endpoint's AV and name. */
	ret = ep->owner ? ep->owner->enable(ep) : 0;
	if (!ret)
		ret = ep_enable_check(ep);
	if (!ret && ep->av)
		ep->rx_ctx_bits = ep->av->table.rx_ctx_bits;
	/* An RDM endpoint's name goes to peers in its connection data. */
	if (!ret && !nrma_ep_is_msg(ep) && ep->role != NRMA_EP_TX_CTX)
		ret = nrma_cm_name(ep->cm, &ep->name);
	pthread_mutex_unlock(ep->lock);
	if (!ret)
		ret = ep_join_sets(ep);
	pthread_mutex_lock(ep->lock);
	attr = ep_cm_attr(ep);
	if (!ret)
		ret = nrma_cm_enable(ep->cm, &attr);
	pthread_mutex_unlock(ep->lock);
	/* The thread takes its lock before ours (nrma.h): not under ours. */
	if (!ret)
		ret = nrma_cm_thread_watch(ep->domain->cm_thread, ep);
	if (ret)
		return ret;
	pthread_mutex_lock(ep->lock);
	ep->watched = true;
	/* A device event may have come first. */
	ret = -ep->critical;
	ep->enabled = !ret;
	pthread_mutex_unlock(ep->lock);
	return ret;
}

static int ep_alias_open(struct nrma_ep_path *parent, struct fi_alias *alias);

/* What an endpoint and its aliases answer alike. */
static int ep_path_control(struct nrma_ep_path *path, int command, void *arg)
{
	switch (command) {
	case FI_GETOPSFLAG:
		return nrma_ep_opt_flags_get(path, arg);
	case FI_SETOPSFLAG:
		return nrma_ep_opt_flags_set(path, arg);
	case FI_ALIAS:
		return ep_alias_open(path, arg);
	default:
		return -FI_ENOSYS;
	}
}

static int nrma_ep_control(struct fid *fid, int command, void *arg)
{
	struct nrma_ep_path *path =
		nrma_path_of(nrma_container_of(fid, struct fid_ep, fid));

	if (command == FI_ENABLE)
		return nrma_ep_enable(path->ep);
	return ep_path_control(path, command, arg);
}

static void ep_unbind_cq(struct nrma_ep *ep, struct nrma_cq *cq)
{
	if (!cq)
		return;
	nrma_ep_set_del(&cq->eps, ep, &cq->wait);
	atomic_fetch_sub(&cq->ref, 1);
}

/* A remote counter's own reference is its notification cell's. */
static void ep_unbind_cntr(struct nrma_ep *ep, struct nrma_cntr *cntr)
{
	if (!cntr)
		return;
	nrma_ep_set_del(&cntr->eps, ep, &cntr->wait);
	atomic_fetch_sub(&cntr->ref, 1);
}

static void ep_unbind_all(struct nrma_ep *ep)
{
	ep_unbind_cq(ep, ep->tx_cq);
	ep_unbind_cq(ep, ep->rx_cq);
	ep_unbind_cntr(ep, ep->send_cntr);
	ep_unbind_cntr(ep, ep->recv_cntr);
	ep_unbind_cntr(ep, ep->read_cntr);
	ep_unbind_cntr(ep, ep->write_cntr);
	nrma_cntr_remote_close(&ep->remote);
	if (ep->av)
		atomic_fetch_sub(&ep->av->ref, 1);
	if (ep->eq)
		atomic_fetch_sub(&ep->eq->ref, 1);
}

static void ep_resources_close(struct nrma_ep *ep)
{
	nrma_cm_close(ep->cm);
	nrma_trigger_drop(ep);
	nrma_xfer_close(ep);
	nrma_verbs_ep_close(ep->verbs);
}

static int nrma_ep_close(struct fid *fid)
{
	struct nrma_ep *ep = nrma_ep_of_fid(fid);

	if (atomic_load(&ep->aliases))
		return -FI_EBUSY;
	if (ep->watched) {
		nrma_cm_thread_unwatch(ep->domain->cm_thread, ep);
		nrma_progress_linger(ep);
	}
	ep_unbind_all(ep);
	nrma_srx_ctx_unbind(ep);
	if (ep->owner)
		ep->owner->closed(ep);
	if (ep->connreq)
		nrma_pep_connreq_refuse(ep->domain->fabric, ep->connreq);
	ep_resources_close(ep);
	pthread_mutex_destroy(&ep->own_lock);
	atomic_fetch_sub(&ep->domain->ref, 1);
	fi_freeinfo(ep->info);
	free(ep);
	return 0;
}

static struct fi_nrma_ops_ep nrma_ep_nrma_ops = {
	.size = sizeof(struct fi_nrma_ops_ep),
	.writemsg = nrma_ep_rma_writemsg_notify,
	.readmsg = nrma_ep_rma_readmsg_notify,
	.atomicmsg = nrma_ep_atomic_writemsg_notify,
	.fetch_atomicmsg = nrma_ep_atomic_readwritemsg_notify,
};

/* fi_open_ops: the notified operations of fi_ext_nrma.h. */
static int nrma_ep_ops_open(struct fid *fid, const char *name, uint64_t flags,
			    void **ops, void *context)
{
	(void) fid;
	(void) context;
	return nrma_ops_open_named(name, flags, ops, FI_NRMA_EP_OPS_1,
				   &nrma_ep_nrma_ops);
}

static struct fi_ops nrma_ep_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = nrma_ep_close,
	.bind = nrma_ep_bind,
	.control = nrma_ep_control,
	.ops_open = nrma_ep_ops_open,
};

int nrma_ep_getname(fid_t fid, void *addr, size_t *addrlen)
{
	struct nrma_ep *ep = nrma_ep_of_fid(fid);
	struct sockaddr_in name;
	int ret;

	if (!addrlen)
		return -FI_EINVAL;
	pthread_mutex_lock(ep->lock);
	ret = nrma_cm_name(ep->cm, &name);
	pthread_mutex_unlock(ep->lock);
	return ret ? ret : nrma_addr_give(&name, addr, addrlen);
}

/* Rebinds the listener; only before fi_enable, while nobody knows us. */
int nrma_ep_setname(fid_t fid, void *addr, size_t addrlen)
{
	struct nrma_ep *ep = nrma_ep_of_fid(fid);
	int ret;

	if (!addr || addrlen != sizeof(struct sockaddr_in) ||
	    ((struct sockaddr *) addr)->sa_family != AF_INET)
		return -FI_EINVAL;
	pthread_mutex_lock(ep->lock);
	if (ep->enabled || ep->watched) {
		ret = -FI_EOPBADSTATE;
		goto out;
	}
	ret = nrma_cm_rebind(ep->cm, addr);
out:
	pthread_mutex_unlock(ep->lock);
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

/*
 * Posted receives and held triggered operations can be cancelled; other
 * transmits are already on the wire.
 */
static ssize_t nrma_ep_cancel(fid_t fid, void *context)
{
	struct nrma_ep *ep = nrma_ep_of_fid(fid);
	ssize_t ret;

	pthread_mutex_lock(ep->lock);
	if (ep->xfer && nrma_trigger_cancel(ep, context))
		ret = 0;
	else
		ret = nrma_recv_cancel(ep, context);
	pthread_mutex_unlock(ep->lock);
	return ret;
}

/* What may be posted before a post says -FI_EAGAIN, by left(). */
static ssize_t ep_size_left(struct fid_ep *ep_fid,
			    size_t (*left)(const struct nrma_ep *))
{
	struct nrma_ep *ep = nrma_ep_of(ep_fid);
	ssize_t ret;

	pthread_mutex_lock(ep->lock);
	ret = ep->enabled ? (ssize_t) left(ep) : -FI_EOPBADSTATE;
	pthread_mutex_unlock(ep->lock);
	return ret;
}

static ssize_t nrma_ep_tx_size_left(struct fid_ep *ep_fid)
{
	return ep_size_left(ep_fid, nrma_xfer_tx_left);
}

static ssize_t nrma_ep_rx_size_left(struct fid_ep *ep_fid)
{
	return ep_size_left(ep_fid, nrma_xfer_rx_left);
}

static struct fi_ops_ep nrma_ep_ops = {
	.size = sizeof(struct fi_ops_ep),
	.cancel = nrma_ep_cancel,
	.getopt = nrma_ep_opt_get,
	.setopt = nrma_ep_opt_set,
	.tx_ctx = nrma_no_tx_ctx,
	.rx_ctx = nrma_no_rx_ctx,
	.rx_size_left = nrma_ep_rx_size_left,
	.tx_size_left = nrma_ep_tx_size_left,
};

/* Every path to an endpoint offers the same calls. */
static void ep_path_init(struct nrma_ep_path *path, struct fi_ops *fi_ops,
			 void *context)
{
	path->ep_fid.fid.fclass = FI_CLASS_EP;
	path->ep_fid.fid.context = context;
	path->ep_fid.fid.ops = fi_ops;
	path->ep_fid.ops = &nrma_ep_ops;
	path->ep_fid.cm = nrma_ep_is_msg(path->ep) ? &nrma_ep_conn_ops :
						     &nrma_ep_cm_ops;
	path->ep_fid.msg = &nrma_msg_ops;
	path->ep_fid.rma = &nrma_ep_rma_ops;
	path->ep_fid.tagged = &nrma_tagged_ops;
	path->ep_fid.atomic = &nrma_ep_atomic_ops;
	path->ep_fid.collective = &nrma_no_collective_ops;
}

/* Aliases (fi_ep_alias): another set of default flags, nothing more. */

static int nrma_ep_alias_close(struct fid *fid)
{
	struct nrma_ep_path *alias =
		nrma_path_of(nrma_container_of(fid, struct fid_ep, fid));

	atomic_fetch_sub(&alias->ep->aliases, 1);
	free(alias);
	return 0;
}

static int nrma_ep_alias_control(struct fid *fid, int command, void *arg)
{
	return ep_path_control(
		nrma_path_of(nrma_container_of(fid, struct fid_ep, fid)),
		command, arg);
}

static struct fi_ops nrma_ep_alias_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = nrma_ep_alias_close,
	.bind = nrma_no_bind,
	.control = nrma_ep_alias_control,
	.ops_open = nrma_ep_ops_open,
};

/*
 * The alias starts with its parent's flags; flags, if any, replace the
 * transmit or the receive ones, as FI_SETOPSFLAG would.
 */
static int ep_alias_open(struct nrma_ep_path *parent, struct fi_alias *req)
{
	struct nrma_ep_path *alias;
	int ret = 0;

	if (!req || !req->fid)
		return -FI_EINVAL;
	alias = calloc(1, sizeof(*alias));
	if (!alias)
		return -FI_ENOMEM;
	*alias = *parent;
	if (req->flags)
		ret = nrma_ep_opt_flags_set(alias, &req->flags);
	if (ret) {
		free(alias);
		return ret;
	}
	alias->ep_fid.fid.ops = &nrma_ep_alias_fi_ops;
	atomic_fetch_add(&alias->ep->aliases, 1);
	*req->fid = &alias->ep_fid.fid;
	return 0;
}

/* One context a direction, its own or a shared one. */
static bool ep_ctx_cnt_valid(size_t cnt)
{
	return cnt <= 1 || cnt == FI_SHARED_CONTEXT;
}

static int ep_info_check(const struct nrma_domain *domain,
			 const struct fi_info *info)
{
	if (!info || !info->ep_attr || !info->tx_attr || !info->rx_attr ||
	    (info->ep_attr->type != FI_EP_RDM &&
	     info->ep_attr->type != FI_EP_MSG) ||
	    (info->tx_attr->op_flags & ~NRMA_TX_OP_FLAGS) ||
	    (info->rx_attr->op_flags & ~NRMA_RX_OP_FLAGS) ||
	    !ep_ctx_cnt_valid(info->ep_attr->tx_ctx_cnt) ||
	    !ep_ctx_cnt_valid(info->ep_attr->rx_ctx_cnt))
		return -FI_EINVAL;
	if (info->domain_attr && info->domain_attr->name &&
	    strcmp(info->domain_attr->name, domain->device->name))
		return -FI_EINVAL;
	/* Port 0 in a source address asks for any free port. */
	if (info->src_addr &&
	    (info->src_addrlen != sizeof(struct sockaddr_in) ||
	     ((struct sockaddr *) info->src_addr)->sa_family != AF_INET))
		return -FI_EINVAL;
	return nrma_attr_check_ep(domain->device, info);
}

/*
 * An endpoint's rdmacm side: bound to its source address, or, for one
 * that will accept a request, nothing yet (fi_accept takes the request's
 * id), or the address of the passive endpoint its info hands over.
 */
static int ep_cm_open(struct nrma_ep *ep, const struct fi_info *info,
		      bool answers)
{
	struct sockaddr_in src = ep->domain->device->addr;
	struct rdma_cm_id *id;
	int ret;

	src.sin_port = 0;
	if (info->src_addr)
		memcpy(&src, info->src_addr, sizeof(src));
	if (!nrma_ep_is_msg(ep) || !info->handle)
		return nrma_cm_open(&src, &ep->cm);
	if (answers)
		return nrma_cm_open(NULL, &ep->cm);
	id = nrma_pep_release(ep->domain->fabric, info->handle);
	if (!id)
		return -FI_EINVAL;
	ret = nrma_cm_open(NULL, &ep->cm);
	if (!ret)
		ret = nrma_cm_bind_id(ep->cm, id);
	return ret;
}

static int ep_resources_open(struct nrma_ep *ep, const struct fi_info *info,
			     bool answers)
{
	struct nrma_xfer_sizes sizes;
	int ret;

	ep->path = (struct nrma_ep_path){
		.ep = ep,
		.tx_op_flags = info->tx_attr->op_flags,
		.rx_op_flags = info->rx_attr->op_flags,
	};
	nrma_ep_opt_init(ep);
	ret = ep_cm_open(ep, info, answers);
	if (ret)
		return ret;
	sizes = nrma_xfer_sizes(info, &ep->domain->device->limits);
	ret = nrma_verbs_ep_open(ep->domain->verbs, sizes.cq, sizes.srq,
				 &ep->verbs);
	if (ret)
		goto err_cm;
	ret = nrma_xfer_open(ep);
	if (ret)
		goto err_verbs;
	return 0;

err_verbs:
	nrma_verbs_ep_close(ep->verbs);
err_cm:
	nrma_cm_close(ep->cm);
	return ret;
}

/*
 * An endpoint made from an FI_CONNREQ's info answers that request, also
 * once the passive endpoint and its listener are gone.
 */
static bool ep_answers_connreq(struct nrma_ep *ep, const struct fi_info *info)
{
	return nrma_ep_is_msg(ep) && info->handle &&
	       nrma_pep_connreq_known(ep->domain->fabric, info->handle);
}

int nrma_ep_open(struct fid_domain *domain_fid, struct fi_info *info,
		 struct fid_ep **ep_fid, void *context)
{
	struct nrma_domain *domain = nrma_domain_of(domain_fid);
	struct nrma_ep *ep;
	bool answers;
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
	ep->msg = info->ep_attr->type == FI_EP_MSG;
	answers = ep_answers_connreq(ep, info);
	ret = ep_resources_open(ep, info, answers);
	if (ret)
		goto err;
	if (answers)
		ret = nrma_pep_connreq_take(domain->fabric, info->handle,
					    ep->cm, &ep->connreq);
	if (ret)
		goto err_resources;
	pthread_mutex_init(&ep->own_lock, NULL);
	ep->lock = &ep->own_lock;
	ep_path_init(&ep->path, &nrma_ep_fi_ops, context);
	atomic_fetch_add(&domain->ref, 1);
	*ep_fid = &ep->path.ep_fid;
	return 0;
err_resources:
	ep_resources_close(ep);
err:
	fi_freeinfo(ep->info);
	free(ep);
	return ret;
}

/* fi_endpoint2: its flags ask for the peer API (fi_peer(3)), not ours. */
int nrma_ep_open2(struct fid_domain *domain, struct fi_info *info,
		  struct fid_ep **ep, uint64_t flags, void *context)
{
	if (flags & FI_PEER)
		return -FI_ENOSYS;
	if (flags)
		return -FI_EINVAL;
	return nrma_ep_open(domain, info, ep, context);
}
