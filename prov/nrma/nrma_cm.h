/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Connection management: an endpoint's rdmacm listener and its RC
 * connections, one per peer, made on first use (nrma_cm.c), and the table
 * that finds them by fi_addr_t, name or queue pair (nrma_conn.c).
 *
 * This layer talks to rdmacm and verbs only.  What it must know of the
 * endpoint (its name, its notification rkey, its verbs resources) it is
 * given; what the endpoint must know of it (a connection failed, a peer
 * left) it reports through the callbacks the endpoint gave it.  All of
 * it runs with the endpoint's lock held.
 */
#ifndef NRMA_CM_H
#define NRMA_CM_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>

#include <rdma/fabric.h>

#include "nrma_hash.h"
#include "nrma_list.h"
#include "nrma_proto.h"

struct nrma_cm;
struct nrma_verbs_domain;
struct nrma_verbs_ep;
struct nrma_verbs_qp;
struct rdma_cm_event;
struct rdma_cm_id;
struct rdma_event_channel;
/* What the data path (layer 2) keeps of a connection: nrma_xfer.h. */
struct nrma_xfer_conn;

/* rdmacm's address and route resolution, each. */
#define NRMA_CM_TIMEOUT_MS 2000

enum nrma_conn_state {
	NRMA_CONN_CONNECTING,
	NRMA_CONN_CONNECTED,
	NRMA_CONN_FAILED,
};

struct nrma_conn {
	struct nrma_dlist link; /* nrma_conn_table.conns */
	struct nrma_cm *cm;
	struct rdma_cm_id *id;
	struct nrma_verbs_qp *qp;
	enum nrma_conn_state state;
	int error; /* why it failed */
	bool outgoing;
	bool established;	 /* it was up once */
	bool announced;		 /* FI_EP_MSG: the endpoint heard it is up */
	bool loopback;		 /* our own request: we receive on it */
	struct sockaddr_in peer; /* the peer endpoint's name */
	uint16_t peer_ctx;	 /* and context (nrma_proto.h), 0 if ours */
	fi_addr_t fi_addr;	 /* FI_ADDR_NOTAVAIL until known */
	uint64_t av_removals;	 /* the AV's removals when it was checked */
	uint32_t qp_num;
	size_t sq_free;	   /* send queue slots not in use */
	size_t max_inline; /* bytes a request carries inline (its QP's) */
	/* The stall watch (nrma_conn_stalled). */
	uint64_t sq_done;    /* chains of work requests the device ended */
	uint64_t stall_seen; /* sq_done when last looked at */
	int64_t stall_since; /* ms: busy with no end seen since, or -1 */
	int64_t started;     /* ms: first attempt to reach the peer */
	/* Its connection broke after it was up: no listener means it left. */
	bool reached_before;
	bool reported; /* never came up, and a caller heard why (conn_redo) */
	/*
	 * Outgoing: the nonce its request carries, claimed (on the claims'
	 * list by claim_link) until it is up.  Incoming: the peer's nonce,
	 * and check_id asks the peer's listener about it until it answers;
	 * it is checking until then.
	 */
	uint64_t nonce;
	bool claimed;
	bool checking;
	struct nrma_dlist claim_link;
	struct rdma_cm_id *check_id;
	/* Operations and owed ACKs that use it: it lives while any do. */
	size_t refs;
	bool retired; /* replaced or given up: freed once unused */
	/* What its peer's connect or accept data granted us, and what ours
	 * grants the peer of the data path's (conn_open sets credit_rkey
	 * and the credits; the rest is the endpoint's, nrma_cm_attr). */
	struct nrma_cm_grant grant;
	struct nrma_cm_grant offer;
	/* The data path's, from conn_open (NULL before) to conn_close. */
	struct nrma_xfer_conn *xfer;
};

/*
 * Work that names conn (an operation, an owed ACK, a read that waits)
 * holds it while it does: a retired connection is freed only once nothing
 * holds it (nrma_cm_reap).
 */
static inline void nrma_conn_hold(struct nrma_conn *conn)
{
	conn->refs++;
}

static inline void nrma_conn_release(struct nrma_conn *conn)
{
	conn->refs--;
}

/* An endpoint's connections (nrma_conn.c); no rdmacm in it. */
struct nrma_conn_table {
	struct nrma_dlist conns;  /* every struct nrma_conn */
	struct nrma_conn **peers; /* by fi_addr_t */
	size_t npeers;
	struct nrma_hash by_qp; /* qp_num -> conn */
};

