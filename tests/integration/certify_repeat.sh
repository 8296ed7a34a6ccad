#!/bin/sh
# certify_repeat.sh -- no flaky verdicts (SPEC section 10): ten runs with
# --jobs 2 must give identical verdict lists, each control rejected for its
# documented reason (certify_check.py) every time.
#
# Each run is a representative slice of scenarios/default.yaml: every fixed
# scenario (clean, the commit-window kill, lost XCom, both zombie workers,
# the changed source, the lost pod) for the C routes and the five controls,
# and the shell and Python examples under the zombie worker -- the schedule
# whose outcome depends most on timing (each of their attempts starts
# dozens of processes, so they get the one) -- and the kill after the
# target commit (a certificate needs a stop on each side of the commit,
# docs/harness.md).  The explorations are
# certified by certify_default.sh.  CERTIFY_FULL=1 repeats
# the whole default suite instead; CERTIFY_RUNS overrides the count (10).
set -eu
BUILD=${BUILD:-build}
FENCECERT=${FENCECERT:-$PWD/$BUILD/fencecert}
RUNS=${CERTIFY_RUNS:-10}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/fc-certify-repeat.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
sed "s#build/fencecert#$BUILD/fencecert#g" scenarios/default.yaml >"$tmp/default.yaml"

fixed="--only clean --only kill-after-target-commit --only xcom-lost
	--only zombie-worker --only zombie-committing --only change-source
	--only lose-pod"
c_and_controls="--route c-sqlite --route c-file --route naive
	--route xcom-guard --route checkpoint-guard --route journal-no-fence
	--route split-fence"
examples="--route sh-sqlite --route py-sqlite --only zombie-worker
	--only kill-after-target-commit"

certify() { # certify RUN PART ARGS...: one certification, verdicts appended
	run=$1 part=$2
	shift 2
	"$FENCECERT" certify "$tmp/default.yaml" "$@" --jobs 2 \
		--out "$tmp/out" --force --format json --quiet >/dev/null || true
	python3 tests/integration/certify_check.py "$tmp/out/report.json" \
		>>"$tmp/verdicts.$run" 2>>"$tmp/problems" ||
		echo "run $run ($part): see above" >>"$tmp/problems"
}

run() { # run N: one run, verdict list in $tmp/verdicts.N
	: >"$tmp/verdicts.$1"
	if [ "${CERTIFY_FULL:-0}" = 1 ]; then
		certify "$1" full
		return
	fi
	# shellcheck disable=SC2086
	certify "$1" "C routes and controls" $c_and_controls $fixed
	# shellcheck disable=SC2086
	certify "$1" examples $examples
}

start=$(date +%s)
i=1
while [ "$i" -le "$RUNS" ]; do
	run "$i"
	if [ "$i" -gt 1 ] && ! cmp -s "$tmp/verdicts.1" "$tmp/verdicts.$i"; then
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
echo "ok: $RUNS identical run(s) in $(($(date +%s) - start)) s"
