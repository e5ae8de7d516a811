/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Unit tests for matching (prov/nrma/nrma_match.c): posted and
 * unexpected queues, tags, directed receives, FI_MULTI_RECV space,
 * cancel and claims.  Peers are plain pointers whose fi_addr_t a fake
 * callback tells.
 */
#include "nrma_test.h"

#include <rdma/fi_tagged.h>

#include "nrma_match.h"

#define RX_COUNT    8
#define UNEXP_COUNT 4

/* The held messages' entries, which their owner keeps. */
static struct nrma_unexp entries[UNEXP_COUNT];
static int owner_a, owner_b;

static struct nrma_unexp *hold_as(struct nrma_match *m, void *owner,
				  bool tagged, uint64_t tag, uint32_t buf,
				  uint32_t len, void *peer)
{
	struct nrma_unexp *u = &entries[buf % UNEXP_COUNT];

	*u = (struct nrma_unexp){
		.buf = buf, .len = len, .tag = tag, .peer = peer, .owner = owner
	};
	nrma_match_hold(m, u, tagged);
	return u;
}

static struct nrma_unexp *hold(struct nrma_match *m, bool tagged, uint64_t tag,
			       uint32_t buf, uint32_t len, void *peer)
{
	return hold_as(m, &owner_a, tagged, tag, buf, len, peer);
}

/* Two fake peers; the callback counts its calls. */
static int peer_a, peer_b;
static int peer_addr_calls;

static fi_addr_t fake_peer_addr(void *arg, void *peer)
{
	assert_ptr_equal(arg, &peer_addr_calls);
	peer_addr_calls++;
	if (peer == &peer_a)
		return 10;
	return peer == &peer_b ? 11 : FI_ADDR_NOTAVAIL;
}

static int match_setup(void **state)
{
	struct nrma_match *m = calloc(1, sizeof(*m));

	assert_non_null(m);
	assert_int_equal(
		nrma_match_init(m, RX_COUNT, fake_peer_addr, &peer_addr_calls),
		0);
	peer_addr_calls = 0;
	*state = m;
	return 0;
}

static int match_teardown(void **state)
{
	nrma_match_fini(*state);
	free(*state);
	return 0;
}

static struct nrma_rx_entry *post(struct nrma_match *m, uint64_t flags,
				  uint64_t tag, uint64_t ignore, fi_addr_t src,
				  void *buf, size_t len, void *context)
{
	struct nrma_rx_entry *rx = nrma_match_entry_alloc(m);

	assert_non_null(rx);
	rx->iov[0] = (struct iovec){ .iov_base = buf, .iov_len = len };
	rx->count = 1;
	rx->flags = flags;
	rx->tag = tag;
	rx->ignore = ignore;
	rx->src = src;
	rx->context = context;
	nrma_match_post(m, rx);
	return rx;
}

static void test_tags_and_ignore(void **state)
{
	struct nrma_match *m = *state;
	char buf[64];
	struct nrma_rx_entry *exact, *masked;

	exact = post(m, FI_TAGGED, 0x1234, 0, FI_ADDR_UNSPEC, buf, 64, NULL);
	masked =
		post(m, FI_TAGGED, 0xab00, 0xff, FI_ADDR_UNSPEC, buf, 64, NULL);
	assert_ptr_equal(nrma_match_posted(m, true, 0x1234, &peer_a), exact);
	assert_ptr_equal(nrma_match_posted(m, true, 0xab42, &peer_a), masked);
	assert_ptr_equal(nrma_match_posted(m, true, 0xab00, NULL), masked);
	assert_null(nrma_match_posted(m, true, 0xac42, &peer_a));
	assert_null(nrma_match_posted(m, true, 0x1235, &peer_a));
	/* untagged messages never look at tagged receives */
	assert_null(nrma_match_posted(m, false, 0x1234, &peer_a));
	/* nobody asked for a source: the callback is never needed */
	assert_int_equal(peer_addr_calls, 0);
}