void nrma_conn_table_init(struct nrma_conn_table *table);
/* Frees the lookups; the connections are gone by then. */
void nrma_conn_table_fini(struct nrma_conn_table *table);
void nrma_conn_table_add(struct nrma_conn_table *table, struct nrma_conn *conn);
/* Forgets conn's fi_addr_t and queue pair; it stays on the list. */
void nrma_conn_table_unmap(struct nrma_conn_table *table,
			   struct nrma_conn *conn);
/* fi_addr leads to conn no more, nor is it conn's fi_addr_t. */
void nrma_conn_table_unmap_addr(struct nrma_conn_table *table,
				struct nrma_conn *conn, fi_addr_t fi_addr);
int nrma_conn_table_map(struct nrma_conn_table *table, struct nrma_conn *conn,
			fi_addr_t fi_addr);
int nrma_conn_table_map_qp(struct nrma_conn_table *table,
			   struct nrma_conn *conn, uint32_t qp_num);
struct nrma_conn *nrma_conn_table_by_addr(const struct nrma_conn_table *table,
					  fi_addr_t fi_addr);
/* A live connection from the peer named name's context ctx, loopback
 * ones and requests still being checked aside. */
struct nrma_conn *nrma_conn_table_by_name(const struct nrma_conn_table *table,
					  const struct sockaddr_in *name,
					  uint16_t ctx);
struct nrma_conn *nrma_conn_table_by_qp(const struct nrma_conn_table *table,
					uint32_t qp_num);

/*
 * The stall watch's look at conn, busy if it has work on the device:
 * whether it ended none of it for stall_ms.  The clock starts at the
 * first look that finds it busy and starts again at each end seen.
 */
bool nrma_conn_stalled(struct nrma_conn *conn, bool busy, int64_t now_ms,
		       int stall_ms);

/*
 * What to do with a connection request from the peer of existing (NULL:
 * none).  When two endpoints connect to each other at once, both apply
 * the same rule: the connection initiated by the endpoint with the
 * smaller name wins.  A request never replaces a connection that is up:
 * the peer may be restarting, or someone may claim its name; it is told
 * to try again while the connection is checked.
 */
enum nrma_conn_verdict {
	NRMA_CONN_ACCEPT,
	NRMA_CONN_COLLISION, /* reject: our connection is the one */
	NRMA_CONN_BUSY,	     /* reject for now: one is up */
};

enum nrma_conn_verdict nrma_conn_request_verdict(
	const struct sockaddr_in *self, const struct nrma_conn *existing);

/* What the endpoint hears of its connections (nrma_cm.c). */
struct nrma_cm_ops {
	/* conn failed: what waits on it will not complete. */
	void (*conn_failed)(void *arg, struct nrma_conn *conn);
	/* A peer left: take in what it sent before it went. */
	void (*drain)(void *arg);
	/* Is conn's peer still there?  If not, conn fails soon. */
	void (*probe)(void *arg, struct nrma_conn *conn);
	/* Before conn says hello: its credits (grants, credit_rkey). */
	int (*conn_open)(void *arg, struct nrma_conn *conn);
	/* conn is being freed: nothing uses it any more. */
	void (*conn_close)(void *arg, struct nrma_conn *conn);
	/* conn is up; FI_EP_MSG: the peer's accept data, if we connected. */
	void (*connected)(void *arg, struct nrma_conn *conn, const void *app,
			  size_t len);
};

/*
 * Whose a connection request is (nrma_cm_check.c, nrma_proto.h): a
 * domain's claims are the nonces of its endpoints' outgoing attempts
 * under way; an acceptor asks the listener of the endpoint a request
 * names whether the request's nonce is among them.  Its lock is a leaf.
 */
struct nrma_cm_claims;

enum nrma_cm_check_result {
	NRMA_CM_CHECK_PENDING,	 /* the answer is on its way */
	NRMA_CM_CHECK_CONFIRMED, /* the named endpoint sent the request */
	NRMA_CM_CHECK_DENIED,	 /* it did not */
	NRMA_CM_CHECK_UNSURE,	 /* no answer came: the requester may retry */
};

int nrma_cm_check_claims_open(struct nrma_cm_claims **claims);
void nrma_cm_check_claims_close(struct nrma_cm_claims *claims);
/* An outgoing attempt draws its nonce and is claimed until unclaimed. */
void nrma_cm_check_claim(struct nrma_cm_claims *claims, struct nrma_conn *conn);
void nrma_cm_check_unclaim(struct nrma_cm_claims *claims,
			   struct nrma_conn *conn);
