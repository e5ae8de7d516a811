/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fi_info for each usable device, and matching of application hints as
 * fi_getinfo(3) describes them.  Nothing here touches verbs: device limits
 * arrive in struct nrma_device, which keeps this file unit-testable.
 */
#include <arpa/inet.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nrma.h"
#include "nrma_proto.h"

/* What works today; later features add their bits here. */
#define NRMA_DOMAIN_CAPS (FI_LOCAL_COMM | FI_REMOTE_COMM)
#define NRMA_TX_CAPS                                                   \
	(FI_MSG | FI_TAGGED | FI_RMA | FI_ATOMIC | FI_SEND | FI_READ | \
	 FI_WRITE | FI_FENCE | FI_NAMED_RX_CTX | FI_TRIGGER)
#define NRMA_RX_CAPS                                                          \
	(FI_MSG | FI_TAGGED | FI_RMA | FI_ATOMIC | FI_RECV | FI_REMOTE_READ | \
	 FI_REMOTE_WRITE | FI_RMA_EVENT | FI_SOURCE | FI_MULTI_RECV |         \
	 FI_DIRECTED_RECV)
/* RC executes an endpoint's requests in order at the target. */
#define NRMA_MSG_ORDER \
	(FI_ORDER_SAS | FI_ORDER_RAW | FI_ORDER_WAW | FI_ORDER_SAW)
#define NRMA_CAPS (NRMA_DOMAIN_CAPS | NRMA_TX_CAPS | NRMA_RX_CAPS)
/* A connected endpoint has one peer: no sources to tell or direct by. */
#define NRMA_MSG_EP_NO_CAPS                                         \
	(FI_SOURCE | FI_DIRECTED_RECV | NRMA_TAGGED_DIRECTED_RECV | \
	 NRMA_EXACT_DIRECTED_RECV)
/*
 * libfabric 2.0's receive capabilities, offered only when asked: directed
 * receives that may not take FI_ADDR_UNSPEC would refuse what others
 * post, and the tagged-only ones are what FI_DIRECTED_RECV and
 * FI_MULTI_RECV already cover for whoever does not ask (nor do 2.x's
 * fabtests expect them unasked).
 */
#define NRMA_CAPS_ASKED_ONLY                                    \
	(NRMA_EXACT_DIRECTED_RECV | NRMA_TAGGED_DIRECTED_RECV | \
	 NRMA_TAGGED_MULTI_RECV)

/*
 * Registrations have provider keys (a slot of the key table, which
 * initiators read), and peers address them by offset, or by virtual
 * address under FI_MR_BASIC.  An application that does without either
 * bit gets what it can do: keys it picks, below mr_cnt (nrma_key_wire,
 * two bytes), and memory that verbs pins when it is registered.
 */
#define NRMA_MR_REQUIRED     (FI_MR_ALLOCATED | FI_MR_PROV_KEY)
#define NRMA_MR_APP_KEY_SIZE sizeof(uint16_t)
#define NRMA_RMA_TARGET_CAPS \
	(FI_RMA | FI_ATOMIC | FI_REMOTE_READ | FI_REMOTE_WRITE)
/* What goes when an application's mr_mode rules RMA out. */
#define NRMA_RMA_CAPS                                             \
	(FI_RMA | FI_ATOMIC | FI_RMA_EVENT | FI_READ | FI_WRITE | \
	 FI_REMOTE_READ | FI_REMOTE_WRITE | FI_FENCE)

#define NRMA_TAG_GENERIC 0xAAAAAAAAAAAAAAAAULL

#define NRMA_MR_KEY_SIZE  sizeof(uint64_t)
#define NRMA_CQ_DATA_SIZE sizeof(uint32_t) /* verbs immediate data */

static size_t min_size(size_t a, size_t b)
{
	return a < b ? a : b;
}

/* The mr_mode bits an application with these caps must support. */
static uint64_t mr_mode_required(uint64_t caps)
{
	return (caps & NRMA_RMA_TARGET_CAPS) ? NRMA_MR_REQUIRED : 0;
}

