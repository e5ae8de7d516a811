/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * nrma_mpi_bench: what an MPI application sees of the stack under it.
 * Two ranks: ping-pong latency, streaming bandwidth, and the rates of
 * 8-byte MPI_Put, MPI_Get and MPI_Accumulate in a passive-target epoch,
 * each printed by rank 0 as "NAME VALUE UNIT".  Each step checks what it
 * moved, so a stack that drops data fails instead of looking fast.
 * contrib/nrma-bench --mpi runs it over nrma, verbs;ofi_rxm and UCX.
 *
 *   mpirun -np 2 ... nrma_mpi_bench [iterations]
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <mpi.h>

#define BW_SIZE	  65536
#define BW_WINDOW 16
#define RMA_BATCH 64 /* operations between flushes */
#define WARMUP	  100

static int rank;

static void fail(const char *what)
{
	fprintf(stderr, "nrma_mpi_bench: rank %d: %s\n", rank, what);
	MPI_Abort(MPI_COMM_WORLD, 1);
}

static void report(const char *name, double value, const char *unit)
{
	if (!rank)
		printf("%-8s %12.2f %s\n", name, value, unit);
}

/* Half a round trip of 8 bytes, in microseconds. */
static void bench_latency(long iters)
{
	uint64_t msg = 0;
	double start = 0;
	int peer = !rank;

	for (long i = 0; i < WARMUP + iters; i++) {
		if (i == WARMUP) {
			MPI_Barrier(MPI_COMM_WORLD);
			start = MPI_Wtime();
		}
		if (!rank) {
			msg = (uint64_t) i;
			MPI_Send(&msg, 1, MPI_UINT64_T, peer, 0,
				 MPI_COMM_WORLD);
			MPI_Recv(&msg, 1, MPI_UINT64_T, peer, 0, MPI_COMM_WORLD,
				 MPI_STATUS_IGNORE);
		} else {
			MPI_Recv(&msg, 1, MPI_UINT64_T, peer, 0, MPI_COMM_WORLD,
				 MPI_STATUS_IGNORE);
			MPI_Send(&msg, 1, MPI_UINT64_T, peer, 0,
				 MPI_COMM_WORLD);
		}
		if (msg != (uint64_t) i)
			fail("ping-pong: a message came back changed");
	}
	report("lat-8", (MPI_Wtime() - start) * 1e6 / iters / 2, "usec");
}

/* Windows of 64 KiB messages from rank 0, each window acknowledged. */
static void bench_bandwidth(long iters)
{
	static char buf[BW_WINDOW][BW_SIZE];
	MPI_Request req[BW_WINDOW];
	long windows = iters / BW_WINDOW + 1;
	double start;
	char ack = 0;

	MPI_Barrier(MPI_COMM_WORLD);
	start = MPI_Wtime();
	for (long w = 0; w < windows; w++) {
		for (int i = 0; i < BW_WINDOW; i++) {
			if (!rank) {
				buf[i][0] = buf[i][BW_SIZE - 1] =
					(char) (w + i);
				MPI_Isend(buf[i], BW_SIZE, MPI_CHAR, 1, 1,
					  MPI_COMM_WORLD, &req[i]);
			} else {
				MPI_Irecv(buf[i], BW_SIZE, MPI_CHAR, 0, 1,
					  MPI_COMM_WORLD, &req[i]);
			}
		}
		MPI_Waitall(BW_WINDOW, req, MPI_STATUSES_IGNORE);
		for (int i = 0; rank && i < BW_WINDOW; i++)
			if (buf[i][0] != (char) (w + i) ||
			    buf[i][BW_SIZE - 1] != (char) (w + i))
				fail("bandwidth: a message arrived changed");
		if (rank)
			MPI_Send(&ack, 1, MPI_CHAR, 0, 2, MPI_COMM_WORLD);
		else
			MPI_Recv(&ack, 1, MPI_CHAR, 1, 2, MPI_COMM_WORLD,
				 MPI_STATUS_IGNORE);
	}
	report("bw-64k",
	       (double) windows * BW_WINDOW * BW_SIZE / 1e6 /
		       (MPI_Wtime() - start),
	       "MB/s");
}

