/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Flow control of messages (src/nrma_credit.h has the arithmetic).  Each
 * connection's peer gets credits for two kinds of message: those an
 * application receives, which may wait unexpected in their buffers for a
 * long time, and the rest (ACKs, writes with immediate data), whose
 * buffers progress frees at once.  ACKs have credits of their own so that
 * a peer whose messages fill our buffers can still complete its sends.
 *
 * Credits come from one pool, the endpoint's: the buffers posted on its
 * shared receive queue that no peer holds a credit for.  Each connection
 * brings two buffers of its own (its floor: a credit of each class, up to
 * FI_NRMA_PEERS_MAX connections), so a new peer always has one, and is
 * topped up towards its share (FI_NRMA_CREDITS, half that for the second
 * class) as buffers go back on the queue: those taken by its messages,
 * or freed by anyone's, the peers with none first.  What all peers hold
 * together never exceeds the buffers posted, so the queue never runs dry
 * however many peers send to a receiver that makes no call; senders wait.
 *
 * A send with no credit waits on its connection's queue, in order, and
 * goes out when credits come; anything else without one returns
 * -FI_EAGAIN or waits as it already does.  Credits reach the peer in the
 * headers of our messages, or as fetch-and-adds to the two words of the
 * connection's credit cell at the peer: those take no receive buffer, so
 * they always get through.  The cell's third word carries, the same way,
 * the changes of our key table, for nrma_rkey.c.
 */
#include "nrma_credit.h"
#include "nrma_notify.h"
#include "nrma_xfer.h"

static void credit_tell(struct nrma_ep *ep, struct nrma_conn *conn);

static uint64_t credit_share(const struct nrma_xfer *x,
			     enum nrma_credit_class class)
{
	return class == NRMA_CREDIT_MSG ? x->credits_msg : x->credits_ctl;
}

/* Posted buffers that no peer holds a credit for. */
static uint64_t credit_pool(const struct nrma_xfer *x)
{
	return x->srq_posted > x->credit_out ? x->srq_posted - x->credit_out :
					       0;
}

/* Grants conn up to n credits of class from the pool: how many it did. */
static uint64_t credit_grant(struct nrma_xfer *x, struct nrma_conn *conn,
			     enum nrma_credit_class class, uint64_t n)
{
	uint64_t pool = credit_pool(x);

	if (n > pool)
		n = pool;
	conn->xfer->rx_credit[class].granted += n;
	x->credit_out += n;
	return n;
}

/* conn wants more of class: at the front if its peer has none left. */
static void credit_want(struct nrma_xfer *x, struct nrma_conn *conn,
			enum nrma_credit_class class)
{
	const struct nrma_credit_rx *rx = &conn->xfer->rx_credit[class];
	struct nrma_dlist *link = &conn->xfer->credit_want[class];
	struct nrma_dlist *head = &x->credit_wanting[class];

	if (!nrma_credit_want(rx, credit_share(x, class)) ||
	    conn->state != NRMA_CONN_CONNECTED)
		return;
	if (!nrma_dlist_empty(link)) {
		if (nrma_credit_out(rx))
			return;
		nrma_dlist_remove(link);
	}
	if (nrma_credit_out(rx))
		nrma_xfer_wait(x, link, head);
	else
		nrma_xfer_wait_first(x, link, head);
}

/*
 * A connection's floor: two buffers of its own, while the device's
 * queues and FI_NRMA_PEERS_MAX allow; past that its peer waits for
 * credits that others give back.
 */
static void credit_floor_add(struct nrma_ep *ep)
{
	struct nrma_xfer *x = ep->xfer;
	int ret;

	if (++x->credit_conns <= x->credit_backed)
		return;
	ret = nrma_rx_bufs_add(ep, NRMA_CREDIT_CLASSES);
	if (!ret)
		x->credit_backed++;
	else if (x->credit_backed == x->credit_conns - 1)
		NRMA_INFO(FI_LOG_EP_DATA,
			  "%zu peers: the next get no receive buffers of "
			  "their own (%s)\n",
			  x->credit_backed, fi_strerror(-ret));
}

/*
 * Before the connection says hello: its first grant, which its connect
 * data tells the peer.  It gets no more before it is up.
 */