int nrma_attr_fabric_name(const struct sockaddr_in *addr,
			  const struct sockaddr_in *netmask, char *buf,
			  size_t len)
{
	struct in_addr net = {
		.s_addr = addr->sin_addr.s_addr & netmask->sin_addr.s_addr,
	};
	char ip[INET_ADDRSTRLEN];
	int prefix = __builtin_popcount(netmask->sin_addr.s_addr);
	int n;

	if (!inet_ntop(AF_INET, &net, ip, sizeof(ip)))
		return -FI_EINVAL;
	n = snprintf(buf, len, "%s/%d", ip, prefix);
	return (n < 0 || (size_t) n >= len) ? -FI_ETOOSMALL : 0;
}

/* At most what MR keys can name (nrma_proto.h). */
size_t nrma_attr_mr_cnt(const struct nrma_device *dev)
{
	return min_size(min_size(dev->limits.max_mr, nrma_params.mr_max),
			NRMA_KEY_SLOTS_MAX);
}

static void fill_attrs(struct fi_info *info, const struct nrma_device *dev,
		       enum fi_ep_type type)
{
	const struct nrma_dev_limits *lim = &dev->limits;
	uint64_t no_caps = type == FI_EP_MSG ? NRMA_MSG_EP_NO_CAPS : 0;

	info->caps = NRMA_CAPS & ~no_caps;
	info->mode = 0;
	info->addr_format = FI_SOCKADDR_IN;

	info->tx_attr->caps = NRMA_TX_CAPS;
	info->tx_attr->msg_order = NRMA_MSG_ORDER;
	info->tx_attr->comp_order = NRMA_ORDER_NONE;
	info->tx_attr->inject_size = nrma_params.eager_size;
	info->tx_attr->size = min_size(nrma_params.tx_size, lim->max_qp_wr);
	info->tx_attr->iov_limit = min_size(NRMA_IOV_LIMIT, lim->max_sge);
	info->tx_attr->rma_iov_limit = 1; /* one remote address per WR */

	info->rx_attr->caps = NRMA_RX_CAPS & ~no_caps;
	info->rx_attr->msg_order = NRMA_MSG_ORDER;
	info->rx_attr->comp_order = NRMA_ORDER_NONE;
	info->rx_attr->size = min_size(nrma_params.rx_size, lim->max_srq_wr);
	/* A rendezvous read scatters into the receive: max_sge_rd bounds it. */
	info->rx_attr->iov_limit = min_size(NRMA_IOV_LIMIT, lim->max_sge_rd);

	info->ep_attr->type = type;
	info->ep_attr->protocol = FI_PROTO_UNSPEC;
	info->ep_attr->protocol_version = NRMA_PROTOCOL_VERSION;
	info->ep_attr->max_msg_size = lim->max_msg_size;
	info->ep_attr->max_order_raw_size = lim->max_msg_size;
	info->ep_attr->max_order_waw_size = lim->max_msg_size;
	/* All 64 tag bits are matched: libfabric's generic tag format. */
	info->ep_attr->mem_tag_format = NRMA_TAG_GENERIC;
	info->ep_attr->tx_ctx_cnt = 1;
	info->ep_attr->rx_ctx_cnt = 1;

	info->domain_attr->caps = NRMA_DOMAIN_CAPS;
	info->domain_attr->threading = FI_THREAD_SAFE;
	info->domain_attr->control_progress = FI_PROGRESS_AUTO;
	info->domain_attr->data_progress = FI_PROGRESS_MANUAL;
	info->domain_attr->resource_mgmt = FI_RM_ENABLED;
	info->domain_attr->av_type = FI_AV_UNSPEC;
	info->domain_attr->mr_mode = mr_mode_required(NRMA_CAPS);
	info->domain_attr->mr_key_size = NRMA_MR_KEY_SIZE;
	info->domain_attr->cq_data_size = NRMA_CQ_DATA_SIZE;
	info->domain_attr->cq_cnt = lim->max_cq;
	info->domain_attr->ep_cnt = lim->max_qp;
	info->domain_attr->tx_ctx_cnt = lim->max_qp;
	info->domain_attr->rx_ctx_cnt = lim->max_qp;
	/* Scalable endpoints (RDM): contexts each way, an endpoint's worth
	 * of resources each. */
	info->domain_attr->max_ep_tx_ctx =
		type == FI_EP_RDM ? NRMA_SEP_CTX_MAX : 1;
	info->domain_attr->max_ep_rx_ctx = info->domain_attr->max_ep_tx_ctx;
	/* An endpoint may share one transmit and one receive context. */
	info->domain_attr->max_ep_stx_ctx = 1;
	info->domain_attr->max_ep_srx_ctx = 1;
	info->domain_attr->cntr_cnt = nrma_params.cntr_max;
	info->domain_attr->mr_iov_limit = 1; /* a verbs MR is contiguous */
	info->domain_attr->mr_cnt = nrma_attr_mr_cnt(dev);
}

