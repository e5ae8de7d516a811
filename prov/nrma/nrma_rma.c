/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fi_rma: RDMA reads and writes, each followed on the same queue pair by
 * the notification atomics its target asked for.  The smallest writes go
 * inline (the device copies them as they are posted); others use the
 * application's registrations where its descriptors allow.  Those need
 * no operation record: their context and flags wait in their
 * connection's ring (nrma_op_post_light).  The rest go through a bounce
 * buffer when small, or a registration the operation makes.
 */
#include <string.h>

#include <rdma/fi_ext_nrma.h>
#include <rdma/fi_rma.h>

#include "nrma_batch.h"
#include "nrma_comp.h"
#include "nrma_credit.h"
#include "nrma_iov.h"
#include "nrma_rkey.h"
#include "nrma_rma.h"
#include "nrma_trigger.h"
#include "nrma_xfer.h"

/* Whether a write's payload goes inline: no bounce copy, no key. */
static bool rma_inline(const struct nrma_conn *conn, bool read, size_t len)
{
	return !read && len && len <= conn->max_inline;
}

/* A segment in the application's registration mr, if it allows access. */
static NRMA_INLINE bool rma_desc_sge(const struct nrma_mr *mr, uint64_t access,
				     void *base, size_t len,
				     struct nrma_sge *sge)
{
	if (!nrma_op_desc_allows(mr, access))
		return false;
	*sge = (struct nrma_sge){
		.addr = (uintptr_t) base,
		.len = len,
		.lkey = nrma_verbs_mr_lkey(mr->verbs),
	};
	return true;
}

/* A payload the device copies as it is posted: its segments as they are. */
static size_t rma_local_inline(const struct nrma_rma_args *a, size_t len,
			       struct nrma_sge *sge)
{
	size_t n = 0;

	if (a->count == 1) { /* most writes: len is its one segment's */
		sge[0] = (struct nrma_sge){
			.addr = (uintptr_t) a->iov[0].iov_base,
			.len = (uint32_t) len,
		};
		return 1;
	}
	for (size_t i = 0; i < a->count; i++)
		if (a->iov[i].iov_len)
			sge[n++] = (struct nrma_sge){
				.addr = (uintptr_t) a->iov[i].iov_base,
				.len = a->iov[i].iov_len,
			};
	return n;
}

/*
 * A payload that needs nothing of an operation record: inline, or in
 * registrations of the application's that allow the access; its
 * segments, or -1 when it needs a bounce buffer or a registration of its
 * own.  An injected one is copied: its buffer is the caller's again once
 * the call returns.
 */
static int rma_local_direct(const struct nrma_conn *conn,
			    const struct nrma_rma_args *a, size_t len,
			    struct nrma_sge *sge, bool *wr_inline)
{
	uint64_t access = a->flags & FI_READ ? FI_READ : FI_WRITE;
	int n = 0;

	*wr_inline = rma_inline(conn, access == FI_READ, len);
	if (*wr_inline)
		return (int) rma_local_inline(a, len, sge);
	if (!len || !a->desc || a->silent || (a->flags & FI_INJECT))
		return -1;
	for (size_t i = 0; i < a->count; i++) {
		if (!a->iov[i].iov_len)
			continue;
		if (!rma_desc_sge(a->desc[i], access, a->iov[i].iov_base,
				  a->iov[i].iov_len, &sge[n++]))
			return -1;
	}
	return n;
}

/* Where the data comes from or lands: a bounce buffer, or the iovs. */
static NRMA_NOINLINE int rma_local(struct nrma_ep *ep, struct nrma_op *op,
				   const struct nrma_rma_args *a,
				   struct nrma_sge *sge)
{
	struct nrma_xfer *x = ep->xfer;
	uint64_t access = a->flags & FI_READ ? FI_READ : FI_WRITE;
	size_t n = 0;

