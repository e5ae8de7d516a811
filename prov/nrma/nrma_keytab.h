/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A domain's key table (nrma_keytab.c): the slots that say what each of
 * its MR keys names (struct nrma_key_slot in nrma_proto.h), in memory
 * that peers read with RDMA read.
 */
#ifndef NRMA_KEYTAB_H
#define NRMA_KEYTAB_H

#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>

struct nrma_keytab;
struct nrma_key_slot;
struct nrma_verbs_domain;

int nrma_keytab_open(struct nrma_verbs_domain *vdom, size_t slots,
		     struct nrma_keytab **tab);
void nrma_keytab_close(struct nrma_keytab *tab);
/*
 * Publishes what a new key names (slot's fields but key and check);
 * -FI_ENOSPC when every slot is in use.
 */
int nrma_keytab_add(struct nrma_keytab *tab, const struct nrma_key_slot *slot,
		    uint64_t *key);
/*
 * The same under a key the application picked (nrma_key_wire), in the
 * slot of its number: -FI_EKEYREJECTED when the table has no such slot,
 * -FI_ENOKEY when a registration holds it.
 */
int nrma_keytab_add_app(struct nrma_keytab *tab,
			const struct nrma_key_slot *slot, uint64_t app_key);
/*
 * Names the notification cell of the registration under key; false when
 * key has no slot.
 */
bool nrma_keytab_set_cell(struct nrma_keytab *tab, uint64_t key,
			  uint32_t cell_rkey);
/*
 * Peers that read key from now on find nothing; its slot is free.  False
 * when key had no slot.
 */
bool nrma_keytab_remove(struct nrma_keytab *tab, uint64_t key);
uint32_t nrma_keytab_rkey(const struct nrma_keytab *tab);
uint32_t nrma_keytab_slots(const struct nrma_keytab *tab);

#endif /* NRMA_KEYTAB_H */
