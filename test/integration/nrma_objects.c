/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Fabric, domain, EQ, CQ, counter and AV objects: opening, wait objects,
 * and the rule that nothing closes while something depends on it; what
 * fi_av_insertsym inserts and what a short buffer gets from fi_getname.
 */
#include <arpa/inet.h>
#include <poll.h>

#include "itest.h"

/* libfabric 2.0 deprecates fi_av_bind; nrma keeps serving it. */
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

static struct fi_info *info;
static struct fid_fabric *fabric;
static struct fid_domain *domain;

static int readable(int fd)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	int n = poll(&pfd, 1, 0);

	CHECK(n >= 0);
	return n > 0 && (pfd.revents & POLLIN);
}

static void check_eq(void)
{
	struct fi_eq_attr attr = {
		.size = 8,
		.wait_obj = FI_WAIT_FD,
		.flags = FI_WRITE,
	};
	struct fi_eq_entry entry = { .context = &attr, .data = 42 };
	struct fi_eq_entry got;
	struct fid_eq *eq;
	struct fid *fid;
	uint32_t event;
	int fd = -1;

	CHECK_OK(fi_eq_open(fabric, &attr, &eq, NULL));
	fid = &eq->fid;
	CHECK_OK(fi_control(fid, FI_GETWAIT, &fd));
	CHECK(fd >= 0);

	CHECK_RET(fi_eq_read(eq, &event, &got, sizeof(got), 0), -FI_EAGAIN);
	CHECK_OK(fi_trywait(fabric, &fid, 1));
	CHECK(!readable(fd));

	CHECK_RET(fi_eq_write(eq, FI_NOTIFY, &entry, sizeof(entry), 0),
		  sizeof(entry));
	CHECK_RET(fi_trywait(fabric, &fid, 1), -FI_EAGAIN);
	CHECK(readable(fd));

	CHECK_RET(fi_eq_read(eq, &event, &got, sizeof(got), 0), sizeof(got));
	CHECK(event == FI_NOTIFY);
	CHECK(got.context == &attr && got.data == 42);
	CHECK_OK(fi_trywait(fabric, &fid, 1));
	CHECK(!readable(fd));

	/* An EQ keeps its fabric open. */
	CHECK_RET(fi_close(&fabric->fid), -FI_EBUSY);
	CHECK_OK(fi_close(fid));
}

static void check_cqs(void)
{
	static const enum fi_cq_format formats[] = {
		FI_CQ_FORMAT_CONTEXT,
		FI_CQ_FORMAT_MSG,
		FI_CQ_FORMAT_DATA,
		FI_CQ_FORMAT_TAGGED,
	};
	struct fi_cq_tagged_entry entry;

	for (size_t i = 0; i < sizeof(formats) / sizeof(formats[0]); i++) {
		struct fi_cq_attr attr = {
			.size = 64,
			.format = formats[i],
			.wait_obj = FI_WAIT_FD,
		};
		struct fid_cq *cq;
		struct fid *fid;
		int fd = -1;

		CHECK_OK(fi_cq_open(domain, &attr, &cq, NULL));
		fid = &cq->fid;
		CHECK_RET(fi_cq_read(cq, &entry, 1), -FI_EAGAIN);
		CHECK_OK(fi_control(fid, FI_GETWAIT, &fd));
		CHECK(fd >= 0);
		CHECK_OK(fi_trywait(fabric, &fid, 1));
		CHECK(!readable(fd));
		CHECK_RET(fi_close(&domain->fid), -FI_EBUSY);
		CHECK_OK(fi_close(fid));
	}
}

