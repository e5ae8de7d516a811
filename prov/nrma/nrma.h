/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * nrma: an RDM libfabric provider over ibverbs RC queue pairs whose remote
 * counters are bumped by verbs atomics (notified RMA).
 *
 * The libfabric objects live here; everything that speaks verbs or rdmacm
 * is behind nrma_verbs.h.
 */
#ifndef NRMA_H
#define NRMA_H

#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

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

#include "nrma_bufpool.h"
#include "nrma_hash.h"
#include "nrma_list.h"
#include "nrma_ring.h"

#define NRMA_PROV_NAME		FI_NRMA_PROV_NAME
#define NRMA_PROV_VERSION	FI_NRMA_VERSION
#define NRMA_FI_VERSION		FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION)
#define NRMA_PROTOCOL_VERSION	2

extern struct fi_provider nrma_prov;

struct ibv_qp;
struct rdma_cm_id;
struct nrma_cntr;
struct nrma_ep;
struct nrma_listener;
struct nrma_notify;
struct nrma_proto;
struct nrma_verbs_ep;

#define NRMA_WARN(subsys, ...)	FI_WARN(&nrma_prov, subsys, __VA_ARGS__)
#define NRMA_INFO(subsys, ...)	FI_INFO(&nrma_prov, subsys, __VA_ARGS__)
/* libfabric compiles FI_DBG out of release builds; ours stays. */
#define NRMA_DBG(subsys, ...)	FI_LOG(&nrma_prov, FI_LOG_DEBUG, subsys, __VA_ARGS__)

/* Tunables, read once from FI_NRMA_* at load time. */
struct nrma_params {
	char *device;		/* restrict to this verbs device */
	size_t tx_size;		/* default transmit queue depth */
	size_t rx_size;		/* default receive queue depth */
	size_t cq_size;		/* CQ size when the application gives 0 */
	size_t cntr_max;	/* counters per domain */
	size_t notify_cells;	/* notification cells per domain */
	int wait_spin_us;	/* busy-poll before a blocking wait sleeps */
	size_t eager_size;	/* largest message sent by copy */
	size_t unexp_max;	/* unexpected messages held per endpoint */
	size_t qp_depth;	/* send queue depth per connection */
	bool notify_fence_always; /* fence every notification atomic */
	int notify_wake_ms;	/* sleep bound while remote atomics count */
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
	struct sockaddr_in addr;	/* an IPv4 address rdmacm binds on it */
	struct sockaddr_in netmask;
	struct nrma_dev_limits limits;
};

extern struct nrma_device *nrma_devices;
extern size_t nrma_device_count;

/* Attributes and hint matching (nrma_attr.c). */
struct fi_info *nrma_info_alloc(const struct nrma_device *dev);
int nrma_info_match(uint32_t version, const struct fi_info *prov,
		    const struct fi_info *hints);
void nrma_info_narrow(uint32_t version, struct fi_info *info,
		      const struct fi_info *hints);
int nrma_fabric_name(const struct sockaddr_in *addr,
		     const struct sockaddr_in *netmask, char *buf, size_t len);
int nrma_getinfo(uint32_t version, const char *node, const char *service,
		 uint64_t flags, const struct fi_info *hints,
		 struct fi_info **info);

/*
 * Wait objects.  FI_WAIT_FD is an epoll fd holding an eventfd (signalled
 * when the object gains something to read) and the completion and
 * connection channels of the endpoints bound to the object.
 */
struct nrma_wait {
	enum fi_wait_obj type;		/* FI_WAIT_NONE, _FD or _YIELD */
	int fd;				/* epoll fd for FI_WAIT_FD, else -1 */
	int event_fd;
};

int nrma_wait_open(struct nrma_wait *wait, enum fi_wait_obj requested);
int nrma_wait_add_fd(struct nrma_wait *wait, int fd);
void nrma_wait_del_fd(struct nrma_wait *wait, int fd);
void nrma_wait_close(struct nrma_wait *wait);
void nrma_wait_signal(struct nrma_wait *wait);
void nrma_wait_drain(struct nrma_wait *wait);
int nrma_wait_block(struct nrma_wait *wait, int timeout_ms);
int nrma_wait_control(struct nrma_wait *wait, int command, void *arg);
int nrma_timeout_left(const struct timespec *start, int timeout_ms);

/* Fabric */
struct nrma_fabric {
	struct fid_fabric fabric_fid;
	uint32_t api_version;		/* what the application asked for */
	atomic_int ref;			/* open domains and EQs */
};

