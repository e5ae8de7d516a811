/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Unit tests for event queues (prov/nrma/nrma_eq.c, nrma_wait.c), opened
 * on a fake fabric.
 */
#include "nrma_test.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <unistd.h>

#include <rdma/fi_eq.h>

/* Event queues */

static struct fid_eq *open_eq(void **state, enum fi_wait_obj wait_obj,
			      uint64_t flags, size_t size)
{
	struct fi_eq_attr attr = {
		.size = size,
		.wait_obj = wait_obj,
		.flags = flags,
	};
	struct fid_eq *eq = NULL;

	assert_int_equal(nrma_eq_open(fake_fabric(state), &attr, &eq, NULL), 0);
	assert_non_null(eq);
	return eq;
}

static void test_eq_open(void **state)
{
	struct fake_env *env = *state;
	struct fi_eq_attr attr = { .wait_obj = FI_WAIT_UNSPEC };
	struct fid_eq *eq = NULL;
	enum fi_wait_obj obj;

	assert_int_equal(nrma_eq_open(fake_fabric(state), &attr, &eq, &attr),
			 0);
	assert_int_equal(eq->fid.fclass, FI_CLASS_EQ);
	assert_ptr_equal(eq->fid.context, &attr);
	assert_int_equal(fi_control(&eq->fid, FI_GETWAITOBJ, &obj), 0);
	assert_int_equal(obj, FI_WAIT_FD);
	assert_int_equal(atomic_load(&env->fabric->ref), 1);
	assert_int_equal(fi_close(&eq->fid), 0);
	assert_int_equal(atomic_load(&env->fabric->ref), 0);

	eq = NULL;
	attr.flags = FI_READ;
	assert_int_equal(nrma_eq_open(fake_fabric(state), &attr, &eq, NULL),
			 -FI_EINVAL);
	/* Hints nrma ignores: an affinity, a wait set with no FI_WAIT_SET. */
	attr.flags = FI_AFFINITY;
	attr.signaling_vector = 1;
	attr.wait_set = (struct fid_wait *) &attr;
	assert_int_equal(nrma_eq_open(fake_fabric(state), &attr, &eq, NULL), 0);
	assert_int_equal(fi_close(&eq->fid), 0);
	eq = NULL;
	attr.flags = 0;
	attr.wait_obj = FI_WAIT_SET;
	assert_int_equal(nrma_eq_open(fake_fabric(state), &attr, &eq, NULL),
			 -FI_ENOSYS);
	assert_int_equal(nrma_eq_open(fake_fabric(state), NULL, &eq, NULL),
			 -FI_EINVAL);
	assert_null(eq);
}

static void test_eq_write_needs_flag(void **state)
{
	struct fid_eq *eq = open_eq(state, FI_WAIT_UNSPEC, 0, 0);
	struct fi_eq_entry entry = { .data = 1 };
	uint32_t event;

	assert_int_equal(fi_eq_write(eq, FI_NOTIFY, &entry, sizeof(entry), 0),
			 -FI_EINVAL);
	assert_int_equal(fi_eq_read(eq, &event, &entry, sizeof(entry), 0),
			 -FI_EAGAIN);
	assert_int_equal(fi_close(&eq->fid), 0);

	eq = open_eq(state, FI_WAIT_UNSPEC, FI_WRITE, 0);
	assert_int_equal(
		fi_eq_write(eq, FI_NOTIFY, &entry, sizeof(entry), FI_PEEK),
		-FI_EBADFLAGS);
	assert_int_equal(fi_eq_write(eq, FI_NOTIFY, NULL, 8, 0), -FI_EINVAL);
	assert_int_equal(fi_close(&eq->fid), 0);
}

static void test_eq_roundtrip(void **state)
{
	struct fid_eq *eq = open_eq(state, FI_WAIT_UNSPEC, FI_WRITE, 0);
	struct fi_eq_entry in[2] = {
		{ .fid = &eq->fid, .context = state, .data = 0x1234 },
		{ .fid = NULL, .context = eq, .data = 99 },
	};
	struct fi_eq_entry out;
	uint32_t event = ~0u;

	assert_int_equal(fi_eq_write(eq, FI_NOTIFY, &in[0], sizeof(in[0]), 0),
			 sizeof(in[0]));
	assert_int_equal(
		fi_eq_write(eq, FI_MR_COMPLETE, &in[1], sizeof(in[1]), 0),
		sizeof(in[1]));
	memset(&out, 0, sizeof(out));
	assert_int_equal(fi_eq_read(eq, &event, &out, sizeof(out), 0),
			 sizeof(out));
	assert_int_equal(event, FI_NOTIFY);
	assert_memory_equal(&out, &in[0], sizeof(out));
	assert_int_equal(fi_eq_read(eq, &event, &out, sizeof(out), 0),
			 sizeof(out));
	assert_int_equal(event, FI_MR_COMPLETE);
	assert_memory_equal(&out, &in[1], sizeof(out));
	assert_int_equal(fi_eq_read(eq, &event, &out, sizeof(out), 0),
			 -FI_EAGAIN);
	assert_int_equal(fi_eq_read(eq, &event, &out, sizeof(out), FI_SEND),
			 -FI_EBADFLAGS);
	assert_int_equal(fi_close(&eq->fid), 0);
}

