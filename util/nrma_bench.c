/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * nrma_bench: what nrma costs against the device.  Each variant (an
 * operation through a libfabric provider, or through bare verbs for
 * reference) runs in a fresh pair of processes, so that its FI_* settings
 * apply, through three patterns: latency (a ping-pong in which each side
 * waits for its notification before it answers), streaming over sizes
 * (rate and bandwidth) and message rate over windows.  It prints tables
 * with each variant's ratio to its counterpart, measured in the same run,
 * and on request CSV and plots.  See nrma_bench(1).
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fi_errno.h>
#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#else
#define CALLGRIND_TOGGLE_COLLECT
#endif

#include "nrma_bench.h"
#include "nrma_bench_out.h"
#include "nrma_try.h"

#define ALL_PATTERNS ((1u << BENCH_PATTERNS) - 1)
#define LAT_ONLY     (1u << BENCH_LAT)
#define STREAM_ONLY  ((1u << BENCH_STREAM) | (1u << BENCH_RATE))
#define RXM	     "verbs;ofi_rxm"
#define NRMA	     FI_NRMA_PROV_NAME_NATIVE /* not ofi_rxm over nrma */
#define RXM_ENV	     "FI_UNIVERSE_SIZE=16"    /* rxe's max_cqe, FACTS.md */
#define EXIT_SKIP    77			      /* the provider is not there */

static const struct bench_variant bench_variants[] = {
	{ "raw-write", NULL, BENCH_OP_WRITE, NULL, NULL, ALL_PATTERNS },
	{ "raw-pair", NULL, BENCH_OP_WRITE_CNTR, NULL, NULL, ALL_PATTERNS },
	{ "raw-readpair", NULL, BENCH_OP_READ_CNTR, NULL, NULL, ALL_PATTERNS },
	{ "write", NRMA, BENCH_OP_WRITE, NULL, "raw-write", ALL_PATTERNS },
	{ "notify", NRMA, BENCH_OP_WRITE_CNTR, "FI_NRMA_NOTIFY_FENCE=auto",
	  "raw-pair", ALL_PATTERNS },
	{ "notify-always", NRMA, BENCH_OP_WRITE_CNTR,
	  "FI_NRMA_NOTIFY_FENCE=always", "raw-pair", ALL_PATTERNS },
	{ "notify-read", NRMA, BENCH_OP_READ_CNTR, NULL, "raw-readpair",
	  ALL_PATTERNS },
	/* One atomic of +16 behind 16 writes: against plain writes. */
	{ "notify-coalesce", NRMA, BENCH_OP_WRITE_CNTR,
	  "FI_NRMA_NOTIFY_COALESCE=16", "raw-write", ALL_PATTERNS },
	{ "nset", NRMA, BENCH_OP_WRITE_NSET, NULL, "raw-pair", ALL_PATTERNS },
	/* Writes that complete once placed at the target, as Sandia
	 * OpenSHMEM's puts: each with a zero-byte read behind it. */
	{ "write-dc", NRMA, BENCH_OP_WRITE, NULL, "raw-write", ALL_PATTERNS,
	  BENCH_COUNT_POSTS, false, FI_DELIVERY_COMPLETE },
	/* Writes with no descriptor for their registered source (as Sandia
	 * OpenSHMEM's): past the bounce buffers', the provider finds the
	 * application's registration, or registers each. */
	{ "write-nodesc", NRMA, BENCH_OP_WRITE, NULL, "write", ALL_PATTERNS,
	  BENCH_COUNT_POSTS, false, 0, true },
	{ "writedata", NRMA, BENCH_OP_WRITEDATA, NULL, "raw-pair",
	  ALL_PATTERNS },
	{ "send", NRMA, BENCH_OP_SEND, NULL, "rxm-send", LAT_ONLY },
	{ "tsend", NRMA, BENCH_OP_TSEND, NULL, "rxm-tsend", LAT_ONLY },
	{ "rxm-write", RXM, BENCH_OP_WRITE, RXM_ENV, "raw-write",
	  ALL_PATTERNS },
	{ "rxm-writedata", RXM, BENCH_OP_WRITEDATA, RXM_ENV, "raw-pair",
	  ALL_PATTERNS },
	{ "rxm-send", RXM, BENCH_OP_SEND, RXM_ENV, NULL, LAT_ONLY },
	{ "rxm-tsend", RXM, BENCH_OP_TSEND, RXM_ENV, NULL, LAT_ONLY },
	/* Counted calls (-I): after a stream, once it has all landed. */
	{ "cq-empty", NRMA, BENCH_OP_WRITE, NULL, NULL, ALL_PATTERNS,
	  BENCH_COUNT_EMPTY_POLL },
	{ "cntr-read", NRMA, BENCH_OP_WRITE_CNTR, NULL, NULL, ALL_PATTERNS,
	  BENCH_COUNT_CNTR_READ },
	{ "rxm-cq-empty", RXM, BENCH_OP_WRITE, RXM_ENV, NULL, ALL_PATTERNS,
	  BENCH_COUNT_EMPTY_POLL },
	/* Streams whose target spins on its counter (or, for plain writes,
	 * on the data) all along: its CPU beside the device's. */
	{ "raw-write-busy", NULL, BENCH_OP_WRITE, NULL, NULL, STREAM_ONLY,
	  BENCH_COUNT_POSTS, true },
	{ "raw-pair-busy", NULL, BENCH_OP_WRITE_CNTR, NULL, NULL, STREAM_ONLY,
	  BENCH_COUNT_POSTS, true },
	{ "raw-readpair-busy", NULL, BENCH_OP_READ_CNTR, NULL, NULL,
	  STREAM_ONLY, BENCH_COUNT_POSTS, true },
	{ "write-busy", NRMA, BENCH_OP_WRITE, NULL, "raw-write-busy",
	  STREAM_ONLY, BENCH_COUNT_POSTS, true },
	{ "notify-busy", NRMA, BENCH_OP_WRITE_CNTR, "FI_NRMA_NOTIFY_FENCE=auto",
	  "raw-pair-busy", STREAM_ONLY, BENCH_COUNT_POSTS, true },
	{ "notify-read-busy", NRMA, BENCH_OP_READ_CNTR, NULL,
	  "raw-readpair-busy", STREAM_ONLY, BENCH_COUNT_POSTS, true },
};