	if (op->len <= x->eager_size) {
		op->buf = nrma_bufpool_get(&x->tx_bufs);
		if (op->buf < 0)
			return -FI_EAGAIN;
		if (access == FI_WRITE)
			nrma_iov_gather(nrma_bufpool_buf(&x->tx_bufs, op->buf),
					a->iov, a->count, 0, op->len);
		memcpy(op->iov, a->iov, a->count * sizeof(*a->iov));
		op->iov_count = a->count;
		sge[0] = nrma_tx_buf_sge(x, op->buf, op->len);
		return 1;
	}
	for (size_t i = 0; i < a->count; i++) {
		struct nrma_verbs_mr *vmr;
		uint64_t key;
		int ret;

		if (!a->iov[i].iov_len)
			continue;
		ret = nrma_op_buf_mr(ep, op, a->desc ? a->desc[i] : NULL,
				     &a->iov[i], access, &vmr, &key);
		if (ret)
			return ret;
		sge[n++] = (struct nrma_sge){
			.addr = (uintptr_t) a->iov[i].iov_base,
			.len = a->iov[i].iov_len,
			.lkey = nrma_verbs_mr_lkey(vmr),
		};
	}
	return n;
}

/* The data's request, and the notifications of its key that follow it. */
static NRMA_INLINE void rma_data_wrs(
	struct nrma_wr_chain *chain, const struct nrma_conn *conn,
	enum nrma_wr_op op, const struct nrma_remote *remote,
	const struct nrma_sge *sge, size_t sge_count, uint32_t imm,
	unsigned wr_flags, const struct nrma_sge *scratch)
{
	bool read = op == NRMA_WR_READ;

	nrma_wr_chain_init(chain);
	nrma_wr_rdma(chain, op, sge, sge_count, remote->addr, remote->rkey, imm,
		     wr_flags);
	nrma_rkey_notify_wrs(chain, conn, remote->cell_rkey,
			     read ? NRMA_RKEY_COUNTS_READ :
				    NRMA_RKEY_COUNTS_WRITE,
			     read, 1, scratch);
}

/*
 * A write's delivery completion: a zero-byte read returns only once the
 * write before it is placed.  A notification atomic's reply, where one
 * follows the write, says as much.
 */
static NRMA_INLINE void rma_delivery_wr(struct nrma_wr_chain *chain,
					uint64_t flags,
					const struct nrma_remote *remote)
{
	if ((flags & (FI_DELIVERY_COMPLETE | FI_READ)) ==
		    FI_DELIVERY_COMPLETE &&
	    chain->count == 1)
		nrma_wr_rdma(chain, NRMA_WR_READ, NULL, 0, remote->addr,
			     remote->rkey, 0, 0);
}

/* The data request's flags for an operation's. */
static unsigned rma_wr_flags(uint64_t flags, bool wr_inline)
{
	return (flags & FI_FENCE ? NRMA_WR_FLAG_FENCE : 0) |
	       (wr_inline ? NRMA_WR_FLAG_INLINE : 0);
}

/* Any operation's whole chain (inline in each post: its arguments are the
 * post's). */
static NRMA_INLINE void rma_wrs(struct nrma_wr_chain *chain,
				const struct nrma_conn *conn,
				const struct nrma_rma_args *a,
				const struct nrma_remote *remote,
				const struct nrma_remote *set,
				const struct nrma_sge *sge, size_t sge_count,
				bool wr_inline, const struct nrma_sge *scratch)
{
	bool read = a->flags & FI_READ;

	rma_data_wrs(chain, conn,
		     read			  ? NRMA_WR_READ :
		     a->flags & FI_REMOTE_CQ_DATA ? NRMA_WR_WRITE_IMM :
						    NRMA_WR_WRITE,
		     remote, sge, sge_count, (uint32_t) a->data,
		     rma_wr_flags(a->flags, wr_inline), scratch);
	if (a->notify)
		nrma_rkey_notify_set_wr(chain, nrma_notify_set_add(a->notify),
					set, scratch, read);
	rma_delivery_wr(chain, a->flags, remote);
}

/*
 * Whether a write's notifications wait in its connection's batch
 * (nrma_batch.c): 1 if they do, 0 if they go with it, or -FI_EAGAIN.
 */
static void rma_batch_target(const struct nrma_rma_args *a,
			     const struct nrma_remote *remote,
			     const struct nrma_remote *set,
			     struct nrma_batch_target *t)
{
	*t = (struct nrma_batch_target){ .cell_rkey = remote->cell_rkey };
	if (a->notify) {
		t->has_set = true;
		t->set_rkey = set->rkey;
		t->set_addr = set->addr;
	}
}

