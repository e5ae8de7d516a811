/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Connection management over rdmacm.  Every RDM endpoint owns a listening
 * rdmacm id on its own address; its bound address is the endpoint's name.
 * A connection to a peer is made on first use of its fi_addr_t.  The
 * connect and accept private data carry our protocol version and the
 * sender's endpoint name (the source port of a request is not it).
 *
 * When two endpoints connect to each other at once, both apply the same
 * rule: the connection initiated by the endpoint with the smaller name
 * wins.  The smaller one rejects the other's request (saying why), the
 * larger one accepts it and drops its own attempt.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rdma/rdma_cma.h>

#include "nrma.h"
#include "nrma_verbs.h"

#define NRMA_CM_MAGIC		0x6e726d61	/* "nrma" */
#define NRMA_CM_TIMEOUT_MS	2000
#define NRMA_RDMA_DEPTH		16	/* RDMA reads/atomics in flight */
/* A peer that refuses us may not be listening yet: keep trying this long. */
#define NRMA_CONNECT_PATIENCE_MS	10000

enum nrma_reject_reason {
	NRMA_REJECT_COLLISION = 1,	/* our own request wins */
	NRMA_REJECT_VERSION,
};

/*
 * Private data of connect and accept (at most 56 bytes on IB): who we
 * are, and where peers bump our notification counters.
 */
struct nrma_cm_data {
	uint32_t magic;
	uint16_t version;
	uint16_t reject_reason;
	struct sockaddr_in name;
	uint32_t notify_rkey;		/* the endpoint's notification cell */
};

_Static_assert(sizeof(struct nrma_cm_data) <= 56, "rdmacm REQ private data");

struct nrma_listener {
	struct rdma_event_channel *channel;
	struct rdma_cm_id *id;
};

int nrma_listener_open(const struct sockaddr_in *addr,
		       struct nrma_listener **listener)
{
	struct nrma_listener *l;
	int ret;

	l = calloc(1, sizeof(*l));
	if (!l)
		return -FI_ENOMEM;
	l->channel = rdma_create_event_channel();
	if (!l->channel) {
		ret = -errno;
		goto err_free;
	}
	/* Connection events are reaped by progress, never waited for. */
	if (fcntl(l->channel->fd, F_SETFL, O_NONBLOCK)) {
		ret = -errno;
		goto err_channel;
	}
	if (rdma_create_id(l->channel, &l->id, NULL, RDMA_PS_TCP)) {
		ret = -errno;
		goto err_channel;
	}
	if (rdma_bind_addr(l->id, (struct sockaddr *) addr)) {
		ret = -errno;
		goto err_id;
	}
	*listener = l;
	return 0;

err_id:
	rdma_destroy_id(l->id);
err_channel:
	rdma_destroy_event_channel(l->channel);
err_free:
	free(l);
	NRMA_INFO(FI_LOG_EP_CTRL, "cannot bind to %s:%u: %s\n",
		  inet_ntoa(addr->sin_addr), ntohs(addr->sin_port),
		  fi_strerror(-ret));
	return ret;
}

int nrma_listener_name(struct nrma_listener *l, struct sockaddr_in *name)
{
	struct sockaddr *sa = rdma_get_local_addr(l->id);

	if (sa->sa_family != AF_INET)
		return -FI_EINVAL;
	memcpy(name, sa, sizeof(*name));
	return 0;
}

int nrma_listener_listen(struct nrma_listener *l)
{
	return rdma_listen(l->id, 0) ? -errno : 0;
}

int nrma_listener_fd(const struct nrma_listener *l)
{
	return l->channel->fd;
}

/* Outgoing connections share the listener's event channel. */
struct rdma_event_channel *nrma_listener_channel(struct nrma_listener *l)
{
	return l->channel;
}

void nrma_listener_close(struct nrma_listener *l)
{
	rdma_destroy_id(l->id);
	rdma_destroy_event_channel(l->channel);
	free(l);
}

static int name_cmp(const struct sockaddr_in *a, const struct sockaddr_in *b)
{
	uint32_t ia = ntohl(a->sin_addr.s_addr), ib = ntohl(b->sin_addr.s_addr);

	if (ia != ib)
		return ia < ib ? -1 : 1;
	return ntohs(a->sin_port) - ntohs(b->sin_port);
}

