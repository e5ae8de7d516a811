/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The data path of an endpoint, and what the protocol's files share: its
 * state, operations and posting (nrma_xfer.c).  Each protocol file has a
 * header of its own for what it offers the others (nrma_send.h,
 * nrma_recv.h, nrma_rma.h, nrma_batch.h, nrma_rkey.h, nrma_credit.h,
 * nrma_trigger.h, nrma_progress.h).  All of it runs with ep->lock held.
 *
 * Messages up to eager_size are copied into a registered bounce buffer
 * (or, those the device copies inline, built on the stack) and sent into
 * one of the endpoint's shared receive buffers.  Those up
 * to sar_size go the same way in pieces (segments of eager_size bytes
 * with their headers, back to back on their connection), which the
 * receiver copies into the posted receive as they come, or holds until
 * one is posted: no registration, no round trip.  Larger ones go by
 * rendezvous: the sender registers its buffer and sends its address; the
 * receiver reads the data straight into the posted receive buffer with
 * RDMA read, then tells the sender with an ACK.  An eager or segmented
 * message sent with FI_DELIVERY_COMPLETE also asks for an ACK, which the
 * receiver sends once the data is in the application's buffer.
 *
 * A message with no posted receive waits in its receive buffer on the
 * unexpected queue; buffers are replaced while the pool lasts.  Credits
 * (nrma_credit.c) keep all peers together from sending more than the
 * buffers posted: a send past its credits waits at the sender, so the
 * shared receive queue does not run dry, and what else goes to that peer
 * (ACKs, reads, RMA) never waits behind a message it has no room for.
 * Nothing is dropped.
 */
#ifndef NRMA_XFER_H
#define NRMA_XFER_H

#include "nrma.h"
#include "nrma_bufpool.h"
#include "nrma_chunkpool.h"
#include "nrma_cm.h"
#include "nrma_credit_calc.h"
#include "nrma_hash.h"
#include "nrma_match.h"
#include "nrma_proto.h"
#include "nrma_ring.h"
#include "nrma_token.h"
#include "nrma_verbs.h"

#define NRMA_WR_RECV	   (1ULL << 63) /* wr_id of a receive buffer */
/*
 * wr_id of a chain posted without an operation record
 * (nrma_op_post_light): its connection's struct nrma_xfer_conn, whose
 * address is 8-byte aligned and below bit 62; the low bit marks the
 * requests before the chain's last.
 */
#define NRMA_WR_LIGHT	   (1ULL << 62)
#define NRMA_WR_LIGHT_PART 1ULL
#define NRMA_WR_LIGHT_CONN \
	(~(NRMA_WR_RECV | NRMA_WR_LIGHT | NRMA_WR_LIGHT_PART))
/*
 * An operation's work requests but the last are unsignaled; the last one's
 * wr_id carries how many send queue slots its completion frees.
 */
#define NRMA_WR_SLOTS_SHIFT 32
#define NRMA_WR_SLOTS_MASK  0xffu
/* ACKs one peer may be owed while its queue is full. */
#define NRMA_ACKS_OWED_MAX  65536
/* Segments one send has in flight at most. */
#define NRMA_SAR_WINDOW	    16
/* A bounce buffer's bytes at least: an atomic loop's state (nrma_atomic_loop.c). */
#define NRMA_XFER_BUF_MIN   512
/* Work requests one operation posts at most. */
#define NRMA_OP_MAX_WRS	    NRMA_IOV_LIMIT
_Static_assert(NRMA_OP_MAX_WRS <= NRMA_WR_SLOTS_MASK,
	       "a chain's slot count fits its wr_id");
_Static_assert(NRMA_OP_MAX_WRS <= NRMA_VERBS_CHAIN_MAX,
	       "an operation's requests go in one chain");

/*
 * The words a notified write bumps at the peer, besides the peer
 * endpoint's cell: writes with equal targets share a batch.
 */
struct nrma_batch_target {
	uint32_t cell_rkey; /* its region's cell, 0: none */
	bool has_set;	    /* a word of a notification set */
	uint32_t set_rkey;
	uint64_t set_addr;
};

