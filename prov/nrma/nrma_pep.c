/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Passive endpoints (FI_EP_MSG): an rdmacm listener (nrma_cm_listen.c)
 * whose connection requests reach the bound EQ as FI_CONNREQ events, each
 * with an fi_info whose handle is the request (FI_CLASS_CONNREQ).  The
 * application answers with fi_accept on a new endpoint opened with that
 * info (nrma_ep_conn.c) or with fi_reject here.  Requests are read by the
 * fabric's control-progress thread, so they need no call to arrive.
 */
#include <stdlib.h>
#include <string.h>

#include "nrma.h"
#include "nrma_cm.h"
#include "nrma_enosys.h"

/* The connection request an FI_CONNREQ's info->handle names. */
struct nrma_connreq {
	struct fid fid;
	struct nrma_cm_req req;
	struct nrma_pep *pep;
	struct nrma_dlist link; /* the passive endpoint's, until answered */
};

struct nrma_pep {
	struct fid_pep pep_fid;
	struct nrma_fabric *fabric;
	struct fi_info *info;
	pthread_mutex_t lock; /* an endpoint's place in nrma.h's lock order */
	struct nrma_eq *eq;
	struct nrma_cm_listener *listener;
	struct nrma_cm_thread *cm_thread; /* while listening */
	int backlog;
	struct nrma_dlist connreqs; /* not yet answered */
};

static struct nrma_pep *pep_of_fid(struct fid *fid)
{
	return nrma_container_of(fid, struct nrma_pep, pep_fid.fid);
}

static struct fi_ops nrma_connreq_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = nrma_no_close,
	.bind = nrma_no_bind,
	.control = nrma_no_control,
	.ops_open = nrma_no_ops_open,
};

/* The request behind an fi_info handle, if it is one of ours. */
struct nrma_cm_req *nrma_connreq_of(struct fid *handle)
{
	if (!handle || handle->fclass != FI_CLASS_CONNREQ ||
	    handle->ops != &nrma_connreq_fi_ops)
		return NULL;
	return &nrma_container_of(handle, struct nrma_connreq, fid)->req;
}

/* Answered (or abandoned): the request's id and wrapper go. */
void nrma_connreq_done(struct nrma_cm_req *req)
{
	nrma_cm_req_done(req);
	free(nrma_container_of(req, struct nrma_connreq, req));
}

static void pep_connreq_free(struct nrma_connreq *cr)
{
	nrma_dlist_remove(&cr->link);
	nrma_connreq_done(&cr->req);
}

/*
 * fi_endpoint on an FI_CONNREQ's info: the endpoint answers the request
 * from then on, also once the passive endpoint has closed, and neither
 * fi_reject nor a second endpoint can take it.
 */
struct nrma_cm_req *nrma_connreq_take(struct fid *handle)
{
	struct nrma_connreq *cr;
	struct nrma_pep *pep;
	bool taken;

	if (!nrma_connreq_of(handle))
		return NULL;
	cr = nrma_container_of(handle, struct nrma_connreq, fid);
	pep = cr->pep;
	if (!pep)
		return NULL;
	pthread_mutex_lock(&pep->lock);
	taken = cr->pep == pep;
	if (taken) {
		nrma_dlist_remove(&cr->link);
		cr->pep = NULL;
	}
	pthread_mutex_unlock(&pep->lock);
	return taken ? &cr->req : NULL;
}

void nrma_connreq_refuse(struct nrma_cm_req *req)
{
	nrma_cm_req_reject(req, NULL, 0);
	nrma_connreq_done(req);
}

/* The info an FI_CONNREQ hands out: ours, between the two addresses. */
static struct fi_info *pep_connreq_info(struct nrma_pep *pep,
					struct nrma_connreq *cr)
{
	struct fi_info *info = fi_dupinfo(pep->info);

