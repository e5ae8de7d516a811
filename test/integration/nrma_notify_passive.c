/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A target that makes no call: the pattern of Open MPI's notified RMA.
 *
 * The target opens an RDM endpoint, binds one counter to it for
 * FI_REMOTE_WRITE and one for FI_REMOTE_READ, registers two buffers with
 * FI_RMA_EVENT, each bound to a counter of its own (fi_mr_bind,
 * fi_mr_enable), and publishes its name and keys.  From then on it calls
 * nothing but fi_cntr_read on the two MR-bound counters, which are bound
 * to no endpoint, so the reads progress nothing.  Initiators (forked
 * before anything is opened) write 8 bytes into the first buffer and 64
 * bytes into the second, alternately, each into a slot of its own, with a
 * window of outstanding writes, reaping their CQ and retrying on
 * -FI_EAGAIN.  Every write must complete without error, each MR counter
 * must reach exactly its buffer's number of writes and stay there, the
 * endpoint's FI_REMOTE_WRITE counter must count every write and its
 * FI_REMOTE_READ counter none, and every slot must hold its data.
 *
 * NRMA_TEST_INITIATORS (default 3) and NRMA_TEST_OPS (writes per
 * initiator, default 20000) size the run; NRMA_TEST_WAIT_S bounds it.
 * NRMA_TEST_LATE_PROGRESS_S=N makes the target read its endpoint's
 * counter (which progresses the endpoint) once N seconds have passed, as
 * an application that makes a progressing call at last would.
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fi_rma.h>

#include "itest.h"

#define MAX_INIT 16
#define WINDOW	 16
#define SMALL	 8
#define LARGE	 64

struct target_msg {
	struct sockaddr_in name;
	uint64_t addr[2];
	uint64_t key[2];
};

static long env_num(const char *name, long dflt)
{
	const char *v = getenv(name);

	return v && *v ? strtol(v, NULL, 0) : dflt;
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

static int64_t deadline(void)
{
	return now_ms() + env_num("NRMA_TEST_WAIT_S", 300) * 1000;
}

/* Byte b of write j by initiator i: no two writes look alike. */
static uint8_t pattern(long i, long j, size_t b)
{
	return (uint8_t) (0x5a ^ (i * 131) ^ (j * 7) ^ (b * 31) ^ (j >> 8));
}

static void write_all(int fd, const void *buf, size_t len)
{
	CHECK(write(fd, buf, len) == (ssize_t) len);
}

static void read_all(int fd, void *buf, size_t len)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n = read(fd, (char *) buf + got, len - got);

		CHECK(n > 0 || (n < 0 && errno == EINTR));
		if (n > 0)
			got += n;
	}
}

struct node {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	struct fid_ep *ep;
	struct fid_cq *cq;
};

static void node_open(struct node *n)
{
	struct fi_info *hints = itest_hints();
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_CONTEXT,
				      .size = 4 * WINDOW };
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE };

	hints->caps = FI_RMA | FI_RMA_EVENT;
	hints->domain_attr->name = strdup(itest_device());
	CHECK_OK(fi_getinfo(ITEST_VERSION, NULL, NULL, 0, hints, &n->info));
	fi_freeinfo(hints);
	CHECK_OK(fi_fabric(n->info->fabric_attr, &n->fabric, NULL));
	CHECK_OK(fi_domain(n->fabric, n->info, &n->domain, NULL));
	CHECK_OK(fi_av_open(n->domain, &av_attr, &n->av, NULL));
	CHECK_OK(fi_endpoint(n->domain, n->info, &n->ep, NULL));
	CHECK_OK(fi_cq_open(n->domain, &cq_attr, &n->cq, NULL));
	CHECK_OK(fi_ep_bind(n->ep, &n->av->fid, 0));
	CHECK_OK(fi_ep_bind(n->ep, &n->cq->fid, FI_TRANSMIT | FI_RECV));
}

static void node_close(struct node *n)
{
	CHECK_OK(fi_close(&n->ep->fid));
	CHECK_OK(fi_close(&n->cq->fid));
	CHECK_OK(fi_close(&n->av->fid));
	CHECK_OK(fi_close(&n->domain->fid));
	CHECK_OK(fi_close(&n->fabric->fid));
	fi_freeinfo(n->info);
}

static struct fid_cntr *cntr_open(struct fid_domain *domain)
{
	struct fi_cntr_attr attr = { .events = FI_CNTR_EVENTS_COMP,
				     .wait_obj = FI_WAIT_UNSPEC };
	struct fid_cntr *cntr;

