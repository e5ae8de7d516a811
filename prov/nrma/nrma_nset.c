/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Notification sets (fi_ext_nrma.h): count 64-bit words in one
 * registration, for remote atomics only, at remote address 0, under one
 * key of the domain's key table.  Initiators bump word i with a verbs
 * fetch-and-add behind the data it announces (nrma_rma.c); the target
 * only reads memory.
 *
 * The CPU never writes a word a peer can reach (remote atomics on rxe are
 * not atomic against CPU atomics), so counter i reads word[i] - base[i]
 * and a reset moves base[i] to the word it read: what lands after that
 * read counts in the next period, none twice, none lost.
 */
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>

#include <rdma/fi_ext_nrma.h>

#include "nrma.h"
#include "nrma_enosys.h"
#include "nrma_keytab.h"
#include "nrma_proto.h"
#include "nrma_verbs.h"
#include "nrma_wait.h"

/* The registered part: replaced as a whole when the set grows. */
struct nset_region {
	volatile uint64_t *words;
	size_t bytes; /* mapped: whole pages */
	struct nrma_verbs_mr *mr;
	uint64_t key;
};

struct nrma_nset {
	struct fid_nrma_nset nset_fid;
	struct nrma_domain *domain;
	uint64_t count;
	struct nset_region region;
	_Atomic uint64_t *base; /* by index: counter = word - base */
};

static struct nrma_nset *nrma_nset_of(struct fid_nrma_nset *nset_fid)
{
	return nrma_container_of(nset_fid, struct nrma_nset, nset_fid);
}

static struct nrma_nset *nrma_nset_of_fid(struct fid *fid)
{
	return nrma_container_of(fid, struct nrma_nset, nset_fid.fid);
}

/* Once it returns no peer reaches the words: the key names nothing. */
static void nset_region_disarm(struct nrma_domain *domain,
			       struct nset_region *r)
{
	if (nrma_keytab_remove(domain->keytab, r->key))
		nrma_domain_keys_changed(domain);
	nrma_verbs_mr_dereg(r->mr);
}

static int nset_region_open(struct nrma_domain *domain, uint64_t count,
			    struct nset_region *r)
{
	struct nrma_key_slot slot = { .len = count * sizeof(uint64_t),
				      .access = NRMA_KEY_REMOTE_NOTIFY };
	void *words = nrma_verbs_pages_map(slot.len, &r->bytes);
	int ret;

	if (!words)
		return -FI_ENOMEM;
	r->words = words;
	ret = nrma_verbs_zero_reg(domain->verbs, words, slot.len,
				  NRMA_VERBS_ZERO_ATOMIC, &r->mr, &slot.rkey);
	if (!ret) {
		ret = nrma_keytab_add(domain->keytab, &slot, &r->key);
		if (ret)
			nrma_verbs_mr_dereg(r->mr);
	}
	if (ret)
		munmap(words, r->bytes);
	return ret;
}

static int nrma_nset_desc(struct fid_nrma_nset *nset_fid,
			  struct fi_nrma_nset_desc *desc)
{
	struct nrma_nset *nset = nrma_nset_of(nset_fid);

	if (!desc)
		return -FI_EINVAL;
	desc->key = nset->region.key;
	desc->count = nset->count;
	return 0;
}

static uint64_t nset_value(struct nrma_nset *nset, uint64_t index)
{
	return nset->region.words[index] - atomic_load(&nset->base[index]);
}

static int nrma_nset_read(struct fid_nrma_nset *nset_fid, uint64_t index,
			  uint64_t *value)
{
	struct nrma_nset *nset = nrma_nset_of(nset_fid);

	if (index >= nset->count || !value)
		return -FI_EINVAL;
	*value = nset_value(nset, index);
	return 0;
}

/* Fetch and zero: the base takes the word as one read saw it. */
static int nrma_nset_reset(struct fid_nrma_nset *nset_fid, uint64_t index,
			   uint64_t *old)
{
	struct nrma_nset *nset = nrma_nset_of(nset_fid);
	uint64_t base, word;

	if (index >= nset->count)
		return -FI_EINVAL;
	base = atomic_load(&nset->base[index]);
	do
		word = nset->region.words[index];
	while (!atomic_compare_exchange_weak(&nset->base[index], &base, word));
	if (old)
		*old = word - base;
	return 0;
}

/* Spins for wait_spin_us, then sleeps, longer each time, to wake_ms. */
static void nset_pause(const struct timespec *start, long *sleep_ns)
{
	struct timespec ts;

	if (nrma_wait_elapsed_us(start) < nrma_params.wait_spin_us)
		return;
	ts.tv_sec = *sleep_ns / 1000000000;
	ts.tv_nsec = *sleep_ns % 1000000000;
	nanosleep(&ts, NULL);
	if (*sleep_ns < nrma_params.notify_wake_ms * 1000000L)
		*sleep_ns *= 2;
}

/*
 * Waits until one of count counters from first reads at least threshold
 * (waitsome asks for 1); the first such index in *index.
 */
