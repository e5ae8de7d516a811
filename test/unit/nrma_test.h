/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Helpers shared by the unit tests (nrma_test.c): a fake fabric and
 * domain, built by hand, on which AVs, CQs, EQs and counters can be opened
 * without verbs, and a few tools for tests that block.
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
#include <pthread.h>
#include <cmocka.h>

#include "nrma.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* Blocking tests that should return quickly fail instead of hanging. */
#define WATCHDOG_S 20

struct fake_env {
	struct nrma_fabric *fabric;
	struct nrma_domain *domain;
};

/* cmocka setup and teardown; teardown checks that all was closed. */
int fake_env_setup(void **state);
int fake_env_teardown(void **state);
struct fid_domain *fake_domain(void **state);
struct fid_fabric *fake_fabric(void **state);

struct sockaddr_in make_sin(const char *ip, uint16_t port);
long elapsed_ms(const struct timespec *start);

/* Runs fn(arg) on another thread after delay_ms. */
struct delayed {
	pthread_t thread;
	int delay_ms;
	void (*fn)(void *arg);
	void *arg;
};

void delayed_start(struct delayed *d, int delay_ms, void (*fn)(void *),
		   void *arg);
void delayed_join(struct delayed *d);
/* Whether fd polls readable right now. */
int fd_readable(int fd);

#endif /* NRMA_TEST_H */
