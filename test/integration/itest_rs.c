/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The helpers of itest_rs.h: the receiver/sender harness of the message
 * feature tests.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "itest_rs.h"

struct itest_chan chan;
bool is_r;
char ctx[256];

static struct itest_link link_rs;
static uint32_t step_tag;
static const struct rs_phase *rs_phases;
static size_t rs_nphases;

void next_step(const char *what)
{
	itest_sync(&chan, ++step_tag, what);
}

void signal_peer(void)
{
	itest_signal(&chan, ++step_tag);
}

void await_peer(const char *what)
{
	itest_expect(&chan, ++step_tag, what);
}

void await_peer_idle(const char *what)
{
	itest_expect_idle(&chan, ++step_tag, itest_wait_ms(), what);
}

void open_pair(struct itest_node *n, const struct itest_node_opts *o,
	       const char *name)
{
	itest_node_open(n, o, name);
	itest_node_exchange(n, &chan);
}

void close_pair(struct itest_node *n, const char *phase)
{
	next_step(phase);
	if (n->tx)
		itest_cq_expect_empty(n->tx, phase);
	if (n->rx)
		itest_cq_expect_empty(n->rx, phase);
	next_step(phase);
	itest_node_close(n);
}

void check_untouched(const void *p, size_t len, const char *what)
{
	const unsigned char *b = p;

	for (size_t i = 0; i < len; i++)
		if (b[i])
			FAIL("%s: byte %zu of a region that must stay "
			     "untouched is 0x%02x",
			     what, i, b[i]);
}

unsigned char *msg_layout(size_t *off, size_t n, size_t (*len)(size_t),
			  size_t slack)
{
	size_t total = 0;
	unsigned char *buf;

	for (size_t i = 0; i < n; i++) {
		off[i] = total;
		total += len(i) + slack + ITEST_GUARD;
	}
	buf = calloc(1, total);
	CHECK(buf != NULL);
	return buf;
}

void send_msg(struct itest_node *n, const void *buf, size_t len, void *context,
	      const char *what)
{
	ITEST_POST(fi_send(n->ep, buf, len, NULL, n->peer, context), what);
}

void recv_msg(struct itest_node *n, void *buf, size_t len, void *context,
	      const char *what)
{
	ITEST_POST(fi_recv(n->ep, buf, len, NULL, FI_ADDR_UNSPEC, context),
		   what);
}

void wait_sends(struct itest_node *n, size_t first, size_t count,
		const char *what)
{
	bool seen[128] = { false };

	CHECK(count <= 128);
	for (size_t i = 0; i < count; i++) {
		struct itest_comp c = itest_cq_wait(n->tx, what);
		size_t k = CTX_INDEX(c.op_context) - first;

		EXPECT(k < count && !seen[k],
		       "%s: send completion with "
		       "op_context %p",
		       what, c.op_context);
		seen[k] = true;
		EXPECT_COMP(c, c.op_context, FI_SEND, FI_RECV, what);
	}
}

/* Both sides: each phase on fresh endpoints of one domain. */
static void run(void (*before_domain)(void))
{
	if (before_domain)
		before_domain();
	(void) itest_domain();
	for (size_t i = 0; i < rs_nphases; i++) {
		itest_step = rs_phases[i].name;
		rs_phases[i].fn();
	}
	itest_domain_close();
}

static void sender_main(void *arg)
{
	(void) arg;
	is_r = false;
	chan = itest_link_child(&link_rs);
	run(NULL);
	itest_chan_close(&chan);
}

int rs_main(const char *name, const struct rs_phase *phases, size_t n)
{
	return rs_main_r_init(name, phases, n, NULL);
}

/*
 * The phases ran with messages up to SAR_SIZE sent in segments: they run
 * again, in a new image of this program, with all past the eager size
 * sent by rendezvous (FI_NRMA_SAR_SIZE=0), so both ways are checked.
 */
static void rerun_by_rendezvous(const char *name)
{
	if (rs_segmented_max() == 0)
		return;
	printf("%s: again with FI_NRMA_SAR_SIZE=0\n", name);
	CHECK(setenv("FI_NRMA_SAR_SIZE", "0", 1) == 0);
	execl("/proc/self/exe", name, (char *) NULL);
	FAIL("exec of /proc/self/exe: %s", strerror(errno));
}

size_t rs_segmented_max(void)
{
	const char *sar = getenv("FI_NRMA_SAR_SIZE");

	return sar && !strcmp(sar, "0") ? 0 : SAR_SIZE;
}

int rs_main_r_init(const char *name, const struct rs_phase *phases, size_t n,
		   void (*r_init)(void))
{
	rs_phases = phases;
	rs_nphases = n;
	setvbuf(stdout, NULL, _IOLBF, 0);
	itest_link_init(&link_rs);
	itest_fork("S", sender_main, NULL);
	snprintf(itest_who, sizeof(itest_who), "R");
	is_r = true;
	chan = itest_link_parent(&link_rs);
	run(r_init);
	itest_wait_kids();
	itest_chan_close(&chan);
	itest_pass(name);
	rerun_by_rendezvous(name);
	return 0;
}
