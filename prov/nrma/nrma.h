/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * nrma: an RDM libfabric provider over ibverbs RC queue pairs whose remote
 * counters are bumped by verbs atomics (notified RMA).
 *
 * This header has the libfabric objects and what their files offer each
 * other.  Below them lie the protocol (nrma_xfer.h), completions
 * (nrma_comp.h), matching (nrma_match.h), notification cells
 * (nrma_notify.h), connection management (nrma_cm.h), the wire format
 * (nrma_proto.h) and verbs (nrma_verbs.h); HACKING.md draws the layers.
 *
 * Lock order, outermost first; a thread holding one lock only ever takes
 * locks further down the list:
 *   1. nrma_poll.lock: a poll set's members, or
 *      nrma_cm_thread.lock: held by control progress while it handles
 *      one endpoint's connection events (a device event takes the list
 *      of threads' lock, then each thread's in turn), and by a change of
 *      a domain's key table while it tells each endpoint's peers
 *   2. nrma_ep_set.lock: the endpoints a CQ or counter progresses (not
 *      taken where the domain's threading serializes the application's
 *      calls: FI_THREAD_DOMAIN, FI_THREAD_COMPLETION)
 *   3. nrma_ep.lock: an endpoint's data path and connections (one lock,
 *      nrma_domain.ctx_lock, for the shared contexts of a domain and all
 *      endpoints bound to any of them), or a passive endpoint's lock
 *   4. leaves, never held two at a time: nrma_fabric.handles_lock,
 *      nrma_cq.lock, nrma_cntr.lock,
 *      nrma_eq.lock, an AV's address table lock, the notification region's
 *      lock, the key table's lock, the domain's connection claims' lock,
 *      the domain's MR index's lock
 * Endpoint progress runs with (3) held and writes completions under (4).
 * Read without a lock: a counter's value (its words under a sequence
 * count, nrma_comp_cntr_value), a CQ's room and how many entries it
 * holds, an endpoint set's size.
 */
#ifndef NRMA_H
#define NRMA_H

#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_ext_nrma.h>
#include <rdma/providers/fi_log.h>
#include <rdma/providers/fi_prov.h>

#include "nrma_addr.h"
#include "nrma_atomic_calc.h"
#include "nrma_list.h"
#include "nrma_ring.h"
#include "nrma_wait.h"
#include "nrma_wordset.h"

#define NRMA_PROV_NAME	  FI_NRMA_PROV_NAME
#define NRMA_PROV_VERSION FI_NRMA_VERSION
#define NRMA_FI_VERSION	  FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION)

/*
 * libfabric 2.0 deprecates the mr_mode enum of before 1.5, FI_REG_MR and
 * FI_ORDER_NONE, and its headers warn wherever they are named; but
 * applications built for 1.x still pass them.  The same values, unnamed.
 */
#define NRMA_MR_UNSPEC	 0
#define NRMA_MR_BASIC	 (1 << 0)
#define NRMA_MR_SCALABLE (1 << 1)
#define NRMA_REG_MR	 (1ULL << 59)
#define NRMA_ORDER_NONE	 0ULL

/*
 * The fi_getinfo flag with which libfabric's utility providers (ofi_rxm,
 * ofi_rxd, ofi_mrail) look for a core provider to layer over:
 * OFI_CORE_PROV_ONLY of libfabric's own ofi.h, not installed, the same bit
 * in 1.17 and 2.x.  nrma declines to be one: ofi_rxm over its FI_EP_MSG
 * endpoints would otherwise come first for a prov_name of "nrma", and an
 * application asking for nrma would get rxm's RDM endpoints, without
 * nrma's remote counters, instead of nrma's own.
 */
#define NRMA_GETINFO_FOR_UTIL_PROV (1ULL << 59)

/*
 * libfabric 2.0's receive capabilities, none of which 1.x has: directed
 * receives for tagged messages only, directed receives that may not name
 * FI_ADDR_UNSPEC, and multi-receive buffers for tagged receives.
 */
#ifdef FI_TAGGED_DIRECTED_RECV
#define NRMA_TAGGED_DIRECTED_RECV FI_TAGGED_DIRECTED_RECV
#define NRMA_EXACT_DIRECTED_RECV  FI_EXACT_DIRECTED_RECV
#define NRMA_TAGGED_MULTI_RECV	  FI_TAGGED_MULTI_RECV
#else
#define NRMA_TAGGED_DIRECTED_RECV 0ULL
#define NRMA_EXACT_DIRECTED_RECV  0ULL
#define NRMA_TAGGED_MULTI_RECV	  0ULL
#endif

extern struct fi_provider nrma_prov;

struct nrma_cm;
struct nrma_cm_claims;
struct nrma_cm_ops;
struct nrma_cm_req;
struct nrma_conn;
struct nrma_recv_args;
struct nrma_sep;
struct rdma_cm_id;
struct nrma_cm_thread;
struct nrma_cntr;
struct nrma_comp_reader;
struct nrma_ep;
struct nrma_mr_span_index;
struct nrma_mr_span;
struct nrma_notify;
struct nrma_notify_cell;
struct nrma_verbs_domain;
struct nrma_verbs_ep;
struct nrma_verbs_mr;
struct nrma_xfer;

/*
 * Keeps a rarely taken branch's work out of its caller, whose common path
 * then needs no registers saved (GCC and clang).
 */
#define NRMA_NOINLINE __attribute__((noinline))
/*
 * Folds a step of a per-operation loop into the loop: its registers are
 * saved once per loop, not once per operation.  Also a posting step into
 * the call that posts (with link-time optimization across files): one
 * frame per operation, not one per layer.
 */
