/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Two hosts.  The link between them drops every packet, both ways, for
 * longer than the transport retries (FT_DOWN_S), then carries them again.
 * (Each host drops what it sends, with netem: a link taken down with "ip
 * link" only parks the packets in the virtual NIC until it is up again.)
 * Host 1 runs a target; host 0 drives mixed operations at it (see
 * itest_fault.h).  While the link is down, every operation in flight must
 * end, with errors as the transport gives up (or, where the device stops
 * retrying, as nrma's stall watch does: FI_NRMA_STALL_MS, 20 s), within
 * FT_BOUND_S; once it
 * is up again, the same fi_addr_t is reached again and operations
 * succeed.  The driver prints its accounts.
 */
#include <sys/wait.h>

#include "itest_fault.h"

#define FT_DOWN_S  15
#define FT_BOUND_S 30
#define FT_WARM	   300

/* Drops (or, with up, stops dropping) everything this host sends. */
static void link_set(bool up)
{
	CHECK(!system(up ? "tc qdisc del dev eth0 root" :
			   "tc qdisc add dev eth0 root netem loss 100%"));
}

static void target_host(void)
{
	pid_t target = fork();
	int status;

	CHECK(target >= 0);
	if (!target) {
		snprintf(itest_who, sizeof(itest_who), "target");
		ft_target_run("target", "done", NULL);
		_exit(0);
	}
	itest_host_wait("streaming");
	link_set(false);
	itest_host_signal("down");
	itest_host_wait("driver down");
	sleep(FT_DOWN_S);
	link_set(true);
	itest_host_signal("up");
	itest_host_wait("done");
	CHECK(waitpid(target, &status, 0) == target && WIFEXITED(status) &&
	      !WEXITSTATUS(status));
}

static void driver_pump(struct ft_stream *s)
{
	struct ft_stream *one[1] = { s };

	ft_reap(one, 1);
	itest_progress();
}

static void driver_host(void)
{
	struct ft_target_info t;
	struct ft_stream s;
	struct rt_node n;
	int64_t down = -1, end;
	uint64_t ok;
	bool late;

	ft_driver_open(&n);
	itest_host_get("target", &t, sizeof(t));
	ft_stream_init(&s, &n, &t);
	while (s.ok < FT_WARM) {
		ft_stream_post(&s);
		driver_pump(&s);
	}
	itest_host_signal("streaming");
	/* Keep the window full until the link is down and it has emptied. */
	while (down < 0 || ft_in_flight(&s)) {
		if (down < 0 && itest_host_has("down")) {
			link_set(false);
			itest_host_signal("driver down");
			down = itest_now_ms();
		}
		if (down < 0)
			ft_stream_post(&s);
		driver_pump(&s);
		late = itest_host_past_bound(down, FT_BOUND_S);
		EXPECT(!late,
		       "every operation ends within %d s of the link going "
		       "down (%" PRIu64 " in flight)",
		       FT_BOUND_S, ft_in_flight(&s));
	}
	ft_stream_print(&s, "link down");
	printf("first error %" PRId64 " ms and last end %" PRId64
	       " ms after the link went down\n",
	       s.first_err < 0 ? -1 : s.first_err - down, s.last_end - down);
	EXPECT(s.posted == s.ok + s.failed, "each operation ended once");
	EXPECT(s.failed > 0, "operations fail while the link is down");
	itest_host_wait("up");
	link_set(true);
	ok = s.ok;
	for (end = itest_now_ms() + 90000; s.ok < ok + 50;) {
		ft_stream_post(&s);
		driver_pump(&s);
		EXPECT(itest_now_ms() < end,
		       "the peer is reached again within 90 s of the link "
		       "coming back");
	}
	while (ft_in_flight(&s))
		driver_pump(&s);
	ft_stream_print(&s, "link down, then up");
	EXPECT(s.posted == s.ok + s.failed, "each operation ended once");
	itest_host_signal("done");
	rt_node_close(&n);
}

int main(void)
{
	rt_init();
	if (itest_host())
		target_host();
	else
		driver_host();
	itest_pass("nrma_fault_link");
	return 0;
}