/*
 * Checks conn, an incoming request that named conn->peer with the nonce
 * conn->nonce, for the endpoint self: one of its own claims answers at
 * once, else a check id on channel asks the peer's listener.
 */
enum nrma_cm_check_result nrma_cm_check_start(
	struct nrma_conn *conn, struct rdma_event_channel *channel,
	const struct sockaddr_in *self, struct nrma_cm_claims *claims);
/* An event of conn->check_id; it is destroyed once the answer is known. */
enum nrma_cm_check_result nrma_cm_check_event(struct nrma_conn *conn,
					      const struct rdma_cm_event *ev,
					      const struct sockaddr_in *self);
/* Answers a check request (id, query) to the endpoint self's listener. */
void nrma_cm_check_answer(struct rdma_cm_id *id,
			  const struct nrma_cm_data *query,
			  const struct sockaddr_in *self,
			  struct nrma_cm_claims *claims);
/*
 * Whether a request's source host is the one its named endpoint lives on:
 * nobody may speak for an endpoint on another host.
 */
bool nrma_cm_check_request_from(struct rdma_cm_id *id,
				const struct sockaddr_in *name);

/* Fixed when the endpoint is enabled. */
struct nrma_cm_attr {
	struct nrma_verbs_domain *vdom;
	struct nrma_cm_claims *claims; /* its domain's */
	struct nrma_verbs_ep *vep;
	size_t sq_depth; /* send queue per connection */
	size_t max_sge;
	size_t rd_atomic_depth;	 /* RDMA reads and atomics in flight */
	struct sockaddr_in name; /* the endpoint's, for private data */
	uint16_t ctx;		 /* its context, for private data */
	bool no_listen;		 /* transmits only: nobody connects to it */
	uint32_t notify_rkey;	 /* its notification cell, 0: none */
	uint32_t keytab_rkey;	 /* its domain's key table */
	uint32_t keytab_slots;
	const struct nrma_cm_ops *ops;
	void *arg;
	bool msg; /* FI_EP_MSG: one connection, made by the application */
};

/*
 * Binds a listening id to addr (port 0: any), so the name is known; with
 * addr NULL, none (a MSG endpoint that will accept a request).
 */
int nrma_cm_open(const struct sockaddr_in *addr, struct nrma_cm **cm);
/* Destroys every connection and the listener; reports nothing. */
void nrma_cm_close(struct nrma_cm *cm);
int nrma_cm_name(struct nrma_cm *cm, struct sockaddr_in *name);
/* Binds to another address; only before nrma_cm_listen. */
int nrma_cm_rebind(struct nrma_cm *cm, const struct sockaddr_in *addr);
/* Fixes attr; an RDM endpoint's listener starts to listen. */
int nrma_cm_enable(struct nrma_cm *cm, const struct nrma_cm_attr *attr);
/* Readable when connection events wait for nrma_cm_progress. */
int nrma_cm_fd(const struct nrma_cm *cm);
void nrma_cm_progress(struct nrma_cm *cm);
/* Frees failed connections whose last work requests have completed. */
void nrma_cm_reap(struct nrma_cm *cm);

/*
 * The connection fi_addr leads to, if it is up; the caller knows that
 * fi_addr still names its peer (conn->av_removals).  No name compared:
 * the data path's lookup.
 */
struct nrma_conn *nrma_cm_conn_up(const struct nrma_cm *cm, fi_addr_t fi_addr);
/*
 * The connection to fi_addr (whose name is peer), if it is up.  Otherwise
 * starts or waits for it and returns -FI_EAGAIN, or says why it cannot.
 * A connection to another peer that fi_addr led to (the AV removed it and
 * gave its index to peer) is forgotten there first.
 */
int nrma_cm_conn_get(struct nrma_cm *cm, fi_addr_t fi_addr,
		     const struct sockaddr_in *peer, struct nrma_conn **conn);
/* Records the fi_addr_t of a peer that connected to us, if still free. */
void nrma_cm_conn_learn_addr(struct nrma_cm *cm, struct nrma_conn *conn,
			     fi_addr_t fi_addr);
/*
 * The AV names conn's peer by fi_addr no more (fi_av_remove): it leads
 * nowhere now.  A failed connection is then done; a live one stays, for
 * what its peer sends and for the fi_addr_t the AV may give it again.
 */
void nrma_cm_conn_forget_addr(struct nrma_cm *cm, struct nrma_conn *conn,
			      fi_addr_t fi_addr);