#define NRMA_INLINE   inline __attribute__((always_inline))

#define NRMA_WARN(subsys, ...) FI_WARN(&nrma_prov, subsys, __VA_ARGS__)
#define NRMA_INFO(subsys, ...) FI_INFO(&nrma_prov, subsys, __VA_ARGS__)
/* libfabric compiles FI_DBG out of release builds; ours stays. */
#define NRMA_DBG(subsys, ...) \
	FI_LOG(&nrma_prov, FI_LOG_DEBUG, subsys, __VA_ARGS__)

/*
 * Operation flags an endpoint may take as defaults; FI_COMMIT_COMPLETE is
 * not among them: nrma has no persistent memory.
 */
#define NRMA_TX_OP_FLAGS                                  \
	(FI_INJECT | FI_COMPLETION | FI_INJECT_COMPLETE | \
	 FI_TRANSMIT_COMPLETE | FI_DELIVERY_COMPLETE | FI_TRIGGER)
#define NRMA_RX_OP_FLAGS (FI_COMPLETION | FI_MULTI_RECV)

/*
 * Operation flags that are also capabilities (the same bit): a default
 * of FI_TRIGGER or FI_MULTI_RECV needs caps to have it.
 */
static inline bool nrma_op_flags_capped(uint64_t op_flags, uint64_t caps)
{
	return !(op_flags & (FI_TRIGGER | FI_MULTI_RECV) & ~caps);
}

/* Tunables, read once from FI_NRMA_* at load time. */
struct nrma_params {
	char *device;		  /* restrict to this verbs device */
	size_t tx_size;		  /* default transmit queue depth */
	size_t rx_size;		  /* default receive queue depth */
	size_t cq_size;		  /* CQ size when the application gives 0 */
	size_t cntr_max;	  /* counters per domain */
	size_t notify_cells;	  /* notification cells per domain */
	size_t mr_max;		  /* memory regions per domain */
	int wait_spin_us;	  /* busy-poll before a blocking wait sleeps */
	size_t eager_size;	  /* largest message sent by copy */
	size_t sar_size;	  /* largest sent by copy in segments */
	size_t unexp_max;	  /* unexpected messages held per endpoint */
	size_t credits;		  /* messages a peer may have in our buffers */
	size_t peers_max;	  /* peers whose credit floors get buffers */
	size_t qp_depth;	  /* send queue depth per connection */
	bool notify_fence_always; /* fence every notification atomic */
	int notify_wake_ms;	  /* sleep bound while remote atomics count */
	size_t notify_coalesce;	  /* notified writes one atomic may count */
	bool msg_ep;		  /* offer FI_EP_MSG endpoints */
	int stall_ms;		  /* fail a connection whose work stalls */
	int progress_ms;	  /* automatic data progress: its tick */
};
extern struct nrma_params nrma_params;

/* What the attributes need to know of a device; filled from verbs. */
struct nrma_dev_limits {
	size_t max_msg_size;
	size_t max_qp_wr;
	size_t max_srq_wr;
	size_t max_sge;
	size_t max_srq_sge;
	size_t max_sge_rd;
	size_t max_cq;
	size_t max_qp;
	size_t max_mr;
	size_t max_qp_rd_atom;
	size_t max_cqe;
};

/* A verbs device that can run nrma, found when the provider loads. */
struct nrma_device {
	char name[64];
	uint8_t port_num;
	struct sockaddr_in addr; /* an IPv4 address rdmacm binds on it */
	struct sockaddr_in netmask;
	struct nrma_dev_limits limits;
};

extern struct nrma_device *nrma_devices;
extern size_t nrma_device_count;

/* Attributes and hint matching (nrma_attr.c). */
/* What dev offers for endpoints of type (FI_EP_RDM or FI_EP_MSG). */
struct fi_info *nrma_attr_info_alloc(const struct nrma_device *dev,
				     enum fi_ep_type type);
/* Registrations a domain on dev holds at once: fi_info's mr_cnt. */
size_t nrma_attr_mr_cnt(const struct nrma_device *dev);
/* Whether a domain opened with info takes the application's MR keys. */
bool nrma_attr_app_keys(uint32_t version, const struct fi_info *info);
int nrma_attr_match(uint32_t version, const struct fi_info *prov,
		    const struct fi_info *hints);
/* caps with the directions fi_getinfo(3) implies where none is named. */
uint64_t nrma_attr_caps_with_directions(uint64_t caps);
/* -FI_EINVAL when an endpoint's info asks for more than dev offers. */
int nrma_attr_check_ep(const struct nrma_device *dev,
		       const struct fi_info *info);
void nrma_attr_narrow(uint32_t version, struct fi_info *info,
		      const struct fi_info *hints);
int nrma_attr_fabric_name(const struct sockaddr_in *addr,
			  const struct sockaddr_in *netmask, char *buf,
			  size_t len);
int nrma_attr_getinfo(uint32_t version, const char *node, const char *service,
		      uint64_t flags, const struct fi_info *hints,
		      struct fi_info **info);

/* Error entries grew err_data_size in API 1.5; older callers get less. */
static inline size_t nrma_err_entry_size(uint32_t version, size_t full,
					 size_t pre_1_5)
{
	return FI_VERSION_LT(version, FI_VERSION(1, 5)) ? pre_1_5 : full;
}

