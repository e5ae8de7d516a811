/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Tests that run on two hosts at once (contrib/nrma-vm --hosts 2): the
 * same program runs on both, NRMA_VM_HOST says which it is, and the two
 * exchange small records through files in a directory both see
 * (NRMA_TEST_SHARE), each written whole and then renamed into place.
 */
#ifndef NRMA_ITEST_HOST_H
#define NRMA_ITEST_HOST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* 0 or 1 on two hosts; fails the test elsewhere. */
int itest_host(void);
/* The other host's address (NRMA_TEST_PEER_ADDR). */
const char *itest_host_peer_addr(void);
/* Publishes len bytes under key for the other host. */
void itest_host_put(const char *key, const void *buf, size_t len);
/* Whether the other host published key yet; fails if it failed. */
int itest_host_has(const char *key);
/*
 * Waits (within the deadline, progressing) for key and reads it; fails at
 * once if the other host failed meanwhile.
 */
void itest_host_get(const char *key, void *buf, size_t len);
/* A key with nothing in it: a step reached. */
void itest_host_signal(const char *key);
/* Waits for key; fails at once if the other host failed meanwhile. */
void itest_host_wait(const char *key);
/* The device's queue pairs and counters, on stderr: for a failure report. */
void itest_host_dump_device(void);
/*
 * Whether bound_s seconds have passed since since_ms (never while
 * since_ms < 0); when they have, the device's state is dumped first.
 */
bool itest_host_past_bound(int64_t since_ms, int bound_s);

#endif /* NRMA_ITEST_HOST_H */
