/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Counters.  Endpoint progress bumps the local count (nrma_comp.c); peers
 * bump the notification words a counter watches, with remote atomics.
 * A counter's value is its local count plus the sum of its words; the
 * words are only ever written by the device, so fi_cntr_set and closing
 * a binding move the local count (the bias) instead.
 */
#include <stdlib.h>
#include <time.h>

#include "nrma.h"
#include "nrma_comp.h"
#include "nrma_enosys.h"
#include "nrma_notify.h"

/* A counter is remote-driven while it watches words: nothing signals it. */
static bool cntr_remote(struct nrma_cntr *cntr)
{
	return atomic_load(&atomic_load(&cntr->words)->count);
}

/*
 * A change to the words and the bias, with cntr->lock held.  Its stores
 * are sequentially consistent, so none of them is seen before the odd
 * count; a reader that sees one of them sees the odd count after it
 * (its loads are acquire loads: nrma_comp_cntr_value).
 */
static void cntr_words_change(struct nrma_cntr *cntr)
{
	unsigned seq =
		atomic_load_explicit(&cntr->words_seq, memory_order_relaxed);

	atomic_store_explicit(&cntr->words_seq, seq + 1, memory_order_relaxed);
}

static void cntr_words_changed(struct nrma_cntr *cntr)
{
	atomic_fetch_add_explicit(&cntr->words_seq, 1, memory_order_release);
}

/* The value stays what it was: the bias takes the word's current count. */
static int cntr_watch(struct nrma_cntr *cntr, volatile uint64_t *word)
{
	struct nrma_wordset *words;

	pthread_mutex_lock(&cntr->lock);
	words = nrma_wordset_room(atomic_load(&cntr->words));
	if (words) {
		atomic_store(&cntr->words, words);
		cntr_words_change(cntr);
		nrma_wordset_add(words, word);
		atomic_fetch_sub(&cntr->value, *word);
		cntr_words_changed(cntr);
	}
	pthread_mutex_unlock(&cntr->lock);
	return words ? 0 : -FI_ENOMEM;
}

static void cntr_unwatch(struct nrma_cntr *cntr, volatile uint64_t *word)
{
	pthread_mutex_lock(&cntr->lock);
	cntr_words_change(cntr);
	if (nrma_wordset_remove(atomic_load(&cntr->words), word))
		atomic_fetch_add(&cntr->value, *word);
	cntr_words_changed(cntr);
	pthread_mutex_unlock(&cntr->lock);
}

/* Whether cntr counts the cell's updates: it is bound for either kind. */
static bool cntr_counts_updates(const struct nrma_remote_cntrs *remote,
				const struct nrma_cntr *cntr)
{
	return remote->cntr[NRMA_NOTIFY_WRITES] == cntr ||
	       remote->cntr[NRMA_NOTIFY_READS] == cntr;
}

/*
 * FI_REMOTE_WRITE and FI_REMOTE_READ each bind one word of the cell to a
 * counter, which stays open (-FI_EBUSY) until the binding closes, and a
 * counter bound for either also watches the updates' word, once.
 */
int nrma_cntr_remote_bind(struct nrma_remote_cntrs *remote,
			  struct nrma_domain *domain, struct nrma_cntr *cntr,
			  uint64_t flags)
{
	bool write = flags & FI_REMOTE_WRITE, read = flags & FI_REMOTE_READ;
	enum nrma_notify_word words[3];
	int n = 0, ret = 0;

	if ((write && remote->cntr[NRMA_NOTIFY_WRITES]) ||
	    (read && remote->cntr[NRMA_NOTIFY_READS]))
		return -FI_EINVAL;
	if (!remote->cell) {
		ret = nrma_notify_cell_open(domain->notify, &remote->cell);
		if (ret)
			return ret;
	}
	if (write)
		words[n++] = NRMA_NOTIFY_WRITES;
	if (read)
		words[n++] = NRMA_NOTIFY_READS;
	if (n && !cntr_counts_updates(remote, cntr))
		words[n++] = NRMA_NOTIFY_UPDATES;
	for (int i = 0; i < n && !ret; i++) {
		ret = cntr_watch(cntr,
				 nrma_notify_cell_word(remote->cell, words[i]));
		while (ret && i--)
			cntr_unwatch(cntr, nrma_notify_cell_word(remote->cell,
								 words[i]));
	}
	if (ret)
		return ret;
	if (write)
		remote->cntr[NRMA_NOTIFY_WRITES] = cntr;
	if (read)
		remote->cntr[NRMA_NOTIFY_READS] = cntr;
	atomic_fetch_add(&cntr->ref, write + read);
	return 0;
}

uint32_t nrma_cntr_remote_rkey(const struct nrma_remote_cntrs *remote)
{
	return remote->cell ? nrma_notify_cell_rkey(remote->cell) : 0;
}

