/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Memory registration: access modes, sizes, keys and argument checks, and
 * the rules of fi_mr_bind for remote-event counters, with and without
 * FI_MR_RMA_EVENT, including the domain's limits of notification cells
 * and of registrations (FI_NRMA_NOTIFY_CELLS, FI_NRMA_MR_MAX, set small
 * here); fields an older API's struct has not, not read.
 */
#include <sys/uio.h>

#include "itest.h"

#define ACCESS_BITS 6 /* FI_SEND ... FI_REMOTE_WRITE below */
#define NSIZES	    3
#define NCELLS	    6	/* FI_NRMA_NOTIFY_CELLS for this program */
#define NMRS	    200 /* FI_NRMA_MR_MAX: above NSIZES * NCOMBOS */
#define NCOMBOS	    ((1u << ACCESS_BITS) - 1) /* non-empty ones */

static const uint64_t access_bit[ACCESS_BITS] = {
	FI_SEND, FI_RECV, FI_READ, FI_WRITE, FI_REMOTE_READ, FI_REMOTE_WRITE,
};
static const size_t sizes[NSIZES] = { 1, 4096, 1 << 20 };

static struct fid_domain *domain;

static uint64_t combo_access(unsigned combo)
{
	uint64_t access = 0;

	for (unsigned b = 0; b < ACCESS_BITS; b++)
		if (combo & (1u << b))
			access |= access_bit[b];
	return access;
}

struct reg {
	struct fid_mr *mr;
	uint64_t key;
	uint64_t access;
	size_t size;
};

static int cmp_key(const void *a, const void *b)
{
	uint64_t x = ((const struct reg *) a)->key;
	uint64_t y = ((const struct reg *) b)->key;

	return (x > y) - (x < y);
}

static void check_distinct(struct reg *regs, size_t n)
{
	qsort(regs, n, sizeof(regs[0]), cmp_key);
	for (size_t i = 1; i < n; i++) {
		const struct reg *a = &regs[i - 1], *b = &regs[i];

		if (a->key != b->key)
			continue;
		/* fi_tostr reuses one buffer: one call per statement. */
		fprintf(stderr, "%s:%d: two live MRs share key %#llx:\n",
			__FILE__, __LINE__, (unsigned long long) a->key);
		fprintf(stderr, "  size %zu access %s\n", a->size,
			fi_tostr(&a->access, FI_TYPE_CAPS));
		fprintf(stderr, "  size %zu access %s\n", b->size,
			fi_tostr(&b->access, FI_TYPE_CAPS));
		exit(1);
	}
}

/*
 * Registers every buffer with every access combination, all at once, so
 * each buffer is registered many times over, and checks that the keys of
 * all those live registrations differ.
 */
static void check_access_sizes(void)
{
	static struct reg regs[NSIZES * NCOMBOS];
	char *bufs[NSIZES];
	size_t n = 0;

	for (size_t s = 0; s < NSIZES; s++) {
		bufs[s] = calloc(1, sizes[s]);
		CHECK(bufs[s] != NULL);
		for (unsigned c = 1; c <= NCOMBOS; c++, n++) {
			struct reg *r = &regs[n];

			r->access = combo_access(c);
			r->size = sizes[s];
			CHECK_OK(fi_mr_reg(domain, bufs[s], sizes[s], r->access,
					   0, 0, 0, &r->mr, NULL));
			r->key = fi_mr_key(r->mr);
			CHECK(r->key != FI_KEY_NOTAVAIL);
			CHECK(fi_mr_desc(r->mr) != NULL);
			CHECK_OK(fi_mr_enable(r->mr));
		}
	}
	check_distinct(regs, n);
	for (size_t i = 0; i < n; i++)
		CHECK_OK(fi_close(&regs[i].mr->fid));
	for (size_t s = 0; s < NSIZES; s++)
		free(bufs[s]);
}