struct nrma_conn *nrma_cm_conn_by_qp(struct nrma_cm *cm, uint32_t qp_num);
/* Every connection not yet retired, by conn->link. */
struct nrma_dlist *nrma_cm_conns(struct nrma_cm *cm);
/*
 * FI_EP_MSG (fi_cm(3)): an endpoint's one connection, under fi_addr_t
 * NRMA_CM_MSG_ADDR.  Its events reach the endpoint through connected and
 * conn_failed; a refusal leaves the peer's reject data with the cm.
 */
#define NRMA_CM_MSG_ADDR 0

/* A connection request to a passive endpoint (nrma_cm_listen.c). */
struct nrma_cm_req {
	struct rdma_cm_id *id; /* NULL once an endpoint took it */
	struct nrma_cm_grant grant;
	struct sockaddr_in peer;
	struct sockaddr_in local;
	uint8_t app[NRMA_CM_MSG_APP_MAX];
	size_t app_len;
};

struct nrma_conn *nrma_cm_msg_conn(struct nrma_cm *cm);
/* Connects the bound id to dest with the application's data (once). */
int nrma_cm_connect(struct nrma_cm *cm, const struct sockaddr_in *dest,
		    const void *app, size_t len);
/* The endpoint of cm takes the request over from its listener. */
int nrma_cm_req_adopt(struct nrma_cm *cm, struct nrma_cm_req *req);
int nrma_cm_accept(struct nrma_cm *cm, struct nrma_cm_req *req, const void *app,
		   size_t len);
void nrma_cm_shutdown(struct nrma_cm *cm);
/* The peer of an established connection. */
int nrma_cm_peer(struct nrma_cm *cm, struct sockaddr_in *peer);
/* What the peer said when it refused us. */
size_t nrma_cm_reject_data(const struct nrma_cm *cm, const void **app);
/* Makes id, a passive endpoint's, the bound one (fi_info handle). */
int nrma_cm_bind_id(struct nrma_cm *cm, struct rdma_cm_id *id);

/* An id on channel bound to addr; the local address of an id. */
int nrma_cm_id_bind(struct rdma_event_channel *channel,
		    const struct sockaddr_in *addr, struct rdma_cm_id **id);
int nrma_cm_id_name(struct rdma_cm_id *id, struct sockaddr_in *name);

/*
 * A passive endpoint's listener (nrma_cm_listen.c): requests that carry
 * MSG connect data go to on_request, which keeps a copy (else it returns
 * an error, and the request is refused).  Each is answered with
 * nrma_cm_accept or nrma_cm_listen_req_reject; nrma_cm_listen_req_done releases what
 * is left of it.
 */
struct nrma_cm_listener;
typedef int (*nrma_cm_request_fn)(void *arg, const struct nrma_cm_req *req);

int nrma_cm_listen_open(const struct sockaddr_in *addr,
			struct nrma_cm_listener **listener);
void nrma_cm_listen_close(struct nrma_cm_listener *l);
int nrma_cm_listen_name(struct nrma_cm_listener *l, struct sockaddr_in *name);
int nrma_cm_listen_rebind(struct nrma_cm_listener *l,
			  const struct sockaddr_in *addr);
int nrma_cm_listen_start(struct nrma_cm_listener *l, int backlog,
			 nrma_cm_request_fn on_request, void *arg);
/* Hands the bound id over (an active endpoint takes the address). */
struct rdma_cm_id *nrma_cm_listen_release(struct nrma_cm_listener *l);
int nrma_cm_listen_fd(const struct nrma_cm_listener *l);
void nrma_cm_listen_progress(struct nrma_cm_listener *l);
int nrma_cm_listen_req_reject(struct nrma_cm_req *req, const void *app,
			      size_t len);
void nrma_cm_listen_req_done(struct nrma_cm_req *req);

/* Marks conn failed (once) and reports it. */
void nrma_cm_conn_fail(struct nrma_conn *conn, int error);
/* Fails every connection, and refuses new ones with error, for good. */
void nrma_cm_disable(struct nrma_cm *cm, int error);
/* Whether a connection has work requests on the device. */
bool nrma_cm_busy(const struct nrma_cm *cm);
/*
 * Fails, with -FI_ETIMEDOUT, each connection whose device ended none of
 * its work requests for stall_ms; call it only when the completion queue
 * was just found empty, once in a while (now_ms).
 */
void nrma_cm_fail_stalled(struct nrma_cm *cm, int64_t now_ms, int stall_ms);
/* Whose connection it is: the arg of its cm's attributes. */
void *nrma_cm_conn_owner(const struct nrma_conn *conn);
/* The peer sent on an accepted connection: it is up. */
void nrma_cm_conn_heard(struct nrma_conn *conn);

#endif /* NRMA_CM_H */
