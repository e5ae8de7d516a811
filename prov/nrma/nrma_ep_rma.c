/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fi_rma: the endpoint's read and write calls, and its notified ones
 * (fi_ext_nrma.h), as operations for nrma_rma.c.
 */
#include <rdma/fi_ext_nrma.h>
#include <rdma/fi_rma.h>

#include "nrma.h"
#include "nrma_iov.h"
#include "nrma_rkey.h"
#include "nrma_xfer.h"

static ssize_t ep_rma_submit(struct fid_ep *ep_fid,
			     const struct nrma_rma_args *a)
{
	struct nrma_ep *ep = nrma_ep_of(ep_fid);

	return NRMA_EP_POST(ep, nrma_rma(ep, a));
}

static ssize_t ep_rma_small(struct fid_ep *ep_fid,
			    const struct nrma_rma_args *a)
{
	struct nrma_ep *ep = nrma_ep_of(ep_fid);

	return NRMA_EP_POST(ep, nrma_rma_small(ep, a));
}

/* The light path's result, or, when it does not take the operation, the
 * generic path's (nrma_rma_light). */
#define EP_RMA_LIGHT_OR(ep, b, call)                                     \
	({                                                               \
		ssize_t light_ = nrma_rma_light(ep, b);                  \
		light_ == NRMA_RMA_NOT_LIGHT ? (call) :                  \
					       NRMA_EP_POST(ep, light_); \
	})

static NRMA_NOINLINE ssize_t
ep_rma_msg_args(struct fid_ep *ep_fid, const struct fi_msg_rma *msg,
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
	return ep_rma_submit(ep_fid, &a);
}

/* fi_readmsg and fi_writemsg, notified or not: one buffer goes light. */
static NRMA_INLINE ssize_t ep_rma_msg(struct fid_ep *ep_fid,
				      const struct fi_msg_rma *msg,
				      const struct fi_nrma_notify *notify,
				      uint64_t flags)
{
	struct nrma_ep *ep = nrma_ep_of(ep_fid);
	struct nrma_rma_buf b;

	if (msg->iov_count != 1 || !msg->msg_iov || msg->rma_iov_count != 1 ||
	    !msg->rma_iov || msg->msg_iov[0].iov_len != msg->rma_iov[0].len)
		return ep_rma_msg_args(ep_fid, msg, notify, flags);
	b = (struct nrma_rma_buf){
		.buf = msg->msg_iov[0].iov_base,
		.len = msg->rma_iov[0].len,
		.desc = msg->desc ? msg->desc[0] : NULL,
		.dest = msg->addr,
		.addr = msg->rma_iov[0].addr,
		.key = msg->rma_iov[0].key,
		.context = msg->context,
		.flags = flags,
		.notify = notify,
	};
	return EP_RMA_LIGHT_OR(ep, &b,
			       ep_rma_msg_args(ep_fid, msg, notify, flags));
}

static ssize_t ep_rma_readmsg(struct fid_ep *ep_fid,
			      const struct fi_msg_rma *msg, uint64_t flags)
{
	return ep_rma_msg(ep_fid, msg, NULL, (flags & ~FI_WRITE) | FI_READ);
}

static ssize_t ep_rma_writemsg(struct fid_ep *ep_fid,
			       const struct fi_msg_rma *msg, uint64_t flags)
{
	return ep_rma_msg(ep_fid, msg, NULL, (flags & ~FI_READ) | FI_WRITE);
}

static ssize_t ep_rma_iov(struct fid_ep *ep_fid, const struct iovec *iov,
			  void **desc, size_t count, fi_addr_t peer,
			  uint64_t addr, uint64_t key, uint64_t data,
			  uint64_t flags, void *context)
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

	a.len = iov ? nrma_iov_len(iov, count) : 0;
	return ep_rma_submit(ep_fid, &a);
}

static ssize_t ep_rma_readv(struct fid_ep *ep_fid, const struct iovec *iov,
			    void **desc, size_t count, fi_addr_t src,
			    uint64_t addr, uint64_t key, void *context)
{
	return ep_rma_iov(ep_fid, iov, desc, count, src, addr, key, 0, FI_READ,
			  context);
}

/*
 * fi_read and fi_write off the light path: flags has the endpoint's
 * op_flags.  Out of line, as ep_rma_msg_args: the light path's frame
 * holds no argument record.
 */
static NRMA_NOINLINE ssize_t ep_rma_buf_args(struct fid_ep *ep_fid, void *buf,
					     size_t len, void *desc,
					     fi_addr_t peer, uint64_t addr,
					     uint64_t key, void *context,
					     uint64_t flags)
{
	struct iovec iov = { .iov_base = buf, .iov_len = len };
	struct nrma_rma_args a = {
		.iov = &iov,
		.desc = &desc,
		.count = 1,
		.dest = peer,
		.addr = addr,
		.len = len,
		.key = key,
		.context = context,
		.flags = flags,
	};

	return ep_rma_small(ep_fid, &a);
}

/* fi_read and fi_write: one buffer.  Inline in each, where flags is
 * known. */
