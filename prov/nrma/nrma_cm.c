/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Connection management over rdmacm.  Every RDM endpoint owns a listening
 * rdmacm id on its own address; its bound address is the endpoint's name.
 * A connection to a peer is made on first use of its fi_addr_t.  The
 * connect and accept private data (nrma_proto.h) carry our protocol
 * version and the sender's endpoint name (the source port of a request is
 * not it).
 *
 * Simultaneous connects are settled by nrma_conn_request_wins: the
 * smaller name rejects the other's request (saying why), the larger one
 * accepts it and drops its own attempt.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rdma/rdma_cma.h>

#include "nrma.h"
#include "nrma_cm.h"
#include "nrma_proto.h"
#include "nrma_verbs.h"

/*
 * A peer that stops answering fails its operations after 7 tries of
 * 4.096 us * 2^18 = 1.07 s each: about 7.5 s (more on devices that round
 * up).  Not a retry count of 7: to some (rxe) that means for ever.  Not
 * shorter: a loaded Soft-RoCE host answers late enough to make 268 ms
 * time out, and Linux 6.1's rxe can stall a requester for good after
 * such a retransmission of an atomic.
 */
#define NRMA_ACK_TIMEOUT	 18
#define NRMA_RETRY_COUNT	 6
/* A peer that refuses us may not be listening yet: keep trying this long. */
#define NRMA_CONNECT_PATIENCE_MS 10000

struct nrma_cm {
	struct rdma_event_channel *channel; /* listener's and connections' */
	struct rdma_cm_id *listen_id;	    /* FI_EP_MSG: bound, until used */
	struct nrma_conn_table table;
	struct nrma_dlist retired; /* connections waiting to be unused */
	struct nrma_cm_attr attr;  /* set by nrma_cm_listen or _enable */
	/* FI_EP_MSG: our connect data, and the peer's reject data. */
	uint8_t app[NRMA_CM_MSG_APP_MAX];
	size_t app_len;
	int disabled; /* negative: why no connection is made any more */
};

int nrma_cm_id_bind(struct rdma_event_channel *channel,
		    const struct sockaddr_in *addr, struct rdma_cm_id **idp)
{
	struct rdma_cm_id *id;
	int ret;

	if (rdma_create_id(channel, &id, NULL, RDMA_PS_TCP))
		return -errno;
	if (rdma_bind_addr(id, (struct sockaddr *) addr)) {
		ret = -errno;
		rdma_destroy_id(id);
		NRMA_INFO(FI_LOG_EP_CTRL, "cannot bind to %s:%u: %s\n",
			  inet_ntoa(addr->sin_addr), ntohs(addr->sin_port),
			  fi_strerror(-ret));
		return ret;
	}
	*idp = id;
	return 0;
}

int nrma_cm_id_name(struct rdma_cm_id *id, struct sockaddr_in *name)
{
	struct sockaddr *sa = id ? rdma_get_local_addr(id) : NULL;

	if (!sa)
		return -FI_EOPBADSTATE;
	if (sa->sa_family != AF_INET)
		return -FI_EINVAL;
	memcpy(name, sa, sizeof(*name));
	return 0;
}

static int cm_bind(struct nrma_cm *cm, const struct sockaddr_in *addr)
{
	struct rdma_cm_id *id = NULL; /* GCC cannot see the bind set it */
	int ret = nrma_cm_id_bind(cm->channel, addr, &id);

	if (ret)
		return ret;
	if (cm->listen_id)
		rdma_destroy_id(cm->listen_id);
	cm->listen_id = id;
	return 0;
}

int nrma_cm_open(const struct sockaddr_in *addr, struct nrma_cm **cmp)
{
	struct nrma_cm *cm = calloc(1, sizeof(*cm));
	int ret;

	if (!cm)
		return -FI_ENOMEM;
	nrma_conn_table_init(&cm->table);
	nrma_dlist_init(&cm->retired);
	cm->channel = rdma_create_event_channel();
	if (!cm->channel) {
		ret = -errno;
		goto err_free;
	}
	/* Connection events are reaped by progress, never waited for. */
	if (fcntl(cm->channel->fd, F_SETFL, O_NONBLOCK)) {
		ret = -errno;
		goto err_channel;
	}
	ret = addr ? cm_bind(cm, addr) : 0;
	if (ret)
		goto err_channel;
	*cmp = cm;
	return 0;

err_channel:
	rdma_destroy_event_channel(cm->channel);
err_free:
	nrma_conn_table_fini(&cm->table);
	free(cm);
	return ret;
}

int nrma_cm_rebind(struct nrma_cm *cm, const struct sockaddr_in *addr)
{
	return cm_bind(cm, addr);
}

/* A MSG endpoint's connection, once made, holds what was bound. */
static struct rdma_cm_id *cm_named_id(struct nrma_cm *cm)
{
	struct nrma_conn *conn;

	if (cm->listen_id)
		return cm->listen_id;
	conn = nrma_cm_msg_conn(cm);
	return conn ? conn->id : NULL;
}