static void test_untagged_ignores_tag(void **state)
{
	struct nrma_match *m = *state;
	char buf[16];
	struct nrma_rx_entry *rx =
		post(m, 0, 7, 0, FI_ADDR_UNSPEC, buf, 16, NULL);

	assert_ptr_equal(nrma_match_posted(m, false, 99, &peer_b), rx);
	assert_null(nrma_match_posted(m, true, 7, &peer_b));
}

/* FI_ORDER_SAS: the oldest receive that matches takes the message. */
static void test_arrival_order(void **state)
{
	struct nrma_match *m = *state;
	char buf[16];
	struct nrma_rx_entry *first, *second;

	first = post(m, FI_TAGGED, 5, 0, FI_ADDR_UNSPEC, buf, 16, NULL);
	second = post(m, FI_TAGGED, 5, 0, FI_ADDR_UNSPEC, buf, 16, NULL);
	assert_ptr_equal(nrma_match_posted(m, true, 5, NULL), first);
	nrma_match_take(first, 16, 0);
	assert_true(first->released);
	assert_ptr_equal(nrma_match_posted(m, true, 5, NULL), second);
}

static void test_directed_receive(void **state)
{
	struct nrma_match *m = *state;
	char buf[16];
	struct nrma_rx_entry *from_b, *any;

	from_b = post(m, 0, 0, 0, 11, buf, 16, NULL);
	assert_null(nrma_match_posted(m, false, 0, &peer_a));
	assert_null(nrma_match_posted(m, false, 0, NULL));
	assert_ptr_equal(nrma_match_posted(m, false, 0, &peer_b), from_b);
	any = post(m, 0, 0, 0, FI_ADDR_UNSPEC, buf, 16, NULL);
	assert_ptr_equal(nrma_match_posted(m, false, 0, &peer_a), any);
	assert_true(peer_addr_calls >= 3);
}

static void test_unexpected_in_order(void **state)
{
	struct nrma_match *m = *state;
	struct nrma_rx_entry probe = { .flags = FI_TAGGED,
				       .tag = 3,
				       .src = FI_ADDR_UNSPEC };
	struct nrma_unexp *u1, *u2, *other;

	u1 = hold(m, true, 3, 100, 40, &peer_a);
	other = hold(m, true, 4, 101, 40, &peer_a);
	u2 = hold(m, true, 3, 102, 40, &peer_b);
	assert_ptr_equal(nrma_match_unexp(m, &probe), u1);
	nrma_match_forget(u1);
	assert_ptr_equal(nrma_match_unexp(m, &probe), u2);
	probe.src = 10; /* only peer_a's, which is now tag 4 */
	assert_null(nrma_match_unexp(m, &probe));
	probe.tag = 4;
	assert_ptr_equal(nrma_match_unexp(m, &probe), other);
	/* an untagged receive sees none of them */
	probe.flags = 0;
	probe.src = FI_ADDR_UNSPEC;
	assert_null(nrma_match_unexp(m, &probe));
}

/*
 * A shared receive context holds several owners' messages: an owner that
 * goes takes its own away, queued and claimed, and leaves the others'.
 */
static int purged;

static void count_purged(struct nrma_unexp *unexp)
{
	assert_ptr_equal(unexp->owner, &owner_a);
	purged++;
}

static void test_purge_owner(void **state)
{
	struct nrma_match *m = *state;
	struct nrma_rx_entry probe = { .src = FI_ADDR_UNSPEC };
	struct fi_context ctx = { { 0 } };
	struct nrma_unexp *a0, *b1, *a2, *a3;

	a0 = hold(m, false, 0, 0, 8, NULL);
	b1 = hold_as(m, &owner_b, false, 0, 1, 8, NULL);
	a2 = hold(m, true, 5, 2, 8, NULL);
	a3 = hold(m, true, 6, 3, 8, NULL);
	nrma_match_claim(m, a3, &ctx);
	purged = 0;
	nrma_match_purge(m, &owner_a, count_purged);
	assert_int_equal(purged, 3);
	assert_null(nrma_match_claimed(m, &ctx));
	assert_ptr_equal(nrma_match_unexp(m, &probe), b1);
	probe.flags = FI_TAGGED;
	probe.tag = 5;
	assert_null(nrma_match_unexp(m, &probe));
	(void) a0;
	(void) a2;
}

