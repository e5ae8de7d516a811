/* SPDX-License-Identifier: BSD-2-Clause */
/* fi_msg: untagged sends and receives (nrma_send.c, nrma_recv.c). */
#include "nrma.h"
#include "nrma_enosys.h"
#include "nrma_progress.h"
#include "nrma_xfer.h"

/* An endpoint's receives go to its context, shared or its own. */
static ssize_t msg_recv_ep(struct nrma_ep *ep, const struct nrma_recv_args *a)
{
	ssize_t ret;

	pthread_mutex_lock(ep->lock);
	ret = ep->enabled ? nrma_progress_rx_ctx_recv(ep->xfer->rx, a) :
			    -FI_EOPBADSTATE;
	pthread_mutex_unlock(ep->lock);
	return ret;
}

ssize_t nrma_msg_submit(struct fid_ep *ep_fid, const struct nrma_send_args *a)
{
	struct nrma_ep *ep = nrma_ep_of(ep_fid);

	return NRMA_EP_POST(ep, nrma_send(ep, a));
}

/* Inline in fi_send and fi_tsend: one frame for a light send. */
NRMA_INLINE ssize_t nrma_msg_send_buf(struct fid_ep *ep_fid, const void *buf,
				      size_t len, struct nrma_send_args *a)
{
	struct iovec iov = { .iov_base = (void *) buf, .iov_len = len };
	struct nrma_ep *ep = nrma_ep_of(ep_fid);

	a->iov = &iov;
	a->count = 1;
	if (a->silent)
		a->flags = nrma_inject_flags(ep_fid, a->flags);
	return NRMA_EP_POST(ep, nrma_send_buf(ep, a));
}

ssize_t nrma_msg_submit_buf(struct fid_ep *ep_fid, const void *buf, size_t len,
			    struct nrma_send_args *a)
{
	return nrma_msg_send_buf(ep_fid, buf, len, a);
}

/*
 * fi_recv and friends reach an endpoint, a shared receive context
 * (nrma_srx.c) or a scalable endpoint's receive context (nrma_sep.c).
 */
ssize_t nrma_msg_recv_on(struct fid_ep *ep_fid, const struct nrma_recv_args *a)
{
	switch (ep_fid->fid.fclass) {
	case FI_CLASS_RX_CTX:
		return nrma_sep_rxc_recv(ep_fid, a);
	case FI_CLASS_SRX_CTX:
		return nrma_srx_recv(ep_fid, a);
	default:
		return msg_recv_ep(nrma_ep_of(ep_fid), a);
	}
}

uint64_t nrma_msg_rx_op_flags(struct fid_ep *ep_fid)
{
	if (ep_fid->fid.fclass == FI_CLASS_SRX_CTX)
		return nrma_srx_op_flags(ep_fid);
	return nrma_path_of(ep_fid)->rx_op_flags;
}

static ssize_t nrma_msg_recvmsg(struct fid_ep *ep_fid, const struct fi_msg *msg,
				uint64_t flags)
{
	struct nrma_recv_args a = {
		.iov = msg->msg_iov,
		.desc = msg->desc,
		.count = msg->iov_count,
		.src = msg->addr,
		.flags = flags & ~FI_TAGGED,
		.context = msg->context,
	};

	return nrma_msg_recv_on(ep_fid, &a);
}

static ssize_t nrma_msg_recvv(struct fid_ep *ep_fid, const struct iovec *iov,
			      void **desc, size_t count, fi_addr_t src,
			      void *context)
{
	struct nrma_recv_args a = {
		.iov = iov,
		.desc = desc,
		.count = count,
		.src = src,
		.flags = nrma_msg_rx_op_flags(ep_fid),
		.context = context,
	};

	return nrma_msg_recv_on(ep_fid, &a);
}

static ssize_t nrma_msg_recv(struct fid_ep *ep_fid, void *buf, size_t len,
			     void *desc, fi_addr_t src, void *context)
{
	struct iovec iov = { .iov_base = buf, .iov_len = len };

	return nrma_msg_recvv(ep_fid, &iov, &desc, 1, src, context);
}

