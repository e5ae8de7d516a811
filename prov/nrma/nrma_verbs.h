/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The one place that speaks ibverbs (nrma_verbs.c); connection management
 * (nrma_cm.c) is the one that speaks rdmacm.  Everything above calls these
 * and names no verbs structure; work requests are built in the device
 * library's form, through the inline nrma_wr_* calls here.
 */
#ifndef NRMA_VERBS_H
#define NRMA_VERBS_H

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <infiniband/verbs.h>

struct nrma_device;
struct nrma_verbs_domain;
struct nrma_verbs_mr;
struct nrma_verbs_ep;
struct nrma_verbs_qp;
struct rdma_cm_id;

/* Devices with an active port, RC, 64-bit atomics and an rdmacm address. */
int nrma_verbs_discover(struct nrma_device **devs, size_t *count);

int nrma_verbs_domain_open(const struct nrma_device *dev,
			   struct nrma_verbs_domain **vdom);
void nrma_verbs_domain_close(struct nrma_verbs_domain *vdom);

/* Whether memory registered for fi_mr access flags is the device's to
 * write locally. */
bool nrma_verbs_access_local_write(uint64_t access);
/* Registers [buf, buf + len) for fi_mr access flags; *key is the rkey. */
int nrma_verbs_mr_reg(struct nrma_verbs_domain *vdom, const void *buf,
		      size_t len, uint64_t access, struct nrma_verbs_mr **vmr,
		      uint64_t *key);
/* What peers may do to memory registered with nrma_verbs_zero_reg. */
enum nrma_verbs_zero_access {
	NRMA_VERBS_ZERO_ATOMIC, /* remote atomics alone */
	NRMA_VERBS_ZERO_READ,	/* remote reads alone */
};

/*
 * Zeroed whole pages for at least len bytes, page aligned as
 * nrma_verbs_zero_reg needs; *bytes is what to munmap.  NULL when out of
 * memory.
 */
void *nrma_verbs_pages_map(size_t len, size_t *bytes);
/*
 * Registers [buf, buf + len) for peers that see it at remote address 0:
 * the rkey, never 0 (which reads as "none" on the wire), is all they
 * need.  buf is page aligned.
 */
int nrma_verbs_zero_reg(struct nrma_verbs_domain *vdom, const void *buf,
			size_t len, enum nrma_verbs_zero_access access,
			struct nrma_verbs_mr **vmr, uint32_t *rkey);
int nrma_verbs_mr_dereg(struct nrma_verbs_mr *vmr);
uint32_t nrma_verbs_mr_lkey(const struct nrma_verbs_mr *vmr);

/*
 * An endpoint's verbs resources: one CQ with a completion channel, and one
 * shared receive queue that all of the endpoint's queue pairs draw from.
 */
int nrma_verbs_ep_open(struct nrma_verbs_domain *vdom, size_t cq_size,
		       size_t srq_size, struct nrma_verbs_ep **vep);
void nrma_verbs_ep_close(struct nrma_verbs_ep *vep);
int nrma_verbs_ep_fd(const struct nrma_verbs_ep *vep);
/* Asks for a channel event on the next completion. */
int nrma_verbs_ep_arm(struct nrma_verbs_ep *vep);
/* Consumes pending channel events without blocking. */
void nrma_verbs_ep_ack_events(struct nrma_verbs_ep *vep);

enum nrma_wc_op {
	NRMA_WC_RECV = IBV_WC_RECV, /* a message into a receive buffer */
	/* an RDMA write with immediate data */
	NRMA_WC_RECV_IMM = IBV_WC_RECV_RDMA_WITH_IMM,
};

/*
 * A work completion, as the device library wrote it: struct ibv_wc's
 * layout under nrma's names, so that the device is polled straight into
 * an array of these (no copy per completion).
 */
struct nrma_wc {
	uint64_t wr_id;
	int status; /* ibv_wc_status; 0 is success */
	int op;	    /* enum nrma_wc_op or another; only where status is 0 */
	uint32_t vendor_err;
	uint32_t len;
	uint32_t imm_net; /* immediate data, network order (nrma_wc_imm) */
	uint32_t qp_num;
	uint32_t unused[4]; /* what RC's data path does not read */
};