enum rma_op { RMA_PUT, RMA_GET, RMA_ACC };

static void rma_issue(enum rma_op op, int64_t *local, long i, MPI_Win win)
{
	MPI_Aint disp = i % RMA_BATCH;

	*local = 1;
	if (op == RMA_PUT)
		MPI_Put(local, 1, MPI_INT64_T, 1, disp, 1, MPI_INT64_T, win);
	else if (op == RMA_GET)
		MPI_Get(local, 1, MPI_INT64_T, 1, disp, 1, MPI_INT64_T, win);
	else
		MPI_Accumulate(local, 1, MPI_INT64_T, 1, disp, 1, MPI_INT64_T,
			       MPI_SUM, win);
}

/*
 * Rank 0 issues iters operations on rank 1's window, flushing every
 * RMA_BATCH; rank 1 then checks its window: every word 1 after puts, 7
 * after gets (read back), 1 + the accumulates on each word.
 */
static void bench_rma(enum rma_op op, const char *name, long iters)
{
	static const int64_t seed[] = {
		[RMA_PUT] = 0, [RMA_GET] = 7, [RMA_ACC] = 1
	};
	int64_t *base, local[RMA_BATCH];
	MPI_Win win;
	double start;

	/* Memory of its own, not MPI_Win_allocate's: osc/rdma would share
	 * that between ranks on one host, and never use the network. */
	MPI_Alloc_mem(RMA_BATCH * sizeof(int64_t), MPI_INFO_NULL, &base);
	MPI_Win_create(base, RMA_BATCH * sizeof(int64_t), sizeof(int64_t),
		       MPI_INFO_NULL, MPI_COMM_WORLD, &win);
	for (int i = 0; i < RMA_BATCH; i++)
		base[i] = seed[op];
	MPI_Barrier(MPI_COMM_WORLD);
	start = MPI_Wtime();
	if (!rank) {
		MPI_Win_lock_all(0, win);
		for (long i = 0; i < iters; i++) {
			rma_issue(op, &local[i % RMA_BATCH], i, win);
			if (i % RMA_BATCH == RMA_BATCH - 1 || i + 1 == iters)
				MPI_Win_flush(1, win);
		}
		MPI_Win_unlock_all(win);
		for (long i = 0; op == RMA_GET && i < RMA_BATCH && i < iters;
		     i++)
			if (local[i] != 7)
				fail("get: read a value rank 1 never held");
	}
	report(name, iters / (MPI_Wtime() - start), "ops/s");
	MPI_Barrier(MPI_COMM_WORLD);
	MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, win);
	for (long i = 0; rank && i < RMA_BATCH && i < iters; i++) {
		int64_t want = op == RMA_PUT ? 1 :
			       op == RMA_GET ? 7 :
					       1 + (iters - i + RMA_BATCH - 1) /
							       RMA_BATCH;

		if (base[i] != want)
			fail("one-sided: the target's window is wrong");
	}
	MPI_Win_unlock(rank, win);
	MPI_Win_free(&win);
	MPI_Free_mem(base);
}

int main(int argc, char **argv)
{
	long iters = argc > 1 ? strtol(argv[1], NULL, 0) : 10000;
	int size;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (size != 2 || iters < 1)
		fail("usage: mpirun -np 2 nrma_mpi_bench [iterations >= 1]");
	bench_latency(iters);
	bench_bandwidth(iters);
	bench_rma(RMA_PUT, "put-8", iters);
	bench_rma(RMA_GET, "get-8", iters);
	bench_rma(RMA_ACC, "acc-8", iters);
	MPI_Finalize();
	return 0;
}
