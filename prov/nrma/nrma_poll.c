/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Poll sets: one call that progresses a group of CQs and counters and
 * says which of them have something to read.  A counter counts as ready
 * when its value or error count changed since the last fi_poll.  A member
 * cannot close (-FI_EBUSY) until it leaves the set.
 */
#include <stdlib.h>

#include "nrma.h"
#include "nrma_enosys.h"

struct nrma_poll_member {
	struct fid *fid;
	uint64_t last_value; /* counters: what the last poll saw */
	uint64_t last_err;
};

struct nrma_poll {
	struct fid_poll poll_fid;
	struct nrma_domain *domain;
	pthread_mutex_t lock;
	struct nrma_poll_member *members;
	size_t count;
};

static struct nrma_poll *poll_of(struct fid_poll *poll_fid)
{
	return nrma_container_of(poll_fid, struct nrma_poll, poll_fid);
}

static bool member_ready(struct nrma_poll_member *member)
{
	struct nrma_cntr *cntr;
	uint64_t value, err;

	if (member->fid->fclass == FI_CLASS_CQ)
		return nrma_cq_ready(nrma_cq_of_fid(member->fid));
	cntr = nrma_cntr_of_fid(member->fid);
	value = fi_cntr_read(&cntr->cntr_fid);
	err = fi_cntr_readerr(&cntr->cntr_fid);
	if (value == member->last_value && err == member->last_err)
		return false;
	member->last_value = value;
	member->last_err = err;
	return true;
}

static int nrma_poll_poll(struct fid_poll *poll_fid, void **context, int count)
{
	struct nrma_poll *poll = poll_of(poll_fid);
	int n = 0;

	if (count < 0 || (count && !context))
		return -FI_EINVAL;
	pthread_mutex_lock(&poll->lock);
	for (size_t i = 0; i < poll->count && n < count; i++)
		if (member_ready(&poll->members[i]))
			context[n++] = poll->members[i].fid->context;
	pthread_mutex_unlock(&poll->lock);
	return n;
}

/* What keeps a member open while the set refers to it. */
static atomic_int *poll_member_ref(struct fid *fid)
{
	return fid->fclass == FI_CLASS_CQ ? &nrma_cq_of_fid(fid)->ref :
					    &nrma_cntr_of_fid(fid)->ref;
}

static struct nrma_domain *poll_member_domain(struct fid *fid)
{
	return fid->fclass == FI_CLASS_CQ ? nrma_cq_of_fid(fid)->domain :
					    nrma_cntr_of_fid(fid)->domain;
}

static int nrma_poll_add(struct fid_poll *poll_fid, struct fid *event_fid,
			 uint64_t flags)
{
	struct nrma_poll *poll = poll_of(poll_fid);
	struct nrma_poll_member *members;

	if (flags)
		return -FI_EBADFLAGS;
	if (!event_fid ||
	    (event_fid->fclass != FI_CLASS_CQ &&
	     event_fid->fclass != FI_CLASS_CNTR) ||
	    poll_member_domain(event_fid) != poll->domain)
		return -FI_EINVAL;
	pthread_mutex_lock(&poll->lock);
	members = realloc(poll->members, (poll->count + 1) * sizeof(*members));
	if (members) {
		poll->members = members;
		members[poll->count++] =
			(struct nrma_poll_member){ .fid = event_fid };
		atomic_fetch_add(poll_member_ref(event_fid), 1);
	}
	pthread_mutex_unlock(&poll->lock);
	return members ? 0 : -FI_ENOMEM;
}

static int nrma_poll_del(struct fid_poll *poll_fid, struct fid *event_fid,
			 uint64_t flags)
{
	struct nrma_poll *poll = poll_of(poll_fid);
	int ret = -FI_EINVAL;

	if (flags)
		return -FI_EBADFLAGS;
	pthread_mutex_lock(&poll->lock);
	for (size_t i = 0; i < poll->count; i++) {
		if (poll->members[i].fid != event_fid)
			continue;
		atomic_fetch_sub(poll_member_ref(event_fid), 1);
		poll->members[i] = poll->members[--poll->count];
		ret = 0;
		break;
	}
	pthread_mutex_unlock(&poll->lock);
	return ret;
}

static int nrma_poll_close(struct fid *fid)
{
	struct nrma_poll *poll =
		nrma_container_of(fid, struct nrma_poll, poll_fid.fid);

	for (size_t i = 0; i < poll->count; i++)
		atomic_fetch_sub(poll_member_ref(poll->members[i].fid), 1);
	pthread_mutex_destroy(&poll->lock);
	atomic_fetch_sub(&poll->domain->ref, 1);
	free(poll->members);
	free(poll);
	return 0;
}

static struct fi_ops nrma_poll_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = nrma_poll_close,
	.bind = nrma_no_bind,
	.control = nrma_no_control,
	.ops_open = nrma_no_ops_open,
};

static struct fi_ops_poll nrma_poll_ops = {
	.size = sizeof(struct fi_ops_poll),
	.poll = nrma_poll_poll,
	.poll_add = nrma_poll_add,
	.poll_del = nrma_poll_del,
};

int nrma_poll_open(struct fid_domain *domain_fid, struct fi_poll_attr *attr,
		   struct fid_poll **poll_fid)
{
	struct nrma_domain *domain = nrma_domain_of(domain_fid);
	struct nrma_poll *poll;

	if (attr && attr->flags)
		return -FI_EBADFLAGS;
	poll = calloc(1, sizeof(*poll));
	if (!poll)
		return -FI_ENOMEM;
	pthread_mutex_init(&poll->lock, NULL);
	poll->domain = domain;
	poll->poll_fid.fid.fclass = FI_CLASS_POLL;
	poll->poll_fid.fid.ops = &nrma_poll_fi_ops;
	poll->poll_fid.ops = &nrma_poll_ops;
	atomic_fetch_add(&domain->ref, 1);
	*poll_fid = &poll->poll_fid;
	return 0;
}
