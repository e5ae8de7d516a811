/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Operations (struct nrma_op, nrma_xfer.h): records in the endpoint's
 * token table, and the posting of their work requests as one chain.
 */
#include <stddef.h>
#include <string.h>

#include "nrma_mr_span.h"
#include "nrma_xfer.h"

struct nrma_op *nrma_op_at(struct nrma_xfer *x, uint32_t index)
{
	return nrma_token_slot(&x->ops, index);
}

uint64_t nrma_op_token(const struct nrma_xfer *x, const struct nrma_op *op)
{
	return nrma_token_of(&x->ops, op->index);
}

/* Its token stays here, unless nrma_op_seal gets it ready to go out. */
struct nrma_op *nrma_op_alloc(struct nrma_xfer *x, enum nrma_op_kind kind,
			      struct nrma_conn *conn)
{
	int64_t index = nrma_token_get_local(&x->ops);
	struct nrma_op *op;

	if (index < 0)
		return NULL;
	op = nrma_op_at(x, index);
	memset(op, 0, offsetof(struct nrma_op, sent_ms));
	op->kind = kind;
	op->index = (uint32_t) index;
	op->conn = conn;
	op->buf = -1;
	if (conn)
		nrma_conn_hold(conn);
	return op;
}

void nrma_op_seal(struct nrma_xfer *x, const struct nrma_op *op)
{
	nrma_token_seal(&x->ops, op->index);
}

void nrma_op_free(struct nrma_xfer *x, struct nrma_op *op)
{
	for (unsigned int i = 0; i < op->mr_count; i++)
		nrma_mr_span_put(op->mr[i]);
	if (op->buf >= 0)
		nrma_bufpool_put(&x->tx_bufs, op->buf);
	if (op->conn)
		nrma_conn_release(op->conn);
	nrma_token_put(&x->ops, op->index);
}

/* An operation with a bounce buffer, or NULL when either has run out. */
struct nrma_op *nrma_op_alloc_buf(struct nrma_xfer *x, enum nrma_op_kind kind,
				  struct nrma_conn *conn)
{
	struct nrma_op *op = nrma_op_alloc(x, kind, conn);

	if (op && (op->buf = nrma_bufpool_get(&x->tx_bufs)) < 0) {
		nrma_op_free(x, op);
		return NULL;
	}
	return op;
}

/*
 * Posts a chain on conn if its queue pair has room for all, its requests
 * but the last with wr_id, the last with last_id; *posted says how many
 * went.  A queue pair that breaks halfway fails its connection: then
 * -FI_EIO with *posted above 0, and the chain ends, with that error,
 * once what did go out is flushed (each with a completion of its own).
 */
static int op_post_chain(struct nrma_conn *conn, struct nrma_wr_chain *chain,
			 uint64_t wr_id, uint64_t last_id, size_t *posted)
{
	int ret;

	*posted = 0;
	if (conn->state != NRMA_CONN_CONNECTED)
		return -FI_ECONNRESET;
	if (conn->sq_free < chain->count)
		return -FI_EAGAIN;
	ret = nrma_verbs_post(conn->qp, chain, wr_id, last_id, posted);
	conn->sq_free -= *posted;
	if (!ret || (ret == -FI_EAGAIN && !*posted))
		return ret;
	/* Half an operation (a write without its notification) is none. */
	nrma_cm_conn_fail(conn, ret == -FI_EAGAIN ? -FI_EIO : ret);
	return *posted ? -FI_EIO : ret;
}

int nrma_op_post(struct nrma_op *op, struct nrma_wr_chain *chain)
{
	size_t count = chain->count, posted;
	/* One completion covers the whole chain: the last says its length. */
	int ret = op_post_chain(
		op->conn, chain, op->index,
		op->index | (uint64_t) count << NRMA_WR_SLOTS_SHIFT, &posted);

	if (!posted)
		return ret;
	if (posted == count)
		op->wc_pending++;
	else
		op->wc_orphans += (unsigned int) posted;
	if (ret)
		op->error = FI_EIO;
	return 0;
}

/* What flushed a request: a connection that timed out times it out. */
int nrma_op_wc_errno(const struct nrma_conn *conn, int status)
{
	if (status == nrma_verbs_status_flushed && conn->error == -FI_ETIMEDOUT)
		return FI_ETIMEDOUT;
	return nrma_verbs_status_errno(status);
}

/* Chains without a record (nrma_op_post_light) */

/* The wr_id of a chain's last request; the others add NRMA_WR_LIGHT_PART. */
static uint64_t op_light_id(const struct nrma_xfer_conn *xc)
{
	return NRMA_WR_LIGHT | (uintptr_t) xc;
}

