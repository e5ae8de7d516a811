/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Unit tests for prov/nrma/nrma_av.c, driven through libfabric's inline
 * fi_av_* API on an AV opened on a fake domain.
 */
#define _GNU_SOURCE /* RTLD_NEXT */
#include "nrma_test.h"

#include <dlfcn.h>
#include <netdb.h>

#include <rdma/fi_domain.h>
#include <rdma/fi_eq.h>

/* libfabric 2.0 deprecates fi_av_bind; nrma keeps serving it. */
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

static struct fid_av *open_av(void **state, enum fi_av_type type,
			      uint64_t flags)
{
	struct fi_av_attr attr = { .type = type, .flags = flags };
	struct fid_av *av = NULL;

	assert_int_equal(nrma_av_open(fake_domain(state), &attr, &av, NULL), 0);
	assert_non_null(av);
	return av;
}

static struct nrma_av *av_of(struct fid_av *av)
{
	return nrma_container_of(av, struct nrma_av, av_fid);
}

static void assert_lookup(struct fid_av *av, fi_addr_t fi_addr,
			  const struct sockaddr_in *want)
{
	struct sockaddr_in got;
	size_t len = sizeof(got);

	memset(&got, 0xa5, sizeof(got));
	assert_int_equal(fi_av_lookup(av, fi_addr, &got, &len), 0);
	assert_int_equal(len, sizeof(got));
	assert_memory_equal(&got, want, sizeof(got));
}

static void test_insert_good(void **state)
{
	struct fid_av *av = open_av(state, FI_AV_UNSPEC, 0);
	struct sockaddr_in addrs[3] = {
		make_sin("10.9.9.1", 1234),
		make_sin("10.9.9.2", 1234),
		make_sin("10.9.9.1", 1235),
	};
	fi_addr_t fi_addr[3] = { 77, 77, 77 };

	assert_int_equal(
		atomic_load(&((struct fake_env *) *state)->domain->ref), 1);
	assert_int_equal(fi_av_insert(av, addrs, 3, fi_addr, 0, NULL), 3);
	for (size_t i = 0; i < 3; i++) {
		assert_int_equal(fi_addr[i], i);
		assert_lookup(av, fi_addr[i], &addrs[i]);
	}
	/* The next batch continues the numbering; FI_MORE is accepted. */
	assert_int_equal(fi_av_insert(av, addrs, 2, fi_addr, FI_MORE, NULL), 2);
	assert_int_equal(fi_addr[0], 3);
	assert_int_equal(fi_addr[1], 4);
	assert_lookup(av, 4, &addrs[1]);
	/* fi_addr may be NULL. */
	assert_int_equal(fi_av_insert(av, &addrs[2], 1, NULL, 0, NULL), 1);
	assert_lookup(av, 5, &addrs[2]);
	assert_int_equal(fi_av_insert(av, NULL, 0, NULL, 0, NULL), 0);
	assert_int_equal(fi_av_insert(av, NULL, 1, NULL, 0, NULL), -FI_EINVAL);
	assert_int_equal(fi_close(&av->fid), 0);
}

/* Well past the initial capacity, so the table has to grow. */
static void test_insert_many(void **state)
{
	struct fid_av *av = open_av(state, FI_AV_TABLE, 0);
	enum { N = 1000 };
	struct sockaddr_in *addrs = calloc(N, sizeof(*addrs));
	fi_addr_t *fi_addr = calloc(N, sizeof(*fi_addr));

	assert_non_null(addrs);
	assert_non_null(fi_addr);
	for (size_t i = 0; i < N; i++)
		addrs[i] = make_sin("10.1.0.1", (uint16_t) (1000 + i));
	for (size_t i = 0; i < N; i += 100)
		assert_int_equal(
			fi_av_insert(av, &addrs[i], 100, &fi_addr[i], 0, NULL),
			100);
	for (size_t i = 0; i < N; i++) {
		assert_int_equal(fi_addr[i], i);
		assert_lookup(av, i, &addrs[i]);
	}
	free(addrs);
	free(fi_addr);
	assert_int_equal(fi_close(&av->fid), 0);
}

