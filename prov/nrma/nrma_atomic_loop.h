/* SPDX-License-Identifier: BSD-2-Clause */
/* Atomics the device has no operation for, run by the initiator as
 * compare-and-swap loops (nrma_atomic_loop.c). */
#ifndef NRMA_ATOMIC_LOOP_H
#define NRMA_ATOMIC_LOOP_H

#include "nrma_rkey.h"

/*
 * Starts a's loop on conn: remote is its first element's place (each
 * element's whole word in the peer's region, checked), set a notified
 * atomic's set word, flags its completion's.  While it runs, transmits
 * after it on conn wait (nrma_tx_held_waits).  0, or -FI_EAGAIN.
 */
int nrma_atomic_loop_start(struct nrma_ep *ep, struct nrma_conn *conn,
			   const struct nrma_atomic_args *a,
			   const struct nrma_remote *remote,
			   const struct nrma_remote *set, uint64_t flags);
/* A chain of a loop's operation (NRMA_OP_ATOMIC) ended. */
void nrma_atomic_loop_wc(struct nrma_ep *ep, struct nrma_op *op);
/* Loops that waited for send queue room go on. */
void nrma_atomic_loop_retry(struct nrma_ep *ep);

#endif /* NRMA_ATOMIC_LOOP_H */
