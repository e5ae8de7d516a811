/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * libFuzzer target: a message as it arrives in a receive buffer, checked
 * by nrma_proto_hdr_check before the receiver looks at it.  Whatever the bytes,
 * the check must not read past them, and what it accepts must be what
 * the receiver can use safely.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "nrma_proto.h"

/* What the receiver relies on once a message passed the check. */
static void hdr_accepted(const struct nrma_hdr *hdr, size_t len)
{
	const struct nrma_rndv_seg *seg = (const void *) (hdr + 1);
	uint64_t sum = 0;

	switch (hdr->op) {
	case NRMA_HDR_EAGER:
		if (len - sizeof(*hdr) != hdr->len)
			abort();
		break;
	case NRMA_HDR_RNDV:
		if (!hdr->seg_count || hdr->seg_count > NRMA_IOV_LIMIT ||
		    len != sizeof(*hdr) + hdr->seg_count * sizeof(*seg))
			abort();
		for (size_t i = 0; i < hdr->seg_count; i++) {
			if (!seg[i].len || sum + seg[i].len < sum)
				abort();
			sum += seg[i].len;
		}
		if (sum != hdr->len)
			abort();
		break;
	case NRMA_HDR_ACK:
		if (len != sizeof(*hdr))
			abort();
		break;
	case NRMA_HDR_SEG:
		/* a piece, not empty, within a length an offset can say */
		if (hdr->seg_count || len == sizeof(*hdr) ||
		    hdr->len > UINT32_MAX ||
		    hdr->seg_offset + (len - sizeof(*hdr)) > hdr->len)
			abort();
		break;
	default:
		abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* Receive buffers are aligned; the exact size catches overreads. */
	uint64_t *buf = malloc(size ? size : 1);

	if (!buf)
		return 0;
	memcpy(buf, data, size);
	if (!nrma_proto_hdr_check(buf, size))
		hdr_accepted((const struct nrma_hdr *) buf, size);
	free(buf);
	return 0;
}
