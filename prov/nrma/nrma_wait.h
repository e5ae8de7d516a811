/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Wait objects for CQs, counters and EQs (nrma_wait.c).  FI_WAIT_FD is an
 * epoll fd holding an eventfd (signalled when the object gains something
 * to read) and the completion and connection channels of the endpoints
 * bound to the object.
 */
#ifndef NRMA_WAIT_H
#define NRMA_WAIT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include <rdma/fabric.h>

struct nrma_wait {
	enum fi_wait_obj type; /* FI_WAIT_NONE, _FD or _YIELD */
	int fd;		       /* epoll fd for FI_WAIT_FD, else -1 */
	int event_fd;
	atomic_bool raised; /* nrma_wait_raise made event_fd readable */
};

int nrma_wait_open(struct nrma_wait *wait, enum fi_wait_obj requested);
int nrma_wait_add_fd(struct nrma_wait *wait, int fd);
void nrma_wait_del_fd(struct nrma_wait *wait, int fd);
void nrma_wait_close(struct nrma_wait *wait);
void nrma_wait_signal(struct nrma_wait *wait);
void nrma_wait_drain(struct nrma_wait *wait);
/*
 * Raise makes the fd readable unless it is already, lower undoes that: a
 * queue's first entry or a counter's first change raises it, the next
 * ones make no system call.  An owner that uses them (CQs, counters) uses
 * only them.  Raise needs no lock: one that finds the fd raised comes
 * after a lower only if the lowering thread then sees what it announces
 * (a change made before the raise, read after the lower).
 */
void nrma_wait_raise(struct nrma_wait *wait);
void nrma_wait_lower(struct nrma_wait *wait);
int nrma_wait_block(struct nrma_wait *wait, int timeout_ms);
int nrma_wait_control(struct nrma_wait *wait, int command, void *arg);
int nrma_wait_timeout_left(const struct timespec *start, int timeout_ms);
/* Microseconds since start (CLOCK_MONOTONIC). */
long nrma_wait_elapsed_us(const struct timespec *start);
/* CLOCK_MONOTONIC in milliseconds, to the millisecond. */
int64_t nrma_wait_now_ms(void);

#endif /* NRMA_WAIT_H */
