/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * An endpoint's options (fi_getopt, fi_setopt) and default operation
 * flags (fi_control FI_GETOPSFLAG, FI_SETOPSFLAG), as fi_endpoint(3) of
 * libfabric 2.x defines them.  Options that shape the data path may only
 * be set before fi_enable; FI_OPT_MIN_MULTI_RECV applies to receives
 * posted after it changes, at any time.
 */
#include <stdbool.h>
#include <string.h>

#include "nrma.h"
#include "nrma_proto.h"
#include "nrma_xfer.h"

/*
 * The options libfabric 2.0 added, by their numbers there, so that builds
 * against 1.x headers answer them alike.
 */
#if FI_MAJOR_VERSION >= 2
#define NRMA_OPT_CUDA_API_PERMITTED	 FI_OPT_CUDA_API_PERMITTED
#define NRMA_OPT_SHARED_MEMORY_PERMITTED FI_OPT_SHARED_MEMORY_PERMITTED
#define NRMA_OPT_MAX_MSG_SIZE		 FI_OPT_MAX_MSG_SIZE
#define NRMA_OPT_MAX_ATOMIC_SIZE	 FI_OPT_MAX_ATOMIC_SIZE
#define NRMA_OPT_INJECT_MSG_SIZE	 FI_OPT_INJECT_MSG_SIZE
#define NRMA_OPT_INJECT_ATOMIC_SIZE	 FI_OPT_INJECT_ATOMIC_SIZE
#else
enum {
	NRMA_OPT_CUDA_API_PERMITTED = FI_OPT_XPU_TRIGGER + 1,
	NRMA_OPT_SHARED_MEMORY_PERMITTED,
	NRMA_OPT_MAX_MSG_SIZE,
	NRMA_OPT_MAX_TAGGED_SIZE,
	NRMA_OPT_MAX_RMA_SIZE,
	NRMA_OPT_MAX_ATOMIC_SIZE,
	NRMA_OPT_INJECT_MSG_SIZE,
	NRMA_OPT_INJECT_TAGGED_SIZE,
	NRMA_OPT_INJECT_RMA_SIZE,
	NRMA_OPT_INJECT_ATOMIC_SIZE,
};
#endif

/* Whether flags are transmit or receive operation flags nrma honours. */
static bool opt_op_flags_valid(const struct nrma_ep *ep, uint64_t flags)
{
	uint64_t dir = flags & (FI_TRANSMIT | FI_RECV);

	if (dir == FI_TRANSMIT)
		return !(flags & ~(FI_TRANSMIT | NRMA_TX_OP_FLAGS)) &&
		       nrma_op_flags_capped(flags, ep->info->caps);
	if (dir == FI_RECV)
		return !(flags & ~(FI_RECV | NRMA_RX_OP_FLAGS)) &&
		       nrma_op_flags_capped(flags, ep->info->caps);
	return false;
}

int nrma_ep_opt_flags_get(struct nrma_ep_path *path, uint64_t *flags)
{
	uint64_t dir = flags ? *flags & (FI_TRANSMIT | FI_RECV) : 0;

	if (dir == FI_TRANSMIT)
		*flags = path->tx_op_flags;
	else if (dir == FI_RECV)
		*flags = path->rx_op_flags;
	else
		return -FI_EINVAL;
	return 0;
}

int nrma_ep_opt_flags_set(struct nrma_ep_path *path, const uint64_t *flags)
{
	if (!flags || !opt_op_flags_valid(path->ep, *flags))
		return -FI_EINVAL;
	if (*flags & FI_TRANSMIT)
		path->tx_op_flags = *flags & ~FI_TRANSMIT;
	else
		path->rx_op_flags = *flags & ~FI_RECV;
	return 0;
}

/* A size_t option's value, its bound, and whether it is fixed at enable. */
struct opt_size {
	size_t *value;
	size_t max;
	bool before_enable;
};

static size_t opt_min(size_t a, size_t b)
{
	return a < b ? a : b;
}

/* The bound of a class's FI_OPT_MAX_* or FI_OPT_INJECT_* size. */
static size_t opt_class_max(int class, size_t limit)
{
	/* An atomic's elements carry their operands (NRMA_ATOMIC_MAX_BYTES). */
	return class == NRMA_XFER_ATOMIC ?
		       opt_min(limit, NRMA_ATOMIC_MAX_BYTES) :
		       limit;
}

