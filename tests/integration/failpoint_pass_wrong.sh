#!/bin/sh
# failpoint_pass_wrong.sh -- kill, pause and fail at a failpoint in the
# attempt's wait set still act (docs/failpoints.md), and a route told a
# wrong wait set (here: none, `env FENCECERT_FAILPOINT_WAIT=` around the
# C route, so it passes every failpoint) makes the schedule an error that
# names the failpoint, never a silent pass.
set -eu
BUILD=${BUILD:-build}
FENCECERT=${FENCECERT:-$PWD/$BUILD/fencecert}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/fc-fppass-wrong.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

sed -e "s#build/fencecert#$BUILD/fencecert#g" scenarios/exhaustive.yaml \
	>"$tmp/right.yaml"
sed -e '/^ *fork_server:/d' \
	-e "s#command: \[$BUILD/fencecert, route\]#command: [env, FENCECERT_FAILPOINT_WAIT=, $BUILD/fencecert, route]#" \
	"$tmp/right.yaml" >"$tmp/wrong.yaml"
grep -q 'FENCECERT_FAILPOINT_WAIT=,' "$tmp/wrong.yaml" ||
	{ echo "FAIL: the wrong suite was not made"; exit 1; }

bad=0
for s in k:after_committing@1 f:before_target_commit@1 p:after_lease@1; do
	for mode in right wrong; do
		out="$tmp/$mode-$(echo "$s" | tr ':@' '__')"
		"$FENCECERT" certify "$tmp/$mode.yaml" --full-report --route c-sqlite \
			--only every-failpoint --schedule "$s" --out "$out" \
			--format json --quiet >/dev/null 2>&1 || true
		python3 - "$out/report.json" "$mode" "$s" <<'PY' || bad=1
import json, sys
path, mode, sched = sys.argv[1:]
r = json.load(open(path))["routes"][0]
s = r["schedules"][0]
act, fp = sched.split(":")[0], sched.split(":")[1].split("@")[0]
acted = [h["name"] for a in s["attempts"] for h in a["failpoints"]
         if h["answer"] == act]
reached = sum(1 for a in s["attempts"] for h in a["failpoints"]
              if h["name"] == fp)
if mode == "right":
    # one replayed schedule challenges one window: judged by the schedule
    ok = (s["error"] is None and acted == [fp] and not s["violations"] and
          s["outcome"] == "converged")
else:
    ok = (s["error"] is not None and "wrong wait set" in s["error"] and
          fp in s["error"] and acted == [] and reached >= 1 and
          r["verdict"] != "certified-automatic")
print("%-5s %-26s %s: error=%s acted=%s verdict=%s" % (
    mode, sched, "ok" if ok else "FAIL", s["error"], acted, r["verdict"]))
sys.exit(0 if ok else 1)
PY
	done
done
[ "$bad" -eq 0 ] || exit 1
echo "failpoint_pass_wrong: ok"
