#!/bin/sh
# failpoint_pass_equiv.sh -- failpoints that do not wait change how fast a
# schedule runs, nothing else (docs/failpoints.md): the every-failpoint and
# interleavings explorations (pauses resumed at the next try's failpoint)
# of scenarios/exhaustive.yaml's c-sqlite and naive control, once with routes that pass the failpoints outside their wait set
# (the suite as it is) and once with routes that wait at every failpoint
# (FENCECERT_FAILPOINT_WAIT removed by `env -u`), must give the same
# verdicts, schedule strings, violations, and in every attempt the same
# failpoints reached, in the same order, with the same answers.
set -eu
BUILD=${BUILD:-build}
FENCECERT=${FENCECERT:-$PWD/$BUILD/fencecert}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/fc-fppass-equiv.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

sed -e "s#build/fencecert#$BUILD/fencecert#g" -e '/^ *fork_server:/d' \
	scenarios/exhaustive.yaml >"$tmp/pass.yaml"
sed -e "s#command: \[$BUILD/fencecert, route#command: [env, -u, FENCECERT_FAILPOINT_WAIT, $BUILD/fencecert, route#" \
	"$tmp/pass.yaml" >"$tmp/wait.yaml"
n=$(grep -c 'env, -u, FENCECERT_FAILPOINT_WAIT' "$tmp/wait.yaml")
[ "$n" -ge 2 ] || { echo "FAIL: the waiting suite was not made ($n)"; exit 1; }

for mode in pass wait; do
	"$FENCECERT" certify "$tmp/$mode.yaml" --full-report --route c-sqlite --route naive \
		--only every-failpoint --only interleavings --jobs 2 --out "$tmp/$mode" \
		--format json --quiet >/dev/null || true
done

python3 tests/integration/report_equiv.py "$tmp/pass/report.json" \
	"$tmp/wait/report.json" passing waiting --failpoints
echo "failpoint_pass_equiv: ok"