static bool opt_size_of(struct nrma_ep *ep, int optname, struct opt_size *o)
{
	size_t max_msg = ep->info->ep_attr->max_msg_size;
	size_t max_inject = ep->info->tx_attr->inject_size;
	int c;

	if (optname == FI_OPT_MIN_MULTI_RECV &&
	    (ep->info->caps & FI_MULTI_RECV)) {
		*o = (struct opt_size){ &ep->xfer->rx->min_multi_recv, SIZE_MAX,
					false };
		return true;
	}
	if (optname >= NRMA_OPT_MAX_MSG_SIZE &&
	    optname <= NRMA_OPT_MAX_ATOMIC_SIZE) {
		c = optname - NRMA_OPT_MAX_MSG_SIZE;
		*o = (struct opt_size){ &ep->max_size[c],
					opt_class_max(c, max_msg), true };
		return true;
	}
	if (optname >= NRMA_OPT_INJECT_MSG_SIZE &&
	    optname <= NRMA_OPT_INJECT_ATOMIC_SIZE) {
		c = optname - NRMA_OPT_INJECT_MSG_SIZE;
		*o = (struct opt_size){ &ep->inject_size[c],
					opt_class_max(c, max_inject), true };
		return true;
	}
	return false;
}

/* Copies a value of len bytes out to an application's buffer. */
int nrma_ep_opt_put(void *optval, size_t *optlen, const void *value, size_t len)
{
	if (!optval || !optlen)
		return -FI_EINVAL;
	if (*optlen < len) {
		*optlen = len;
		return -FI_ETOOSMALL;
	}
	memcpy(optval, value, len);
	*optlen = len;
	return 0;
}

void nrma_ep_opt_init(struct nrma_ep *ep)
{
	const struct fi_info *info = ep->info;

	ep->hmem_p2p = FI_HMEM_P2P_ENABLED;
	ep->cm_data_size = nrma_ep_is_msg(ep) ? NRMA_CM_MSG_APP_MAX : 0;
	for (int c = 0; c < NRMA_XFER_CLASSES; c++) {
		ep->max_size[c] = opt_class_max(c, info->ep_attr->max_msg_size);
		ep->inject_size[c] =
			opt_class_max(c, info->tx_attr->inject_size);
	}
}

int nrma_ep_opt_get(fid_t fid, int level, int optname, void *optval,
		    size_t *optlen)
{
	struct nrma_ep *ep = nrma_ep_of_fid(fid);
	struct opt_size o;
	size_t value = 0;
	int mode, ret = 0;

	if (level != FI_OPT_ENDPOINT)
		return -FI_ENOPROTOOPT;
	pthread_mutex_lock(ep->lock);
	mode = ep->hmem_p2p;
	if (opt_size_of(ep, optname, &o))
		value = *o.value;
	else if (optname == FI_OPT_CM_DATA_SIZE && ep->cm_data_size)
		value = ep->cm_data_size;
	else if (optname != FI_OPT_FI_HMEM_P2P)
		ret = -FI_ENOPROTOOPT;
	pthread_mutex_unlock(ep->lock);
	if (ret)
		return ret;
	if (optname == FI_OPT_FI_HMEM_P2P)
		return nrma_ep_opt_put(optval, optlen, &mode, sizeof(mode));
	return nrma_ep_opt_put(optval, optlen, &value, sizeof(value));
}

/*
 * With no device memory (no FI_HMEM) there is nothing to move peer to
 * peer: any mode holds but one that requires it.
 */
static int opt_set_hmem_p2p(struct nrma_ep *ep, const void *optval,
			    size_t optlen)
{
	int mode;

	if (!optval || optlen != sizeof(int))
		return -FI_EINVAL;
	mode = *(const int *) optval;
	switch (mode) {
	case FI_HMEM_P2P_REQUIRED:
		return -FI_EOPNOTSUPP;
	case FI_HMEM_P2P_ENABLED:
	case FI_HMEM_P2P_PREFERRED:
	case FI_HMEM_P2P_DISABLED:
		ep->hmem_p2p = mode;
		return 0;
	default:
		return -FI_EINVAL;
	}
}

static int opt_set_locked(struct nrma_ep *ep, int optname, const void *optval,
			  size_t optlen)
{
	struct opt_size o;

	if (optname == FI_OPT_FI_HMEM_P2P)
		return opt_set_hmem_p2p(ep, optval, optlen);
	/* nrma never uses shared memory: either answer holds. */
	if (optname == NRMA_OPT_SHARED_MEMORY_PERMITTED)
		return optval && optlen == sizeof(bool) ? 0 : -FI_EINVAL;
	if (!opt_size_of(ep, optname, &o))
		return -FI_ENOPROTOOPT;
	if (!optval || optlen != sizeof(size_t) ||
	    *(const size_t *) optval > o.max)
		return -FI_EINVAL;
	if (o.before_enable && ep->enabled)
		return -FI_EOPBADSTATE;
	*o.value = *(const size_t *) optval;
	return 0;
}

int nrma_ep_opt_set(fid_t fid, int level, int optname, const void *optval,
		    size_t optlen)
{
	struct nrma_ep *ep = nrma_ep_of_fid(fid);
	int ret;

	if (level != FI_OPT_ENDPOINT)
		return -FI_ENOPROTOOPT;
	pthread_mutex_lock(ep->lock);
	ret = opt_set_locked(ep, optname, optval, optlen);
	pthread_mutex_unlock(ep->lock);
	return ret;
}
