/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Two hosts.  A peer process killed while operations are in flight.
 * Host 1 runs a target ("T") and a bystander ("B"); host 0 drives mixed
 * operations (sends, eager and rendezvous; notified writes of 8 bytes and
 * 1 MiB; 4 KiB reads; 64-bit fetch-and-adds), FT_WINDOW in flight, at
 * both.  Once the stream runs, host 1 kills T with SIGKILL; the driver
 * posts to T on until one operation fails.  At the driver, every
 * operation posted to T must end in exactly one completion or error entry
 * within FT_BOUND_S of the kill, the first error within FT_SEEN_MS of it
 * (the kernel disconnects a dead process's connections at once, far
 * inside the transport's retries) and the last end within FT_ENDED_MS (a
 * peer that no longer listens is gone: no reconnect waits for it to come
 * up, as for a first connection); B's operations keep succeeding; a new T
 * started at the old one's address is reached again.
 * The driver prints its accounts.
 */
#include <signal.h>
#include <sys/wait.h>

#include "itest_fault.h"

#define FT_BOUND_S  30
#define FT_SEEN_MS  1000 /* the first error after the kill, at most */
#define FT_ENDED_MS 3000 /* the last end after the kill, at most */
#define FT_WARM	    300	 /* operations T completes before it is killed */

static pid_t ft_spawn(const char *key, const char *stop,
		      const struct sockaddr_in *name)
{
	pid_t pid = fork();

	CHECK(pid >= 0);
	if (!pid) {
		snprintf(itest_who, sizeof(itest_who), "%s", key);
		ft_target_run(key, stop, name);
		_exit(0);
	}
	return pid;
}

static void victim_host(void)
{
	struct ft_target_info t;
	pid_t target, bystander;
	int status;

	target = ft_spawn("target", "done", NULL);
	bystander = ft_spawn("bystander", "done", NULL);
	itest_host_get("target", &t, sizeof(t));
	itest_host_wait("streaming");
	CHECK(!kill(target, SIGKILL));
	CHECK(waitpid(target, &status, 0) == target);
	CHECK(WIFSIGNALED(status));
	itest_host_signal("killed");
	itest_host_wait("drained");
	target = ft_spawn("target2", "done", &t.name);
	itest_host_wait("done");
	CHECK(waitpid(target, &status, 0) == target && WIFEXITED(status) &&
	      !WEXITSTATUS(status));
	CHECK(waitpid(bystander, &status, 0) == bystander &&
	      WIFEXITED(status) && !WEXITSTATUS(status));
}

/*
 * Streams at both until T is killed, and at T until an operation sees
 * its death (those in flight as it died may all have landed); then drains.
 */
static void driver_stream(struct ft_stream **s)
{
	int64_t deadline = itest_deadline(), killed = -1;
	bool warm = false, late;

	while (killed < 0 || ft_in_flight(s[0]) || s[0]->first_err < 0) {
		if (killed < 0 && itest_host_has("killed"))
			killed = itest_now_ms();
		if (killed < 0 || s[0]->first_err < 0)
			ft_stream_post(s[0]);
		if (killed < 0 && !warm && s[0]->ok >= FT_WARM) {
			itest_host_signal("streaming");
			warm = true;
		}
		ft_stream_post(s[1]);
		ft_reap(s, 2);
		itest_progress();
		late = itest_host_past_bound(killed, FT_BOUND_S);
		EXPECT(!late,
		       "operations to the killed peer fail, and every one "
		       "ends, within %d s (%" PRIu64 " in flight)",
		       FT_BOUND_S, ft_in_flight(s[0]));
		itest_check_deadline(deadline, "the stream");
	}
	printf("first error %" PRId64 " ms and last end %" PRId64
	       " ms after the kill was seen (%s, %s)\n",
	       s[0]->first_err < 0 ? -1 : s[0]->first_err - killed,
	       s[0]->last_end - killed, ft_kind_name(s[0]->last_kind),
	       s[0]->last_ok ? "completed" : "an error");
	/* The kernel's disconnect says it, not the transport's retries. */
	EXPECT(s[0]->first_err >= 0 && s[0]->first_err - killed <= FT_SEEN_MS,
	       "the death is seen within %d ms", FT_SEEN_MS);
	EXPECT(s[0]->last_end - killed <= FT_ENDED_MS,
	       "the last operation to the dead peer ends within %d ms",
	       FT_ENDED_MS);
}

/* The restarted target, at the same fi_addr_t, with its own key. */
static void driver_reach_again(struct ft_stream *t)
{
	struct ft_target_info t2;
	struct ft_stream *s[1] = { t };
	uint64_t ok;

	itest_host_get("target2", &t2, sizeof(t2));
	EXPECT(!memcmp(&t2.name, &t->info.name, sizeof(t2.name)),
	       "the new target has the old one's address");
	t->info.key = t2.key;
	t->info.addr = t2.addr;
	ok = t->ok;
	for (int64_t end = itest_now_ms() + 60000; t->ok < ok + 20;) {
		ft_stream_post(t);
		ft_reap(s, 1);
		itest_progress();
		EXPECT(itest_now_ms() < end,
		       "the restarted peer is reached again within 60 s");
	}
	while (ft_in_flight(t)) {
		ft_reap(s, 1);
		itest_progress();
	}
}

static void driver_host(void)
{
	struct ft_target_info t, b;
	struct ft_stream target, bystander, *s[2] = { &target, &bystander };
	struct rt_node n;

	ft_driver_open(&n);
	itest_host_get("target", &t, sizeof(t));
	itest_host_get("bystander", &b, sizeof(b));
	ft_stream_init(&target, &n, &t);
	ft_stream_init(&bystander, &n, &b);
	driver_stream(s);
	ft_stream_print(&target, "killed peer");
	EXPECT(target.posted == target.ok + target.failed,
	       "posted %" PRIu64 " = completed %" PRIu64 " + errors %" PRIu64,
	       target.posted, target.ok, target.failed);
	EXPECT(target.failed > 0, "the killed peer's operations fail");
	/* The bystander still works; then a restarted target is reached. */
	for (uint64_t ok = bystander.ok; bystander.ok < ok + 50;) {
		ft_stream_post(&bystander);
		ft_reap(s, 2);
		itest_progress();
	}
	while (ft_in_flight(&bystander)) {
		ft_reap(s, 2);
		itest_progress();
	}
	ft_stream_print(&bystander, "bystander");
	EXPECT(!bystander.failed && !bystander.refused,
	       "the bystander's operations all succeed");
	itest_host_signal("drained");
	driver_reach_again(&target);
	ft_stream_print(&target, "killed peer, then its successor");
	itest_host_signal("done");
	rt_node_close(&n);
}

int main(void)
{
	rt_init();
	if (itest_host())
		victim_host();
	else
		driver_host();
	itest_pass("nrma_fault_peer_kill");
	return 0;
}
