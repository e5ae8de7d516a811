/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Extensions of the nrma libfabric provider (see fi_nrma(7) and
 * fi_ext_nrma(3)).
 *
 * nrma brings notified RMA to ibverbs hardware: remote counters that the
 * initiator bumps with a verbs atomic after its data has landed.  With
 * the standard API a counter is an fi_cntr bound to a registration.  A
 * notification set, reached through fi_open_ops, is many counters in one
 * registration, named by one descriptor: an RMA operation names the set
 * and an index, and that counter gains 1 once the data is in place.
 */
#ifndef FI_EXT_NRMA_H
#define FI_EXT_NRMA_H

#include <stdint.h>

#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_rma.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The name to pass in FI_PROVIDER or hints->fabric_attr->prov_name. */
#define FI_NRMA_PROV_NAME "nrma"

/*
 * hints->fabric_attr->prov_name for nrma's own endpoints only.  A plain
 * FI_NRMA_PROV_NAME selects the same: nrma is no core for libfabric's
 * utility providers (ofi_rxm, ofi_rxd), so none is layered over it.
 */
#define FI_NRMA_PROV_NAME_NATIVE "nrma;^ofi_rxm"

/* Provider version, as fi_info reports it in fabric_attr->prov_version. */
#define FI_NRMA_VERSION FI_VERSION(0, 1)

/* fi_open_ops names: a domain's notification sets, an endpoint's
 * notified operations.  A later version gets a new name. */
#define FI_NRMA_DOMAIN_OPS_1 "nrma_domain_ops_1"
#define FI_NRMA_EP_OPS_1     "nrma_ep_ops_1"

/* fid.fclass of a notification set. */
#define FI_NRMA_CLASS_NSET 0x6e72

/* The most counters one set holds. */
#define FI_NRMA_NSET_MAX (UINT64_C(1) << 24)

struct fi_nrma_nset_attr {
	uint64_t count; /* counters, 1 to FI_NRMA_NSET_MAX */
	uint64_t flags; /* 0 */
};

/*
 * What initiators need to notify a set: send it to them as bytes (it has
 * no pointers).  count lets an initiator refuse a bad index at once.
 */
struct fi_nrma_nset_desc {
	uint64_t key;
	uint64_t count;
};

struct fi_nrma_ops_nset;

/* A notification set; fi_close(&nset->fid) closes it. */
struct fid_nrma_nset {
	struct fid fid;
	struct fi_nrma_ops_nset *ops;
};

struct fi_nrma_ops_nset {
	size_t size;
	int (*desc)(struct fid_nrma_nset *nset, struct fi_nrma_nset_desc *desc);
	int (*read)(struct fid_nrma_nset *nset, uint64_t index,
		    uint64_t *value);
	int (*reset)(struct fid_nrma_nset *nset, uint64_t index, uint64_t *old);
	int (*wait)(struct fid_nrma_nset *nset, uint64_t index,
		    uint64_t threshold, int timeout);
	int (*waitsome)(struct fid_nrma_nset *nset, uint64_t first,
			uint64_t count, int timeout, uint64_t *index);
	int (*grow)(struct fid_nrma_nset *nset, uint64_t count);
};

struct fi_nrma_ops_domain {
	size_t size;
	int (*nset_open)(struct fid_domain *domain,
			 const struct fi_nrma_nset_attr *attr,
			 struct fid_nrma_nset **nset, void *context);
};

/* What a notification does to its counter. */
enum fi_nrma_notify_op {
	FI_NRMA_NOTIFY_INC, /* +1 (MPI-5.1, GASPI) */
	FI_NRMA_NOTIFY_ADD, /* +value (OpenSHMEM's SHMEM_SIGNAL_ADD) */
};

/* Which counter of which set an operation notifies, and how. */
struct fi_nrma_notify {
	struct fi_nrma_nset_desc set;
	uint64_t index;
	enum fi_nrma_notify_op op;
	uint64_t value; /* FI_NRMA_NOTIFY_ADD */
};

struct fi_nrma_ops_ep {
	size_t size;
	ssize_t (*writemsg)(struct fid_ep *ep, const struct fi_msg_rma *msg,
			    const struct fi_nrma_notify *notify,
			    uint64_t flags);
	ssize_t (*readmsg)(struct fid_ep *ep, const struct fi_msg_rma *msg,
			   const struct fi_nrma_notify *notify, uint64_t flags);
	ssize_t (*atomicmsg)(struct fid_ep *ep, const struct fi_msg_atomic *msg,
			     const struct fi_nrma_notify *notify,
			     uint64_t flags);
	ssize_t (*fetch_atomicmsg)(struct fid_ep *ep,
				   const struct fi_msg_atomic *msg,
				   struct fi_ioc *resultv, void **result_desc,
				   size_t result_count,
				   const struct fi_nrma_notify *notify,
				   uint64_t flags);
};