static void test_rx_pool_bounded(void **state)
{
	struct nrma_match *m = *state;
	struct nrma_rx_entry *rx[RX_COUNT];
	char buf[8];

	for (int i = 0; i < RX_COUNT; i++)
		rx[i] = post(m, 0, 0, 0, FI_ADDR_UNSPEC, buf, 8, NULL);
	assert_null(nrma_match_entry_alloc(m));
	/* a receive is free only once released and with no reads left */
	rx[0]->reads = 1;
	nrma_match_take(rx[0], 8, 0);
	nrma_match_entry_done(m, rx[0]);
	assert_null(nrma_match_entry_alloc(m));
	rx[0]->reads = 0;
	nrma_match_entry_done(m, rx[0]);
	assert_non_null(nrma_match_entry_alloc(m));
}

static void test_multi_recv_space(void **state)
{
	struct nrma_match *m = *state;
	char buf[100];
	struct nrma_rx_entry *rx;

	rx = post(m, FI_MULTI_RECV, 0, 0, FI_ADDR_UNSPEC, buf, 100, NULL);
	assert_ptr_equal(nrma_match_take(rx, 30, 25), buf);
	assert_int_equal(nrma_match_space(rx), 70);
	assert_false(rx->released);
	assert_ptr_equal(nrma_match_take(rx, 40, 25), buf + 30);
	assert_int_equal(nrma_match_space(rx), 30);
	assert_false(rx->released);
	/* more than is left takes what is left; less than min_left remains */
	assert_ptr_equal(nrma_match_take(rx, 50, 25), buf + 70);
	assert_int_equal(nrma_match_space(rx), 0);
	assert_true(rx->released);
	assert_null(nrma_match_posted(m, false, 0, NULL));
}

/* FI_OPT_MIN_MULTI_RECV 0: the buffer still goes once it is full. */
static void test_multi_recv_min_zero(void **state)
{
	struct nrma_match *m = *state;
	char buf[16];
	struct nrma_rx_entry *rx;

	rx = post(m, FI_MULTI_RECV, 0, 0, FI_ADDR_UNSPEC, buf, 16, NULL);
	nrma_match_take(rx, 10, 0);
	assert_false(rx->released);
	nrma_match_take(rx, 6, 0);
	assert_true(rx->released);
	assert_null(nrma_match_posted(m, false, 0, NULL));
}

static void test_single_receive_released(void **state)
{
	struct nrma_match *m = *state;
	char buf[100];
	struct nrma_rx_entry *rx =
		post(m, 0, 0, 0, FI_ADDR_UNSPEC, buf, 100, NULL);

	assert_ptr_equal(nrma_match_take(rx, 10, 0), buf);
	assert_true(rx->released);
	assert_null(nrma_match_posted(m, false, 0, NULL));
}

static void test_cancel(void **state)
{
	struct nrma_match *m = *state;
	int ctx1, ctx2, ctx3;
	char buf[8];
	struct nrma_rx_entry *a, *b;

	a = post(m, 0, 0, 0, FI_ADDR_UNSPEC, buf, 8, &ctx1);
	b = post(m, FI_TAGGED, 1, 0, FI_ADDR_UNSPEC, buf, 8, &ctx2);
	assert_null(nrma_match_cancel(m, &ctx3));
	assert_ptr_equal(nrma_match_cancel(m, &ctx2), b);
	assert_true(b->released);
	assert_null(nrma_match_posted(m, true, 1, NULL));
	assert_null(nrma_match_cancel(m, &ctx2));
	assert_ptr_equal(nrma_match_cancel(m, &ctx1), a);
	assert_null(nrma_match_posted(m, false, 0, NULL));
}

