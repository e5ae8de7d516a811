/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Notification cells.  Each domain owns a notification region: pages of
 * 64-bit words that hold nothing else.  Every binding of counters for
 * remote events (fi_ep_bind or fi_mr_bind with FI_REMOTE_WRITE or
 * FI_REMOTE_READ) owns a cell: the first words of one page, the first
 * bumped by writes and the second by reads.  Initiators bump them with a
 * verbs fetch-and-add posted behind the RDMA write or read it announces,
 * on the same queue pair.  A connection's credit cell (nrma_credit.c)
 * uses the third too.
 *
 * Each cell is registered on its own, for remote atomics only, at remote
 * address 0, so its rkey is all a peer needs, and a key whose binding is
 * gone (or never was) reaches no word at all: the atomic fails at the
 * initiator instead of counting somewhere.  A page per cell keeps the
 * registration page aligned, as hardware needs for a remote address of 0.
 *
 * The CPU never writes a word that a peer can reach: remote atomics on
 * some devices (rxe) are not atomic against CPU atomics.  Counters sum
 * the words they watch on top of a local bias (nrma_cntr.c), which also
 * binds them to cells.
 */
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "nrma.h"
#include "nrma_notify.h"
#include "nrma_verbs.h"

#define CELL_BYTES (NRMA_NOTIFY_WORDS * sizeof(uint64_t))

struct nrma_notify {
	struct nrma_verbs_domain *vdom;
	char *region;
	size_t page_size;
	size_t cells;
	size_t *free; /* stack of free cell indices */
	size_t nfree;
	pthread_mutex_t lock;
};

struct nrma_notify_cell {
	struct nrma_notify *notify;
	size_t index;
	volatile uint64_t *words; /* by enum nrma_notify_word */
	struct nrma_verbs_mr *mr; /* NULL once disarmed */
	uint32_t rkey;
};

int nrma_notify_open(struct nrma_verbs_domain *vdom, size_t cells,
		     struct nrma_notify **notifyp)
{
	struct nrma_notify *n = calloc(1, sizeof(*n));

	if (!n)
		return -FI_ENOMEM;
	n->vdom = vdom;
	n->page_size = (size_t) sysconf(_SC_PAGESIZE);
	n->cells = cells;
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
	*notifyp = n;
	return 0;
}

void nrma_notify_close(struct nrma_notify *n)
{
	munmap(n->region, n->cells * n->page_size);
	pthread_mutex_destroy(&n->lock);
	free(n->free);
	free(n);
}

static int notify_index_get(struct nrma_notify *n, size_t *index)
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

static void notify_index_put(struct nrma_notify *n, size_t index)
{
	pthread_mutex_lock(&n->lock);
	n->free[n->nfree++] = index;
	pthread_mutex_unlock(&n->lock);
}

int nrma_notify_cell_open(struct nrma_notify *n,
			  struct nrma_notify_cell **cellp)
{
	struct nrma_notify_cell *cell = calloc(1, sizeof(*cell));
	int ret;

	if (!cell)
		return -FI_ENOMEM;
	ret = notify_index_get(n, &cell->index);
	if (ret) {
		free(cell);
		return ret;
	}
	cell->notify = n;
	cell->words =
		(volatile uint64_t *) (n->region + cell->index * n->page_size);
	/* No peer can reach the words before they are registered; a
	 * counter's lock-free read may still see them (nrma_comp.c). */
	for (int w = 0; w < NRMA_NOTIFY_WORDS; w++)
		__atomic_store_n(&cell->words[w], 0, __ATOMIC_RELAXED);
	ret = nrma_verbs_zero_reg(n->vdom, (const void *) cell->words,
				  CELL_BYTES, NRMA_VERBS_ZERO_ATOMIC, &cell->mr,
				  &cell->rkey);
	if (ret) {
		notify_index_put(n, cell->index);
		free(cell);
		return ret;
	}
	*cellp = cell;
	return 0;
}

void nrma_notify_cell_disarm(struct nrma_notify_cell *cell)
{
	if (cell->mr)
		nrma_verbs_mr_dereg(cell->mr);
	cell->mr = NULL;
}

void nrma_notify_cell_close(struct nrma_notify_cell *cell)
{
	nrma_notify_cell_disarm(cell);
	notify_index_put(cell->notify, cell->index);
	free(cell);
}

volatile uint64_t *nrma_notify_cell_word(struct nrma_notify_cell *cell,
					 enum nrma_notify_word word)
{
	return &cell->words[word];
}

uint32_t nrma_notify_cell_rkey(const struct nrma_notify_cell *cell)
{
	return cell->rkey;
}