/* Fabric */
struct nrma_fabric {
	struct fid_fabric fabric_fid;
	uint32_t api_version; /* what the application asked for */
	atomic_int ref;	      /* open domains, EQs and passive endpoints */
	pthread_mutex_t lock; /* guards cm_thread */
	struct nrma_cm_thread *cm_thread; /* the listeners' control progress */
	/*
	 * What an fi_info handle may name (nrma_pep.c): a handle is looked
	 * up here before it is read, so a stale one is refused, not used.
	 */
	pthread_mutex_t handles_lock; /* a leaf of nrma.h's lock order */
	struct nrma_dlist peps;	      /* open passive endpoints */
	/* FI_CONNREQ handles not yet done, each allocated at its link: the
	 * fabric's close frees the orphans that closed peps left. */
	struct nrma_dlist connreqs;
};

int nrma_fabric_open(struct fi_fabric_attr *attr, struct fid_fabric **fabric,
		     void *context);
/* The fabric's control-progress thread, started on first use. */
int nrma_fabric_cm_thread(struct nrma_fabric *fabric,
			  struct nrma_cm_thread **thread);

/* Event queue */
#define NRMA_EQ_ERR_DATA_MAX 64 /* an error entry's data, at most */

struct nrma_eq {
	struct fid_eq eq_fid;
	struct nrma_fabric *fabric;
	pthread_mutex_t lock;
	struct nrma_dlist events; /* struct nrma_eq_event, oldest first */
	size_t count;
	size_t size;
	uint64_t flags;
	struct nrma_wait wait;
	atomic_int ref; /* objects bound to it */
	/* The last error's data, when the application gave no buffer. */
	uint8_t err_data[NRMA_EQ_ERR_DATA_MAX];
};

int nrma_eq_open(struct fid_fabric *fabric, struct fi_eq_attr *attr,
		 struct fid_eq **eq, void *context);
int nrma_eq_report(struct nrma_eq *eq, uint32_t event,
		   const struct fi_eq_entry *entry);
/* A connection event: entry, then len bytes of the peer's data. */
int nrma_eq_report_cm(struct nrma_eq *eq, uint32_t event,
		      const struct fi_eq_cm_entry *entry, const void *data,
		      size_t len);
/* An error event; data (len bytes, maybe 0) is its err_data. */
int nrma_eq_report_err(struct nrma_eq *eq, const struct fi_eq_err_entry *err,
		       const void *data, size_t len);
int nrma_eq_trywait(struct nrma_eq *eq);

/* Domain */
struct nrma_domain {
	struct fid_domain domain_fid;
	struct nrma_fabric *fabric;
	const struct nrma_device *device;
	struct fi_info *info;
	struct nrma_verbs_domain *verbs;
	struct nrma_eq *eq;		     /* bound for asynchronous errors */
	struct nrma_notify *notify;	     /* notification cells */
	struct nrma_keytab *keytab;	     /* what MR keys name */
	struct nrma_mr_span_index *mr_index; /* its MRs by address */
	struct nrma_cm_claims *claims; /* its endpoints' connection attempts */
	/* Its changes that peers must hear of (nrma_rkey.c). */
	_Atomic uint64_t keys_changed;
	/* The application picks MR keys (FI_MR_PROV_KEY off, RMA asked). */
	bool app_keys;
	struct nrma_cm_thread *cm_thread; /* control progress */
	atomic_int ref;			  /* open child objects */
	/* The endpoint lock of shared contexts and their endpoints. */
	pthread_mutex_t ctx_lock;
};

int nrma_domain_open(struct fid_fabric *fabric, struct fi_info *info,
		     struct fid_domain **domain, void *context);
/*
 * A slot of domain's key table was removed or changed: each
 * connected peer of its endpoints hears of it before this returns (or
 * after a while), so that it forgets what it read of the table.
 */
void nrma_domain_keys_changed(struct nrma_domain *domain);

/* Poll sets (nrma_poll.c) */
int nrma_poll_open(struct fid_domain *domain, struct fi_poll_attr *attr,
		   struct fid_poll **poll);

/*
 * Counters bound for remote events (nrma_cntr.c): a notification cell
 * whose words peers bump, and the counter that watches each word.
 */
struct nrma_remote_cntrs {
	struct nrma_notify_cell *cell;
	struct nrma_cntr *cntr[2]; /* by enum nrma_notify_word */
};

/* Binds cntr to the words that flags (FI_REMOTE_WRITE/READ) name. */
int nrma_cntr_remote_bind(struct nrma_remote_cntrs *remote,
			  struct nrma_domain *domain, struct nrma_cntr *cntr,
			  uint64_t flags);
/* The rkey peers bump the words with; 0 while nothing is bound. */
uint32_t nrma_cntr_remote_rkey(const struct nrma_remote_cntrs *remote);
/* Stops the atomics first; the counters keep what they counted. */
void nrma_cntr_remote_close(struct nrma_remote_cntrs *remote);

/* Memory registration */
struct nrma_mr {
	struct fid_mr mr_fid;
	struct nrma_domain *domain;
	struct nrma_mr_span *span; /* in the domain's index while open */
	/* The span's, copied: every transfer with this descriptor reads them. */
	struct nrma_verbs_mr *verbs;
	uint64_t verbs_key; /* its rkey (lkey if local only) */
	uint64_t access;
	uint64_t flags;			 /* FI_RMA_EVENT */
	struct nrma_remote_cntrs remote; /* bound with fi_mr_bind */
	bool enabled;			 /* fi_mr_enable: no more bindings */
};

extern struct fi_ops_mr nrma_mr_ops;

/*
 * The endpoints bound to a CQ or counter, which reading it progresses
 * (nrma_ep_set.c).
 */
struct nrma_ep_set {
	pthread_mutex_t lock;
	bool serial; /* the application serializes its calls: lock unused */
	struct nrma_ep **eps;
	size_t count; /* stored atomically, under lock: nrma_ep_set_empty */
};

