/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The helpers of itest_msg.h: peer processes, pipes, endpoints, progress
 * and bounded waits, shared by the data transfer tests.
 */
#include "itest_msg.h"

int itest_max_kids = ITEST_MAX_KIDS;
int itest_max_cqs = ITEST_MAX_CQS;
int itest_wait_valgrind_factor = ITEST_WAIT_VALGRIND_FACTOR;

char itest_who[32] = "parent";
const char *itest_step;

static void itest_vfail(const char *file, int line, const char *fmt, va_list ap)
{
	fflush(stdout);
	fprintf(stderr, "%s:%d: [%s, pid %d%s%s] ", file, line, itest_who,
		(int) getpid(), itest_step ? ", in " : "",
		itest_step ? itest_step : "");
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	exit(1);
}

void itest_fail_at(const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	itest_vfail(file, line, fmt, ap);
	va_end(ap);
	exit(1);
}

const char *itest_fmt(const char *fmt, ...)
{
	static char bufs[16][200];
	static int next;
	char *b = bufs[next++ % 16];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(b, sizeof(bufs[0]), fmt, ap);
	va_end(ap);
	return b;
}

/* Time */

int64_t itest_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

int64_t itest_wait_ms(void)
{
	const char *s = getenv("NRMA_TEST_WAIT_S");
	const char *vg = getenv("NRMA_VALGRIND");

	if (s && atoi(s) > 0)
		return atoi(s) * 1000LL;
	return ITEST_WAIT_MS_DEFAULT *
	       (vg && !strcmp(vg, "1") ? itest_wait_valgrind_factor : 1);
}

long itest_rss_kb(void)
{
	char line[256];
	long kb = -1;
	FILE *f = fopen("/proc/self/status", "r");

	CHECK(f != NULL);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %ld", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

int64_t itest_deadline(void)
{
	return itest_now_ms() + itest_wait_ms();
}

/* Children */

static struct {
	pid_t pid;
	char who[32];
	bool done;
} itest_kids[ITEST_MAX_KIDS];
static int itest_nkids;
static bool itest_exit_hooked;

static void itest_on_exit(int status, void *arg)
{
	(void) arg;
	if (!status)
		return;
	/* A failing parent takes its children down. */
	for (int i = 0; i < itest_nkids; i++)
		if (!itest_kids[i].done)
			kill(itest_kids[i].pid, SIGKILL);
}

static void itest_kid_status(int i, int status)
{
	itest_kids[i].done = true;
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return;
	if (WIFEXITED(status))
		FAIL("%s (pid %d) failed: exit status %d", itest_kids[i].who,
		     (int) itest_kids[i].pid, WEXITSTATUS(status));
	FAIL("%s (pid %d) died of signal %d", itest_kids[i].who,
	     (int) itest_kids[i].pid, WTERMSIG(status));
}

void itest_check_kids(void)
{
	for (int i = 0; i < itest_nkids; i++) {
		int status;
		pid_t pid;

		if (itest_kids[i].done)
			continue;
		pid = waitpid(itest_kids[i].pid, &status, WNOHANG);
		if (pid == itest_kids[i].pid)
			itest_kid_status(i, status);
	}
}

pid_t itest_fork(const char *who, void (*fn)(void *), void *arg)
{
	pid_t parent = getpid(), pid;

	CHECK(itest_nkids < itest_max_kids && itest_nkids < ITEST_MAX_KIDS);
	if (!itest_exit_hooked) {
		CHECK(on_exit(itest_on_exit, NULL) == 0);
		itest_exit_hooked = true;
	}
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		itest_nkids = 0;
		snprintf(itest_who, sizeof(itest_who), "%s", who);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(1);
		fn(arg);
		exit(0);
	}
	itest_kids[itest_nkids].pid = pid;
	snprintf(itest_kids[itest_nkids].who, sizeof(itest_kids[0].who), "%s",
		 who);
	itest_kids[itest_nkids].done = false;
	itest_nkids++;
	return pid;
}

void itest_wait_kid(pid_t pid)
{
	int64_t deadline = itest_deadline();

	for (;;) {
		bool all = true;

		itest_check_kids();
		for (int i = 0; i < itest_nkids; i++)
			if (!pid || itest_kids[i].pid == pid)
				all = all && itest_kids[i].done;
		if (all)
			return;
		if (itest_now_ms() > deadline)
			FAIL("timed out waiting for %s to exit",
			     pid ? "a child" : "the children");
		usleep(1000);
	}
}

