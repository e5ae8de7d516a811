/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Key tables.  A provider key must let an initiator reach a registration
 * with no call at the target, and must stay small and stable enough for
 * applications that address regions by offset: a key names a slot of
 * this table and carries a random secret (nrma_key_make), and the slot
 * holds the verbs rkey, the address and length, the rights and the
 * notification cell, sealed with the key (nrma_proto_key_seal): a peer that
 * reads the table learns nothing it was not handed the key to.
 * Initiators read a slot once per connection and key (nrma_rkey.c).  A
 * slot used again gets a new secret, so a closed registration's key
 * never names another.  A key the application picked (FI_MR_PROV_KEY
 * off) has the slot of its number and a secret all know: it names
 * whatever the application registers under it next, as fi_mr(3) has it.
 *
 * The table is registered for remote reads alone, at remote address 0.
 * Its slots change under the table's lock; readers on the wire take no
 * lock: a slot's two sequence words go odd before a change and even
 * after it, and a reader that sees them differ reads again.
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>

#include "nrma.h"
#include "nrma_keytab.h"
#include "nrma_proto.h"
#include "nrma_verbs.h"

struct nrma_keytab {
	struct nrma_key_sealed *sealed; /* what peers read */
	size_t bytes;			/* mapped, whole pages */
	uint32_t count;
	uint64_t *keys;		     /* by slot: its key, 0 if free */
	struct nrma_key_slot *plain; /* by slot: what its key names */
	uint32_t *free;		     /* stack of free slot indices */
	uint32_t nfree;
	struct nrma_verbs_mr *mr;
	uint32_t rkey;
	pthread_mutex_t lock;
};

int nrma_keytab_open(struct nrma_verbs_domain *vdom, size_t slots,
		     struct nrma_keytab **tabp)
{
	struct nrma_keytab *t = calloc(1, sizeof(*t));
	int ret = -FI_ENOMEM;

	if (!t)
		return -FI_ENOMEM;
	if (slots > NRMA_KEY_SLOTS_MAX)
		slots = NRMA_KEY_SLOTS_MAX;
	t->count = (uint32_t) slots;
	t->keys = calloc(slots, sizeof(*t->keys));
	t->plain = calloc(slots, sizeof(*t->plain));
	t->free = malloc(slots * sizeof(*t->free));
	if (t->keys && t->plain && t->free)
		t->sealed = nrma_verbs_pages_map(slots * sizeof(*t->sealed),
						 &t->bytes);
	if (t->sealed)
		ret = nrma_verbs_zero_reg(vdom, t->sealed, t->bytes,
					  NRMA_VERBS_ZERO_READ, &t->mr,
					  &t->rkey);
	if (ret) {
		nrma_keytab_close(t);
		return ret;
	}
	/* The last slots go first: the application's own keys (nrma_key_wire)
	 * are small numbers. */
	for (uint32_t i = 0; i < t->count; i++)
		t->free[t->nfree++] = i;
	pthread_mutex_init(&t->lock, NULL);
	*tabp = t;
	return 0;
}

void nrma_keytab_close(struct nrma_keytab *t)
{
	if (t->mr) {
		nrma_verbs_mr_dereg(t->mr);
		pthread_mutex_destroy(&t->lock);
	}
	if (t->sealed)
		munmap(t->sealed, t->bytes);
	free(t->keys);
	free(t->plain);
	free(t->free);
	free(t);
}

/* The slot key names, or UINT32_MAX if it names none of ours. */
static uint32_t keytab_index(const struct nrma_keytab *t, uint64_t key)
{
	uint32_t index = nrma_key_index(key);

	return index < t->count && key && t->keys[index] == key ? index :
								  UINT32_MAX;
}

/*
 * Seals what slot index names under key (0: nothing), between odd and
 * even sequence words, so that a reader on the wire sees the change
 * whole or knows to read again.
 */
