/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Unit tests for the wire format (prov/nrma/nrma_proto.c): connection
 * private data as sent and as checked on arrival, and the MR keys that
 * name a notification cell (prov/nrma/nrma_notify.h).
 */
#include "nrma_test.h"

#include <arpa/inet.h>

#include "nrma_proto.h"

static void test_cm_data_roundtrip(void **state)
{
	struct sockaddr_in name = make_sin("10.9.9.1", 4242);
	const struct nrma_cm_data *parsed;
	struct nrma_cm_data data;

	(void) state;
	nrma_proto_cm_data_init(&data, &name, 0xabcd, NRMA_REJECT_COLLISION);
	parsed = nrma_proto_cm_data_parse(&data, sizeof(data));
	assert_ptr_equal(parsed, &data);
	assert_int_equal(nrma_proto_cm_data_version(parsed),
			 NRMA_PROTOCOL_VERSION);
	assert_int_equal(nrma_proto_cm_data_reason(parsed),
			 NRMA_REJECT_COLLISION);
	assert_int_equal(parsed->grant.notify_rkey, 0xabcd);
	assert_int_equal(nrma_addr_cmp(&parsed->name, &name), 0);
	/* the header fields travel in network byte order */
	assert_int_equal(ntohl(data.magic), NRMA_CM_MAGIC);
	assert_int_equal(ntohs(data.version), NRMA_PROTOCOL_VERSION);
}

static void test_cm_data_rejects_foreign(void **state)
{
	struct sockaddr_in name = make_sin("10.9.9.1", 1);
	struct nrma_cm_data data;
	char big[64] = { 0 };

	(void) state;
	nrma_proto_cm_data_init(&data, &name, 0, NRMA_REJECT_NONE);
	assert_null(nrma_proto_cm_data_parse(NULL, sizeof(data)));
	assert_null(nrma_proto_cm_data_parse(&data, sizeof(data) - 1));
	assert_null(nrma_proto_cm_data_parse(&data, 0));
	assert_null(nrma_proto_cm_data_parse(big, sizeof(big)));
	data.magic ^= htonl(1);
	assert_null(nrma_proto_cm_data_parse(&data, sizeof(data)));
	/* padding after it (IB rounds private data up) is fine */
	data.magic ^= htonl(1);
	memcpy(big, &data, sizeof(data));
	assert_non_null(nrma_proto_cm_data_parse(big, sizeof(big)));
}

/* FI_EP_MSG data: nrma's header and the application's bytes. */
static void test_cm_msg_data_roundtrip(void **state)
{
	struct nrma_cm_grant grant = { .notify_rkey = 1,
				       .credit_rkey = 2,
				       .credits_msg = 3,
				       .credits_ctl = 4 };
	uint8_t buf[NRMA_CM_REQ_DATA_MAX], app[NRMA_CM_MSG_APP_MAX + 1];
	const struct nrma_cm_msg_data *parsed;
	size_t len;

	(void) state;
	for (size_t i = 0; i < sizeof(app); i++)
		app[i] = (uint8_t) i;
	len = nrma_proto_msg_data_init(buf, &grant, app, 5);
	assert_int_equal(len, sizeof(struct nrma_cm_msg_data) + 5);
	parsed = nrma_proto_msg_data_parse(buf, len);
	assert_non_null(parsed);
	assert_int_equal(parsed->app_len, 5);
	assert_memory_equal(parsed->app, app, 5);
	assert_true(nrma_proto_grant_valid(&parsed->grant));
	/* No credits yet is a grant: more come to its cell. */
	grant.credits_msg = grant.credits_ctl = 0;
	assert_true(nrma_proto_grant_valid(&grant));
	grant.credit_rkey = 0;
	assert_false(nrma_proto_grant_valid(&grant));
	/* At most NRMA_CM_MSG_APP_MAX bytes: a request's private data. */
	len = nrma_proto_msg_data_init(buf, NULL, app, sizeof(app));
	assert_int_equal(len, NRMA_CM_REQ_DATA_MAX);
	parsed = nrma_proto_msg_data_parse(buf, len);
	assert_int_equal(parsed->app_len, NRMA_CM_MSG_APP_MAX);
	assert_false(nrma_proto_grant_valid(&parsed->grant));
}

