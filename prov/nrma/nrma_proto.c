/* SPDX-License-Identifier: BSD-2-Clause */
/* Encoding and checking of the wire format (nrma_proto.h). */
#include <arpa/inet.h>
#include <string.h>

#include <rdma/fi_errno.h>

#include "nrma_proto.h"

/* The flags of a message (an ACK may only say NRMA_HDR_NACK). */
#define NRMA_HDR_FLAGS (NRMA_HDR_CQ_DATA | NRMA_HDR_ACK_REQ | NRMA_HDR_TAGGED)

void nrma_cm_data_init(struct nrma_cm_data *data,
		       const struct sockaddr_in *name, uint32_t notify_rkey,
		       enum nrma_reject_reason reason)
{
	*data = (struct nrma_cm_data){
		.magic = htonl(NRMA_CM_MAGIC),
		.version = htons(NRMA_PROTOCOL_VERSION),
		.reject_reason = htons(reason),
		.name = *name,
		.grant.notify_rkey = notify_rkey,
	};
}

const struct nrma_cm_data *nrma_cm_data_parse(const void *buf, size_t len)
{
	const struct nrma_cm_data *data = buf;

	if (!data || len < sizeof(*data) || ntohl(data->magic) != NRMA_CM_MAGIC)
		return NULL;
	return data;
}

bool nrma_cm_grant_valid(const struct nrma_cm_grant *grant)
{
	return grant->credit_rkey != 0;
}

uint16_t nrma_cm_data_version(const struct nrma_cm_data *data)
{
	return ntohs(data->version);
}

enum nrma_reject_reason nrma_cm_data_reason(const struct nrma_cm_data *data)
{
	return ntohs(data->reject_reason);
}

size_t nrma_cm_msg_data_init(void *buf, const struct nrma_cm_grant *grant,
			     const void *app, size_t len)
{
	struct nrma_cm_msg_data *data = buf;

	if (len > NRMA_CM_MSG_APP_MAX)
		len = NRMA_CM_MSG_APP_MAX;
	*data = (struct nrma_cm_msg_data){
		.magic = htons(NRMA_CM_MSG_MAGIC),
		.version = NRMA_PROTOCOL_VERSION,
		.app_len = (uint8_t) len,
	};
	if (grant)
		data->grant = *grant;
	if (len)
		memcpy(data->app, app, len);
	return sizeof(*data) + len;
}

const struct nrma_cm_msg_data *nrma_cm_msg_data_parse(const void *buf,
						      size_t len)
{
	const struct nrma_cm_msg_data *data = buf;

	if (!data || len < sizeof(*data) ||
	    ntohs(data->magic) != NRMA_CM_MSG_MAGIC ||
	    data->version != NRMA_PROTOCOL_VERSION ||
	    data->app_len > NRMA_CM_MSG_APP_MAX ||
	    data->app_len > len - sizeof(*data))
		return NULL;
	return data;
}

/* One step of a hash of the slot's fields (splitmix64's finaliser). */
static uint64_t proto_mix(uint64_t h, uint64_t v)
{
	h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
	h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ULL;
	h = (h ^ (h >> 27)) * 0x94d049bb133111ebULL;
	return h ^ (h >> 31);
}

uint64_t nrma_key_slot_check(const struct nrma_key_slot *slot)
{
	uint64_t h = proto_mix(0, slot->key);

	h = proto_mix(h, slot->addr);
	h = proto_mix(h, slot->len);
	h = proto_mix(h, (uint64_t) slot->rkey << 32 | slot->cell_rkey);
	return proto_mix(h, slot->access);
}

enum nrma_key_verdict nrma_key_slot_verdict(const void *buf, uint64_t key,
					    struct nrma_key_slot *out)
{
	memcpy(out, buf, sizeof(*out));
	/* A key being registered is not in use yet: empty is absent. */
	if (!key || out->key != key)
		return NRMA_KEY_ABSENT;
	return out->check == nrma_key_slot_check(out) ? NRMA_KEY_VALID :
							NRMA_KEY_TORN;
}

int nrma_key_slot_target(const struct nrma_key_slot *slot, bool virt_addr,
			 uint64_t addr, uint64_t len, uint32_t access,
			 uint64_t *raddr)
{
	uint64_t offset = virt_addr ? addr - slot->addr : addr;

	/* No region wraps the address space: that slot is a peer's lie. */
	if ((access & ~slot->access) || slot->len > UINT64_MAX - slot->addr ||
	    (virt_addr && addr < slot->addr) || offset > slot->len ||
	    len > slot->len - offset)
		return -FI_EACCES;
	*raddr = slot->addr + offset;
	/* Verbs atomics need 8-byte alignment, or the QP breaks. */
	if ((access & NRMA_KEY_REMOTE_NOTIFY) && (len != 8 || *raddr % 8))
		return -FI_EACCES;
	return 0;
}

static int proto_rndv_check(const struct nrma_hdr *hdr, const void *segs,
			    size_t len)
{
	uint64_t sum = 0;

	if (!hdr->seg_count || hdr->seg_count > NRMA_IOV_LIMIT ||
	    len != hdr->seg_count * sizeof(struct nrma_rndv_seg))
		return -FI_EINVAL;
	for (size_t i = 0; i < hdr->seg_count; i++) {
		struct nrma_rndv_seg seg;

		/* The buffer may not be aligned for a direct read. */
		memcpy(&seg, (const char *) segs + i * sizeof(seg),
		       sizeof(seg));
		if (!seg.len || seg.len > UINT64_MAX - sum)
			return -FI_EINVAL;
		sum += seg.len;
	}
	return sum == hdr->len ? 0 : -FI_EINVAL;
}

int nrma_hdr_check(const void *buf, size_t len)
{
	const struct nrma_hdr *hdr = buf;
	size_t body;

	if (len < sizeof(*hdr))
		return -FI_EINVAL;
	if (hdr->op == NRMA_HDR_ACK)
		return len == sizeof(*hdr) && !(hdr->flags & ~NRMA_HDR_NACK) ?
			       0 :
			       -FI_EINVAL;
	if (hdr->flags & ~NRMA_HDR_FLAGS)
		return -FI_EINVAL;
	body = len - sizeof(*hdr);
	switch (hdr->op) {
	case NRMA_HDR_EAGER:
		return !hdr->seg_count && body == hdr->len ? 0 : -FI_EINVAL;
	case NRMA_HDR_RNDV:
		return proto_rndv_check(hdr, hdr + 1, body);
	default:
		return -FI_EINVAL;
	}
}
