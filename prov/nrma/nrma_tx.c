/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * An application's transmits: their checks, budget and reports, the
 * connection each goes over, and their submission once it is up.
 */
#include <stdlib.h>
#include <string.h>

#include "nrma_comp.h"
#include "nrma_iov.h"
#include "nrma_xfer.h"

/* An application's transmit, while tx_attr->size allows one more. */
struct nrma_op *nrma_tx_op_alloc(struct nrma_ep *ep, enum nrma_op_kind kind,
				 struct nrma_conn *conn, bool bounce)
{
	struct nrma_xfer *x = ep->xfer;

	if (!nrma_tx_room(x))
		return NULL;
	return bounce ? nrma_op_alloc_buf(x, kind, conn) :
			nrma_op_alloc(x, kind, conn);
}

struct nrma_sge nrma_tx_buf_sge(const struct nrma_xfer *x, int64_t buf,
				size_t len)
{
	return (struct nrma_sge){
		.addr = (uintptr_t) nrma_bufpool_buf(&x->tx_bufs, buf),
		.len = len,
		.lkey = nrma_verbs_mr_lkey(x->tx_mr),
	};
}

/*
 * A zero-byte RDMA write needs no key and changes nothing at the peer:
 * it only succeeds while the peer's queue pair is there.  One at a time.
 */
void nrma_tx_probe(struct nrma_ep *ep, struct nrma_conn *conn)
{
	struct nrma_wr_chain chain;
	struct nrma_op *op;

	if (conn->state != NRMA_CONN_CONNECTED || conn->xfer->probing)
		return;
	op = nrma_op_alloc(ep->xfer, NRMA_OP_PROBE, conn);
	if (!op)
		return; /* busy with other work, which tells as much */
	nrma_wr_chain_init(&chain);
	nrma_wr_rdma(&chain, NRMA_WR_WRITE, NULL, 0, 0, 0, 0, 0);
	if (nrma_op_post(op, &chain))
		nrma_op_free(ep->xfer, op);
	else
		conn->xfer->probing = true;
}

/* An error entry (nrma_comp_tx_done writes a success's). */
static NRMA_NOINLINE void tx_report_entry(struct nrma_ep *ep, void *context,
					  uint64_t flags, int err,
					  int prov_errno)
{
	struct nrma_comp comp = {
		.context = context,
		.flags = flags,
		.src = FI_ADDR_NOTAVAIL,
		.err = err,
		.prov_errno = prov_errno,
	};

	nrma_comp_tx(ep, &comp);
}

/* A transmit ended with err (positive, 0: success). */
static void tx_end(struct nrma_ep *ep, void *context, uint64_t flags, int err,
		   int prov_errno)
{
	if (!err)
		nrma_comp_tx_done(ep, context, flags);
	else
		tx_report_entry(ep, context, flags, err, prov_errno);
}

void nrma_tx_light_done(struct nrma_ep *ep, const struct nrma_op_light *done)
{
	tx_end(ep, done->context, done->flags, done->error, done->prov_errno);
	nrma_tx_ended(ep->xfer);
}

void nrma_tx_report(struct nrma_ep *ep, const struct nrma_op *op)
{
	tx_end(ep, op->context, op->flags, op->error, op->prov_errno);
}

/*
 * Ends a transmit that the peer would refuse before it goes: an error
 * entry, FI_EACCES (also for fi_inject calls, which have no other way to
 * tell), and the connection stays up.
 */
ssize_t nrma_tx_refuse(struct nrma_ep *ep, void *context, uint64_t flags)
{
	tx_report_entry(ep, context, flags, FI_EACCES,
			nrma_verbs_status_rem_access);
	return 0;
}

/* A connection to dest not taken yet, or not since the AV removed one. */
static NRMA_NOINLINE int tx_connection_get(struct nrma_ep *ep, fi_addr_t dest,
					   uint64_t removals,
					   struct nrma_conn **conn)
{
	struct sockaddr_in peer;
	int ret;

	if (nrma_addr_table_get(&ep->av->table, dest, &peer))
		return -FI_EINVAL;
	ret = nrma_cm_conn_get(ep->cm, dest, &peer, conn);
	if (!ret)
		(*conn)->av_removals = removals;
	return ret;
}

/* A scalable peer's receive contexts share one connection, to this. */
fi_addr_t nrma_tx_peer_addr(const struct nrma_ep *ep, fi_addr_t dest)
{
	return ep->rx_ctx_bits ? nrma_addr_base(&ep->av->table, dest) : dest;
}

