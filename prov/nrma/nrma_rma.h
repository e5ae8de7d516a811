/* SPDX-License-Identifier: BSD-2-Clause */
/* RMA (nrma_rma.c): what progress hands back; the calls are in nrma.h. */
#ifndef NRMA_RMA_H
#define NRMA_RMA_H

#include "nrma_xfer.h"

void nrma_rma_finish(struct nrma_ep *ep, struct nrma_op *op);
/* The writes a batch's notifications (notify) announced end with them. */
void nrma_rma_notified(struct nrma_ep *ep, struct nrma_op *notify);
void nrma_rma_conn_failed(struct nrma_ep *ep, struct nrma_conn *conn);
void nrma_rma_write_data(struct nrma_ep *ep, const struct nrma_wc *wc,
			 struct nrma_conn *conn);

#endif /* NRMA_RMA_H */
