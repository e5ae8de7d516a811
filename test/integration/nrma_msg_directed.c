/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Directed receives, in one process: a receiver and two senders, a and b.
 * The receiver posts a receive for a's messages, b sends first, then a.
 * A directed receive must take a's message and leave b's for the next
 * receive; one that is not directed takes b's, which came first.  Each
 * way for untagged and tagged messages, with the receiver's endpoint
 * opened for
 *  - FI_DIRECTED_RECV: both kinds are directed;
 *  - FI_TAGGED_DIRECTED_RECV (libfabric 2.x): only tagged ones are;
 *  - FI_EXACT_DIRECTED_RECV (2.x), alone: both kinds are, and a directed
 *    receive may not name FI_ADDR_UNSPEC (-FI_EINVAL);
 *  - FI_EXACT_DIRECTED_RECV with FI_TAGGED_DIRECTED_RECV: tagged ones
 *    are, exactly;
 *  - none: src_addr is ignored (fi_getinfo(3)).
 */
#include "itest_msg.h"

#define TAG 0x7a

static char ctx[4];

struct mode {
	uint64_t cap;
	const char *name;
};

#ifdef FI_TAGGED_DIRECTED_RECV
#define TAGGED_DIRECTED FI_TAGGED_DIRECTED_RECV
#define EXACT		FI_EXACT_DIRECTED_RECV
#else
#define TAGGED_DIRECTED 0ULL
#define EXACT		0ULL
#endif

static const struct mode modes[] = {
	{ FI_DIRECTED_RECV, "FI_DIRECTED_RECV" },
#ifdef FI_TAGGED_DIRECTED_RECV
	{ TAGGED_DIRECTED, "FI_TAGGED_DIRECTED_RECV" },
	{ EXACT, "FI_EXACT_DIRECTED_RECV" },
	{ EXACT | TAGGED_DIRECTED,
	  "FI_EXACT_DIRECTED_RECV | FI_TAGGED_DIRECTED_RECV" },
#endif
	{ 0, "no directed receives" },
};

static bool directed(uint64_t cap, bool tagged)
{
	return (cap & TAGGED_DIRECTED) ? tagged : cap != 0;
}

/* The receiver's info: the domain's, with cap as its only directed one. */
static struct fi_info *receiver_info(uint64_t cap)
{
	struct fi_info *info =
		itest_getinfo_at(ITEST_VERSION, FI_MSG | FI_TAGGED | cap);

	EXPECT((info->caps & (FI_DIRECTED_RECV | TAGGED_DIRECTED | EXACT)) ==
		       cap,
	       "asked for 0x%" PRIx64 ", got caps 0x%" PRIx64, cap, info->caps);
	return info;
}

static ssize_t post_recv(struct itest_node *r, char *buf, fi_addr_t src,
			 bool tagged, void *context)
{
	return tagged ? fi_trecv(r->ep, buf, 1, NULL, src, TAG, 0, context) :
			fi_recv(r->ep, buf, 1, NULL, src, context);
}

static void send_one(struct itest_node *from, char *byte, bool tagged,
		     const char *what)
{
	ITEST_POST(
		tagged ? fi_tsend(from->ep, byte, 1, NULL, from->peer, TAG,
				  &ctx[0]) :
			 fi_send(from->ep, byte, 1, NULL, from->peer, &ctx[0]),
		what);
	(void) itest_cq_wait(from->tx, what);
}

/*
 * One round: which message the receive for a's gets, and what is left,
 * which an exact directed receive must name.
 */
static void round_trip(struct itest_node *r, struct itest_node *a,
		       struct itest_node *b, const fi_addr_t *from, bool want_a,
		       bool exact, bool tagged, const char *what)
{
	fi_addr_t from_a = from[0], rest = FI_ADDR_UNSPEC;
	char sa = 'a', sb = 'b', first = 0, second = 0;
	struct itest_comp c;

	ITEST_POST(post_recv(r, &first, from_a, tagged, &ctx[1]), what);
	send_one(b, &sb, tagged, what);
	if (want_a) /* b's message is held: the receive waits for a's */
		itest_cq_expect_empty_at(__FILE__, __LINE__, r->rx, 300, what);
	send_one(a, &sa, tagged, what);
	c = itest_cq_wait(r->rx, what);
	EXPECT_COMP(c, &ctx[1], FI_RECV, 0, what);
	EXPECT(first == (want_a ? 'a' : 'b'),
	       "%s: the receive for a's message got '%c'", what, first);
	if (exact && want_a) {
		CHECK_RET(
			post_recv(r, &second, FI_ADDR_UNSPEC, tagged, &ctx[2]),
			-FI_EINVAL);
		rest = from[1];
	}
	ITEST_POST(post_recv(r, &second, rest, tagged, &ctx[2]), what);
	c = itest_cq_wait(r->rx, what);
	EXPECT_COMP(c, &ctx[2], FI_RECV, 0, what);
	EXPECT(second == (want_a ? 'b' : 'a'), "%s: the next receive got '%c'",
	       what, second);
}

static void run_mode(const struct mode *m)
{
	struct fi_info *info = receiver_info(m->cap);
	struct itest_node_opts ro = { .info = info };
	struct itest_node r, a, b;
	fi_addr_t from[2];

	itest_node_open(&r, &ro, "receiver");
	itest_node_open(&a, NULL, "a");
	itest_node_open(&b, NULL, "b");
	from[0] = itest_node_insert(&r, &a.name);
	from[1] = itest_node_insert(&r, &b.name);
	(void) itest_node_insert(&a, &r.name);
	(void) itest_node_insert(&b, &r.name);
	for (int tagged = 0; tagged < 2; tagged++) {
		char what[96];
		bool want_a = directed(m->cap, tagged);

		snprintf(what, sizeof(what), "%s, %s receive", m->name,
			 tagged ? "tagged" : "untagged");
		round_trip(&r, &a, &b, from, want_a, m->cap & EXACT, tagged,
			   what);
		printf("%s: %s\n", what,
		       want_a ? "directed" : "takes any source");
	}
	itest_cq_expect_empty(r.rx, m->name);
	itest_node_close(&r);
	itest_node_close(&a);
	itest_node_close(&b);
	fi_freeinfo(info);
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	snprintf(itest_who, sizeof(itest_who), "directed");
	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++)
		run_mode(&modes[i]);
	itest_domain_close();
	printf("nrma_msg_directed: all checks passed\n");
	return 0;
}
