/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What the data path's files share: the wire header, operations, receive
 * entries, and the calls between the sending and completion side
 * (nrma_proto.c), the receiving side (nrma_recv.c) and RMA (nrma_rma.c).
 * All of it runs with ep->lock held.
 */
#ifndef NRMA_PROTO_H
#define NRMA_PROTO_H

#include "nrma.h"
#include "nrma_verbs.h"

#define NRMA_WR_RECV		(1ULL << 63)	/* wr_id of a receive buffer */

enum nrma_hdr_op {
	NRMA_HDR_EAGER = 1,
	NRMA_HDR_RNDV,
	NRMA_HDR_ACK,
};

#define NRMA_HDR_CQ_DATA	(1 << 0)
#define NRMA_HDR_ACK_REQ	(1 << 1)
#define NRMA_HDR_TAGGED		(1 << 2)

struct nrma_hdr {
	uint8_t op;
	uint8_t flags;
	uint8_t seg_count;		/* rendezvous segments that follow */
	uint8_t reserved;
	uint32_t cq_data;
	uint64_t token;			/* the sender's operation, for ACK */
	uint64_t len;			/* message length */
	uint64_t tag;
};

struct nrma_rndv_seg {
	uint64_t addr;
	uint64_t len;
	uint32_t rkey;
	uint32_t reserved;
};

enum nrma_op_kind {
	NRMA_OP_SEND,		/* an application send */
	NRMA_OP_ACK,		/* our ACK of a peer's message */
	NRMA_OP_READ,		/* rendezvous read into a posted receive */
	NRMA_OP_RMA,		/* an application RMA read or write */
};

struct nrma_rx_entry;

struct nrma_op {
	enum nrma_op_kind kind;
	uint32_t gen;			/* tells a stale token from a live one */
	struct nrma_conn *conn;
	void *context;
	uint64_t flags;			/* completion flags, FI_COMPLETION */
	size_t len;
	int64_t buf;			/* bounce buffer, or -1 */
	unsigned int wc_pending;	/* posted work requests not yet done */
	bool ack_pending;		/* waiting for the peer's ACK */
	int error;			/* first failure, positive */
	int prov_errno;			/* its ibv_wc_status */
	struct nrma_verbs_mr *mr[NRMA_IOV_LIMIT];
	size_t mr_count;
	/* NRMA_OP_READ: segments not yet read wait on pending_reads */
	struct nrma_dlist link;
	struct nrma_rndv_seg seg[NRMA_IOV_LIMIT];
	size_t seg_count;
	size_t seg_done;
	size_t rx_offset;		/* where the next segment lands */
	size_t left;			/* bytes still to read */
	uint32_t lkey[NRMA_IOV_LIMIT];
	bool queued;
	/* NRMA_OP_RMA: a small read lands in the bounce buffer first */
	struct iovec iov[NRMA_IOV_LIMIT];
	size_t iov_count;
	struct nrma_rx_entry *rx;
	uint64_t peer_token;
	bool peer_wants_ack;
	uint32_t cq_data;
	uint64_t tag;
	uint64_t rx_flags;
	void *rx_buf;
	size_t truncated;
};

struct nrma_rx_entry {
	struct nrma_dlist link;
	struct iovec iov[NRMA_IOV_LIMIT];
	void *desc[NRMA_IOV_LIMIT];
	size_t count;
	void *context;
	uint64_t flags;
	uint64_t tag;
	uint64_t ignore;
	fi_addr_t src;			/* FI_DIRECTED_RECV, else FI_ADDR_UNSPEC */
	size_t offset;			/* FI_MULTI_RECV: bytes used */
	size_t reads;			/* rendezvous reads landing in it */
	bool released;			/* off the posted list */
};

struct nrma_unexp {
	struct nrma_dlist link;
	uint32_t buf;
	uint32_t len;
	struct nrma_conn *conn;
	bool claimed;			/* FI_CLAIM: off the queue, awaited */
};

/* Receives waiting for messages, and messages waiting for receives. */
struct nrma_match_queue {
	struct nrma_dlist posted;	/* struct nrma_rx_entry */
	struct nrma_dlist unexp;	/* struct nrma_unexp */
};

struct nrma_pending_ack {
	struct nrma_dlist link;
	struct nrma_conn *conn;
	uint64_t token;
};