static void cm_data_init(const struct nrma_ep *ep, struct nrma_cm_data *data,
			 uint16_t reject_reason)
{
	*data = (struct nrma_cm_data) {
		.magic = htonl(NRMA_CM_MAGIC),
		.version = htons(NRMA_PROTOCOL_VERSION),
		.reject_reason = htons(reject_reason),
		.name = ep->name,
		.notify_rkey = ep->notify_cell ?
			       nrma_notify_cell_rkey(ep->notify_cell) : 0,
	};
}

static void conn_learn_peer(struct nrma_conn *conn,
			    const struct nrma_cm_data *data)
{
	conn->notify_rkey = data->notify_rkey;
}

static const struct nrma_cm_data *cm_data_of(const struct rdma_cm_event *ev)
{
	const struct nrma_cm_data *data = ev->param.conn.private_data;

	if (!data || ev->param.conn.private_data_len < sizeof(*data) ||
	    ntohl(data->magic) != NRMA_CM_MAGIC)
		return NULL;
	return data;
}

static struct rdma_conn_param conn_param(const struct nrma_ep *ep,
					 const struct nrma_cm_data *data)
{
	size_t depth = ep->domain->device->limits.max_qp_rd_atom;

	if (depth > NRMA_RDMA_DEPTH)
		depth = NRMA_RDMA_DEPTH;
	return (struct rdma_conn_param) {
		.private_data = data,
		.private_data_len = sizeof(*data),
		.responder_resources = depth,
		.initiator_depth = depth,
		.retry_count = 7,
		/* A receiver out of buffers slows senders down, forever. */
		.rnr_retry_count = 7,
	};
}

static struct nrma_conn *conn_alloc(struct nrma_ep *ep, struct rdma_cm_id *id,
				    const struct sockaddr_in *peer,
				    bool outgoing)
{
	struct nrma_conn *conn = calloc(1, sizeof(*conn));

	if (!conn)
		return NULL;
	conn->ep = ep;
	conn->id = id;
	conn->peer = *peer;
	conn->outgoing = outgoing;
	conn->state = NRMA_CONN_CONNECTING;
	conn->fi_addr = FI_ADDR_NOTAVAIL;
	id->context = conn;
	nrma_dlist_insert_tail(&conn->link, &ep->conns);
	return conn;
}

static void conn_unmap(struct nrma_conn *conn)
{
	struct nrma_ep *ep = conn->ep;

	if (conn->fi_addr < ep->npeers && ep->peers[conn->fi_addr] == conn)
		ep->peers[conn->fi_addr] = NULL;
	if (conn->qp)
		nrma_hash_remove(&ep->qp_conns, conn->qp_num);
}

static void conn_release_id(struct nrma_conn *conn)
{
	conn_unmap(conn);
	if (conn->qp)
		rdma_destroy_qp(conn->id);
	conn->qp = NULL;
	if (conn->id)
		rdma_destroy_id(conn->id);
	conn->id = NULL;
}

/* For connections that never carried an operation. */
static void conn_destroy(struct nrma_conn *conn)
{
	conn_release_id(conn);
	nrma_dlist_remove(&conn->link);
	free(conn);
}

/*
 * A failed connection gives up its queue pair but its struct stays on
 * the endpoint's list until the endpoint closes: operations that used it
 * may still be completing.
 */
static void conn_retire(struct nrma_conn *conn)
{
	conn_release_id(conn);
	conn->state = NRMA_CONN_FAILED;
}

void nrma_conn_fail(struct nrma_conn *conn, int error)
{
	if (conn->state == NRMA_CONN_FAILED)
		return;
	NRMA_INFO(FI_LOG_EP_CTRL, "%s connection %s:%u failed: %s\n",
		  conn->outgoing ? "outgoing" : "incoming",
		  inet_ntoa(conn->peer.sin_addr), ntohs(conn->peer.sin_port),
		  fi_strerror(error));
	conn->state = NRMA_CONN_FAILED;
	conn->error = error;
	nrma_proto_conn_failed(conn->ep, conn);
}

static int peers_reserve(struct nrma_ep *ep, fi_addr_t fi_addr)
{
	size_t n = ep->npeers ? ep->npeers : 64;
	struct nrma_conn **peers;

	if (fi_addr < ep->npeers)
		return 0;
	while (n <= fi_addr)
		n *= 2;
	peers = realloc(ep->peers, n * sizeof(*peers));
	if (!peers)
		return -FI_ENOMEM;
	memset(peers + ep->npeers, 0, (n - ep->npeers) * sizeof(*peers));
	ep->peers = peers;
	ep->npeers = n;
	return 0;
}

