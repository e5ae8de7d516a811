/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Unit tests for counters (prov/nrma/nrma_cntr.c, nrma_wait.c), opened on
 * a fake domain.
 */
#include "nrma_test.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <unistd.h>

#include <rdma/fi_eq.h>

/* Counters */

static struct fid_cntr *open_cntr(void **state, enum fi_wait_obj wait_obj)
{
	struct fi_cntr_attr attr = {
		.events = FI_CNTR_EVENTS_COMP,
		.wait_obj = wait_obj,
	};
	struct fid_cntr *cntr = NULL;

	assert_int_equal(nrma_cntr_open(fake_domain(state), &attr, &cntr, NULL),
			 0);
	assert_non_null(cntr);
	return cntr;
}

static void test_cntr_open(void **state)
{
	struct fake_env *env = *state;
	struct fi_cntr_attr attr = { .events = FI_CNTR_EVENTS_COMP };
	struct fid_cntr *cntr = NULL;
	enum fi_wait_obj obj;
	int fd = -1;

	assert_int_equal(nrma_cntr_open(fake_domain(state), NULL, &cntr, &attr),
			 0);
	assert_int_equal(cntr->fid.fclass, FI_CLASS_CNTR);
	assert_ptr_equal(cntr->fid.context, &attr);
	assert_int_equal(fi_control(&cntr->fid, FI_GETWAITOBJ, &obj), 0);
	assert_int_equal(obj, FI_WAIT_FD);
	assert_int_equal(fi_control(&cntr->fid, FI_GETWAIT, &fd), 0);
	assert_true(fd >= 0);
	assert_int_equal(atomic_load(&env->domain->ref), 1);
	assert_int_equal(fi_close(&cntr->fid), 0);
	assert_int_equal(atomic_load(&env->domain->ref), 0);

	cntr = NULL;
	attr.events = (enum fi_cntr_events) 1;
	assert_int_equal(nrma_cntr_open(fake_domain(state), &attr, &cntr, NULL),
			 -FI_EINVAL);
	attr.events = (enum fi_cntr_events) 99;
	assert_int_equal(nrma_cntr_open(fake_domain(state), &attr, &cntr, NULL),
			 -FI_EINVAL);
	attr.events = FI_CNTR_EVENTS_COMP;
	attr.flags = 1;
	assert_int_equal(nrma_cntr_open(fake_domain(state), &attr, &cntr, NULL),
			 -FI_EINVAL);
	attr.flags = 0;
	/* A wait set is ignored but with FI_WAIT_SET. */
	attr.wait_set = (struct fid_wait *) &attr;
	assert_int_equal(nrma_cntr_open(fake_domain(state), &attr, &cntr, NULL),
			 0);
	assert_int_equal(fi_close(&cntr->fid), 0);
	cntr = NULL;
	attr.wait_obj = FI_WAIT_SET;
	assert_int_equal(nrma_cntr_open(fake_domain(state), &attr, &cntr, NULL),
			 -FI_ENOSYS);
	assert_null(cntr);
}

static void test_cntr_values(void **state)
{
	struct fid_cntr *cntr = open_cntr(state, FI_WAIT_NONE);

	assert_int_equal(fi_cntr_read(cntr), 0);
	assert_int_equal(fi_cntr_readerr(cntr), 0);
	assert_int_equal(fi_cntr_add(cntr, 5), 0);
	assert_int_equal(fi_cntr_add(cntr, 7), 0);
	assert_int_equal(fi_cntr_read(cntr), 12);
	assert_int_equal(fi_cntr_set(cntr, 3), 0);
	assert_int_equal(fi_cntr_read(cntr), 3);
	assert_int_equal(fi_cntr_set(cntr, UINT64_MAX), 0);
	assert_int_equal(fi_cntr_read(cntr), UINT64_MAX);
	assert_int_equal(fi_cntr_set(cntr, 0), 0);
	assert_int_equal(fi_cntr_read(cntr), 0);

	assert_int_equal(fi_cntr_adderr(cntr, 2), 0);
	assert_int_equal(fi_cntr_adderr(cntr, 1), 0);
	assert_int_equal(fi_cntr_readerr(cntr), 3);
	/* Errors and successes are counted apart. */
	assert_int_equal(fi_cntr_read(cntr), 0);
	assert_int_equal(fi_cntr_seterr(cntr, 10), 0);
	assert_int_equal(fi_cntr_readerr(cntr), 10);
	assert_int_equal(fi_cntr_add(cntr, 1), 0);
	assert_int_equal(fi_cntr_readerr(cntr), 10);
	assert_int_equal(fi_cntr_read(cntr), 1);
	assert_int_equal(fi_close(&cntr->fid), 0);
}