/*
 * Notified writes whose atomics wait to go out as one (nrma_batch.c, the
 * data path's; FI_NRMA_NOTIFY_COALESCE).
 */
struct nrma_notify_batch {
	struct nrma_dlist ops; /* struct nrma_op, by op->link */
	struct nrma_batch_target target;
	size_t count;	  /* writes in ops */
	size_t writing;	  /* of those, not yet completed at the device */
	uint64_t set_add; /* what they add to the set's word */
	bool deferred;	  /* on the endpoint's list of those to retry */
	struct nrma_dlist deferred_link;
};

/* Per connection, the remote keys found without a lookup (nrma_rkey.c). */
#define NRMA_RKEY_HOT 4

struct nrma_rkey;

/*
 * The segmented message a connection is receiving (nrma_recv.c), one at a
 * time: its segments come in order, each where the last one ended.
 * Between messages, next is 0.
 */
struct nrma_sar_rx {
	struct nrma_dlist link; /* on the endpoint's sar_receiving */
	uint64_t len;		/* the message's length */
	uint64_t next;		/* the offset the next segment must have */
	/* Where segments go: into a receive, onto a held message, or away. */
	struct nrma_rx_entry *rx;
	struct nrma_unexp *held;
	uint32_t held_last; /* held: the receive buffer to chain the next to */
	/* rx: where the message lands, and what its completion says */
	size_t rx_offset;
	size_t rx_len; /* what fits: the rest is truncated */
	void *rx_buf;
	uint64_t tag;
	uint32_t cq_data;
	uint8_t hdr_flags;
	/* The sender's ACK, owed at the last segment: its token, a NACK. */
	bool ack_owed;
	bool ack_failed;
	uint64_t token;
};

/*
 * A chain posted without an operation record: what its completion
 * reports.  A write the device copies as it is posted, with nothing of
 * the caller's to release when it ends, needs no more.
 */
struct nrma_op_light {
	void *context;
	uint64_t flags;	  /* completion flags, FI_COMPLETION */
	uint32_t wrs;	  /* send queue slots its end frees */
	uint32_t orphans; /* posted in part: flushes still to come */
	int error;	  /* first failure, positive */
	int prov_errno;	  /* its verbs completion status */
};

/*
 * What the data path keeps of one connection (its struct nrma_conn's
 * xfer): made when the connection opens, before it says hello
 * (nrma_progress_conn_open), freed when it is freed.
 */
struct nrma_xfer_conn {
	struct nrma_conn *conn; /* whose it is: its lists' entries lead back */
	size_t acks_owed;	/* ACKs waiting for room to go to the peer */
	bool probing;		/* a probe is on its way (nrma_tx_probe) */
	/* Flow control (nrma_credit.c), by enum nrma_credit_class. */
	struct nrma_credit_tx tx_credit[NRMA_CREDIT_CLASSES];
	struct nrma_credit_rx rx_credit[NRMA_CREDIT_CLASSES];
	struct nrma_dlist credit_want[NRMA_CREDIT_CLASSES]; /* for the pool */
	struct nrma_notify_cell *credit_cell; /* where the peer gives back */
	bool credit_returning;		      /* our atomics are on the way */
	bool credit_owed;   /* on the endpoint's list of those to return */
	uint64_t keys_told; /* our domain's key changes the peer was told */
	struct nrma_dlist owed_link;
	struct nrma_dlist send_queue;	/* sends waiting for credits */
	struct nrma_dlist blocked_link; /* on the endpoint's list of those */
	/* What we know of the peer's MR keys (nrma_rkey.c). */
	struct nrma_hash rkeys; /* slot index + 1 -> struct nrma_rkey */
	/* The entries used last, by slot index: no lookup for a key or two. */
	struct nrma_rkey *rkey_hot[NRMA_RKEY_HOT];
	struct nrma_notify_batch batch;
	/* Transmits held for a key being read, in order (nrma_tx.c). */
	struct nrma_dlist held;	     /* struct nrma_tx_held */
	struct nrma_dlist held_link; /* on the endpoint's list of those */
	const void *held_posting;    /* the args of one posted again */
	/* An atomic's loop is on its way (nrma_atomic_loop.c): transmits
	 * after it wait here, held, until it ends. */
	bool atomic_looping;
	/* Messages shorter than this may go as light sends: inline, built
	 * on the stack (nrma_send_conn_open); 0: none. */
	size_t light_send_below;
	struct nrma_sar_rx sar_rx;
	/*
	 * Chains posted without a record (struct nrma_op_light), oldest
	 * first: RC ends a queue pair's requests in posting order.  As many
	 * as the send queue holds; no ring (capacity 0) where this record's
	 * address does not fit a wr_id.  While any is there, it holds its
	 * connection.
	 */
	struct nrma_ring light;
};