int nrma_credit_conn_open(struct nrma_ep *ep, struct nrma_conn *conn)
{
	struct nrma_xfer *x = ep->xfer;
	struct nrma_xfer_conn *xc = conn->xfer;
	int ret;

	ret = nrma_notify_cell_open(ep->domain->notify, &xc->credit_cell);
	if (ret)
		return ret;
	/* A new connection's peer knows nothing of our keys yet. */
	xc->keys_told = atomic_load(&ep->domain->keys_changed);
	credit_floor_add(ep);
	/* One of each first, then the shares. */
	credit_grant(x, conn, NRMA_CREDIT_CTL, 1);
	credit_grant(x, conn, NRMA_CREDIT_MSG, x->credits_msg);
	credit_grant(x, conn, NRMA_CREDIT_CTL,
		     nrma_credit_want(&xc->rx_credit[NRMA_CREDIT_CTL],
				      x->credits_ctl));
	for (int c = 0; c < NRMA_CREDIT_CLASSES; c++)
		xc->rx_credit[c].told = xc->rx_credit[c].granted;
	conn->offer.credit_rkey = nrma_notify_cell_rkey(xc->credit_cell);
	conn->offer.credits_msg =
		(uint16_t) xc->rx_credit[NRMA_CREDIT_MSG].told;
	conn->offer.credits_ctl =
		(uint16_t) xc->rx_credit[NRMA_CREDIT_CTL].told;
	return 0;
}

/* The connection is up: short of its share, it waits for more. */
void nrma_credit_connected(struct nrma_ep *ep, struct nrma_conn *conn)
{
	if (!conn->xfer->credit_cell)
		return;
	/* What the peer's connect or accept data granted. */
	conn->xfer->tx_credit[NRMA_CREDIT_MSG].grant = conn->grant.credits_msg;
	conn->xfer->tx_credit[NRMA_CREDIT_CTL].grant = conn->grant.credits_ctl;
	for (int c = 0; c < NRMA_CREDIT_CLASSES; c++)
		credit_want(ep->xfer, conn, c);
	nrma_credit_refill(ep);
	credit_tell(ep, conn); /* our keys may have changed meanwhile */
}

/* Nothing more comes from conn's peer: its credits go back to the pool. */
void nrma_credit_conn_close(struct nrma_ep *ep, struct nrma_conn *conn)
{
	struct nrma_xfer_conn *xc = conn->xfer;
	struct nrma_xfer *x = ep->xfer;

	if (!xc->credit_cell)
		return;
	for (int c = 0; c < NRMA_CREDIT_CLASSES; c++) {
		x->credit_out -= nrma_credit_out(&xc->rx_credit[c]);
		nrma_dlist_remove(&xc->credit_want[c]);
	}
	x->credit_conns--;
	nrma_notify_cell_disarm(xc->credit_cell);
	nrma_notify_cell_close(xc->credit_cell);
	xc->credit_cell = NULL;
}

/* The word of conn's credit cell where the peer grants class's credits. */
static const volatile uint64_t *credit_remote(const struct nrma_conn *conn,
					      enum nrma_credit_class class)
{
	return nrma_notify_cell_word(conn->xfer->credit_cell,
				     class == NRMA_CREDIT_MSG ?
					     NRMA_NOTIFY_WRITES :
					     NRMA_NOTIFY_READS);
}

bool nrma_credit_has(const struct nrma_conn *conn, enum nrma_credit_class class)
{
	return nrma_credit_avail(&conn->xfer->tx_credit[class],
				 *credit_remote(conn, class)) > 0;
}

bool nrma_credit_take(struct nrma_conn *conn, enum nrma_credit_class class)
{
	return nrma_credit_tx_take(&conn->xfer->tx_credit[class],
				   credit_remote(conn, class));
}

/*
 * Posts a message whose credit the caller took; the credits the peer has
 * not heard of travel in its header.  Only once the queue pair has room:
 * credits stamped on a message that does not go would be lost.
 */
static int credit_chain(struct nrma_conn *conn, struct nrma_hdr *hdr,
			const struct nrma_sge *sge, struct nrma_wr_chain *chain)
{
	if (conn->state != NRMA_CONN_CONNECTED)
		return -FI_ECONNRESET;
	if (!conn->sq_free)
		return -FI_EAGAIN;
	hdr->credits_msg = (uint16_t) nrma_credit_take_back(
		&conn->xfer->rx_credit[NRMA_CREDIT_MSG], UINT16_MAX);
	hdr->credits_ctl = (uint16_t) nrma_credit_take_back(
		&conn->xfer->rx_credit[NRMA_CREDIT_CTL], UINT16_MAX);
	/* The device copies a small message as it is posted: it reads no
	 * registered memory later, and the sender's CPU has it in cache. */
	nrma_wr_chain_init(chain);
	nrma_wr_rdma(chain, NRMA_WR_SEND, sge, 1, 0, 0, 0,
		     sge->len <= conn->max_inline ? NRMA_WR_FLAG_INLINE : 0);
	return 0;
}