int nrma_cm_name(struct nrma_cm *cm, struct sockaddr_in *name)
{
	return nrma_cm_id_name(cm_named_id(cm), name);
}

int nrma_cm_enable(struct nrma_cm *cm, const struct nrma_cm_attr *attr)
{
	cm->attr = *attr;
	if (attr->msg || attr->no_listen)
		return 0;
	return rdma_listen(cm->listen_id, 0) ? -errno : 0;
}

int nrma_cm_fd(const struct nrma_cm *cm)
{
	return cm->channel->fd;
}

static void cm_data_init(const struct nrma_cm *cm, struct nrma_cm_data *data,
			 enum nrma_reject_reason reason)
{
	nrma_proto_cm_data_init(data, &cm->attr.name, cm->attr.notify_rkey,
				reason);
}

/* Connect and accept data: what a connection's peer needs of us. */
static struct nrma_cm_grant cm_conn_grant(const struct nrma_conn *conn)
{
	struct nrma_cm_grant grant = conn->offer;

	grant.notify_rkey = conn->cm->attr.notify_rkey;
	grant.keytab_rkey = conn->cm->attr.keytab_rkey;
	grant.keytab_slots = conn->cm->attr.keytab_slots;
	return grant;
}

static void cm_conn_data_init(const struct nrma_conn *conn,
			      struct nrma_cm_data *data)
{
	cm_data_init(conn->cm, data, NRMA_REJECT_NONE);
	data->grant = cm_conn_grant(conn);
	data->ctx = conn->cm->attr.ctx;
	if (conn->outgoing)
		data->nonce = conn->nonce;
}

static const struct nrma_cm_data *cm_data_of(const struct rdma_cm_event *ev)
{
	return nrma_proto_cm_data_parse(ev->param.conn.private_data,
					ev->param.conn.private_data_len);
}

static struct rdma_conn_param cm_conn_param(const struct nrma_cm *cm,
					    const void *data, size_t len)
{
	return (struct rdma_conn_param){
		.private_data = data,
		.private_data_len = (uint8_t) len,
		.responder_resources = cm->attr.rd_atomic_depth,
		.initiator_depth = cm->attr.rd_atomic_depth,
		.retry_count = NRMA_RETRY_COUNT,
		/* Credits keep receivers from running out of buffers; one
		 * that did anyway (more peers than its buffers back, or a
		 * peer that ignores its grant) slows its senders down. */
		.rnr_retry_count = 7,
	};
}

static struct nrma_conn *conn_alloc(struct nrma_cm *cm, struct rdma_cm_id *id,
				    const struct sockaddr_in *peer,
				    bool outgoing)
{
	struct nrma_conn *conn = calloc(1, sizeof(*conn));

	if (!conn)
		return NULL;
	conn->cm = cm;
	conn->id = id;
	conn->peer = *peer;
	conn->outgoing = outgoing;
	conn->stall_since = -1;
	conn->state = NRMA_CONN_CONNECTING;
	conn->fi_addr = FI_ADDR_NOTAVAIL;
	id->context = conn;
	nrma_conn_table_add(&cm->table, conn);
	return conn;
}

/*
 * Never while one of its events is being handled: rdma_destroy_id waits
 * for the events it delivered to be acknowledged.
 */
static void conn_destroy(struct nrma_conn *conn)
{
	if (!conn->retired)
		nrma_conn_table_unmap(&conn->cm->table, conn);
	nrma_cm_check_unclaim(conn->cm->attr.claims, conn);
	if (conn->check_id)
		rdma_destroy_id(conn->check_id);
	if (conn->qp)
		nrma_verbs_qp_destroy(conn->qp);
	if (conn->id)
		rdma_destroy_id(conn->id);
	conn->cm->attr.ops->conn_close(conn->cm->attr.arg, conn);
	nrma_dlist_remove(&conn->link);
	free(conn);
}

/*
 * A connection nobody will look up again.  Its queue pair is flushed, so
 * that every work request on it completes; it is freed by nrma_cm_reap
 * once no operation uses it any more.
 */
static void conn_retire(struct nrma_conn *conn)
{
	struct nrma_cm *cm = conn->cm;

	if (conn->retired)
		return;
	nrma_conn_table_unmap(&cm->table, conn);
	if (conn->qp)
		nrma_verbs_qp_flush(conn->qp);
	conn->state = NRMA_CONN_FAILED;
	conn->retired = true;
	nrma_dlist_remove(&conn->link);
	nrma_dlist_insert_tail(&conn->link, &cm->retired);
}

/* Out of line: every poll looks, and there is seldom any. */
static NRMA_NOINLINE void cm_reap_retired(struct nrma_cm *cm)
{
	struct nrma_dlist *item = cm->retired.next;

	while (item != &cm->retired) {
		struct nrma_conn *conn =
			nrma_container_of(item, struct nrma_conn, link);

		item = item->next;
		if (!conn->refs)
			conn_destroy(conn);
	}
}

