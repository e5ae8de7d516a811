/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * An application's transmits: their checks, budget and reports, the
 * connection each goes over, and their submission once it is up.
 */
#include "nrma_comp.h"
#include "nrma_iov.h"
#include "nrma_xfer.h"

/* An application's transmit, while tx_attr->size allows one more. */
struct nrma_op *nrma_tx_op_alloc(struct nrma_ep *ep, enum nrma_op_kind kind,
				 struct nrma_conn *conn, bool bounce)
{
	struct nrma_xfer *x = ep->xfer;

	if (x->tx->sends == x->tx->max)
		return NULL;
	return bounce ? nrma_op_alloc_buf(x, kind, conn) :
			nrma_op_alloc(x, kind, conn);
}

struct nrma_sge nrma_tx_buf_sge(const struct nrma_xfer *x,
				const struct nrma_op *op, size_t len)
{
	return (struct nrma_sge){
		.addr = (uintptr_t) nrma_bufpool_buf(&x->tx_bufs, op->buf),
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
	struct nrma_wr wr = { .op = NRMA_WR_WRITE };
	struct nrma_op *op;

	if (conn->state != NRMA_CONN_CONNECTED || conn->xfer->probing)
		return;
	op = nrma_op_alloc(ep->xfer, NRMA_OP_PROBE, conn);
	if (!op)
		return; /* busy with other work, which tells as much */
	if (nrma_op_post(ep->xfer, op, &wr, 1))
		nrma_op_free(ep->xfer, op);
	else
		conn->xfer->probing = true;
}

static void tx_report_entry(struct nrma_ep *ep, void *context, uint64_t flags,
			    int err, int prov_errno)
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

void nrma_tx_report(struct nrma_ep *ep, const struct nrma_op *op)
{
	tx_report_entry(ep, op->context, op->flags, op->error, op->prov_errno);
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
	struct sockaddr_in peer;
	uint64_t removals;
	int ret;

	if (!ep->enabled)
		return -FI_EOPBADSTATE;
	if (nrma_ep_is_msg(ep)) {
		*conn = nrma_cm_msg_conn(ep->cm);
		return *conn && (*conn)->state == NRMA_CONN_CONNECTED ?
			       0 :
			       -FI_ENOTCONN;
	}
	table = &ep->av->table;
	/* A scalable peer's receive contexts share one connection. */
	dest = nrma_addr_base(table, dest);
	removals = nrma_addr_table_removals(table);
	up = nrma_cm_conn_up(ep->cm, dest);
	if (up && up->av_removals == removals) {
		*conn = up;
		return 0;
	}
	if (nrma_addr_table_get(table, dest, &peer))
		return -FI_EINVAL;
	ret = nrma_cm_conn_get(ep->cm, dest, &peer, conn);
	if (!ret)
		(*conn)->av_removals = removals;
	return ret;
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

/*
 * Posts an application's transmit with post() once the connection to
 * dest is up, or, if it may wait, while it is being made; -FI_EAGAIN
 * when there is no room.
 */
ssize_t nrma_tx_submit(struct nrma_ep *ep, fi_addr_t dest, nrma_tx_post_fn post,
		       const void *args, size_t len, bool may_wait)
{
	struct nrma_conn *conn = NULL;
	ssize_t ret;

	pthread_mutex_lock(ep->lock);
	ret = nrma_tx_connection(ep, dest, &conn);
	if (ret == -FI_EAGAIN && may_wait)
		ret = 0;
	if (!ret)
		ret = post(ep, conn, args, len);
	pthread_mutex_unlock(ep->lock);
	return ret;
}