static void test_insert_bad(void **state)
{
	struct fid_av *av = open_av(state, FI_AV_UNSPEC, 0);
	struct sockaddr_in addrs[5] = {
		make_sin("10.9.9.1", 1234), { 0 }, /* zeroed */
		make_sin("10.9.9.2", 0),	   /* port 0 */
		make_sin("0.0.0.0", 1234),	   /* INADDR_ANY */
		make_sin("10.9.9.3", 1234),
	};
	struct sockaddr_in v6 = make_sin("10.9.9.4", 1234);
	fi_addr_t fi_addr[5];
	size_t len = sizeof(struct sockaddr_in);
	struct sockaddr_in got;

	assert_int_equal(fi_av_insert(av, addrs, 5, fi_addr, 0, NULL), 2);
	assert_int_equal(fi_addr[0], 0);
	assert_int_equal(fi_addr[1], FI_ADDR_NOTAVAIL);
	assert_int_equal(fi_addr[2], FI_ADDR_NOTAVAIL);
	assert_int_equal(fi_addr[3], FI_ADDR_NOTAVAIL);
	/* Failures do not use up an index. */
	assert_int_equal(fi_addr[4], 1);
	assert_lookup(av, 0, &addrs[0]);
	assert_lookup(av, 1, &addrs[4]);
	assert_int_equal(fi_av_lookup(av, 2, &got, &len), -FI_ENOENT);

	v6.sin_family = AF_INET6;
	assert_int_equal(fi_av_insert(av, &v6, 1, fi_addr, 0, NULL), 0);
	assert_int_equal(fi_addr[0], FI_ADDR_NOTAVAIL);
	assert_int_equal(fi_close(&av->fid), 0);
}

static void test_sync_err(void **state)
{
	struct fid_av *av = open_av(state, FI_AV_UNSPEC, 0);
	struct sockaddr_in addrs[4] = {
		make_sin("10.9.9.1", 1234),
		make_sin("10.9.9.2", 0),
		make_sin("10.9.9.3", 1234),
		{ 0 },
	};
	int errs[4] = { -1, -1, -1, -1 };
	fi_addr_t fi_addr[4];

	assert_int_equal(fi_av_insert(av, addrs, 4, fi_addr, FI_SYNC_ERR, errs),
			 2);
	assert_int_equal(errs[0], 0);
	assert_true(errs[1] > 0);
	assert_int_equal(errs[2], 0);
	assert_true(errs[3] > 0);
	assert_int_equal(fi_addr[0], 0);
	assert_int_equal(fi_addr[1], FI_ADDR_NOTAVAIL);
	assert_int_equal(fi_addr[2], 1);
	assert_int_equal(fi_addr[3], FI_ADDR_NOTAVAIL);
	/* FI_SYNC_ERR needs somewhere to put the errors. */
	assert_int_equal(fi_av_insert(av, addrs, 1, fi_addr, FI_SYNC_ERR, NULL),
			 -FI_EINVAL);
	assert_int_equal(fi_close(&av->fid), 0);
}

static void test_bad_flags(void **state)
{
	struct fid_av *av = open_av(state, FI_AV_UNSPEC, 0);
	struct sockaddr_in sin = make_sin("10.9.9.1", 1234);
	fi_addr_t fi_addr = 0, removed = 0;
	size_t len = sizeof(sin);

	assert_int_equal(fi_av_insert(av, &sin, 1, &fi_addr, FI_RECV, NULL),
			 -FI_EBADFLAGS);
	assert_int_equal(fi_av_insert(av, &sin, 1, &fi_addr, FI_EVENT, NULL),
			 -FI_EBADFLAGS);
	/* Nothing was inserted. */
	assert_int_equal(fi_av_lookup(av, 0, &sin, &len), -FI_ENOENT);
	assert_int_equal(fi_av_insert(av, &sin, 1, &fi_addr, 0, NULL), 1);
	assert_int_equal(fi_addr, 0);
	assert_int_equal(fi_av_remove(av, &removed, 1, FI_MORE), -FI_EBADFLAGS);
	assert_lookup(av, 0, &sin);
	assert_int_equal(fi_close(&av->fid), 0);
}

