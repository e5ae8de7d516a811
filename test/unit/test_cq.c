/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Unit tests for completion queues (prov/nrma/nrma_cq.c, nrma_wait.c),
 * opened on a fake domain.  Completions and errors that progress would
 * write are put in by hand.
 */
#include "nrma_test.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <unistd.h>

#include <rdma/fi_eq.h>

/* libfabric 2.0 deprecates poll sets; nrma keeps serving them. */
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

/* Completion queues */

static struct fid_cq *open_cq(void **state, enum fi_cq_format format,
			      enum fi_wait_obj wait_obj, size_t size)
{
	struct fi_cq_attr attr = {
		.size = size,
		.format = format,
		.wait_obj = wait_obj,
	};
	struct fid_cq *cq = NULL;

	assert_int_equal(nrma_cq_open(fake_domain(state), &attr, &cq, NULL), 0);
	assert_non_null(cq);
	return cq;
}

static struct fid_cq *open_threshold_cq(void **state)
{
	struct fi_cq_attr attr = {
		.size = 8,
		.format = FI_CQ_FORMAT_CONTEXT,
		.wait_obj = FI_WAIT_FD,
		.wait_cond = FI_CQ_COND_THRESHOLD,
	};
	struct fid_cq *cq = NULL;

	assert_int_equal(nrma_cq_open(fake_domain(state), &attr, &cq, NULL), 0);
	return cq;
}

/* What the provider's completion path does: queue, then signal. */
static void cq_inject(struct fid_cq *cq_fid, void *context, uint64_t flags,
		      size_t len, uint64_t data, fi_addr_t src_addr)
{
	struct nrma_cq *cq = nrma_cq_of(cq_fid);
	struct nrma_cq_entry *entry;

	pthread_mutex_lock(&cq->lock);
	entry = nrma_ring_push(&cq->comps);
	if (entry) {
		memset(entry, 0, sizeof(*entry));
		entry->comp.op_context = context;
		entry->comp.flags = flags;
		entry->comp.len = len;
		entry->comp.data = data;
		entry->comp.tag = 0xdead;
		entry->src_addr = src_addr;
		nrma_cq_room_update(cq); /* as progress does */
		nrma_wait_raise(&cq->wait);
	}
	pthread_mutex_unlock(&cq->lock);
	assert_non_null(entry);
}

static void cq_inject_err(struct fid_cq *cq_fid, void *context, int err,
			  int prov_errno)
{
	struct nrma_cq *cq = nrma_cq_of(cq_fid);
	struct fi_cq_err_entry *e = calloc(1, sizeof(*e));
	struct nrma_cq_entry *entry;

	assert_non_null(e);
	e->op_context = context;
	e->flags = FI_RECV;
	e->err = err;
	e->prov_errno = prov_errno;
	pthread_mutex_lock(&cq->lock);
	entry = nrma_ring_push(&cq->comps);
	if (entry) {
		*entry = (struct nrma_cq_entry){ .err = e };
		cq->errors++;
		nrma_cq_room_update(cq);
		nrma_wait_raise(&cq->wait);
	}
	pthread_mutex_unlock(&cq->lock);
	assert_non_null(entry);
}

static void test_cq_open_formats_waits(void **state)
{
	static const enum fi_cq_format formats[] = {
		FI_CQ_FORMAT_UNSPEC, FI_CQ_FORMAT_CONTEXT, FI_CQ_FORMAT_MSG,
		FI_CQ_FORMAT_DATA,   FI_CQ_FORMAT_TAGGED,
	};
	static const enum fi_wait_obj waits[] = {
		FI_WAIT_NONE,
		FI_WAIT_UNSPEC,
		FI_WAIT_FD,
		FI_WAIT_YIELD,
	};
	struct fake_env *env = *state;

	for (size_t f = 0; f < ARRAY_SIZE(formats); f++) {
		for (size_t w = 0; w < ARRAY_SIZE(waits); w++) {
			struct fid_cq *cq =
				open_cq(state, formats[f], waits[w], 0);
			enum fi_wait_obj obj = (enum fi_wait_obj) - 1;
			enum fi_wait_obj want = waits[w] == FI_WAIT_UNSPEC ?
							FI_WAIT_FD :
							waits[w];

			assert_int_equal(cq->fid.fclass, FI_CLASS_CQ);
			assert_int_equal(nrma_cq_of(cq)->format,
					 formats[f] == FI_CQ_FORMAT_UNSPEC ?
						 FI_CQ_FORMAT_CONTEXT :
						 formats[f]);
			assert_int_equal(
				fi_control(&cq->fid, FI_GETWAITOBJ, &obj), 0);
			assert_int_equal(obj, want);
			assert_int_equal(atomic_load(&env->domain->ref), 1);
			assert_int_equal(fi_close(&cq->fid), 0);
			assert_int_equal(atomic_load(&env->domain->ref), 0);
		}
	}
}

