/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Unit tests for completion queues, event queues and counters
 * (prov/nrma/nrma_cq.c, nrma_eq.c, nrma_cntr.c, nrma_wait.c), opened on a
 * fake domain and fabric.  Completions and errors that would come from
 * verbs are put into the CQ by hand, as the provider's producer does.
 */
#include "nrma_test.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <unistd.h>

#include <rdma/fi_eq.h>

#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

/* Blocking tests that should return quickly fail instead of hanging. */
#define WATCHDOG_S	20

/* Helpers */

/* Runs fn(arg) on another thread after delay_ms. */
struct delayed {
	pthread_t thread;
	int delay_ms;
	void (*fn)(void *arg);
	void *arg;
};

static void *delayed_main(void *p)
{
	struct delayed *d = p;

	usleep(d->delay_ms * 1000);
	d->fn(d->arg);
	return NULL;
}

static void delayed_start(struct delayed *d, int delay_ms,
			  void (*fn)(void *), void *arg)
{
	d->delay_ms = delay_ms;
	d->fn = fn;
	d->arg = arg;
	assert_int_equal(pthread_create(&d->thread, NULL, delayed_main, d), 0);
}

static void delayed_join(struct delayed *d)
{
	assert_int_equal(pthread_join(d->thread, NULL), 0);
}

static int fd_readable(int fd)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	int ret = poll(&pfd, 1, 0);

	assert_true(ret >= 0);
	return ret > 0 && (pfd.revents & POLLIN);
}

/* Completion queues */

static struct fid_cq *open_cq(void **state, enum fi_cq_format format,
			      enum fi_wait_obj wait_obj, size_t size)
{
	struct fi_cq_attr attr = {
		.size = size, .format = format, .wait_obj = wait_obj,
	};
	struct fid_cq *cq = NULL;

	assert_int_equal(nrma_cq_open(fake_domain(state), &attr, &cq, NULL), 0);
	assert_non_null(cq);
	return cq;
}

static struct nrma_cq *cq_of(struct fid_cq *cq)
{
	return nrma_container_of(cq, struct nrma_cq, cq_fid);
}

/* What the provider's completion path does: queue, then signal. */
static void cq_inject(struct fid_cq *cq_fid, void *context, uint64_t flags,
		      size_t len, uint64_t data, fi_addr_t src_addr)
{
	struct nrma_cq *cq = cq_of(cq_fid);
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
		nrma_wait_signal(&cq->wait);
	}
	pthread_mutex_unlock(&cq->lock);
	assert_non_null(entry);
}

static void cq_inject_err(struct fid_cq *cq_fid, void *context, int err,
			  int prov_errno)
{
	struct nrma_cq *cq = cq_of(cq_fid);
	struct nrma_cq_err *e = calloc(1, sizeof(*e));

	assert_non_null(e);
	e->err.op_context = context;
	e->err.flags = FI_RECV;
	e->err.err = err;
	e->err.prov_errno = prov_errno;
	pthread_mutex_lock(&cq->lock);
	nrma_dlist_insert_tail(&e->link, &cq->errors);
	nrma_wait_signal(&cq->wait);
	pthread_mutex_unlock(&cq->lock);
}

