/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * nrma_regcost: what notification indices cost to set up at a target, as
 * a table.  For each count of indices, in one process:
 *
 *   standard  per index: fi_cntr_open, fi_mr_regattr of the window with
 *             FI_RMA_EVENT, fi_mr_bind for remote events, fi_mr_enable
 *             (what MPI-5.1 over plain libfabric does)
 *   set       one notification set of that many counters (fi_ext_nrma.h)
 *
 * and prints the time and the memory pinned (VmPin) per index, and the
 * keys that peers must be sent.  Compare within one run.
 * Usage: nrma_regcost [-w window_bytes] [count...]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_ext_nrma.h>

#include "nrma_try.h"

static size_t opt_window = 1 << 20;

/* Memory this process has pinned, in KiB (0 if the kernel does not say). */
static long pinned_kib(void)
{
	char line[256];
	long kib = 0;
	FILE *f = fopen("/proc/self/status", "r");

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "VmPin: %ld kB", &kib) == 1)
			break;
	if (f)
		fclose(f);
	return kib;
}

/* Registers the window count times, each with its own counter. */
static void standard(struct fid_domain *domain, void *window, size_t count,
		     double *us, long *kib)
{
	struct fi_cntr_attr cattr = { .events = FI_CNTR_EVENTS_COMP };
	struct iovec iov = { .iov_base = window, .iov_len = opt_window };
	struct fi_mr_attr mattr = { .mr_iov = &iov,
				    .iov_count = 1,
				    .access = FI_REMOTE_WRITE |
					      FI_REMOTE_READ };
	struct fid_cntr **cntr = calloc(count, sizeof(*cntr));
	struct fid_mr **mr = calloc(count, sizeof(*mr));
	long pin0 = pinned_kib();
	double t0 = try_now();

	if (!cntr || !mr)
		exit(1);
	for (size_t i = 0; i < count; i++) {
		TRY(fi_cntr_open(domain, &cattr, &cntr[i], NULL));
		TRY(fi_mr_regattr(domain, &mattr, FI_RMA_EVENT, &mr[i]));
		TRY(fi_mr_bind(mr[i], &cntr[i]->fid,
			       FI_REMOTE_WRITE | FI_REMOTE_READ));
		TRY(fi_mr_enable(mr[i]));
	}
	*us = (try_now() - t0) * 1e6;
	*kib = pinned_kib() - pin0;
	for (size_t i = 0; i < count; i++) {
		TRY(fi_close(&mr[i]->fid));
		TRY(fi_close(&cntr[i]->fid));
	}
	free(cntr);
	free(mr);
}

/* One registration of the window and one set of count counters. */
static void set(struct fid_domain *domain, void *window, size_t count,
		double *us, long *kib)
{
	struct fi_nrma_nset_attr attr = { .count = count };
	struct fi_nrma_ops_domain *ops;
	struct fid_nrma_nset *nset;
	struct fid_mr *mr;
	long pin0 = pinned_kib();
	double t0 = try_now();

	TRY(fi_nrma_domain_ops(domain, &ops));
	TRY(fi_mr_reg(domain, window, opt_window,
		      FI_REMOTE_WRITE | FI_REMOTE_READ, 0, 0, 0, &mr, NULL));
	TRY(fi_nrma_nset_open(ops, domain, &attr, &nset, NULL));
	*us = (try_now() - t0) * 1e6;
	*kib = pinned_kib() - pin0;
	TRY(fi_close(&nset->fid));
	TRY(fi_close(&mr->fid));
}

int main(int argc, char **argv)
{
	static const size_t defaults[] = { 16, 256, 2048 };
	struct try_node n = { 0 };
	void *window;
	int first = 1;

	if (argc > 2 && !strcmp(argv[1], "-w")) {
		opt_window = strtoul(argv[2], NULL, 0);
		first = 3;
	}
	try_domain_open(&n, FI_RMA | FI_RMA_EVENT);
	window = aligned_alloc(4096, (opt_window + 4095) / 4096 * 4096);
	if (!window)
		return 1;
	memset(window, 0, opt_window);
	printf("window of %zu bytes\n%-9s %9s %14s %16s %6s\n", opt_window,
	       "path", "indices", "setup us/idx", "pinned KiB/idx", "keys");
	for (int i = 0; i < (argc > first ? argc - first : 3); i++) {
		size_t count = argc > first ?
				       strtoul(argv[first + i], NULL, 0) :
				       defaults[i];
		double us;
		long kib;

		standard(n.domain, window, count, &us, &kib);
		printf("%-9s %9zu %14.2f %16.3f %6zu\n", "standard", count,
		       us / count, (double) kib / count, count);
		set(n.domain, window, count, &us, &kib);
		printf("%-9s %9zu %14.2f %16.3f %6d\n", "set", count,
		       us / count, (double) kib / count, 2);
	}
	try_domain_close(&n);
	free(window);
	return 0;
}
