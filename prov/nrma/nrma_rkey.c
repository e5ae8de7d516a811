/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Peers' MR keys.  A key names a slot of the peer domain's key table
 * (nrma_keytab.c) and carries the secret the slot is sealed with; the
 * first operation with a key on a connection reads that slot with RDMA
 * read and returns -FI_EINPROGRESS: nothing waits for the answer here.
 * The operation is held on its connection (nrma_tx_hold), and what
 * follows it there behind it, and its call returns; progress posts them
 * once it unsealed the slot.  What the slot says serves them and every
 * later operation on the connection, until the peer says its table
 * changed.
 * It says so when a slot is removed or changed
 * (fi_close of a registration, a grown notification set), with a
 * fetch-and-add to the third word of the connection's credit cell, and
 * waits until its peers have it before the region goes: what we read
 * before that word moved is read again, so an operation with a key closed
 * since ends in -FI_EACCES here instead of at the device, whose remote
 * access error would break the connection and all else on it.  Only an
 * operation already posted when the peer closes its region still meets
 * the device's refusal.
 *
 * What an operation may touch is checked here, before it goes: a key the
 * peer does not have, or a range or right the region does not give, ends
 * the operation in -FI_EACCES, and the connection stays up.
 */
#include <stdlib.h>

#include "nrma_notify.h"
#include "nrma_rkey.h"
#include "nrma_xfer.h"

enum nrma_rkey_state {
	NRMA_RKEY_UNKNOWN, /* to be read */
	NRMA_RKEY_READING, /* its slot is on its way */
	NRMA_RKEY_KNOWN,
	NRMA_RKEY_ABSENT, /* the peer said no: the next use fails */
};

/* What we know of the key that last used one of the peer's slots. */
struct nrma_rkey {
	enum nrma_rkey_state state;
	uint32_t hash_key; /* its slot's, in conn->xfer->rkeys */
	uint64_t key;
	uint64_t changes;	   /* the peer's, when we asked for the slot */
	struct nrma_key_slot slot; /* NRMA_RKEY_KNOWN */
};

/* How many times the peer said its key table changed. */
static uint64_t rkey_peer_changes(struct nrma_conn *conn)
{
	return *nrma_notify_cell_word(conn->xfer->credit_cell,
				      NRMA_NOTIFY_KEYS);
}

void nrma_rkey_conn_close(struct nrma_conn *conn)
{
	nrma_hash_fini_values(&conn->xfer->rkeys, free);
}

/* Reads rk's slot at the peer; it stays NRMA_RKEY_UNKNOWN if it cannot. */
static void rkey_read(struct nrma_ep *ep, struct nrma_conn *conn,
		      struct nrma_rkey *rk)
{
	struct nrma_xfer *x = ep->xfer;
	struct nrma_op *op = nrma_op_alloc_buf(x, NRMA_OP_RESOLVE, conn);
	struct nrma_wr_chain chain;
	struct nrma_sge sge;

	if (!op)
		return;
	sge = nrma_tx_buf_sge(x, op->buf, sizeof(struct nrma_key_sealed));
	nrma_wr_chain_init(&chain);
	nrma_wr_rdma(&chain, NRMA_WR_READ, &sge, 1,
		     (uint64_t) nrma_key_index(rk->key) *
			     sizeof(struct nrma_key_sealed),
		     conn->grant.keytab_rkey, 0, 0);
	op->resolving = rk->key;
	rk->changes = rkey_peer_changes(conn);
	if (nrma_op_post(op, &chain))
		nrma_op_free(x, op);
	else
		rk->state = NRMA_RKEY_READING;
}

/* Keys are kept by slot: the last one each slot was asked for. */
static uint32_t rkey_hash_key(uint64_t key)
{
	return nrma_key_index(key) + 1;
}

/* What we know of the key using key's slot; NULL when out of memory. */
static struct nrma_rkey *rkey_entry(struct nrma_conn *conn, uint64_t key)
{
	uint32_t hash_key = rkey_hash_key(key);
	struct nrma_rkey **hot =
		&conn->xfer->rkey_hot[hash_key % NRMA_RKEY_HOT];
	struct nrma_rkey *rk = *hot;

	if (rk && rk->hash_key == hash_key)
		return rk;
	rk = nrma_hash_find(&conn->xfer->rkeys, hash_key);
	if (!rk) {
		rk = calloc(1, sizeof(*rk));
		if (!rk)
			return NULL;
		rk->hash_key = hash_key;
		if (nrma_hash_insert(&conn->xfer->rkeys, hash_key, rk)) {
			free(rk);
			return NULL;
		}
	}
	*hot = rk;
	return rk;
}

