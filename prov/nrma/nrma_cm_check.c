/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Whose a connection request is.  A request names its endpoint; rdmacm
 * vouches for the requester's host, not for its port, so a process on
 * that host could claim the name of another endpoint there and receive
 * what is sent to it.  Before a request is accepted, the endpoint it
 * names is asked, through its own listener, whether the request's nonce
 * is one of its attempts under way (nrma_proto.h).  Only that endpoint's
 * domain knows the nonce: a scalable endpoint's transmit contexts connect
 * under its name, and its core endpoint's listener answers for them.
 *
 * Nothing here waits: the question and its answer are connection events,
 * handled like the others by the endpoint's control progress.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include <rdma/rdma_cma.h>

#include "nrma.h"
#include "nrma_cm.h"
#include "nrma_proto.h"
#include "nrma_verbs.h"

struct nrma_cm_claims {
	pthread_mutex_t lock;
	struct nrma_dlist conns; /* outgoing attempts, by conn->claim_link */
};

int nrma_cm_check_claims_open(struct nrma_cm_claims **claimsp)
{
	struct nrma_cm_claims *claims = calloc(1, sizeof(*claims));

	if (!claims)
		return -FI_ENOMEM;
	pthread_mutex_init(&claims->lock, NULL);
	nrma_dlist_init(&claims->conns);
	*claimsp = claims;
	return 0;
}

/* Every endpoint of the domain is closed: nothing is claimed. */
void nrma_cm_check_claims_close(struct nrma_cm_claims *claims)
{
	pthread_mutex_destroy(&claims->lock);
	free(claims);
}

void nrma_cm_check_claim(struct nrma_cm_claims *claims, struct nrma_conn *conn)
{
	/* Only a signal interrupts it, once the system booted. */
	while (getrandom(&conn->nonce, sizeof(conn->nonce), 0) !=
	       sizeof(conn->nonce))
		;
	pthread_mutex_lock(&claims->lock);
	nrma_dlist_insert_tail(&conn->claim_link, &claims->conns);
	pthread_mutex_unlock(&claims->lock);
	conn->claimed = true;
}

void nrma_cm_check_unclaim(struct nrma_cm_claims *claims,
			   struct nrma_conn *conn)
{
	if (!conn->claimed)
		return;
	pthread_mutex_lock(&claims->lock);
	nrma_dlist_remove(&conn->claim_link);
	pthread_mutex_unlock(&claims->lock);
	conn->claimed = false;
}

/* Whether an attempt under way to peer carries nonce; its fields stay. */
static bool claims_hold(struct nrma_cm_claims *claims, uint64_t nonce,
			const struct sockaddr_in *peer)
{
	struct nrma_dlist *item;
	bool held = false;

	pthread_mutex_lock(&claims->lock);
	nrma_dlist_foreach (&claims->conns, item) {
		const struct nrma_conn *conn =
			nrma_container_of(item, struct nrma_conn, claim_link);

		if (conn->nonce == nonce && !nrma_addr_cmp(&conn->peer, peer)) {
			held = true;
			break;
		}
	}
	pthread_mutex_unlock(&claims->lock);
	return held;
}

bool nrma_cm_check_request_from(struct rdma_cm_id *id,
				const struct sockaddr_in *name)
{
	const struct sockaddr *src = rdma_get_peer_addr(id);

	return src && src->sa_family == AF_INET &&
	       name->sin_family == AF_INET &&
	       ((const struct sockaddr_in *) src)->sin_addr.s_addr ==
		       name->sin_addr.s_addr;
}

enum nrma_cm_check_result nrma_cm_check_start(
	struct nrma_conn *conn, struct rdma_event_channel *channel,
	const struct sockaddr_in *self, struct nrma_cm_claims *claims)
{
	struct sockaddr_in src = *self;

	/* Our own request, or a claim of our name. */
	if (!nrma_addr_cmp(&conn->peer, self))
		return claims_hold(claims, conn->nonce, self) ?
			       NRMA_CM_CHECK_CONFIRMED :
			       NRMA_CM_CHECK_DENIED;
	src.sin_port = 0;
	if (rdma_create_id(channel, &conn->check_id, conn, RDMA_PS_TCP))
		goto err;
	if (!rdma_resolve_addr(conn->check_id, (struct sockaddr *) &src,
			       (struct sockaddr *) &conn->peer,
			       NRMA_CM_TIMEOUT_MS))
		return NRMA_CM_CHECK_PENDING;
	rdma_destroy_id(conn->check_id);
	conn->check_id = NULL;
err:
	NRMA_WARN(FI_LOG_EP_CTRL, "cannot check a request: %s\n",
		  strerror(errno));
	return NRMA_CM_CHECK_UNSURE;
}

