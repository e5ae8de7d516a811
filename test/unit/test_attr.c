/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Unit tests for prov/nrma/nrma_attr.c: fi_info construction from a
 * synthetic device and matching of fi_getinfo hints against it.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <cmocka.h>

#include "nrma.h"
#include "nrma_proto.h"

#define MiB	    (1024 * 1024)
#define V(maj, min) FI_VERSION(maj, min)
#define V_CUR	    FI_VERSION(1, 17)

/*
 * Capabilities.  The offer is spelled out bit for bit: a capability that
 * joins or leaves it is a change these tests should notice.
 */
#define DOMAIN_CAPS (FI_LOCAL_COMM | FI_REMOTE_COMM)
/* Two-sided messaging, untagged and tagged. */
#define MSG_TX_CAPS (FI_MSG | FI_SEND)
#define MSG_RX_CAPS \
	(FI_MSG | FI_RECV | FI_SOURCE | FI_MULTI_RECV | FI_DIRECTED_RECV)
/*
 * libfabric 2.x's, offered only to hints that ask: the exact one forbids
 * receives from anyone, the tagged ones FI_DIRECTED_RECV and
 * FI_MULTI_RECV cover.
 */
#define ASKED_ONLY_CAPS                                         \
	(NRMA_EXACT_DIRECTED_RECV | NRMA_TAGGED_DIRECTED_RECV | \
	 NRMA_TAGGED_MULTI_RECV)
/* One-sided: what goes when the application's mr_mode rules RMA out. */
#define RMA_TX_CAPS (FI_RMA | FI_ATOMIC | FI_READ | FI_WRITE | FI_FENCE)
#define RMA_RX_CAPS \
	(FI_RMA | FI_ATOMIC | FI_REMOTE_READ | FI_REMOTE_WRITE | FI_RMA_EVENT)
#define RMA_CAPS	(RMA_TX_CAPS | RMA_RX_CAPS)
/* Caps that make the endpoint an RMA target: they need BASIC_MAP. */
#define RMA_TARGET_CAPS (FI_RMA | FI_ATOMIC | FI_REMOTE_READ | FI_REMOTE_WRITE)
/* Scalable endpoints' transmits name receive contexts; any may be triggered. */
#define TX_OFFER \
	(MSG_TX_CAPS | FI_TAGGED | RMA_TX_CAPS | FI_NAMED_RX_CTX | FI_TRIGGER)
#define RX_OFFER   (MSG_RX_CAPS | FI_TAGGED | RMA_RX_CAPS)
#define FULL_OFFER (DOMAIN_CAPS | TX_OFFER | RX_OFFER)
/* Nothing here does device-memory or collective work. */
#define NEVER_OFFERED                                           \
	(FI_HMEM | FI_COLLECTIVE | FI_MULTICAST | FI_RMA_PMEM | \
	 FI_VARIABLE_MSG | FI_SOURCE_ERR | FI_SHARED_AV)

/* Memory registration: virtual addresses, allocated memory, provider keys. */
#define BASIC_MAP    (FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY)
/* What nrma needs of them: peers address its regions by offset. */
#define MR_REQUIRED  (FI_MR_ALLOCATED | FI_MR_PROV_KEY)
/* FI_ORDER_STRICT, which libfabric 2.0 deprecates. */
#define ORDER_STRICT 0x1FFULL
/* Ordering RC gives at the target. */
#define MSG_ORDER    (FI_ORDER_SAS | FI_ORDER_RAW | FI_ORDER_WAW | FI_ORDER_SAW)

/* fi_getinfo(3): primary capabilities must be asked for to be granted. */
#define PRIMARY_CAPS                                                      \
	(FI_MSG | FI_RMA | FI_TAGGED | FI_ATOMIC | FI_MULTICAST |         \
	 FI_NAMED_RX_CTX | FI_DIRECTED_RECV | FI_VARIABLE_MSG | FI_HMEM | \
	 FI_COLLECTIVE | NRMA_TAGGED_DIRECTED_RECV)
/* fi_endpoint(3): the bits that apply to transmit and receive contexts. */
#define TX_ATTR_CAPS                                                    \
	(FI_MSG | FI_RMA | FI_TAGGED | FI_ATOMIC | FI_READ | FI_WRITE | \
	 FI_SEND | FI_HMEM | FI_TRIGGER | FI_FENCE | FI_MULTICAST |     \
	 FI_RMA_PMEM | FI_NAMED_RX_CTX | FI_COLLECTIVE)
#define RX_ATTR_CAPS                                                      \
	(FI_MSG | FI_RMA | FI_TAGGED | FI_ATOMIC | FI_REMOTE_READ |       \
	 FI_REMOTE_WRITE | FI_RECV | FI_HMEM | FI_TRIGGER | FI_RMA_PMEM | \
	 FI_DIRECTED_RECV | FI_VARIABLE_MSG | FI_MULTI_RECV | FI_SOURCE | \
	 FI_RMA_EVENT | FI_SOURCE_ERR | FI_COLLECTIVE |                   \
	 NRMA_TAGGED_DIRECTED_RECV | NRMA_TAGGED_MULTI_RECV |             \
	 NRMA_EXACT_DIRECTED_RECV)

/*
 * What fi_getinfo(3) reads into caps: FI_MSG or FI_TAGGED without FI_SEND
 * or FI_RECV asks for both, FI_RMA or FI_ATOMIC without a direction for
 * all four.
 */
static uint64_t with_directions(uint64_t caps)
{
	static const struct {
		uint64_t ops, directions;
	} implied[] = {
		{ FI_MSG | FI_TAGGED, FI_SEND | FI_RECV },
		{ FI_RMA | FI_ATOMIC,
		  FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE },
	};

	for (size_t i = 0; i < sizeof(implied) / sizeof(*implied); i++)
		if ((caps & implied[i].ops) && !(caps & implied[i].directions))
			caps |= implied[i].directions;
	return caps;
}

/* Asserts that every bit of want is set in have. */
#define assert_bits_set(have, want)                             \
	assert_int_equal((uint64_t) (have) & (uint64_t) (want), \
			 (uint64_t) (want))
/* Asserts that no bit of unwanted is set in have. */
#define assert_bits_clear(have, unwanted) \
	assert_int_equal((uint64_t) (have) & (uint64_t) (unwanted), 0)

static void set_ip(struct sockaddr_in *sin, const char *ip)
{
	memset(sin, 0, sizeof(*sin));
	sin->sin_family = AF_INET;
	assert_int_equal(inet_pton(AF_INET, ip, &sin->sin_addr), 1);
}

/* Limits as Soft-RoCE (rxe) reports them. */
static void rxe_device(struct nrma_device *dev, const char *name,
		       const char *ip, const char *mask)
{
	memset(dev, 0, sizeof(*dev));
	snprintf(dev->name, sizeof(dev->name), "%s", name);
	dev->port_num = 1;
	set_ip(&dev->addr, ip);
	set_ip(&dev->netmask, mask);
	dev->limits = (struct nrma_dev_limits){
		.max_msg_size = 8 * MiB,
		.max_qp_wr = 1048576,
		.max_srq_wr = 1048576,
		.max_sge = 32,
		.max_srq_sge = 27,
		.max_sge_rd = 32,
		.max_cq = 1048576,
		.max_qp = 1048560,
		.max_mr = 524287,
	};
}

static struct nrma_device test_dev;

static int setup(void **state)
{
	(void) state;
	rxe_device(&test_dev, "rxe0", "10.9.9.1", "255.255.255.0");
	return 0;
}

/*
 * Matches hints against a fresh info for test_dev.  On a match the
 * narrowed info is returned through *out (when given), else freed.
 */
static int match(uint32_t version, const struct fi_info *hints,
		 struct fi_info **out)
{
	struct fi_info *info = nrma_attr_info_alloc(&test_dev, FI_EP_RDM);
	int ret;

	assert_non_null(info);
	ret = nrma_attr_match(version, info, hints);
	if (!ret)
		nrma_attr_narrow(version, info, hints);
	if (!ret && out)
		*out = info;
	else
		fi_freeinfo(info);
	return ret;
}

static struct fi_info *hints_alloc(void)
{
	struct fi_info *hints = fi_allocinfo();

	assert_non_null(hints);
	assert_non_null(hints->ep_attr);
	assert_non_null(hints->domain_attr);
	assert_non_null(hints->fabric_attr);
	assert_non_null(hints->tx_attr);
	assert_non_null(hints->rx_attr);
	return hints;
}

/* What nrma_attr_info_alloc offers for test_dev, before any hints. */
struct offer {
	uint64_t caps;
	uint64_t tx_caps;
	uint64_t rx_caps;
};

static struct offer offered(void)
{
	struct fi_info *info = nrma_attr_info_alloc(&test_dev, FI_EP_RDM);
	struct offer offer;

	assert_non_null(info);
	offer = (struct offer){
		.caps = info->caps,
		.tx_caps = info->tx_attr->caps,
		.rx_caps = info->rx_attr->caps,
	};
	fi_freeinfo(info);
	return offer;
}

/*
 * The caps of a returned info hang together: the contexts' caps are
 * subsets of the endpoint's and of what applies to each context, nothing
 * never offered shows up anywhere, and RMA target caps come only with an
 * mr_mode that registers memory the way the provider does.
 */
static void assert_caps_consistent(const struct fi_info *info)
{
	assert_bits_clear(info->tx_attr->caps, ~info->caps);
	assert_bits_clear(info->rx_attr->caps, ~info->caps);
	assert_bits_clear(info->tx_attr->caps, ~(uint64_t) TX_ATTR_CAPS);
	assert_bits_clear(info->rx_attr->caps, ~(uint64_t) RX_ATTR_CAPS);
	assert_bits_clear(info->domain_attr->caps, ~info->caps);
	assert_bits_clear(info->caps | info->tx_attr->caps |
				  info->rx_attr->caps | info->domain_attr->caps,
			  NEVER_OFFERED);
	/* Of our mr_mode, an RMA target keeps what the application gave;
	 * without FI_MR_PROV_KEY, its keys are two bytes. */
	if ((info->caps | info->tx_attr->caps | info->rx_attr->caps) &
	    RMA_TARGET_CAPS) {
		uint64_t mode = (uint64_t) info->domain_attr->mr_mode;

		assert_true(
			mode == NRMA_MR_BASIC ||
			!(mode & ~(uint64_t) (MR_REQUIRED | FI_MR_RMA_EVENT)));
		assert_int_equal(
			info->domain_attr->mr_key_size,
			mode == NRMA_MR_BASIC || (mode & FI_MR_PROV_KEY) ? 8 :
									   2);
	} else {
		assert_int_equal(info->domain_attr->mr_key_size, 8);
	}
}

/* nrma_attr_info_alloc */

