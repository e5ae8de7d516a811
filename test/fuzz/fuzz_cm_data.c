/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * libFuzzer target: the private data of an rdmacm connect, accept or
 * reject, as nrma_cm_data_parse sees it before anything else does.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "nrma_proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *buf = malloc(size ? size : 1);
	const struct nrma_cm_data *cm;

	if (!buf)
		return 0;
	memcpy(buf, data, size);
	cm = nrma_cm_data_parse(size ? buf : NULL, size);
	if (cm) {
		/* Accepted data is whole and its fields may be read. */
		if (size < sizeof(*cm) || (const uint8_t *) cm != buf)
			abort();
		(void) nrma_cm_data_version(cm);
		(void) nrma_cm_data_reason(cm);
		(void) cm->name.sin_port;
		(void) cm->notify_rkey;
	}
	free(buf);
	return 0;
}