static void check_twice(void)
{
	static char buf[4096];
	struct fid_mr *a, *b;

	CHECK_OK(fi_mr_reg(domain, buf, sizeof(buf), FI_SEND | FI_RECV, 0, 0, 0,
			   &a, NULL));
	CHECK_OK(fi_mr_reg(domain, buf, sizeof(buf), FI_SEND | FI_RECV, 0, 0, 0,
			   &b, NULL));
	CHECK(fi_mr_key(a) != FI_KEY_NOTAVAIL);
	CHECK(fi_mr_key(b) != FI_KEY_NOTAVAIL);
	CHECK(fi_mr_key(a) != fi_mr_key(b));
	CHECK_OK(fi_close(&a->fid));
	CHECK_OK(fi_close(&b->fid));
}

static void check_regv_regattr(void)
{
	static char buf[2][4096];
	struct iovec iov[2] = {
		{ .iov_base = buf[0], .iov_len = sizeof(buf[0]) },
		{ .iov_base = buf[1], .iov_len = sizeof(buf[1]) },
	};
	struct fi_mr_attr attr = {
		.mr_iov = iov,
		.iov_count = 1,
		.access = FI_REMOTE_WRITE,
		.iface = FI_HMEM_SYSTEM,
	};
	struct fid_mr *mr;

	CHECK_OK(fi_mr_regv(domain, iov, 1, FI_SEND, 0, 0, 0, &mr, NULL));
	CHECK(fi_mr_key(mr) != FI_KEY_NOTAVAIL);
	CHECK(fi_mr_desc(mr) != NULL);
	CHECK_OK(fi_close(&mr->fid));
	CHECK_RET(fi_mr_regv(domain, iov, 2, FI_SEND, 0, 0, 0, &mr, NULL),
		  -FI_EINVAL);

	CHECK_OK(fi_mr_regattr(domain, &attr, 0, &mr));
	CHECK(fi_mr_key(mr) != FI_KEY_NOTAVAIL);
	CHECK_OK(fi_mr_enable(mr));
	CHECK_OK(fi_close(&mr->fid));

	attr.iface = FI_HMEM_CUDA;
	CHECK_RET(fi_mr_regattr(domain, &attr, 0, &mr), -FI_ENOSYS);
}

static void check_bad_args(void)
{
	static char buf[64];
	struct fid_mr *mr;

	CHECK_RET(fi_mr_reg(domain, buf, sizeof(buf), FI_SEND, 0, 0, 1ULL << 60,
			    &mr, NULL),
		  -FI_EBADFLAGS);
	CHECK_RET(fi_mr_reg(domain, NULL, 4096, FI_SEND, 0, 0, 0, &mr, NULL),
		  -FI_EINVAL);
}

static struct fid_cntr *cntr_open(struct fid_domain *dom)
{
	struct fid_cntr *cntr;

	CHECK_OK(fi_cntr_open(dom, NULL, &cntr, NULL));
	return cntr;
}

/*
 * Without FI_MR_RMA_EVENT any registration takes counters at any time;
 * each direction takes one, and a bound counter stays open (-FI_EBUSY)
 * until its registration closes.
 */
static void check_bind(void)
{
	static char buf[4096];
	struct fid_cntr *wc = cntr_open(domain), *rc = cntr_open(domain);
	struct fid_cq *cq;
	struct fid_mr *mr;
	uint64_t plain_key;

	CHECK_OK(fi_mr_reg(domain, buf, sizeof(buf), FI_REMOTE_WRITE, 0, 0, 0,
			   &mr, NULL));
	plain_key = fi_mr_key(mr);
	CHECK_OK(fi_mr_bind(mr, &wc->fid, FI_REMOTE_WRITE));
	/* The key stays: its slot in the key table names the cell. */
	CHECK(fi_mr_key(mr) == plain_key);
	CHECK_RET(fi_mr_bind(mr, &rc->fid, FI_REMOTE_WRITE), -FI_EINVAL);
	CHECK_RET(fi_mr_bind(mr, &rc->fid, FI_SEND), -FI_EBADFLAGS);
	CHECK_RET(fi_mr_bind(mr, &rc->fid, 0), -FI_EINVAL);
	CHECK_OK(fi_cq_open(domain, &(struct fi_cq_attr){ 0 }, &cq, NULL));
	CHECK_RET(fi_mr_bind(mr, &cq->fid, FI_REMOTE_READ), -FI_EINVAL);
	CHECK_OK(fi_close(&cq->fid));
	CHECK_OK(fi_mr_bind(mr, &rc->fid, FI_REMOTE_READ));
	CHECK_OK(fi_mr_enable(mr));
	CHECK_RET(fi_mr_bind(mr, &wc->fid, FI_REMOTE_READ), -FI_EINVAL);
	CHECK_RET(fi_close(&wc->fid), -FI_EBUSY);
	CHECK_RET(fi_close(&rc->fid), -FI_EBUSY);
	CHECK_OK(fi_close(&mr->fid));
	CHECK_OK(fi_close(&wc->fid));
	CHECK_OK(fi_close(&rc->fid));
}