static int rma_batch_open(struct nrma_ep *ep, struct nrma_conn *conn,
			  const struct nrma_rma_args *a,
			  const struct nrma_remote *remote,
			  const struct nrma_remote *set)
{
	struct nrma_batch_target t;

	if ((a->flags & FI_READ) || !nrma_batch_enabled())
		return 0;
	rma_batch_target(a, remote, set, &t);
	return nrma_batch_open(ep, conn, &t);
}

static NRMA_INLINE ssize_t rma_post(struct nrma_ep *ep, struct nrma_conn *conn,
				    const void *args, size_t len);

/*
 * Holds an operation on its connection for a key (nrma_tx_hold), with
 * copies of what the caller may reuse once the call returns: the
 * vectors, the notification, and an injected payload.
 */
static NRMA_NOINLINE ssize_t rma_hold(struct nrma_ep *ep,
				      struct nrma_conn *conn,
				      const struct nrma_rma_args *a, size_t len)
{
	bool inject = a->silent || (a->flags & FI_INJECT);
	struct nrma_tx_held *h =
		nrma_tx_held_new(a, sizeof(*a), a->notify, inject ? len : 0);
	struct nrma_rma_args *kept;

	if (!h)
		return -FI_EAGAIN;
	kept = (void *) h->args;
	if (inject) {
		h->iov[0].iov_base = nrma_tx_held_data(h, sizeof(*a));
		h->iov[0].iov_len = len;
		nrma_iov_gather(h->iov[0].iov_base, a->iov, a->count, 0, len);
		kept->count = 1;
		kept->desc = NULL;
	} else {
		memcpy(h->iov, a->iov, a->count * sizeof(*a->iov));
		for (size_t i = 0; a->desc && i < a->count; i++)
			h->desc[i] = a->desc[i];
		kept->desc = a->desc ? h->desc : NULL;
	}
	kept->iov = h->iov;
	kept->notify = a->notify ? &h->notify : NULL;
	h->post = rma_post;
	h->len = len;
	h->context = a->context;
	h->comp_flags = FI_RMA | (a->flags & (FI_READ | FI_WRITE));
	return nrma_tx_hold(ep, conn, h);
}

/* Where an operation goes, the set's word it bumps, its completion flags. */
struct rma_target {
	struct nrma_remote remote, set;
	uint64_t flags; /* of its completion */
};

/*
 * An operation whose payload needs nothing of a record (rma_local_direct),
 * its notifications with it: nothing to release at its end
 * (nrma_op_post_light).
 */
static NRMA_INLINE int rma_post_light(struct nrma_ep *ep,
				      struct nrma_conn *conn,
				      const struct nrma_rma_args *a,
				      const struct nrma_sge *sge, int sge_count,
				      bool wr_inline,
				      const struct rma_target *t)
{
	struct nrma_wr_chain chain;

	if (!nrma_tx_room(ep->xfer))
		return -FI_EAGAIN;
	rma_wrs(&chain, conn, a, &t->remote, &t->set, sge, sge_count, wr_inline,
		nrma_scratch_sge(ep->xfer));
	return nrma_op_post_light(conn, &chain, a->context, t->flags);
}

/* Any other: an operation record, which a batch may hold. */
static NRMA_NOINLINE int rma_post_op(struct nrma_ep *ep, struct nrma_conn *conn,
				     const struct nrma_rma_args *a, size_t len,
				     const struct rma_target *t, int batched)
{
	struct nrma_xfer *x = ep->xfer;
	struct nrma_sge sge[NRMA_IOV_LIMIT];
	struct nrma_wr_chain chain;
	struct nrma_op *op = nrma_tx_op_alloc(ep, NRMA_OP_RMA, conn, false);
	bool wr_inline = rma_inline(conn, a->flags & FI_READ, len);
	int n;

	if (!op)
		return -FI_EAGAIN;
	op->context = a->context;
	op->len = len;
	op->flags = t->flags;
	n = wr_inline ? (int) rma_local_inline(a, len, sge) :
			rma_local(ep, op, a, sge);
	if (n >= 0) {
		rma_wrs(&chain, conn, a, &t->remote, &t->set, sge, n, wr_inline,
			nrma_scratch_sge(x));
		/* A batched write goes alone: the batch's atomics follow. */
		if (batched)
			chain.count = 1;
		n = nrma_op_post(op, &chain);
	}
	if (n) {
		nrma_op_free(x, op);
		return n;
	}
	if (batched) {
		struct nrma_batch_target target;

		rma_batch_target(a, &t->remote, &t->set, &target);
		nrma_batch_add(ep, op, &target, nrma_notify_set_add(a->notify));
	}
	return 0;
}