struct fi_info *nrma_attr_info_alloc(const struct nrma_device *dev,
				     enum fi_ep_type type)
{
	struct fi_info *info;
	char fabric[64];

	if (nrma_attr_fabric_name(&dev->addr, &dev->netmask, fabric,
				  sizeof(fabric)))
		return NULL;
	info = fi_allocinfo();
	if (!info)
		return NULL;
	fill_attrs(info, dev, type);
	info->fabric_attr->name = strdup(fabric);
	info->fabric_attr->prov_version = NRMA_PROV_VERSION;
	info->domain_attr->name = strdup(dev->name);
	if (!info->fabric_attr->name || !info->domain_attr->name) {
		fi_freeinfo(info);
		return NULL;
	}
	return info;
}

/* Hint matching: each returns true when the hints cannot be met. */

static bool exceeds(size_t want, size_t have)
{
	return want > have;
}

static bool mode_unmet(uint64_t required, uint64_t offered)
{
	return required & ~offered;
}

/*
 * Whether an application's mr_mode lets us be an RMA target: from 1.5 on
 * any set of bits does (NRMA_MR_REQUIRED).
 */
static bool mr_mode_allows_rma(uint32_t version, int user_mode)
{
	/* Before 1.5 mr_mode is an enum; BASIC is what we do. */
	if (FI_VERSION_LT(version, FI_VERSION(1, 5)))
		return user_mode == NRMA_MR_UNSPEC ||
		       user_mode == NRMA_MR_BASIC;
	return user_mode == NRMA_MR_BASIC ||
	       !(user_mode & (NRMA_MR_BASIC | NRMA_MR_SCALABLE));
}

/* Whether an RMA target with this mr_mode takes the application's keys. */
static bool mr_mode_app_keys(uint32_t version, uint64_t caps, int mr_mode)
{
	return FI_VERSION_GE(version, FI_VERSION(1, 5)) &&
	       mr_mode != NRMA_MR_BASIC && (caps & NRMA_RMA_TARGET_CAPS) &&
	       !(mr_mode & FI_MR_PROV_KEY);
}

bool nrma_attr_app_keys(uint32_t version, const struct fi_info *info)
{
	return mr_mode_app_keys(version, info->caps,
				info->domain_attr->mr_mode);
}

static size_t mr_key_size(uint32_t version, uint64_t caps, int mr_mode)
{
	return mr_mode_app_keys(version, caps ? caps : NRMA_CAPS, mr_mode) ?
		       NRMA_MR_APP_KEY_SIZE :
		       NRMA_MR_KEY_SIZE;
}

/*
 * An application that cannot do our mr_mode still gets messaging when it
 * did not ask for RMA by name: caps 0 means "whatever you offer".
 */
static bool mr_mode_unmet(uint32_t version, uint64_t caps, int user_mode)
{
	if (FI_VERSION_GE(version, FI_VERSION(1, 5)) &&
	    (user_mode & (NRMA_MR_BASIC | NRMA_MR_SCALABLE)) &&
	    user_mode != NRMA_MR_BASIC)
		return true;
	if (FI_VERSION_LT(version, FI_VERSION(1, 5)) &&
	    !mr_mode_allows_rma(version, user_mode))
		return true;
	return (caps & NRMA_RMA_TARGET_CAPS) &&
	       !mr_mode_allows_rma(version, user_mode);
}

static bool name_differs(const char *want, const char *have)
{
	return want && strcmp(want, have);
}

/* Data progress is either: automatic runs the domain's thread. */
static bool data_progress_unmet(enum fi_progress want)
{
	return want != FI_PROGRESS_UNSPEC && want != FI_PROGRESS_AUTO &&
	       want != FI_PROGRESS_MANUAL;
}

