/* SPDX-License-Identifier: BSD-2-Clause */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "nrma_chunkpool.h"

/* Page alignment keeps buffers off cache lines of other data. */
#define CHUNK_ALIGN 4096

static int chunk_alloc(struct nrma_chunk *c, size_t n, size_t buf_size,
		       size_t rec_size)
{
	if (posix_memalign((void **) &c->mem, CHUNK_ALIGN, n * buf_size))
		return -ENOMEM;
	memset(c->mem, 0, n * buf_size);
	c->recs = calloc(n, rec_size ? rec_size : 1);
	if (!c->recs) {
		free(c->mem);
		return -ENOMEM;
	}
	c->reg = NULL;
	return 0;
}

/* n more buffers, indices count..count + n - 1, go on the free stack. */
static int chunkpool_add(struct nrma_chunkpool *pool, size_t n)
{
	struct nrma_chunk *chunks;
	uint32_t *free_stack;
	size_t count = pool->count + n;

	if (count > UINT32_MAX || n > SIZE_MAX / pool->buf_size)
		return -EOVERFLOW;
	chunks = realloc(pool->chunks, (pool->nchunks + 1) * sizeof(*chunks));
	if (!chunks)
		return -ENOMEM;
	pool->chunks = chunks;
	free_stack = realloc(pool->free, count * sizeof(*free_stack));
	if (!free_stack)
		return -ENOMEM;
	pool->free = free_stack;
	if (chunk_alloc(&chunks[pool->nchunks], n, pool->buf_size,
			pool->rec_size))
		return -ENOMEM;
	pool->nchunks++;
	/* Lower indices on top: the first chunk is used first. */
	for (size_t i = 0; i < n; i++)
		pool->free[pool->nfree + i] = (uint32_t) (count - 1 - i);
	pool->nfree += n;
	pool->count = count;
	return 0;
}

int nrma_chunkpool_init(struct nrma_chunkpool *pool, size_t first, size_t grow,
			size_t buf_size, size_t rec_size)
{
	int ret;

	*pool = (struct nrma_chunkpool){ .buf_size = buf_size,
					 .rec_size = rec_size,
					 .first = first,
					 .grow = grow };
	if (!first || !grow || !buf_size)
		return -EINVAL;
	ret = chunkpool_add(pool, first);
	if (ret)
		nrma_chunkpool_fini(pool);
	return ret;
}

void nrma_chunkpool_fini(struct nrma_chunkpool *pool)
{
	for (size_t c = 0; c < pool->nchunks; c++) {
		free(pool->chunks[c].mem);
		free(pool->chunks[c].recs);
	}
	free(pool->chunks);
	free(pool->free);
	pool->chunks = NULL;
	pool->free = NULL;
	pool->count = pool->nchunks = pool->nfree = 0;
}

int nrma_chunkpool_grow(struct nrma_chunkpool *pool)
{
	return chunkpool_add(pool, pool->grow);
}

int64_t nrma_chunkpool_get(struct nrma_chunkpool *pool)
{
	return pool->nfree ? (int64_t) pool->free[--pool->nfree] : -1;
}

void nrma_chunkpool_put(struct nrma_chunkpool *pool, uint32_t index)
{
	pool->free[pool->nfree++] = index;
}