static void test_cntr_wait_met(void **state)
{
	static const enum fi_wait_obj waits[] = {
		FI_WAIT_NONE,
		FI_WAIT_UNSPEC,
		FI_WAIT_FD,
		FI_WAIT_YIELD,
	};

	for (size_t i = 0; i < ARRAY_SIZE(waits); i++) {
		struct fid_cntr *cntr = open_cntr(state, waits[i]);

		assert_int_equal(fi_cntr_set(cntr, 5), 0);
		assert_int_equal(fi_cntr_wait(cntr, 5, 0), 0);
		assert_int_equal(fi_cntr_wait(cntr, 3, 50), 0);
		assert_int_equal(fi_cntr_wait(cntr, 0, -1), 0);
		assert_int_equal(fi_close(&cntr->fid), 0);
	}
}

static void test_cntr_wait_timeout(void **state)
{
	static const enum fi_wait_obj waits[] = {
		FI_WAIT_NONE,
		FI_WAIT_FD,
		FI_WAIT_YIELD,
	};

	alarm(WATCHDOG_S);
	for (size_t i = 0; i < ARRAY_SIZE(waits); i++) {
		struct fid_cntr *cntr = open_cntr(state, waits[i]);
		struct timespec start;
		long ms;

		assert_int_equal(fi_cntr_add(cntr, 2), 0);
		clock_gettime(CLOCK_MONOTONIC, &start);
		assert_int_equal(fi_cntr_wait(cntr, 3, 50), -FI_ETIMEDOUT);
		ms = elapsed_ms(&start);
		assert_true(ms >= 45);
		assert_true(ms < 10000);
		assert_int_equal(fi_cntr_wait(cntr, 3, 0), -FI_ETIMEDOUT);
		assert_int_equal(fi_close(&cntr->fid), 0);
	}
	alarm(0);
}

static void cntr_add_fn(void *arg)
{
	fi_cntr_add(arg, 1);
}

static void cntr_adderr_fn(void *arg)
{
	fi_cntr_adderr(arg, 1);
}

static void test_cntr_wait_woken(void **state)
{
	struct fid_cntr *cntr = open_cntr(state, FI_WAIT_FD);
	struct delayed d;
	struct timespec start;
	int ret;
	long ms;

	assert_int_equal(fi_cntr_set(cntr, 9), 0);
	clock_gettime(CLOCK_MONOTONIC, &start);
	delayed_start(&d, 30, cntr_add_fn, cntr);
	ret = fi_cntr_wait(cntr, 10, 10000);
	ms = elapsed_ms(&start);
	delayed_join(&d);
	assert_int_equal(ret, 0);
	assert_int_equal(fi_cntr_read(cntr), 10);
	assert_true(ms < 5000);
	assert_int_equal(fi_close(&cntr->fid), 0);
}

static void test_cntr_wait_error(void **state)
{
	struct fid_cntr *cntr = open_cntr(state, FI_WAIT_FD);
	struct delayed d;
	struct timespec start;
	int ret;
	long ms;

	/* Errors from before the wait do not end it. */
	assert_int_equal(fi_cntr_adderr(cntr, 4), 0);
	assert_int_equal(fi_cntr_wait(cntr, 1, 10), -FI_ETIMEDOUT);

	clock_gettime(CLOCK_MONOTONIC, &start);
	delayed_start(&d, 30, cntr_adderr_fn, cntr);
	ret = fi_cntr_wait(cntr, 1, 10000);
	ms = elapsed_ms(&start);
	delayed_join(&d);
	assert_int_equal(ret, -FI_EAVAIL);
	assert_int_equal(fi_cntr_readerr(cntr), 5);
	assert_int_equal(fi_cntr_read(cntr), 0);
	assert_true(ms < 5000);
	assert_int_equal(fi_close(&cntr->fid), 0);
}

