# lib/bounds.sh -- what the bounds_*.sh tests share: each certifies one
# suite, $tmp/suite.yaml, whose route does more than a harness should pay
# for, and checks that the cost stays bounded ("Bounds" in docs/).
# Sourced (not run: it lives below the directory tests/run-all walks):
#
#   . "$(dirname "$0")/lib/bounds.sh"
#
# It sets BUILD, FENCECERT and $tmp (a fresh directory
# ${TMPDIR:-/tmp}/fc-NAME.XXXXXX, NAME the test's with - for _, removed at
# exit).
set -eu
BUILD=${BUILD:-build}
FENCECERT=${FENCECERT:-$PWD/$BUILD/fencecert}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/fc-$(basename "$0" .sh | tr _ -).XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# bounds_certify TIMEOUT JOBS [LINES]: certify $tmp/suite.yaml --out
# $tmp/out --jobs JOBS --quiet under `timeout TIMEOUT`, its stdout and
# stderr in $tmp/certify.out; sets rc (its exit status) and secs (how long
# it ran).  A run that timed out or left no report.json fails the test,
# after printing the last LINES lines of its output (all of it without
# LINES).
bounds_certify() {
	t0=$(date +%s)
	rc=0
	timeout "$1" "$FENCECERT" certify "$tmp/suite.yaml" --out "$tmp/out" --jobs "$2" --quiet \
		>"$tmp/certify.out" 2>&1 || rc=$?
	secs=$(($(date +%s) - t0))
	if [ "$rc" -eq 124 ] || [ ! -f "$tmp/out/report.json" ]; then
		if [ $# -ge 3 ]; then
			tail -n "$3" "$tmp/certify.out"
		else
			cat "$tmp/certify.out"
		fi
		echo "FAIL: certify did not finish (exit $rc after ${secs} s)"
		exit 1
	fi
}
