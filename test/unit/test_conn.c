/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Unit tests for the connection table and the rule that settles
 * simultaneous connects (prov/nrma/nrma_conn.c), on connections built by
 * hand: no rdmacm.
 */
#include "nrma_test.h"

#include "nrma_cm.h"

static struct nrma_conn conn_make(const char *ip, uint16_t port,
				  enum nrma_conn_state state, bool outgoing)
{
	return (struct nrma_conn){
		.peer = make_sin(ip, port),
		.state = state,
		.outgoing = outgoing,
		.fi_addr = FI_ADDR_NOTAVAIL,
	};
}

static void test_by_addr(void **state)
{
	struct nrma_conn_table t;
	struct nrma_conn a =
		conn_make("10.0.0.1", 1, NRMA_CONN_CONNECTED, true);
	struct nrma_conn b =
		conn_make("10.0.0.2", 1, NRMA_CONN_CONNECTED, true);

	(void) state;
	nrma_conn_table_init(&t);
	nrma_conn_table_add(&t, &a);
	nrma_conn_table_add(&t, &b);
	assert_null(nrma_conn_table_by_addr(&t, 0));
	assert_int_equal(nrma_conn_table_map(&t, &a, 3), 0);
	assert_int_equal(nrma_conn_table_map(&t, &b, 1000), 0);
	assert_int_equal(a.fi_addr, 3);
	assert_ptr_equal(nrma_conn_table_by_addr(&t, 3), &a);
	assert_ptr_equal(nrma_conn_table_by_addr(&t, 1000), &b);
	assert_null(nrma_conn_table_by_addr(&t, 4));
	assert_null(nrma_conn_table_by_addr(&t, FI_ADDR_NOTAVAIL));
	assert_int_equal(nrma_conn_table_map(&t, &a, FI_ADDR_NOTAVAIL),
			 -FI_EINVAL);
	nrma_conn_table_unmap(&t, &a);
	assert_null(nrma_conn_table_by_addr(&t, 3));
	assert_ptr_equal(nrma_conn_table_by_addr(&t, 1000), &b);
	/* unmapping a connection that lost its slot leaves the owner */
	assert_int_equal(nrma_conn_table_map(&t, &a, 1000), 0);
	b.fi_addr = 1000;
	nrma_conn_table_unmap(&t, &b);
	assert_ptr_equal(nrma_conn_table_by_addr(&t, 1000), &a);
	nrma_conn_table_fini(&t);
}

/* An fi_addr_t the AV took back leads nowhere, and only that one. */
static void test_unmap_addr(void **state)
{
	struct nrma_conn_table t;
	struct nrma_conn a =
		conn_make("10.0.0.1", 1, NRMA_CONN_CONNECTED, true);
	struct nrma_conn b =
		conn_make("10.0.0.2", 1, NRMA_CONN_CONNECTED, true);

	(void) state;
	nrma_conn_table_init(&t);
	nrma_conn_table_add(&t, &a);
	nrma_conn_table_add(&t, &b);
	/* The same peer at two fi_addr_t: a holds 5, 2 leads to it too. */
	assert_int_equal(nrma_conn_table_map(&t, &a, 2), 0);
	assert_int_equal(nrma_conn_table_map(&t, &a, 5), 0);
	assert_int_equal(nrma_conn_table_map(&t, &b, 7), 0);
	nrma_conn_table_unmap_addr(&t, &a, 2);
	assert_null(nrma_conn_table_by_addr(&t, 2));
	assert_ptr_equal(nrma_conn_table_by_addr(&t, 5), &a);
	assert_int_equal(a.fi_addr, 5);
	/* Not b's: nothing changes. */
	nrma_conn_table_unmap_addr(&t, &b, 5);
	assert_ptr_equal(nrma_conn_table_by_addr(&t, 5), &a);
	assert_int_equal(b.fi_addr, 7);
	nrma_conn_table_unmap_addr(&t, &a, 5);
	assert_null(nrma_conn_table_by_addr(&t, 5));
	assert_int_equal(a.fi_addr, FI_ADDR_NOTAVAIL);
	assert_ptr_equal(nrma_conn_table_by_addr(&t, 7), &b);
	nrma_conn_table_fini(&t);
}

static void test_by_qp(void **state)
{
	struct nrma_conn_table t;
	struct nrma_conn a =
		conn_make("10.0.0.1", 1, NRMA_CONN_CONNECTED, true);
	struct nrma_verbs_qp *fake_qp = (struct nrma_verbs_qp *) &a;

	(void) state;
	nrma_conn_table_init(&t);
	nrma_conn_table_add(&t, &a);
	a.qp = fake_qp;
	assert_int_equal(nrma_conn_table_map_qp(&t, &a, 77), 0);
	assert_int_equal(a.qp_num, 77);
	assert_ptr_equal(nrma_conn_table_by_qp(&t, 77), &a);
	assert_null(nrma_conn_table_by_qp(&t, 78));
	nrma_conn_table_unmap(&t, &a);
	assert_null(nrma_conn_table_by_qp(&t, 77));
	nrma_conn_table_fini(&t);
}