static void test_alloc_caps(void **state)
{
	struct fi_info *info = nrma_attr_info_alloc(&test_dev, FI_EP_RDM);

	(void) state;
	assert_non_null(info);
	/* Messaging, RMA and atomics, both ways, with secondary caps. */
	assert_int_equal(info->tx_attr->caps,
			 FI_MSG | FI_TAGGED | FI_RMA | FI_ATOMIC | FI_SEND |
				 FI_READ | FI_WRITE | FI_FENCE |
				 FI_NAMED_RX_CTX | FI_TRIGGER);
	assert_int_equal(info->rx_attr->caps,
			 FI_MSG | FI_TAGGED | FI_RMA | FI_ATOMIC | FI_RECV |
				 FI_REMOTE_READ | FI_REMOTE_WRITE |
				 FI_RMA_EVENT | FI_SOURCE | FI_MULTI_RECV |
				 FI_DIRECTED_RECV);
	assert_int_equal(info->domain_attr->caps, DOMAIN_CAPS);
	assert_int_equal(info->tx_attr->caps, TX_OFFER);
	assert_int_equal(info->rx_attr->caps, RX_OFFER);
	/* Receive-side bits stay off the transmit context and vice versa. */
	assert_bits_clear(info->tx_attr->caps,
			  FI_RECV | FI_SOURCE | FI_MULTI_RECV |
				  FI_DIRECTED_RECV | FI_REMOTE_READ |
				  FI_REMOTE_WRITE | FI_RMA_EVENT);
	assert_bits_clear(info->rx_attr->caps,
			  FI_SEND | FI_READ | FI_WRITE | FI_FENCE);
	/* The endpoint offers exactly what its parts offer. */
	assert_int_equal(info->caps, info->tx_attr->caps | info->rx_attr->caps |
					     info->domain_attr->caps);
	assert_int_equal(info->caps, FULL_OFFER);
	assert_bits_clear(info->caps, NEVER_OFFERED);
	assert_caps_consistent(info);
	fi_freeinfo(info);
}

static void test_alloc_fields(void **state)
{
	struct fi_info *info = nrma_attr_info_alloc(&test_dev, FI_EP_RDM);

	(void) state;
	assert_non_null(info);
	assert_int_equal(info->mode, 0);
	assert_int_equal(info->addr_format, FI_SOCKADDR_IN);
	assert_string_equal(info->fabric_attr->name, "10.9.9.0/24");
	assert_int_equal(info->fabric_attr->prov_version, FI_NRMA_VERSION);
	assert_string_equal(info->domain_attr->name, "rxe0");

	assert_int_equal(info->ep_attr->type, FI_EP_RDM);
	assert_int_equal(info->ep_attr->max_msg_size, 8 * MiB);
	/* RC orders reads and writes after writes for a whole message... */
	assert_int_equal(info->ep_attr->max_order_raw_size, 8 * MiB);
	assert_int_equal(info->ep_attr->max_order_waw_size, 8 * MiB);
	/* ...but not a write after a read. */
	assert_int_equal(info->ep_attr->max_order_war_size, 0);
	assert_int_equal(info->ep_attr->tx_ctx_cnt, 1);
	assert_int_equal(info->ep_attr->rx_ctx_cnt, 1);

	assert_int_equal(info->tx_attr->size, nrma_params.tx_size);
	assert_int_equal(info->tx_attr->size, 256);
	/* The device allows 32 SGEs; the provider handles NRMA_IOV_LIMIT. */
	assert_int_equal(NRMA_IOV_LIMIT, 4);
	assert_int_equal(info->tx_attr->iov_limit, NRMA_IOV_LIMIT);
	assert_int_equal(info->tx_attr->rma_iov_limit, 1);
	/* Messages up to the eager size are copied: those can be injected. */
	assert_int_equal(info->tx_attr->inject_size, nrma_params.eager_size);
	assert_int_equal(info->tx_attr->inject_size, 8192);
	/*
	 * RC executes an endpoint's requests in order at the target, and
	 * receives match in arrival order.
	 */
	assert_int_equal(info->tx_attr->msg_order, FI_ORDER_SAS | FI_ORDER_RAW |
							   FI_ORDER_WAW |
							   FI_ORDER_SAW);
	assert_int_equal(info->tx_attr->msg_order, MSG_ORDER);
	assert_int_equal(info->tx_attr->comp_order, NRMA_ORDER_NONE);
	assert_int_equal(info->tx_attr->op_flags, 0);
	assert_int_equal(info->rx_attr->size, nrma_params.rx_size);
	assert_int_equal(info->rx_attr->size, 512);
	assert_int_equal(info->rx_attr->iov_limit, NRMA_IOV_LIMIT);
	assert_int_equal(info->rx_attr->msg_order, MSG_ORDER);
	assert_int_equal(info->rx_attr->comp_order, NRMA_ORDER_NONE);
	assert_int_equal(info->rx_attr->op_flags, 0);

	assert_int_equal(info->domain_attr->caps,
			 FI_LOCAL_COMM | FI_REMOTE_COMM);
	assert_int_equal(info->domain_attr->threading, FI_THREAD_SAFE);
	assert_int_equal(info->domain_attr->control_progress, FI_PROGRESS_AUTO);
	assert_int_equal(info->domain_attr->data_progress, FI_PROGRESS_MANUAL);
	assert_int_equal(info->domain_attr->av_type, FI_AV_UNSPEC);
	/* RMA targets need provider keys; peers address by offset. */
	assert_int_equal(info->domain_attr->mr_mode,
			 FI_MR_ALLOCATED | FI_MR_PROV_KEY);
	assert_int_equal(info->domain_attr->mr_key_size, 8);
	assert_int_equal(info->domain_attr->cq_data_size, 4);
	assert_int_equal(info->domain_attr->cq_cnt, 1048576);
	assert_int_equal(info->domain_attr->ep_cnt, 1048560);
	/* The key table's size, below the device's 524287. */
	assert_int_equal(info->domain_attr->mr_cnt, nrma_params.mr_max);
	assert_int_equal(info->domain_attr->mr_iov_limit, 1);
	assert_int_equal(info->domain_attr->cntr_cnt, nrma_params.cntr_max);
	assert_null(info->src_addr);
	assert_null(info->dest_addr);
	fi_freeinfo(info);
}

/* Queue depths are the tunables, clamped to what the device has. */
static void test_alloc_clamps_to_device(void **state)
{
	struct nrma_params saved = nrma_params;
	struct fi_info *info;

	(void) state;
	nrma_params.tx_size = 4 * 1048576;
	nrma_params.rx_size = 3 * 1048576;
	nrma_params.mr_max = 1048576;
	test_dev.limits.max_srq_wr = 4096;
	info = nrma_attr_info_alloc(&test_dev, FI_EP_RDM);
	nrma_params = saved;
	assert_non_null(info);
	assert_int_equal(info->tx_attr->size, 1048576);
	assert_int_equal(info->rx_attr->size, 4096);
	/* Keys name 65535 slots at most, below the device's 524287. */
	assert_int_equal(info->domain_attr->mr_cnt, 65535);
	fi_freeinfo(info);
}

/*
 * Below NRMA_IOV_LIMIT the device bounds the iovs: sends by max_sge, and
 * receives by max_sge_rd, since a rendezvous RDMA read scatters straight
 * into the posted receive's iovs.
 */
static void test_alloc_iov_limits_clamp(void **state)
{
	struct fi_info *info;

	(void) state;
	test_dev.limits.max_sge = 2;
	test_dev.limits.max_sge_rd = 3;
	info = nrma_attr_info_alloc(&test_dev, FI_EP_RDM);
	assert_non_null(info);
	assert_int_equal(info->tx_attr->iov_limit, 2);
	assert_int_equal(info->rx_attr->iov_limit, 3);
	fi_freeinfo(info);

	test_dev.limits.max_sge = 1;
	test_dev.limits.max_sge_rd = 1;
	info = nrma_attr_info_alloc(&test_dev, FI_EP_RDM);
	assert_non_null(info);
	assert_int_equal(info->tx_attr->iov_limit, 1);
	assert_int_equal(info->rx_attr->iov_limit, 1);
	fi_freeinfo(info);

	/* Exactly at the limit, and far above it. */
	test_dev.limits.max_sge = NRMA_IOV_LIMIT;
	test_dev.limits.max_sge_rd = 1000;
	info = nrma_attr_info_alloc(&test_dev, FI_EP_RDM);
	assert_non_null(info);
	assert_int_equal(info->tx_attr->iov_limit, NRMA_IOV_LIMIT);
	assert_int_equal(info->rx_attr->iov_limit, NRMA_IOV_LIMIT);
	fi_freeinfo(info);
}

/* inject_size follows the eager_size tunable. */
static void test_alloc_inject_size(void **state)
{
	struct nrma_params saved = nrma_params;
	struct fi_info *info;

	(void) state;
	nrma_params.eager_size = 1234;
	info = nrma_attr_info_alloc(&test_dev, FI_EP_RDM);
	nrma_params = saved;
	assert_non_null(info);
	assert_int_equal(info->tx_attr->inject_size, 1234);
	fi_freeinfo(info);
}

/* nrma_attr_fabric_name */

static void test_fabric_name(void **state)
{
	struct sockaddr_in addr, mask;
	char buf[64];

	(void) state;
	set_ip(&addr, "10.9.9.1");
	set_ip(&mask, "255.255.255.0");
	assert_int_equal(nrma_attr_fabric_name(&addr, &mask, buf, sizeof(buf)),
			 0);
	assert_string_equal(buf, "10.9.9.0/24");

	set_ip(&addr, "192.168.1.77");
	set_ip(&mask, "255.255.0.0");
	assert_int_equal(nrma_attr_fabric_name(&addr, &mask, buf, sizeof(buf)),
			 0);
	assert_string_equal(buf, "192.168.0.0/16");

	set_ip(&addr, "172.16.5.4");
	set_ip(&mask, "255.255.255.255");
	assert_int_equal(nrma_attr_fabric_name(&addr, &mask, buf, sizeof(buf)),
			 0);
	assert_string_equal(buf, "172.16.5.4/32");
}

static void test_fabric_name_too_small(void **state)
{
	struct sockaddr_in addr, mask;
	char buf[64];

	(void) state;
	set_ip(&addr, "10.9.9.1");
	set_ip(&mask, "255.255.255.0");
	/* "10.9.9.0/24" is 11 characters and a NUL. */
	assert_int_equal(nrma_attr_fabric_name(&addr, &mask, buf, 11),
			 -FI_ETOOSMALL);
	assert_int_equal(nrma_attr_fabric_name(&addr, &mask, buf, 4),
			 -FI_ETOOSMALL);
	assert_int_equal(nrma_attr_fabric_name(&addr, &mask, buf, 12), 0);
	assert_string_equal(buf, "10.9.9.0/24");
}

