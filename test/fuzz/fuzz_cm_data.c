/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * libFuzzer target: the private data of an rdmacm connect, accept or
 * reject, as nrma_proto_cm_data_parse (RDM) and nrma_proto_msg_data_parse
 * (FI_EP_MSG) see it before anything else does.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "nrma_proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *buf = malloc(size ? size : 1);
	const struct nrma_cm_data *cm;
	const struct nrma_cm_msg_data *msg;

	if (!buf)
		return 0;
	memcpy(buf, data, size);
	cm = nrma_proto_cm_data_parse(size ? buf : NULL, size);
	if (cm) {
		/* Accepted data is whole and its fields may be read. */
		if (size < sizeof(*cm) || (const uint8_t *) cm != buf)
			abort();
		(void) nrma_proto_cm_data_version(cm);
		(void) nrma_proto_cm_data_reason(cm);
		(void) cm->name.sin_port;
		(void) cm->grant.notify_rkey;
	}
	msg = nrma_proto_msg_data_parse(size ? buf : NULL, size);
	/* Its application bytes lie within what arrived. */
	if (msg && sizeof(*msg) + msg->app_len > size)
		abort();
	if (msg && msg->app_len)
		(void) msg->app[msg->app_len - 1];
	free(buf);
	return 0;
}
