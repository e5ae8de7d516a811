/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * nrma's wire format: what peers exchange, and nothing else.
 *
 * A connection's private data (rdmacm connect, accept and reject) says
 * who the sender is and where peers bump its notification counters.
 * It also grants the peer credits (src/nrma_credit.h): receive buffers
 * kept for its messages and for its ACKs and writes with immediate data,
 * and names a credit cell, whose first two words the peer bumps with
 * fetch-and-add to give credits back, and the third to say that its key
 * table changed.  Every message starts with a
 * struct nrma_hdr, which gives credits back too: an eager one carries
 * its payload behind it, a rendezvous one the segments the receiver
 * reads with RDMA read, a segment a piece of a larger message's payload
 * (the pieces come back to back on their connection, in order), and an
 * ACK names the sender's operation it completes.
 * Notification counters are 64-bit words that peers bump with a verbs
 * fetch-and-add at fixed remote addresses under a cell's rkey.
 * A domain's key table (struct nrma_key_slot) says what each MR key
 * names; initiators read its slots with RDMA read, at remote address
 * slot index * sizeof(slot) under the rkey in the connection data.
 *
 * Everything is in host byte order but the connection data's header
 * fields: peers must share it.
 */
#ifndef NRMA_PROTO_H
#define NRMA_PROTO_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define NRMA_PROTOCOL_VERSION 9

/* iovs per operation, and so rendezvous segments per message */
#define NRMA_IOV_LIMIT 4
#define NRMA_CM_MAGIC  0x6e726d61 /* "nrma" */

enum nrma_reject_reason {
	NRMA_REJECT_NONE,      /* connect and accept */
	NRMA_REJECT_COLLISION, /* our own request to you wins */
	NRMA_REJECT_VERSION,   /* not our protocol version */
	NRMA_REJECT_BUSY,      /* we are connected to you: try again */
	NRMA_REJECT_IDENTITY,  /* the name you claim is not yours */
	NRMA_REJECT_UNCHECKED, /* your name could not be checked: try again */
	NRMA_REJECT_CONFIRMED, /* a check's answer: the request is ours */
};

/* rdmacm's private data of a connection request, at most, on IB. */
#define NRMA_CM_REQ_DATA_MAX 56

/*
 * What each side of a connection grants the other, in its connect or
 * accept data: where to bump its notification counters, its credits and
 * their cell, and its domain's key table.
 */
struct nrma_cm_grant {
	uint32_t notify_rkey;  /* its endpoint cell, 0: none */
	uint32_t credit_rkey;  /* the connection's credit cell */
	uint16_t credits_msg;  /* first credits for the peer's messages */
	uint16_t credits_ctl;  /* and for its ACKs and write data */
	uint32_t keytab_rkey;  /* its domain's key table, 0: none */
	uint32_t keytab_slots; /* and how many slots it has */
};

/*
 * Whether a grant names the cell where more credits come: its first ones
 * may be none, when the peer's pool has none to give yet.
 */
bool nrma_proto_grant_valid(const struct nrma_cm_grant *grant);

/*
 * RDM connect, accept and reject private data.  A connection is known by
 * its peer's name and context: 0 for an endpoint's own, i + 1 for the
 * transmit context i of a scalable endpoint, which connects under the
 * scalable endpoint's name.
 *
 * A request's host is the one rdmacm saw, its port is not: another process
 * on that host could claim the name.  So each request carries a random
 * nonce, and the acceptor asks the endpoint so named, with a request of
 * kind NRMA_CM_CHECK to its listener, whether that nonce is one of its
 * own attempts; the listener refuses it, answering NRMA_REJECT_CONFIRMED
 * (with the nonce) or NRMA_REJECT_IDENTITY.
 */
enum nrma_cm_kind {
	NRMA_CM_CONNECT,
	NRMA_CM_CHECK,
};

struct nrma_cm_data {
	uint32_t magic;		 /* network byte order */
	uint16_t version;	 /* network byte order */
	uint16_t reject_reason;	 /* network byte order */
	struct sockaddr_in name; /* the sender endpoint's name */
	struct nrma_cm_grant grant;
	uint16_t ctx;	/* the sender's context */
	uint16_t kind;	/* network byte order: enum nrma_cm_kind */
	uint64_t nonce; /* the request's, or the one a check asks about */
};

_Static_assert(sizeof(struct nrma_cm_data) <= NRMA_CM_REQ_DATA_MAX,
	       "rdmacm REQ private data");