/* nrma_attr_match / nrma_attr_narrow */

static void test_no_hints(void **state)
{
	static const uint32_t old[] = { FI_VERSION(1, 0), FI_VERSION(1, 4) };
	struct fi_info *info = NULL;

	(void) state;
	assert_int_equal(match(V_CUR, NULL, &info), 0);
	assert_non_null(info);
	assert_int_equal(info->fabric_attr->api_version, V_CUR);
	/* Everything on offer, and the mr_mode that RMA needs. */
	assert_int_equal(info->caps, FULL_OFFER);
	assert_int_equal(info->tx_attr->caps, TX_OFFER);
	assert_int_equal(info->rx_attr->caps, RX_OFFER);
	assert_int_equal(info->domain_attr->mr_mode, MR_REQUIRED);
	assert_int_equal(info->tx_attr->size, 256);
	assert_caps_consistent(info);
	fi_freeinfo(info);

	info = NULL;
	assert_int_equal(match(V(1, 5), NULL, &info), 0);
	assert_int_equal(info->domain_attr->mr_mode, MR_REQUIRED);
	fi_freeinfo(info);

	/* Pre-1.5 applications read mr_mode as an enum. */
	for (size_t i = 0; i < sizeof(old) / sizeof(*old); i++) {
		info = NULL;
		assert_int_equal(match(old[i], NULL, &info), 0);
		assert_int_equal(info->fabric_attr->api_version, old[i]);
		assert_int_equal(info->domain_attr->mr_mode, NRMA_MR_BASIC);
		assert_int_equal(info->caps, FULL_OFFER);
		fi_freeinfo(info);
	}
}

/*
 * Empty hints have mr_mode 0 (NRMA_MR_UNSPEC): from API 1.5 on that is an
 * application supporting no mr_mode bits.  It gets everything, RMA with
 * keys it picks (two bytes).
 */
static void test_empty_hints(void **state)
{
	struct fi_info *hints = hints_alloc(), *info = NULL;

	(void) state;
	assert_int_equal(match(V_CUR, hints, &info), 0);
	assert_int_equal(info->caps, FULL_OFFER);
	assert_int_equal(info->tx_attr->caps, TX_OFFER);
	assert_int_equal(info->rx_attr->caps, RX_OFFER);
	assert_int_equal(info->domain_attr->caps, DOMAIN_CAPS);
	assert_int_equal(info->domain_attr->mr_mode, 0);
	assert_int_equal(info->domain_attr->mr_key_size, 2);
	assert_caps_consistent(info);
	assert_int_equal(info->ep_attr->type, FI_EP_RDM);
	assert_int_equal(info->domain_attr->threading, FI_THREAD_SAFE);
	assert_int_equal(info->tx_attr->size, 256);
	assert_int_equal(info->rx_attr->size, 512);
	fi_freeinfo(info);

	/* With the provider's mr_mode, everything on offer comes back. */
	info = NULL;
	hints->domain_attr->mr_mode = BASIC_MAP;
	assert_int_equal(match(V_CUR, hints, &info), 0);
	assert_int_equal(info->caps, offered().caps);
	assert_int_equal(info->caps, FULL_OFFER);
	assert_int_equal(info->tx_attr->caps, offered().tx_caps);
	assert_int_equal(info->rx_attr->caps, offered().rx_caps);
	assert_int_equal(info->domain_attr->mr_mode, MR_REQUIRED);
	assert_caps_consistent(info);
	fi_freeinfo(info);
	fi_freeinfo(hints);
}

static void test_ep_type(void **state)
{
	struct fi_info *hints = hints_alloc();

	(void) state;
	hints->ep_attr->type = FI_EP_MSG;
	assert_int_equal(match(V_CUR, hints, NULL), -FI_ENODATA);
	hints->ep_attr->type = FI_EP_DGRAM;
	assert_int_equal(match(V_CUR, hints, NULL), -FI_ENODATA);
	hints->ep_attr->type = FI_EP_RDM;
	assert_int_equal(match(V_CUR, hints, NULL), 0);
	hints->ep_attr->type = FI_EP_UNSPEC;
	assert_int_equal(match(V_CUR, hints, NULL), 0);
	fi_freeinfo(hints);
}

/*
 * Asks for caps (with an mr_mode) and checks the answer: granted, at least
 * what was asked, nothing beyond the offer, and no primary capability that
 * was not asked for (fi_getinfo(3)).  The domain capabilities always come.
 * The mr_mode returned is what the granted caps need: MR_REQUIRED for an
 * RMA target, nothing otherwise.
 */
static void assert_caps_granted_mr(uint64_t caps, int mr_mode)
{
	struct fi_info *hints = hints_alloc(), *info = NULL;
	struct offer offer = offered();

	hints->caps = caps;
	hints->domain_attr->mr_mode = mr_mode;
	assert_int_equal(match(V_CUR, hints, &info), 0);
	assert_bits_set(info->caps, caps | DOMAIN_CAPS);
	assert_bits_clear(info->caps, ~offer.caps);
	assert_int_equal(info->caps & PRIMARY_CAPS, caps & PRIMARY_CAPS);
	assert_int_equal(info->domain_attr->mr_mode,
			 (caps & RMA_TARGET_CAPS) ? MR_REQUIRED : 0);
	assert_caps_consistent(info);
	fi_freeinfo(info);
	fi_freeinfo(hints);
}

static void assert_caps_granted(uint64_t caps)
{
	assert_caps_granted_mr(caps, BASIC_MAP);
	/* An application that supports more than BASIC_MAP is fine too. */
	assert_caps_granted_mr(caps, BASIC_MAP | FI_MR_LOCAL | FI_MR_ENDPOINT);
	/* Without RMA target caps, the application's mr_mode is no matter. */
	if (!(caps & RMA_TARGET_CAPS)) {
		assert_caps_granted_mr(caps, 0);
		assert_caps_granted_mr(caps, FI_MR_LOCAL);
	}
}

static void test_caps_offered(void **state)
{
	static const uint64_t wanted[] = {
		FI_MSG,
		FI_TAGGED,
		FI_SEND,
		FI_RECV,
		FI_SOURCE,
		FI_MULTI_RECV,
		FI_LOCAL_COMM,
		FI_REMOTE_COMM,
		DOMAIN_CAPS,
		FI_MSG | FI_SEND,
		FI_MSG | FI_RECV,
		FI_MSG | FI_LOCAL_COMM,
		FI_MSG | FI_RECV | FI_SOURCE | FI_MULTI_RECV,
		FI_MSG | FI_TAGGED,
		FI_TAGGED | FI_SEND | FI_RECV,
		MSG_TX_CAPS | MSG_RX_CAPS | DOMAIN_CAPS,
		FI_RMA,
		FI_RMA | FI_READ,
		FI_RMA | FI_WRITE,
		FI_RMA | FI_REMOTE_READ,
		FI_RMA | FI_REMOTE_WRITE,
		FI_RMA | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE,
		FI_RMA | FI_RMA_EVENT,
		FI_RMA | FI_FENCE,
		FI_ATOMIC,
		FI_ATOMIC | FI_READ | FI_WRITE,
		FI_RMA | FI_ATOMIC,
		FI_MSG | FI_RMA,
		FI_MSG | FI_TAGGED | FI_RMA,
		RMA_TX_CAPS,
		RMA_RX_CAPS,
		RMA_CAPS | DOMAIN_CAPS,
		FULL_OFFER,
	};
	struct offer offer = offered();

	(void) state;
	assert_int_equal(offer.caps, FULL_OFFER);
	for (size_t i = 0; i < sizeof(wanted) / sizeof(*wanted); i++)
		assert_caps_granted(wanted[i]);
	/* Whatever else is on offer can be asked for too, bit by bit... */
	for (int bit = 0; bit < 64; bit++)
		if (offer.caps & (1ULL << bit))
			assert_caps_granted(1ULL << bit);
	/* ...or all at once. */
	assert_caps_granted(offer.caps);
}

/* Asking for a primary capability leaves the others out. */
static void test_caps_narrowed(void **state)
{
	struct fi_info *hints = hints_alloc(), *info = NULL;

	(void) state;
	hints->caps = FI_MSG | FI_SEND;
	assert_int_equal(match(V_CUR, hints, &info), 0);
	assert_int_equal(info->caps & PRIMARY_CAPS, FI_MSG);
	assert_int_equal(info->caps, FI_MSG | FI_SEND | DOMAIN_CAPS);
	assert_int_equal(info->tx_attr->caps, FI_MSG | FI_SEND);
	/* The receive side keeps FI_MSG: its context caps are trimmed too. */
	assert_int_equal(info->rx_attr->caps, FI_MSG);
	/* No RMA target caps, so nothing is asked of the application. */
	assert_int_equal(info->domain_attr->mr_mode, 0);
	assert_caps_consistent(info);
	fi_freeinfo(info);

	/* RMA alone: no messaging comes with it. */
	info = NULL;
	hints->caps = FI_RMA | FI_WRITE | FI_REMOTE_WRITE;
	hints->domain_attr->mr_mode = BASIC_MAP;
	assert_int_equal(match(V_CUR, hints, &info), 0);
	assert_int_equal(info->caps & PRIMARY_CAPS, FI_RMA);
	assert_int_equal(info->caps,
			 FI_RMA | FI_WRITE | FI_REMOTE_WRITE | DOMAIN_CAPS);
	assert_int_equal(info->tx_attr->caps, FI_RMA | FI_WRITE);
	assert_int_equal(info->rx_attr->caps, FI_RMA | FI_REMOTE_WRITE);
	assert_int_equal(info->domain_attr->mr_mode, MR_REQUIRED);
	assert_caps_consistent(info);
	fi_freeinfo(info);

	/* RMA with no direction means all four (fi_getinfo(3)), so a
	 * target's counter can be bound for them. */
	info = NULL;
	hints->caps = FI_RMA | FI_RMA_EVENT;
	assert_int_equal(match(V_CUR, hints, &info), 0);
	assert_int_equal(info->caps, FI_RMA | FI_RMA_EVENT | FI_READ |
					     FI_WRITE | FI_REMOTE_READ |
					     FI_REMOTE_WRITE | DOMAIN_CAPS);
	assert_int_equal(info->tx_attr->caps, FI_RMA | FI_READ | FI_WRITE);
	assert_int_equal(info->rx_attr->caps, FI_RMA | FI_RMA_EVENT |
						      FI_REMOTE_READ |
						      FI_REMOTE_WRITE);
	assert_caps_consistent(info);
	fi_freeinfo(info);

	/* Messaging alone, from an application that could do RMA; with
	 * neither FI_SEND nor FI_RECV it means both. */
	info = NULL;
	hints->caps = FI_TAGGED;
	assert_int_equal(match(V_CUR, hints, &info), 0);
	assert_int_equal(info->caps,
			 FI_TAGGED | FI_SEND | FI_RECV | DOMAIN_CAPS);
	assert_int_equal(info->tx_attr->caps, FI_TAGGED | FI_SEND);
	assert_int_equal(info->rx_attr->caps, FI_TAGGED | FI_RECV);
	assert_int_equal(info->domain_attr->mr_mode, 0);
	assert_caps_consistent(info);
	fi_freeinfo(info);

	/* Only domain capabilities: no operations come with them. */
	info = NULL;
	hints->caps = FI_LOCAL_COMM;
	hints->domain_attr->mr_mode = 0;
	assert_int_equal(match(V_CUR, hints, &info), 0);
	assert_int_equal(info->caps, DOMAIN_CAPS);
	assert_int_equal(info->tx_attr->caps, 0);
	assert_int_equal(info->rx_attr->caps, 0);
	assert_caps_consistent(info);
	fi_freeinfo(info);
	fi_freeinfo(hints);
}