#define N_VARIANTS (sizeof(bench_variants) / sizeof(bench_variants[0]))

static const size_t bench_sizes[] = { 8,     64,     512,      4096,	16384,
				      65536, 262144, 1u << 20, 4u << 20 };
static const size_t bench_windows[] = { 1, 4, 16, 64 };
/* Steps of a plan: a latency and a stream step a size, a rate step a window. */
#define BENCH_STEPS_MAX	 64
#define BENCH_ROUNDS_MAX 1000 /* -r: a round's results are 16 KiB */
_Static_assert(2 * sizeof(bench_sizes) / sizeof(bench_sizes[0]) +
			       sizeof(bench_windows) /
				       sizeof(bench_windows[0]) <=
		       BENCH_STEPS_MAX,
	       "make_plan's steps fit");

struct bench_opts {
	size_t ops, lat_iters, max_size, window, budget;
	unsigned timeout_s;
	const char *only, *csv, *plot;
	size_t peers;
	size_t rounds;	   /* every variant this often; figures are medians */
	bool instructions; /* -I: one stream step, counted by callgrind */
};

/* One process of a pair: its transport and what it sent and received. */
struct bench_side {
	const struct bench_xport_ops *ops;
	struct bench_xport *x;
	int sock;
	bool initiator;
	uint64_t sent, recvd;
	size_t outstanding;
	bool counting; /* -I: callgrind counts what count says */
	enum bench_count count;
	long pace_us;	  /* -I: the uncounted pause before a counted poll */
	bool busy_target; /* bench_variant's */
};

#define PACE_FIRST_US 500
#define PACE_MOST_US  64000

/*
 * -I counts the calls an operation needs, not the spinning of a poller
 * that waits: how often it would spin depends on the machine's load (a
 * sender waiting for credits counted 1166 instructions per send on one run
 * and 2084 on another).  So the counted stream pauses, uncounted, before
 * it polls, and doubles the pause each time a counted call still finds
 * nothing to do; that call is counted, the spinning is not.
 */
static void side_pause(struct bench_side *s)
{
	struct timespec t = { 0, s->pace_us * 1000 };

	if (!s->pace_us)
		return;
	CALLGRIND_TOGGLE_COLLECT;
	nanosleep(&t, NULL);
	CALLGRIND_TOGGLE_COLLECT;
}

static void side_pace_slower(struct bench_side *s)
{
	if (s->pace_us && s->pace_us < PACE_MOST_US)
		s->pace_us *= 2;
}

static int side_reap(struct bench_side *s)
{
	int n = s->ops->tx_done(s->x);

	if (n < 0)
		return n;
	if (!n)
		side_pace_slower(s);
	s->outstanding -= (size_t) n;
	return 0;
}

