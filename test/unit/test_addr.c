/* SPDX-License-Identifier: BSD-2-Clause */
/* Unit tests for endpoint names and address tables (src/nrma_addr.c). */
#include "nrma_test.h"

#include "nrma_addr.h"

static void test_addr_valid(void **state)
{
	struct sockaddr_in sin = make_sin("10.0.0.1", 80);
	struct sockaddr_in any = make_sin("0.0.0.0", 80);
	struct sockaddr_in noport = make_sin("10.0.0.1", 0);

	(void) state;
	assert_true(nrma_addr_valid(&sin, sizeof(sin)));
	assert_false(nrma_addr_valid(&sin, sizeof(sin) - 1));
	assert_false(nrma_addr_valid(NULL, sizeof(sin)));
	assert_false(nrma_addr_valid(&any, sizeof(any)));
	assert_false(nrma_addr_valid(&noport, sizeof(noport)));
	sin.sin_family = AF_INET6;
	assert_false(nrma_addr_valid(&sin, sizeof(sin)));
}

static void test_addr_str_and_cmp(void **state)
{
	struct sockaddr_in a = make_sin("10.0.0.2", 7),
			   b = make_sin("10.0.0.10", 7);
	struct sockaddr_in c = make_sin("10.0.0.2", 8);
	char buf[64];

	(void) state;
	assert_int_equal(nrma_addr_str(&a, buf, sizeof(buf)),
			 strlen("fi_sockaddr_in://10.0.0.2:7") + 1);
	assert_string_equal(buf, "fi_sockaddr_in://10.0.0.2:7");
	/* numeric order, not string order */
	assert_true(nrma_addr_cmp(&a, &b) < 0);
	assert_true(nrma_addr_cmp(&b, &a) > 0);
	assert_true(nrma_addr_cmp(&a, &c) < 0);
	assert_int_equal(nrma_addr_cmp(&c, &c), 0);
}

static void test_table(void **state)
{
	struct nrma_addr_table t;
	struct sockaddr_in a = make_sin("10.0.0.1", 1),
			   b = make_sin("10.0.0.2", 2);
	struct sockaddr_in bad = make_sin("10.0.0.3", 0), out;

	(void) state;
	nrma_addr_table_init(&t);
	assert_int_equal(nrma_addr_table_insert(&t, &a), 0);
	assert_int_equal(nrma_addr_table_insert(&t, &bad), -FI_EINVAL);
	assert_int_equal(nrma_addr_table_insert(&t, &b), 1);
	assert_int_equal(nrma_addr_table_insert(&t, &a), 2);
	assert_int_equal(nrma_addr_table_get(&t, 1, &out), 0);
	assert_int_equal(nrma_addr_cmp(&out, &b), 0);
	assert_int_equal(nrma_addr_table_get(&t, 3, &out), -FI_EINVAL);
	assert_int_equal(nrma_addr_table_find(&t, &a), 0);
	assert_true(nrma_addr_table_names(&t, 1, &b));
	assert_false(nrma_addr_table_names(&t, 1, &a));
	assert_false(nrma_addr_table_names(&t, FI_ADDR_NOTAVAIL, &a));
	/* removed entries name nothing */
	assert_int_equal(nrma_addr_table_remove(&t, 0), 0);
	assert_int_equal(nrma_addr_table_remove(&t, 0), -FI_EINVAL);
	assert_int_equal(nrma_addr_table_get(&t, 0, &out), -FI_EINVAL);
	assert_false(nrma_addr_table_names(&t, 0, &a));
	assert_int_equal(nrma_addr_table_find(&t, &a), 2);
	assert_int_equal(nrma_addr_table_find(&t, &bad), FI_ADDR_NOTAVAIL);
	nrma_addr_table_fini(&t);
}

