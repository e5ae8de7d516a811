/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fi_atomic operations the device has no request for (all but an add,
 * read or compare-and-swap of one 64-bit integer), run by the initiator
 * with no CPU at the target.  For each element in turn: a compare-and-
 * swap on the naturally aligned 64-bit word that holds it, from the word
 * it expects to that word with the operation applied to the element
 * (nrma_atomic_calc.c).  A swap that finds another word lost to someone
 * else's atomic: the loop tries again from the word it found.  The first
 * guess is zero; after an element, its word as the swap left it.  An
 * FI_ATOMIC_READ is an add of 0 to the word.
 *
 * fi_atomic(3) asks that one actor apply every atomic to the memory: the
 * target's device is that actor, running each swap atomically with the
 * others' swaps and adds.  A CPU store to the same word at the target is
 * not (fi_nrma(7)).
 *
 * The loop's state rides in its operation's bounce buffer, behind the
 * word each atomic fetches.  The target's counters and a notified set's
 * word move once, after the last element, in a last chain of
 * notification atomics.  Transmits after a loop on its connection wait
 * until it ends (nrma_tx_held_waits), which keeps msg_order and the
 * order of notifications.
 */
#include "nrma_atomic_loop.h"

struct atomic_loop {
	uint64_t fetched; /* the word each atomic found: first, registered */
	uint64_t expect;  /* the word the swap on its way expects */
	size_t done;	  /* elements done */
	size_t size;	  /* of an element */
	bool notifying;	  /* its last chain, the notifications, is out */
	struct nrma_remote remote; /* the first element's place */
	struct nrma_remote set;
	struct fi_nrma_notify notify; /* a.notify's copy */
	struct nrma_atomic_args a;
};

_Static_assert(sizeof(struct atomic_loop) <= NRMA_XFER_BUF_MIN,
	       "a loop's state fits in its bounce buffer");

static struct atomic_loop *loop_of(struct nrma_ep *ep, const struct nrma_op *op)
{
	return nrma_bufpool_buf(&ep->xfer->tx_bufs, op->buf);
}

/* The device address of the next element's word, and its offset there. */
static uint64_t loop_word(const struct atomic_loop *l, size_t *offset)
{
	uint64_t at = l->remote.addr + l->done * l->size;

	*offset = at % sizeof(uint64_t);
	return at - *offset;
}

/* The word the swap of the next element writes, from the one expected. */
static uint64_t loop_swap(const struct atomic_loop *l)
{
	size_t at = l->done * l->size, offset;

	loop_word(l, &offset);
	return nrma_atomic_calc_apply(l->a.datatype, l->a.op, l->expect, offset,
				      l->a.operand + at, l->a.compare + at);
}

/* The next element's atomic, fetching its word into fetched. */
static void loop_step_wr(struct nrma_wr_chain *chain,
			 const struct atomic_loop *l,
			 const struct nrma_sge *fetched, unsigned flags)
{
	size_t offset;
	uint64_t word = loop_word(l, &offset);

	if (l->a.op == FI_ATOMIC_READ)
		nrma_wr_atomic(chain, NRMA_WR_FETCH_ADD, fetched, word,
			       l->remote.rkey, 0, 0, flags);
	else
		nrma_wr_atomic(chain, NRMA_WR_CMP_SWAP, fetched, word,
			       l->remote.rkey, l->expect, loop_swap(l), flags);
}

/* After the last element: what the target counts, once. */
static void loop_notify_wrs(struct nrma_wr_chain *chain, struct nrma_ep *ep,
			    const struct nrma_op *op,
			    const struct atomic_loop *l)
{
	const struct nrma_sge *scratch = nrma_scratch_sge(ep->xfer);

	nrma_rkey_notify_wrs(chain, op->conn, l->remote.cell_rkey,
			     nrma_rkey_atomic_counts(l->a.kind, l->a.op), false,
			     1, scratch);
	if (l->a.notify)
		nrma_rkey_notify_set_wr(chain, nrma_notify_set_add(&l->notify),
					&l->set, scratch, false);
}

static void loop_end(struct nrma_ep *ep, struct nrma_op *op)
{
	op->conn->xfer->atomic_looping = false;
	nrma_tx_report(ep, op);
	nrma_tx_ended(ep->xfer);
	nrma_op_free(ep->xfer, op);
}

