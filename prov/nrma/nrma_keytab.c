/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Key tables.  A provider key must let an initiator reach a registration
 * with no call at the target, and must stay small and stable enough for
 * applications that address regions by offset: a key is a slot of this
 * table (nrma_key_make), and the slot holds the verbs rkey, the address
 * and length, the rights and the notification cell.  Initiators read a
 * slot once per connection and key (nrma_rkey.c).  A slot used again gets
 * a new generation, so a closed registration's key never names another.
 *
 * The table is registered for remote reads alone, at remote address 0.
 * Its slots change under the table's lock; readers on the wire take no
 * lock, so a slot's key goes in last and comes out first, and its check
 * catches a read that raced a change.
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "nrma.h"
#include "nrma_keytab.h"
#include "nrma_proto.h"
#include "nrma_verbs.h"

struct nrma_keytab {
	struct nrma_key_slot *slots; /* what peers read */
	size_t bytes;		     /* mapped, whole pages */
	uint32_t count;
	uint32_t *gen;	/* by slot: the generation of its next key */
	uint32_t *free; /* stack of free slot indices */
	uint32_t nfree;
	struct nrma_verbs_mr *mr;
	uint32_t rkey;
	pthread_mutex_t lock;
};

int nrma_keytab_open(struct nrma_verbs_domain *vdom, size_t slots,
		     struct nrma_keytab **tabp)
{
	struct nrma_keytab *t = calloc(1, sizeof(*t));
	int ret = -FI_ENOMEM;

	if (!t)
		return -FI_ENOMEM;
	if (slots > UINT32_MAX - 1)
		slots = UINT32_MAX - 1;
	t->count = (uint32_t) slots;
	t->gen = calloc(slots, sizeof(*t->gen));
	t->free = malloc(slots * sizeof(*t->free));
	if (t->gen && t->free)
		t->slots = nrma_verbs_pages_map(slots * sizeof(*t->slots),
						&t->bytes);
	if (t->slots)
		ret = nrma_verbs_zero_reg(vdom, t->slots, t->bytes,
					  NRMA_VERBS_ZERO_READ, &t->mr,
					  &t->rkey);
	if (ret) {
		nrma_keytab_close(t);
		return ret;
	}
	/* The lowest slots first: a fresh domain's keys are 1, 2, ... */
	for (uint32_t i = t->count; i > 0; i--)
		t->free[t->nfree++] = i - 1;
	pthread_mutex_init(&t->lock, NULL);
	*tabp = t;
	return 0;
}

void nrma_keytab_close(struct nrma_keytab *t)
{
	if (t->mr) {
		nrma_verbs_mr_dereg(t->mr);
		pthread_mutex_destroy(&t->lock);
	}
	if (t->slots)
		munmap(t->slots, t->bytes);
	free(t->gen);
	free(t->free);
	free(t);
}

/* Where peers find key, or NULL if it names no slot of ours. */
static struct nrma_key_slot *keytab_slot(struct nrma_keytab *t, uint64_t key)
{
	uint32_t index = nrma_key_index(key);

	return index < t->count && t->slots[index].key == key ?
		       &t->slots[index] :
		       NULL;
}

int nrma_keytab_add(struct nrma_keytab *t, const struct nrma_key_slot *fields,
		    uint64_t *key)
{
	struct nrma_key_slot next = *fields;
	uint32_t index;

	pthread_mutex_lock(&t->lock);
	if (!t->nfree) {
		pthread_mutex_unlock(&t->lock);
		return -FI_ENOSPC;
	}
	index = t->free[--t->nfree];
	next.key = *key = nrma_key_make(index, t->gen[index]);
	next.reserved = 0;
	next.check = nrma_key_slot_check(&next);
	next.key = 0;
	t->slots[index] = next;
	atomic_thread_fence(memory_order_release);
	t->slots[index].key = *key;
	pthread_mutex_unlock(&t->lock);
	return 0;
}

void nrma_keytab_set_cell(struct nrma_keytab *t, uint64_t key,
			  uint32_t cell_rkey)
{
	struct nrma_key_slot *slot;

	pthread_mutex_lock(&t->lock);
	slot = keytab_slot(t, key);
	if (slot) {
		slot->cell_rkey = cell_rkey;
		atomic_thread_fence(memory_order_release);
		slot->check = nrma_key_slot_check(slot);
	}
	pthread_mutex_unlock(&t->lock);
}

void nrma_keytab_remove(struct nrma_keytab *t, uint64_t key)
{
	struct nrma_key_slot *slot;
	uint32_t index = nrma_key_index(key);

	pthread_mutex_lock(&t->lock);
	slot = keytab_slot(t, key);
	if (slot) {
		slot->key = 0;
		atomic_thread_fence(memory_order_release);
		memset(slot, 0, sizeof(*slot));
		t->gen[index]++;
		t->free[t->nfree++] = index;
	}
	pthread_mutex_unlock(&t->lock);
}

uint32_t nrma_keytab_rkey(const struct nrma_keytab *t)
{
	return t->rkey;
}

uint32_t nrma_keytab_slots(const struct nrma_keytab *t)
{
	return t->count;
}