/*
 * Gives conn its data path's state (conn->xfer), empty; -FI_ENOMEM.  Its
 * close frees it, once whatever it held is given back.
 */
int nrma_xfer_conn_open(struct nrma_conn *conn);
void nrma_xfer_conn_close(struct nrma_conn *conn);

/* The connection of a data path list's entry: field is the link's. */
#define nrma_xfer_conn_of(item, field) \
	(nrma_container_of(item, struct nrma_xfer_conn, field)->conn)

enum nrma_op_kind {
	NRMA_OP_SEND,	 /* an application send */
	NRMA_OP_ACK,	 /* our ACK of a peer's message */
	NRMA_OP_READ,	 /* rendezvous read into a posted receive */
	NRMA_OP_RMA,	 /* an application RMA or atomic operation */
	NRMA_OP_PROBE,	 /* is the peer still there? */
	NRMA_OP_CREDIT,	 /* credits given back to the peer */
	NRMA_OP_RESOLVE, /* a read of a slot of the peer's key table */
	NRMA_OP_NOTIFY,	 /* a batch's notification atomics (nrma_batch.c) */
	NRMA_OP_ATOMIC,	 /* an atomic run as a loop (nrma_atomic_loop.c) */
};

/* Where a coalesced write's notification is (nrma_batch.c). */
enum nrma_op_batch {
	NRMA_BATCH_NONE,    /* its own, or none */
	NRMA_BATCH_WAITING, /* in its connection's batch */
	NRMA_BATCH_POSTED,  /* on a NRMA_OP_NOTIFY's list */
};

/* Work the endpoint has on the device; its slot index is the wr_id. */
struct nrma_op {
	/*
	 * What every kind reads, first: nrma_op_alloc sets it (most of it to
	 * zero, a few stores where a whole record's clearing would loop).
	 */
	enum nrma_op_kind kind;
	uint32_t index; /* its slot in the token table: no division */
	struct nrma_conn *conn;
	int64_t buf; /* bounce buffer, or -1 */
	void *context;
	uint64_t flags; /* completion flags, FI_COMPLETION */
	size_t len;
	unsigned int wc_pending; /* posted signaled requests not yet done */
	unsigned int wc_orphans; /* requests posted without their last one */
	int error;		 /* first failure, positive */
	int prov_errno;		 /* its verbs completion status */
	unsigned int mr_count;	 /* of mr[] */
	enum nrma_op_batch batch;
	bool ack_pending; /* waiting for the peer's ACK */
	bool queued;	/* a read on pending_reads, a send on its send_queue */
	bool segmented; /* a send in segments: sar says how far it is */
	/*
	 * What only some kinds read, set by those before they read it:
	 * nrma_op_alloc leaves it as it was.
	 */
	int64_t sent_ms; /* NRMA_OP_SEND waiting for its ACK: when it went */
	/* NRMA_OP_READ waits on pending_reads, NRMA_OP_SEND on a queue, a
	 * coalesced write in its batch */
	struct nrma_dlist link;
	fi_addr_t dest; /* NRMA_OP_SEND: where it goes */
	/* a bounce buffer's vector: a small read lands there first */
	size_t iov_count;	     /* of iov[] */
	uint64_t resolving;	     /* NRMA_OP_RESOLVE: the key it looks up */
	struct nrma_dlist notified;  /* NRMA_OP_NOTIFY: the writes it counts */
	struct {		     /* a segmented send: send_post sets it */
		struct nrma_hdr hdr; /* each segment's, but seg_offset */
		size_t sent;	     /* payload bytes posted */
		unsigned int posted; /* segments posted */
		unsigned int done;   /* and completed */
		/* bounce buffers of those in flight, by number % window */
		int64_t bufs[NRMA_SAR_WINDOW];
	} sar;
	struct { /* NRMA_OP_READ: recv_read_init sets it */
		struct nrma_rx_entry *rx;
		size_t seg_count;
		size_t seg_done;
		size_t rx_offset; /* where the next segment lands */
		size_t left;	  /* bytes still to read */
		uint64_t peer_token;
		uint32_t cq_data;
		uint64_t tag;
		uint64_t rx_flags;
		void *rx_buf;
		size_t truncated;
	} read;
	/*
	 * The arrays come last, each read only below its count (mr_count,
	 * read.seg_count, iov_count); lkey[] is written whole before it is
	 * read.
	 */
	struct nrma_mr_span *mr[NRMA_IOV_LIMIT]; /* held (nrma_op_buf_mr) */
	struct nrma_rndv_seg seg[NRMA_IOV_LIMIT];
	uint32_t lkey[NRMA_IOV_LIMIT];
	struct iovec iov[NRMA_IOV_LIMIT];
};

