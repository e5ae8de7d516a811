/* SPDX-License-Identifier: BSD-2-Clause */
#include <errno.h>
#include <stdlib.h>

#include "nrma_hash.h"

enum { SLOT_EMPTY, SLOT_USED, SLOT_DELETED };

static size_t slot_of(uint32_t key, size_t capacity)
{
	return (key * 2654435761u) & (capacity - 1);
}

void nrma_hash_init(struct nrma_hash *hash)
{
	hash->slots = NULL;
	hash->capacity = hash->used = hash->count = 0;
}

void nrma_hash_fini(struct nrma_hash *hash)
{
	free(hash->slots);
	nrma_hash_init(hash);
}

void nrma_hash_fini_values(struct nrma_hash *hash, void (*release)(void *value))
{
	for (size_t i = 0; i < hash->capacity; i++)
		if (hash->slots[i].state == SLOT_USED)
			release(hash->slots[i].value);
	nrma_hash_fini(hash);
}

static struct nrma_hash_slot *probe(const struct nrma_hash *hash, uint32_t key)
{
	if (!hash->capacity)
		return NULL;
	for (size_t i = slot_of(key, hash->capacity), n = 0; n < hash->capacity;
	     i = (i + 1) & (hash->capacity - 1), n++) {
		struct nrma_hash_slot *slot = &hash->slots[i];

		if (slot->state == SLOT_EMPTY)
			return NULL;
		if (slot->state == SLOT_USED && slot->key == key)
			return slot;
	}
	return NULL;
}

/* Rebuilds into a table twice the live size, dropping deleted slots. */
static int rehash(struct nrma_hash *hash)
{
	struct nrma_hash old = *hash;
	size_t capacity = 16;

	while (capacity < 4 * (hash->count + 1))
		capacity *= 2;
	hash->slots = calloc(capacity, sizeof(*hash->slots));
	if (!hash->slots) {
		*hash = old;
		return -ENOMEM;
	}
	hash->capacity = capacity;
	hash->used = hash->count = 0;
	for (size_t i = 0; i < old.capacity; i++)
		if (old.slots[i].state == SLOT_USED)
			nrma_hash_insert(hash, old.slots[i].key,
					 old.slots[i].value);
	free(old.slots);
	return 0;
}

int nrma_hash_insert(struct nrma_hash *hash, uint32_t key, void *value)
{
	struct nrma_hash_slot *slot = probe(hash, key);
	size_t i;

	if (slot) {
		slot->value = value;
		return 0;
	}
	if (2 * (hash->used + 1) > hash->capacity && rehash(hash))
		return -ENOMEM;
	i = slot_of(key, hash->capacity);
	while (hash->slots[i].state == SLOT_USED)
		i = (i + 1) & (hash->capacity - 1);
	if (hash->slots[i].state == SLOT_EMPTY)
		hash->used++;
	hash->slots[i] = (struct nrma_hash_slot){ key, SLOT_USED, value };
	hash->count++;
	return 0;
}

void *nrma_hash_find(const struct nrma_hash *hash, uint32_t key)
{
	struct nrma_hash_slot *slot = probe(hash, key);

	return slot ? slot->value : NULL;
}

void nrma_hash_remove(struct nrma_hash *hash, uint32_t key)
{
	struct nrma_hash_slot *slot = probe(hash, key);

	if (slot) {
		slot->state = SLOT_DELETED;
		slot->value = NULL;
		hash->count--;
	}
}
