/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * nrma_bench's reference: the same operations with bare ibv_post_send on
 * one RC queue pair that rdmacm connects, no libfabric.  A notified write
 * is what a careful verbs user would post: an unsignaled write, then a
 * signaled fetch-and-add on the peer's counter word (fenced after a read).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "nrma_bench.h"

struct bench_xport {
	const struct bench_variant *v;
	struct rdma_cm_id *listen_id, *id;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *buf_mr, *word_mr;
	uint8_t *buf; /* what peers write or read, then what we send */
	size_t max_size;
	uint64_t *word; /* [0] the counter peers bump, [1] atomics' results */
	size_t max_window;
	struct bench_blob peer;
};

static int verbs_fail(const char *what)
{
	fprintf(stderr, "nrma_bench: %s: %s\n", what, strerror(errno));
	return -1;
}

/* Which IPv4 address rdmacm can reach a RoCE device at: its GID's. */
static int verbs_gid_addr(struct ibv_context *ctx, char *out, size_t len)
{
	static const uint8_t v4_prefix[12] = { [10] = 0xff, [11] = 0xff };
	struct ibv_port_attr port;
	union ibv_gid gid;

	if (ibv_query_port(ctx, 1, &port))
		return -1;
	for (int i = 0; i < port.gid_tbl_len; i++) {
		if (ibv_query_gid(ctx, 1, i, &gid) ||
		    memcmp(gid.raw, v4_prefix, sizeof(v4_prefix)))
			continue;
		return inet_ntop(AF_INET, gid.raw + 12, out, len) ? 0 : -1;
	}
	return -1;
}

int bench_verbs_addr(const char *opt_addr, char *out, size_t len)
{
	struct ibv_device **devs;
	int n, rc = -1;

	if (opt_addr) {
		snprintf(out, len, "%s", opt_addr);
		return 0;
	}
	devs = ibv_get_device_list(&n);
	for (int i = 0; devs && i < n && rc; i++) {
		struct ibv_context *ctx = ibv_open_device(devs[i]);

		if (ctx) {
			rc = verbs_gid_addr(ctx, out, len);
			ibv_close_device(ctx);
		}
	}
	if (devs)
		ibv_free_device_list(devs);
	return rc;
}

static struct rdma_addrinfo *verbs_resolve(const char *host, const char *port,
					   bool passive)
{
	struct rdma_addrinfo hints = { .ai_port_space = RDMA_PS_TCP,
				       .ai_flags = passive ? RAI_PASSIVE : 0 },
			     *res;

	return rdma_getaddrinfo(host, port, &hints, &res) ? NULL : res;
}

/* Memory and a listening id on the local device, before any peer. */
static int verbs_local(struct bench_xport *x, size_t max_size, const char *ip)
{
	struct rdma_addrinfo *ai = verbs_resolve(ip, "0", true);
	int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
		     IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;

	if (!ai)
		return verbs_fail("rdma_getaddrinfo");
	if (rdma_create_id(NULL, &x->listen_id, x, RDMA_PS_TCP) ||
	    rdma_bind_addr(x->listen_id, ai->ai_src_addr)) {
		rdma_freeaddrinfo(ai);
		return verbs_fail("rdma_bind_addr");
	}
	rdma_freeaddrinfo(ai);
	x->pd = ibv_alloc_pd(x->listen_id->verbs);
	x->cq = x->pd ? ibv_create_cq(x->listen_id->verbs,
				      (int) (2 * x->max_window + 16), NULL,
				      NULL, 0) :
			NULL;
	x->buf = calloc(2, max_size);
	x->word = aligned_alloc(64, 64);
	if (!x->cq || !x->buf || !x->word)
		return verbs_fail("ibv_create_cq");
	memset(x->word, 0, 64);
	x->buf_mr = ibv_reg_mr(x->pd, x->buf, 2 * max_size, access);
	x->word_mr = ibv_reg_mr(x->pd, x->word, 64, access);
	return x->buf_mr && x->word_mr ? 0 : verbs_fail("ibv_reg_mr");
}

static int verbs_open(struct bench_xport **xp, const struct bench_variant *v,
		      size_t max_size, size_t max_window, struct bench_blob *me)
{
	struct bench_xport *x = calloc(1, sizeof(*x));
	char ip[INET_ADDRSTRLEN];

	*xp = x;
	if (!x || bench_verbs_addr(getenv("NRMA_BENCH_ADDR"), ip, sizeof(ip)))
		return verbs_fail("no RoCE device with an IPv4 GID (-a)");
	x->v = v;
	x->max_size = max_size;
	x->max_window = max_window;
	if (verbs_local(x, max_size, ip))
		return -1;
	if (rdma_listen(x->listen_id, 1))
		return verbs_fail("rdma_listen");
	me->addrlen = (size_t) snprintf((char *) me->addr, sizeof(me->addr),
					"%s %u", ip,
					ntohs(rdma_get_src_port(x->listen_id)));
	me->buf_addr = (uintptr_t) x->buf;
	me->buf_key = x->buf_mr->rkey;
	me->cntr_addr = (uintptr_t) x->word;
	me->cntr_key = x->word_mr->rkey;
	return 0;
}

static int verbs_qp(struct bench_xport *x)
{
	struct ibv_qp_init_attr attr = {
		.send_cq = x->cq,
		.recv_cq = x->cq,
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = (uint32_t) (2 * x->max_window + 4),
			 .max_recv_wr = 1,
			 .max_send_sge = 1,
			 .max_recv_sge = 1 },
	};

	return rdma_create_qp(x->id, x->pd, &attr) ?
		       verbs_fail("rdma_create_qp") :
		       0;
}

