/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * nrma_bench's output.  Every figure is also shown as a ratio to the
 * variant it is compared with in the same run, because absolute figures
 * say more about the machine (an emulated VM, say) than about nrma.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "nrma_bench_out.h"

static const char *const pattern_names[BENCH_PATTERNS] = { "latency", "stream",
							   "rate" };

/* A performance target of issue 11: variant against vs, one figure. */
struct bench_target {
	const char *what, *variant, *vs;
	enum bench_pattern pattern;
	size_t size;
	double want;
	bool at_most; /* latency: lower is better */
};

static const struct bench_target bench_targets[] = {
	{ "notified-write rate", "notify", "raw-pair", BENCH_STREAM, 8, 1.0 },
	{ "notified-write latency", "notify", "raw-pair", BENCH_LAT, 8, 1.1,
	  true },
	{ "notified-write bandwidth 1 MiB", "notify", "raw-write", BENCH_STREAM,
	  1u << 20, 0.95 },
	{ "notified-read rate", "notify-read", "raw-readpair", BENCH_STREAM, 8,
	  1.0 },
	{ "plain-write rate", "write", "raw-write", BENCH_STREAM, 8, 0.95 },
	/* The same, the target spinning on its counter or data all along. */
	{ "notified-write rate, busy target", "notify-busy", "raw-pair-busy",
	  BENCH_STREAM, 8, 1.0 },
	{ "notified-read rate, busy target", "notify-read-busy",
	  "raw-readpair-busy", BENCH_STREAM, 8, 1.0 },
	{ "plain-write rate, busy target", "write-busy", "raw-write-busy",
	  BENCH_STREAM, 8, 0.95 },
	{ "coalesced notified-write rate", "notify-coalesce", "raw-write",
	  BENCH_STREAM, 8, 0.95 },
	{ "send latency 8 B", "send", "rxm-send", BENCH_LAT, 8, 1.0, true },
	{ "send latency 4 KiB", "send", "rxm-send", BENCH_LAT, 4096, 1.0,
	  true },
	{ "send latency 64 KiB", "send", "rxm-send", BENCH_LAT, 65536, 1.0,
	  true },
	{ "tsend latency 8 B", "tsend", "rxm-tsend", BENCH_LAT, 8, 1.0, true },
	{ "tsend latency 4 KiB", "tsend", "rxm-tsend", BENCH_LAT, 4096, 1.0,
	  true },
	{ "tsend latency 64 KiB", "tsend", "rxm-tsend", BENCH_LAT, 65536, 1.0,
	  true },
};

void bench_progress(const struct bench_variant *v, const struct bench_step *st,
		    size_t i, size_t n)
{
	if (isatty(STDERR_FILENO))
		fprintf(stderr, "\r\033[Knrma_bench: %s %zu/%zu (%s %zu B)%s",
			v->name, i, n, pattern_names[st->pattern], st->size,
			i == n ? "\n" : "");
	else if (i == n)
		fprintf(stderr, "nrma_bench: %s: %zu steps done\n", v->name, n);
}

/* usec for half a round trip, ops/s, or MB/s for stream bandwidth. */
static double step_value(const struct bench_step *st,
			 const struct bench_result *res, bool bandwidth)
{
	if (res->failed || res->secs <= 0)
		return NAN;
	if (st->pattern == BENCH_LAT)
		return res->secs / (double) st->iters / 2 * 1e6;
	if (bandwidth)
		return (double) (st->size * st->iters) / res->secs / 1e6;
	return (double) st->iters / res->secs;
}

static int variant_index(const struct bench_report *r, const char *name)
{
	for (size_t v = 0; name && v < r->nvariants; v++)
		if (!strcmp(r->variants[v].name, name) && !r->status[v])
			return (int) v;
	return -1;
}

static double value_of(const struct bench_report *r, int v, size_t step,
		       bool bandwidth)
{
	return v < 0 ? NAN :
		       step_value(&r->steps[step],
				  &r->res[(size_t) v * r->stride + step],
				  bandwidth);
}

static int step_index(const struct bench_report *r, enum bench_pattern p,
		      size_t size)
{
	for (size_t s = 0; s < r->nsteps; s++)
		if (r->steps[s].pattern == p && r->steps[s].size == size &&
		    (p != BENCH_RATE || r->steps[s].window == size))
			return (int) s;
	return -1;
}