/* Whose message a receive buffer holds, for its credit. */
struct nrma_rx_owner {
	struct nrma_conn *conn; /* NULL: nobody's */
	enum nrma_credit_class class;
};

/* A rendezvous message that waits for a free operation (nrma_recv.c). */
struct nrma_stalled_read {
	struct nrma_dlist link;
	uint32_t buf; /* the receive buffer holding its header */
	struct nrma_conn *conn;
	struct nrma_rx_entry *rx;
	void *rx_buf; /* where it lands */
	size_t rx_offset;
	size_t len;
};

/* What a receive buffer holds besides its bytes: records that never move. */
/*
 * A held segmented message's receive buffers after its first, chained
 * from it (nrma_recv.c).
 */
struct nrma_sar_piece {
	uint32_t next; /* the next segment's buffer, or UINT32_MAX */
	uint32_t len;  /* payload bytes in this one */
	bool broken;   /* the first's: its connection failed before the end */
};

struct nrma_rx_slot {
	struct nrma_unexp unexp;	/* its message, while unexpected */
	struct nrma_sar_piece piece;	/* a segmented message's, held */
	struct nrma_rx_owner owner;	/* whose credit it is */
	struct nrma_stalled_read stall; /* its rendezvous message, waiting */
};

/*
 * A receive context: where receives are posted and messages matched.
 * Each endpoint has its own; those bound to a shared receive context
 * (fi_srx_context, nrma_srx.c) use the context's, under their domain's
 * ctx_lock.  A message waits in the receive buffer of the endpoint it
 * reached (its entry in x->unexp) and is delivered, and reported,
 * through that endpoint, whichever receive takes it.
 */
struct nrma_rx_ctx {
	struct nrma_match match;
	uint64_t caps; /* FI_MULTI_RECV, directed receives */
	size_t iov_limit;
	size_t min_multi_recv;
	struct nrma_ep **eps; /* whose messages it matches */
	size_t count;
	/* Whose CQ and counters report its receives, if not the endpoint
	 * the message reached: a scalable endpoint's receive context. */
	struct nrma_ep *reporter;
};

/*
 * A transmit budget: how many application transmits may be in flight.
 * Each endpoint has its own; those bound to a shared transmit context
 * (fi_stx_context) share the context's.
 */
struct nrma_tx_budget {
	size_t sends;
	size_t max;
};

struct nrma_pending_ack {
	struct nrma_dlist link;
	struct nrma_conn *conn;
	uint64_t token;
	bool failed; /* a NACK */
};

/* The most device completions one poll reaps. */
#define NRMA_XFER_POLL_BATCH 16