/* The initiator connects to the peer's listener, the other accepts. */
static int verbs_connect(struct bench_xport *x, const struct bench_blob *peer,
			 bool initiator)
{
	struct rdma_conn_param param = { .responder_resources = 16,
					 .initiator_depth = 16,
					 .retry_count = 7,
					 .rnr_retry_count = 7 };
	char host[64], port[16];
	struct rdma_addrinfo *ai;

	x->peer = *peer;
	if (!initiator) {
		if (rdma_get_request(x->listen_id, &x->id) || verbs_qp(x))
			return verbs_fail("rdma_get_request");
		return rdma_accept(x->id, &param) ? verbs_fail("rdma_accept") :
						    0;
	}
	if (sscanf((const char *) peer->addr, "%63s %15s", host, port) != 2)
		return -1;
	ai = verbs_resolve(host, port, false);
	if (!ai || rdma_create_id(NULL, &x->id, x, RDMA_PS_TCP) ||
	    rdma_resolve_addr(x->id, NULL, ai->ai_dst_addr, 2000) ||
	    rdma_resolve_route(x->id, 2000) || verbs_qp(x)) {
		if (ai)
			rdma_freeaddrinfo(ai);
		return verbs_fail("rdmacm connect");
	}
	rdma_freeaddrinfo(ai);
	return rdma_connect(x->id, &param) ? verbs_fail("rdma_connect") : 0;
}

/* The data part of an operation; unsignaled where an atomic follows. */
static void verbs_data_wr(struct bench_xport *x, struct ibv_send_wr *wr,
			  struct ibv_sge *sge, size_t size)
{
	*sge = (struct ibv_sge){ .addr = (uintptr_t) (x->buf + x->max_size),
				 .length = (uint32_t) size,
				 .lkey = x->buf_mr->lkey };
	*wr = (struct ibv_send_wr){
		.sg_list = sge,
		.num_sge = 1,
		.opcode = x->v->op == BENCH_OP_READ_CNTR ? IBV_WR_RDMA_READ :
							   IBV_WR_RDMA_WRITE,
		.send_flags = x->v->op == BENCH_OP_WRITE ? IBV_SEND_SIGNALED :
							   0,
		.wr.rdma = { .remote_addr = x->peer.buf_addr,
			     .rkey = (uint32_t) x->peer.buf_key },
	};
}

static int verbs_post(struct bench_xport *x, size_t size, uint64_t seq)
{
	struct ibv_send_wr data, faa, *bad;
	struct ibv_sge data_sge, faa_sge = { .addr = (uintptr_t) &x->word[1],
					     .length = 8,
					     .lkey = x->word_mr->lkey };

	if (x->v->op == BENCH_OP_WRITE)
		x->buf[x->max_size + size - 1] = bench_seq_byte(seq);
	verbs_data_wr(x, &data, &data_sge, size);
	if (x->v->op != BENCH_OP_WRITE) {
		faa = (struct ibv_send_wr){
			.sg_list = &faa_sge,
			.num_sge = 1,
			.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD,
			.send_flags = IBV_SEND_SIGNALED |
				      (x->v->op == BENCH_OP_READ_CNTR ?
					       IBV_SEND_FENCE :
					       0),
			.wr.atomic = { .remote_addr = x->peer.cntr_addr,
				       .compare_add = 1,
				       .rkey = (uint32_t) x->peer.cntr_key },
		};
		data.next = &faa;
	}
	errno = ibv_post_send(x->id->qp, &data, &bad);
	return errno ? verbs_fail("ibv_post_send") : 0;
}

static int verbs_tx_done(struct bench_xport *x)
{
	struct ibv_wc wc[16];
	int n = ibv_poll_cq(x->cq, 16, wc);

	for (int i = 0; i < n; i++) {
		if (wc[i].status != IBV_WC_SUCCESS) {
			fprintf(stderr, "nrma_bench: completion: %s\n",
				ibv_wc_status_str(wc[i].status));
			return -1;
		}
	}
	return n;
}

static int verbs_arrived(struct bench_xport *x, size_t size, uint64_t seq)
{
	if (x->v->op == BENCH_OP_WRITE)
		return ((volatile uint8_t *) x->buf)[size - 1] ==
		       bench_seq_byte(seq);
	return __atomic_load_n(&x->word[0], __ATOMIC_ACQUIRE) >= seq;
}

static void verbs_prepare(struct bench_xport *x, size_t size)
{
	memset(x->buf, 0, size);
}

static bool verbs_target_idle(struct bench_xport *x)
{
	(void) x;
	return true;
}

static void verbs_close(struct bench_xport *x)
{
	if (!x)
		return;
	if (x->id) {
		rdma_disconnect(x->id);
		rdma_destroy_qp(x->id);
		rdma_destroy_id(x->id);
	}
	if (x->buf_mr)
		ibv_dereg_mr(x->buf_mr);
	if (x->word_mr)
		ibv_dereg_mr(x->word_mr);
	if (x->cq)
		ibv_destroy_cq(x->cq);
	if (x->pd)
		ibv_dealloc_pd(x->pd);
	if (x->listen_id)
		rdma_destroy_id(x->listen_id);
	free(x->buf);
	free(x->word);
	free(x);
}

const struct bench_xport_ops bench_verbs_ops = {
	.open = verbs_open,
	.connect = verbs_connect,
	.post = verbs_post,
	.tx_done = verbs_tx_done,
	.arrived = verbs_arrived,
	.prepare = verbs_prepare,
	.target_idle = verbs_target_idle,
	.close = verbs_close,
};
