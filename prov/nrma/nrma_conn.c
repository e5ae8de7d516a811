/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The table of an endpoint's connections, and the rule that settles two
 * endpoints connecting to each other at once.  Pure bookkeeping: the
 * rdmacm side is in nrma_cm.c.
 */
#include <stdlib.h>
#include <string.h>

#include <rdma/fi_errno.h>

#include "nrma_addr.h"
#include "nrma_cm.h"

#define NRMA_CONN_MIN_PEERS 64

void nrma_conn_table_init(struct nrma_conn_table *table)
{
	nrma_dlist_init(&table->conns);
	table->peers = NULL;
	table->npeers = 0;
	nrma_hash_init(&table->by_qp);
}

void nrma_conn_table_fini(struct nrma_conn_table *table)
{
	free(table->peers);
	table->peers = NULL;
	table->npeers = 0;
	nrma_hash_fini(&table->by_qp);
}

void nrma_conn_table_add(struct nrma_conn_table *table, struct nrma_conn *conn)
{
	nrma_dlist_insert_tail(&conn->link, &table->conns);
}

void nrma_conn_table_unmap(struct nrma_conn_table *table,
			   struct nrma_conn *conn)
{
	if (nrma_conn_table_by_addr(table, conn->fi_addr) == conn)
		table->peers[conn->fi_addr] = NULL;
	if (conn->qp)
		nrma_hash_remove(&table->by_qp, conn->qp_num);
}

void nrma_conn_table_unmap_addr(struct nrma_conn_table *table,
				struct nrma_conn *conn, fi_addr_t fi_addr)
{
	if (nrma_conn_table_by_addr(table, fi_addr) == conn)
		table->peers[fi_addr] = NULL;
	if (conn->fi_addr == fi_addr)
		conn->fi_addr = FI_ADDR_NOTAVAIL;
}

static int conn_table_reserve(struct nrma_conn_table *table, fi_addr_t fi_addr)
{
	size_t n = table->npeers ? table->npeers : NRMA_CONN_MIN_PEERS;
	struct nrma_conn **peers;

	if (fi_addr < table->npeers)
		return 0;
	if (fi_addr >= SIZE_MAX / 2 / sizeof(*peers))
		return -FI_EINVAL;
	while (n <= fi_addr)
		n *= 2;
	peers = realloc(table->peers, n * sizeof(*peers));
	if (!peers)
		return -FI_ENOMEM;
	memset(peers + table->npeers, 0, (n - table->npeers) * sizeof(*peers));
	table->peers = peers;
	table->npeers = n;
	return 0;
}

int nrma_conn_table_map(struct nrma_conn_table *table, struct nrma_conn *conn,
			fi_addr_t fi_addr)
{
	int ret = conn_table_reserve(table, fi_addr);

	if (ret)
		return ret;
	conn->fi_addr = fi_addr;
	table->peers[fi_addr] = conn;
	return 0;
}

int nrma_conn_table_map_qp(struct nrma_conn_table *table,
			   struct nrma_conn *conn, uint32_t qp_num)
{
	conn->qp_num = qp_num;
	return nrma_hash_insert(&table->by_qp, qp_num, conn) ? -FI_ENOMEM : 0;
}

struct nrma_conn *nrma_conn_table_by_addr(const struct nrma_conn_table *table,
					  fi_addr_t fi_addr)
{
	return fi_addr < table->npeers ? table->peers[fi_addr] : NULL;
}

struct nrma_conn *nrma_conn_table_by_name(const struct nrma_conn_table *table,
					  const struct sockaddr_in *name,
					  uint16_t ctx)
{
	struct nrma_dlist *item;

	nrma_dlist_foreach (&table->conns, item) {
		struct nrma_conn *conn =
			nrma_container_of(item, struct nrma_conn, link);

		if (conn->state != NRMA_CONN_FAILED && !conn->loopback &&
		    !conn->checking && !nrma_addr_cmp(&conn->peer, name) &&
		    conn->peer_ctx == ctx)
			return conn;
	}
	return NULL;
}

struct nrma_conn *nrma_conn_table_by_qp(const struct nrma_conn_table *table,
					uint32_t qp_num)
{
	return nrma_hash_find(&table->by_qp, qp_num);
}

bool nrma_conn_stalled(struct nrma_conn *conn, bool busy, int64_t now_ms,
		       int stall_ms)
{
	bool stalled = false;

	if (!busy)
		conn->stall_since = -1;
	else if (conn->stall_since < 0 || conn->sq_done != conn->stall_seen)
		conn->stall_since = now_ms;
	else
		stalled = now_ms - conn->stall_since >= stall_ms;
	conn->stall_seen = conn->sq_done;
	return stalled;
}

/* The smaller name's request wins: the larger gives up its own attempt. */
enum nrma_conn_verdict nrma_conn_request_verdict(
	const struct sockaddr_in *self, const struct nrma_conn *existing)
{
	if (!existing)
		return NRMA_CONN_ACCEPT;
	if (existing->state == NRMA_CONN_CONNECTED)
		return NRMA_CONN_BUSY;
	return existing->outgoing && nrma_addr_cmp(self, &existing->peer) > 0 ?
		       NRMA_CONN_ACCEPT :
		       NRMA_CONN_COLLISION;
}
