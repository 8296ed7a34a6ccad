#!/bin/sh
# fuzz_smoke.sh [TARGET...] -- build the libFuzzer targets of tests/fuzz/
# (every parser that reads what a route or a network peer wrote) with
# clang's libFuzzer plus ASan/UBSan into $BUILD/fuzz/, and run each for
# FUZZ_SECONDS (default 5: `make check`; `make fuzz` runs them longer).
#
#   scenario  the suite loader            schedule  schedule strings
#   channel   failpoint channel lines     evidence  return.json (collect)
#   pgwire    the fault proxy's PostgreSQL wire scanner
#   etcd      etcd answers                report    report.json (gate, merge)
#
# Any crash, leak, timeout, sanitizer report or broken invariant fails the
# test; the input that caused it is left in $BUILD/fuzz/artifacts/ and
# replays with   $BUILD/fuzz/fuzz_TARGET $BUILD/fuzz/artifacts/TARGET-crash-...
# New inputs go to $BUILD/fuzz/corpus/TARGET; the checked-in seeds
# (tests/fuzz/corpus/TARGET/) stay untouched.  One line per target says how
# many inputs ran.  Skipped (exit 0) only when clang is not installed.
set -eu
BUILD=${BUILD:-build}
CLANG=${CLANG:-clang}
SECONDS_TO_RUN=${FUZZ_SECONDS:-5}
JOBS=${FUZZ_JOBS:-2}
TARGETS=${*:-scenario schedule channel evidence pgwire etcd report}

if ! command -v "$CLANG" >/dev/null 2>&1; then
	echo "skipped: no clang"
	exit 0
fi

out="$BUILD/fuzz"
mkdir -p "$out/artifacts"
for t in $TARGETS; do
	[ -f "tests/fuzz/fuzz_$t.c" ] || { echo "fuzz_smoke: unknown target '$t'"; exit 2; }
done

# tests/fuzz/fuzz.mk says what each target links; only what changed is
# rebuilt.
start=$(date +%s)
env -u MAKEFLAGS -u MFLAGS make -s -f tests/fuzz/fuzz.mk -j "$JOBS" BUILD="$BUILD" CLANG="$CLANG" \
	TARGETS="$TARGETS"
echo "fuzz_smoke: built $TARGETS in $(($(date +%s) - start))s"

failed=""
for t in $TARGETS; do
	mkdir -p "$out/corpus/$t"
	dict=""
	[ -f "tests/fuzz/$t.dict" ] && dict="-dict=tests/fuzz/$t.dict"
	log="$out/fuzz_$t.log"
	# Every seed once, whole (the suite loader's limit seeds are larger
	# than what the fuzzer mutates), then the fuzzer itself.
	# shellcheck disable=SC2086
	if "$out/fuzz_$t" -timeout=10 -rss_limit_mb=2048 \
		tests/fuzz/corpus/$t/* >"$log" 2>&1 &&
	   "$out/fuzz_$t" -max_total_time="$SECONDS_TO_RUN" -timeout=10 \
		-rss_limit_mb=2048 -max_len=65536 $dict \
		-artifact_prefix="$out/artifacts/$t-" -print_final_stats=1 \
		"$out/corpus/$t" "tests/fuzz/corpus/$t" >>"$log" 2>&1; then
		runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
		echo "fuzz_$t: ${runs:-?} inputs in ${SECONDS_TO_RUN}s, no crash"
	else
		failed="$failed $t"
		echo "fuzz_$t: FAILED (log $log)"
		grep -E "ERROR|SUMMARY|==[0-9]+==|Test unit written|Running:" "$log" |
			tail -n 20
	fi
done
[ -z "$failed" ] || { echo "fuzz_smoke: failed:$failed"; exit 1; }
echo "fuzz_smoke: no crash in ${SECONDS_TO_RUN}s per target"