static void test_caps_not_offered(void **state)
{
	static const uint64_t never[] = {
		FI_HMEM,	 FI_COLLECTIVE, FI_MULTICAST, FI_RMA_PMEM,
		FI_VARIABLE_MSG, FI_SOURCE_ERR, FI_SHARED_AV, FI_RMA | FI_HMEM,
	};
	struct fi_info *hints = hints_alloc();
	struct offer offer = offered();

	(void) state;
	assert_bits_clear(offer.caps, NEVER_OFFERED);
	/* An mr_mode that allows RMA: only the caps can be refused. */
	hints->domain_attr->mr_mode = BASIC_MAP;
	for (size_t i = 0; i < sizeof(never) / sizeof(*never); i++) {
		if (!never[i])
			continue; /* FI_VARIABLE_MSG, which 2.0 removed (0) */
		hints->caps = never[i];
		assert_int_equal(match(V_CUR, hints, NULL), -FI_ENODATA);
		/* One unmet cap spoils a request that is otherwise fine. */
		hints->caps = never[i] | FI_MSG | FI_SEND | FI_RECV;
		assert_int_equal(match(V_CUR, hints, NULL), -FI_ENODATA);
		hints->caps = never[i] | offer.caps;
		assert_int_equal(match(V_CUR, hints, NULL), -FI_ENODATA);
	}
	/* Every bit outside the offer is refused, whatever it is (but what
	 * is granted only when asked for). */
	for (int bit = 0; bit < 64; bit++) {
		if ((offer.caps | ASKED_ONLY_CAPS) & (1ULL << bit))
			continue;
		hints->caps = 1ULL << bit;
		assert_int_equal(match(V_CUR, hints, NULL), -FI_ENODATA);
		hints->caps = (1ULL << bit) | offer.caps;
		assert_int_equal(match(V_CUR, hints, NULL), -FI_ENODATA);
	}
	/* The whole offer itself is fine, so the refusals above are real. */
	hints->caps = offer.caps;
	assert_int_equal(match(V_CUR, hints, NULL), 0);
	fi_freeinfo(hints);
}

static void test_domain_caps(void **state)
{
	struct fi_info *hints = hints_alloc();

	(void) state;
	hints->domain_attr->caps = FI_LOCAL_COMM;
	assert_int_equal(match(V_CUR, hints, NULL), 0);
	hints->domain_attr->caps = FI_LOCAL_COMM | FI_REMOTE_COMM;
	assert_int_equal(match(V_CUR, hints, NULL), 0);
	hints->domain_attr->caps = FI_SHARED_AV;
	assert_int_equal(match(V_CUR, hints, NULL), -FI_ENODATA);
	fi_freeinfo(hints);
}

/* Asks for context caps and checks that exactly those come back. */
static void assert_context_caps(struct fi_info *hints, uint64_t tx_caps,
				uint64_t rx_caps, uint64_t caps)
{
	struct fi_info *info = NULL;

	hints->tx_attr->caps = tx_caps;
	hints->rx_attr->caps = rx_caps;
	assert_int_equal(match(V_CUR, hints, &info), 0);
	assert_int_equal(info->tx_attr->caps, tx_caps);
	assert_int_equal(info->rx_attr->caps, rx_caps);
	assert_int_equal(info->caps, caps);
	assert_caps_consistent(info);
	fi_freeinfo(info);
}

static void test_tx_rx_caps(void **state)
{
	static const uint64_t tx_only[] = {
		FI_SEND,
		FI_READ,
		FI_WRITE,
		FI_FENCE,
	};
	static const uint64_t rx_only[] = {
		FI_RECV,	FI_MULTI_RECV,	 FI_SOURCE,
		FI_REMOTE_READ, FI_REMOTE_WRITE, FI_RMA_EVENT,
	};
	struct fi_info *hints = hints_alloc();
	struct offer offer = offered();

	(void) state;
	hints->domain_attr->mr_mode = BASIC_MAP;
	/* Each context's whole offer can be asked of it. */
	assert_context_caps(hints, offer.tx_caps, offer.rx_caps, FULL_OFFER);
	/* A context gets only what was asked of it. */
	assert_context_caps(hints, MSG_TX_CAPS, MSG_RX_CAPS, FULL_OFFER);
	assert_context_caps(hints, FI_RMA | FI_WRITE,
			    FI_RMA | FI_REMOTE_WRITE | FI_RMA_EVENT,
			    FULL_OFFER);
	assert_context_caps(hints, FI_TAGGED | FI_SEND, FI_TAGGED | FI_RECV,
			    FULL_OFFER);
	/* With mr_mode 0 too: the application's keys change no caps. */
	hints->domain_attr->mr_mode = 0;
	assert_context_caps(hints, MSG_TX_CAPS | FI_TAGGED,
			    MSG_RX_CAPS | FI_TAGGED, FULL_OFFER);
	hints->domain_attr->mr_mode = BASIC_MAP;

	/* Domain capabilities are accepted in the contexts too. */
	hints->tx_attr->caps = FI_LOCAL_COMM;
	hints->rx_attr->caps = FI_REMOTE_COMM;
	assert_int_equal(match(V_CUR, hints, NULL), 0);

	/*
	 * With caps asked of the endpoint, a context may not ask for a
	 * primary capability beyond them.
	 */
	hints->caps = FI_MSG | FI_RMA;
	assert_context_caps(hints, FI_RMA, FI_MSG,
			    with_directions(FI_MSG | FI_RMA) | DOMAIN_CAPS);
	hints->tx_attr->caps = FI_TAGGED;
	hints->rx_attr->caps = 0;
	assert_int_equal(match(V_CUR, hints, NULL), -FI_ENODATA);
	hints->tx_attr->caps = FI_MSG | FI_TAGGED | FI_SEND;
	assert_int_equal(match(V_CUR, hints, NULL), -FI_ENODATA);
	hints->tx_attr->caps = 0;
	hints->rx_attr->caps = FI_TAGGED | FI_RECV;
	assert_int_equal(match(V_CUR, hints, NULL), -FI_ENODATA);
	hints->caps = FI_MSG;
	hints->rx_attr->caps = FI_RMA;
	assert_int_equal(match(V_CUR, hints, NULL), -FI_ENODATA);
	hints->rx_attr->caps = 0;
	hints->tx_attr->caps = FI_RMA | FI_WRITE;
	assert_int_equal(match(V_CUR, hints, NULL), -FI_ENODATA);
	/* The same context caps are fine once the endpoint asks for them. */
	hints->caps = FI_MSG | FI_RMA;
	assert_int_equal(match(V_CUR, hints, NULL), 0);
	hints->caps = 0;

	/* Never offered, on either side, alone or with messaging. */
	for (int bit = 0; bit < 64; bit++) {
		uint64_t cap = 1ULL << bit;

		if (!(cap & NEVER_OFFERED))
			continue;
		hints->tx_attr->caps = cap;
		hints->rx_attr->caps = 0;
		assert_int_equal(match(V_CUR, hints, NULL), -FI_ENODATA);
		hints->tx_attr->caps = cap | MSG_TX_CAPS;
		assert_int_equal(match(V_CUR, hints, NULL), -FI_ENODATA);
		hints->tx_attr->caps = 0;
		hints->rx_attr->caps = cap;
		assert_int_equal(match(V_CUR, hints, NULL), -FI_ENODATA);
		hints->rx_attr->caps = cap | MSG_RX_CAPS;
		assert_int_equal(match(V_CUR, hints, NULL), -FI_ENODATA);
	}

	/*
	 * Receive-side bits in a transmit context's caps, and vice versa,
	 * are ignored, as libfabric's providers do (applications copy the
	 * endpoint's caps into both), and never offered there.
	 */
	hints->rx_attr->caps = 0;
	for (size_t i = 0; i < sizeof(rx_only) / sizeof(*rx_only); i++) {
		struct fi_info *info = NULL;

		hints->tx_attr->caps = rx_only[i] | FI_RMA | FI_WRITE;
		assert_int_equal(match(V_CUR, hints, &info), 0);
		assert_bits_clear(info->tx_attr->caps, rx_only[i]);
		fi_freeinfo(info);
	}
	hints->tx_attr->caps = 0;
	for (size_t i = 0; i < sizeof(tx_only) / sizeof(*tx_only); i++) {
		struct fi_info *info = NULL;

		hints->rx_attr->caps = tx_only[i] | FI_MSG | FI_RECV;
		assert_int_equal(match(V_CUR, hints, &info), 0);
		assert_bits_clear(info->rx_attr->caps, tx_only[i]);
		fi_freeinfo(info);
	}
	fi_freeinfo(hints);
}

static void test_addr_format(void **state)
{
	struct fi_info *hints = hints_alloc();

	(void) state;
	hints->addr_format = FI_SOCKADDR_IN;
	assert_int_equal(match(V_CUR, hints, NULL), 0);
	hints->addr_format = FI_SOCKADDR;
	assert_int_equal(match(V_CUR, hints, NULL), 0);
	hints->addr_format = FI_FORMAT_UNSPEC;
	assert_int_equal(match(V_CUR, hints, NULL), 0);
	hints->addr_format = FI_SOCKADDR_IB;
	assert_int_equal(match(V_CUR, hints, NULL), -FI_ENODATA);
	hints->addr_format = FI_SOCKADDR_IN6;
	assert_int_equal(match(V_CUR, hints, NULL), -FI_ENODATA);
	fi_freeinfo(hints);
}

/*
 * The tag format asked for comes back: FI_TAG_MPI (1) and FI_TAG_CCL (2)
 * of libfabric 2.x, or a 1.x bit-field format; without one, all 64 bits.
 */
