/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Event queues hold events and error events in one FIFO: an error at the
 * head makes fi_eq_read return -FI_EAVAIL until fi_eq_readerr takes it.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "nrma.h"
#include "nrma_enosys.h"
#include "nrma_verbs.h"

struct nrma_eq_event {
	struct nrma_dlist link;
	uint32_t event;
	bool is_error;
	size_t len;
	union {
		struct fi_eq_err_entry err;
		uint8_t data[sizeof(struct fi_eq_err_entry)];
	} u;
	/* Larger application entries continue here. */
	uint8_t extra[];
};

static int eq_push(struct nrma_eq *eq, struct nrma_eq_event *ev)
{
	pthread_mutex_lock(&eq->lock);
	if (eq->count >= eq->size) {
		pthread_mutex_unlock(&eq->lock);
		free(ev);
		return -FI_EAGAIN;
	}
	nrma_dlist_insert_tail(&ev->link, &eq->events);
	eq->count++;
	nrma_wait_signal(&eq->wait);
	pthread_mutex_unlock(&eq->lock);
	return 0;
}

static struct nrma_eq_event *event_alloc(size_t len)
{
	size_t extra = len > sizeof(((struct nrma_eq_event *) 0)->u) ?
			       len - sizeof(((struct nrma_eq_event *) 0)->u) :
			       0;

	return calloc(1, sizeof(struct nrma_eq_event) + extra);
}

static int eq_write_event(struct nrma_eq *eq, uint32_t event, const void *buf,
			  size_t len)
{
	struct nrma_eq_event *ev = event_alloc(len);

	if (!ev)
		return -FI_ENOMEM;
	ev->event = event;
	ev->len = len;
	memcpy(ev->u.data, buf, len);
	return eq_push(eq, ev);
}

int nrma_eq_report(struct nrma_eq *eq, uint32_t event,
		   const struct fi_eq_entry *entry)
{
	return eq_write_event(eq, event, entry, sizeof(*entry));
}

int nrma_eq_report_cm(struct nrma_eq *eq, uint32_t event,
		      const struct fi_eq_cm_entry *entry, const void *data,
		      size_t len)
{
	struct nrma_eq_event *ev = event_alloc(sizeof(*entry) + len);

	if (!ev)
		return -FI_ENOMEM;
	ev->event = event;
	ev->len = sizeof(*entry) + len;
	memcpy(ev->u.data, entry, sizeof(*entry));
	if (len)
		memcpy(ev->u.data + sizeof(*entry), data, len);
	return eq_push(eq, ev);
}

int nrma_eq_report_err(struct nrma_eq *eq, const struct fi_eq_err_entry *err,
		       const void *data, size_t len)
{
	struct nrma_eq_event *ev;

	if (len > NRMA_EQ_ERR_DATA_MAX)
		len = NRMA_EQ_ERR_DATA_MAX;
	ev = event_alloc(sizeof(*err) + len);
	if (!ev)
		return -FI_ENOMEM;
	ev->is_error = true;
	ev->len = sizeof(*err);
	ev->u.err = *err;
	ev->u.err.err_data = NULL;
	ev->u.err.err_data_size = len;
	if (len)
		memcpy(ev->u.data + sizeof(*err), data, len);
	return eq_push(eq, ev);
}

static ssize_t nrma_eq_write(struct fid_eq *eq_fid, uint32_t event,
			     const void *buf, size_t len, uint64_t flags)
{
	struct nrma_eq *eq = nrma_eq_of(eq_fid);
	int ret;

	if (!(eq->flags & FI_WRITE) || (!buf && len))
		return -FI_EINVAL;
	if (flags)
		return -FI_EBADFLAGS;
	ret = eq_write_event(eq, event, buf, len);
	return ret ? ret : (ssize_t) len;
}

