/* SPDX-License-Identifier: BSD-2-Clause */
#include <unistd.h>

#include <rdma/fi_atomic.h>
#include <rdma/fi_rma.h>

#include "itest_fault.h"

/* The target */

/* Binds to name; the old owner's port may take a moment to be free. */
static void ft_target_bind(const struct sockaddr_in *name)
{
	rt_domain();
	free(itest_info->src_addr);
	itest_info->src_addr = malloc(sizeof(*name));
	CHECK(itest_info->src_addr != NULL);
	memcpy(itest_info->src_addr, name, sizeof(*name));
	itest_info->src_addrlen = sizeof(*name);
}

static void ft_target_recv(struct rt_node *n, char *bufs, int i)
{
	RT_POST(fi_recv(n->ep, bufs + (size_t) i * FT_RNDV, FT_RNDV, NULL,
			FI_ADDR_UNSPEC, (void *) (uintptr_t) i),
		"a target's receive");
}

void ft_target_run(const char *key, const char *stop_key,
		   const struct sockaddr_in *name)
{
	struct rt_node_opts o = { .remote_flags = FI_REMOTE_WRITE };
	char *bufs = malloc((size_t) FT_RECVS * FT_RNDV);
	void *buf = calloc(1, FT_TARGET_BUF);
	struct ft_target_info info = { .pid = (uint64_t) getpid() };
	struct fid_cntr *cntr;
	struct fid_mr *mr;
	struct rt_node n;

	CHECK(bufs && buf);
	if (name)
		ft_target_bind(name);
	rt_node_open(&n, &o, key);
	/* A receive whose rendezvous read dies with the link fails. */
	n.rx->errors_ok = true;
	cntr = itest_cntr_open(rt_domain());
	mr = rt_mr_reg_cntr(buf, FT_TARGET_BUF,
			    FI_REMOTE_WRITE | FI_REMOTE_READ, cntr,
			    FI_REMOTE_WRITE | FI_REMOTE_READ);
	for (int i = 0; i < FT_RECVS; i++)
		ft_target_recv(&n, bufs, i);
	info.name = n.name;
	info.addr = itest_mr_addr(itest_info, buf, buf);
	info.key = fi_mr_key(mr);
	itest_host_put(key, &info, sizeof(info));
	/* Take what comes; put every receive back. */
	for (int64_t deadline = itest_deadline(); !itest_host_has(stop_key);) {
		itest_check_deadline(deadline, itest_fmt("the %s", stop_key));
		itest_progress();
		while (n.rx->count) {
			struct itest_comp c = itest_cq_wait(n.rx, "a message");

			ft_target_recv(&n, bufs,
				       (int) (uintptr_t) c.op_context);
		}
		while (n.rx->ecount) {
			struct fi_cq_err_entry e = itest_cq_wait_err(n.rx, "");

			ft_target_recv(&n, bufs,
				       (int) (uintptr_t) e.op_context);
		}
	}
	RT_OK(fi_close(&mr->fid));
	itest_cntr_close(cntr);
	rt_node_close(&n);
	itest_domain_close();
	free(bufs);
	free(buf);
}

/* The driver */

static char ft_src[FT_BIG];
static uint64_t ft_result;

void ft_driver_open(struct rt_node *n)
{
	struct rt_node_opts o = { .tx_errors_ok = true };

	rt_node_open(n, &o, "driver");
	for (size_t i = 0; i < sizeof(ft_src); i++)
		ft_src[i] = (char) i;
}

void ft_stream_init(struct ft_stream *s, struct rt_node *n,
		    const struct ft_target_info *info)
{
	memset(s, 0, sizeof(*s));
	s->n = n;
	s->info = *info;
	s->dest = itest_av_insert1(n->av, &info->name);
	s->first_err = -1;
}

