/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Operation tables whose every entry returns -FI_ENOSYS, for the parts of
 * the libfabric API an object does not implement.  libfabric's own fi_no_*
 * stubs are internal to libfabric and not exported.
 */
#ifndef NRMA_ENOSYS_H
#define NRMA_ENOSYS_H

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_collective.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>

#include <rdma/fi_atomic.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

extern struct fi_ops_collective nrma_no_collective_ops;
extern struct fi_ops_rma nrma_no_rma_ops;
extern struct fi_ops_msg nrma_no_msg_ops;
extern struct fi_ops_tagged nrma_no_tagged_ops;
extern struct fi_ops_atomic nrma_no_atomic_ops;

/* The receives of fi_ops_msg and fi_ops_tagged. */
ssize_t nrma_no_recv(struct fid_ep *ep, void *buf, size_t len, void *desc,
		     fi_addr_t src, void *context);
ssize_t nrma_no_recvv(struct fid_ep *ep, const struct iovec *iov, void **desc,
		      size_t count, fi_addr_t src, void *context);
ssize_t nrma_no_recvmsg(struct fid_ep *ep, const struct fi_msg *msg,
			uint64_t flags);
ssize_t nrma_no_trecv(struct fid_ep *ep, void *buf, size_t len, void *desc,
		      fi_addr_t src, uint64_t tag, uint64_t ignore,
		      void *context);
ssize_t nrma_no_trecvv(struct fid_ep *ep, const struct iovec *iov, void **desc,
		       size_t count, fi_addr_t src, uint64_t tag,
		       uint64_t ignore, void *context);
ssize_t nrma_no_trecvmsg(struct fid_ep *ep, const struct fi_msg_tagged *msg,
			 uint64_t flags);

/* The transmits of fi_ops_msg and fi_ops_tagged. */
ssize_t nrma_no_send(struct fid_ep *ep, const void *buf, size_t len, void *desc,
		     fi_addr_t dest, void *context);
ssize_t nrma_no_sendv(struct fid_ep *ep, const struct iovec *iov, void **desc,
		      size_t count, fi_addr_t dest, void *context);
ssize_t nrma_no_sendmsg(struct fid_ep *ep, const struct fi_msg *msg,
			uint64_t flags);
ssize_t nrma_no_inject(struct fid_ep *ep, const void *buf, size_t len,
		       fi_addr_t dest);
ssize_t nrma_no_senddata(struct fid_ep *ep, const void *buf, size_t len,
			 void *desc, uint64_t data, fi_addr_t dest,
			 void *context);
ssize_t nrma_no_injectdata(struct fid_ep *ep, const void *buf, size_t len,
			   uint64_t data, fi_addr_t dest);
ssize_t nrma_no_tsend(struct fid_ep *ep, const void *buf, size_t len,
		      void *desc, fi_addr_t dest, uint64_t tag, void *context);
ssize_t nrma_no_tsendv(struct fid_ep *ep, const struct iovec *iov, void **desc,
		       size_t count, fi_addr_t dest, uint64_t tag,
		       void *context);
ssize_t nrma_no_tsendmsg(struct fid_ep *ep, const struct fi_msg_tagged *msg,
			 uint64_t flags);
ssize_t nrma_no_tinject(struct fid_ep *ep, const void *buf, size_t len,
			fi_addr_t dest, uint64_t tag);
ssize_t nrma_no_tsenddata(struct fid_ep *ep, const void *buf, size_t len,
			  void *desc, uint64_t data, fi_addr_t dest,
			  uint64_t tag, void *context);
ssize_t nrma_no_tinjectdata(struct fid_ep *ep, const void *buf, size_t len,
			    uint64_t data, fi_addr_t dest, uint64_t tag);

/* -FI_ENOPROTOOPT: no options at all. */
int nrma_no_getopt(struct fid *fid, int level, int optname, void *optval,
		   size_t *optlen);
int nrma_no_setopt(struct fid *fid, int level, int optname, const void *optval,
		   size_t optlen);
int nrma_no_close(struct fid *fid);
ssize_t nrma_no_cancel(struct fid *fid, void *context);
ssize_t nrma_no_size_left(struct fid_ep *ep);
int nrma_no_bind(struct fid *fid, struct fid *bfid, uint64_t flags);
int nrma_no_control(struct fid *fid, int command, void *arg);
int nrma_no_ops_open(struct fid *fid, const char *name, uint64_t flags,
		     void **ops, void *context);
int nrma_no_getpeer(struct fid_ep *ep, void *addr, size_t *addrlen);
int nrma_no_connect(struct fid_ep *ep, const void *addr, const void *param,
		    size_t paramlen);
int nrma_no_listen(struct fid_pep *pep);
int nrma_no_accept(struct fid_ep *ep, const void *param, size_t paramlen);
int nrma_no_reject(struct fid_pep *pep, fid_t handle, const void *param,
		   size_t paramlen);
int nrma_no_shutdown(struct fid_ep *ep, uint64_t flags);
int nrma_no_join(struct fid_ep *ep, const void *addr, uint64_t flags,
		 struct fid_mc **mc, void *context);
int nrma_no_query_collective(struct fid_domain *domain,
			     enum fi_collective_op coll,
			     struct fi_collective_attr *attr, uint64_t flags);
int nrma_no_tx_ctx(struct fid_ep *sep, int index, struct fi_tx_attr *attr,
		   struct fid_ep **tx_ep, void *context);
int nrma_no_rx_ctx(struct fid_ep *sep, int index, struct fi_rx_attr *attr,
		   struct fid_ep **rx_ep, void *context);
int nrma_no_av_set(struct fid_av *av, struct fi_av_set_attr *attr,
		   struct fid_av_set **av_set, void *context);
int nrma_no_wait_open(struct fid_fabric *fabric, struct fi_wait_attr *attr,
		      struct fid_wait **waitset);
int nrma_no_domain2(struct fid_fabric *fabric, struct fi_info *info,
		    struct fid_domain **dom, uint64_t flags, void *context);

#endif /* NRMA_ENOSYS_H */
