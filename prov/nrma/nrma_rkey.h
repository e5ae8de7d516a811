/* SPDX-License-Identifier: BSD-2-Clause */
/* Peers' MR keys, and the notification atomics at the words they name
 * (nrma_rkey.c). */
#ifndef NRMA_RKEY_H
#define NRMA_RKEY_H

#include "nrma_xfer.h"

struct nrma_remote {
	uint64_t addr;
	uint32_t rkey;
	uint32_t cell_rkey; /* 0: the region counts nothing */
};

/*
 * Where len bytes at addr under the peer's key go, needing access
 * (NRMA_KEY_REMOTE_*): 0; -FI_EINPROGRESS while the key is looked up
 * (the operation waits for it, held: nrma_tx_hold), -FI_EAGAIN when it
 * cannot be now;
 * -FI_EACCES when the peer has no such key, or its region does not
 * cover the bytes or allow the access.
 */
int nrma_rkey_target(struct nrma_ep *ep, struct nrma_conn *conn, uint64_t key,
		     uint64_t addr, uint64_t len, uint32_t access,
		     struct nrma_remote *remote);
/*
 * nrma_rkey_target for a key among the last ones conn used, known and
 * current; 1 for any other, with nothing asked of the peer.
 */
int nrma_rkey_target_known(struct nrma_ep *ep, struct nrma_conn *conn,
			   uint64_t key, uint64_t addr, uint64_t len,
			   uint32_t access, struct nrma_remote *remote);
/* nrma_rkey_target for the word that notify names in its set. */
int nrma_rkey_notify_target(struct nrma_ep *ep, struct nrma_conn *conn,
			    const struct fi_nrma_notify *notify,
			    struct nrma_remote *set);
/* nrma_rkey_target_known for that word. */
int nrma_rkey_notify_target_known(struct nrma_ep *ep, struct nrma_conn *conn,
				  const struct fi_nrma_notify *notify,
				  struct nrma_remote *set);
void nrma_rkey_read_done(struct nrma_ep *ep, struct nrma_op *op);
void nrma_rkey_conn_close(struct nrma_conn *conn);
/*
 * What the target counts an operation as (fi_nrma(7), Counters): an RMA
 * write or base atomic a remote write, an RMA read or FI_ATOMIC_READ a
 * remote read, and a fetching or compare atomic that may change the
 * target an update, which is both: a counter bound for FI_REMOTE_WRITE,
 * FI_REMOTE_READ or both counts it once (nrma_cntr_remote_bind), so that
 * one waiting for writes sees a swap.
 */
enum nrma_rkey_counts {
	NRMA_RKEY_COUNTS_WRITE,
	NRMA_RKEY_COUNTS_READ,
	NRMA_RKEY_COUNTS_UPDATE,
};

static inline enum nrma_rkey_counts nrma_rkey_atomic_counts(
	enum nrma_atomic_kind kind, enum fi_op op)
{
	if (kind == NRMA_ATOMIC_BASE)
		return NRMA_RKEY_COUNTS_WRITE;
	return op == FI_ATOMIC_READ ? NRMA_RKEY_COUNTS_READ :
				      NRMA_RKEY_COUNTS_UPDATE;
}

/*
 * The notifications an operation owes conn's peer (its endpoint's cell,
 * and the region's if cell_rkey), each adding add, onto chain.
 */
void nrma_rkey_notify_wrs(struct nrma_wr_chain *chain,
			  const struct nrma_conn *conn, uint32_t cell_rkey,
			  enum nrma_rkey_counts counts, bool fence,
			  uint64_t add, const struct nrma_sge *scratch);
/* The fetch-and-add of add to a notification set's word at set. */
void nrma_rkey_notify_set_wr(struct nrma_wr_chain *chain, uint64_t add,
			     const struct nrma_remote *set,
			     const struct nrma_sge *scratch, bool fence);

/* An index the descriptor puts outside its set, or an unknown op. */
static inline int nrma_notify_check(const struct fi_nrma_notify *notify)
{
	if (!notify || notify->index >= notify->set.count ||
	    notify->index >= FI_NRMA_NSET_MAX ||
	    (notify->op != FI_NRMA_NOTIFY_INC &&
	     notify->op != FI_NRMA_NOTIFY_ADD))
		return -FI_EINVAL;
	return 0;
}

/* What a notified operation adds to its set's word. */
static inline uint64_t nrma_notify_set_add(const struct fi_nrma_notify *notify)
{
	if (!notify)
		return 0;
	return notify->op == FI_NRMA_NOTIFY_ADD ? notify->value : 1;
}

#endif /* NRMA_RKEY_H */
