/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * nrma_bench's parts: a transport (libfabric through a provider, or bare
 * verbs) runs the same three patterns, and the driver compares them.
 */
#ifndef NRMA_BENCH_H
#define NRMA_BENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum bench_pattern {
	BENCH_LAT,    /* ping-pong: each side waits for its notification */
	BENCH_STREAM, /* a window of operations in flight, over sizes */
	BENCH_RATE,   /* the smallest size, over windows */
	BENCH_PATTERNS
};

/* What one operation does; a variant is an operation on a transport. */
enum bench_op {
	BENCH_OP_WRITE,	     /* plain write; the target polls the data */
	BENCH_OP_WRITE_CNTR, /* write that bumps the target's counter */
	BENCH_OP_READ_CNTR,  /* read that bumps the target's counter */
	BENCH_OP_WRITE_NSET, /* write notifying a set's counter (nrma) */
	BENCH_OP_WRITEDATA,  /* fi_writedata; the target reads its CQ */
	BENCH_OP_SEND,	     /* fi_send to a posted receive */
	BENCH_OP_TSEND,	     /* fi_tsend to a posted tagged receive */
};

/* What nrma_bench -I has callgrind count: a stream's posts, or a call. */
enum bench_count {
	BENCH_COUNT_POSTS,	/* the initiator's loop of posts and polls */
	BENCH_COUNT_EMPTY_POLL, /* a completion poll that finds nothing */
	BENCH_COUNT_CNTR_READ, /* the target reads its remotely bumped counter */
};

struct bench_variant {
	const char *name;
	const char *prov; /* libfabric provider, NULL for bare verbs */
	enum bench_op op;
	const char *env;	/* NAME=value set in its processes, or NULL */
	const char *vs;		/* the variant it is compared with, or NULL */
	unsigned patterns;	/* 1 << enum bench_pattern it runs */
	enum bench_count count; /* other than POSTS: a variant of -I alone */
	/* The target of a stream polls its notification all along (as
	 * MPI_Win_get_notify_value in a loop), where it could sleep. */
	bool busy_target;
	uint64_t tx_op_flags; /* libfabric: the endpoint's default op_flags */
	/* Transfers pass no descriptor for the registered buffer, as Sandia
	 * OpenSHMEM's do (no FI_MR_LOCAL). */
	bool no_desc;
};

/* One measurement both processes agree on. */
struct bench_step {
	enum bench_pattern pattern;
	size_t size;
	size_t window;
	size_t iters;
};

/* What a step measured, sent from the initiator to the driver. */
struct bench_result {
	double secs;
	int failed;
};

/*
 * The peer's half of a connection, exchanged between the two processes:
 * an address to connect to and the memory the other side may access.
 */
struct bench_blob {
	uint8_t addr[64];
	size_t addrlen;
	uint64_t buf_addr, buf_key;
	uint64_t cntr_addr, cntr_key; /* bare verbs: the counter word */
	uint64_t nset_key;	      /* nrma: the set's descriptor key */
};

struct bench_xport;

/*
 * A transport.  open makes the local side and its blob, connect takes
 * the peer's; post starts one operation of size bytes (-FI_EAGAIN: not
 * now); tx_done reaps local completions and says how many (< 0 on
 * error); arrived says whether the seq-th notification to this side is
 * here (a plain write carries seq in its last byte); prepare clears the
 * first size bytes that peers write to; target_idle says whether a
 * target may sleep while operations land, as notified RMA allows.
 */
struct bench_xport_ops {
	int (*open)(struct bench_xport **x, const struct bench_variant *v,
		    size_t max_size, size_t max_window, struct bench_blob *me);
	int (*connect)(struct bench_xport *x, const struct bench_blob *peer,
		       bool initiator);
	int (*post)(struct bench_xport *x, size_t size, uint64_t seq);
	int (*tx_done)(struct bench_xport *x);
	int (*arrived)(struct bench_xport *x, size_t size, uint64_t seq);
	void (*prepare)(struct bench_xport *x, size_t size);
	bool (*target_idle)(struct bench_xport *x); /* needs no CPU there */
	void (*close)(struct bench_xport *x);
};

extern const struct bench_xport_ops bench_fi_ops;
extern const struct bench_xport_ops bench_verbs_ops;

/* The byte a plain write's seq leaves in its last byte: never 0. */
static inline uint8_t bench_seq_byte(uint64_t seq)
{
	return (uint8_t) (seq % 255 + 1);
}

/* The IPv4 address of a RoCE device's GID (or of opt_addr) for rdmacm. */
int bench_verbs_addr(const char *opt_addr, char *out, size_t len);

/*
 * The fi_threading that -T names (safe, domain, completion, endpoint), as
 * an int; -1 for a name that is none of them.
 */
int bench_lf_threading(const char *name);

/* Memory per connected peer and connection set-up time, as a table. */
int bench_peers(FILE *table, size_t max_peers);

#endif /* NRMA_BENCH_H */
