/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The helpers of itest_rma.h: endpoints with RMA counters, registrations,
 * guards and patterns for the RMA tests.
 */
#include "itest_rma.h"

void rt_init(void)
{
	itest_max_kids = 8;
	itest_max_cqs = 8;
	itest_wait_valgrind_factor = 1;
}

uint64_t rt_cntr_reach_at(const char *file, int line, struct fid_cntr *cntr,
			  uint64_t value, const char *what)
{
	int64_t deadline = itest_deadline();
	uint64_t v;

	while ((v = fi_cntr_read(cntr)) < value) {
		if (itest_now_ms() > deadline)
			itest_fail_at(file, line,
				      "timed out after %" PRId64
				      " s waiting for %s to reach %" PRIu64
				      ": it reads %" PRIu64 " (errors %" PRIu64
				      ")",
				      itest_wait_ms() / 1000, what, value, v,
				      fi_cntr_readerr(cntr));
		itest_progress();
	}
	return v;
}

/* Peers: one target (the parent) and n initiators (its children). */

void rt_fork_initiators(struct itest_link *links, struct itest_chan *pc, int n,
			void (*fn)(void *))
{
	for (int i = 0; i < n; i++)
		itest_link_init(&links[i]);
	for (uintptr_t i = 0; i < (uintptr_t) n; i++)
		itest_fork(itest_fmt("initiator %u", (unsigned) i), fn,
			   (void *) i);
	snprintf(itest_who, sizeof(itest_who), "target");
	for (int i = 0; i < n; i++)
		pc[i] = itest_link_parent(&links[i]);
}

struct itest_chan rt_initiator_chan(struct itest_link *links, int n, int me)
{
	for (int i = 0; i < n; i++)
		if (i != me)
			itest_link_close_all(&links[i]);
	return itest_link_child(&links[me]);
}

/* Fabric, domain and endpoints */

uint64_t rt_extra_caps;
enum fi_threading rt_threading = FI_THREAD_UNSPEC;
enum fi_progress rt_data_progress = FI_PROGRESS_UNSPEC;
bool rt_mr_mode_none;

struct fi_info *rt_getinfo(void)
{
	struct fi_info *hints = itest_hints(), *info;

	hints->caps = FI_MSG | FI_RMA | FI_ATOMIC | FI_RMA_EVENT |
		      rt_extra_caps;
	hints->domain_attr->mr_mode = rt_mr_mode_none ?
					      0 :
					      FI_MR_PROV_KEY | FI_MR_VIRT_ADDR |
						      FI_MR_ALLOCATED |
						      FI_MR_RMA_EVENT;
	hints->domain_attr->name = strdup(itest_device());
	CHECK(hints->domain_attr->name != NULL);
	hints->domain_attr->threading = rt_threading;
	hints->domain_attr->data_progress = rt_data_progress;
	RT_OK(fi_getinfo(ITEST_VERSION, NULL, NULL, 0, hints, &info));
	CHECK(info != NULL);
	fi_freeinfo(hints);
	EXPECT((info->caps & (FI_RMA | FI_ATOMIC | FI_RMA_EVENT)) ==
		       (FI_RMA | FI_ATOMIC | FI_RMA_EVENT),
	       "caps 0x%" PRIx64, info->caps);
	EXPECT(rt_threading == FI_THREAD_UNSPEC ||
		       info->domain_attr->threading == rt_threading,
	       "threading %d, asked for %d", info->domain_attr->threading,
	       rt_threading);
	/* Manual unless asked: automatic costs a thread's ticks. */
	EXPECT(info->domain_attr->data_progress ==
		       (rt_data_progress == FI_PROGRESS_AUTO ?
				FI_PROGRESS_AUTO :
				FI_PROGRESS_MANUAL),
	       "data progress %d, asked for %d",
	       info->domain_attr->data_progress, rt_data_progress);
	return info;
}

struct fid_domain *rt_domain(void)
{
	if (!itest_domain_fid) {
		itest_info = rt_getinfo();
		RT_OK(fi_fabric(itest_info->fabric_attr, &itest_fabric_fid,
				NULL));
		RT_OK(fi_domain(itest_fabric_fid, itest_info, &itest_domain_fid,
				NULL));
	}
	return itest_domain_fid;
}

void rt_node_open(struct rt_node *n, const struct rt_node_opts *o,
		  const char *name)
{
	static const struct rt_node_opts defaults;
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE };
	struct fid_domain *domain = rt_domain();
	size_t len = sizeof(n->name);

	if (!o)
		o = &defaults;
	memset(n, 0, sizeof(*n));
	n->peer = FI_ADDR_NOTAVAIL;
	RT_OK(fi_av_open(domain, &av_attr, &n->av, NULL));
	RT_OK(fi_endpoint(domain, itest_info, &n->ep, NULL));
	RT_OK(fi_ep_bind(n->ep, &n->av->fid, 0));
	n->tx = itest_cq_open(domain, FI_CQ_FORMAT_DATA,
			      itest_fmt("%s tx CQ", name));
	n->tx->count_only = o->tx_count_only;
	n->tx->errors_ok = o->tx_errors_ok;
	RT_OK(fi_ep_bind(
		n->ep, &n->tx->cq->fid,
		FI_TRANSMIT | (o->tx_selective ? FI_SELECTIVE_COMPLETION : 0)));
	n->rx = itest_cq_open(domain, FI_CQ_FORMAT_DATA,
			      itest_fmt("%s rx CQ", name));
	RT_OK(fi_ep_bind(n->ep, &n->rx->cq->fid, FI_RECV));
	if (o->write_cntr) {
		n->write_cntr = itest_cntr_open(domain);
		RT_OK(fi_ep_bind(n->ep, &n->write_cntr->fid, FI_WRITE));
	}
	if (o->read_cntr) {
		n->read_cntr = itest_cntr_open(domain);
		RT_OK(fi_ep_bind(n->ep, &n->read_cntr->fid, FI_READ));
	}
	if (o->remote_flags) {
		n->remote_cntr = itest_cntr_open(domain);
		RT_OK(fi_ep_bind(n->ep, &n->remote_cntr->fid, o->remote_flags));
	}
	if (o->rread_cntr) {
		CHECK(!(o->remote_flags & FI_REMOTE_READ));
		n->rread_cntr = itest_cntr_open(domain);
		RT_OK(fi_ep_bind(n->ep, &n->rread_cntr->fid, FI_REMOTE_READ));
	}
	RT_OK(fi_enable(n->ep));
	RT_OK(fi_getname(&n->ep->fid, &n->name, &len));
	CHECK(len == sizeof(n->name));
}

