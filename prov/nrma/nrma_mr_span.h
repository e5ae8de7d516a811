/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Registered spans of memory (nrma_mr_span.c): each holds a verbs
 * registration for as long as something uses it, and a domain's index
 * finds the application's open registrations by address.
 */
#ifndef NRMA_MR_SPAN_H
#define NRMA_MR_SPAN_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nrma_list.h"

struct nrma_verbs_domain;
struct nrma_verbs_mr;
struct nrma_mr_span_index;

struct nrma_mr_span {
	struct nrma_dlist link; /* in its index, while it is in one */
	uintptr_t addr;
	size_t len;
	bool local_write; /* the device may write there: reads, receives */
	atomic_uint refs; /* its maker's, and each operation's that uses it */
	struct nrma_verbs_mr *verbs;
	uint64_t key; /* the rkey; the lkey of a span for local access */
};

/* Registers [buf, buf + len) for fi_mr access flags: one reference. */
int nrma_mr_span_reg(struct nrma_verbs_domain *vdom, const void *buf,
		     size_t len, uint64_t access, struct nrma_mr_span **span);
/*
 * Drops a reference; the last deregisters and frees the span, and
 * returns what the device said to that.
 */
int nrma_mr_span_put(struct nrma_mr_span *span);

int nrma_mr_span_index_open(struct nrma_mr_span_index **idx);
void nrma_mr_span_index_close(struct nrma_mr_span_index *idx);
void nrma_mr_span_index_add(struct nrma_mr_span_index *idx,
			    struct nrma_mr_span *span);
void nrma_mr_span_index_remove(struct nrma_mr_span_index *idx,
			       struct nrma_mr_span *span);
/*
 * A span of the index that holds all of [buf, buf + len) and lets the
 * device write there if local_write, with a reference taken; NULL if none.
 */
struct nrma_mr_span *nrma_mr_span_index_find(struct nrma_mr_span_index *idx,
					     const void *buf, size_t len,
					     bool local_write);

#endif /* NRMA_MR_SPAN_H */