static void test_lookup(void **state)
{
	struct fid_av *av = open_av(state, FI_AV_UNSPEC, 0);
	struct sockaddr_in sin = make_sin("10.9.9.1", 1234), got;
	uint8_t small[8];
	size_t len;
	fi_addr_t fi_addr;

	assert_int_equal(fi_av_insert(av, &sin, 1, &fi_addr, 0, NULL), 1);
	assert_lookup(av, fi_addr, &sin);

	/* A short buffer gets what fits and the size it needs. */
	len = sizeof(small);
	memset(small, 0, sizeof(small));
	assert_int_equal(fi_av_lookup(av, fi_addr, small, &len), -FI_ETOOSMALL);
	assert_int_equal(len, 16);
	assert_memory_equal(small, &sin, sizeof(small));

	len = 0;
	assert_int_equal(fi_av_lookup(av, fi_addr, NULL, &len), -FI_ETOOSMALL);
	assert_int_equal(len, sizeof(struct sockaddr_in));

	/* A larger buffer is fine; addrlen says how much was written. */
	{
		uint8_t big[32];

		len = sizeof(big);
		assert_int_equal(fi_av_lookup(av, fi_addr, big, &len), 0);
		assert_int_equal(len, sizeof(sin));
		assert_memory_equal(big, &sin, sizeof(sin));
	}

	len = sizeof(got);
	assert_int_equal(fi_av_lookup(av, 1, &got, &len), -FI_ENOENT);
	assert_int_equal(fi_av_lookup(av, 12345, &got, &len), -FI_ENOENT);
	assert_int_equal(fi_av_lookup(av, FI_ADDR_NOTAVAIL, &got, &len),
			 -FI_ENOENT);
	assert_int_equal(fi_close(&av->fid), 0);
}

static void test_remove(void **state)
{
	struct fid_av *av = open_av(state, FI_AV_MAP, 0);
	struct sockaddr_in addrs[3] = {
		make_sin("10.9.9.1", 1),
		make_sin("10.9.9.2", 2),
		make_sin("10.9.9.3", 3),
	};
	struct sockaddr_in again = make_sin("10.9.9.4", 4), got;
	fi_addr_t fi_addr[3], one = 1, next = 0;
	size_t len = sizeof(got);

	assert_int_equal(fi_av_insert(av, addrs, 3, fi_addr, 0, NULL), 3);
	assert_int_equal(fi_av_remove(av, &one, 1, 0), 0);
	assert_int_equal(fi_av_lookup(av, 1, &got, &len), -FI_ENOENT);
	/* Its neighbours are untouched. */
	assert_lookup(av, 0, &addrs[0]);
	assert_lookup(av, 2, &addrs[2]);
	assert_int_equal(fi_av_remove(av, &one, 1, 0), -FI_EINVAL);

	/* fi_av(3): the lowest unused index takes the next address. */
	assert_int_equal(fi_av_insert(av, &again, 1, &next, 0, NULL), 1);
	assert_int_equal(next, 1);
	assert_lookup(av, 1, &again);
	assert_int_equal(fi_av_insert(av, &addrs[1], 1, &next, 0, NULL), 1);
	assert_int_equal(next, 3);

	next = 99;
	assert_int_equal(fi_av_remove(av, &next, 1, 0), -FI_EINVAL);
	assert_int_equal(fi_av_remove(av, NULL, 1, 0), -FI_EINVAL);
	fi_addr[1] = 2;
	assert_int_equal(fi_av_remove(av, fi_addr, 2, 0), 0);
	assert_int_equal(fi_av_lookup(av, 0, &got, &len), -FI_ENOENT);
	assert_int_equal(fi_av_lookup(av, 2, &got, &len), -FI_ENOENT);
	assert_lookup(av, 1, &again);
	assert_int_equal(fi_av_insert(av, addrs, 3, fi_addr, 0, NULL), 3);
	assert_int_equal(fi_addr[0], 0);
	assert_int_equal(fi_addr[1], 2);
	assert_int_equal(fi_addr[2], 4);
	assert_int_equal(fi_close(&av->fid), 0);
}

