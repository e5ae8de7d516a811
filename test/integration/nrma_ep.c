/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * RDM endpoints: names, binding rules, enabling, and what is refused once
 * enabled or while bound.
 */
#include <unistd.h>

#include "itest.h"

static struct fi_info *info;
static struct fid_fabric *fabric;
static struct fid_domain *domain, *domain2;
static struct fid_av *av;
static struct fid_cq *tx_cq, *rx_cq, *cq2;
static struct fid_cntr *cntr;

static void open_objects(void)
{
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE };
	struct fi_cq_attr cq_attr = { .size = 64,
				      .format = FI_CQ_FORMAT_CONTEXT };
	struct fi_cntr_attr cntr_attr = { .events = FI_CNTR_EVENTS_COMP };

	info = itest_getinfo();
	CHECK_OK(fi_fabric(info->fabric_attr, &fabric, NULL));
	CHECK_OK(fi_domain(fabric, info, &domain, NULL));
	CHECK_OK(fi_domain(fabric, info, &domain2, NULL));
	CHECK_OK(fi_av_open(domain, &av_attr, &av, NULL));
	CHECK_OK(fi_cq_open(domain, &cq_attr, &tx_cq, NULL));
	CHECK_OK(fi_cq_open(domain, &cq_attr, &rx_cq, NULL));
	CHECK_OK(fi_cq_open(domain2, &cq_attr, &cq2, NULL));
	CHECK_OK(fi_cntr_open(domain, &cntr_attr, &cntr, NULL));
}

static struct sockaddr_in getname(struct fid_ep *ep)
{
	struct sockaddr_in sin;
	size_t len = sizeof(sin);

	memset(&sin, 0, sizeof(sin));
	CHECK_OK(fi_getname(&ep->fid, &sin, &len));
	CHECK(len == sizeof(sin));
	CHECK(itest_is_test_addr(&sin));
	CHECK(sin.sin_port != 0);
	return sin;
}

static void check_getname(struct fid_ep *ep)
{
	char small[4];
	size_t len = sizeof(small);

	getname(ep);
	CHECK_RET(fi_getname(&ep->fid, small, &len), -FI_ETOOSMALL);
	CHECK(len == sizeof(struct sockaddr_in));
}

/* Names the endpoint 10.9.9.1:port for some port nobody uses yet. */
static uint16_t setname_free_port(struct fid_ep *ep)
{
	struct sockaddr_in sin = getname(ep);

	for (unsigned i = 0; i < 200; i++) {
		uint16_t port = 20000 + (getpid() * 7 + i * 131) % 20000;
		int ret;

		sin.sin_port = htons(port);
		ret = fi_setname(&ep->fid, &sin, sizeof(sin));
		if (ret == -FI_EADDRINUSE)
			continue;
		CHECK_OK(ret);
		return port;
	}
	fprintf(stderr, "fi_setname: no free port found\n");
	exit(1);
}

static void check_bind_rules(struct fid_ep *ep)
{
	CHECK_RET(fi_enable(ep), -FI_ENOAV);
	CHECK_RET(fi_ep_bind(ep, &av->fid, FI_SEND), -FI_EBADFLAGS);
	CHECK_OK(fi_ep_bind(ep, &av->fid, 0));
	CHECK_RET(fi_enable(ep), -FI_ENOCQ);

	CHECK_RET(fi_ep_bind(ep, &tx_cq->fid, FI_TRANSMIT | FI_TAGGED),
		  -FI_EBADFLAGS);
	CHECK_RET(fi_ep_bind(ep, &cntr->fid, FI_SEND | FI_TAGGED),
		  -FI_EBADFLAGS);
	/* FI_RMA_EVENT is offered: the counter takes a notification word. */
	CHECK_OK(fi_ep_bind(ep, &cntr->fid, FI_REMOTE_WRITE));
	CHECK_RET(fi_ep_bind(ep, &cntr->fid, FI_REMOTE_WRITE), -FI_EINVAL);
	CHECK_RET(fi_ep_bind(ep, &cq2->fid, FI_TRANSMIT), -FI_EINVAL);

	CHECK_OK(fi_ep_bind(ep, &tx_cq->fid, FI_TRANSMIT));
	CHECK_RET(fi_ep_bind(ep, &tx_cq->fid, FI_TRANSMIT), -FI_EINVAL);
	CHECK_RET(fi_ep_bind(ep, &rx_cq->fid, FI_TRANSMIT), -FI_EINVAL);
	/* Still nothing to report receive completions to. */
	CHECK_RET(fi_enable(ep), -FI_ENOCQ);
	CHECK_OK(fi_ep_bind(ep, &rx_cq->fid, FI_RECV));
}