static void keytab_publish(struct nrma_keytab *t, uint32_t index, uint64_t key)
{
	struct nrma_key_sealed *s = &t->sealed[index];
	uint64_t busy = s->seq + 1, done = s->seq + 2;

	atomic_store_explicit((_Atomic uint64_t *) &s->seq, busy,
			      memory_order_relaxed);
	atomic_store_explicit((_Atomic uint64_t *) &s->seq_end, busy,
			      memory_order_relaxed);
	atomic_thread_fence(memory_order_release);
	if (key) {
		nrma_proto_key_seal(s, key, done, &t->plain[index]);
	} else {
		memset(s->words, 0, sizeof(s->words));
		s->mac = 0;
	}
	atomic_thread_fence(memory_order_release);
	atomic_store_explicit((_Atomic uint64_t *) &s->seq_end, done,
			      memory_order_relaxed);
	atomic_store_explicit((_Atomic uint64_t *) &s->seq, done,
			      memory_order_relaxed);
}

/*
 * A key for slot index that is neither 0 nor its last one, nor the key
 * an application's would have there (nrma_key_wire).
 */
static uint64_t keytab_new_key(const struct nrma_keytab *t, uint32_t index)
{
	uint64_t secret, key;

	do {
		/* Only a signal interrupts it, once the system booted. */
		while (getrandom(&secret, sizeof(secret), 0) != sizeof(secret))
			;
		key = nrma_key_make(index, secret);
	} while (key == t->keys[index] || !(key >> NRMA_KEY_INDEX_BITS) ||
		 key == nrma_key_wire(index));
	return key;
}

/* Slot index, taken off the free stack, names fields under key. */
static void keytab_fill(struct nrma_keytab *t, uint32_t index, uint64_t key,
			const struct nrma_key_slot *fields)
{
	t->keys[index] = key;
	t->plain[index] = *fields;
	t->plain[index].reserved = 0;
	keytab_publish(t, index, key);
}

int nrma_keytab_add(struct nrma_keytab *t, const struct nrma_key_slot *fields,
		    uint64_t *key)
{
	uint32_t index;

	pthread_mutex_lock(&t->lock);
	if (!t->nfree) {
		pthread_mutex_unlock(&t->lock);
		return -FI_ENOSPC;
	}
	index = t->free[--t->nfree];
	*key = keytab_new_key(t, index);
	keytab_fill(t, index, *key, fields);
	pthread_mutex_unlock(&t->lock);
	return 0;
}

/*
 * Slot index's place on the free stack, or UINT32_MAX when it is in use
 * (keys[] keeps a slot's last key after it is freed).
 */
static uint32_t keytab_free_at(const struct nrma_keytab *t, uint32_t index)
{
	for (uint32_t at = 0; at < t->nfree; at++)
		if (t->free[at] == index)
			return at;
	return UINT32_MAX;
}

int nrma_keytab_add_app(struct nrma_keytab *t,
			const struct nrma_key_slot *fields, uint64_t app_key)
{
	uint32_t index = (uint32_t) app_key, at;
	int ret = 0;

	if (app_key >= t->count)
		return -FI_EKEYREJECTED;
	pthread_mutex_lock(&t->lock);
	/* Registration is no fast path: a scan of the stack is fine. */
	at = keytab_free_at(t, index);
	if (at == UINT32_MAX) {
		ret = -FI_ENOKEY;
	} else {
		t->nfree--;
		t->free[at] = t->free[t->nfree];
		keytab_fill(t, index, nrma_key_wire(app_key), fields);
	}
	pthread_mutex_unlock(&t->lock);
	return ret;
}

bool nrma_keytab_set_cell(struct nrma_keytab *t, uint64_t key,
			  uint32_t cell_rkey)
{
	uint32_t index;

	pthread_mutex_lock(&t->lock);
	index = keytab_index(t, key);
	if (index != UINT32_MAX) {
		t->plain[index].cell_rkey = cell_rkey;
		keytab_publish(t, index, key);
	}
	pthread_mutex_unlock(&t->lock);
	return index != UINT32_MAX;
}

bool nrma_keytab_remove(struct nrma_keytab *t, uint64_t key)
{
	uint32_t index;

	pthread_mutex_lock(&t->lock);
	index = keytab_index(t, key);
	if (index != UINT32_MAX) {
		keytab_publish(t, index, 0);
		memset(&t->plain[index], 0, sizeof(t->plain[index]));
		t->free[t->nfree++] = index;
	}
	pthread_mutex_unlock(&t->lock);
	return index != UINT32_MAX;
}

uint32_t nrma_keytab_rkey(const struct nrma_keytab *t)
{
	return t->rkey;
}

uint32_t nrma_keytab_slots(const struct nrma_keytab *t)
{
	return t->count;
}