	if (!info)
		return NULL;
	free(info->src_addr);
	free(info->dest_addr);
	info->src_addr = malloc(sizeof(cr->req.local));
	info->dest_addr = malloc(sizeof(cr->req.peer));
	if (!info->src_addr || !info->dest_addr) {
		fi_freeinfo(info);
		return NULL;
	}
	memcpy(info->src_addr, &cr->req.local, sizeof(cr->req.local));
	memcpy(info->dest_addr, &cr->req.peer, sizeof(cr->req.peer));
	info->src_addrlen = info->dest_addrlen = sizeof(struct sockaddr_in);
	info->handle = &cr->fid;
	return info;
}

/* From the listener, with pep->lock held: a request for the EQ. */
static int pep_on_request(void *arg, const struct nrma_cm_req *req)
{
	struct nrma_pep *pep = arg;
	struct nrma_connreq *cr = calloc(1, sizeof(*cr));
	struct fi_eq_cm_entry entry = { .fid = &pep->pep_fid.fid };
	int ret = -FI_ENOMEM;

	if (!cr)
		return ret;
	cr->fid.fclass = FI_CLASS_CONNREQ;
	cr->fid.ops = &nrma_connreq_fi_ops;
	cr->req = *req;
	cr->pep = pep;
	entry.info = pep_connreq_info(pep, cr);
	if (entry.info)
		ret = nrma_eq_report_cm(pep->eq, FI_CONNREQ, &entry, req->app,
					req->app_len);
	if (ret) {
		fi_freeinfo(entry.info);
		free(cr);
		return ret;
	}
	nrma_dlist_insert_tail(&cr->link, &pep->connreqs);
	return 0;
}

static void pep_progress(void *arg)
{
	struct nrma_pep *pep = arg;

	pthread_mutex_lock(&pep->lock);
	nrma_cm_listener_progress(pep->listener);
	pthread_mutex_unlock(&pep->lock);
}

static int nrma_pep_listen(struct fid_pep *pep_fid)
{
	struct nrma_pep *pep =
		nrma_container_of(pep_fid, struct nrma_pep, pep_fid);
	struct nrma_cm_thread *thread;
	int ret;

	pthread_mutex_lock(&pep->lock);
	if (!pep->eq)
		ret = -FI_ENOEQ;
	else if (pep->cm_thread || !pep->listener)
		ret = -FI_EOPBADSTATE;
	else
		ret = nrma_cm_listener_listen(pep->listener, pep->backlog,
					      pep_on_request, pep);
	pthread_mutex_unlock(&pep->lock);
	/* The thread takes its lock before ours (nrma.h): not under ours. */
	if (!ret)
		ret = nrma_fabric_cm_thread(pep->fabric, &thread);
	if (!ret)
		ret = nrma_cm_thread_watch_fn(
			thread, nrma_cm_listener_fd(pep->listener),
			pep_progress, pep);
	if (!ret) {
		pthread_mutex_lock(&pep->lock);
		pep->cm_thread = thread;
		pthread_mutex_unlock(&pep->lock);
	}
	return ret;
}

static int nrma_pep_reject(struct fid_pep *pep_fid, fid_t handle,
			   const void *param, size_t paramlen)
{
	struct nrma_pep *pep =
		nrma_container_of(pep_fid, struct nrma_pep, pep_fid);
	struct nrma_cm_req *req = nrma_connreq_of(handle);
	int ret;

	if (!req ||
	    nrma_container_of(handle, struct nrma_connreq, fid)->pep != pep)
		return -FI_EINVAL;
	if (paramlen > NRMA_CM_MSG_APP_MAX || (paramlen && !param))
		return -FI_EINVAL;
	pthread_mutex_lock(&pep->lock);
	ret = nrma_cm_req_reject(req, param, paramlen);
	pep_connreq_free(nrma_container_of(handle, struct nrma_connreq, fid));
	pthread_mutex_unlock(&pep->lock);
	return ret;
}

