/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Address vectors.  An endpoint's name is the IPv4 socket address its
 * rdmacm listener is bound to.  FI_AV_TABLE and FI_AV_MAP share one
 * layout, an address table (src/nrma_addr.c): fi_addr_t is the index of
 * the entry, and a removed entry's index goes to the next address
 * inserted (fi_av(3) asks FI_AV_MAP to behave as FI_AV_TABLE).
 */
#include <arpa/inet.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nrma.h"
#include "nrma_enosys.h"

static void av_report_error(struct nrma_av *av, size_t index, int err,
			    void *context)
{
	struct fi_eq_err_entry entry = {
		.fid = &av->av_fid.fid,
		.context = context,
		.data = index,
		.err = -err,
		.prov_errno = err, /* negative: no device event */
	};

	if (nrma_eq_report_err(av->eq, &entry, NULL, 0))
		NRMA_WARN(FI_LOG_AV, "EQ full: lost the error of address %zu\n",
			  index);
}

/* Result of inserting the i-th address, as FI_SYNC_ERR or FI_EVENT want. */
static void av_note_result(struct nrma_av *av, size_t i, int64_t ret,
			   fi_addr_t *fi_addr, uint64_t flags, void *context)
{
	if (fi_addr)
		fi_addr[i] = ret < 0 ? FI_ADDR_NOTAVAIL : (fi_addr_t) ret;
	if (flags & FI_SYNC_ERR)
		((int *) context)[i] = ret < 0 ? (int) -ret : 0;
	else if (ret < 0 && av->eq)
		av_report_error(av, i, (int) ret, context);
}

static int av_insert_sockaddrs(struct nrma_av *av,
			       const struct sockaddr_in *addrs, size_t count,
			       fi_addr_t *fi_addr, uint64_t flags,
			       void *context)
{
	struct fi_eq_entry done = { .fid = &av->av_fid.fid,
				    .context = context };
	size_t inserted = 0;

	if (flags & ~(FI_MORE | FI_SYNC_ERR))
		return -FI_EBADFLAGS;
	if ((flags & FI_SYNC_ERR) && (!context || av->eq))
		return -FI_EINVAL;
	if (av->eq == NULL && (av->flags & FI_EVENT))
		return -FI_ENOEQ;
	for (size_t i = 0; i < count; i++) {
		int64_t ret = nrma_addr_table_insert(&av->table, &addrs[i]);

		av_note_result(av, i, ret, fi_addr, flags, context);
		inserted += ret >= 0;
	}
	if (!av->eq)
		return (int) inserted;
	done.data = inserted;
	return nrma_eq_report(av->eq, FI_AV_COMPLETE, &done);
}

static int nrma_av_insert(struct fid_av *av_fid, const void *addr, size_t count,
			  fi_addr_t *fi_addr, uint64_t flags, void *context)
{
	if (!addr && count)
		return -FI_EINVAL;
	return av_insert_sockaddrs(nrma_av_of(av_fid), addr, count, fi_addr,
				   flags, context);
}

static int resolve_node(const char *node, const char *service,
			struct sockaddr_in *sin)
{
	struct addrinfo hints = { .ai_family = AF_INET,
				  .ai_socktype = SOCK_STREAM };
	struct addrinfo *ai;

	if (!node || !service || getaddrinfo(node, service, &hints, &ai))
		return -FI_EINVAL;
	memcpy(sin, ai->ai_addr, sizeof(*sin));
	freeaddrinfo(ai);
	return 0;
}

static int nrma_av_insertsvc(struct fid_av *av_fid, const char *node,
			     const char *service, fi_addr_t *fi_addr,
			     uint64_t flags, void *context)
{
	struct sockaddr_in sin;
	int ret;

	ret = resolve_node(node, service, &sin);
	if (ret)
		return ret;
	return av_insert_sockaddrs(nrma_av_of(av_fid), &sin, 1, fi_addr, flags,
				   context);
}

