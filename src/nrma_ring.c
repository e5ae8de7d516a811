/* SPDX-License-Identifier: BSD-2-Clause */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "nrma_ring.h"

int nrma_ring_init(struct nrma_ring *ring, size_t capacity, size_t elem_size)
{
	size_t slots = 1;

	if (!capacity || !elem_size || capacity > SIZE_MAX / 2 + 1)
		return -EINVAL;
	while (slots < capacity)
		slots *= 2;
	ring->elems = calloc(slots, elem_size);
	if (!ring->elems)
		return -ENOMEM;
	ring->elem_size = elem_size;
	ring->capacity = capacity;
	ring->mask = slots - 1;
	ring->head = 0;
	ring->count = 0;
	return 0;
}

void nrma_ring_fini(struct nrma_ring *ring)
{
	free(ring->elems);
	ring->elems = NULL;
	ring->capacity = ring->count = 0;
}

int nrma_ring_grow(struct nrma_ring *ring)
{
	struct nrma_ring bigger;
	int ret;

	if (ring->capacity > SIZE_MAX / 2 / ring->elem_size)
		return -ENOMEM;
	ret = nrma_ring_init(&bigger, ring->capacity * 2, ring->elem_size);
	if (ret)
		return ret;
	for (size_t i = 0; i < ring->count; i++)
		memcpy(bigger.elems + i * ring->elem_size,
		       nrma_ring_at(ring, i), ring->elem_size);
	bigger.count = ring->count;
	nrma_ring_fini(ring);
	*ring = bigger;
	return 0;
}