/* Once no atomic can land, each counter takes its word's sum for good. */
void nrma_cntr_remote_close(struct nrma_remote_cntrs *remote)
{
	volatile uint64_t *updates;

	if (!remote->cell)
		return;
	updates = nrma_notify_cell_word(remote->cell, NRMA_NOTIFY_UPDATES);
	nrma_notify_cell_disarm(remote->cell);
	for (int i = NRMA_NOTIFY_WRITES; i <= NRMA_NOTIFY_READS; i++) {
		struct nrma_cntr *cntr = remote->cntr[i];

		if (!cntr)
			continue;
		cntr_unwatch(cntr, nrma_notify_cell_word(remote->cell, i));
		remote->cntr[i] = NULL;
		/* The updates' word, as its counter's last binding goes. */
		if (!cntr_counts_updates(remote, cntr))
			cntr_unwatch(cntr, updates);
		atomic_fetch_sub(&cntr->ref, 1);
	}
	nrma_notify_cell_close(remote->cell);
	remote->cell = NULL;
}

/* Apart from the read of one with none, which then saves no registers. */
static NRMA_NOINLINE void cntr_progress_eps(struct nrma_cntr *cntr)
{
	nrma_ep_set_progress(&cntr->eps, NULL);
}

/*
 * Reading a counter drives progress: nrma's progress model is manual.  A
 * counter bound only for remote events has no endpoints to progress, and
 * its read takes no lock: it is what a target polls.
 */
static void cntr_progress(struct nrma_cntr *cntr)
{
	if (!nrma_ep_set_empty(&cntr->eps))
		cntr_progress_eps(cntr);
}

/* A read that progresses endpoints first: apart, as cntr_progress_eps. */
static NRMA_NOINLINE uint64_t cntr_read_progressed(struct nrma_cntr *cntr)
{
	nrma_ep_set_progress(&cntr->eps, NULL);
	return nrma_comp_cntr_value(cntr);
}

static uint64_t nrma_cntr_read(struct fid_cntr *cntr_fid)
{
	struct nrma_cntr *cntr = nrma_cntr_of(cntr_fid);

	if (!nrma_ep_set_empty(&cntr->eps))
		return cntr_read_progressed(cntr);
	return nrma_comp_cntr_value(cntr);
}

static uint64_t nrma_cntr_readerr(struct fid_cntr *cntr_fid)
{
	struct nrma_cntr *cntr = nrma_cntr_of(cntr_fid);

	cntr_progress(cntr);
	return atomic_load(&cntr->err);
}

static int nrma_cntr_add(struct fid_cntr *cntr_fid, uint64_t value)
{
	struct nrma_cntr *cntr = nrma_cntr_of(cntr_fid);

	atomic_fetch_add(&cntr->value, value);
	nrma_wait_raise(&cntr->wait);
	return 0;
}

/* Remote atomics may land at any time: only the bias is ever written. */
static int nrma_cntr_set(struct fid_cntr *cntr_fid, uint64_t value)
{
	struct nrma_cntr *cntr = nrma_cntr_of(cntr_fid);

	pthread_mutex_lock(&cntr->lock);
	atomic_store(&cntr->value, value - nrma_comp_cntr_words(cntr));
	pthread_mutex_unlock(&cntr->lock);
	nrma_wait_raise(&cntr->wait);
	return 0;
}

static int nrma_cntr_adderr(struct fid_cntr *cntr_fid, uint64_t value)
{
	struct nrma_cntr *cntr = nrma_cntr_of(cntr_fid);

	atomic_fetch_add(&cntr->err, value);
	nrma_wait_raise(&cntr->wait);
	return 0;
}

static int nrma_cntr_seterr(struct fid_cntr *cntr_fid, uint64_t value)
{
	struct nrma_cntr *cntr = nrma_cntr_of(cntr_fid);

	atomic_store(&cntr->err, value);
	nrma_wait_raise(&cntr->wait);
	return 0;
}

/*
 * Polls for wait_spin_us, then sleeps on the wait object; any local update
 * to the counter wakes it.  Remote atomics wake nobody, so a counter that
 * watches notification words, or whose endpoints' sends wait for credits,
 * sleeps at most notify_wake_ms at a time.  A new
 * error ends the wait with -FI_EAVAIL.
 */
static int sleep_bound(struct nrma_cntr *cntr, int left_ms)
{
	if (cntr_remote(cntr) &&
	    (left_ms < 0 || left_ms > nrma_params.notify_wake_ms))
		return nrma_params.notify_wake_ms;
	return nrma_ep_set_sleep_ms(&cntr->eps, left_ms);
}