static NRMA_INLINE ssize_t ep_rma_buf(struct fid_ep *ep_fid, void *buf,
				      size_t len, void *desc, fi_addr_t peer,
				      uint64_t addr, uint64_t key,
				      void *context, uint64_t flags)
{
	struct nrma_rma_buf b = {
		.buf = buf,
		.len = len,
		.desc = desc,
		.dest = peer,
		.addr = addr,
		.key = key,
		.context = context,
		.flags = nrma_path_of(ep_fid)->tx_op_flags | flags,
	};

	return EP_RMA_LIGHT_OR(nrma_ep_of(ep_fid), &b,
			       ep_rma_buf_args(ep_fid, buf, len, desc, peer,
					       addr, key, context, b.flags));
}

static ssize_t ep_rma_read(struct fid_ep *ep_fid, void *buf, size_t len,
			   void *desc, fi_addr_t src, uint64_t addr,
			   uint64_t key, void *context)
{
	return ep_rma_buf(ep_fid, buf, len, desc, src, addr, key, context,
			  FI_READ);
}

static ssize_t ep_rma_writev(struct fid_ep *ep_fid, const struct iovec *iov,
			     void **desc, size_t count, fi_addr_t dest,
			     uint64_t addr, uint64_t key, void *context)
{
	return ep_rma_iov(ep_fid, iov, desc, count, dest, addr, key, 0,
			  FI_WRITE, context);
}

static ssize_t ep_rma_write(struct fid_ep *ep_fid, const void *buf, size_t len,
			    void *desc, fi_addr_t dest, uint64_t addr,
			    uint64_t key, void *context)
{
	return ep_rma_buf(ep_fid, (void *) buf, len, desc, dest, addr, key,
			  context, FI_WRITE);
}

static ssize_t ep_rma_writedata(struct fid_ep *ep_fid, const void *buf,
				size_t len, void *desc, uint64_t data,
				fi_addr_t dest, uint64_t addr, uint64_t key,
				void *context)
{
	struct iovec iov = { .iov_base = (void *) buf, .iov_len = len };

	return ep_rma_iov(ep_fid, &iov, &desc, 1, dest, addr, key, data,
			  FI_WRITE | FI_REMOTE_CQ_DATA, context);
}

/*
 * Injected writes complete at once for the caller: no CQ entry.  flags
 * adds FI_REMOTE_CQ_DATA for fi_inject_writedata.
 */
static ssize_t ep_rma_inject_buf(struct fid_ep *ep_fid, const void *buf,
				 size_t len, uint64_t data, fi_addr_t dest,
				 uint64_t addr, uint64_t key, uint64_t flags)
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
		.flags =
			nrma_inject_flags(ep_fid, FI_WRITE | FI_INJECT | flags),
		.silent = true,
	};

	return ep_rma_small(ep_fid, &a);
}

static ssize_t ep_rma_injectdata(struct fid_ep *ep_fid, const void *buf,
				 size_t len, uint64_t data, fi_addr_t dest,
				 uint64_t addr, uint64_t key)
{
	return ep_rma_inject_buf(ep_fid, buf, len, data, dest, addr, key,
				 FI_REMOTE_CQ_DATA);
}

/* fi_inject_write: light when the device takes the payload inline. */
static ssize_t ep_rma_inject(struct fid_ep *ep_fid, const void *buf, size_t len,
			     fi_addr_t dest, uint64_t addr, uint64_t key)
{
	struct nrma_rma_buf b = {
		.buf = (void *) buf,
		.len = len,
		.dest = dest,
		.addr = addr,
		.key = key,
		.flags = nrma_inject_flags(ep_fid, FI_WRITE | FI_INJECT),
		.silent = true,
	};

	return EP_RMA_LIGHT_OR(
		nrma_ep_of(ep_fid), &b,
		ep_rma_inject_buf(ep_fid, buf, len, 0, dest, addr, key, 0));
}

struct fi_ops_rma nrma_ep_rma_ops = {
	.size = sizeof(struct fi_ops_rma),
	.read = ep_rma_read,
	.readv = ep_rma_readv,
	.readmsg = ep_rma_readmsg,
	.write = ep_rma_write,
	.writev = ep_rma_writev,
	.writemsg = ep_rma_writemsg,
	.inject = ep_rma_inject,
	.writedata = ep_rma_writedata,
	.injectdata = ep_rma_injectdata,
};

/* Notified operations (fi_ext_nrma.h): fi_readmsg or fi_writemsg, then +1
 * on a counter of a notification set at the peer. */
ssize_t nrma_ep_rma_readmsg_notify(struct fid_ep *ep_fid,
				   const struct fi_msg_rma *msg,
				   const struct fi_nrma_notify *notify,
				   uint64_t flags)
{
	if (nrma_notify_check(notify))
		return -FI_EINVAL;
	return ep_rma_msg(ep_fid, msg, notify, (flags & ~FI_WRITE) | FI_READ);
}

ssize_t nrma_ep_rma_writemsg_notify(struct fid_ep *ep_fid,
				    const struct fi_msg_rma *msg,
				    const struct fi_nrma_notify *notify,
				    uint64_t flags)
{
	if (nrma_notify_check(notify))
		return -FI_EINVAL;
	return ep_rma_msg(ep_fid, msg, notify, (flags & ~FI_READ) | FI_WRITE);
}