struct nrma_proto {
	size_t eager_size;
	size_t buf_size;
	struct nrma_bufpool tx_bufs;
	struct nrma_bufpool rx_bufs;
	struct nrma_verbs_mr *tx_mr;
	struct nrma_verbs_mr *rx_mr;
	struct nrma_bufpool ops;	/* struct nrma_op */
	struct nrma_bufpool rx_entries;	/* struct nrma_rx_entry */
	struct nrma_bufpool unexp_entries;
	size_t sends;			/* application sends in flight */
	size_t sends_max;
	size_t srq_posted;
	size_t srq_target;
	struct nrma_match_queue msgq;
	struct nrma_match_queue tagq;
	struct nrma_dlist pending_acks;
	struct nrma_dlist pending_reads;	/* struct nrma_op */
	size_t acks;			/* ACKs posted, not yet completed */
	uint64_t *scratch;		/* where notification atomics fetch to */
	struct nrma_verbs_mr *scratch_mr;
	uint32_t gen;
};

/* Operations, completions and sends (nrma_proto.c) */
struct nrma_op *nrma_op_alloc(struct nrma_proto *m, enum nrma_op_kind kind,
			      struct nrma_conn *conn);
void nrma_op_free(struct nrma_proto *m, struct nrma_op *op);
struct nrma_op *nrma_op_alloc_buf(struct nrma_proto *m, enum nrma_op_kind kind,
				  struct nrma_conn *conn);
struct nrma_op *nrma_op_by_token(struct nrma_proto *m, uint64_t token);
int nrma_op_post(struct nrma_proto *m, struct nrma_op *op, struct nrma_wr *wr,
		 size_t count);
int nrma_op_buf_mr(struct nrma_ep *ep, struct nrma_op *op,
		   struct nrma_mr *desc, const struct iovec *iov,
		   uint64_t access, struct nrma_verbs_mr **vmr, uint64_t *key);
struct nrma_sge nrma_tx_buf_sge(const struct nrma_proto *m,
				const struct nrma_op *op, size_t len);
void nrma_report_tx(struct nrma_ep *ep, struct nrma_op *op);
void nrma_send_finish(struct nrma_ep *ep, struct nrma_op *op);
fi_addr_t nrma_source_of(struct nrma_ep *ep, struct nrma_conn *conn);
uint64_t nrma_tx_comp_flags(const struct nrma_ep *ep, uint64_t flags);
struct nrma_op *nrma_tx_op_alloc(struct nrma_ep *ep, enum nrma_op_kind kind,
				 struct nrma_conn *conn, bool bounce);
struct nrma_sge nrma_scratch_sge(const struct nrma_proto *m);

/* Posts one application transmit over conn; len is its payload. */
typedef ssize_t (*nrma_tx_post_fn)(struct nrma_ep *ep, struct nrma_conn *conn,
				   const void *args, size_t len);
ssize_t nrma_tx_submit(struct nrma_ep *ep, fi_addr_t dest,
		       nrma_tx_post_fn post, const void *args, size_t len);
ssize_t nrma_tx_len(const struct nrma_ep *ep, const struct iovec *iov,
		    size_t count, uint64_t flags);

/* Receiving (nrma_recv.c) */
void nrma_recv_message(struct nrma_ep *ep, uint32_t buf, uint32_t len,
		       struct nrma_conn *conn);
void nrma_rx_buf_release(struct nrma_ep *ep, uint32_t buf);
void nrma_srq_refill(struct nrma_ep *ep);
void nrma_read_finish(struct nrma_ep *ep, struct nrma_op *op);
void nrma_reads_retry(struct nrma_ep *ep);
void nrma_acks_retry(struct nrma_ep *ep);

/* RMA (nrma_rma.c) */
size_t nrma_notify_wrs(const struct nrma_conn *conn, uint64_t key, bool read,
		       bool fence, const struct nrma_sge *scratch,
		       struct nrma_wr *wr);
void nrma_rma_finish(struct nrma_ep *ep, struct nrma_op *op);
void nrma_rma_write_data(struct nrma_ep *ep, const struct nrma_wc *wc,
			 struct nrma_conn *conn);

#endif /* NRMA_PROTO_H */