static void check_cntr(void)
{
	struct fi_cntr_attr attr = {
		.events = FI_CNTR_EVENTS_COMP,
		.wait_obj = FI_WAIT_FD,
	};
	struct fid_cntr *cntr;
	struct fid *fid;
	int fd = -1;

	CHECK_OK(fi_cntr_open(domain, &attr, &cntr, NULL));
	fid = &cntr->fid;
	CHECK(fi_cntr_read(cntr) == 0);
	CHECK(fi_cntr_readerr(cntr) == 0);
	CHECK_OK(fi_control(fid, FI_GETWAIT, &fd));
	CHECK(fd >= 0);
	CHECK_OK(fi_trywait(fabric, &fid, 1));
	CHECK_OK(fi_cntr_add(cntr, 5));
	CHECK(fi_cntr_read(cntr) == 5);
	CHECK_OK(fi_cntr_wait(cntr, 5, 1000));
	CHECK_RET(fi_close(&domain->fid), -FI_EBUSY);
	CHECK_OK(fi_close(fid));
}

/* fi_trywait over several objects of different classes at once. */
static void check_trywait_mixed(void)
{
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_CONTEXT,
				      .wait_obj = FI_WAIT_FD };
	struct fi_cntr_attr cntr_attr = { .events = FI_CNTR_EVENTS_COMP,
					  .wait_obj = FI_WAIT_FD };
	struct fi_eq_attr eq_attr = { .wait_obj = FI_WAIT_FD,
				      .flags = FI_WRITE };
	struct fi_eq_entry entry = { 0 };
	struct fid_cq *cq;
	struct fid_cntr *cntr;
	struct fid_eq *eq;
	struct fid *fids[3];

	CHECK_OK(fi_cq_open(domain, &cq_attr, &cq, NULL));
	CHECK_OK(fi_cntr_open(domain, &cntr_attr, &cntr, NULL));
	CHECK_OK(fi_eq_open(fabric, &eq_attr, &eq, NULL));
	fids[0] = &cq->fid;
	fids[1] = &cntr->fid;
	fids[2] = &eq->fid;
	CHECK_OK(fi_trywait(fabric, fids, 3));
	CHECK_RET(fi_eq_write(eq, FI_NOTIFY, &entry, sizeof(entry), 0),
		  sizeof(entry));
	CHECK_RET(fi_trywait(fabric, fids, 3), -FI_EAGAIN);
	CHECK_OK(fi_close(&eq->fid));
	CHECK_OK(fi_close(&cntr->fid));
	CHECK_OK(fi_close(&cq->fid));
}

static void check_avs(void)
{
	static const enum fi_av_type types[] = { FI_AV_TABLE, FI_AV_MAP };

	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		struct fi_av_attr attr = { .type = types[i] };
		struct fid_av *av;

		CHECK_OK(fi_av_open(domain, &attr, &av, NULL));
		CHECK_RET(fi_close(&domain->fid), -FI_EBUSY);
		CHECK_OK(fi_close(&av->fid));
	}
}

/* An AV reporting inserts to an EQ keeps that EQ open. */
static void check_av_event(void)
{
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE, .flags = FI_EVENT };
	struct fi_eq_attr eq_attr = { .wait_obj = FI_WAIT_NONE };
	struct fid_av *av;
	struct fid_eq *eq;

	CHECK_OK(fi_eq_open(fabric, &eq_attr, &eq, NULL));
	CHECK_OK(fi_av_open(domain, &av_attr, &av, NULL));
	CHECK_OK(fi_av_bind(av, &eq->fid, 0));
	CHECK_RET(fi_close(&eq->fid), -FI_EBUSY);
	CHECK_OK(fi_close(&av->fid));
	CHECK_OK(fi_close(&eq->fid));
}

static void check_av_entry(struct fid_av *av, fi_addr_t fi_addr, const char *ip,
			   uint16_t port)
{
	struct sockaddr_in got,
		want = { .sin_family = AF_INET, .sin_port = htons(port) };
	size_t len = sizeof(got);

	CHECK(inet_pton(AF_INET, ip, &want.sin_addr) == 1);
	memset(&got, 0, sizeof(got));
	CHECK_OK(fi_av_lookup(av, fi_addr, &got, &len));
	CHECK(len == sizeof(got));
	CHECK(got.sin_addr.s_addr == want.sin_addr.s_addr &&
	      got.sin_port == want.sin_port);
}