/* Takes the head event off the queue, or leaves it with FI_PEEK. */
static void eq_consume(struct nrma_eq *eq, struct nrma_eq_event *ev,
		       uint64_t flags)
{
	if (flags & FI_PEEK)
		return;
	nrma_dlist_remove(&ev->link);
	free(ev);
	if (!--eq->count)
		nrma_wait_drain(&eq->wait);
}

static ssize_t nrma_eq_read(struct fid_eq *eq_fid, uint32_t *event, void *buf,
			    size_t len, uint64_t flags)
{
	struct nrma_eq *eq = nrma_eq_of(eq_fid);
	struct nrma_eq_event *ev;
	ssize_t ret;

	if (flags & ~FI_PEEK)
		return -FI_EBADFLAGS;
	if (!buf)
		return -FI_EINVAL;
	pthread_mutex_lock(&eq->lock);
	if (nrma_dlist_empty(&eq->events)) {
		ret = -FI_EAGAIN;
		goto out;
	}
	ev = nrma_container_of(eq->events.next, struct nrma_eq_event, link);
	if (ev->is_error) {
		ret = -FI_EAVAIL;
		goto out;
	}
	if (len < ev->len) {
		ret = -FI_ETOOSMALL;
		goto out;
	}
	if (event)
		*event = ev->event;
	memcpy(buf, ev->u.data, ev->len);
	ret = ev->len;
	eq_consume(eq, ev, flags);
out:
	pthread_mutex_unlock(&eq->lock);
	return ret;
}

/*
 * An error entry, with its data (the peer's reject data) where the
 * application's err_data buffer says (fi_eq(3)), or, if it gives none or
 * knows no err_data_size (API 1.4 and older), in the EQ's own buffer
 * until the next fi_eq_readerr.
 */
static ssize_t eq_err_copy(struct nrma_eq *eq, const struct nrma_eq_event *ev,
			   struct fi_eq_err_entry *buf)
{
	size_t full = sizeof(*buf);
	size_t size = nrma_err_entry_size(
		eq->fabric->api_version, full,
		offsetof(struct fi_eq_err_entry, err_data_size));
	size_t len = ev->u.err.err_data_size;
	const uint8_t *data = ev->u.data + sizeof(ev->u.err);
	void *user = size == full ? buf->err_data : NULL;
	size_t room = user ? buf->err_data_size : 0;

	memcpy(buf, &ev->u.err, size);
	if (len && room) {
		len = len < room ? len : room;
		buf->err_data = memcpy(user, data, len);
	} else {
		buf->err_data = len ? memcpy(eq->err_data, data, len) : NULL;
	}
	if (size == full)
		buf->err_data_size = len;
	return size;
}

static ssize_t nrma_eq_readerr(struct fid_eq *eq_fid,
			       struct fi_eq_err_entry *buf, uint64_t flags)
{
	struct nrma_eq *eq = nrma_eq_of(eq_fid);
	struct nrma_eq_event *ev;
	ssize_t ret = -FI_EAGAIN;

	if (flags & ~FI_PEEK)
		return -FI_EBADFLAGS;
	pthread_mutex_lock(&eq->lock);
	if (!nrma_dlist_empty(&eq->events)) {
		ev = nrma_container_of(eq->events.next, struct nrma_eq_event,
				       link);
		if (ev->is_error) {
			ret = eq_err_copy(eq, ev, buf);
			eq_consume(eq, ev, flags);
		}
	}
	pthread_mutex_unlock(&eq->lock);
	return ret;
}

static ssize_t nrma_eq_sread(struct fid_eq *eq_fid, uint32_t *event, void *buf,
			     size_t len, int timeout, uint64_t flags)
{
	struct nrma_eq *eq = nrma_eq_of(eq_fid);
	struct timespec start;
	ssize_t ret;

	if (eq->wait.type == FI_WAIT_NONE)
		return -FI_EINVAL;
	clock_gettime(CLOCK_MONOTONIC, &start);
	for (;;) {
		ret = nrma_eq_read(eq_fid, event, buf, len, flags);
		if (ret != -FI_EAGAIN)
			return ret;
		ret = nrma_wait_block(&eq->wait,
				      nrma_wait_timeout_left(&start, timeout));
		if (ret)
			return ret == -FI_ETIMEDOUT ? -FI_EAGAIN : ret;
	}
}

