#!/bin/bash
# Builds the libFuzzer targets of test/fuzz (clang, -fsanitize=fuzzer with
# ASan and UBSan) and runs each for SECONDS, starting from its corpus.
# Prints how many inputs each ran; exits non-zero on the first crash.
# Usage: run-fuzz.sh SRCDIR OUTDIR SECONDS [CFLAGS...]   ("make fuzz")
set -euo pipefail
src=$1 out=$2 secs=$3
shift 3
cc=${FUZZ_CC:-clang}
mkdir -p "$out"
for t in hdr cm_data key_slot; do
	"$cc" -g -O1 -fsanitize=fuzzer,address,undefined \
		-I"$src/include" -I"$src/src" -I"$src/prov/nrma" "$@" \
		"$src/test/fuzz/fuzz_$t.c" "$src/prov/nrma/nrma_proto.c" \
		-o "$out/fuzz_$t"
	mkdir -p "$out/corpus-$t"
	cp "$src/test/fuzz/corpus/$t/"* "$out/corpus-$t/"
	log=$out/fuzz_$t.log
	if ! "$out/fuzz_$t" -max_total_time="$secs" -print_final_stats=1 \
		"$out/corpus-$t" >"$log" 2>&1; then
		tail -n 40 "$log"
		echo "FAIL: fuzz_$t (see $log)"
		exit 1
	fi
	echo "PASS: fuzz_$t: $(sed -n 's/^stat::number_of_executed_units: *//p' "$log") inputs in $secs s"
done
