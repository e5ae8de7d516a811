/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Notification cells.  Each domain owns a notification region: pages of
 * 64-bit words that hold nothing else.  Every binding of counters for
 * remote events (fi_ep_bind or fi_mr_bind with FI_REMOTE_WRITE or
 * FI_REMOTE_READ) owns a cell: the first two words of one page, the
 * first bumped by writes and the second by reads.  Initiators bump them
 * with a verbs fetch-and-add posted behind the RDMA write or read it
 * announces, on the same queue pair.
 *
 * Each cell is registered on its own, for remote atomics only, at remote
 * address 0, so its rkey is all a peer needs, and a key whose binding is
 * gone (or never was) reaches no word at all: the atomic fails at the
 * initiator instead of counting somewhere.  A page per cell keeps the
 * registration page aligned, as hardware needs for a remote address of 0.
 *
 * The CPU never writes a word that a peer can reach: remote atomics on
 * some devices (rxe) are not atomic against CPU atomics.  Counters sum
 * the words they watch on top of a local bias (nrma_cntr.c).
 */
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "nrma.h"
#include "nrma_verbs.h"

#define CELL_BYTES	(2 * sizeof(uint64_t))	/* a write and a read word */

struct nrma_notify {
	char *region;
	size_t page_size;
	size_t cells;
	size_t *free;		/* stack of free cell indices */
	size_t nfree;
	pthread_mutex_t lock;
};

struct nrma_notify_cell {
	struct nrma_domain *domain;
	size_t index;
	volatile uint64_t *words;	/* NRMA_NOTIFY_WRITE, NRMA_NOTIFY_READ */
	struct nrma_verbs_mr *mr;
	uint32_t rkey;
	struct nrma_cntr *cntr[2];	/* watching each word, if any */
};

int nrma_notify_open(struct nrma_domain *domain)
{
	struct nrma_notify *n = calloc(1, sizeof(*n));

	if (!n)
		return -FI_ENOMEM;
	n->page_size = (size_t) sysconf(_SC_PAGESIZE);
	n->cells = nrma_params.notify_cells;
	/* Pages are only backed once a cell in them is registered. */
	n->region = mmap(NULL, n->cells * n->page_size, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	n->free = malloc(n->cells * sizeof(*n->free));
	if (n->region == MAP_FAILED || !n->free) {
		if (n->region != MAP_FAILED)
			munmap(n->region, n->cells * n->page_size);
		free(n->free);
		free(n);
		return -FI_ENOMEM;
	}
	for (size_t i = n->cells; i > 0; i--)
		n->free[n->nfree++] = i - 1;
	pthread_mutex_init(&n->lock, NULL);
	domain->notify = n;
	return 0;
}

void nrma_notify_close(struct nrma_domain *domain)
{
	struct nrma_notify *n = domain->notify;

	munmap(n->region, n->cells * n->page_size);
	pthread_mutex_destroy(&n->lock);
	free(n->free);
	free(n);
}

static int cell_index_get(struct nrma_notify *n, size_t *index)
{
	int ret = 0;

	pthread_mutex_lock(&n->lock);
	if (n->nfree)
		*index = n->free[--n->nfree];
	else
		ret = -FI_ENOSPC;
	pthread_mutex_unlock(&n->lock);
	return ret;
}

static void cell_index_put(struct nrma_notify *n, size_t index)
{
	pthread_mutex_lock(&n->lock);
	n->free[n->nfree++] = index;
	pthread_mutex_unlock(&n->lock);
}

/* Registers the cell; an rkey of 0 would read as "no cell" in MR keys. */
static int cell_register(struct nrma_notify_cell *cell)
{
	struct nrma_verbs_domain *vd = cell->domain->verbs;
	struct nrma_verbs_mr *zero_mr = NULL;
	int ret;

	ret = nrma_verbs_notify_reg(vd, (const void *) cell->words, CELL_BYTES,
				    &cell->mr, &cell->rkey);
	if (!ret && !cell->rkey) {
		zero_mr = cell->mr;
		ret = nrma_verbs_notify_reg(vd, (const void *) cell->words,
					    CELL_BYTES, &cell->mr, &cell->rkey);
		nrma_verbs_mr_dereg(zero_mr);
	}
	return ret;
}

int nrma_notify_cell_open(struct nrma_domain *domain,
			  struct nrma_notify_cell **cellp)
{
	struct nrma_notify *n = domain->notify;
	struct nrma_notify_cell *cell = calloc(1, sizeof(*cell));
	int ret;

	if (!cell)
		return -FI_ENOMEM;
	ret = cell_index_get(n, &cell->index);
	if (ret) {
		free(cell);
		return ret;
	}
	cell->domain = domain;
	cell->words = (volatile uint64_t *) (n->region +
					     cell->index * n->page_size);
	/* No peer can reach the words before they are registered. */
	cell->words[0] = cell->words[1] = 0;
	ret = cell_register(cell);
	if (ret) {
		cell_index_put(n, cell->index);
		free(cell);
		return ret;
	}
	*cellp = cell;
	return 0;
}

/*
 * FI_REMOTE_WRITE and FI_REMOTE_READ each bind one word to a counter,
 * which stays open (-FI_EBUSY) until the cell closes.
 */
int nrma_notify_cell_bind(struct nrma_notify_cell *cell, struct nrma_cntr *cntr,
			  uint64_t flags)
{
	bool write = flags & FI_REMOTE_WRITE, read = flags & FI_REMOTE_READ;
	int ret = 0;

	if ((write && cell->cntr[0]) || (read && cell->cntr[1]))
		return -FI_EINVAL;
	if (write)
		ret = nrma_cntr_watch(cntr, &cell->words[0]);
	if (!ret && read) {
		ret = nrma_cntr_watch(cntr, &cell->words[1]);
		if (ret && write)
			nrma_cntr_unwatch(cntr, &cell->words[0]);
	}
	if (ret)
		return ret;
	if (write)
		cell->cntr[0] = cntr;
	if (read)
		cell->cntr[1] = cntr;
	atomic_fetch_add(&cntr->ref, write + read);
	return 0;
}

uint32_t nrma_notify_cell_rkey(const struct nrma_notify_cell *cell)
{
	return cell->rkey;
}

/* Deregistered first: once no atomic can land, the counters keep the sum. */
void nrma_notify_cell_close(struct nrma_notify_cell *cell)
{
	nrma_verbs_mr_dereg(cell->mr);
	for (int i = 0; i < 2; i++)
		if (cell->cntr[i]) {
			nrma_cntr_unwatch(cell->cntr[i], &cell->words[i]);
			atomic_fetch_sub(&cell->cntr[i]->ref, 1);
		}
	cell_index_put(cell->domain->notify, cell->index);
	free(cell);
}

uint64_t nrma_notify_key(uint32_t rkey, uint32_t cell_rkey)
{
	return (uint64_t) rkey | (uint64_t) cell_rkey << 32;
}

void nrma_notify_key_decode(uint64_t key, uint32_t *rkey, uint32_t *cell_rkey)
{
	*rkey = (uint32_t) key;
	*cell_rkey = (uint32_t) (key >> 32);
}
