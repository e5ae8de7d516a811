#!/bin/bash
# Runs GPI-2's own test suite (every program of tests/bin, as its
# tests/runtests.sh would) over nrma, and the same over libfabric's sockets
# provider for comparison, with NPROCS ranks (default 2) on this host, and
# prints how many passed and which failed.
# gaspi_run starts ranks with ssh: test/gaspi/ssh, first in PATH, runs them
# here instead.
#
# Usage: test/gaspi/run.sh [--providers "nrma sockets"] GPI2_BUILDDIR
#                          [BUILDDIR]
#   GPI2_BUILDDIR  a GPI-2 build tree you configured (--with-ofi) and built
#                  yourself (README, GASPI), with its tests built
#   BUILDDIR       nrma's build directory, built (default: the current one)
#   NPROCS, TEST_TIMEOUT (seconds a test may take, default 300), TESTS (only
#                  these programs of tests/bin: hello_world.bin) in the
#                  environment
# Logs go to $NRMA_GASPI_OUT (default: a new directory under $TMPDIR).
# Without an active verbs device it runs itself inside contrib/nrma-vm.
# Exit status 0 iff every test that passes over another provider passes
# over nrma.
set -u

usage() { sed -n '2,19s/^# \{0,1\}//p' "$0"; exit 2; }
providers="nrma sockets"
if [[ ${1-} == --providers ]]; then
	providers=$2
	shift 2
fi
(($# >= 1)) || usage
[[ $1 == -h || $1 == --help ]] && usage
gpi=$(readlink -f "$1")
builddir=$(readlink -f "${2:-.}")
srcdir=$(cd "$(dirname "$0")/../.." && pwd)
[[ -x $gpi/bin/gaspi_run && -d $gpi/tests/bin ]] || {
	echo "no $gpi/bin/gaspi_run or tests/bin: not a built GPI-2 tree" >&2
	exit 2
}
out=${NRMA_GASPI_OUT:-$(mktemp -d "${TMPDIR:-/tmp}/nrma-gaspi.XXXXXX")}
mkdir -p "$out" || exit 2

if [[ ${NRMA_GASPI_INSIDE:-0} != 1 ]] &&
	! "$srcdir/contrib/nrma-has-device" "$builddir"; then
	echo "No active verbs device for nrma here: running in contrib/nrma-vm."
	exec "$srcdir/contrib/nrma-vm" --timeout 5400 --mem 8192 --rw "$out" \
		-e NRMA_GASPI_INSIDE=1 -e NRMA_GASPI_OUT="$out" \
		-e NPROCS="${NPROCS:-2}" -e TESTS="${TESTS-}" \
		-e TEST_TIMEOUT="${TEST_TIMEOUT:-300}" -- \
		bash "$0" --providers "$providers" "$gpi" "$builddir"
fi

export FI_PROVIDER_PATH=$builddir/.libs
export PATH=$srcdir/test/gaspi:$PATH
ulimit -l unlimited
np=${NPROCS:-2}
for ((i = 0; i < np; i++)); do hostname; done >"$out/machines"

# What tests/runtests.sh does, test by test (its defs/NAME.def: SKIP, or
# ARGS for the program), with gaspi_run through bash: it is written for
# bash but starts #!/bin/sh, which is dash on Debian.
gaspi_test() {
	local t=$1 def=$gpi/tests/defs/${1%.bin}.def args=()
	if [[ -r $def ]]; then
		grep -q SKIP "$def" && return 2
		read -ra args <<<"$(sed -n 's/^ARGS=//p' "$def")"
	fi
	timeout "${TEST_TIMEOUT:-300}" bash "$gpi/bin/gaspi_run" \
		-m "$out/machines" -n "$np" "$gpi/tests/bin/$t" "${args[@]}"
}

tests=${TESTS:-$(cd "$gpi/tests/bin" && ls -- *.bin)}
status=0
printf '%-8s %3s %6s %6s\n' provider ranks passed failed
for prov in $providers; do
	: >"$out/$prov.pass"
	: >"$out/$prov.fail"
	for t in $tests; do
		echo "=== $t" >>"$out/$prov.log"
		FI_PROVIDER=$prov gaspi_test "$t" >>"$out/$prov.log" 2>&1
		case $? in
		0) echo "$t" >>"$out/$prov.pass" ;;
		2) ;;
		*) echo "$t" >>"$out/$prov.fail" ;;
		esac
		bash "$gpi/bin/gaspi_cleanup" -m "$out/machines" >/dev/null 2>&1
	done
	sort -o "$out/$prov.pass" "$out/$prov.pass"
	sort -o "$out/$prov.fail" "$out/$prov.fail"
	printf '%-8s %3s %6s %6s\n' "$prov" "$np" \
		"$(wc -l <"$out/$prov.pass")" "$(wc -l <"$out/$prov.fail")"
done
for prov in $providers; do
	[[ $prov == nrma ]] && continue
	worse=$(comm -12 "$out/nrma.fail" "$out/$prov.pass")
	if [[ -n $worse ]]; then
		echo "fail over nrma, pass over $prov:" $worse
		status=1
	fi
done
echo "Logs: $out"
exit $status
