/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * libFuzzer target: a sealed key table slot as an initiator reads it from
 * a peer, with the key and the operation it is asked to serve.  Whatever
 * the bytes, the verdict must only call a slot valid when it was sealed
 * with that key (sealing what it gave back again makes the same bytes),
 * and the target address must keep the operation inside the region the
 * slot names, with rights the slot gives, never wrapping.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fi_errno.h>

#include "nrma_proto.h"

/* What the fuzzer picks besides the slot. */
struct fuzz_op {
	uint64_t key;
	uint64_t addr;
	uint64_t len;
	uint32_t access;
	uint32_t virt_addr;
};

static void slot_served(const struct nrma_key_slot *slot,
			const struct fuzz_op *op)
{
	uint64_t raddr, end = slot->addr + slot->len;
	bool virt = op->virt_addr & 1;
	int ret = nrma_proto_key_slot_target(slot, virt, op->addr, op->len,
					     op->access, &raddr);

	if (ret && ret != -FI_EACCES)
		abort();
	if (ret)
		return;
	/* Granted: a region that does not wrap, and inside it. */
	if ((op->access & ~slot->access) || end < slot->addr ||
	    raddr < slot->addr || raddr - slot->addr > slot->len ||
	    op->len > end - raddr)
		abort();
	if (virt && raddr != op->addr)
		abort();
	if (!virt && raddr - slot->addr != op->addr)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct nrma_key_sealed sealed, again;
	struct nrma_key_slot slot = { 0 };
	struct fuzz_op op;

	if (size < sizeof(sealed) + sizeof(op))
		return 0;
	memcpy(&sealed, data, sizeof(sealed));
	memcpy(&op, data + sizeof(sealed), sizeof(op));
	switch (nrma_proto_key_unseal(data, op.key, &slot)) {
	case NRMA_KEY_VALID:
		again = sealed;
		nrma_proto_key_seal(&again, op.key, sealed.seq, &slot);
		if (!op.key || sealed.seq != sealed.seq_end || sealed.seq % 2 ||
		    memcmp(&again, &sealed, sizeof(again)))
			abort();
		break;
	case NRMA_KEY_TORN:
		if (sealed.seq == sealed.seq_end && !(sealed.seq % 2))
			abort();
		break;
	case NRMA_KEY_ABSENT:
		break;
	default:
		abort();
	}
	/* What a slot says is a peer's word, valid or not: the bounds hold
	 * for any, the sealed words taken as one as well. */
	slot_served(&slot, &op);
	memcpy(&slot, sealed.words, sizeof(slot));
	slot_served(&slot, &op);
	return 0;
}
