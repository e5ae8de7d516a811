/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Notification cells (nrma_notify.c): 64-bit words in a domain's
 * notification region that peers bump with remote atomics, one for
 * writes, one for reads and one for updates (a fetching or compare atomic
 * that may change the target: both, and counted once by each counter
 * bound for either), and in a connection's credit cell one for changes of
 * the peer's key table (nrma_proto.h has their remote addresses), and the
 * MR keys that name them.
 */
#ifndef NRMA_NOTIFY_H
#define NRMA_NOTIFY_H

#include <stddef.h>
#include <stdint.h>

struct nrma_notify;
struct nrma_notify_cell;
struct nrma_verbs_domain;

enum nrma_notify_word {
	NRMA_NOTIFY_WRITES,
	NRMA_NOTIFY_READS,
	NRMA_NOTIFY_KEYS, /* credit cells: the peer's key table changed */
	NRMA_NOTIFY_UPDATES,
	NRMA_NOTIFY_WORDS
};

int nrma_notify_open(struct nrma_verbs_domain *vdom, size_t cells,
		     struct nrma_notify **notify);
void nrma_notify_close(struct nrma_notify *notify);
/* A registered cell with every word 0; -FI_ENOSPC when none is left. */
int nrma_notify_cell_open(struct nrma_notify *notify,
			  struct nrma_notify_cell **cell);
/* Deregisters the cell: once it returns no atomic lands in its words. */
void nrma_notify_cell_disarm(struct nrma_notify_cell *cell);
/* Gives a disarmed cell back to the region. */
void nrma_notify_cell_close(struct nrma_notify_cell *cell);
volatile uint64_t *nrma_notify_cell_word(struct nrma_notify_cell *cell,
					 enum nrma_notify_word word);
uint32_t nrma_notify_cell_rkey(const struct nrma_notify_cell *cell);

#endif /* NRMA_NOTIFY_H */