static void test_cq_open_errors(void **state)
{
	struct fi_cq_attr attr = { .format = FI_CQ_FORMAT_CONTEXT };
	struct fid_cq *cq = NULL;
	struct fid_domain *dom = fake_domain(state);

	attr.wait_obj = FI_WAIT_SET;
	assert_int_equal(nrma_cq_open(dom, &attr, &cq, NULL), -FI_ENOSYS);
	attr.wait_obj = FI_WAIT_MUTEX_COND;
	assert_int_equal(nrma_cq_open(dom, &attr, &cq, NULL), -FI_ENOSYS);
	attr.wait_obj = FI_WAIT_NONE;

	attr.format = (enum fi_cq_format) 99;
	assert_int_equal(nrma_cq_open(dom, &attr, &cq, NULL), -FI_EINVAL);
	attr.format = FI_CQ_FORMAT_CONTEXT;

	attr.size = (1u << 20) + 1;
	assert_int_equal(nrma_cq_open(dom, &attr, &cq, NULL), -FI_EINVAL);
	attr.size = 0;

	attr.wait_cond = (enum fi_cq_wait_cond) 7;
	assert_int_equal(nrma_cq_open(dom, &attr, &cq, NULL), -FI_EINVAL);
	attr.wait_cond = FI_CQ_COND_NONE;

	attr.flags = FI_SEND;
	assert_int_equal(nrma_cq_open(dom, &attr, &cq, NULL), -FI_EBADFLAGS);
	attr.flags = 0;

	assert_int_equal(nrma_cq_open(dom, NULL, &cq, NULL), -FI_EINVAL);
	assert_null(cq);
}

/* Hints nrma ignores: an affinity, a wait set with no FI_WAIT_SET. */
static void test_cq_open_hints(void **state)
{
	struct fi_cq_attr attr = {
		.format = FI_CQ_FORMAT_CONTEXT,
		.wait_obj = FI_WAIT_FD,
		.flags = FI_AFFINITY,
		.signaling_vector = 1,
	};
	struct fid_cq *cq = NULL;

	attr.wait_set = (struct fid_wait *) &attr;
	assert_int_equal(nrma_cq_open(fake_domain(state), &attr, &cq, NULL), 0);
	assert_int_equal(fi_close(&cq->fid), 0);
}

static void test_cq_size(void **state)
{
	struct fid_cq *cq =
		open_cq(state, FI_CQ_FORMAT_CONTEXT, FI_WAIT_NONE, 0);
	int ctx[3];

	assert_int_equal(nrma_cq_of(cq)->comps.capacity, nrma_params.cq_size);
	assert_int_equal(fi_close(&cq->fid), 0);

	cq = open_cq(state, FI_CQ_FORMAT_CONTEXT, FI_WAIT_NONE, 2);
	assert_int_equal(nrma_cq_of(cq)->comps.capacity, 2);
	cq_inject(cq, &ctx[0], FI_SEND, 0, 0, 0);
	cq_inject(cq, &ctx[1], FI_SEND, 0, 0, 0);
	assert_true(nrma_ring_full(&nrma_cq_of(cq)->comps));
	assert_int_equal(fi_close(&cq->fid), 0);

	cq = open_cq(state, FI_CQ_FORMAT_CONTEXT, FI_WAIT_NONE, 1u << 20);
	assert_int_equal(nrma_cq_of(cq)->comps.capacity, 1u << 20);
	assert_int_equal(fi_close(&cq->fid), 0);
}

static void test_cq_read_empty(void **state)
{
	struct fid_cq *cq = open_cq(state, FI_CQ_FORMAT_DATA, FI_WAIT_FD, 8);
	struct fi_cq_data_entry buf[2];
	struct fi_cq_err_entry err;
	fi_addr_t src;

	assert_int_equal(fi_cq_read(cq, buf, 2), -FI_EAGAIN);
	assert_int_equal(fi_cq_readfrom(cq, buf, 2, &src), -FI_EAGAIN);
	assert_int_equal(fi_cq_readerr(cq, &err, 0), -FI_EAGAIN);
	assert_int_equal(fi_cq_readerr(cq, &err, FI_PEEK), -FI_EBADFLAGS);
	assert_int_equal(fi_cq_read(cq, NULL, 1), -FI_EINVAL);
	assert_int_equal(fi_close(&cq->fid), 0);
}

