/* SPDX-License-Identifier: BSD-2-Clause */
/* nrma_bench's output: tables, targets, CSV and plots of one run. */
#ifndef NRMA_BENCH_OUT_H
#define NRMA_BENCH_OUT_H

#include "nrma_bench.h"

struct bench_report {
	const struct bench_variant *variants;
	size_t nvariants;
	const int *status;   /* 0 ran, < 0 not chosen, 77 no provider, failed */
	const size_t *fails; /* rounds in which each failed */
	const struct bench_step *steps;
	size_t nsteps;
	const struct bench_result *res; /* [variant * stride + step] */
	size_t stride;
	size_t rounds;		/* res holds medians of this many rounds */
	const char *csv, *plot; /* file, and prefix of the plots' files */
};

/* A line on stderr: step i of n of variant v is done. */
void bench_progress(const struct bench_variant *v, const struct bench_step *st,
		    size_t i, size_t n);

/* Tables and targets on stdout, then CSV and plots; < 0 on failure. */
int bench_report(const struct bench_report *r);

#endif /* NRMA_BENCH_OUT_H */
