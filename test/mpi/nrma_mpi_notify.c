/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * MPI-5.1 notified RMA (MPI_Put_notify and the notification counters)
 * checked end to end: rank 0 is the target, every other rank an origin.
 * Needs an MPI whose mpi.h declares MPI_Put_notify; test/mpi/run.sh runs
 * it (see README.md, "One-sided MPI").
 *
 *   1. First contact: right after a barrier each origin makes its first
 *      notified puts while the target does nothing but poll
 *      MPI_Win_get_notify_value.  Each counter ends at exactly the number
 *      of puts made to it, never ahead of the data: whenever a counter
 *      reads v, at least v of its puts are in the window.
 *   2. MPI_Win_reset_notify_value returns the old value exactly, also
 *      while puts keep landing: the values it returns plus what is left
 *      sum to the puts made.
 *   3. A notification index outside the set is an error at the origin and
 *      at the target.
 *   4. Rates of notified puts, printed as "rate: N notified puts/s ...":
 *      pipelined (one flush at the end) and flushed (a flush after each).
 *
 * Usage: nrma_mpi_notify [HOSTS]: with HOSTS, the ranks must run on that
 * many hosts (by MPI_Get_processor_name).
 *
 * Exit status 0 iff every check passed; a failed check prints
 * "FAIL: ..." and aborts the job.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mpi.h>

#include "nrma_mpi_hosts.h"

#define IDX_PER_ORIGIN 4     /* each origin spreads its puts over these */
#define PUTS	       500   /* per index, in phase 1 */
#define STREAM_PUTS    5000  /* per origin, in phase 2 */
#define RATE_PUTS      20000 /* per origin, in phase 4 */
#define FLUSH_EVERY    64    /* puts between flushes */
#define WAIT_S	       120   /* a counter that stops moving this long fails */

static int rank, nprocs;

static void fail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "FAIL: rank %d: ", rank);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	MPI_Abort(MPI_COMM_WORLD, 1);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void check_mpi(int ret, const char *what)
{
	if (ret != MPI_SUCCESS)
		fail("%s returned %d", what, ret);
}

static int origins(void)
{
	return nprocs - 1;
}

/* Origin o (1..nprocs-1) owns indices (o-1)*IDX_PER_ORIGIN + j. */
static int index_of(int origin, int j)
{
	return (origin - 1) * IDX_PER_ORIGIN + j;
}

/* Where put i to index idx lands, and the value it writes there. */
static MPI_Aint slot_of(int idx, int i)
{
	return (MPI_Aint) idx * PUTS + i;
}

static uint64_t value_of(int idx, int i)
{
	return ((uint64_t) (idx + 1) << 32) | (uint64_t) (i + 1);
}

static MPI_Count notify_value(MPI_Win win, int idx)
{
	MPI_Count v;

	check_mpi(MPI_Win_get_notify_value(win, idx, &v),
		  "MPI_Win_get_notify_value");
	return v;
}

/* The puts of index idx that are in the window already. */
static MPI_Count landed(const volatile uint64_t *base, int idx)
{
	MPI_Count n = 0;

	for (int i = 0; i < PUTS; i++)
		n += base[slot_of(idx, i)] == value_of(idx, i);
	return n;
}

/*
 * Polls counter idx until it reads want; fails if it passes want, goes
 * backwards, runs ahead of the data (when base is given) or stalls.
 */
static void poll_until(MPI_Win win, int idx, MPI_Count want,
		       const volatile uint64_t *base)
{
	MPI_Count prev = 0, v;
	double moved = now_s();

	while ((v = notify_value(win, idx)) != want) {
		if (v > want || v < prev)
			fail("counter %d went from %lld to %lld (want %lld)",
			     idx, (long long) prev, (long long) v,
			     (long long) want);
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (base && landed(base, idx) < v)
			fail("counter %d reads %lld with %lld puts landed", idx,
			     (long long) v, (long long) landed(base, idx));
		if (v != prev)
			moved = now_s();
		else if (now_s() - moved > WAIT_S)
			fail("counter %d stayed at %lld of %lld for %d s", idx,
			     (long long) v, (long long) want, WAIT_S);
		prev = v;
	}
}

static void expect_value(MPI_Win win, int idx, MPI_Count want, const char *when)
{
	MPI_Count v = notify_value(win, idx);

	if (v != want)
		fail("counter %d is %lld %s, want %lld", idx, (long long) v,
		     when, (long long) want);
}

static void reset_expect(MPI_Win win, int idx, MPI_Count want)
{
	MPI_Count old;

	check_mpi(MPI_Win_reset_notify_value(win, idx, &old),
		  "MPI_Win_reset_notify_value");
	if (old != want)
		fail("reset of counter %d returned %lld, want %lld", idx,
		     (long long) old, (long long) want);
	expect_value(win, idx, 0, "after its reset");
}