_Static_assert(sizeof(struct nrma_wc) == sizeof(struct ibv_wc) &&
		       offsetof(struct nrma_wc, wr_id) ==
			       offsetof(struct ibv_wc, wr_id) &&
		       offsetof(struct nrma_wc, status) ==
			       offsetof(struct ibv_wc, status) &&
		       offsetof(struct nrma_wc, op) ==
			       offsetof(struct ibv_wc, opcode) &&
		       offsetof(struct nrma_wc, len) ==
			       offsetof(struct ibv_wc, byte_len) &&
		       offsetof(struct nrma_wc, imm_net) ==
			       offsetof(struct ibv_wc, imm_data) &&
		       offsetof(struct nrma_wc, qp_num) ==
			       offsetof(struct ibv_wc, qp_num),
	       "a work completion comes from the device as it is");

static inline uint32_t nrma_wc_imm(const struct nrma_wc *wc)
{
	return ntohl(wc->imm_net);
}

/* Up to count completions, into wc[0] to wc[count - 1]: how many, or < 0. */
int nrma_verbs_poll(struct nrma_verbs_ep *vep, struct nrma_wc *wc, int count);

struct nrma_sge {
	uint64_t addr;
	uint32_t len;
	uint32_t lkey;
};

/*
 * An RC queue pair on a connecting or accepted rdmacm id, on the
 * endpoint's CQ and SRQ.
 */
int nrma_verbs_qp_create(struct nrma_verbs_ep *vep,
			 struct nrma_verbs_domain *vdom, struct rdma_cm_id *id,
			 size_t sq_depth, size_t max_sge,
			 struct nrma_verbs_qp **qp);
void nrma_verbs_qp_destroy(struct nrma_verbs_qp *qp);
/* Moves the queue pair to the error state: what it holds is flushed. */
int nrma_verbs_qp_flush(struct nrma_verbs_qp *qp);
uint32_t nrma_verbs_qp_num(const struct nrma_verbs_qp *qp);
/* Bytes a work request may carry inline (NRMA_WR inline_data); 0: none. */
size_t nrma_verbs_qp_max_inline(const struct nrma_verbs_qp *qp);
/*
 * Work requests are built in place in the device library's own form
 * (struct ibv_send_wr), by the nrma_wr_* calls below, and posted as one
 * chain: nothing is translated on the way to the device.  Only the fields
 * an RC send, RDMA or atomic request reads are set; the rest (UD, XRC,
 * memory window and TSO parts) stays as it is, unread.  A request's
 * scatter list is the caller's array of struct nrma_sge, which has
 * struct ibv_sge's layout, and must last until nrma_verbs_post returns.
 */
enum nrma_wr_op {
	NRMA_WR_SEND = IBV_WR_SEND,
	NRMA_WR_WRITE = IBV_WR_RDMA_WRITE,
	NRMA_WR_WRITE_IMM = IBV_WR_RDMA_WRITE_WITH_IMM,
	NRMA_WR_READ = IBV_WR_RDMA_READ,
	/* 64-bit, at the remote address; fetches into the one sge */
	NRMA_WR_FETCH_ADD = IBV_WR_ATOMIC_FETCH_AND_ADD,
	NRMA_WR_CMP_SWAP = IBV_WR_ATOMIC_CMP_AND_SWP, /* swap if equal */
};

enum nrma_wr_flag {
	/* Wait for earlier reads and atomics on the queue pair. */
	NRMA_WR_FLAG_FENCE = IBV_SEND_FENCE,
	/* The device copies the payload as it is posted: the sges need no
	 * lkey and may be reused at once (up to nrma_verbs_qp_max_inline). */
	NRMA_WR_FLAG_INLINE = IBV_SEND_INLINE,
};

/* Work requests one nrma_verbs_post chains at most: an RMA request, its
 * notifications (two cells and a set's word) at most. */
#define NRMA_VERBS_CHAIN_MAX 4

struct nrma_wr_chain {
	size_t count;
	struct ibv_send_wr wr[NRMA_VERBS_CHAIN_MAX];
};

_Static_assert(sizeof(struct nrma_sge) == sizeof(struct ibv_sge) &&
		       offsetof(struct nrma_sge, addr) ==
			       offsetof(struct ibv_sge, addr) &&
		       offsetof(struct nrma_sge, len) ==
			       offsetof(struct ibv_sge, length) &&
		       offsetof(struct nrma_sge, lkey) ==
			       offsetof(struct ibv_sge, lkey),
	       "a scatter list goes to the device as it is");

static inline void nrma_wr_chain_init(struct nrma_wr_chain *c)
{
	c->count = 0;
}

