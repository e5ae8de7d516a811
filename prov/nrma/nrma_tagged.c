/* SPDX-License-Identifier: BSD-2-Clause */
/* fi_tagged: tagged sends and receives (nrma_send.c, nrma_recv.c). */
#include <rdma/fi_tagged.h>

#include "nrma.h"
#include "nrma_enosys.h"

static ssize_t nrma_tagged_recvmsg(struct fid_ep *ep_fid,
				   const struct fi_msg_tagged *msg,
				   uint64_t flags)
{
	struct nrma_recv_args a = {
		.iov = msg->msg_iov,
		.desc = msg->desc,
		.count = msg->iov_count,
		.src = msg->addr,
		.tag = msg->tag,
		.ignore = msg->ignore,
		.flags = flags | FI_TAGGED,
		.context = msg->context,
	};

	return nrma_msg_recv_on(ep_fid, &a);
}

static ssize_t nrma_tagged_recvv(struct fid_ep *ep_fid, const struct iovec *iov,
				 void **desc, size_t count, fi_addr_t src,
				 uint64_t tag, uint64_t ignore, void *context)
{
	struct nrma_recv_args a = {
		.iov = iov,
		.desc = desc,
		.count = count,
		.src = src,
		.tag = tag,
		.ignore = ignore,
		.context = context,
		.flags = nrma_msg_rx_op_flags(ep_fid) | FI_TAGGED,
	};

	return nrma_msg_recv_on(ep_fid, &a);
}

static ssize_t nrma_tagged_recv(struct fid_ep *ep_fid, void *buf, size_t len,
				void *desc, fi_addr_t src, uint64_t tag,
				uint64_t ignore, void *context)
{
	struct iovec iov = { .iov_base = buf, .iov_len = len };

	return nrma_tagged_recvv(ep_fid, &iov, &desc, 1, src, tag, ignore,
				 context);
}

static ssize_t nrma_tagged_sendmsg(struct fid_ep *ep_fid,
				   const struct fi_msg_tagged *msg,
				   uint64_t flags)
{
	struct nrma_send_args a = {
		.iov = msg->msg_iov,
		.count = msg->iov_count,
		.dest = msg->addr,
		.data = msg->data,
		.tag = msg->tag,
		.flags = flags | FI_TAGGED,
		.context = msg->context,
	};

	return nrma_msg_submit(ep_fid, &a);
}

static ssize_t nrma_tagged_sendv(struct fid_ep *ep_fid, const struct iovec *iov,
				 void **desc, size_t count, fi_addr_t dest,
				 uint64_t tag, void *context)
{
	struct nrma_send_args a = {
		.iov = iov,
		.count = count,
		.dest = dest,
		.tag = tag,
		.context = context,
		.flags = nrma_path_of(ep_fid)->tx_op_flags | FI_TAGGED,
	};

	(void) desc; /* sends register what receivers read */

	return nrma_msg_submit(ep_fid, &a);
}

static ssize_t nrma_tagged_send(struct fid_ep *ep_fid, const void *buf,
				size_t len, void *desc, fi_addr_t dest,
				uint64_t tag, void *context)
{
	(void) desc; /* sends register what receivers read */
	return nrma_msg_send_buf(
		ep_fid, buf, len,
		&(struct nrma_send_args){
			.dest = dest,
			.tag = tag,
			.context = context,
			.flags = nrma_path_of(ep_fid)->tx_op_flags | FI_TAGGED,
		});
}

static ssize_t nrma_tagged_senddata(struct fid_ep *ep_fid, const void *buf,
				    size_t len, void *desc, uint64_t data,
				    fi_addr_t dest, uint64_t tag, void *context)
{
	uint64_t flags = nrma_path_of(ep_fid)->tx_op_flags | FI_TAGGED |
			 FI_REMOTE_CQ_DATA;

	(void) desc; /* sends register what receivers read */
	return nrma_msg_submit_buf(ep_fid, buf, len,
				   &(struct nrma_send_args){ .dest = dest,
							     .data = data,
							     .tag = tag,
							     .context = context,
							     .flags = flags });
}

static ssize_t nrma_tagged_injectdata(struct fid_ep *ep_fid, const void *buf,
				      size_t len, uint64_t data, fi_addr_t dest,
				      uint64_t tag)
{
	return nrma_msg_submit_buf(
		ep_fid, buf, len,
		&(struct nrma_send_args){ .dest = dest,
					  .data = data,
					  .tag = tag,
					  .flags = FI_INJECT | FI_TAGGED |
						   FI_REMOTE_CQ_DATA,
					  .silent = true });
}

static ssize_t nrma_tagged_inject(struct fid_ep *ep_fid, const void *buf,
				  size_t len, fi_addr_t dest, uint64_t tag)
{
	return nrma_msg_submit_buf(
		ep_fid, buf, len,
		&(struct nrma_send_args){ .dest = dest,
					  .tag = tag,
					  .flags = FI_INJECT | FI_TAGGED,
					  .silent = true });
}

struct fi_ops_tagged nrma_tagged_ops = {
	.size = sizeof(struct fi_ops_tagged),
	.recv = nrma_tagged_recv,
	.recvv = nrma_tagged_recvv,
	.recvmsg = nrma_tagged_recvmsg,
	.send = nrma_tagged_send,
	.sendv = nrma_tagged_sendv,
	.sendmsg = nrma_tagged_sendmsg,
	.inject = nrma_tagged_inject,
	.senddata = nrma_tagged_senddata,
	.injectdata = nrma_tagged_injectdata,
};

/* A shared receive context's (nrma_srx.c): it only receives. */
struct fi_ops_tagged nrma_srx_tagged_ops = {
	.size = sizeof(struct fi_ops_tagged),
	.recv = nrma_tagged_recv,
	.recvv = nrma_tagged_recvv,
	.recvmsg = nrma_tagged_recvmsg,
	.send = nrma_no_tsend,
	.sendv = nrma_no_tsendv,
	.sendmsg = nrma_no_tsendmsg,
	.inject = nrma_no_tinject,
	.senddata = nrma_no_tsenddata,
	.injectdata = nrma_no_tinjectdata,
};

/* A scalable endpoint's transmit context's (nrma_sep.c): it only sends. */
struct fi_ops_tagged nrma_txc_tagged_ops = {
	.size = sizeof(struct fi_ops_tagged),
	.recv = nrma_no_trecv,
	.recvv = nrma_no_trecvv,
	.recvmsg = nrma_no_trecvmsg,
	.send = nrma_tagged_send,
	.sendv = nrma_tagged_sendv,
	.sendmsg = nrma_tagged_sendmsg,
	.inject = nrma_tagged_inject,
	.senddata = nrma_tagged_senddata,
	.injectdata = nrma_tagged_injectdata,
};
