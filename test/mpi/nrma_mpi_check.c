/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * MPI over nrma with the system's MPI (Debian's Open MPI 4.1.4); "make
 * check" runs it through both of Open MPI's paths to libfabric
 * (test/run-tests.sh), at 2 and 4 ranks on one host and 4 over two:
 *
 *   nrma_mpi_check msg   two-sided, through the ofi MTL:
 *     - a ring of MPI_Sendrecv from 1 byte to 4 MiB (eager and rendezvous),
 *       each byte checked;
 *     - MPI_ANY_SOURCE and MPI_ANY_TAG receives of synchronous sends, each
 *       reporting its true source and tag;
 *     - MPI_Probe and MPI_Get_count before the receive;
 *     - MPI_Allreduce, a 4 MiB MPI_Bcast and MPI_Alltoall, checked.
 *   nrma_mpi_check rma   one-sided, through btl ofi and osc rdma:
 *     - MPI_Put between fences from every rank to every rank;
 *     - MPI_Get under a shared lock;
 *     - MPI_Accumulate(MPI_SUM) and MPI_Fetch_and_op from every rank, and
 *       MPI_Compare_and_swap from every other rank, on rank 0's words,
 *       exact.
 *
 * Usage: nrma_mpi_check msg|rma [HOSTS]; with HOSTS, the ranks must run
 * on that many hosts (by MPI_Get_processor_name).
 * Exit status 0 iff every check passed; a failed check prints "FAIL: ..."
 * and aborts the job.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "nrma_mpi_hosts.h"

#define RING_MAX   (4u << 20)
#define BCAST_N	   (1u << 20) /* ints */
#define A2A_N	   1000	      /* ints to each rank */
#define WIN_N	   4096	      /* longs each rank puts to each rank */
#define ACC_ROUNDS 100

static int rank, nranks;

static void fail(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "FAIL: rank %d: ", rank);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	MPI_Abort(MPI_COMM_WORLD, 1);
}

static void *xmalloc(size_t len)
{
	void *p = malloc(len);

	if (!p)
		fail("out of memory");
	return p;
}

static char ring_byte(int from, size_t len)
{
	return (char) (from * 31 + len);
}

static void check_ring(void)
{
	int next = (rank + 1) % nranks, prev = (rank + nranks - 1) % nranks;

	for (size_t len = 1; len <= RING_MAX; len *= 4) {
		char *out = xmalloc(len), *in = xmalloc(len);

		memset(out, ring_byte(rank, len), len);
		memset(in, 0, len);
		MPI_Sendrecv(out, (int) len, MPI_CHAR, next, 7, in, (int) len,
			     MPI_CHAR, prev, 7, MPI_COMM_WORLD,
			     MPI_STATUS_IGNORE);
		for (size_t i = 0; i < len; i++)
			if (in[i] != ring_byte(prev, len))
				fail("ring of %zu bytes: byte %zu wrong", len,
				     i);
		free(out);
		free(in);
	}
}

/* Every other rank sends rank 0 three synchronous messages, tags 3..1. */
static void check_any_source(void)
{
	if (rank) {
		for (int tag = 3; tag > 0; tag--) {
			int v = rank * 100 + tag;

			MPI_Ssend(&v, 1, MPI_INT, 0, tag, MPI_COMM_WORLD);
		}
		return;
	}
	for (int k = 0; k < 3 * (nranks - 1); k++) {
		MPI_Status st;
		int v;

		MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG,
			 MPI_COMM_WORLD, &st);
		if (v != st.MPI_SOURCE * 100 + st.MPI_TAG)
			fail("%d arrived as from %d with tag %d", v,
			     st.MPI_SOURCE, st.MPI_TAG);
	}
}

static void check_probe(void)
{
	int v[A2A_N], count;
	MPI_Status st;

	if (rank == 1) {
		for (int i = 0; i < A2A_N; i++)
			v[i] = i;
		MPI_Send(v, A2A_N, MPI_INT, 0, 42, MPI_COMM_WORLD);
	} else if (rank == 0) {
		MPI_Probe(1, 42, MPI_COMM_WORLD, &st);
		MPI_Get_count(&st, MPI_INT, &count);
		if (count != A2A_N)
			fail("MPI_Probe counted %d ints of %d", count, A2A_N);
		MPI_Recv(v, count, MPI_INT, 1, 42, MPI_COMM_WORLD,
			 MPI_STATUS_IGNORE);
		if (v[A2A_N - 1] != A2A_N - 1)
			fail("the probed message's data");
	}
}