/* Entries of any size, smaller or larger than the built-in space. */
static void test_eq_odd_sizes(void **state)
{
	struct fid_eq *eq = open_eq(state, FI_WAIT_NONE, FI_WRITE, 0);
	uint8_t big[300], out[300];
	uint32_t small = 0xabcd1234, small_out = 0, event;

	for (size_t i = 0; i < sizeof(big); i++)
		big[i] = (uint8_t) (i * 7 + 1);
	assert_int_equal(fi_eq_write(eq, 5, big, sizeof(big), 0), sizeof(big));
	assert_int_equal(fi_eq_write(eq, 6, &small, sizeof(small), 0),
			 sizeof(small));
	memset(out, 0, sizeof(out));
	assert_int_equal(fi_eq_read(eq, &event, out, sizeof(out), 0),
			 sizeof(big));
	assert_int_equal(event, 5);
	assert_memory_equal(out, big, sizeof(big));
	assert_int_equal(
		fi_eq_read(eq, &event, &small_out, sizeof(small_out), 0),
		sizeof(small));
	assert_int_equal(event, 6);
	assert_int_equal(small_out, small);
	assert_int_equal(fi_close(&eq->fid), 0);
}

static void test_eq_peek(void **state)
{
	struct fid_eq *eq = open_eq(state, FI_WAIT_UNSPEC, FI_WRITE, 0);
	struct fi_eq_entry in = { .data = 7 }, out;
	uint32_t event;

	assert_int_equal(fi_eq_write(eq, FI_NOTIFY, &in, sizeof(in), 0),
			 sizeof(in));
	for (int i = 0; i < 2; i++) {
		memset(&out, 0, sizeof(out));
		event = ~0u;
		assert_int_equal(
			fi_eq_read(eq, &event, &out, sizeof(out), FI_PEEK),
			sizeof(out));
		assert_int_equal(event, FI_NOTIFY);
		assert_int_equal(out.data, 7);
	}
	assert_int_equal(nrma_eq_of(eq)->count, 1);
	assert_int_equal(fi_eq_read(eq, &event, &out, sizeof(out), 0),
			 sizeof(out));
	assert_int_equal(fi_eq_read(eq, &event, &out, sizeof(out), FI_PEEK),
			 -FI_EAGAIN);
	assert_int_equal(fi_close(&eq->fid), 0);
}

static void test_eq_too_small(void **state)
{
	struct fid_eq *eq = open_eq(state, FI_WAIT_UNSPEC, FI_WRITE, 0);
	struct fi_eq_entry in = { .data = 8 }, out;
	uint32_t event;

	assert_int_equal(fi_eq_write(eq, FI_NOTIFY, &in, sizeof(in), 0),
			 sizeof(in));
	assert_int_equal(fi_eq_read(eq, &event, &out, sizeof(out) - 1, 0),
			 -FI_ETOOSMALL);
	/* The event is still there for a big enough buffer. */
	assert_int_equal(fi_eq_read(eq, &event, &out, sizeof(out), 0),
			 sizeof(out));
	assert_int_equal(out.data, 8);
	assert_int_equal(fi_close(&eq->fid), 0);
}

static void test_eq_full(void **state)
{
	struct fid_eq *eq = open_eq(state, FI_WAIT_UNSPEC, FI_WRITE, 2);
	struct fi_eq_entry in = { .data = 1 }, out;
	uint32_t event;

	assert_int_equal(fi_eq_write(eq, FI_NOTIFY, &in, sizeof(in), 0),
			 sizeof(in));
	assert_int_equal(fi_eq_write(eq, FI_NOTIFY, &in, sizeof(in), 0),
			 sizeof(in));
	assert_int_equal(fi_eq_write(eq, FI_NOTIFY, &in, sizeof(in), 0),
			 -FI_EAGAIN);
	assert_int_equal(fi_eq_read(eq, &event, &out, sizeof(out), 0),
			 sizeof(out));
	assert_int_equal(fi_eq_write(eq, FI_NOTIFY, &in, sizeof(in), 0),
			 sizeof(in));
	/* Unread events are freed on close. */
	assert_int_equal(fi_close(&eq->fid), 0);
}

