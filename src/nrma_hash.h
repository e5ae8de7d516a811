/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Map from 32-bit keys to pointers (open addressing, linear probing), for
 * finding a connection from the queue pair number in a work completion.
 */
#ifndef NRMA_HASH_H
#define NRMA_HASH_H

#include <stddef.h>
#include <stdint.h>

struct nrma_hash_slot {
	uint32_t key;
	int state; /* 0 empty, 1 used, 2 deleted */
	void *value;
};

struct nrma_hash {
	struct nrma_hash_slot *slots;
	size_t capacity; /* a power of two */
	size_t used;	 /* used and deleted slots */
	size_t count;
};

void nrma_hash_init(struct nrma_hash *hash);
void nrma_hash_fini(struct nrma_hash *hash);
/* nrma_hash_fini, once each value has gone to release. */
void nrma_hash_fini_values(struct nrma_hash *hash,
			   void (*release)(void *value));
int nrma_hash_insert(struct nrma_hash *hash, uint32_t key, void *value);
void *nrma_hash_find(const struct nrma_hash *hash, uint32_t key);
void nrma_hash_remove(struct nrma_hash *hash, uint32_t key);

#endif /* NRMA_HASH_H */