	CHECK_OK(fi_cntr_open(domain, &attr, &cntr, NULL));
	return cntr;
}

/* Initiators */

static void reap(struct fid_cq *cq, long *outstanding)
{
	struct fi_cq_entry comp[WINDOW];
	struct fi_cq_err_entry err = { 0 };
	ssize_t n = fi_cq_read(cq, comp, WINDOW);

	if (n == -FI_EAVAIL) {
		CHECK(fi_cq_readerr(cq, &err, 0) == 1);
		fprintf(stderr, "write failed: err %d (%s), prov_errno %d\n",
			err.err, fi_strerror(err.err), err.prov_errno);
		exit(1);
	}
	CHECK(n > 0 || n == -FI_EAGAIN);
	if (n > 0)
		*outstanding -= n;
}

static void initiator(long me, long nops, int rfd)
{
	struct target_msg tm;
	struct node n;
	fi_addr_t target;
	uint8_t *src = malloc((size_t) nops * LARGE);
	long posted = 0, outstanding = 0;
	int64_t end;

	CHECK(src != NULL);
	read_all(rfd, &tm, sizeof(tm));
	node_open(&n);
	CHECK_OK(fi_enable(n.ep));
	CHECK(fi_av_insert(n.av, &tm.name, 1, &target, 0, NULL) == 1);
	end = deadline();
	while (posted < nops || outstanding) {
		int mr = posted % 2;
		size_t len = mr ? LARGE : SMALL;
		uint8_t *buf = src + (size_t) posted * LARGE;
		uint64_t slot = ((uint64_t) me * nops + posted) * len;
		ssize_t ret = -FI_EAGAIN;

		CHECK(now_ms() < end);
		if (posted < nops && outstanding < WINDOW) {
			for (size_t b = 0; b < len; b++)
				buf[b] = pattern(me, posted, b);
			ret = fi_write(n.ep, buf, len, NULL, target,
				       tm.addr[mr] + slot, tm.key[mr], NULL);
			CHECK(ret == 0 || ret == -FI_EAGAIN);
		}
		if (!ret) {
			posted++;
			outstanding++;
		} else {
			reap(n.cq, &outstanding);
		}
	}
	node_close(&n);
	free(src);
}

/* The target */

struct target {
	struct node n;
	struct fid_cntr *ep_write, *ep_read, *mr_cntr[2];
	struct fid_mr *mr[2];
	uint8_t *buf[2];
	size_t len[2];
};

static void target_open(struct target *t, long ninit, long nops)
{
	node_open(&t->n);
	t->ep_write = cntr_open(t->n.domain);
	t->ep_read = cntr_open(t->n.domain);
	CHECK_OK(fi_ep_bind(t->n.ep, &t->ep_write->fid, FI_REMOTE_WRITE));
	CHECK_OK(fi_ep_bind(t->n.ep, &t->ep_read->fid, FI_REMOTE_READ));
	for (int i = 0; i < 2; i++) {
		struct iovec iov;
		struct fi_mr_attr attr = {
			.mr_iov = &iov,
			.iov_count = 1,
			.access = FI_REMOTE_WRITE | FI_REMOTE_READ,
		};

		t->len[i] = (size_t) ninit * nops * (i ? LARGE : SMALL);
		t->buf[i] = calloc(1, t->len[i]);
		CHECK(t->buf[i] != NULL);
		iov = (struct iovec){ t->buf[i], t->len[i] };
		t->mr_cntr[i] = cntr_open(t->n.domain);
		CHECK_OK(fi_mr_regattr(t->n.domain, &attr, FI_RMA_EVENT,
				       &t->mr[i]));
		CHECK_OK(fi_mr_bind(t->mr[i], &t->mr_cntr[i]->fid,
				    FI_REMOTE_WRITE | FI_REMOTE_READ));
		CHECK_OK(fi_mr_enable(t->mr[i]));
	}
	CHECK_OK(fi_enable(t->n.ep));
}

static void target_close(struct target *t)
{
	CHECK_OK(fi_close(&t->n.ep->fid));
	for (int i = 0; i < 2; i++) {
		CHECK_OK(fi_close(&t->mr[i]->fid));
		CHECK_OK(fi_close(&t->mr_cntr[i]->fid));
		free(t->buf[i]);
	}
	CHECK_OK(fi_close(&t->ep_write->fid));
	CHECK_OK(fi_close(&t->ep_read->fid));
	CHECK_OK(fi_close(&t->n.cq->fid));
	CHECK_OK(fi_close(&t->n.av->fid));
	CHECK_OK(fi_close(&t->n.domain->fid));
	CHECK_OK(fi_close(&t->n.fabric->fid));
	fi_freeinfo(t->n.info);
}