/* Frees the retired connections that nothing uses any more. */
void nrma_cm_reap(struct nrma_cm *cm)
{
	if (!nrma_dlist_empty(&cm->retired))
		cm_reap_retired(cm);
}

void nrma_cm_conn_fail(struct nrma_conn *conn, int error)
{
	struct nrma_cm *cm = conn->cm;

	if (conn->state == NRMA_CONN_FAILED)
		return;
	NRMA_INFO(FI_LOG_EP_CTRL, "%s connection %s:%u failed: %s\n",
		  conn->outgoing ? "outgoing" : "incoming",
		  inet_ntoa(conn->peer.sin_addr), ntohs(conn->peer.sin_port),
		  fi_strerror(error));
	conn->state = NRMA_CONN_FAILED;
	conn->error = error;
	/* What is still queued on it completes now, with errors, and the
	 * peer learns that the connection is gone. */
	if (conn->qp)
		nrma_verbs_qp_flush(conn->qp);
	if (conn->established)
		rdma_disconnect(conn->id);
	cm->attr.ops->conn_failed(cm->attr.arg, conn);
	/* Only an fi_addr_t leads back to it: without one it is done. */
	if (nrma_conn_table_by_addr(&cm->table, conn->fi_addr) != conn)
		conn_retire(conn);
}

void nrma_cm_disable(struct nrma_cm *cm, int error)
{
	struct nrma_dlist *item, *next;

	cm->disabled = error;
	nrma_dlist_foreach_safe (&cm->table.conns, item, next)
		nrma_cm_conn_fail(
			nrma_container_of(item, struct nrma_conn, link), error);
}

static bool conn_busy(const struct nrma_conn *conn)
{
	return conn->state == NRMA_CONN_CONNECTED &&
	       conn->sq_free < conn->cm->attr.sq_depth;
}

struct nrma_dlist *nrma_cm_conns(struct nrma_cm *cm)
{
	return &cm->table.conns;
}

bool nrma_cm_busy(const struct nrma_cm *cm)
{
	const struct nrma_dlist *item;

	nrma_dlist_foreach (&cm->table.conns, item)
		if (conn_busy(nrma_container_of(item, struct nrma_conn, link)))
			return true;
	return false;
}

/*
 * A device that stops retrying would hold a connection's work forever
 * (Soft-RoCE on Linux 6.1 does, fi_nrma(7)).
 */
void nrma_cm_fail_stalled(struct nrma_cm *cm, int64_t now_ms, int stall_ms)
{
	struct nrma_dlist *item, *next;

	nrma_dlist_foreach_safe (&cm->table.conns, item, next) {
		struct nrma_conn *conn =
			nrma_container_of(item, struct nrma_conn, link);

		if (!nrma_conn_stalled(conn, conn_busy(conn), now_ms, stall_ms))
			continue;
		NRMA_WARN(FI_LOG_EP_DATA,
			  "connection %s:%u: the device ended none of its "
			  "work in %d ms; failing it\n",
			  inet_ntoa(conn->peer.sin_addr),
			  ntohs(conn->peer.sin_port), stall_ms);
		nrma_cm_conn_fail(conn, -FI_ETIMEDOUT);
	}
}

static int conn_create_qp(struct nrma_conn *conn)
{
	struct nrma_cm *cm = conn->cm;
	uint8_t ack_timeout = NRMA_ACK_TIMEOUT;
	int ret;

	/* Older kernels keep their own timeout: only a bound then differs. */
	if (rdma_set_option(conn->id, RDMA_OPTION_ID,
			    RDMA_OPTION_ID_ACK_TIMEOUT, &ack_timeout,
			    sizeof(ack_timeout)))
		NRMA_DBG(FI_LOG_EP_CTRL, "no ACK timeout set: %s\n",
			 strerror(errno));
	/*
	 * Per peer, only a small send queue: a full one pushes back on
	 * sends with -FI_EAGAIN and delays ACKs and reads, and receive
	 * buffers come from the endpoint's shared receive queue.
	 */
	ret = nrma_verbs_qp_create(cm->attr.vep, cm->attr.vdom, conn->id,
				   cm->attr.sq_depth, cm->attr.max_sge,
				   &conn->qp);
	if (ret)
		return ret;
	conn->sq_free = cm->attr.sq_depth;
	conn->max_inline = nrma_verbs_qp_max_inline(conn->qp);
	return 0;
}

/* The endpoint gives conn its credits; its completions find it. */
static int conn_open(struct nrma_conn *conn)
{
	struct nrma_cm *cm = conn->cm;
	int ret = cm->attr.ops->conn_open(cm->attr.arg, conn);

	if (ret)
		return ret;
	return nrma_conn_table_map_qp(&cm->table, conn,
				      nrma_verbs_qp_num(conn->qp));
}

static int conn_setup(struct nrma_conn *conn)
{
	int ret = conn_create_qp(conn);

	return ret ? ret : conn_open(conn);
}