static int side_post(struct bench_side *s, size_t size)
{
	int rc;

	while ((rc = s->ops->post(s->x, size, s->sent + 1)) == -FI_EAGAIN) {
		side_pause(s);
		if ((rc = side_reap(s)))
			return rc;
	}
	if (rc)
		return rc;
	s->sent++;
	s->outstanding++;
	return 0;
}

/* Waits for the seq-th arrival here, reaping our completions meanwhile. */
static int side_wait(struct bench_side *s, size_t size, uint64_t seq)
{
	int rc;

	while (!(rc = s->ops->arrived(s->x, size, seq)))
		if (s->outstanding && (rc = side_reap(s)))
			return rc;
	return rc < 0 ? rc : 0;
}

static int side_drain(struct bench_side *s)
{
	int rc = 0;

	while (s->outstanding && !rc)
		rc = side_reap(s);
	return rc;
}

static double pattern_lat(struct bench_side *s, const struct bench_step *st)
{
	size_t warm = st->iters / 10 ? st->iters / 10 : 1;
	double start = 0;
	int rc = 0;

	for (size_t i = 0; i < warm + st->iters && !rc; i++) {
		if (i == warm)
			start = try_now();
		if (s->initiator)
			rc = side_post(s, st->size);
		rc = rc ?: side_wait(s, st->size, ++s->recvd);
		if (!s->initiator)
			rc = rc ?: side_post(s, st->size);
	}
	rc = rc ?: side_drain(s);
	return rc ? -1 : try_now() - start;
}

/*
 * -I's counted calls, iters of them, each of which must find what the
 * stream left: no completion, or every notification.
 */
static int side_count_calls(struct bench_side *s, enum bench_count count,
			    const struct bench_step *st)
{
	int rc = 0;

	if (!s->counting || s->count != count)
		return 0;
	CALLGRIND_TOGGLE_COLLECT;
	for (size_t i = 0; i < st->iters && !rc; i++)
		rc = count == BENCH_COUNT_EMPTY_POLL ?
			     s->ops->tx_done(s->x) :
			     s->ops->arrived(s->x, st->size, s->recvd) != 1;
	CALLGRIND_TOGGLE_COLLECT;
	return rc;
}

/*
 * The target of a stream sleeps until the initiator is done, where
 * nothing needs its CPU, then checks; else, or if its variant says so,
 * it polls all along.
 */
static double stream_target(struct bench_side *s, const struct bench_step *st)
{
	char done;

	s->recvd += st->iters;
	if (!s->busy_target && s->ops->target_idle(s->x)) {
		if (read(s->sock, &done, 1) != 1 ||
		    s->ops->arrived(s->x, st->size, s->recvd) != 1)
			return -1;
	} else if (side_wait(s, st->size, s->recvd) ||
		   read(s->sock, &done, 1) != 1) {
		return -1;
	}
	return side_count_calls(s, BENCH_COUNT_CNTR_READ, st) ? -1 : 0;
}

/* The initiator keeps window operations in flight. */
static double pattern_stream(struct bench_side *s, const struct bench_step *st)
{
	uint64_t last = s->sent + st->iters;
	double start = try_now(), secs;
	int rc = 0;

	if (!s->initiator)
		return stream_target(s, st);
	if (s->counting && s->count == BENCH_COUNT_POSTS) {
		s->pace_us = PACE_FIRST_US;
		CALLGRIND_TOGGLE_COLLECT;
	}
	while ((s->sent < last || s->outstanding) && !rc) {
		while (s->sent < last && s->outstanding < st->window && !rc)
			rc = side_post(s, st->size);
		side_pause(s);
		rc = rc ?: side_reap(s);
	}
	if (s->pace_us) {
		CALLGRIND_TOGGLE_COLLECT;
		s->pace_us = 0;
	}
	secs = try_now() - start;
	rc = rc ?: side_count_calls(s, BENCH_COUNT_EMPTY_POLL, st);
	return rc || write(s->sock, "d", 1) != 1 ? -1 : secs;
}

static int side_barrier(struct bench_side *s)
{
	char c = 0;

	return write(s->sock, &c, 1) == 1 && read(s->sock, &c, 1) == 1 ? 0 : -1;
}

static int side_exchange(struct bench_side *s, const struct bench_blob *me,
			 struct bench_blob *peer)
{
	return write(s->sock, me, sizeof(*me)) == sizeof(*me) &&
			       read(s->sock, peer, sizeof(*peer)) ==
				       sizeof(*peer) ?
		       0 :
		       -1;
}