/* Puts value_of(idx, i) for i < n to idx, round robin over the indices. */
static void origin_puts(MPI_Win win, const uint64_t *values, int n)
{
	for (int i = 0, sent = 0; i < n; i++) {
		for (int j = 0; j < IDX_PER_ORIGIN; j++) {
			int idx = index_of(rank, j);

			check_mpi(MPI_Put_notify(&values[idx * PUTS + i], 1,
						 MPI_UINT64_T, 0,
						 slot_of(idx, i), 1,
						 MPI_UINT64_T, idx, win),
				  "MPI_Put_notify");
			if (++sent % FLUSH_EVERY == 0)
				check_mpi(MPI_Win_flush(0, win),
					  "MPI_Win_flush");
		}
	}
	check_mpi(MPI_Win_flush(0, win), "MPI_Win_flush");
}

static void phase_first_contact(MPI_Win win, uint64_t *base,
				const uint64_t *values)
{
	int nidx = origins() * IDX_PER_ORIGIN;

	MPI_Barrier(MPI_COMM_WORLD);
	if (rank) {
		origin_puts(win, values, PUTS);
	} else {
		/* From the barrier on: MPI_Win_get_notify_value only. */
		for (int idx = 0; idx < nidx; idx++)
			poll_until(win, idx, PUTS, base);
	}
	MPI_Barrier(MPI_COMM_WORLD);
	if (rank)
		return;
	for (int idx = 0; idx < nidx; idx++) {
		expect_value(win, idx, PUTS, "once all origins flushed");
		if (landed(base, idx) != PUTS)
			fail("index %d: %lld of %d puts in the window", idx,
			     (long long) landed(base, idx), PUTS);
		reset_expect(win, idx, PUTS);
	}
	printf("first contact: %d origins x %d indices x %d puts counted "
	       "exactly, never ahead of the data; resets exact\n",
	       origins(), IDX_PER_ORIGIN, PUTS);
}

/* The target resets while puts land: what it took plus the rest. */
static void phase_reset_stream(MPI_Win win, const uint64_t *values)
{
	MPI_Count taken[nprocs], old;
	int resets = 0;

	MPI_Barrier(MPI_COMM_WORLD);
	if (rank) {
		for (int i = 0; i < STREAM_PUTS; i++) {
			check_mpi(MPI_Put_notify(&values[0], 1, MPI_UINT64_T, 0,
						 0, 1, MPI_UINT64_T,
						 index_of(rank, 0), win),
				  "MPI_Put_notify");
			if ((i + 1) % FLUSH_EVERY == 0)
				check_mpi(MPI_Win_flush(0, win),
					  "MPI_Win_flush");
		}
		check_mpi(MPI_Win_flush(0, win), "MPI_Win_flush");
		MPI_Barrier(MPI_COMM_WORLD);
		return;
	}
	memset(taken, 0, sizeof(taken));
	for (int done = 0; done < origins();) {
		done = 0;
		for (int o = 1; o < nprocs; o++) {
			check_mpi(MPI_Win_reset_notify_value(
					  win, index_of(o, 0), &old),
				  "MPI_Win_reset_notify_value");
			taken[o] += old;
			resets += old != 0;
			if (taken[o] > STREAM_PUTS)
				fail("resets of counter %d took %lld of %d",
				     index_of(o, 0), (long long) taken[o],
				     STREAM_PUTS);
			done += taken[o] == STREAM_PUTS;
		}
	}
	MPI_Barrier(MPI_COMM_WORLD);
	for (int o = 1; o < nprocs; o++)
		expect_value(win, index_of(o, 0), 0,
			     "after every put was taken by a reset");
	printf("reset under a stream: %d origins x %d puts, %d non-zero "
	       "resets, sums exact\n",
	       origins(), STREAM_PUTS, resets);
}

static void expect_error(int ret, const char *what)
{
	if (ret == MPI_SUCCESS)
		fail("%s with index outside the set succeeded", what);
}

static void phase_bad_index(MPI_Win win, const uint64_t *values)
{
	int nidx = origins() * IDX_PER_ORIGIN, bad[] = { nidx, -1 };
	MPI_Count v;

	for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
		if (rank) {
			expect_error(MPI_Put_notify(&values[0], 1, MPI_UINT64_T,
						    0, 0, 1, MPI_UINT64_T,
						    bad[k], win),
				     "MPI_Put_notify");
		} else {
			expect_error(MPI_Win_get_notify_value(win, bad[k], &v),
				     "MPI_Win_get_notify_value");
			expect_error(
				MPI_Win_reset_notify_value(win, bad[k], &v),
				"MPI_Win_reset_notify_value");
		}
	}
	check_mpi(MPI_Win_flush_all(win), "MPI_Win_flush_all");
	MPI_Barrier(MPI_COMM_WORLD);
	if (!rank) {
		for (int idx = 0; idx < nidx; idx++)
			expect_value(win, idx, 0, "after refused puts");
		printf("indices %d and -1: errors at origin and target, "
		       "no counter moved\n",
		       nidx);
	}
}