static int conn_start(struct nrma_cm *cm, fi_addr_t fi_addr,
		      const struct sockaddr_in *peer, int64_t started,
		      bool reached_before)
{
	struct sockaddr_in src = cm->attr.name;
	struct rdma_cm_id *id;
	struct nrma_conn *conn;

	src.sin_port = 0;
	if (rdma_create_id(cm->channel, &id, NULL, RDMA_PS_TCP))
		return -errno;
	conn = conn_alloc(cm, id, peer, true);
	if (!conn) {
		rdma_destroy_id(id);
		return -FI_ENOMEM;
	}
	conn->started = started;
	conn->reached_before = reached_before;
	nrma_cm_check_claim(cm->attr.claims, conn);
	if (nrma_conn_table_map(&cm->table, conn, fi_addr) ||
	    rdma_resolve_addr(id, (struct sockaddr *) &src,
			      (struct sockaddr *) peer, NRMA_CM_TIMEOUT_MS)) {
		conn_destroy(conn);
		return -FI_EHOSTUNREACH;
	}
	return 0;
}

/* A failed connection that another replaces for its peer. */
static void conn_drop(struct nrma_conn *conn)
{
	if (conn->error == -FI_EAGAIN)
		conn_destroy(conn); /* it never carried an operation */
	else
		conn_retire(conn);
}

/*
 * A failed connection: a refused one is tried again (for a while), one
 * that broke after it was up is made again, and one that never came up is
 * reported to the caller once, then made again.  It stays in place until
 * then, so that the new attempt knows what it knew: a peer reached before
 * that no longer listens has left (cm_on_rejected), and only a first
 * connection has the patience of one.
 */
static int conn_redo(struct nrma_cm *cm, struct nrma_conn *conn,
		     fi_addr_t fi_addr, const struct sockaddr_in *peer)
{
	int64_t started = nrma_wait_now_ms();
	bool reached_before = conn->established || conn->reached_before;
	int ret;

	if (conn->error == -FI_EAGAIN) {
		started = conn->started;
		conn_destroy(conn);
	} else if (conn->established || conn->reported) {
		conn_retire(conn);
	} else {
		conn->reported = true;
		return conn->error;
	}
	ret = conn_start(cm, fi_addr, peer, started, reached_before);
	return ret ? ret : -FI_EAGAIN;
}

struct nrma_conn *nrma_cm_conn_up(const struct nrma_cm *cm, fi_addr_t fi_addr)
{
	struct nrma_conn *conn = nrma_conn_table_by_addr(&cm->table, fi_addr);

	if (cm->disabled || !conn || conn->state != NRMA_CONN_CONNECTED ||
	    conn->fi_addr != fi_addr)
		return NULL;
	return conn;
}

int nrma_cm_conn_get(struct nrma_cm *cm, fi_addr_t fi_addr,
		     const struct sockaddr_in *peer, struct nrma_conn **connp)
{
	struct nrma_conn *conn = nrma_conn_table_by_addr(&cm->table, fi_addr);
	struct nrma_conn *accepted;
	int ret;

	if (cm->disabled)
		return cm->disabled;
	if (conn && nrma_addr_cmp(&conn->peer, peer)) {
		nrma_cm_conn_forget_addr(cm, conn, fi_addr);
		conn = NULL;
	}
	if (conn && conn->state == NRMA_CONN_CONNECTED) {
		*connp = conn;
		return 0;
	}
	if (conn && conn->state != NRMA_CONN_FAILED)
		return -FI_EAGAIN;
	/* The peer connected to us: before we knew it, or after our try. */
	accepted = nrma_conn_table_by_name(&cm->table, peer, 0);
	if (accepted) {
		if (conn)
			conn_drop(conn);
		ret = nrma_conn_table_map(&cm->table, accepted, fi_addr);
		return ret ? ret : nrma_cm_conn_get(cm, fi_addr, peer, connp);
	}
	if (conn)
		return conn_redo(cm, conn, fi_addr, peer);
	ret = conn_start(cm, fi_addr, peer, nrma_wait_now_ms(), false);
	return ret ? ret : -FI_EAGAIN;
}

void nrma_cm_conn_learn_addr(struct nrma_cm *cm, struct nrma_conn *conn,
			     fi_addr_t fi_addr)
{
	if (!conn->loopback && !nrma_conn_table_by_addr(&cm->table, fi_addr))
		nrma_conn_table_map(&cm->table, conn, fi_addr);
}

void nrma_cm_conn_forget_addr(struct nrma_cm *cm, struct nrma_conn *conn,
			      fi_addr_t fi_addr)
{
	nrma_conn_table_unmap_addr(&cm->table, conn, fi_addr);
	/* As in nrma_cm_conn_fail: only an fi_addr_t leads back to it. */
	if (conn->state == NRMA_CONN_FAILED &&
	    nrma_conn_table_by_addr(&cm->table, conn->fi_addr) != conn)
		conn_retire(conn);
}

void *nrma_cm_conn_owner(const struct nrma_conn *conn)
{
	return conn->cm->attr.arg;
}

struct nrma_conn *nrma_cm_conn_by_qp(struct nrma_cm *cm, uint32_t qp_num)
{
	return nrma_conn_table_by_qp(&cm->table, qp_num);
}

