/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Shared helpers for the unit tests: a fake fabric and domain, built by
 * hand, on which AVs, CQs, EQs and counters can be opened without verbs.
 */
#ifndef NRMA_TEST_H
#define NRMA_TEST_H

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <arpa/inet.h>
#include <cmocka.h>

#include "nrma.h"

struct fake_env {
	struct nrma_fabric *fabric;
	struct nrma_domain *domain;
};

static inline int fake_env_setup(void **state)
{
	struct fake_env *env = calloc(1, sizeof(*env));

	if (!env)
		return -1;
	env->fabric = calloc(1, sizeof(*env->fabric));
	env->domain = calloc(1, sizeof(*env->domain));
	if (!env->fabric || !env->domain)
		goto err;
	env->domain->info = fi_allocinfo();
	if (!env->domain->info)
		goto err;
	env->fabric->api_version = FI_VERSION(1, 17);
	env->fabric->fabric_fid.fid.fclass = FI_CLASS_FABRIC;
	env->domain->fabric = env->fabric;
	env->domain->domain_fid.fid.fclass = FI_CLASS_DOMAIN;
	*state = env;
	return 0;
err:
	free(env->domain);
	free(env->fabric);
	free(env);
	return -1;
}

/* Every object a test opened must have been closed, references and all. */
static inline int fake_env_teardown(void **state)
{
	struct fake_env *env = *state;
	int domain_ref = atomic_load(&env->domain->ref);
	int fabric_ref = atomic_load(&env->fabric->ref);

	fi_freeinfo(env->domain->info);
	free(env->domain);
	free(env->fabric);
	free(env);
	assert_int_equal(domain_ref, 0);
	assert_int_equal(fabric_ref, 0);
	return 0;
}

static inline struct fid_domain *fake_domain(void **state)
{
	return &((struct fake_env *) *state)->domain->domain_fid;
}

static inline struct fid_fabric *fake_fabric(void **state)
{
	return &((struct fake_env *) *state)->fabric->fabric_fid;
}

static inline struct sockaddr_in make_sin(const char *ip, uint16_t port)
{
	struct sockaddr_in sin;

	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons(port);
	if (inet_pton(AF_INET, ip, &sin.sin_addr) != 1)
		fail_msg("bad test address %s", ip);
	return sin;
}

static inline long elapsed_ms(const struct timespec *start)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (now.tv_sec - start->tv_sec) * 1000 +
	       (now.tv_nsec - start->tv_nsec) / 1000000;
}

#endif /* NRMA_TEST_H */