static void test_cq_read_injected(void **state)
{
	struct fid_cq *cq = open_cq(state, FI_CQ_FORMAT_DATA, FI_WAIT_FD, 8);
	struct fi_cq_data_entry buf[4];
	fi_addr_t src[4];
	int ctx[3];

	for (int i = 0; i < 3; i++)
		cq_inject(cq, &ctx[i], FI_RECV | FI_REMOTE_CQ_DATA, 100 + i,
			  1000 + i, 7 + i);

	memset(buf, 0, sizeof(buf));
	assert_int_equal(fi_cq_read(cq, buf, 2), 2);
	for (int i = 0; i < 2; i++) {
		assert_ptr_equal(buf[i].op_context, &ctx[i]);
		assert_int_equal(buf[i].flags, FI_RECV | FI_REMOTE_CQ_DATA);
		assert_int_equal(buf[i].len, 100 + i);
		assert_int_equal(buf[i].data, 1000 + i);
	}
	memset(src, 0xff, sizeof(src));
	assert_int_equal(fi_cq_readfrom(cq, buf, 4, src), 1);
	assert_ptr_equal(buf[0].op_context, &ctx[2]);
	assert_int_equal(buf[0].data, 1002);
	assert_int_equal(src[0], 9);
	assert_int_equal(src[1], (fi_addr_t) -1); /* untouched */
	assert_int_equal(fi_cq_read(cq, buf, 4), -FI_EAGAIN);
	assert_int_equal(fi_close(&cq->fid), 0);
}

/* Each format gets exactly its own entry size, packed back to back. */
static void test_cq_read_context_format(void **state)
{
	struct fid_cq *cq =
		open_cq(state, FI_CQ_FORMAT_CONTEXT, FI_WAIT_NONE, 8);
	struct fi_cq_entry buf[4];
	int ctx[3];

	memset(buf, 0, sizeof(buf));
	for (int i = 0; i < 3; i++)
		cq_inject(cq, &ctx[i], FI_SEND, 1, 2, 3);
	assert_int_equal(fi_cq_read(cq, buf, 3), 3);
	for (int i = 0; i < 3; i++)
		assert_ptr_equal(buf[i].op_context, &ctx[i]);
	assert_null(buf[3].op_context);
	assert_int_equal(fi_close(&cq->fid), 0);
}

static void test_cq_read_msg_format(void **state)
{
	struct fid_cq *cq = open_cq(state, FI_CQ_FORMAT_MSG, FI_WAIT_NONE, 8);
	struct fi_cq_msg_entry buf[3];
	int ctx[2];

	memset(buf, 0, sizeof(buf));
	cq_inject(cq, &ctx[0], FI_SEND, 11, 2, 3);
	cq_inject(cq, &ctx[1], FI_RECV, 22, 2, 3);
	assert_int_equal(fi_cq_read(cq, buf, 3), 2);
	assert_ptr_equal(buf[1].op_context, &ctx[1]);
	assert_int_equal(buf[1].flags, FI_RECV);
	assert_int_equal(buf[1].len, 22);
	assert_null(buf[2].op_context);
	assert_int_equal(fi_close(&cq->fid), 0);
}

static void test_cq_errors(void **state)
{
	struct fake_env *env = *state;
	struct fid_cq *cq = open_cq(state, FI_CQ_FORMAT_CONTEXT, FI_WAIT_FD, 8);
	struct fi_cq_err_entry err;
	struct fi_cq_entry buf[2];
	int ctx[3];

	cq_inject(cq, &ctx[0], FI_SEND, 0, 0, 0);
	cq_inject_err(cq, &ctx[1], FI_EIO, 5);
	cq_inject(cq, &ctx[2], FI_SEND, 0, 0, 0);
	/* Entries come in order: the completion before the error first. */
	assert_int_equal(fi_cq_readerr(cq, &err, 0), -FI_EAGAIN);
	assert_int_equal(fi_cq_read(cq, buf, 2), 1);
	assert_ptr_equal(buf[0].op_context, &ctx[0]);
	assert_int_equal(fi_cq_read(cq, buf, 2), -FI_EAVAIL);
	assert_int_equal(fi_cq_read(cq, buf, 2), -FI_EAVAIL);
	memset(&err, 0, sizeof(err));
	assert_int_equal(fi_cq_readerr(cq, &err, 0), 1);
	assert_ptr_equal(err.op_context, &ctx[1]);
	assert_int_equal(err.err, FI_EIO);
	assert_int_equal(err.prov_errno, 5);
	assert_int_equal(err.flags, FI_RECV);
	assert_int_equal(fi_cq_readerr(cq, &err, 0), -FI_EAGAIN);
	assert_int_equal(fi_cq_read(cq, buf, 2), 1);
	assert_ptr_equal(buf[0].op_context, &ctx[2]);
	assert_int_equal(fi_cq_read(cq, buf, 2), -FI_EAGAIN);

	/* Errors that are never read are freed on close. */
	cq_inject_err(cq, &ctx[2], FI_ECANCELED, 0);
	cq_inject_err(cq, &ctx[2], FI_ECANCELED, 0);
	assert_int_equal(fi_close(&cq->fid), 0);

	/* Pre-1.5 applications get the short error entry. */
	env->fabric->api_version = FI_VERSION(1, 4);
	cq = open_cq(state, FI_CQ_FORMAT_CONTEXT, FI_WAIT_NONE, 8);
	cq_inject_err(cq, &ctx[0], FI_EIO, 0);
	memset(&err, 0x5a, sizeof(err));
	assert_int_equal(fi_cq_readerr(cq, &err, 0), 1);
	assert_int_equal(err.err, FI_EIO);
	assert_int_equal(err.err_data_size, 0x5a5a5a5a5a5a5a5aULL);
	assert_int_equal(fi_close(&cq->fid), 0);
}

