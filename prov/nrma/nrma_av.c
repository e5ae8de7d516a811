/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Address vectors.  An endpoint's name is the IPv4 socket address its
 * rdmacm listener is bound to.  FI_AV_TABLE and FI_AV_MAP share one
 * layout: fi_addr_t is the index of the entry, and indices are never
 * reused, so a stale fi_addr_t can never reach a different peer.
 */
#include <arpa/inet.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nrma.h"
#include "nrma_enosys.h"

#define NRMA_AV_MIN_CAPACITY	64

static struct nrma_av *av_of(struct fid_av *av_fid)
{
	return nrma_container_of(av_fid, struct nrma_av, av_fid);
}

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
	return n < 0 ? -FI_EINVAL : n + 1;	/* size including the NUL */
}

static int av_grow(struct nrma_av *av)
{
	size_t capacity = av->capacity ? av->capacity * 2 : NRMA_AV_MIN_CAPACITY;
	struct sockaddr_in *addrs;

	addrs = realloc(av->addrs, capacity * sizeof(*addrs));
	if (!addrs)
		return -FI_ENOMEM;
	av->addrs = addrs;
	av->capacity = capacity;
	return 0;
}

/* Appends one address; returns its fi_addr_t or a negative error. */
static int64_t av_append(struct nrma_av *av, const struct sockaddr_in *sin)
{
	int ret;

	if (!nrma_addr_valid(sin, sizeof(*sin)))
		return -FI_EINVAL;
	if (av->count == av->capacity) {
		ret = av_grow(av);
		if (ret)
			return ret;
	}
	av->addrs[av->count] = *sin;
	return av->count++;
}

static void av_report_error(struct nrma_av *av, size_t index, int err,
			    void *context)
{
	struct fi_eq_err_entry entry = {
		.fid = &av->av_fid.fid,
		.context = context,
		.data = index,
		.err = -err,
	};

	if (nrma_eq_report_err(av->eq, &entry))
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
	struct fi_eq_entry done = { .fid = &av->av_fid.fid, .context = context };
	size_t inserted = 0;

	if (flags & ~(FI_MORE | FI_SYNC_ERR))
		return -FI_EBADFLAGS;
	if ((flags & FI_SYNC_ERR) && (!context || av->eq))
		return -FI_EINVAL;
	if (av->eq == NULL && (av->flags & FI_EVENT))
		return -FI_ENOEQ;
	pthread_mutex_lock(&av->lock);
	for (size_t i = 0; i < count; i++) {
		int64_t ret = av_append(av, &addrs[i]);

		av_note_result(av, i, ret, fi_addr, flags, context);
		inserted += ret >= 0;
	}
	pthread_mutex_unlock(&av->lock);
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
	return av_insert_sockaddrs(av_of(av_fid), addr, count, fi_addr, flags,
				   context);
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
	return av_insert_sockaddrs(av_of(av_fid), &sin, 1, fi_addr, flags,
				   context);
}

/* nodecnt consecutive IPv4 addresses times svccnt consecutive ports. */
static int nrma_av_insertsym(struct fid_av *av_fid, const char *node,
			     size_t nodecnt, const char *service, size_t svccnt,
			     fi_addr_t *fi_addr, uint64_t flags, void *context)
{
	struct sockaddr_in base, *addrs;
	size_t n = 0;
	int ret;

	ret = resolve_node(node, service, &base);
	if (ret)
		return ret;
	if (!nodecnt || !svccnt || nodecnt > SIZE_MAX / svccnt)
		return -FI_EINVAL;
	addrs = calloc(nodecnt * svccnt, sizeof(*addrs));
	if (!addrs)
		return -FI_ENOMEM;
	for (size_t i = 0; i < nodecnt; i++) {
		for (size_t j = 0; j < svccnt; j++, n++) {
			addrs[n] = base;
			addrs[n].sin_addr.s_addr =
				htonl(ntohl(base.sin_addr.s_addr) + i);
			addrs[n].sin_port = htons(ntohs(base.sin_port) + j);
		}
	}
	ret = av_insert_sockaddrs(av_of(av_fid), addrs, n, fi_addr, flags,
				  context);
	free(addrs);
	return ret;
}

static bool av_entry_live(const struct nrma_av *av, fi_addr_t fi_addr)
{
	return fi_addr < av->count && av->addrs[fi_addr].sin_family == AF_INET;
}