/*
 * Posts what comes next, the next element's atomic or the notifications:
 * 1 when nothing does, else nrma_op_post's answer.
 */
static int loop_post(struct nrma_ep *ep, struct nrma_op *op, unsigned flags)
{
	struct atomic_loop *l = loop_of(ep, op);
	struct nrma_sge fetched =
		nrma_tx_buf_sge(ep->xfer, op->buf, sizeof(l->fetched));
	struct nrma_wr_chain chain;
	int ret;

	nrma_wr_chain_init(&chain);
	if (l->done < l->a.count)
		loop_step_wr(&chain, l, &fetched, flags);
	else
		loop_notify_wrs(&chain, ep, op, l);
	if (!chain.count)
		return 1;
	ret = nrma_op_post(op, &chain);
	if (!ret && l->done == l->a.count)
		l->notifying = true;
	return ret;
}

/* loop_post from progress: a full queue pair makes it wait its turn. */
static void loop_next(struct nrma_ep *ep, struct nrma_op *op)
{
	int ret = loop_post(ep, op, 0);

	if (ret == -FI_EAGAIN) {
		nrma_xfer_wait(ep->xfer, &op->link, &ep->xfer->atomic_waiting);
	} else if (ret) {
		if (ret < 0)
			op->error = -ret;
		loop_end(ep, op);
	}
}

int nrma_atomic_loop_start(struct nrma_ep *ep, struct nrma_conn *conn,
			   const struct nrma_atomic_args *a,
			   const struct nrma_remote *remote,
			   const struct nrma_remote *set, uint64_t flags)
{
	struct nrma_op *op = nrma_tx_op_alloc(ep, NRMA_OP_ATOMIC, conn, true);
	struct atomic_loop *l;
	int ret;

	if (!op)
		return -FI_EAGAIN;
	l = loop_of(ep, op);
	*l = (struct atomic_loop){
		.size = nrma_atomic_calc_size(a->datatype),
		.remote = *remote,
		.set = *set,
		.a = *a,
	};
	if (a->notify) {
		l->notify = *a->notify;
		l->a.notify = &l->notify;
	}
	op->context = a->context;
	op->len = a->count * l->size;
	op->flags = flags;
	ret = loop_post(ep, op, a->flags & FI_FENCE ? NRMA_WR_FLAG_FENCE : 0);
	if (ret) {
		nrma_op_free(ep->xfer, op);
		return ret;
	}
	conn->xfer->atomic_looping = true;
	return 0;
}

/*
 * The element's atomic took when it is a read, or a swap that found the
 * word it expected: its old value is the result's, and the word as the
 * swap left it the guess for the next element, where that shares it.
 * Else someone's atomic came first: again, from the word found.
 */
static void loop_settle(struct atomic_loop *l)
{
	size_t offset;
	uint64_t now;

	if (l->a.op != FI_ATOMIC_READ && l->fetched != l->expect) {
		l->expect = l->fetched;
		return;
	}
	loop_word(l, &offset);
	now = l->a.op == FI_ATOMIC_READ ? l->fetched : loop_swap(l);
	if (l->a.result)
		nrma_atomic_calc_get(l->fetched, offset, l->size,
				     (char *) l->a.result + l->done * l->size);
	l->done++;
	l->expect = offset + l->size < sizeof(uint64_t) ? now : 0;
}

void nrma_atomic_loop_wc(struct nrma_ep *ep, struct nrma_op *op)
{
	struct atomic_loop *l = loop_of(ep, op);

	if (op->error || l->notifying) {
		loop_end(ep, op);
		return;
	}
	loop_settle(l);
	loop_next(ep, op);
}

void nrma_atomic_loop_retry(struct nrma_ep *ep)
{
	struct nrma_dlist *head = &ep->xfer->atomic_waiting;
	struct nrma_dlist *last = head->prev, *item;

	/* Those that must wait again go to the tail, behind last. */
	while (!nrma_dlist_empty(head)) {
		item = nrma_dlist_pop_front(head);
		loop_next(ep, nrma_container_of(item, struct nrma_op, link));
		if (item == last)
			break;
	}
}
