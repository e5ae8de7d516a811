/* SPDX-License-Identifier: BSD-2-Clause */
#include <errno.h>
#include <stdlib.h>

#include "nrma_token.h"

int nrma_token_table_init(struct nrma_token_table *table, size_t count,
			  size_t slot_size)
{
	int ret = nrma_bufpool_init(&table->slots, count, slot_size);

	if (ret)
		return ret;
	table->gen = calloc(count, sizeof(*table->gen));
	if (!table->gen) {
		nrma_bufpool_fini(&table->slots);
		return -ENOMEM;
	}
	table->random_left = 0;
	table->taken = 0;
	return 0;
}

void nrma_token_table_fini(struct nrma_token_table *table)
{
	nrma_bufpool_fini(&table->slots);
	free(table->gen);
	table->gen = NULL;
}

static uint32_t token_random(struct nrma_token_table *table)
{
	if (!table->random_left) {
		arc4random_buf(table->random, sizeof(table->random));
		table->random_left = NRMA_TOKEN_RANDOM_BATCH;
	}
	return table->random[--table->random_left];
}

/* A free slot, its generation counted: never 0, which means free. */
int64_t nrma_token_get_local(struct nrma_token_table *table)
{
	int64_t index = nrma_bufpool_get(&table->slots);

	if (index < 0)
		return index;
	do
		table->gen[index] = ++table->taken;
	while (!table->gen[index]);
	return index;
}

void nrma_token_seal(struct nrma_token_table *table, uint32_t index)
{
	uint32_t gen;

	do
		gen = token_random(table);
	while (!gen || gen == table->gen[index]);
	table->gen[index] = gen;
}

void nrma_token_put(struct nrma_token_table *table, uint32_t index)
{
	table->gen[index] = 0;
	nrma_bufpool_put(&table->slots, index);
}

uint64_t nrma_token_of(const struct nrma_token_table *table, uint32_t index)
{
	return (uint64_t) table->gen[index] << 32 | index;
}

int64_t nrma_token_find(const struct nrma_token_table *table, uint64_t token)
{
	uint32_t index = (uint32_t) token;

	if (index >= table->slots.count || !table->gen[index] ||
	    table->gen[index] != token >> 32)
		return -1;
	return index;
}

bool nrma_token_in_use(const struct nrma_token_table *table, uint32_t index)
{
	return table->gen[index] != 0;
}
