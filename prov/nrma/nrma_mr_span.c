/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Registered spans.  An operation whose descriptor cannot serve its
 * buffer (none without FI_MR_LOCAL, or one without the access) needs a
 * registration that covers it.  One of the application's own does, when
 * the buffer lies inside it: what the application registered is that
 * registration's memory for as long as it is open (fi_mr(3)), so the
 * operation borrows it instead of registering, and pinning, the buffer
 * again; else it makes one of its own.  Either way it holds a reference,
 * and fi_close of the MR leaves the deregistration to the last user.
 *
 * The index is a list under its lock: it is looked at only where the
 * alternative is a registration, a system call that pins every page.
 */
#include <stdlib.h>

#include <rdma/fi_errno.h>

#include "nrma.h"
#include "nrma_mr_span.h"
#include "nrma_verbs.h"

struct nrma_mr_span_index {
	pthread_mutex_t lock;
	struct nrma_dlist spans;
};

int nrma_mr_span_reg(struct nrma_verbs_domain *vdom, const void *buf,
		     size_t len, uint64_t access, struct nrma_mr_span **span)
{
	struct nrma_mr_span *s = calloc(1, sizeof(*s));
	int ret;

	if (!s)
		return -FI_ENOMEM;
	ret = nrma_verbs_mr_reg(vdom, buf, len, access, &s->verbs, &s->key);
	if (ret) {
		free(s);
		return ret;
	}
	nrma_dlist_init(&s->link);
	s->addr = (uintptr_t) buf;
	s->len = len;
	s->local_write = nrma_verbs_access_local_write(access);
	atomic_init(&s->refs, 1);
	*span = s;
	return 0;
}

int nrma_mr_span_put(struct nrma_mr_span *span)
{
	int ret;

	if (atomic_fetch_sub(&span->refs, 1) != 1)
		return 0;
	ret = nrma_verbs_mr_dereg(span->verbs);
	if (ret)
		NRMA_WARN(FI_LOG_MR, "deregistration of %zu bytes: %s\n",
			  span->len, fi_strerror(-ret));
	free(span);
	return ret;
}

int nrma_mr_span_index_open(struct nrma_mr_span_index **idx)
{
	struct nrma_mr_span_index *i = calloc(1, sizeof(*i));

	if (!i)
		return -FI_ENOMEM;
	pthread_mutex_init(&i->lock, NULL);
	nrma_dlist_init(&i->spans);
	*idx = i;
	return 0;
}

void nrma_mr_span_index_close(struct nrma_mr_span_index *idx)
{
	pthread_mutex_destroy(&idx->lock);
	free(idx);
}

void nrma_mr_span_index_add(struct nrma_mr_span_index *idx,
			    struct nrma_mr_span *span)
{
	pthread_mutex_lock(&idx->lock);
	nrma_dlist_insert_tail(&span->link, &idx->spans);
	pthread_mutex_unlock(&idx->lock);
}

void nrma_mr_span_index_remove(struct nrma_mr_span_index *idx,
			       struct nrma_mr_span *span)
{
	pthread_mutex_lock(&idx->lock);
	nrma_dlist_remove(&span->link);
	pthread_mutex_unlock(&idx->lock);
}

/* Whether span holds all of [addr, addr + len), len > 0, without wrap. */
static bool mr_span_covers(const struct nrma_mr_span *span, uintptr_t addr,
			   size_t len)
{
	return addr >= span->addr && addr - span->addr <= span->len &&
	       len <= span->len - (addr - span->addr);
}

struct nrma_mr_span *nrma_mr_span_index_find(struct nrma_mr_span_index *idx,
					     const void *buf, size_t len,
					     bool local_write)
{
	struct nrma_mr_span *found = NULL;
	struct nrma_dlist *item;

	pthread_mutex_lock(&idx->lock);
	nrma_dlist_foreach (&idx->spans, item) {
		struct nrma_mr_span *span =
			nrma_container_of(item, struct nrma_mr_span, link);

		if ((span->local_write || !local_write) &&
		    mr_span_covers(span, (uintptr_t) buf, len)) {
			atomic_fetch_add(&span->refs, 1);
			found = span;
			break;
		}
	}
	pthread_mutex_unlock(&idx->lock);
	return found;
}