/* Whether rk says nothing of key now: another key's, or not read since a
 * change (or not at all). */
static bool rkey_stale(const struct nrma_rkey *rk, struct nrma_conn *conn,
		       uint64_t key)
{
	return rk->key != key || rk->state == NRMA_RKEY_UNKNOWN ||
	       rk->changes != rkey_peer_changes(conn);
}

/* Whether rk holds key's slot as the peer has it now: no need to ask. */
static bool rkey_current(const struct nrma_rkey *rk, struct nrma_conn *conn,
			 uint64_t key)
{
	return rk->state == NRMA_RKEY_KNOWN && !rkey_stale(rk, conn, key);
}

/*
 * Brings rk up to date for key: 0 once its slot is known, else what the
 * operation says now (see nrma_rkey_target).
 */
static int rkey_resolve(struct nrma_ep *ep, struct nrma_conn *conn,
			struct nrma_rkey *rk, uint64_t key)
{
	if (rk->state != NRMA_RKEY_READING && rkey_stale(rk, conn, key)) {
		rk->key = key;
		rk->state = NRMA_RKEY_UNKNOWN;
		rkey_read(ep, conn, rk);
	}
	if (rk->state == NRMA_RKEY_READING)
		return -FI_EINPROGRESS; /* still on its way */
	if (rkey_stale(rk, conn, key))
		return -FI_EAGAIN; /* no longer what we asked for */
	if (rk->state == NRMA_RKEY_ABSENT) {
		rk->state = NRMA_RKEY_UNKNOWN; /* the next use asks again */
		return -FI_EACCES;
	}
	return 0;
}

/* Where rk's known slot puts len bytes at addr (see nrma_rkey_target). */
static int rkey_slot_target(const struct nrma_ep *ep,
			    const struct nrma_rkey *rk, uint64_t addr,
			    uint64_t len, uint32_t access,
			    struct nrma_remote *remote)
{
	remote->rkey = rk->slot.rkey;
	remote->cell_rkey = rk->slot.cell_rkey;
	return nrma_proto_key_slot_target(&rk->slot, ep->xfer->virt_addr, addr,
					  len, access, &remote->addr);
}

/* A key not among the last ones used, or not known and current. */
static NRMA_NOINLINE int rkey_target_lookup(struct nrma_ep *ep,
					    struct nrma_conn *conn,
					    uint64_t key, uint64_t addr,
					    uint64_t len, uint32_t access,
					    struct nrma_remote *remote)
{
	struct nrma_rkey *rk;
	int ret;

	if (nrma_key_index(key) >= conn->grant.keytab_slots)
		return -FI_EACCES;
	rk = rkey_entry(conn, key);
	if (!rk)
		return -FI_EAGAIN;
	if (!rkey_current(rk, conn, key)) {
		ret = rkey_resolve(ep, conn, rk, key);
		if (ret)
			return ret;
	}
	return rkey_slot_target(ep, rk, addr, len, access, remote);
}

/*
 * Every use of a key but the first finds it among the last ones used,
 * known and unchanged since (its slot was in range when it was looked up;
 * the same key, the same slot).  Nothing changes here.  Keys are kept as
 * they go on the wire (nrma_key_wire): wire_key is one.
 */
static inline int rkey_target_hot(struct nrma_ep *ep, struct nrma_conn *conn,
				  uint64_t wire_key, uint64_t addr,
				  uint64_t len, uint32_t access,
				  struct nrma_remote *remote)
{
	const struct nrma_rkey *rk =
		conn->xfer->rkey_hot[rkey_hash_key(wire_key) % NRMA_RKEY_HOT];

	if (!rk || !rkey_current(rk, conn, wire_key))
		return 1;
	return rkey_slot_target(ep, rk, addr, len, access, remote);
}

int nrma_rkey_target_known(struct nrma_ep *ep, struct nrma_conn *conn,
			   uint64_t key, uint64_t addr, uint64_t len,
			   uint32_t access, struct nrma_remote *remote)
{
	return rkey_target_hot(ep, conn, nrma_key_wire(key), addr, len, access,
			       remote);
}

int nrma_rkey_target(struct nrma_ep *ep, struct nrma_conn *conn, uint64_t key,
		     uint64_t addr, uint64_t len, uint32_t access,
		     struct nrma_remote *remote)
{
	uint64_t wire_key = nrma_key_wire(key);
	int ret =
		rkey_target_hot(ep, conn, wire_key, addr, len, access, remote);