/*
 * The i-th of nodecnt nodes from node, resolved with service.  A numeric
 * IPv4 node counts up in addresses; a host name counts up in its numeric
 * suffix, which it must have for more than one node (fi_av(3)), and each
 * name is resolved on its own.  One that does not resolve is left zeroed:
 * the table refuses its entries one by one, as fi_av(3) reports failures.
 */
static int av_sym_node(const char *node, size_t nodecnt, size_t i,
		       const char *service, struct sockaddr_in *sin)
{
	char name[NI_MAXHOST];
	struct in_addr ip;
	int ret;

	memset(sin, 0, sizeof(*sin));
	if (inet_pton(AF_INET, node, &ip) == 1) {
		if (!resolve_node(node, service, sin))
			sin->sin_addr.s_addr =
				htonl(ntohl(ip.s_addr) + (uint32_t) i);
		return 0;
	}
	if (nodecnt > 1) {
		ret = nrma_addr_sym_name(node, i, name, sizeof(name));
		if (ret)
			return ret;
		node = name;
	}
	resolve_node(node, service, sin);
	return 0;
}

/* The j-th port from the node's; zeroed past the last port. */
static void av_sym_port(struct sockaddr_in *sin, const struct sockaddr_in *node,
			size_t j)
{
	size_t port = ntohs(node->sin_port) + j;

	if (node->sin_family != AF_INET || port > UINT16_MAX)
		return;
	*sin = *node;
	sin->sin_port = htons((uint16_t) port);
}

/* fi_av_insertsym(3): nodecnt nodes times svccnt ports, node by node. */
static int nrma_av_insertsym(struct fid_av *av_fid, const char *node,
			     size_t nodecnt, const char *service, size_t svccnt,
			     fi_addr_t *fi_addr, uint64_t flags, void *context)
{
	struct sockaddr_in node_sin, *addrs;
	size_t n = 0;
	int ret = 0;

	if (!node || !service || !nodecnt || !svccnt ||
	    nodecnt > SIZE_MAX / svccnt)
		return -FI_EINVAL;
	addrs = calloc(nodecnt * svccnt, sizeof(*addrs));
	if (!addrs)
		return -FI_ENOMEM;
	for (size_t i = 0; i < nodecnt && !ret; i++) {
		ret = av_sym_node(node, nodecnt, i, service, &node_sin);
		for (size_t j = 0; j < svccnt; j++, n++)
			av_sym_port(&addrs[n], &node_sin, j);
	}
	if (!ret)
		ret = av_insert_sockaddrs(nrma_av_of(av_fid), addrs, n, fi_addr,
					  flags, context);
	free(addrs);
	return ret;
}

static int nrma_av_remove(struct fid_av *av_fid, fi_addr_t *fi_addr,
			  size_t count, uint64_t flags)
{
	struct nrma_av *av = nrma_av_of(av_fid);
	int ret = 0;

	if (flags)
		return -FI_EBADFLAGS;
	if (!fi_addr && count)
		return -FI_EINVAL;
	for (size_t i = 0; i < count; i++)
		if (nrma_addr_table_remove(&av->table, fi_addr[i]))
			ret = -FI_EINVAL;
	return ret;
}

static int nrma_av_lookup(struct fid_av *av_fid, fi_addr_t fi_addr, void *addr,
			  size_t *addrlen)
{
	struct nrma_av *av = nrma_av_of(av_fid);
	struct sockaddr_in sin;

	if (!addrlen)
		return -FI_EINVAL;
	if (nrma_addr_table_get(&av->table, fi_addr, &sin))
		return -FI_ENOENT;
	return nrma_addr_give(&sin, addr, addrlen);
}

static const char *nrma_av_straddr(struct fid_av *av_fid, const void *addr,
				   char *buf, size_t *len)
{
	char str[64];
	int size;

	(void) av_fid;
	if (!addr || !buf || !len)
		return NULL;
	size = nrma_addr_str(addr, str, sizeof(str));
	if (size < 0)
		return NULL;
	if (*len) {
		strncpy(buf, str, *len - 1);
		buf[*len - 1] = '\0';
	}
	*len = size;
	return buf;
}

