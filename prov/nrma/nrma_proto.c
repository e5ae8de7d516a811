/* SPDX-License-Identifier: BSD-2-Clause */
/* Encoding and checking of the wire format (nrma_proto.h). */
#include <arpa/inet.h>

#include "nrma_proto.h"

void nrma_cm_data_init(struct nrma_cm_data *data,
		       const struct sockaddr_in *name, uint32_t notify_rkey,
		       enum nrma_reject_reason reason)
{
	*data = (struct nrma_cm_data){
		.magic = htonl(NRMA_CM_MAGIC),
		.version = htons(NRMA_PROTOCOL_VERSION),
		.reject_reason = htons(reason),
		.name = *name,
		.notify_rkey = notify_rkey,
	};
}

const struct nrma_cm_data *nrma_cm_data_parse(const void *buf, size_t len)
{
	const struct nrma_cm_data *data = buf;

	if (!data || len < sizeof(*data) || ntohl(data->magic) != NRMA_CM_MAGIC)
		return NULL;
	return data;
}

uint16_t nrma_cm_data_version(const struct nrma_cm_data *data)
{
	return ntohs(data->version);
}

enum nrma_reject_reason nrma_cm_data_reason(const struct nrma_cm_data *data)
{
	return ntohs(data->reject_reason);
}
