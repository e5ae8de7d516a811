/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * shmem_put_signal and shmem_wait_until between PE 0 and PE 1, as an
 * OpenSHMEM user measures them: the latency of a ping-pong (each side puts
 * with a signal set to the round, the other waits until the signal equals
 * it), and the rate of a stream (PE 0 puts with a signal add of 1, PE 1
 * waits until the signal reaches the count).  The data each signal
 * announces is checked when the wait returns.  Prints one table row per
 * size: size, one-way latency (us), stream rate (thousand puts a second).
 *
 * Usage: nrma_shmem_signal_bench [ITERATIONS]   (2 PEs; default 1000)
 */
#include <inttypes.h>
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_SIZE 65536

static double now_us(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static void check(const unsigned char *buf, size_t size, uint64_t round,
		  const char *what)
{
	if (size && buf[size - 1] != (unsigned char) round) {
		fprintf(stderr,
			"PE %d: %s of %zu bytes, round %" PRIu64
			": last byte %u\n",
			shmem_my_pe(), what, size, round, buf[size - 1]);
		shmem_global_exit(1);
	}
}

/* One-way latency: half a round trip, averaged over iters. */
static double pingpong(unsigned char *src, unsigned char *dst, size_t size,
		       uint64_t *sig, int iters)
{
	int me = shmem_my_pe(), peer = 1 - me;
	double start;

	*sig = 0;
	shmem_barrier_all();
	start = now_us();
	for (uint64_t r = 1; r <= (uint64_t) iters; r++) {
		memset(src, (int) r, size);
		if (me == 0) {
			shmem_putmem_signal(dst, src, size, sig, r,
					    SHMEM_SIGNAL_SET, peer);
			shmem_uint64_wait_until(sig, SHMEM_CMP_EQ, r);
			check(dst, size, r, "pong");
		} else {
			shmem_uint64_wait_until(sig, SHMEM_CMP_EQ, r);
			check(dst, size, r, "ping");
			shmem_putmem_signal(dst, src, size, sig, r,
					    SHMEM_SIGNAL_SET, peer);
		}
	}
	return (now_us() - start) / iters / 2;
}

/* Puts a second, in thousands, as PE 1 sees the last signal. */
static double stream(unsigned char *src, unsigned char *dst, size_t size,
		     uint64_t *sig, int iters)
{
	double start, rate = 0;

	*sig = 0;
	memset(src, iters, size);
	shmem_barrier_all();
	start = now_us();
	if (shmem_my_pe() == 0) {
		for (int i = 0; i < iters; i++)
			shmem_putmem_signal(dst, src, size, sig, 1,
					    SHMEM_SIGNAL_ADD, 1);
		shmem_quiet();
	} else {
		shmem_uint64_wait_until(sig, SHMEM_CMP_EQ, (uint64_t) iters);
		rate = iters / (now_us() - start) * 1e3;
		check(dst, size, (uint64_t) iters, "stream");
	}
	shmem_barrier_all();
	return rate;
}

int main(int argc, char **argv)
{
	int iters = argc > 1 ? atoi(argv[1]) : 1000;
	static uint64_t sig;
	static double rates[8]; /* symmetric: PE 1 puts its rates here */
	unsigned char *src, *dst;
	double lat[8];
	int rows = 0;

	shmem_init();
	if (shmem_n_pes() != 2 || iters < 1) {
		if (shmem_my_pe() == 0)
			fprintf(stderr, "2 PEs and ITERATIONS > 0, please\n");
		shmem_global_exit(2);
	}
	src = shmem_malloc(MAX_SIZE);
	dst = shmem_malloc(MAX_SIZE);
	for (size_t size = 8; size <= MAX_SIZE; size *= 8, rows++) {
		lat[rows] = pingpong(src, dst, size, &sig, iters);
		rates[rows] = stream(src, dst, size, &sig, iters);
		/* PE 1 measured the stream: PE 0 prints it. */
		if (shmem_my_pe() == 1)
			shmem_double_p(&rates[rows], rates[rows], 0);
		shmem_barrier_all();
	}
	if (shmem_my_pe() == 0) {
		printf("%8s %12s %14s\n", "bytes", "latency_us", "kputs_per_s");
		for (int i = 0; i < rows; i++)
			printf("%8zu %12.2f %14.1f\n", (size_t) 8 << (3 * i),
			       lat[i], rates[i]);
	}
	shmem_free(src);
	shmem_free(dst);
	shmem_finalize();
	return 0;
}
