/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What the two-host fault tests (nrma_fault_*) share: a target that takes
 * every kind of operation (sends, notified writes, reads, atomics) and
 * does nothing but progress until it is told to stop or is killed, and a
 * driver on the other host that streams mixed operations at targets and
 * accounts for every one it posted: each must end in exactly one
 * completion or error entry.
 */
#ifndef NRMA_ITEST_FAULT_H
#define NRMA_ITEST_FAULT_H

#include <stdbool.h>
#include <stdint.h>

#include "itest_host.h"
#include "itest_rma.h"

#define FT_WINDOW     32
#define FT_BIG	      (1u << 20) /* notified writes this long, too */
#define FT_RNDV	      65536	 /* rendezvous sends */
#define FT_READ	      4096
#define FT_RECVS      64
#define FT_TARGET_BUF (2u << 20)

/* What a target publishes (itest_host_put): where it takes RMA. */
struct ft_target_info {
	struct sockaddr_in name;
	uint64_t addr; /* FT_TARGET_BUF bytes; the atomic word at addr */
	uint64_t key;  /* bound to a counter: writes are notified */
	uint64_t pid;
};

/*
 * Runs a target that publishes itself under key and progresses until
 * the other host signals stop_key (or it is killed).  With a name, it
 * binds there (a restarted target takes its predecessor's address).
 */
void ft_target_run(const char *key, const char *stop_key,
		   const struct sockaddr_in *name);

/* The driver's side */

enum ft_kind {
	FT_SEND_SMALL,
	FT_SEND_RNDV,
	FT_WRITE_SMALL,
	FT_WRITE_BIG,
	FT_READ_OP,
	FT_ATOMIC,
	FT_KINDS,
};

struct ft_slot {
	bool busy;
	enum ft_kind kind;
};

/* One stream of operations to one target, and its accounts. */
struct ft_stream {
	struct rt_node *n;
	fi_addr_t dest;
	struct ft_target_info info;
	struct ft_slot slot[FT_WINDOW];
	uint64_t next;		/* operations tried */
	uint64_t posted;	/* accepted by the provider */
	uint64_t ok;		/* ended in a completion */
	uint64_t failed;	/* ended in an error entry */
	uint64_t refused;	/* not accepted (an error return) */
	int64_t first_err;	/* ms, when the first error entry came */
	int64_t last_end;	/* ms, when the last operation ended */
	enum ft_kind last_kind; /* and what it was */
	bool last_ok;		/* and how it ended */
};

/* The driver's node (one CQ for every target's operations). */
void ft_driver_open(struct rt_node *n);
void ft_stream_init(struct ft_stream *s, struct rt_node *n,
		    const struct ft_target_info *info);
/* Posts the next operation if the window has room; false if none went. */
bool ft_stream_post(struct ft_stream *s);
/* Reads the driver's CQ and accounts every entry to its stream. */
void ft_reap(struct ft_stream **streams, int n);
/* Operations posted that have not ended yet. */
uint64_t ft_in_flight(const struct ft_stream *s);
void ft_stream_print(const struct ft_stream *s, const char *name);
/* "a notified 1 MiB write", and so on. */
const char *ft_kind_name(enum ft_kind kind);

#endif /* NRMA_ITEST_FAULT_H */
