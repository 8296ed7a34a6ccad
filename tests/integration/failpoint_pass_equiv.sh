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
	"$FENCECERT" certify "$tmp/$mode.yaml" --route c-sqlite --route naive \
		--only every-failpoint --only interleavings --jobs 2 --out "$tmp/$mode" \
		--format json --quiet >/dev/null || true
done

python3 - "$tmp/pass/report.json" "$tmp/wait/report.json" <<'PY'
import json, sys

def summary(path):
    out = {}
    for r in json.load(open(path))["routes"]:
        scheds = sorted((s["scenario"], s["schedule"]) for s in r["schedules"])
        viol = sorted((v["invariant"], str(v.get("operation_id")),
                       v["scenario"], v["schedule"]) for v in r["violations"])
        hits = sorted((s["scenario"], s["schedule"], i,
                       tuple((h["name"], h["answer"]) for h in a["failpoints"]))
                      for s in r["schedules"]
                      for i, a in enumerate(s["attempts"]))
        errors = sorted((s["scenario"], s["schedule"]) for s in r["schedules"]
                        if s.get("error"))
        out[r["name"]] = {"verdict": r["verdict"], "expected": r["expected"],
                          "schedules": scheds, "violations": viol,
                          "failpoints": hits, "errors": errors}
    return out

a, b = summary(sys.argv[1]), summary(sys.argv[2])
bad = 0
for name in sorted(set(a) | set(b)):
    if name not in a or name not in b:
        print("FAIL: route %s in one report only" % name)
        bad = 1
        continue
    for key in ("verdict", "expected", "schedules", "violations",
                "failpoints", "errors"):
        if a[name][key] != b[name][key]:
            x, y = a[name][key], b[name][key]
            if isinstance(x, list):
                x = sorted(set(x) - set(y))[:3]
                y = sorted(set(y) - set(a[name][key]))[:3]
            print("FAIL: %s %s differs: passing %s, waiting %s" % (name, key, x, y))
            bad = 1
    nhits = sum(len(h[3]) for h in a[name]["failpoints"])
    print("%-9s %-22s %4d schedules %3d violations %6d failpoint hits" % (
        name, a[name]["verdict"], len(a[name]["schedules"]),
        len(a[name]["violations"]), nhits))
    if a[name]["errors"]:
        print("FAIL: %s schedules in error: %s" % (name, a[name]["errors"][:3]))
        bad = 1
if a.get("c-sqlite", {}).get("verdict") != "certified-automatic" or \
   a.get("naive", {}).get("verdict") != "rejected":
    print("FAIL: unexpected verdicts %s" % {k: v["verdict"] for k, v in a.items()})
    bad = 1
sys.exit(bad)
PY
echo "failpoint_pass_equiv: ok"
