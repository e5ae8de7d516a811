#!/bin/bash
# Runs Sandia OpenSHMEM's own test suite (make check of its tests-sos module)
# over nrma at 2 and 4 PEs, and the same runs over libfabric's sockets provider
# for comparison (libfabric 1.17's tcp offers SOS no fabric: add it with
# --providers to see), and prints a table of passes and the tests that
# failed.  The PEs start through Debian's mpich Hydra launcher (mpiexec.hydra
# -launcher fork, which SOS's --enable-pmi-simple speaks to), each test bounded
# by TEST_TIMEOUT seconds (default 180).
#
# Usage: test/shmem/run.sh [--providers "nrma sockets"] [--nps "2 4"]
#                          SOS_BUILDDIR [BUILDDIR]
#   SOS_BUILDDIR  a Sandia OpenSHMEM build tree you configured and built
#                 yourself (README, OpenSHMEM), with its test programs built:
#                 make check TESTS=
#   BUILDDIR      nrma's build directory, built (default: the current one)
#   TESTS         in the environment: run only these tests-sos programs
#                 (names as in its Makefiles), else all of them
# Logs go to $NRMA_SHMEM_OUT (default: a new directory under $TMPDIR), one
# directory per provider and PE count with the tests' logs.  Without an active
# verbs device it runs itself inside contrib/nrma-vm.  Exit status 0 iff every
# test that passes over another provider passes over nrma.
set -u

usage() { sed -n '2,24s/^# \{0,1\}//p' "$0"; exit 2; }
providers="nrma sockets"
nps="2 4"
while [[ ${1-} == --* ]]; do
	case $1 in
	--providers) providers=$2 ;;
	--nps) nps=$2 ;;
	--help) usage ;;
	*) usage ;;
	esac
	shift 2
done
(($# >= 1)) || usage
sos=$(readlink -f "$1")
builddir=$(readlink -f "${2:-.}")
srcdir=$(cd "$(dirname "$0")/../.." && pwd)
suite=$sos/modules/tests-sos/test
[[ -d $suite ]] || { echo "no $suite: not an SOS build tree" >&2; exit 2; }
[[ -e $builddir/.libs/libnrma-fi.so ]] || {
	echo "no $builddir/.libs/libnrma-fi.so: build nrma first" >&2
	exit 2
}
command -v mpiexec.hydra >/dev/null || {
	echo "no mpiexec.hydra: apt-get install mpich" >&2
	exit 2
}
out=${NRMA_SHMEM_OUT:-$(mktemp -d "${TMPDIR:-/tmp}/nrma-shmem.XXXXXX")}
mkdir -p "$out" || exit 2

if [[ ${NRMA_SHMEM_INSIDE:-0} != 1 ]] &&
	! "$srcdir/contrib/nrma-has-device" "$builddir"; then
	echo "No active verbs device for nrma here: running in contrib/nrma-vm."
	# The suite writes its logs in the build tree, which stays the VM's.
	exec "$srcdir/contrib/nrma-vm" --timeout 5400 --mem 8192 --rw "$out" \
		-e NRMA_SHMEM_INSIDE=1 -e NRMA_SHMEM_OUT="$out" \
		-e TESTS="${TESTS-}" -e TEST_TIMEOUT="${TEST_TIMEOUT:-180}" -- \
		bash "$0" --providers "$providers" --nps "$nps" "$sos" "$builddir"
fi

export FI_PROVIDER_PATH=$builddir/.libs
# Every PE registers its symmetric heap: pinned memory.
ulimit -l unlimited
# The whole process group, and with KILL if TERM is not enough.
runner="timeout -k 10 ${TEST_TIMEOUT:-180} mpiexec.hydra -launcher fork -n \$(NPROCS)"
dirs=(unit shmemx apps spec-example)

# suite PROV NP: one make check of the whole suite; its results to $out.
suite() {
	local prov=$1 np=$2 d res=$out/$1.$2
	rm -rf "$res"
	mkdir -p "$res"
	for d in "${dirs[@]}"; do
		local only=() t
		[[ -d $suite/$d ]] || continue
		if [[ -n ${TESTS-} ]]; then
			for t in $TESTS; do
				[[ -x $suite/$d/$t ]] && only+=("$t")
			done
			((${#only[@]})) || continue
			only=(TESTS="${only[*]}")
		fi
		SHMEM_OFI_PROVIDER=$prov make -s -k -C "$suite/$d" check \
			NPROCS="$np" TEST_RUNNER="$runner" "${only[@]}" \
			>"$res/$d.make.log" 2>&1
		cp "$suite/$d"/*.log "$res/" 2>/dev/null
		grep -l '^:test-result: PASS' "$suite/$d"/*.trs 2>/dev/null |
			xargs -r -n1 basename | sed 's/\.trs$//' >>"$res/pass"
		grep -l '^:test-result: \(FAIL\|ERROR\)' "$suite/$d"/*.trs \
			2>/dev/null | xargs -r -n1 basename |
			sed 's/\.trs$//' >>"$res/fail"
		rm -f "$suite/$d"/*.trs "$suite/$d"/*.log
	done
	touch "$res/pass" "$res/fail"
	sort -o "$res/pass" "$res/pass"
	sort -o "$res/fail" "$res/fail"
}

status=0
printf '%-8s %3s %6s %6s\n' provider PEs passed failed
for np in $nps; do
	for prov in $providers; do
		suite "$prov" "$np"
		printf '%-8s %3s %6s %6s\n' "$prov" "$np" \
			"$(wc -l <"$out/$prov.$np/pass")" \
			"$(wc -l <"$out/$prov.$np/fail")"
	done
done
for np in $nps; do
	[[ -f $out/nrma.$np/fail ]] || continue
	for prov in $providers; do
		[[ $prov == nrma ]] && continue
		# Failing over nrma, passing over prov: ours to fix.
		worse=$(comm -12 "$out/nrma.$np/fail" "$out/$prov.$np/pass")
		if [[ -n $worse ]]; then
			echo "$np PEs, fail over nrma, pass over $prov:" $worse
			status=1
		fi
	done
	# The VM has no /dev/fd for <(...): files.
	cp "$out/nrma.$np/fail" "$out/both.$np"
	for prov in $providers; do
		[[ $prov == nrma ]] && continue
		comm -12 "$out/both.$np" "$out/$prov.$np/fail" >"$out/both.tmp"
		mv "$out/both.tmp" "$out/both.$np"
	done
	[[ -s $out/both.$np ]] && echo "$np PEs, fail over all:" $(cat "$out/both.$np")
done
echo "Logs: $out"
exit $status