/*
 * fi_av_insertsym(3): nodes from node, services from service for each.
 * The VM resolves "localhost" only, so a numbered range of names is one
 * that does not resolve: each of its entries fails on its own.
 */
static void check_av_insertsym(void)
{
	struct fi_av_attr attr = { .type = FI_AV_TABLE };
	fi_addr_t fi_addr[4];
	int errs[4] = { -1, -1, -1, -1 };
	struct fid_av *av;

	CHECK_OK(fi_av_open(domain, &attr, &av, NULL));
	CHECK_RET(fi_av_insertsym(av, "10.9.9.200", 2, "7000", 2, fi_addr, 0,
				  NULL),
		  4);
	check_av_entry(av, fi_addr[0], "10.9.9.200", 7000);
	check_av_entry(av, fi_addr[1], "10.9.9.200", 7001);
	check_av_entry(av, fi_addr[2], "10.9.9.201", 7000);
	check_av_entry(av, fi_addr[3], "10.9.9.201", 7001);
	CHECK_RET(fi_av_insertsym(av, "localhost", 1, "7100", 2, fi_addr, 0,
				  NULL),
		  2);
	check_av_entry(av, fi_addr[0], "127.0.0.1", 7100);
	check_av_entry(av, fi_addr[1], "127.0.0.1", 7101);
	/* More than one node needs a numeric suffix to count up in. */
	CHECK_RET(fi_av_insertsym(av, "localhost", 2, "7100", 1, fi_addr, 0,
				  NULL),
		  -FI_EINVAL);
	CHECK_RET(fi_av_insertsym(av, "nrma-nohost-8", 2, "7200", 2, fi_addr,
				  FI_SYNC_ERR, errs),
		  0);
	for (size_t i = 0; i < 4; i++)
		CHECK(fi_addr[i] == FI_ADDR_NOTAVAIL && errs[i] == FI_EINVAL);
	CHECK_OK(fi_close(&av->fid));
}

/* fi_cm(3): a name too large for the buffer is truncated. */
static void check_getname_short(struct fid_ep *ep)
{
	struct sockaddr_in name;
	unsigned char buf[sizeof(name) + 1];
	size_t len = sizeof(name);

	CHECK_OK(fi_getname(&ep->fid, &name, &len));
	memset(buf, 0xa5, sizeof(buf));
	len = 6;
	CHECK_RET(fi_getname(&ep->fid, buf, &len), -FI_ETOOSMALL);
	CHECK(len == sizeof(name));
	CHECK(!memcmp(buf, &name, 6) && buf[6] == 0xa5);
	len = 0;
	CHECK_RET(fi_getname(&ep->fid, NULL, &len), -FI_ETOOSMALL);
	CHECK(len == sizeof(name));
}

static void check_mr_ep(void)
{
	static char buf[64];
	struct fid_mr *mr;
	struct fid_ep *ep;

	CHECK_OK(fi_mr_reg(domain, buf, sizeof(buf), FI_SEND, 0, 0, 0, &mr,
			   NULL));
	CHECK_RET(fi_close(&domain->fid), -FI_EBUSY);
	CHECK_OK(fi_close(&mr->fid));

	CHECK_OK(fi_endpoint(domain, info, &ep, NULL));
	check_getname_short(ep);
	CHECK_RET(fi_close(&domain->fid), -FI_EBUSY);
	CHECK_OK(fi_close(&ep->fid));
}

int main(void)
{
	info = itest_getinfo();
	CHECK_OK(fi_fabric(info->fabric_attr, &fabric, NULL));
	check_eq();
	CHECK_OK(fi_domain(fabric, info, &domain, NULL));
	check_cqs();
	check_cntr();
	check_trywait_mixed();
	check_avs();
	check_av_event();
	check_av_insertsym();
	check_mr_ep();
	CHECK_RET(fi_close(&fabric->fid), -FI_EBUSY);
	CHECK_OK(fi_close(&domain->fid));
	CHECK_OK(fi_close(&fabric->fid));
	fi_freeinfo(info);
	itest_pass("nrma_objects");
	return 0;
}