/*
 * Each origin times its puts from the barrier to its flush's return (then
 * every put and its notification are at the target); the rate is all
 * origins' puts over the slowest origin's time.  Pipelined: one flush at
 * the end; flushed: a flush after every put, one round trip each.
 */
static void phase_rate(MPI_Win win, const uint64_t *values, int puts,
		       int flush_every, const char *what)
{
	int idx = index_of(rank, 0);
	double took = 0, slowest;

	MPI_Barrier(MPI_COMM_WORLD);
	if (rank) {
		double start = now_s();

		for (int i = 0; i < puts; i++) {
			check_mpi(MPI_Put_notify(&values[0], 1, MPI_UINT64_T, 0,
						 slot_of(idx, i % PUTS), 1,
						 MPI_UINT64_T, idx, win),
				  "MPI_Put_notify");
			if ((i + 1) % flush_every == 0)
				check_mpi(MPI_Win_flush(0, win),
					  "MPI_Win_flush");
		}
		check_mpi(MPI_Win_flush(0, win), "MPI_Win_flush");
		took = now_s() - start;
	} else {
		for (int o = 1; o < nprocs; o++)
			poll_until(win, index_of(o, 0), puts, NULL);
		for (int o = 1; o < nprocs; o++)
			reset_expect(win, index_of(o, 0), puts);
	}
	MPI_Reduce(&took, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
	if (!rank)
		printf("rate: %.0f notified puts/s %s (%d origins x %d puts "
		       "of 8 bytes)\n",
		       origins() * puts / slowest, what, origins(), puts);
	MPI_Barrier(MPI_COMM_WORLD);
}

int main(int argc, char **argv)
{
	int want_hosts = argc > 1 ? atoi(argv[1]) : 0, hosts, nidx;
	MPI_Aint bytes;
	uint64_t *base = NULL, *values;
	MPI_Win win;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
	if (nprocs < 2)
		fail("needs at least 2 ranks");
	hosts = nrma_mpi_count_hosts();
	if (want_hosts && hosts != want_hosts)
		fail("the ranks run on %d hosts, not %d", hosts, want_hosts);
	nidx = origins() * IDX_PER_ORIGIN;
	bytes = (MPI_Aint) nidx * PUTS * sizeof(uint64_t);
	values = malloc(bytes);
	if (!values)
		fail("out of memory");
	for (int idx = 0; idx < nidx; idx++)
		for (int i = 0; i < PUTS; i++)
			values[slot_of(idx, i)] = value_of(idx, i);
	/*
	 * MPI_Win_create, not MPI_Win_allocate: with several ranks on a node
	 * the branch's osc/rdma puts allocated windows in one shared segment
	 * and registers each rank's part for notification at the node
	 * leader's address, which fails on the other ranks and sends the
	 * whole window to the atomics fallback.
	 */
	if (posix_memalign((void **) &base, 4096, bytes))
		fail("out of memory");
	memset(base, 0, bytes);
	check_mpi(MPI_Win_create(base, bytes, sizeof(uint64_t), MPI_INFO_NULL,
				 MPI_COMM_WORLD, &win),
		  "MPI_Win_create");
	MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
	check_mpi(MPI_Win_set_num_notify(win, MPI_INFO_NULL, nidx),
		  "MPI_Win_set_num_notify");
	check_mpi(MPI_Win_lock_all(MPI_MODE_NOCHECK, win), "MPI_Win_lock_all");
	phase_first_contact(win, base, values);
	phase_reset_stream(win, values);
	phase_bad_index(win, values);
	phase_rate(win, values, RATE_PUTS, RATE_PUTS, "pipelined");
	phase_rate(win, values, RATE_PUTS / 10, 1, "flushed");
	check_mpi(MPI_Win_unlock_all(win), "MPI_Win_unlock_all");
	MPI_Win_free(&win);
	free(base);
	free(values);
	if (!rank)
		printf("notified puts: %d\nPASS: %d ranks, %d host%s\n",
		       origins() * (IDX_PER_ORIGIN * PUTS + STREAM_PUTS +
				    RATE_PUTS + RATE_PUTS / 10),
		       nprocs, hosts, hosts == 1 ? "" : "s");
	MPI_Finalize();
	return 0;
}