static bool domain_unmet(uint32_t version, const struct fi_domain_attr *prov,
			 const struct fi_domain_attr *want, uint64_t caps)
{
	return name_differs(want->name, prov->name) ||
	       data_progress_unmet(want->data_progress) ||
	       (want->av_type != FI_AV_UNSPEC && want->av_type != FI_AV_MAP &&
		want->av_type != FI_AV_TABLE) ||
	       mr_mode_unmet(version, caps, want->mr_mode) ||
	       exceeds(want->mr_key_size,
		       mr_key_size(version, caps, want->mr_mode)) ||
	       exceeds(want->cq_data_size, prov->cq_data_size) ||
	       exceeds(want->cq_cnt, prov->cq_cnt) ||
	       exceeds(want->ep_cnt, prov->ep_cnt) ||
	       exceeds(want->tx_ctx_cnt, prov->tx_ctx_cnt) ||
	       exceeds(want->rx_ctx_cnt, prov->rx_ctx_cnt) ||
	       exceeds(want->max_ep_tx_ctx, prov->max_ep_tx_ctx) ||
	       exceeds(want->max_ep_rx_ctx, prov->max_ep_rx_ctx) ||
	       exceeds(want->max_ep_stx_ctx, prov->max_ep_stx_ctx) ||
	       exceeds(want->max_ep_srx_ctx, prov->max_ep_srx_ctx) ||
	       exceeds(want->cntr_cnt, prov->cntr_cnt) ||
	       exceeds(want->mr_iov_limit, prov->mr_iov_limit) ||
	       exceeds(want->mr_cnt, prov->mr_cnt) ||
	       exceeds(want->max_err_data, prov->max_err_data) ||
	       exceeds(want->auth_key_size, 0) ||
	       mode_unmet(want->caps, prov->caps) ||
	       mode_unmet(prov->mode, want->mode);
}

/* A context count: up to ours, or a shared context. */
static bool ctx_cnt_unmet(size_t want, size_t have)
{
	return want != FI_SHARED_CONTEXT && exceeds(want, have);
}

static bool ep_unmet(const struct fi_ep_attr *prov,
		     const struct fi_ep_attr *want, size_t max_tx,
		     size_t max_rx)
{
	return (want->type != FI_EP_UNSPEC && want->type != prov->type) ||
	       (want->protocol != FI_PROTO_UNSPEC &&
		want->protocol != prov->protocol) ||
	       exceeds(want->protocol_version, prov->protocol_version) ||
	       exceeds(want->max_msg_size, prov->max_msg_size) ||
	       exceeds(want->max_order_raw_size, prov->max_order_raw_size) ||
	       exceeds(want->max_order_war_size, prov->max_order_war_size) ||
	       exceeds(want->max_order_waw_size, prov->max_order_waw_size) ||
	       ctx_cnt_unmet(want->tx_ctx_cnt, max_tx) ||
	       ctx_cnt_unmet(want->rx_ctx_cnt, max_rx) ||
	       exceeds(want->auth_key_size, 0);
}

/*
 * Receive bits in a transmit context's caps, and transmit bits in a
 * receive context's, mean nothing there: applications copy the
 * endpoint's caps into both (Sandia OpenSHMEM does), as libfabric's own
 * providers allow.
 */
#define NRMA_TX_IGNORED_CAPS                                         \
	(FI_RECV | FI_REMOTE_READ | FI_REMOTE_WRITE | FI_RMA_EVENT | \
	 FI_SOURCE | FI_MULTI_RECV | FI_DIRECTED_RECV)
#define NRMA_RX_IGNORED_CAPS \
	(FI_SEND | FI_READ | FI_WRITE | FI_FENCE | FI_TRIGGER | FI_NAMED_RX_CTX)

static bool tx_unmet(const struct fi_tx_attr *prov,
		     const struct fi_tx_attr *want)
{
	return mode_unmet(want->caps & ~NRMA_TX_IGNORED_CAPS,
			  prov->caps | NRMA_DOMAIN_CAPS) ||
	       mode_unmet(prov->mode, want->mode) ||
	       mode_unmet(want->op_flags, NRMA_TX_OP_FLAGS) ||
	       mode_unmet(want->msg_order, prov->msg_order) ||
	       mode_unmet(want->comp_order, prov->comp_order) ||
	       exceeds(want->inject_size, prov->inject_size) ||
	       exceeds(want->size, prov->size) ||
	       exceeds(want->iov_limit, prov->iov_limit) ||
	       exceeds(want->rma_iov_limit, prov->rma_iov_limit);
}

