#!/bin/bash
# Runs test/mpi/nrma_mpi_notify with an MPI that has MPI-5.1 notified RMA, over
# nrma, at 2 and 4 ranks, through both of Open MPI's notified-RMA paths:
#   counters  --mca btl_ofi_disable_hmem 1: osc/rdma counts with nrma's
#             counters (fi_mr_bind of a counter per notification index)
#   fallback  the default: put, flush, then an atomic on the counter word
# and prints each run's rates.  In the counters runs nrma's counters must
# count the puts (nrma logs each binding and, at close, what it counted);
# the fallback runs must bind none.
#
# nrma's settings (FI_NRMA_*, say FI_NRMA_NOTIFY_COALESCE=16) reach the ranks.
#
# Usage: test/mpi/run.sh [--hosts 2] MPI_PREFIX [BUILDDIR]
#   --hosts 2   across two hosts: the ranks split evenly over the two VMs of
#               contrib/nrma-vm --hosts 2 (mpirun reaches the second through
#               contrib/nrma-rsh); the program checks that they do.  The
#               counters path only: the fallback takes too long there
#   MPI_PREFIX  where that MPI is installed (MPI_PREFIX/bin/mpirun)
#   BUILDDIR    nrma's build directory, configured --with-notify-mpi=MPI_PREFIX
#               and built (default: the current directory)
# Without an active verbs device, or with --hosts 2, it runs itself inside
# contrib/nrma-vm.
# Exit status 0 iff every run passed.
set -u

usage() { sed -n '2,24s/^# \{0,1\}//p' "$0"; exit 2; }
hosts=1
if [[ ${1-} == --hosts ]]; then
	[[ ${2-} == [12] ]] || usage
	hosts=$2
	shift 2
fi
(($# >= 1)) || usage
[[ $1 == -h || $1 == --help ]] && usage
prefix=$(readlink -f "$1")
builddir=$(readlink -f "${2:-.}")
srcdir=$(cd "$(dirname "$0")/../.." && pwd)
prog=$builddir/test/mpi/nrma_mpi_notify
[[ -x $prefix/bin/mpirun ]] || { echo "no $prefix/bin/mpirun" >&2; exit 2; }
[[ -x $prog ]] || {
	echo "no $prog: configure --with-notify-mpi=$prefix, then make" >&2
	exit 2
}
export FI_PROVIDER_PATH=$builddir/.libs

# Two VMs share a directory for contrib/nrma-rsh.
if ((hosts == 2)) && [[ ${NRMA_MPI_INSIDE:-0} != 1 ]]; then
	echo "Two hosts: running in contrib/nrma-vm --hosts 2."
	share=$(mktemp -d "${TMPDIR:-/tmp}/nrma-mpi.XXXXXX") || exit 1
	trap 'rm -rf "$share"' EXIT
	"$srcdir/contrib/nrma-vm" --hosts 2 --rw "$share" --timeout 3000 \
		--mem 8192 -e NRMA_MPI_INSIDE=1 -e NRMA_MPI_SHARE="$share" -- \
		bash "$0" --hosts 2 "$@"
	exit
fi
if [[ ${NRMA_MPI_INSIDE:-0} != 1 ]] &&
	! "$srcdir/contrib/nrma-has-device" "$builddir"; then
	echo "No active verbs device for nrma here: running in contrib/nrma-vm."
	exec "$srcdir/contrib/nrma-vm" --timeout 3000 --mem 8192 \
		-e NRMA_MPI_INSIDE=1 -- bash "$0" "$@"
fi

# The second host serves mpirun's remote shell until the first is done.
((hosts == 1)) || mkdir -p "$NRMA_MPI_SHARE/rsh"
if ((hosts == 2 && NRMA_VM_HOST == 1)); then
	exec "$srcdir/contrib/nrma-rsh" --serve "$NRMA_MPI_SHARE/rsh"
fi
where=()
if ((hosts == 2)); then
	export NRMA_RSH_DIR=$NRMA_MPI_SHARE/rsh
	trap ': >"$NRMA_RSH_DIR/stop"' EXIT
	where=(--prefix "$prefix" --mca plm_rsh_agent "$srcdir/contrib/nrma-rsh"
		--mca oob_tcp_if_include eth0 --mca btl_tcp_if_include eth0)
fi

# run NP PATH: one run, its output indented, its verdict and rate.
run() {
	local np=$1 path=$2 out rc binds counted want rates ok
	local on=(--oversubscribe) mca=(--mca pml ob1 --mca btl self,tcp,ofi
		--mca btl_ofi_provider_include nrma --mca osc rdma)
	[[ $path == counters ]] && mca+=(--mca btl_ofi_disable_hmem 1)
	# Half the ranks on each host.  Not --oversubscribe: this mpirun
	# (PRRTE) then maps them all to the first host.
	((hosts == 1)) ||
		on=(--host "$NRMA_TEST_ADDR:$((np / 2)),$NRMA_TEST_PEER_ADDR:$((np / 2))")
	for v in $(compgen -e FI_NRMA_); do mca+=(-x "$v"); done
	out=$(set -o pipefail; FI_LOG_LEVEL=debug FI_LOG_PROV=nrma FI_LOG_SUBSYS=mr \
		timeout 900 "$prefix/bin/mpirun" --allow-run-as-root \
		-np "$np" -x FI_PROVIDER_PATH -x FI_LOG_LEVEL \
		-x FI_LOG_PROV -x FI_LOG_SUBSYS "${on[@]}" "${where[@]}" \
		"${mca[@]}" "$prog" "$hosts" 2>&1 |
		tr -d '\0')
	rc=$?
	binds=$(grep -c 'counts remote' <<<"$out")
	# What nrma's counters counted, as each registration closed.
	counted=$(sed -n 's/.* closes: \([0-9]*\) remote writes.*/\1/p' <<<"$out" |
		awk '{ s += $1 } END { print s + 0 }')
	grep -v 'counts remote\| closes: ' <<<"$out" | sed 's/^/    | /'
	rates=$(sed -n 's/^rate: \([0-9]*\) notified puts.s \([a-z]*\).*/\2 \1/p' <<<"$out" |
		paste -sd ' ')
	# The counters path counts every notified put in nrma's counters; the
	# fallback binds none.
	want=$(sed -n 's/^notified puts: \([0-9]*\)$/\1/p' <<<"$out")
	if [[ $path == counters ]]; then
		ok=$((counted == ${want:--1}))
	else
		ok=$((binds == 0))
	fi
	if ((rc == 0 && ok)) && grep -q '^PASS' <<<"$out"; then
		echo "PASS: $np ranks on $hosts host(s), $path path ($binds counter bindings, $counted puts counted by nrma): notified puts/s: $rates"
		return 0
	fi
	echo "FAIL: $np ranks on $hosts host(s), $path path (exit $rc, $binds counter bindings, $counted puts counted by nrma)"
	return 1
}

# Across hosts only the counters path: the fallback waits a round trip
# per notified put, some 50 ms over the VMs' emulated link, and its
# 29,000 puts would take over 20 minutes a run.
paths=(counters fallback)
((hosts == 1)) || paths=(counters)
failed=0
for np in 2 4; do
	for path in "${paths[@]}"; do
		run "$np" "$path" || failed=$((failed + 1))
	done
done
echo "$failed failed"
((failed == 0))