/* Our connect or accept data: the RDM kind, or MSG's with the app's. */
static size_t cm_conn_data(const struct nrma_conn *conn, const void *app,
			   size_t app_len, uint8_t *buf)
{
	struct nrma_cm_grant grant = cm_conn_grant(conn);

	if (conn->cm->attr.msg)
		return nrma_proto_msg_data_init(buf, &grant, app, app_len);
	cm_conn_data_init(conn, (struct nrma_cm_data *) buf);
	return sizeof(struct nrma_cm_data);
}

static void cm_on_route_resolved(struct nrma_conn *conn)
{
	struct nrma_cm *cm = conn->cm;
	uint8_t data[NRMA_CM_REQ_DATA_MAX];
	struct rdma_conn_param param;
	int ret;

	if (conn->state == NRMA_CONN_FAILED)
		return; /* given up meanwhile */
	ret = conn_setup(conn);
	if (ret) {
		nrma_cm_conn_fail(conn, ret);
		return;
	}
	param = cm_conn_param(cm, data,
			      cm_conn_data(conn, cm->app, cm->app_len, data));
	if (rdma_connect(conn->id, &param))
		nrma_cm_conn_fail(conn, -errno);
}

static void cm_conn_up(struct nrma_conn *conn)
{
	if (conn->state == NRMA_CONN_CONNECTING) {
		conn->state = NRMA_CONN_CONNECTED;
		conn->established = true;
		nrma_cm_check_unclaim(conn->cm->attr.claims, conn);
	}
}

/* The endpoint hears, once, that its MSG connection is up. */
static void cm_msg_announce(struct nrma_conn *conn, const void *app, size_t len)
{
	if (conn->announced || conn->state == NRMA_CONN_FAILED)
		return;
	cm_conn_up(conn);
	conn->announced = true;
	conn->cm->attr.ops->connected(conn->cm->attr.arg, conn, app, len);
}

/*
 * A MSG connection is up: the active side learns the peer's grant and
 * the application its accept data; the passive side has neither to learn.
 */
static void cm_on_msg_established(struct nrma_conn *conn,
				  struct rdma_cm_event *ev)
{
	const struct nrma_cm_msg_data *data = nrma_proto_msg_data_parse(
		ev->param.conn.private_data, ev->param.conn.private_data_len);

	if (!conn->outgoing) {
		cm_msg_announce(conn, NULL, 0);
		return;
	}
	if (!data || !nrma_proto_grant_valid(&data->grant)) {
		nrma_cm_conn_fail(conn, -FI_EOTHER);
		return;
	}
	conn->grant = data->grant;
	cm_msg_announce(conn, data->app, data->app_len);
}

/* The accept private data of an outgoing connection describes the peer. */
static void cm_on_established(struct nrma_conn *conn, struct rdma_cm_event *ev)
{
	const struct nrma_cm_data *data = cm_data_of(ev);

	if (conn->cm->attr.msg) {
		cm_on_msg_established(conn, ev);
		return;
	}
	/* The endpoint we meant to reach answers (maybe by another of its
	 * host's addresses), in our protocol. */
	if (conn->outgoing &&
	    (!data ||
	     nrma_proto_cm_data_version(data) != NRMA_PROTOCOL_VERSION ||
	     !nrma_proto_grant_valid(&data->grant) ||
	     data->name.sin_port != conn->peer.sin_port)) {
		nrma_cm_conn_fail(conn, -FI_EOTHER);
		return;
	}
	if (conn->outgoing)
		conn->grant = data->grant;
	cm_conn_up(conn);
	conn->cm->attr.ops->connected(conn->cm->attr.arg, conn, NULL, 0);
}

static void cm_reject(struct nrma_cm *cm, struct rdma_cm_id *id,
		      enum nrma_reject_reason reason)
{
	struct nrma_cm_data data;

	cm_data_init(cm, &data, reason);
	rdma_reject(id, &data, sizeof(data));
}

/* What to destroy once an event is acknowledged. */
enum nrma_cm_cleanup {
	NRMA_CM_KEEP,
	NRMA_CM_DESTROY_ID, /* a request we refused, or a check answered */
};

/* Our attempt lost the race: the peer's connection takes its place. */
static void cm_replace(struct nrma_conn *conn, struct nrma_conn *existing)
{
	NRMA_INFO(FI_LOG_EP_CTRL, "%s:%u connects too: dropping our attempt\n",
		  inet_ntoa(conn->peer.sin_addr), ntohs(conn->peer.sin_port));
	conn->fi_addr = existing->fi_addr;
	nrma_cm_conn_fail(existing, -FI_ECONNABORTED);
	conn_retire(existing);
	if (conn->fi_addr != FI_ADDR_NOTAVAIL)
		nrma_conn_table_map(&conn->cm->table, conn, conn->fi_addr);
}

/*
 * A request whose requester is confirmed (nrma_cm_check.c): unless a
 * connection to its peer is up, or our own attempt wins, it is accepted.
 */
