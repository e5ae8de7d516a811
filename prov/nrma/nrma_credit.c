/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Flow control of messages (src/nrma_credit.h has the arithmetic).  Each
 * connection grants its peer credits for two kinds of message: those an
 * application receives, which may wait unexpected in their buffers for a
 * long time, and the rest (ACKs, writes with immediate data), whose
 * buffers progress frees at once.  ACKs have credits of their own so that
 * a peer whose messages fill our buffers can still complete its sends.
 *
 * A send with no credit waits on its connection's queue, in order, and
 * goes out when credits come back; anything else without one returns
 * -FI_EAGAIN or waits as it already does.  Credits come back in the
 * headers of our messages, or as fetch-and-adds to the two words of the
 * connection's credit cell at the peer: those take no receive buffer, so
 * they always get through.
 */
#include "nrma_notify.h"
#include "nrma_xfer.h"

int nrma_credit_conn_open(struct nrma_ep *ep, struct nrma_conn *conn)
{
	struct nrma_xfer *x = ep->xfer;
	int ret;

	ret = nrma_notify_cell_open(ep->domain->notify, &conn->credit_cell);
	if (ret)
		return ret;
	conn->credit_rkey = nrma_notify_cell_rkey(conn->credit_cell);
	conn->rx_credit[NRMA_CREDIT_MSG].grant = x->credits_msg;
	conn->rx_credit[NRMA_CREDIT_CTL].grant = x->credits_ctl;
	return 0;
}

void nrma_credit_conn_close(struct nrma_conn *conn)
{
	if (!conn->credit_cell)
		return;
	nrma_notify_cell_disarm(conn->credit_cell);
	nrma_notify_cell_close(conn->credit_cell);
	conn->credit_cell = NULL;
}

static uint64_t credit_avail(const struct nrma_conn *conn,
			     enum nrma_credit_class class)
{
	enum nrma_notify_word word = class == NRMA_CREDIT_MSG ?
					     NRMA_NOTIFY_WRITES :
					     NRMA_NOTIFY_READS;

	return nrma_credit_avail(
		&conn->tx_credit[class],
		*nrma_notify_cell_word(conn->credit_cell, word));
}

bool nrma_credit_has(const struct nrma_conn *conn, enum nrma_credit_class class)
{
	return credit_avail(conn, class) > 0;
}

bool nrma_credit_take(struct nrma_conn *conn, enum nrma_credit_class class)
{
	if (!credit_avail(conn, class))
		return false;
	conn->tx_credit[class].sent++;
	return true;
}

/*
 * Posts a message whose credit the caller took; what we owe the peer
 * travels in its header.  Only once the queue pair has room: credits
 * stamped on a message that does not go would be lost.
 */
int nrma_credit_post(struct nrma_xfer *x, struct nrma_op *op,
		     struct nrma_hdr *hdr, struct nrma_wr *wr)
{
	struct nrma_conn *conn = op->conn;

	if (conn->state != NRMA_CONN_CONNECTED)
		return -FI_ECONNRESET;
	if (!conn->sq_free)
		return -FI_EAGAIN;
	hdr->credits_msg = (uint16_t) nrma_credit_take_back(
		&conn->rx_credit[NRMA_CREDIT_MSG], UINT16_MAX);
	hdr->credits_ctl = (uint16_t) nrma_credit_take_back(
		&conn->rx_credit[NRMA_CREDIT_CTL], UINT16_MAX);
	return nrma_op_post(x, op, wr, 1);
}

/* Gives back a credit taken for a message that did not go. */
void nrma_credit_untake(struct nrma_conn *conn, enum nrma_credit_class class)
{
	conn->tx_credit[class].sent--;
}

/*
 * A message from conn's peer arrived in buf: it gives us credits back and
 * takes one of its own.  Returns false if the peer sent past its grant.
 */
bool nrma_credit_arrived(struct nrma_ep *ep, struct nrma_conn *conn,
			 uint32_t buf, enum nrma_credit_class class,
			 const struct nrma_hdr *hdr)
{
	struct nrma_credit_rx *rx = &conn->rx_credit[class];
	struct nrma_rx_owner *owner = &ep->xfer->rx_owner[buf];

	if (hdr) {
		conn->tx_credit[NRMA_CREDIT_MSG].back += hdr->credits_msg;
		conn->tx_credit[NRMA_CREDIT_CTL].back += hdr->credits_ctl;
	}
	rx->received++;
	owner->conn = conn;
	owner->class = class;
	conn->refs++;
	return !nrma_credit_overrun(rx);
}

/* Progress tries again to give conn's credits back. */
static void credit_owe(struct nrma_ep *ep, struct nrma_conn *conn)
{
	if (conn->credit_owed)
		return;
	conn->credit_owed = true;
	conn->refs++;
	nrma_dlist_insert_tail(&conn->owed_link, &ep->xfer->credit_owed);
}

