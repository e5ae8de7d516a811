/* SPDX-License-Identifier: BSD-2-Clause */
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#include "nrma_enosys.h"

/* Stubs ignore their arguments by definition. */
#pragma GCC diagnostic ignored "-Wunused-parameter"

#define NRMA_ENOSYS(ret, name, ...) \
	ret name(__VA_ARGS__)       \
	{                           \
		return -FI_ENOSYS;  \
	}
#define NRMA_ENOSYS_STATIC(ret, name, ...) \
	static NRMA_ENOSYS(ret, name, __VA_ARGS__)

/* An object with no options says so for each (fi_endpoint(3)). */
int nrma_no_getopt(struct fid *fid, int level, int optname, void *optval,
		   size_t *optlen)
{
	return -FI_ENOPROTOOPT;
}

int nrma_no_setopt(struct fid *fid, int level, int optname, const void *optval,
		   size_t optlen)
{
	return -FI_ENOPROTOOPT;
}

NRMA_ENOSYS(int, nrma_no_close, struct fid *fid)
NRMA_ENOSYS(ssize_t, nrma_no_cancel, struct fid *fid, void *context)
NRMA_ENOSYS(ssize_t, nrma_no_size_left, struct fid_ep *ep)
NRMA_ENOSYS(int, nrma_no_bind, struct fid *fid, struct fid *bfid,
	    uint64_t flags)
NRMA_ENOSYS(int, nrma_no_control, struct fid *fid, int command, void *arg)
NRMA_ENOSYS(int, nrma_no_ops_open, struct fid *fid, const char *name,
	    uint64_t flags, void **ops, void *context)
NRMA_ENOSYS(int, nrma_no_getpeer, struct fid_ep *ep, void *addr,
	    size_t *addrlen)
NRMA_ENOSYS(int, nrma_no_connect, struct fid_ep *ep, const void *addr,
	    const void *param, size_t paramlen)
NRMA_ENOSYS(int, nrma_no_listen, struct fid_pep *pep)
NRMA_ENOSYS(int, nrma_no_accept, struct fid_ep *ep, const void *param,
	    size_t paramlen)
NRMA_ENOSYS(int, nrma_no_reject, struct fid_pep *pep, fid_t handle,
	    const void *param, size_t paramlen)
NRMA_ENOSYS(int, nrma_no_shutdown, struct fid_ep *ep, uint64_t flags)
NRMA_ENOSYS(int, nrma_no_join, struct fid_ep *ep, const void *addr,
	    uint64_t flags, struct fid_mc **mc, void *context)
NRMA_ENOSYS(int, nrma_no_query_collective, struct fid_domain *domain,
	    enum fi_collective_op coll, struct fi_collective_attr *attr,
	    uint64_t flags)
NRMA_ENOSYS(int, nrma_no_tx_ctx, struct fid_ep *sep, int index,
	    struct fi_tx_attr *attr, struct fid_ep **tx_ep, void *context)
NRMA_ENOSYS(int, nrma_no_rx_ctx, struct fid_ep *sep, int index,
	    struct fi_rx_attr *attr, struct fid_ep **rx_ep, void *context)
NRMA_ENOSYS(int, nrma_no_av_set, struct fid_av *av, struct fi_av_set_attr *attr,
	    struct fid_av_set **av_set, void *context)
NRMA_ENOSYS(int, nrma_no_wait_open, struct fid_fabric *fabric,
	    struct fi_wait_attr *attr, struct fid_wait **waitset)
NRMA_ENOSYS(int, nrma_no_domain2, struct fid_fabric *fabric,
	    struct fi_info *info, struct fid_domain **dom, uint64_t flags,
	    void *context)

/* Sends, for contexts that only receive */
NRMA_ENOSYS(ssize_t, nrma_no_send, struct fid_ep *ep, const void *buf,
	    size_t len, void *desc, fi_addr_t dest, void *context)
NRMA_ENOSYS(ssize_t, nrma_no_sendv, struct fid_ep *ep, const struct iovec *iov,
	    void **desc, size_t count, fi_addr_t dest, void *context)
NRMA_ENOSYS(ssize_t, nrma_no_sendmsg, struct fid_ep *ep,
	    const struct fi_msg *msg, uint64_t flags)
NRMA_ENOSYS(ssize_t, nrma_no_inject, struct fid_ep *ep, const void *buf,
	    size_t len, fi_addr_t dest)