static void test_cq_open_formats_waits(void **state)
{
	static const enum fi_cq_format formats[] = {
		FI_CQ_FORMAT_UNSPEC, FI_CQ_FORMAT_CONTEXT, FI_CQ_FORMAT_MSG,
		FI_CQ_FORMAT_DATA, FI_CQ_FORMAT_TAGGED,
	};
	static const enum fi_wait_obj waits[] = {
		FI_WAIT_NONE, FI_WAIT_UNSPEC, FI_WAIT_FD, FI_WAIT_YIELD,
	};
	struct fake_env *env = *state;

	for (size_t f = 0; f < ARRAY_SIZE(formats); f++) {
		for (size_t w = 0; w < ARRAY_SIZE(waits); w++) {
			struct fid_cq *cq = open_cq(state, formats[f], waits[w],
						    0);
			enum fi_wait_obj obj = (enum fi_wait_obj) -1;
			enum fi_wait_obj want = waits[w] == FI_WAIT_UNSPEC ?
						FI_WAIT_FD : waits[w];

			assert_int_equal(cq->fid.fclass, FI_CLASS_CQ);
			assert_int_equal(cq_of(cq)->format,
					 formats[f] == FI_CQ_FORMAT_UNSPEC ?
					 FI_CQ_FORMAT_CONTEXT : formats[f]);
			assert_int_equal(fi_control(&cq->fid, FI_GETWAITOBJ,
						    &obj), 0);
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

	attr.flags = FI_AFFINITY;
	assert_int_equal(nrma_cq_open(dom, &attr, &cq, NULL), -FI_ENOSYS);
	attr.flags = FI_SEND;
	assert_int_equal(nrma_cq_open(dom, &attr, &cq, NULL), -FI_EBADFLAGS);
	attr.flags = 0;

	assert_int_equal(nrma_cq_open(dom, NULL, &cq, NULL), -FI_EINVAL);
	assert_null(cq);
}

static void test_cq_size(void **state)
{
	struct fid_cq *cq = open_cq(state, FI_CQ_FORMAT_CONTEXT, FI_WAIT_NONE, 0);
	int ctx[3];

	assert_int_equal(cq_of(cq)->comps.capacity, nrma_params.cq_size);
	assert_int_equal(fi_close(&cq->fid), 0);

	cq = open_cq(state, FI_CQ_FORMAT_CONTEXT, FI_WAIT_NONE, 2);
	assert_int_equal(cq_of(cq)->comps.capacity, 2);
	cq_inject(cq, &ctx[0], FI_SEND, 0, 0, 0);
	cq_inject(cq, &ctx[1], FI_SEND, 0, 0, 0);
	assert_true(nrma_ring_full(&cq_of(cq)->comps));
	assert_int_equal(fi_close(&cq->fid), 0);

	cq = open_cq(state, FI_CQ_FORMAT_CONTEXT, FI_WAIT_NONE, 1u << 20);
	assert_int_equal(cq_of(cq)->comps.capacity, 1u << 20);
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
		cq_inject(cq, &ctx[i], FI_RECV | FI_REMOTE_CQ_DATA,
			  100 + i, 1000 + i, 7 + i);

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
	assert_int_equal(src[1], (fi_addr_t) -1);	/* untouched */
	assert_int_equal(fi_cq_read(cq, buf, 4), -FI_EAGAIN);
	assert_int_equal(fi_close(&cq->fid), 0);
}

/* Each format gets exactly its own entry size, packed back to back. */
static void test_cq_read_context_format(void **state)
{
	struct fid_cq *cq = open_cq(state, FI_CQ_FORMAT_CONTEXT, FI_WAIT_NONE, 8);
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
	/* A pending error takes precedence over completions. */
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
	assert_ptr_equal(buf[0].op_context, &ctx[0]);

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

static void test_cq_sread_wait_none(void **state)
{
	struct fid_cq *cq = open_cq(state, FI_CQ_FORMAT_CONTEXT, FI_WAIT_NONE, 8);
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
	assert_int_equal(nrma_cq_trywait(cq_of(cq)), 0);
	assert_false(fd_readable(fd));
	cq_inject(cq, &ctx, FI_SEND, 0, 0, 0);
	assert_int_equal(nrma_cq_trywait(cq_of(cq)), -FI_EAGAIN);
	assert_true(fd_readable(fd));
	assert_int_equal(fi_cq_read(cq, buf, 1), 1);
	assert_int_equal(nrma_cq_trywait(cq_of(cq)), 0);
	cq_inject_err(cq, &ctx, FI_EIO, 0);
	assert_int_equal(nrma_cq_trywait(cq_of(cq)), -FI_EAGAIN);
	assert_int_equal(fi_cq_readerr(cq, &err, 0), 1);
	assert_int_equal(nrma_cq_trywait(cq_of(cq)), 0);
	/* A stale signal is drained, so poll() would sleep. */
	fi_cq_signal(cq);
	assert_true(fd_readable(fd));
	assert_int_equal(nrma_cq_trywait(cq_of(cq)), 0);
	assert_false(fd_readable(fd));
	assert_int_equal(fi_close(&cq->fid), 0);
}

static void test_cq_close_busy(void **state)
{
	struct fid_cq *cq = open_cq(state, FI_CQ_FORMAT_CONTEXT, FI_WAIT_FD, 8);

	atomic_fetch_add(&cq_of(cq)->ref, 1);
	assert_int_equal(fi_close(&cq->fid), -FI_EBUSY);
	atomic_fetch_sub(&cq_of(cq)->ref, 1);
	assert_int_equal(fi_close(&cq->fid), 0);
}

/* Event queues */

static struct fid_eq *open_eq(void **state, enum fi_wait_obj wait_obj,
			      uint64_t flags, size_t size)
{
	struct fi_eq_attr attr = {
		.size = size, .wait_obj = wait_obj, .flags = flags,
	};
	struct fid_eq *eq = NULL;

	assert_int_equal(nrma_eq_open(fake_fabric(state), &attr, &eq, NULL), 0);
	assert_non_null(eq);
	return eq;
}

static struct nrma_eq *eq_of(struct fid_eq *eq)
{
	return nrma_container_of(eq, struct nrma_eq, eq_fid);
}

static void test_eq_open(void **state)
{
	struct fake_env *env = *state;
	struct fi_eq_attr attr = { .wait_obj = FI_WAIT_UNSPEC };
	struct fid_eq *eq = NULL;
	enum fi_wait_obj obj;

	assert_int_equal(nrma_eq_open(fake_fabric(state), &attr, &eq, &attr), 0);
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
	assert_int_equal(fi_eq_write(eq, FI_NOTIFY, &entry, sizeof(entry),
				     FI_PEEK), -FI_EBADFLAGS);
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
	assert_int_equal(fi_eq_write(eq, FI_MR_COMPLETE, &in[1], sizeof(in[1]),
				     0), sizeof(in[1]));
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
	assert_int_equal(fi_eq_read(eq, &event, &small_out, sizeof(small_out),
				    0), sizeof(small));
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
		assert_int_equal(fi_eq_read(eq, &event, &out, sizeof(out),
					    FI_PEEK), sizeof(out));
		assert_int_equal(event, FI_NOTIFY);
		assert_int_equal(out.data, 7);
	}
	assert_int_equal(eq_of(eq)->count, 1);
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
	assert_int_equal(nrma_eq_report_err(eq_of(eq), &in), 0);
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
	assert_int_equal(nrma_eq_trywait(eq_of(eq)), 0);

	assert_int_equal(fi_eq_write(eq, FI_NOTIFY, &in, sizeof(in), 0),
			 sizeof(in));
	assert_true(fd_readable(fd));
	assert_int_equal(nrma_eq_trywait(eq_of(eq)), -FI_EAGAIN);
	assert_int_equal(fi_eq_read(eq, &event, &out, sizeof(out), FI_PEEK),
			 sizeof(out));
	assert_true(fd_readable(fd));
	assert_int_equal(fi_eq_read(eq, &event, &out, sizeof(out), 0),
			 sizeof(out));
	assert_false(fd_readable(fd));
	assert_int_equal(nrma_eq_trywait(eq_of(eq)), 0);

	assert_int_equal(nrma_eq_report_err(eq_of(eq), &err), 0);
	assert_true(fd_readable(fd));
	assert_int_equal(fi_eq_readerr(eq, &err_out, 0), sizeof(err_out));
	assert_false(fd_readable(fd));
	assert_int_equal(fi_close(&eq->fid), 0);

	eq = open_eq(state, FI_WAIT_NONE, 0, 0);
	assert_int_equal(fi_control(&eq->fid, FI_GETWAIT, &fd), -FI_ENODATA);
	assert_int_equal(fi_close(&eq->fid), 0);
}

static void test_eq_strerror(void **state)
{
	struct fid_eq *eq = open_eq(state, FI_WAIT_NONE, 0, 0);
	const char *want = fi_strerror(FI_ETIMEDOUT);
	char buf[128], tiny[4];

	assert_non_null(want);
	assert_true(strlen(want) > 3);
	assert_string_equal(fi_eq_strerror(eq, FI_ETIMEDOUT, NULL, buf,
					   sizeof(buf)), want);
	assert_string_equal(buf, want);
	assert_string_equal(fi_eq_strerror(eq, FI_ETIMEDOUT, NULL, tiny,
					   sizeof(tiny)), want);
	assert_int_equal(strlen(tiny), 3);
	assert_memory_equal(tiny, want, 3);
	assert_string_equal(fi_eq_strerror(eq, FI_ETIMEDOUT, NULL, NULL, 0),
			    want);
	assert_int_equal(fi_close(&eq->fid), 0);
}

/* Old applications get the pre-1.5 fi_eq_err_entry. */
static void test_eq_readerr_v1_4(void **state)
{
	struct fake_env *env = *state;
	struct fid_eq *eq;
	struct fi_eq_err_entry in = { .err = FI_EIO, .err_data_size = 9 }, out;

	env->fabric->api_version = FI_VERSION(1, 4);
	eq = open_eq(state, FI_WAIT_NONE, 0, 0);
	assert_int_equal(nrma_eq_report_err(eq_of(eq), &in), 0);
	memset(&out, 0x5a, sizeof(out));
	assert_int_equal(fi_eq_readerr(eq, &out, 0),
			 offsetof(struct fi_eq_err_entry, err_data_size));
	assert_int_equal(out.err, FI_EIO);
	assert_int_equal(out.err_data_size, 0x5a5a5a5a5a5a5a5aULL);
	assert_int_equal(fi_close(&eq->fid), 0);
}

static void test_eq_close_busy(void **state)
{
	struct fid_eq *eq = open_eq(state, FI_WAIT_UNSPEC, 0, 0);

	atomic_fetch_add(&eq_of(eq)->ref, 1);
	assert_int_equal(fi_close(&eq->fid), -FI_EBUSY);
	atomic_fetch_sub(&eq_of(eq)->ref, 1);
	assert_int_equal(fi_close(&eq->fid), 0);
}

/* Counters */

static struct fid_cntr *open_cntr(void **state, enum fi_wait_obj wait_obj)
{
	struct fi_cntr_attr attr = {
		.events = FI_CNTR_EVENTS_COMP, .wait_obj = wait_obj,
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
		FI_WAIT_NONE, FI_WAIT_UNSPEC, FI_WAIT_FD, FI_WAIT_YIELD,
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
		FI_WAIT_NONE, FI_WAIT_FD, FI_WAIT_YIELD,
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
	assert_int_equal(nrma_cntr_trywait(nrma_container_of(cntr,
				struct nrma_cntr, cntr_fid)), 0);
	assert_false(fd_readable(fd));
	assert_int_equal(fi_cntr_adderr(cntr, 1), 0);
	assert_true(fd_readable(fd));
	assert_int_equal(fi_close(&cntr->fid), 0);
}

static void test_cntr_close_busy(void **state)
{
	struct fid_cntr *cntr = open_cntr(state, FI_WAIT_UNSPEC);
	struct nrma_cntr *c = nrma_container_of(cntr, struct nrma_cntr, cntr_fid);

	atomic_fetch_add(&c->ref, 1);
	assert_int_equal(fi_close(&cntr->fid), -FI_EBUSY);
	atomic_fetch_sub(&c->ref, 1);
	assert_int_equal(fi_close(&cntr->fid), 0);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, fake_env_setup, fake_env_teardown)
	const struct CMUnitTest tests[] = {
		T(test_cq_open_formats_waits),
		T(test_cq_open_errors),
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
		T(test_cq_sread_wakes_on_completion),
		T(test_cq_sread_wait_none),
		T(test_cq_trywait),
		T(test_cq_close_busy),
		T(test_eq_open),
		T(test_eq_write_needs_flag),
		T(test_eq_roundtrip),
		T(test_eq_odd_sizes),
		T(test_eq_peek),
		T(test_eq_too_small),
		T(test_eq_full),
		T(test_eq_error),
		T(test_eq_sread_timeout),
		T(test_eq_sread_wakes),
		T(test_eq_fd),
		T(test_eq_strerror),
		T(test_eq_readerr_v1_4),
		T(test_eq_close_busy),
		T(test_cntr_open),
		T(test_cntr_values),
		T(test_cntr_wait_met),
		T(test_cntr_wait_timeout),
		T(test_cntr_wait_woken),
		T(test_cntr_wait_error),
		T(test_cntr_trywait),
		T(test_cntr_close_busy),
	};
#undef T

	return cmocka_run_group_tests_name("nrma_queues", tests, NULL, NULL);
}