static int side_open(struct bench_side *s, const struct bench_variant *v,
		     const struct bench_opts *o)
{
	struct bench_blob me = { 0 }, peer;
	struct bench_step hello = { BENCH_LAT, 8, 1, 1 };
	int rc;
	size_t most =
		bench_windows[sizeof(bench_windows) / sizeof(bench_windows[0]) -
			      1];

	s->ops = v->prov ? &bench_fi_ops : &bench_verbs_ops;
	rc = s->ops->open(&s->x, v, o->max_size,
			  o->window > most ? o->window : most, &me);
	if (rc == -FI_ENODATA)
		exit(EXIT_SKIP);
	rc = rc ?: side_exchange(s, &me, &peer);
	rc = rc ?: s->ops->connect(s->x, &peer, s->initiator);
	/* Both directions connected before anything is timed. */
	return rc ?: pattern_lat(s, &hello) < 0 ? -1 : 0;
}

/* One process of a variant's pair: every step, results to the driver. */
static void side_run(struct bench_side *s, const struct bench_variant *v,
		     const struct bench_opts *o, const struct bench_step *steps,
		     size_t nsteps, int result_fd)
{
	struct bench_result r;

	if (v->env)
		putenv((char *) v->env);
	alarm(o->timeout_s);
	if (side_open(s, v, o))
		exit(1);
	s->counting = o->instructions;
	s->count = v->count;
	s->busy_target = v->busy_target;
	for (size_t i = 0; i < nsteps; i++) {
		/* A step of a pattern the variant's tables leave out has
		 * no figure; -I counts its one stream step in any case. */
		r = (struct bench_result){
			.failed = !o->instructions &&
				  !(v->patterns & (1u << steps[i].pattern)),
		};
		if (!r.failed) {
			alarm(o->timeout_s);
			s->ops->prepare(s->x, steps[i].size);
			if (side_barrier(s))
				exit(1);
			r.secs = steps[i].pattern == BENCH_LAT ?
					 pattern_lat(s, &steps[i]) :
					 pattern_stream(s, &steps[i]);
		}
		if (r.secs < 0)
			exit(1);
		if (s->initiator &&
		    write(result_fd, &r, sizeof(r)) != sizeof(r))
			exit(1);
	}
	side_barrier(s);
	s->ops->close(s->x);
	exit(0);
}

static pid_t fork_side(const struct bench_variant *v,
		       const struct bench_opts *o, const struct bench_step *st,
		       size_t nsteps, int sock, int peer_sock, bool initiator,
		       int result[2])
{
	struct bench_side s = { .sock = sock, .initiator = initiator };
	pid_t pid = fork();

	if (pid == 0) {
		close(result[0]);
		close(peer_sock); /* the peer's end: its exit must end ours */
		side_run(&s, v, o, st, nsteps, result[1]);
	}
	return pid;
}

/*
 * How one process of a pair ended: 0 if well.  One of a reference
 * provider's (not nrma's) that a signal ends after every step reported
 * died in that provider's teardown: its defect, told but not counted, as
 * the figures stand.  nrma's own never gets that leave.
 */
static int side_status(const struct bench_variant *v, int k, int status,
		       bool all_steps)
{
	const char *who = k ? "target" : "initiator";
	int sig = WIFSIGNALED(status) ? WTERMSIG(status) : 0;

	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (all_steps && v->prov && strcmp(v->prov, NRMA) && sig != SIGALRM) {
		fprintf(stderr,
			"nrma_bench: %s: %s killed by signal %d after its last "
			"step, in %s's teardown; its figures stand\n",
			v->name, who, sig, v->prov);
		return 0;
	}
	fprintf(stderr, "nrma_bench: %s: %s killed by signal %d%s\n", v->name,
		who, sig, sig == SIGALRM ? " (-t timeout)" : "");
	return 1;
}