struct nrma_xfer {
	/* Remote addresses are virtual ones (FI_MR_VIRT_ADDR), not offsets. */
	bool virt_addr;
	size_t eager_size;
	size_t sar_size; /* segmented above eager_size, up to this */
	size_t seg_size; /* a segment's payload */
	size_t buf_size;
	struct nrma_bufpool tx_bufs;
	/* Receive buffers, struct nrma_rx_slot records, chunks registered
	 * one by one (reg: struct nrma_verbs_mr). */
	struct nrma_chunkpool rx_bufs;
	size_t rx_capacity; /* buffers the pool is to have */
	struct nrma_verbs_mr *tx_mr;
	struct nrma_token_table ops; /* struct nrma_op */
	struct nrma_rx_ctx *rx;	     /* &own_rx, or a shared one */
	struct nrma_rx_ctx own_rx;
	/* A scalable endpoint's receive contexts, by the index a message
	 * names (hdr->rx_ctx); none: only rx. */
	struct nrma_rx_ctx **named;
	size_t nnamed;
	struct nrma_tx_budget *tx; /* &own_tx, or a shared one */
	struct nrma_tx_budget own_tx;
	size_t sends; /* of tx->sends, this endpoint's */
	size_t srq_posted;
	size_t srq_target;
	size_t srq_max; /* what the device's queues take */
	struct nrma_dlist pending_acks;
	struct nrma_dlist pending_reads; /* struct nrma_op */
	struct nrma_dlist stalled_reads; /* struct nrma_stalled_read */
	struct nrma_dlist sar_receiving; /* struct nrma_sar_rx, in progress */
	size_t acks;			 /* ACKs posted, not yet completed */
	int64_t checked_ms;	   /* sends waiting for ACKs last checked */
	int64_t stalls_checked_ms; /* connections last watched for stalls */
	uint64_t *scratch;	   /* where notification atomics fetch to */
	struct nrma_verbs_mr *scratch_mr;
	struct nrma_sge scratch_sge; /* of scratch, for those atomics */
	/*
	 * Flow control (nrma_credit.c): what all peers may send together
	 * never exceeds the receive buffers posted.  Each peer is topped up
	 * towards its share, by class, from the buffers no peer holds.
	 */
	size_t credits_msg; /* a peer's share */
	size_t credits_ctl;
	size_t credit_out;    /* granted and not yet used, by all peers */
	size_t credit_conns;  /* connections open */
	size_t credit_backed; /* the most whose floors buffers were added for */
	/* conns below their share, by class (conn->credit_want) */
	struct nrma_dlist credit_wanting[NRMA_CREDIT_CLASSES];
	struct nrma_dlist blocked_conns;  /* with sends waiting for credits */
	struct nrma_dlist credit_owed;	  /* owed credits we could not send */
	struct nrma_dlist batch_deferred; /* conns whose batch waits for room */
	struct nrma_dlist connecting;	  /* sends waiting for a connection */
	struct nrma_dlist triggered;	  /* held for their counters */
	struct nrma_dlist held_conns;	  /* with transmits held for a key */
	struct nrma_dlist atomic_waiting; /* atomic loops waiting for room */
	/* Something was queued on one of the lists nrma_xfer_waiting looks
	 * at since progress last found them all empty. */
	bool waiting;
	/* What one poll of the device reaps (nrma_progress.c), under
	 * ep->lock: progress is never re-entered for an endpoint. */
	struct nrma_wc wc[NRMA_XFER_POLL_BATCH];
};

/*
 * Whether work waits in one of x's queues for queue room, credits, a
 * connection or a completion: what progress retries.  An idle endpoint
 * has none, and its progress only polls the device.
 */
static inline bool nrma_xfer_waiting(const struct nrma_xfer *x)
{
	for (int c = 0; c < NRMA_CREDIT_CLASSES; c++)
		if (!nrma_dlist_empty(&x->credit_wanting[c]))
			return true;
	return !nrma_dlist_empty(&x->stalled_reads) ||
	       !nrma_dlist_empty(&x->pending_reads) ||
	       !nrma_dlist_empty(&x->pending_acks) ||
	       !nrma_dlist_empty(&x->batch_deferred) ||
	       !nrma_dlist_empty(&x->connecting) ||
	       !nrma_dlist_empty(&x->held_conns) ||
	       !nrma_dlist_empty(&x->atomic_waiting) ||
	       !nrma_dlist_empty(&x->blocked_conns) ||
	       !nrma_dlist_empty(&x->credit_owed);
}

/*
 * Queues link on one of the lists of waiting work above, at its tail (or
 * its head): progress, which otherwise skips them, retries them.
 */
