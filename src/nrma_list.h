/* SPDX-License-Identifier: BSD-2-Clause */
/* Intrusive doubly linked list and container_of. */
#ifndef NRMA_LIST_H
#define NRMA_LIST_H

#include <stddef.h>
#include <stdbool.h>

#define nrma_container_of(ptr, type, field) \
	((type *) ((char *) (ptr) -offsetof(type, field)))

struct nrma_dlist {
	struct nrma_dlist *next;
	struct nrma_dlist *prev;
};

static inline void nrma_dlist_init(struct nrma_dlist *head)
{
	head->next = head;
	head->prev = head;
}

static inline bool nrma_dlist_empty(const struct nrma_dlist *head)
{
	return head->next == head;
}

static inline void nrma_dlist_insert_tail(struct nrma_dlist *item,
					  struct nrma_dlist *head)
{
	item->next = head;
	item->prev = head->prev;
	head->prev->next = item;
	head->prev = item;
}

/* Before every other item: after head. */
static inline void nrma_dlist_insert_head(struct nrma_dlist *item,
					  struct nrma_dlist *head)
{
	nrma_dlist_insert_tail(item, head->next);
}

static inline void nrma_dlist_remove(struct nrma_dlist *item)
{
	item->prev->next = item->next;
	item->next->prev = item->prev;
	nrma_dlist_init(item);
}

static inline struct nrma_dlist *nrma_dlist_pop_front(struct nrma_dlist *head)
{
	struct nrma_dlist *item;

	if (nrma_dlist_empty(head))
		return NULL;
	item = head->next;
	nrma_dlist_remove(item);
	return item;
}

#define nrma_dlist_foreach(head, item) \
	for ((item) = (head)->next; (item) != (head); (item) = (item)->next)

/* The same, where the loop's body may remove item. */
#define nrma_dlist_foreach_safe(head, item, next)                            \
	for ((item) = (head)->next, (next) = (item)->next; (item) != (head); \
	     (item) = (next), (next) = (item)->next)

#endif /* NRMA_LIST_H */
