/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Completion queues.  Completions wait in a ring sized as the application
 * asked, error entries among them in the order they came: fi_cq_read
 * returns the completions before the first error, then -FI_EAVAIL until
 * fi_cq_readerr takes it (as libfabric's own CQs do).  Endpoint progress
 * writes both (nrma_comp.c); this file reads them.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "nrma.h"
#include "nrma_comp.h"
#include "nrma_enosys.h"
#include "nrma_verbs.h"

#define NRMA_CQ_MAX_SIZE (1u << 20)

static size_t cq_format_size(enum fi_cq_format format)
{
	switch (format) {
	case FI_CQ_FORMAT_CONTEXT:
		return sizeof(struct fi_cq_entry);
	case FI_CQ_FORMAT_MSG:
		return sizeof(struct fi_cq_msg_entry);
	case FI_CQ_FORMAT_DATA:
		return sizeof(struct fi_cq_data_entry);
	case FI_CQ_FORMAT_TAGGED:
		return sizeof(struct fi_cq_tagged_entry);
	default:
		return 0;
	}
}

/*
 * Copies the oldest entries before the first error, up to count, each as
 * its first size bytes (the formats are prefixes of fi_cq_tagged_entry):
 * how many.  Inline in each case of cq_copy_entries, where size is a
 * constant: a copy is a few moves, and no format is looked at per entry.
 */
static NRMA_INLINE size_t cq_copy_run(const struct nrma_cq *cq, char *dst,
				      size_t count, fi_addr_t *src_addr,
				      size_t size)
{
	const struct nrma_cq_entry *slots = (const void *) cq->comps.elems;
	size_t n, max = count < cq->comps.count ? count : cq->comps.count;

	for (n = 0; n < max; n++) {
		const struct nrma_cq_entry *entry =
			&slots[nrma_ring_index(&cq->comps, n)];

		if (entry->err)
			break;
		memcpy(dst + n * size, &entry->comp, size);
		if (src_addr)
			src_addr[n] = entry->src_addr;
	}
	return n;
}

static size_t cq_copy_entries(const struct nrma_cq *cq, void *buf, size_t count,
			      fi_addr_t *src_addr)
{
	switch (cq->format) {
	case FI_CQ_FORMAT_CONTEXT:
		return cq_copy_run(cq, buf, count, src_addr,
				   sizeof(struct fi_cq_entry));
	case FI_CQ_FORMAT_MSG:
		return cq_copy_run(cq, buf, count, src_addr,
				   sizeof(struct fi_cq_msg_entry));
	case FI_CQ_FORMAT_DATA:
		return cq_copy_run(cq, buf, count, src_addr,
				   sizeof(struct fi_cq_data_entry));
	default:
		return cq_copy_run(cq, buf, count, src_addr,
				   sizeof(struct fi_cq_tagged_entry));
	}
}

/*
 * Lets the wait fd go quiet, unless a thread that fi_cq_signal woke has
 * yet to see it: draining then could put that thread back to sleep.
 */
static void cq_drain(struct nrma_cq *cq)
{
	if (!cq->unwoken)
		nrma_wait_lower(&cq->wait);
}

/* Takes the n oldest entries off the ring: room for progress again. */
static void cq_consume(struct nrma_cq *cq, size_t n)
{
	nrma_ring_consume(&cq->comps, n);
	nrma_cq_room_update(cq);
	if (nrma_ring_empty(&cq->comps))
		cq_drain(cq);
}

static ssize_t cq_read_locked(struct nrma_cq *cq, void *buf, size_t count,
			      fi_addr_t *src_addr)
{
	size_t n;

	if (nrma_ring_empty(&cq->comps))
		return -FI_EAGAIN;
	n = cq_copy_entries(cq, buf, count, src_addr);
	if (!n && count)
		return -FI_EAVAIL;
	cq_consume(cq, n);
	return n;
}

/* The error entry at the head of the ring, taken off it, or NULL. */
static struct fi_cq_err_entry *cq_pop_err(struct nrma_cq *cq)
{
	struct nrma_cq_entry *head;
	struct fi_cq_err_entry *err;

	if (nrma_ring_empty(&cq->comps))
		return NULL;
	head = nrma_ring_at(&cq->comps, 0);
	err = head->err;
	if (!err)
		return NULL;
	cq->errors--;
	cq_consume(cq, 1);
	return err;
}

/* Out of line: a read that finds nothing queued saves no registers. */
static NRMA_NOINLINE ssize_t cq_read_queued(struct nrma_cq *cq, void *buf,
					    size_t count, fi_addr_t *src_addr)
{
	ssize_t ret;

	pthread_mutex_lock(&cq->lock);
	ret = cq_read_locked(cq, buf, count, src_addr);
	pthread_mutex_unlock(&cq->lock);
	return ret;
}

/*
 * After what progress wrote straight into buf (nrma_comp_reader), what
 * the ring holds, in the room left: entries queued before the first of
 * those would have kept progress out of buf.
 */
static ssize_t cq_read_after(struct nrma_cq *cq,
			     const struct nrma_comp_reader *r)
{
	ssize_t ret;

	if (r->n == r->count)
		return (ssize_t) r->n;
	ret = cq_read_queued(cq, r->buf + r->n * cq->format_size,
			     r->count - r->n,
			     r->src_addr ? r->src_addr + r->n : NULL);
	if (!r->n)
		return ret;
	/* An error in the ring is the next read's. */
	return (ssize_t) r->n + (ret > 0 ? ret : 0);
}

static ssize_t nrma_cq_readfrom(struct fid_cq *cq_fid, void *buf, size_t count,
				fi_addr_t *src_addr)
{
	struct nrma_cq *cq = nrma_cq_of(cq_fid);
	struct nrma_comp_reader reader = {
		.cq = cq,
		.buf = buf,
		.src_addr = src_addr,
		.count = count,
	};

	if (!buf && count)
		return -FI_EINVAL;
	nrma_ep_set_progress(&cq->eps, &reader);
	/* Nothing there: no lock.  An entry another thread is queueing
	 * meanwhile is the next read's, as if this one came first. */
	if (!atomic_load_explicit(&cq->queued, memory_order_relaxed))
		return reader.n ? (ssize_t) reader.n : -FI_EAGAIN;
	return cq_read_after(cq, &reader);
}

static ssize_t nrma_cq_read(struct fid_cq *cq_fid, void *buf, size_t count)
{
	return nrma_cq_readfrom(cq_fid, buf, count, NULL);
}

/*
 * The application's error entry is as large as the API it asked for:
 * err_data_size came in 1.5, src_addr in 1.20 (as libfabric's util CQ).
 */
static size_t cq_err_entry_size(uint32_t version)
{
	if (FI_VERSION_LT(version, FI_VERSION(1, 5)))
		return offsetof(struct fi_cq_err_entry, err_data_size);
#if NRMA_FI_VERSION >= FI_VERSION(1, 20)
	if (FI_VERSION_LT(version, FI_VERSION(1, 20)))
		return offsetof(struct fi_cq_err_entry, src_addr);
#endif
	return sizeof(struct fi_cq_err_entry);
}

/*
 * nrma's error entries carry no error data: err_data_size says so, and
 * the application's err_data buffer, if it gave one, stays its own.
 */
static void cq_err_copy(const struct nrma_cq *cq, struct fi_cq_err_entry *buf,
			const struct fi_cq_err_entry *err)
{
	uint32_t version = cq->domain->fabric->api_version;
	size_t size = cq_err_entry_size(version);
	void *user = NULL;

	if (size > offsetof(struct fi_cq_err_entry, err_data_size) &&
	    buf->err_data_size)
		user = buf->err_data;
	memcpy(buf, err, size);
	if (size == offsetof(struct fi_cq_err_entry, err_data_size))
		return;
	buf->err_data = user;
	buf->err_data_size = 0;
#if NRMA_FI_VERSION >= FI_VERSION(1, 20)
	if (size == sizeof(*buf))
		buf->src_addr = FI_ADDR_NOTAVAIL;
#endif
}

static ssize_t nrma_cq_readerr(struct fid_cq *cq_fid,
			       struct fi_cq_err_entry *buf, uint64_t flags)
{
	struct nrma_cq *cq = nrma_cq_of(cq_fid);
	struct fi_cq_err_entry *err;

	if (flags)
		return -FI_EBADFLAGS;
	nrma_ep_set_progress(&cq->eps, NULL);
	pthread_mutex_lock(&cq->lock);
	err = cq_pop_err(cq);
	pthread_mutex_unlock(&cq->lock);
	if (!err)
		return -FI_EAGAIN;
	cq_err_copy(cq, buf, err);
	free(err);
	return 1;
}

/* Whether a read would return something: an error, or need completions. */
static bool cq_ready(const struct nrma_cq *cq, size_t need)
{
	return cq->errors || cq->comps.count >= need;
}

/* What one fi_cq_sread waits for, and where its completions go. */
struct cq_sread {
	void *buf;
	size_t count;
	fi_addr_t *src_addr;
	size_t need;	/* completions that end the wait */
	uint64_t gen;	/* cq->signal_gen when it began */
	bool signalled; /* took a signal sent before it began */
};

/*
 * FI_CQ_COND_THRESHOLD's cond is the threshold itself, not a pointer to
 * it, as in libfabric's own CQs; more than count could never be read.
 */
static size_t cq_sread_need(const struct nrma_cq *cq, const void *cond,
			    size_t count)
{
	size_t need = 1;

	if (cq->wait_cond == FI_CQ_COND_THRESHOLD && (uintptr_t) cond)
		need = (uintptr_t) cond < count ? (uintptr_t) cond : count;
	return need ? need : 1;
}

static void cq_sread_enter(struct nrma_cq *cq, struct cq_sread *rd)
{
	pthread_mutex_lock(&cq->lock);
	cq->sreaders++;
	rd->gen = cq->signal_gen;
	rd->signalled = cq->signal_unclaimed;
	cq->signal_unclaimed = false;
	pthread_mutex_unlock(&cq->lock);
}

static void cq_sread_leave(struct nrma_cq *cq, const struct cq_sread *rd)
{
	pthread_mutex_lock(&cq->lock);
	cq->sreaders--;
	if (rd->gen != cq->signal_gen && cq->unwoken)
		cq->unwoken--;
	/* cq_sread_step drained the fd below the threshold: undo that. */
	if (!nrma_ring_empty(&cq->comps))
		nrma_wait_raise(&cq->wait);
	pthread_mutex_unlock(&cq->lock);
}

/*
 * One look at the CQ: true, with *ret, when the sread is over: it read,
 * found an error, or was signalled.  Else the fd is drained, so that the
 * sleep that follows lasts until a new entry or a signal, not a spin on
 * entries that stay below the threshold.
 */
static bool cq_sread_step(struct nrma_cq *cq, const struct cq_sread *rd,
			  ssize_t *ret)
{
	bool done = true;

	pthread_mutex_lock(&cq->lock);
	if (cq_ready(cq, rd->need)) {
		*ret = cq_read_locked(cq, rd->buf, rd->count, rd->src_addr);
	} else if (rd->signalled || rd->gen != cq->signal_gen) {
		*ret = -FI_EAGAIN;
	} else {
		cq_drain(cq);
		done = false;
	}
	pthread_mutex_unlock(&cq->lock);
	return done;
}

/* Sleeps until something may have come, or the time left runs out. */
static int cq_sread_sleep(struct nrma_cq *cq, int left)
{
	if (nrma_ep_set_arm(&cq->eps))
		return 0; /* events came while arming: progress again */
	return nrma_wait_block(&cq->wait, nrma_ep_set_sleep_ms(&cq->eps, left));
}

static ssize_t nrma_cq_sreadfrom(struct fid_cq *cq_fid, void *buf, size_t count,
				 fi_addr_t *src_addr, const void *cond,
				 int timeout)
{
	struct nrma_cq *cq = nrma_cq_of(cq_fid);
	struct cq_sread rd = { .buf = buf,
			       .count = count,
			       .src_addr = src_addr };
	struct timespec start;
	ssize_t ret = -FI_EAGAIN;
	int left, err;

	if (cq->wait.type == FI_WAIT_NONE)
		return -FI_EINVAL;
	rd.need = cq_sread_need(cq, cond, count);
	clock_gettime(CLOCK_MONOTONIC, &start);
	cq_sread_enter(cq, &rd);
	for (;;) {
		nrma_ep_set_progress(&cq->eps, NULL);
		if (cq_sread_step(cq, &rd, &ret))
			break;
		left = nrma_wait_timeout_left(&start, timeout);
		if (!left)
			break;
		err = cq_sread_sleep(cq, left);
		if (err && err != -FI_ETIMEDOUT) {
			ret = err;
			break;
		}
	}
	cq_sread_leave(cq, &rd);
	return ret;
}

static ssize_t nrma_cq_sread(struct fid_cq *cq_fid, void *buf, size_t count,
			     const void *cond, int timeout)
{
	return nrma_cq_sreadfrom(cq_fid, buf, count, NULL, cond, timeout);
}

/* For poll sets: progresses, then says whether the CQ is not empty. */
bool nrma_cq_ready(struct nrma_cq *cq)
{
	bool ready;

	nrma_ep_set_progress(&cq->eps, NULL);
	pthread_mutex_lock(&cq->lock);
	ready = cq_ready(cq, 1);
	pthread_mutex_unlock(&cq->lock);
	return ready;
}

/*
 * Every thread in fi_cq_sread now returns; with none in it, the next one
 * to call it does (libfabric's fabtests signal first, then read).
 */
static int nrma_cq_signal(struct fid_cq *cq_fid)
{
	struct nrma_cq *cq = nrma_cq_of(cq_fid);

	pthread_mutex_lock(&cq->lock);
	cq->signal_gen++;
	cq->unwoken = cq->sreaders;
	cq->signal_unclaimed = !cq->sreaders;
	nrma_wait_raise(&cq->wait);
	pthread_mutex_unlock(&cq->lock);
	return 0;
}

static const char *nrma_cq_strerror(struct fid_cq *cq_fid, int prov_errno,
				    const void *err_data, char *buf, size_t len)
{
	/* 0 is IBV_WC_SUCCESS: nrma, not the device, failed the operation. */
	const char *str = prov_errno ? nrma_verbs_status_str(prov_errno) :
				       "no device error (see err)";

	(void) cq_fid;
	(void) err_data;
	if (buf && len) {
		strncpy(buf, str, len - 1);
		buf[len - 1] = '\0';
	}
	return str;
}

int nrma_cq_trywait(struct nrma_cq *cq)
{
	int ret;

	nrma_ep_set_progress(&cq->eps, NULL);
	ret = nrma_ep_set_arm(&cq->eps);
	if (ret)
		return ret;
	/* Credits come back without an event: keep polling until then. */
	if (nrma_ep_set_polled(&cq->eps))
		return -FI_EAGAIN;
	pthread_mutex_lock(&cq->lock);
	if (cq_ready(cq, 1)) {
		ret = -FI_EAGAIN;
	} else {
		cq->signal_unclaimed = false; /* stale once we go to sleep */
		cq_drain(cq);
	}
	pthread_mutex_unlock(&cq->lock);
	return ret;
}

static int nrma_cq_control(struct fid *fid, int command, void *arg)
{
	struct nrma_cq *cq = nrma_cq_of_fid(fid);

	return nrma_wait_control(&cq->wait, command, arg);
}

static int nrma_cq_close(struct fid *fid)
{
	struct nrma_cq *cq = nrma_cq_of_fid(fid);

	if (atomic_load(&cq->ref))
		return -FI_EBUSY;
	for (size_t i = 0; i < cq->comps.count; i++)
		free(((struct nrma_cq_entry *) nrma_ring_at(&cq->comps, i))
			     ->err);
	nrma_ring_fini(&cq->comps);
	nrma_ep_set_fini(&cq->eps);
	nrma_wait_close(&cq->wait);
	pthread_mutex_destroy(&cq->lock);
	atomic_fetch_sub(&cq->domain->ref, 1);
	free(cq);
	return 0;
}

static struct fi_ops nrma_cq_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = nrma_cq_close,
	.bind = nrma_no_bind,
	.control = nrma_cq_control,
	.ops_open = nrma_no_ops_open,
};