void itest_wait_kids(void)
{
	itest_wait_kid(0);
}

/* Progress: every CQ and counter this process opened. */

static struct itest_cq *itest_cqs[ITEST_MAX_CQS];
static struct fid_cntr *itest_cntrs[ITEST_MAX_CNTRS];

static void itest_cq_push(struct itest_cq *c, const struct itest_comp *comp)
{
	if (c->count == c->cap) {
		size_t cap = c->cap ? 2 * c->cap : 64;
		struct itest_comp *n = calloc(cap, sizeof(*n));

		CHECK(n != NULL);
		for (size_t i = 0; i < c->count; i++)
			n[i] = c->comps[(c->head + i) % c->cap];
		free(c->comps);
		c->comps = n;
		c->head = 0;
		c->cap = cap;
	}
	c->comps[(c->head + c->count++) % c->cap] = *comp;
}

static void itest_cq_push_err(struct itest_cq *c,
			      const struct fi_cq_err_entry *err)
{
	if (c->ecount == c->ecap) {
		size_t cap = c->ecap ? 2 * c->ecap : 16;
		struct fi_cq_err_entry *n = calloc(cap, sizeof(*n));

		CHECK(n != NULL);
		for (size_t i = 0; i < c->ecount; i++)
			n[i] = c->errs[(c->ehead + i) % c->ecap];
		free(c->errs);
		c->errs = n;
		c->ehead = 0;
		c->ecap = cap;
	}
	c->errs[(c->ehead + c->ecount++) % c->ecap] = *err;
}

static void itest_cq_print_err(struct itest_cq *c,
			       const struct fi_cq_err_entry *err)
{
	fprintf(stderr,
		"  %s error entry: err %d (%s), prov_errno %d (%s), "
		"op_context %p, flags 0x%" PRIx64 ", len %zu, olen %zu\n",
		c->name, err->err, fi_strerror(err->err), err->prov_errno,
		fi_cq_strerror(c->cq, err->prov_errno, err->err_data, NULL, 0),
		err->op_context, err->flags, err->len, err->olen);
}

/* Fails for an unexpected error entry, showing any others pending. */
static void itest_cq_fail_err(struct itest_cq *c,
			      const struct fi_cq_err_entry *err)
{
	struct fi_cq_err_entry more;

	fprintf(stderr, "[%s, pid %d%s%s] %s: unexpected error completion\n",
		itest_who, (int) getpid(), itest_step ? ", in " : "",
		itest_step ? itest_step : "", c->name);
	itest_cq_print_err(c, err);
	for (int i = 0; i < 16; i++) {
		memset(&more, 0, sizeof(more));
		if (fi_cq_readerr(c->cq, &more, 0) != 1)
			break;
		itest_cq_print_err(c, &more);
	}
	FAIL("%s: unexpected error completion: err %d (%s)", c->name, err->err,
	     fi_strerror(err->err));
}

size_t itest_cq_poll(struct itest_cq *c)
{
	union {
		struct fi_cq_entry ctx[16];
		struct fi_cq_msg_entry msg[16];
		struct fi_cq_data_entry data[16];
		struct fi_cq_tagged_entry tagged[16];
	} u;
	fi_addr_t src[16];
	struct fi_cq_err_entry err;
	ssize_t n;

	memset(&u, 0, sizeof(u));
	n = fi_cq_readfrom(c->cq, &u, 16, src);
	if (n == -FI_EAGAIN)
		return 0;
	if (n == -FI_EAVAIL) {
		memset(&err, 0, sizeof(err));
		n = fi_cq_readerr(c->cq, &err, 0);
		if (n != 1)
			FAIL("%s: fi_cq_readerr returned %zd (%s) after "
			     "-FI_EAVAIL",
			     c->name, n, fi_strerror((int) -n));
		if (!c->errors_ok)
			itest_cq_fail_err(c, &err);
		itest_cq_push_err(c, &err);
		return 1;
	}
	if (n < 0)
		FAIL("%s: fi_cq_readfrom returned %zd (%s)", c->name, n,
		     fi_strerror((int) -n));
	c->seen += n;
	for (ssize_t i = 0; i < n && !c->count_only; i++) {
		struct itest_comp comp = { .src = src[i] };

		switch (c->format) {
		case FI_CQ_FORMAT_CONTEXT:
			comp.op_context = u.ctx[i].op_context;
			break;
		case FI_CQ_FORMAT_MSG:
			comp.op_context = u.msg[i].op_context;
			comp.flags = u.msg[i].flags;
			comp.len = u.msg[i].len;
			break;
		case FI_CQ_FORMAT_DATA:
			comp.op_context = u.data[i].op_context;
			comp.flags = u.data[i].flags;
			comp.len = u.data[i].len;
			comp.buf = u.data[i].buf;
			comp.data = u.data[i].data;
			break;
		default:
			comp.op_context = u.tagged[i].op_context;
			comp.flags = u.tagged[i].flags;
			comp.len = u.tagged[i].len;
			comp.buf = u.tagged[i].buf;
			comp.data = u.tagged[i].data;
			comp.tag = u.tagged[i].tag;
			break;
		}
		itest_cq_push(c, &comp);
	}
	return n;
}