static int nrma_av_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	struct nrma_av *av = nrma_av_of_fid(fid);

	if (bfid->fclass != FI_CLASS_EQ || !(av->flags & FI_EVENT))
		return -FI_EINVAL;
	if (flags)
		return -FI_EBADFLAGS;
	if (av->eq)
		return -FI_EINVAL;
	av->eq = nrma_eq_of_fid(bfid);
	atomic_fetch_add(&av->eq->ref, 1);
	return 0;
}

static int nrma_av_close(struct fid *fid)
{
	struct nrma_av *av = nrma_av_of_fid(fid);

	if (atomic_load(&av->ref))
		return -FI_EBUSY;
	if (av->eq)
		atomic_fetch_sub(&av->eq->ref, 1);
	nrma_addr_table_fini(&av->table);
	atomic_fetch_sub(&av->domain->ref, 1);
	free(av);
	return 0;
}

static struct fi_ops nrma_av_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = nrma_av_close,
	.bind = nrma_av_bind,
	.control = nrma_no_control,
	.ops_open = nrma_no_ops_open,
};

static struct fi_ops_av nrma_av_ops = {
	.size = sizeof(struct fi_ops_av),
	.insert = nrma_av_insert,
	.insertsvc = nrma_av_insertsvc,
	.insertsym = nrma_av_insertsym,
	.remove = nrma_av_remove,
	.lookup = nrma_av_lookup,
	.straddr = nrma_av_straddr,
	.av_set = nrma_no_av_set,
};

static int av_attr_check(const struct fi_av_attr *attr)
{
	if (attr->flags & ~(FI_EVENT | FI_SYMMETRIC))
		return -FI_EBADFLAGS;
	if (attr->name || attr->map_addr)
		return -FI_ENOSYS; /* no shared, named AVs */
	/* fi_av(3) allows up to 16 bits; a message names one of
	 * NRMA_RX_CTX_MAX contexts, which nrma_send checks. */
	if (attr->rx_ctx_bits < 0 || attr->rx_ctx_bits > 16)
		return -FI_EINVAL;
	if (attr->type != FI_AV_UNSPEC && attr->type != FI_AV_MAP &&
	    attr->type != FI_AV_TABLE)
		return -FI_EINVAL;
	return 0;
}

int nrma_av_open(struct fid_domain *domain_fid, struct fi_av_attr *attr,
		 struct fid_av **av_fid, void *context)
{
	struct nrma_domain *domain = nrma_domain_of(domain_fid);
	enum fi_av_type domain_type = domain->info->domain_attr->av_type;
	struct nrma_av *av;
	int ret;

	if (!attr)
		return -FI_EINVAL;
	ret = av_attr_check(attr);
	if (ret)
		return ret;
	if (domain_type != FI_AV_UNSPEC && attr->type != FI_AV_UNSPEC &&
	    attr->type != domain_type)
		return -FI_EINVAL;
	av = calloc(1, sizeof(*av));
	if (!av)
		return -FI_ENOMEM;
	nrma_addr_table_init(&av->table);
	av->table.rx_ctx_bits = attr->rx_ctx_bits;
	av->type = attr->type != FI_AV_UNSPEC  ? attr->type :
		   domain_type != FI_AV_UNSPEC ? domain_type :
						 FI_AV_TABLE;
	av->flags = attr->flags;
	av->domain = domain;
	av->av_fid.fid.fclass = FI_CLASS_AV;
	av->av_fid.fid.context = context;
	av->av_fid.fid.ops = &nrma_av_fi_ops;
	av->av_fid.ops = &nrma_av_ops;
	atomic_fetch_add(&domain->ref, 1);
	*av_fid = &av->av_fid;
	return 0;
}
