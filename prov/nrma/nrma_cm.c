/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Connection management over rdmacm.  Every RDM endpoint owns a listening
 * rdmacm id on its own address; its bound address is the endpoint's name.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>
#include <rdma/rdma_cma.h>

#include "nrma.h"
#include "nrma_verbs.h"

struct nrma_listener {
	struct rdma_event_channel *channel;
	struct rdma_cm_id *id;
};

int nrma_listener_open(const struct sockaddr_in *addr,
		       struct nrma_listener **listener)
{
	struct nrma_listener *l;
	int ret;

	l = calloc(1, sizeof(*l));
	if (!l)
		return -FI_ENOMEM;
	l->channel = rdma_create_event_channel();
	if (!l->channel) {
		ret = -errno;
		goto err_free;
	}
	/* Connection events are reaped by progress, never waited for. */
	if (fcntl(l->channel->fd, F_SETFL, O_NONBLOCK)) {
		ret = -errno;
		goto err_channel;
	}
	if (rdma_create_id(l->channel, &l->id, NULL, RDMA_PS_TCP)) {
		ret = -errno;
		goto err_channel;
	}
	if (rdma_bind_addr(l->id, (struct sockaddr *) addr)) {
		ret = -errno;
		goto err_id;
	}
	*listener = l;
	return 0;

err_id:
	rdma_destroy_id(l->id);
err_channel:
	rdma_destroy_event_channel(l->channel);
err_free:
	free(l);
	NRMA_INFO(FI_LOG_EP_CTRL, "cannot bind to %s:%u: %s\n",
		  inet_ntoa(addr->sin_addr), ntohs(addr->sin_port),
		  fi_strerror(-ret));
	return ret;
}

int nrma_listener_name(struct nrma_listener *l, struct sockaddr_in *name)
{
	struct sockaddr *sa = rdma_get_local_addr(l->id);

	if (sa->sa_family != AF_INET)
		return -FI_EINVAL;
	memcpy(name, sa, sizeof(*name));
	return 0;
}

int nrma_listener_listen(struct nrma_listener *l)
{
	return rdma_listen(l->id, 0) ? -errno : 0;
}

void nrma_listener_close(struct nrma_listener *l)
{
	rdma_destroy_id(l->id);
	rdma_destroy_event_channel(l->channel);
	free(l);
}