int nrma_credit_post(struct nrma_op *op, struct nrma_hdr *hdr,
		     const struct nrma_sge *sge)
{
	struct nrma_wr_chain chain;
	int ret = credit_chain(op->conn, hdr, sge, &chain);

	return ret ? ret : nrma_op_post(op, &chain);
}

int nrma_credit_post_light(struct nrma_conn *conn, struct nrma_hdr *hdr,
			   const struct nrma_sge *sge, void *context,
			   uint64_t flags)
{
	struct nrma_wr_chain chain;
	int ret = credit_chain(conn, hdr, sge, &chain);

	return ret ? ret : nrma_op_post_light(conn, &chain, context, flags);
}

/* Gives back a credit taken for a message that did not go. */
void nrma_credit_untake(struct nrma_conn *conn, enum nrma_credit_class class)
{
	nrma_credit_tx_untake(&conn->xfer->tx_credit[class]);
}

/*
 * A message from conn's peer arrived in buf: it gives us credits back and
 * uses one of its own, which the pool gets again once a buffer goes back
 * on the queue.  Returns false if the peer sent past its credits.
 */
bool nrma_credit_arrived(struct nrma_ep *ep, struct nrma_conn *conn,
			 uint32_t buf, enum nrma_credit_class class,
			 const struct nrma_hdr *hdr)
{
	struct nrma_xfer *x = ep->xfer;
	struct nrma_credit_rx *rx = &conn->xfer->rx_credit[class];
	struct nrma_rx_owner *owner = &nrma_rx_slot_of(x, buf)->owner;

	if (hdr) {
		conn->xfer->tx_credit[NRMA_CREDIT_MSG].back += hdr->credits_msg;
		conn->xfer->tx_credit[NRMA_CREDIT_CTL].back += hdr->credits_ctl;
	}
	if (rx->received++ < rx->granted)
		x->credit_out--;
	owner->conn = conn;
	owner->class = class;
	nrma_conn_hold(conn);
	if (nrma_credit_overrun(rx))
		return false;
	credit_want(x, conn, class);
	return true;
}

/* A fetch-and-add of add to the word at addr of conn's peer's credit cell. */
static void credit_wr(struct nrma_wr_chain *chain,
		      const struct nrma_sge *scratch, uint64_t addr,
		      const struct nrma_conn *conn, uint64_t add)
{
	nrma_wr_atomic(chain, NRMA_WR_FETCH_ADD, scratch, addr,
		       conn->grant.credit_rkey, add, 0, 0);
}

/* Progress tries again to tell conn's peer of its credits. */
static void credit_owe(struct nrma_ep *ep, struct nrma_conn *conn)
{
	if (conn->xfer->credit_owed)
		return;
	conn->xfer->credit_owed = true;
	nrma_conn_hold(conn);
	nrma_xfer_wait(ep->xfer, &conn->xfer->owed_link,
		       &ep->xfer->credit_owed);
}

/*
 * Tells the peer, with atomics on its credit cell, of the credits it has
 * back and of the changes of our key table it has not heard of
 * (nrma_rkey.c), if any are due and there is room.
 */
static void credit_tell(struct nrma_ep *ep, struct nrma_conn *conn)
{
	struct nrma_xfer_conn *xc = conn->xfer;
	struct nrma_xfer *x = ep->xfer;
	const struct nrma_sge *scratch = nrma_scratch_sge(x);
	struct nrma_credit_rx *rx = xc->rx_credit;
	uint64_t addr[] = { NRMA_CREDIT_MSG_ADDR, NRMA_CREDIT_CTL_ADDR };
	uint64_t keys = atomic_load(&ep->domain->keys_changed) - xc->keys_told;
	struct nrma_wr_chain chain;
	uint64_t back[NRMA_CREDIT_CLASSES];
	struct nrma_op *op;

	if (conn->state != NRMA_CONN_CONNECTED || xc->credit_returning ||
	    (!nrma_credit_due(&rx[NRMA_CREDIT_MSG], x->credits_msg) &&
	     !nrma_credit_due(&rx[NRMA_CREDIT_CTL], x->credits_ctl) && !keys))
		return;
	op = nrma_op_alloc(x, NRMA_OP_CREDIT, conn);
	if (!op) {
		credit_owe(ep, conn);
		return;
	}
	nrma_wr_chain_init(&chain);
	for (int c = 0; c < NRMA_CREDIT_CLASSES; c++) {
		back[c] = rx[c].granted - rx[c].told;
		if (back[c])
			credit_wr(&chain, scratch, addr[c], conn, back[c]);
	}
	if (keys)
		credit_wr(&chain, scratch, NRMA_CREDIT_KEYS_ADDR, conn, keys);
	if (nrma_op_post(op, &chain)) {
		nrma_op_free(x, op);
		credit_owe(ep, conn);
		return;
	}
	for (int c = 0; c < NRMA_CREDIT_CLASSES; c++)
		rx[c].told += back[c];
	xc->keys_told += keys;
	xc->credit_returning = true;
}