static void test_straddr(void **state)
{
	struct fid_av *av = open_av(state, FI_AV_UNSPEC, 0);
	struct sockaddr_in sin = make_sin("10.9.9.1", 1234);
	const char *want = "fi_sockaddr_in://10.9.9.1:1234";
	char buf[64];
	size_t len = sizeof(buf);

	assert_ptr_equal(fi_av_straddr(av, &sin, buf, &len), buf);
	assert_string_equal(buf, want);
	assert_int_equal(len, strlen(want) + 1);

	/* Too short: truncated, terminated, and the needed size reported. */
	memset(buf, 'x', sizeof(buf));
	len = 10;
	assert_ptr_equal(fi_av_straddr(av, &sin, buf, &len), buf);
	assert_int_equal(len, strlen(want) + 1);
	assert_int_equal(strlen(buf), 9);
	assert_memory_equal(buf, want, 9);
	assert_int_equal(buf[10], 'x');

	len = 0;
	assert_ptr_equal(fi_av_straddr(av, &sin, buf, &len), buf);
	assert_int_equal(len, strlen(want) + 1);

	len = sizeof(buf);
	sin = make_sin("255.255.255.255", 65535);
	assert_ptr_equal(fi_av_straddr(av, &sin, buf, &len), buf);
	assert_string_equal(buf, "fi_sockaddr_in://255.255.255.255:65535");
	assert_int_equal(len, strlen(buf) + 1);
	assert_int_equal(fi_close(&av->fid), 0);
}

static void test_insertsvc(void **state)
{
	struct fid_av *av = open_av(state, FI_AV_UNSPEC, 0);
	struct sockaddr_in want = make_sin("10.9.9.7", 4000);
	fi_addr_t fi_addr = 77;

	assert_int_equal(
		fi_av_insertsvc(av, "10.9.9.7", "4000", &fi_addr, 0, NULL), 1);
	assert_int_equal(fi_addr, 0);
	assert_lookup(av, 0, &want);
	assert_int_equal(
		fi_av_insertsvc(av, "10.9.9.7", NULL, &fi_addr, 0, NULL),
		-FI_EINVAL);
	assert_int_equal(fi_av_insertsvc(av, NULL, "4000", &fi_addr, 0, NULL),
			 -FI_EINVAL);
	/* Port 0 resolves but is no endpoint name. */
	assert_int_equal(
		fi_av_insertsvc(av, "10.9.9.7", "0", &fi_addr, 0, NULL), 0);
	assert_int_equal(fi_addr, FI_ADDR_NOTAVAIL);
	assert_int_equal(fi_close(&av->fid), 0);
}

static void test_insertsym(void **state)
{
	struct fid_av *av = open_av(state, FI_AV_UNSPEC, 0);
	fi_addr_t fi_addr[6];
	static const char *const ips[] = { "10.0.0.1", "10.0.0.2" };

	assert_int_equal(
		fi_av_insertsym(av, "10.0.0.1", 2, "5000", 3, fi_addr, 0, NULL),
		6);
	for (size_t n = 0; n < 6; n++) {
		struct sockaddr_in want =
			make_sin(ips[n / 3], (uint16_t) (5000 + n % 3));

		assert_int_equal(fi_addr[n], n);
		assert_lookup(av, n, &want);
	}
	assert_int_equal(
		fi_av_insertsym(av, "10.0.0.1", 0, "5000", 3, fi_addr, 0, NULL),
		-FI_EINVAL);
	assert_int_equal(
		fi_av_insertsym(av, "10.0.0.1", 2, "5000", 0, fi_addr, 0, NULL),
		-FI_EINVAL);
	/* Node addresses carry into the next octet. */
	assert_int_equal(fi_av_insertsym(av, "10.0.0.255", 2, "6000", 1,
					 fi_addr, 0, NULL),
			 2);
	{
		struct sockaddr_in a = make_sin("10.0.0.255", 6000);
		struct sockaddr_in b = make_sin("10.0.1.0", 6000);

		assert_lookup(av, fi_addr[0], &a);
		assert_lookup(av, fi_addr[1], &b);
	}
	/* Ports end at 65535: none wraps round to port 1. */
	assert_int_equal(fi_av_insertsym(av, "10.0.0.1", 1, "65535", 3, fi_addr,
					 0, NULL),
			 1);
	assert_int_equal(fi_addr[1], FI_ADDR_NOTAVAIL);
	assert_int_equal(fi_addr[2], FI_ADDR_NOTAVAIL);
	assert_int_equal(fi_close(&av->fid), 0);
}

/*
 * Hosts that only this test knows, for fi_av_insertsym's names: "node09"
 * is 10.0.0.9 and so on, "node11" is nowhere.  The provider's calls come
 * here, before libc's, which resolves every other name.
 */