static inline int fi_nrma_domain_ops(struct fid_domain *domain,
				     struct fi_nrma_ops_domain **ops)
{
	return fi_open_ops(&domain->fid, FI_NRMA_DOMAIN_OPS_1, 0, (void **) ops,
			   NULL);
}

static inline int fi_nrma_ep_ops(struct fid_ep *ep, struct fi_nrma_ops_ep **ops)
{
	return fi_open_ops(&ep->fid, FI_NRMA_EP_OPS_1, 0, (void **) ops, NULL);
}

static inline int fi_nrma_nset_open(struct fi_nrma_ops_domain *ops,
				    struct fid_domain *domain,
				    const struct fi_nrma_nset_attr *attr,
				    struct fid_nrma_nset **nset, void *context)
{
	return ops->nset_open(domain, attr, nset, context);
}

static inline int fi_nrma_nset_desc(struct fid_nrma_nset *nset,
				    struct fi_nrma_nset_desc *desc)
{
	return nset->ops->desc(nset, desc);
}

static inline int fi_nrma_nset_read(struct fid_nrma_nset *nset, uint64_t index,
				    uint64_t *value)
{
	return nset->ops->read(nset, index, value);
}

static inline int fi_nrma_nset_reset(struct fid_nrma_nset *nset, uint64_t index,
				     uint64_t *old)
{
	return nset->ops->reset(nset, index, old);
}

static inline int fi_nrma_nset_wait(struct fid_nrma_nset *nset, uint64_t index,
				    uint64_t threshold, int timeout)
{
	return nset->ops->wait(nset, index, threshold, timeout);
}

static inline int fi_nrma_nset_waitsome(struct fid_nrma_nset *nset,
					uint64_t first, uint64_t count,
					int timeout, uint64_t *index)
{
	return nset->ops->waitsome(nset, first, count, timeout, index);
}

static inline int fi_nrma_nset_grow(struct fid_nrma_nset *nset, uint64_t count)
{
	return nset->ops->grow(nset, count);
}

/* The wrappers' common part: one segment each side; FI_READ reads. */
static inline ssize_t fi_nrma_notify_post(
	struct fi_nrma_ops_ep *ops, struct fid_ep *ep, void *buf, size_t len,
	void *desc, uint64_t data, fi_addr_t peer, uint64_t addr, uint64_t key,
	const struct fi_nrma_nset_desc *set, uint64_t index, void *context,
	uint64_t flags)
{
	struct iovec iov = { .iov_base = buf, .iov_len = len };
	struct fi_rma_iov rma = { .addr = addr, .len = len, .key = key };
	struct fi_msg_rma msg = { .msg_iov = &iov,
				  .desc = &desc,
				  .iov_count = 1,
				  .addr = peer,
				  .rma_iov = &rma,
				  .rma_iov_count = 1,
				  .context = context,
				  .data = data };
	struct fi_nrma_notify notify = { .set = *set, .index = index };

	return flags & FI_READ ?
		       ops->readmsg(ep, &msg, &notify, flags & ~FI_READ) :
		       ops->writemsg(ep, &msg, &notify, flags);
}

/* fi_write to (dest, addr, key), then +1 on counter index of set. */
static inline ssize_t fi_nrma_write_notify(
	struct fi_nrma_ops_ep *ops, struct fid_ep *ep, const void *buf,
	size_t len, void *desc, fi_addr_t dest, uint64_t addr, uint64_t key,
	const struct fi_nrma_nset_desc *set, uint64_t index, void *context)
{
	return fi_nrma_notify_post(ops, ep, (void *) buf, len, desc, 0, dest,
				   addr, key, set, index, context,
				   FI_COMPLETION);
}

/* As fi_nrma_write_notify, with remote CQ data as in fi_writedata. */
static inline ssize_t fi_nrma_writedata_notify(
	struct fi_nrma_ops_ep *ops, struct fid_ep *ep, const void *buf,
	size_t len, void *desc, uint64_t data, fi_addr_t dest, uint64_t addr,
	uint64_t key, const struct fi_nrma_nset_desc *set, uint64_t index,
	void *context)
{
	return fi_nrma_notify_post(ops, ep, (void *) buf, len, desc, data, dest,
				   addr, key, set, index, context,
				   FI_COMPLETION | FI_REMOTE_CQ_DATA);
}

/* fi_read from (src, addr, key), then +1 on counter index at the peer. */
static inline ssize_t fi_nrma_read_notify(struct fi_nrma_ops_ep *ops,
					  struct fid_ep *ep, void *buf,
					  size_t len, void *desc, fi_addr_t src,
					  uint64_t addr, uint64_t key,
					  const struct fi_nrma_nset_desc *set,
					  uint64_t index, void *context)
{
	return fi_nrma_notify_post(ops, ep, buf, len, desc, 0, src, addr, key,
				   set, index, context,
				   FI_COMPLETION | FI_READ);
}

#ifdef __cplusplus
}
#endif

#endif /* FI_EXT_NRMA_H */