static inline void nrma_xfer_wait(struct nrma_xfer *x, struct nrma_dlist *link,
				  struct nrma_dlist *head)
{
	nrma_dlist_insert_tail(link, head);
	x->waiting = true;
}

static inline void nrma_xfer_wait_first(struct nrma_xfer *x,
					struct nrma_dlist *link,
					struct nrma_dlist *head)
{
	nrma_dlist_insert_head(link, head);
	x->waiting = true;
}

/* Receive buffers and contexts (nrma_rx.c) */
static inline void *nrma_rx_buf(const struct nrma_xfer *x, uint32_t buf)
{
	return nrma_chunkpool_buf(&x->rx_bufs, buf);
}

static inline struct nrma_rx_slot *nrma_rx_slot_of(const struct nrma_xfer *x,
						   uint32_t buf)
{
	return nrma_chunkpool_rec(&x->rx_bufs, buf);
}

/* The pool of ep->xfer, its first chunk registered; the queue is at most
 * srq_max deep. */
int nrma_rx_bufs_init(struct nrma_ep *ep, size_t srq_max);
void nrma_rx_bufs_fini(struct nrma_xfer *x);
uint32_t nrma_rx_lkey(const struct nrma_xfer *x, uint32_t buf);
/*
 * n more buffers posted on the shared receive queue (a connection's
 * floor, for the caller to grant): the pool grows when it must.
 * -FI_ENOSPC once the device's queues are full.
 */
int nrma_rx_bufs_add(struct nrma_ep *ep, size_t n);
/* Keeps the shared receive queue full while free buffers last. */
void nrma_rx_srq_fill(struct nrma_ep *ep);
int nrma_rx_ctx_init(struct nrma_rx_ctx *rc, size_t size, uint64_t caps,
		     size_t iov_limit);
void nrma_rx_ctx_fini(struct nrma_rx_ctx *rc);
int nrma_rx_ctx_join(struct nrma_rx_ctx *rc, struct nrma_ep *ep);
/* The fi_addr_t of conn's peer, for FI_SOURCE and directed receives. */
fi_addr_t nrma_rx_peer_addr(struct nrma_ep *ep, struct nrma_conn *conn);
fi_addr_t nrma_rx_source(struct nrma_ep *ep, struct nrma_conn *conn);

/* Operations (nrma_op.c) */
struct nrma_op *nrma_op_alloc(struct nrma_xfer *x, enum nrma_op_kind kind,
			      struct nrma_conn *conn);
void nrma_op_free(struct nrma_xfer *x, struct nrma_op *op);
struct nrma_op *nrma_op_alloc_buf(struct nrma_xfer *x, enum nrma_op_kind kind,
				  struct nrma_conn *conn);
struct nrma_op *nrma_op_at(struct nrma_xfer *x, uint32_t index);
uint64_t nrma_op_token(const struct nrma_xfer *x, const struct nrma_op *op);
/*
 * An operation whose token goes to the peer, to come back in an ACK (a
 * send that waits for one): a random one, which a peer cannot guess from
 * others it saw.  Before its token is read.
 */
void nrma_op_seal(struct nrma_xfer *x, const struct nrma_op *op);
int nrma_op_post(struct nrma_op *op, struct nrma_wr_chain *chain);
/*
 * Whether an application's descriptor allows what the device does with
 * its buffer for an access (FI_READ or FI_WRITE): the device may always
 * read a write's source.
 */
static inline bool nrma_op_desc_allows(const struct nrma_mr *desc,
				       uint64_t access)
{
	uint64_t needed = access == FI_WRITE ? 0 : access;

	return desc && (desc->access & needed) == needed;
}
/* What a failed work completion of conn's tells the application. */
int nrma_op_wc_errno(const struct nrma_conn *conn, int status);
/*
 * Whether conn can take a chain with no operation record, and, with
 * nrma_op_post_light, posts it so: its context and flags wait in conn's
 * ring, as they would in a record, and nrma_op_light_wc finds them.
 */
static inline bool nrma_op_light_fits(const struct nrma_conn *conn)
{
	return conn->xfer->light.capacity != 0;
}
int nrma_op_post_light(struct nrma_conn *conn, struct nrma_wr_chain *chain,
		       void *context, uint64_t flags);