/* Inline where it is called (nrma_rma_small, nrma_tx_submit): one frame. */
static NRMA_INLINE ssize_t rma_post(struct nrma_ep *ep, struct nrma_conn *conn,
				    const void *args, size_t len)
{
	const struct nrma_rma_args *a = args;
	struct rma_target t = {
		.flags = FI_RMA | (a->flags & (FI_READ | FI_WRITE)) |
			 nrma_tx_comp_flags(ep, a->flags, a->silent),
	};
	/* Immediate data takes a receive buffer at the peer: a credit. */
	bool imm = (a->flags & (FI_READ | FI_REMOTE_CQ_DATA)) ==
		   FI_REMOTE_CQ_DATA;
	struct nrma_sge sge[NRMA_IOV_LIMIT];
	bool wr_inline;
	int batched, n;

	n = nrma_rkey_target(ep, conn, a->key, a->addr, len,
			     a->flags & FI_READ ? NRMA_KEY_REMOTE_READ :
						  NRMA_KEY_REMOTE_WRITE,
			     &t.remote);
	if (!n && a->notify)
		n = nrma_rkey_notify_target(ep, conn, a->notify, &t.set);
	if (nrma_tx_held_must_wait(conn, a, n))
		return rma_hold(ep, conn, a, len);
	if (n == -FI_EACCES)
		return nrma_tx_refuse(ep, a->context, t.flags);
	if (n)
		return n;
	batched = rma_batch_open(ep, conn, a, &t.remote, &t.set);
	if (batched < 0)
		return batched;
	if (imm && !nrma_credit_take(conn, NRMA_CREDIT_CTL))
		return -FI_EAGAIN;
	n = batched || !nrma_op_light_fits(conn) ?
		    -1 :
		    rma_local_direct(conn, a, len, sge, &wr_inline);
	n = n >= 0 ? rma_post_light(ep, conn, a, sge, n, wr_inline, &t) :
		     rma_post_op(ep, conn, a, len, &t, batched);
	if (n) {
		if (imm)
			nrma_credit_untake(conn, NRMA_CREDIT_CTL);
		return n;
	}
	nrma_tx_started(ep->xfer);
	return 0;
}

/* A triggered operation's turn came (nrma_trigger.c). */
static ssize_t rma_fire(struct nrma_ep *ep, void *args, const struct iovec *iov,
			void **desc, size_t len)
{
	struct nrma_rma_args *a = args;

	a->iov = iov;
	a->desc = desc;
	a->flags &= ~FI_TRIGGER;
	return nrma_tx_submit(ep, a->dest, rma_post, a, len, false);
}

static ssize_t rma_trigger(struct nrma_ep *ep, const struct nrma_rma_args *a,
			   size_t len)
{
	struct nrma_trigger_io io = { a->iov, a->desc, a->count, len };

	/* A notification set's operations are not triggered. */
	if (a->notify)
		return -FI_EINVAL;
	return nrma_trigger_hold(
		ep, a->flags,
		NRMA_TRIGGER_OP(rma_fire, a,
				FI_RMA | (a->flags & (FI_READ | FI_WRITE))),
		io);
}

ssize_t nrma_rma(struct nrma_ep *ep, const struct nrma_rma_args *a)
{
	ssize_t len =
		nrma_tx_len(ep, NRMA_XFER_RMA, a->iov, a->count, a->flags);

	if (len < 0)
		return len;
	/* The local and remote lengths agree, and reads are never injected. */
	if ((size_t) len != a->len ||
	    (a->flags & (FI_INJECT | FI_READ)) == (FI_INJECT | FI_READ))
		return -FI_EINVAL;
	if (a->flags & FI_TRIGGER)
		return rma_trigger(ep, a, (size_t) len);
	return nrma_tx_submit(ep, a->dest, rma_post, a, len, false);
}

