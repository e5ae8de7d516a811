/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fi_rma: RDMA reads and writes, each followed by the notification
 * atomics its target asked for (nrma_proto.c posts them).
 */
#include <rdma/fi_rma.h>

#include "nrma.h"

static struct nrma_ep *ep_of(struct fid_ep *ep_fid)
{
	return nrma_container_of(ep_fid, struct nrma_ep, ep_fid);
}

static ssize_t rma_msg(struct fid_ep *ep_fid, const struct fi_msg_rma *msg,
		       uint64_t flags)
{
	struct nrma_rma_args a = {
		.iov = msg->msg_iov, .desc = msg->desc, .count = msg->iov_count,
		.dest = msg->addr, .data = msg->data, .flags = flags,
		.context = msg->context,
	};

	/* One remote segment per operation: rma_iov_limit is 1. */
	if (msg->rma_iov_count != 1 || !msg->rma_iov)
		return -FI_EINVAL;
	a.addr = msg->rma_iov[0].addr;
	a.len = msg->rma_iov[0].len;
	a.key = msg->rma_iov[0].key;
	return nrma_proto_rma(ep_of(ep_fid), &a);
}

static ssize_t nrma_rma_readmsg(struct fid_ep *ep_fid,
				const struct fi_msg_rma *msg, uint64_t flags)
{
	return rma_msg(ep_fid, msg, (flags & ~FI_WRITE) | FI_READ);
}

static ssize_t nrma_rma_writemsg(struct fid_ep *ep_fid,
				 const struct fi_msg_rma *msg, uint64_t flags)
{
	return rma_msg(ep_fid, msg, (flags & ~FI_READ) | FI_WRITE);
}

static ssize_t rma_iov(struct fid_ep *ep_fid, const struct iovec *iov,
		       void **desc, size_t count, fi_addr_t peer,
		       uint64_t addr, uint64_t key, uint64_t data,
		       uint64_t flags, void *context)
{
	struct nrma_rma_args a = {
		.iov = iov, .desc = desc, .count = count, .dest = peer,
		.addr = addr, .key = key, .data = data, .context = context,
		.flags = ep_of(ep_fid)->tx_op_flags | flags,
	};

	for (size_t i = 0; iov && i < count; i++)
		a.len += iov[i].iov_len;
	return nrma_proto_rma(ep_of(ep_fid), &a);
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

static ssize_t nrma_rma_write(struct fid_ep *ep_fid, const void *buf,
			      size_t len, void *desc, fi_addr_t dest,
			      uint64_t addr, uint64_t key, void *context)
{
	struct iovec iov = { .iov_base = (void *) buf, .iov_len = len };

	return nrma_rma_writev(ep_fid, &iov, &desc, 1, dest, addr, key,
			       context);
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
		.iov = &iov, .count = 1, .dest = dest, .addr = addr,
		.len = len, .key = key, .data = data,
		.flags = FI_WRITE | FI_INJECT | FI_REMOTE_CQ_DATA,
	};

	return nrma_proto_rma(ep_of(ep_fid), &a);
}

static ssize_t nrma_rma_inject(struct fid_ep *ep_fid, const void *buf,
			       size_t len, fi_addr_t dest, uint64_t addr,
			       uint64_t key)
{
	struct iovec iov = { .iov_base = (void *) buf, .iov_len = len };
	struct nrma_rma_args a = {
		.iov = &iov, .count = 1, .dest = dest, .addr = addr,
		.len = len, .key = key, .flags = FI_WRITE | FI_INJECT,
	};

	return nrma_proto_rma(ep_of(ep_fid), &a);
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
