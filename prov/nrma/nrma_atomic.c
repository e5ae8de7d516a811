/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fi_atomic: every operation and datatype of fi_atomic(3) whose element
 * fits in 64 bits, in its plain, fetching and compare forms, with no CPU
 * at the target.  What verbs atomics do natively goes as one request: an
 * add (FI_SUM), a read (an add of 0) or a compare-and-swap (FI_CSWAP) of
 * one 64-bit integer.  Everything else the initiator runs as a loop of
 * compare-and-swaps (nrma_atomic_loop.c).
 *
 * The operand travels inside the work request, so every atomic is
 * injected in effect.  A fetched value lands in a bounce buffer and is
 * copied out on completion, which comes once the atomic was done at the
 * target.  Notification atomics follow unfenced: a responder executes
 * the atomics of a queue pair in order, each done before the next, so
 * the counter moves after the word.  (A fence there also let Linux 6.1's
 * Soft-RoCE stall for good when it retransmitted the fenced notification:
 * its fence waited for the notification's own atomic.)
 */
#include <rdma/fi_atomic.h>

#include "nrma_atomic_loop.h"
#include "nrma_rkey.h"
#include "nrma_trigger.h"
#include "nrma_xfer.h"

/*
 * The datatypes and operations libfabric names, 1.x's and those 2.0 added
 * (FI_FLOAT16 to FI_FLOAT8_E5M2 after FI_UINT128, FI_DIFF after FI_MSWAP),
 * by number, so that builds against either answer alike: past them is
 * -FI_EINVAL, a named one nrma does not do -FI_EOPNOTSUPP.
 */
#define ATOMIC_DATATYPES_NAMED (FI_UINT128 + 5)
#define ATOMIC_OPS_NAMED       (FI_MSWAP + 2)

int nrma_atomic_valid(enum fi_datatype datatype, enum fi_op op,
		      enum nrma_atomic_kind kind, size_t *count)
{
	if ((unsigned) datatype >= ATOMIC_DATATYPES_NAMED ||
	    (unsigned) op >= ATOMIC_OPS_NAMED)
		return -FI_EINVAL;
	if (!nrma_atomic_calc_valid(datatype, op, kind))
		return -FI_EOPNOTSUPP;
	if (count)
		*count = NRMA_ATOMIC_MAX_BYTES /
			 nrma_atomic_calc_size(datatype);
	return 0;
}

/* What the device does in one request: an add, a read or a swap of one
 * 64-bit integer. */
static bool atomic_native(const struct nrma_atomic_args *a)
{
	if (a->count != 1 ||
	    (a->datatype != FI_INT64 && a->datatype != FI_UINT64))
		return false;
	switch (a->kind) {
	case NRMA_ATOMIC_BASE:
		return a->op == FI_SUM;
	case NRMA_ATOMIC_FETCH:
		return a->op == FI_SUM || a->op == FI_ATOMIC_READ;
	default:
		return a->op == FI_CSWAP;
	}
}

static uint64_t atomic_u64(const unsigned char *element)
{
	uint64_t v;

	memcpy(&v, element, sizeof(v));
	return v;
}

/* The atomic work request; verbs compares with add and swaps in swap. */
static void atomic_wr(struct nrma_wr_chain *chain,
		      const struct nrma_atomic_args *a,
		      const struct nrma_remote *remote,
		      const struct nrma_sge *result)
{
	bool cswap = a->op == FI_CSWAP;
	uint64_t operand = atomic_u64(a->operand);

	nrma_wr_chain_init(chain);
	nrma_wr_atomic(chain, cswap ? NRMA_WR_CMP_SWAP : NRMA_WR_FETCH_ADD,
		       result, remote->addr, remote->rkey,
		       cswap		       ? atomic_u64(a->compare) :
		       a->op == FI_ATOMIC_READ ? 0 :
						 operand,
		       operand, a->flags & FI_FENCE ? NRMA_WR_FLAG_FENCE : 0);
}

static ssize_t atomic_post(struct nrma_ep *ep, struct nrma_conn *conn,
			   const void *args, size_t len);

/* Holds an atomic on its connection for a key (nrma_tx_hold): its
 * operands are values already, its notification is copied. */
static ssize_t atomic_hold(struct nrma_ep *ep, struct nrma_conn *conn,
			   const struct nrma_atomic_args *a, size_t len)
{
	struct nrma_tx_held *h = nrma_tx_held_new(a, sizeof(*a), a->notify, 0);
	struct nrma_atomic_args *kept;

	if (!h)
		return -FI_EAGAIN;
	kept = (void *) h->args;
	kept->notify = a->notify ? &h->notify : NULL;
	h->post = atomic_post;
	h->len = len;
	h->context = a->context;
	h->comp_flags = FI_ATOMIC |
			(a->kind == NRMA_ATOMIC_BASE ? FI_WRITE : FI_READ);
	return nrma_tx_hold(ep, conn, h);
}

/* The atomic, and the notifications that follow it; result: its fetch. */
static void atomic_wrs(struct nrma_wr_chain *chain,
		       const struct nrma_conn *conn,
		       const struct nrma_atomic_args *a,
		       const struct nrma_remote *remote,
		       const struct nrma_remote *set,
		       const struct nrma_sge *result,
		       const struct nrma_sge *scratch)
{
	atomic_wr(chain, a, remote, result);
	nrma_rkey_notify_wrs(chain, conn, remote->cell_rkey,
			     nrma_rkey_atomic_counts(a->kind, a->op), false, 1,
			     scratch);
	if (a->notify)
		nrma_rkey_notify_set_wr(chain, nrma_notify_set_add(a->notify),
					set, scratch, false);
}

/*
 * One that fetches nothing the caller wants: its operand travels in the
 * request, so it needs no operation record (nrma_op_post_light).
 */
static int atomic_post_light(struct nrma_ep *ep, struct nrma_conn *conn,
			     const struct nrma_atomic_args *a,
			     const struct nrma_remote *remote,
			     const struct nrma_remote *set, uint64_t flags)
{
	const struct nrma_sge *scratch = nrma_scratch_sge(ep->xfer);
	struct nrma_wr_chain chain;

	if (!nrma_tx_room(ep->xfer))
		return -FI_EAGAIN;
	atomic_wrs(&chain, conn, a, remote, set, scratch, scratch);
	return nrma_op_post_light(conn, &chain, a->context, flags);
}

/*
 * Any other, with an operation record: one that fetches does so into a
 * bounce buffer, for the record's end to copy out.
 */
static int atomic_post_op(struct nrma_ep *ep, struct nrma_conn *conn,
			  const struct nrma_atomic_args *a, size_t len,
			  const struct nrma_remote *remote,
			  const struct nrma_remote *set, uint64_t flags)
{
	bool fetch = a->kind != NRMA_ATOMIC_BASE;
	struct nrma_xfer *x = ep->xfer;
	const struct nrma_sge *scratch = nrma_scratch_sge(x);
	struct nrma_sge result = *scratch;
	struct nrma_wr_chain chain;
	struct nrma_op *op = nrma_tx_op_alloc(ep, NRMA_OP_RMA, conn, fetch);
	int ret;

	if (!op)
		return -FI_EAGAIN;
	op->context = a->context;
	op->len = len;
	op->flags = flags;
	if (fetch) {
		op->iov[0] =
			(struct iovec){ .iov_base = a->result, .iov_len = len };
		op->iov_count = 1;
		result = nrma_tx_buf_sge(x, op->buf, len);
	}
	atomic_wrs(&chain, conn, a, remote, set, &result, scratch);
	ret = nrma_op_post(op, &chain);
	if (ret)
		nrma_op_free(x, op);
	return ret;
}

/*
 * Where the elements go (len bytes at a->addr): each naturally aligned,
 * and the whole 64-bit word of each in the peer's region, since the
 * device swaps words.  Any atomic changes its word, FI_ATOMIC_READ too
 * (it adds 0).
 */
static int atomic_target(struct nrma_ep *ep, struct nrma_conn *conn,
			 const struct nrma_atomic_args *a, size_t len,
			 struct nrma_remote *remote)
{
	const uint64_t word = sizeof(uint64_t);
	struct nrma_remote words;
	uint64_t lead;
	int ret = nrma_rkey_target(ep, conn, a->key, a->addr, len,
				   NRMA_KEY_REMOTE_WRITE, remote);

	if (ret)
		return ret;
	if (remote->addr % nrma_atomic_calc_size(a->datatype))
		return -FI_EINVAL;
	lead = remote->addr % word;
	if (!lead && !(len % word))
		return 0;
	return nrma_rkey_target(ep, conn, a->key, a->addr - lead,
				(lead + len + word - 1) / word * word,
				NRMA_KEY_REMOTE_WRITE, &words);
}

static ssize_t atomic_post(struct nrma_ep *ep, struct nrma_conn *conn,
			   const void *args, size_t len)
{
	const struct nrma_atomic_args *a = args;
	bool fetch = a->kind != NRMA_ATOMIC_BASE;
	struct nrma_remote remote, set = { 0 };
	uint64_t flags = FI_ATOMIC | (fetch ? FI_READ : FI_WRITE) |
			 nrma_tx_comp_flags(ep, a->flags, a->silent);
	int ret;

	ret = atomic_target(ep, conn, a, len, &remote);
	if (!ret && a->notify)
		ret = nrma_rkey_notify_target(ep, conn, a->notify, &set);
	if (nrma_tx_held_must_wait(conn, a, ret))
		return atomic_hold(ep, conn, a, len);
	if (ret == -FI_EACCES)
		return nrma_tx_refuse(ep, a->context, flags);
	if (ret)
		return ret;
	if (!atomic_native(a))
		ret = nrma_atomic_loop_start(ep, conn, a, &remote, &set, flags);
	else if (fetch || !nrma_op_light_fits(conn))
		ret = atomic_post_op(ep, conn, a, len, &remote, &set, flags);
	else
		ret = atomic_post_light(ep, conn, a, &remote, &set, flags);
	if (ret)
		return ret;
	nrma_tx_started(ep->xfer);
	return 0;
}

/* A triggered atomic's turn came (nrma_trigger.c): its operands are in a. */
static ssize_t atomic_fire(struct nrma_ep *ep, void *args,
			   const struct iovec *iov, void **desc, size_t len)
{
	struct nrma_atomic_args *a = args;

	(void) iov;
	(void) desc;
	a->flags &= ~FI_TRIGGER;
	return nrma_tx_submit(ep, a->dest, atomic_post, a, len, false);
}

static ssize_t atomic_trigger(struct nrma_ep *ep,
			      const struct nrma_atomic_args *a)
{
	struct nrma_trigger_io io = {
		.len = a->count * nrma_atomic_calc_size(a->datatype),
	};
	uint64_t dir = a->kind == NRMA_ATOMIC_BASE ? FI_WRITE : FI_READ;

	/* A notification set's operations are not triggered. */
	if (a->notify)
		return -FI_EINVAL;
	return nrma_trigger_hold(
		ep, a->flags, NRMA_TRIGGER_OP(atomic_fire, a, FI_ATOMIC | dir),
		io);
}

ssize_t nrma_atomic(struct nrma_ep *ep, const struct nrma_atomic_args *a)
{
	if (a->flags & FI_TRIGGER)
		return atomic_trigger(ep, a);
	return nrma_tx_submit(ep, a->dest, atomic_post, a,
			      a->count * nrma_atomic_calc_size(a->datatype),
			      false);
}
