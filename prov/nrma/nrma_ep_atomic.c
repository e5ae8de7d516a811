/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fi_atomic: the endpoint's atomic calls, their valid calls and the
 * domain's fi_query_atomic, and the notified atomics of fi_ext_nrma.h,
 * as operations for nrma_atomic.c (which says what it does).
 */
#include <rdma/fi_atomic.h>
#include <rdma/fi_ext_nrma.h>

#include "nrma.h"
#include "nrma_rkey.h"
#include "nrma_xfer.h"

static int ep_atomic_writevalid(struct fid_ep *ep, enum fi_datatype datatype,
				enum fi_op op, size_t *count)
{
	(void) ep;
	return nrma_atomic_valid(datatype, op, NRMA_ATOMIC_BASE, count);
}

static int ep_atomic_readwritevalid(struct fid_ep *ep,
				    enum fi_datatype datatype, enum fi_op op,
				    size_t *count)
{
	(void) ep;
	return nrma_atomic_valid(datatype, op, NRMA_ATOMIC_FETCH, count);
}

static int ep_atomic_compwritevalid(struct fid_ep *ep,
				    enum fi_datatype datatype, enum fi_op op,
				    size_t *count)
{
	(void) ep;
	return nrma_atomic_valid(datatype, op, NRMA_ATOMIC_COMPARE, count);
}

int nrma_ep_atomic_query(struct fid_domain *domain, enum fi_datatype datatype,
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
	ret = nrma_atomic_valid(datatype, op, kind, &attr->count);
	if (!ret)
		attr->size = nrma_atomic_calc_size(datatype);
	return ret;
}

/* An ioc array of one vector of count elements. */
static bool ep_atomic_elements(const struct fi_ioc *ioc, size_t iov_count,
			       size_t count)
{
	return iov_count == 1 && ioc && ioc[0].count == count && ioc[0].addr;
}

/*
 * The bytes of the message's elements: one vector of count of them at
 * each end, within the endpoint's atomic sizes (FI_OPT_*_ATOMIC_SIZE).
 */
static ssize_t ep_atomic_len(const struct nrma_ep *ep,
			     const struct fi_msg_atomic *msg, uint64_t flags)
{
	size_t count, len;
	int ret = nrma_tx_flags_check(flags);

	if (ret)
		return ret;
	if (msg->rma_iov_count != 1 || !msg->rma_iov)
		return -FI_EINVAL;
	count = msg->rma_iov[0].count;
	len = count * nrma_atomic_calc_size(msg->datatype);
	if (!count || count > NRMA_ATOMIC_MAX_BYTES ||
	    len > ep->max_size[NRMA_XFER_ATOMIC] ||
	    ((flags & FI_INJECT) && len > ep->inject_size[NRMA_XFER_ATOMIC]))
		return -FI_EINVAL;
	return (ssize_t) len;
}

/* Whether the vectors of a call of kind hold the message's elements. */
static bool ep_atomic_vectors(const struct fi_msg_atomic *msg,
			      enum nrma_atomic_kind kind,
			      const struct fi_ioc *comparev,
			      size_t compare_count,
			      const struct fi_ioc *resultv, size_t result_count)
{
	size_t count = msg->rma_iov[0].count;

	return (msg->op == FI_ATOMIC_READ ||
		ep_atomic_elements(msg->msg_iov, msg->iov_count, count)) &&
	       (kind != NRMA_ATOMIC_COMPARE ||
		ep_atomic_elements(comparev, compare_count, count)) &&
	       (kind == NRMA_ATOMIC_BASE ||
		ep_atomic_elements(resultv, result_count, count));
}

static ssize_t ep_atomic_submit(
	struct fid_ep *ep_fid, enum nrma_atomic_kind kind,
	const struct fi_msg_atomic *msg, const struct fi_ioc *comparev,
	size_t compare_count, struct fi_ioc *resultv, size_t result_count,
	uint64_t flags, bool silent, const struct fi_nrma_notify *notify)
{
	struct nrma_ep *ep = nrma_ep_of(ep_fid);
	struct nrma_atomic_args a;
	ssize_t len;
	int ret = nrma_atomic_valid(msg->datatype, msg->op, kind, NULL);

	if (ret)
		return ret;
	len = ep_atomic_len(ep, msg, flags);
	if (len < 0)
		return len;
	if (flags & FI_TAGGED) /* no atomics into tagged receive buffers */
		return -FI_EOPNOTSUPP;
	if (!ep_atomic_vectors(msg, kind, comparev, compare_count, resultv,
			       result_count))
		return -FI_EINVAL;
	a = (struct nrma_atomic_args){
		.kind = kind,
		.op = msg->op,
		.datatype = msg->datatype,
		.count = msg->rma_iov[0].count,
		.result = kind != NRMA_ATOMIC_BASE ? resultv[0].addr : NULL,
		.dest = msg->addr,
		.addr = msg->rma_iov[0].addr,
		.key = msg->rma_iov[0].key,
		.flags = flags,
		.silent = silent,
		.context = msg->context,
		.notify = notify,
	};
	if (msg->op != FI_ATOMIC_READ)
		memcpy(a.operand, msg->msg_iov[0].addr, (size_t) len);
	if (kind == NRMA_ATOMIC_COMPARE)
		memcpy(a.compare, comparev[0].addr, (size_t) len);
	return NRMA_EP_POST(ep, nrma_atomic(ep, &a));
}