void nrma_proto_cm_data_init(struct nrma_cm_data *data,
			     const struct sockaddr_in *name,
			     uint32_t notify_rkey,
			     enum nrma_reject_reason reason);
/* The private data in buf if it is nrma's (of any version), else NULL. */
const struct nrma_cm_data *nrma_proto_cm_data_parse(const void *buf,
						    size_t len);
uint16_t nrma_proto_cm_data_version(const struct nrma_cm_data *data);
enum nrma_cm_kind nrma_proto_cm_data_kind(const struct nrma_cm_data *data);
enum nrma_reject_reason nrma_proto_cm_data_reason(
	const struct nrma_cm_data *data);

/*
 * FI_EP_MSG connect, accept and reject private data: a short header, then
 * the application's connection data (fi_connect, fi_accept, fi_reject).
 * An endpoint knows its one peer by the connection: no name, no
 * collisions.  A reject's grant is zero.
 */
#define NRMA_CM_MSG_MAGIC 0x6e6d /* "nm" */

struct nrma_cm_msg_data {
	uint16_t magic;	 /* network byte order */
	uint8_t version; /* NRMA_PROTOCOL_VERSION */
	uint8_t app_len; /* application bytes that follow */
	struct nrma_cm_grant grant;
	uint8_t app[];
};

/* Application bytes that fit in any connect, accept or reject. */
#define NRMA_CM_MSG_APP_MAX \
	(NRMA_CM_REQ_DATA_MAX - sizeof(struct nrma_cm_msg_data))

/*
 * Fills buf (room for NRMA_CM_REQ_DATA_MAX bytes) with a header and the
 * application's len bytes (at most NRMA_CM_MSG_APP_MAX); returns the
 * private data length.
 */
size_t nrma_proto_msg_data_init(void *buf, const struct nrma_cm_grant *grant,
				const void *app, size_t len);
/*
 * The header in buf if it is a FI_EP_MSG one of our protocol version
 * whose application bytes lie within len, else NULL.
 */
const struct nrma_cm_msg_data *nrma_proto_msg_data_parse(const void *buf,
							 size_t len);

enum nrma_hdr_op {
	NRMA_HDR_EAGER = 1,
	NRMA_HDR_RNDV,
	NRMA_HDR_ACK,
	NRMA_HDR_SEG, /* a piece of a message, at hdr->seg_offset */
};

#define NRMA_HDR_CQ_DATA (1 << 0)
#define NRMA_HDR_ACK_REQ (1 << 1)
#define NRMA_HDR_TAGGED	 (1 << 2)
/* An ACK that says the receive failed: the send fails too. */
#define NRMA_HDR_NACK	 (1 << 3)

/* Receive contexts a message may name (a scalable endpoint's). */
#define NRMA_RX_CTX_MAX 256

struct nrma_hdr {
	uint8_t op;
	uint8_t flags;
	uint8_t seg_count; /* rendezvous segments that follow */
	uint8_t rx_ctx;	   /* the receiver's receive context (named) */
	uint32_t cq_data;
	uint64_t token; /* the sender's operation, for its ACK; 0: none owed */
	uint64_t len;	/* message length */
	uint64_t tag;
	uint16_t credits_msg; /* given back: buffers of our messages */
	uint16_t credits_ctl; /* and of our ACKs and write data */
	uint32_t seg_offset;  /* NRMA_HDR_SEG: where its payload goes */
};

struct nrma_rndv_seg {
	uint64_t addr;
	uint64_t len;
	uint32_t rkey;
	uint32_t reserved;
};

/*
 * Whether len bytes received at buf are a well-formed message: a known
 * op and flags, and a length that agrees with the header (an eager
 * payload of hdr->len bytes; rendezvous segments, at most NRMA_IOV_LIMIT,
 * none empty, that add up to hdr->len; a segment's payload, not empty,
 * within hdr->len; nothing after an ACK).  0 if so, else -FI_EINVAL.
 * Whether a segment is the one its connection expects is the receiver's
 * to check.
 */
int nrma_proto_hdr_check(const void *buf, size_t len);

/*
 * An MR key names a slot of its domain's key table and carries the secret
 * its slot is sealed with: the slot's index + 1 in bits 0-15 (so a key is
 * never 0) and 48 random bits above.  Keys say nothing of each other, and
 * a slot used again gets a new secret.
 */
#define NRMA_KEY_INDEX_BITS 16
#define NRMA_KEY_SLOTS_MAX  ((1u << NRMA_KEY_INDEX_BITS) - 1)
#define NRMA_KEY_SECRET_MAX (UINT64_MAX >> NRMA_KEY_INDEX_BITS)