static void test_tag_format(void **state)
{
	static const uint64_t formats[] = { 1, 2, 0x0000FFFF0000FFFFULL };
	struct fi_info *hints = hints_alloc(), *info = NULL;

	(void) state;
	hints->caps = FI_TAGGED;
	assert_int_equal(match(V_CUR, hints, &info), 0);
	assert_int_equal(info->ep_attr->mem_tag_format, 0xAAAAAAAAAAAAAAAAULL);
	fi_freeinfo(info);
	for (size_t i = 0; i < sizeof(formats) / sizeof(*formats); i++) {
		info = NULL;
		hints->ep_attr->mem_tag_format = formats[i];
		assert_int_equal(match(V_CUR, hints, &info), 0);
		assert_int_equal(info->ep_attr->mem_tag_format, formats[i]);
		fi_freeinfo(info);
	}
	fi_freeinfo(hints);
}

static void test_names(void **state)
{
	struct fi_info *hints = hints_alloc();

	(void) state;
	hints->fabric_attr->name = strdup("10.9.9.0/24");
	hints->domain_attr->name = strdup("rxe0");
	assert_int_equal(match(V_CUR, hints, NULL), 0);

	free(hints->fabric_attr->name);
	hints->fabric_attr->name = strdup("10.9.8.0/24");
	assert_int_equal(match(V_CUR, hints, NULL), -FI_ENODATA);

	free(hints->fabric_attr->name);
	hints->fabric_attr->name = NULL;
	free(hints->domain_attr->name);
	hints->domain_attr->name = strdup("rxe1");
	assert_int_equal(match(V_CUR, hints, NULL), -FI_ENODATA);
	fi_freeinfo(hints);
}

static void test_progress(void **state)
{
	struct fi_info *hints = hints_alloc(), *info = NULL;

	(void) state;
	/* data progress is either, as asked (automatic runs the domain's
	 * thread); nothing else */
	hints->domain_attr->data_progress = FI_PROGRESS_AUTO;
	assert_int_equal(match(V_CUR, hints, &info), 0);
	assert_int_equal(info->domain_attr->data_progress, FI_PROGRESS_AUTO);
	fi_freeinfo(info);
	info = NULL;
	hints->domain_attr->data_progress = (enum fi_progress) 7;
	assert_int_equal(match(V_CUR, hints, NULL), -FI_ENODATA);
	hints->domain_attr->data_progress = FI_PROGRESS_MANUAL;
	assert_int_equal(match(V_CUR, hints, &info), 0);
	assert_int_equal(info->domain_attr->data_progress, FI_PROGRESS_MANUAL);
	fi_freeinfo(info);
	info = NULL;
	/* connections are made by a thread: control progress is automatic,
	 * which also serves an application that would drive it itself */
	hints->domain_attr->control_progress = FI_PROGRESS_AUTO;
	assert_int_equal(match(V_CUR, hints, NULL), 0);
	hints->domain_attr->control_progress = FI_PROGRESS_MANUAL;
	assert_int_equal(match(V_CUR, hints, NULL), 0);
	/* the answer says what was asked for, as libfabric's util code does */
	assert_int_equal(match(V_CUR, hints, &info), 0);
	assert_int_equal(info->domain_attr->control_progress,
			 FI_PROGRESS_MANUAL);
	fi_freeinfo(info);
	fi_freeinfo(hints);
}

/* Before API 1.5 mr_mode is an enum, and FI_MR_BASIC is what we do. */
static void test_mr_mode_v1_0(void **state)
{
	static const uint32_t versions[] = { V(1, 0), V(1, 4) };
	static const uint64_t caps[] = { 0, FI_MSG | FI_RMA, FULL_OFFER };
	struct fi_info *hints = hints_alloc(), *info = NULL;

	(void) state;
	for (size_t v = 0; v < sizeof(versions) / sizeof(*versions); v++) {
		for (size_t c = 0; c < sizeof(caps) / sizeof(*caps); c++) {
			uint64_t want = caps[c] ? with_directions(caps[c]) |
							  DOMAIN_CAPS :
						  FULL_OFFER;

			hints->caps = caps[c];
			/* Unspecified and basic both get basic, with RMA. */
			for (size_t m = 0; m < 2; m++) {
				hints->domain_attr->mr_mode =
					m ? NRMA_MR_UNSPEC : NRMA_MR_BASIC;
				info = NULL;
				assert_int_equal(
					match(versions[v], hints, &info), 0);
				assert_int_equal(info->domain_attr->mr_mode,
						 NRMA_MR_BASIC);
				assert_int_equal(info->caps, want);
				assert_caps_consistent(info);
				fi_freeinfo(info);
			}

			hints->domain_attr->mr_mode = NRMA_MR_SCALABLE;
			assert_int_equal(match(versions[v], hints, NULL),
					 -FI_ENODATA);
			/* The 1.5 bits are not values of the old enum. */
			hints->domain_attr->mr_mode = BASIC_MAP;
			assert_int_equal(match(versions[v], hints, NULL),
					 -FI_ENODATA);
		}
		/* Messaging alone is basic too, to a pre-1.5 application. */
		hints->caps = FI_MSG;
		hints->domain_attr->mr_mode = NRMA_MR_UNSPEC;
		info = NULL;
		assert_int_equal(match(versions[v], hints, &info), 0);
		assert_int_equal(info->domain_attr->mr_mode, NRMA_MR_BASIC);
		assert_int_equal(info->caps,
				 FI_MSG | FI_SEND | FI_RECV | DOMAIN_CAPS);
		fi_freeinfo(info);
	}
	fi_freeinfo(hints);
}

/* Matches hints at version v and returns the narrowed info. */
static struct fi_info *match_ok(uint32_t v, const struct fi_info *hints)
{
	struct fi_info *info = NULL;

	assert_int_equal(match(v, hints, &info), 0);
	assert_non_null(info);
	assert_caps_consistent(info);
	return info;
}

static void test_mr_mode_v1_5(void **state)
{
	static const uint32_t versions[] = { FI_VERSION(1, 5), V_CUR };
	/* Old enum values that do not stand alone, or mix with the bits. */
	static const int refused[] = {
		NRMA_MR_SCALABLE,
		NRMA_MR_BASIC | NRMA_MR_SCALABLE,
		NRMA_MR_BASIC | FI_MR_LOCAL,
		NRMA_MR_BASIC | BASIC_MAP,
		NRMA_MR_SCALABLE | BASIC_MAP,
		NRMA_MR_SCALABLE | FI_MR_LOCAL,
	};
	/* mr_modes that lack FI_MR_ALLOCATED or FI_MR_PROV_KEY. */
	static const int partial[] = {
		NRMA_MR_UNSPEC,
		FI_MR_LOCAL,
		FI_MR_RMA_EVENT,
		FI_MR_ENDPOINT,
		FI_MR_VIRT_ADDR | FI_MR_PROV_KEY,
		FI_MR_VIRT_ADDR | FI_MR_ALLOCATED,
		FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED |
			FI_MR_RMA_EVENT,
	};
	/* Caps that make the endpoint an RMA target, asked by name. */
	static const uint64_t target[] = {
		FI_RMA,
		FI_MSG | FI_RMA,
		FI_RMA | FI_READ | FI_WRITE,
		FI_RMA | FI_REMOTE_READ,
		FI_RMA | FI_REMOTE_WRITE,
		FI_REMOTE_READ,
		FI_REMOTE_WRITE,
		FULL_OFFER,
	};
	struct fi_info *hints = hints_alloc(), *info;

	(void) state;
	for (size_t i = 0; i < sizeof(versions) / sizeof(*versions); i++) {
		uint32_t v = versions[i];

		/* NRMA_MR_BASIC alone still means basic, and allows RMA. */
		hints->caps = 0;
		hints->domain_attr->mr_mode = NRMA_MR_BASIC;
		info = match_ok(v, hints);
		assert_int_equal(info->domain_attr->mr_mode, NRMA_MR_BASIC);
		assert_int_equal(info->caps, FULL_OFFER);
		fi_freeinfo(info);
		hints->caps = FI_MSG | FI_RMA | FI_RMA_EVENT;
		info = match_ok(v, hints);
		assert_int_equal(info->domain_attr->mr_mode, NRMA_MR_BASIC);
		assert_int_equal(info->caps,
				 with_directions(hints->caps) | DOMAIN_CAPS);
		fi_freeinfo(info);

		for (size_t m = 0; m < sizeof(refused) / sizeof(*refused);
		     m++) {
			hints->domain_attr->mr_mode = refused[m];
			hints->caps = 0;
			assert_int_equal(match(v, hints, NULL), -FI_ENODATA);
			hints->caps = FI_MSG;
			assert_int_equal(match(v, hints, NULL), -FI_ENODATA);
			hints->caps = FI_MSG | FI_RMA;
			assert_int_equal(match(v, hints, NULL), -FI_ENODATA);
		}

		/* Without FI_MR_VIRT_ADDR: offsets are what we do anyway. */
		hints->caps = 0;
		hints->domain_attr->mr_mode = MR_REQUIRED;
		info = match_ok(v, hints);
		assert_int_equal(info->domain_attr->mr_mode, MR_REQUIRED);
		assert_int_equal(info->caps, FULL_OFFER);
		fi_freeinfo(info);

		/* BASIC_MAP, with more besides: exactly MR_REQUIRED back. */
		hints->caps = 0;
		hints->domain_attr->mr_mode = FI_MR_LOCAL | BASIC_MAP;
		info = match_ok(v, hints);
		assert_int_equal(info->domain_attr->mr_mode, MR_REQUIRED);
		assert_int_equal(info->caps, FULL_OFFER);
		assert_int_equal(info->tx_attr->caps, TX_OFFER);
		assert_int_equal(info->rx_attr->caps, RX_OFFER);
		fi_freeinfo(info);
		hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_ENDPOINT |
					      FI_MR_MMU_NOTIFY | BASIC_MAP;
		hints->caps = FI_MSG | FI_RMA;
		info = match_ok(v, hints);
		assert_int_equal(info->domain_attr->mr_mode, MR_REQUIRED);
		assert_int_equal(info->caps, with_directions(FI_MSG | FI_RMA) |
						     DOMAIN_CAPS);
		fi_freeinfo(info);

		/* FI_MR_RMA_EVENT comes back when FI_RMA_EVENT does. */
		hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_RMA_EVENT |
					      BASIC_MAP;
		hints->caps = 0;
		info = match_ok(v, hints);
		assert_int_equal(info->domain_attr->mr_mode,
				 MR_REQUIRED | FI_MR_RMA_EVENT);
		assert_bits_set(info->caps, FI_RMA_EVENT);
		assert_bits_set(info->rx_attr->caps, FI_RMA_EVENT);
		fi_freeinfo(info);
		hints->caps = FI_RMA | FI_RMA_EVENT;
		info = match_ok(v, hints);
		assert_int_equal(info->domain_attr->mr_mode,
				 MR_REQUIRED | FI_MR_RMA_EVENT);
		fi_freeinfo(info);
		/* ...and not when it does not. */
		hints->caps = FI_RMA;
		info = match_ok(v, hints);
		assert_int_equal(info->domain_attr->mr_mode, MR_REQUIRED);
		assert_bits_clear(info->caps, FI_RMA_EVENT);
		fi_freeinfo(info);
		hints->caps = 0;
		hints->rx_attr->caps = FI_MSG | FI_RECV;
		info = match_ok(v, hints);
		assert_int_equal(info->rx_attr->caps, FI_MSG | FI_RECV);
		assert_bits_set(info->caps, FI_RMA_EVENT);
		assert_int_equal(info->domain_attr->mr_mode,
				 MR_REQUIRED | FI_MR_RMA_EVENT);
		fi_freeinfo(info);
		hints->rx_attr->caps = 0;

		/*
		 * Without FI_MR_PROV_KEY or FI_MR_ALLOCATED: RMA all the
		 * same, with keys the application picks (two bytes) for the
		 * first, and either left out of the mr_mode that comes back.
		 */
		for (size_t m = 0; m < sizeof(partial) / sizeof(*partial);
		     m++) {
			uint64_t kept = MR_REQUIRED & (uint64_t) partial[m];

			hints->domain_attr->mr_mode = partial[m];
			for (size_t c = 0; c < sizeof(target) / sizeof(*target);
			     c++) {
				hints->caps = target[c];
				info = match_ok(v, hints);
				assert_int_equal(info->domain_attr->mr_mode &
							 ~FI_MR_RMA_EVENT,
						 kept);
				assert_caps_consistent(info);
				fi_freeinfo(info);
			}

			hints->caps = 0;
			info = match_ok(v, hints);
			assert_int_equal(info->caps, FULL_OFFER);
			assert_int_equal(info->domain_attr->mr_key_size,
					 kept & FI_MR_PROV_KEY ? 8 : 2);
			fi_freeinfo(info);

			/* Messaging asked by name needs nothing of it. */
			hints->caps = FI_MSG | FI_TAGGED;
			info = match_ok(v, hints);
			assert_int_equal(info->caps,
					 with_directions(hints->caps) |
						 DOMAIN_CAPS);
			assert_int_equal(info->domain_attr->mr_mode, 0);
			assert_int_equal(info->domain_attr->mr_key_size, 8);
			fi_freeinfo(info);
		}

		/* With BASIC_MAP but no RMA target caps, none is needed. */
		hints->domain_attr->mr_mode = FI_MR_LOCAL | BASIC_MAP;
		hints->caps = FI_MSG;
		info = match_ok(v, hints);
		assert_int_equal(info->domain_attr->mr_mode, 0);
		fi_freeinfo(info);
		hints->caps = 0;
	}
	fi_freeinfo(hints);
}