/* Runs a variant; 0, EXIT_SKIP, or 1 with the steps not run failed. */
static int run_variant(const struct bench_variant *v,
		       const struct bench_opts *o, const struct bench_step *st,
		       size_t nsteps, struct bench_result *res)
{
	int sp[2], result[2], status, rc = 0;
	pid_t pid[2];
	size_t i = 0;

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sp) || pipe(result))
		return 1;
	fflush(NULL); /* the children must not print our buffers again */
	pid[0] = fork_side(v, o, st, nsteps, sp[0], sp[1], true, result);
	pid[1] = fork_side(v, o, st, nsteps, sp[1], sp[0], false, result);
	close(result[1]);
	close(sp[0]);
	close(sp[1]);
	for (; i < nsteps; i++) {
		if (read(result[0], &res[i], sizeof(res[i])) != sizeof(res[i]))
			break;
		bench_progress(v, &st[i], i + 1, nsteps);
	}
	for (size_t j = i; j < nsteps; j++)
		res[j].failed = 1;
	close(result[0]);
	for (int k = 0; k < 2; k++) {
		int side = waitpid(pid[k], &status, 0) < 0 ?
				   1 :
				   side_status(v, k, status, i == nsteps);

		rc = rc ?: side;
	}
	return i < nsteps && !rc ? 1 : rc;
}

static size_t iters_for(size_t size, size_t most, size_t least, size_t budget)
{
	size_t n = budget / size;

	return n > most ? most : n < least ? least : n;
}

/* The steps every variant runs, in order. */
static size_t make_plan(const struct bench_opts *o, struct bench_step *st)
{
	size_t n = 0;

	if (o->instructions) {
		st[n++] = (struct bench_step){ BENCH_STREAM, 8, o->window,
					       o->ops };
		return n;
	}
	for (size_t i = 0; i < sizeof(bench_sizes) / sizeof(bench_sizes[0]);
	     i++) {
		size_t size = bench_sizes[i];

		if (size > o->max_size)
			break;
		st[n++] = (struct bench_step){ BENCH_LAT, size, 1,
					       iters_for(size, o->lat_iters, 10,
							 o->budget / 4) };
		st[n++] = (struct bench_step){ BENCH_STREAM, size, o->window,
					       iters_for(size, o->ops, 16,
							 o->budget) };
	}
	for (size_t i = 0; i < sizeof(bench_windows) / sizeof(bench_windows[0]);
	     i++)
		st[n++] = (struct bench_step){ BENCH_RATE, 8, bench_windows[i],
					       o->ops };
	return n;
}

static bool variant_chosen(const struct bench_opts *o, const char *name)
{
	size_t len = strlen(name);

	for (const char *p = o->only; p; p = strchr(p, ',')) {
		p += *p == ',';
		if (!strncmp(p, name, len) && (p[len] == ',' || !p[len]))
			return true;
	}
	return !o->only;
}

/* Asked for (--help): on stdout, success; after a bad option: stderr, 2. */
static void usage(const char *prog, bool asked)
{
	fprintf(asked ? stdout : stderr,
		"usage: %s [-q] [-I] [-n ops] [-l iters] [-s max_size] [-w window]\n"
		"       [-b bytes] [-t secs] [-a addr] [-T threading] [-V variant,...]\n"
		"       [-r rounds] [-P peers] [--csv file] [--plot prefix] [-h]\n",
		prog);
	exit(asked ? 0 : 2);
}