static inline uint64_t nrma_key_make(uint32_t index, uint64_t secret)
{
	return (secret & NRMA_KEY_SECRET_MAX) << NRMA_KEY_INDEX_BITS |
	       ((uint64_t) index + 1);
}

/* The slot a key names; UINT32_MAX for none (an index of 0). */
static inline uint32_t nrma_key_index(uint64_t key)
{
	return (uint32_t) (key & NRMA_KEY_SLOTS_MAX) - 1;
}

/*
 * Under an mr_mode without FI_MR_PROV_KEY the application picks its keys
 * (Sandia OpenSHMEM's default build: 0 and 1), each below
 * NRMA_KEY_SLOTS_MAX: such a key names the slot of its own number, sealed
 * with a secret every peer knows, as the key itself is.  On the wire it
 * is the key of that slot and secret; a provider key, whose secret is
 * never 0, is above NRMA_KEY_SLOTS_MAX and goes as it is.
 */
#define NRMA_KEY_APP_SECRET 0x6e726d61u /* "nrma" */

static inline uint64_t nrma_key_wire(uint64_t key)
{
	return key < NRMA_KEY_SLOTS_MAX ?
		       nrma_key_make((uint32_t) key, NRMA_KEY_APP_SECRET) :
		       key;
}

#define NRMA_KEY_REMOTE_READ   (1 << 0)
#define NRMA_KEY_REMOTE_WRITE  (1 << 1) /* writes and atomics */
/* Notification set: 8-byte aligned fetch-and-adds alone. */
#define NRMA_KEY_REMOTE_NOTIFY (1 << 2)

/* What an MR key names. */
struct nrma_key_slot {
	uint64_t addr; /* the registration's virtual address */
	uint64_t len;
	uint32_t rkey;
	uint32_t cell_rkey; /* its notification cell, 0: none */
	uint32_t access;    /* NRMA_KEY_REMOTE_* */
	uint32_t reserved;
};

#define NRMA_KEY_SLOT_WORDS (sizeof(struct nrma_key_slot) / 8)
_Static_assert(sizeof(struct nrma_key_slot) % 8 == 0, "a slot is words");

/*
 * A slot as peers read it: sealed with its key, so that reading the
 * table tells nothing (no rkey, no address) to a peer the key was not
 * handed to, and only the key's holder can check it.  The owner makes seq
 * and seq_end odd before a change and both the next even value after it;
 * a reader that finds them unequal or odd read a change (torn), and one
 * whose mac does not check out has no such key.
 */
struct nrma_key_sealed {
	uint64_t seq;
	uint64_t words[NRMA_KEY_SLOT_WORDS]; /* XORed with the key's stream */
	uint64_t mac;			     /* of seq and the slot */
	uint64_t seq_end;
};

/* Seals slot for key at sequence seq (even) into out's words and mac. */
void nrma_proto_key_seal(struct nrma_key_sealed *out, uint64_t key,
			 uint64_t seq, const struct nrma_key_slot *slot);

enum nrma_key_verdict {
	NRMA_KEY_VALID,
	NRMA_KEY_TORN,	 /* read while it changed: read again */
	NRMA_KEY_ABSENT, /* the key names no registration */
};

/* What a sealed slot read from a peer says of key (buf may be unaligned). */
enum nrma_key_verdict nrma_proto_key_unseal(const void *buf, uint64_t key,
					    struct nrma_key_slot *out);

/*
 * The remote address of len bytes at addr (an offset into the region, or
 * with virt_addr its virtual address) that need access, or -FI_EACCES
 * when the region does not cover them or allow it (or cannot be: it
 * wraps the address space).
 */
int nrma_proto_key_slot_target(const struct nrma_key_slot *slot, bool virt_addr,
			       uint64_t addr, uint64_t len, uint32_t access,
			       uint64_t *raddr);

/* Remote addresses of a notification cell's words. */
#define NRMA_NOTIFY_WRITE_ADDR	0
#define NRMA_NOTIFY_READ_ADDR	8
/* A credit cell's: credits given back for messages, for the rest. */
#define NRMA_CREDIT_MSG_ADDR	NRMA_NOTIFY_WRITE_ADDR
#define NRMA_CREDIT_CTL_ADDR	NRMA_NOTIFY_READ_ADDR
/* And the changes of the peer's key table that made what we know stale. */
#define NRMA_CREDIT_KEYS_ADDR	16
/* A notification cell's word for atomics that both read and may write. */
#define NRMA_NOTIFY_UPDATE_ADDR 24

#endif /* NRMA_PROTO_H */