static void test_tx_size(void **state)
{
	struct fi_info *hints = hints_alloc(), *info = NULL;

	(void) state;
	hints->tx_attr->size = 257;
	assert_int_equal(match(V_CUR, hints, NULL), -FI_ENODATA);
	hints->tx_attr->size = 256;
	assert_int_equal(match(V_CUR, hints, &info), 0);
	assert_int_equal(info->tx_attr->size, 256);
	fi_freeinfo(info);
	hints->tx_attr->size = 100;
	assert_int_equal(match(V_CUR, hints, &info), 0);
	assert_int_equal(info->tx_attr->size, 100);
	/* Unhinted limits keep the offered values. */
	assert_int_equal(info->tx_attr->iov_limit, NRMA_IOV_LIMIT);
	assert_int_equal(info->tx_attr->inject_size, nrma_params.eager_size);
	assert_int_equal(info->rx_attr->size, 512);
	fi_freeinfo(info);

	hints->tx_attr->size = 0;
	hints->tx_attr->iov_limit = NRMA_IOV_LIMIT + 1;
	assert_int_equal(match(V_CUR, hints, NULL), -FI_ENODATA);
	hints->tx_attr->iov_limit = NRMA_IOV_LIMIT;
	assert_int_equal(match(V_CUR, hints, &info), 0);
	assert_int_equal(info->tx_attr->iov_limit, NRMA_IOV_LIMIT);
	fi_freeinfo(info);
	hints->tx_attr->iov_limit = 2;
	assert_int_equal(match(V_CUR, hints, &info), 0);
	assert_int_equal(info->tx_attr->iov_limit, 2);
	fi_freeinfo(info);

	hints->tx_attr->iov_limit = 0;
	hints->tx_attr->rma_iov_limit = 2;
	assert_int_equal(match(V_CUR, hints, NULL), -FI_ENODATA);
	hints->tx_attr->rma_iov_limit = 0;
	fi_freeinfo(hints);
}

/* Injection goes up to the eager size. */
static void test_inject_size(void **state)
{
	struct fi_info *hints = hints_alloc(), *info = NULL;

	(void) state;
	hints->tx_attr->inject_size = nrma_params.eager_size + 1;
	assert_int_equal(match(V_CUR, hints, NULL), -FI_ENODATA);
	hints->tx_attr->inject_size = nrma_params.eager_size;
	assert_int_equal(match(V_CUR, hints, &info), 0);
	assert_int_equal(info->tx_attr->inject_size, nrma_params.eager_size);
	fi_freeinfo(info);
	/* Less than that is granted, with at least what was asked. */
	hints->tx_attr->inject_size = 1;
	assert_int_equal(match(V_CUR, hints, &info), 0);
	assert_true(info->tx_attr->inject_size >= 1);
	assert_true(info->tx_attr->inject_size <= nrma_params.eager_size);
	fi_freeinfo(info);
	fi_freeinfo(hints);
}

/*
 * RC executes an endpoint's requests in order at the target: sends after
 * sends, and reads and writes after writes.  Nothing overtakes a read.
 */
static void test_msg_order(void **state)
{
	static const uint64_t met[] = {
		FI_ORDER_SAS,
		FI_ORDER_RAW,
		FI_ORDER_WAW,
		FI_ORDER_SAW,
		FI_ORDER_SAS | FI_ORDER_SAW,
		FI_ORDER_RAW | FI_ORDER_WAW,
		MSG_ORDER,
	};
	static const uint64_t unmet[] = {
		FI_ORDER_WAR,
		FI_ORDER_RAR,
		FI_ORDER_RAS,
		FI_ORDER_WAS,
		FI_ORDER_SAR,
		ORDER_STRICT,
		FI_ORDER_SAS | FI_ORDER_RAR,
		MSG_ORDER | FI_ORDER_WAR,
	};
	struct fi_info *hints = hints_alloc(), *info = NULL;

	(void) state;
	for (size_t i = 0; i < sizeof(met) / sizeof(*met); i++) {
		hints->tx_attr->msg_order = met[i];
		hints->rx_attr->msg_order = met[i];
		info = NULL;
		assert_int_equal(match(V_CUR, hints, &info), 0);
		/* The ordering is a property of RC: all of it comes back. */
		assert_int_equal(info->tx_attr->msg_order, MSG_ORDER);
		assert_int_equal(info->rx_attr->msg_order, MSG_ORDER);
		fi_freeinfo(info);
	}

	for (size_t i = 0; i < sizeof(unmet) / sizeof(*unmet); i++) {
		hints->tx_attr->msg_order = unmet[i];
		hints->rx_attr->msg_order = 0;
		assert_int_equal(match(V_CUR, hints, NULL), -FI_ENODATA);
		hints->tx_attr->msg_order = 0;
		hints->rx_attr->msg_order = unmet[i];
		assert_int_equal(match(V_CUR, hints, NULL), -FI_ENODATA);
	}
	hints->rx_attr->msg_order = 0;

	/* Completions come in no particular order. */
	hints->tx_attr->comp_order = ORDER_STRICT;
	assert_int_equal(match(V_CUR, hints, NULL), -FI_ENODATA);
	hints->tx_attr->comp_order = 0;
	hints->rx_attr->comp_order = ORDER_STRICT;
	assert_int_equal(match(V_CUR, hints, NULL), -FI_ENODATA);
	hints->rx_attr->comp_order = NRMA_ORDER_NONE;
	assert_int_equal(match(V_CUR, hints, NULL), 0);
	fi_freeinfo(hints);
}

static void test_rx_limits(void **state)
{
	struct fi_info *hints = hints_alloc(), *info = NULL;

	(void) state;
	hints->rx_attr->iov_limit = NRMA_IOV_LIMIT + 1;
	assert_int_equal(match(V_CUR, hints, NULL), -FI_ENODATA);
	hints->rx_attr->iov_limit = NRMA_IOV_LIMIT;
	assert_int_equal(match(V_CUR, hints, &info), 0);
	assert_int_equal(info->rx_attr->iov_limit, NRMA_IOV_LIMIT);
	fi_freeinfo(info);
	hints->rx_attr->iov_limit = 1;
	assert_int_equal(match(V_CUR, hints, &info), 0);
	assert_int_equal(info->rx_attr->iov_limit, 1);
	/* The transmit side keeps its own. */
	assert_int_equal(info->tx_attr->iov_limit, NRMA_IOV_LIMIT);
	fi_freeinfo(info);

	hints->rx_attr->iov_limit = 0;
	hints->rx_attr->size = 513;
	assert_int_equal(match(V_CUR, hints, NULL), -FI_ENODATA);
	hints->rx_attr->size = 64;
	assert_int_equal(match(V_CUR, hints, &info), 0);
	assert_int_equal(info->rx_attr->size, 64);
	fi_freeinfo(info);
	fi_freeinfo(hints);
}