static void test_cq_getwait(void **state)
{
	struct fid_cq *cq = open_cq(state, FI_CQ_FORMAT_CONTEXT, FI_WAIT_FD, 8);
	int fd = -1;

	assert_int_equal(fi_control(&cq->fid, FI_GETWAIT, &fd), 0);
	assert_true(fd >= 0);
	assert_true(fcntl(fd, F_GETFD) >= 0);
	assert_int_equal(fi_control(&cq->fid, FI_GETOPSFLAG, &fd), -FI_ENOSYS);
	assert_int_equal(fi_close(&cq->fid), 0);

	cq = open_cq(state, FI_CQ_FORMAT_CONTEXT, FI_WAIT_NONE, 8);
	assert_int_equal(fi_control(&cq->fid, FI_GETWAIT, &fd), -FI_ENODATA);
	assert_int_equal(fi_close(&cq->fid), 0);
}

/* The wait fd is readable exactly while there is something to read. */
static void test_cq_fd_readable(void **state)
{
	struct fid_cq *cq = open_cq(state, FI_CQ_FORMAT_CONTEXT, FI_WAIT_FD, 8);
	struct fi_cq_entry buf[2];
	struct fi_cq_err_entry err;
	int fd = -1, ctx;

	assert_int_equal(fi_control(&cq->fid, FI_GETWAIT, &fd), 0);
	assert_false(fd_readable(fd));
	cq_inject(cq, &ctx, FI_SEND, 0, 0, 0);
	cq_inject(cq, &ctx, FI_SEND, 0, 0, 0);
	assert_true(fd_readable(fd));
	assert_int_equal(fi_cq_read(cq, buf, 1), 1);
	assert_true(fd_readable(fd));
	assert_int_equal(fi_cq_read(cq, buf, 1), 1);
	assert_false(fd_readable(fd));

	cq_inject_err(cq, &ctx, FI_EIO, 0);
	assert_true(fd_readable(fd));
	assert_int_equal(fi_cq_readerr(cq, &err, 0), 1);
	assert_false(fd_readable(fd));
	assert_int_equal(fi_close(&cq->fid), 0);
}

static void test_cq_sread_timeout(void **state)
{
	struct fid_cq *cq = open_cq(state, FI_CQ_FORMAT_CONTEXT, FI_WAIT_FD, 8);
	struct fi_cq_entry buf[1];
	struct timespec start;
	long ms;

	alarm(WATCHDOG_S);
	clock_gettime(CLOCK_MONOTONIC, &start);
	assert_int_equal(fi_cq_sread(cq, buf, 1, NULL, 100), -FI_EAGAIN);
	ms = elapsed_ms(&start);
	alarm(0);
	assert_true(ms >= 90);
	assert_true(ms < 10000);

	clock_gettime(CLOCK_MONOTONIC, &start);
	assert_int_equal(fi_cq_sread(cq, buf, 1, NULL, 0), -FI_EAGAIN);
	assert_true(elapsed_ms(&start) < 1000);
	assert_int_equal(fi_close(&cq->fid), 0);
}

static void cq_signal_fn(void *arg)
{
	fi_cq_signal(arg);
}