int nrma_av_get(struct nrma_av *av, fi_addr_t fi_addr, struct sockaddr_in *sin)
{
	int ret = 0;

	pthread_mutex_lock(&av->lock);
	if (av_entry_live(av, fi_addr))
		*sin = av->addrs[fi_addr];
	else
		ret = -FI_EINVAL;
	pthread_mutex_unlock(&av->lock);
	return ret;
}

static bool same_addr(const struct sockaddr_in *a, const struct sockaddr_in *b)
{
	return a->sin_addr.s_addr == b->sin_addr.s_addr &&
	       a->sin_port == b->sin_port;
}

/* Reverse lookup, for FI_SOURCE; runs once per connection, not per message. */
fi_addr_t nrma_av_find(struct nrma_av *av, const struct sockaddr_in *sin)
{
	fi_addr_t found = FI_ADDR_NOTAVAIL;

	pthread_mutex_lock(&av->lock);
	for (size_t i = 0; i < av->count && found == FI_ADDR_NOTAVAIL; i++)
		if (av_entry_live(av, i) && same_addr(&av->addrs[i], sin))
			found = i;
	pthread_mutex_unlock(&av->lock);
	return found;
}

static int nrma_av_remove(struct fid_av *av_fid, fi_addr_t *fi_addr,
			  size_t count, uint64_t flags)
{
	struct nrma_av *av = av_of(av_fid);
	int ret = 0;

	if (flags)
		return -FI_EBADFLAGS;
	if (!fi_addr && count)
		return -FI_EINVAL;
	pthread_mutex_lock(&av->lock);
	for (size_t i = 0; i < count; i++) {
		if (!av_entry_live(av, fi_addr[i])) {
			ret = -FI_EINVAL;
			continue;
		}
		memset(&av->addrs[fi_addr[i]], 0, sizeof(*av->addrs));
	}
	pthread_mutex_unlock(&av->lock);
	return ret;
}

static int nrma_av_lookup(struct fid_av *av_fid, fi_addr_t fi_addr, void *addr,
			  size_t *addrlen)
{
	struct nrma_av *av = av_of(av_fid);
	struct sockaddr_in sin;
	size_t room;

	if (!addrlen)
		return -FI_EINVAL;
	pthread_mutex_lock(&av->lock);
	if (!av_entry_live(av, fi_addr)) {
		pthread_mutex_unlock(&av->lock);
		return -FI_ENOENT;
	}
	sin = av->addrs[fi_addr];
	pthread_mutex_unlock(&av->lock);
	room = *addrlen;
	*addrlen = sizeof(sin);
	if (addr)
		memcpy(addr, &sin, room < sizeof(sin) ? room : sizeof(sin));
	return room < sizeof(sin) ? -FI_ETOOSMALL : 0;
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
	struct nrma_av *av = nrma_container_of(fid, struct nrma_av, av_fid.fid);

	if (bfid->fclass != FI_CLASS_EQ || !(av->flags & FI_EVENT))
		return -FI_EINVAL;
	if (flags)
		return -FI_EBADFLAGS;
	if (av->eq)
		return -FI_EINVAL;
	av->eq = nrma_container_of(bfid, struct nrma_eq, eq_fid.fid);
	atomic_fetch_add(&av->eq->ref, 1);
	return 0;
}

static int nrma_av_close(struct fid *fid)
{
	struct nrma_av *av = nrma_container_of(fid, struct nrma_av, av_fid.fid);

	if (atomic_load(&av->ref))
		return -FI_EBUSY;
	if (av->eq)
		atomic_fetch_sub(&av->eq->ref, 1);
	pthread_mutex_destroy(&av->lock);
	atomic_fetch_sub(&av->domain->ref, 1);
	free(av->addrs);
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
		return -FI_ENOSYS;	/* no shared, named AVs */
	if (attr->rx_ctx_bits)
		return -FI_EINVAL;	/* no scalable endpoints */
	if (attr->type != FI_AV_UNSPEC && attr->type != FI_AV_MAP &&
	    attr->type != FI_AV_TABLE)
		return -FI_EINVAL;
	return 0;
}

int nrma_av_open(struct fid_domain *domain_fid, struct fi_av_attr *attr,
		 struct fid_av **av_fid, void *context)
{
	struct nrma_domain *domain =
		nrma_container_of(domain_fid, struct nrma_domain, domain_fid);
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
	pthread_mutex_init(&av->lock, NULL);
	av->type = attr->type != FI_AV_UNSPEC ? attr->type :
		   domain_type != FI_AV_UNSPEC ? domain_type : FI_AV_TABLE;
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