static void print_size(FILE *f, size_t size)
{
	char buf[24];

	if (size >= 1u << 20 && !(size % (1u << 20)))
		snprintf(buf, sizeof(buf), "%zuM", size >> 20);
	else if (size >= 1024 && !(size % 1024))
		snprintf(buf, sizeof(buf), "%zuK", size >> 10);
	else
		snprintf(buf, sizeof(buf), "%zu", size);
	fprintf(f, " %9s", buf);
}

static void print_head(const struct bench_report *r, enum bench_pattern p,
		       const char *title)
{
	printf("\n%s\n%-36s", title,
	       p == BENCH_RATE ? "variant \\ window" : "variant \\ size");
	for (size_t s = 0; s < r->nsteps; s++)
		if (r->steps[s].pattern == p)
			print_size(stdout, p == BENCH_RATE ?
						   r->steps[s].window :
						   r->steps[s].size);
	printf("\n");
}

/* One row of figures, or of ratios to the variant it is compared with. */
static void print_row(const struct bench_report *r, enum bench_pattern p,
		      size_t v, bool bandwidth, bool ratio)
{
	int vs = variant_index(r, r->variants[v].vs);
	char name[40];

	if (ratio && vs < 0)
		return;
	snprintf(name, sizeof(name), ratio ? "%s / %s" : "%s",
		 r->variants[v].name, r->variants[v].vs);
	printf("%-36s", name);
	for (size_t s = 0; s < r->nsteps; s++) {
		double x = value_of(r, (int) v, s, bandwidth);

		if (r->steps[s].pattern != p)
			continue;
		if (ratio)
			x /= value_of(r, vs, s, bandwidth);
		if (isnan(x))
			printf(" %9s", "-");
		else
			printf(ratio   ? " %8.2fx" :
			       x < 100 ? " %9.2f" :
					 " %9.0f",
			       x);
	}
	printf("\n");
}

static bool pattern_ran(const struct bench_report *r, enum bench_pattern p)
{
	for (size_t v = 0; v < r->nvariants; v++)
		if (!r->status[v] && r->variants[v].patterns & (1u << p))
			return true;
	return false;
}

static void print_table(const struct bench_report *r, enum bench_pattern p,
			bool bandwidth, const char *title)
{
	if (!pattern_ran(r, p))
		return;
	print_head(r, p, title);
	for (int ratio = 0; ratio < 2; ratio++)
		for (size_t v = 0; v < r->nvariants; v++)
			if (!r->status[v] &&
			    r->variants[v].patterns & (1u << p))
				print_row(r, p, v, bandwidth, ratio);
}

static void print_targets(const struct bench_report *r)
{
	printf("\n%-32s %10s %10s  %s\n", "target", "measured", "wanted",
	       "verdict");
	for (size_t i = 0; i < sizeof(bench_targets) / sizeof(bench_targets[0]);
	     i++) {
		const struct bench_target *t = &bench_targets[i];
		int s = step_index(r, t->pattern, t->size);
		double x = s < 0 ? NAN :
				   value_of(r, variant_index(r, t->variant),
					    (size_t) s, false) /
					   value_of(r, variant_index(r, t->vs),
						    (size_t) s, false);
		double miss = t->at_most ? x / t->want - 1 : 1 - x / t->want;

		printf("%-32s ", t->what);
		if (isnan(x))
			printf("%10s", "-");
		else
			printf("%9.2fx", x);
		printf(" %s%8.2fx  ", t->at_most ? "<=" : ">=", t->want);
		if (isnan(x))
			printf("not measured (%s or %s did not run)\n",
			       t->variant, t->vs);
		else if (miss <= 0)
			printf("met\n");
		else
			printf("missed by %.*f%%\n", miss < 0.01 ? 1 : 0,
			       miss * 100);
	}
}

/* A CSV field; what was not measured is empty. */
static void csv_num(FILE *f, double x)
{
	if (isnan(x))
		fprintf(f, ",");
	else
		fprintf(f, ",%.4g", x);
}

