/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Helpers shared by the integration tests.  Each test is a program that
 * exits non-zero at the first broken expectation, saying where and why.
 * The tests use only the public libfabric API and find the provider with
 * FI_PROVIDER_PATH; see test/run-tests.sh.
 *
 * The device under test defaults to the Soft-RoCE VM's (contrib/nrma-vm):
 * NRMA_TEST_ADDR (10.9.9.1), NRMA_TEST_DEVICE (rxe0) and NRMA_TEST_FABRIC
 * (10.9.9.0/24) select another.
 */
#ifndef NRMA_ITEST_H
#define NRMA_ITEST_H

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_ext_nrma.h>

#define ITEST_VERSION FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION)

/* Fails the test unless expr holds. */
#define CHECK(expr)                                                            \
	do {                                                                   \
		if (!(expr)) {                                                 \
			fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, \
				__LINE__, #expr);                              \
			exit(1);                                               \
		}                                                              \
	} while (0)

/* Fails the test unless expr (a libfabric return code) equals want. */
#define CHECK_RET(expr, want) ITEST_CHECK_RET_(expr, #expr, want)
#define CHECK_OK(expr)	      ITEST_CHECK_RET_(expr, #expr, 0)

#define ITEST_CHECK_RET_(expr, str, want)                                \
	do {                                                             \
		long itest_got_ = (long) (expr);                         \
		long itest_want_ = (long) (want);                        \
		if (itest_got_ != itest_want_) {                         \
			fprintf(stderr,                                  \
				"%s:%d: %s\n  returned %ld (%s),"        \
				" expected %ld (%s)\n",                  \
				__FILE__, __LINE__, str, itest_got_,     \
				itest_strerror(itest_got_), itest_want_, \
				itest_strerror(itest_want_));            \
			exit(1);                                         \
		}                                                        \
	} while (0)

static inline const char *itest_strerror(long ret)
{
	return ret <= 0 ? fi_strerror((int) -ret) : "a count";
}

static inline const char *itest_env(const char *name, const char *dflt)
{
	const char *v = getenv(name);

	return v && *v ? v : dflt;
}

static inline const char *itest_addr(void)
{
	return itest_env("NRMA_TEST_ADDR", "10.9.9.1");
}

static inline const char *itest_device(void)
{
	return itest_env("NRMA_TEST_DEVICE", "rxe0");
}

static inline const char *itest_fabric(void)
{
	return itest_env("NRMA_TEST_FABRIC", "10.9.9.0/24");
}

/*
 * Hints that select this provider's RDM endpoints, not ofi_rxm's over its
 * FI_EP_MSG ones; fi_freeinfo them.
 */
static inline struct fi_info *itest_hints(void)
{
	struct fi_info *hints = fi_allocinfo();

	CHECK(hints != NULL);
	hints->fabric_attr->prov_name = strdup(FI_NRMA_PROV_NAME_NATIVE);
	CHECK(hints->fabric_attr->prov_name != NULL);
	hints->ep_attr->type = FI_EP_RDM;
	/* What RMA targets need; with mr_mode 0 the provider offers no RMA. */
	hints->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED |
				      FI_MR_PROV_KEY;
	return hints;
}

/*
 * The provider's info for the device under test, asked with caps (0: all
 * it offers) at an API version; fi_freeinfo it.
 */
static inline struct fi_info *itest_getinfo_at(uint32_t version, uint64_t caps)
{
	struct fi_info *hints = itest_hints(), *info;

	hints->caps = caps;
	hints->domain_attr->name = strdup(itest_device());
	CHECK(hints->domain_attr->name != NULL);
	CHECK_OK(fi_getinfo(version, NULL, NULL, 0, hints, &info));
	CHECK(info != NULL);
	fi_freeinfo(hints);
	return info;
}

static inline struct fi_info *itest_getinfo(void)
{
	return itest_getinfo_at(ITEST_VERSION, 0);
}

/*
 * The remote address of buf in a registration that starts at base: its
 * virtual address under FI_MR_VIRT_ADDR, else its offset (fi_mr(3)).
 */
static inline uint64_t itest_mr_addr(const struct fi_info *info,
				     const void *base, const void *buf)
{
	if (info->domain_attr->mr_mode & FI_MR_VIRT_ADDR)
		return (uintptr_t) buf;
	return (uint64_t) ((const char *) buf - (const char *) base);
}

/* True when sa is the AF_INET address of the device under test. */
static inline int itest_is_test_addr(const void *sa)
{
	const struct sockaddr_in *sin = sa;
	struct in_addr want;

	CHECK(inet_pton(AF_INET, itest_addr(), &want) == 1);
	return sin->sin_family == AF_INET &&
	       sin->sin_addr.s_addr == want.s_addr;
}

static inline void itest_pass(const char *name)
{
	printf("%s: all checks passed\n", name);
}

#endif /* NRMA_ITEST_H */