static bool rx_unmet(const struct fi_rx_attr *prov,
		     const struct fi_rx_attr *want, uint64_t asked_only)
{
	return mode_unmet(want->caps & ~NRMA_RX_IGNORED_CAPS,
			  prov->caps | NRMA_DOMAIN_CAPS | asked_only) ||
	       mode_unmet(prov->mode, want->mode) ||
	       mode_unmet(want->op_flags, NRMA_RX_OP_FLAGS) ||
	       mode_unmet(want->msg_order, prov->msg_order) ||
	       mode_unmet(want->comp_order, prov->comp_order) ||
	       exceeds(want->size, prov->size) ||
	       exceeds(want->iov_limit, prov->iov_limit);
}

#define NRMA_CAP_MODIFIERS                                         \
	(FI_SEND | FI_RECV | FI_READ | FI_WRITE | FI_REMOTE_READ | \
	 FI_REMOTE_WRITE)

/* A context may not ask for more than the endpoint as a whole. */
static bool context_caps_exceed(const struct fi_info *hints)
{
	uint64_t allowed = hints->caps | NRMA_CAP_MODIFIERS;

	return hints->caps &&
	       ((hints->tx_attr && (hints->tx_attr->caps & ~allowed)) ||
		(hints->rx_attr && (hints->rx_attr->caps & ~allowed)));
}

/* Every capability the hints name, also those named only by a context. */
static uint64_t requested_caps(const struct fi_info *hints)
{
	return hints->caps | (hints->tx_attr ? hints->tx_attr->caps : 0) |
	       (hints->rx_attr ? hints->rx_attr->caps : 0);
}

/* The capabilities prov gives only to those who ask for them. */
static uint64_t caps_asked_only(const struct fi_info *prov)
{
	return prov->ep_attr->type == FI_EP_MSG ?
		       NRMA_CAPS_ASKED_ONLY & ~NRMA_MSG_EP_NO_CAPS :
		       NRMA_CAPS_ASKED_ONLY;
}

/* Default operation flags that need a capability caps lacks. */
static bool op_flags_uncapped(const struct fi_info *info, uint64_t caps)
{
	return (info->tx_attr &&
		!nrma_op_flags_capped(info->tx_attr->op_flags, caps)) ||
	       (info->rx_attr &&
		!nrma_op_flags_capped(info->rx_attr->op_flags, caps));
}

int nrma_attr_match(uint32_t version, const struct fi_info *prov,
		    const struct fi_info *hints)
{
	uint64_t asked_only;

	if (!hints)
		return 0;
	asked_only = caps_asked_only(prov);
	if (context_caps_exceed(hints) ||
	    (hints->caps && op_flags_uncapped(hints, requested_caps(hints))))
		return -FI_ENODATA;
	if (mode_unmet(hints->caps, prov->caps | asked_only) ||
	    mode_unmet(prov->mode, hints->mode) ||
	    (hints->addr_format != FI_FORMAT_UNSPEC &&
	     hints->addr_format != FI_SOCKADDR &&
	     hints->addr_format != FI_SOCKADDR_IN))
		return -FI_ENODATA;
	if ((hints->fabric_attr &&
	     name_differs(hints->fabric_attr->name, prov->fabric_attr->name)) ||
	    (hints->domain_attr &&
	     domain_unmet(version, prov->domain_attr, hints->domain_attr,
			  requested_caps(hints))) ||
	    (hints->ep_attr && ep_unmet(prov->ep_attr, hints->ep_attr,
					prov->domain_attr->max_ep_tx_ctx,
					prov->domain_attr->max_ep_rx_ctx)) ||
	    (hints->tx_attr && tx_unmet(prov->tx_attr, hints->tx_attr)) ||
	    (hints->rx_attr &&
	     rx_unmet(prov->rx_attr, hints->rx_attr, asked_only)))
		return -FI_ENODATA;
	return 0;
}

/*
 * An endpoint may be opened with less than fi_getinfo offers, never more:
 * the data path sizes its arrays, and chooses between eager copies and
 * rendezvous, by these attributes.  Queue sizes are the exception: the
 * offer is a default, and a larger one costs memory (the transmit budget)
 * or is the device's to refuse (the shared receive queue).
 */