/* A rejected connection's data: in the application's buffer, or ours. */
static void test_eq_error_data(void **state)
{
	struct fid_eq *eq = open_eq(state, FI_WAIT_UNSPEC, 0, 0);
	struct fi_eq_err_entry in = { .fid = &eq->fid, .err = FI_ECONNREFUSED },
			       out;
	char mine[4] = "", data[] = "refused!";

	assert_int_equal(
		nrma_eq_report_err(nrma_eq_of(eq), &in, data, sizeof(data)), 0);
	assert_int_equal(
		nrma_eq_report_err(nrma_eq_of(eq), &in, data, sizeof(data)), 0);
	memset(&out, 0, sizeof(out));
	assert_int_equal(fi_eq_readerr(eq, &out, 0), sizeof(out));
	assert_int_equal(out.err_data_size, sizeof(data));
	assert_memory_equal(out.err_data, data, sizeof(data));
	out.err_data = mine;
	out.err_data_size = sizeof(mine);
	assert_int_equal(fi_eq_readerr(eq, &out, 0), sizeof(out));
	assert_ptr_equal(out.err_data, mine);
	assert_int_equal(out.err_data_size, sizeof(mine));
	assert_memory_equal(mine, data, sizeof(mine));
	assert_int_equal(fi_close(&eq->fid), 0);
}

/* A connection event carries the peer's data after the entry. */
static void test_eq_cm_data(void **state)
{
	struct fid_eq *eq = open_eq(state, FI_WAIT_UNSPEC, 0, 0);
	struct fi_eq_cm_entry entry = { .fid = &eq->fid };
	struct {
		struct fi_eq_cm_entry entry;
		char data[8];
	} got;
	uint32_t event;

	assert_int_equal(nrma_eq_report_cm(nrma_eq_of(eq), FI_CONNECTED, &entry,
					   "abc", 3),
			 0);
	assert_int_equal(fi_eq_read(eq, &event, &got, sizeof(entry) + 2, 0),
			 -FI_ETOOSMALL);
	assert_int_equal(fi_eq_read(eq, &event, &got, sizeof(got), 0),
			 sizeof(entry) + 3);
	assert_int_equal(event, FI_CONNECTED);
	assert_ptr_equal(got.entry.fid, &eq->fid);
	assert_memory_equal(got.data, "abc", 3);
	assert_int_equal(fi_close(&eq->fid), 0);
}

static void test_eq_error(void **state)
{
	struct fid_eq *eq = open_eq(state, FI_WAIT_UNSPEC, FI_WRITE, 0);
	struct fi_eq_err_entry in = {
		.fid = &eq->fid, .context = state, .data = 3,
		.err = FI_ECONNREFUSED, .prov_errno = -5,
	}, out;
	struct fi_eq_entry entry = { .data = 4 }, got;
	uint32_t event;

	assert_int_equal(fi_eq_readerr(eq, &out, 0), -FI_EAGAIN);

	/* An event ahead of the error is read first. */
	assert_int_equal(fi_eq_write(eq, FI_NOTIFY, &entry, sizeof(entry), 0),
			 sizeof(entry));
	assert_int_equal(nrma_eq_report_err(nrma_eq_of(eq), &in, NULL, 0), 0);
	assert_int_equal(fi_eq_readerr(eq, &out, 0), -FI_EAGAIN);
	assert_int_equal(fi_eq_read(eq, &event, &got, sizeof(got), 0),
			 sizeof(got));
	assert_int_equal(got.data, 4);

	assert_int_equal(fi_eq_read(eq, &event, &got, sizeof(got), 0),
			 -FI_EAVAIL);
	assert_int_equal(fi_eq_read(eq, &event, &got, sizeof(got), FI_PEEK),
			 -FI_EAVAIL);
	memset(&out, 0, sizeof(out));
	assert_int_equal(fi_eq_readerr(eq, &out, FI_PEEK), sizeof(out));
	assert_int_equal(out.err, FI_ECONNREFUSED);
	memset(&out, 0, sizeof(out));
	assert_int_equal(fi_eq_readerr(eq, &out, 0), sizeof(out));
	assert_ptr_equal(out.fid, &eq->fid);
	assert_ptr_equal(out.context, state);
	assert_int_equal(out.data, 3);
	assert_int_equal(out.err, FI_ECONNREFUSED);
	assert_int_equal(out.prov_errno, -5);
	assert_int_equal(fi_eq_read(eq, &event, &got, sizeof(got), 0),
			 -FI_EAGAIN);
	assert_int_equal(fi_eq_readerr(eq, &out, 0), -FI_EAGAIN);
	assert_int_equal(fi_eq_readerr(eq, &out, FI_SEND), -FI_EBADFLAGS);
	assert_int_equal(fi_close(&eq->fid), 0);
}