int getaddrinfo(const char *node, const char *service,
		const struct addrinfo *hints, struct addrinfo **res)
{
	static const char *const hosts[][2] = {
		{ "node09", "10.0.0.9" },
		{ "node10", "10.0.0.10" },
		{ "node12", "10.0.0.12" },
	};
	int (*libc_getaddrinfo)(const char *, const char *,
				const struct addrinfo *, struct addrinfo **);

	*(void **) &libc_getaddrinfo = dlsym(RTLD_NEXT, "getaddrinfo");
	if (node && !strncmp(node, "node", 4)) {
		const char *ip = NULL;

		for (size_t i = 0; i < sizeof(hosts) / sizeof(hosts[0]); i++)
			if (!strcmp(node, hosts[i][0]))
				ip = hosts[i][1];
		if (!ip)
			return EAI_NONAME;
		node = ip;
	}
	return libc_getaddrinfo(node, service, hints, res);
}

/* Host names count up in their suffix, each resolved on its own. */
static void test_insertsym_names(void **state)
{
	struct fid_av *av = open_av(state, FI_AV_UNSPEC, 0);
	static const char *const ips[] = { "10.0.0.9", "10.0.0.10" };
	struct sockaddr_in one = make_sin("10.0.0.12", 7000);
	fi_addr_t fi_addr[4];

	assert_int_equal(
		fi_av_insertsym(av, "node09", 2, "5000", 2, fi_addr, 0, NULL),
		4);
	for (size_t n = 0; n < 4; n++) {
		struct sockaddr_in want =
			make_sin(ips[n / 2], (uint16_t) (5000 + n % 2));

		assert_int_equal(fi_addr[n], n);
		assert_lookup(av, n, &want);
	}
	/* More than one node needs a numeric suffix to count up in. */
	assert_int_equal(
		fi_av_insertsym(av, "nodeX", 2, "5000", 1, fi_addr, 0, NULL),
		-FI_EINVAL);
	/* One node is taken as it is. */
	assert_int_equal(
		fi_av_insertsym(av, "node12", 1, "7000", 1, fi_addr, 0, NULL),
		1);
	assert_lookup(av, fi_addr[0], &one);
	assert_int_equal(fi_close(&av->fid), 0);
}

/* node11 does not resolve: it fails alone, as fi_av(3) says. */
static void test_insertsym_unresolved(void **state)
{
	struct fid_av *av = open_av(state, FI_AV_UNSPEC, 0);
	struct sockaddr_in a = make_sin("10.0.0.10", 6000),
			   b = make_sin("10.0.0.12", 6000);
	fi_addr_t fi_addr[3];
	int errs[3] = { -1, -1, -1 };

	assert_int_equal(fi_av_insertsym(av, "node10", 3, "6000", 1, fi_addr,
					 FI_SYNC_ERR, errs),
			 2);
	assert_int_equal(errs[0], 0);
	assert_int_equal(errs[1], FI_EINVAL);
	assert_int_equal(errs[2], 0);
	assert_int_equal(fi_addr[1], FI_ADDR_NOTAVAIL);
	assert_lookup(av, fi_addr[0], &a);
	assert_lookup(av, fi_addr[2], &b);
	assert_int_equal(fi_close(&av->fid), 0);
}

