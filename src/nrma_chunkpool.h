/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A pool of equal-size buffers that grows a chunk at a time, each chunk
 * one allocation (so that it can be registered with the device on its
 * own), with a zeroed record of the caller's beside each buffer.  Nothing
 * moves when the pool grows: the device may hold buffers and lists may
 * link records.  Buffers are named by 32-bit indices, the first chunk's
 * first.
 */
#ifndef NRMA_CHUNKPOOL_H
#define NRMA_CHUNKPOOL_H

#include <stddef.h>
#include <stdint.h>

struct nrma_chunk {
	char *mem;  /* its buffers, page-aligned */
	char *recs; /* their records */
	void *reg;  /* the caller's: its registration */
};

struct nrma_chunkpool {
	size_t buf_size;
	size_t rec_size;
	size_t first; /* buffers in the first chunk */
	size_t grow;  /* buffers in each later one */
	size_t count; /* in all chunks */
	struct nrma_chunk *chunks;
	size_t nchunks;
	uint32_t *free; /* stack of free buffer indices */
	size_t nfree;
};

/* A pool of one chunk of first buffers. */
int nrma_chunkpool_init(struct nrma_chunkpool *pool, size_t first, size_t grow,
			size_t buf_size, size_t rec_size);
void nrma_chunkpool_fini(struct nrma_chunkpool *pool);
/* Adds a chunk of free buffers: returns 0 or -ENOMEM, -EOVERFLOW. */
int nrma_chunkpool_grow(struct nrma_chunkpool *pool);
/* A free buffer's index, or -1 when none is free. */
int64_t nrma_chunkpool_get(struct nrma_chunkpool *pool);
void nrma_chunkpool_put(struct nrma_chunkpool *pool, uint32_t index);

/* The chunk that holds buffer index, and the buffer's place in it. */
static inline size_t nrma_chunkpool_chunk_of(const struct nrma_chunkpool *pool,
					     uint32_t index)
{
	return index < pool->first ? 0 : 1 + (index - pool->first) / pool->grow;
}

static inline size_t nrma_chunkpool_slot_of(const struct nrma_chunkpool *pool,
					    uint32_t index)
{
	return index < pool->first ? index : (index - pool->first) % pool->grow;
}

static inline struct nrma_chunk *nrma_chunkpool_chunk(
	const struct nrma_chunkpool *pool, uint32_t index)
{
	return &pool->chunks[nrma_chunkpool_chunk_of(pool, index)];
}

static inline void *nrma_chunkpool_buf(const struct nrma_chunkpool *pool,
				       uint32_t index)
{
	return nrma_chunkpool_chunk(pool, index)->mem +
	       nrma_chunkpool_slot_of(pool, index) * pool->buf_size;
}

static inline void *nrma_chunkpool_rec(const struct nrma_chunkpool *pool,
				       uint32_t index)
{
	return nrma_chunkpool_chunk(pool, index)->recs +
	       nrma_chunkpool_slot_of(pool, index) * pool->rec_size;
}

/* Bytes of buffers in chunk c. */
static inline size_t nrma_chunkpool_chunk_bytes(
	const struct nrma_chunkpool *pool, size_t c)
{
	return (c ? pool->grow : pool->first) * pool->buf_size;
}

#endif /* NRMA_CHUNKPOOL_H */