static void test_ep_limits(void **state)
{
	struct fi_info *hints = hints_alloc();

	(void) state;
	hints->ep_attr->max_msg_size = 8 * MiB + 1;
	assert_int_equal(match(V_CUR, hints, NULL), -FI_ENODATA);
	hints->ep_attr->max_msg_size = 8 * MiB;
	assert_int_equal(match(V_CUR, hints, NULL), 0);
	hints->ep_attr->max_msg_size = 0;

	/* Ordered reads and writes after writes, up to a whole message. */
	hints->ep_attr->max_order_raw_size = 8 * MiB + 1;
	assert_int_equal(match(V_CUR, hints, NULL), -FI_ENODATA);
	hints->ep_attr->max_order_raw_size = 8 * MiB;
	assert_int_equal(match(V_CUR, hints, NULL), 0);
	hints->ep_attr->max_order_waw_size = 8 * MiB + 1;
	assert_int_equal(match(V_CUR, hints, NULL), -FI_ENODATA);
	hints->ep_attr->max_order_waw_size = 8 * MiB;
	assert_int_equal(match(V_CUR, hints, NULL), 0);
	hints->ep_attr->max_order_raw_size = 0;
	hints->ep_attr->max_order_waw_size = 0;
	/* No write after a read is ordered, however small. */
	hints->ep_attr->max_order_war_size = 1;
	assert_int_equal(match(V_CUR, hints, NULL), -FI_ENODATA);
	hints->ep_attr->max_order_war_size = 0;
	assert_int_equal(match(V_CUR, hints, NULL), 0);

	/* Up to NRMA_SEP_CTX_MAX contexts: a scalable endpoint's. */
	hints->ep_attr->tx_ctx_cnt = NRMA_SEP_CTX_MAX + 1;
	assert_int_equal(match(V_CUR, hints, NULL), -FI_ENODATA);
	hints->ep_attr->tx_ctx_cnt = NRMA_SEP_CTX_MAX;
	assert_int_equal(match(V_CUR, hints, NULL), 0);
	hints->ep_attr->rx_ctx_cnt = NRMA_SEP_CTX_MAX + 1;
	assert_int_equal(match(V_CUR, hints, NULL), -FI_ENODATA);
	fi_freeinfo(hints);
}

static void test_domain_limits(void **state)
{
	struct fi_info *hints = hints_alloc();

	(void) state;
	hints->domain_attr->cq_data_size = 8;
	assert_int_equal(match(V_CUR, hints, NULL), -FI_ENODATA);
	hints->domain_attr->cq_data_size = 4;
	assert_int_equal(match(V_CUR, hints, NULL), 0);

	hints->domain_attr->mr_iov_limit = 2;
	assert_int_equal(match(V_CUR, hints, NULL), -FI_ENODATA);
	hints->domain_attr->mr_iov_limit = 1;
	assert_int_equal(match(V_CUR, hints, NULL), 0);

	/* Keys the application picks (mr_mode 0) are two bytes long. */
	hints->domain_attr->mr_key_size = 8;
	assert_int_equal(match(V_CUR, hints, NULL), -FI_ENODATA);
	hints->domain_attr->mr_key_size = 2;
	assert_int_equal(match(V_CUR, hints, NULL), 0);
	hints->domain_attr->mr_mode = FI_MR_PROV_KEY;
	hints->domain_attr->mr_key_size = 16;
	assert_int_equal(match(V_CUR, hints, NULL), -FI_ENODATA);
	hints->domain_attr->mr_key_size = 8;
	assert_int_equal(match(V_CUR, hints, NULL), 0);
	hints->domain_attr->mr_mode = 0;
	hints->domain_attr->mr_key_size = 0;

	hints->domain_attr->cq_cnt = 1048577;
	assert_int_equal(match(V_CUR, hints, NULL), -FI_ENODATA);
	hints->domain_attr->cq_cnt = 0;
	hints->domain_attr->mr_cnt = nrma_params.mr_max + 1;
	assert_int_equal(match(V_CUR, hints, NULL), -FI_ENODATA);
	hints->domain_attr->mr_cnt = 0;
	hints->domain_attr->cntr_cnt = nrma_params.cntr_max + 1;
	assert_int_equal(match(V_CUR, hints, NULL), -FI_ENODATA);
	hints->domain_attr->cntr_cnt = 0;
	hints->domain_attr->max_ep_tx_ctx = NRMA_SEP_CTX_MAX + 1;
	assert_int_equal(match(V_CUR, hints, NULL), -FI_ENODATA);
	hints->domain_attr->max_ep_tx_ctx = NRMA_SEP_CTX_MAX;
	assert_int_equal(match(V_CUR, hints, NULL), 0);
	fi_freeinfo(hints);
}

static void test_threading_av_type(void **state)
{
	struct fi_info *hints = hints_alloc(), *info = NULL;

	(void) state;
	hints->domain_attr->threading = FI_THREAD_DOMAIN;
	hints->domain_attr->av_type = FI_AV_MAP;
	assert_int_equal(match(V_CUR, hints, &info), 0);
	assert_int_equal(info->domain_attr->threading, FI_THREAD_DOMAIN);
	assert_int_equal(info->domain_attr->av_type, FI_AV_MAP);
	fi_freeinfo(info);

	hints->domain_attr->threading = FI_THREAD_UNSPEC;
	hints->domain_attr->av_type = FI_AV_TABLE;
	assert_int_equal(match(V_CUR, hints, &info), 0);
	assert_int_equal(info->domain_attr->threading, FI_THREAD_SAFE);
	assert_int_equal(info->domain_attr->av_type, FI_AV_TABLE);
	fi_freeinfo(info);
	fi_freeinfo(hints);
}

static void test_op_flags_echoed(void **state)
{
	struct fi_info *hints = hints_alloc(), *info = NULL;

	(void) state;
	hints->tx_attr->op_flags = FI_COMPLETION;
	hints->rx_attr->op_flags = FI_COMPLETION;
	assert_int_equal(match(V_CUR, hints, &info), 0);
	assert_int_equal(info->tx_attr->op_flags, FI_COMPLETION);
	assert_int_equal(info->rx_attr->op_flags, FI_COMPLETION);
	assert_int_equal(info->fabric_attr->api_version, V_CUR);
	fi_freeinfo(info);
	fi_freeinfo(hints);
}

/* Persistent memory is not there to commit to; nor is there a tx MULTI_RECV. */
static void test_op_flags_refused(void **state)
{
	struct fi_info *hints = hints_alloc(), *info = NULL;

	(void) state;
	hints->tx_attr->op_flags = FI_DELIVERY_COMPLETE | FI_COMMIT_COMPLETE;
	assert_int_equal(match(V_CUR, hints, &info), -FI_ENODATA);
	hints->tx_attr->op_flags = FI_DELIVERY_COMPLETE;
	hints->rx_attr->op_flags = FI_INJECT;
	assert_int_equal(match(V_CUR, hints, &info), -FI_ENODATA);
	hints->rx_attr->op_flags = FI_MULTI_RECV | FI_COMPLETION;
	assert_int_equal(match(V_CUR, hints, &info), 0);
	assert_int_equal(info->tx_attr->op_flags, FI_DELIVERY_COMPLETE);
	fi_freeinfo(info);
	fi_freeinfo(hints);
}

/* nrma_attr_getinfo over a synthetic device table (numeric addresses only). */

static struct nrma_device two_devs[2];

static int getinfo_setup(void **state)
{
	setup(state);
	two_devs[0] = test_dev;
	rxe_device(&two_devs[1], "rxe1", "192.168.1.77", "255.255.0.0");
	nrma_devices = two_devs;
	nrma_device_count = 2;
	return 0;
}

static int getinfo_teardown(void **state)
{
	(void) state;
	nrma_devices = NULL;
	nrma_device_count = 0;
	return 0;
}

static void assert_sin(const void *addr, size_t len, const char *ip,
		       uint16_t port)
{
	const struct sockaddr_in *sin = addr;
	char buf[INET_ADDRSTRLEN];

	assert_non_null(addr);
	assert_int_equal(len, sizeof(*sin));
	assert_int_equal(sin->sin_family, AF_INET);
	assert_non_null(inet_ntop(AF_INET, &sin->sin_addr, buf, sizeof(buf)));
	assert_string_equal(buf, ip);
	assert_int_equal(ntohs(sin->sin_port), port);
}

static void test_getinfo_all_devices(void **state)
{
	struct fi_info *info = NULL;

	(void) state;
	assert_int_equal(nrma_attr_getinfo(V_CUR, NULL, NULL, 0, NULL, &info),
			 0);
	assert_non_null(info);
	assert_non_null(info->next);
	assert_null(info->next->next);
	assert_string_equal(info->domain_attr->name, "rxe0");
	assert_string_equal(info->fabric_attr->name, "10.9.9.0/24");
	assert_sin(info->src_addr, info->src_addrlen, "10.9.9.1", 0);
	assert_null(info->dest_addr);
	assert_string_equal(info->next->domain_attr->name, "rxe1");
	assert_string_equal(info->next->fabric_attr->name, "192.168.0.0/16");
	assert_sin(info->next->src_addr, info->next->src_addrlen,
		   "192.168.1.77", 0);
	/* Without hints, everything on offer, RMA included. */
	for (struct fi_info *cur = info; cur; cur = cur->next) {
		assert_int_equal(cur->caps, FULL_OFFER);
		assert_int_equal(cur->domain_attr->mr_mode, MR_REQUIRED);
		assert_caps_consistent(cur);
	}
	fi_freeinfo(info);
}

static void test_getinfo_source(void **state)
{
	struct fi_info *info = NULL;

	(void) state;
	assert_int_equal(nrma_attr_getinfo(V_CUR, "192.168.1.77", "7000",
					   FI_SOURCE | FI_NUMERICHOST, NULL,
					   &info),
			 0);
	assert_null(info->next);
	assert_string_equal(info->domain_attr->name, "rxe1");
	assert_sin(info->src_addr, info->src_addrlen, "192.168.1.77", 7000);
	fi_freeinfo(info);

	/* A service alone binds that port on every device. */
	info = NULL;
	assert_int_equal(nrma_attr_getinfo(V_CUR, NULL, "7001", 0, NULL, &info),
			 0);
	assert_non_null(info->next);
	assert_sin(info->src_addr, info->src_addrlen, "10.9.9.1", 7001);
	assert_sin(info->next->src_addr, info->next->src_addrlen,
		   "192.168.1.77", 7001);
	fi_freeinfo(info);

	info = NULL;
	assert_int_equal(nrma_attr_getinfo(V_CUR, "10.9.9.2", "7000",
					   FI_SOURCE | FI_NUMERICHOST, NULL,
					   &info),
			 -FI_ENODATA);
	assert_null(info);
}

static void test_getinfo_dest(void **state)
{
	struct fi_info *info = NULL;

	(void) state;
	assert_int_equal(nrma_attr_getinfo(V_CUR, "10.9.9.5", "7002",
					   FI_NUMERICHOST, NULL, &info),
			 0);
	assert_non_null(info->next);
	assert_sin(info->dest_addr, info->dest_addrlen, "10.9.9.5", 7002);
	assert_sin(info->src_addr, info->src_addrlen, "10.9.9.1", 0);
	fi_freeinfo(info);
}

/*
 * Connected endpoints only for FI_EP_MSG hints: no sources or directed
 * receives (one peer), and the hints' handle (a passive endpoint whose
 * address is to be taken) comes back.
 */