static void test_cm_msg_data_rejects(void **state)
{
	uint8_t buf[NRMA_CM_REQ_DATA_MAX];
	struct sockaddr_in name = make_sin("10.9.9.1", 1);
	struct nrma_cm_data rdm;
	size_t len;

	(void) state;
	len = nrma_proto_msg_data_init(buf, NULL, "abcd", 4);
	assert_null(
		nrma_proto_msg_data_parse(buf, len - 1)); /* app cut short */
	assert_null(nrma_proto_msg_data_parse(NULL, len));
	buf[2]++; /* another version */
	assert_null(nrma_proto_msg_data_parse(buf, len));
	buf[2]--;
	buf[3] = NRMA_CM_MSG_APP_MAX + 1;
	assert_null(nrma_proto_msg_data_parse(buf, sizeof(buf)));
	/* RDM data is not MSG data, nor the other way round. */
	nrma_proto_cm_data_init(&rdm, &name, 0, NRMA_REJECT_NONE);
	assert_null(nrma_proto_msg_data_parse(&rdm, sizeof(rdm)));
	len = nrma_proto_msg_data_init(buf, NULL, NULL, 0);
	memset(buf + len, 0, sizeof(buf) - len);
	assert_null(nrma_proto_cm_data_parse(buf, sizeof(buf)));
}

static size_t msg_rndv(void *buf, const uint64_t *lens, size_t n)
{
	struct nrma_hdr *hdr = buf;
	struct nrma_rndv_seg *seg = (void *) (hdr + 1);

	*hdr = (struct nrma_hdr){ .op = NRMA_HDR_RNDV, .seg_count = n };
	for (size_t i = 0; i < n; i++) {
		seg[i] = (struct nrma_rndv_seg){ .addr = 4096 * i,
						 .len = lens[i],
						 .rkey = 9 };
		hdr->len += lens[i];
	}
	return sizeof(*hdr) + n * sizeof(*seg);
}

static void test_hdr_eager_and_ack(void **state)
{
	uint64_t buf[64] = { 0 };
	struct nrma_hdr *hdr = (void *) buf;

	(void) state;
	*hdr = (struct nrma_hdr){ .op = NRMA_HDR_EAGER,
				  .len = 100,
				  .flags = NRMA_HDR_TAGGED | NRMA_HDR_CQ_DATA |
					   NRMA_HDR_ACK_REQ };
	assert_int_equal(nrma_proto_hdr_check(hdr, sizeof(*hdr) + 100), 0);
	/* the payload must be what the header says */
	assert_int_equal(nrma_proto_hdr_check(hdr, sizeof(*hdr) + 99),
			 -FI_EINVAL);
	assert_int_equal(nrma_proto_hdr_check(hdr, sizeof(*hdr) + 101),
			 -FI_EINVAL);
	assert_int_equal(nrma_proto_hdr_check(hdr, sizeof(*hdr) - 1),
			 -FI_EINVAL);
	assert_int_equal(nrma_proto_hdr_check(hdr, 0), -FI_EINVAL);
	hdr->flags |= 1 << 7;
	assert_int_equal(nrma_proto_hdr_check(hdr, sizeof(*hdr) + 100),
			 -FI_EINVAL);
	hdr->flags = NRMA_HDR_NACK; /* only an ACK says that */
	assert_int_equal(nrma_proto_hdr_check(hdr, sizeof(*hdr) + 100),
			 -FI_EINVAL);
	hdr->flags = 0;
	hdr->seg_count = 1;
	assert_int_equal(nrma_proto_hdr_check(hdr, sizeof(*hdr) + 100),
			 -FI_EINVAL);
	*hdr = (struct nrma_hdr){ .op = NRMA_HDR_ACK, .token = 5 };
	assert_int_equal(nrma_proto_hdr_check(hdr, sizeof(*hdr)), 0);
	hdr->flags = NRMA_HDR_NACK;
	assert_int_equal(nrma_proto_hdr_check(hdr, sizeof(*hdr)), 0);
	hdr->flags = NRMA_HDR_ACK_REQ;
	assert_int_equal(nrma_proto_hdr_check(hdr, sizeof(*hdr)), -FI_EINVAL);
	hdr->flags = 0;
	assert_int_equal(nrma_proto_hdr_check(hdr, sizeof(*hdr) + 8),
			 -FI_EINVAL);
	hdr->op = 0;
	assert_int_equal(nrma_proto_hdr_check(hdr, sizeof(*hdr)), -FI_EINVAL);
	hdr->op = NRMA_HDR_SEG + 1;
	assert_int_equal(nrma_proto_hdr_check(hdr, sizeof(*hdr)), -FI_EINVAL);
}