static void test_cq_signal_wakes_sread(void **state)
{
	struct fid_cq *cq = open_cq(state, FI_CQ_FORMAT_CONTEXT, FI_WAIT_FD, 8);
	struct fi_cq_entry buf[1];
	struct delayed d;
	struct timespec start;
	ssize_t ret;
	long ms;

	alarm(WATCHDOG_S);
	clock_gettime(CLOCK_MONOTONIC, &start);
	delayed_start(&d, 50, cq_signal_fn, cq);
	ret = fi_cq_sread(cq, buf, 1, NULL, -1);
	ms = elapsed_ms(&start);
	delayed_join(&d);
	alarm(0);
	assert_int_equal(ret, -FI_EAGAIN);
	assert_true(ms >= 40);

	/* One signal wakes one sread: the next one waits out its timeout. */
	clock_gettime(CLOCK_MONOTONIC, &start);
	assert_int_equal(fi_cq_sread(cq, buf, 1, NULL, 50), -FI_EAGAIN);
	assert_true(elapsed_ms(&start) >= 45);
	assert_int_equal(fi_close(&cq->fid), 0);
}

/* A signal with no sread to wake ends the next one (fabtests' cq_signal). */
static void test_cq_signal_before_sread(void **state)
{
	struct fid_cq *cq = open_cq(state, FI_CQ_FORMAT_CONTEXT, FI_WAIT_FD, 8);
	struct fi_cq_entry buf[1];
	struct timespec start;

	alarm(WATCHDOG_S);
	assert_int_equal(fi_cq_signal(cq), 0);
	clock_gettime(CLOCK_MONOTONIC, &start);
	assert_int_equal(fi_cq_sread(cq, buf, 1, NULL, 2000), -FI_EAGAIN);
	assert_true(elapsed_ms(&start) < 1000);
	/* That sread took it: the next one waits out its timeout. */
	clock_gettime(CLOCK_MONOTONIC, &start);
	assert_int_equal(fi_cq_sread(cq, buf, 1, NULL, 50), -FI_EAGAIN);
	assert_true(elapsed_ms(&start) >= 45);
	alarm(0);
	assert_int_equal(fi_close(&cq->fid), 0);
}

static void cq_inject_fn(void *arg)
{
	static int ctx;

	cq_inject(arg, &ctx, FI_RECV, 42, 0, 0);
}

static void test_cq_sread_wakes_on_completion(void **state)
{
	struct fid_cq *cq = open_cq(state, FI_CQ_FORMAT_MSG, FI_WAIT_FD, 8);
	struct fi_cq_msg_entry buf[2];
	struct delayed d;
	struct timespec start;
	ssize_t ret;
	long ms;

	clock_gettime(CLOCK_MONOTONIC, &start);
	delayed_start(&d, 30, cq_inject_fn, cq);
	ret = fi_cq_sread(cq, buf, 2, NULL, 10000);
	ms = elapsed_ms(&start);
	delayed_join(&d);
	assert_int_equal(ret, 1);
	assert_int_equal(buf[0].len, 42);
	assert_true(ms < 5000);
	assert_int_equal(fi_close(&cq->fid), 0);
}

static long cpu_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * Fewer entries than the threshold (cond is its value, as in libfabric's
 * own CQs): the sread sleeps, without spinning, until its timeout.
 */
static void test_cq_sread_threshold_timeout(void **state)
{
	struct fid_cq *cq = open_threshold_cq(state);
	struct fi_cq_entry buf[4];
	struct timespec start;
	long cpu, ms;
	int ctx;

	cq_inject(cq, &ctx, FI_RECV, 0, 0, 0);
	cq_inject(cq, &ctx, FI_RECV, 0, 0, 0);
	alarm(WATCHDOG_S);
	clock_gettime(CLOCK_MONOTONIC, &start);
	cpu = cpu_ms();
	assert_int_equal(fi_cq_sread(cq, buf, 4, (void *) 3, 500), -FI_EAGAIN);
	cpu = cpu_ms() - cpu;
	ms = elapsed_ms(&start);
	alarm(0);
	assert_true(ms >= 490);
	assert_true(ms < 1500);
	assert_true(cpu < ms / 2);
	/* What it left is still there, and the fd says so. */
	assert_int_equal(nrma_cq_trywait(nrma_cq_of(cq)), -FI_EAGAIN);
	assert_int_equal(fi_cq_read(cq, buf, 4), 2);
	assert_int_equal(fi_close(&cq->fid), 0);
}

