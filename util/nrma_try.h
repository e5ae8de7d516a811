/* SPDX-License-Identifier: BSD-2-Clause */
/* What the tools in util/ share: a libfabric call that must succeed. */
#ifndef NRMA_TRY_H
#define NRMA_TRY_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <rdma/fabric.h>
#include <rdma/fi_errno.h>

/* Exits, naming the call and its error, unless call returns 0. */
#define TRY(call)                                                              \
	do {                                                                   \
		int rc_ = (int) (call);                                        \
		if (rc_) {                                                     \
			fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, \
				#call, fi_strerror(-rc_));                     \
			exit(1);                                               \
		}                                                              \
	} while (0)

/*
 * The remote address of the first byte of a registration at buf: buf
 * under FI_MR_VIRT_ADDR, else offset 0 (fi_mr(3)).
 */
static inline uint64_t try_mr_base(const struct fi_info *info, const void *buf)
{
	return info->domain_attr->mr_mode & FI_MR_VIRT_ADDR ? (uintptr_t) buf :
							      0;
}

#endif /* NRMA_TRY_H */