const char *ft_kind_name(enum ft_kind kind)
{
	static const char *const names[FT_KINDS] = {
		[FT_SEND_SMALL] = "an eager send",
		[FT_SEND_RNDV] = "a rendezvous send",
		[FT_WRITE_SMALL] = "a notified 8-byte write",
		[FT_WRITE_BIG] = "a notified 1 MiB write",
		[FT_READ_OP] = "a 4 KiB read",
		[FT_ATOMIC] = "a fetch-and-add",
	};

	return kind < FT_KINDS ? names[kind] : "?";
}

static ssize_t ft_post_kind(struct ft_stream *s, enum ft_kind kind, void *ctx)
{
	struct fid_ep *ep = s->n->ep;
	uint64_t addr = s->info.addr, key = s->info.key;
	static uint64_t one = 1;

	switch (kind) {
	case FT_SEND_SMALL:
		return fi_send(ep, ft_src, 64, NULL, s->dest, ctx);
	case FT_SEND_RNDV:
		return fi_send(ep, ft_src, FT_RNDV, NULL, s->dest, ctx);
	case FT_WRITE_SMALL:
		return fi_write(ep, ft_src, 8, NULL, s->dest, addr + 4096, key,
				ctx);
	case FT_WRITE_BIG:
		return fi_write(ep, ft_src, FT_BIG, NULL, s->dest, addr + 8192,
				key, ctx);
	case FT_READ_OP:
		return fi_read(ep, ft_src, FT_READ, NULL, s->dest, addr + 16384,
			       key, ctx);
	default:
		return fi_fetch_atomic(ep, &one, 1, NULL, &ft_result, NULL,
				       s->dest, addr, key, FI_UINT64, FI_SUM,
				       ctx);
	}
}

bool ft_stream_post(struct ft_stream *s)
{
	for (int i = 0; i < FT_WINDOW; i++) {
		struct ft_slot *slot = &s->slot[i];
		ssize_t ret;

		if (slot->busy)
			continue;
		slot->kind = (enum ft_kind)(s->next % FT_KINDS);
		ret = ft_post_kind(s, slot->kind, slot);
		if (ret == -FI_EAGAIN)
			return false;
		s->next++;
		if (ret) {
			s->refused++;
			return false;
		}
		slot->busy = true;
		s->posted++;
		return true;
	}
	return false;
}

static struct ft_stream *ft_owner(struct ft_stream **streams, int n, void *ctx)
{
	for (int i = 0; i < n; i++)
		if ((char *) ctx >= (char *) streams[i]->slot &&
		    (char *) ctx < (char *) (streams[i]->slot + FT_WINDOW))
			return streams[i];
	FAIL("a completion with context %p, which names no operation", ctx);
}

static void ft_end(struct ft_stream **streams, int n, void *ctx, bool ok)
{
	struct ft_stream *s = ft_owner(streams, n, ctx);
	struct ft_slot *slot = ctx;

	EXPECT(slot->busy, "one entry per operation (context %p)", ctx);
	slot->busy = false;
	if (ok) {
		s->ok++;
	} else {
		s->failed++;
		if (s->first_err < 0)
			s->first_err = itest_now_ms();
	}
	s->last_end = itest_now_ms();
	s->last_kind = slot->kind;
	s->last_ok = ok;
}

void ft_reap(struct ft_stream **streams, int n)
{
	struct itest_cq *cq = streams[0]->n->tx;

	itest_cq_poll(cq);
	while (cq->ecount) {
		struct fi_cq_err_entry e = itest_cq_wait_err(cq, "an error");

		ft_end(streams, n, e.op_context, false);
	}
	while (cq->count) {
		struct itest_comp c = itest_cq_wait(cq, "a completion");

		ft_end(streams, n, c.op_context, true);
	}
}

uint64_t ft_in_flight(const struct ft_stream *s)
{
	return s->posted - s->ok - s->failed;
}

void ft_stream_print(const struct ft_stream *s, const char *name)
{
	printf("%s: posted %" PRIu64 ", completed %" PRIu64 ", errors %" PRIu64
	       ", in flight %" PRIu64 ", refused posts %" PRIu64 "\n",
	       name, s->posted, s->ok, s->failed, ft_in_flight(s), s->refused);
}
