/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fi_atomic: what verbs atomics do natively, on one 64-bit integer per
 * operation: FI_SUM (fetch-and-add, fetching or not), FI_ATOMIC_READ (an
 * add of 0) and FI_CSWAP (compare-and-swap).  Everything else is
 * -FI_EOPNOTSUPP, as the valid calls and fi_query_atomic say, for the
 * application to emulate.
 *
 * The operand travels inside the work request, so every atomic is
 * injected in effect.  A fetched value lands in a bounce buffer and is
 * copied out on completion, which comes once the atomic was done at the
 * target.  Notification atomics follow unfenced: a responder executes
 * the atomics of a queue pair in order, each done before the next, so
 * the counter moves after the word.  (A fence there also let Linux 6.1's
 * Soft-RoCE stall for good when it retransmitted the fenced notification:
 * its fence waited for the notification's own atomic.)
 */
#include <rdma/fi_atomic.h>

#include "nrma_xfer.h"

#define NRMA_ATOMIC_SIZE sizeof(uint64_t)

enum nrma_atomic_kind {
	NRMA_ATOMIC_BASE,    /* fi_atomic */
	NRMA_ATOMIC_FETCH,   /* fi_fetch_atomic */
	NRMA_ATOMIC_COMPARE, /* fi_compare_atomic */
};

/* One atomic operation, with its operands read already. */
struct nrma_atomic_args {
	enum nrma_atomic_kind kind;
	enum fi_op op;
	uint64_t operand;
	uint64_t compare;
	void *result; /* FETCH and COMPARE: the old value */
	fi_addr_t dest;
	uint64_t addr;
	uint64_t key;
	uint64_t flags;
	bool silent; /* fi_inject_atomic: no completion */
	void *context;
	const struct fi_nrma_notify *notify; /* a set's counter to bump */
};

static int atomic_valid(enum fi_datatype datatype, enum fi_op op,
			enum nrma_atomic_kind kind, size_t *count)
{
	bool ok;

	/* FI_DATATYPE_LAST is kept for compatibility; 128-bit types follow. */
	if (datatype > FI_UINT128 || (int) op >= FI_ATOMIC_OP_LAST)
		return -FI_EINVAL;
	if (datatype != FI_INT64 && datatype != FI_UINT64)
		return -FI_EOPNOTSUPP;
	switch (kind) {
	case NRMA_ATOMIC_BASE:
		ok = op == FI_SUM;
		break;
	case NRMA_ATOMIC_FETCH:
		ok = op == FI_SUM || op == FI_ATOMIC_READ;
		break;
	default:
		ok = op == FI_CSWAP;
		break;
	}
	if (!ok)
		return -FI_EOPNOTSUPP;
	if (count)
		*count = 1;
	return 0;
}

static int nrma_atomic_writevalid(struct fid_ep *ep, enum fi_datatype datatype,
				  enum fi_op op, size_t *count)
{
	(void) ep;
	return atomic_valid(datatype, op, NRMA_ATOMIC_BASE, count);
}

static int nrma_atomic_readwritevalid(struct fid_ep *ep,
				      enum fi_datatype datatype, enum fi_op op,
				      size_t *count)
{
	(void) ep;
	return atomic_valid(datatype, op, NRMA_ATOMIC_FETCH, count);
}

static int nrma_atomic_compwritevalid(struct fid_ep *ep,
				      enum fi_datatype datatype, enum fi_op op,
				      size_t *count)
{
	(void) ep;
	return atomic_valid(datatype, op, NRMA_ATOMIC_COMPARE, count);
}

int nrma_query_atomic(struct fid_domain *domain, enum fi_datatype datatype,
		      enum fi_op op, struct fi_atomic_attr *attr,
		      uint64_t flags)
{
	enum nrma_atomic_kind kind = flags & FI_FETCH_ATOMIC ?
					     NRMA_ATOMIC_FETCH :
				     flags & FI_COMPARE_ATOMIC ?
					     NRMA_ATOMIC_COMPARE :
					     NRMA_ATOMIC_BASE;
	int ret;

	(void) domain;
	if (!attr ||
	    (flags & ~(FI_FETCH_ATOMIC | FI_COMPARE_ATOMIC | FI_TAGGED)) ||
	    (flags & (FI_FETCH_ATOMIC | FI_COMPARE_ATOMIC)) ==
		    (FI_FETCH_ATOMIC | FI_COMPARE_ATOMIC))
		return -FI_EINVAL;
	if (flags & FI_TAGGED) /* no atomics into tagged receive buffers */
		return -FI_EOPNOTSUPP;
	ret = atomic_valid(datatype, op, kind, &attr->count);
	if (!ret)
		attr->size = NRMA_ATOMIC_SIZE;
	return ret;
}

/* The atomic work request; verbs compares with add and swaps in swap. */
static struct nrma_wr atomic_wr(const struct nrma_atomic_args *a,
				const struct nrma_remote *remote,
				const struct nrma_sge *result)
{
	bool cswap = a->op == FI_CSWAP;

	return (struct nrma_wr){
		.op = cswap ? NRMA_WR_CMP_SWAP : NRMA_WR_FETCH_ADD,
		.sge = result,
		.sge_count = 1,
		.raddr = remote->addr,
		.rkey = remote->rkey,
		.add = cswap		       ? a->compare :
		       a->op == FI_ATOMIC_READ ? 0 :
						 a->operand,
		.swap = a->operand,
		.fence = a->flags & FI_FENCE,
	};
}

static ssize_t atomic_post(struct nrma_ep *ep, struct nrma_conn *conn,
			   const void *args, size_t len)
{
	const struct nrma_atomic_args *a = args;
	bool fetch = a->kind != NRMA_ATOMIC_BASE;
	struct nrma_xfer *x = ep->xfer;
	struct nrma_sge scratch = nrma_scratch_sge(x), result;
	struct nrma_wr wr[4];
	struct nrma_remote remote, set;
	struct nrma_op *op;
	size_t n;
	uint64_t flags = FI_ATOMIC | (fetch ? FI_READ : FI_WRITE) |
			 nrma_tx_comp_flags(ep, a->flags, a->silent);
	int ret;

	/* Any atomic changes the word, FI_ATOMIC_READ too (it adds 0). */
	ret = nrma_rkey_target(ep, conn, a->key, a->addr, len,
			       NRMA_KEY_REMOTE_WRITE, &remote);
	if (!ret && a->notify)
		ret = nrma_rkey_notify_target(ep, conn, a->notify, &set);
	if (ret == -FI_EACCES)
		return nrma_tx_refuse(ep, a->context, flags);
	if (ret)
		return ret;
	/* The device works on naturally aligned 64-bit words only. */
	if (remote.addr % NRMA_ATOMIC_SIZE)
		return -FI_EINVAL;
	op = nrma_tx_op_alloc(ep, NRMA_OP_RMA, conn, fetch);
	if (!op)
		return -FI_EAGAIN;
	op->context = a->context;
	op->len = len;
	op->flags = flags;
	if (fetch) {
		op->iov[0] =
			(struct iovec){ .iov_base = a->result, .iov_len = len };
		op->iov_count = 1;
		result = nrma_tx_buf_sge(x, op, len);
	}
	wr[0] = atomic_wr(a, &remote, fetch ? &result : &scratch);
	n = 1 + nrma_notify_wrs(conn, remote.cell_rkey, fetch, false, &scratch,
				wr + 1);
	if (a->notify)
		wr[n++] = nrma_notify_set_wr(a->notify, &set, &scratch, false);
	ret = nrma_op_post(x, op, wr, n);
	if (ret) {
		nrma_op_free(x, op);
		return ret;
	}
	nrma_tx_started(x);
	return 0;
}

/* An ioc array of exactly one element of one datatype. */
static bool atomic_one_element(const struct fi_ioc *ioc, size_t count)
{
	return count == 1 && ioc && ioc[0].count == 1 && ioc[0].addr;
}

/* The endpoint's atomic sizes (FI_OPT_*_ATOMIC_SIZE) allow one element. */
static int atomic_size_check(const struct nrma_ep *ep, uint64_t flags)
{
	int ret = nrma_tx_flags_check(flags);

	if (ret)
		return ret;
	if (ep->max_size[NRMA_XFER_ATOMIC] < NRMA_ATOMIC_SIZE ||
	    ((flags & FI_INJECT) &&
	     ep->inject_size[NRMA_XFER_ATOMIC] < NRMA_ATOMIC_SIZE))
		return -FI_EINVAL;
	return 0;
}

/* A triggered atomic's turn came (nrma_trigger.c): its operands are in a. */
static ssize_t atomic_fire(struct nrma_ep *ep, void *args,
			   const struct iovec *iov, void **desc, size_t len)
{
	struct nrma_atomic_args *a = args;

	(void) iov;
	(void) desc;
	a->flags &= ~FI_TRIGGER;
	return nrma_tx_submit(ep, a->dest, atomic_post, a, len, false);
}

static ssize_t atomic_hold(struct nrma_ep *ep, const struct nrma_atomic_args *a)
{
	struct nrma_trigger_io io = { .len = NRMA_ATOMIC_SIZE };
	uint64_t dir = a->kind == NRMA_ATOMIC_BASE ? FI_WRITE : FI_READ;

	/* A notification set's operations are not triggered. */
	if (a->notify)
		return -FI_EINVAL;
	return nrma_trigger_hold(
		ep, a->flags, NRMA_TRIGGER_OP(atomic_fire, a, FI_ATOMIC | dir),
		io);
}

static ssize_t atomic_submit(struct fid_ep *ep_fid, enum nrma_atomic_kind kind,
			     const struct fi_msg_atomic *msg,
			     const struct fi_ioc *comparev,
			     size_t compare_count, struct fi_ioc *resultv,
			     size_t result_count, uint64_t flags, bool silent,
			     const struct fi_nrma_notify *notify)
{
	struct nrma_ep *ep = nrma_ep_of(ep_fid);
	struct nrma_atomic_args a = {
		.kind = kind,
		.op = msg->op,
		.dest = msg->addr,
		.flags = flags,
		.silent = silent,
		.context = msg->context,
		.notify = notify,
	};
	int ret = atomic_valid(msg->datatype, msg->op, kind, NULL);

	if (!ret)
		ret = atomic_size_check(ep, flags);
	if (ret)
		return ret;
	if (flags & FI_TAGGED) /* no atomics into tagged receive buffers */
		return -FI_EOPNOTSUPP;
	if (msg->rma_iov_count != 1 || !msg->rma_iov ||
	    msg->rma_iov[0].count != 1 ||
	    (msg->op != FI_ATOMIC_READ &&
	     !atomic_one_element(msg->msg_iov, msg->iov_count)) ||
	    (kind == NRMA_ATOMIC_COMPARE &&
	     !atomic_one_element(comparev, compare_count)) ||
	    (kind != NRMA_ATOMIC_BASE &&
	     !atomic_one_element(resultv, result_count)))
		return -FI_EINVAL;
	a.addr = msg->rma_iov[0].addr;
	a.key = msg->rma_iov[0].key;
	if (msg->op != FI_ATOMIC_READ)
		a.operand = *(const uint64_t *) msg->msg_iov[0].addr;
	if (kind == NRMA_ATOMIC_COMPARE)
		a.compare = *(const uint64_t *) comparev[0].addr;
	if (kind != NRMA_ATOMIC_BASE)
		a.result = resultv[0].addr;
	if (flags & FI_TRIGGER)
		return atomic_hold(ep, &a);
	return nrma_tx_submit(ep, a.dest, atomic_post, &a, NRMA_ATOMIC_SIZE,
			      false);
}

/* The message of a call with one remote element, and room for its ioc. */
struct atomic_req {
	struct fi_rma_ioc rma;
	struct fi_msg_atomic msg;
};

static struct fi_msg_atomic *atomic_req(struct atomic_req *r,
					const struct fi_ioc *iov, void **desc,
					size_t count, fi_addr_t dest,
					uint64_t addr, uint64_t key,
					enum fi_datatype datatype,
					enum fi_op op, void *context)
{
	r->rma = (struct fi_rma_ioc){ .addr = addr, .count = 1, .key = key };
	r->msg = (struct fi_msg_atomic){
		.msg_iov = iov,
		.desc = desc,
		.iov_count = count,
		.addr = dest,
		.rma_iov = &r->rma,
		.rma_iov_count = 1,
		.datatype = datatype,
		.op = op,
		.context = context,
	};
	return &r->msg;
}

static uint64_t atomic_op_flags(struct fid_ep *ep_fid)
{
	return nrma_path_of(ep_fid)->tx_op_flags;
}

static ssize_t nrma_atomic_writemsg(struct fid_ep *ep_fid,
				    const struct fi_msg_atomic *msg,
				    uint64_t flags)
{
	return atomic_submit(ep_fid, NRMA_ATOMIC_BASE, msg, NULL, 0, NULL, 0,
			     flags, false, NULL);
}

static ssize_t nrma_atomic_writev(struct fid_ep *ep_fid,
				  const struct fi_ioc *iov, void **desc,
				  size_t count, fi_addr_t dest, uint64_t addr,
				  uint64_t key, enum fi_datatype datatype,
				  enum fi_op op, void *context)
{
	struct atomic_req r;

	return nrma_atomic_writemsg(ep_fid,
				    atomic_req(&r, iov, desc, count, dest, addr,
					       key, datatype, op, context),
				    atomic_op_flags(ep_fid));
}

static ssize_t nrma_atomic_write(struct fid_ep *ep_fid, const void *buf,
				 size_t count, void *desc, fi_addr_t dest,
				 uint64_t addr, uint64_t key,
				 enum fi_datatype datatype, enum fi_op op,
				 void *context)
{
	struct fi_ioc iov = { .addr = (void *) buf, .count = count };

	return nrma_atomic_writev(ep_fid, &iov, &desc, 1, dest, addr, key,
				  datatype, op, context);
}

static ssize_t nrma_atomic_inject(struct fid_ep *ep_fid, const void *buf,
				  size_t count, fi_addr_t dest, uint64_t addr,
				  uint64_t key, enum fi_datatype datatype,
				  enum fi_op op)
{
	struct fi_ioc iov = { .addr = (void *) buf, .count = count };
	struct atomic_req r;

	return atomic_submit(ep_fid, NRMA_ATOMIC_BASE,
			     atomic_req(&r, &iov, NULL, 1, dest, addr, key,
					datatype, op, NULL),
			     NULL, 0, NULL, 0,
			     nrma_inject_flags(ep_fid, FI_INJECT), true, NULL);
}

static ssize_t nrma_atomic_readwritemsg(struct fid_ep *ep_fid,
					const struct fi_msg_atomic *msg,
					struct fi_ioc *resultv,
					void **result_desc, size_t result_count,
					uint64_t flags)
{
	(void) result_desc;
	return atomic_submit(ep_fid, NRMA_ATOMIC_FETCH, msg, NULL, 0, resultv,
			     result_count, flags, false, NULL);
}

static ssize_t nrma_atomic_readwritev(struct fid_ep *ep_fid,
				      const struct fi_ioc *iov, void **desc,
				      size_t count, struct fi_ioc *resultv,
				      void **result_desc, size_t result_count,
				      fi_addr_t dest, uint64_t addr,
				      uint64_t key, enum fi_datatype datatype,
				      enum fi_op op, void *context)
{
	struct atomic_req r;

	return nrma_atomic_readwritemsg(
		ep_fid,
		atomic_req(&r, iov, desc, count, dest, addr, key, datatype, op,
			   context),
		resultv, result_desc, result_count, atomic_op_flags(ep_fid));
}

static ssize_t nrma_atomic_readwrite(struct fid_ep *ep_fid, const void *buf,
				     size_t count, void *desc, void *result,
				     void *result_desc, fi_addr_t dest,
				     uint64_t addr, uint64_t key,
				     enum fi_datatype datatype, enum fi_op op,
				     void *context)
{
	struct fi_ioc iov = { .addr = (void *) buf, .count = count };
	struct fi_ioc res = { .addr = result, .count = count };

	return nrma_atomic_readwritev(ep_fid, &iov, &desc, buf ? 1 : 0, &res,
				      &result_desc, 1, dest, addr, key,
				      datatype, op, context);
}

static ssize_t nrma_atomic_compwritemsg(
	struct fid_ep *ep_fid, const struct fi_msg_atomic *msg,
	const struct fi_ioc *comparev, void **compare_desc,
	size_t compare_count, struct fi_ioc *resultv, void **result_desc,
	size_t result_count, uint64_t flags)
{
	(void) compare_desc;
	(void) result_desc;
	return atomic_submit(ep_fid, NRMA_ATOMIC_COMPARE, msg, comparev,
			     compare_count, resultv, result_count, flags, false,
			     NULL);
}

static ssize_t nrma_atomic_compwritev(
	struct fid_ep *ep_fid, const struct fi_ioc *iov, void **desc,
	size_t count, const struct fi_ioc *comparev, void **compare_desc,
	size_t compare_count, struct fi_ioc *resultv, void **result_desc,
	size_t result_count, fi_addr_t dest, uint64_t addr, uint64_t key,
	enum fi_datatype datatype, enum fi_op op, void *context)
{
	struct atomic_req r;

	return nrma_atomic_compwritemsg(
		ep_fid,
		atomic_req(&r, iov, desc, count, dest, addr, key, datatype, op,
			   context),
		comparev, compare_desc, compare_count, resultv, result_desc,
		result_count, atomic_op_flags(ep_fid));
}

static ssize_t nrma_atomic_compwrite(struct fid_ep *ep_fid, const void *buf,
				     size_t count, void *desc,
				     const void *compare, void *compare_desc,
				     void *result, void *result_desc,
				     fi_addr_t dest, uint64_t addr,
				     uint64_t key, enum fi_datatype datatype,
				     enum fi_op op, void *context)
{
	struct fi_ioc iov = { .addr = (void *) buf, .count = count };
	struct fi_ioc cmp = { .addr = (void *) compare, .count = count };
	struct fi_ioc res = { .addr = result, .count = count };

	return nrma_atomic_compwritev(ep_fid, &iov, &desc, 1, &cmp,
				      &compare_desc, 1, &res, &result_desc, 1,
				      dest, addr, key, datatype, op, context);
}

struct fi_ops_atomic nrma_atomic_ops = {
	.size = sizeof(struct fi_ops_atomic),
	.write = nrma_atomic_write,
	.writev = nrma_atomic_writev,
	.writemsg = nrma_atomic_writemsg,
	.inject = nrma_atomic_inject,
	.readwrite = nrma_atomic_readwrite,
	.readwritev = nrma_atomic_readwritev,
	.readwritemsg = nrma_atomic_readwritemsg,
	.compwrite = nrma_atomic_compwrite,
	.compwritev = nrma_atomic_compwritev,
	.compwritemsg = nrma_atomic_compwritemsg,
	.writevalid = nrma_atomic_writevalid,
	.readwritevalid = nrma_atomic_readwritevalid,
	.compwritevalid = nrma_atomic_compwritevalid,
};

/* Notified atomics (fi_ext_nrma.h): the atomic, then the set's counter. */
ssize_t nrma_atomic_writemsg_notify(struct fid_ep *ep_fid,
				    const struct fi_msg_atomic *msg,
				    const struct fi_nrma_notify *notify,
				    uint64_t flags)
{
	if (nrma_notify_check(notify))
		return -FI_EINVAL;
	return atomic_submit(ep_fid, NRMA_ATOMIC_BASE, msg, NULL, 0, NULL, 0,
			     flags, false, notify);
}

ssize_t nrma_atomic_readwritemsg_notify(struct fid_ep *ep_fid,
					const struct fi_msg_atomic *msg,
					struct fi_ioc *resultv,
					void **result_desc, size_t result_count,
					const struct fi_nrma_notify *notify,
					uint64_t flags)
{
	(void) result_desc;
	if (nrma_notify_check(notify))
		return -FI_EINVAL;
	return atomic_submit(ep_fid, NRMA_ATOMIC_FETCH, msg, NULL, 0, resultv,
			     result_count, flags, false, notify);
}