static void test_eq_sread_timeout(void **state)
{
	struct fid_eq *eq = open_eq(state, FI_WAIT_UNSPEC, 0, 0);
	struct fi_eq_entry out;
	struct timespec start;
	uint32_t event;
	long ms;

	alarm(WATCHDOG_S);
	clock_gettime(CLOCK_MONOTONIC, &start);
	assert_int_equal(fi_eq_sread(eq, &event, &out, sizeof(out), 50, 0),
			 -FI_EAGAIN);
	ms = elapsed_ms(&start);
	alarm(0);
	assert_true(ms >= 45);
	assert_true(ms < 10000);
	assert_int_equal(fi_close(&eq->fid), 0);

	eq = open_eq(state, FI_WAIT_NONE, 0, 0);
	assert_int_equal(fi_eq_sread(eq, &event, &out, sizeof(out), 50, 0),
			 -FI_EINVAL);
	assert_int_equal(fi_close(&eq->fid), 0);
}

static void eq_write_fn(void *arg)
{
	struct fi_eq_entry entry = { .data = 77 };

	fi_eq_write(arg, FI_NOTIFY, &entry, sizeof(entry), 0);
}

static void test_eq_sread_wakes(void **state)
{
	struct fid_eq *eq = open_eq(state, FI_WAIT_FD, FI_WRITE, 0);
	struct fi_eq_entry out;
	struct delayed d;
	struct timespec start;
	uint32_t event = ~0u;
	ssize_t ret;
	long ms;

	clock_gettime(CLOCK_MONOTONIC, &start);
	delayed_start(&d, 30, eq_write_fn, eq);
	ret = fi_eq_sread(eq, &event, &out, sizeof(out), 10000, 0);
	ms = elapsed_ms(&start);
	delayed_join(&d);
	assert_int_equal(ret, sizeof(out));
	assert_int_equal(event, FI_NOTIFY);
	assert_int_equal(out.data, 77);
	assert_true(ms < 5000);
	assert_int_equal(fi_close(&eq->fid), 0);
}

static void test_eq_fd(void **state)
{
	struct fid_eq *eq = open_eq(state, FI_WAIT_FD, FI_WRITE, 0);
	struct fi_eq_entry in = { .data = 1 }, out;
	struct fi_eq_err_entry err = { .err = FI_EIO }, err_out;
	uint32_t event;
	int fd = -1;

	assert_int_equal(fi_control(&eq->fid, FI_GETWAIT, &fd), 0);
	assert_true(fd >= 0);
	assert_false(fd_readable(fd));
	assert_int_equal(nrma_eq_trywait(nrma_eq_of(eq)), 0);

	assert_int_equal(fi_eq_write(eq, FI_NOTIFY, &in, sizeof(in), 0),
			 sizeof(in));
	assert_true(fd_readable(fd));
	assert_int_equal(nrma_eq_trywait(nrma_eq_of(eq)), -FI_EAGAIN);
	assert_int_equal(fi_eq_read(eq, &event, &out, sizeof(out), FI_PEEK),
			 sizeof(out));
	assert_true(fd_readable(fd));
	assert_int_equal(fi_eq_read(eq, &event, &out, sizeof(out), 0),
			 sizeof(out));
	assert_false(fd_readable(fd));
	assert_int_equal(nrma_eq_trywait(nrma_eq_of(eq)), 0);

	assert_int_equal(nrma_eq_report_err(nrma_eq_of(eq), &err, NULL, 0), 0);
	assert_true(fd_readable(fd));
	assert_int_equal(fi_eq_readerr(eq, &err_out, 0), sizeof(err_out));
	assert_false(fd_readable(fd));
	assert_int_equal(fi_close(&eq->fid), 0);

	eq = open_eq(state, FI_WAIT_NONE, 0, 0);
	assert_int_equal(fi_control(&eq->fid, FI_GETWAIT, &fd), -FI_ENODATA);
	assert_int_equal(fi_close(&eq->fid), 0);
}

