/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Memory regions are verbs MRs, and the descriptor is the nrma_mr.  The
 * provider key handed to peers names a slot of the domain's key table
 * (nrma_keytab.h) that holds the rkey, the region, and the rkey of the
 * registration's notification cell once a counter is bound.  Where the
 * application picks the keys (FI_MR_PROV_KEY off), its requested_key
 * names the slot (nrma_key_wire).
 */
#include <inttypes.h>
#include <stdlib.h>

#include "nrma.h"
#include "nrma_enosys.h"
#include "nrma_keytab.h"
#include "nrma_mr_span.h"
#include "nrma_notify.h"
#include "nrma_proto.h"
#include "nrma_verbs.h"

#define NRMA_MR_ACCESS                                             \
	(FI_SEND | FI_RECV | FI_READ | FI_WRITE | FI_REMOTE_READ | \
	 FI_REMOTE_WRITE)

static int nrma_mr_close(struct fid *fid)
{
	struct nrma_mr *mr = nrma_mr_of_fid(fid);
	int ret;

	/*
	 * Peers find nothing under the key now, and forget what they found
	 * of a slot that gave them rights (what a local one told them ends
	 * in -FI_EACCES anyway, and a slot used again has a new key).
	 */
	if (nrma_keytab_remove(mr->domain->keytab,
			       nrma_key_wire(mr->mr_fid.key)) &&
	    (mr->access & (FI_REMOTE_READ | FI_REMOTE_WRITE)))
		nrma_domain_keys_changed(mr->domain);
	/* Operations that borrowed the registration (nrma_mr_span.c) keep
	 * it until they end. */
	nrma_mr_span_index_remove(mr->domain->mr_index, mr->span);
	ret = nrma_mr_span_put(mr->span);
	if (mr->remote.cell)
		NRMA_DBG(FI_LOG_MR,
			 "key 0x%" PRIx64 " closes: %" PRIu64
			 " remote writes, %" PRIu64 " reads and %" PRIu64
			 " updates counted\n",
			 mr->mr_fid.key,
			 *nrma_notify_cell_word(mr->remote.cell,
						NRMA_NOTIFY_WRITES),
			 *nrma_notify_cell_word(mr->remote.cell,
						NRMA_NOTIFY_READS),
			 *nrma_notify_cell_word(mr->remote.cell,
						NRMA_NOTIFY_UPDATES));
	nrma_cntr_remote_close(&mr->remote);
	atomic_fetch_sub(&mr->domain->ref, 1);
	free(mr);
	return ret;
}

/*
 * A registration is live from the start and fi_mr_bind updates its key at
 * once; enabling it (FI_MR_RMA_EVENT) only closes it to further bindings.
 */
static int nrma_mr_control(struct fid *fid, int command, void *arg)
{
	struct nrma_mr *mr = nrma_mr_of_fid(fid);

	(void) arg;
	if (command != FI_ENABLE)
		return -FI_ENOSYS;
	mr->enabled = true;
	return 0;
}

/*
 * Under FI_MR_RMA_EVENT only registrations made with FI_RMA_EVENT take
 * counters, and only until they are enabled.
 */
static int mr_bind_check(const struct nrma_mr *mr, struct fid *bfid,
			 uint64_t flags)
{
	const struct fi_info *info = mr->domain->info;
	const struct nrma_cntr *cntr;

	if (bfid->fclass != FI_CLASS_CNTR || !(info->caps & FI_RMA_EVENT))
		return -FI_EINVAL;
	if (flags & ~(FI_REMOTE_WRITE | FI_REMOTE_READ))
		return -FI_EBADFLAGS;
	if (!flags || mr->enabled)
		return -FI_EINVAL;
	if ((info->domain_attr->mr_mode & FI_MR_RMA_EVENT) &&
	    !(mr->flags & FI_RMA_EVENT))
		return -FI_EINVAL;
	cntr = nrma_cntr_of_fid(bfid);
	return cntr->domain == mr->domain ? 0 : -FI_EINVAL;
}

/*
 * A counter bound to a registration counts the RMA operations that
 * target it: the rkey of the registration's notification cell goes into
 * its key's slot.  Peers that looked the key up before do not see it.
 */
static int nrma_mr_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	struct nrma_mr *mr = nrma_mr_of_fid(fid);
	int ret;

	ret = mr_bind_check(mr, bfid, flags);
	if (!ret)
		ret = nrma_cntr_remote_bind(&mr->remote, mr->domain,
					    nrma_cntr_of_fid(bfid), flags);
	if (ret)
		return ret;
	if (nrma_keytab_set_cell(mr->domain->keytab,
				 nrma_key_wire(mr->mr_fid.key),
				 nrma_cntr_remote_rkey(&mr->remote)))
		nrma_domain_keys_changed(mr->domain);
	NRMA_DBG(FI_LOG_MR, "key 0x%" PRIx64 " counts remote %s%s%s\n",
		 mr->mr_fid.key, flags & FI_REMOTE_WRITE ? "writes" : "",
		 flags == (FI_REMOTE_WRITE | FI_REMOTE_READ) ? " and " : "",
		 flags & FI_REMOTE_READ ? "reads" : "");
	return 0;
}

static struct fi_ops nrma_mr_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = nrma_mr_close,
	.bind = nrma_mr_bind,
	.control = nrma_mr_control,
	.ops_open = nrma_no_ops_open,
};