void itest_progress(void)
{
	static int64_t last_kid_check;
	bool any = false;
	int64_t now;

	for (int i = 0; i < ITEST_MAX_CQS; i++)
		if (itest_cqs[i]) {
			itest_cq_poll(itest_cqs[i]);
			any = true;
		}
	for (int i = 0; i < ITEST_MAX_CNTRS; i++)
		if (itest_cntrs[i]) {
			(void) fi_cntr_read(itest_cntrs[i]);
			any = true;
		}
	now = itest_now_ms();
	if (itest_nkids && now - last_kid_check >= 5) {
		last_kid_check = now;
		itest_check_kids();
	}
	/* The VM has few CPUs and many spinning processes. */
	if (any)
		sched_yield();
	else
		usleep(2000);
}

void itest_check_deadline(int64_t deadline, const char *what)
{
	if (itest_now_ms() > deadline)
		FAIL("timed out after %" PRId64 " s waiting for %s",
		     itest_wait_ms() / 1000, what);
}

void itest_idle(int ms)
{
	int64_t end = itest_now_ms() + ms;

	while (itest_now_ms() < end)
		itest_progress();
}

/* CQs */

struct itest_cq *itest_cq_open(struct fid_domain *domain,
			       enum fi_cq_format format, const char *name)
{
	struct fi_cq_attr attr = { .size = 1024,
				   .format = format,
				   .wait_obj = FI_WAIT_NONE };
	struct itest_cq *c = calloc(1, sizeof(*c));
	int i;

	CHECK(c != NULL);
	c->format = format;
	snprintf(c->name, sizeof(c->name), "%s", name);
	CHECK_OK(fi_cq_open(domain, &attr, &c->cq, NULL));
	for (i = 0; i < itest_max_cqs && i < ITEST_MAX_CQS && itest_cqs[i]; i++)
		;
	CHECK(i < itest_max_cqs && i < ITEST_MAX_CQS);
	itest_cqs[i] = c;
	return c;
}

void itest_cq_close(struct itest_cq *c)
{
	for (int i = 0; i < ITEST_MAX_CQS; i++)
		if (itest_cqs[i] == c)
			itest_cqs[i] = NULL;
	CHECK_OK(fi_close(&c->cq->fid));
	free(c->comps);
	free(c->errs);
	free(c);
}

void itest_cq_forget(struct itest_cq *c)
{
	c->head = c->count = 0;
}

struct itest_comp itest_cq_wait_at(const char *file, int line,
				   struct itest_cq *c, const char *what)
{
	int64_t deadline = itest_deadline();
	struct itest_comp comp;

	CHECK(!c->count_only);
	while (!c->count) {
		if (c->ecount)
			itest_fail_at(file, line,
				      "%s: an error completion "
				      "(err %d, %s, prov_errno %d) came while "
				      "waiting for %s",
				      c->name, c->errs[c->ehead].err,
				      fi_strerror(c->errs[c->ehead].err),
				      c->errs[c->ehead].prov_errno, what);
		if (itest_now_ms() > deadline)
			itest_fail_at(file, line,
				      "%s: timed out after %" PRId64
				      " s waiting for %s",
				      c->name, itest_wait_ms() / 1000, what);
		itest_progress();
	}
	comp = c->comps[c->head];
	c->head = (c->head + 1) % c->cap;
	c->count--;
	return comp;
}

