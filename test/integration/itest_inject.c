/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * See itest_inject.h.  Where the provider watches a device's async_fd
 * (epoll_ctl), it gets an epoll fd of ours that holds the real one and an
 * eventfd, so its thread wakes for either; ibv_get_async_event hands out
 * a made-up event before the device's own.  The device's fd itself stays
 * in its context: libibverbs needs it to create objects.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <rdma/rdma_cma.h>

#include "itest.h"
#include "itest_inject.h"

#define INJECT_DEVICES 16

struct inject_device {
	struct ibv_context *ctx;
	int real_fd;
	int epoll_fd;
	int event_fd;
};

static struct inject_device devices[INJECT_DEVICES];
static int ndevices;
static pthread_mutex_t inject_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ibv_async_event pending; /* made up, not yet read */
static struct ibv_async_event given;   /* read, not yet acknowledged */
static bool has_pending, has_given;
static struct ibv_cq *last_cq;

/* libibverbs keeps 1.0 versions beside the ones programs link to. */
static void *inject_real(const char *name)
{
	void *fn = dlvsym(RTLD_NEXT, name, "IBVERBS_1.1");

	CHECK(fn);
	return fn;
}

static int inject_epoll_ctl(int epoll_fd, int op, int fd,
			    struct epoll_event *event)
{
	static int (*real)(int, int, int, struct epoll_event *);

	if (!real) {
		real = dlsym(RTLD_NEXT, "epoll_ctl");
		CHECK(real);
	}
	return real(epoll_fd, op, fd, event);
}

static void inject_watch(int epoll_fd, int fd)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = fd };

	CHECK(!inject_epoll_ctl(epoll_fd, EPOLL_CTL_ADD, fd, &ev));
}

void itest_inject_init(void)
{
	struct ibv_context **list = rdma_get_devices(&ndevices);

	CHECK(list && ndevices > 0 && ndevices <= INJECT_DEVICES);
	for (int i = 0; i < ndevices; i++) {
		struct inject_device *d = &devices[i];

		d->ctx = list[i];
		d->real_fd = d->ctx->async_fd;
		d->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
		d->event_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		CHECK(d->epoll_fd >= 0 && d->event_fd >= 0);
		inject_watch(d->epoll_fd, d->real_fd);
		inject_watch(d->epoll_fd, d->event_fd);
	}
	rdma_free_devices(list);
}

static struct inject_device *inject_device_of(struct ibv_context *ctx)
{
	for (int i = 0; i < ndevices; i++)
		if (devices[i].ctx == ctx)
			return &devices[i];
	return NULL;
}

struct ibv_cq *itest_inject_last_cq(void)
{
	struct ibv_cq *cq;

	pthread_mutex_lock(&inject_lock);
	cq = last_cq;
	pthread_mutex_unlock(&inject_lock);
	CHECK(cq);
	return cq;
}

void itest_inject_event(enum ibv_event_type type, struct ibv_cq *cq)
{
	uint64_t one = 1;

	pthread_mutex_lock(&inject_lock);
	CHECK(ndevices && !has_pending);
	pending = (struct ibv_async_event){ .event_type = type };
	pending.element.cq = cq;
	has_pending = true;
	/* The devices share the one event: whichever thread reads first. */
	for (int i = 0; i < ndevices; i++)
		CHECK(write(devices[i].event_fd, &one, sizeof(one)) ==
		      sizeof(one));
	pthread_mutex_unlock(&inject_lock);
}

/*
 * The provider's calls: exported from the test program (the project
 * hides symbols by default), they come before libibverbs'.
 */
#define INJECT_EXPORT __attribute__((visibility("default")))

INJECT_EXPORT struct ibv_cq *ibv_create_cq(struct ibv_context *context, int cqe,
					   void *cq_context,
					   struct ibv_comp_channel *channel,
					   int comp_vector)
{
	static struct ibv_cq *(*real)(struct ibv_context *, int, void *,
				      struct ibv_comp_channel *, int);
	struct ibv_cq *cq;

	if (!real)
		real = inject_real("ibv_create_cq");
	cq = real(context, cqe, cq_context, channel, comp_vector);
	pthread_mutex_lock(&inject_lock);
	if (cq)
		last_cq = cq;
	pthread_mutex_unlock(&inject_lock);
	return cq;
}

static bool inject_take(struct inject_device *d, struct ibv_async_event *ev)
{
	uint64_t count;

	if (read(d->event_fd, &count, sizeof(count)) != sizeof(count) ||
	    !has_pending)
		return false;
	*ev = pending;
	has_pending = false;
	given = pending;
	has_given = true;
	return true;
}

INJECT_EXPORT int ibv_get_async_event(struct ibv_context *context,
				      struct ibv_async_event *event)
{
	static int (*real)(struct ibv_context *, struct ibv_async_event *);
	struct inject_device *d;
	bool made_up;

	if (!real)
		real = inject_real("ibv_get_async_event");
	pthread_mutex_lock(&inject_lock);
	d = inject_device_of(context);
	made_up = d && inject_take(d, event);
	pthread_mutex_unlock(&inject_lock);
	return made_up ? 0 : real(context, event);
}

/* A device's event fd is watched through ours. */
INJECT_EXPORT int epoll_ctl(int epoll_fd, int op, int fd,
			    struct epoll_event *event)
{
	for (int i = 0; i < ndevices; i++)
		if (devices[i].real_fd == fd)
			fd = devices[i].epoll_fd;
	return inject_epoll_ctl(epoll_fd, op, fd, event);
}

INJECT_EXPORT void ibv_ack_async_event(struct ibv_async_event *event)
{
	static void (*real)(struct ibv_async_event *);
	bool made_up;

	if (!real)
		real = inject_real("ibv_ack_async_event");
	pthread_mutex_lock(&inject_lock);
	made_up = has_given && event->event_type == given.event_type &&
		  event->element.cq == given.element.cq;
	if (made_up)
		has_given = false;
	pthread_mutex_unlock(&inject_lock);
	if (!made_up)
		real(event);
}