static void cm_accept_checked(struct nrma_conn *conn)
{
	struct nrma_cm *cm = conn->cm;
	struct nrma_conn *existing =
		conn->loopback ?
			NULL :
			nrma_conn_table_by_name(&cm->table, &conn->peer,
						conn->peer_ctx);
	struct nrma_cm_data data;
	struct rdma_conn_param param;

	conn->checking = false;
	switch (nrma_conn_request_verdict(&cm->attr.name, existing)) {
	case NRMA_CONN_BUSY:
		cm->attr.ops->probe(cm->attr.arg, existing);
		cm_reject(cm, conn->id, NRMA_REJECT_BUSY);
		conn_retire(conn);
		return;
	case NRMA_CONN_COLLISION:
		cm_reject(cm, conn->id, NRMA_REJECT_COLLISION);
		conn_retire(conn);
		return;
	case NRMA_CONN_ACCEPT:
		break;
	}
	if (existing)
		cm_replace(conn, existing);
	if (conn_open(conn)) {
		rdma_reject(conn->id, NULL, 0);
		conn_retire(conn);
		return;
	}
	cm_conn_data_init(conn, &data);
	param = cm_conn_param(cm, &data, sizeof(data));
	if (rdma_accept(conn->id, &param)) {
		rdma_reject(conn->id, NULL, 0);
		conn_retire(conn);
	}
}

/* What the check of conn's request found; PENDING: nothing yet. */
static void cm_on_checked(struct nrma_conn *conn,
			  enum nrma_cm_check_result result)
{
	switch (result) {
	case NRMA_CM_CHECK_PENDING:
		return;
	case NRMA_CM_CHECK_CONFIRMED:
		cm_accept_checked(conn);
		return;
	case NRMA_CM_CHECK_DENIED:
		/* Or an attempt that lost to ours as we connected both ways. */
		NRMA_INFO(FI_LOG_EP_CTRL,
			  "refused a request that %s:%u did not make\n",
			  inet_ntoa(conn->peer.sin_addr),
			  ntohs(conn->peer.sin_port));
		cm_reject(conn->cm, conn->id, NRMA_REJECT_IDENTITY);
		break;
	case NRMA_CM_CHECK_UNSURE:
		cm_reject(conn->cm, conn->id, NRMA_REJECT_UNCHECKED);
		break;
	}
	conn_retire(conn);
}

/* An event of the check of conn's request: its id goes with the answer. */
static enum nrma_cm_cleanup cm_on_check_event(struct nrma_conn *conn,
					      struct rdma_cm_event *ev)
{
	enum nrma_cm_check_result result =
		nrma_cm_check_event(conn, ev, &conn->cm->attr.name);

	if (result == NRMA_CM_CHECK_PENDING)
		return NRMA_CM_KEEP;
	conn->check_id = NULL;
	cm_on_checked(conn, result);
	return NRMA_CM_DESTROY_ID;
}

/*
 * A request is taken in as a connection that waits until the endpoint
 * it names confirms it; until then no lookup by name finds it.
 */
static enum nrma_cm_cleanup cm_on_connect_request(struct nrma_cm *cm,
						  struct rdma_cm_event *ev)
{
	const struct nrma_cm_data *req = cm_data_of(ev);
	struct nrma_conn *conn;

	if (cm->disabled) {
		rdma_reject(ev->id, NULL, 0);
		return NRMA_CM_DESTROY_ID;
	}
	if (!req || nrma_proto_cm_data_version(req) != NRMA_PROTOCOL_VERSION) {
		cm_reject(cm, ev->id, NRMA_REJECT_VERSION);
		return NRMA_CM_DESTROY_ID;
	}
	if (nrma_proto_cm_data_kind(req) == NRMA_CM_CHECK) {
		nrma_cm_check_answer(ev->id, req, &cm->attr.name,
				     cm->attr.claims);
		return NRMA_CM_DESTROY_ID;
	}
	if (!nrma_proto_grant_valid(&req->grant)) {
		cm_reject(cm, ev->id, NRMA_REJECT_VERSION);
		return NRMA_CM_DESTROY_ID;
	}
	if (!nrma_cm_check_request_from(ev->id, &req->name)) {
		cm_reject(cm, ev->id, NRMA_REJECT_IDENTITY);
		return NRMA_CM_DESTROY_ID;
	}
	conn = conn_alloc(cm, ev->id, &req->name, false);
	if (!conn) {
		rdma_reject(ev->id, NULL, 0);
		return NRMA_CM_DESTROY_ID;
	}
	conn->grant = req->grant;
	conn->peer_ctx = req->ctx;
	conn->nonce = req->nonce;
	conn->checking = true;
	/* An endpoint sending to itself: its outgoing end stays for sends. */
	conn->loopback = !nrma_addr_cmp(&req->name, &cm->attr.name);
	/* The check needs its number, unique on this device (below). */
	if (conn_create_qp(conn)) {
		rdma_reject(ev->id, NULL, 0);
		conn_retire(conn);
		return NRMA_CM_KEEP;
	}
	cm_on_checked(conn,
		      nrma_cm_check_start(conn, cm->channel, &cm->attr.name,
					  cm->attr.claims));
	return NRMA_CM_KEEP;
}