/* Without the set's lock: an endpoint added meanwhile counts next time. */
static inline bool nrma_ep_set_empty(const struct nrma_ep_set *set)
{
	return !__atomic_load_n(&set->count, __ATOMIC_RELAXED);
}

/* threading: the domain's (fi_domain(3)), which may make the lock moot. */
void nrma_ep_set_init(struct nrma_ep_set *set, enum fi_threading threading);
void nrma_ep_set_fini(struct nrma_ep_set *set);
int nrma_ep_set_add(struct nrma_ep_set *set, struct nrma_ep *ep,
		    struct nrma_wait *wait);
void nrma_ep_set_del(struct nrma_ep_set *set, struct nrma_ep *ep,
		     struct nrma_wait *wait);
/* With a CQ's reader (nrma_comp.h), or NULL. */
void nrma_ep_set_progress(struct nrma_ep_set *set,
			  struct nrma_comp_reader *reader);
/* Arms every endpoint; -FI_EAGAIN if one had work after all. */
int nrma_ep_set_arm(struct nrma_ep_set *set);
/*
 * How long a wait on the set may sleep of left_ms (< 0: for ever): at most
 * notify_wake_ms while an endpoint's sends wait for credits, which
 * remote atomics give back without an event.
 */
int nrma_ep_set_sleep_ms(struct nrma_ep_set *set, int left_ms);
/* Whether the set must be polled: sends wait for credits (as above). */
bool nrma_ep_set_polled(struct nrma_ep_set *set);

/*
 * Completion queue: a ring of completions, errors among them in the order
 * they came, written by endpoint progress (nrma_comp.c) and read here.
 */
struct nrma_cq_entry {
	struct fi_cq_tagged_entry comp;
	fi_addr_t src_addr;
	struct fi_cq_err_entry *err; /* an error entry's, else NULL */
};

struct nrma_cq {
	struct fid_cq cq_fid;
	struct nrma_domain *domain;
	pthread_mutex_t lock;
	enum fi_cq_format format;
	size_t format_size; /* of an entry in format */
	enum fi_cq_wait_cond wait_cond;
	struct nrma_ring comps; /* struct nrma_cq_entry */
	/* Free slots in comps, and entries in it: kept under lock, read
	 * without (by progress, and by a read that finds nothing). */
	_Atomic size_t room;
	_Atomic size_t queued;
	size_t errors;	       /* error entries among them */
	uint64_t signal_gen;   /* fi_cq_signal calls */
	size_t sreaders;       /* threads in fi_cq_sread */
	size_t unwoken;	       /* of those signalled, still to return */
	bool signal_unclaimed; /* a signal no sread was in, for the next */
	struct nrma_wait wait;
	struct nrma_ep_set eps; /* endpoints to progress */
	atomic_int ref;		/* endpoints, poll sets using it */
};

/* After entries came or went, with cq->lock held. */
static inline void nrma_cq_room_update(struct nrma_cq *cq)
{
	atomic_store_explicit(&cq->room, cq->comps.capacity - cq->comps.count,
			      memory_order_relaxed);
	atomic_store_explicit(&cq->queued, cq->comps.count,
			      memory_order_relaxed);
}

int nrma_cq_open(struct fid_domain *domain, struct fi_cq_attr *attr,
		 struct fid_cq **cq, void *context);
int nrma_cq_trywait(struct nrma_cq *cq);
bool nrma_cq_ready(struct nrma_cq *cq);

/* Counter: bumped by progress (nrma_comp.c) and by remote atomics. */
struct nrma_cntr {
	struct fid_cntr cntr_fid;
	struct nrma_domain *domain;
	_Atomic uint64_t value; /* local count: bias on the words */
	_Atomic uint64_t err;
	pthread_mutex_t lock; /* serializes changes to the words */
	/* Odd while the words and the bias change together: a reader that
	 * saw it odd or changed reads again (a sequence lock). */
	_Atomic unsigned words_seq;
	/* The notification words it counts in, read without its lock
	 * (nrma_comp_cntr_value). */
	struct nrma_wordset *_Atomic words;
	struct nrma_wait wait;
	struct nrma_ep_set eps; /* endpoints to progress */
	atomic_int ref;		/* endpoints, poll sets using it */
};

int nrma_cntr_open(struct fid_domain *domain, struct fi_cntr_attr *attr,
		   struct fid_cntr **cntr, void *context);
int nrma_cntr_trywait(struct nrma_cntr *cntr);

/* Address vector */
struct nrma_av {
	struct fid_av av_fid;
	struct nrma_domain *domain;
	enum fi_av_type type;
	uint64_t flags;
	struct nrma_addr_table table; /* fi_addr_t -> endpoint name */
	struct nrma_eq *eq;	      /* FI_EVENT: insert results go here */
	atomic_int ref;		      /* endpoints bound to it */
};

int nrma_av_open(struct fid_domain *domain, struct fi_av_attr *attr,
		 struct fid_av **av, void *context);

/*
 * What the data path's calls are given: an endpoint, or an alias of it
 * (fi_ep_alias), which differs from it only in its default operation
 * flags (fi_control FI_GETOPSFLAG, FI_SETOPSFLAG).
 */
struct nrma_ep_path {
	struct fid_ep ep_fid;
	struct nrma_ep *ep;
	uint64_t tx_op_flags;
	uint64_t rx_op_flags;
};

/* What FI_OPT_MAX_*_SIZE and FI_OPT_INJECT_*_SIZE bound, each. */
enum nrma_xfer_class {
	NRMA_XFER_MSG,
	NRMA_XFER_TAGGED,
	NRMA_XFER_RMA,
	NRMA_XFER_ATOMIC,
	NRMA_XFER_CLASSES,
};

#define NRMA_DEFAULT_MIN_MULTI_RECV 4096