static int conn_map(struct nrma_conn *conn, fi_addr_t fi_addr)
{
	int ret = peers_reserve(conn->ep, fi_addr);

	if (ret)
		return ret;
	conn->fi_addr = fi_addr;
	conn->ep->peers[fi_addr] = conn;
	return 0;
}

static int conn_create_qp(struct nrma_conn *conn)
{
	struct nrma_ep *ep = conn->ep;
	int ret;

	/*
	 * Per peer, only a small send queue: a full one pushes back on
	 * sends with -FI_EAGAIN and delays ACKs and reads, and receive
	 * buffers come from the endpoint's shared receive queue.
	 */
	ret = nrma_verbs_qp_create(ep->verbs, ep->domain->verbs, conn->id,
				   nrma_params.qp_depth, NRMA_IOV_LIMIT);
	if (ret)
		return ret;
	conn->qp = conn->id->qp;
	conn->qp_num = conn->id->qp->qp_num;
	conn->sq_free = nrma_params.qp_depth;
	return nrma_hash_insert(&ep->qp_conns, conn->qp_num, conn) ?
	       -FI_ENOMEM : 0;
}

static struct nrma_conn *conn_by_name(struct nrma_ep *ep,
				      const struct sockaddr_in *name)
{
	struct nrma_dlist *item;

	nrma_dlist_foreach(&ep->conns, item) {
		struct nrma_conn *conn =
			nrma_container_of(item, struct nrma_conn, link);

		if (conn->state != NRMA_CONN_FAILED && !conn->loopback &&
		    !name_cmp(&conn->peer, name))
			return conn;
	}
	return NULL;
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

static int conn_start(struct nrma_ep *ep, fi_addr_t fi_addr,
		      const struct sockaddr_in *peer, int64_t started)
{
	struct sockaddr_in src = ep->name;
	struct rdma_cm_id *id;
	struct nrma_conn *conn;

	src.sin_port = 0;
	if (rdma_create_id(nrma_listener_channel(ep->listener), &id, NULL,
			   RDMA_PS_TCP))
		return -errno;
	conn = conn_alloc(ep, id, peer, true);
	if (!conn) {
		rdma_destroy_id(id);
		return -FI_ENOMEM;
	}
	conn->started = started;
	if (conn_map(conn, fi_addr) ||
	    rdma_resolve_addr(id, (struct sockaddr *) &src,
			      (struct sockaddr *) peer, NRMA_CM_TIMEOUT_MS)) {
		conn_destroy(conn);
		return -FI_EHOSTUNREACH;
	}
	return 0;
}

/*
 * A failed connection: a refused one is tried again (for a while), one
 * that broke after it was up is made again, and one that never came up is
 * reported to the caller once.
 */
static int conn_redo(struct nrma_ep *ep, struct nrma_conn *conn,
		     fi_addr_t fi_addr, const struct sockaddr_in *peer)
{
	int64_t started = now_ms();
	int ret;

	if (conn->error == -FI_EAGAIN) {
		started = conn->started;
		conn_destroy(conn);
	} else if (conn->established) {
		conn_retire(conn);
	} else {
		ret = conn->error;
		conn_retire(conn);
		return ret;
	}
	ret = conn_start(ep, fi_addr, peer, started);
	return ret ? ret : -FI_EAGAIN;
}

/*
 * The connection to fi_addr, if it is up.  Otherwise starts or waits for
 * it and returns -FI_EAGAIN.
 */
int nrma_conn_get(struct nrma_ep *ep, fi_addr_t fi_addr,
		  struct nrma_conn **connp)
{
	struct nrma_conn *conn = fi_addr < ep->npeers ? ep->peers[fi_addr] : NULL;
	struct sockaddr_in peer;
	int ret;

	if (conn && conn->state == NRMA_CONN_CONNECTED) {
		*connp = conn;
		return 0;
	}
	if (nrma_av_get(ep->av, fi_addr, &peer))
		return -FI_EINVAL;
	if (conn && conn->state == NRMA_CONN_FAILED)
		return conn_redo(ep, conn, fi_addr, &peer);
	if (conn)
		return -FI_EAGAIN;
	conn = conn_by_name(ep, &peer);		/* accepted before we knew it */
	if (conn) {
		ret = conn_map(conn, fi_addr);
		return ret ? ret : nrma_conn_get(ep, fi_addr, connp);
	}
	ret = conn_start(ep, fi_addr, &peer, now_ms());
	return ret ? ret : -FI_EAGAIN;
}

struct nrma_conn *nrma_conn_by_qp(struct nrma_ep *ep, uint32_t qp_num)
{
	return nrma_hash_find(&ep->qp_conns, qp_num);
}

/* The peer's fi_addr_t, looked up late for peers that connected to us. */
fi_addr_t nrma_conn_fi_addr(struct nrma_conn *conn)
{
	fi_addr_t fi_addr;

	if (conn->fi_addr != FI_ADDR_NOTAVAIL)
		return conn->fi_addr;
	fi_addr = nrma_av_find(conn->ep->av, &conn->peer);
	if (fi_addr != FI_ADDR_NOTAVAIL && !conn->loopback &&
	    !(fi_addr < conn->ep->npeers && conn->ep->peers[fi_addr]))
		conn_map(conn, fi_addr);
	return fi_addr;
}

static void on_route_resolved(struct nrma_conn *conn)
{
	struct nrma_cm_data data;
	struct rdma_conn_param param;
	int ret;

	ret = conn_create_qp(conn);
	if (ret) {
		nrma_conn_fail(conn, ret);
		return;
	}
	cm_data_init(conn->ep, &data, 0);
	param = conn_param(conn->ep, &data);
	if (rdma_connect(conn->id, &param))
		nrma_conn_fail(conn, -errno);
}

/* The accept private data of an outgoing connection describes the peer. */
static void on_established(struct nrma_conn *conn, struct rdma_cm_event *ev)
{
	const struct nrma_cm_data *data = cm_data_of(ev);

	if (conn->outgoing && !data) {
		nrma_conn_fail(conn, -FI_EOTHER);
		return;
	}
	if (conn->outgoing)
		conn_learn_peer(conn, data);
	if (conn->state == NRMA_CONN_CONNECTING) {
		conn->state = NRMA_CONN_CONNECTED;
		conn->established = true;
	}
}

static void reject(struct nrma_ep *ep, struct rdma_cm_id *id,
		   enum nrma_reject_reason reason)
{
	struct nrma_cm_data data;

	cm_data_init(ep, &data, reason);
	rdma_reject(id, &data, sizeof(data));
}

/* Whether a request from a peer we are connecting to ourselves wins. */
static bool request_wins(struct nrma_ep *ep, struct nrma_conn *existing)
{
	return !existing || existing->state == NRMA_CONN_CONNECTED ||
	       (existing->outgoing && name_cmp(&ep->name, &existing->peer) > 0);
}

/* What to destroy once an event is acknowledged. */
enum nrma_cm_cleanup {
	NRMA_CM_KEEP,
	NRMA_CM_DESTROY_ID,	/* a request we rejected */
	NRMA_CM_DESTROY_CONN,	/* a connection nobody will use */
};

static enum nrma_cm_cleanup on_connect_request(struct nrma_ep *ep, struct rdma_cm_event *ev)
{
	const struct nrma_cm_data *req = cm_data_of(ev);
	struct nrma_conn *existing, *conn;
	struct nrma_cm_data data;
	struct rdma_conn_param param;
	bool self;

	if (!req || ntohs(req->version) != NRMA_PROTOCOL_VERSION) {
		reject(ep, ev->id, NRMA_REJECT_VERSION);
		return NRMA_CM_DESTROY_ID;
	}
	/* An endpoint sending to itself: its outgoing end stays for sends. */
	self = !name_cmp(&req->name, &ep->name);
	existing = self ? NULL : conn_by_name(ep, &req->name);
	if (!request_wins(ep, existing)) {
		reject(ep, ev->id, NRMA_REJECT_COLLISION);
		return NRMA_CM_DESTROY_ID;
	}
	conn = conn_alloc(ep, ev->id, &req->name, false);
	if (!conn) {
		rdma_reject(ev->id, NULL, 0);
		return NRMA_CM_DESTROY_ID;
	}
	conn_learn_peer(conn, req);
	conn->loopback = self;
	if (existing) {		/* replaced: a lost race or a restarted peer */
		NRMA_INFO(FI_LOG_EP_CTRL, "%s:%u connects again: replacing our "
			  "%s connection\n", inet_ntoa(req->name.sin_addr),
			  ntohs(req->name.sin_port),
			  existing->outgoing ? "outgoing" : "incoming");
		conn->fi_addr = existing->fi_addr;
		nrma_conn_fail(existing, -FI_ECONNABORTED);
		conn_retire(existing);
		if (conn->fi_addr != FI_ADDR_NOTAVAIL)
			conn_map(conn, conn->fi_addr);
	}
	cm_data_init(ep, &data, 0);
	param = conn_param(ep, &data);
	if (conn_create_qp(conn) || rdma_accept(ev->id, &param)) {
		rdma_reject(ev->id, NULL, 0);
		return NRMA_CM_DESTROY_CONN;
	}
	nrma_conn_fi_addr(conn);
	return NRMA_CM_KEEP;
}

/*
 * An accepted connection is up for us once ESTABLISHED arrives, or once
 * the peer sent something on it: its queue pair is then ready to receive
 * (sending earlier would only be dropped and retried), and what it asks
 * of us, ACKs and reads, must not wait for the event.
 */
void nrma_conn_heard(struct nrma_conn *conn)
{
	if (conn->state == NRMA_CONN_CONNECTING && !conn->outgoing) {
		conn->state = NRMA_CONN_CONNECTED;
		conn->established = true;
	}
}

/* A peer that rejected us for a collision is connecting to us instead. */
static enum nrma_cm_cleanup on_rejected(struct nrma_conn *conn,
					struct rdma_cm_event *ev)
{
	const struct nrma_cm_data *data = cm_data_of(ev);

	if (data && ntohs(data->reject_reason) == NRMA_REJECT_COLLISION)
		return NRMA_CM_DESTROY_CONN;
	if (!data && now_ms() - conn->started < NRMA_CONNECT_PATIENCE_MS) {
		conn->state = NRMA_CONN_FAILED;	/* nobody listening, yet */
		conn->error = -FI_EAGAIN;
		return NRMA_CM_KEEP;
	}
	nrma_conn_fail(conn, -FI_ECONNREFUSED);
	return NRMA_CM_KEEP;
}

static enum nrma_cm_cleanup handle_event(struct nrma_ep *ep,
					 struct rdma_cm_event *ev)
{
	struct nrma_conn *conn = ev->id->context;

	NRMA_DBG(FI_LOG_EP_CTRL, "%s (%s)\n", rdma_event_str(ev->event),
		 conn ? inet_ntoa(conn->peer.sin_addr) : "listener");
	switch (ev->event) {
	case RDMA_CM_EVENT_CONNECT_REQUEST:
		return on_connect_request(ep, ev);
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		if (rdma_resolve_route(ev->id, NRMA_CM_TIMEOUT_MS))
			nrma_conn_fail(conn, -errno);
		break;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		on_route_resolved(conn);
		break;
	case RDMA_CM_EVENT_ESTABLISHED:
		on_established(conn, ev);
		break;
	case RDMA_CM_EVENT_REJECTED:
		return on_rejected(conn, ev);
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_ERROR:
	case RDMA_CM_EVENT_UNREACHABLE:
	case RDMA_CM_EVENT_CONNECT_ERROR:
		nrma_conn_fail(conn, -FI_EHOSTUNREACH);
		break;
	case RDMA_CM_EVENT_DISCONNECTED:
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		/* What the peer sent before it left (ACKs) counts. */
		while (nrma_proto_progress(ep) > 0)
			;
		nrma_conn_fail(conn, -FI_ECONNRESET);
		break;
	default:
		break;
	}
	return NRMA_CM_KEEP;
}

/* Reaps connection events; the listener's id has no context. */
void nrma_cm_progress(struct nrma_ep *ep)
{
	struct rdma_event_channel *channel = nrma_listener_channel(ep->listener);
	struct rdma_cm_event *ev;

	while (!rdma_get_cm_event(channel, &ev)) {
		struct rdma_cm_id *id = ev->id;
		enum nrma_cm_cleanup cleanup = NRMA_CM_KEEP;

		if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST || id->context)
			cleanup = handle_event(ep, ev);
		rdma_ack_cm_event(ev);
		if (cleanup == NRMA_CM_DESTROY_ID)
			rdma_destroy_id(id);
		else if (cleanup == NRMA_CM_DESTROY_CONN)
			conn_destroy(id->context);
	}
}

void nrma_conns_close(struct nrma_ep *ep)
{
	struct nrma_dlist *item;

	while ((item = nrma_dlist_pop_front(&ep->conns))) {
		struct nrma_conn *conn =
			nrma_container_of(item, struct nrma_conn, link);

		nrma_dlist_init(&conn->link);
		conn_destroy(conn);
	}
	free(ep->peers);
	ep->peers = NULL;
	ep->npeers = 0;
}