static int nset_wait_range(struct nrma_nset *nset, uint64_t first,
			   uint64_t count, uint64_t threshold, int timeout,
			   uint64_t *index)
{
	struct timespec start;
	long sleep_ns = 10000;

	if (!count || first >= nset->count || count > nset->count - first)
		return -FI_EINVAL;
	clock_gettime(CLOCK_MONOTONIC, &start);
	for (;;) {
		for (uint64_t i = first; i < first + count; i++) {
			if (nset_value(nset, i) >= threshold) {
				if (index)
					*index = i;
				return 0;
			}
		}
		if (!nrma_wait_timeout_left(&start, timeout))
			return -FI_ETIMEDOUT;
		nset_pause(&start, &sleep_ns);
	}
}

static int nrma_nset_wait(struct fid_nrma_nset *nset_fid, uint64_t index,
			  uint64_t threshold, int timeout)
{
	return nset_wait_range(nrma_nset_of(nset_fid), index, 1, threshold,
			       timeout, NULL);
}

static int nrma_nset_waitsome(struct fid_nrma_nset *nset_fid, uint64_t first,
			      uint64_t count, int timeout, uint64_t *index)
{
	if (!index)
		return -FI_EINVAL;
	return nset_wait_range(nrma_nset_of(nset_fid), first, count, 1, timeout,
			       index);
}

static _Atomic uint64_t *nset_base_alloc(uint64_t count)
{
	_Atomic uint64_t *base = calloc(count, sizeof(*base));

	for (uint64_t i = 0; base && i < count; i++)
		atomic_init(&base[i], 0);
	return base;
}

/*
 * A new region under a new key; the old key then names nothing, so what
 * initiators still send with the old descriptor fails at them.  Once the
 * old region is deregistered no atomic lands in it: each counter keeps its
 * value, as the base of the new word (which starts at 0).
 */
static int nrma_nset_grow(struct fid_nrma_nset *nset_fid, uint64_t count)
{
	struct nrma_nset *nset = nrma_nset_of(nset_fid);
	struct nset_region region;
	_Atomic uint64_t *base;
	int ret;

	if (count < nset->count || count > FI_NRMA_NSET_MAX)
		return -FI_EINVAL;
	if (count == nset->count)
		return 0;
	base = nset_base_alloc(count);
	if (!base)
		return -FI_ENOMEM;
	ret = nset_region_open(nset->domain, count, &region);
	if (ret) {
		free(base);
		return ret;
	}
	nset_region_disarm(nset->domain, &nset->region);
	for (uint64_t i = 0; i < nset->count; i++)
		atomic_store(&base[i], -nset_value(nset, i));
	munmap((void *) nset->region.words, nset->region.bytes);
	free(nset->base);
	nset->base = base;
	nset->region = region;
	nset->count = count;
	return 0;
}

static int nrma_nset_close(struct fid *fid)
{
	struct nrma_nset *nset = nrma_nset_of_fid(fid);

	nset_region_disarm(nset->domain, &nset->region);
	munmap((void *) nset->region.words, nset->region.bytes);
	atomic_fetch_sub(&nset->domain->ref, 1);
	free(nset->base);
	free(nset);
	return 0;
}

static struct fi_ops nrma_nset_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = nrma_nset_close,
	.bind = nrma_no_bind,
	.control = nrma_no_control,
	.ops_open = nrma_no_ops_open,
};

static struct fi_nrma_ops_nset nrma_nset_ops = {
	.size = sizeof(struct fi_nrma_ops_nset),
	.desc = nrma_nset_desc,
	.read = nrma_nset_read,
	.reset = nrma_nset_reset,
	.wait = nrma_nset_wait,
	.waitsome = nrma_nset_waitsome,
	.grow = nrma_nset_grow,
};

int nrma_nset_open(struct fid_domain *domain_fid,
		   const struct fi_nrma_nset_attr *attr,
		   struct fid_nrma_nset **nset_fid, void *context)
{
	struct nrma_domain *domain = nrma_domain_of(domain_fid);
	struct nrma_nset *nset;
	int ret;

	if (!attr || !nset_fid || !attr->count ||
	    attr->count > FI_NRMA_NSET_MAX || attr->flags)
		return -FI_EINVAL;
	nset = calloc(1, sizeof(*nset));
	if (!nset)
		return -FI_ENOMEM;
	nset->base = nset_base_alloc(attr->count);
	ret = nset->base ?
		      nset_region_open(domain, attr->count, &nset->region) :
		      -FI_ENOMEM;
	if (ret) {
		free(nset->base);
		free(nset);
		return ret;
	}
	nset->domain = domain;
	nset->count = attr->count;
	nset->nset_fid.fid.fclass = FI_NRMA_CLASS_NSET;
	nset->nset_fid.fid.context = context;
	nset->nset_fid.fid.ops = &nrma_nset_fi_ops;
	nset->nset_fid.ops = &nrma_nset_ops;
	atomic_fetch_add(&domain->ref, 1);
	*nset_fid = &nset->nset_fid;
	return 0;
}