static void test_getinfo_msg(void **state)
{
	struct fi_info *hints = hints_alloc(), *info = NULL;
	struct fid pep = { .fclass = FI_CLASS_PEP };

	(void) state;
	assert_int_equal(nrma_attr_getinfo(V_CUR, NULL, NULL, 0, hints, &info),
			 0);
	for (struct fi_info *cur = info; cur; cur = cur->next)
		assert_int_equal(cur->ep_attr->type, FI_EP_RDM);
	fi_freeinfo(info);

	info = NULL;
	hints->ep_attr->type = FI_EP_MSG;
	hints->handle = &pep;
	assert_int_equal(nrma_attr_getinfo(V_CUR, NULL, NULL, 0, hints, &info),
			 0);
	for (struct fi_info *cur = info; cur; cur = cur->next) {
		assert_int_equal(cur->ep_attr->type, FI_EP_MSG);
		assert_ptr_equal(cur->handle, &pep);
		assert_int_equal(cur->caps & (FI_SOURCE | FI_DIRECTED_RECV), 0);
		assert_bits_set(cur->caps, FI_MSG | FI_TAGGED);
		assert_caps_consistent(cur);
		cur->handle = NULL;
	}
	fi_freeinfo(info);

	info = NULL;
	hints->handle = NULL;
	hints->caps = FI_MSG | FI_SOURCE;
	assert_int_equal(nrma_attr_getinfo(V_CUR, NULL, NULL, 0, hints, &info),
			 -FI_ENODATA);
	fi_freeinfo(hints);
}

/*
 * libfabric 2.x: tagged multi-receive buffers and exact directed receives
 * (which refuse FI_ADDR_UNSPEC) only to hints that ask, also through the
 * receive context's caps alone; exact directed ones never on connected
 * endpoints.
 */
static void test_receive_caps_2x(void **state)
{
	struct fi_info *hints = hints_alloc(), *info = NULL;

	(void) state;
	if (!NRMA_EXACT_DIRECTED_RECV) {
		fi_freeinfo(hints);
		skip();
	}
	assert_int_equal(match(V_CUR, hints, &info), 0);
	assert_bits_clear(info->caps, ASKED_ONLY_CAPS);
	assert_bits_clear(info->rx_attr->caps, ASKED_ONLY_CAPS);
	fi_freeinfo(info);
	hints->rx_attr->caps = FI_TAGGED | FI_RECV | NRMA_TAGGED_MULTI_RECV;
	assert_int_equal(match(V_CUR, hints, &info), 0);
	assert_bits_set(info->caps, NRMA_TAGGED_MULTI_RECV);
	assert_bits_set(info->rx_attr->caps, NRMA_TAGGED_MULTI_RECV);
	assert_caps_consistent(info);
	fi_freeinfo(info);
	hints->rx_attr->caps = 0;
	hints->caps = FI_TAGGED | NRMA_EXACT_DIRECTED_RECV;
	assert_int_equal(match(V_CUR, hints, &info), 0);
	assert_bits_set(info->caps, NRMA_EXACT_DIRECTED_RECV);
	assert_bits_set(info->rx_attr->caps, NRMA_EXACT_DIRECTED_RECV);
	assert_caps_consistent(info);
	fi_freeinfo(info);
	fi_freeinfo(hints);
}

/* Shared contexts: asked for, they come back; more contexts do not. */
static void test_shared_contexts(void **state)
{
	struct fi_info *hints = hints_alloc(), *info = NULL;

	(void) state;
	hints->ep_attr->tx_ctx_cnt = FI_SHARED_CONTEXT;
	hints->ep_attr->rx_ctx_cnt = FI_SHARED_CONTEXT;
	assert_int_equal(match(V_CUR, hints, &info), 0);
	assert_int_equal(info->ep_attr->tx_ctx_cnt, FI_SHARED_CONTEXT);
	assert_int_equal(info->ep_attr->rx_ctx_cnt, FI_SHARED_CONTEXT);
	assert_int_equal(info->domain_attr->max_ep_stx_ctx, 1);
	assert_int_equal(info->domain_attr->max_ep_srx_ctx, 1);
	fi_freeinfo(info);
	hints->ep_attr->rx_ctx_cnt = 0;
	hints->domain_attr->max_ep_srx_ctx = 2;
	assert_int_equal(match(V_CUR, hints, &info), -FI_ENODATA);
	fi_freeinfo(hints);
}

static void test_getinfo_hints(void **state)
{
	struct fi_info *hints = hints_alloc(), *info = NULL;

	(void) state;
	hints->domain_attr->name = strdup("rxe1");
	assert_int_equal(nrma_attr_getinfo(V_CUR, NULL, NULL, 0, hints, &info),
			 0);
	assert_null(info->next);
	assert_string_equal(info->domain_attr->name, "rxe1");
	fi_freeinfo(info);

	/* Messaging with source addresses, from every device. */
	info = NULL;
	free(hints->domain_attr->name);
	hints->domain_attr->name = NULL;
	hints->caps = FI_MSG | FI_SOURCE;
	assert_int_equal(nrma_attr_getinfo(V_CUR, NULL, NULL, 0, hints, &info),
			 0);
	assert_non_null(info->next);
	assert_null(info->next->next);
	for (struct fi_info *cur = info; cur; cur = cur->next) {
		assert_bits_set(cur->caps, FI_MSG | FI_SOURCE);
		assert_int_equal(cur->caps & PRIMARY_CAPS, FI_MSG);
		assert_caps_consistent(cur);
	}
	fi_freeinfo(info);

	/* RMA by name, from every device: with mr_mode 0, the
	 * application's keys... */
	info = NULL;
	hints->caps = FI_MSG | FI_RMA;
	assert_int_equal(nrma_attr_getinfo(V_CUR, NULL, NULL, 0, hints, &info),
			 0);
	assert_non_null(info->next);
	assert_null(info->next->next);
	for (struct fi_info *cur = info; cur; cur = cur->next) {
		assert_int_equal(cur->caps & PRIMARY_CAPS, FI_MSG | FI_RMA);
		assert_int_equal(cur->domain_attr->mr_mode, 0);
		assert_caps_consistent(cur);
	}
	fi_freeinfo(info);
	/* ...and the provider's where it takes them. */
	info = NULL;
	hints->domain_attr->mr_mode = FI_MR_LOCAL | BASIC_MAP;
	assert_int_equal(nrma_attr_getinfo(V_CUR, NULL, NULL, 0, hints, &info),
			 0);
	assert_non_null(info->next);
	assert_null(info->next->next);
	for (struct fi_info *cur = info; cur; cur = cur->next) {
		assert_int_equal(cur->caps & PRIMARY_CAPS, FI_MSG | FI_RMA);
		assert_int_equal(cur->domain_attr->mr_mode, MR_REQUIRED);
		assert_caps_consistent(cur);
	}
	fi_freeinfo(info);
	hints->domain_attr->mr_mode = 0;

	/* Atomics, like RMA, with either. */
	info = NULL;
	hints->caps = FI_MSG | FI_ATOMIC;
	assert_int_equal(nrma_attr_getinfo(V_CUR, NULL, NULL, 0, hints, &info),
			 0);
	assert_int_equal(info->caps & PRIMARY_CAPS, FI_MSG | FI_ATOMIC);
	assert_int_equal(info->domain_attr->mr_mode, 0);
	assert_caps_consistent(info);
	fi_freeinfo(info);
	info = NULL;
	hints->domain_attr->mr_mode = BASIC_MAP;
	assert_int_equal(nrma_attr_getinfo(V_CUR, NULL, NULL, 0, hints, &info),
			 0);
	assert_int_equal(info->caps & PRIMARY_CAPS, FI_MSG | FI_ATOMIC);
	assert_caps_consistent(info);
	fi_freeinfo(info);
	hints->domain_attr->mr_mode = 0;

	hints->caps = 0;
	hints->ep_attr->type = FI_EP_DGRAM;
	assert_int_equal(nrma_attr_getinfo(V_CUR, NULL, NULL, 0, hints, &info),
			 -FI_ENODATA);
	assert_null(info);
	fi_freeinfo(hints);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_alloc_caps, setup),
		cmocka_unit_test_setup(test_alloc_fields, setup),
		cmocka_unit_test_setup(test_alloc_clamps_to_device, setup),
		cmocka_unit_test_setup(test_alloc_iov_limits_clamp, setup),
		cmocka_unit_test_setup(test_alloc_inject_size, setup),
		cmocka_unit_test_setup(test_fabric_name, setup),
		cmocka_unit_test_setup(test_fabric_name_too_small, setup),
		cmocka_unit_test_setup(test_no_hints, setup),
		cmocka_unit_test_setup(test_empty_hints, setup),
		cmocka_unit_test_setup(test_ep_type, setup),
		cmocka_unit_test_setup(test_caps_offered, setup),
		cmocka_unit_test_setup(test_caps_narrowed, setup),
		cmocka_unit_test_setup(test_caps_not_offered, setup),
		cmocka_unit_test_setup(test_domain_caps, setup),
		cmocka_unit_test_setup(test_tx_rx_caps, setup),
		cmocka_unit_test_setup(test_addr_format, setup),
		cmocka_unit_test_setup(test_tag_format, setup),
		cmocka_unit_test_setup(test_names, setup),
		cmocka_unit_test_setup(test_progress, setup),
		cmocka_unit_test_setup(test_mr_mode_v1_0, setup),
		cmocka_unit_test_setup(test_mr_mode_v1_5, setup),
		cmocka_unit_test_setup(test_tx_size, setup),
		cmocka_unit_test_setup(test_inject_size, setup),
		cmocka_unit_test_setup(test_msg_order, setup),
		cmocka_unit_test_setup(test_rx_limits, setup),
		cmocka_unit_test_setup(test_ep_limits, setup),
		cmocka_unit_test_setup(test_domain_limits, setup),
		cmocka_unit_test_setup(test_threading_av_type, setup),
		cmocka_unit_test_setup(test_op_flags_echoed, setup),
		cmocka_unit_test_setup(test_op_flags_refused, setup),
		cmocka_unit_test_setup(test_shared_contexts, setup),
		cmocka_unit_test_setup(test_receive_caps_2x, setup),
		cmocka_unit_test_setup_teardown(test_getinfo_all_devices,
						getinfo_setup,
						getinfo_teardown),
		cmocka_unit_test_setup_teardown(
			test_getinfo_source, getinfo_setup, getinfo_teardown),
		cmocka_unit_test_setup_teardown(
			test_getinfo_dest, getinfo_setup, getinfo_teardown),
		cmocka_unit_test_setup_teardown(
			test_getinfo_hints, getinfo_setup, getinfo_teardown),
		cmocka_unit_test_setup_teardown(test_getinfo_msg, getinfo_setup,
						getinfo_teardown),
	};

	return cmocka_run_group_tests_name("nrma_attr", tests, NULL, NULL);
}
