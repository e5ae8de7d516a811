/* SPDX-License-Identifier: BSD-2-Clause */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "nrma_bufpool.h"

int nrma_bufpool_init(struct nrma_bufpool *pool, size_t count, size_t buf_size)
{
	if (!count || !buf_size || count > UINT32_MAX ||
	    buf_size > SIZE_MAX / count)
		return -EINVAL;
	/* Page alignment keeps buffers off cache lines of other data. */
	if (posix_memalign((void **) &pool->mem, 4096, count * buf_size))
		return -ENOMEM;
	memset(pool->mem, 0, count * buf_size);
	pool->free = malloc(count * sizeof(*pool->free));
	if (!pool->free) {
		free(pool->mem);
		return -ENOMEM;
	}
	pool->buf_size = buf_size;
	pool->count = count;
	for (size_t i = 0; i < count; i++)
		pool->free[i] = count - 1 - i;
	pool->nfree = count;
	return 0;
}

void nrma_bufpool_fini(struct nrma_bufpool *pool)
{
	free(pool->free);
	free(pool->mem);
	pool->free = NULL;
	pool->mem = NULL;
	pool->count = pool->nfree = 0;
}

int64_t nrma_bufpool_get(struct nrma_bufpool *pool)
{
	return pool->nfree ? (int64_t) pool->free[--pool->nfree] : -1;
}

void nrma_bufpool_put(struct nrma_bufpool *pool, uint32_t index)
{
	pool->free[pool->nfree++] = index;
}