/* fi_av(3): an address goes to the lowest unused index. */
static void test_table_reuse(void **state)
{
	struct nrma_addr_table t;
	struct sockaddr_in sin[5], c = make_sin("10.0.1.1", 9), out;

	(void) state;
	nrma_addr_table_init(&t);
	for (int i = 0; i < 5; i++) {
		sin[i] = make_sin("10.0.0.1", (uint16_t) (1 + i));
		assert_int_equal(nrma_addr_table_insert(&t, &sin[i]), i);
	}
	assert_int_equal(nrma_addr_table_remove(&t, 3), 0);
	assert_int_equal(nrma_addr_table_remove(&t, 1), 0);
	assert_int_equal(nrma_addr_table_insert(&t, &c), 1);
	assert_true(nrma_addr_table_names(&t, 1, &c));
	assert_int_equal(nrma_addr_table_insert(&t, &c), 3);
	assert_int_equal(nrma_addr_table_insert(&t, &c), 5);
	/* A removal below the last reuse is found again. */
	assert_int_equal(nrma_addr_table_remove(&t, 0), 0);
	assert_int_equal(nrma_addr_table_remove(&t, 4), 0);
	assert_int_equal(nrma_addr_table_insert(&t, &sin[4]), 0);
	assert_int_equal(nrma_addr_table_insert(&t, &sin[0]), 4);
	assert_int_equal(nrma_addr_table_get(&t, 4, &out), 0);
	assert_int_equal(nrma_addr_cmp(&out, &sin[0]), 0);
	assert_int_equal(nrma_addr_table_insert(&t, &sin[0]), 6);
	nrma_addr_table_fini(&t);
}

/* fi_getname(3) and fi_av_lookup(3) truncate what does not fit. */
static void test_addr_give(void **state)
{
	struct sockaddr_in sin = make_sin("10.0.0.1", 80);
	unsigned char buf[sizeof(sin) + 4];
	size_t len;

	(void) state;
	memset(buf, 0xa5, sizeof(buf));
	len = 6;
	assert_int_equal(nrma_addr_give(&sin, buf, &len), -FI_ETOOSMALL);
	assert_int_equal(len, sizeof(sin));
	assert_memory_equal(buf, &sin, 6);
	assert_int_equal(buf[6], 0xa5);
	len = 0;
	assert_int_equal(nrma_addr_give(&sin, NULL, &len), -FI_ETOOSMALL);
	assert_int_equal(len, sizeof(sin));
	len = sizeof(buf);
	assert_int_equal(nrma_addr_give(&sin, buf, &len), 0);
	assert_int_equal(len, sizeof(sin));
	assert_memory_equal(buf, &sin, sizeof(sin));
	assert_int_equal(buf[sizeof(sin)], 0xa5);
}

static void assert_sym_name(const char *node, size_t i, const char *want)
{
	char buf[32];

	assert_int_equal(nrma_addr_sym_name(node, i, buf, sizeof(buf)), 0);
	assert_string_equal(buf, want);
}

/* fi_av_insertsym's host names: the suffix counts, its width stays. */
static void test_sym_name(void **state)
{
	char small[6];

	(void) state;
	assert_sym_name("host10", 0, "host10");
	assert_sym_name("host10", 1, "host11");
	assert_sym_name("host09", 1, "host10");
	assert_sym_name("n001", 998, "n999");
	assert_sym_name("n001", 999, "n1000");
	assert_sym_name("node9", 1, "node10");
	assert_sym_name("rack2-7", 3, "rack2-10");
	assert_sym_name("42", 1, "43");
	assert_int_equal(nrma_addr_sym_name("host", 1, small, sizeof(small)),
			 -FI_EINVAL);
	assert_int_equal(nrma_addr_sym_name("", 0, small, sizeof(small)),
			 -FI_EINVAL);
	assert_int_equal(nrma_addr_sym_name("host9", 1, small, sizeof(small)),
			 -FI_EINVAL);
	assert_int_equal(nrma_addr_sym_name("host8", 1, small, sizeof(small)),
			 0);
	assert_string_equal(small, "host9");
}

static void test_table_grows(void **state)
{
	struct nrma_addr_table t;
	struct sockaddr_in out;

	(void) state;
	nrma_addr_table_init(&t);
	for (int i = 0; i < 1000; i++) {
		struct sockaddr_in sin = make_sin("10.0.0.1", 1 + i);

		assert_int_equal(nrma_addr_table_insert(&t, &sin), i);
	}
	assert_int_equal(nrma_addr_table_get(&t, 999, &out), 0);
	assert_int_equal(ntohs(out.sin_port), 1000);
	nrma_addr_table_fini(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_addr_valid),
		cmocka_unit_test(test_addr_str_and_cmp),
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_table_grows),
		cmocka_unit_test(test_table_reuse),
		cmocka_unit_test(test_addr_give),
		cmocka_unit_test(test_sym_name),
	};

	return cmocka_run_group_tests_name("nrma_addr", tests, NULL, NULL);
}
