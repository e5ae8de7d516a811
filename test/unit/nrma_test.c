/* SPDX-License-Identifier: BSD-2-Clause */
#include "nrma_test.h"

#include <arpa/inet.h>
#include <poll.h>
#include <unistd.h>

int fake_env_setup(void **state)
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

int fake_env_teardown(void **state)
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

struct fid_domain *fake_domain(void **state)
{
	return &((struct fake_env *) *state)->domain->domain_fid;
}

struct fid_fabric *fake_fabric(void **state)
{
	return &((struct fake_env *) *state)->fabric->fabric_fid;
}

struct sockaddr_in make_sin(const char *ip, uint16_t port)
{
	struct sockaddr_in sin;

	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons(port);
	if (inet_pton(AF_INET, ip, &sin.sin_addr) != 1)
		fail_msg("bad test address %s", ip);
	return sin;
}

long elapsed_ms(const struct timespec *start)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (now.tv_sec - start->tv_sec) * 1000 +
	       (now.tv_nsec - start->tv_nsec) / 1000000;
}

static void *delayed_main(void *p)
{
	struct delayed *d = p;

	usleep(d->delay_ms * 1000);
	d->fn(d->arg);
	return NULL;
}

void delayed_start(struct delayed *d, int delay_ms, void (*fn)(void *),
		   void *arg)
{
	d->delay_ms = delay_ms;
	d->fn = fn;
	d->arg = arg;
	assert_int_equal(pthread_create(&d->thread, NULL, delayed_main, d), 0);
}

void delayed_join(struct delayed *d)
{
	assert_int_equal(pthread_join(d->thread, NULL), 0);
}

int fd_readable(int fd)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	int ret = poll(&pfd, 1, 0);

	assert_true(ret >= 0);
	return ret > 0 && (pfd.revents & POLLIN);
}
