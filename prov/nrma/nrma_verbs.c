/* SPDX-License-Identifier: BSD-2-Clause */
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <arpa/inet.h>
#include <rdma/rdma_cma.h>

#include "nrma.h"
#include "nrma_proto.h"
#include "nrma_verbs.h"

struct nrma_verbs_domain {
	struct ibv_context **rdmacm_devices;
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

	if (ibv_query_device(ctx, &attr) ||
	    ibv_query_port(ctx, port, &port_attr))
		return false;
	if (ctx->device->transport_type != IBV_TRANSPORT_IB) {
		NRMA_INFO(FI_LOG_CORE, "%s: not an InfiniBand/RoCE device\n",
			  name);
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
	*limits = (struct nrma_dev_limits){
		.max_msg_size = port_attr.max_msg_sz,
		.max_qp_wr = attr.max_qp_wr,
		.max_srq_wr = attr.max_srq_wr,
		.max_sge = attr.max_sge,
		.max_srq_sge = attr.max_srq_sge,
		.max_sge_rd = attr.max_sge_rd,
		.max_cq = attr.max_cq,
		.max_qp = attr.max_qp,
		.max_mr = attr.max_mr,
		.max_qp_rd_atom = attr.max_qp_rd_atom,
		.max_cqe = attr.max_cqe,
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
		if (!probe_address(ifa, &dev) ||
		    device_known(list, n, dev.name))
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

/*
 * rdmacm creates queue pairs only with a PD of the context its ids use,
 * so the domain takes rdmacm's context for the device instead of opening
 * its own.
 */
static struct ibv_context *rdmacm_device(struct nrma_verbs_domain *vd,
					 const char *name)
{
	int n;

	vd->rdmacm_devices = rdma_get_devices(&n);
	for (int i = 0; vd->rdmacm_devices && i < n; i++)
		if (!strcmp(ibv_get_device_name(vd->rdmacm_devices[i]->device),
			    name))
			return vd->rdmacm_devices[i];
	return NULL;
}

int nrma_verbs_domain_open(const struct nrma_device *dev,
			   struct nrma_verbs_domain **vdom)
{
	struct nrma_verbs_domain *vd;
	int ret;

	vd = calloc(1, sizeof(*vd));
	if (!vd)
		return -FI_ENOMEM;
	vd->ctx = rdmacm_device(vd, dev->name);
	if (!vd->ctx) {
		ret = -FI_ENODEV;
		goto err;
	}
	vd->pd = ibv_alloc_pd(vd->ctx);
	if (!vd->pd) {
		ret = errno ? -errno : -FI_ENOMEM;
		goto err;
	}
	*vdom = vd;
	return 0;

err:
	if (vd->rdmacm_devices)
		rdma_free_devices(vd->rdmacm_devices);
	free(vd);
	NRMA_WARN(FI_LOG_DOMAIN, "cannot open %s: %s\n", dev->name,
		  fi_strerror(-ret));
	return ret;
}

bool nrma_verbs_domain_same_device(const struct nrma_verbs_domain *a,
				   const struct nrma_verbs_domain *b)
{
	return a->ctx == b->ctx;
}

int nrma_verbs_domain_event_fd(struct nrma_verbs_domain *vd)
{
	int fd = vd->ctx->async_fd;
	int flags = fcntl(fd, F_GETFL);

	if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK))
		return -errno;
	return fd;
}

static enum nrma_verbs_event_kind verbs_event_kind(enum ibv_event_type type)
{
	switch (type) {
	case IBV_EVENT_QP_FATAL:
	case IBV_EVENT_QP_REQ_ERR:
	case IBV_EVENT_QP_ACCESS_ERR:
		return NRMA_VERBS_EVENT_QP;
	case IBV_EVENT_CQ_ERR:
	case IBV_EVENT_SRQ_ERR:
		return NRMA_VERBS_EVENT_EP;
	case IBV_EVENT_DEVICE_FATAL:
		return NRMA_VERBS_EVENT_DEVICE;
	default:
		return NRMA_VERBS_EVENT_OTHER;
	}
}

int nrma_verbs_domain_event(struct nrma_verbs_domain *vd,
			    struct nrma_verbs_event *event)
{
	struct ibv_async_event ev;