/* A segment's payload lies within its message; where is the receiver's. */
static void test_hdr_seg(void **state)
{
	uint64_t buf[64] = { 0 };
	struct nrma_hdr *hdr = (void *) buf;

	(void) state;
	*hdr = (struct nrma_hdr){ .op = NRMA_HDR_SEG,
				  .len = 300,
				  .flags = NRMA_HDR_TAGGED | NRMA_HDR_ACK_REQ };
	assert_int_equal(nrma_proto_hdr_check(hdr, sizeof(*hdr) + 100), 0);
	hdr->seg_offset = 200; /* the last piece */
	assert_int_equal(nrma_proto_hdr_check(hdr, sizeof(*hdr) + 100), 0);
	/* past the message's end, or empty */
	assert_int_equal(nrma_proto_hdr_check(hdr, sizeof(*hdr) + 101),
			 -FI_EINVAL);
	hdr->seg_offset = UINT32_MAX;
	assert_int_equal(nrma_proto_hdr_check(hdr, sizeof(*hdr) + 1),
			 -FI_EINVAL);
	hdr->seg_offset = 0;
	assert_int_equal(nrma_proto_hdr_check(hdr, sizeof(*hdr)), -FI_EINVAL);
	/* a length past what an offset can say */
	hdr->len = (uint64_t) UINT32_MAX + 1;
	assert_int_equal(nrma_proto_hdr_check(hdr, sizeof(*hdr) + 100),
			 -FI_EINVAL);
	/* no rendezvous segments, no NACK */
	hdr->len = 300;
	hdr->seg_count = 1;
	assert_int_equal(nrma_proto_hdr_check(hdr, sizeof(*hdr) + 100),
			 -FI_EINVAL);
	hdr->seg_count = 0;
	hdr->flags = NRMA_HDR_NACK;
	assert_int_equal(nrma_proto_hdr_check(hdr, sizeof(*hdr) + 100),
			 -FI_EINVAL);
}

static void test_hdr_rndv(void **state)
{
	uint64_t buf[64] = { 0 };
	struct nrma_hdr *hdr = (void *) buf;
	const uint64_t lens[] = { 10000, 1, 70000, 5 };
	const uint64_t huge[] = { UINT64_MAX, 2 };
	size_t len;

	(void) state;
	for (size_t n = 1; n <= NRMA_IOV_LIMIT; n++) {
		len = msg_rndv(buf, lens, n);
		assert_int_equal(nrma_proto_hdr_check(hdr, len), 0);
		assert_int_equal(nrma_proto_hdr_check(hdr, len - 1),
				 -FI_EINVAL);
		assert_int_equal(nrma_proto_hdr_check(hdr, len + 1),
				 -FI_EINVAL);
		hdr->len++; /* segments that do not add up */
		assert_int_equal(nrma_proto_hdr_check(hdr, len), -FI_EINVAL);
	}
	/* more segments than any receive could take, or none */
	len = msg_rndv(buf, lens, NRMA_IOV_LIMIT);
	hdr->seg_count = NRMA_IOV_LIMIT + 1;
	assert_int_equal(
		nrma_proto_hdr_check(hdr, len + sizeof(struct nrma_rndv_seg)),
		-FI_EINVAL);
	len = msg_rndv(buf, lens, 0);
	assert_int_equal(nrma_proto_hdr_check(hdr, len), -FI_EINVAL);
	/* an empty segment, and lengths whose sum wraps */
	len = msg_rndv(buf, (const uint64_t[]){ 8, 0 }, 2);
	assert_int_equal(nrma_proto_hdr_check(hdr, len), -FI_EINVAL);
	len = msg_rndv(buf, huge, 2);
	assert_int_equal(hdr->len, 1);
	assert_int_equal(nrma_proto_hdr_check(hdr, len), -FI_EINVAL);
}