void itest_cq_wait_n(struct itest_cq *c, struct itest_comp *out, size_t n,
		     const char *what)
{
	for (size_t i = 0; i < n; i++)
		out[i] = itest_cq_wait(c, what);
}

struct fi_cq_err_entry itest_cq_wait_err_at(const char *file, int line,
					    struct itest_cq *c, bool no_comp,
					    const char *what)
{
	int64_t deadline = itest_deadline();
	struct fi_cq_err_entry err;

	CHECK(c->errors_ok);
	while (!c->ecount) {
		if (no_comp && c->count)
			itest_fail_at(file, line,
				      "%s: a successful completion"
				      " (op_context %p, flags 0x%" PRIx64 ") "
				      "came while waiting for %s",
				      c->name, c->comps[c->head].op_context,
				      c->comps[c->head].flags, what);
		if (itest_now_ms() > deadline)
			itest_fail_at(file, line,
				      "%s: timed out after %" PRId64
				      " s waiting for %s",
				      c->name, itest_wait_ms() / 1000, what);
		itest_progress();
	}
	err = c->errs[c->ehead];
	c->ehead = (c->ehead + 1) % c->ecap;
	c->ecount--;
	return err;
}

void itest_cq_expect_empty_at(const char *file, int line, struct itest_cq *c,
			      int idle_ms, const char *why)
{
	if (idle_ms)
		itest_idle(idle_ms);
	else
		itest_progress();
	if (c->count)
		itest_fail_at(
			file, line,
			"%s: %zu unexpected completion(s) "
			"(%s); the first has op_context %p, flags 0x%" PRIx64
			", len %zu",
			c->name, c->count, why, c->comps[c->head].op_context,
			c->comps[c->head].flags, c->comps[c->head].len);
	if (c->ecount)
		itest_fail_at(file, line,
			      "%s: %zu unexpected error "
			      "completion(s) (%s): err %d (%s)",
			      c->name, c->ecount, why, c->errs[c->ehead].err,
			      fi_strerror(c->errs[c->ehead].err));
}

/* Counters */

struct fid_cntr *itest_cntr_open(struct fid_domain *domain)
{
	struct fi_cntr_attr attr = { .events = FI_CNTR_EVENTS_COMP,
				     .wait_obj = FI_WAIT_UNSPEC };
	struct fid_cntr *cntr;
	int i;

	CHECK_OK(fi_cntr_open(domain, &attr, &cntr, NULL));
	for (i = 0; i < ITEST_MAX_CNTRS && itest_cntrs[i]; i++)
		;
	CHECK(i < ITEST_MAX_CNTRS);
	itest_cntrs[i] = cntr;
	return cntr;
}

void itest_cntr_close(struct fid_cntr *cntr)
{
	if (!cntr)
		return;
	for (int i = 0; i < ITEST_MAX_CNTRS; i++)
		if (itest_cntrs[i] == cntr)
			itest_cntrs[i] = NULL;
	CHECK_OK(fi_close(&cntr->fid));
}

void itest_cntr_wait(struct fid_cntr *cntr, uint64_t value, const char *what)
{
	int ret = fi_cntr_wait(cntr, value, (int) itest_wait_ms());

	if (ret)
		FAIL("fi_cntr_wait(%s, %" PRIu64
		     ") returned %d (%s): value %" PRIu64 ", errors %" PRIu64,
		     what, value, ret, fi_strerror(-ret), fi_cntr_read(cntr),
		     fi_cntr_readerr(cntr));
}

/* Pipes between a parent and one child */

void itest_link_init(struct itest_link *l)
{
	CHECK(pipe(l->p2c) == 0);
	CHECK(pipe(l->c2p) == 0);
}

struct itest_chan itest_link_parent(struct itest_link *l)
{
	close(l->p2c[0]);
	close(l->c2p[1]);
	return (struct itest_chan){ .rd = l->c2p[0], .wr = l->p2c[1] };
}

struct itest_chan itest_link_child(struct itest_link *l)
{
	close(l->p2c[1]);
	close(l->c2p[0]);
	return (struct itest_chan){ .rd = l->p2c[0], .wr = l->c2p[1] };
}

void itest_link_close_all(struct itest_link *l)
{
	close(l->p2c[0]);
	close(l->p2c[1]);
	close(l->c2p[0]);
	close(l->c2p[1]);
}

void itest_chan_close(struct itest_chan *ch)
{
	close(ch->rd);
	close(ch->wr);
}

