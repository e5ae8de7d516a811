/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fi_rma: RDMA reads and writes, each followed on the same queue pair by
 * the notification atomics its target asked for.  The smallest writes go
 * inline (the device copies them as they are posted), other small ones
 * through a bounce buffer; larger ones use the application's
 * registration, or one the operation makes.
 */
#include <string.h>

#include <rdma/fi_ext_nrma.h>
#include <rdma/fi_rma.h>

#include "nrma_comp.h"
#include "nrma_iov.h"
#include "nrma_xfer.h"

/* One RMA operation, from any of the fi_rma calls. */
struct nrma_rma_args {
	const struct iovec *iov;
	void **desc;
	size_t count;
	fi_addr_t dest;
	uint64_t addr; /* the one remote segment */
	uint64_t len;
	uint64_t key;
	uint64_t data;
	uint64_t flags; /* FI_READ or FI_WRITE, and op flags */
	bool silent;	/* fi_inject_write(data): no completion */
	void *context;
	const struct fi_nrma_notify *notify; /* a set's counter to bump */
};

/* Whether a write's payload goes inline: no bounce copy, no key. */
static bool rma_inline(const struct nrma_op *op, const struct nrma_rma_args *a)
{
	return !(a->flags & FI_READ) && op->len && op->conn->qp &&
	       op->len <= nrma_verbs_qp_max_inline(op->conn->qp);
}

/* Where the data comes from or lands: a bounce buffer, or the iovs. */
static int rma_local(struct nrma_ep *ep, struct nrma_op *op,
		     const struct nrma_rma_args *a, bool wr_inline,
		     struct nrma_sge *sge)
{
	struct nrma_xfer *x = ep->xfer;
	uint64_t access = a->flags & FI_READ ? FI_READ : FI_WRITE;
	size_t n = 0;