static void test_key_layout(void **state)
{
	(void) state;
	assert_int_equal(nrma_key_make(0, 0), 1);
	assert_int_equal(nrma_key_make(5, 3), 3ULL << 16 | 6);
	assert_int_equal(nrma_key_index(nrma_key_make(5, 3)), 5);
	assert_int_equal(nrma_key_index(nrma_key_make(NRMA_KEY_SLOTS_MAX - 1,
						      NRMA_KEY_SECRET_MAX)),
			 NRMA_KEY_SLOTS_MAX - 1);
	/* The secret takes the 48 bits above the index, all of them. */
	assert_int_equal(nrma_key_make(0, UINT64_MAX) >> 16,
			 NRMA_KEY_SECRET_MAX);
	/* Key 0 names no slot; a slot used again has a new key. */
	assert_int_equal(nrma_key_index(0), UINT32_MAX);
	assert_true(nrma_key_make(5, 4) != nrma_key_make(5, 3));
}

/*
 * A key the application picked goes on the wire as its slot's, sealed
 * with a secret all know; a provider key, as it is.
 */
static void test_key_wire(void **state)
{
	uint64_t top = NRMA_KEY_SLOTS_MAX - 1;

	(void) state;
	assert_int_equal(nrma_key_index(nrma_key_wire(0)), 0);
	assert_int_equal(nrma_key_index(nrma_key_wire(1)), 1);
	assert_int_equal(nrma_key_index(nrma_key_wire(top)), top);
	assert_int_equal(nrma_key_wire(1),
			 nrma_key_make(1, NRMA_KEY_APP_SECRET));
	assert_true(nrma_key_wire(0) > NRMA_KEY_SLOTS_MAX);
	/* Past the slots: as it is, naming no slot a key of ours has. */
	assert_int_equal(nrma_key_wire(NRMA_KEY_SLOTS_MAX), NRMA_KEY_SLOTS_MAX);
	assert_int_equal(nrma_key_wire(nrma_key_make(3, 77)),
			 nrma_key_make(3, 77));
	assert_int_equal(nrma_key_wire(nrma_key_wire(7)), nrma_key_wire(7));
}

#define KEY nrma_key_make(6, 0x123456789abcULL)

static const struct nrma_key_slot plain = {
	.addr = 0x10000,
	.len = 4096,
	.rkey = 0x1234,
	.cell_rkey = 0x5678,
	.access = NRMA_KEY_REMOTE_WRITE,
};

static struct nrma_key_sealed sealed_of(uint64_t key, uint64_t seq)
{
	struct nrma_key_sealed s = { .seq = seq, .seq_end = seq };

	nrma_proto_key_seal(&s, key, seq, &plain);
	return s;
}