/* Every registration with counters holds a cell until it closes. */
static void check_cell_limit(void)
{
	static char buf[4096];
	struct fid_cntr *cntr = cntr_open(domain);
	struct fid_mr *mr[NCELLS + 1];

	for (int i = 0; i <= NCELLS; i++)
		CHECK_OK(fi_mr_reg(domain, buf, sizeof(buf), FI_REMOTE_WRITE, 0,
				   0, FI_RMA_EVENT, &mr[i], NULL));
	for (int i = 0; i < NCELLS; i++)
		CHECK_OK(fi_mr_bind(mr[i], &cntr->fid, FI_REMOTE_WRITE));
	CHECK_RET(fi_mr_bind(mr[NCELLS], &cntr->fid, FI_REMOTE_WRITE),
		  -FI_ENOSPC);
	CHECK_OK(fi_close(&mr[0]->fid));
	CHECK_OK(fi_mr_bind(mr[NCELLS], &cntr->fid, FI_REMOTE_WRITE));
	for (int i = 1; i <= NCELLS; i++)
		CHECK_OK(fi_close(&mr[i]->fid));
	CHECK_OK(fi_close(&cntr->fid));
}

/*
 * mr_cnt registrations at once, not one more (-FI_ENOSPC); one closed
 * makes room, and a key is never handed out twice.
 */
static void check_mr_limit(const struct fi_info *info)
{
	static char buf[64];
	struct fid_mr *mr[NMRS + 1];
	uint64_t key[NMRS + 2];

	CHECK(info->domain_attr->mr_cnt == NMRS);
	for (int i = 0; i < NMRS; i++) {
		CHECK_OK(fi_mr_reg(domain, buf, sizeof(buf), FI_REMOTE_WRITE, 0,
				   0, 0, &mr[i], NULL));
		key[i] = fi_mr_key(mr[i]);
	}
	CHECK_RET(fi_mr_reg(domain, buf, sizeof(buf), FI_REMOTE_WRITE, 0, 0, 0,
			    &mr[NMRS], NULL),
		  -FI_ENOSPC);
	for (int round = 0; round < 2; round++) {
		CHECK_OK(fi_close(&mr[0]->fid));
		CHECK_OK(fi_mr_reg(domain, buf, sizeof(buf), FI_REMOTE_WRITE, 0,
				   0, 0, &mr[0], NULL));
		key[NMRS + round] = fi_mr_key(mr[0]);
	}
	for (int i = 0; i < NMRS + 2; i++)
		for (int j = 0; j < i; j++)
			CHECK(key[i] != key[j]);
	for (int i = 0; i < NMRS; i++)
		CHECK_OK(fi_close(&mr[i]->fid));
}

