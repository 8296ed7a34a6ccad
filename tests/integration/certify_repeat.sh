#!/bin/sh
# certify_repeat.sh -- no flaky verdicts (SPEC section 10): run the default
# suite ten times with --jobs 2 and compare the verdict lists.  If one run
# takes 15 s or more, three runs make the point; if it takes longer than
# CERTIFY_SLOW seconds (default 300) the repeats are skipped, saying so,
# unless CERTIFY_FORCE=1.
#
# The repeats cover the C routes and the controls; the shell and Python
# examples (each attempt starts ~20 processes) are certified once by
# certify_default.sh, or here too with CERTIFY_ALL_ROUTES=1.
set -eu
BUILD=${BUILD:-build}
FENCECERT=${FENCECERT:-$PWD/$BUILD/fencecert}
SLOW=${CERTIFY_SLOW:-300}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/fc-certify-repeat.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
sed "s#build/fencecert#$BUILD/fencecert#g" scenarios/default.yaml >"$tmp/default.yaml"

routes="--route c-sqlite --route c-file --route naive --route xcom-guard
	--route checkpoint-guard --route journal-no-fence --route split-fence"
[ "${CERTIFY_ALL_ROUTES:-0}" != 1 ] || routes=

run() { # run N: one certification, verdict list in $tmp/verdicts.N
	# shellcheck disable=SC2086
	"$FENCECERT" certify "$tmp/default.yaml" $routes --jobs 2 \
		--out "$tmp/out" --format json --quiet >/dev/null || true
	python3 tests/integration/certify_check.py "$tmp/out/report.json" \
		>"$tmp/verdicts.$1" 2>>"$tmp/problems" || true
}

start=$(date +%s)
run 1
took=$(($(date +%s) - start))
runs=10
[ "$took" -lt 15 ] || runs=3
if [ "$took" -gt "$SLOW" ] && [ "${CERTIFY_FORCE:-0}" != 1 ]; then
	echo "skipped: one run took $took s (> $SLOW s); CERTIFY_FORCE=1 repeats anyway"
	runs=1
fi
echo "one run took $took s: $runs runs"
i=2
while [ "$i" -le "$runs" ]; do
	run "$i"
	if ! cmp -s "$tmp/verdicts.1" "$tmp/verdicts.$i"; then
		echo "run $i gave other verdicts than run 1:"
		diff "$tmp/verdicts.1" "$tmp/verdicts.$i" || true
		exit 1
	fi
	i=$((i + 1))
done
cat "$tmp/verdicts.1"
if [ -s "$tmp/problems" ]; then
	sort -u "$tmp/problems"
	exit 1
fi
echo "ok: $runs identical run(s)"
