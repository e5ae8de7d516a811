#!/bin/bash
# Runs nrma's tests; "make check" calls it with
#   NRMA_BUILDDIR, NRMA_SRCDIR        absolute build and source directories
#   NRMA_UNIT_TESTS                   unit test programs, relative to the build dir
#   NRMA_INTEGRATION_TESTS            integration test programs, likewise
#   NRMA_TWOHOST_TESTS                integration tests that run on two hosts
#   NRMA_MPI_TESTS, NRMA_MPIRUN       MPI programs (test/mpi/nrma_mpi_check),
#                                     run with the integration tests through
#                                     Open MPI's ofi MTL ("msg") and its btl
#                                     ofi with osc rdma ("rma"), 2 and 4 ranks,
#                                     and with the two-host tests, 4 ranks
#                                     over both VMs (contrib/nrma-rsh)
# Unit tests run here. Integration tests run here when this machine has an active
# verbs device that the provider registers on, else all together in one boot of
# the Soft-RoCE VM (contrib/nrma-vm), where this script runs itself again with
# --integration-only.  Two-host tests always run in two VMs joined by a
# virtual link (contrib/nrma-vm --hosts 2), the same program on both, and
# pass when they pass on both.
# Optional: UBSAN_OPTIONS (default halt_on_error=1:print_stacktrace=1);
# NRMA_VALGRIND=1 runs every test under valgrind; NRMA_TEST_TIMEOUT
# sets the per-test limit in seconds (default 120, 600 under valgrind);
# NRMA_TEST_VERBOSE=1 shows the output of passing tests too.
# Prints PASS:/FAIL: per test and ends with "N passed, N failed".
# Exit status 0 iff nothing failed.

# make runs us with sh; the rest needs bash.
if [ -z "${BASH_VERSION:-}" ]; then exec bash "$0" "$@"; fi
set -u

builddir=${NRMA_BUILDDIR:-$PWD}
srcdir=${NRMA_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
read -ra unit_tests <<<"${NRMA_UNIT_TESTS:-}"
read -ra itests <<<"${NRMA_INTEGRATION_TESTS:-}"
read -ra twohost <<<"${NRMA_TWOHOST_TESTS:-}"
read -ra mpitests <<<"${NRMA_MPI_TESTS:-}"
wrap=()
tmo=120
if [[ ${NRMA_VALGRIND:-0} == 1 ]]; then
	wrap=(valgrind --leak-check=full --error-exitcode=99 --errors-for-leak-kinds=definite)
	tmo=600
fi
tmo=${NRMA_TEST_TIMEOUT:-$tmo}
passed=0 failed=0
# Under --enable-asan, undefined behaviour fails the test, not just a line.
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}

# run_cmd LABEL CMD...: runs CMD, prints LABEL's verdict.
run_cmd() {
	local name=$1 out rc
	shift
	out=$(timeout "$tmo" "$@" 2>&1)
	rc=$?
	if ((rc == 0)); then
		echo "PASS: $name"
		passed=$((passed + 1))
	else
		((rc == 124)) && out+=$'\n'"(timed out after $tmo s)"
		echo "FAIL: $name (exit $rc)"
		failed=$((failed + 1))
	fi
	if ((rc != 0)) || [[ ${NRMA_TEST_VERBOSE:-0} == 1 ]]; then
		[[ -z $out ]] || printf '%s\n' "$out" | sed 's/^/    | /'
	fi
}

# run_test NAME [VAR=VALUE...]: runs $builddir/NAME, prints its verdict.
run_test() {
	local name=$1
	shift
	run_cmd "$name" env "$@" "${wrap[@]}" "$builddir/$name"
}

# Open MPI's two ways to libfabric: what each checks, and how it is chosen.
mpi_paths=(
	"msg:--mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include nrma"
	"rma:--mca pml ob1 --mca btl self,tcp,ofi --mca btl_ofi_provider_include nrma --mca osc rdma --mca osc_rdma_btls ofi"
)
mpi_ranks=(2 4)
mpi_twohost="4 ranks, 2 hosts"

