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

/*
 * A connection request, the handle of an FI_CONNREQ's info.  It stays on
 * its fabric's list (fabric->handles_lock) until it is done: refused by
 * fi_reject, accepted or refused by the endpoint that took it, or, once
 * its passive endpoint closed and refused it (an orphan), by fi_endpoint
 * or the fabric's close.  A handle is found on that list before it is
 * read, so no order of calls uses one that is gone.
 */
enum nrma_connreq_state {
	NRMA_CONNREQ_WAITING, /* for its passive endpoint's answer */
	NRMA_CONNREQ_TAKEN,   /* an endpoint answers it */
	NRMA_CONNREQ_ORPHAN,  /* its passive endpoint closed and refused it */
};

struct nrma_connreq {
	struct nrma_dlist link; /* first: the fabric's close frees orphans */
	struct fid fid;
	struct nrma_cm_req req;
	enum nrma_connreq_state state;
	struct nrma_pep *pep; /* NRMA_CONNREQ_WAITING: whose */
};
_Static_assert(offsetof(struct nrma_connreq, link) == 0,
	       "a request is freed through its link");

struct nrma_pep {
	struct fid_pep pep_fid;
	struct nrma_fabric *fabric;
	struct nrma_dlist link; /* fabric->peps */
	struct fi_info *info;
	pthread_mutex_t lock; /* an endpoint's place in nrma.h's lock order */
	struct nrma_eq *eq;
	struct nrma_cm_listener *listener;
	struct nrma_cm_thread *cm_thread; /* while listening */
	int backlog;
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

static struct nrma_connreq *connreq_of(struct nrma_cm_req *req)
{
	return nrma_container_of(req, struct nrma_connreq, req);
}

/* With handles_lock held: the request handle names, compared, not read. */
static struct nrma_connreq *pep_connreq_find(struct nrma_fabric *fabric,
					     const struct fid *handle)
{
	struct nrma_dlist *item;

	if (!handle)
		return NULL;
	nrma_dlist_foreach (&fabric->connreqs, item) {
		struct nrma_connreq *cr =
			nrma_container_of(item, struct nrma_connreq, link);

		if (&cr->fid == handle)
			return cr;
	}
	return NULL;
}

bool nrma_pep_connreq_known(struct nrma_fabric *fabric,
			    const struct fid *handle)
{
	bool known;

	pthread_mutex_lock(&fabric->handles_lock);
	known = pep_connreq_find(fabric, handle) != NULL;
	pthread_mutex_unlock(&fabric->handles_lock);
	return known;
}

/* Off the list, its id gone: nobody can name it any more. */
static void pep_connreq_forget(struct nrma_fabric *fabric,
			       struct nrma_connreq *cr)
{
	pthread_mutex_lock(&fabric->handles_lock);
	nrma_dlist_remove(&cr->link);
	pthread_mutex_unlock(&fabric->handles_lock);
	nrma_cm_listen_req_done(&cr->req);
	free(cr);
}

void nrma_pep_connreq_done(struct nrma_fabric *fabric, struct nrma_cm_req *req)
{
	pep_connreq_forget(fabric, connreq_of(req));
}

void nrma_pep_connreq_refuse(struct nrma_fabric *fabric,
			     struct nrma_cm_req *req)
{
	nrma_cm_listen_req_reject(req, NULL, 0);
	nrma_pep_connreq_done(fabric, req);
}

/*
 * fi_endpoint on an FI_CONNREQ's info: the endpoint answers the request
 * from then on, also once the passive endpoint has closed, and neither
 * fi_reject nor a second endpoint can take it.  The request moves to cm's
 * channel under handles_lock, before a passive endpoint's close can take
 * the listener's channel, and the request's id with it, away.
 */
int nrma_pep_connreq_take(struct nrma_fabric *fabric, const struct fid *handle,
			  struct nrma_cm *cm, struct nrma_cm_req **req)
{
	enum nrma_connreq_state state = NRMA_CONNREQ_TAKEN;
	struct nrma_connreq *cr;
	int ret = 0;