static int nrma_pep_getname(fid_t fid, void *addr, size_t *addrlen)
{
	struct nrma_pep *pep = pep_of_fid(fid);
	struct sockaddr_in name;
	int ret;

	if (!addrlen)
		return -FI_EINVAL;
	pthread_mutex_lock(&pep->lock);
	ret = pep->listener ? nrma_cm_listener_name(pep->listener, &name) :
			      -FI_EOPBADSTATE;
	pthread_mutex_unlock(&pep->lock);
	return ret ? ret : nrma_addr_give(&name, addr, addrlen);
}

static int nrma_pep_setname(fid_t fid, void *addr, size_t addrlen)
{
	struct nrma_pep *pep = pep_of_fid(fid);
	int ret;

	if (!addr || addrlen != sizeof(struct sockaddr_in) ||
	    ((struct sockaddr *) addr)->sa_family != AF_INET)
		return -FI_EINVAL;
	pthread_mutex_lock(&pep->lock);
	if (pep->cm_thread || !pep->listener)
		ret = -FI_EOPBADSTATE;
	else
		ret = nrma_cm_listener_rebind(pep->listener, addr);
	pthread_mutex_unlock(&pep->lock);
	return ret;
}

static struct fi_ops_cm nrma_pep_cm_ops = {
	.size = sizeof(struct fi_ops_cm),
	.setname = nrma_pep_setname,
	.getname = nrma_pep_getname,
	.getpeer = nrma_no_getpeer,
	.connect = nrma_no_connect,
	.listen = nrma_pep_listen,
	.accept = nrma_no_accept,
	.reject = nrma_pep_reject,
	.shutdown = nrma_no_shutdown,
	.join = nrma_no_join,
};

/* Only FI_OPT_CM_DATA_SIZE: what a request may carry. */
static int nrma_pep_getopt(fid_t fid, int level, int optname, void *optval,
			   size_t *optlen)
{
	size_t size = NRMA_CM_MSG_APP_MAX;

	(void) fid;
	if (level != FI_OPT_ENDPOINT || optname != FI_OPT_CM_DATA_SIZE)
		return -FI_ENOPROTOOPT;
	if (!optval || !optlen)
		return -FI_EINVAL;
	if (*optlen < sizeof(size)) {
		*optlen = sizeof(size);
		return -FI_ETOOSMALL;
	}
	memcpy(optval, &size, sizeof(size));
	*optlen = sizeof(size);
	return 0;
}

static struct fi_ops_ep nrma_pep_ops = {
	.size = sizeof(struct fi_ops_ep),
	.cancel = nrma_no_cancel,
	.getopt = nrma_pep_getopt,
	.setopt = nrma_no_setopt,
	.tx_ctx = nrma_no_tx_ctx,
	.rx_ctx = nrma_no_rx_ctx,
	.rx_size_left = nrma_no_size_left,
	.tx_size_left = nrma_no_size_left,
};

static int nrma_pep_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	struct nrma_pep *pep = pep_of_fid(fid);
	int ret = 0;

	if (!bfid || bfid->fclass != FI_CLASS_EQ)
		return -FI_EINVAL;
	if (flags)
		return -FI_EBADFLAGS;
	pthread_mutex_lock(&pep->lock);
	if (pep->eq || pep->cm_thread) {
		ret = -FI_EINVAL;
	} else {
		pep->eq = nrma_eq_of_fid(bfid);
		atomic_fetch_add(&pep->eq->ref, 1);
	}
	pthread_mutex_unlock(&pep->lock);
	return ret;
}

/* FI_BACKLOG: requests the kernel holds for us; before fi_listen only. */
static int nrma_pep_control(struct fid *fid, int command, void *arg)
{
	struct nrma_pep *pep = pep_of_fid(fid);
	int ret = 0;

	if (command != FI_BACKLOG)
		return -FI_ENOSYS;
	if (!arg || *(int *) arg <= 0)
		return -FI_EINVAL;
	pthread_mutex_lock(&pep->lock);
	if (pep->cm_thread)
		ret = -FI_EOPBADSTATE;
	else
		pep->backlog = *(int *) arg;
	pthread_mutex_unlock(&pep->lock);
	return ret;
}