static int write_csv(const struct bench_report *r)
{
	FILE *f = fopen(r->csv, "w");

	if (!f) {
		perror(r->csv);
		return -1;
	}
	fprintf(f, "variant,provider,pattern,size,window,iters,seconds,"
		   "usec,ops_per_s,mb_per_s,vs,ratio\n");
	for (size_t v = 0; v < r->nvariants; v++) {
		const struct bench_variant *var = &r->variants[v];
		int vs = variant_index(r, var->vs);

		for (size_t s = 0; !r->status[v] && s < r->nsteps; s++) {
			const struct bench_step *st = &r->steps[s];
			double x = value_of(r, (int) v, s, false);

			if (!(var->patterns & (1u << st->pattern)))
				continue;
			bool lat = st->pattern == BENCH_LAT;

			fprintf(f, "%s,%s,%s,%zu,%zu,%zu,%.6f", var->name,
				var->prov ? var->prov : "verbs",
				pattern_names[st->pattern], st->size,
				st->window, st->iters,
				r->res[v * r->stride + s].secs);
			csv_num(f, lat ? x : NAN);
			csv_num(f, lat ? NAN : x);
			csv_num(f, lat ? NAN : value_of(r, (int) v, s, true));
			fprintf(f, ",%s", var->vs ? var->vs : "");
			csv_num(f, x / value_of(r, vs, s, false));
			fprintf(f, "\n");
		}
	}
	return fclose(f) ? -1 : 0;
}

/* One gnuplot chart: every variant that ran p, against size. */
static void plot_one(FILE *gp, const struct bench_report *r, const char *file,
		     enum bench_pattern p, bool bandwidth, const char *ylabel)
{
	const char *sep = "plot ";

	fprintf(gp, "set output '%s'\nset ylabel '%s'\n", file, ylabel);
	for (size_t v = 0; v < r->nvariants; v++) {
		if (r->status[v] || !(r->variants[v].patterns & (1u << p)))
			continue;
		fprintf(gp, "%s'-' using 1:2 with linespoints title '%s'", sep,
			r->variants[v].name);
		sep = ", ";
	}
	fprintf(gp, "\n");
	for (size_t v = 0; v < r->nvariants; v++) {
		if (r->status[v] || !(r->variants[v].patterns & (1u << p)))
			continue;
		for (size_t s = 0; s < r->nsteps; s++) {
			double x = value_of(r, (int) v, s, bandwidth);

			if (r->steps[s].pattern == p && !isnan(x))
				fprintf(gp, "%zu %g\n", r->steps[s].size, x);
		}
		fprintf(gp, "e\n");
	}
}

static int write_plots(const struct bench_report *r)
{
	static const struct {
		const char *suffix, *ylabel;
		enum bench_pattern p;
		bool bandwidth;
	} charts[] = {
		{ "latency", "usec, half a round trip", BENCH_LAT, false },
		{ "rate", "operations per second", BENCH_STREAM, false },
		{ "bandwidth", "MB/s", BENCH_STREAM, true },
	};
	char file[4096];
	FILE *gp = popen("gnuplot", "w");

	if (!gp) {
		perror("gnuplot");
		return -1;
	}
	fprintf(gp, "set terminal svg size 900,600 dynamic\nset logscale xy 2\n"
		    "set format x '%%.0s%%cB'\nset xlabel 'size'\n"
		    "set key outside right\nset grid\n");
	for (size_t i = 0; i < sizeof(charts) / sizeof(charts[0]); i++) {
		if (!pattern_ran(r, charts[i].p))
			continue;
		snprintf(file, sizeof(file), "%s-%s.svg", r->plot,
			 charts[i].suffix);
		plot_one(gp, r, file, charts[i].p, charts[i].bandwidth,
			 charts[i].ylabel);
	}
	return pclose(gp) ? -1 : 0;
}

int bench_report(const struct bench_report *r)
{
	int rc = 0;

	if (r->rounds > 1)
		printf("each figure: the median of %zu rounds\n", r->rounds);
	print_table(r, BENCH_LAT, false,
		    "latency: usec, half a round trip (lower is better)");
	print_table(r, BENCH_STREAM, false, "stream: operations per second");
	print_table(r, BENCH_STREAM, true, "stream: bandwidth, MB/s");
	print_table(r, BENCH_RATE, false,
		    "message rate at 8 B: operations per second, by window");
	for (size_t v = 0; v < r->nvariants; v++)
		if (r->status[v] > 0)
			printf("%s: %s\n", r->variants[v].name,
			       r->status[v] == 77 ? "not run (no provider)" :
						    "FAILED");
		else if (!r->status[v] && r->fails[v])
			printf("%s: failed in %zu of %zu rounds; its figures "
			       "are the others' medians\n",
			       r->variants[v].name, r->fails[v], r->rounds);
	print_targets(r);
	if (r->csv && write_csv(r))
		rc = -1;
	if (r->plot && write_plots(r)) {
		fprintf(stderr, "nrma_bench: gnuplot failed\n");
		rc = -1;
	}
	return rc;
}