static const char *nrma_eq_strerror(struct fid_eq *eq_fid, int prov_errno,
				    const void *err_data, char *buf, size_t len)
{
	/* Device events give their ibv_event_type, the others -err. */
	const char *str = prov_errno < 0 ? fi_strerror(-prov_errno) :
					   nrma_verbs_event_str(prov_errno);

	(void) eq_fid;
	(void) err_data;
	if (buf && len) {
		strncpy(buf, str, len - 1);
		buf[len - 1] = '\0';
	}
	return str;
}

int nrma_eq_trywait(struct nrma_eq *eq)
{
	int ret = 0;

	pthread_mutex_lock(&eq->lock);
	if (eq->count)
		ret = -FI_EAGAIN;
	else
		nrma_wait_drain(&eq->wait);
	pthread_mutex_unlock(&eq->lock);
	return ret;
}

static int nrma_eq_control(struct fid *fid, int command, void *arg)
{
	struct nrma_eq *eq = nrma_eq_of_fid(fid);

	return nrma_wait_control(&eq->wait, command, arg);
}

static int nrma_eq_close(struct fid *fid)
{
	struct nrma_eq *eq = nrma_eq_of_fid(fid);
	struct nrma_dlist *item;

	if (atomic_load(&eq->ref))
		return -FI_EBUSY;
	while ((item = nrma_dlist_pop_front(&eq->events)))
		free(nrma_container_of(item, struct nrma_eq_event, link));
	nrma_wait_close(&eq->wait);
	pthread_mutex_destroy(&eq->lock);
	atomic_fetch_sub(&eq->fabric->ref, 1);
	free(eq);
	return 0;
}

static struct fi_ops nrma_eq_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = nrma_eq_close,
	.bind = nrma_no_bind,
	.control = nrma_eq_control,
	.ops_open = nrma_no_ops_open,
};

static struct fi_ops_eq nrma_eq_ops = {
	.size = sizeof(struct fi_ops_eq),
	.read = nrma_eq_read,
	.readerr = nrma_eq_readerr,
	.write = nrma_eq_write,
	.sread = nrma_eq_sread,
	.strerror = nrma_eq_strerror,
};

#define NRMA_EQ_DEFAULT_SIZE 1024

int nrma_eq_open(struct fid_fabric *fabric_fid, struct fi_eq_attr *attr,
		 struct fid_eq **eq_fid, void *context)
{
	struct nrma_fabric *fabric = nrma_fabric_of(fabric_fid);
	struct nrma_eq *eq;
	int ret;

	/*
	 * FI_AFFINITY's signaling_vector is a hint, ignored; so is wait_set
	 * but with FI_WAIT_SET, which nrma_wait_open refuses.
	 */
	if (!attr || (attr->flags & ~(FI_WRITE | FI_AFFINITY)))
		return -FI_EINVAL;
	eq = calloc(1, sizeof(*eq));
	if (!eq)
		return -FI_ENOMEM;
	ret = nrma_wait_open(&eq->wait, attr->wait_obj);
	if (ret) {
		free(eq);
		return ret;
	}
	pthread_mutex_init(&eq->lock, NULL);
	nrma_dlist_init(&eq->events);
	eq->size = attr->size ? attr->size : NRMA_EQ_DEFAULT_SIZE;
	eq->flags = attr->flags;
	eq->fabric = fabric;
	eq->eq_fid.fid.fclass = FI_CLASS_EQ;
	eq->eq_fid.fid.context = context;
	eq->eq_fid.fid.ops = &nrma_eq_fi_ops;
	eq->eq_fid.ops = &nrma_eq_ops;
	atomic_fetch_add(&fabric->ref, 1);
	*eq_fid = &eq->eq_fid;
	return 0;
}
