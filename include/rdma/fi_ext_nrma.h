/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Extensions of the nrma libfabric provider (see fi_nrma(7)).
 *
 * nrma brings notified RMA to ibverbs hardware: remote counters that the
 * initiator bumps with a verbs atomic after its data has landed.  This
 * header grows with the provider; today it only names it.
 */
#ifndef FI_EXT_NRMA_H
#define FI_EXT_NRMA_H

#include <rdma/fabric.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The name to pass in FI_PROVIDER or hints->fabric_attr->prov_name. */
#define FI_NRMA_PROV_NAME "nrma"

/* Provider version, as fi_info reports it in fabric_attr->prov_version. */
#define FI_NRMA_VERSION FI_VERSION(0, 1)

#ifdef __cplusplus
}
#endif

#endif /* FI_EXT_NRMA_H */