static void test_by_name(void **state)
{
	struct nrma_conn_table t;
	struct nrma_conn failed =
		conn_make("10.0.0.1", 5, NRMA_CONN_FAILED, true);
	struct nrma_conn self =
		conn_make("10.0.0.1", 5, NRMA_CONN_CONNECTED, false);
	struct nrma_conn live =
		conn_make("10.0.0.1", 5, NRMA_CONN_CONNECTING, false);
	struct nrma_conn tx_ctx =
		conn_make("10.0.0.1", 5, NRMA_CONN_CONNECTED, false);
	struct sockaddr_in name = make_sin("10.0.0.1", 5);
	struct sockaddr_in other_port = make_sin("10.0.0.1", 6);

	(void) state;
	self.loopback = true;
	nrma_conn_table_init(&t);
	tx_ctx.peer_ctx = 2; /* a scalable endpoint's transmit context 1 */
	nrma_conn_table_add(&t, &failed);
	nrma_conn_table_add(&t, &self);
	nrma_conn_table_add(&t, &tx_ctx);
	assert_null(nrma_conn_table_by_name(&t, &name, 0));
	nrma_conn_table_add(&t, &live);
	assert_ptr_equal(nrma_conn_table_by_name(&t, &name, 0), &live);
	assert_ptr_equal(nrma_conn_table_by_name(&t, &name, 2), &tx_ctx);
	assert_null(nrma_conn_table_by_name(&t, &name, 1));
	assert_null(nrma_conn_table_by_name(&t, &other_port, 0));
	nrma_conn_table_fini(&t);
}

/*
 * Both ends of a simultaneous connect see the other's request; exactly
 * one of them must let it win, whatever the order of names.
 */
static void test_collision_rule(void **state)
{
	const char *ips[][2] = {
		{ "10.0.0.1", "10.0.0.2" },
		{ "10.0.0.2", "10.0.0.1" },
		{ "10.0.0.9", "10.0.1.0" },
		{ "10.0.0.1", "10.0.0.1" },
	};

	(void) state;
	for (size_t i = 0; i < ARRAY_SIZE(ips); i++) {
		struct sockaddr_in x = make_sin(ips[i][0], 1000);
		struct sockaddr_in y = make_sin(ips[i][1], i == 3 ? 999 : 1000);
		struct nrma_conn x_to_y = { .peer = y,
					    .outgoing = true,
					    .state = NRMA_CONN_CONNECTING };
		struct nrma_conn y_to_x = { .peer = x,
					    .outgoing = true,
					    .state = NRMA_CONN_CONNECTING };
		enum nrma_conn_verdict vx, vy;
		bool x_takes, y_takes;

		vx = nrma_conn_request_verdict(&x, &x_to_y);
		vy = nrma_conn_request_verdict(&y, &y_to_x);
		x_takes = vx == NRMA_CONN_ACCEPT;
		y_takes = vy == NRMA_CONN_ACCEPT;
		assert_true(x_takes != y_takes);
		assert_int_equal(x_takes ? vy : vx, NRMA_CONN_COLLISION);
		/* the larger name gives in to the smaller one's request */
		assert_int_equal(x_takes, nrma_addr_cmp(&x, &y) > 0);
	}
}

static void test_request_verdict_otherwise(void **state)
{
	struct sockaddr_in self = make_sin("10.0.0.1", 1000);
	struct nrma_conn incoming =
		conn_make("10.0.0.2", 1, NRMA_CONN_CONNECTING, false);
	struct nrma_conn up =
		conn_make("10.0.0.2", 1, NRMA_CONN_CONNECTED, true);

	(void) state;
	assert_int_equal(nrma_conn_request_verdict(&self, NULL),
			 NRMA_CONN_ACCEPT);
	/* a connection that is up is never torn down by a request: the
	 * requester may be anyone claiming the peer's name */
	assert_int_equal(nrma_conn_request_verdict(&self, &up), NRMA_CONN_BUSY);
	up.outgoing = false;
	assert_int_equal(nrma_conn_request_verdict(&self, &up), NRMA_CONN_BUSY);
	/* an accepted connection still coming up is not replaced */
	assert_int_equal(nrma_conn_request_verdict(&self, &incoming),
			 NRMA_CONN_COLLISION);
}

/* A connection's clock runs only while it is busy and nothing ends. */
static void test_stalled(void **state)
{
	struct nrma_conn c =
		conn_make("10.0.0.1", 1, NRMA_CONN_CONNECTED, true);

	(void) state;
	c.stall_since = -1;
	/* idle for ever: never stalled, and busy later starts afresh */
	assert_false(nrma_conn_stalled(&c, false, 0, 100));
	assert_false(nrma_conn_stalled(&c, false, 100000, 100));
	assert_false(nrma_conn_stalled(&c, true, 200000, 100));
	assert_false(nrma_conn_stalled(&c, true, 200099, 100));
	assert_true(nrma_conn_stalled(&c, true, 200100, 100));
	/* an end starts the clock again */
	c.sq_done++;
	assert_false(nrma_conn_stalled(&c, true, 200150, 100));
	assert_false(nrma_conn_stalled(&c, true, 200249, 100));
	c.sq_done++;
	assert_false(nrma_conn_stalled(&c, true, 200300, 100));
	assert_true(nrma_conn_stalled(&c, true, 200400, 100));
	/* idle in between: the old clock is gone */
	assert_false(nrma_conn_stalled(&c, false, 200500, 100));
	assert_false(nrma_conn_stalled(&c, true, 300000, 100));
	assert_true(nrma_conn_stalled(&c, true, 300100, 100));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_by_addr),
		cmocka_unit_test(test_unmap_addr),
		cmocka_unit_test(test_by_qp),
		cmocka_unit_test(test_stalled),
		cmocka_unit_test(test_by_name),
		cmocka_unit_test(test_collision_rule),
		cmocka_unit_test(test_request_verdict_otherwise),
	};

	return cmocka_run_group_tests_name("nrma_conn", tests, NULL, NULL);
}
