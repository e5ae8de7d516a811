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
		cmocka_unit_test(test_mr_key),
	};

	return cmocka_run_group_tests_name("nrma_proto", tests, NULL, NULL);
}
