/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A bounded FIFO of fixed-size elements.  CQs keep their completions here:
 * the capacity is the CQ size the application asked for, so a full ring is
 * the provider's signal to stop reaping hardware completions.
 */
#ifndef NRMA_RING_H
#define NRMA_RING_H

#include <stddef.h>
#include <stdbool.h>

struct nrma_ring {
	char *elems;
	size_t elem_size;
	size_t capacity; /* elements it holds at most */
	/* Its slots are a power of two, at least capacity: a slot's index
	 * wraps with this mask, no compare. */
	size_t mask;
	size_t head; /* index of the oldest element */
	size_t count;
};

int nrma_ring_init(struct nrma_ring *ring, size_t capacity, size_t elem_size);
void nrma_ring_fini(struct nrma_ring *ring);

static inline bool nrma_ring_empty(const struct nrma_ring *ring)
{
	return ring->count == 0;
}

static inline bool nrma_ring_full(const struct nrma_ring *ring)
{
	return ring->count == ring->capacity;
}

/* Where slot head + i lies. */
static inline size_t nrma_ring_index(const struct nrma_ring *ring, size_t i)
{
	return (ring->head + i) & ring->mask;
}

/* The i-th oldest element, i < count. */
static inline void *nrma_ring_at(const struct nrma_ring *ring, size_t i)
{
	return ring->elems + nrma_ring_index(ring, i) * ring->elem_size;
}

/* Slot for a new element at the tail; NULL when full. */
static inline void *nrma_ring_push(struct nrma_ring *ring)
{
	if (nrma_ring_full(ring))
		return NULL;
	return nrma_ring_at(ring, ring->count++);
}

/* Drops the n oldest elements. */
static inline void nrma_ring_consume(struct nrma_ring *ring, size_t n)
{
	if (n > ring->count)
		n = ring->count;
	ring->head = nrma_ring_index(ring, n);
	ring->count -= n;
}

/* Drops the oldest element, of a ring that has one: no clamp to count. */
static inline void nrma_ring_drop(struct nrma_ring *ring)
{
	ring->head = nrma_ring_index(ring, 1);
	ring->count--;
}

/* Doubles the capacity, keeping the elements in order. */
int nrma_ring_grow(struct nrma_ring *ring);

#endif /* NRMA_RING_H */
