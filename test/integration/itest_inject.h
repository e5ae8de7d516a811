/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Device events made up for the provider, in this process only: a test
 * that links itest_inject.c (with -export-dynamic, so that the provider's
 * calls reach it) stands between the provider and libibverbs' async
 * event calls.  Soft-RoCE cannot be made to break a completion queue or
 * die on demand; the rest of the device stays real.
 */
#ifndef NRMA_ITEST_INJECT_H
#define NRMA_ITEST_INJECT_H

#include <infiniband/verbs.h>

/* Before this process opens a domain: hooks every device's event fd. */
void itest_inject_init(void);
/* The completion queue the provider created last (its newest endpoint's). */
struct ibv_cq *itest_inject_last_cq(void);
/* The provider reads type (for cq, if not NULL) as its next event. */
void itest_inject_event(enum ibv_event_type type, struct ibv_cq *cq);

#endif /* NRMA_ITEST_INJECT_H */
