#!/bin/sh
# fuzz_smoke.sh -- build the suite-loader fuzz target (tests/fuzz/) with
# clang's libFuzzer plus ASan/UBSan into $BUILD/fuzz/ and run it for a short
# while (FUZZ_SECONDS, default 20).  Any crash, leak, sanitizer report or
# broken invariant fails the test; the input that caused it is left in
# $BUILD/fuzz/artifacts/ and replays with
#   $BUILD/fuzz/fuzz_scenario $BUILD/fuzz/artifacts/crash-...
# Skipped (exit 0) only when clang is not installed.
set -eu
BUILD=${BUILD:-build}
CLANG=${CLANG:-clang}
SECONDS_TO_RUN=${FUZZ_SECONDS:-20}

if ! command -v "$CLANG" >/dev/null 2>&1; then
	echo "skipped: no clang"
	exit 0
fi

out="$BUILD/fuzz"
mkdir -p "$out/corpus" "$out/artifacts"

# The loader and what it links, compiled directly: the fuzzer needs its own
# instrumentation, not the Makefile's objects.
srcs="tests/fuzz/fuzz_scenario.c harness/model/scenario.c harness/model/scenario_yaml.c
      harness/model/scenario_faults.c harness/model/scenario_template.c
      harness/model/suite.c harness/model/fault.c harness/model/schedule.c
      harness/inject/inject_seccomp.c journal/identity.c common/error.c"
# shellcheck disable=SC2086
"$CLANG" -std=gnu11 -g -O1 -D_GNU_SOURCE -I. \
	-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
	$(pkg-config --cflags yaml-0.1 openssl libseccomp) $srcs \
	-o "$out/fuzz_scenario" $(pkg-config --libs yaml-0.1 openssl libseccomp)
echo "built $out/fuzz_scenario"

# New inputs go to $out/corpus; the checked-in seeds stay untouched.
"$out/fuzz_scenario" -max_total_time="$SECONDS_TO_RUN" -timeout=10 \
	-rss_limit_mb=2048 -dict=tests/fuzz/scenario.dict \
	-artifact_prefix="$out/artifacts/" -print_final_stats=1 \
	"$out/corpus" tests/fuzz/corpus
echo "fuzz_smoke: no crash in ${SECONDS_TO_RUN}s"