static void parse(int argc, char **argv, struct bench_opts *o)
{
	static const struct option longopts[] = {
		{ "csv", required_argument, NULL, 'c' },
		{ "plot", required_argument, NULL, 'p' },
		{ "quick", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	int opt;

	while ((opt = getopt_long(argc, argv, "qhIn:l:s:w:b:t:a:T:V:r:P:",
				  longopts, NULL)) != -1) {
		switch (opt) {
		case 'q': /* a smoke run: it must finish, not measure well */
			*o = (struct bench_opts){ 200,	     50,
						  65536,     16,
						  1u << 20,  o->timeout_s,
						  o->only,   o->csv,
						  o->plot,   4,
						  o->rounds, o->instructions };
			break;
		case 'I':
			o->instructions = true;
			break;
		case 'n':
			o->ops = strtoul(optarg, NULL, 0);
			break;
		case 'l':
			o->lat_iters = strtoul(optarg, NULL, 0);
			break;
		case 's':
			o->max_size = strtoul(optarg, NULL, 0);
			break;
		case 'w':
			o->window = strtoul(optarg, NULL, 0);
			break;
		case 'b':
			o->budget = strtoul(optarg, NULL, 0);
			break;
		case 't':
			o->timeout_s = (unsigned) atoi(optarg);
			break;
		case 'a':
			setenv("NRMA_BENCH_ADDR", optarg, 1);
			break;
		case 'T':
			if (bench_lf_threading(optarg) < 0)
				usage(argv[0], false);
			setenv("NRMA_BENCH_THREADING", optarg, 1);
			break;
		case 'V':
			o->only = optarg;
			break;
		case 'r':
			o->rounds = strtoul(optarg, NULL, 0);
			break;
		case 'P':
			o->peers = strtoul(optarg, NULL, 0);
			break;
		case 'c':
			o->csv = optarg;
			break;
		case 'p':
			o->plot = optarg;
			break;
		case 'h':
			usage(argv[0], true);
			break;
		default:
			usage(argv[0], false);
		}
	}
	if (!o->ops || !o->lat_iters || o->max_size < 8 || !o->window ||
	    !o->budget || !o->rounds || o->rounds > BENCH_ROUNDS_MAX ||
	    optind != argc)
		usage(argv[0], false);
}

static int secs_cmp(const void *a, const void *b)
{
	double x = *(const double *) a, y = *(const double *) b;

	return (x > y) - (x < y);
}

typedef struct bench_result bench_round[N_VARIANTS][BENCH_STEPS_MAX];

/* Step i of variant v: its median over the rounds in which it ran. */
static struct bench_result median_of(const bench_round *rounds, size_t count,
				     size_t v, size_t i)
{
	double secs[count];
	size_t n = 0;

	for (size_t k = 0; k < count; k++)
		if (!rounds[k][v][i].failed)
			secs[n++] = rounds[k][v][i].secs;
	if (!n)
		return (struct bench_result){ .failed = 1 };
	qsort(secs, n, sizeof(secs[0]), secs_cmp);
	return (struct bench_result){
		.secs = n % 2 ? secs[n / 2] :
				(secs[n / 2 - 1] + secs[n / 2]) / 2,
	};
}

/*
 * Every chosen variant once a round, round after round, so that drift
 * on the host touches every variant alike.  A variant's status is that
 * of its first round that did not go well; fails counts those rounds.
 */
static void run_rounds(const struct bench_opts *o, const struct bench_step *st,
		       size_t nsteps, bench_round *rounds, int *status,
		       size_t *fails)
{
	for (size_t k = 0; k < o->rounds; k++) {
		if (o->rounds > 1)
			fprintf(stderr, "nrma_bench: round %zu of %zu\n", k + 1,
				o->rounds);
		for (size_t v = 0; v < N_VARIANTS; v++) {
			int rc;

			if (!variant_chosen(o, bench_variants[v].name) ||
			    (bench_variants[v].count && !o->instructions)) {
				status[v] = -1;
				continue;
			}
			if (k && status[v] == EXIT_SKIP)
				continue;
			rc = run_variant(&bench_variants[v], o, st, nsteps,
					 rounds[k][v]);
			fails[v] += rc && rc != EXIT_SKIP;
			if (!k || !status[v])
				status[v] = rc;
		}
	}
}

/*
 * A variant that failed in some rounds but not all is reported with the
 * medians of the others (median_of), its failures counted beside it.
 */
static void settle_status(const struct bench_opts *o, int *status,
			  const size_t *fails)
{
	for (size_t v = 0; v < N_VARIANTS; v++)
		if (fails[v] && fails[v] < o->rounds)
			status[v] = 0;
}

int main(int argc, char **argv)
{
	struct bench_opts o = { 20000, 1000, 4u << 20, 32, 32u << 20, 300,
				NULL,  NULL, NULL,     64, 1 };
	static bench_round res;
	struct bench_step steps[BENCH_STEPS_MAX];
	int status[N_VARIANTS], rc = 0;
	size_t fails[N_VARIANTS] = { 0 };
	bench_round *rounds;
	size_t nsteps;

	parse(argc, argv, &o);
	if (o.instructions)
		o.peers = 0; /* that table is timed, not counted */
	nsteps = make_plan(&o, steps);
	rounds = calloc(o.rounds, sizeof(*rounds));
	if (!rounds)
		return 1;
	signal(SIGPIPE, SIG_IGN);
	run_rounds(&o, steps, nsteps, rounds, status, fails);
	for (size_t v = 0; v < N_VARIANTS; v++) {
		for (size_t i = 0; i < nsteps; i++)
			res[v][i] = median_of(rounds, o.rounds, v, i);
		if (status[v] > 0 && status[v] != EXIT_SKIP)
			rc = 1;
	}
	free(rounds);
	settle_status(&o, status, fails);
	if (bench_report(&(struct bench_report){
		    bench_variants, N_VARIANTS, status, fails, steps, nsteps,
		    &res[0][0], BENCH_STEPS_MAX, o.rounds, o.csv, o.plot }))
		rc = 1;
	if (o.peers && bench_peers(stdout, o.peers))
		rc = 1;
	return rc;
}