/* The elements of an ioc array. */
static size_t ep_atomic_count(const struct fi_ioc *ioc, size_t count)
{
	size_t elements = 0;

	for (size_t i = 0; ioc && i < count; i++)
		elements += ioc[i].count;
	return elements;
}

/*
 * The message of a call with one remote vector of as many elements as
 * the local one holds (the results', for a fetching call: a read has no
 * operand), and room for its ioc.
 */
struct ep_atomic_req {
	struct fi_rma_ioc rma;
	struct fi_msg_atomic msg;
};

static struct fi_msg_atomic *ep_atomic_req(
	struct ep_atomic_req *r, const struct fi_ioc *iov, void **desc,
	size_t count, size_t elements, fi_addr_t dest, uint64_t addr,
	uint64_t key, enum fi_datatype datatype, enum fi_op op, void *context)
{
	r->rma = (struct fi_rma_ioc){ .addr = addr,
				      .count = elements,
				      .key = key };
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

static uint64_t ep_atomic_op_flags(struct fid_ep *ep_fid)
{
	return nrma_path_of(ep_fid)->tx_op_flags;
}

static ssize_t ep_atomic_writemsg(struct fid_ep *ep_fid,
				  const struct fi_msg_atomic *msg,
				  uint64_t flags)
{
	return ep_atomic_submit(ep_fid, NRMA_ATOMIC_BASE, msg, NULL, 0, NULL, 0,
				flags, false, NULL);
}

static ssize_t ep_atomic_writev(struct fid_ep *ep_fid, const struct fi_ioc *iov,
				void **desc, size_t count, fi_addr_t dest,
				uint64_t addr, uint64_t key,
				enum fi_datatype datatype, enum fi_op op,
				void *context)
{
	struct ep_atomic_req r;

	return ep_atomic_writemsg(
		ep_fid,
		ep_atomic_req(&r, iov, desc, count, ep_atomic_count(iov, count),
			      dest, addr, key, datatype, op, context),
		ep_atomic_op_flags(ep_fid));
}

static ssize_t ep_atomic_write(struct fid_ep *ep_fid, const void *buf,
			       size_t count, void *desc, fi_addr_t dest,
			       uint64_t addr, uint64_t key,
			       enum fi_datatype datatype, enum fi_op op,
			       void *context)
{
	struct fi_ioc iov = { .addr = (void *) buf, .count = count };

	return ep_atomic_writev(ep_fid, &iov, &desc, 1, dest, addr, key,
				datatype, op, context);
}

static ssize_t ep_atomic_inject(struct fid_ep *ep_fid, const void *buf,
				size_t count, fi_addr_t dest, uint64_t addr,
				uint64_t key, enum fi_datatype datatype,
				enum fi_op op)
{
	struct fi_ioc iov = { .addr = (void *) buf, .count = count };
	struct ep_atomic_req r;

	return ep_atomic_submit(ep_fid, NRMA_ATOMIC_BASE,
				ep_atomic_req(&r, &iov, NULL, 1, count, dest,
					      addr, key, datatype, op, NULL),
				NULL, 0, NULL, 0,
				nrma_inject_flags(ep_fid, FI_INJECT), true,
				NULL);
}

static ssize_t ep_atomic_readwritemsg(struct fid_ep *ep_fid,
				      const struct fi_msg_atomic *msg,
				      struct fi_ioc *resultv,
				      void **result_desc, size_t result_count,
				      uint64_t flags)
{
	(void) result_desc;
	return ep_atomic_submit(ep_fid, NRMA_ATOMIC_FETCH, msg, NULL, 0,
				resultv, result_count, flags, false, NULL);
}

static ssize_t ep_atomic_readwritev(struct fid_ep *ep_fid,
				    const struct fi_ioc *iov, void **desc,
				    size_t count, struct fi_ioc *resultv,
				    void **result_desc, size_t result_count,
				    fi_addr_t dest, uint64_t addr, uint64_t key,
				    enum fi_datatype datatype, enum fi_op op,
				    void *context)
{
	struct ep_atomic_req r;

	return ep_atomic_readwritemsg(
		ep_fid,
		ep_atomic_req(&r, iov, desc, count,
			      ep_atomic_count(resultv, result_count), dest,
			      addr, key, datatype, op, context),
		resultv, result_desc, result_count, ep_atomic_op_flags(ep_fid));
}

static ssize_t ep_atomic_readwrite(struct fid_ep *ep_fid, const void *buf,
				   size_t count, void *desc, void *result,
				   void *result_desc, fi_addr_t dest,
				   uint64_t addr, uint64_t key,
				   enum fi_datatype datatype, enum fi_op op,
				   void *context)
{
	struct fi_ioc iov = { .addr = (void *) buf, .count = count };
	struct fi_ioc res = { .addr = result, .count = count };

	return ep_atomic_readwritev(ep_fid, &iov, &desc, buf ? 1 : 0, &res,
				    &result_desc, 1, dest, addr, key, datatype,
				    op, context);
}

static ssize_t ep_atomic_compwritemsg(struct fid_ep *ep_fid,
				      const struct fi_msg_atomic *msg,
				      const struct fi_ioc *comparev,
				      void **compare_desc, size_t compare_count,
				      struct fi_ioc *resultv,
				      void **result_desc, size_t result_count,
				      uint64_t flags)
{
	(void) compare_desc;
	(void) result_desc;
	return ep_atomic_submit(ep_fid, NRMA_ATOMIC_COMPARE, msg, comparev,
				compare_count, resultv, result_count, flags,
				false, NULL);
}

static ssize_t ep_atomic_compwritev(
	struct fid_ep *ep_fid, const struct fi_ioc *iov, void **desc,
	size_t count, const struct fi_ioc *comparev, void **compare_desc,
	size_t compare_count, struct fi_ioc *resultv, void **result_desc,
	size_t result_count, fi_addr_t dest, uint64_t addr, uint64_t key,
	enum fi_datatype datatype, enum fi_op op, void *context)
{
	struct ep_atomic_req r;

	return ep_atomic_compwritemsg(
		ep_fid,
		ep_atomic_req(&r, iov, desc, count,
			      ep_atomic_count(resultv, result_count), dest,
			      addr, key, datatype, op, context),
		comparev, compare_desc, compare_count, resultv, result_desc,
		result_count, ep_atomic_op_flags(ep_fid));
}

static ssize_t ep_atomic_compwrite(struct fid_ep *ep_fid, const void *buf,
				   size_t count, void *desc,
				   const void *compare, void *compare_desc,
				   void *result, void *result_desc,
				   fi_addr_t dest, uint64_t addr, uint64_t key,
				   enum fi_datatype datatype, enum fi_op op,
				   void *context)
{
	struct fi_ioc iov = { .addr = (void *) buf, .count = count };
	struct fi_ioc cmp = { .addr = (void *) compare, .count = count };
	struct fi_ioc res = { .addr = result, .count = count };

	return ep_atomic_compwritev(ep_fid, &iov, &desc, 1, &cmp, &compare_desc,
				    1, &res, &result_desc, 1, dest, addr, key,
				    datatype, op, context);
}

struct fi_ops_atomic nrma_ep_atomic_ops = {
	.size = sizeof(struct fi_ops_atomic),
	.write = ep_atomic_write,
	.writev = ep_atomic_writev,
	.writemsg = ep_atomic_writemsg,
	.inject = ep_atomic_inject,
	.readwrite = ep_atomic_readwrite,
	.readwritev = ep_atomic_readwritev,
	.readwritemsg = ep_atomic_readwritemsg,
	.compwrite = ep_atomic_compwrite,
	.compwritev = ep_atomic_compwritev,
	.compwritemsg = ep_atomic_compwritemsg,
	.writevalid = ep_atomic_writevalid,
	.readwritevalid = ep_atomic_readwritevalid,
	.compwritevalid = ep_atomic_compwritevalid,
};

/* Notified atomics (fi_ext_nrma.h): the atomic, then the set's counter. */
ssize_t nrma_ep_atomic_writemsg_notify(struct fid_ep *ep_fid,
				       const struct fi_msg_atomic *msg,
				       const struct fi_nrma_notify *notify,
				       uint64_t flags)
{
	if (nrma_notify_check(notify))
		return -FI_EINVAL;
	return ep_atomic_submit(ep_fid, NRMA_ATOMIC_BASE, msg, NULL, 0, NULL, 0,
				flags, false, notify);
}

ssize_t nrma_ep_atomic_readwritemsg_notify(
	struct fid_ep *ep_fid, const struct fi_msg_atomic *msg,
	struct fi_ioc *resultv, void **result_desc, size_t result_count,
	const struct fi_nrma_notify *notify, uint64_t flags)
{
	(void) result_desc;
	if (nrma_notify_check(notify))
		return -FI_EINVAL;
	return ep_atomic_submit(ep_fid, NRMA_ATOMIC_FETCH, msg, NULL, 0,
				resultv, result_count, flags, false, notify);
}