/*
 * What an endpoint is: the application's own, a transmit context of a
 * scalable endpoint (nrma_sep.c), or the hidden endpoint that holds a
 * scalable endpoint's name, connections and receive side.
 */
enum nrma_ep_role {
	NRMA_EP_OWN,
	NRMA_EP_TX_CTX,
	NRMA_EP_SEP_CORE,
};

/*
 * How an endpoint a scalable endpoint is made of reaches it (nrma_sep.c):
 * the object above, through these only.
 */
struct nrma_ep_owner {
	/* At fi_enable, with ep->lock held: the owner's AV and name. */
	int (*enable)(struct nrma_ep *ep);
	void (*closed)(struct nrma_ep *ep);
};

/* RDM endpoint */
struct nrma_ep {
	struct nrma_ep_path path; /* the endpoint's own */
	struct nrma_domain *domain;
	struct fi_info *info;
	/* own_lock, or its domain's ctx_lock once a shared context is
	 * bound: endpoints that share contexts share their lock. */
	pthread_mutex_t *lock;
	pthread_mutex_t own_lock;
	struct nrma_cq *tx_cq;
	struct nrma_cq *rx_cq;
	/* While progress reaps a poll: its transmits' successes, written to
	 * tx_cq together (nrma_comp.h); else NULL. */
	struct nrma_comp_batch *comp_batch;
	uint64_t tx_cq_flags;
	uint64_t rx_cq_flags;
	struct nrma_cntr *send_cntr;
	struct nrma_cntr *recv_cntr;
	struct nrma_cntr *read_cntr;
	struct nrma_cntr *write_cntr;
	struct nrma_remote_cntrs remote; /* FI_REMOTE_WRITE/READ */
	struct nrma_av *av;
	/* Its AV's, from fi_enable on: most AVs name no receive contexts, and
	 * a send then looks no further. */
	int rx_ctx_bits;
	struct nrma_eq *eq;
	struct fid *srx; /* shared contexts bound (nrma_srx.c) */
	struct fid *stx;
	enum nrma_ep_role role;
	bool msg;		     /* FI_EP_MSG: one connection, no AV */
	struct nrma_ep_owner *owner; /* a transmit context's */
	uint16_t ctx_id;	 /* what its connections say it is (cm data) */
	struct sockaddr_in name; /* fixed at fi_enable */
	bool enabled;
	bool watched; /* by its domain's control thread, since fi_enable */
	/* A CQ or counter read progressed it since automatic data progress
	 * last looked (nrma_progress_auto). */
	bool app_progressed;
	/* Positive: the critical error that disabled it for good (a device
	 * event, nrma_progress_disable); only fi_close is left. */
	int critical;
	atomic_int aliases; /* open aliases keep it from closing */
	/* Options (nrma_ep_opt.c); FI_OPT_MIN_MULTI_RECV is its receive
	 * context's */
	size_t max_size[NRMA_XFER_CLASSES];
	size_t inject_size[NRMA_XFER_CLASSES];
	int hmem_p2p;
	size_t cm_data_size;	     /* 0: no connection data (RDM) */
	struct nrma_cm_req *connreq; /* FI_CONNREQ it is to answer */

	struct nrma_cm *cm;	     /* listener and connections */
	struct nrma_verbs_ep *verbs; /* CQ and SRQ the connections share */
	struct nrma_xfer *xfer;	     /* the data path's state */
};

int nrma_ep_open(struct fid_domain *domain, struct fi_info *info,
		 struct fid_ep **ep, void *context);
int nrma_ep_enable(struct nrma_ep *ep);
int nrma_ep_getname(fid_t fid, void *addr, size_t *addrlen);
int nrma_ep_setname(fid_t fid, void *addr, size_t addrlen);

/* Connected endpoints (nrma_ep_conn.c): their fi_cm calls and events. */
extern struct fi_ops_cm nrma_ep_conn_ops;
extern const struct nrma_cm_ops nrma_ep_conn_cm_ops;

static inline bool nrma_ep_is_msg(const struct nrma_ep *ep)
{
	return ep->msg;
}

/* Shared contexts (nrma_srx.c) */
int nrma_srx_open(struct fid_domain *domain, struct fi_rx_attr *attr,
		  struct fid_ep **srx, void *context);
int nrma_srx_stx_open(struct fid_domain *domain, struct fi_tx_attr *attr,
		      struct fid_stx **stx, void *context);
int nrma_srx_bind(struct nrma_ep *ep, struct fid *srx);
int nrma_srx_stx_bind(struct nrma_ep *ep, struct fid *stx);
void nrma_srx_ctx_unbind(struct nrma_ep *ep);
ssize_t nrma_srx_recv(struct fid_ep *srx, const struct nrma_recv_args *a);
/* A context's receive attributes: base, narrowed by what is wanted. */
int nrma_srx_rx_attr_set(struct fi_rx_attr *attr, const struct fi_rx_attr *base,
			 const struct fi_rx_attr *want);
/* A context's transmit attributes: base, with the flags wanted. */
int nrma_srx_tx_attr_set(struct fi_tx_attr *attr, const struct fi_tx_attr *base,
			 const struct fi_tx_attr *want);
uint64_t nrma_srx_op_flags(struct fid_ep *srx);
extern struct fi_ops_msg nrma_srx_msg_ops;
extern struct fi_ops_tagged nrma_srx_tagged_ops;

/* Scalable endpoints (nrma_sep.c) */
#define NRMA_SEP_CTX_MAX 16 /* contexts each way, each an endpoint's worth */
int nrma_sep_open(struct fid_domain *domain, struct fi_info *info,
		  struct fid_ep **sep, void *context);
