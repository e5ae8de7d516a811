/* SPDX-License-Identifier: BSD-2-Clause */
/* fi_getinfo: what the provider offers, and how it honours hints. */
#include <stdbool.h>
#include <sys/wait.h>
#include <unistd.h>

#include "itest.h"

static void check_attrs(const struct fi_info *info)
{
	CHECK(info->ep_attr->type == FI_EP_RDM);
	CHECK(info->addr_format == FI_SOCKADDR_IN);
	CHECK((info->caps & (FI_LOCAL_COMM | FI_REMOTE_COMM)) ==
	      (FI_LOCAL_COMM | FI_REMOTE_COMM));
	CHECK((info->caps & (FI_MSG | FI_SOURCE | FI_MULTI_RECV)) ==
	      (FI_MSG | FI_SOURCE | FI_MULTI_RECV));
	CHECK((info->caps & (FI_RMA | FI_ATOMIC | FI_RMA_EVENT | FI_TAGGED)) ==
	      (FI_RMA | FI_ATOMIC | FI_RMA_EVENT | FI_TAGGED));
	CHECK(info->tx_attr->rma_iov_limit == 1);
	/* Provider keys, and offsets: no FI_MR_VIRT_ADDR. */
	CHECK((info->domain_attr->mr_mode &
	       (FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY)) ==
	      (FI_MR_ALLOCATED | FI_MR_PROV_KEY));
	CHECK(info->tx_attr->msg_order & FI_ORDER_SAS);
	CHECK(info->tx_attr->inject_size > 0);
	CHECK(info->src_addr != NULL);
	CHECK(info->src_addrlen == sizeof(struct sockaddr_in));
	CHECK(itest_is_test_addr(info->src_addr));
	CHECK(info->dest_addr == NULL);
	CHECK(!strcmp(info->domain_attr->name, itest_device()));
	CHECK(!strcmp(info->fabric_attr->name, itest_fabric()));
	CHECK(info->fabric_attr->prov_name != NULL);
	CHECK(!strcmp(info->fabric_attr->prov_name, "nrma"));
	CHECK(info->ep_attr->max_msg_size > 0);
	CHECK(info->tx_attr->size > 0);
	CHECK(info->rx_attr->size > 0);
	CHECK(info->tx_attr->iov_limit > 0);
	CHECK(info->rx_attr->iov_limit > 0);
	CHECK(info->domain_attr->mr_iov_limit == 1);
	CHECK(info->domain_attr->cq_data_size == 4);
	CHECK(info->domain_attr->mr_key_size == 8);
	CHECK(info->domain_attr->threading == FI_THREAD_SAFE);
	CHECK(info->domain_attr->cq_cnt > 0);
	CHECK(info->domain_attr->ep_cnt > 0);
	CHECK(info->domain_attr->cntr_cnt > 0);
	CHECK(info->domain_attr->mr_cnt > 0);
}

/* The entry for the device under test in a list, which must have one. */
static const struct fi_info *find_device(const struct fi_info *list)
{
	for (; list; list = list->next)
		if (!strcmp(list->domain_attr->name, itest_device()))
			return list;
	fprintf(stderr, "no fi_info for device %s\n", itest_device());
	exit(1);
}

static void check_plain(void)
{
	struct fi_info *hints = itest_hints(), *info;

	CHECK_OK(fi_getinfo(ITEST_VERSION, NULL, NULL, 0, hints, &info));
	check_attrs(find_device(info));
	for (const struct fi_info *i = info; i; i = i->next)
		CHECK(i->ep_attr->type == FI_EP_RDM);
	fi_freeinfo(info);

	/* The same with the device named in the hints. */
	fi_freeinfo(itest_getinfo());
	fi_freeinfo(hints);
}

