/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * libFuzzer target: a key table slot as an initiator reads it from a
 * peer, with the operation it is asked to serve.  Whatever the bytes, the
 * verdict must only call a slot valid for its own key, and the target
 * address must keep the operation inside the region the slot names, with
 * rights the slot gives, never wrapping.
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
	int ret = nrma_key_slot_target(slot, virt, op->addr, op->len,
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
	struct nrma_key_slot slot;
	struct fuzz_op op;

	if (size < sizeof(slot) + sizeof(op))
		return 0;
	memcpy(&op, data + sizeof(slot), sizeof(op));
	switch (nrma_key_slot_verdict(data, op.key, &slot)) {
	case NRMA_KEY_VALID:
		if (!op.key || slot.key != op.key ||
		    slot.check != nrma_key_slot_check(&slot))
			abort();
		break;
	case NRMA_KEY_TORN:
		if (slot.key != op.key ||
		    slot.check == nrma_key_slot_check(&slot))
			abort();
		break;
	case NRMA_KEY_ABSENT:
		if (op.key && slot.key == op.key)
			abort();
		break;
	default:
		abort();
	}
	/* The bounds whatever the verdict: a slot is a peer's word. */
	slot_served(&slot, &op);
	return 0;
}