void itest_chan_write(struct itest_chan *ch, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = write(ch->wr, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			FAIL("write to the peer's pipe failed: %s",
			     strerror(errno));
		p += n;
		len -= n;
	}
}

void itest_chan_read_at(const char *file, int line, struct itest_chan *ch,
			void *buf, size_t len, bool progress, const char *what)
{
	int64_t deadline = itest_deadline();
	char *p = buf;

	while (len) {
		struct pollfd pfd = { .fd = ch->rd, .events = POLLIN };
		ssize_t n;

		if (poll(&pfd, 1, progress ? 0 : 10) <= 0) {
			if (itest_now_ms() > deadline)
				itest_fail_at(file, line,
					      "timed out after %" PRId64
					      " s waiting for %s",
					      itest_wait_ms() / 1000, what);
			if (progress)
				itest_progress();
			else if (itest_nkids)
				itest_check_kids();
			continue;
		}
		n = read(ch->rd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n == 0) {
			/* Say so if the peer is a child that failed. */
			for (int i = 0; i < 100 && itest_nkids; i++) {
				itest_check_kids();
				usleep(10000);
			}
			itest_fail_at(file, line,
				      "the peer closed its pipe "
				      "while we waited for %s",
				      what);
		}
		if (n < 0)
			itest_fail_at(file, line,
				      "read from the peer's pipe "
				      "failed: %s",
				      strerror(errno));
		p += n;
		len -= n;
	}
}

bool itest_chan_ready(struct itest_chan *ch)
{
	struct pollfd pfd = { .fd = ch->rd, .events = POLLIN };

	return poll(&pfd, 1, 0) > 0;
}

void itest_signal(struct itest_chan *ch, uint32_t tag)
{
	itest_chan_write(ch, &tag, sizeof(tag));
}

void itest_expect_at(const char *file, int line, struct itest_chan *ch,
		     uint32_t tag, bool progress, const char *what)
{
	uint32_t got;

	itest_chan_read_at(file, line, ch, &got, sizeof(got), progress, what);
	if (got != tag)
		itest_fail_at(file, line,
			      "out of step with the peer: got "
			      "signal %u, expected %u (%s)",
			      got, tag, what);
}

void itest_sync(struct itest_chan *ch, uint32_t tag, const char *what)
{
	itest_signal(ch, tag);
	itest_expect(ch, tag, what);
}

void itest_chan_wait_idle(struct itest_chan *ch, int64_t wait_ms,
			  const char *what)
{
	int64_t deadline = itest_now_ms() + wait_ms;
	struct pollfd pfd = { .fd = ch->rd, .events = POLLIN };

	while (poll(&pfd, 1, 100) <= 0)
		if (itest_now_ms() > deadline)
			FAIL("timed out after %" PRId64 " s waiting for %s",
			     wait_ms / 1000, what);
}

void itest_expect_idle(struct itest_chan *ch, uint32_t tag, int64_t wait_ms,
		       const char *what)
{
	itest_chan_wait_idle(ch, wait_ms, what);
	itest_expect(ch, tag, what);
}

/* Fabric, domain and endpoints */

struct fi_info *itest_info;
struct fid_fabric *itest_fabric_fid;
struct fid_domain *itest_domain_fid;
uint64_t itest_extra_caps;

struct fid_domain *itest_domain(void)
{
	if (!itest_domain_fid) {
		uint64_t caps = ITEST_MSG_CAPS | itest_extra_caps;
		struct fi_info *hints = itest_hints();

		hints->caps = caps;
		hints->domain_attr->name = strdup(itest_device());
		CHECK(hints->domain_attr->name != NULL);
		CHECK_OK(fi_getinfo(ITEST_VERSION, NULL, NULL, 0, hints,
				    &itest_info));
		CHECK(itest_info != NULL);
		fi_freeinfo(hints);
		CHECK((itest_info->caps & caps) == caps);
		CHECK_OK(fi_fabric(itest_info->fabric_attr, &itest_fabric_fid,
				   NULL));
		CHECK_OK(fi_domain(itest_fabric_fid, itest_info,
				   &itest_domain_fid, NULL));
	}
	return itest_domain_fid;
}

