/* SPDX-License-Identifier: BSD-2-Clause */
/* Triggered operations (nrma_trigger.c). */
#ifndef NRMA_TRIGGER_H
#define NRMA_TRIGGER_H

#include "nrma_xfer.h"

/* Submits a held operation: args, its kind's, with the copied vectors. */
typedef ssize_t (*nrma_trigger_fire_fn)(struct nrma_ep *ep, void *args,
					const struct iovec *iov, void **desc,
					size_t len);
/* What an operation kind hands over to have an operation held... */
struct nrma_trigger_op {
	nrma_trigger_fire_fn fire;
	const void *args;
	size_t args_size;
	void *context; /* a struct fi_triggered_context */
	uint64_t comp_flags;
};
#define NRMA_TRIGGER_OP(fire_fn, a, flags)                    \
	((struct nrma_trigger_op){ .fire = (fire_fn),         \
				   .args = (a),               \
				   .args_size = sizeof(*(a)), \
				   .context = (a)->context,   \
				   .comp_flags = (flags) })
/* ...and its data: the io vectors to copy (none: count 0). */
struct nrma_trigger_io {
	const struct iovec *iov;
	void **desc; /* NULL: none */
	size_t count;
	size_t len;
};
/*
 * Holds an operation posted with FI_TRIGGER (flags) until its context's
 * counter reaches the threshold: -FI_EINVAL for a context or flags that
 * cannot be triggered.
 */
ssize_t nrma_trigger_hold(struct nrma_ep *ep, uint64_t flags,
			  struct nrma_trigger_op op, struct nrma_trigger_io io);
/* Submits what is due; called without the endpoint's lock. */
void nrma_trigger_fire_ready(struct nrma_ep *ep);
/* Ends what is held with FI_ECANCELED entries: the endpoint broke. */
void nrma_trigger_cancel_all(struct nrma_ep *ep);

#endif /* NRMA_TRIGGER_H */