int nrma_attr_check_ep(const struct nrma_device *dev,
		       const struct fi_info *info)
{
	struct fi_info *prov = nrma_attr_info_alloc(dev, info->ep_attr->type);
	bool unmet;

	if (!prov)
		return -FI_ENOMEM;
	prov->tx_attr->size = SIZE_MAX;
	prov->rx_attr->size = SIZE_MAX;
	unmet = mode_unmet(info->caps, prov->caps | caps_asked_only(prov)) ||
		op_flags_uncapped(info, info->caps) ||
		ep_unmet(prov->ep_attr, info->ep_attr,
			 prov->domain_attr->max_ep_tx_ctx,
			 prov->domain_attr->max_ep_rx_ctx) ||
		tx_unmet(prov->tx_attr, info->tx_attr) ||
		rx_unmet(prov->rx_attr, info->rx_attr, caps_asked_only(prov));
	fi_freeinfo(prov);
	return unmet ? -FI_EINVAL : 0;
}

/*
 * fi_getinfo(3): FI_MSG or FI_TAGGED with neither FI_SEND nor FI_RECV
 * means both; FI_RMA or FI_ATOMIC with no direction means all four.
 */
uint64_t nrma_attr_caps_with_directions(uint64_t caps)
{
	const uint64_t rma_dirs = FI_READ | FI_WRITE | FI_REMOTE_READ |
				  FI_REMOTE_WRITE;

	if ((caps & (FI_MSG | FI_TAGGED)) && !(caps & (FI_SEND | FI_RECV)))
		caps |= FI_SEND | FI_RECV;
	if ((caps & (FI_RMA | FI_ATOMIC)) && !(caps & rma_dirs))
		caps |= rma_dirs;
	return caps;
}

static size_t hinted(size_t want, size_t have)
{
	return want ? want : have;
}

/* The caps asked for, and each context's share of them. */
static void narrow_caps(uint32_t version, struct fi_info *info,
			const struct fi_info *hints)
{
	uint64_t asked = requested_caps(hints) & NRMA_CAPS_ASKED_ONLY;

	if (hints->caps) {
		info->caps = nrma_attr_caps_with_directions(hints->caps) |
			     NRMA_DOMAIN_CAPS;
	} else if (hints->domain_attr &&
		   !mr_mode_allows_rma(version, hints->domain_attr->mr_mode)) {
		info->caps &= ~NRMA_RMA_CAPS;
	}
	info->caps |= asked;
	info->rx_attr->caps |= asked;
	info->tx_attr->caps &= info->caps;
	info->rx_attr->caps &= info->caps;
	/* A context gets only the capabilities asked of it, if any were. */
	if (hints->tx_attr && hints->tx_attr->caps)
		info->tx_attr->caps &= hints->tx_attr->caps;
	if (hints->rx_attr && hints->rx_attr->caps)
		info->rx_attr->caps &= hints->rx_attr->caps;
}

static void narrow_domain(uint32_t version, struct fi_domain_attr *dom,
			  uint64_t caps, const struct fi_domain_attr *want)
{
	if (FI_VERSION_LT(version, FI_VERSION(1, 5)) ||
	    (want && want->mr_mode == NRMA_MR_BASIC))
		dom->mr_mode = NRMA_MR_BASIC;
	else
		dom->mr_mode = mr_mode_required(caps) &
			       (want ? (uint64_t) want->mr_mode : UINT64_MAX);
	if (!want)
		return;
	dom->mr_key_size = mr_key_size(version, caps, dom->mr_mode);
	/* fi_mr_enable is honoured (and needs nothing) for FI_RMA_EVENT MRs. */
	if (dom->mr_mode != NRMA_MR_BASIC &&
	    (want->mr_mode & FI_MR_RMA_EVENT) && (caps & FI_RMA_EVENT))
		dom->mr_mode |= FI_MR_RMA_EVENT;
	if (want->threading != FI_THREAD_UNSPEC)
		dom->threading = want->threading;
	/* An application that will drive progress may: as libfabric does,
	 * the answer says what it asked for. */
	if (want->control_progress != FI_PROGRESS_UNSPEC)
		dom->control_progress = want->control_progress;
	/* Data progress is manual unless asked to be automatic: then the
	 * domain's thread progresses what the application leaves alone. */
	if (want->data_progress != FI_PROGRESS_UNSPEC)
		dom->data_progress = want->data_progress;
	if (want->resource_mgmt != FI_RM_UNSPEC)
		dom->resource_mgmt = want->resource_mgmt;
	dom->av_type = want->av_type;
}