static void target_publish(struct target *t, const int *wfd, long ninit)
{
	struct target_msg tm = { 0 };
	size_t len = sizeof(tm.name);

	CHECK_OK(fi_getname(&t->n.ep->fid, &tm.name, &len));
	for (int i = 0; i < 2; i++) {
		tm.addr[i] = itest_mr_addr(t->n.info, t->buf[i], t->buf[i]);
		tm.key[i] = fi_mr_key(t->mr[i]);
	}
	for (long i = 0; i < ninit; i++)
		write_all(wfd[i], &tm, sizeof(tm));
}

/* Only fi_cntr_read on counters bound to no endpoint: no progress. */
/* Fails when an initiator failed; forgets the ones that are done. */
static void target_check_kids(pid_t *kids, long ninit)
{
	int status;

	for (long i = 0; i < ninit; i++) {
		if (!kids[i] || waitpid(kids[i], &status, WNOHANG) != kids[i])
			continue;
		if (!WIFEXITED(status) || WEXITSTATUS(status)) {
			fprintf(stderr, "initiator %ld failed\n", i);
			exit(1);
		}
		kids[i] = 0;
	}
}

static void target_watch(struct target *t, const uint64_t *want, pid_t *kids,
			 long ninit)
{
	int64_t end = deadline(), start = now_ms();
	int64_t late = env_num("NRMA_TEST_LATE_PROGRESS_S", -1) * 1000;
	uint64_t v[2];

	do {
		target_check_kids(kids, ninit);
		if (late >= 0 && now_ms() - start >= late)
			fi_cntr_read(t->ep_write);
		for (int i = 0; i < 2; i++) {
			v[i] = fi_cntr_read(t->mr_cntr[i]);
			CHECK(v[i] <= want[i]);
		}
		if (v[0] < want[0] || v[1] < want[1])
			usleep(50); /* leave the CPUs to the initiators */
		if (now_ms() > end) {
			fprintf(stderr,
				"MR counters at %" PRIu64 " and %" PRIu64
				" of %" PRIu64 " and %" PRIu64 "\n",
				v[0], v[1], want[0], want[1]);
			exit(1);
		}
	} while (v[0] < want[0] || v[1] < want[1]);
}

static void target_check(struct target *t, long ninit, long nops)
{
	for (int mr = 0; mr < 2; mr++) {
		size_t len = mr ? LARGE : SMALL;

		for (long i = 0; i < ninit; i++)
			for (long j = mr; j < nops; j += 2) {
				const uint8_t *slot = t->buf[mr] +
						      ((size_t) i * nops + j) *
							      len;

				for (size_t b = 0; b < len; b++)
					CHECK(slot[b] == pattern(i, j, b));
			}
	}
}

int main(void)
{
	long ninit = env_num("NRMA_TEST_INITIATORS", 3);
	long nops = env_num("NRMA_TEST_OPS", 20000);
	int wfd[MAX_INIT];
	pid_t kids[MAX_INIT];
	uint64_t want[2] = { ninit * ((nops + 1) / 2), ninit * (nops / 2) };
	struct target t = { 0 };
	int status;

	CHECK(ninit > 0 && ninit <= MAX_INIT && nops > 0);
	for (long i = 0; i < ninit; i++) {
		int p[2];

		CHECK(pipe(p) == 0);
		kids[i] = fork();
		CHECK(kids[i] >= 0);
		if (!kids[i]) {
			close(p[1]);
			initiator(i, nops, p[0]);
			exit(0);
		}
		close(p[0]);
		wfd[i] = p[1];
	}
	target_open(&t, ninit, nops);
	target_publish(&t, wfd, ninit);
	target_watch(&t, want, kids, ninit);
	for (long i = 0; i < ninit; i++) {
		if (!kids[i])
			continue;
		CHECK(waitpid(kids[i], &status, 0) == kids[i]);
		CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	}
	/* Nothing counts twice, late: the counts stay where they are. */
	usleep(100 * 1000);
	for (int i = 0; i < 2; i++)
		CHECK(fi_cntr_read(t.mr_cntr[i]) == want[i]);
	CHECK(fi_cntr_readerr(t.mr_cntr[0]) == 0);
	target_check(&t, ninit, nops);
	CHECK(fi_cntr_read(t.ep_write) == (uint64_t) ninit * nops);
	CHECK(fi_cntr_read(t.ep_read) == 0);
	target_close(&t);
	itest_pass("nrma_notify_passive");
	return 0;
}
