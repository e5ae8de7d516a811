/* SPDX-License-Identifier: BSD-2-Clause */
/* Data progress of the protocol layer (nrma_progress.c). */
#ifndef NRMA_PROGRESS_H
#define NRMA_PROGRESS_H

#include "nrma_xfer.h"

/* Handles what ep's device completed: how many completions. */
int nrma_progress_poll(struct nrma_ep *ep);
/*
 * A receive call, with the lock of rc's endpoints held: a peek first
 * progresses them, so that it sees what has arrived by now.
 */
ssize_t nrma_progress_rx_ctx_recv(struct nrma_rx_ctx *rc,
				  const struct nrma_recv_args *args);

/*
 * A critical error (fi_endpoint(3)) broke ep's device resources: it is
 * disabled for good, and all it had pending ends in error.
 */
void nrma_progress_disable(struct nrma_ep *ep, int err);

#endif /* NRMA_PROGRESS_H */