static void test_key_unseal(void **state)
{
	struct nrma_key_sealed s = sealed_of(KEY, 2);
	struct nrma_key_slot out;
	char raw[sizeof(s) + 1];

	(void) state;
	/* From an unaligned buffer, as a read lands in a bounce buffer. */
	memcpy(raw + 1, &s, sizeof(s));
	assert_int_equal(nrma_proto_key_unseal(raw + 1, KEY, &out),
			 NRMA_KEY_VALID);
	assert_memory_equal(&out, &plain, sizeof(plain));
	/* Another secret for the same slot, key 0, an empty slot: absent. */
	assert_int_equal(nrma_proto_key_unseal(&s, KEY ^ 1ULL << 16, &out),
			 NRMA_KEY_ABSENT);
	assert_int_equal(nrma_proto_key_unseal(&s, 0, &out), NRMA_KEY_ABSENT);
	memset(s.words, 0, sizeof(s.words));
	s.mac = 0;
	assert_int_equal(nrma_proto_key_unseal(&s, KEY, &out), NRMA_KEY_ABSENT);
	/* Any bit of a field changed behind the mac: not a slot of KEY's. */
	for (size_t w = 0; w < NRMA_KEY_SLOT_WORDS; w++) {
		s = sealed_of(KEY, 2);
		s.words[w] ^= 1ULL << (7 * w);
		assert_int_equal(nrma_proto_key_unseal(&s, KEY, &out),
				 NRMA_KEY_ABSENT);
	}
	/* Caught while it changed: read again. */
	s = sealed_of(KEY, 2);
	s.seq_end = 4;
	assert_int_equal(nrma_proto_key_unseal(&s, KEY, &out), NRMA_KEY_TORN);
	s.seq = s.seq_end = 3;
	assert_int_equal(nrma_proto_key_unseal(&s, KEY, &out), NRMA_KEY_TORN);
}

/* The table, as any connected peer reads it, shows no field in clear. */
static void test_key_sealed_hides(void **state)
{
	struct nrma_key_sealed a = sealed_of(KEY, 2), b = sealed_of(KEY, 4);
	uint64_t w[NRMA_KEY_SLOT_WORDS];

	(void) state;
	memcpy(w, &plain, sizeof(w));
	for (size_t i = 0; i < NRMA_KEY_SLOT_WORDS; i++) {
		for (size_t j = 0; j < NRMA_KEY_SLOT_WORDS; j++)
			assert_true(a.words[i] != w[j]);
		/* A new sequence, a new stream: changes do not show. */
		assert_true(a.words[i] != b.words[i]);
		assert_true((uint32_t) a.words[i] != plain.rkey &&
			    (uint32_t) (a.words[i] >> 32) != plain.rkey);
	}
	/* Another key of the same slot seals to other words. */
	b = sealed_of(KEY ^ 1ULL << 40, 2);
	assert_true(memcmp(a.words, b.words, sizeof(a.words)) != 0);
}

static void test_key_slot_target(void **state)
{
	struct nrma_key_slot slot = plain;
	uint64_t raddr = 0;

	(void) state;
	/* By offset, up to the end and no further. */
	assert_int_equal(nrma_proto_key_slot_target(&slot, false, 0, 4096,
						    NRMA_KEY_REMOTE_WRITE,
						    &raddr),
			 0);
	assert_int_equal(raddr, 0x10000);
	assert_int_equal(nrma_proto_key_slot_target(&slot, false, 4088, 8,
						    NRMA_KEY_REMOTE_WRITE,
						    &raddr),
			 0);
	assert_int_equal(raddr, 0x10000 + 4088);
	assert_int_equal(nrma_proto_key_slot_target(&slot, false, 4096, 0,
						    NRMA_KEY_REMOTE_WRITE,
						    &raddr),
			 0);
	assert_int_equal(nrma_proto_key_slot_target(&slot, false, 4089, 8,
						    NRMA_KEY_REMOTE_WRITE,
						    &raddr),
			 -FI_EACCES);
	assert_int_equal(nrma_proto_key_slot_target(&slot, false, 0, 4097,
						    NRMA_KEY_REMOTE_WRITE,
						    &raddr),
			 -FI_EACCES);
	/* Lengths and offsets that would wrap. */
	assert_int_equal(nrma_proto_key_slot_target(&slot, false, UINT64_MAX, 2,
						    NRMA_KEY_REMOTE_WRITE,
						    &raddr),
			 -FI_EACCES);
	assert_int_equal(nrma_proto_key_slot_target(&slot, false, 8, UINT64_MAX,
						    NRMA_KEY_REMOTE_WRITE,
						    &raddr),
			 -FI_EACCES);
	/* By virtual address: inside the region only. */
	assert_int_equal(nrma_proto_key_slot_target(&slot, true, 0x10008, 8,
						    NRMA_KEY_REMOTE_WRITE,
						    &raddr),
			 0);
	assert_int_equal(raddr, 0x10008);
	assert_int_equal(nrma_proto_key_slot_target(&slot, true, 0xfff8, 8,
						    NRMA_KEY_REMOTE_WRITE,
						    &raddr),
			 -FI_EACCES);
	assert_int_equal(nrma_proto_key_slot_target(&slot, true, 0x10ff9, 8,
						    NRMA_KEY_REMOTE_WRITE,
						    &raddr),
			 -FI_EACCES);
	/* A region that wraps the address space is a peer's lie. */
	slot.addr = UINT64_MAX - 8;
	assert_int_equal(nrma_proto_key_slot_target(&slot, false, 0, 8,
						    NRMA_KEY_REMOTE_WRITE,
						    &raddr),
			 -FI_EACCES);
	slot = plain;
	/* A right the region does not give. */
	assert_int_equal(nrma_proto_key_slot_target(&slot, false, 0, 8,
						    NRMA_KEY_REMOTE_READ,
						    &raddr),
			 -FI_EACCES);
}