# mpi_labels LABEL...: the verdict lines of the MPI runs, one per program,
# path and label (what run_mpi was given).
mpi_labels() {
	local t p label
	for t in "${mpitests[@]}"; do
		for p in "${mpi_paths[@]}"; do
			for label in "$@"; do
				echo "$t ${p%%:*} ($label)"
			done
		done
	done
}

# run_mpi NP HOSTS LABEL [MPIRUN_ARGS...]: each MPI program over each
# path, NP ranks that must run on HOSTS hosts.
run_mpi() {
	local np=$1 hosts=$2 label=$3 t p args root=()
	shift 3
	((EUID != 0)) || root=(--allow-run-as-root)
	for t in "${mpitests[@]}"; do
		for p in "${mpi_paths[@]}"; do
			read -ra args <<<"${p#*:}"
			# Open MPI's own allocations outlive MPI_Finalize.
			run_cmd "$t ${p%%:*} ($label)" \
				env FI_PROVIDER_PATH="$builddir/.libs" \
				ASAN_OPTIONS=detect_leaks=0 \
				"${NRMA_MPIRUN:-mpirun}" "${root[@]}" \
				--oversubscribe -np "$np" "${args[@]}" "$@" \
				-x FI_PROVIDER_PATH -x ASAN_OPTIONS \
				"$builddir/$t" "${p%%:*}" "$hosts"
		done
	done
}

run_mpi_here() {
	local np
	# mpirun refuses a host without a name: the VM's guest has none.
	[[ $(hostname) != "(none)" ]] || hostname nrma-vm
	for np in "${mpi_ranks[@]}"; do
		run_mpi "$np" 1 "$np ranks"
	done
}

