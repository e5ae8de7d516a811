/* SPDX-License-Identifier: BSD-2-Clause */
/* Encoding and checking of the wire format (nrma_proto.h). */
#include <arpa/inet.h>
#include <string.h>

#include <rdma/fi_errno.h>

#include "nrma_proto.h"

/* The flags of a message (an ACK may only say NRMA_HDR_NACK). */
#define NRMA_HDR_FLAGS (NRMA_HDR_CQ_DATA | NRMA_HDR_ACK_REQ | NRMA_HDR_TAGGED)

void nrma_proto_cm_data_init(struct nrma_cm_data *data,
			     const struct sockaddr_in *name,
			     uint32_t notify_rkey,
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

const struct nrma_cm_data *nrma_proto_cm_data_parse(const void *buf, size_t len)
{
	const struct nrma_cm_data *data = buf;

	if (!data || len < sizeof(*data) || ntohl(data->magic) != NRMA_CM_MAGIC)
		return NULL;
	return data;
}

bool nrma_proto_grant_valid(const struct nrma_cm_grant *grant)
{
	return grant->credit_rkey != 0;
}

uint16_t nrma_proto_cm_data_version(const struct nrma_cm_data *data)
{
	return ntohs(data->version);
}

enum nrma_cm_kind nrma_proto_cm_data_kind(const struct nrma_cm_data *data)
{
	return ntohs(data->kind);
}

enum nrma_reject_reason nrma_proto_cm_data_reason(
	const struct nrma_cm_data *data)
{
	return ntohs(data->reject_reason);
}

size_t nrma_proto_msg_data_init(void *buf, const struct nrma_cm_grant *grant,
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

const struct nrma_cm_msg_data *nrma_proto_msg_data_parse(const void *buf,
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

/* SipHash-2-4 (Aumasson and Bernstein) of n 64-bit words. */
#define PROTO_ROTL(x, b) (((x) << (b)) | ((x) >> (64 - (b))))

static void proto_sip_rounds(uint64_t v[4], int rounds)
{
	while (rounds--) {
		v[0] += v[1];
		v[1] = PROTO_ROTL(v[1], 13) ^ v[0];
		v[0] = PROTO_ROTL(v[0], 32);
		v[2] += v[3];
		v[3] = PROTO_ROTL(v[3], 16) ^ v[2];
		v[0] += v[3];
		v[3] = PROTO_ROTL(v[3], 21) ^ v[0];
		v[2] += v[1];
		v[1] = PROTO_ROTL(v[1], 17) ^ v[2];
		v[2] = PROTO_ROTL(v[2], 32);
	}
}

static uint64_t proto_siphash(uint64_t k0, uint64_t k1, const uint64_t *m,
			      size_t n)
{
	uint64_t v[4] = { k0 ^ 0x736f6d6570736575ULL,
			  k1 ^ 0x646f72616e646f6dULL,
			  k0 ^ 0x6c7967656e657261ULL,
			  k1 ^ 0x7465646279746573ULL };
	uint64_t last = (uint64_t) (n * 8) << 56;

	for (size_t i = 0; i < n; i++) {
		v[3] ^= m[i];
		proto_sip_rounds(v, 2);
		v[0] ^= m[i];
	}
	v[3] ^= last;
	proto_sip_rounds(v, 2);
	v[0] ^= last;
	v[2] ^= 0xff;
	proto_sip_rounds(v, 4);
	return v[0] ^ v[1] ^ v[2] ^ v[3];
}

/* The key's two uses, kept apart: a stream to hide with, a mac. */
#define PROTO_SEAL_STREAM 0x6e726d612d6b7331ULL /* "nrma-ks1" */
#define PROTO_SEAL_MAC	  0x6e726d612d6d6131ULL /* "nrma-ma1" */

/* The slot's words hidden with (or, again, shown from) key's stream. */
static void proto_key_stream(uint64_t key, uint64_t seq, const uint64_t *in,
			     uint64_t *out)
{
	for (uint64_t i = 0; i < NRMA_KEY_SLOT_WORDS; i++) {
		uint64_t m[2] = { seq, i };

		out[i] = in[i] ^ proto_siphash(key, PROTO_SEAL_STREAM, m, 2);
	}
}

static uint64_t proto_key_mac(uint64_t key, uint64_t seq, const uint64_t *w)
{
	uint64_t m[1 + NRMA_KEY_SLOT_WORDS] = { seq };

	memcpy(&m[1], w, NRMA_KEY_SLOT_WORDS * sizeof(*w));
	return proto_siphash(key, PROTO_SEAL_MAC, m, 1 + NRMA_KEY_SLOT_WORDS);
}

void nrma_proto_key_seal(struct nrma_key_sealed *out, uint64_t key,
			 uint64_t seq, const struct nrma_key_slot *slot)
{
	uint64_t w[NRMA_KEY_SLOT_WORDS];

	memcpy(w, slot, sizeof(w));
	proto_key_stream(key, seq, w, out->words);
	out->mac = proto_key_mac(key, seq, w);
}

enum nrma_key_verdict nrma_proto_key_unseal(const void *buf, uint64_t key,
					    struct nrma_key_slot *out)
{
	struct nrma_key_sealed s;
	uint64_t w[NRMA_KEY_SLOT_WORDS];

	memcpy(&s, buf, sizeof(s));
	if (s.seq != s.seq_end || s.seq % 2)
		return NRMA_KEY_TORN;
	proto_key_stream(key, s.seq, s.words, w);
	if (!key || s.mac != proto_key_mac(key, s.seq, w))
		return NRMA_KEY_ABSENT;
	memcpy(out, w, sizeof(*out));
	return NRMA_KEY_VALID;
}

int nrma_proto_key_slot_target(const struct nrma_key_slot *slot, bool virt_addr,
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

int nrma_proto_hdr_check(const void *buf, size_t len)
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
	case NRMA_HDR_SEG:
		return !hdr->seg_count && body && hdr->len <= UINT32_MAX &&
				       hdr->seg_offset + body <= hdr->len ?
			       0 :
			       -FI_EINVAL;
	default:
		return -FI_EINVAL;
	}
}
