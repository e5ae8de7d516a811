/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Unit tests for the wire format (prov/nrma/nrma_proto.c): connection
 * private data as sent and as checked on arrival, and the MR keys that
 * name a notification cell (prov/nrma/nrma_notify.h).
 */
#include "nrma_test.h"

#include <arpa/inet.h>

#include "nrma_notify.h"
#include "nrma_proto.h"

static void test_cm_data_roundtrip(void **state)
{
	struct sockaddr_in name = make_sin("10.9.9.1", 4242);
	const struct nrma_cm_data *parsed;
	struct nrma_cm_data data;

	(void) state;
	nrma_cm_data_init(&data, &name, 0xabcd, NRMA_REJECT_COLLISION);
	parsed = nrma_cm_data_parse(&data, sizeof(data));
	assert_ptr_equal(parsed, &data);
	assert_int_equal(nrma_cm_data_version(parsed), NRMA_PROTOCOL_VERSION);
	assert_int_equal(nrma_cm_data_reason(parsed), NRMA_REJECT_COLLISION);
	assert_int_equal(parsed->notify_rkey, 0xabcd);
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
	nrma_cm_data_init(&data, &name, 0, NRMA_REJECT_NONE);
	assert_null(nrma_cm_data_parse(NULL, sizeof(data)));
	assert_null(nrma_cm_data_parse(&data, sizeof(data) - 1));
	assert_null(nrma_cm_data_parse(&data, 0));
	assert_null(nrma_cm_data_parse(big, sizeof(big)));
	data.magic ^= htonl(1);
	assert_null(nrma_cm_data_parse(&data, sizeof(data)));
	/* padding after it (IB rounds private data up) is fine */
	data.magic ^= htonl(1);
	memcpy(big, &data, sizeof(data));
	assert_non_null(nrma_cm_data_parse(big, sizeof(big)));
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
	assert_int_equal(nrma_hdr_check(hdr, sizeof(*hdr) + 100), 0);
	/* the payload must be what the header says */
	assert_int_equal(nrma_hdr_check(hdr, sizeof(*hdr) + 99), -FI_EINVAL);
	assert_int_equal(nrma_hdr_check(hdr, sizeof(*hdr) + 101), -FI_EINVAL);
	assert_int_equal(nrma_hdr_check(hdr, sizeof(*hdr) - 1), -FI_EINVAL);
	assert_int_equal(nrma_hdr_check(hdr, 0), -FI_EINVAL);
	hdr->flags |= 1 << 7;
	assert_int_equal(nrma_hdr_check(hdr, sizeof(*hdr) + 100), -FI_EINVAL);
	hdr->flags = NRMA_HDR_NACK; /* only an ACK says that */
	assert_int_equal(nrma_hdr_check(hdr, sizeof(*hdr) + 100), -FI_EINVAL);
	hdr->flags = 0;
	hdr->seg_count = 1;
	assert_int_equal(nrma_hdr_check(hdr, sizeof(*hdr) + 100), -FI_EINVAL);
	*hdr = (struct nrma_hdr){ .op = NRMA_HDR_ACK, .token = 5 };
	assert_int_equal(nrma_hdr_check(hdr, sizeof(*hdr)), 0);
	hdr->flags = NRMA_HDR_NACK;
	assert_int_equal(nrma_hdr_check(hdr, sizeof(*hdr)), 0);
	hdr->flags = NRMA_HDR_ACK_REQ;
	assert_int_equal(nrma_hdr_check(hdr, sizeof(*hdr)), -FI_EINVAL);
	hdr->flags = 0;
	assert_int_equal(nrma_hdr_check(hdr, sizeof(*hdr) + 8), -FI_EINVAL);
	hdr->op = 0;
	assert_int_equal(nrma_hdr_check(hdr, sizeof(*hdr)), -FI_EINVAL);
	hdr->op = NRMA_HDR_ACK + 1;
	assert_int_equal(nrma_hdr_check(hdr, sizeof(*hdr)), -FI_EINVAL);
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
		assert_int_equal(nrma_hdr_check(hdr, len), 0);
		assert_int_equal(nrma_hdr_check(hdr, len - 1), -FI_EINVAL);
		assert_int_equal(nrma_hdr_check(hdr, len + 1), -FI_EINVAL);
		hdr->len++; /* segments that do not add up */
		assert_int_equal(nrma_hdr_check(hdr, len), -FI_EINVAL);
	}
	/* more segments than any receive could take, or none */
	len = msg_rndv(buf, lens, NRMA_IOV_LIMIT);
	hdr->seg_count = NRMA_IOV_LIMIT + 1;
	assert_int_equal(
		nrma_hdr_check(hdr, len + sizeof(struct nrma_rndv_seg)),
		-FI_EINVAL);
	len = msg_rndv(buf, lens, 0);
	assert_int_equal(nrma_hdr_check(hdr, len), -FI_EINVAL);
	/* an empty segment, and lengths whose sum wraps */
	len = msg_rndv(buf, (const uint64_t[]){ 8, 0 }, 2);
	assert_int_equal(nrma_hdr_check(hdr, len), -FI_EINVAL);
	len = msg_rndv(buf, huge, 2);
	assert_int_equal(hdr->len, 1);
	assert_int_equal(nrma_hdr_check(hdr, len), -FI_EINVAL);
}

static void test_mr_key(void **state)
{
	uint64_t key = nrma_mr_key(0x12345678, 0x9abcdef0);

	(void) state;
	assert_int_equal(key, 0x9abcdef012345678ULL);
	assert_int_equal(nrma_mr_key_rkey(key), 0x12345678);
	assert_int_equal(nrma_mr_key_cell(key), 0x9abcdef0);
	/* without a cell the key is the plain rkey */
	assert_int_equal(nrma_mr_key(7, 0), 7);
	assert_int_equal(nrma_mr_key_cell(7), 0);
	assert_int_equal(nrma_mr_key_rkey(UINT64_MAX), UINT32_MAX);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cm_data_roundtrip),
		cmocka_unit_test(test_cm_data_rejects_foreign),
		cmocka_unit_test(test_hdr_eager_and_ack),
		cmocka_unit_test(test_hdr_rndv),
		cmocka_unit_test(test_mr_key),
	};

	return cmocka_run_group_tests_name("nrma_proto", tests, NULL, NULL);
}