bool nrma_credit_keys_told(struct nrma_ep *ep, struct nrma_conn *conn,
			   uint64_t changes)
{
	if (conn->state != NRMA_CONN_CONNECTED || !conn->xfer->credit_cell)
		return true; /* it has nothing to forget */
	credit_tell(ep, conn);
	return (int64_t) (conn->xfer->keys_told - changes) >= 0 &&
	       !conn->xfer->credit_returning;
}

/*
 * Buffers went back on the queue: the peers that want credits get them,
 * in turn by class, those with none first.
 */
void nrma_credit_refill(struct nrma_ep *ep)
{
	struct nrma_xfer *x = ep->xfer;
	bool more = true;

	while (more && credit_pool(x)) {
		more = false;
		for (int c = 0; c < NRMA_CREDIT_CLASSES; c++) {
			struct nrma_dlist *item;
			struct nrma_conn *conn;

			item = nrma_dlist_pop_front(&x->credit_wanting[c]);
			if (!item)
				continue;
			conn = nrma_xfer_conn_of(item - c, credit_want);
			more = true;
			if (conn->state != NRMA_CONN_CONNECTED)
				continue;
			credit_grant(x, conn, c,
				     nrma_credit_want(&conn->xfer->rx_credit[c],
						      credit_share(x, c)));
			credit_want(x, conn, c); /* the pool ran out */
			credit_tell(ep, conn);
		}
	}
}

/* The buffer of a message from a peer is free again. */
void nrma_credit_released(struct nrma_ep *ep, uint32_t buf)
{
	struct nrma_rx_owner *owner = &nrma_rx_slot_of(ep->xfer, buf)->owner;
	struct nrma_conn *conn = owner->conn;

	if (!conn)
		return;
	owner->conn = NULL;
	nrma_conn_release(conn);
}

void nrma_credit_returned(struct nrma_ep *ep, struct nrma_op *op)
{
	struct nrma_conn *conn = op->conn;

	if (op->wc_pending)
		return;
	conn->xfer->credit_returning = false;
	nrma_op_free(ep->xfer, op);
	credit_tell(ep, conn);
}

/* Sends that wait for credits */

/* Queues op at the back, or at the front for one that was first. */
void nrma_credit_queue_send(struct nrma_ep *ep, struct nrma_op *op, bool front)
{
	struct nrma_conn *conn = op->conn;

	if (nrma_dlist_empty(&conn->xfer->send_queue)) {
		nrma_conn_hold(conn);
		nrma_xfer_wait(ep->xfer, &conn->xfer->blocked_link,
			       &ep->xfer->blocked_conns);
	}
	op->queued = true;
	if (!front)
		op->sent_ms = nrma_xfer_now_ms();
	nrma_dlist_insert_tail(&op->link, front ? conn->xfer->send_queue.next :
						  &conn->xfer->send_queue);
}

bool nrma_credit_send_waits(const struct nrma_conn *conn)
{
	return !nrma_dlist_empty(&conn->xfer->send_queue);
}

static void credit_unblock(struct nrma_conn *conn)
{
	nrma_dlist_remove(&conn->xfer->blocked_link);
	nrma_conn_release(conn);
}

/* The first send waiting on conn; NULL if none. */
struct nrma_op *nrma_credit_queued(struct nrma_conn *conn)
{
	if (nrma_dlist_empty(&conn->xfer->send_queue))
		return NULL;
	return nrma_container_of(conn->xfer->send_queue.next, struct nrma_op,
				 link);
}

void nrma_credit_unqueue(struct nrma_op *op)
{
	struct nrma_conn *conn = op->conn;

	nrma_dlist_remove(&op->link);
	op->queued = false;
	if (nrma_dlist_empty(&conn->xfer->send_queue))
		credit_unblock(conn);
}

/* Credits the peers are owed and could not get then (no operation or
 * queue room) go now. */
void nrma_credit_tell_owed(struct nrma_ep *ep)
{
	struct nrma_dlist *head = &ep->xfer->credit_owed, *item;

	for (item = head->next; item != head;) {
		struct nrma_conn *conn = nrma_xfer_conn_of(item, owed_link);

		item = item->next;
		nrma_dlist_remove(&conn->xfer->owed_link);
		conn->xfer->credit_owed = false;
		credit_tell(ep, conn);
		nrma_conn_release(conn);
	}
}