static int mr_check(const struct nrma_domain *domain,
		    const struct fi_mr_attr *attr, uint64_t flags)
{
	uint32_t version = domain->fabric->api_version;

	if (flags & ~FI_RMA_EVENT)
		return -FI_EBADFLAGS;
	if ((flags & FI_RMA_EVENT) && !(domain->info->caps & FI_RMA_EVENT))
		return -FI_EINVAL;
	if (attr->iov_count != 1 || !attr->mr_iov ||
	    (!attr->mr_iov[0].iov_base && attr->mr_iov[0].iov_len))
		return -FI_EINVAL;
	if (attr->access & ~NRMA_MR_ACCESS)
		return -FI_EINVAL;
	/*
	 * auth_key_size counts from API 1.5 on and iface from 1.9 on (device
	 * memory nrma does not register); older callers' struct ends before
	 * them (fi_mr(3)).
	 */
	if (FI_VERSION_GE(version, FI_VERSION(1, 9)) &&
	    attr->iface != FI_HMEM_SYSTEM)
		return -FI_ENOSYS;
	if (FI_VERSION_GE(version, FI_VERSION(1, 5)) && attr->auth_key_size)
		return -FI_EINVAL;
	return 0;
}

/* What peers that look the registration's key up learn. */
static struct nrma_key_slot mr_key_slot(const struct nrma_mr *mr,
					const struct iovec *iov)
{
	return (struct nrma_key_slot){
		.addr = (uintptr_t) iov->iov_base,
		.len = iov->iov_len,
		.rkey = (uint32_t) mr->verbs_key,
		.access = (mr->access & FI_REMOTE_READ ? NRMA_KEY_REMOTE_READ :
							 0) |
			  (mr->access & FI_REMOTE_WRITE ?
				   NRMA_KEY_REMOTE_WRITE :
				   0),
	};
}

/* The registration's key: the provider's, or the one the application
 * asked for (fi_mr(3)). */
static int mr_key_add(struct nrma_domain *domain,
		      const struct nrma_key_slot *slot, uint64_t requested_key,
		      uint64_t *key)
{
	int ret;

	if (!domain->app_keys)
		return nrma_keytab_add(domain->keytab, slot, key);
	ret = nrma_keytab_add_app(domain->keytab, slot, requested_key);
	if (!ret)
		*key = requested_key;
	return ret;
}

static int nrma_mr_regattr(struct fid *fid, const struct fi_mr_attr *attr,
			   uint64_t flags, struct fid_mr **mr_fid)
{
	struct nrma_domain *domain = nrma_domain_of_fid(fid);
	struct nrma_key_slot slot;
	struct nrma_mr *mr;
	int ret;

	if (!attr || !mr_fid)
		return -FI_EINVAL;
	ret = mr_check(domain, attr, flags);
	if (ret)
		return ret;
	mr = calloc(1, sizeof(*mr));
	if (!mr)
		return -FI_ENOMEM;
	mr->access = attr->access;
	ret = nrma_mr_span_reg(domain->verbs, attr->mr_iov[0].iov_base,
			       attr->mr_iov[0].iov_len, attr->access,
			       &mr->span);
	if (ret) {
		free(mr);
		return ret;
	}
	mr->verbs = mr->span->verbs;
	mr->verbs_key = mr->span->key;
	slot = mr_key_slot(mr, &attr->mr_iov[0]);
	ret = mr_key_add(domain, &slot, attr->requested_key, &mr->mr_fid.key);
	if (ret) {
		nrma_mr_span_put(mr->span);
		free(mr);
		return ret;
	}
	nrma_mr_span_index_add(domain->mr_index, mr->span);
	mr->domain = domain;
	mr->flags = flags;
	mr->mr_fid.fid.fclass = FI_CLASS_MR;
	mr->mr_fid.fid.context = attr->context;
	mr->mr_fid.fid.ops = &nrma_mr_fi_ops;
	mr->mr_fid.mem_desc = mr;
	atomic_fetch_add(&domain->ref, 1);
	*mr_fid = &mr->mr_fid;
	return 0;
}

static int nrma_mr_regv(struct fid *fid, const struct iovec *iov, size_t count,
			uint64_t access, uint64_t offset,
			uint64_t requested_key, uint64_t flags,
			struct fid_mr **mr, void *context)
{
	struct fi_mr_attr attr = {
		.mr_iov = iov,
		.iov_count = count,
		.access = access,
		.offset = offset,
		.requested_key = requested_key,
		.context = context,
		.iface = FI_HMEM_SYSTEM,
	};

	return nrma_mr_regattr(fid, &attr, flags, mr);
}

static int nrma_mr_reg(struct fid *fid, const void *buf, size_t len,
		       uint64_t access, uint64_t offset, uint64_t requested_key,
		       uint64_t flags, struct fid_mr **mr, void *context)
{
	struct iovec iov = { .iov_base = (void *) buf, .iov_len = len };

	return nrma_mr_regv(fid, &iov, 1, access, offset, requested_key, flags,
			    mr, context);
}

struct fi_ops_mr nrma_mr_ops = {
	.size = sizeof(struct fi_ops_mr),
	.reg = nrma_mr_reg,
	.regv = nrma_mr_regv,
	.regattr = nrma_mr_regattr,
};
