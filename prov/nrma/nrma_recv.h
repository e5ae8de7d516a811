/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Receiving (nrma_recv.c): posted receives, arrivals, segmented messages,
 * rendezvous reads.
 */
#ifndef NRMA_RECV_H
#define NRMA_RECV_H

#include "nrma_xfer.h"

/* ep leaves: the messages it holds go, and so do its reads into rc's
 * receives; ep is closing. */
void nrma_recv_ctx_leave(struct nrma_rx_ctx *rc, struct nrma_ep *ep);
/* rc closes, ep stays: what ep holds or reads for rc is refused. */
void nrma_recv_ctx_drop(struct nrma_rx_ctx *rc, struct nrma_ep *ep);
/* Whether reads into receives of a dropped context are on the device. */
bool nrma_recv_reads_orphaned(struct nrma_ep *ep);
/* Posting, with the lock of rc's endpoints held. */
ssize_t nrma_recv_ctx_recv(struct nrma_rx_ctx *rc,
			   const struct nrma_recv_args *args);
ssize_t nrma_recv_ctx_cancel(struct nrma_rx_ctx *rc, void *context);
/* A disabled endpoint's posted receives end, cancelled. */
void nrma_recv_discard(struct nrma_ep *ep);

/* What progress hands over */
void nrma_recv_message(struct nrma_ep *ep, uint32_t buf, uint32_t len,
		       struct nrma_conn *conn);
void nrma_recv_buf_release(struct nrma_ep *ep, uint32_t buf);
void nrma_recv_read_finish(struct nrma_ep *ep, struct nrma_op *op);
void nrma_recv_reads_retry(struct nrma_ep *ep);
void nrma_recv_stalled_retry(struct nrma_ep *ep);
void nrma_recv_acks_retry(struct nrma_ep *ep);
/*
 * conn failed: the segmented message it was receiving ends, its receive
 * in error, or, held, as if it never came (a claimed one fails the
 * receive that takes it).
 */
void nrma_recv_conn_failed(struct nrma_ep *ep, struct nrma_conn *conn);
/* conn closes with its endpoint: its message goes with the endpoint. */
void nrma_recv_conn_close(struct nrma_conn *conn);

#endif /* NRMA_RECV_H */