static struct nrma_xfer_conn *op_light_conn(uint64_t wr_id)
{
	return (struct nrma_xfer_conn *) (uintptr_t) (wr_id &
						      NRMA_WR_LIGHT_CONN);
}

/* Inline in each posting path (NRMA_INLINE): the last step of every one. */
NRMA_INLINE int nrma_op_post_light(struct nrma_conn *conn,
				   struct nrma_wr_chain *chain, void *context,
				   uint64_t flags)
{
	struct nrma_xfer_conn *xc = conn->xfer;
	uint64_t id = op_light_id(xc);
	size_t count = chain->count, posted;
	int ret = op_post_chain(conn, chain, id | NRMA_WR_LIGHT_PART, id,
				&posted);

	if (!posted)
		return ret;
	if (nrma_ring_empty(&xc->light))
		nrma_conn_hold(conn);
	/* The send queue's room bounds the ring's: never full here. */
	*(struct nrma_op_light *) nrma_ring_push(&xc->light) =
		(struct nrma_op_light){
			.context = context,
			.flags = flags,
			.wrs = (uint32_t) posted,
			.orphans = posted == count ? 0 : (uint32_t) posted,
			.error = ret ? FI_EIO : 0,
		};
	return 0;
}

/*
 * The chain a completion belongs to is the ring's oldest: RC ends them in
 * order.  A request before its chain's last completes only in error,
 * before the last is flushed, or, of a chain posted in part, once each.
 */
const struct nrma_op_light *nrma_op_light_wc(const struct nrma_wc *wc)
{
	struct nrma_xfer_conn *xc = op_light_conn(wc->wr_id);
	struct nrma_op_light *light = nrma_ring_at(&xc->light, 0);
	struct nrma_conn *conn = xc->conn;

	if (wc->status && !light->error) {
		light->error = nrma_op_wc_errno(conn, wc->status);
		light->prov_errno = wc->status;
		nrma_cm_conn_fail(conn, -light->error);
	}
	if ((wc->wr_id & NRMA_WR_LIGHT_PART) &&
	    (!light->orphans || --light->orphans))
		return NULL;
	conn->sq_free += light->wrs;
	conn->sq_done++;
	nrma_ring_drop(&xc->light);
	if (nrma_ring_empty(&xc->light))
		nrma_conn_release(conn);
	return light;
}

bool nrma_op_light_busy(const struct nrma_conn *conn)
{
	const struct nrma_xfer_conn *xc = conn->xfer;

	return xc && !nrma_ring_empty(&xc->light);
}

struct nrma_wc nrma_op_light_flush_wc(const struct nrma_conn *conn, int status)
{
	const struct nrma_xfer_conn *xc = conn->xfer;
	const struct nrma_op_light *light = nrma_ring_at(&xc->light, 0);

	return (struct nrma_wc){
		.wr_id = op_light_id(xc) |
			 (light->orphans ? NRMA_WR_LIGHT_PART : 0),
		.status = status,
	};
}

/*
 * An open registration of the application's that holds a buffer the
 * device only reads or writes here (nrma_mr_span.c).  Never one a peer
 * would get the rkey of: that key is the application's to hand out.
 */
static struct nrma_mr_span *op_borrowed_mr(struct nrma_ep *ep,
					   const struct iovec *iov,
					   uint64_t access)
{
	if (access & (FI_REMOTE_READ | FI_REMOTE_WRITE))
		return NULL;
	return nrma_mr_span_index_find(ep->domain->mr_index, iov->iov_base,
				       iov->iov_len, access != FI_WRITE);
}

/*
 * The registration the device uses for an application buffer: its
 * descriptor's, if that allows the access (without FI_MR_LOCAL an
 * application may pass any descriptor), else an open one of the
 * application's that holds the buffer, else one the operation makes.  The
 * operation holds the last two until it completes.  The device may always
 * read a write's source.
 */
int nrma_op_buf_mr(struct nrma_ep *ep, struct nrma_op *op, struct nrma_mr *desc,
		   const struct iovec *iov, uint64_t access,
		   struct nrma_verbs_mr **vmr, uint64_t *key)
{
	struct nrma_mr_span *span;
	int ret;

	if (nrma_op_desc_allows(desc, access)) {
		*vmr = desc->verbs;
		*key = desc->verbs_key;
		return 0;
	}
	span = op_borrowed_mr(ep, iov, access);
	if (!span) {
		ret = nrma_mr_span_reg(ep->domain->verbs, iov->iov_base,
				       iov->iov_len, access, &span);
		if (ret)
			return ret;
	}
	op->mr[op->mr_count++] = span;
	*vmr = span->verbs;
	*key = span->key;
	return 0;
}