/* A check's question (reason NONE) or answer, about nonce, from self. */
static void check_data_init(struct nrma_cm_data *data,
			    const struct sockaddr_in *self,
			    enum nrma_reject_reason reason, uint64_t nonce)
{
	nrma_proto_cm_data_init(data, self, 0, reason);
	data->kind = htons(NRMA_CM_CHECK);
	data->nonce = nonce;
}

/* The question: the nonce, with our name, to the peer's listener. */
static enum nrma_cm_check_result check_ask(struct nrma_conn *conn,
					   const struct sockaddr_in *self)
{
	struct nrma_cm_data query;
	struct rdma_conn_param param = {
		.private_data = &query,
		.private_data_len = sizeof(query),
	};

	check_data_init(&query, self, NRMA_REJECT_NONE, conn->nonce);
	/*
	 * The listener only refuses it, but the peer's CM still takes the
	 * number of our queue pair as the requester's, and refuses (and
	 * disconnects) what claims one in use: conn's own, not connected
	 * yet, is ours alone.
	 */
	param.qp_num = nrma_verbs_qp_num(conn->qp);
	return rdma_connect(conn->check_id, &param) ? NRMA_CM_CHECK_UNSURE :
						      NRMA_CM_CHECK_PENDING;
}

/* The answer: a refusal that confirms or denies, or none. */
static enum nrma_cm_check_result check_answer(const struct nrma_conn *conn,
					      const struct rdma_cm_event *ev)
{
	const struct nrma_cm_data *data = nrma_proto_cm_data_parse(
		ev->param.conn.private_data, ev->param.conn.private_data_len);

	if (!data ||
	    nrma_proto_cm_data_version(data) != NRMA_PROTOCOL_VERSION ||
	    nrma_proto_cm_data_kind(data) != NRMA_CM_CHECK)
		return NRMA_CM_CHECK_UNSURE;
	if (nrma_proto_cm_data_reason(data) == NRMA_REJECT_CONFIRMED &&
	    data->nonce == conn->nonce)
		return NRMA_CM_CHECK_CONFIRMED;
	return NRMA_CM_CHECK_DENIED;
}

enum nrma_cm_check_result nrma_cm_check_event(struct nrma_conn *conn,
					      const struct rdma_cm_event *ev,
					      const struct sockaddr_in *self)
{
	switch (ev->event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		return rdma_resolve_route(conn->check_id, NRMA_CM_TIMEOUT_MS) ?
			       NRMA_CM_CHECK_UNSURE :
			       NRMA_CM_CHECK_PENDING;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		return check_ask(conn, self);
	case RDMA_CM_EVENT_REJECTED:
		return check_answer(conn, ev);
	case RDMA_CM_EVENT_ESTABLISHED:
		/* Not an nrma listener: nrma never accepts a check. */
		rdma_disconnect(conn->check_id);
		return NRMA_CM_CHECK_DENIED;
	default:
		return NRMA_CM_CHECK_UNSURE;
	}
}

void nrma_cm_check_answer(struct rdma_cm_id *id,
			  const struct nrma_cm_data *query,
			  const struct sockaddr_in *self,
			  struct nrma_cm_claims *claims)
{
	bool ours = nrma_cm_check_request_from(id, &query->name) &&
		    claims_hold(claims, query->nonce, &query->name);
	struct nrma_cm_data answer;

	check_data_init(&answer, self,
			ours ? NRMA_REJECT_CONFIRMED : NRMA_REJECT_IDENTITY,
			query->nonce);
	if (!ours)
		NRMA_INFO(FI_LOG_EP_CTRL,
			  "%s:%u asked about a request we did not make\n",
			  inet_ntoa(query->name.sin_addr),
			  ntohs(query->name.sin_port));
	rdma_reject(id, &answer, sizeof(answer));
}
