/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The one place that speaks ibverbs and rdmacm.  The libfabric objects call
 * these and never see a verbs structure.
 */
#ifndef NRMA_VERBS_H
#define NRMA_VERBS_H

#include <stddef.h>
#include <stdint.h>
#include <netinet/in.h>

struct nrma_device;
struct nrma_verbs_domain;
struct nrma_verbs_mr;
struct nrma_listener;

/* Devices with an active port, RC, 64-bit atomics and an rdmacm address. */
int nrma_verbs_discover(struct nrma_device **devs, size_t *count);

int nrma_verbs_domain_open(const struct nrma_device *dev,
			   struct nrma_verbs_domain **vdom);
void nrma_verbs_domain_close(struct nrma_verbs_domain *vdom);

/* Registers [buf, buf + len) for fi_mr access flags; *key is the rkey. */
int nrma_verbs_mr_reg(struct nrma_verbs_domain *vdom, const void *buf,
		      size_t len, uint64_t access, struct nrma_verbs_mr **vmr,
		      uint64_t *key);
int nrma_verbs_mr_dereg(struct nrma_verbs_mr *vmr);

/* prov_errno in our error completions is an ibv_wc_status. */
const char *nrma_verbs_status_str(int prov_errno);

/* rdmacm listener on an endpoint's own address (nrma_cm.c). */
int nrma_listener_open(const struct sockaddr_in *addr,
		       struct nrma_listener **listener);
int nrma_listener_name(struct nrma_listener *listener,
		       struct sockaddr_in *name);
int nrma_listener_listen(struct nrma_listener *listener);
void nrma_listener_close(struct nrma_listener *listener);

#endif /* NRMA_VERBS_H */