NRMA_ENOSYS(ssize_t, nrma_no_senddata, struct fid_ep *ep, const void *buf,
	    size_t len, void *desc, uint64_t data, fi_addr_t dest,
	    void *context)
NRMA_ENOSYS(ssize_t, nrma_no_injectdata, struct fid_ep *ep, const void *buf,
	    size_t len, uint64_t data, fi_addr_t dest)
NRMA_ENOSYS(ssize_t, nrma_no_tsend, struct fid_ep *ep, const void *buf,
	    size_t len, void *desc, fi_addr_t dest, uint64_t tag, void *context)
NRMA_ENOSYS(ssize_t, nrma_no_tsendv, struct fid_ep *ep, const struct iovec *iov,
	    void **desc, size_t count, fi_addr_t dest, uint64_t tag,
	    void *context)
NRMA_ENOSYS(ssize_t, nrma_no_tsendmsg, struct fid_ep *ep,
	    const struct fi_msg_tagged *msg, uint64_t flags)
NRMA_ENOSYS(ssize_t, nrma_no_tinject, struct fid_ep *ep, const void *buf,
	    size_t len, fi_addr_t dest, uint64_t tag)
NRMA_ENOSYS(ssize_t, nrma_no_tsenddata, struct fid_ep *ep, const void *buf,
	    size_t len, void *desc, uint64_t data, fi_addr_t dest, uint64_t tag,
	    void *context)
NRMA_ENOSYS(ssize_t, nrma_no_tinjectdata, struct fid_ep *ep, const void *buf,
	    size_t len, uint64_t data, fi_addr_t dest, uint64_t tag)

/* Receives, for contexts that only send */
NRMA_ENOSYS(ssize_t, nrma_no_recv, struct fid_ep *ep, void *buf, size_t len,
	    void *desc, fi_addr_t src, void *context)
NRMA_ENOSYS(ssize_t, nrma_no_recvv, struct fid_ep *ep, const struct iovec *iov,
	    void **desc, size_t count, fi_addr_t src, void *context)
NRMA_ENOSYS(ssize_t, nrma_no_recvmsg, struct fid_ep *ep,
	    const struct fi_msg *msg, uint64_t flags)
NRMA_ENOSYS(ssize_t, nrma_no_trecv, struct fid_ep *ep, void *buf, size_t len,
	    void *desc, fi_addr_t src, uint64_t tag, uint64_t ignore,
	    void *context)
NRMA_ENOSYS(ssize_t, nrma_no_trecvv, struct fid_ep *ep, const struct iovec *iov,
	    void **desc, size_t count, fi_addr_t src, uint64_t tag,
	    uint64_t ignore, void *context)
NRMA_ENOSYS(ssize_t, nrma_no_trecvmsg, struct fid_ep *ep,
	    const struct fi_msg_tagged *msg, uint64_t flags)

/* Neither, for what transfers nothing (a scalable endpoint itself) */
struct fi_ops_msg nrma_no_msg_ops = {
	.size = sizeof(struct fi_ops_msg),
	.recv = nrma_no_recv,
	.recvv = nrma_no_recvv,
	.recvmsg = nrma_no_recvmsg,
	.send = nrma_no_send,
	.sendv = nrma_no_sendv,
	.sendmsg = nrma_no_sendmsg,
	.inject = nrma_no_inject,
	.senddata = nrma_no_senddata,
	.injectdata = nrma_no_injectdata,
};

struct fi_ops_tagged nrma_no_tagged_ops = {
	.size = sizeof(struct fi_ops_tagged),
	.recv = nrma_no_trecv,
	.recvv = nrma_no_trecvv,
	.recvmsg = nrma_no_trecvmsg,
	.send = nrma_no_tsend,
	.sendv = nrma_no_tsendv,
	.sendmsg = nrma_no_tsendmsg,
	.inject = nrma_no_tinject,
	.senddata = nrma_no_tsenddata,
	.injectdata = nrma_no_tinjectdata,
};

/* RMA and atomics, for contexts that only receive */
NRMA_ENOSYS_STATIC(ssize_t, no_rma_read, struct fid_ep *ep, void *buf,
		   size_t len, void *desc, fi_addr_t src, uint64_t addr,
		   uint64_t key, void *context)