# 4 ranks, 2 on each VM: host 0 runs mpirun, whose daemon on host 1 starts
# through contrib/nrma-rsh (the VMs have no sshd); host 1 serves it.
run_mpi_twohost_here() {
	local dir=$NRMA_TWOHOST_SHARE/mpi-rsh
	mkdir -p "$dir"
	if ((NRMA_VM_HOST == 1)); then
		timeout $((4 * tmo * ${#mpitests[@]} * ${#mpi_paths[@]})) \
			"$srcdir/contrib/nrma-rsh" --serve "$dir"
		return
	fi
	NRMA_RSH_DIR=$dir run_mpi 4 2 "$mpi_twohost" \
		--mca plm_rsh_agent "$srcdir/contrib/nrma-rsh" \
		--host "$NRMA_TEST_ADDR:2,$NRMA_TEST_PEER_ADDR:2" \
		--mca oob_tcp_if_include eth0 --mca btl_tcp_if_include eth0
	: >"$dir/stop"
}

run_integration_here() {
	local t
	for t in "${itests[@]}"; do
		run_test "$t" FI_PROVIDER_PATH="$builddir/.libs" FI_PROVIDER=nrma
	done
	((${#mpitests[@]} == 0)) || run_mpi_here
}

# An ACTIVE verbs port, and the provider registers on it.
have_device() {
	"$srcdir/contrib/nrma-has-device" "$builddir"
}

# One VM boot for all integration tests; tallies the verdicts it prints.
# The VM's run directory lives in a private TMPDIR, out of reach of anyone
# cleaning up /tmp/nrma-vm.* meanwhile.
run_integration_vm() {
	local work log rc t p f labels
	echo "No active verbs device for nrma here: running the integration tests in contrib/nrma-vm."
	work=$(mktemp -d "${TMPDIR:-/tmp}/nrma-tests.XXXXXX") || exit 1
	log=$work/vm.log
	mapfile -t labels < <(mpi_labels "${mpi_ranks[@]/%/ ranks}")
	TMPDIR=$work "$srcdir/contrib/nrma-vm" \
		--timeout $((120 + (${#itests[@]} + ${#labels[@]}) * tmo)) -- \
		bash "$srcdir/test/run-tests.sh" --integration-only | tee "$log"
	rc=${PIPESTATUS[0]}
	p=$(grep -c '^PASS: ' "$log")
	f=$(grep -c '^FAIL: ' "$log")
	case $rc in
	124) echo "contrib/nrma-vm timed out: the VM was killed" ;;
	125) echo "contrib/nrma-vm could not boot the VM or run the tests (exit 125): see its message above" ;;
	esac
	passed=$((passed + p)) failed=$((failed + f))
	for t in "${itests[@]}"; do
		if ! grep -qE "^(PASS|FAIL): $t( |\$)" "$log"; then
			echo "FAIL: $t (not run: contrib/nrma-vm exited $rc)"
			failed=$((failed + 1))
		fi
	done
	for t in "${labels[@]}"; do
		if ! grep -qxF -e "PASS: $t" "$log" &&
			! grep -qF -e "FAIL: $t (exit" "$log"; then
			echo "FAIL: $t (not run: contrib/nrma-vm exited $rc)"
			failed=$((failed + 1))
		fi
	done
	if ((rc != 0 && f == 0 && p == ${#itests[@]} + ${#labels[@]})); then
		echo "FAIL: contrib/nrma-vm exited $rc after all tests passed"
		failed=$((failed + 1))
	fi
	rm -rf "$work"
}

# In each of the two VMs: every two-host test, with a share of its own.
run_twohost_here() {
	local t
	for t in "${twohost[@]}"; do
		mkdir -p "$NRMA_TWOHOST_SHARE/${t##*/}"
		run_test "$t" FI_PROVIDER_PATH="$builddir/.libs" FI_PROVIDER=nrma \
			NRMA_TEST_SHARE="$NRMA_TWOHOST_SHARE/${t##*/}"
	done
	((${#mpitests[@]} == 0)) || run_mpi_twohost_here
}

# One boot of two VMs; a test passes when both hosts say so.
run_twohost_vm() {
	local work log rc t
	echo "Two-host tests in two VMs (contrib/nrma-vm --hosts 2)."
	work=$(mktemp -d "${TMPDIR:-/tmp}/nrma-tests.XXXXXX") || exit 1
	log=$work/vm.log
	mkdir "$work/share"
	# Their runs are longer: faults, retries, a slow virtual link.
	TMPDIR=$work "$srcdir/contrib/nrma-vm" --hosts 2 --rw "$work" \
		--timeout $((180 + (${#twohost[@]} + ${#mpi_paths[@]} * ${#mpitests[@]}) * 4 * tmo)) \
		-e NRMA_TWOHOST_SHARE="$work/share" -e NRMA_TEST_TIMEOUT=$((4 * tmo)) \
		-e NRMA_TEST_WAIT_S=$((3 * tmo)) -- \
		bash "$srcdir/test/run-tests.sh" --twohost-only | tee "$log"
	rc=${PIPESTATUS[0]}
	for t in "${twohost[@]}"; do
		if grep -qE "^PASS: $t( |\$)" "$log" &&
			grep -qE "^\[host 1\] PASS: $t( |\$)" "$log"; then
			echo "PASS: $t (two hosts)"
			passed=$((passed + 1))
		else
			echo "FAIL: $t (two hosts; contrib/nrma-vm exited $rc)"
			failed=$((failed + 1))
		fi
	done
	# MPI runs have one verdict, host 0's, where mpirun ran.
	while IFS= read -r t; do
		if grep -qxF "PASS: $t" "$log"; then
			passed=$((passed + 1))
		else
			grep -qF "FAIL: $t (exit" "$log" ||
				echo "FAIL: $t (not run: contrib/nrma-vm exited $rc)"
			failed=$((failed + 1))
		fi
	done < <(mpi_labels "$mpi_twohost")
	rm -rf "$work"
}

if [[ ${1-} == --integration-only ]]; then
	run_integration_here
	((failed == 0))
	exit
fi
if [[ ${1-} == --twohost-only ]]; then
	run_twohost_here
	((failed == 0))
	exit
fi

for t in "${unit_tests[@]}"; do
	run_test "$t"
done
if ((${#itests[@]} + ${#mpitests[@]})); then
	if have_device; then
		run_integration_here
	else
		run_integration_vm
	fi
fi
((${#twohost[@]} == 0)) || run_twohost_vm
echo "$passed passed, $failed failed"
((failed == 0))