	if (wr_inline) {
		for (size_t i = 0; i < a->count; i++)
			if (a->iov[i].iov_len)
				sge[n++] = (struct nrma_sge){
					.addr = (uintptr_t) a->iov[i].iov_base,
					.len = a->iov[i].iov_len,
				};
		return n;
	}
	if (op->len <= x->eager_size) {
		op->buf = nrma_bufpool_get(&x->tx_bufs);
		if (op->buf < 0)
			return -FI_EAGAIN;
		if (access == FI_WRITE)
			nrma_iov_gather(nrma_bufpool_buf(&x->tx_bufs, op->buf),
					a->iov, a->count, 0, op->len);
		memcpy(op->iov, a->iov, a->count * sizeof(*a->iov));
		op->iov_count = a->count;
		sge[0] = nrma_tx_buf_sge(x, op, op->len);
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

/*
 * Bumps a notification word at the peer.  It follows its data operation
 * on the same queue pair: RC executes a write or an atomic before it,
 * but a read, whose responses may still be leaving the target, only once
 * fenced.
 */
static struct nrma_wr rma_notify_wr(uint32_t rkey, uint64_t raddr,
				    const struct nrma_sge *scratch, bool fence)
{
	return (struct nrma_wr){
		.op = NRMA_WR_FETCH_ADD,
		.sge = scratch,
		.sge_count = 1,
		.raddr = raddr,
		.rkey = rkey,
		.add = 1,
		.fence = fence || nrma_params.notify_fence_always,
	};
}

/* What a notified operation adds to its set's word. */
static uint64_t rma_set_add(const struct fi_nrma_notify *notify)
{
	if (!notify)
		return 0;
	return notify->op == FI_NRMA_NOTIFY_ADD ? notify->value : 1;
}

struct nrma_wr nrma_notify_set_wr(const struct fi_nrma_notify *notify,
				  const struct nrma_remote *set,
				  const struct nrma_sge *scratch, bool fence)
{
	struct nrma_wr wr = rma_notify_wr(set->rkey, set->addr, scratch, fence);

	wr.add = rma_set_add(notify);
	return wr;
}

/*
 * The notifications an operation owes the peer: one for the peer
 * endpoint's cell, one for its region's (cell_rkey); read picks their
 * word.
 */
size_t nrma_notify_wrs(const struct nrma_conn *conn, uint32_t cell_rkey,
		       bool read, bool fence, const struct nrma_sge *scratch,
		       struct nrma_wr *wr)
{
	uint64_t raddr = read ? NRMA_NOTIFY_READ_ADDR : NRMA_NOTIFY_WRITE_ADDR;
	size_t n = 0;

	if (conn->notify_rkey)
		wr[n++] =
			rma_notify_wr(conn->notify_rkey, raddr, scratch, fence);
	if (cell_rkey)
		wr[n++] = rma_notify_wr(cell_rkey, raddr, scratch, fence);
	return n;
}

static size_t rma_wrs(const struct nrma_op *op, const struct nrma_rma_args *a,
		      const struct nrma_remote *remote,
		      const struct nrma_remote *set, const struct nrma_sge *sge,
		      size_t sge_count, const struct nrma_sge *scratch,
		      struct nrma_wr *wr)
{
	bool read = a->flags & FI_READ;
	size_t n = 0;

	wr[n++] = (struct nrma_wr){
		.op = read			   ? NRMA_WR_READ :
		      a->flags & FI_REMOTE_CQ_DATA ? NRMA_WR_WRITE_IMM :
						     NRMA_WR_WRITE,
		.sge = sge,
		.sge_count = sge_count,
		.raddr = remote->addr,
		.rkey = remote->rkey,
		.imm = (uint32_t) a->data,
		.fence = a->flags & FI_FENCE,
	};
	n += nrma_notify_wrs(op->conn, remote->cell_rkey, read, read, scratch,
			     wr + n);
	if (a->notify)
		wr[n++] = nrma_notify_set_wr(a->notify, set, scratch, read);
	/* A zero-byte read returns only once the write before it is placed. */
	if (!read && n == 1 && (a->flags & FI_DELIVERY_COMPLETE))
		wr[n++] = (struct nrma_wr){ .op = NRMA_WR_READ,
					    .raddr = remote->addr,
					    .rkey = remote->rkey };
	return n;
}

/*
 * Whether a write's notifications wait in its connection's batch
 * (nrma_batch.c): 1 if they do, 0 if they go with it, or -FI_EAGAIN.
 */
static int rma_batch_open(struct nrma_ep *ep, struct nrma_conn *conn,
			  const struct nrma_rma_args *a,
			  const struct nrma_remote *remote,
			  const struct nrma_remote *set,
			  struct nrma_batch_target *t)
{
	if ((a->flags & FI_READ) || !nrma_batch_enabled())
		return 0;
	*t = (struct nrma_batch_target){ .cell_rkey = remote->cell_rkey };
	if (a->notify) {
		t->has_set = true;
		t->set_rkey = set->rkey;
		t->set_addr = set->addr;
	}
	return nrma_batch_open(ep, conn, t);
}

static ssize_t rma_post(struct nrma_ep *ep, struct nrma_conn *conn,
			const void *args, size_t len)
{
	const struct nrma_rma_args *a = args;
	struct nrma_xfer *x = ep->xfer;
	struct nrma_sge sge[NRMA_IOV_LIMIT], scratch = nrma_scratch_sge(x);
	struct nrma_wr wr[4];
	struct nrma_remote remote, set;
	struct nrma_batch_target target;
	struct nrma_op *op;
	uint64_t flags = FI_RMA | (a->flags & (FI_READ | FI_WRITE)) |
			 nrma_tx_comp_flags(ep, a->flags, a->silent);
	/* Immediate data takes a receive buffer at the peer: a credit. */
	bool imm = (a->flags & (FI_READ | FI_REMOTE_CQ_DATA)) ==
		   FI_REMOTE_CQ_DATA;
	bool wr_inline = false; /* the data write's payload goes inline */
	int batched, n;

	n = nrma_rkey_target(ep, conn, a->key, a->addr, len,
			     a->flags & FI_READ ? NRMA_KEY_REMOTE_READ :
						  NRMA_KEY_REMOTE_WRITE,
			     &remote);
	if (!n && a->notify)
		n = nrma_rkey_notify_target(ep, conn, a->notify, &set);
	if (n == -FI_EACCES)
		return nrma_tx_refuse(ep, a->context, flags);
	if (n)
		return n;
	batched = rma_batch_open(ep, conn, a, &remote, &set, &target);
	if (batched < 0)
		return batched;
	if (imm && !nrma_credit_take(conn, NRMA_CREDIT_CTL))
		return -FI_EAGAIN;
	op = nrma_tx_op_alloc(ep, NRMA_OP_RMA, conn, false);
	n = -FI_EAGAIN;
	if (op) {
		op->context = a->context;
		op->len = len;
		op->flags = flags;
		wr_inline = rma_inline(op, a);
		n = rma_local(ep, op, a, wr_inline, sge);
	}
	if (n >= 0) {
		size_t count =
			rma_wrs(op, a, &remote, &set, sge, n, &scratch, wr);

		wr[0].inline_data = wr_inline;
		/* A batched write goes alone: the batch's atomics follow. */
		n = nrma_op_post(x, op, wr, batched ? 1 : count);
	}
	if (n) {
		if (imm)
			nrma_credit_untake(conn, NRMA_CREDIT_CTL);
		if (op)
			nrma_op_free(x, op);
		return n;
	}
	nrma_tx_started(x);
	if (batched)
		nrma_batch_add(ep, op, &target, rma_set_add(a->notify));
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

static ssize_t rma_hold(struct nrma_ep *ep, const struct nrma_rma_args *a,
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

static ssize_t rma_submit(struct nrma_ep *ep, const struct nrma_rma_args *a)
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
		return rma_hold(ep, a, (size_t) len);
	return nrma_tx_submit(ep, a->dest, rma_post, a, len, false);
}

void nrma_rma_finish(struct nrma_ep *ep, struct nrma_op *op)
{
	if (op->wc_pending || nrma_batch_holds(ep, op))
		return;
	if (!op->error && op->buf >= 0 && (op->flags & FI_READ))
		nrma_iov_scatter(op->iov, op->iov_count, 0,
				 nrma_bufpool_buf(&ep->xfer->tx_bufs, op->buf),
				 op->len);
	nrma_op_report(ep, op);
	nrma_tx_ended(ep->xfer);
	nrma_op_free(ep->xfer, op);
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
		.data = wc->imm,
		.src = nrma_source_of(ep, conn),
	};
	struct nrma_ep *reporter = rma_data_reporter(ep);

	if (reporter) /* else no context is open to report it */
		nrma_comp_rx_event(reporter, &comp);
}

static ssize_t rma_msg(struct fid_ep *ep_fid, const struct fi_msg_rma *msg,
		       const struct fi_nrma_notify *notify, uint64_t flags)
{
	struct nrma_rma_args a = {
		.iov = msg->msg_iov,
		.desc = msg->desc,
		.count = msg->iov_count,
		.dest = msg->addr,
		.data = msg->data,
		.flags = flags,
		.context = msg->context,
		.notify = notify,
	};

	/* One remote segment per operation: rma_iov_limit is 1. */
	if (msg->rma_iov_count != 1 || !msg->rma_iov)
		return -FI_EINVAL;
	a.addr = msg->rma_iov[0].addr;
	a.len = msg->rma_iov[0].len;
	a.key = msg->rma_iov[0].key;
	return rma_submit(nrma_ep_of(ep_fid), &a);
}

static ssize_t nrma_rma_readmsg(struct fid_ep *ep_fid,
				const struct fi_msg_rma *msg, uint64_t flags)
{
	return rma_msg(ep_fid, msg, NULL, (flags & ~FI_WRITE) | FI_READ);
}

static ssize_t nrma_rma_writemsg(struct fid_ep *ep_fid,
				 const struct fi_msg_rma *msg, uint64_t flags)
{
	return rma_msg(ep_fid, msg, NULL, (flags & ~FI_READ) | FI_WRITE);
}

static ssize_t rma_iov(struct fid_ep *ep_fid, const struct iovec *iov,
		       void **desc, size_t count, fi_addr_t peer, uint64_t addr,
		       uint64_t key, uint64_t data, uint64_t flags,
		       void *context)
{
	struct nrma_rma_args a = {
		.iov = iov,
		.desc = desc,
		.count = count,
		.dest = peer,
		.addr = addr,
		.key = key,
		.data = data,
		.context = context,
		.flags = nrma_path_of(ep_fid)->tx_op_flags | flags,
	};

	for (size_t i = 0; iov && i < count; i++)
		a.len += iov[i].iov_len;
	return rma_submit(nrma_ep_of(ep_fid), &a);
}

static ssize_t nrma_rma_readv(struct fid_ep *ep_fid, const struct iovec *iov,
			      void **desc, size_t count, fi_addr_t src,
			      uint64_t addr, uint64_t key, void *context)
{
	return rma_iov(ep_fid, iov, desc, count, src, addr, key, 0, FI_READ,
		       context);
}

static ssize_t nrma_rma_read(struct fid_ep *ep_fid, void *buf, size_t len,
			     void *desc, fi_addr_t src, uint64_t addr,
			     uint64_t key, void *context)
{
	struct iovec iov = { .iov_base = buf, .iov_len = len };

	return nrma_rma_readv(ep_fid, &iov, &desc, 1, src, addr, key, context);
}

static ssize_t nrma_rma_writev(struct fid_ep *ep_fid, const struct iovec *iov,
			       void **desc, size_t count, fi_addr_t dest,
			       uint64_t addr, uint64_t key, void *context)
{
	return rma_iov(ep_fid, iov, desc, count, dest, addr, key, 0, FI_WRITE,
		       context);
}

/*
 * A write of one segment no larger than an inject (FI_OPT_INJECT_RMA_SIZE)
 * or FI_OPT_MAX_RMA_SIZE needs no vector or size checks; of its flags,
 * only those rma_submit refuses or holds send it there.
 */
static ssize_t rma_write_small(struct nrma_ep *ep,
			       const struct nrma_rma_args *a)
{
	if (a->len > ep->inject_size[NRMA_XFER_RMA] ||
	    a->len > ep->max_size[NRMA_XFER_RMA] ||
	    (a->flags & (FI_TRIGGER | FI_COMMIT_COMPLETE)))
		return rma_submit(ep, a);
	return nrma_tx_submit(ep, a->dest, rma_post, a, a->len, false);
}

static ssize_t nrma_rma_write(struct fid_ep *ep_fid, const void *buf,
			      size_t len, void *desc, fi_addr_t dest,
			      uint64_t addr, uint64_t key, void *context)
{
	struct iovec iov = { .iov_base = (void *) buf, .iov_len = len };
	struct nrma_rma_args a = {
		.iov = &iov,
		.desc = &desc,
		.count = 1,
		.dest = dest,
		.addr = addr,
		.len = len,
		.key = key,
		.context = context,
		.flags = nrma_path_of(ep_fid)->tx_op_flags | FI_WRITE,
	};

	return rma_write_small(nrma_ep_of(ep_fid), &a);
}

static ssize_t nrma_rma_writedata(struct fid_ep *ep_fid, const void *buf,
				  size_t len, void *desc, uint64_t data,
				  fi_addr_t dest, uint64_t addr, uint64_t key,
				  void *context)
{
	struct iovec iov = { .iov_base = (void *) buf, .iov_len = len };

	return rma_iov(ep_fid, &iov, &desc, 1, dest, addr, key, data,
		       FI_WRITE | FI_REMOTE_CQ_DATA, context);
}

/* Injected writes complete at once for the caller: no CQ entry. */
static ssize_t nrma_rma_injectdata(struct fid_ep *ep_fid, const void *buf,
				   size_t len, uint64_t data, fi_addr_t dest,
				   uint64_t addr, uint64_t key)
{
	struct iovec iov = { .iov_base = (void *) buf, .iov_len = len };
	struct nrma_rma_args a = {
		.iov = &iov,
		.count = 1,
		.dest = dest,
		.addr = addr,
		.len = len,
		.key = key,
		.data = data,
		.flags = nrma_inject_flags(ep_fid, FI_WRITE | FI_INJECT |
							   FI_REMOTE_CQ_DATA),
		.silent = true,
	};

	return rma_submit(nrma_ep_of(ep_fid), &a);
}

static ssize_t nrma_rma_inject(struct fid_ep *ep_fid, const void *buf,
			       size_t len, fi_addr_t dest, uint64_t addr,
			       uint64_t key)
{
	struct iovec iov = { .iov_base = (void *) buf, .iov_len = len };
	struct nrma_rma_args a = {
		.iov = &iov,
		.count = 1,
		.dest = dest,
		.addr = addr,
		.len = len,
		.key = key,
		.flags = nrma_inject_flags(ep_fid, FI_WRITE | FI_INJECT),
		.silent = true,
	};

	return rma_write_small(nrma_ep_of(ep_fid), &a);
}

struct fi_ops_rma nrma_rma_ops = {
	.size = sizeof(struct fi_ops_rma),
	.read = nrma_rma_read,
	.readv = nrma_rma_readv,
	.readmsg = nrma_rma_readmsg,
	.write = nrma_rma_write,
	.writev = nrma_rma_writev,
	.writemsg = nrma_rma_writemsg,
	.inject = nrma_rma_inject,
	.writedata = nrma_rma_writedata,
	.injectdata = nrma_rma_injectdata,
};

/* Notified operations (fi_ext_nrma.h): fi_readmsg or fi_writemsg, then +1
 * on a counter of a notification set at the peer. */
ssize_t nrma_rma_readmsg_notify(struct fid_ep *ep_fid,
				const struct fi_msg_rma *msg,
				const struct fi_nrma_notify *notify,
				uint64_t flags)
{
	if (nrma_notify_check(notify))
		return -FI_EINVAL;
	return rma_msg(ep_fid, msg, notify, (flags & ~FI_WRITE) | FI_READ);
}

ssize_t nrma_rma_writemsg_notify(struct fid_ep *ep_fid,
				 const struct fi_msg_rma *msg,
				 const struct fi_nrma_notify *notify,
				 uint64_t flags)
{
	if (nrma_notify_check(notify))
		return -FI_EINVAL;
	return rma_msg(ep_fid, msg, notify, (flags & ~FI_READ) | FI_WRITE);
}
