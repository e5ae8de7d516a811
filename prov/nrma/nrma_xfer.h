/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The data path of an endpoint, and what its files share: operations and
 * posting (nrma_xfer.c), sending (nrma_send.c), receiving (nrma_recv.c),
 * RMA (nrma_rma.c), atomics (nrma_atomic.c) and the dispatch of work
 * completions (nrma_progress.c).  All of it runs with ep->lock held.
 *
 * Messages up to eager_size are copied into a registered bounce buffer
 * and sent into one of the endpoint's shared receive buffers.  Larger
 * ones go by rendezvous: the sender registers its buffer and sends its
 * address; the receiver reads the data straight into the posted receive
 * buffer with RDMA read, then tells the sender with an ACK.  An eager
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
#include "nrma_match.h"
#include "nrma_proto.h"
#include "nrma_token.h"
#include "nrma_verbs.h"

#define NRMA_WR_RECV	    (1ULL << 63) /* wr_id of a receive buffer */
/*
 * An operation's work requests but the last are unsignaled; the last one's
 * wr_id carries how many send queue slots its completion frees.
 */
#define NRMA_WR_SLOTS_SHIFT 32
#define NRMA_WR_SLOTS_MASK  0xffu
/* ACKs one peer may be owed while its queue is full. */
#define NRMA_ACKS_OWED_MAX  65536
/* Work requests one operation posts at most. */
#define NRMA_OP_MAX_WRS	    NRMA_IOV_LIMIT
_Static_assert(NRMA_OP_MAX_WRS <= NRMA_WR_SLOTS_MASK,
	       "a chain's slot count fits its wr_id");
_Static_assert(NRMA_OP_MAX_WRS <= NRMA_VERBS_CHAIN_MAX,
	       "an operation's requests go in one chain");

enum nrma_op_kind {
	NRMA_OP_SEND,	 /* an application send */
	NRMA_OP_ACK,	 /* our ACK of a peer's message */
	NRMA_OP_READ,	 /* rendezvous read into a posted receive */
	NRMA_OP_RMA,	 /* an application RMA or atomic operation */
	NRMA_OP_PROBE,	 /* is the peer still there? */
	NRMA_OP_CREDIT,	 /* credits given back to the peer */
	NRMA_OP_RESOLVE, /* a read of a slot of the peer's key table */
	NRMA_OP_NOTIFY,	 /* a batch's notification atomics (nrma_batch.c) */
};

/* Where a coalesced write's notification is (nrma_batch.c). */
enum nrma_op_batch {
	NRMA_BATCH_NONE,    /* its own, or none */
	NRMA_BATCH_WAITING, /* in its connection's batch */
	NRMA_BATCH_POSTED,  /* on a NRMA_OP_NOTIFY's list */
};