/*
 * prov_errno is a device event's ibv_event_type (0 is IBV_EVENT_CQ_ERR),
 * else the negative error (a connection's, an address's).
 */
static void test_eq_strerror(void **state)
{
	struct fid_eq *eq = open_eq(state, FI_WAIT_NONE, 0, 0);
	const char *want = fi_strerror(FI_ETIMEDOUT);
	char buf[128], tiny[4];

	assert_non_null(want);
	assert_true(strlen(want) > 3);
	assert_string_equal(
		fi_eq_strerror(eq, -FI_ETIMEDOUT, NULL, buf, sizeof(buf)),
		want);
	assert_string_equal(buf, want);
	assert_string_equal(
		fi_eq_strerror(eq, -FI_ETIMEDOUT, NULL, tiny, sizeof(tiny)),
		want);
	assert_int_equal(strlen(tiny), 3);
	assert_memory_equal(tiny, want, 3);
	assert_string_equal(fi_eq_strerror(eq, -FI_ETIMEDOUT, NULL, NULL, 0),
			    want);
	assert_string_equal(fi_eq_strerror(eq, 0, NULL, NULL, 0), "CQ error");
	assert_string_equal(fi_eq_strerror(eq, 8, NULL, NULL, 0),
			    "local catastrophic error");
	assert_int_equal(fi_close(&eq->fid), 0);
}

/* Old applications get the pre-1.5 fi_eq_err_entry. */
static void test_eq_readerr_v1_4(void **state)
{
	struct fake_env *env = *state;
	struct fid_eq *eq;
	struct fi_eq_err_entry in = { .err = FI_EIO, .err_data_size = 9 }, out;
	char data[] = "refused!";

	env->fabric->api_version = FI_VERSION(1, 4);
	eq = open_eq(state, FI_WAIT_NONE, 0, 0);
	assert_int_equal(nrma_eq_report_err(nrma_eq_of(eq), &in, NULL, 0), 0);
	memset(&out, 0x5a, sizeof(out));
	assert_int_equal(fi_eq_readerr(eq, &out, 0),
			 offsetof(struct fi_eq_err_entry, err_data_size));
	assert_int_equal(out.err, FI_EIO);
	assert_null(out.err_data);
	assert_int_equal(out.err_data_size, 0x5a5a5a5a5a5a5a5aULL);
	/* The data is in the EQ's buffer: such callers have none to give. */
	assert_int_equal(
		nrma_eq_report_err(nrma_eq_of(eq), &in, data, sizeof(data)), 0);
	memset(&out, 0x5a, sizeof(out));
	assert_int_equal(fi_eq_readerr(eq, &out, 0),
			 offsetof(struct fi_eq_err_entry, err_data_size));
	assert_ptr_equal(out.err_data, nrma_eq_of(eq)->err_data);
	assert_memory_equal(out.err_data, data, sizeof(data));
	assert_int_equal(out.err_data_size, 0x5a5a5a5a5a5a5a5aULL);
	assert_int_equal(fi_close(&eq->fid), 0);
}

static void test_eq_close_busy(void **state)
{
	struct fid_eq *eq = open_eq(state, FI_WAIT_UNSPEC, 0, 0);

	atomic_fetch_add(&nrma_eq_of(eq)->ref, 1);
	assert_int_equal(fi_close(&eq->fid), -FI_EBUSY);
	atomic_fetch_sub(&nrma_eq_of(eq)->ref, 1);
	assert_int_equal(fi_close(&eq->fid), 0);
}

int main(void)
{
#define T(f) \
	cmocka_unit_test_setup_teardown(f, fake_env_setup, fake_env_teardown)
	const struct CMUnitTest tests[] = {
		T(test_eq_open),
		T(test_eq_write_needs_flag),
		T(test_eq_roundtrip),
		T(test_eq_odd_sizes),
		T(test_eq_peek),
		T(test_eq_too_small),
		T(test_eq_full),
		T(test_eq_error),
		T(test_eq_error_data),
		T(test_eq_cm_data),
		T(test_eq_sread_timeout),
		T(test_eq_sread_wakes),
		T(test_eq_fd),
		T(test_eq_strerror),
		T(test_eq_readerr_v1_4),
		T(test_eq_close_busy),
	};
#undef T

	return cmocka_run_group_tests_name("nrma_eq", tests, NULL, NULL);
}
