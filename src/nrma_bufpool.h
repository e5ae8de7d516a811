/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A pool of equal-size buffers carved from one allocation, so that the
 * whole pool can be registered with the device once.
 */
#ifndef NRMA_BUFPOOL_H
#define NRMA_BUFPOOL_H

#include <stddef.h>
#include <stdint.h>

struct nrma_bufpool {
	char *mem;
	size_t buf_size;
	size_t count;
	uint32_t *free; /* stack of free buffer indices */
	size_t nfree;
};

int nrma_bufpool_init(struct nrma_bufpool *pool, size_t count, size_t buf_size);
void nrma_bufpool_fini(struct nrma_bufpool *pool);
/* A free buffer's index, or -1 when the pool is empty. */
int64_t nrma_bufpool_get(struct nrma_bufpool *pool);
void nrma_bufpool_put(struct nrma_bufpool *pool, uint32_t index);

static inline void *nrma_bufpool_buf(const struct nrma_bufpool *pool,
				     uint32_t index)
{
	return pool->mem + (size_t) index * pool->buf_size;
}

/* The index of buf, the address of one of the pool's buffers. */
static inline uint32_t nrma_bufpool_index(const struct nrma_bufpool *pool,
					  const void *buf)
{
	return ((const char *) buf - pool->mem) / pool->buf_size;
}

static inline size_t nrma_bufpool_bytes(const struct nrma_bufpool *pool)
{
	return pool->count * pool->buf_size;
}

#endif /* NRMA_BUFPOOL_H */