/*
 * The connection to dest, once it is up; a connected endpoint's one, and
 * dest means nothing.  One that dest led to, up, while the AV removed
 * nothing since (conn->av_removals), goes without a look at the AV.
 * Called with ep->lock held.
 */
int nrma_tx_connection(struct nrma_ep *ep, fi_addr_t dest,
		       struct nrma_conn **conn)
{
	struct nrma_addr_table *table;
	struct nrma_conn *up;
	uint64_t removals;

	if (!ep->enabled)
		return -FI_EOPBADSTATE;
	if (nrma_ep_is_msg(ep)) {
		*conn = nrma_cm_msg_conn(ep->cm);
		return *conn && (*conn)->state == NRMA_CONN_CONNECTED ?
			       0 :
			       -FI_ENOTCONN;
	}
	table = &ep->av->table;
	dest = nrma_tx_peer_addr(ep, dest);
	removals = nrma_addr_table_removals(table);
	up = nrma_cm_conn_up(ep->cm, dest);
	if (!up || up->av_removals != removals)
		return tx_connection_get(ep, dest, removals, conn);
	*conn = up;
	return 0;
}

/*
 * Flags no transmit may carry: nrma has no persistent memory to commit
 * to (FI_COMMIT_COMPLETE).
 */
int nrma_tx_flags_check(uint64_t flags)
{
	return (flags & FI_COMMIT_COMPLETE) ? -FI_EOPNOTSUPP : 0;
}

/*
 * The length of what an operation of a class transmits, or -FI_EINVAL at
 * once when the class's sizes (FI_OPT_MAX_*, FI_OPT_INJECT_*) rule it out.
 */
ssize_t nrma_tx_len(const struct nrma_ep *ep, enum nrma_xfer_class class,
		    const struct iovec *iov, size_t count, uint64_t flags)
{
	size_t len;
	int ret;

	ret = nrma_tx_flags_check(flags);
	if (ret)
		return ret;
	if (count > ep->info->tx_attr->iov_limit || (count && !iov))
		return -FI_EINVAL;
	len = nrma_iov_len(iov, count);
	if (len > ep->max_size[class] ||
	    ((flags & FI_INJECT) && len > ep->inject_size[class]))
		return -FI_EINVAL;
	return len;
}

void nrma_tx_started(struct nrma_xfer *x)
{
	x->tx->sends++;
	x->sends++;
}

void nrma_tx_ended(struct nrma_xfer *x)
{
	x->tx->sends--;
	x->sends--;
}

/* Inline in each common path's call (nrma_rma_light, nrma_rma_small,
 * nrma_send_buf). */
NRMA_INLINE int nrma_tx_enter(struct nrma_ep *ep, fi_addr_t dest, bool may_wait,
			      struct nrma_conn **conn)
{
	int ret;

	*conn = NULL;
	pthread_mutex_lock(ep->lock);
	ret = nrma_tx_connection(ep, dest, conn);
	return ret == -FI_EAGAIN && may_wait ? 0 : ret;
}

NRMA_INLINE void nrma_tx_leave(struct nrma_ep *ep)
{
	pthread_mutex_unlock(ep->lock);
}

/*
 * Posts an application's transmit with post() once the connection to
 * dest is up, or, if it may wait, while it is being made; -FI_EAGAIN
 * when there is no room.
 */
ssize_t nrma_tx_submit(struct nrma_ep *ep, fi_addr_t dest, nrma_tx_post_fn post,
		       const void *args, size_t len, bool may_wait)
{
	struct nrma_conn *conn;
	ssize_t ret = nrma_tx_enter(ep, dest, may_wait, &conn);

	if (!ret)
		ret = post(ep, conn, args, len);
	nrma_tx_leave(ep);
	return ret;
}

/* Transmits held for a key (see nrma_xfer.h) */

size_t nrma_tx_args_room(size_t args_size)
{
	return (args_size + sizeof(max_align_t) - 1) / sizeof(max_align_t) *
	       sizeof(max_align_t);
}

struct nrma_tx_held *nrma_tx_held_new(const void *args, size_t args_size,
				      const struct fi_nrma_notify *notify,
				      size_t data)
{
	struct nrma_tx_held *h =
		malloc(sizeof(*h) + nrma_tx_args_room(args_size) + data);

	if (!h)
		return NULL;
	memcpy(h->args, args, args_size);
	if (notify)
		h->notify = *notify;
	return h;
}

void *nrma_tx_held_data(struct nrma_tx_held *h, size_t args_size)
{
	return (char *) h->args + nrma_tx_args_room(args_size);
}

/*
 * conn is on the endpoint's list, and holds a reference for it, while it
 * holds transmits or posts one of them again.
 */