/* Work the endpoint has on the device; its slot index is the wr_id. */
struct nrma_op {
	/* What every kind reads: nrma_op_alloc clears it. */
	enum nrma_op_kind kind;
	struct nrma_conn *conn;
	void *context;
	uint64_t flags; /* completion flags, FI_COMPLETION */
	size_t len;
	int64_t buf;		 /* bounce buffer, or -1 */
	unsigned int wc_pending; /* posted signaled requests not yet done */
	unsigned int wc_orphans; /* requests posted without their last one */
	bool ack_pending;	 /* waiting for the peer's ACK */
	bool queued;	 /* a read on pending_reads, a send on its send_queue */
	int64_t sent_ms; /* NRMA_OP_SEND: when it was posted */
	int error;	 /* first failure, positive */
	int prov_errno;	 /* its verbs completion status */
	size_t mr_count;
	/* NRMA_OP_READ waits on pending_reads, NRMA_OP_SEND on a queue */
	struct nrma_dlist link;
	fi_addr_t dest; /* NRMA_OP_SEND: where it goes */
	/* NRMA_OP_RMA: a small read lands in the bounce buffer first */
	size_t iov_count; /* of iov[] */
	enum nrma_op_batch batch;
	/*
	 * What only some kinds read, set by those before they read it:
	 * nrma_op_alloc leaves it as it was.
	 */
	uint64_t resolving;	    /* NRMA_OP_RESOLVE: the key it looks up */
	struct nrma_dlist notified; /* NRMA_OP_NOTIFY: the writes it counts */
	struct {		    /* NRMA_OP_READ: recv_read_init sets it */
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
	struct nrma_verbs_mr *mr[NRMA_IOV_LIMIT];
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
struct nrma_rx_slot {
	struct nrma_unexp unexp;	/* its message, while unexpected */
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

int nrma_rx_ctx_init(struct nrma_rx_ctx *rc, size_t size, uint64_t caps,
		     size_t iov_limit);
void nrma_rx_ctx_fini(struct nrma_rx_ctx *rc);
int nrma_rx_ctx_join(struct nrma_rx_ctx *rc, struct nrma_ep *ep);
/* ep leaves: the messages it holds go, and so do its reads into rc's
 * receives; ep is closing. */
void nrma_rx_ctx_leave(struct nrma_rx_ctx *rc, struct nrma_ep *ep);
/* rc closes, ep stays: what ep holds or reads for rc is refused. */
void nrma_rx_ctx_drop(struct nrma_rx_ctx *rc, struct nrma_ep *ep);
/* Whether reads into receives of a dropped context are on the device. */
bool nrma_rx_reads_orphaned(struct nrma_ep *ep);
/* Posting, with the lock of rc's endpoints held (nrma_recv.c). */
ssize_t nrma_rx_ctx_recv(struct nrma_rx_ctx *rc,
			 const struct nrma_recv_args *args);
ssize_t nrma_rx_ctx_cancel(struct nrma_rx_ctx *rc, void *context);
/* A disabled endpoint's posted receives end, cancelled. */
void nrma_recv_discard(struct nrma_ep *ep);

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

struct nrma_xfer {
	size_t eager_size;
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
	       !nrma_dlist_empty(&x->blocked_conns) ||
	       !nrma_dlist_empty(&x->credit_owed);
}

/* Receive buffers (nrma_xfer.c) */
static inline void *nrma_rx_buf(const struct nrma_xfer *x, uint32_t buf)
{
	return nrma_chunkpool_buf(&x->rx_bufs, buf);
}

static inline struct nrma_rx_slot *nrma_rx_slot_of(const struct nrma_xfer *x,
						   uint32_t buf)
{
	return nrma_chunkpool_rec(&x->rx_bufs, buf);
}

uint32_t nrma_rx_lkey(const struct nrma_xfer *x, uint32_t buf);
/*
 * n more buffers posted on the shared receive queue (a connection's
 * floor, for the caller to grant): the pool grows when it must.
 * -FI_ENOSPC once the device's queues are full.
 */
int nrma_rx_bufs_add(struct nrma_ep *ep, size_t n);

/* Operations and posting (nrma_xfer.c) */
struct nrma_op *nrma_op_alloc(struct nrma_xfer *x, enum nrma_op_kind kind,
			      struct nrma_conn *conn);
void nrma_op_free(struct nrma_xfer *x, struct nrma_op *op);
struct nrma_op *nrma_op_alloc_buf(struct nrma_xfer *x, enum nrma_op_kind kind,
				  struct nrma_conn *conn);
struct nrma_op *nrma_op_at(struct nrma_xfer *x, uint32_t index);
uint64_t nrma_op_token(const struct nrma_xfer *x, const struct nrma_op *op);
int nrma_op_post(struct nrma_xfer *x, struct nrma_op *op, struct nrma_wr *wr,
		 size_t count);
int nrma_op_buf_mr(struct nrma_ep *ep, struct nrma_op *op, struct nrma_mr *desc,
		   const struct iovec *iov, uint64_t access,
		   struct nrma_verbs_mr **vmr, uint64_t *key);
/* Reports an operation the application initiated. */
void nrma_op_report(struct nrma_ep *ep, const struct nrma_op *op);
ssize_t nrma_tx_refuse(struct nrma_ep *ep, void *context, uint64_t flags);
struct nrma_sge nrma_tx_buf_sge(const struct nrma_xfer *x,
				const struct nrma_op *op, size_t len);

/* Where atomics whose old value nobody wants fetch it to. */
static inline struct nrma_sge nrma_scratch_sge(const struct nrma_xfer *x)
{
	return x->scratch_sge;
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
/* An application transmit went out, or ended (x->tx and x->sends). */
void nrma_tx_started(struct nrma_xfer *x);
void nrma_tx_ended(struct nrma_xfer *x);
/* ep's messages name one of the n receive contexts rcs (scalable). */
void nrma_xfer_name_rx(struct nrma_ep *ep, struct nrma_rx_ctx **rcs, size_t n);
/* ep's transmits count against tx (a shared transmit context's), or,
 * with tx NULL, against its own budget again. */
void nrma_xfer_share_tx(struct nrma_ep *ep, struct nrma_tx_budget *tx);
/* The fi_addr_t of conn's peer, for FI_SOURCE and directed receives. */
fi_addr_t nrma_peer_fi_addr(struct nrma_ep *ep, struct nrma_conn *conn);
fi_addr_t nrma_source_of(struct nrma_ep *ep, struct nrma_conn *conn);

/*
 * Posts one application transmit over conn; len is its payload.  With
 * conn NULL (nrma_tx_submit's may_wait), the connection is being made:
 * the transmit waits for it.
 */
typedef ssize_t (*nrma_tx_post_fn)(struct nrma_ep *ep, struct nrma_conn *conn,
				   const void *args, size_t len);
ssize_t nrma_tx_submit(struct nrma_ep *ep, fi_addr_t dest, nrma_tx_post_fn post,
		       const void *args, size_t len, bool may_wait);
/* The connection to dest once it is up (-FI_EAGAIN until), or why not. */
int nrma_xfer_connection(struct nrma_ep *ep, fi_addr_t dest,
			 struct nrma_conn **conn);
int nrma_tx_flags_check(uint64_t flags);
ssize_t nrma_tx_len(const struct nrma_ep *ep, enum nrma_xfer_class class,
		    const struct iovec *iov, size_t count, uint64_t flags);

/*
 * A send that waits this long for its ACK has its peer probed, so that a
 * peer that went away (its host, or the link) fails the send within the
 * transport's retries, though nothing else goes to it.
 */
#define NRMA_ACK_PROBE_MS   1000
/* How often connections are watched for stalls (FI_NRMA_STALL_MS). */
#define NRMA_STALL_CHECK_MS 1000
/* CLOCK_MONOTONIC_COARSE's tick at the slowest (HZ=100), which
 * nrma_now_ms() may lag the time by. */
#define NRMA_CLOCK_TICK_MS  10
int64_t nrma_now_ms(void);
/* Probes the peers of sends waiting long for their ACKs. */
void nrma_send_check_peers(struct nrma_ep *ep);

/* Asks conn's peer for a zero-byte write: an error fails conn. */
void nrma_probe(struct nrma_ep *ep, struct nrma_conn *conn);

/* Progress (nrma_progress.c): returns how many completions it handled. */
int nrma_progress_poll(struct nrma_ep *ep);

/* Credits (nrma_credit.c) */
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
int nrma_credit_post(struct nrma_xfer *x, struct nrma_op *op,
		     struct nrma_hdr *hdr, struct nrma_wr *wr);
bool nrma_credit_arrived(struct nrma_ep *ep, struct nrma_conn *conn,
			 uint32_t buf, enum nrma_credit_class class,
			 const struct nrma_hdr *hdr);
void nrma_credit_released(struct nrma_ep *ep, uint32_t buf);
void nrma_credit_returned(struct nrma_ep *ep, struct nrma_op *op);
void nrma_credit_queue_send(struct nrma_ep *ep, struct nrma_op *op, bool front);
bool nrma_credit_send_waits(const struct nrma_conn *conn);
struct nrma_op *nrma_credit_queued(struct nrma_conn *conn);
void nrma_credit_unqueue(struct nrma_op *op);
void nrma_credit_progress(struct nrma_ep *ep);
/*
 * Tells conn's peer, if it was not told yet, that our domain's key table
 * changed: whether it has heard of changes (a count) by now.
 */
bool nrma_credit_keys_told(struct nrma_ep *ep, struct nrma_conn *conn,
			   uint64_t changes);

/* Sending (nrma_send.c) */
void nrma_send_resume(struct nrma_ep *ep, struct nrma_conn *conn);
void nrma_send_finish(struct nrma_ep *ep, struct nrma_op *op);
void nrma_send_acked(struct nrma_ep *ep, uint64_t token, struct nrma_conn *conn,
		     bool failed);
void nrma_send_conn_failed(struct nrma_ep *ep, struct nrma_conn *conn);
/* Sends that waited for their connections go once they are up. */
void nrma_send_connecting(struct nrma_ep *ep);

/* Receiving (nrma_recv.c) */
void nrma_recv_message(struct nrma_ep *ep, uint32_t buf, uint32_t len,
		       struct nrma_conn *conn);
void nrma_rx_buf_release(struct nrma_ep *ep, uint32_t buf);
void nrma_srq_fill(struct nrma_ep *ep);
void nrma_srq_refill(struct nrma_ep *ep);
void nrma_read_finish(struct nrma_ep *ep, struct nrma_op *op);
void nrma_reads_retry(struct nrma_ep *ep);
void nrma_stalled_retry(struct nrma_ep *ep);
void nrma_acks_retry(struct nrma_ep *ep);

/* Peers' MR keys (nrma_rkey.c) */
struct nrma_remote {
	uint64_t addr;
	uint32_t rkey;
	uint32_t cell_rkey; /* 0: the region counts nothing */
};

/*
 * Where len bytes at addr under the peer's key go, needing access
 * (NRMA_KEY_REMOTE_*): 0; -FI_EAGAIN while the key is looked up;
 * -FI_EACCES when the peer has no such key, or its region does not
 * cover the bytes or allow the access.
 */
int nrma_rkey_target(struct nrma_ep *ep, struct nrma_conn *conn, uint64_t key,
		     uint64_t addr, uint64_t len, uint32_t access,
		     struct nrma_remote *remote);
/* nrma_rkey_target for the word that notify names in its set. */
int nrma_rkey_notify_target(struct nrma_ep *ep, struct nrma_conn *conn,
			    const struct fi_nrma_notify *notify,
			    struct nrma_remote *set);
void nrma_rkey_read_done(struct nrma_ep *ep, struct nrma_op *op);
void nrma_rkey_conn_close(struct nrma_conn *conn);

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

/* RMA (nrma_rma.c) */
size_t nrma_notify_wrs(const struct nrma_conn *conn, uint32_t cell_rkey,
		       bool read, bool fence, const struct nrma_sge *scratch,
		       struct nrma_wr *wr);
/* The fetch-and-add that applies notify to its word at set. */
struct nrma_wr nrma_notify_set_wr(const struct fi_nrma_notify *notify,
				  const struct nrma_remote *set,
				  const struct nrma_sge *scratch, bool fence);
void nrma_rma_finish(struct nrma_ep *ep, struct nrma_op *op);
void nrma_rma_write_data(struct nrma_ep *ep, const struct nrma_wc *wc,
			 struct nrma_conn *conn);

/* Coalesced notifications (nrma_batch.c) */
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
/* A batch's atomics completed (op: NRMA_OP_NOTIFY): its writes do. */
void nrma_batch_notified(struct nrma_ep *ep, struct nrma_op *op);
void nrma_batch_conn_failed(struct nrma_ep *ep, struct nrma_conn *conn);
/* Posts the batches that waited for room on their queue pairs. */
void nrma_batch_retry(struct nrma_ep *ep);

/* Triggered operations (nrma_trigger.c) */
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
/* Forgets what is held: the endpoint closes. */
void nrma_trigger_drop(struct nrma_xfer *x);

#endif /* NRMA_XFER_H */
