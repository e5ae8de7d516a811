/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Connection-oriented endpoints (FI_EP_MSG): one RC queue pair to one
 * peer, made by fi_connect or by fi_accept of a passive endpoint's
 * request (nrma_pep.c), ended by fi_shutdown or by the peer.  The data
 * path is the RDM endpoint's, over that one connection (nrma_xfer.c).
 * What the endpoint hears of its connection goes to its EQ: FI_CONNECTED
 * (with the peer's accept data on the connecting side), FI_SHUTDOWN
 * once it was up, else an error entry (FI_ECONNREFUSED with the peer's
 * reject data, or why it could not be made).
 */
#include <string.h>

#include "nrma.h"
#include "nrma_cm.h"
#include "nrma_enosys.h"

static void ep_conn_report_up(void *arg, struct nrma_conn *conn,
			      const void *app, size_t len)
{
	struct nrma_ep *ep = arg;
	struct fi_eq_cm_entry entry = { .fid = &ep->path.ep_fid.fid };

	nrma_progress_cm_ops.connected(arg, conn, app, len);
	if (nrma_eq_report_cm(ep->eq, FI_CONNECTED, &entry, app, len))
		NRMA_WARN(FI_LOG_EP_CTRL, "FI_CONNECTED lost: EQ full\n");
}

static void ep_conn_report_down(void *arg, struct nrma_conn *conn)
{
	struct nrma_ep *ep = arg;
	struct fi_eq_cm_entry entry = { .fid = &ep->path.ep_fid.fid };
	struct fi_eq_err_entry err = {
		.fid = &ep->path.ep_fid.fid,
		.context = ep->path.ep_fid.fid.context,
		.err = -conn->error,
		.prov_errno = conn->error, /* negative: no device event */
	};
	const void *app = NULL;
	size_t len = 0;
	int ret;

	nrma_progress_cm_ops.conn_failed(arg, conn);
	if (conn->announced) {
		ret = nrma_eq_report_cm(ep->eq, FI_SHUTDOWN, &entry, NULL, 0);
	} else {
		if (conn->error == -FI_ECONNREFUSED)
			len = nrma_cm_reject_data(ep->cm, &app);
		ret = nrma_eq_report_err(ep->eq, &err, app, len);
	}
	if (ret)
		NRMA_WARN(FI_LOG_EP_CTRL, "connection event lost: EQ full\n");
}

/* The RDM endpoint's handling, and the EQ events of fi_cm(3). */
const struct nrma_cm_ops nrma_ep_conn_cm_ops = {
	.conn_failed = ep_conn_report_down,
	.drain = nrma_progress_drain,
	.probe = nrma_progress_probe,
	.conn_open = nrma_progress_conn_open,
	.conn_close = nrma_progress_conn_close,
	.connected = ep_conn_report_up,
};

static int ep_conn_addr_check(const void *addr)
{
	const struct sockaddr_in *sin = addr;

	return sin && sin->sin_family == AF_INET && sin->sin_port ? 0 :
								    -FI_EINVAL;
}

/* fi_connect and fi_accept enable the endpoint if it is not yet. */
static int ep_conn_enable(struct nrma_ep *ep)
{
	bool enabled;

	pthread_mutex_lock(ep->lock);
	enabled = ep->enabled;
	pthread_mutex_unlock(ep->lock);
	return enabled ? 0 : nrma_ep_enable(ep);
}

static int nrma_ep_connect(struct fid_ep *ep_fid, const void *addr,
			   const void *param, size_t paramlen)
{
	struct nrma_ep *ep = nrma_ep_of(ep_fid);
	int ret;

	/* Connection data that does not fit is refused, not cut short. */
	if (ep_conn_addr_check(addr) || paramlen > NRMA_CM_MSG_APP_MAX ||
	    (paramlen && !param))
		return -FI_EINVAL;
	ret = ep_conn_enable(ep);
	if (ret)
		return ret;
	pthread_mutex_lock(ep->lock);
	ret = nrma_cm_connect(ep->cm, addr, param, paramlen);
	pthread_mutex_unlock(ep->lock);
	return ret;
}

/* Accepts the request the endpoint's fi_info came with (FI_CONNREQ). */
static int nrma_ep_accept(struct fid_ep *ep_fid, const void *param,
			  size_t paramlen)
{
	struct nrma_ep *ep = nrma_ep_of(ep_fid);
	struct nrma_cm_req *req = ep->connreq;
	int ret;

	if (!req || paramlen > NRMA_CM_MSG_APP_MAX || (paramlen && !param))
		return -FI_EINVAL;
	ret = ep_conn_enable(ep);
	if (ret)
		return ret;
	pthread_mutex_lock(ep->lock);
	ret = nrma_cm_accept(ep->cm, req, param, paramlen);
	pthread_mutex_unlock(ep->lock);
	if (!ret) {
		nrma_pep_connreq_done(ep->domain->fabric, req);
		ep->connreq = NULL;
	}
	return ret;
}

/*
 * The connection ends at once: what is posted on it completes with
 * errors before this returns (receives stay posted), and FI_SHUTDOWN
 * goes to the EQ, as to the peer's.
 */
static int nrma_ep_shutdown(struct fid_ep *ep_fid, uint64_t flags)
{
	struct nrma_ep *ep = nrma_ep_of(ep_fid);

	if (flags)
		return -FI_EBADFLAGS;
	pthread_mutex_lock(ep->lock);
	nrma_cm_shutdown(ep->cm);
	pthread_mutex_unlock(ep->lock);
	nrma_progress_settle(ep);
	return 0;
}

static int nrma_ep_getpeer(struct fid_ep *ep_fid, void *addr, size_t *addrlen)
{
	struct nrma_ep *ep = nrma_ep_of(ep_fid);
	struct sockaddr_in peer;
	int ret;

	if (!addrlen)
		return -FI_EINVAL;
	pthread_mutex_lock(ep->lock);
	ret = nrma_cm_peer(ep->cm, &peer);
	pthread_mutex_unlock(ep->lock);
	return ret ? ret : nrma_addr_give(&peer, addr, addrlen);
}

struct fi_ops_cm nrma_ep_conn_ops = {
	.size = sizeof(struct fi_ops_cm),
	.setname = nrma_ep_setname,
	.getname = nrma_ep_getname,
	.getpeer = nrma_ep_getpeer,
	.connect = nrma_ep_connect,
	.listen = nrma_no_listen,
	.accept = nrma_ep_accept,
	.reject = nrma_no_reject,
	.shutdown = nrma_ep_shutdown,
	.join = nrma_no_join,
};
