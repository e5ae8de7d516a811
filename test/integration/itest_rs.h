/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What the message feature tests (nrma_msg_* but pingpong and peers, and
 * nrma_tagged_peek) share: a receiver (this process, "R") and a forked
 * sender ("S"), which run the same phases, each phase on fresh endpoints,
 * in step over one pipe.  rs_main forks S, runs the phases on both sides
 * and waits for S, twice: messages of SEG_A bytes go in segments the
 * first time, by rendezvous the second; is_r says which side a phase
 * runs on.
 *
 * The helpers are compiled once, in itest_rs.c, into libitest.la.
 */
#ifndef NRMA_ITEST_RS_H
#define NRMA_ITEST_RS_H

#include "itest_msg.h"

/*
 * Sizes past the eager messages' (8192 bytes, FI_NRMA_EAGER_SIZE): SEG_A
 * goes by copy in segments (up to SAR_SIZE, FI_NRMA_SAR_SIZE's default),
 * RNDV_B by rendezvous.
 */
#define SEG_A	 20000
#define SAR_SIZE 65536
#define RNDV_B	 100000
/* The largest message sent in segments in this run: SAR_SIZE, or 0. */
size_t rs_segmented_max(void);

/* Our end of the pipe to the peer; whether we are R. */
extern struct itest_chan chan;
extern bool is_r;

/* Op contexts: &ctx[i]. */
extern char ctx[256];

#define CTX(i)	     ((void *) &ctx[i])
#define CTX_INDEX(p) ((size_t) ((char *) (p) -ctx))

/*
 * Steps: next_step is one both sides reach; signal_peer tells the peer
 * that we reached one, await_peer waits (progressing) until it did.
 */
void next_step(const char *what);
void signal_peer(void);
void await_peer(const char *what);
/* await_peer without progressing anything meanwhile. */
void await_peer_idle(const char *what);

/* Opens a node and swaps names with the peer. */
void open_pair(struct itest_node *n, const struct itest_node_opts *o,
	       const char *name);

/* Both sides are done: checks for stray completions and closes. */
void close_pair(struct itest_node *n, const char *phase);

/* Fails unless len bytes at p are all zero (never written). */
void check_untouched(const void *p, size_t len, const char *what);

/*
 * One zeroed buffer for n messages: message i (len(i) bytes plus slack)
 * starts at off[i], and an untouched guard follows each.
 */
unsigned char *msg_layout(size_t *off, size_t n, size_t (*len)(size_t),
			  size_t slack);

/* Sends, retrying on -FI_EAGAIN. */
void send_msg(struct itest_node *n, const void *buf, size_t len, void *context,
	      const char *what);
void recv_msg(struct itest_node *n, void *buf, size_t len, void *context,
	      const char *what);

/* Waits for count send completions with contexts CTX(first)... in any order. */
void wait_sends(struct itest_node *n, size_t first, size_t count,
		const char *what);

/* A phase of a test: fn runs on both sides, as itest_step name. */
struct rs_phase {
	void (*fn)(void);
	const char *name;
};

/*
 * Runs test name: the n phases, in order, on both sides; passes after.
 * Then runs them all again, messages past the eager size sent by
 * rendezvous only.
 */
int rs_main(const char *name, const struct rs_phase *phases, size_t n);
/* The same; R calls r_init (after the fork) before it opens its domain. */
int rs_main_r_init(const char *name, const struct rs_phase *phases, size_t n,
		   void (*r_init)(void));

#endif /* NRMA_ITEST_RS_H */
