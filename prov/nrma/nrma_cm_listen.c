/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A passive endpoint's rdmacm listener (fi_passive_ep, fi_listen): a
 * bound id on an event channel of its own.  Each connection request that
 * carries FI_EP_MSG connect data becomes a struct nrma_cm_req, handed to
 * the passive endpoint, which the application answers with fi_accept (an
 * active endpoint takes the request's id, nrma_cm_accept) or fi_reject.
 * Requests of other kinds are refused here.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/rdma_cma.h>

#include "nrma.h"
#include "nrma_cm.h"

struct nrma_cm_listener {
	struct rdma_event_channel *channel;
	struct rdma_cm_id *id; /* NULL once released */
	nrma_cm_request_fn on_request;
	void *arg;
};

static int listener_bind(struct nrma_cm_listener *l,
			 const struct sockaddr_in *addr)
{
	struct rdma_cm_id *id = NULL; /* GCC cannot see the bind set it */
	int ret = nrma_cm_id_bind(l->channel, addr, &id);

	if (ret)
		return ret;
	if (l->id)
		rdma_destroy_id(l->id);
	l->id = id;
	return 0;
}

int nrma_cm_listen_open(const struct sockaddr_in *addr,
			struct nrma_cm_listener **listener)
{
	struct nrma_cm_listener *l = calloc(1, sizeof(*l));
	int ret;

	if (!l)
		return -FI_ENOMEM;
	l->channel = rdma_create_event_channel();
	if (!l->channel) {
		ret = -errno;
		goto err;
	}
	ret = fcntl(l->channel->fd, F_SETFL, O_NONBLOCK) ? -errno : 0;
	if (!ret)
		ret = listener_bind(l, addr);
	if (!ret) {
		*listener = l;
		return 0;
	}
	rdma_destroy_event_channel(l->channel);
err:
	free(l);
	return ret;
}

int nrma_cm_listen_name(struct nrma_cm_listener *l, struct sockaddr_in *name)
{
	return nrma_cm_id_name(l->id, name);
}

int nrma_cm_listen_rebind(struct nrma_cm_listener *l,
			  const struct sockaddr_in *addr)
{
	return l->id ? listener_bind(l, addr) : -FI_EOPBADSTATE;
}

int nrma_cm_listen_start(struct nrma_cm_listener *l, int backlog,
			 nrma_cm_request_fn on_request, void *arg)
{
	if (!l->id)
		return -FI_EOPBADSTATE;
	l->on_request = on_request;
	l->arg = arg;
	return rdma_listen(l->id, backlog) ? -errno : 0;
}

struct rdma_cm_id *nrma_cm_listen_release(struct nrma_cm_listener *l)
{
	struct rdma_cm_id *id = l->id;

	l->id = NULL;
	return id;
}

int nrma_cm_listen_fd(const struct nrma_cm_listener *l)
{
	return l->channel->fd;
}

static void listener_refuse(struct rdma_cm_id *id)
{
	uint8_t data[NRMA_CM_REQ_DATA_MAX];

	rdma_reject(id, data, nrma_proto_msg_data_init(data, NULL, NULL, 0));
	rdma_destroy_id(id);
}

/* Whether a request is one to hand up, as req. */
static bool listener_req(struct rdma_cm_event *ev, struct nrma_cm_req *req)
{
	const struct nrma_cm_msg_data *data = nrma_proto_msg_data_parse(
		ev->param.conn.private_data, ev->param.conn.private_data_len);
	const struct sockaddr *peer = rdma_get_peer_addr(ev->id);
	const struct sockaddr *local = rdma_get_local_addr(ev->id);

	if (!data || !nrma_proto_grant_valid(&data->grant) ||
	    peer->sa_family != AF_INET || local->sa_family != AF_INET)
		return false;
	*req = (struct nrma_cm_req){
		.id = ev->id,
		.grant = data->grant,
		.app_len = data->app_len,
	};
	memcpy(&req->peer, peer, sizeof(req->peer));
	memcpy(&req->local, local, sizeof(req->local));
	memcpy(req->app, data->app, data->app_len);
	return true;
}

/*
 * Only requests come here while they are not taken; anything else (a
 * requester that gave up) waits for the application's answer.  An event
 * is acknowledged before its request is handed up: an accept migrates
 * the id, which waits for that.
 */
void nrma_cm_listen_progress(struct nrma_cm_listener *l)
{
	struct rdma_cm_event *ev;

	while (!rdma_get_cm_event(l->channel, &ev)) {
		struct rdma_cm_id *id = ev->id;
		struct nrma_cm_req req;
		bool request = ev->event == RDMA_CM_EVENT_CONNECT_REQUEST;
		bool ours = request && listener_req(ev, &req);

		NRMA_DBG(FI_LOG_EP_CTRL, "listener: %s\n",
			 rdma_event_str(ev->event));
		rdma_ack_cm_event(ev);
		if (request && (!ours || l->on_request(l->arg, &req))) {
			NRMA_INFO(FI_LOG_EP_CTRL,
				  "refusing a connection request%s\n",
				  ours ? "" :
					 " without FI_EP_MSG connect data");
			listener_refuse(id);
		}
	}
}

int nrma_cm_listen_req_reject(struct nrma_cm_req *req, const void *app,
			      size_t len)
{
	uint8_t data[NRMA_CM_REQ_DATA_MAX];

	if (!req->id)
		return -FI_EOPBADSTATE;
	return rdma_reject(req->id, data,
			   nrma_proto_msg_data_init(data, NULL, app, len)) ?
		       -errno :
		       0;
}

void nrma_cm_listen_req_done(struct nrma_cm_req *req)
{
	if (req->id)
		rdma_destroy_id(req->id);
	req->id = NULL;
}

void nrma_cm_listen_close(struct nrma_cm_listener *l)
{
	if (l->id)
		rdma_destroy_id(l->id);
	rdma_destroy_event_channel(l->channel);
	free(l);
}