ssize_t nrma_sep_rxc_recv(struct fid_ep *ep_fid,
			  const struct nrma_recv_args *a);
extern struct fi_ops_msg nrma_txc_msg_ops;
extern struct fi_ops_tagged nrma_txc_tagged_ops;

/* Passive endpoints (nrma_pep.c) */
int nrma_pep_open(struct fid_fabric *fabric, struct fi_info *info,
		  struct fid_pep **pep, void *context);
/* Whether handle is one of fabric's FI_CONNREQ requests not yet done. */
bool nrma_pep_connreq_known(struct nrma_fabric *fabric,
			    const struct fid *handle);
/*
 * An endpoint (its cm) answers the request from now on: -FI_EINVAL if handle is
 * not a request of fabric's or another endpoint or fi_reject answered it,
 * -FI_ECONNABORTED if its passive endpoint closed first (which refused it).
 */
int nrma_pep_connreq_take(struct nrma_fabric *fabric, const struct fid *handle,
			  struct nrma_cm *cm, struct nrma_cm_req **req);
/* Accepted: what is left of it goes. */
void nrma_pep_connreq_done(struct nrma_fabric *fabric, struct nrma_cm_req *req);
/* Its endpoint closed without accepting it: refused. */
void nrma_pep_connreq_refuse(struct nrma_fabric *fabric,
			     struct nrma_cm_req *req);
/* The bound address of an open passive endpoint (handle), or NULL. */
struct rdma_cm_id *nrma_pep_release(struct nrma_fabric *fabric,
				    const struct fid *handle);
int nrma_ep_open2(struct fid_domain *domain, struct fi_info *info,
		  struct fid_ep **ep, uint64_t flags, void *context);

/* Options and operation flags (nrma_ep_opt.c) */
void nrma_ep_opt_init(struct nrma_ep *ep);
int nrma_ep_opt_get(fid_t fid, int level, int optname, void *optval,
		    size_t *optlen);
int nrma_ep_opt_set(fid_t fid, int level, int optname, const void *optval,
		    size_t optlen);
/* An option's value out to optval, or -FI_ETOOSMALL and the size needed. */
int nrma_ep_opt_put(void *optval, size_t *optlen, const void *value,
		    size_t len);
int nrma_ep_opt_flags_get(struct nrma_ep_path *path, uint64_t *flags);
int nrma_ep_opt_flags_set(struct nrma_ep_path *path, const uint64_t *flags);

/* Progress (nrma_progress.c): with manual progress, the caller's. */
void nrma_progress_ep(struct nrma_ep *ep);
/* The same for an fi_cq_read, whose buffer reader describes. */
void nrma_progress_ep_read(struct nrma_ep *ep, struct nrma_comp_reader *reader);
/*
 * What call, a transmit on ep, returns.  A -FI_EAGAIN progresses the
 * endpoint first, as a CQ read would, so that an application that
 * retries without reading its CQ still moves.
 */
#define NRMA_EP_POST(ep, call)                \
	({                                    \
		ssize_t ret_ = (call);        \
		if (ret_ == -FI_EAGAIN)       \
			nrma_progress_ep(ep); \
		ret_;                         \
	})
int nrma_progress_arm(struct nrma_ep *ep);
/*
 * Automatic data progress, the domain's thread's: progresses ep unless the
 * application did since the last look, and arms its device CQ so that a
 * completion wakes the thread.  Whether ep has work out, to look again.
 */
bool nrma_progress_auto(struct nrma_ep *ep);
/* Before close: ACKs owed to peers get out, for a bounded time. */
void nrma_progress_linger(struct nrma_ep *ep);
/*
 * Control progress (nrma_cm_thread.c): a domain's thread handles the
 * connection events of the endpoints it watches, from fi_enable on, and
 * the device's events: an endpoint that one breaks hears of it through
 * report (err positive, prov_errno the ibv_event_type), which the
 * domain's layer gives it.  With auto_data (a domain opened with
 * FI_PROGRESS_AUTO data progress), it also progresses the endpoints the
 * application leaves alone (nrma_progress_auto): on their device CQs'
 * events, and every FI_NRMA_PROGRESS_MS while one has work out.  A
 * fabric's thread (no device: vdom NULL) watches its passive endpoints'
 * listeners.
 */
typedef void (*nrma_async_report_fn)(struct nrma_ep *ep, int err,
				     int prov_errno);
int nrma_cm_thread_open(struct nrma_verbs_domain *vdom,
			nrma_async_report_fn report, bool auto_data,
			struct nrma_cm_thread **thread);
void nrma_cm_thread_close(struct nrma_cm_thread *thread);
void nrma_cm_thread_stop_all(void);
int nrma_cm_thread_watch(struct nrma_cm_thread *thread, struct nrma_ep *ep);
void nrma_cm_thread_unwatch(struct nrma_cm_thread *thread, struct nrma_ep *ep);
/* fn(arg), with the thread's lock held, whenever fd is readable. */
int nrma_cm_thread_watch_fn(struct nrma_cm_thread *t, int fd,
			    void (*fn)(void *arg), void *arg);
void nrma_cm_thread_unwatch_fn(struct nrma_cm_thread *t, int fd, void *arg);
/* fn(ep, arg) for each endpoint it watches, with its lock and ep's held. */
void nrma_cm_thread_each_ep(struct nrma_cm_thread *t,
			    void (*fn)(struct nrma_ep *ep, void *arg),
			    void *arg);