static void check_unmet(void)
{
	struct fi_info *hints, *info = NULL;

	hints = itest_hints();
	hints->ep_attr->type = FI_EP_DGRAM;
	CHECK_RET(fi_getinfo(ITEST_VERSION, NULL, NULL, 0, hints, &info),
		  -FI_ENODATA);
	/* Connected endpoints have one peer: no FI_SOURCE. */
	hints->ep_attr->type = FI_EP_MSG;
	hints->caps = FI_MSG | FI_SOURCE;
	CHECK_RET(fi_getinfo(ITEST_VERSION, NULL, NULL, 0, hints, &info),
		  -FI_ENODATA);
	hints->caps = FI_MSG | FI_RMA_EVENT;
	CHECK_OK(fi_getinfo(ITEST_VERSION, NULL, NULL, 0, hints, &info));
	CHECK(info->ep_attr->type == FI_EP_MSG && !info->next);
	fi_freeinfo(info);
	info = NULL;
	fi_freeinfo(hints);

	/*
	 * An application that supports no mr_mode bits gets everything, with
	 * keys it picks (two bytes) and regions addressed by offset; one that
	 * asks for longer keys, messaging only.
	 */
	hints = itest_hints();
	hints->domain_attr->mr_mode = 0;
	CHECK_OK(fi_getinfo(ITEST_VERSION, NULL, NULL, 0, hints, &info));
	CHECK((info->caps &
	       (FI_MSG | FI_TAGGED | FI_RMA | FI_ATOMIC | FI_RMA_EVENT)) ==
	      (FI_MSG | FI_TAGGED | FI_RMA | FI_ATOMIC | FI_RMA_EVENT));
	CHECK(info->domain_attr->mr_mode == 0);
	CHECK(info->domain_attr->mr_key_size == 2);
	fi_freeinfo(info);
	info = NULL;
	hints->caps = FI_ATOMIC;
	CHECK_OK(fi_getinfo(ITEST_VERSION, NULL, NULL, 0, hints, &info));
	CHECK(info->domain_attr->mr_mode == 0 &&
	      info->domain_attr->mr_key_size == 2);
	fi_freeinfo(info);
	info = NULL;
	hints->caps = FI_RMA;
	hints->domain_attr->mr_key_size = 8;
	CHECK_RET(fi_getinfo(ITEST_VERSION, NULL, NULL, 0, hints, &info),
		  -FI_ENODATA);
	hints->caps = FI_MSG;
	CHECK_OK(fi_getinfo(ITEST_VERSION, NULL, NULL, 0, hints, &info));
	CHECK(info->domain_attr->mr_key_size == 8 &&
	      !(info->caps & (FI_RMA | FI_ATOMIC)));
	fi_freeinfo(info);
	info = NULL;
	/* Provider keys where the application takes them. */
	hints->caps = FI_RMA;
	hints->domain_attr->mr_mode = FI_MR_PROV_KEY;
	CHECK_OK(fi_getinfo(ITEST_VERSION, NULL, NULL, 0, hints, &info));
	CHECK(info->domain_attr->mr_mode == FI_MR_PROV_KEY &&
	      info->domain_attr->mr_key_size == 8);
	fi_freeinfo(info);
	info = NULL;
	fi_freeinfo(hints);

	/* Atomics, like RMA, with the provider's mr_mode. */
	hints = itest_hints();
	hints->caps = FI_ATOMIC;
	CHECK_OK(fi_getinfo(ITEST_VERSION, NULL, NULL, 0, hints, &info));
	CHECK(info->caps & FI_ATOMIC);
	CHECK(!(info->caps & (FI_MSG | FI_RMA | FI_TAGGED)));
	fi_freeinfo(info);
	info = NULL;
	fi_freeinfo(hints);

	/* No authorization keys (fi_nrma(7), LIMITATIONS). */
	hints = itest_hints();
	hints->domain_attr->auth_key = calloc(1, 8);
	CHECK(hints->domain_attr->auth_key != NULL);
	hints->domain_attr->auth_key_size = 8;
	CHECK_RET(fi_getinfo(ITEST_VERSION, NULL, NULL, 0, hints, &info),
		  -FI_ENODATA);
	fi_freeinfo(hints);

	/* TEST-NET-1: on no device of ours. */
	hints = itest_hints();
	CHECK_RET(fi_getinfo(ITEST_VERSION, "192.0.2.1", NULL, FI_SOURCE, hints,
			     &info),
		  -FI_ENODATA);
	fi_freeinfo(hints);
}