int nrma_fabric_open(struct fi_fabric_attr *attr, struct fid_fabric **fabric,
		     void *context);
size_t nrma_err_entry_size(uint32_t version, size_t full, size_t pre_1_5);

/* Event queue */
struct nrma_eq {
	struct fid_eq eq_fid;
	struct nrma_fabric *fabric;
	pthread_mutex_t lock;
	struct nrma_dlist events;	/* struct nrma_eq_event, oldest first */
	size_t count;
	size_t size;
	uint64_t flags;
	struct nrma_wait wait;
	atomic_int ref;			/* objects bound to it */
};

int nrma_eq_open(struct fid_fabric *fabric, struct fi_eq_attr *attr,
		 struct fid_eq **eq, void *context);
int nrma_eq_report(struct nrma_eq *eq, uint32_t event,
		   const struct fi_eq_entry *entry);
int nrma_eq_report_err(struct nrma_eq *eq, const struct fi_eq_err_entry *err);
int nrma_eq_trywait(struct nrma_eq *eq);

/* Domain */
struct nrma_domain {
	struct fid_domain domain_fid;
	struct nrma_fabric *fabric;
	const struct nrma_device *device;
	struct fi_info *info;
	struct nrma_verbs_domain *verbs;
	struct nrma_eq *eq;		/* bound for asynchronous errors */
	struct nrma_notify *notify;	/* nrma_notify.c */
	atomic_int ref;			/* open child objects */
};

int nrma_domain_open(struct fid_fabric *fabric, struct fi_info *info,
		     struct fid_domain **domain, void *context);

/*
 * Notification cells (nrma_notify.c): two words that peers bump with
 * remote atomics, one for writes and one for reads, at these remote
 * addresses under the cell's own rkey.  An MR key is the data's verbs
 * rkey in bits 0-31 and its cell's rkey in bits 32-63 (0: no cell).
 */
#define NRMA_NOTIFY_WRITE_ADDR	0
#define NRMA_NOTIFY_READ_ADDR	8

struct nrma_notify_cell;

int nrma_notify_open(struct nrma_domain *domain);
void nrma_notify_close(struct nrma_domain *domain);
int nrma_notify_cell_open(struct nrma_domain *domain,
			  struct nrma_notify_cell **cell);
int nrma_notify_cell_bind(struct nrma_notify_cell *cell, struct nrma_cntr *cntr,
			  uint64_t flags);
uint32_t nrma_notify_cell_rkey(const struct nrma_notify_cell *cell);
void nrma_notify_cell_close(struct nrma_notify_cell *cell);
uint64_t nrma_notify_key(uint32_t rkey, uint32_t cell_rkey);
void nrma_notify_key_decode(uint64_t key, uint32_t *rkey, uint32_t *cell_rkey);

/* Poll sets (nrma_poll.c) */
int nrma_poll_open(struct fid_domain *domain, struct fi_poll_attr *attr,
		   struct fid_poll **poll);

/* Memory registration */
struct nrma_mr {
	struct fid_mr mr_fid;
	struct nrma_domain *domain;
	struct nrma_verbs_mr *verbs;
	uint64_t access;
	uint64_t flags;			/* FI_RMA_EVENT */
	struct nrma_notify_cell *cell;	/* counters bound with fi_mr_bind */
	bool enabled;			/* fi_mr_enable: no more bindings */
};

extern struct fi_ops_mr nrma_mr_ops;

/*
 * The endpoints bound to a CQ or counter, which reading it progresses.
 * Its lock orders before any endpoint's lock.
 */
struct nrma_ep_set {
	pthread_mutex_t lock;
	struct nrma_ep **eps;
	size_t count;
};

void nrma_ep_set_init(struct nrma_ep_set *set);
void nrma_ep_set_fini(struct nrma_ep_set *set);
int nrma_ep_set_add(struct nrma_ep_set *set, struct nrma_ep *ep,
		    struct nrma_wait *wait);
void nrma_ep_set_del(struct nrma_ep_set *set, struct nrma_ep *ep,
		     struct nrma_wait *wait);
void nrma_ep_set_progress(struct nrma_ep_set *set);
/* Arms every endpoint; -FI_EAGAIN if one had work after all. */
int nrma_ep_set_arm(struct nrma_ep_set *set);

/* Completion queue: a ring of completions and a list of errors. */
struct nrma_cq_entry {
	struct fi_cq_tagged_entry comp;
	fi_addr_t src_addr;
};