NRMA_ENOSYS_STATIC(ssize_t, no_rma_iov, struct fid_ep *ep,
		   const struct iovec *iov, void **desc, size_t count,
		   fi_addr_t src, uint64_t addr, uint64_t key, void *context)
NRMA_ENOSYS_STATIC(ssize_t, no_rma_msg, struct fid_ep *ep,
		   const struct fi_msg_rma *msg, uint64_t flags)
NRMA_ENOSYS_STATIC(ssize_t, no_rma_write, struct fid_ep *ep, const void *buf,
		   size_t len, void *desc, fi_addr_t dest, uint64_t addr,
		   uint64_t key, void *context)
NRMA_ENOSYS_STATIC(ssize_t, no_rma_inject, struct fid_ep *ep, const void *buf,
		   size_t len, fi_addr_t dest, uint64_t addr, uint64_t key)
NRMA_ENOSYS_STATIC(ssize_t, no_rma_writedata, struct fid_ep *ep,
		   const void *buf, size_t len, void *desc, uint64_t data,
		   fi_addr_t dest, uint64_t addr, uint64_t key, void *context)
NRMA_ENOSYS_STATIC(ssize_t, no_rma_injectdata, struct fid_ep *ep,
		   const void *buf, size_t len, uint64_t data, fi_addr_t dest,
		   uint64_t addr, uint64_t key)

struct fi_ops_rma nrma_no_rma_ops = {
	.size = sizeof(struct fi_ops_rma),
	.read = no_rma_read,
	.readv = no_rma_iov,
	.readmsg = no_rma_msg,
	.write = no_rma_write,
	.writev = no_rma_iov,
	.writemsg = no_rma_msg,
	.inject = no_rma_inject,
	.writedata = no_rma_writedata,
	.injectdata = no_rma_injectdata,
};

NRMA_ENOSYS_STATIC(ssize_t, no_atomic_write, struct fid_ep *ep, const void *buf,
		   size_t count, void *desc, fi_addr_t dest, uint64_t addr,
		   uint64_t key, enum fi_datatype datatype, enum fi_op op,
		   void *context)
NRMA_ENOSYS_STATIC(ssize_t, no_atomic_writev, struct fid_ep *ep,
		   const struct fi_ioc *iov, void **desc, size_t count,
		   fi_addr_t dest, uint64_t addr, uint64_t key,
		   enum fi_datatype datatype, enum fi_op op, void *context)
NRMA_ENOSYS_STATIC(ssize_t, no_atomic_writemsg, struct fid_ep *ep,
		   const struct fi_msg_atomic *msg, uint64_t flags)
NRMA_ENOSYS_STATIC(ssize_t, no_atomic_inject, struct fid_ep *ep,
		   const void *buf, size_t count, fi_addr_t dest, uint64_t addr,
		   uint64_t key, enum fi_datatype datatype, enum fi_op op)
NRMA_ENOSYS_STATIC(ssize_t, no_atomic_readwrite, struct fid_ep *ep,
		   const void *buf, size_t count, void *desc, void *result,
		   void *result_desc, fi_addr_t dest, uint64_t addr,
		   uint64_t key, enum fi_datatype datatype, enum fi_op op,
		   void *context)
NRMA_ENOSYS_STATIC(ssize_t, no_atomic_readwritev, struct fid_ep *ep,
		   const struct fi_ioc *iov, void **desc, size_t count,
		   struct fi_ioc *resultv, void **result_desc,
		   size_t result_count, fi_addr_t dest, uint64_t addr,
		   uint64_t key, enum fi_datatype datatype, enum fi_op op,
		   void *context)
NRMA_ENOSYS_STATIC(ssize_t, no_atomic_readwritemsg, struct fid_ep *ep,
		   const struct fi_msg_atomic *msg, struct fi_ioc *resultv,
		   void **result_desc, size_t result_count, uint64_t flags)
NRMA_ENOSYS_STATIC(ssize_t, no_atomic_compwrite, struct fid_ep *ep,
		   const void *buf, size_t count, void *desc,
		   const void *compare, void *compare_desc, void *result,
		   void *result_desc, fi_addr_t dest, uint64_t addr,
		   uint64_t key, enum fi_datatype datatype, enum fi_op op,
		   void *context)