static struct fi_ops_cq nrma_cq_ops = {
	.size = sizeof(struct fi_ops_cq),
	.read = nrma_cq_read,
	.readfrom = nrma_cq_readfrom,
	.readerr = nrma_cq_readerr,
	.sread = nrma_cq_sread,
	.sreadfrom = nrma_cq_sreadfrom,
	.signal = nrma_cq_signal,
	.strerror = nrma_cq_strerror,
};

static int cq_attr_check(const struct fi_cq_attr *attr)
{
	/* FI_AFFINITY's signaling_vector is a hint: nrma ignores it. */
	if (attr->flags & ~FI_AFFINITY)
		return -FI_EBADFLAGS;
	if (attr->format != FI_CQ_FORMAT_UNSPEC &&
	    !cq_format_size(attr->format))
		return -FI_EINVAL;
	if (attr->wait_cond != FI_CQ_COND_NONE &&
	    attr->wait_cond != FI_CQ_COND_THRESHOLD)
		return -FI_EINVAL;
	if (attr->size > NRMA_CQ_MAX_SIZE)
		return -FI_EINVAL;
	return 0;
}

int nrma_cq_open(struct fid_domain *domain_fid, struct fi_cq_attr *attr,
		 struct fid_cq **cq_fid, void *context)
{
	struct nrma_domain *domain = nrma_domain_of(domain_fid);
	struct nrma_cq *cq;
	int ret;