/* Requests nobody answered are refused. */
static int nrma_pep_close(struct fid *fid)
{
	struct nrma_pep *pep = pep_of_fid(fid);
	struct nrma_dlist *item;

	if (pep->cm_thread)
		nrma_cm_thread_unwatch_fn(pep->cm_thread,
					  nrma_cm_listener_fd(pep->listener),
					  pep);
	while ((item = pep->connreqs.next) != &pep->connreqs) {
		struct nrma_connreq *cr =
			nrma_container_of(item, struct nrma_connreq, link);

		nrma_cm_req_reject(&cr->req, NULL, 0);
		pep_connreq_free(cr);
	}
	if (pep->listener)
		nrma_cm_listener_close(pep->listener);
	if (pep->eq)
		atomic_fetch_sub(&pep->eq->ref, 1);
	atomic_fetch_sub(&pep->fabric->ref, 1);
	pthread_mutex_destroy(&pep->lock);
	fi_freeinfo(pep->info);
	free(pep);
	return 0;
}

static struct fi_ops nrma_pep_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = nrma_pep_close,
	.bind = nrma_pep_bind,
	.control = nrma_pep_control,
	.ops_open = nrma_no_ops_open,
};

/* The bound id of a passive endpoint not listening, for fi_info handle. */
struct rdma_cm_id *nrma_pep_release(struct fid *handle)
{
	struct nrma_pep *pep;
	struct rdma_cm_id *id = NULL;

	if (!handle || handle->fclass != FI_CLASS_PEP ||
	    handle->ops != &nrma_pep_fi_ops)
		return NULL;
	pep = pep_of_fid(handle);
	pthread_mutex_lock(&pep->lock);
	if (!pep->cm_thread && pep->listener)
		id = nrma_cm_listener_release(pep->listener);
	pthread_mutex_unlock(&pep->lock);
	return id;
}

#define NRMA_PEP_BACKLOG 128

static int pep_info_check(const struct fi_info *info)
{
	if (!info || !info->ep_attr || info->ep_attr->type != FI_EP_MSG)
		return -FI_EINVAL;
	if (info->src_addr &&
	    (info->src_addrlen != sizeof(struct sockaddr_in) ||
	     ((struct sockaddr *) info->src_addr)->sa_family != AF_INET))
		return -FI_EINVAL;
	return 0;
}

int nrma_pep_open(struct fid_fabric *fabric_fid, struct fi_info *info,
		  struct fid_pep **pep_fid, void *context)
{
	struct sockaddr_in src = { .sin_family = AF_INET };
	struct nrma_pep *pep;
	int ret = pep_info_check(info);

	if (ret)
		return ret;
	pep = calloc(1, sizeof(*pep));
	if (!pep)
		return -FI_ENOMEM;
	if (info->src_addr)
		memcpy(&src, info->src_addr, sizeof(src));
	pep->info = fi_dupinfo(info);
	ret = pep->info ? nrma_cm_listener_open(&src, &pep->listener) :
			  -FI_ENOMEM;
	if (ret) {
		fi_freeinfo(pep->info);
		free(pep);
		return ret;
	}
	pthread_mutex_init(&pep->lock, NULL);
	nrma_dlist_init(&pep->connreqs);
	pep->fabric = nrma_fabric_of(fabric_fid);
	pep->backlog = NRMA_PEP_BACKLOG;
	pep->pep_fid.fid.fclass = FI_CLASS_PEP;
	pep->pep_fid.fid.context = context;
	pep->pep_fid.fid.ops = &nrma_pep_fi_ops;
	pep->pep_fid.ops = &nrma_pep_ops;
	pep->pep_fid.cm = &nrma_pep_cm_ops;
	atomic_fetch_add(&pep->fabric->ref, 1);
	*pep_fid = &pep->pep_fid;
	return 0;
}