static void check_collectives(void)
{
	long mine = rank + 1, sum = 0;
	int *big = xmalloc(BCAST_N * sizeof(int));
	int *a = xmalloc((size_t) nranks * A2A_N * sizeof(int));
	int *b = xmalloc((size_t) nranks * A2A_N * sizeof(int));

	MPI_Allreduce(&mine, &sum, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
	if (sum != (long) nranks * (nranks + 1) / 2)
		fail("MPI_Allreduce summed %ld", sum);
	for (unsigned i = 0; i < BCAST_N; i++)
		big[i] = rank ? 0 : (int) (i ^ 0x5a5a);
	MPI_Bcast(big, BCAST_N, MPI_INT, 0, MPI_COMM_WORLD);
	for (unsigned i = 0; i < BCAST_N; i++)
		if (big[i] != (int) (i ^ 0x5a5a))
			fail("MPI_Bcast: int %u", i);
	for (int i = 0; i < nranks * A2A_N; i++)
		a[i] = rank * 1000000 + i;
	MPI_Alltoall(a, A2A_N, MPI_INT, b, A2A_N, MPI_INT, MPI_COMM_WORLD);
	for (int p = 0; p < nranks; p++)
		for (int i = 0; i < A2A_N; i++)
			if (b[p * A2A_N + i] != p * 1000000 + rank * A2A_N + i)
				fail("MPI_Alltoall: from %d, int %d", p, i);
	free(big);
	free(a);
	free(b);
}

static void check_msg(void)
{
	check_ring();
	check_any_source();
	/* The probed message must not meet an MPI_ANY_SOURCE receive. */
	MPI_Barrier(MPI_COMM_WORLD);
	check_probe();
	check_collectives();
}

static long put_value(int from, int i)
{
	return from * 100000L + i;
}

/* Each rank puts WIN_N longs into its own slot of every rank's window. */
static void check_put_get(long *mem, MPI_Win win)
{
	long *src = xmalloc(WIN_N * sizeof(long));
	long *got = xmalloc(WIN_N * sizeof(long));
	int peer = (rank + 1) % nranks;

	for (int i = 0; i < WIN_N; i++)
		src[i] = put_value(rank, i);
	MPI_Win_fence(0, win);
	for (int t = 0; t < nranks; t++)
		MPI_Put(src, WIN_N, MPI_LONG, t, (MPI_Aint) rank * WIN_N, WIN_N,
			MPI_LONG, win);
	MPI_Win_fence(0, win);
	for (int p = 0; p < nranks; p++)
		for (int i = 0; i < WIN_N; i++)
			if (mem[p * WIN_N + i] != put_value(p, i))
				fail("MPI_Put from %d: long %d is %ld", p, i,
				     mem[p * WIN_N + i]);
	MPI_Win_lock(MPI_LOCK_SHARED, peer, 0, win);
	MPI_Get(got, WIN_N, MPI_LONG, peer, (MPI_Aint) peer * WIN_N, WIN_N,
		MPI_LONG, win);
	MPI_Win_unlock(peer, win);
	for (int i = 0; i < WIN_N; i++)
		if (got[i] != put_value(peer, i))
			fail("MPI_Get from %d: long %d is %ld", peer, i,
			     got[i]);
	/* check_atomics() zeroes rank 0's first words: not under a get. */
	MPI_Barrier(MPI_COMM_WORLD);
	free(src);
	free(got);
}

/*
 * Rank r > 0 swaps r into rank 0's word 2 once it holds r - 1: a chain.
 * Not rank 0 itself: Open MPI 4.1.4's btl ofi crashes on a compare-and-swap
 * into the caller's own window (a NULL handle in mca_btl_ofi_acswap).
 */
static void cas_chain(MPI_Win win)
{
	long swap = rank, expected = rank - 1, result;

	do {
		MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
		MPI_Compare_and_swap(&swap, &expected, &result, MPI_LONG, 0, 2,
				     win);
		MPI_Win_unlock(0, win);
		if (result < 0 || result >= nranks)
			fail("MPI_Compare_and_swap found %ld", result);
	} while (result != expected);
}

/* Rank 0's words 0..2: accumulated, fetched and added, swapped. */
static void check_atomics(long *mem, MPI_Win win)
{
	long one = 1, old = -1;

	if (rank == 0) {
		MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win);
		mem[0] = mem[1] = mem[2] = 0;
		MPI_Win_unlock(0, win);
	}
	MPI_Barrier(MPI_COMM_WORLD);
	for (int k = 0; k < ACC_ROUNDS; k++) {
		MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
		MPI_Accumulate(&one, 1, MPI_LONG, 0, 0, 1, MPI_LONG, MPI_SUM,
			       win);
		MPI_Win_unlock(0, win);
	}
	MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
	MPI_Fetch_and_op(&one, &old, MPI_LONG, 0, 1, MPI_SUM, win);
	MPI_Win_unlock(0, win);
	if (old < 0 || old >= nranks)
		fail("MPI_Fetch_and_op fetched %ld", old);
	if (rank)
		cas_chain(win);
	MPI_Barrier(MPI_COMM_WORLD);
	if (rank)
		return;
	MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win);
	if (mem[0] != (long) ACC_ROUNDS * nranks || mem[1] != nranks ||
	    mem[2] != nranks - 1)
		fail("rank 0's words: %ld, %ld, %ld", mem[0], mem[1], mem[2]);
	MPI_Win_unlock(0, win);
}

static void check_rma(void)
{
	size_t len = (size_t) nranks * WIN_N * sizeof(long);
	long *mem = xmalloc(len);
	MPI_Win win;

	memset(mem, 0, len);
	MPI_Win_create(mem, (MPI_Aint) len, sizeof(long), MPI_INFO_NULL,
		       MPI_COMM_WORLD, &win);
	check_put_get(mem, win);
	check_atomics(mem, win);
	MPI_Win_free(&win);
	free(mem);
}

int main(int argc, char **argv)
{
	const char *what = argc > 1 ? argv[1] : "";
	int want_hosts = argc > 2 ? atoi(argv[2]) : 0, hosts;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nranks);
	if (nranks < 2)
		fail("needs 2 ranks or more");
	hosts = nrma_mpi_count_hosts();
	if (want_hosts && hosts != want_hosts)
		fail("the ranks run on %d hosts, not %d", hosts, want_hosts);
	if (!strcmp(what, "msg"))
		check_msg();
	else if (!strcmp(what, "rma"))
		check_rma();
	else
		fail("usage: nrma_mpi_check msg|rma [HOSTS]");
	MPI_Barrier(MPI_COMM_WORLD);
	if (rank == 0)
		printf("nrma_mpi_check %s: all checks passed on %d ranks, "
		       "%d host%s\n",
		       what, nranks, hosts, hosts == 1 ? "" : "s");
	MPI_Finalize();
	return 0;
}