/* How connection management reports to an endpoint. */
extern const struct nrma_cm_ops nrma_progress_cm_ops;
/* Its entries, for tables that add to it (nrma_ep_conn.c). */
void nrma_progress_drain(void *arg);
void nrma_progress_probe(void *arg, struct nrma_conn *conn);
int nrma_progress_conn_open(void *arg, struct nrma_conn *conn);
void nrma_progress_conn_close(void *arg, struct nrma_conn *conn);
/* After fi_shutdown: until nothing uses the connection (bounded). */
void nrma_progress_settle(struct nrma_ep *ep);

/*
 * The protocol's entry points for fi_msg (nrma_msg.c) and fi_tagged.  A
 * send takes no descriptors: it registers what its receiver reads itself.
 */
struct nrma_send_args {
	const struct iovec *iov;
	size_t count;
	fi_addr_t dest;
	uint64_t data;
	uint64_t tag;
	uint64_t flags; /* FI_TAGGED marks a tagged send */
	bool silent;	/* the fi_inject calls: no completion */
	void *context;
};

struct nrma_recv_args {
	const struct iovec *iov;
	void **desc;
	size_t count;
	fi_addr_t src; /* honoured with FI_DIRECTED_RECV */
	uint64_t tag;
	uint64_t ignore;
	uint64_t flags; /* FI_TAGGED marks a tagged receive */
	void *context;
};

ssize_t nrma_send(struct nrma_ep *ep, const struct nrma_send_args *args);
/* The same, of one buffer (args->iov[0]); the common sizes checked less. */
ssize_t nrma_send_buf(struct nrma_ep *ep, const struct nrma_send_args *args);

/* One RMA operation, from any of the fi_rma calls. */
struct nrma_rma_args {
	const struct iovec *iov;
	void **desc;
	size_t count;
	fi_addr_t dest;
	uint64_t addr; /* the one remote segment */
	uint64_t len;
	uint64_t key;
	uint64_t data;
	uint64_t flags; /* FI_READ or FI_WRITE, and op flags */
	bool silent;	/* fi_inject_write(data): no completion */
	void *context;
	const struct fi_nrma_notify *notify; /* a set's counter to bump */
};

/*
 * An atomic operation moves at most this many bytes of elements
 * (FI_OPT_MAX_ATOMIC_SIZE): fi_atomicvalid's count is that over an
 * element's size.  Those nrma_atomic.c runs as a loop of compare-and-swaps
 * carry their operands with them.
 */
#define NRMA_ATOMIC_MAX_BYTES 64

/* One atomic operation, with its operands read already. */
struct nrma_atomic_args {
	enum nrma_atomic_kind kind;
	enum fi_op op;
	enum fi_datatype datatype;
	size_t count; /* of elements, each of nrma_atomic_calc_size bytes */
	void *result; /* FETCH and COMPARE: the old values */
	fi_addr_t dest;
	uint64_t addr;
	uint64_t key;
	uint64_t flags;
	bool silent; /* fi_inject_atomic: no completion */
	void *context;
	const struct fi_nrma_notify *notify; /* a set's counter to bump */
	/* The elements of the operand and of compare (or FI_MSWAP's mask). */
	unsigned char operand[NRMA_ATOMIC_MAX_BYTES];
	unsigned char compare[NRMA_ATOMIC_MAX_BYTES];
};

/* 0 if fi_atomic(3) calls of kind do op on datatype: their count. */
int nrma_atomic_valid(enum fi_datatype datatype, enum fi_op op,
		      enum nrma_atomic_kind kind, size_t *count);
/* An atomic operation (nrma_atomic.c), as nrma_rma. */
ssize_t nrma_atomic(struct nrma_ep *ep, const struct nrma_atomic_args *args);

/*
 * An RMA operation (nrma_rma.c): -FI_EAGAIN when there is no room.  One
 * whose peer's key is still to be read is held until it is (nrma_tx_hold),
 * and its call returns at once.
 */
ssize_t nrma_rma(struct nrma_ep *ep, const struct nrma_rma_args *args);
/* nrma_rma of one segment, cheaper when it is small. */
ssize_t nrma_rma_small(struct nrma_ep *ep, const struct nrma_rma_args *args);
/*
 * A read or write of one buffer, as the calls with one (fi_read, fi_write,
 * fi_readmsg and fi_writemsg of one segment, notified or not) hand it in.
 */
struct nrma_rma_buf {
	void *buf;
	size_t len; /* the remote segment's too */
	void *desc;
	fi_addr_t dest;
	uint64_t addr;
	uint64_t key;
	void *context;
	uint64_t flags; /* FI_READ or FI_WRITE, and op flags */
	const struct fi_nrma_notify *notify;
	bool silent; /* an fi_inject call: no completion */
};

/*
 * nrma_rma in the common case, without an argument record; or, before it
 * posts anything, NRMA_RMA_NOT_LIGHT: the caller goes the generic way
 * (nrma_rma_small or nrma_rma).
 */
#define NRMA_RMA_NOT_LIGHT 1
ssize_t nrma_rma_light(struct nrma_ep *ep, const struct nrma_rma_buf *b);
/* Called with ep->lock held. */
ssize_t nrma_recv_cancel(struct nrma_ep *ep, void *context);
/* fi_cancel of a held triggered operation (nrma_trigger.c), as above. */
bool nrma_trigger_cancel(struct nrma_ep *ep, void *context);
/* Forgets what is held: the endpoint closes. */
void nrma_trigger_drop(struct nrma_ep *ep);

/* The data path's state of an endpoint (nrma_xfer.c). */
int nrma_xfer_open(struct nrma_ep *ep);
void nrma_xfer_close(struct nrma_ep *ep);
/* Device completions an endpoint can have outstanding at once. */
/* The device queues an endpoint's data path needs. */
struct nrma_xfer_sizes {
	size_t cq;
	size_t srq;
};
struct nrma_xfer_sizes nrma_xfer_sizes(const struct fi_info *info,
				       const struct nrma_dev_limits *lim);