static void test_open_attrs(void **state)
{
	struct fake_env *env = *state;
	struct fi_av_attr attr = { .type = FI_AV_MAP };
	struct fid_av *av = NULL;

	assert_int_equal(nrma_av_open(fake_domain(state), &attr, &av, &attr),
			 0);
	assert_int_equal(av->fid.fclass, FI_CLASS_AV);
	assert_ptr_equal(av->fid.context, &attr);
	assert_int_equal(av_of(av)->type, FI_AV_MAP);
	assert_int_equal(atomic_load(&env->domain->ref), 1);
	assert_int_equal(fi_close(&av->fid), 0);
	assert_int_equal(atomic_load(&env->domain->ref), 0);

	attr.type = FI_AV_TABLE;
	assert_int_equal(nrma_av_open(fake_domain(state), &attr, &av, NULL), 0);
	assert_int_equal(av_of(av)->type, FI_AV_TABLE);
	assert_int_equal(fi_close(&av->fid), 0);

	attr.type = FI_AV_UNSPEC;
	assert_int_equal(nrma_av_open(fake_domain(state), &attr, &av, NULL), 0);
	assert_int_equal(av_of(av)->type, FI_AV_TABLE);
	assert_int_equal(fi_close(&av->fid), 0);

	av = NULL;
	attr.name = "shared";
	assert_int_equal(nrma_av_open(fake_domain(state), &attr, &av, NULL),
			 -FI_ENOSYS);
	attr.name = NULL;
	attr.flags = 1ULL << 40;
	assert_int_equal(nrma_av_open(fake_domain(state), &attr, &av, NULL),
			 -FI_EBADFLAGS);
	attr.flags = FI_READ;
	assert_int_equal(nrma_av_open(fake_domain(state), &attr, &av, NULL),
			 -FI_EBADFLAGS);
	attr.flags = 0;
	attr.rx_ctx_bits = 17;
	assert_int_equal(nrma_av_open(fake_domain(state), &attr, &av, NULL),
			 -FI_EINVAL);
	attr.rx_ctx_bits = 0;
	attr.type = (enum fi_av_type) 42;
	assert_int_equal(nrma_av_open(fake_domain(state), &attr, &av, NULL),
			 -FI_EINVAL);
	assert_int_equal(nrma_av_open(fake_domain(state), NULL, &av, NULL),
			 -FI_EINVAL);
	assert_null(av);
	assert_int_equal(atomic_load(&env->domain->ref), 0);
}

/* fi_rx_addr: the high rx_ctx_bits name a receive context. */
static void test_rx_ctx_bits(void **state)
{
	struct fi_av_attr attr = { .type = FI_AV_TABLE, .rx_ctx_bits = 4 };
	struct sockaddr_in sin = make_sin("10.9.9.1", 7), got;
	struct nrma_av *nav;
	struct fid_av *av;
	fi_addr_t a = FI_ADDR_NOTAVAIL;

	assert_int_equal(nrma_av_open(fake_domain(state), &attr, &av, NULL), 0);
	nav = nrma_av_of(av);
	assert_int_equal(fi_av_insert(av, &sin, 1, &a, 0, NULL), 1);
	assert_int_equal(nrma_addr_base(&nav->table, fi_rx_addr(a, 9, 4)), a);
	assert_int_equal(nrma_addr_rx_ctx(&nav->table, fi_rx_addr(a, 9, 4)), 9);
	assert_int_equal(nrma_addr_rx_ctx(&nav->table, a), 0);
	assert_int_equal(
		nrma_addr_table_get(&nav->table, fi_rx_addr(a, 9, 4), &got), 0);
	assert_int_equal(got.sin_port, sin.sin_port);
	assert_int_equal(fi_close(&av->fid), 0);
}

/* A domain opened for one AV type refuses the other. */
static void test_open_domain_type(void **state)
{
	struct fake_env *env = *state;
	struct fi_av_attr attr = { .type = FI_AV_TABLE };
	struct fid_av *av = NULL;

	env->domain->info->domain_attr->av_type = FI_AV_MAP;
	assert_int_equal(nrma_av_open(fake_domain(state), &attr, &av, NULL),
			 -FI_EINVAL);
	attr.type = FI_AV_UNSPEC;
	assert_int_equal(nrma_av_open(fake_domain(state), &attr, &av, NULL), 0);
	assert_int_equal(av_of(av)->type, FI_AV_MAP);
	assert_int_equal(fi_close(&av->fid), 0);
}

static void test_close_busy(void **state)
{
	struct fid_av *av = open_av(state, FI_AV_UNSPEC, 0);
	struct nrma_av *nav = av_of(av);

	atomic_fetch_add(&nav->ref, 1);
	assert_int_equal(fi_close(&av->fid), -FI_EBUSY);
	atomic_fetch_sub(&nav->ref, 1);
	assert_int_equal(fi_close(&av->fid), 0);
}

static struct fid_eq *open_eq(void **state)
{
	struct fi_eq_attr attr = { .wait_obj = FI_WAIT_UNSPEC };
	struct fid_eq *eq = NULL;

	assert_int_equal(nrma_eq_open(fake_fabric(state), &attr, &eq, NULL), 0);
	assert_non_null(eq);
	return eq;
}