static void test_cq_sread_threshold_met(void **state)
{
	struct fid_cq *cq = open_threshold_cq(state);
	struct fi_cq_entry buf[4];
	struct delayed d;
	struct timespec start;
	ssize_t ret;
	int ctx;

	/* The third entry, late, ends the wait. */
	cq_inject(cq, &ctx, FI_RECV, 0, 0, 0);
	cq_inject(cq, &ctx, FI_RECV, 0, 0, 0);
	alarm(WATCHDOG_S);
	clock_gettime(CLOCK_MONOTONIC, &start);
	delayed_start(&d, 100, cq_inject_fn, cq);
	ret = fi_cq_sread(cq, buf, 4, (void *) 3, 10000);
	delayed_join(&d);
	alarm(0);
	assert_int_equal(ret, 3);
	assert_true(elapsed_ms(&start) >= 90);
	assert_true(elapsed_ms(&start) < 5000);

	/* No more than count is waited for. */
	cq_inject(cq, &ctx, FI_RECV, 0, 0, 0);
	clock_gettime(CLOCK_MONOTONIC, &start);
	assert_int_equal(fi_cq_sread(cq, buf, 1, (void *) 3, 5000), 1);
	assert_true(elapsed_ms(&start) < 1000);

	/* A threshold does not outlive its call. */
	cq_inject(cq, &ctx, FI_RECV, 0, 0, 0);
	clock_gettime(CLOCK_MONOTONIC, &start);
	assert_int_equal(fi_cq_sread(cq, buf, 4, NULL, 5000), 1);
	assert_true(elapsed_ms(&start) < 1000);
	assert_int_equal(fi_close(&cq->fid), 0);
}

/* Poll sets report a CQ that is not empty, whatever its threshold. */
static void test_cq_poll_threshold(void **state)
{
	struct fid_cq *cq = open_threshold_cq(state);
	struct fi_cq_entry buf[4];
	struct fid_poll *poll;
	void *ctx[2];
	int c;

	cq->fid.context = &c;
	assert_int_equal(nrma_poll_open(fake_domain(state), NULL, &poll), 0);
	assert_int_equal(fi_poll_add(poll, &cq->fid, 0), 0);
	assert_int_equal(fi_poll(poll, ctx, 2), 0);
	cq_inject(cq, &c, FI_RECV, 0, 0, 0);
	assert_int_equal(fi_cq_sread(cq, buf, 4, (void *) 3, 0), -FI_EAGAIN);
	assert_int_equal(fi_poll(poll, ctx, 2), 1);
	assert_ptr_equal(ctx[0], &c);
	assert_int_equal(fi_close(&poll->fid), 0);
	assert_int_equal(fi_close(&cq->fid), 0);
}

struct sreader {
	pthread_t thread;
	struct fid_cq *cq;
	ssize_t ret;
};

static void *sreader_fn(void *arg)
{
	struct sreader *r = arg;
	struct fi_cq_entry buf[1];

	r->ret = fi_cq_sread(r->cq, buf, 1, NULL, 10000);
	return NULL;
}

/* Threads in an sread, at that time */
static size_t cq_sreaders(struct fid_cq *cq_fid)
{
	struct nrma_cq *cq = nrma_cq_of(cq_fid);
	size_t n;

	pthread_mutex_lock(&cq->lock);
	n = cq->sreaders;
	pthread_mutex_unlock(&cq->lock);
	return n;
}

/* fi_cq_signal wakes every thread in an sread, and only those. */
static void test_cq_signal_wakes_all(void **state)
{
	struct fid_cq *cq = open_cq(state, FI_CQ_FORMAT_CONTEXT, FI_WAIT_FD, 8);
	struct sreader r[2] = { { .cq = cq }, { .cq = cq } };
	struct fi_cq_entry buf[1];
	struct timespec start;
	long cpu;

	alarm(WATCHDOG_S);
	clock_gettime(CLOCK_MONOTONIC, &start);
	for (int i = 0; i < 2; i++)
		assert_int_equal(
			pthread_create(&r[i].thread, NULL, sreader_fn, &r[i]),
			0);
	while (cq_sreaders(cq) < 2)
		usleep(1000);
	usleep(50000);
	assert_int_equal(fi_cq_signal(cq), 0);
	for (int i = 0; i < 2; i++) {
		pthread_join(r[i].thread, NULL);
		assert_int_equal(r[i].ret, -FI_EAGAIN);
	}
	assert_true(elapsed_ms(&start) < 5000);

	/* The signal is spent: the next sread sleeps out its timeout. */
	clock_gettime(CLOCK_MONOTONIC, &start);
	cpu = cpu_ms();
	assert_int_equal(fi_cq_sread(cq, buf, 1, NULL, 200), -FI_EAGAIN);
	assert_true(elapsed_ms(&start) >= 190);
	assert_true(cpu_ms() - cpu < 100);
	alarm(0);
	assert_int_equal(fi_close(&cq->fid), 0);
}

