/* SPDX-License-Identifier: BSD-2-Clause */
/* Byte-range arithmetic over struct iovec arrays. */
#ifndef NRMA_IOV_H
#define NRMA_IOV_H

#include <stddef.h>
#include <sys/uio.h>

/* The total length; SIZE_MAX when it would not fit in a size_t. */
size_t nrma_iov_len(const struct iovec *iov, size_t count);
/* Copies up to len bytes from iov (starting at offset) into buf. */
size_t nrma_iov_gather(void *buf, const struct iovec *iov, size_t count,
		       size_t offset, size_t len);
/* Copies up to len bytes from buf into iov (starting at offset). */
size_t nrma_iov_scatter(const struct iovec *iov, size_t count, size_t offset,
			const void *buf, size_t len);
/*
 * Describes bytes [offset, offset + len) of iov as at most max pieces in
 * out[], each with the index of the iov it came from in idx[].  Returns the
 * number of pieces, or 0 if the range does not fit in max pieces.
 */
size_t nrma_iov_slice(const struct iovec *iov, size_t count, size_t offset,
		      size_t len, struct iovec *out, size_t *idx, size_t max);

#endif /* NRMA_IOV_H */