/* A notification set's slot: one aligned 8-byte word per operation. */
static void test_key_slot_notify(void **state)
{
	struct nrma_key_slot slot = { .addr = 0,
				      .len = 16 * 8,
				      .access = NRMA_KEY_REMOTE_NOTIFY };
	uint64_t raddr = 1;

	(void) state;
	assert_int_equal(nrma_proto_key_slot_target(&slot, false, 15 * 8, 8,
						    NRMA_KEY_REMOTE_NOTIFY,
						    &raddr),
			 0);
	assert_int_equal(raddr, 15 * 8);
	/* Past the last counter, not a whole word, not aligned. */
	assert_int_equal(nrma_proto_key_slot_target(&slot, false, 16 * 8, 8,
						    NRMA_KEY_REMOTE_NOTIFY,
						    &raddr),
			 -FI_EACCES);
	assert_int_equal(nrma_proto_key_slot_target(&slot, false, 0, 16,
						    NRMA_KEY_REMOTE_NOTIFY,
						    &raddr),
			 -FI_EACCES);
	assert_int_equal(nrma_proto_key_slot_target(&slot, false, 4, 8,
						    NRMA_KEY_REMOTE_NOTIFY,
						    &raddr),
			 -FI_EACCES);
	/* A peer's slot whose region starts off alignment. */
	slot.addr = 0x1004;
	assert_int_equal(nrma_proto_key_slot_target(&slot, false, 8, 8,
						    NRMA_KEY_REMOTE_NOTIFY,
						    &raddr),
			 -FI_EACCES);
	/* A set is no place for writes or reads, a region none for sets. */
	slot.addr = 0;
	assert_int_equal(nrma_proto_key_slot_target(&slot, false, 0, 8,
						    NRMA_KEY_REMOTE_WRITE,
						    &raddr),
			 -FI_EACCES);
	slot.access = NRMA_KEY_REMOTE_WRITE | NRMA_KEY_REMOTE_READ;
	assert_int_equal(nrma_proto_key_slot_target(&slot, false, 0, 8,
						    NRMA_KEY_REMOTE_NOTIFY,
						    &raddr),
			 -FI_EACCES);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cm_data_roundtrip),
		cmocka_unit_test(test_cm_data_rejects_foreign),
		cmocka_unit_test(test_cm_msg_data_roundtrip),
		cmocka_unit_test(test_cm_msg_data_rejects),
		cmocka_unit_test(test_hdr_eager_and_ack),
		cmocka_unit_test(test_hdr_seg),
		cmocka_unit_test(test_hdr_rndv),
		cmocka_unit_test(test_key_layout),
		cmocka_unit_test(test_key_wire),
		cmocka_unit_test(test_key_unseal),
		cmocka_unit_test(test_key_sealed_hides),
		cmocka_unit_test(test_key_slot_target),
		cmocka_unit_test(test_key_slot_notify),
	};

	return cmocka_run_group_tests_name("nrma_proto", tests, NULL, NULL);
}