/* Transmits and receives that may be posted now (fi_tx/rx_size_left). */
size_t nrma_xfer_tx_left(const struct nrma_ep *ep);
size_t nrma_xfer_rx_left(const struct nrma_ep *ep);

extern struct fi_ops_msg nrma_msg_ops;
extern struct fi_ops_tagged nrma_tagged_ops;
/* fi_recv and friends on any receiving fid (nrma_msg.c). */
ssize_t nrma_msg_recv_on(struct fid_ep *ep_fid, const struct nrma_recv_args *a);
/* fi_send and friends, msg's and tagged (nrma_msg.c). */
ssize_t nrma_msg_submit(struct fid_ep *ep_fid, const struct nrma_send_args *a);
/*
 * nrma_msg_submit of one buffer: a says all but where it is (its iov).
 * nrma_msg_send_buf is the same, inline where fi_send and fi_tsend call it.
 */
ssize_t nrma_msg_submit_buf(struct fid_ep *ep_fid, const void *buf, size_t len,
			    struct nrma_send_args *a);
ssize_t nrma_msg_send_buf(struct fid_ep *ep_fid, const void *buf, size_t len,
			  struct nrma_send_args *a);
uint64_t nrma_msg_rx_op_flags(struct fid_ep *ep_fid);
extern struct fi_ops_rma nrma_ep_rma_ops;
extern struct fi_ops_atomic nrma_ep_atomic_ops;
int nrma_ep_atomic_query(struct fid_domain *domain, enum fi_datatype datatype,
			 enum fi_op op, struct fi_atomic_attr *attr,
			 uint64_t flags);

/* Notification sets (nrma_nset.c, fi_ext_nrma.h). */
int nrma_nset_open(struct fid_domain *domain,
		   const struct fi_nrma_nset_attr *attr,
		   struct fid_nrma_nset **nset, void *context);
/* Notified operations, an endpoint's FI_NRMA_EP_OPS_1 (nrma_ep_rma.c and
 * nrma_ep_atomic.c). */
ssize_t nrma_ep_rma_writemsg_notify(struct fid_ep *ep,
				    const struct fi_msg_rma *msg,
				    const struct fi_nrma_notify *notify,
				    uint64_t flags);
ssize_t nrma_ep_rma_readmsg_notify(struct fid_ep *ep,
				   const struct fi_msg_rma *msg,
				   const struct fi_nrma_notify *notify,
				   uint64_t flags);
ssize_t nrma_ep_atomic_writemsg_notify(struct fid_ep *ep,
				       const struct fi_msg_atomic *msg,
				       const struct fi_nrma_notify *notify,
				       uint64_t flags);
ssize_t nrma_ep_atomic_readwritemsg_notify(
	struct fid_ep *ep, const struct fi_msg_atomic *msg,
	struct fi_ioc *resultv, void **result_desc, size_t result_count,
	const struct fi_nrma_notify *notify, uint64_t flags);

/* fi_open_ops of an object that has one ops table, named want. */
static inline int nrma_ops_open_named(const char *name, uint64_t flags,
				      void **ops, const char *want, void *table)
{
	if (!name || !ops)
		return -FI_EINVAL;
	if (flags)
		return -FI_EBADFLAGS;
	if (strcmp(name, want))
		return -FI_ENOSYS;
	*ops = table;
	return 0;
}

/*
 * Typed accessors: nrma_<obj>_of(struct fid_<obj> *) and
 * nrma_<obj>_of_fid(struct fid *) for fabric, domain, eq, cq, cntr, av
 * and mr; an endpoint's below.
 */
#define NRMA_FID_ACCESSORS(obj)                                               \
	static inline struct nrma_##obj *nrma_##obj##_of(                     \
		struct fid_##obj *obj##_fid)                                  \
	{                                                                     \
		return nrma_container_of(obj##_fid, struct nrma_##obj,        \
					 obj##_fid);                          \
	}                                                                     \
	static inline struct nrma_##obj *nrma_##obj##_of_fid(struct fid *fid) \
	{                                                                     \
		return nrma_container_of(fid, struct nrma_##obj,              \
					 obj##_fid.fid);                      \
	}

NRMA_FID_ACCESSORS(fabric)
NRMA_FID_ACCESSORS(domain)
NRMA_FID_ACCESSORS(eq)
NRMA_FID_ACCESSORS(cq)
NRMA_FID_ACCESSORS(cntr)
NRMA_FID_ACCESSORS(av)
NRMA_FID_ACCESSORS(mr)

/* An endpoint's fids are those of its paths: its own, and its aliases. */
static inline struct nrma_ep_path *nrma_path_of(struct fid_ep *ep_fid)
{
	return nrma_container_of(ep_fid, struct nrma_ep_path, ep_fid);
}

static inline struct nrma_ep *nrma_ep_of(struct fid_ep *ep_fid)
{
	return nrma_path_of(ep_fid)->ep;
}

/*
 * The flags of an fi_inject call through ep_fid: flags, and FI_TRIGGER of
 * a triggered alias, so that the call is refused (it has no context to
 * carry a trigger) rather than run at once.
 */
static inline uint64_t nrma_inject_flags(struct fid_ep *ep_fid, uint64_t flags)
{
	return flags | (nrma_path_of(ep_fid)->tx_op_flags & FI_TRIGGER);
}

static inline struct nrma_ep *nrma_ep_of_fid(struct fid *fid)
{
	return nrma_ep_of(nrma_container_of(fid, struct fid_ep, fid));
}

#endif /* NRMA_H */
