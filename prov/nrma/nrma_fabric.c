/* SPDX-License-Identifier: BSD-2-Clause */
#include <stdlib.h>
#include <string.h>

#include "nrma.h"
#include "nrma_enosys.h"

static int nrma_fabric_close(struct fid *fid)
{
	struct nrma_fabric *fabric = nrma_fabric_of_fid(fid);
	struct nrma_dlist *item;

	if (atomic_load(&fabric->ref))
		return -FI_EBUSY;
	if (fabric->cm_thread)
		nrma_cm_thread_close(fabric->cm_thread);
	/* Requests that closed passive endpoints refused, never asked for. */
	while ((item = nrma_dlist_pop_front(&fabric->connreqs)))
		free(item);
	pthread_mutex_destroy(&fabric->handles_lock);
	pthread_mutex_destroy(&fabric->lock);
	free(fabric);
	return 0;
}

int nrma_fabric_cm_thread(struct nrma_fabric *fabric,
			  struct nrma_cm_thread **thread)
{
	int ret = 0;

	pthread_mutex_lock(&fabric->lock);
	if (!fabric->cm_thread)
		ret = nrma_cm_thread_open(NULL, NULL, false,
					  &fabric->cm_thread);
	*thread = fabric->cm_thread;
	pthread_mutex_unlock(&fabric->lock);
	return ret;
}

static int fabric_trywait_one(struct fid *fid)
{
	switch (fid->fclass) {
	case FI_CLASS_CQ:
		return nrma_cq_trywait(nrma_cq_of_fid(fid));
	case FI_CLASS_CNTR:
		return nrma_cntr_trywait(nrma_cntr_of_fid(fid));
	case FI_CLASS_EQ:
		return nrma_eq_trywait(nrma_eq_of_fid(fid));
	default:
		return -FI_EINVAL;
	}
}

static int nrma_fabric_trywait(struct fid_fabric *fabric, struct fid **fids,
			       int count)
{
	(void) fabric;
	for (int i = 0; i < count; i++) {
		int ret = fabric_trywait_one(fids[i]);

		if (ret)
			return ret;
	}
	return 0;
}

static struct fi_ops nrma_fabric_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = nrma_fabric_close,
	.bind = nrma_no_bind,
	.control = nrma_no_control,
	.ops_open = nrma_no_ops_open,
};

static struct fi_ops_fabric nrma_fabric_ops = {
	.size = sizeof(struct fi_ops_fabric),
	.domain = nrma_domain_open,
	.passive_ep = nrma_pep_open,
	.eq_open = nrma_eq_open,
	.wait_open = nrma_no_wait_open,
	.trywait = nrma_fabric_trywait,
	.domain2 = nrma_no_domain2,
};

static bool fabric_known(const char *name)
{
	char buf[64];

	for (size_t i = 0; i < nrma_device_count; i++) {
		const struct nrma_device *dev = &nrma_devices[i];

		if (!nrma_attr_fabric_name(&dev->addr, &dev->netmask, buf,
					   sizeof(buf)) &&
		    !strcmp(buf, name))
			return true;
	}
	return false;
}

int nrma_fabric_open(struct fi_fabric_attr *attr,
		     struct fid_fabric **fabric_fid, void *context)
{
	struct nrma_fabric *fabric;

	if (attr->name && !fabric_known(attr->name))
		return -FI_ENODATA;
	fabric = calloc(1, sizeof(*fabric));
	if (!fabric)
		return -FI_ENOMEM;
	fabric->api_version = attr->api_version ? attr->api_version :
						  NRMA_FI_VERSION;
	pthread_mutex_init(&fabric->lock, NULL);
	pthread_mutex_init(&fabric->handles_lock, NULL);
	nrma_dlist_init(&fabric->peps);
	nrma_dlist_init(&fabric->connreqs);
	fabric->fabric_fid.fid.fclass = FI_CLASS_FABRIC;
	fabric->fabric_fid.fid.context = context;
	fabric->fabric_fid.fid.ops = &nrma_fabric_fi_ops;
	fabric->fabric_fid.ops = &nrma_fabric_ops;
	*fabric_fid = &fabric->fabric_fid;
	return 0;
}
