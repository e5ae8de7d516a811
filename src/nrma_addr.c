/* SPDX-License-Identifier: BSD-2-Clause */
#include <arpa/inet.h>
#include <ctype.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fi_errno.h>

#include "nrma_addr.h"

#define NRMA_ADDR_MIN_CAPACITY 64

bool nrma_addr_valid(const void *addr, size_t len)
{
	const struct sockaddr_in *sin = addr;

	return addr && len >= sizeof(*sin) && sin->sin_family == AF_INET &&
	       sin->sin_addr.s_addr != htonl(INADDR_ANY) && sin->sin_port;
}

int nrma_addr_str(const struct sockaddr_in *sin, char *buf, size_t len)
{
	char ip[INET_ADDRSTRLEN];
	int n;

	if (!inet_ntop(AF_INET, &sin->sin_addr, ip, sizeof(ip)))
		return -FI_EINVAL;
	n = snprintf(buf, len, "fi_sockaddr_in://%s:%u", ip,
		     ntohs(sin->sin_port));
	return n < 0 ? -FI_EINVAL : n + 1;
}

int nrma_addr_give(const struct sockaddr_in *sin, void *addr, size_t *addrlen)
{
	size_t room = *addrlen;

	*addrlen = sizeof(*sin);
	if (addr)
		memcpy(addr, sin, room < sizeof(*sin) ? room : sizeof(*sin));
	return room < sizeof(*sin) ? -FI_ETOOSMALL : 0;
}

/*
 * fi_av_insertsym(3): the i-th node after a name with a numeric suffix
 * ("host09", 1: "host10"), at least as wide as that suffix, as libfabric's
 * util AV writes it.
 */
int nrma_addr_sym_name(const char *node, size_t i, char *buf, size_t len)
{
	size_t prefix = strlen(node), width;
	unsigned long long base;
	int n;

	while (prefix && isdigit((unsigned char) node[prefix - 1]))
		prefix--;
	width = strlen(node) - prefix;
	if (!width || width > 19)
		return -FI_EINVAL;
	base = strtoull(node + prefix, NULL, 10);
	if (i > ULLONG_MAX - base)
		return -FI_EINVAL;
	n = snprintf(buf, len, "%.*s%0*llu", (int) prefix, node, (int) width,
		     base + i);
	return n < 0 || (size_t) n >= len ? -FI_EINVAL : 0;
}

int nrma_addr_cmp(const struct sockaddr_in *a, const struct sockaddr_in *b)
{
	uint32_t ia = ntohl(a->sin_addr.s_addr), ib = ntohl(b->sin_addr.s_addr);

	if (ia != ib)
		return ia < ib ? -1 : 1;
	return ntohs(a->sin_port) - ntohs(b->sin_port);
}

void nrma_addr_table_init(struct nrma_addr_table *table)
{
	memset(table, 0, sizeof(*table));
	pthread_mutex_init(&table->lock, NULL);
}

void nrma_addr_table_fini(struct nrma_addr_table *table)
{
	pthread_mutex_destroy(&table->lock);
	free(table->addrs);
	table->addrs = NULL;
	table->count = table->capacity = 0;
}

static int addr_table_grow(struct nrma_addr_table *table)
{
	size_t capacity = table->capacity ? table->capacity * 2 :
					    NRMA_ADDR_MIN_CAPACITY;
	struct sockaddr_in *addrs;

	addrs = realloc(table->addrs, capacity * sizeof(*addrs));
	if (!addrs)
		return -FI_ENOMEM;
	table->addrs = addrs;
	table->capacity = capacity;
	return 0;
}

static bool addr_table_live(const struct nrma_addr_table *table,
			    fi_addr_t fi_addr)
{
	return fi_addr < table->count &&
	       table->addrs[fi_addr].sin_family == AF_INET;
}

/* fi_av(3): an address goes to the lowest unused index. */
static size_t addr_table_free_slot(const struct nrma_addr_table *table)
{
	size_t i = table->first_free;

	while (i < table->count && addr_table_live(table, i))
		i++;
	return i;
}

int64_t nrma_addr_table_insert(struct nrma_addr_table *table,
			       const struct sockaddr_in *sin)
{
	int64_t ret = -FI_EINVAL;
	size_t i;

	pthread_mutex_lock(&table->lock);
	if (!nrma_addr_valid(sin, sizeof(*sin)))
		goto out;
	i = addr_table_free_slot(table);
	if (i == table->capacity) {
		ret = addr_table_grow(table);
		if (ret)
			goto out;
	}
	if (i == table->count)
		table->count++;
	table->addrs[i] = *sin;
	table->first_free = i + 1;
	ret = (int64_t) i;
out:
	pthread_mutex_unlock(&table->lock);
	return ret;
}

int nrma_addr_table_remove(struct nrma_addr_table *table, fi_addr_t fi_addr)
{
	int ret = -FI_EINVAL;

	pthread_mutex_lock(&table->lock);
	if (addr_table_live(table, fi_addr)) {
		memset(&table->addrs[fi_addr], 0, sizeof(*table->addrs));
		if (fi_addr < table->first_free)
			table->first_free = fi_addr;
		atomic_fetch_add_explicit(&table->removals, 1,
					  memory_order_release);
		ret = 0;
	}
	pthread_mutex_unlock(&table->lock);
	return ret;
}

int nrma_addr_table_get(struct nrma_addr_table *table, fi_addr_t fi_addr,
			struct sockaddr_in *sin)
{
	int ret = -FI_EINVAL;

	fi_addr = nrma_addr_base(table, fi_addr);
	pthread_mutex_lock(&table->lock);
	if (addr_table_live(table, fi_addr)) {
		*sin = table->addrs[fi_addr];
		ret = 0;
	}
	pthread_mutex_unlock(&table->lock);
	return ret;
}

static bool addr_same(const struct sockaddr_in *a, const struct sockaddr_in *b)
{
	return a->sin_addr.s_addr == b->sin_addr.s_addr &&
	       a->sin_port == b->sin_port;
}

bool nrma_addr_table_names(struct nrma_addr_table *table, fi_addr_t fi_addr,
			   const struct sockaddr_in *sin)
{
	bool same;

	pthread_mutex_lock(&table->lock);
	same = addr_table_live(table, fi_addr) &&
	       addr_same(&table->addrs[fi_addr], sin);
	pthread_mutex_unlock(&table->lock);
	return same;
}

/* Linear: it runs once per connection, not per message. */
fi_addr_t nrma_addr_table_find(struct nrma_addr_table *table,
			       const struct sockaddr_in *sin)
{
	fi_addr_t found = FI_ADDR_NOTAVAIL;

	pthread_mutex_lock(&table->lock);
	for (size_t i = 0; i < table->count && found == FI_ADDR_NOTAVAIL; i++)
		if (addr_table_live(table, i) &&
		    addr_same(&table->addrs[i], sin))
			found = i;
	pthread_mutex_unlock(&table->lock);
	return found;
}