struct nrma_cq_err {
	struct nrma_dlist link;
	struct fi_cq_err_entry err;
};

struct nrma_cq {
	struct fid_cq cq_fid;
	struct nrma_domain *domain;
	pthread_mutex_t lock;
	enum fi_cq_format format;
	enum fi_cq_wait_cond wait_cond;
	size_t threshold;
	struct nrma_ring comps;		/* struct nrma_cq_entry */
	struct nrma_dlist errors;	/* struct nrma_cq_err */
	bool signaled;
	struct nrma_wait wait;
	struct nrma_ep_set eps;		/* endpoints to progress */
	atomic_int ref;			/* endpoints bound to it */
};

int nrma_cq_open(struct fid_domain *domain, struct fi_cq_attr *attr,
		 struct fid_cq **cq, void *context);
int nrma_cq_trywait(struct nrma_cq *cq);
bool nrma_cq_ready(struct nrma_cq *cq);
void nrma_cq_write(struct nrma_cq *cq, const struct nrma_cq_entry *entry);
void nrma_cq_write_err(struct nrma_cq *cq, const struct fi_cq_err_entry *err);
size_t nrma_cq_room(struct nrma_cq *cq);

/* Counter */
struct nrma_cntr {
	struct fid_cntr cntr_fid;
	struct nrma_domain *domain;
	_Atomic uint64_t value;		/* local count: bias on the words */
	_Atomic uint64_t err;
	pthread_mutex_t lock;		/* guards words */
	volatile uint64_t **words;	/* notification words counted in */
	size_t nwords;
	size_t words_cap;
	struct nrma_wait wait;
	struct nrma_ep_set eps;		/* endpoints to progress */
	atomic_int ref;			/* endpoints bound to it */
};

int nrma_cntr_open(struct fid_domain *domain, struct fi_cntr_attr *attr,
		   struct fid_cntr **cntr, void *context);
int nrma_cntr_trywait(struct nrma_cntr *cntr);
void nrma_cntr_inc(struct nrma_cntr *cntr);
void nrma_cntr_inc_err(struct nrma_cntr *cntr);
/* Counts a notification word in, or out once no atomic can reach it. */
int nrma_cntr_watch(struct nrma_cntr *cntr, volatile uint64_t *word);
void nrma_cntr_unwatch(struct nrma_cntr *cntr, volatile uint64_t *word);

/* Address vector: endpoint names are IPv4 socket addresses. */
struct nrma_av {
	struct fid_av av_fid;
	struct nrma_domain *domain;
	enum fi_av_type type;
	uint64_t flags;
	pthread_mutex_t lock;
	struct sockaddr_in *addrs;	/* indexed by fi_addr_t */
	size_t count;
	size_t capacity;
	struct nrma_eq *eq;		/* FI_EVENT: insert results go here */
	atomic_int ref;			/* endpoints bound to it */
};

int nrma_av_open(struct fid_domain *domain, struct fi_av_attr *attr,
		 struct fid_av **av, void *context);
bool nrma_addr_valid(const void *addr, size_t len);
int nrma_av_get(struct nrma_av *av, fi_addr_t fi_addr, struct sockaddr_in *sin);
fi_addr_t nrma_av_find(struct nrma_av *av, const struct sockaddr_in *sin);
int nrma_addr_str(const struct sockaddr_in *sin, char *buf, size_t len);

/* Connections (nrma_cm.c): one RC queue pair per peer and endpoint. */
enum nrma_conn_state {
	NRMA_CONN_CONNECTING,
	NRMA_CONN_CONNECTED,
	NRMA_CONN_FAILED,
};

struct nrma_conn {
	struct nrma_dlist link;		/* nrma_ep.conns */
	struct nrma_ep *ep;
	struct rdma_cm_id *id;
	struct ibv_qp *qp;
	enum nrma_conn_state state;
	int error;			/* why it failed */
	bool outgoing;
	bool established;		/* it was up once */
	bool loopback;			/* our own request: we receive on it */
	struct sockaddr_in peer;	/* the peer endpoint's name */
	fi_addr_t fi_addr;		/* FI_ADDR_NOTAVAIL until known */
	uint32_t qp_num;
	size_t sq_free;			/* send queue slots not in use */
	uint32_t notify_rkey;		/* the peer endpoint's cell, 0: none */
	int64_t started;		/* ms: first attempt to reach the peer */
};

int nrma_conn_get(struct nrma_ep *ep, fi_addr_t fi_addr,
		  struct nrma_conn **conn);
