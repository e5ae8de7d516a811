#!/bin/bash
# Benchmarks shmem_put_signal + shmem_wait_until (test/shmem/
# nrma_shmem_signal_bench.c: ping-pong latency and stream rate) at 2 PEs
# over nrma and, in the same run, over libfabric's sockets provider, and
# prints their tables one after the other.  SOS's target counter carries
# the waits (its default build): nrma's is bumped by the initiator's
# atomics, with no call at the target.
#
# Usage: test/shmem/bench.sh [--providers "nrma sockets"] SOS_PREFIX
#                            [BUILDDIR] [ITERATIONS]
#   SOS_PREFIX  where a Sandia OpenSHMEM you built yourself is installed
#               (README, OpenSHMEM): SOS_PREFIX/bin/oshcc
#   BUILDDIR    nrma's build directory, built (default: the current one)
#   ITERATIONS  round trips and puts per size (default 1000)
# Without an active verbs device it runs itself inside contrib/nrma-vm.
set -u

usage() { sed -n '2,16s/^# \{0,1\}//p' "$0"; exit 2; }
providers="nrma sockets"
if [[ ${1-} == --providers ]]; then
	providers=$2
	shift 2
fi
(($# >= 1)) || usage
[[ $1 == -h || $1 == --help ]] && usage
prefix=$(readlink -f "$1")
builddir=$(readlink -f "${2:-.}")
iters=${3:-1000}
srcdir=$(cd "$(dirname "$0")/../.." && pwd)
[[ -x $prefix/bin/oshcc ]] || { echo "no $prefix/bin/oshcc" >&2; exit 2; }
command -v mpiexec.hydra >/dev/null || {
	echo "no mpiexec.hydra: apt-get install mpich" >&2
	exit 2
}

if [[ ${NRMA_SHMEM_INSIDE:-0} != 1 ]]; then
	bin=$(mktemp -d "${TMPDIR:-/tmp}/nrma-shmem-bench.XXXXXX") || exit 1
	trap 'rm -rf "$bin"' EXIT
	"$prefix/bin/oshcc" -O2 -o "$bin/nrma_shmem_signal_bench" \
		"$srcdir/test/shmem/nrma_shmem_signal_bench.c" || exit 1
	export NRMA_SHMEM_BENCH=$bin/nrma_shmem_signal_bench
	if ! "$srcdir/contrib/nrma-has-device" "$builddir"; then
		echo "No active verbs device for nrma here: running in contrib/nrma-vm."
		"$srcdir/contrib/nrma-vm" --timeout 1800 --mem 8192 \
			-e NRMA_SHMEM_INSIDE=1 \
			-e NRMA_SHMEM_BENCH="$NRMA_SHMEM_BENCH" -- bash "$0" \
			--providers "$providers" "$prefix" "$builddir" "$iters"
		exit
	fi
fi

export FI_PROVIDER_PATH=$builddir/.libs
ulimit -l unlimited
status=0
for prov in $providers; do
	echo "== $prov, 2 PEs, $iters iterations"
	SHMEM_OFI_PROVIDER=$prov timeout 600 mpiexec.hydra -launcher fork \
		-n 2 "$NRMA_SHMEM_BENCH" "$iters" || status=1
done
exit $status
