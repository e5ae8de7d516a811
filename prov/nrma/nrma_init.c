/* SPDX-License-Identifier: BSD-2-Clause */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "nrma.h"
#include "nrma_verbs.h"

struct nrma_device *nrma_devices;
size_t nrma_device_count;

struct nrma_params nrma_params = {
	.tx_size = 256,
	.rx_size = 512,
	.cq_size = 1024,
	.cntr_max = 4096,
	.notify_cells = 4096,
	.mr_max = 16384,
	.wait_spin_us = 50,
	.eager_size = 8192,
	.sar_size = 65536,
	.unexp_max = 256,
	.credits = 16,
	.peers_max = 1024,
	.qp_depth = 64,
	.notify_wake_ms = 1,
	.notify_coalesce = 1,
	.msg_ep = true,
	.stall_ms = 20000,
	.progress_ms = 1,
};

static void nrma_cleanup(void)
{
	nrma_cm_thread_stop_all();
	free(nrma_devices);
	nrma_devices = NULL;
	nrma_device_count = 0;
}

struct fi_provider nrma_prov = {
	.name = NRMA_PROV_NAME,
	.version = NRMA_PROV_VERSION,
	.fi_version = NRMA_FI_VERSION,
	.getinfo = nrma_attr_getinfo,
	.fabric = nrma_fabric_open,
	.cleanup = nrma_cleanup,
};

static void nrma_define_params(void)
{
	fi_param_define(
		&nrma_prov, "device", FI_PARAM_STRING,
		"Use only this verbs device (default: every usable one)");
	fi_param_define(
		&nrma_prov, "tx_size", FI_PARAM_SIZE_T,
		"Default transmit queue depth per endpoint (default: %zu)",
		nrma_params.tx_size);
	fi_param_define(
		&nrma_prov, "rx_size", FI_PARAM_SIZE_T,
		"Default receive queue depth per endpoint (default: %zu)",
		nrma_params.rx_size);
	fi_param_define(
		&nrma_prov, "cq_size", FI_PARAM_SIZE_T,
		"CQ size when fi_cq_open is given size 0 (default: %zu)",
		nrma_params.cq_size);
	fi_param_define(
		&nrma_prov, "cntr_max", FI_PARAM_SIZE_T,
		"Counters a domain offers (domain_attr cntr_cnt, default: %zu)",
		nrma_params.cntr_max);
	fi_param_define(
		&nrma_prov, "notify_cells", FI_PARAM_SIZE_T,
		"Notification cells a domain offers: one per endpoint or MR with remote-event counters bound, a pinned page each (default: %zu)",
		nrma_params.notify_cells);
	fi_param_define(
		&nrma_prov, "mr_max", FI_PARAM_SIZE_T,
		"Memory regions a domain offers (domain_attr mr_cnt): its key table, which peers read, holds 56 pinned bytes for each, at most 65535 (default: %zu)",
		nrma_params.mr_max);
	fi_param_define(
		&nrma_prov, "wait_spin_us", FI_PARAM_INT,
		"Microseconds a blocking wait polls before it sleeps (default: %d)",
		nrma_params.wait_spin_us);
	fi_param_define(
		&nrma_prov, "eager_size", FI_PARAM_SIZE_T,
		"Largest message sent by copy in one piece (default: %zu)",
		nrma_params.eager_size);
	fi_param_define(
		&nrma_prov, "sar_size", FI_PARAM_SIZE_T,
		"Largest message sent by copy in segments of the eager size (with their headers), one after the other; larger ones are read by the receiver (default: %zu)",
		nrma_params.sar_size);
	fi_param_define(
		&nrma_prov, "unexp_max", FI_PARAM_SIZE_T,
		"Receive buffers an endpoint keeps beyond its receive size for unexpected messages (default: %zu)",
		nrma_params.unexp_max);
	fi_param_define(
		&nrma_prov, "credits", FI_PARAM_SIZE_T,
		"A peer's share: messages it may have in an endpoint's receive buffers before its sends wait, when the endpoint's pool has them (default: %zu)",
		nrma_params.credits);
	fi_param_define(
		&nrma_prov, "peers_max", FI_PARAM_SIZE_T,
		"Peers of an endpoint that each get two receive buffers of their own, so that each always has a credit; more peers wait for credits that others give back (default: %zu)",
		nrma_params.peers_max);
	fi_param_define(
		&nrma_prov, "qp_depth", FI_PARAM_SIZE_T,
		"Send queue depth of the queue pair of each connected peer (default: %zu)",
		nrma_params.qp_depth);
	fi_param_define(
		&nrma_prov, "notify_fence", FI_PARAM_STRING,
		"Which notification atomics wait for earlier reads and atomics: 'auto' (after RMA reads only, as ordering needs) or 'always' (default: auto)");
	fi_param_define(
		&nrma_prov, "notify_wake_ms", FI_PARAM_INT,
		"Longest sleep of fi_cntr_wait on a counter that remote atomics bump (default: %d)",
		nrma_params.notify_wake_ms);
	fi_param_define(
		&nrma_prov, "notify_coalesce", FI_PARAM_SIZE_T,
		"Notified writes to one peer and counter that one atomic of +n may announce; 1: an atomic each (default: %zu)",
		nrma_params.notify_coalesce);
	fi_param_define(
		&nrma_prov, "msg_ep", FI_PARAM_BOOL,
		"Offer connected endpoints (FI_EP_MSG) to FI_EP_MSG hints (default: %s)",
		nrma_params.msg_ep ? "yes" : "no");
	fi_param_define(
		&nrma_prov, "stall_ms", FI_PARAM_INT,
		"Fail a connection, its operations in error, when the device ended none of its work requests for this long; 0: trust the device's retries alone (default: %d)",
		nrma_params.stall_ms);
	fi_param_define(
		&nrma_prov, "progress_ms", FI_PARAM_INT,
		"In a domain opened with FI_PROGRESS_AUTO data progress: how long an endpoint with work out may go without a CQ or counter read of the application's before the domain's thread progresses it (default: %d)",
		nrma_params.progress_ms);
}

