#!/bin/sh
# certify_default.sh -- `make certify` three times: scenarios/default.yaml
# with this build's fencecert.  Every computed verdict must equal the
# route's expectation, each control must be rejected for its documented
# reason (certify_check.py), and the verdicts must be the same every run.
#
# CERTIFY_RUNS (default 3) sets the number of runs.  On a machine where one
# run takes longer than CERTIFY_SLOW seconds (default 150) the later runs
# are skipped, saying so, so `make check` stays inside its time limit;
# CERTIFY_FORCE=1 runs them anyway.
set -eu
BUILD=${BUILD:-build}
FENCECERT=${FENCECERT:-$PWD/$BUILD/fencecert}
RUNS=${CERTIFY_RUNS:-3}
SLOW=${CERTIFY_SLOW:-150}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/fc-certify-default.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# the suite names build/fencecert; run it against this build
sed "s#build/fencecert#$BUILD/fencecert#g" scenarios/default.yaml >"$tmp/default.yaml"

i=1
while [ "$i" -le "$RUNS" ]; do
	start=$(date +%s)
	rc=0
	"$FENCECERT" certify "$tmp/default.yaml" --full-report --out "$tmp/out$i" --quiet \
		>"$tmp/table$i" || rc=$?
	took=$(($(date +%s) - start))
	cat "$tmp/table$i"
	echo "run $i: exit $rc, $took s"
	[ "$rc" -eq 0 ] || { echo "certify exited $rc"; exit 1; }
	for f in report.json report.junit.xml summary.md report.html; do
		[ -s "$tmp/out$i/$f" ] || { echo "no $f written"; exit 1; }
	done
	python3 tests/integration/certify_check.py "$tmp/out$i/report.json" \
		>"$tmp/verdicts$i"
	if [ "$i" -gt 1 ] && ! cmp -s "$tmp/verdicts1" "$tmp/verdicts$i"; then
		echo "verdicts of run $i differ from run 1:"
		diff "$tmp/verdicts1" "$tmp/verdicts$i" || true
		exit 1
	fi
	if [ "$took" -gt "$SLOW" ] && [ "${CERTIFY_FORCE:-0}" != 1 ]; then
		echo "later runs skipped: one run took $took s (> $SLOW s)"
		break
	fi
	i=$((i + 1))
done
echo "ok: verdicts as expected"
