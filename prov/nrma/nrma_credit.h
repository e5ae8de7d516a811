/* SPDX-License-Identifier: BSD-2-Clause */
/* Credits, the protocol's flow control (nrma_credit.c). */
#ifndef NRMA_CREDIT_H
#define NRMA_CREDIT_H

#include "nrma_xfer.h"

int nrma_credit_conn_open(struct nrma_ep *ep, struct nrma_conn *conn);
void nrma_credit_conn_close(struct nrma_ep *ep, struct nrma_conn *conn);
void nrma_credit_connected(struct nrma_ep *ep, struct nrma_conn *conn);
/* Buffers went on the shared receive queue: peers below their share get
 * credits from those no peer holds. */
void nrma_credit_refill(struct nrma_ep *ep);
bool nrma_credit_has(const struct nrma_conn *conn,
		     enum nrma_credit_class class);
bool nrma_credit_take(struct nrma_conn *conn, enum nrma_credit_class class);
void nrma_credit_untake(struct nrma_conn *conn, enum nrma_credit_class class);
/* Sends the message hdr heads, whose bytes sge says, with op. */
int nrma_credit_post(struct nrma_op *op, struct nrma_hdr *hdr,
		     const struct nrma_sge *sge);
/* Or, one the device copies as it is posted, with no record: its context
 * and flags wait in conn's ring (nrma_op_post_light). */
int nrma_credit_post_light(struct nrma_conn *conn, struct nrma_hdr *hdr,
			   const struct nrma_sge *sge, void *context,
			   uint64_t flags);
bool nrma_credit_arrived(struct nrma_ep *ep, struct nrma_conn *conn,
			 uint32_t buf, enum nrma_credit_class class,
			 const struct nrma_hdr *hdr);
void nrma_credit_released(struct nrma_ep *ep, uint32_t buf);
void nrma_credit_returned(struct nrma_ep *ep, struct nrma_op *op);
void nrma_credit_queue_send(struct nrma_ep *ep, struct nrma_op *op, bool front);
bool nrma_credit_send_waits(const struct nrma_conn *conn);
struct nrma_op *nrma_credit_queued(struct nrma_conn *conn);
void nrma_credit_unqueue(struct nrma_op *op);
void nrma_credit_tell_owed(struct nrma_ep *ep);
/*
 * Tells conn's peer, if it was not told yet, that our domain's key table
 * changed: whether it has heard of changes (a count) by now.
 */
bool nrma_credit_keys_told(struct nrma_ep *ep, struct nrma_conn *conn,
			   uint64_t changes);

#endif /* NRMA_CREDIT_H */