/*
 * An accepted connection is up for us once ESTABLISHED arrives, or once
 * the peer sent something on it: its queue pair is then ready to receive
 * (sending earlier would only be dropped and retried), and what it asks
 * of us, ACKs and reads, must not wait for the event.
 */
void nrma_cm_conn_heard(struct nrma_conn *conn)
{
	if (!conn->outgoing)
		cm_conn_up(conn);
}

/* A MSG peer's refusal is final; what it said goes to the application. */
static void cm_on_msg_rejected(struct nrma_conn *conn,
			       const struct rdma_cm_event *ev)
{
	const struct nrma_cm_msg_data *data = nrma_proto_msg_data_parse(
		ev->param.conn.private_data, ev->param.conn.private_data_len);
	struct nrma_cm *cm = conn->cm;

	cm->app_len = data ? data->app_len : 0;
	if (cm->app_len)
		memcpy(cm->app, data->app, cm->app_len);
	nrma_cm_conn_fail(conn, -FI_ECONNREFUSED);
}

/*
 * A peer that rejected us for a collision is connecting to us instead, one
 * that is busy checks its old connection to us, one that could not ask
 * our listener whether the request was ours may next time, and one that
 * sent no private data may not be listening yet: all are tried again,
 * while the patience lasts, unless the peer's own connection has come in
 * by then (nrma_cm_conn_get).  No listener where a connection broke, though, means
 * the peer is gone (its process died): its operations fail at once.
 */
static enum nrma_cm_cleanup cm_on_rejected(struct nrma_conn *conn,
					   struct rdma_cm_event *ev)
{
	const struct nrma_cm_data *data = cm_data_of(ev);
	enum nrma_reject_reason why = data ? nrma_proto_cm_data_reason(data) :
					     NRMA_REJECT_NONE;
	bool again = why == NRMA_REJECT_COLLISION || why == NRMA_REJECT_BUSY ||
		     why == NRMA_REJECT_UNCHECKED;

	if (conn->cm->attr.msg) {
		cm_on_msg_rejected(conn, ev);
		return NRMA_CM_KEEP;
	}
	if ((again || (!data && !conn->reached_before)) &&
	    nrma_wait_now_ms() - conn->started < NRMA_CONNECT_PATIENCE_MS) {
		conn->state = NRMA_CONN_FAILED; /* to be tried again */
		conn->error = -FI_EAGAIN;
		return NRMA_CM_KEEP;
	}
	nrma_cm_conn_fail(conn, -FI_ECONNREFUSED);
	return NRMA_CM_KEEP;
}

static enum nrma_cm_cleanup cm_handle_event(struct nrma_cm *cm,
					    struct rdma_cm_event *ev)
{
	struct nrma_conn *conn = ev->id->context;

	NRMA_DBG(FI_LOG_EP_CTRL, "%s (%s)\n", rdma_event_str(ev->event),
		 conn ? inet_ntoa(conn->peer.sin_addr) : "listener");
	if (conn && ev->id == conn->check_id)
		return cm_on_check_event(conn, ev);
	switch (ev->event) {
	case RDMA_CM_EVENT_CONNECT_REQUEST:
		return cm_on_connect_request(cm, ev);
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		if (rdma_resolve_route(ev->id, NRMA_CM_TIMEOUT_MS))
			nrma_cm_conn_fail(conn, -errno);
		break;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		cm_on_route_resolved(conn);
		break;
	case RDMA_CM_EVENT_ESTABLISHED:
		cm_on_established(conn, ev);
		break;
	case RDMA_CM_EVENT_REJECTED:
		return cm_on_rejected(conn, ev);
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_ERROR:
	case RDMA_CM_EVENT_UNREACHABLE:
	case RDMA_CM_EVENT_CONNECT_ERROR:
		nrma_cm_conn_fail(conn, -FI_EHOSTUNREACH);
		break;
	case RDMA_CM_EVENT_DISCONNECTED:
		/* A peer that leaves an accepted connection had it up, though
		 * our ESTABLISHED may never come (its RTU was lost). */
		if (cm->attr.msg && !conn->outgoing)
			cm_msg_announce(conn, NULL, 0);
		/* fall through */
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		/* What the peer sent before it left (ACKs) counts. */
		cm->attr.ops->drain(cm->attr.arg);
		nrma_cm_conn_fail(conn, -FI_ECONNRESET);
		break;
	default:
		break;
	}
	return NRMA_CM_KEEP;
}

/* Reaps connection events; the listener's id has no context. */
void nrma_cm_progress(struct nrma_cm *cm)
{
	struct rdma_cm_event *ev;

	while (!rdma_get_cm_event(cm->channel, &ev)) {
		struct rdma_cm_id *id = ev->id;
		enum nrma_cm_cleanup cleanup = NRMA_CM_KEEP;

		if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST || id->context)
			cleanup = cm_handle_event(cm, ev);
		rdma_ack_cm_event(ev);
		if (cleanup == NRMA_CM_DESTROY_ID)
			rdma_destroy_id(id);
	}
	nrma_cm_reap(cm);
}