	pthread_mutex_lock(&fabric->handles_lock);
	cr = pep_connreq_find(fabric, handle);
	if (cr)
		state = cr->state;
	if (state == NRMA_CONNREQ_ORPHAN) {
		nrma_dlist_remove(&cr->link);
	} else if (state == NRMA_CONNREQ_WAITING) {
		cr->state = NRMA_CONNREQ_TAKEN;
		cr->pep = NULL;
		ret = nrma_cm_req_adopt(cm, &cr->req);
	}
	pthread_mutex_unlock(&fabric->handles_lock);
	if (state == NRMA_CONNREQ_ORPHAN) {
		free(cr); /* refused, its id gone: only the handle was left */
		return -FI_ECONNABORTED;
	}
	if (state == NRMA_CONNREQ_TAKEN)
		return -FI_EINVAL;
	if (ret)
		nrma_pep_connreq_refuse(fabric, &cr->req);
	else
		*req = &cr->req;
	return ret;
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
	cr->state = NRMA_CONNREQ_WAITING;
	/* Known before the application can read it. */
	pthread_mutex_lock(&pep->fabric->handles_lock);
	nrma_dlist_insert_tail(&cr->link, &pep->fabric->connreqs);
	pthread_mutex_unlock(&pep->fabric->handles_lock);
	entry.info = pep_connreq_info(pep, cr);
	if (entry.info)
		ret = nrma_eq_report_cm(pep->eq, FI_CONNREQ, &entry, req->app,
					req->app_len);
	if (ret) {
		fi_freeinfo(entry.info);
		/* The listener refuses it and keeps its id. */
		cr->req.id = NULL;
		pep_connreq_forget(pep->fabric, cr);
	}
	return ret;
}

static void pep_progress(void *arg)
{
	struct nrma_pep *pep = arg;

	pthread_mutex_lock(&pep->lock);
	nrma_cm_listen_progress(pep->listener);
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
		ret = nrma_cm_listen_start(pep->listener, pep->backlog,
					   pep_on_request, pep);
	pthread_mutex_unlock(&pep->lock);
	/* The thread takes its lock before ours (nrma.h): not under ours. */
	if (!ret)
		ret = nrma_fabric_cm_thread(pep->fabric, &thread);
	if (!ret)
		ret = nrma_cm_thread_watch_fn(thread,
					      nrma_cm_listen_fd(pep->listener),
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
	struct nrma_fabric *fabric = pep->fabric;
	struct nrma_connreq *cr;
	int ret;

	if (paramlen > NRMA_CM_MSG_APP_MAX || (paramlen && !param))
		return -FI_EINVAL;
	pthread_mutex_lock(&fabric->handles_lock);
	cr = pep_connreq_find(fabric, handle);
	if (cr && cr->state == NRMA_CONNREQ_WAITING && cr->pep == pep)
		cr->state = NRMA_CONNREQ_TAKEN; /* by us */
	else
		cr = NULL;
	pthread_mutex_unlock(&fabric->handles_lock);
	if (!cr)
		return -FI_EINVAL;
	ret = nrma_cm_listen_req_reject(&cr->req, param, paramlen);
	pep_connreq_forget(fabric, cr);
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
	ret = pep->listener ? nrma_cm_listen_name(pep->listener, &name) :
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
		ret = nrma_cm_listen_rebind(pep->listener, addr);
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

/*
 * Requests nobody answered are refused, and stay known as orphans: their
 * infos may still be in the EQ or the application's hands.
 */
static void pep_orphan_connreqs(struct nrma_pep *pep)
{
	struct nrma_fabric *fabric = pep->fabric;
	struct nrma_dlist *item;

	pthread_mutex_lock(&fabric->handles_lock);
	nrma_dlist_remove(&pep->link);
	nrma_dlist_foreach (&fabric->connreqs, item) {
		struct nrma_connreq *cr =
			nrma_container_of(item, struct nrma_connreq, link);

		if (cr->state != NRMA_CONNREQ_WAITING || cr->pep != pep)
			continue;
		nrma_cm_listen_req_reject(&cr->req, NULL, 0);
		nrma_cm_listen_req_done(&cr->req);
		cr->state = NRMA_CONNREQ_ORPHAN;
		cr->pep = NULL;
	}
	pthread_mutex_unlock(&fabric->handles_lock);
}

static int nrma_pep_close(struct fid *fid)
{
	struct nrma_pep *pep = pep_of_fid(fid);

	if (pep->cm_thread)
		nrma_cm_thread_unwatch_fn(
			pep->cm_thread, nrma_cm_listen_fd(pep->listener), pep);
	pep_orphan_connreqs(pep);
	if (pep->listener)
		nrma_cm_listen_close(pep->listener);
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

/* With handles_lock held: the open passive endpoint handle names. */
static struct nrma_pep *pep_find(struct nrma_fabric *fabric,
				 const struct fid *handle)
{
	struct nrma_dlist *item;

	nrma_dlist_foreach (&fabric->peps, item) {
		struct nrma_pep *pep =
			nrma_container_of(item, struct nrma_pep, link);

		if (&pep->pep_fid.fid == handle)
			return pep;
	}
	return NULL;
}

/* The bound id of a passive endpoint not listening, for fi_info handle. */
struct rdma_cm_id *nrma_pep_release(struct nrma_fabric *fabric,
				    const struct fid *handle)
{
	struct nrma_pep *pep;
	struct rdma_cm_id *id = NULL;

	pthread_mutex_lock(&fabric->handles_lock);
	pep = pep_find(fabric, handle);
	pthread_mutex_unlock(&fabric->handles_lock);
	if (!pep)
		return NULL;
	pthread_mutex_lock(&pep->lock);
	if (!pep->cm_thread && pep->listener)
		id = nrma_cm_listen_release(pep->listener);
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
	ret = pep->info ? nrma_cm_listen_open(&src, &pep->listener) :
			  -FI_ENOMEM;
	if (ret) {
		fi_freeinfo(pep->info);
		free(pep);
		return ret;
	}
	pthread_mutex_init(&pep->lock, NULL);
	pep->fabric = nrma_fabric_of(fabric_fid);
	pep->backlog = NRMA_PEP_BACKLOG;
	pep->pep_fid.fid.fclass = FI_CLASS_PEP;
	pep->pep_fid.fid.context = context;
	pep->pep_fid.fid.ops = &nrma_pep_fi_ops;
	pep->pep_fid.ops = &nrma_pep_ops;
	pep->pep_fid.cm = &nrma_pep_cm_ops;
	atomic_fetch_add(&pep->fabric->ref, 1);
	pthread_mutex_lock(&pep->fabric->handles_lock);
	nrma_dlist_insert_tail(&pep->link, &pep->fabric->peps);
	pthread_mutex_unlock(&pep->fabric->handles_lock);
	*pep_fid = &pep->pep_fid;
	return 0;
}