static void test_cntr_trywait(void **state)
{
	struct fid_cntr *cntr = open_cntr(state, FI_WAIT_FD);
	int fd = -1;

	assert_int_equal(fi_control(&cntr->fid, FI_GETWAIT, &fd), 0);
	assert_false(fd_readable(fd));
	assert_int_equal(fi_cntr_add(cntr, 1), 0);
	assert_true(fd_readable(fd));
	assert_int_equal(nrma_cntr_trywait(nrma_container_of(
				 cntr, struct nrma_cntr, cntr_fid)),
			 0);
	assert_false(fd_readable(fd));
	assert_int_equal(fi_cntr_adderr(cntr, 1), 0);
	assert_true(fd_readable(fd));
	assert_int_equal(fi_close(&cntr->fid), 0);
}

/* How many times c's eventfd was written since it was last read. */
static uint64_t cntr_fd_writes(const struct nrma_cntr *c)
{
	uint64_t writes = 0;

	assert_int_equal(read(c->wait.event_fd, &writes, sizeof(writes)),
			 sizeof(writes));
	return writes;
}

/* A counter's changes write its eventfd once until a wait lowers it. */
static void test_cntr_raise_once(void **state)
{
	struct fid_cntr *cntr = open_cntr(state, FI_WAIT_FD);
	struct nrma_cntr *c =
		nrma_container_of(cntr, struct nrma_cntr, cntr_fid);
	int fd = -1;

	assert_int_equal(fi_control(&cntr->fid, FI_GETWAIT, &fd), 0);
	for (int i = 0; i < 5; i++)
		assert_int_equal(fi_cntr_add(cntr, 1), 0);
	assert_int_equal(fi_cntr_adderr(cntr, 1), 0);
	assert_true(fd_readable(fd));
	assert_int_equal(cntr_fd_writes(c), 1);
	assert_false(fd_readable(fd));
	/* Still raised: no write until a wait lowers it. */
	assert_int_equal(fi_cntr_add(cntr, 1), 0);
	assert_false(fd_readable(fd));
	assert_int_equal(nrma_cntr_trywait(c), 0);
	assert_int_equal(fi_cntr_add(cntr, 1), 0);
	assert_int_equal(fi_cntr_add(cntr, 1), 0);
	assert_true(fd_readable(fd));
	assert_int_equal(cntr_fd_writes(c), 1);
	assert_int_equal(fi_cntr_read(cntr), 8);
	assert_int_equal(fi_close(&cntr->fid), 0);
}

static void test_cntr_close_busy(void **state)
{
	struct fid_cntr *cntr = open_cntr(state, FI_WAIT_UNSPEC);
	struct nrma_cntr *c =
		nrma_container_of(cntr, struct nrma_cntr, cntr_fid);

	atomic_fetch_add(&c->ref, 1);
	assert_int_equal(fi_close(&cntr->fid), -FI_EBUSY);
	atomic_fetch_sub(&c->ref, 1);
	assert_int_equal(fi_close(&cntr->fid), 0);
}

int main(void)
{
#define T(f) \
	cmocka_unit_test_setup_teardown(f, fake_env_setup, fake_env_teardown)
	const struct CMUnitTest tests[] = {
		T(test_cntr_open),	 T(test_cntr_values),
		T(test_cntr_wait_met),	 T(test_cntr_wait_timeout),
		T(test_cntr_wait_woken), T(test_cntr_wait_error),
		T(test_cntr_trywait),	 T(test_cntr_raise_once),
		T(test_cntr_close_busy),
	};
#undef T

	return cmocka_run_group_tests_name("nrma_cntr", tests, NULL, NULL);
}
