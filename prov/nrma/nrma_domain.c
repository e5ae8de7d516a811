/* SPDX-License-Identifier: BSD-2-Clause */
#include <stdlib.h>
#include <string.h>

#include "nrma.h"
#include "nrma_cm.h"
#include "nrma_credit.h"
#include "nrma_enosys.h"
#include "nrma_keytab.h"
#include "nrma_mr_span.h"
#include "nrma_notify.h"
#include "nrma_progress.h"
#include "nrma_verbs.h"
#include "nrma_xfer.h"

/* How long a closing region waits for peers to hear that it goes. */
#define NRMA_KEYS_TELL_MS 1000

/* Our side of nrma_domain_keys_changed, on one endpoint. */
struct domain_telling {
	uint64_t changes; /* what the peers must have heard of */
	size_t untold;	  /* connections that have not yet */
};

static void domain_tell_ep(struct nrma_ep *ep, void *arg)
{
	struct domain_telling *t = arg;
	struct nrma_dlist *head, *item;

	nrma_progress_poll(ep);
	head = nrma_cm_conns(ep->cm);
	nrma_dlist_foreach (head, item) {
		struct nrma_conn *conn =
			nrma_container_of(item, struct nrma_conn, link);

		if (!nrma_credit_keys_told(ep, conn, t->changes))
			t->untold++;
	}
}

/*
 * A peer whose connection is not up yet hears of it as it comes up; one
 * that has read a slot by then (its side came up first) is the only one
 * that may still post a key closed since.
 */
void nrma_domain_keys_changed(struct nrma_domain *domain)
{
	struct domain_telling t = {
		.changes = atomic_fetch_add(&domain->keys_changed, 1) + 1,
	};
	int64_t until = nrma_xfer_now_ms() + NRMA_KEYS_TELL_MS;

	do {
		t.untold = 0;
		nrma_cm_thread_each_ep(domain->cm_thread, domain_tell_ep, &t);
	} while (t.untold && nrma_xfer_now_ms() < until);
	if (t.untold)
		NRMA_WARN(FI_LOG_MR,
			  "%zu connections did not hear in %d ms that a key "
			  "closed: their peers' operations with it fail at "
			  "the device\n",
			  t.untold, NRMA_KEYS_TELL_MS);
}

static int nrma_domain_close(struct fid *fid)
{
	struct nrma_domain *domain = nrma_domain_of_fid(fid);

	if (atomic_load(&domain->ref))
		return -FI_EBUSY;
	if (domain->eq)
		atomic_fetch_sub(&domain->eq->ref, 1);
	nrma_cm_thread_close(domain->cm_thread);
	nrma_notify_close(domain->notify);
	nrma_keytab_close(domain->keytab);
	nrma_mr_span_index_close(domain->mr_index);
	nrma_cm_check_claims_close(domain->claims);
	nrma_verbs_domain_close(domain->verbs);
	atomic_fetch_sub(&domain->fabric->ref, 1);
	pthread_mutex_destroy(&domain->ctx_lock);
	fi_freeinfo(domain->info);
	free(domain);
	return 0;
}

/* An EQ bound to a domain receives asynchronous errors. */
static int nrma_domain_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	struct nrma_domain *domain = nrma_domain_of_fid(fid);

	if (bfid->fclass != FI_CLASS_EQ)
		return -FI_EINVAL;
	if (flags & NRMA_REG_MR)
		return -FI_ENOSYS; /* registrations complete at once */
	if (flags)
		return -FI_EBADFLAGS;
	if (domain->eq)
		return -FI_EINVAL;
	domain->eq = nrma_eq_of_fid(bfid);
	atomic_fetch_add(&domain->eq->ref, 1);
	return 0;
}

static struct fi_nrma_ops_domain nrma_domain_nrma_ops = {
	.size = sizeof(struct fi_nrma_ops_domain),
	.nset_open = nrma_nset_open,
};

/* fi_open_ops: the notification sets of fi_ext_nrma.h. */
static int nrma_domain_ops_open(struct fid *fid, const char *name,
				uint64_t flags, void **ops, void *context)
{
	(void) fid;
	(void) context;
	return nrma_ops_open_named(name, flags, ops, FI_NRMA_DOMAIN_OPS_1,
				   &nrma_domain_nrma_ops);
}

static struct fi_ops nrma_domain_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = nrma_domain_close,
	.bind = nrma_domain_bind,
	.control = nrma_no_control,
	.ops_open = nrma_domain_ops_open,
};

