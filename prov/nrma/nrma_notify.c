/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Notification counters.  Each domain owns a notification region: an
 * array of 64-bit words, registered for remote atomics and holding
 * nothing else.  A counter bound for remote events owns one word (a
 * slot), and initiators bump it with a verbs fetch-and-add posted behind
 * the RDMA write or read it announces, on the same queue pair.
 *
 * The CPU never writes a word: remote atomics on some devices (rxe) are
 * not atomic against CPU atomics.  A counter's value is its local bias
 * plus its word, so fi_cntr_set and fi_cntr_add move the bias only.
 * Slot 0 is never handed out: in MR keys it means "no counter".
 */
#include <stdlib.h>

#include "nrma.h"
#include "nrma_verbs.h"

struct nrma_notify {
	volatile uint64_t *words;
	size_t count;
	struct nrma_verbs_mr *mr;
	uint64_t rkey;
	uint32_t *free;		/* stack of free slots */
	size_t nfree;
	pthread_mutex_t lock;
};

int nrma_notify_open(struct nrma_domain *domain)
{
	struct nrma_notify *n = calloc(1, sizeof(*n));
	size_t count = nrma_params.cntr_max + 1;
	int ret = -FI_ENOMEM;

	if (!n)
		return -FI_ENOMEM;
	n->count = count > NRMA_NOTIFY_MAX_SLOTS ? NRMA_NOTIFY_MAX_SLOTS : count;
	n->words = calloc(n->count, sizeof(*n->words));
	n->free = malloc(n->count * sizeof(*n->free));
	if (!n->words || !n->free)
		goto err;
	ret = nrma_verbs_mr_reg(domain->verbs, (void *) n->words,
				n->count * sizeof(*n->words), FI_REMOTE_WRITE,
				&n->mr, &n->rkey);
	if (ret)
		goto err;
	for (size_t i = n->count - 1; i > 0; i--)
		n->free[n->nfree++] = i;
	pthread_mutex_init(&n->lock, NULL);
	domain->notify = n;
	return 0;
err:
	free((void *) n->words);
	free(n->free);
	free(n);
	return ret;
}

void nrma_notify_close(struct nrma_domain *domain)
{
	struct nrma_notify *n = domain->notify;

	nrma_verbs_mr_dereg(n->mr);
	pthread_mutex_destroy(&n->lock);
	free((void *) n->words);
	free(n->free);
	free(n);
}

/* A fresh slot keeps the value its last owner left: callers take a bias. */
int nrma_notify_slot_get(struct nrma_domain *domain, uint16_t *slot)
{
	struct nrma_notify *n = domain->notify;
	int ret = 0;

	pthread_mutex_lock(&n->lock);
	if (n->nfree)
		*slot = n->free[--n->nfree];
	else
		ret = -FI_ENOSPC;
	pthread_mutex_unlock(&n->lock);
	return ret;
}

void nrma_notify_slot_put(struct nrma_domain *domain, uint16_t slot)
{
	struct nrma_notify *n = domain->notify;

	pthread_mutex_lock(&n->lock);
	n->free[n->nfree++] = slot;
	pthread_mutex_unlock(&n->lock);
}

uint64_t nrma_notify_read(const struct nrma_domain *domain, uint16_t slot)
{
	return domain->notify->words[slot];
}

void nrma_notify_region(const struct nrma_domain *domain, uint64_t *addr,
			uint32_t *rkey)
{
	*addr = (uintptr_t) domain->notify->words;
	*rkey = (uint32_t) domain->notify->rkey;
}

uint64_t nrma_notify_key(uint64_t rkey, uint16_t write_slot, uint16_t read_slot)
{
	return (rkey & 0xffffffffULL) | (uint64_t) write_slot << 32 |
	       (uint64_t) read_slot << 48;
}

void nrma_notify_key_decode(uint64_t key, uint32_t *rkey, uint16_t *write_slot,
			    uint16_t *read_slot)
{
	*rkey = (uint32_t) key;
	*write_slot = (uint16_t) (key >> 32);
	*read_slot = (uint16_t) (key >> 48);
}