static void test_event(void **state)
{
	struct fid_av *av = open_av(state, FI_AV_UNSPEC, FI_EVENT);
	struct fid_eq *eq = open_eq(state);
	struct sockaddr_in addrs[2] = {
		make_sin("10.9.9.1", 1234),
		make_sin("10.9.9.2", 0),
	};
	fi_addr_t fi_addr[2];
	struct fi_eq_err_entry err;
	struct fi_eq_entry entry;
	uint32_t event = ~0u;
	int ctx;

	assert_int_equal(fi_av_bind(av, &eq->fid, 0), 0);
	/* One EQ per AV. */
	assert_int_equal(fi_av_bind(av, &eq->fid, 0), -FI_EINVAL);
	/* FI_SYNC_ERR is for AVs without an EQ. */
	assert_int_equal(fi_av_insert(av, addrs, 2, fi_addr, FI_SYNC_ERR, &ctx),
			 -FI_EINVAL);

	assert_int_equal(fi_av_insert(av, addrs, 2, fi_addr, 0, &ctx), 0);
	assert_int_equal(fi_addr[0], 0);
	assert_int_equal(fi_addr[1], FI_ADDR_NOTAVAIL);

	/* The error for the bad address comes first. */
	assert_int_equal(fi_eq_read(eq, &event, &entry, sizeof(entry), 0),
			 -FI_EAVAIL);
	memset(&err, 0, sizeof(err));
	assert_int_equal(fi_eq_readerr(eq, &err, 0), sizeof(err));
	assert_ptr_equal(err.fid, &av->fid);
	assert_ptr_equal(err.context, &ctx);
	assert_int_equal(err.data, 1);
	assert_true(err.err > 0);

	memset(&entry, 0, sizeof(entry));
	assert_int_equal(fi_eq_read(eq, &event, &entry, sizeof(entry), 0),
			 sizeof(entry));
	assert_int_equal(event, FI_AV_COMPLETE);
	assert_ptr_equal(entry.fid, &av->fid);
	assert_ptr_equal(entry.context, &ctx);
	assert_int_equal(entry.data, 1);
	assert_int_equal(fi_eq_read(eq, &event, &entry, sizeof(entry), 0),
			 -FI_EAGAIN);

	/* The EQ stays open while the AV uses it. */
	assert_int_equal(fi_close(&eq->fid), -FI_EBUSY);
	assert_int_equal(fi_close(&av->fid), 0);
	assert_int_equal(fi_close(&eq->fid), 0);
}

static void test_event_no_eq(void **state)
{
	struct fid_av *av = open_av(state, FI_AV_UNSPEC, FI_EVENT);
	struct sockaddr_in sin = make_sin("10.9.9.1", 1234);
	fi_addr_t fi_addr;
	size_t len = sizeof(sin);

	assert_int_equal(fi_av_insert(av, &sin, 1, &fi_addr, 0, NULL),
			 -FI_ENOEQ);
	assert_int_equal(fi_av_lookup(av, 0, &sin, &len), -FI_ENOENT);
	assert_int_equal(fi_close(&av->fid), 0);
}

/* Only an FI_EVENT AV takes an EQ. */
static void test_bind_without_event(void **state)
{
	struct fid_av *av = open_av(state, FI_AV_UNSPEC, 0);
	struct fid_eq *eq = open_eq(state);

	assert_int_equal(fi_av_bind(av, &eq->fid, 0), -FI_EINVAL);
	assert_int_equal(fi_close(&av->fid), 0);
	assert_int_equal(fi_close(&eq->fid), 0);
}

int main(void)
{
#define T(f) \
	cmocka_unit_test_setup_teardown(f, fake_env_setup, fake_env_teardown)
	const struct CMUnitTest tests[] = {
		T(test_insert_good),
		T(test_insert_many),
		T(test_insert_bad),
		T(test_sync_err),
		T(test_bad_flags),
		T(test_lookup),
		T(test_remove),
		T(test_straddr),
		T(test_insertsvc),
		T(test_insertsym),
		T(test_insertsym_names),
		T(test_insertsym_unresolved),
		T(test_open_attrs),
		T(test_open_domain_type),
		T(test_rx_ctx_bits),
		T(test_close_busy),
		T(test_event),
		T(test_event_no_eq),
		T(test_bind_without_event),
	};
#undef T

	return cmocka_run_group_tests_name("nrma_av", tests, NULL, NULL);
}