NRMA_ENOSYS_STATIC(ssize_t, no_atomic_compwritev, struct fid_ep *ep,
		   const struct fi_ioc *iov, void **desc, size_t count,
		   const struct fi_ioc *comparev, void **compare_desc,
		   size_t compare_count, struct fi_ioc *resultv,
		   void **result_desc, size_t result_count, fi_addr_t dest,
		   uint64_t addr, uint64_t key, enum fi_datatype datatype,
		   enum fi_op op, void *context)
NRMA_ENOSYS_STATIC(ssize_t, no_atomic_compwritemsg, struct fid_ep *ep,
		   const struct fi_msg_atomic *msg,
		   const struct fi_ioc *comparev, void **compare_desc,
		   size_t compare_count, struct fi_ioc *resultv,
		   void **result_desc, size_t result_count, uint64_t flags)
NRMA_ENOSYS_STATIC(int, no_atomic_valid, struct fid_ep *ep,
		   enum fi_datatype datatype, enum fi_op op, size_t *count)

struct fi_ops_atomic nrma_no_atomic_ops = {
	.size = sizeof(struct fi_ops_atomic),
	.write = no_atomic_write,
	.writev = no_atomic_writev,
	.writemsg = no_atomic_writemsg,
	.inject = no_atomic_inject,
	.readwrite = no_atomic_readwrite,
	.readwritev = no_atomic_readwritev,
	.readwritemsg = no_atomic_readwritemsg,
	.compwrite = no_atomic_compwrite,
	.compwritev = no_atomic_compwritev,
	.compwritemsg = no_atomic_compwritemsg,
	.writevalid = no_atomic_valid,
	.readwritevalid = no_atomic_valid,
	.compwritevalid = no_atomic_valid,
};

/* Collectives */
NRMA_ENOSYS_STATIC(ssize_t, no_coll_barrier, struct fid_ep *ep,
		   fi_addr_t coll_addr, void *context)
NRMA_ENOSYS_STATIC(ssize_t, no_coll_broadcast, struct fid_ep *ep, void *buf,
		   size_t count, void *desc, fi_addr_t coll_addr,
		   fi_addr_t root_addr, enum fi_datatype datatype,
		   uint64_t flags, void *context)
NRMA_ENOSYS_STATIC(ssize_t, no_coll_alltoall, struct fid_ep *ep,
		   const void *buf, size_t count, void *desc, void *result,
		   void *result_desc, fi_addr_t coll_addr,
		   enum fi_datatype datatype, uint64_t flags, void *context)
NRMA_ENOSYS_STATIC(ssize_t, no_coll_reduce_op, struct fid_ep *ep,
		   const void *buf, size_t count, void *desc, void *result,
		   void *result_desc, fi_addr_t coll_addr,
		   enum fi_datatype datatype, enum fi_op op, uint64_t flags,
		   void *context)
NRMA_ENOSYS_STATIC(ssize_t, no_coll_reduce, struct fid_ep *ep, const void *buf,
		   size_t count, void *desc, void *result, void *result_desc,
		   fi_addr_t coll_addr, fi_addr_t root_addr,
		   enum fi_datatype datatype, enum fi_op op, uint64_t flags,
		   void *context)
NRMA_ENOSYS_STATIC(ssize_t, no_coll_rooted, struct fid_ep *ep, const void *buf,
		   size_t count, void *desc, void *result, void *result_desc,
		   fi_addr_t coll_addr, fi_addr_t root_addr,
		   enum fi_datatype datatype, uint64_t flags, void *context)
NRMA_ENOSYS_STATIC(ssize_t, no_coll_msg, struct fid_ep *ep,
		   const struct fi_msg_collective *msg, struct fi_ioc *resultv,
		   void **result_desc, size_t result_count, uint64_t flags)
NRMA_ENOSYS_STATIC(ssize_t, no_coll_barrier2, struct fid_ep *ep,
		   fi_addr_t coll_addr, uint64_t flags, void *context)

struct fi_ops_collective nrma_no_collective_ops = {
	.size = sizeof(struct fi_ops_collective),
	.barrier = no_coll_barrier,
	.broadcast = no_coll_broadcast,
	.alltoall = no_coll_alltoall,
	.allreduce = no_coll_reduce_op,
	.allgather = no_coll_alltoall,
	.reduce_scatter = no_coll_reduce_op,
	.reduce = no_coll_reduce,
	.scatter = no_coll_rooted,
	.gather = no_coll_rooted,
	.msg = no_coll_msg,
	.barrier2 = no_coll_barrier2,
};