/* No larger than an inject (FI_OPT_INJECT_RMA_SIZE) or FI_OPT_MAX_RMA_SIZE. */
static bool rma_len_small(const struct nrma_ep *ep, uint64_t len)
{
	return len <= ep->inject_size[NRMA_XFER_RMA] &&
	       len <= ep->max_size[NRMA_XFER_RMA];
}

/*
 * A read or write of one small segment (rma_len_small) needs no vector or
 * size checks; of its flags, only those nrma_rma refuses or holds send it
 * there.  Inline in the calls of nrma_ep_rma.c that take it: the injected
 * writes', and those the light path leaves.
 */
NRMA_INLINE ssize_t nrma_rma_small(struct nrma_ep *ep,
				   const struct nrma_rma_args *a)
{
	struct nrma_conn *conn;
	ssize_t ret;

	if (!rma_len_small(ep, a->len) ||
	    (a->flags & (FI_TRIGGER | FI_COMMIT_COMPLETE)) ||
	    (a->flags & (FI_INJECT | FI_READ)) == (FI_INJECT | FI_READ))
		return nrma_rma(ep, a);
	ret = nrma_tx_enter(ep, a->dest, false, &conn);
	if (!ret)
		ret = rma_post(ep, conn, a, a->len);
	nrma_tx_leave(ep);
	return ret;
}

/*
 * The light path (nrma_rma_light)
 *
 * A read or write of one buffer with no flag that changes its chain, a
 * payload the device takes as it is, and keys among the last used: the
 * most common case, which needs none of rma_post's other cases, nor the
 * argument record they read.  Anything else goes there before it posts.
 */
#define RMA_LIGHT_OFF (FI_TRIGGER | FI_COMMIT_COMPLETE | FI_REMOTE_CQ_DATA)

/*
 * The payload inline, or in the caller's registration (rma_local_direct);
 * an injected one only inline.
 */
static NRMA_INLINE bool rma_light_local(const struct nrma_conn *conn,
					const struct nrma_rma_buf *b, bool read,
					struct nrma_sge *sge,
					unsigned *wr_flags)
{
	bool wr_inline = rma_inline(conn, read, b->len);

	*wr_flags = rma_wr_flags(b->flags, wr_inline);
	if (!wr_inline)
		return !(b->flags & FI_INJECT) &&
		       rma_desc_sge(b->desc, read ? FI_READ : FI_WRITE, b->buf,
				    b->len, sge);
	*sge = (struct nrma_sge){
		.addr = (uintptr_t) b->buf,
		.len = (uint32_t) b->len,
	};
	return true;
}

/* Where the data and the set's word go, if keys known say so now. */
static NRMA_INLINE bool rma_light_target(struct nrma_ep *ep,
					 struct nrma_conn *conn,
					 const struct nrma_rma_buf *b,
					 bool read, struct nrma_remote *remote,
					 struct nrma_remote *set)
{
	if (nrma_rkey_target_known(ep, conn, b->key, b->addr, b->len,
				   read ? NRMA_KEY_REMOTE_READ :
					  NRMA_KEY_REMOTE_WRITE,
				   remote))
		return false;
	return !b->notify ||
	       !nrma_rkey_notify_target_known(ep, conn, b->notify, set);
}