	if (!attr)
		return -FI_EINVAL;
	ret = cq_attr_check(attr);
	if (ret)
		return ret;
	cq = calloc(1, sizeof(*cq));
	if (!cq)
		return -FI_ENOMEM;
	ret = nrma_ring_init(&cq->comps,
			     attr->size ? attr->size : nrma_params.cq_size,
			     sizeof(struct nrma_cq_entry));
	if (ret)
		goto err_free;
	nrma_cq_room_update(cq);
	ret = nrma_wait_open(&cq->wait, attr->wait_obj);
	if (ret)
		goto err_ring;
	pthread_mutex_init(&cq->lock, NULL);
	nrma_ep_set_init(&cq->eps, domain->info->domain_attr->threading);
	cq->format = attr->format == FI_CQ_FORMAT_UNSPEC ?
			     FI_CQ_FORMAT_CONTEXT :
			     attr->format;
	cq->format_size = cq_format_size(cq->format);
	cq->wait_cond = attr->wait_cond;
	cq->domain = domain;
	cq->cq_fid.fid.fclass = FI_CLASS_CQ;
	cq->cq_fid.fid.context = context;
	cq->cq_fid.fid.ops = &nrma_cq_fi_ops;
	cq->cq_fid.ops = &nrma_cq_ops;
	atomic_fetch_add(&domain->ref, 1);
	*cq_fid = &cq->cq_fid;
	return 0;

err_ring:
	nrma_ring_fini(&cq->comps);
err_free:
	free(cq);
	return ret;
}
