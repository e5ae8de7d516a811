/* SPDX-License-Identifier: BSD-2-Clause */
/* Sending (nrma_send.c): what progress and receives hand back. */
#ifndef NRMA_SEND_H
#define NRMA_SEND_H

#include "nrma_xfer.h"

/*
 * Sends whose credits came back go out in order; a peer with none left
 * keeps its sends, the others' go ahead.
 */
void nrma_send_resume_blocked(struct nrma_ep *ep);
/*
 * A send's work request completed (or was flushed): its bounce buffer is
 * free, and a segmented send's next segments may go.
 */
void nrma_send_sent(struct nrma_ep *ep, struct nrma_op *op);
void nrma_send_acked(struct nrma_ep *ep, uint64_t token, struct nrma_conn *conn,
		     bool failed);
void nrma_send_conn_failed(struct nrma_ep *ep, struct nrma_conn *conn);
/* Sets what conn's light sends may carry (its QP's inline data). */
void nrma_send_conn_open(struct nrma_ep *ep, struct nrma_conn *conn);
/* Sends that waited for their connections go once they are up. */
void nrma_send_connecting(struct nrma_ep *ep);
/* Probes the peers of sends waiting long for their ACKs. */
void nrma_send_check_peers(struct nrma_ep *ep);

#endif /* NRMA_SEND_H */