/*
 * A completion with NRMA_WR_LIGHT: its chain's record once that chain
 * ended, else NULL.  The record stays as it is until the connection's
 * next post.
 */
const struct nrma_op_light *nrma_op_light_wc(const struct nrma_wc *wc);
/* Whether conn has such chains on the device; a synthesized flush of
 * the oldest (nrma_progress_disable). */
bool nrma_op_light_busy(const struct nrma_conn *conn);
struct nrma_wc nrma_op_light_flush_wc(const struct nrma_conn *conn, int status);
int nrma_op_buf_mr(struct nrma_ep *ep, struct nrma_op *op, struct nrma_mr *desc,
		   const struct iovec *iov, uint64_t access,
		   struct nrma_verbs_mr **vmr, uint64_t *key);

/* Transmits (nrma_tx.c) */
/* Reports an operation the application initiated. */
void nrma_tx_report(struct nrma_ep *ep, const struct nrma_op *op);
/* One posted without an operation record (nrma_op_post_light) ended. */
void nrma_tx_light_done(struct nrma_ep *ep, const struct nrma_op_light *done);
ssize_t nrma_tx_refuse(struct nrma_ep *ep, void *context, uint64_t flags);
struct nrma_sge nrma_tx_buf_sge(const struct nrma_xfer *x, int64_t buf,
				size_t len);

/*
 * Where atomics whose old value nobody wants fetch it to: the x's own
 * entry, which the device reads as each is posted.
 */
static inline const struct nrma_sge *nrma_scratch_sge(const struct nrma_xfer *x)
{
	return &x->scratch_sge;
}

/*
 * An application transmit's completion flags.  The fi_inject calls
 * (silent) complete nothing; any other transmit completes, FI_INJECT
 * among its flags or not, unless selective completion leaves it out.
 */
static inline uint64_t nrma_tx_comp_flags(const struct nrma_ep *ep,
					  uint64_t flags, bool silent)
{
	if (silent)
		return 0;
	return !(ep->tx_cq_flags & FI_SELECTIVE_COMPLETION) ||
			       (flags & FI_COMPLETION) ?
		       FI_COMPLETION :
		       0;
}
struct nrma_op *nrma_tx_op_alloc(struct nrma_ep *ep, enum nrma_op_kind kind,
				 struct nrma_conn *conn, bool bounce);
/* Whether tx_attr->size allows one more application transmit. */
static inline bool nrma_tx_room(const struct nrma_xfer *x)
{
	return x->tx->sends < x->tx->max;
}
/* An application transmit went out, or ended (x->tx and x->sends). */
void nrma_tx_started(struct nrma_xfer *x);
void nrma_tx_ended(struct nrma_xfer *x);

/*
 * Posts one application transmit over conn; len is its payload.  With
 * conn NULL (nrma_tx_submit's may_wait), the connection is being made:
 * the transmit waits for it.
 */
typedef ssize_t (*nrma_tx_post_fn)(struct nrma_ep *ep, struct nrma_conn *conn,
				   const void *args, size_t len);
ssize_t nrma_tx_submit(struct nrma_ep *ep, fi_addr_t dest, nrma_tx_post_fn post,
		       const void *args, size_t len, bool may_wait);
/*
 * nrma_tx_submit's two halves, for a path that calls its post step
 * itself, so that the step inlines there (NRMA_INLINE needs a direct
 * call): the connection to dest, with ep->lock taken whatever it returns
 * (*conn NULL while the connection is being made and the transmit may
 * wait for it); then the lock let go.
 */
int nrma_tx_enter(struct nrma_ep *ep, fi_addr_t dest, bool may_wait,
		  struct nrma_conn **conn);
void nrma_tx_leave(struct nrma_ep *ep);

/*
 * A transmit held on its connection (nrma_tx_hold): its peer's key is
 * being read, or an earlier transmit's is.  It goes in posting order, so
 * that what follows it to that peer (a write, a read, a send) never
 * overtakes it, and its call returned at once.  Its kind copied into the
 * record what it needs of the caller's memory: vectors, a notification,
 * an injected payload (after the arguments, nrma_tx_held_data).
 */