void rt_node_close(struct rt_node *n)
{
	RT_OK(fi_close(&n->ep->fid));
	itest_cq_close(n->tx);
	itest_cq_close(n->rx);
	itest_cntr_close(n->write_cntr);
	itest_cntr_close(n->read_cntr);
	itest_cntr_close(n->remote_cntr);
	itest_cntr_close(n->rread_cntr);
	RT_OK(fi_close(&n->av->fid));
	memset(n, 0, sizeof(*n));
}

fi_addr_t rt_node_insert(struct rt_node *n, const struct sockaddr_in *name)
{
	return n->peer = itest_av_insert1(n->av, name);
}

fi_addr_t rt_node_exchange(struct rt_node *n, struct itest_chan *ch)
{
	struct sockaddr_in peer = itest_name_swap(ch, &n->name);

	return n->peer = itest_av_insert1(n->av, &peer);
}

/* Memory registrations; what a peer needs to address one. */

struct fid_mr *rt_mr_reg(void *buf, size_t len, uint64_t access, uint64_t flags)
{
	struct iovec iov = { .iov_base = buf, .iov_len = len };
	struct fi_mr_attr attr = {
		.mr_iov = &iov,
		.iov_count = 1,
		.access = access,
		.iface = FI_HMEM_SYSTEM,
	};
	struct fid_mr *mr;

	RT_OK(fi_mr_regattr(rt_domain(), &attr, flags, &mr));
	return mr;
}

struct fid_mr *rt_mr_reg_cntr(void *buf, size_t len, uint64_t access,
			      struct fid_cntr *cntr, uint64_t bind_flags)
{
	struct fid_mr *mr = rt_mr_reg(buf, len, access, FI_RMA_EVENT);

	RT_OK(fi_mr_bind(mr, &cntr->fid, bind_flags));
	RT_OK(fi_mr_enable(mr));
	return mr;
}

struct rt_rkey rt_rkey_of(struct fid_mr *mr, const void *buf, size_t len)
{
	return (struct rt_rkey){ .addr = itest_mr_addr(itest_info, buf, buf),
				 .len = len,
				 .key = fi_mr_key(mr) };
}

/* Data patterns: itest_msg.h's, starting at word 1 (bias 1). */

void rt_pat_gen(void *dst, uint64_t seed, size_t off, size_t len)
{
	itest_pat_gen_b(dst, seed, off, len, 1);
}

void rt_fill_check_at(const char *file, int line, const void *buf, int byte,
		      size_t len, const char *what)
{
	const unsigned char *p = buf;

	for (size_t i = 0; i < len; i++)
		if (p[i] != (unsigned char) byte)
			itest_fail_at(file, line,
				      "%s: byte %zu of %zu is "
				      "0x%02x, expected 0x%02x (untouched)",
				      what, i, len, p[i], (unsigned char) byte);
}

void *rt_guarded(size_t len)
{
	unsigned char *p = malloc(len + 2 * RT_GUARD);

	CHECK(p != NULL);
	memset(p, RT_GUARD_BYTE, RT_GUARD);
	memset(p + RT_GUARD, 0, len);
	memset(p + RT_GUARD + len, RT_GUARD_BYTE, RT_GUARD);
	return p + RT_GUARD;
}

void rt_guarded_free(void *buf)
{
	if (buf)
		free((unsigned char *) buf - RT_GUARD);
}

void rt_guard_check_at(const char *file, int line, const void *buf, size_t len,
		       const char *what)
{
	const unsigned char *b = buf;

	for (size_t i = 1; i <= RT_GUARD; i++)
		if (b[-(ptrdiff_t) i] != RT_GUARD_BYTE)
			itest_fail_at(file, line,
				      "%s: guard byte %zu before "
				      "the %zu-byte buffer was overwritten "
				      "(0x%02x)",
				      what, i, len, b[-(ptrdiff_t) i]);
	for (size_t i = 0; i < RT_GUARD; i++)
		if (b[len + i] != RT_GUARD_BYTE)
			itest_fail_at(file, line,
				      "%s: guard byte %zu after "
				      "the %zu-byte buffer was overwritten "
				      "(0x%02x)",
				      what, i, len, b[len + i]);
}

void rt_pass(const char *name, int64_t start_ms)
{
	printf("%s: all checks passed (%.1f s)\n", name,
	       (itest_now_ms() - start_ms) / 1000.0);
	fflush(stdout);
}

void rt_note(const char *fmt, ...)
{
	va_list ap;

	printf("[%s] ", itest_who);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}
