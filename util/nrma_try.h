/* SPDX-License-Identifier: BSD-2-Clause */
/* What the tools in util/ share: a libfabric call that must succeed. */
#ifndef NRMA_TRY_H
#define NRMA_TRY_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <string.h>
#include <time.h>

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_ext_nrma.h>

/* Exits, naming the call and its error, unless call returns 0. */
#define TRY(call)                                                              \
	do {                                                                   \
		int rc_ = (int) (call);                                        \
		if (rc_) {                                                     \
			fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, \
				#call, fi_strerror(-rc_));                     \
			exit(1);                                               \
		}                                                              \
	} while (0)

/* Seconds on the monotonic clock. */
static inline double try_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

/*
 * The remote address of the first byte of a registration at buf: buf
 * under FI_MR_VIRT_ADDR, else offset 0 (fi_mr(3)).
 */
static inline uint64_t try_mr_base(const struct fi_info *info, const void *buf)
{
	return info->domain_attr->mr_mode & FI_MR_VIRT_ADDR ? (uintptr_t) buf :
							      0;
}

/* An nrma RDM endpoint with its AV and CQ, as the tools use one. */
struct try_node {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	struct fid_cq *cq;
	struct fid_ep *ep;
};

/* nrma's fabric and domain for caps (and FI_RMA_EVENT if asked). */
static inline void try_domain_open(struct try_node *n, uint64_t caps)
{
	struct fi_info *hints = fi_allocinfo();

	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = caps;
	hints->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED |
				      FI_MR_PROV_KEY;
	hints->fabric_attr->prov_name = strdup(FI_NRMA_PROV_NAME_NATIVE);
	TRY(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &n->info));
	fi_freeinfo(hints);
	TRY(fi_fabric(n->info->fabric_attr, &n->fabric, NULL));
	TRY(fi_domain(n->fabric, n->info, &n->domain, NULL));
}

/* The endpoint, its AV and a CQ of cq_size context entries, bound; the
 * caller binds anything else and enables it. */
static inline void try_ep_open(struct try_node *n, size_t cq_size)
{
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_CONTEXT,
				      .size = cq_size };
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE };

	TRY(fi_av_open(n->domain, &av_attr, &n->av, NULL));
	TRY(fi_cq_open(n->domain, &cq_attr, &n->cq, NULL));
	TRY(fi_endpoint(n->domain, n->info, &n->ep, NULL));
	TRY(fi_ep_bind(n->ep, &n->av->fid, 0));
	TRY(fi_ep_bind(n->ep, &n->cq->fid, FI_TRANSMIT | FI_RECV));
}

/* Closes what try_ep_open opened. */
static inline void try_ep_close(struct try_node *n)
{
	TRY(fi_close(&n->ep->fid));
	TRY(fi_close(&n->cq->fid));
	TRY(fi_close(&n->av->fid));
}

/* Closes what try_domain_open opened. */
static inline void try_domain_close(struct try_node *n)
{
	TRY(fi_close(&n->domain->fid));
	TRY(fi_close(&n->fabric->fid));
	fi_freeinfo(n->info);
}

static inline void try_node_close(struct try_node *n)
{
	try_ep_close(n);
	try_domain_close(n);
}

#endif /* NRMA_TRY_H */