/* A disabled endpoint's receives: every posted one, each once. */
static void test_cancel_first(void **state)
{
	struct nrma_match *m = *state;
	struct nrma_rx_entry *a, *b, *c;
	int ctx1, ctx2, ctx3;
	char buf[8];

	assert_null(nrma_match_cancel_first(m));
	a = post(m, FI_TAGGED, 1, 0, FI_ADDR_UNSPEC, buf, 8, &ctx1);
	b = post(m, 0, 0, 0, FI_ADDR_UNSPEC, buf, 8, &ctx2);
	c = post(m, FI_TAGGED, 2, 0, FI_ADDR_UNSPEC, buf, 8, &ctx3);
	assert_ptr_equal(nrma_match_cancel_first(m), b);
	assert_ptr_equal(nrma_match_cancel_first(m), a);
	assert_ptr_equal(nrma_match_cancel_first(m), c);
	assert_true(a->released && b->released && c->released);
	assert_null(nrma_match_cancel_first(m));
	assert_null(nrma_match_posted(m, true, 1, NULL));
	assert_null(nrma_match_cancel(m, &ctx2));
}

static void test_claim(void **state)
{
	struct nrma_match *m = *state;
	struct nrma_rx_entry probe = { .flags = FI_TAGGED,
				       .tag = 9,
				       .src = FI_ADDR_UNSPEC };
	struct fi_context ctx = { { 0 } }, other = { { 0 } };
	struct nrma_unexp *u = hold(m, true, 9, 5, 16, &peer_a);

	assert_null(nrma_match_claimed(m, &ctx));
	nrma_match_claim(m, u, &ctx);
	assert_true(u->claimed);
	/* claimed: off the queue, found only through its context */
	assert_null(nrma_match_unexp(m, &probe));
	assert_ptr_equal(nrma_match_claimed(m, &ctx), u);
	assert_null(nrma_match_claimed(m, &other));
	nrma_match_unclaim(&ctx);
	assert_null(nrma_match_claimed(m, &ctx));
	/* a stale context names a forgotten entry: it finds nothing */
	nrma_match_claim(m, u, &ctx);
	nrma_match_forget(u);
	assert_null(nrma_match_claimed(m, &ctx));
}

/* What an application leaves in its context is never trusted. */
static void test_claim_forged_context(void **state)
{
	struct nrma_match *m = *state;
	struct nrma_unexp *u = hold(m, true, 1, 0, 8, NULL);
	struct nrma_unexp *queued = hold(m, true, 1, 1, 8, NULL);
	struct fi_context ctx;

	nrma_match_claim(m, u, &ctx);
	ctx.internal[0] = (char *) u + 1;
	assert_null(nrma_match_claimed(m, &ctx));
	ctx.internal[0] = &ctx;
	assert_null(nrma_match_claimed(m, &ctx));
	ctx.internal[0] = queued; /* held, but claimed by nobody */
	assert_null(nrma_match_claimed(m, &ctx));
	ctx.internal[0] = u;
	assert_ptr_equal(nrma_match_claimed(m, &ctx), u);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, match_setup, match_teardown)
	const struct CMUnitTest tests[] = {
		T(test_tags_and_ignore),
		T(test_untagged_ignores_tag),
		T(test_arrival_order),
		T(test_directed_receive),
		T(test_unexpected_in_order),
		T(test_purge_owner),
		T(test_rx_pool_bounded),
		T(test_multi_recv_space),
		T(test_multi_recv_min_zero),
		T(test_single_receive_released),
		T(test_cancel),
		T(test_cancel_first),
		T(test_claim),
		T(test_claim_forged_context),
	};
#undef T

	return cmocka_run_group_tests_name("nrma_match", tests, NULL, NULL);
}