static void narrow_contexts(struct fi_info *info, const struct fi_info *hints)
{
	if (hints->tx_attr) {
		info->tx_attr->op_flags = hints->tx_attr->op_flags;
		info->tx_attr->size =
			hinted(hints->tx_attr->size, info->tx_attr->size);
		info->tx_attr->iov_limit = hinted(hints->tx_attr->iov_limit,
						  info->tx_attr->iov_limit);
	}
	if (hints->rx_attr) {
		info->rx_attr->op_flags = hints->rx_attr->op_flags;
		info->rx_attr->size =
			hinted(hints->rx_attr->size, info->rx_attr->size);
		info->rx_attr->iov_limit = hinted(hints->rx_attr->iov_limit,
						  info->rx_attr->iov_limit);
	}
	/* Shared contexts, or a scalable endpoint's, as asked. */
	if (hints->ep_attr && hints->ep_attr->tx_ctx_cnt)
		info->ep_attr->tx_ctx_cnt = hints->ep_attr->tx_ctx_cnt;
	if (hints->ep_attr && hints->ep_attr->rx_ctx_cnt)
		info->ep_attr->rx_ctx_cnt = hints->ep_attr->rx_ctx_cnt;
	/* Tags match on all 64 bits under any ignore mask, so every format
	 * an application picks works as it says (FI_TAG_MPI, FI_TAG_CCL,
	 * or 1.x bit fields). */
	if (hints->ep_attr && hints->ep_attr->mem_tag_format)
		info->ep_attr->mem_tag_format = hints->ep_attr->mem_tag_format;
}

/* Shapes a matching info to what the application asked for. */
void nrma_attr_narrow(uint32_t version, struct fi_info *info,
		      const struct fi_info *hints)
{
	info->fabric_attr->api_version = version;
	if (!hints) {
		if (FI_VERSION_LT(version, FI_VERSION(1, 5)))
			info->domain_attr->mr_mode = NRMA_MR_BASIC;
		return;
	}
	narrow_caps(version, info, hints);
	narrow_domain(version, info->domain_attr, info->caps,
		      hints->domain_attr);
	narrow_contexts(info, hints);
	/* A passive endpoint whose address an active one is to take. */
	if (info->ep_attr->type == FI_EP_MSG)
		info->handle = hints->handle;
}

/* Addresses that fi_getinfo's node, service, flags and hints ask for. */
struct nrma_addr_req {
	struct sockaddr_in src;
	struct sockaddr_in dest;
	bool has_src;
	bool has_dest;
};

static int resolve(const char *node, const char *service, uint64_t flags,
		   struct sockaddr_in *sin)
{
	struct addrinfo hints = {
		.ai_family = AF_INET,
		.ai_socktype = SOCK_STREAM,
		.ai_flags = (flags & FI_NUMERICHOST ? AI_NUMERICHOST : 0) |
			    (node ? 0 : AI_PASSIVE),
	};
	struct addrinfo *ai;

	if (getaddrinfo(node, service, &hints, &ai))
		return -FI_ENODATA;
	memcpy(sin, ai->ai_addr, sizeof(*sin));
	freeaddrinfo(ai);
	return 0;
}

static int copy_hint_addr(const void *addr, size_t len, uint32_t format,
			  struct sockaddr_in *sin)
{
	if ((format != FI_SOCKADDR && format != FI_SOCKADDR_IN) ||
	    len < sizeof(*sin) ||
	    ((const struct sockaddr *) addr)->sa_family != AF_INET)
		return -FI_ENODATA;
	memcpy(sin, addr, sizeof(*sin));
	return 0;
}