static int nrma_cntr_wait(struct fid_cntr *cntr_fid, uint64_t threshold,
			  int timeout)
{
	struct nrma_cntr *cntr = nrma_cntr_of(cntr_fid);
	uint64_t errors = atomic_load(&cntr->err);
	struct timespec start;
	int ret;

	clock_gettime(CLOCK_MONOTONIC, &start);
	for (;;) {
		nrma_ep_set_progress(&cntr->eps, NULL);
		if (nrma_comp_cntr_value(cntr) >= threshold)
			return 0;
		if (atomic_load(&cntr->err) != errors)
			return -FI_EAVAIL;
		if (!nrma_wait_timeout_left(&start, timeout))
			return -FI_ETIMEDOUT;
		if (nrma_wait_elapsed_us(&start) < nrma_params.wait_spin_us)
			continue;
		/* Recheck after lowering: a raise may have been eaten. */
		nrma_wait_lower(&cntr->wait);
		if (nrma_comp_cntr_value(cntr) >= threshold)
			return 0;
		if (atomic_load(&cntr->err) != errors)
			return -FI_EAVAIL;
		if (nrma_ep_set_arm(&cntr->eps))
			continue;
		ret = nrma_wait_block(
			&cntr->wait,
			sleep_bound(cntr,
				    nrma_wait_timeout_left(&start, timeout)));
		if (ret && ret != -FI_ETIMEDOUT)
			return ret;
	}
}

int nrma_cntr_trywait(struct nrma_cntr *cntr)
{
	int ret;

	nrma_ep_set_progress(&cntr->eps, NULL);
	/* Remote atomics raise no event: such a counter must be polled, and
	 * so must one whose endpoints' sends wait for credits. */
	if (cntr_remote(cntr) || nrma_ep_set_polled(&cntr->eps))
		return -FI_EAGAIN;
	ret = nrma_ep_set_arm(&cntr->eps);
	/* Every local change raises the fd: lowered now, it wakes on the next. */
	if (!ret)
		nrma_wait_lower(&cntr->wait);
	return ret;
}

static int nrma_cntr_control(struct fid *fid, int command, void *arg)
{
	struct nrma_cntr *cntr = nrma_cntr_of_fid(fid);

	return nrma_wait_control(&cntr->wait, command, arg);
}

static int nrma_cntr_close(struct fid *fid)
{
	struct nrma_cntr *cntr = nrma_cntr_of_fid(fid);

	if (atomic_load(&cntr->ref))
		return -FI_EBUSY;
	nrma_ep_set_fini(&cntr->eps);
	nrma_wordset_free(cntr->words);
	pthread_mutex_destroy(&cntr->lock);
	nrma_wait_close(&cntr->wait);
	atomic_fetch_sub(&cntr->domain->ref, 1);
	free(cntr);
	return 0;
}

static struct fi_ops nrma_cntr_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = nrma_cntr_close,
	.bind = nrma_no_bind,
	.control = nrma_cntr_control,
	.ops_open = nrma_no_ops_open,
};

static struct fi_ops_cntr nrma_cntr_ops = {
	.size = sizeof(struct fi_ops_cntr),
	.read = nrma_cntr_read,
	.readerr = nrma_cntr_readerr,
	.add = nrma_cntr_add,
	.set = nrma_cntr_set,
	.wait = nrma_cntr_wait,
	.adderr = nrma_cntr_adderr,
	.seterr = nrma_cntr_seterr,
};

int nrma_cntr_open(struct fid_domain *domain_fid, struct fi_cntr_attr *attr,
		   struct fid_cntr **cntr_fid, void *context)
{
	struct nrma_domain *domain = nrma_domain_of(domain_fid);
	struct fi_cntr_attr defaults = { .events = FI_CNTR_EVENTS_COMP,
					 .wait_obj = FI_WAIT_UNSPEC };
	struct nrma_cntr *cntr;
	int ret;

	if (!attr)
		attr = &defaults;
	/* wait_set matters only with FI_WAIT_SET, which nrma_wait_open refuses. */
	if (attr->events != FI_CNTR_EVENTS_COMP || attr->flags)
		return -FI_EINVAL;
	cntr = calloc(1, sizeof(*cntr));
	if (!cntr)
		return -FI_ENOMEM;
	/* Never without a set: a read has one test less. */
	atomic_init(&cntr->words, nrma_wordset_new());
	if (!cntr->words) {
		free(cntr);
		return -FI_ENOMEM;
	}
	ret = nrma_wait_open(&cntr->wait, attr->wait_obj);
	if (ret) {
		nrma_wordset_free(cntr->words);
		free(cntr);
		return ret;
	}
	nrma_ep_set_init(&cntr->eps, domain->info->domain_attr->threading);
	pthread_mutex_init(&cntr->lock, NULL);
	cntr->domain = domain;
	cntr->cntr_fid.fid.fclass = FI_CLASS_CNTR;
	cntr->cntr_fid.fid.context = context;
	cntr->cntr_fid.fid.ops = &nrma_cntr_fi_ops;
	cntr->cntr_fid.ops = &nrma_cntr_ops;
	atomic_fetch_add(&domain->ref, 1);
	*cntr_fid = &cntr->cntr_fid;
	return 0;
}