/* With ep->lock held.  What waits on the connection goes first. */
static NRMA_INLINE ssize_t rma_light_post(struct nrma_ep *ep,
					  struct nrma_conn *conn,
					  const struct nrma_rma_buf *b)
{
	bool read = b->flags & FI_READ;
	const struct nrma_sge *scratch = nrma_scratch_sge(ep->xfer);
	struct nrma_remote remote, set;
	struct nrma_wr_chain chain;
	struct nrma_sge sge;
	unsigned wr_flags;
	int ret;

	if (nrma_tx_held_waits(conn) || (!read && nrma_batch_enabled()) ||
	    !nrma_op_light_fits(conn) || !nrma_tx_room(ep->xfer) ||
	    !rma_light_local(conn, b, read, &sge, &wr_flags) ||
	    !rma_light_target(ep, conn, b, read, &remote, &set))
		return NRMA_RMA_NOT_LIGHT;
	rma_data_wrs(&chain, conn, read ? NRMA_WR_READ : NRMA_WR_WRITE, &remote,
		     &sge, 1, 0, wr_flags, scratch);
	if (b->notify)
		nrma_rkey_notify_set_wr(&chain, nrma_notify_set_add(b->notify),
					&set, scratch, read);
	rma_delivery_wr(&chain, b->flags, &remote);
	ret = nrma_op_post_light(
		conn, &chain, b->context,
		FI_RMA | (b->flags & (FI_READ | FI_WRITE)) |
			nrma_tx_comp_flags(ep, b->flags, b->silent));
	if (!ret)
		nrma_tx_started(ep->xfer);
	return ret;
}

/* Inline in the calls of nrma_ep_rma.c: one frame from fi_write's call. */
NRMA_INLINE ssize_t nrma_rma_light(struct nrma_ep *ep,
				   const struct nrma_rma_buf *b)
{
	struct nrma_conn *conn;
	ssize_t ret;

	if ((b->flags & RMA_LIGHT_OFF) || !b->len || !rma_len_small(ep, b->len))
		return NRMA_RMA_NOT_LIGHT;
	ret = nrma_tx_enter(ep, b->dest, false, &conn);
	if (!ret)
		ret = rma_light_post(ep, conn, b);
	nrma_tx_leave(ep);
	return ret;
}

/* A small read landed in its bounce buffer: on to the application's. */
static NRMA_NOINLINE void rma_read_land(struct nrma_ep *ep,
					const struct nrma_op *op)
{
	nrma_iov_scatter(op->iov, op->iov_count, 0,
			 nrma_bufpool_buf(&ep->xfer->tx_bufs, op->buf),
			 op->len);
}

void nrma_rma_finish(struct nrma_ep *ep, struct nrma_op *op)
{
	if (op->wc_pending || nrma_batch_holds(ep, op))
		return;
	if (!op->error && op->buf >= 0 && (op->flags & FI_READ))
		rma_read_land(ep, op);
	nrma_tx_report(ep, op);
	nrma_tx_ended(ep->xfer);
	nrma_op_free(ep->xfer, op);
}

void nrma_rma_notified(struct nrma_ep *ep, struct nrma_op *notify)
{
	struct nrma_op *op;

	while ((op = nrma_batch_notified_next(notify)))
		nrma_rma_finish(ep, op);
	nrma_op_free(ep->xfer, notify);
}

/* Writes in a failed connection's batch end as they can. */
void nrma_rma_conn_failed(struct nrma_ep *ep, struct nrma_conn *conn)
{
	struct nrma_dlist ended, *item;

	nrma_dlist_init(&ended);
	nrma_batch_conn_failed(conn, &ended);
	while ((item = nrma_dlist_pop_front(&ended)))
		nrma_rma_finish(ep,
				nrma_container_of(item, struct nrma_op, link));
}

/*
 * Who reports remote CQ data, which names no receive: the endpoint, or a
 * scalable endpoint's receive context 0 (its core's named contexts).
 */
static struct nrma_ep *rma_data_reporter(struct nrma_ep *ep)
{
	struct nrma_xfer *x = ep->xfer;

	if (x->named)
		return x->nnamed && x->named[0] ? x->named[0]->reporter : NULL;
	return ep;
}

/* An RDMA write with immediate data: the data is in place already. */
void nrma_rma_write_data(struct nrma_ep *ep, const struct nrma_wc *wc,
			 struct nrma_conn *conn)
{
	struct nrma_comp comp = {
		.flags = FI_RMA | FI_REMOTE_WRITE | FI_REMOTE_CQ_DATA,
		.len = wc->len,
		.data = nrma_wc_imm(wc),
		.src = nrma_rx_source(ep, conn),
	};
	struct nrma_ep *reporter = rma_data_reporter(ep);

	if (reporter) /* else no context is open to report it */
		nrma_comp_rx_event(reporter, &comp);
}