struct nrma_tx_held {
	struct nrma_dlist link; /* conn->xfer->held */
	nrma_tx_post_fn post;	/* posts it again, from args */
	size_t len;
	void *context;
	uint64_t comp_flags; /* of its error entry, if it cannot go */
	struct iovec iov[NRMA_IOV_LIMIT];
	void *desc[NRMA_IOV_LIMIT];
	struct fi_nrma_notify notify;
	max_align_t args[]; /* the kind's arguments, then injected bytes */
};

/* Arguments' bytes, rounded up so that data after them is aligned. */
size_t nrma_tx_args_room(size_t args_size);
/*
 * A record with a copy of args (args_size bytes) and of notify (NULL:
 * none), and room for data bytes; NULL when out of memory.
 */
struct nrma_tx_held *nrma_tx_held_new(const void *args, size_t args_size,
				      const struct fi_nrma_notify *notify,
				      size_t data);
void *nrma_tx_held_data(struct nrma_tx_held *h, size_t args_size);
/*
 * Queues h on conn (-FI_EAGAIN, h freed, when the transmit budget is
 * spent): it counts as a transmit in flight until it is posted.
 */
ssize_t nrma_tx_hold(struct nrma_ep *ep, struct nrma_conn *conn,
		     struct nrma_tx_held *h);
/* Whether conn holds transmits or runs an atomic's loop: a transmit
 * waits behind them. */
bool nrma_tx_held_waits(const struct nrma_conn *conn);
/*
 * Whether a transmit with args must be held on conn: its key is being
 * read (key_ret -FI_EINPROGRESS), or others are held.  One being posted
 * again from there never is: it says -FI_EINPROGRESS, and stays first.
 */
bool nrma_tx_held_must_wait(const struct nrma_conn *conn, const void *args,
			    int key_ret);
/* Posts held transmits, in order, while they can go. */
void nrma_tx_held_retry(struct nrma_ep *ep);
/* Those of a connection that failed end in error entries (err positive). */
void nrma_tx_held_fail(struct nrma_ep *ep, struct nrma_conn *conn, int err);
/* Frees those of a connection that closes with its endpoint, unreported. */
void nrma_tx_held_drop(struct nrma_conn *conn);
/* The address of the connection that dest's transmits take. */
fi_addr_t nrma_tx_peer_addr(const struct nrma_ep *ep, fi_addr_t dest);
/* The connection to dest once it is up (-FI_EAGAIN until), or why not. */
int nrma_tx_connection(struct nrma_ep *ep, fi_addr_t dest,
		       struct nrma_conn **conn);
int nrma_tx_flags_check(uint64_t flags);
ssize_t nrma_tx_len(const struct nrma_ep *ep, enum nrma_xfer_class class,
		    const struct iovec *iov, size_t count, uint64_t flags);
/* Asks conn's peer for a zero-byte write: an error fails conn. */
void nrma_tx_probe(struct nrma_ep *ep, struct nrma_conn *conn);

/* The data path's state (nrma_xfer.c) */
/* ep's messages name one of the n receive contexts rcs (scalable). */
void nrma_xfer_name_rx(struct nrma_ep *ep, struct nrma_rx_ctx **rcs, size_t n);
/* ep's transmits count against tx (a shared transmit context's), or,
 * with tx NULL, against its own budget again. */
void nrma_xfer_share_tx(struct nrma_ep *ep, struct nrma_tx_budget *tx);

/*
 * A send that waits this long for its ACK has its peer probed, so that a
 * peer that went away (its host, or the link) fails the send within the
 * transport's retries, though nothing else goes to it.
 */
#define NRMA_ACK_PROBE_MS   1000
/* How often connections are watched for stalls (FI_NRMA_STALL_MS). */
#define NRMA_STALL_CHECK_MS 1000
/* CLOCK_MONOTONIC_COARSE's tick at the slowest (HZ=100), which
 * nrma_xfer_now_ms() may lag the time by. */
#define NRMA_CLOCK_TICK_MS  10
int64_t nrma_xfer_now_ms(void);

#endif /* NRMA_XFER_H */