/* The next request of c; the caller keeps within NRMA_VERBS_CHAIN_MAX. */
static inline struct ibv_send_wr *nrma_wr_next(struct nrma_wr_chain *c,
					       enum nrma_wr_op op,
					       const struct nrma_sge *sge,
					       size_t sge_count, unsigned flags)
{
	struct ibv_send_wr *wr = &c->wr[c->count++];

	wr->sg_list = (struct ibv_sge *) sge; /* the device only reads it */
	wr->num_sge = (int) sge_count;
	wr->opcode = (enum ibv_wr_opcode) op;
	wr->send_flags = flags;
	return wr;
}

/* A send, or an RDMA read or write (imm: WRITE_IMM's immediate data). */
static inline void nrma_wr_rdma(struct nrma_wr_chain *c, enum nrma_wr_op op,
				const struct nrma_sge *sge, size_t sge_count,
				uint64_t raddr, uint32_t rkey, uint32_t imm,
				unsigned flags)
{
	struct ibv_send_wr *wr = nrma_wr_next(c, op, sge, sge_count, flags);

	wr->wr.rdma.remote_addr = raddr;
	wr->wr.rdma.rkey = rkey;
	wr->imm_data = htonl(imm);
}

/* FETCH_ADD of add, or CMP_SWAP of swap where the word equals add. */
static inline void nrma_wr_atomic(struct nrma_wr_chain *c, enum nrma_wr_op op,
				  const struct nrma_sge *result, uint64_t raddr,
				  uint32_t rkey, uint64_t add, uint64_t swap,
				  unsigned flags)
{
	struct ibv_send_wr *wr = nrma_wr_next(c, op, result, 1, flags);

	wr->wr.atomic.remote_addr = raddr;
	wr->wr.atomic.rkey = rkey;
	wr->wr.atomic.compare_add = add;
	wr->wr.atomic.swap = swap;
}

/*
 * Posts c's work requests in order, as one chain: each carries wr_id but
 * the last, which carries last_id and alone is signaled (RC completes
 * in order, so its completion stands for the chain's; the others complete
 * only in error).  *posted says how many went, also on an error (the ones
 * before the failing one).  Callers keep the send queue from overflowing,
 * so an error means a broken queue pair.  c holds at least one request,
 * each with no more sges than the queue pairs take (NRMA_IOV_LIMIT, as
 * tx_attr->iov_limit bounds a transmit's): the data path checks them once,
 * where the application hands them in.
 */
int nrma_verbs_post(struct nrma_verbs_qp *qp, struct nrma_wr_chain *c,
		    uint64_t wr_id, uint64_t last_id, size_t *posted);
int nrma_verbs_post_srq_recv(struct nrma_verbs_ep *vep, uint64_t wr_id,
			     const struct nrma_sge *sge);

/*
 * Device events (ibv_get_async_event) on a domain's device, decoded: the
 * device context is rdmacm's, shared by every domain on the device.
 */
enum nrma_verbs_event_kind {
	NRMA_VERBS_EVENT_OTHER,	 /* nothing to do */
	NRMA_VERBS_EVENT_QP,	 /* a queue pair broke: qp_num */
	NRMA_VERBS_EVENT_EP,	 /* an endpoint's CQ or SRQ broke: vep */
	NRMA_VERBS_EVENT_DEVICE, /* the device is gone */
};

struct nrma_verbs_event {
	enum nrma_verbs_event_kind kind;
	int type; /* the ibv_event_type: prov_errno of its EQ entry */
	uint32_t qp_num;
	const struct nrma_verbs_ep *vep;
};

bool nrma_verbs_domain_same_device(const struct nrma_verbs_domain *a,
				   const struct nrma_verbs_domain *b);
/* Readable when device events wait; non-blocking. */
int nrma_verbs_domain_event_fd(struct nrma_verbs_domain *vd);
/* The next device event, or -FI_EAGAIN if none waits. */
int nrma_verbs_domain_event(struct nrma_verbs_domain *vd,
			    struct nrma_verbs_event *event);
const char *nrma_verbs_event_str(int type);

/*
 * The ibv_wc_status of an access the peer refuses: what an operation the
 * provider stops before it goes (an unknown key, a range or right its
 * region does not give) reports, as the device would.
 */
extern const int nrma_verbs_status_rem_access;
/* That of a work request the device will no longer complete. */
extern const int nrma_verbs_status_flushed;
/* prov_errno in our error completions is an ibv_wc_status. */
const char *nrma_verbs_status_str(int prov_errno);
/* The libfabric error (positive) that best describes an ibv_wc_status. */
int nrma_verbs_status_errno(int status);

#endif /* NRMA_VERBS_H */