void itest_domain_close(void)
{
	if (!itest_domain_fid)
		return;
	CHECK_OK(fi_close(&itest_domain_fid->fid));
	CHECK_OK(fi_close(&itest_fabric_fid->fid));
	fi_freeinfo(itest_info);
	itest_domain_fid = NULL;
	itest_fabric_fid = NULL;
	itest_info = NULL;
}

void itest_node_open(struct itest_node *n, const struct itest_node_opts *o,
		     const char *name)
{
	static const struct itest_node_opts defaults;
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE };
	struct fid_domain *domain = itest_domain();
	struct fi_info *info;
	char cq_name[32];
	size_t len = sizeof(n->name);

	if (!o)
		o = &defaults;
	info = fi_dupinfo(o->info ? o->info : itest_info);
	CHECK(info != NULL);
	/* Smaller queues make endpoints quicker to open. */
	if (o->tx_size)
		info->tx_attr->size = o->tx_size;
	if (o->rx_size)
		info->rx_attr->size = o->rx_size;
	memset(n, 0, sizeof(*n));
	n->peer = FI_ADDR_NOTAVAIL;
	CHECK_OK(fi_av_open(domain, &av_attr, &n->av, NULL));
	CHECK_OK(fi_endpoint(domain, info, &n->ep, NULL));
	fi_freeinfo(info);
	CHECK_OK(fi_ep_bind(n->ep, &n->av->fid, 0));
	if (!o->no_tx_cq) {
		snprintf(cq_name, sizeof(cq_name), "%s tx CQ", name);
		n->tx = itest_cq_open(domain,
				      o->tx_format ? o->tx_format :
						     FI_CQ_FORMAT_TAGGED,
				      cq_name);
		CHECK_OK(fi_ep_bind(n->ep, &n->tx->cq->fid,
				    FI_TRANSMIT | o->tx_bind));
	}
	if (!o->no_rx_cq) {
		snprintf(cq_name, sizeof(cq_name), "%s rx CQ", name);
		n->rx = itest_cq_open(domain,
				      o->rx_format ? o->rx_format :
						     FI_CQ_FORMAT_TAGGED,
				      cq_name);
		CHECK_OK(fi_ep_bind(n->ep, &n->rx->cq->fid,
				    FI_RECV | o->rx_bind));
	}
	if (o->send_cntr) {
		n->send_cntr = itest_cntr_open(domain);
		CHECK_OK(fi_ep_bind(n->ep, &n->send_cntr->fid, FI_SEND));
	}
	if (o->recv_cntr) {
		n->recv_cntr = itest_cntr_open(domain);
		CHECK_OK(fi_ep_bind(n->ep, &n->recv_cntr->fid, FI_RECV));
	}
	if (o->before_enable)
		o->before_enable(n->ep);
	CHECK_OK(fi_enable(n->ep));
	CHECK_OK(fi_getname(&n->ep->fid, &n->name, &len));
	CHECK(len == sizeof(n->name));
}

void itest_node_close(struct itest_node *n)
{
	CHECK_OK(fi_close(&n->ep->fid));
	if (n->tx)
		itest_cq_close(n->tx);
	if (n->rx)
		itest_cq_close(n->rx);
	if (n->send_cntr)
		itest_cntr_close(n->send_cntr);
	if (n->recv_cntr)
		itest_cntr_close(n->recv_cntr);
	CHECK_OK(fi_close(&n->av->fid));
	memset(n, 0, sizeof(*n));
}

fi_addr_t itest_av_insert1(struct fid_av *av, const struct sockaddr_in *name)
{
	fi_addr_t addr = FI_ADDR_NOTAVAIL;

	CHECK_RET(fi_av_insert(av, name, 1, &addr, 0, NULL), 1);
	CHECK(addr != FI_ADDR_NOTAVAIL);
	return addr;
}

struct sockaddr_in itest_name_swap(struct itest_chan *ch,
				   const struct sockaddr_in *name)
{
	struct sockaddr_in peer;

	itest_chan_write(ch, name, sizeof(*name));
	itest_chan_read(ch, &peer, sizeof(peer), "the peer's endpoint name");
	return peer;
}

fi_addr_t itest_node_insert(struct itest_node *n,
			    const struct sockaddr_in *name)
{
	n->peer = itest_av_insert1(n->av, name);
	return n->peer;
}

fi_addr_t itest_node_exchange(struct itest_node *n, struct itest_chan *ch)
{
	struct sockaddr_in peer = itest_name_swap(ch, &n->name);

	return itest_node_insert(n, &peer);
}