/* FI_EP_MSG: one connection, made by fi_connect or fi_accept. */

struct nrma_conn *nrma_cm_msg_conn(struct nrma_cm *cm)
{
	return nrma_conn_table_by_addr(&cm->table, NRMA_CM_MSG_ADDR);
}

/* A new connection is the endpoint's one, under NRMA_CM_MSG_ADDR. */
static int cm_msg_conn_add(struct nrma_cm *cm, struct rdma_cm_id *id,
			   const struct sockaddr_in *peer, bool outgoing,
			   struct nrma_conn **connp)
{
	struct nrma_conn *conn = conn_alloc(cm, id, peer, outgoing);

	if (!conn)
		return -FI_ENOMEM;
	conn->started = nrma_wait_now_ms();
	*connp = conn;
	return nrma_conn_table_map(&cm->table, conn, NRMA_CM_MSG_ADDR);
}

int nrma_cm_connect(struct nrma_cm *cm, const struct sockaddr_in *dest,
		    const void *app, size_t len)
{
	struct rdma_cm_id *id = cm->listen_id;
	struct nrma_conn *conn = NULL;
	int ret;

	if (!id || nrma_cm_msg_conn(cm))
		return -FI_EOPBADSTATE;
	cm->app_len = len < sizeof(cm->app) ? len : sizeof(cm->app);
	if (cm->app_len)
		memcpy(cm->app, app, cm->app_len);
	cm->listen_id = NULL; /* the connection's from now on */
	ret = cm_msg_conn_add(cm, id, dest, true, &conn);
	if (!ret && rdma_resolve_addr(id, NULL, (struct sockaddr *) dest,
				      NRMA_CM_TIMEOUT_MS))
		ret = -errno;
	if (ret && conn)
		conn_destroy(conn);
	else if (ret)
		rdma_destroy_id(id);
	return ret;
}

/*
 * The request's id moves to the endpoint's channel: its events are the
 * endpoint's from now on, and it outlives the listener's channel.
 */
int nrma_cm_req_adopt(struct nrma_cm *cm, struct nrma_cm_req *req)
{
	return rdma_migrate_id(req->id, cm->channel) ? -errno : 0;
}

/* An adopted request's id becomes the endpoint's one connection. */
int nrma_cm_accept(struct nrma_cm *cm, struct nrma_cm_req *req, const void *app,
		   size_t len)
{
	uint8_t data[NRMA_CM_REQ_DATA_MAX];
	struct rdma_conn_param param;
	struct nrma_conn *conn = NULL;
	int ret;

	if (nrma_cm_msg_conn(cm) || !req->id)
		return -FI_EOPBADSTATE;
	ret = cm_msg_conn_add(cm, req->id, &req->peer, false, &conn);
	if (conn)
		req->id = NULL;
	if (!ret) {
		conn->grant = req->grant;
		ret = conn_setup(conn);
	}
	if (!ret) {
		param = cm_conn_param(cm, data,
				      cm_conn_data(conn, app, len, data));
		if (rdma_accept(conn->id, &param))
			ret = -errno;
	}
	if (ret && conn) {
		rdma_reject(conn->id, NULL, 0);
		conn_destroy(conn);
	}
	return ret;
}

/* Ends the connection; the endpoint hears of it as of any failure. */
void nrma_cm_shutdown(struct nrma_cm *cm)
{
	struct nrma_conn *conn = nrma_cm_msg_conn(cm);

	if (conn)
		nrma_cm_conn_fail(conn, -FI_ECONNRESET);
}

int nrma_cm_peer(struct nrma_cm *cm, struct sockaddr_in *peer)
{
	struct nrma_conn *conn = nrma_cm_msg_conn(cm);

	if (!conn || !conn->established)
		return -FI_EOPBADSTATE;
	*peer = conn->peer;
	return 0;
}

size_t nrma_cm_reject_data(const struct nrma_cm *cm, const void **app)
{
	*app = cm->app;
	return cm->app_len;
}

int nrma_cm_bind_id(struct nrma_cm *cm, struct rdma_cm_id *id)
{
	if (rdma_migrate_id(id, cm->channel)) {
		int ret = -errno;

		rdma_destroy_id(id);
		return ret;
	}
	if (cm->listen_id)
		rdma_destroy_id(cm->listen_id);
	cm->listen_id = id;
	return 0;
}

void nrma_cm_close(struct nrma_cm *cm)
{
	struct nrma_dlist *item;

	while ((item = cm->table.conns.next) != &cm->table.conns ||
	       (item = cm->retired.next) != &cm->retired)
		conn_destroy(nrma_container_of(item, struct nrma_conn, link));
	nrma_conn_table_fini(&cm->table);
	if (cm->listen_id)
		rdma_destroy_id(cm->listen_id);
	rdma_destroy_event_channel(cm->channel);
	free(cm);
}