/*
 * An application built for API 1.17 has the 1.17 entry: nothing past it
 * is written.  nrma's errors carry no error data; the application's
 * err_data buffer stays its own.  The calls go to the op, not through
 * fi_cq_readerr: under libfabric 2.x headers that sets src_addr itself.
 */
static void test_cq_readerr_versions(void **state)
{
	struct fake_env *env = *state;
	size_t v1_17 = sizeof(struct fi_cq_err_entry);
	struct fid_cq *cq;
	char mine[8];
	union {
		struct fi_cq_err_entry e;
		unsigned char b[sizeof(struct fi_cq_err_entry) + 16];
	} u;
	int ctx;

#if NRMA_FI_VERSION >= FI_VERSION(1, 20)
	v1_17 = offsetof(struct fi_cq_err_entry, src_addr);
#endif
	env->fabric->api_version = FI_VERSION(1, 17);
	cq = open_cq(state, FI_CQ_FORMAT_CONTEXT, FI_WAIT_NONE, 8);
	cq_inject_err(cq, &ctx, FI_EIO, 0);
	memset(&u, 0x5a, sizeof(u));
	u.e.err_data = mine;
	u.e.err_data_size = sizeof(mine);
	assert_int_equal(cq->ops->readerr(cq, &u.e, 0), 1);
	assert_ptr_equal(u.e.op_context, &ctx);
	assert_int_equal(u.e.err, FI_EIO);
	assert_ptr_equal(u.e.err_data, mine);
	assert_int_equal(u.e.err_data_size, 0);
	for (size_t i = v1_17; i < sizeof(u); i++)
		assert_int_equal(u.b[i], 0x5a);

	cq_inject_err(cq, &ctx, FI_EIO, 0);
	u.e.err_data_size = 0;
	assert_int_equal(cq->ops->readerr(cq, &u.e, 0), 1);
	assert_null(u.e.err_data);
	assert_int_equal(fi_close(&cq->fid), 0);

#if NRMA_FI_VERSION >= FI_VERSION(1, 20)
	env->fabric->api_version = NRMA_FI_VERSION;
	cq = open_cq(state, FI_CQ_FORMAT_CONTEXT, FI_WAIT_NONE, 8);
	cq_inject_err(cq, &ctx, FI_EIO, 0);
	memset(&u, 0x5a, sizeof(u));
	assert_int_equal(cq->ops->readerr(cq, &u.e, 0), 1);
	assert_int_equal(u.e.src_addr, FI_ADDR_NOTAVAIL);
	for (size_t i = sizeof(u.e); i < sizeof(u); i++)
		assert_int_equal(u.b[i], 0x5a);
	assert_int_equal(fi_close(&cq->fid), 0);
#endif
}

/* prov_errno 0 is no device status: the provider failed the operation. */
static void test_cq_strerror(void **state)
{
	struct fid_cq *cq =
		open_cq(state, FI_CQ_FORMAT_CONTEXT, FI_WAIT_NONE, 8);
	char buf[64];

	assert_string_equal(fi_cq_strerror(cq, 0, NULL, buf, sizeof(buf)),
			    "no device error (see err)");
	assert_string_equal(buf, "no device error (see err)");
	assert_string_equal(fi_cq_strerror(cq, 10, NULL, NULL, 0),
			    "remote access error");
	assert_int_equal(fi_close(&cq->fid), 0);
}

static void test_cq_sread_wait_none(void **state)
{
	struct fid_cq *cq =
		open_cq(state, FI_CQ_FORMAT_CONTEXT, FI_WAIT_NONE, 8);
	struct fi_cq_entry buf[1];
	int ctx;

	assert_int_equal(fi_cq_sread(cq, buf, 1, NULL, 10), -FI_EINVAL);
	cq_inject(cq, &ctx, FI_SEND, 0, 0, 0);
	assert_int_equal(fi_cq_sread(cq, buf, 1, NULL, 10), -FI_EINVAL);
	assert_int_equal(fi_cq_read(cq, buf, 1), 1);
	assert_int_equal(fi_close(&cq->fid), 0);
}