static void check_enabled(struct fid_ep *ep, uint16_t port)
{
	struct sockaddr_in sin = getname(ep);
	size_t optlen = sizeof(size_t);
	size_t optval = 0;
	char buf[8] = "";

	CHECK(ntohs(sin.sin_port) == port);
	CHECK_RET(fi_enable(ep), -FI_EOPBADSTATE);
	CHECK_RET(fi_ep_bind(ep, &cntr->fid, FI_SEND), -FI_EOPBADSTATE);
	CHECK_RET(fi_setname(&ep->fid, &sin, sizeof(sin)), -FI_EOPBADSTATE);
	/* The name does not change with enabling. */
	sin = getname(ep);
	CHECK(ntohs(sin.sin_port) == port);
	CHECK_OK(fi_getopt(&ep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV,
			   &optval, &optlen));
	CHECK(optlen == sizeof(size_t) && optval > 0);
	optval = 128;
	CHECK_OK(fi_setopt(&ep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV,
			   &optval, sizeof(optval)));
	CHECK_OK(fi_getopt(&ep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV,
			   &optval, &optlen));
	CHECK(optval == 128);
	CHECK_RET(fi_getopt(&ep->fid, FI_OPT_ENDPOINT, FI_OPT_CM_DATA_SIZE,
			    &optval, &optlen),
		  -FI_ENOPROTOOPT);
	/* fi_addr 0 is not in the (empty) AV. */
	CHECK_RET(fi_send(ep, buf, sizeof(buf), NULL, 0, NULL), -FI_EINVAL);
}

static void check_two_names(struct fid_ep *ep)
{
	struct sockaddr_in a = getname(ep), b;
	struct fid_ep *ep2;

	CHECK_OK(fi_endpoint(domain, info, &ep2, NULL));
	b = getname(ep2);
	CHECK(a.sin_port != b.sin_port);
	CHECK_OK(fi_close(&ep2->fid));
}

int main(void)
{
	struct fid_ep *ep;
	uint16_t port;

	open_objects();
	CHECK_OK(fi_endpoint(domain, info, &ep, NULL));
	check_getname(ep);
	check_bind_rules(ep);
	port = setname_free_port(ep);
	CHECK(ntohs(getname(ep).sin_port) == port);
	CHECK_OK(fi_enable(ep));
	check_enabled(ep, port);
	check_two_names(ep);

	CHECK_RET(fi_close(&tx_cq->fid), -FI_EBUSY);
	CHECK_RET(fi_close(&rx_cq->fid), -FI_EBUSY);
	CHECK_RET(fi_close(&av->fid), -FI_EBUSY);
	CHECK_RET(fi_close(&domain->fid), -FI_EBUSY);
	CHECK_OK(fi_close(&ep->fid));
	CHECK_OK(fi_close(&tx_cq->fid));
	CHECK_OK(fi_close(&rx_cq->fid));
	CHECK_OK(fi_close(&av->fid));
	CHECK_OK(fi_close(&cntr->fid));
	CHECK_OK(fi_close(&cq2->fid));
	CHECK_OK(fi_close(&domain2->fid));
	CHECK_OK(fi_close(&domain->fid));
	CHECK_OK(fi_close(&fabric->fid));
	fi_freeinfo(info);
	itest_pass("nrma_ep");
	return 0;
}