static void tx_held_settle(struct nrma_ep *ep, struct nrma_conn *conn)
{
	struct nrma_xfer_conn *xc = conn->xfer;
	bool listed = !nrma_dlist_empty(&xc->held_link);
	bool busy = !nrma_dlist_empty(&xc->held) || xc->held_posting;

	if (busy && !listed) {
		nrma_conn_hold(conn);
		nrma_xfer_wait(ep->xfer, &xc->held_link, &ep->xfer->held_conns);
	} else if (!busy && listed) {
		nrma_dlist_remove(&xc->held_link);
		nrma_conn_release(conn);
	}
}

ssize_t nrma_tx_hold(struct nrma_ep *ep, struct nrma_conn *conn,
		     struct nrma_tx_held *h)
{
	struct nrma_xfer *x = ep->xfer;

	if (!nrma_tx_room(x)) {
		free(h);
		return -FI_EAGAIN;
	}
	nrma_dlist_insert_tail(&h->link, &conn->xfer->held);
	tx_held_settle(ep, conn);
	nrma_tx_started(x);
	return 0;
}

/* Whether conn holds transmits. */
static bool tx_held_any(const struct nrma_conn *conn)
{
	return !nrma_dlist_empty(&conn->xfer->held);
}

bool nrma_tx_held_waits(const struct nrma_conn *conn)
{
	return tx_held_any(conn) || conn->xfer->atomic_looping;
}

bool nrma_tx_held_must_wait(const struct nrma_conn *conn, const void *args,
			    int key_ret)
{
	if (conn->xfer->held_posting == args)
		return false;
	return key_ret == -FI_EINPROGRESS || nrma_tx_held_waits(conn);
}

/* conn's first held transmit, unlinked; its budget is free again. */
static struct nrma_tx_held *tx_held_pop(struct nrma_ep *ep,
					struct nrma_conn *conn)
{
	struct nrma_tx_held *h =
		nrma_container_of(nrma_dlist_pop_front(&conn->xfer->held),
				  struct nrma_tx_held, link);

	nrma_tx_ended(ep->xfer);
	return h;
}

static void tx_held_end(struct nrma_ep *ep, struct nrma_tx_held *h, int err)
{
	if (err)
		tx_report_entry(ep, h->context, h->comp_flags, err, 0);
	free(h);
}

/*
 * Posts h again, off its list (a post that fails the connection fails
 * what else is held there): whether it must still wait, first in line.
 */
static bool tx_held_post_one(struct nrma_ep *ep, struct nrma_conn *conn,
			     struct nrma_tx_held *h)
{
	ssize_t ret;

	conn->xfer->held_posting = h->args;
	ret = h->post(ep, conn, h->args, h->len);
	conn->xfer->held_posting = NULL;
	if (ret != -FI_EINPROGRESS && ret != -FI_EAGAIN) {
		tx_held_end(ep, h, (int) -ret);
		return false;
	}
	if (conn->state != NRMA_CONN_CONNECTED) {
		tx_held_end(ep, h, FI_ECONNRESET);
		return false;
	}
	nrma_dlist_insert_head(&h->link, &conn->xfer->held);
	nrma_tx_started(ep->xfer);
	return true;
}

/* conn's held transmits, in order, until one must still wait. */
static void tx_held_post(struct nrma_ep *ep, struct nrma_conn *conn)
{
	while (tx_held_any(conn) && !conn->xfer->atomic_looping &&
	       conn->state == NRMA_CONN_CONNECTED &&
	       !tx_held_post_one(ep, conn, tx_held_pop(ep, conn)))
		;
	tx_held_settle(ep, conn);
}

void nrma_tx_held_retry(struct nrma_ep *ep)
{
	struct nrma_dlist *head = &ep->xfer->held_conns, *item = head->next;

	while (item != head) {
		struct nrma_conn *conn = nrma_xfer_conn_of(item, held_link);

		item = item->next;
		tx_held_post(ep, conn);
	}
}

void nrma_tx_held_fail(struct nrma_ep *ep, struct nrma_conn *conn, int err)
{
	while (tx_held_any(conn))
		tx_held_end(ep, tx_held_pop(ep, conn), err);
	tx_held_settle(ep, conn);
}

void nrma_tx_held_drop(struct nrma_conn *conn)
{
	struct nrma_dlist *item;

	nrma_dlist_remove(&conn->xfer->held_link);
	while ((item = nrma_dlist_pop_front(&conn->xfer->held)))
		free(nrma_container_of(item, struct nrma_tx_held, link));
}