static ssize_t nrma_msg_sendmsg(struct fid_ep *ep_fid, const struct fi_msg *msg,
				uint64_t flags)
{
	struct nrma_send_args a = {
		.iov = msg->msg_iov,
		.count = msg->iov_count,
		.dest = msg->addr,
		.data = msg->data,
		.flags = flags & ~FI_TAGGED,
		.context = msg->context,
	};

	return nrma_msg_submit(ep_fid, &a);
}

static ssize_t nrma_msg_sendv(struct fid_ep *ep_fid, const struct iovec *iov,
			      void **desc, size_t count, fi_addr_t dest,
			      void *context)
{
	struct nrma_send_args a = {
		.iov = iov,
		.count = count,
		.dest = dest,
		.flags = nrma_path_of(ep_fid)->tx_op_flags,
		.context = context,
	};

	(void) desc; /* sends register what receivers read */

	return nrma_msg_submit(ep_fid, &a);
}

static ssize_t nrma_msg_send(struct fid_ep *ep_fid, const void *buf, size_t len,
			     void *desc, fi_addr_t dest, void *context)
{
	(void) desc; /* sends register what receivers read */
	return nrma_msg_send_buf(
		ep_fid, buf, len,
		&(struct nrma_send_args){
			.dest = dest,
			.flags = nrma_path_of(ep_fid)->tx_op_flags,
			.context = context,
		});
}

static ssize_t nrma_msg_senddata(struct fid_ep *ep_fid, const void *buf,
				 size_t len, void *desc, uint64_t data,
				 fi_addr_t dest, void *context)
{
	uint64_t flags = nrma_path_of(ep_fid)->tx_op_flags | FI_REMOTE_CQ_DATA;

	(void) desc; /* sends register what receivers read */
	return nrma_msg_submit_buf(ep_fid, buf, len,
				   &(struct nrma_send_args){ .dest = dest,
							     .data = data,
							     .context = context,
							     .flags = flags });
}

static ssize_t nrma_msg_injectdata(struct fid_ep *ep_fid, const void *buf,
				   size_t len, uint64_t data, fi_addr_t dest)
{
	return nrma_msg_submit_buf(
		ep_fid, buf, len,
		&(struct nrma_send_args){ .dest = dest,
					  .data = data,
					  .flags = FI_INJECT |
						   FI_REMOTE_CQ_DATA,
					  .silent = true });
}

static ssize_t nrma_msg_inject(struct fid_ep *ep_fid, const void *buf,
			       size_t len, fi_addr_t dest)
{
	return nrma_msg_submit_buf(ep_fid, buf, len,
				   &(struct nrma_send_args){ .dest = dest,
							     .flags = FI_INJECT,
							     .silent = true });
}

struct fi_ops_msg nrma_msg_ops = {
	.size = sizeof(struct fi_ops_msg),
	.recv = nrma_msg_recv,
	.recvv = nrma_msg_recvv,
	.recvmsg = nrma_msg_recvmsg,
	.send = nrma_msg_send,
	.sendv = nrma_msg_sendv,
	.sendmsg = nrma_msg_sendmsg,
	.inject = nrma_msg_inject,
	.senddata = nrma_msg_senddata,
	.injectdata = nrma_msg_injectdata,
};

/* A shared receive context's (nrma_srx.c): it only receives. */
struct fi_ops_msg nrma_srx_msg_ops = {
	.size = sizeof(struct fi_ops_msg),
	.recv = nrma_msg_recv,
	.recvv = nrma_msg_recvv,
	.recvmsg = nrma_msg_recvmsg,
	.send = nrma_no_send,
	.sendv = nrma_no_sendv,
	.sendmsg = nrma_no_sendmsg,
	.inject = nrma_no_inject,
	.senddata = nrma_no_senddata,
	.injectdata = nrma_no_injectdata,
};

/* A scalable endpoint's transmit context's (nrma_sep.c): it only sends. */
struct fi_ops_msg nrma_txc_msg_ops = {
	.size = sizeof(struct fi_ops_msg),
	.recv = nrma_no_recv,
	.recvv = nrma_no_recvv,
	.recvmsg = nrma_no_recvmsg,
	.send = nrma_msg_send,
	.sendv = nrma_msg_sendv,
	.sendmsg = nrma_msg_sendmsg,
	.inject = nrma_msg_inject,
	.senddata = nrma_msg_senddata,
	.injectdata = nrma_msg_injectdata,
};