static void nrma_read_bool(const char *name, bool *value)
{
	int v;

	if (!fi_param_get_bool(&nrma_prov, name, &v))
		*value = v;
}

/* An integer parameter that may not be below min: min then, said so. */
static void nrma_read_int_min(const char *name, int *value, int min)
{
	char env[32];
	size_t n = 0;

	fi_param_get_int(&nrma_prov, name, value);
	if (*value >= min)
		return;
	for (; name[n] && n + 1 < sizeof(env); n++)
		env[n] = (char) toupper((unsigned char) name[n]);
	env[n] = '\0';
	NRMA_WARN(FI_LOG_CORE, "FI_NRMA_%s=%d: below %d, using %d\n", env,
		  *value, min, min);
	*value = min;
}

static void nrma_read_params(void)
{
	char *fence;

	fi_param_get_str(&nrma_prov, "device", &nrma_params.device);
	fi_param_get_size_t(&nrma_prov, "tx_size", &nrma_params.tx_size);
	fi_param_get_size_t(&nrma_prov, "rx_size", &nrma_params.rx_size);
	fi_param_get_size_t(&nrma_prov, "cq_size", &nrma_params.cq_size);
	fi_param_get_size_t(&nrma_prov, "cntr_max", &nrma_params.cntr_max);
	fi_param_get_size_t(&nrma_prov, "notify_cells",
			    &nrma_params.notify_cells);
	fi_param_get_size_t(&nrma_prov, "mr_max", &nrma_params.mr_max);
	fi_param_get_int(&nrma_prov, "wait_spin_us", &nrma_params.wait_spin_us);
	fi_param_get_size_t(&nrma_prov, "eager_size", &nrma_params.eager_size);
	fi_param_get_size_t(&nrma_prov, "sar_size", &nrma_params.sar_size);
	fi_param_get_size_t(&nrma_prov, "unexp_max", &nrma_params.unexp_max);
	fi_param_get_size_t(&nrma_prov, "credits", &nrma_params.credits);
	fi_param_get_size_t(&nrma_prov, "peers_max", &nrma_params.peers_max);
	fi_param_get_size_t(&nrma_prov, "qp_depth", &nrma_params.qp_depth);
	fi_param_get_int(&nrma_prov, "notify_wake_ms",
			 &nrma_params.notify_wake_ms);
	fi_param_get_size_t(&nrma_prov, "notify_coalesce",
			    &nrma_params.notify_coalesce);
	nrma_read_bool("msg_ep", &nrma_params.msg_ep);
	nrma_read_int_min("stall_ms", &nrma_params.stall_ms, 0);
	nrma_read_int_min("progress_ms", &nrma_params.progress_ms, 1);
	if (!fi_param_get_str(&nrma_prov, "notify_fence", &fence)) {
		if (!strcmp(fence, "always"))
			nrma_params.notify_fence_always = true;
		else if (strcmp(fence, "auto"))
			NRMA_WARN(
				FI_LOG_CORE,
				"FI_NRMA_NOTIFY_FENCE=%s: not auto or always, using auto\n",
				fence);
	}
}

static void nrma_keep_device(const char *name)
{
	size_t kept = 0;

	for (size_t i = 0; i < nrma_device_count; i++)
		if (!strcmp(nrma_devices[i].name, name))
			nrma_devices[kept++] = nrma_devices[i];
	nrma_device_count = kept;
}

/*
 * Registers nothing on a machine without a usable device, so that libfabric
 * neither lists nor layers anything on top of us there.  Parameters are
 * defined only once we know we stay loaded.
 */
FI_EXT_INI
{
	int ret;

	ret = nrma_verbs_discover(&nrma_devices, &nrma_device_count);
	if (!ret && nrma_device_count) {
		nrma_define_params();
		nrma_read_params();
		if (nrma_params.device && *nrma_params.device)
			nrma_keep_device(nrma_params.device);
	}
	if (ret || !nrma_device_count) {
		NRMA_INFO(FI_LOG_CORE, "no usable verbs device%s%s\n",
			  ret ? ": " : "", ret ? fi_strerror(-ret) : "");
		nrma_cleanup();
		return NULL;
	}
	return &nrma_prov;
}