static int addr_request(const char *node, const char *service, uint64_t flags,
			const struct fi_info *hints, struct nrma_addr_req *req)
{
	int ret = 0;

	memset(req, 0, sizeof(*req));
	if ((flags & FI_SOURCE) || (!node && service)) {
		if (node || service) {
			ret = resolve(node, service, flags, &req->src);
			req->has_src = !ret;
		}
	} else if (node) {
		ret = resolve(node, service, flags, &req->dest);
		req->has_dest = !ret;
	}
	if (ret)
		return ret;
	if (!req->has_src && hints && hints->src_addr) {
		ret = copy_hint_addr(hints->src_addr, hints->src_addrlen,
				     hints->addr_format, &req->src);
		req->has_src = !ret;
	}
	if (!ret && !req->has_dest && hints && hints->dest_addr) {
		ret = copy_hint_addr(hints->dest_addr, hints->dest_addrlen,
				     hints->addr_format, &req->dest);
		req->has_dest = !ret;
	}
	return ret;
}

static int set_addr(void **addr, size_t *len, const struct sockaddr_in *sin)
{
	*addr = malloc(sizeof(*sin));
	if (!*addr)
		return -FI_ENOMEM;
	memcpy(*addr, sin, sizeof(*sin));
	*len = sizeof(*sin);
	return 0;
}

/* A device serves a source address that is its own or the wildcard. */
static bool device_serves(const struct nrma_device *dev,
			  const struct nrma_addr_req *req)
{
	return !req->has_src || req->src.sin_addr.s_addr == INADDR_ANY ||
	       req->src.sin_addr.s_addr == dev->addr.sin_addr.s_addr;
}

static int set_info_addrs(struct fi_info *info, const struct nrma_device *dev,
			  const struct nrma_addr_req *req)
{
	struct sockaddr_in src = dev->addr;
	int ret;

	src.sin_port = req->has_src ? req->src.sin_port : 0;
	ret = set_addr(&info->src_addr, &info->src_addrlen, &src);
	if (!ret && req->has_dest)
		ret = set_addr(&info->dest_addr, &info->dest_addrlen,
			       &req->dest);
	return ret;
}

/*
 * Connected endpoints only for those who ask for them by type (and only
 * while FI_NRMA_MSG_EP lets us offer them), else RDM ones.
 */
static enum fi_ep_type device_ep_type(const struct fi_info *hints)
{
	return hints && hints->ep_attr && hints->ep_attr->type == FI_EP_MSG &&
			       nrma_params.msg_ep ?
		       FI_EP_MSG :
		       FI_EP_RDM;
}

static int device_info(uint32_t version, const struct nrma_device *dev,
		       const struct nrma_addr_req *req,
		       const struct fi_info *hints, struct fi_info **info)
{
	struct fi_info *fi;
	int ret;

	if (!device_serves(dev, req))
		return -FI_ENODATA;
	fi = nrma_attr_info_alloc(dev, device_ep_type(hints));
	if (!fi)
		return -FI_ENOMEM;
	ret = nrma_attr_match(version, fi, hints);
	if (!ret) {
		nrma_attr_narrow(version, fi, hints);
		ret = set_info_addrs(fi, dev, req);
	}
	if (ret) {
		fi_freeinfo(fi);
		return ret;
	}
	*info = fi;
	return 0;
}

int nrma_attr_getinfo(uint32_t version, const char *node, const char *service,
		      uint64_t flags, const struct fi_info *hints,
		      struct fi_info **info)
{
	struct fi_info *head = NULL, **tail = &head;
	struct nrma_addr_req req;
	int ret;

	if (flags & NRMA_GETINFO_FOR_UTIL_PROV) {
		NRMA_DBG(FI_LOG_CORE, "not a core for a utility provider\n");
		return -FI_ENODATA;
	}
	ret = addr_request(node, service, flags, hints, &req);
	if (ret)
		return ret;
	for (size_t i = 0; i < nrma_device_count; i++) {
		ret = device_info(version, &nrma_devices[i], &req, hints, tail);
		if (ret == -FI_ENODATA)
			continue;
		if (ret) {
			fi_freeinfo(head);
			return ret;
		}
		tail = &(*tail)->next;
	}
	*info = head;
	if (!head && hints &&
	    fi_log_enabled(&nrma_prov, FI_LOG_DEBUG, FI_LOG_CORE))
		NRMA_DBG(FI_LOG_CORE, "no device matches these hints:\n%s",
			 fi_tostr(hints, FI_TYPE_INFO));
	return head ? 0 : -FI_ENODATA;
}
