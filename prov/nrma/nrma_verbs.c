/* SPDX-License-Identifier: BSD-2-Clause */
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "nrma.h"
#include "nrma_verbs.h"

struct nrma_verbs_domain {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
};

struct nrma_verbs_mr {
	struct ibv_mr *mr;
};

static bool device_usable(struct ibv_context *ctx, uint8_t port,
			  struct nrma_dev_limits *limits)
{
	struct ibv_device_attr attr;
	struct ibv_port_attr port_attr;
	const char *name = ibv_get_device_name(ctx->device);

	if (ibv_query_device(ctx, &attr) || ibv_query_port(ctx, port, &port_attr))
		return false;
	if (ctx->device->transport_type != IBV_TRANSPORT_IB) {
		NRMA_INFO(FI_LOG_CORE, "%s: not an InfiniBand/RoCE device\n", name);
		return false;
	}
	if (attr.atomic_cap == IBV_ATOMIC_NONE) {
		NRMA_INFO(FI_LOG_CORE, "%s: no 64-bit atomics\n", name);
		return false;
	}
	if (port_attr.state != IBV_PORT_ACTIVE) {
		NRMA_INFO(FI_LOG_CORE, "%s port %u: not active\n", name, port);
		return false;
	}
	*limits = (struct nrma_dev_limits) {
		.max_msg_size = port_attr.max_msg_sz,
		.max_qp_wr = attr.max_qp_wr,
		.max_srq_wr = attr.max_srq_wr,
		.max_sge = attr.max_sge,
		.max_srq_sge = attr.max_srq_sge,
		.max_sge_rd = attr.max_sge_rd,
		.max_cq = attr.max_cq,
		.max_qp = attr.max_qp,
		.max_mr = attr.max_mr,
	};
	return true;
}

/*
 * rdmacm is the authority on which device an IP address belongs to: bind a
 * throwaway id to the address and look at the device it lands on.
 */
static bool probe_address(const struct ifaddrs *ifa, struct nrma_device *dev)
{
	struct rdma_cm_id *id;
	bool found = false;

	if (rdma_create_id(NULL, &id, NULL, RDMA_PS_TCP))
		return false;
	if (!rdma_bind_addr(id, ifa->ifa_addr) && id->verbs &&
	    device_usable(id->verbs, id->port_num, &dev->limits)) {
		snprintf(dev->name, sizeof(dev->name), "%s",
			 ibv_get_device_name(id->verbs->device));
		dev->port_num = id->port_num;
		memcpy(&dev->addr, ifa->ifa_addr, sizeof(dev->addr));
		memcpy(&dev->netmask, ifa->ifa_netmask, sizeof(dev->netmask));
		found = true;
	}
	rdma_destroy_id(id);
	return found;
}

static bool device_known(const struct nrma_device *devs, size_t count,
			 const char *name)
{
	for (size_t i = 0; i < count; i++)
		if (!strcmp(devs[i].name, name))
			return true;
	return false;
}

int nrma_verbs_discover(struct nrma_device **devs, size_t *count)
{
	struct ifaddrs *ifaddrs, *ifa;
	struct nrma_device dev, *list = NULL, *grown;
	size_t n = 0;

	if (getifaddrs(&ifaddrs))
		return -errno;
	for (ifa = ifaddrs; ifa; ifa = ifa->ifa_next) {
		if (!ifa->ifa_addr || ifa->ifa_addr->sa_family != AF_INET ||
		    !ifa->ifa_netmask || (ifa->ifa_flags & IFF_LOOPBACK) ||
		    !(ifa->ifa_flags & IFF_UP))
			continue;
		if (!probe_address(ifa, &dev) || device_known(list, n, dev.name))
			continue;
		grown = realloc(list, (n + 1) * sizeof(*list));
		if (!grown) {
			free(list);
			freeifaddrs(ifaddrs);
			return -ENOMEM;
		}
		list = grown;
		list[n++] = dev;
		NRMA_INFO(FI_LOG_CORE, "using %s port %u (interface %s)\n",
			  dev.name, dev.port_num, ifa->ifa_name);
	}
	freeifaddrs(ifaddrs);
	*devs = list;
	*count = n;
	return 0;
}

static struct ibv_context *open_device_by_name(const char *name)
{
	struct ibv_device **list;
	struct ibv_context *ctx = NULL;
	int n;

	list = ibv_get_device_list(&n);
	if (!list)
		return NULL;
	for (int i = 0; i < n && !ctx; i++)
		if (!strcmp(ibv_get_device_name(list[i]), name))
			ctx = ibv_open_device(list[i]);
	ibv_free_device_list(list);
	return ctx;
}

int nrma_verbs_domain_open(const struct nrma_device *dev,
			   struct nrma_verbs_domain **vdom)
{
	struct nrma_verbs_domain *vd;
	int ret;

	vd = calloc(1, sizeof(*vd));
	if (!vd)
		return -FI_ENOMEM;
	vd->ctx = open_device_by_name(dev->name);
	if (!vd->ctx) {
		ret = errno ? -errno : -FI_ENODEV;
		goto err_free;
	}
	vd->pd = ibv_alloc_pd(vd->ctx);
	if (!vd->pd) {
		ret = errno ? -errno : -FI_ENOMEM;
		goto err_close;
	}
	*vdom = vd;
	return 0;

err_close:
	ibv_close_device(vd->ctx);
err_free:
	free(vd);
	NRMA_WARN(FI_LOG_DOMAIN, "cannot open %s: %s\n", dev->name,
		  fi_strerror(-ret));
	return ret;
}

void nrma_verbs_domain_close(struct nrma_verbs_domain *vd)
{
	ibv_dealloc_pd(vd->pd);
	ibv_close_device(vd->ctx);
	free(vd);
}

static int verbs_access(uint64_t access)
{
	int flags = 0;

	/* The device writes into buffers we receive into or read into. */
	if (access & (FI_RECV | FI_READ))
		flags |= IBV_ACCESS_LOCAL_WRITE;
	if (access & FI_REMOTE_READ)
		flags |= IBV_ACCESS_REMOTE_READ;
	/* Remote writes and atomics both need local write permission. */
	if (access & FI_REMOTE_WRITE)
		flags |= IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC |
			 IBV_ACCESS_LOCAL_WRITE;
	return flags;
}

int nrma_verbs_mr_reg(struct nrma_verbs_domain *vd, const void *buf,
		      size_t len, uint64_t access, struct nrma_verbs_mr **vmr,
		      uint64_t *key)
{
	struct nrma_verbs_mr *m;

	m = malloc(sizeof(*m));
	if (!m)
		return -FI_ENOMEM;
	m->mr = ibv_reg_mr(vd->pd, (void *) buf, len, verbs_access(access));
	if (!m->mr) {
		int ret = errno ? -errno : -FI_EINVAL;

		free(m);
		NRMA_INFO(FI_LOG_MR, "ibv_reg_mr(%p, %zu): %s\n", buf, len,
			  fi_strerror(-ret));
		return ret;
	}
	/* rxe hands out rkey 0 for local-only MRs; their lkey stays unique. */
	*key = (access & (FI_REMOTE_READ | FI_REMOTE_WRITE)) ? m->mr->rkey :
							       m->mr->lkey;
	*vmr = m;
	return 0;
}

int nrma_verbs_mr_dereg(struct nrma_verbs_mr *vmr)
{
	int ret = ibv_dereg_mr(vmr->mr);

	if (ret)
		return -ret;
	free(vmr);
	return 0;
}

const char *nrma_verbs_status_str(int prov_errno)
{
	return ibv_wc_status_str((enum ibv_wc_status) prov_errno);
}