/* With FI_MR_RMA_EVENT only FI_RMA_EVENT registrations take counters. */
static void check_bind_rma_event_mode(struct fid_fabric *fabric)
{
	static char buf[4096];
	struct fi_info *hints = itest_hints(), *info;
	struct fid_domain *dom;
	struct fid_cntr *cntr;
	struct fid_mr *plain, *evented;

	hints->domain_attr->mr_mode |= FI_MR_RMA_EVENT;
	hints->domain_attr->name = strdup(itest_device());
	hints->caps = FI_RMA | FI_RMA_EVENT;
	CHECK_OK(fi_getinfo(ITEST_VERSION, NULL, NULL, 0, hints, &info));
	CHECK(info->domain_attr->mr_mode & FI_MR_RMA_EVENT);
	CHECK_OK(fi_domain(fabric, info, &dom, NULL));
	cntr = cntr_open(dom);
	CHECK_OK(fi_mr_reg(dom, buf, sizeof(buf), FI_REMOTE_WRITE, 0, 0, 0,
			   &plain, NULL));
	CHECK_OK(fi_mr_reg(dom, buf, sizeof(buf), FI_REMOTE_WRITE, 0, 0,
			   FI_RMA_EVENT, &evented, NULL));
	CHECK_RET(fi_mr_bind(plain, &cntr->fid, FI_REMOTE_WRITE), -FI_EINVAL);
	CHECK_OK(fi_mr_bind(evented, &cntr->fid,
			    FI_REMOTE_WRITE | FI_REMOTE_READ));
	CHECK_OK(fi_mr_enable(evented));
	CHECK_RET(fi_mr_bind(evented, &cntr->fid, FI_REMOTE_READ), -FI_EINVAL);
	CHECK_RET(fi_mr_bind(evented, &cntr->fid, FI_REMOTE_WRITE), -FI_EINVAL);
	CHECK_OK(fi_close(&plain->fid));
	CHECK_OK(fi_close(&evented->fid));
	CHECK_OK(fi_close(&cntr->fid));
	CHECK_OK(fi_close(&dom->fid));
	fi_freeinfo(info);
	fi_freeinfo(hints);
}

/*
 * fi_mr(3): auth_key_size counts from API 1.5 on, iface from 1.9 on; an
 * application of API 1.4 may have anything past its shorter struct.
 */
static void check_old_api_attr(void)
{
	static char buf[4096];
	struct iovec iov = { .iov_base = buf, .iov_len = sizeof(buf) };
	struct fi_mr_attr attr = { .mr_iov = &iov,
				   .iov_count = 1,
				   .access = FI_REMOTE_WRITE,
				   .auth_key_size = 8,
				   .iface = FI_HMEM_CUDA };
	struct fi_info *hints = itest_hints(), *info;
	struct fid_fabric *fabric;
	struct fid_domain *dom;
	struct fid_mr *mr;

	hints->domain_attr->mr_mode = 0; /* FI_MR_UNSPEC, gone from 2.x */
	hints->domain_attr->name = strdup(itest_device());
	CHECK_OK(fi_getinfo(FI_VERSION(1, 4), NULL, NULL, 0, hints, &info));
	CHECK_OK(fi_fabric(info->fabric_attr, &fabric, NULL));
	CHECK_OK(fi_domain(fabric, info, &dom, NULL));
	CHECK_OK(fi_mr_regattr(dom, &attr, 0, &mr));
	CHECK_OK(fi_close(&mr->fid));
	CHECK_OK(fi_close(&dom->fid));
	CHECK_OK(fi_close(&fabric->fid));
	fi_freeinfo(info);
	fi_freeinfo(hints);
}

int main(void)
{
	struct fi_info *info;
	struct fid_fabric *fabric;
	char cells[16], mrs[16];

	snprintf(cells, sizeof(cells), "%d", NCELLS);
	snprintf(mrs, sizeof(mrs), "%d", NMRS);
	CHECK(setenv("FI_NRMA_NOTIFY_CELLS", cells, 1) == 0);
	CHECK(setenv("FI_NRMA_MR_MAX", mrs, 1) == 0);
	info = itest_getinfo();
	CHECK_OK(fi_fabric(info->fabric_attr, &fabric, NULL));
	CHECK_OK(fi_domain(fabric, info, &domain, NULL));
	check_access_sizes();
	check_twice();
	check_regv_regattr();
	check_bad_args();
	check_bind();
	check_cell_limit();
	check_mr_limit(info);
	CHECK_OK(fi_close(&domain->fid));
	check_bind_rma_event_mode(fabric);
	CHECK_OK(fi_close(&fabric->fid));
	check_old_api_attr();
	fi_freeinfo(info);
	itest_pass("nrma_mr");
	return 0;
}