/* Data patterns: byte i of stream seed is a function of (seed, i). */

uint64_t itest_pat_word(uint64_t seed, uint64_t idx)
{
	uint64_t x = (seed * 0x9e3779b97f4a7c15ULL) ^
		     (idx * 0xbf58476d1ce4e5b9ULL);

	x ^= x >> 31;
	x *= 0x94d049bb133111ebULL;
	x ^= x >> 29;
	return x;
}

void itest_pat_gen_b(void *dst, uint64_t seed, size_t off, size_t len,
		     uint64_t bias)
{
	unsigned char *p = dst;

	while (len) {
		uint64_t w = itest_pat_word(seed, off / 8 + bias);
		size_t b = off % 8, take = 8 - b;

		if (take > len)
			take = len;
		if (b == 0 && take == 8) {
			memcpy(p, &w, 8);
		} else {
			for (size_t i = 0; i < take; i++)
				p[i] = (unsigned char) (w >> (8 * (b + i)));
		}
		p += take;
		off += take;
		len -= take;
	}
}

void itest_pat_gen(void *dst, uint64_t seed, size_t off, size_t len)
{
	itest_pat_gen_b(dst, seed, off, len, 0);
}

void itest_pat_check_b(const char *file, int line, const void *buf,
		       uint64_t seed, size_t off, size_t len, uint64_t bias,
		       const char *what)
{
	static unsigned char want[4096];
	const unsigned char *p = buf;

	for (size_t done = 0; done < len;) {
		size_t n = len - done;

		if (n > sizeof(want))
			n = sizeof(want);
		itest_pat_gen_b(want, seed, off + done, n, bias);
		if (memcmp(p + done, want, n)) {
			size_t i = 0;

			while (p[done + i] == want[i])
				i++;
			itest_fail_at(file, line,
				      "%s: data differs at byte "
				      "%zu of %zu: got 0x%02x, expected "
				      "0x%02x",
				      what, off + done + i, off + len,
				      p[done + i], want[i]);
		}
		done += n;
	}
}

void itest_pat_check_at(const char *file, int line, const void *buf,
			uint64_t seed, size_t off, size_t len, const char *what)
{
	itest_pat_check_b(file, line, buf, seed, off, len, 0, what);
}

void itest_msg_fill(void *buf, size_t len, uint64_t seed)
{
	itest_pat_gen(buf, seed, 0, len);
	if (len >= 8) {
		uint32_t hdr[2] = { ITEST_MSG_MAGIC, (uint32_t) seed };

		memcpy(buf, hdr, sizeof(hdr));
	}
}

void itest_msg_check_at(const char *file, int line, const void *buf, size_t len,
			uint64_t seed, const char *what)
{
	if (len >= 8) {
		uint32_t hdr[2];

		memcpy(hdr, buf, sizeof(hdr));
		if (hdr[0] != ITEST_MSG_MAGIC)
			itest_fail_at(file, line,
				      "%s: no message header "
				      "(0x%08x): not a message",
				      what, hdr[0]);
		if (hdr[1] != (uint32_t) seed)
			itest_fail_at(file, line,
				      "%s: holds message %u, "
				      "expected message %u",
				      what, hdr[1], (uint32_t) seed);
		itest_pat_check_at(file, line, (const char *) buf + 8, seed, 8,
				   len - 8, what);
	} else {
		itest_pat_check_at(file, line, buf, seed, 0, len, what);
	}
}

void *itest_guarded(size_t len)
{
	unsigned char *p = malloc(len + ITEST_GUARD);

	CHECK(p != NULL);
	memset(p, 0, len);
	memset(p + len, ITEST_GUARD_BYTE, ITEST_GUARD);
	return p;
}

void itest_guard_reset(void *buf, size_t len, int fill)
{
	memset(buf, fill, len);
	memset((char *) buf + len, ITEST_GUARD_BYTE, ITEST_GUARD);
}

void itest_guard_check_at(const char *file, int line, const void *buf,
			  size_t len, const char *what)
{
	const unsigned char *g = (const unsigned char *) buf + len;

	for (size_t i = 0; i < ITEST_GUARD; i++)
		if (g[i] != ITEST_GUARD_BYTE)
			itest_fail_at(file, line,
				      "%s: byte %zu past the end "
				      "of the %zu-byte buffer was overwritten",
				      what, i, len);
}
