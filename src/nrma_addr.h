/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Endpoint names are IPv4 socket addresses.  An address table maps
 * fi_addr_t to names: the index of an entry is its fi_addr_t.  As
 * fi_av(3) has it for FI_AV_TABLE, a removed entry's index goes to the
 * next name inserted, so whoever caches an fi_addr_t checks that it
 * still names the same peer (nrma_addr_table_names).
 */
#ifndef NRMA_ADDR_H
#define NRMA_ADDR_H

#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rdma/fabric.h>

/* An IPv4 address with a port: what an endpoint can be named by. */
bool nrma_addr_valid(const void *addr, size_t len);
/* "fi_sockaddr_in://a.b.c.d:port"; returns its size with the NUL. */
int nrma_addr_str(const struct sockaddr_in *sin, char *buf, size_t len);
/*
 * fi_getname, fi_getpeer and fi_av_lookup: sin into addr (when not NULL),
 * truncated to *addrlen bytes with -FI_ETOOSMALL if it has less room;
 * *addrlen becomes its size either way.
 */
int nrma_addr_give(const struct sockaddr_in *sin, void *addr, size_t *addrlen);
/*
 * The i-th name of fi_av_insertsym's range from node, which must end in
 * digits: "host09", 1 gives "host10"; -FI_EINVAL if it does not fit len.
 */
int nrma_addr_sym_name(const char *node, size_t i, char *buf, size_t len);
/* Orders names by address, then port, as numbers. */
int nrma_addr_cmp(const struct sockaddr_in *a, const struct sockaddr_in *b);

struct nrma_addr_table {
	pthread_mutex_t lock;
	struct sockaddr_in *addrs; /* AF_UNSPEC once removed */
	size_t count;		   /* entries in use or removed */
	size_t capacity;
	size_t first_free; /* no free entry below it */
	int rx_ctx_bits;   /* fi_av_attr's: high bits name receive contexts */
	/* Entries removed so far: a cached fi_addr_t checked since the last
	 * removal still names the same peer (read without the lock). */
	_Atomic uint64_t removals;
};

static inline uint64_t nrma_addr_table_removals(
	const struct nrma_addr_table *table)
{
	return atomic_load_explicit(&table->removals, memory_order_acquire);
}

/*
 * An fi_addr_t of fi_rx_addr(3): the entry in its low bits, a receive
 * context of a scalable endpoint in its high rx_ctx_bits.
 */
static inline fi_addr_t nrma_addr_base(const struct nrma_addr_table *t,
				       fi_addr_t fi_addr)
{
	if (!t->rx_ctx_bits || fi_addr == FI_ADDR_NOTAVAIL)
		return fi_addr;
	return fi_addr & (UINT64_MAX >> t->rx_ctx_bits);
}

static inline unsigned int nrma_addr_rx_ctx(const struct nrma_addr_table *t,
					    fi_addr_t fi_addr)
{
	if (!t->rx_ctx_bits || fi_addr == FI_ADDR_NOTAVAIL)
		return 0;
	return (unsigned int) (fi_addr >> (64 - t->rx_ctx_bits));
}

void nrma_addr_table_init(struct nrma_addr_table *table);
void nrma_addr_table_fini(struct nrma_addr_table *table);
/*
 * Puts a valid name at the lowest free index; returns that fi_addr_t or a
 * negative error.
 */
int64_t nrma_addr_table_insert(struct nrma_addr_table *table,
			       const struct sockaddr_in *sin);
int nrma_addr_table_remove(struct nrma_addr_table *table, fi_addr_t fi_addr);
/* -FI_EINVAL for an fi_addr_t that names nothing (any more). */
int nrma_addr_table_get(struct nrma_addr_table *table, fi_addr_t fi_addr,
			struct sockaddr_in *sin);
/* Whether fi_addr (a base one) is still in the table with this name. */
bool nrma_addr_table_names(struct nrma_addr_table *table, fi_addr_t fi_addr,
			   const struct sockaddr_in *sin);
/* The first entry with this name, or FI_ADDR_NOTAVAIL. */
fi_addr_t nrma_addr_table_find(struct nrma_addr_table *table,
			       const struct sockaddr_in *sin);

#endif /* NRMA_ADDR_H */