struct nrma_conn *nrma_conn_by_qp(struct nrma_ep *ep, uint32_t qp_num);
fi_addr_t nrma_conn_fi_addr(struct nrma_conn *conn);
void nrma_conn_fail(struct nrma_conn *conn, int error);
void nrma_conn_heard(struct nrma_conn *conn);
void nrma_cm_progress(struct nrma_ep *ep);
void nrma_conns_close(struct nrma_ep *ep);

/* RDM endpoint */
#define NRMA_IOV_LIMIT	4

struct nrma_ep {
	struct fid_ep ep_fid;
	struct nrma_domain *domain;
	struct fi_info *info;
	pthread_mutex_t lock;
	struct nrma_cq *tx_cq;
	struct nrma_cq *rx_cq;
	uint64_t tx_cq_flags;
	uint64_t rx_cq_flags;
	struct nrma_cntr *send_cntr;
	struct nrma_cntr *recv_cntr;
	struct nrma_cntr *read_cntr;
	struct nrma_cntr *write_cntr;
	struct nrma_cntr *rread_cntr;	/* FI_REMOTE_READ */
	struct nrma_cntr *rwrite_cntr;	/* FI_REMOTE_WRITE */
	struct nrma_notify_cell *notify_cell;	/* words of rread/rwrite_cntr */
	struct nrma_av *av;
	struct nrma_eq *eq;
	struct nrma_listener *listener;
	struct sockaddr_in name;	/* fixed at fi_enable */
	bool enabled;
	uint64_t tx_op_flags;
	uint64_t rx_op_flags;
	size_t min_multi_recv;

	/* verbs resources, shared by all connections */
	struct nrma_verbs_ep *verbs;
	struct nrma_proto *proto;	/* nrma_proto.c */

	struct nrma_dlist conns;	/* every struct nrma_conn */
	struct nrma_conn **peers;	/* by fi_addr_t */
	size_t npeers;
	struct nrma_hash qp_conns;	/* qp_num -> conn */
};

int nrma_ep_open(struct fid_domain *domain, struct fi_info *info,
		 struct fid_ep **ep, void *context);
void nrma_ep_progress(struct nrma_ep *ep);
int nrma_ep_arm(struct nrma_ep *ep);
int nrma_ep_cm_fd(const struct nrma_ep *ep);

/*
 * The message protocol (nrma_proto.c, nrma_recv.c) behind fi_msg
 * (nrma_msg.c) and fi_tagged (nrma_tagged.c).
 */
struct nrma_send_args {
	const struct iovec *iov;
	void **desc;
	size_t count;
	fi_addr_t dest;
	uint64_t data;
	uint64_t tag;
	uint64_t flags;		/* FI_TAGGED marks a tagged send */
	void *context;
};

struct nrma_recv_args {
	const struct iovec *iov;
	void **desc;
	size_t count;
	fi_addr_t src;		/* honoured with FI_DIRECTED_RECV */
	uint64_t tag;
	uint64_t ignore;
	uint64_t flags;		/* FI_TAGGED marks a tagged receive */
	void *context;
};

ssize_t nrma_proto_send(struct nrma_ep *ep, const struct nrma_send_args *args);

struct nrma_rma_args {
	const struct iovec *iov;
	void **desc;
	size_t count;
	fi_addr_t dest;
	uint64_t addr;		/* the one remote segment */
	uint64_t len;
	uint64_t key;
	uint64_t data;
	uint64_t flags;		/* FI_READ or FI_WRITE, and op flags */
	void *context;
};

extern struct fi_ops_rma nrma_rma_ops;
extern struct fi_ops_atomic nrma_atomic_ops;
int nrma_query_atomic(struct fid_domain *domain, enum fi_datatype datatype,
		      enum fi_op op, struct fi_atomic_attr *attr,
		      uint64_t flags);
ssize_t nrma_proto_recv(struct nrma_ep *ep, const struct nrma_recv_args *args);

extern struct fi_ops_msg nrma_msg_ops;
extern struct fi_ops_tagged nrma_tagged_ops;
int nrma_proto_open(struct nrma_ep *ep);
void nrma_proto_close(struct nrma_ep *ep);
size_t nrma_proto_cq_size(const struct fi_info *info);
int nrma_proto_progress(struct nrma_ep *ep);
void nrma_proto_linger(struct nrma_ep *ep);
void nrma_proto_conn_failed(struct nrma_ep *ep, struct nrma_conn *conn);
ssize_t nrma_proto_cancel(struct nrma_ep *ep, void *context);

#endif /* NRMA_H */