static void test_cq_trywait(void **state)
{
	struct fid_cq *cq = open_cq(state, FI_CQ_FORMAT_CONTEXT, FI_WAIT_FD, 8);
	struct fi_cq_entry buf[1];
	struct fi_cq_err_entry err;
	int ctx, fd = -1;

	assert_int_equal(fi_control(&cq->fid, FI_GETWAIT, &fd), 0);
	assert_int_equal(nrma_cq_trywait(nrma_cq_of(cq)), 0);
	assert_false(fd_readable(fd));
	cq_inject(cq, &ctx, FI_SEND, 0, 0, 0);
	assert_int_equal(nrma_cq_trywait(nrma_cq_of(cq)), -FI_EAGAIN);
	assert_true(fd_readable(fd));
	assert_int_equal(fi_cq_read(cq, buf, 1), 1);
	assert_int_equal(nrma_cq_trywait(nrma_cq_of(cq)), 0);
	cq_inject_err(cq, &ctx, FI_EIO, 0);
	assert_int_equal(nrma_cq_trywait(nrma_cq_of(cq)), -FI_EAGAIN);
	assert_int_equal(fi_cq_readerr(cq, &err, 0), 1);
	assert_int_equal(nrma_cq_trywait(nrma_cq_of(cq)), 0);
	/* A stale signal is drained, so poll() would sleep. */
	fi_cq_signal(cq);
	assert_true(fd_readable(fd));
	assert_int_equal(nrma_cq_trywait(nrma_cq_of(cq)), 0);
	assert_false(fd_readable(fd));
	assert_int_equal(fi_close(&cq->fid), 0);
}

static void test_cq_close_busy(void **state)
{
	struct fid_cq *cq = open_cq(state, FI_CQ_FORMAT_CONTEXT, FI_WAIT_FD, 8);

	atomic_fetch_add(&nrma_cq_of(cq)->ref, 1);
	assert_int_equal(fi_close(&cq->fid), -FI_EBUSY);
	atomic_fetch_sub(&nrma_cq_of(cq)->ref, 1);
	assert_int_equal(fi_close(&cq->fid), 0);
}

/* A poll set holds its members open; members of other domains fail. */
static void test_cq_in_poll_set(void **state)
{
	struct fid_cq *cq = open_cq(state, FI_CQ_FORMAT_CONTEXT, FI_WAIT_FD, 8);
	struct fake_env *other = NULL;
	struct fid_cq *foreign;
	struct fid_poll *poll;
	void *ctx[2];

	assert_int_equal(nrma_poll_open(fake_domain(state), NULL, &poll), 0);
	assert_int_equal(fi_poll_add(poll, &cq->fid, 0), 0);
	assert_int_equal(fi_close(&cq->fid), -FI_EBUSY);
	assert_int_equal(fi_poll(poll, ctx, 2), 0);
	assert_int_equal(fi_poll_del(poll, &cq->fid, 0), 0);
	assert_int_equal(fi_poll_del(poll, &cq->fid, 0), -FI_EINVAL);
	assert_int_equal(fi_close(&cq->fid), 0);

	assert_int_equal(fake_env_setup((void **) &other), 0);
	foreign =
		open_cq((void **) &other, FI_CQ_FORMAT_CONTEXT, FI_WAIT_FD, 8);
	assert_int_equal(fi_poll_add(poll, &foreign->fid, 0), -FI_EINVAL);
	assert_int_equal(fi_close(&foreign->fid), 0);
	fake_env_teardown((void **) &other);

	/* closing the set lets its members go */
	cq = open_cq(state, FI_CQ_FORMAT_CONTEXT, FI_WAIT_FD, 8);
	assert_int_equal(fi_poll_add(poll, &cq->fid, 0), 0);
	assert_int_equal(fi_close(&poll->fid), 0);
	assert_int_equal(fi_close(&cq->fid), 0);
}

int main(void)
{
#define T(f) \
	cmocka_unit_test_setup_teardown(f, fake_env_setup, fake_env_teardown)
	const struct CMUnitTest tests[] = {
		T(test_cq_open_formats_waits),
		T(test_cq_in_poll_set),
		T(test_cq_open_errors),
		T(test_cq_open_hints),
		T(test_cq_size),
		T(test_cq_read_empty),
		T(test_cq_read_injected),
		T(test_cq_read_context_format),
		T(test_cq_read_msg_format),
		T(test_cq_errors),
		T(test_cq_getwait),
		T(test_cq_fd_readable),
		T(test_cq_sread_timeout),
		T(test_cq_signal_wakes_sread),
		T(test_cq_signal_before_sread),
		T(test_cq_sread_wakes_on_completion),
		T(test_cq_sread_threshold_timeout),
		T(test_cq_sread_threshold_met),
		T(test_cq_poll_threshold),
		T(test_cq_signal_wakes_all),
		T(test_cq_readerr_versions),
		T(test_cq_strerror),
		T(test_cq_sread_wait_none),
		T(test_cq_trywait),
		T(test_cq_close_busy),
	};
#undef T

	return cmocka_run_group_tests_name("nrma_cq", tests, NULL, NULL);
}