	return ret > 0 ? rkey_target_lookup(ep, conn, wire_key, addr, len,
					    access, remote) :
			 ret;
}

/* The word of a set that notify names, as an address under its key. */
#define RKEY_NOTIFY_WORD(notify)                               \
	(notify)->set.key, (notify)->index * sizeof(uint64_t), \
		sizeof(uint64_t), NRMA_KEY_REMOTE_NOTIFY

int nrma_rkey_notify_target(struct nrma_ep *ep, struct nrma_conn *conn,
			    const struct fi_nrma_notify *notify,
			    struct nrma_remote *set)
{
	return nrma_rkey_target(ep, conn, RKEY_NOTIFY_WORD(notify), set);
}

int nrma_rkey_notify_target_known(struct nrma_ep *ep, struct nrma_conn *conn,
				  const struct fi_nrma_notify *notify,
				  struct nrma_remote *set)
{
	return nrma_rkey_target_known(ep, conn, RKEY_NOTIFY_WORD(notify), set);
}

static enum nrma_rkey_state rkey_state_of(enum nrma_key_verdict verdict)
{
	switch (verdict) {
	case NRMA_KEY_VALID:
		return NRMA_RKEY_KNOWN;
	case NRMA_KEY_ABSENT:
		return NRMA_RKEY_ABSENT;
	default:
		return NRMA_RKEY_UNKNOWN; /* torn: read again */
	}
}

/* A slot read came back (or failed with its connection). */
void nrma_rkey_read_done(struct nrma_ep *ep, struct nrma_op *op)
{
	struct nrma_rkey *rk = nrma_hash_find(&op->conn->xfer->rkeys,
					      rkey_hash_key(op->resolving));
	enum nrma_key_verdict verdict = NRMA_KEY_TORN;
	struct nrma_key_slot slot;

	if (!op->error)
		verdict = nrma_proto_key_unseal(
			nrma_bufpool_buf(&ep->xfer->tx_bufs, op->buf),
			op->resolving, &slot);
	if (rk && rk->key == op->resolving && rk->state == NRMA_RKEY_READING) {
		rk->state = rkey_state_of(verdict);
		if (verdict == NRMA_KEY_VALID)
			rk->slot = slot;
	}
	nrma_op_free(ep->xfer, op);
}

/* Notification atomics, at the words peers' keys name */

/*
 * Bumps a notification word at the peer by add.  It follows its data
 * operation on the same queue pair: RC executes a write or an atomic
 * before it, but a read, whose responses may still be leaving the target,
 * only once fenced.
 */
static void rkey_notify_wr(struct nrma_wr_chain *chain, uint32_t rkey,
			   uint64_t raddr, uint64_t add,
			   const struct nrma_sge *scratch, bool fence)
{
	nrma_wr_atomic(chain, NRMA_WR_FETCH_ADD, scratch, raddr, rkey, add, 0,
		       fence || nrma_params.notify_fence_always ?
			       NRMA_WR_FLAG_FENCE :
			       0);
}

void nrma_rkey_notify_set_wr(struct nrma_wr_chain *chain, uint64_t add,
			     const struct nrma_remote *set,
			     const struct nrma_sge *scratch, bool fence)
{
	rkey_notify_wr(chain, set->rkey, set->addr, add, scratch, fence);
}

/*
 * The notifications an operation owes the peer: one for the peer
 * endpoint's cell, one for its region's (cell_rkey), at the word that
 * says what it did.  Inline in each post that builds its chain.
 */
NRMA_INLINE void nrma_rkey_notify_wrs(struct nrma_wr_chain *chain,
				      const struct nrma_conn *conn,
				      uint32_t cell_rkey,
				      enum nrma_rkey_counts counts, bool fence,
				      uint64_t add,
				      const struct nrma_sge *scratch)
{
	static const uint64_t raddr_of[] = {
		[NRMA_RKEY_COUNTS_WRITE] = NRMA_NOTIFY_WRITE_ADDR,
		[NRMA_RKEY_COUNTS_READ] = NRMA_NOTIFY_READ_ADDR,
		[NRMA_RKEY_COUNTS_UPDATE] = NRMA_NOTIFY_UPDATE_ADDR,
	};
	uint64_t raddr = raddr_of[counts];

	if (conn->grant.notify_rkey)
		rkey_notify_wr(chain, conn->grant.notify_rkey, raddr, add,
			       scratch, fence);
	if (cell_rkey)
		rkey_notify_wr(chain, cell_rkey, raddr, add, scratch, fence);
}
