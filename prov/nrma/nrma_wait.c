/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Wait objects for CQs, counters and EQs.  FI_WAIT_FD (and FI_WAIT_UNSPEC)
 * is an epoll fd: it holds an eventfd that stays readable while the
 * object has something to read, and the completion and connection
 * channels of the endpoints whose progress can add to it.  With manual
 * progress an application calls fi_trywait() (which arms those channels)
 * before it sleeps on the fd.
 */
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "nrma.h"

static int wait_open_fd(struct nrma_wait *wait)
{
	wait->fd = epoll_create1(EPOLL_CLOEXEC);
	if (wait->fd < 0)
		return -errno;
	wait->event_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (wait->event_fd < 0 || nrma_wait_add_fd(wait, wait->event_fd)) {
		int ret = -errno;

		nrma_wait_close(wait);
		return ret;
	}
	return 0;
}

int nrma_wait_open(struct nrma_wait *wait, enum fi_wait_obj requested)
{
	wait->fd = wait->event_fd = -1;
	atomic_init(&wait->raised, false);
	switch (requested) {
	case FI_WAIT_NONE:
	case FI_WAIT_YIELD:
		wait->type = requested;
		return 0;
	case FI_WAIT_UNSPEC:
	case FI_WAIT_FD:
		wait->type = FI_WAIT_FD;
		return wait_open_fd(wait);
	default:
		/* Wait sets and mutex/condition pairs are not offered. */
		return -FI_ENOSYS;
	}
}

void nrma_wait_close(struct nrma_wait *wait)
{
	if (wait->event_fd >= 0)
		close(wait->event_fd);
	if (wait->fd >= 0)
		close(wait->fd);
	wait->fd = wait->event_fd = -1;
}

int nrma_wait_add_fd(struct nrma_wait *wait, int fd)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = fd };

	if (wait->fd < 0)
		return 0;
	return epoll_ctl(wait->fd, EPOLL_CTL_ADD, fd, &ev) ? -errno : 0;
}

void nrma_wait_del_fd(struct nrma_wait *wait, int fd)
{
	if (wait->fd >= 0)
		epoll_ctl(wait->fd, EPOLL_CTL_DEL, fd, NULL);
}

void nrma_wait_signal(struct nrma_wait *wait)
{
	uint64_t one = 1;

	if (wait->event_fd >= 0 &&
	    write(wait->event_fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		NRMA_WARN(FI_LOG_CORE, "eventfd write: %s\n", strerror(errno));
}

void nrma_wait_raise(struct nrma_wait *wait)
{
	if (wait->event_fd < 0 || atomic_load(&wait->raised) ||
	    atomic_exchange(&wait->raised, true))
		return;
	nrma_wait_signal(wait);
}

/* Cleared before the drain: a raise after it writes again. */
void nrma_wait_lower(struct nrma_wait *wait)
{
	if (!atomic_load(&wait->raised))
		return;
	atomic_store(&wait->raised, false);
	nrma_wait_drain(wait);
}

/* Called with the owner's queue empty, so the fd stops being readable. */
void nrma_wait_drain(struct nrma_wait *wait)
{
	uint64_t count;

	if (wait->event_fd >= 0 &&
	    read(wait->event_fd, &count, sizeof(count)) < 0 && errno != EAGAIN)
		NRMA_WARN(FI_LOG_CORE, "eventfd read: %s\n", strerror(errno));
}

int64_t nrma_wait_now_ms(void)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return now.tv_sec * 1000LL + now.tv_nsec / 1000000;
}

long nrma_wait_elapsed_us(const struct timespec *start)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (now.tv_sec - start->tv_sec) * 1000000 +
	       (now.tv_nsec - start->tv_nsec) / 1000;
}

int nrma_wait_timeout_left(const struct timespec *start, int timeout_ms)
{
	struct timespec now;
	long elapsed;

	if (timeout_ms < 0)
		return -1;
	clock_gettime(CLOCK_MONOTONIC, &now);
	elapsed = (now.tv_sec - start->tv_sec) * 1000 +
		  (now.tv_nsec - start->tv_nsec) / 1000000;
	return elapsed >= timeout_ms ? 0 : (int) (timeout_ms - elapsed);
}

/*
 * Sleeps until something may have happened or timeout_ms (negative:
 * forever) passes.  Returns 0 when woken, -FI_ETIMEDOUT otherwise.
 */
int nrma_wait_block(struct nrma_wait *wait, int timeout_ms)
{
	struct pollfd pfd = { .fd = wait->fd, .events = POLLIN };
	int ret;

	if (wait->fd < 0) {
		sched_yield();
		return timeout_ms == 0 ? -FI_ETIMEDOUT : 0;
	}
	ret = poll(&pfd, 1, timeout_ms);
	if (ret < 0)
		return errno == EINTR ? 0 : -errno;
	return ret ? 0 : -FI_ETIMEDOUT;
}

int nrma_wait_control(struct nrma_wait *wait, int command, void *arg)
{
	switch (command) {
	case FI_GETWAIT:
		if (wait->fd < 0)
			return -FI_ENODATA;
		*(int *) arg = wait->fd;
		return 0;
	case FI_GETWAITOBJ:
		*(enum fi_wait_obj *) arg = wait->type;
		return 0;
	default:
		return -FI_ENOSYS;
	}
}
