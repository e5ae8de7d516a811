/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Automatic data progress (FI_PROGRESS_AUTO): work that needs the
 * provider's software moves while the application reads no CQ or counter
 * of the endpoints involved, as OpenSHMEM expects of a transmit endpoint
 * while it waits on its target counter.  One process, two endpoints in
 * one domain; this file never calls the target endpoint between its
 * set-up and the checks, nor the initiator's CQ before the data landed:
 * - a first write to a peer (its connection and key lookup hold it);
 * - an atomic run by the initiator (compare-and-swap loop, 32-bit sums);
 * - a rendezvous send, which the receiver reads and ACKs.
 */
#include <rdma/fi_atomic.h>
#include <stdatomic.h>
#include <unistd.h>

#include "itest_rma.h"

#define WORDS	 16
#define RNDV_LEN (256 * 1024) /* past FI_NRMA_SAR_SIZE: read by the receiver */

static struct rt_node a, b;
static uint64_t write_src = 0x5ca1ab1e0ddba11ULL;
static const uint32_t atomic_add[4] = { 1, 2, 3, 4 };

/* What lands in memory, read with no call of the provider's. */
static void wait_word(uint64_t *word, uint64_t want, const char *what)
{
	int64_t deadline = itest_deadline();

	while (atomic_load((_Atomic uint64_t *) word) != want) {
		itest_check_deadline(deadline, what);
		usleep(200);
	}
}

/* One CQ read at a time, of c alone: itest_progress would read them all. */
static void wait_own(struct itest_cq *c, struct fi_cq_data_entry *e,
		     const char *what)
{
	int64_t deadline = itest_deadline();
	ssize_t n;

	while ((n = fi_cq_read(c->cq, e, 1)) == -FI_EAGAIN) {
		itest_check_deadline(deadline, what);
		usleep(200);
	}
	EXPECT(n == 1, "%s: fi_cq_read %zd (%s)", what, n,
	       fi_strerror((int) -n));
}

static void auto_write(uint64_t *mem, const struct rt_rkey *k)
{
	RT_POST(fi_write(a.ep, &write_src, sizeof(write_src), NULL, a.peer,
			 k->addr, k->key, &write_src),
		"the first write to b");
	wait_word(&mem[0], write_src, "the write, landed with no CQ read");
}

static void auto_atomic(uint64_t *mem, const struct rt_rkey *k)
{
	uint32_t want[4] = { 11, 22, 33, 44 };
	uint64_t words[2];

	memcpy(&mem[2], (uint32_t[4]){ 10, 20, 30, 40 }, sizeof(want));
	RT_POST(fi_atomic(a.ep, atomic_add, 4, NULL, a.peer, k->addr + 16,
			  k->key, FI_UINT32, FI_SUM, (void *) atomic_add),
		"four 32-bit sums");
	memcpy(words, want, sizeof(words));
	wait_word(&mem[2], words[0], "the first two sums");
	wait_word(&mem[3], words[1], "the last two sums");
}

static void auto_rndv(void *sendbuf, void *recvbuf)
{
	struct fi_cq_data_entry e;

	itest_pat_gen(sendbuf, 29, 0, RNDV_LEN);
	memset(recvbuf, 0, RNDV_LEN);
	RT_POST(fi_recv(b.ep, recvbuf, RNDV_LEN, NULL, FI_ADDR_UNSPEC, recvbuf),
		"b's receive");
	RT_POST(fi_send(a.ep, sendbuf, RNDV_LEN, NULL, a.peer, sendbuf),
		"a rendezvous send");
	/* The write and the atomic first, in order: RC ends them so. */
	wait_own(a.tx, &e, "the write's completion");
	EXPECT(e.op_context == &write_src && (e.flags & FI_WRITE),
	       "first: context %p, flags %#" PRIx64, e.op_context, e.flags);
	wait_own(a.tx, &e, "the atomic's completion");
	EXPECT(e.op_context == atomic_add && (e.flags & FI_ATOMIC),
	       "second: context %p, flags %#" PRIx64, e.op_context, e.flags);
	/* Only b's read and ACK end it: progress that b never asked for. */
	wait_own(a.tx, &e, "the rendezvous send's completion");
	EXPECT(e.op_context == sendbuf && (e.flags & FI_SEND),
	       "third: context %p, flags %#" PRIx64, e.op_context, e.flags);
	itest_pat_check(recvbuf, 29, 0, RNDV_LEN,
			"b's buffer, before b read its CQ");
	wait_own(b.rx, &e, "b's receive completion");
	EXPECT(e.op_context == recvbuf && e.len == RNDV_LEN,
	       "receive: context %p, len %zu", e.op_context, e.len);
}

int main(void)
{
	int64_t start = itest_now_ms();
	void *sendbuf, *recvbuf;
	struct fid_mr *mr;
	struct rt_rkey k;
	uint64_t *mem;

	rt_init();
	setvbuf(stdout, NULL, _IOLBF, 0);
	rt_data_progress = FI_PROGRESS_AUTO;
	mem = rt_guarded(WORDS * 8);
	memset(mem, 0, WORDS * 8);
	sendbuf = rt_guarded(RNDV_LEN);
	recvbuf = rt_guarded(RNDV_LEN);
	mr = rt_mr_reg(mem, WORDS * 8, FI_REMOTE_WRITE | FI_REMOTE_READ, 0);
	k = rt_rkey_of(mr, mem, WORDS * 8);
	rt_node_open(&a, NULL, "a");
	rt_node_open(&b, NULL, "b");
	rt_node_insert(&a, &b.name);
	auto_write(mem, &k);
	auto_atomic(mem, &k);
	auto_rndv(sendbuf, recvbuf);
	rt_guard_check(mem, WORDS * 8, "b's memory");
	rt_guard_check(recvbuf, RNDV_LEN, "b's receive buffer");
	rt_node_close(&a);
	rt_node_close(&b);
	RT_OK(fi_close(&mr->fid));
	rt_guarded_free(mem);
	rt_guarded_free(sendbuf);
	rt_guarded_free(recvbuf);
	itest_domain_close();
	rt_pass("nrma_auto_progress", start);
	return 0;
}