static void check_source(void)
{
	struct fi_info *hints = itest_hints(), *info;
	const struct fi_info *dev;
	const struct sockaddr_in *sin;

	CHECK_OK(fi_getinfo(ITEST_VERSION, itest_addr(), "7777", FI_SOURCE,
			    hints, &info));
	dev = find_device(info);
	CHECK(dev->src_addr != NULL);
	CHECK(dev->src_addrlen == sizeof(*sin));
	sin = dev->src_addr;
	CHECK(itest_is_test_addr(sin));
	CHECK(ntohs(sin->sin_port) == 7777);
	CHECK(dev->dest_addr == NULL);
	fi_freeinfo(info);
	fi_freeinfo(hints);
}

static void check_dest(void)
{
	struct fi_info *hints = itest_hints(), *info;
	const struct fi_info *dev;
	const struct sockaddr_in *sin;

	CHECK_OK(fi_getinfo(ITEST_VERSION, itest_addr(), "7778", 0, hints,
			    &info));
	dev = find_device(info);
	CHECK(dev->dest_addr != NULL);
	CHECK(dev->dest_addrlen == sizeof(*sin));
	sin = dev->dest_addr;
	CHECK(itest_is_test_addr(sin));
	CHECK(ntohs(sin->sin_port) == 7778);
	CHECK(dev->src_addr != NULL);
	CHECK(itest_is_test_addr(dev->src_addr));
	fi_freeinfo(info);

	/* A node alone, without a service. */
	CHECK_OK(
		fi_getinfo(ITEST_VERSION, itest_addr(), NULL, 0, hints, &info));
	dev = find_device(info);
	CHECK(dev->dest_addr != NULL);
	CHECK(itest_is_test_addr(dev->dest_addr));
	fi_freeinfo(info);
	fi_freeinfo(hints);
}

/*
 * nrma is no core for libfabric's utility providers: a plain "nrma" lists
 * no "nrma;ofi_rxm" (nor ofi_rxd or ofi_mrail over nrma), and asking for
 * "nrma;ofi_rxm" by name gets nothing.  FI_EP_MSG hints get connected
 * endpoints unless FI_NRMA_MSG_EP=0 (msg_ep false).
 */
static void check_layering(bool msg_ep)
{
	struct fi_info *hints = itest_hints(), *info;
	bool native = false, layered = false;

	free(hints->fabric_attr->prov_name);
	hints->fabric_attr->prov_name = strdup(FI_NRMA_PROV_NAME);
	CHECK_OK(fi_getinfo(ITEST_VERSION, NULL, NULL, 0, hints, &info));
	for (const struct fi_info *i = info; i; i = i->next) {
		native |= !strcmp(i->fabric_attr->prov_name, "nrma");
		layered |= strcmp(i->fabric_attr->prov_name, "nrma") != 0;
	}
	CHECK(native && !layered);
	fi_freeinfo(info);
	free(hints->fabric_attr->prov_name);
	hints->fabric_attr->prov_name = strdup("nrma;ofi_rxm");
	CHECK_RET(fi_getinfo(ITEST_VERSION, NULL, NULL, 0, hints, &info),
		  -FI_ENODATA);
	free(hints->fabric_attr->prov_name);
	hints->fabric_attr->prov_name = strdup(FI_NRMA_PROV_NAME);
	hints->ep_attr->type = FI_EP_MSG;
	if (msg_ep) {
		CHECK_OK(
			fi_getinfo(ITEST_VERSION, NULL, NULL, 0, hints, &info));
		fi_freeinfo(info);
	} else {
		CHECK_RET(
			fi_getinfo(ITEST_VERSION, NULL, NULL, 0, hints, &info),
			-FI_ENODATA);
	}
	fi_freeinfo(hints);
}

/* The same program under FI_NRMA_MSG_EP=0, read when the provider loads. */
static void check_without_msg(const char *self)
{
	pid_t pid = fork();
	int status;

	CHECK(pid >= 0);
	if (!pid) {
		setenv("FI_NRMA_MSG_EP", "0", 1);
		execl(self, self, "--no-msg", (char *) NULL);
		_exit(127);
	}
	CHECK(waitpid(pid, &status, 0) == pid);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "--no-msg")) {
		check_layering(false);
		return 0;
	}
	check_plain();
	check_unmet();
	check_source();
	check_dest();
	check_layering(true);
	check_without_msg(argv[0]);
	itest_pass("nrma_getinfo");
	return 0;
}