static struct fi_ops_domain nrma_domain_ops = {
	.size = sizeof(struct fi_ops_domain),
	.av_open = nrma_av_open,
	.cq_open = nrma_cq_open,
	.endpoint = nrma_ep_open,
	.scalable_ep = nrma_sep_open,
	.cntr_open = nrma_cntr_open,
	.poll_open = nrma_poll_open,
	.stx_ctx = nrma_srx_stx_open,
	.srx_ctx = nrma_srx_open,
	.query_atomic = nrma_ep_atomic_query,
	.query_collective = nrma_no_query_collective,
	.endpoint2 = nrma_ep_open2,
};

/*
 * A device event broke ep (its queue pair to a peer, its completion
 * queue, or the device): the endpoint's EQ, else the domain's, says so.
 */
static void domain_async_report(struct nrma_ep *ep, int err, int prov_errno)
{
	struct nrma_eq *eq = ep->eq ? ep->eq : ep->domain->eq;
	struct fi_eq_err_entry entry = {
		.fid = &ep->path.ep_fid.fid,
		.context = ep->path.ep_fid.fid.context,
		.err = err,
		.prov_errno = prov_errno,
	};

	NRMA_WARN(FI_LOG_EP_CTRL, "endpoint broken by a device event: %s\n",
		  fi_strerror(err));
	if (eq && nrma_eq_report_err(eq, &entry, NULL, 0))
		NRMA_WARN(FI_LOG_EQ, "EQ full: device event not reported\n");
}

static int domain_resources_open(struct nrma_domain *domain,
				 const struct nrma_device *dev)
{
	int ret = nrma_verbs_domain_open(dev, &domain->verbs);

	if (ret)
		return ret;
	ret = nrma_notify_open(domain->verbs, nrma_params.notify_cells,
			       &domain->notify);
	if (ret)
		goto err_verbs;
	ret = nrma_keytab_open(domain->verbs, nrma_attr_mr_cnt(dev),
			       &domain->keytab);
	if (ret)
		goto err_notify;
	ret = nrma_mr_span_index_open(&domain->mr_index);
	if (ret)
		goto err_keytab;
	ret = nrma_cm_check_claims_open(&domain->claims);
	if (ret)
		goto err_index;
	ret = nrma_cm_thread_open(domain->verbs, domain_async_report,
				  domain->info->domain_attr->data_progress ==
					  FI_PROGRESS_AUTO,
				  &domain->cm_thread);
	if (ret)
		goto err_claims;
	return 0;

err_claims:
	nrma_cm_check_claims_close(domain->claims);
err_index:
	nrma_mr_span_index_close(domain->mr_index);
err_keytab:
	nrma_keytab_close(domain->keytab);
err_notify:
	nrma_notify_close(domain->notify);
err_verbs:
	nrma_verbs_domain_close(domain->verbs);
	return ret;
}

static const struct nrma_device *domain_device(const char *name)
{
	for (size_t i = 0; i < nrma_device_count; i++)
		if (!name || !strcmp(nrma_devices[i].name, name))
			return &nrma_devices[i];
	return NULL;
}

int nrma_domain_open(struct fid_fabric *fabric_fid, struct fi_info *info,
		     struct fid_domain **domain_fid, void *context)
{
	struct nrma_fabric *fabric = nrma_fabric_of(fabric_fid);
	const struct nrma_device *dev;
	struct nrma_domain *domain;
	int ret;

	if (!info || !info->domain_attr || !info->fabric_attr ||
	    !info->ep_attr || !info->tx_attr || !info->rx_attr)
		return -FI_EINVAL;
	dev = domain_device(info->domain_attr->name);
	if (!dev)
		return -FI_ENODEV;
	/* Shared contexts take their attributes from it. */
	ret = nrma_attr_check_ep(dev, info);
	if (ret)
		return ret;
	domain = calloc(1, sizeof(*domain));
	if (!domain)
		return -FI_ENOMEM;
	domain->info = fi_dupinfo(info);
	if (!domain->info) {
		ret = -FI_ENOMEM;
		goto err;
	}
	ret = domain_resources_open(domain, dev);
	if (ret)
		goto err;
	domain->device = dev;
	domain->fabric = fabric;
	domain->app_keys = nrma_attr_app_keys(fabric->api_version, info);
	pthread_mutex_init(&domain->ctx_lock, NULL);
	domain->domain_fid.fid.fclass = FI_CLASS_DOMAIN;
	domain->domain_fid.fid.context = context;
	domain->domain_fid.fid.ops = &nrma_domain_fi_ops;
	domain->domain_fid.ops = &nrma_domain_ops;
	domain->domain_fid.mr = &nrma_mr_ops;
	atomic_fetch_add(&fabric->ref, 1);
	*domain_fid = &domain->domain_fid;
	return 0;
err:
	fi_freeinfo(domain->info);
	free(domain);
	return ret;
}
