/* SPDX-License-Identifier: BSD-2-Clause */
/* Coalesced notifications (nrma_batch.c). */
#ifndef NRMA_BATCH_H
#define NRMA_BATCH_H

#include "nrma_xfer.h"

/* Whether notifications are coalesced at all (FI_NRMA_NOTIFY_COALESCE). */
static inline bool nrma_batch_enabled(void)
{
	return nrma_params.notify_coalesce > 1;
}

/*
 * Whether a notified write to t joins conn's batch: 1 if it does (post
 * the write alone, then nrma_batch_add), 0 if it carries its own atomics,
 * -FI_EAGAIN while a batch for other targets cannot go out.
 */
int nrma_batch_open(struct nrma_ep *ep, struct nrma_conn *conn,
		    const struct nrma_batch_target *t);
/* op's write is posted; set_add is what it adds to the set's word. */
void nrma_batch_add(struct nrma_ep *ep, struct nrma_op *op,
		    const struct nrma_batch_target *t, uint64_t set_add);
/* op's write completed: whether op still waits for its notification. */
bool nrma_batch_holds(struct nrma_ep *ep, struct nrma_op *op);
/*
 * A batch's atomics completed (notify: NRMA_OP_NOTIFY): the next of the
 * writes they announced, to end now with notify's error if it has none;
 * NULL after the last.
 */
struct nrma_op *nrma_batch_notified_next(struct nrma_op *notify);
/*
 * conn failed: the writes of its batch whose own completions came go on
 * ended, to end now; the others end as their completions come.
 */
void nrma_batch_conn_failed(struct nrma_conn *conn, struct nrma_dlist *ended);
/* Posts the batches that waited for room on their queue pairs. */
void nrma_batch_retry(struct nrma_ep *ep);

#endif /* NRMA_BATCH_H */