	/* Never 0 on failure: *event is filled only on success. */
	if (ibv_get_async_event(vd->ctx, &ev))
		return errno == EAGAIN ? -FI_EAGAIN : errno ? -errno : -FI_EIO;
	*event = (struct nrma_verbs_event){
		.kind = verbs_event_kind(ev.event_type),
		.type = ev.event_type,
	};
	if (event->kind == NRMA_VERBS_EVENT_QP)
		event->qp_num = ev.element.qp->qp_num;
	else if (ev.event_type == IBV_EVENT_CQ_ERR)
		event->vep = ev.element.cq->cq_context;
	else if (ev.event_type == IBV_EVENT_SRQ_ERR)
		event->vep = ev.element.srq->srq_context;
	ibv_ack_async_event(&ev);
	return 0;
}

const char *nrma_verbs_event_str(int type)
{
	return ibv_event_type_str(type);
}

void nrma_verbs_domain_close(struct nrma_verbs_domain *vd)
{
	ibv_dealloc_pd(vd->pd);
	rdma_free_devices(vd->rdmacm_devices);
	free(vd);
}

bool nrma_verbs_access_local_write(uint64_t access)
{
	/* The device writes into buffers we receive into or read into;
	 * remote writes and atomics need local write permission too. */
	return access & (FI_RECV | FI_READ | FI_REMOTE_WRITE);
}

static int verbs_access(uint64_t access)
{
	int flags = 0;

	if (nrma_verbs_access_local_write(access))
		flags |= IBV_ACCESS_LOCAL_WRITE;
	if (access & FI_REMOTE_READ)
		flags |= IBV_ACCESS_REMOTE_READ;
	if (access & FI_REMOTE_WRITE)
		flags |= IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC;
	return flags;
}

static int verbs_reg(struct nrma_verbs_domain *vd, const void *buf, size_t len,
		     uint64_t iova, int flags, struct nrma_verbs_mr **vmr)
{
	struct nrma_verbs_mr *m;

	m = malloc(sizeof(*m));
	if (!m)
		return -FI_ENOMEM;
	m->mr = ibv_reg_mr_iova(vd->pd, (void *) buf, len, iova, flags);
	if (!m->mr) {
		int ret = errno ? -errno : -FI_EINVAL;

		free(m);
		NRMA_INFO(FI_LOG_MR, "ibv_reg_mr(%p, %zu): %s\n", buf, len,
			  fi_strerror(-ret));
		return ret;
	}
	*vmr = m;
	return 0;
}

int nrma_verbs_mr_reg(struct nrma_verbs_domain *vd, const void *buf, size_t len,
		      uint64_t access, struct nrma_verbs_mr **vmr,
		      uint64_t *key)
{
	int ret = verbs_reg(vd, buf, len, (uintptr_t) buf, verbs_access(access),
			    vmr);

	if (ret)
		return ret;
	/* rxe hands out rkey 0 for local-only MRs; their lkey stays unique. */
	*key = (access & (FI_REMOTE_READ | FI_REMOTE_WRITE)) ?
		       (*vmr)->mr->rkey :
		       (*vmr)->mr->lkey;
	return 0;
}

void *nrma_verbs_pages_map(size_t len, size_t *bytes)
{
	size_t page = (size_t) sysconf(_SC_PAGESIZE);
	void *mem;

	*bytes = (len + page - 1) / page * page;
	mem = mmap(NULL, *bytes, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return mem == MAP_FAILED ? NULL : mem;
}

int nrma_verbs_zero_reg(struct nrma_verbs_domain *vd, const void *buf,
			size_t len, enum nrma_verbs_zero_access access,
			struct nrma_verbs_mr **vmr, uint32_t *rkey)
{
	int flags = access == NRMA_VERBS_ZERO_ATOMIC ?
			    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_ATOMIC :
			    IBV_ACCESS_REMOTE_READ;
	struct nrma_verbs_mr *zero_mr;
	int ret;

	ret = verbs_reg(vd, buf, len, 0, flags, vmr);
	if (ret || (*vmr)->mr->rkey)
		goto out;
	/* rxe may hand out rkey 0: keep it while we take another. */
	zero_mr = *vmr;
	ret = verbs_reg(vd, buf, len, 0, flags, vmr);
	nrma_verbs_mr_dereg(zero_mr);
out:
	if (!ret)
		*rkey = (*vmr)->mr->rkey;
	return ret;
}

int nrma_verbs_mr_dereg(struct nrma_verbs_mr *vmr)
{
	int ret = ibv_dereg_mr(vmr->mr);

	if (ret)
		return -ret;
	free(vmr);
	return 0;
}

const int nrma_verbs_status_rem_access = IBV_WC_REM_ACCESS_ERR;
const int nrma_verbs_status_flushed = IBV_WC_WR_FLUSH_ERR;

int nrma_verbs_status_errno(int status)
{
	switch (status) {
	case IBV_WC_WR_FLUSH_ERR:
		return FI_ECANCELED;
	case IBV_WC_LOC_PROT_ERR:
	case IBV_WC_REM_ACCESS_ERR:
		return FI_EACCES;
	case IBV_WC_LOC_LEN_ERR:
	case IBV_WC_REM_INV_REQ_ERR:
		return FI_EINVAL;
	case IBV_WC_RETRY_EXC_ERR:
	case IBV_WC_RNR_RETRY_EXC_ERR:
		return FI_ETIMEDOUT;
	default:
		return FI_EIO;
	}
}

const char *nrma_verbs_status_str(int prov_errno)
{
	return ibv_wc_status_str((enum ibv_wc_status) prov_errno);
}

uint32_t nrma_verbs_mr_lkey(const struct nrma_verbs_mr *vmr)
{
	return vmr->mr->lkey;
}

struct nrma_verbs_ep {
	struct ibv_comp_channel *channel;
	struct ibv_cq *cq;
	struct ibv_srq *srq;
	bool armed; /* an event may wait on the channel */
};

int nrma_verbs_ep_open(struct nrma_verbs_domain *vd, size_t cq_size,
		       size_t srq_size, struct nrma_verbs_ep **vep)
{
	struct ibv_srq_init_attr srq_attr = {
		.attr = { .max_wr = srq_size, .max_sge = 1 },
	};
	struct nrma_verbs_ep *ve;
	int ret;

	ve = calloc(1, sizeof(*ve));
	if (!ve)
		return -FI_ENOMEM;
	srq_attr.srq_context = ve; /* device events name it */
	ve->channel = ibv_create_comp_channel(vd->ctx);
	if (!ve->channel)
		goto err;
	/* Channel events are consumed by progress, never waited for. */
	if (fcntl(ve->channel->fd, F_SETFL, O_NONBLOCK))
		goto err;
	ve->cq = ibv_create_cq(vd->ctx, cq_size, ve, ve->channel, 0);
	if (!ve->cq)
		goto err;
	ve->srq = ibv_create_srq(vd->pd, &srq_attr);
	if (!ve->srq)
		goto err;
	*vep = ve;
	return 0;
err:
	ret = errno ? -errno : -FI_ENOMEM;
	NRMA_WARN(FI_LOG_EP_CTRL,
		  "verbs endpoint resources (CQ %zu, SRQ %zu): %s\n", cq_size,
		  srq_size, fi_strerror(-ret));
	nrma_verbs_ep_close(ve);
	return ret;
}

void nrma_verbs_ep_close(struct nrma_verbs_ep *ve)
{
	if (ve->srq)
		ibv_destroy_srq(ve->srq);
	if (ve->cq)
		ibv_destroy_cq(ve->cq);
	if (ve->channel)
		ibv_destroy_comp_channel(ve->channel);
	free(ve);
}

int nrma_verbs_ep_fd(const struct nrma_verbs_ep *ve)
{
	return ve->channel->fd;
}

int nrma_verbs_ep_arm(struct nrma_verbs_ep *ve)
{
	int ret = -ibv_req_notify_cq(ve->cq, 0);

	ve->armed = ve->armed || !ret;
	return ret;
}

/*
 * An unarmed CQ raises no event: polls skip the read, a system call each.
 * One armed raises at most one, and needs arming again after it.
 */
void nrma_verbs_ep_ack_events(struct nrma_verbs_ep *ve)
{
	struct ibv_cq *cq;
	void *context;

	if (!ve->armed)
		return;
	while (!ibv_get_cq_event(ve->channel, &cq, &context)) {
		ibv_ack_cq_events(cq, 1);
		ve->armed = false;
	}
}

int nrma_verbs_poll(struct nrma_verbs_ep *ve, struct nrma_wc *wc, int count)
{
	int n = ibv_poll_cq(ve->cq, count, (struct ibv_wc *) wc);

	return n < 0 ? -FI_EIO : n;
}

/* rdmacm owns the QP: it moves it through its states as the id connects. */
struct nrma_verbs_qp {
	struct rdma_cm_id *id;
	size_t max_inline;
};

/*
 * Inline data saves a small write its bounce copy and key; asked for up to
 * this many bytes, and not at all where the device offers none.
 */
#define NRMA_VERBS_INLINE_WANT 64

int nrma_verbs_qp_create(struct nrma_verbs_ep *ve, struct nrma_verbs_domain *vd,
			 struct rdma_cm_id *id, size_t sq_depth, size_t max_sge,
			 struct nrma_verbs_qp **qpp)
{
	struct ibv_qp_init_attr attr = {
		.send_cq = ve->cq,
		.recv_cq = ve->cq,
		.srq = ve->srq,
		.qp_type = IBV_QPT_RC,
		.sq_sig_all = 0, /* nrma_verbs_post signals a chain's last */
		.cap = {
			.max_send_wr = sq_depth,
			.max_send_sge = max_sge,
			.max_inline_data = NRMA_VERBS_INLINE_WANT,
		},
	};
	struct nrma_verbs_qp *qp = malloc(sizeof(*qp));
	int ret = 0;

	if (!qp)
		return -FI_ENOMEM;
	if (rdma_create_qp(id, vd->pd, &attr)) {
		attr.cap.max_inline_data = 0;
		ret = rdma_create_qp(id, vd->pd, &attr) ? -errno : 0;
	}
	if (ret) {
		free(qp);
		return ret;
	}
	qp->id = id;
	/* What the device granted, which may be more than asked. */
	qp->max_inline = attr.cap.max_inline_data;
	*qpp = qp;
	return 0;
}

void nrma_verbs_qp_destroy(struct nrma_verbs_qp *qp)
{
	rdma_destroy_qp(qp->id);
	free(qp);
}

uint32_t nrma_verbs_qp_num(const struct nrma_verbs_qp *qp)
{
	return qp->id->qp->qp_num;
}

size_t nrma_verbs_qp_max_inline(const struct nrma_verbs_qp *qp)
{
	return qp->max_inline;
}

/* A full send queue reads as -FI_EAGAIN: retry after progress. */
static int post_result(int ret)
{
	return ret == ENOMEM ? -FI_EAGAIN : -ret;
}

int nrma_verbs_post(struct nrma_verbs_qp *qp, struct nrma_wr_chain *c,
		    uint64_t wr_id, uint64_t last_id, size_t *posted)
{
	struct ibv_send_wr *bad = NULL;
	size_t last = c->count - 1;
	int ret;

	*posted = 0;
	for (size_t i = 0; i < last; i++) {
		c->wr[i].wr_id = wr_id;
		c->wr[i].next = &c->wr[i + 1];
	}
	c->wr[last].wr_id = last_id;
	c->wr[last].next = NULL;
	c->wr[last].send_flags |= IBV_SEND_SIGNALED;
	ret = ibv_post_send(qp->id->qp, c->wr, &bad);
	if (!ret)
		*posted = c->count;
	else if (bad)
		*posted = (size_t) (bad - c->wr);
	return post_result(ret);
}

/* In the error state, every work request still queued completes, flushed. */
int nrma_verbs_qp_flush(struct nrma_verbs_qp *qp)
{
	struct ibv_qp_attr attr = { .qp_state = IBV_QPS_ERR };

	return -ibv_modify_qp(qp->id->qp, &attr, IBV_QP_STATE);
}

int nrma_verbs_post_srq_recv(struct nrma_verbs_ep *ve, uint64_t wr_id,
			     const struct nrma_sge *sge)
{
	struct ibv_recv_wr wr = {
		.wr_id = wr_id,
		.sg_list = (struct ibv_sge *) sge, /* the device only reads it */
		.num_sge = 1,
	}, *bad;

	return post_result(ibv_post_srq_recv(ve->srq, &wr, &bad));
}
