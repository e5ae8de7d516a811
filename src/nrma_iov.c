/* SPDX-License-Identifier: BSD-2-Clause */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "nrma_iov.h"

size_t nrma_iov_len(const struct iovec *iov, size_t count)
{
	size_t len = 0;

	for (size_t i = 0; i < count; i++) {
		if (iov[i].iov_len > SIZE_MAX - len)
			return SIZE_MAX; /* no operation is that long */
		len += iov[i].iov_len;
	}
	return len;
}

size_t nrma_iov_slice(const struct iovec *iov, size_t count, size_t offset,
		      size_t len, struct iovec *out, size_t *idx, size_t max)
{
	size_t n = 0;

	for (size_t i = 0; i < count && len; i++) {
		size_t take;

		if (offset >= iov[i].iov_len) {
			offset -= iov[i].iov_len;
			continue;
		}
		if (n == max)
			return 0;
		take = iov[i].iov_len - offset;
		if (take > len)
			take = len;
		out[n].iov_base = (char *) iov[i].iov_base + offset;
		out[n].iov_len = take;
		if (idx)
			idx[n] = i;
		n++;
		len -= take;
		offset = 0;
	}
	return n;
}

/* Copies between buf and bytes [offset, offset + len) of iov. */
static size_t iov_copy(const struct iovec *iov, size_t count, size_t offset,
		       void *buf, size_t len, int to_iov)
{
	size_t done = 0;

	for (size_t i = 0; i < count && done < len; i++) {
		char *base;
		size_t take;

		if (offset >= iov[i].iov_len) {
			offset -= iov[i].iov_len;
			continue;
		}
		base = (char *) iov[i].iov_base + offset;
		take = iov[i].iov_len - offset;
		if (take > len - done)
			take = len - done;
		if (to_iov)
			memcpy(base, (char *) buf + done, take);
		else
			memcpy((char *) buf + done, base, take);
		done += take;
		offset = 0;
	}
	return done;
}

/* Most messages are one segment, copied whole: no walk. */
static bool iov_whole(const struct iovec *iov, size_t count, size_t offset,
		      size_t len)
{
	return count == 1 && !offset && len && len <= iov->iov_len;
}

size_t nrma_iov_gather(void *buf, const struct iovec *iov, size_t count,
		       size_t offset, size_t len)
{
	if (iov_whole(iov, count, offset, len)) {
		memcpy(buf, iov->iov_base, len);
		return len;
	}
	return iov_copy(iov, count, offset, buf, len, 0);
}

size_t nrma_iov_scatter(const struct iovec *iov, size_t count, size_t offset,
			const void *buf, size_t len)
{
	if (iov_whole(iov, count, offset, len)) {
		memcpy(iov->iov_base, buf, len);
		return len;
	}
	return iov_copy(iov, count, offset, (void *) buf, len, 1);
}
