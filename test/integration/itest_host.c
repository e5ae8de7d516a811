/* SPDX-License-Identifier: BSD-2-Clause */
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "itest_host.h"
#include "itest_msg.h"

static int host_self = -1;

static const char *host_failed_key(int host)
{
	return host ? "host 1 failed" : "host 0 failed";
}

/*
 * A failure on one host ends the other's waits at once: each would sit
 * out its deadline otherwise, and the next test's with it.
 */
static void host_on_exit(int status, void *arg)
{
	(void) arg;
	if (status)
		itest_host_signal(host_failed_key(host_self));
}

int itest_host(void)
{
	const char *h = getenv("NRMA_VM_HOST");

	EXPECT(h && (!strcmp(h, "0") || !strcmp(h, "1")) &&
		       getenv("NRMA_TEST_SHARE"),
	       "a two-host run (contrib/nrma-vm --hosts 2, NRMA_TEST_SHARE)");
	if (host_self < 0) {
		host_self = atoi(h);
		CHECK(on_exit(host_on_exit, NULL) == 0);
	}
	return host_self;
}

const char *itest_host_peer_addr(void)
{
	const char *a = getenv("NRMA_TEST_PEER_ADDR");

	EXPECT(a && *a, "NRMA_TEST_PEER_ADDR");
	return a;
}

static const char *host_path(const char *key, const char *suffix)
{
	static char path[512];

	snprintf(path, sizeof(path), "%s/%s%s", getenv("NRMA_TEST_SHARE"), key,
		 suffix);
	return path;
}

void itest_host_put(const char *key, const void *buf, size_t len)
{
	char tmp[512];
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s", host_path(key, ".tmp"));
	f = fopen(tmp, "w");
	CHECK(f != NULL);
	CHECK(!len || fwrite(buf, len, 1, f) == 1);
	CHECK(!fclose(f));
	CHECK(!rename(tmp, host_path(key, "")));
}

static bool host_published(const char *key)
{
	struct stat st;

	return !stat(host_path(key, ""), &st);
}

int itest_host_has(const char *key)
{
	if (host_published(key))
		return 1;
	if (host_self >= 0 && host_published(host_failed_key(!host_self)))
		FAIL("the other host failed before its %s", key);
	return 0;
}

void itest_host_get(const char *key, void *buf, size_t len)
{
	int64_t deadline = itest_deadline();
	FILE *f;

	while (!itest_host_has(key)) {
		itest_check_deadline(deadline,
				     itest_fmt("the other host's %s", key));
		itest_progress();
	}
	f = fopen(host_path(key, ""), "r");
	CHECK(f != NULL);
	CHECK(!len || fread(buf, len, 1, f) == 1);
	fclose(f);
}

void itest_host_signal(const char *key)
{
	itest_host_put(key, NULL, 0);
}

void itest_host_dump_device(void)
{
	fflush(NULL);
	if (system("exec >&2; rdma res show qp; "
		   "cd /sys/class/infiniband && grep -H . */ports/*/hw_counters/*"))
		fprintf(stderr, "(no device state: rdma or sysfs missing)\n");
}

bool itest_host_past_bound(int64_t since_ms, int bound_s)
{
	bool past = since_ms >= 0 &&
		    itest_now_ms() - since_ms >= bound_s * 1000;

	if (past)
		itest_host_dump_device();
	return past;
}

void itest_host_wait(const char *key)
{
	itest_host_get(key, NULL, 0);
}