/* Gives credits back with atomics, if it is time to and there is room. */
static void credit_return(struct nrma_ep *ep, struct nrma_conn *conn)
{
	struct nrma_xfer *x = ep->xfer;
	struct nrma_sge scratch = nrma_scratch_sge(x);
	struct nrma_credit_rx *rx = conn->rx_credit;
	uint64_t addr[] = { NRMA_CREDIT_MSG_ADDR, NRMA_CREDIT_CTL_ADDR };
	struct nrma_wr wr[NRMA_CREDIT_CLASSES];
	uint64_t back[NRMA_CREDIT_CLASSES];
	struct nrma_op *op;
	size_t n = 0;

	if (conn->credit_returning || conn->state != NRMA_CONN_CONNECTED ||
	    (!nrma_credit_due(&rx[NRMA_CREDIT_MSG]) &&
	     !nrma_credit_due(&rx[NRMA_CREDIT_CTL])))
		return;
	op = nrma_op_alloc(x, NRMA_OP_CREDIT, conn);
	if (!op) {
		credit_owe(ep, conn);
		return;
	}
	for (int c = 0; c < NRMA_CREDIT_CLASSES; c++) {
		back[c] = rx[c].released - rx[c].returned;
		if (!back[c])
			continue;
		wr[n++] = (struct nrma_wr){ .op = NRMA_WR_FETCH_ADD,
					    .sge = &scratch,
					    .sge_count = 1,
					    .raddr = addr[c],
					    .rkey = conn->peer_credit_rkey,
					    .add = back[c] };
	}
	if (nrma_op_post(x, op, wr, n)) {
		nrma_op_free(x, op);
		credit_owe(ep, conn);
		return;
	}
	for (int c = 0; c < NRMA_CREDIT_CLASSES; c++)
		rx[c].returned += back[c];
	conn->credit_returning = true;
}

/* The buffer of a message from a peer is free again. */
void nrma_credit_released(struct nrma_ep *ep, uint32_t buf)
{
	struct nrma_rx_owner *owner = &ep->xfer->rx_owner[buf];
	struct nrma_conn *conn = owner->conn;

	if (!conn)
		return;
	owner->conn = NULL;
	conn->rx_credit[owner->class].released++;
	credit_return(ep, conn);
	conn->refs--;
}

void nrma_credit_returned(struct nrma_ep *ep, struct nrma_op *op)
{
	struct nrma_conn *conn = op->conn;

	if (op->wc_pending)
		return;
	conn->credit_returning = false;
	nrma_op_free(ep->xfer, op);
	credit_return(ep, conn);
}

/* Sends that wait for credits */

/* Queues op at the back, or at the front for one that was first. */
void nrma_credit_queue_send(struct nrma_ep *ep, struct nrma_op *op, bool front)
{
	struct nrma_conn *conn = op->conn;

	if (nrma_dlist_empty(&conn->send_queue)) {
		conn->refs++;
		nrma_dlist_insert_tail(&conn->blocked_link,
				       &ep->xfer->blocked_conns);
	}
	op->queued = true;
	if (!front)
		op->sent_ms = nrma_now_ms();
	nrma_dlist_insert_tail(&op->link, front ? conn->send_queue.next :
						  &conn->send_queue);
}

bool nrma_credit_send_waits(const struct nrma_conn *conn)
{
	return !nrma_dlist_empty(&conn->send_queue);
}

static void credit_unblock(struct nrma_conn *conn)
{
	nrma_dlist_remove(&conn->blocked_link);
	conn->refs--;
}

/* The first send waiting on conn; NULL if none. */
struct nrma_op *nrma_credit_queued(struct nrma_conn *conn)
{
	if (nrma_dlist_empty(&conn->send_queue))
		return NULL;
	return nrma_container_of(conn->send_queue.next, struct nrma_op, link);
}

void nrma_credit_unqueue(struct nrma_op *op)
{
	struct nrma_conn *conn = op->conn;

	nrma_dlist_remove(&op->link);
	op->queued = false;
	if (nrma_dlist_empty(&conn->send_queue))
		credit_unblock(conn);
}

/*
 * Sends whose credits came back go out in order; a peer with none left
 * keeps its sends, the others' go ahead.  Credits the peers are owed and
 * could not get (no operation or queue room then) go too.
 */
void nrma_credit_progress(struct nrma_ep *ep)
{
	struct nrma_dlist *head = &ep->xfer->blocked_conns, *item = head->next;

	while (item != head) {
		struct nrma_conn *conn =
			nrma_container_of(item, struct nrma_conn, blocked_link);

		item = item->next;
		nrma_send_resume(ep, conn);
	}
	head = &ep->xfer->credit_owed;
	for (item = head->next; item != head;) {
		struct nrma_conn *conn =
			nrma_container_of(item, struct nrma_conn, owed_link);

		item = item->next;
		nrma_dlist_remove(&conn->owed_link);
		conn->credit_owed = false;
		credit_return(ep, conn);
		conn->refs--;
	}
}
