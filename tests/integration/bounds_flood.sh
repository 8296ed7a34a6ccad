#!/bin/sh
# bounds_flood.sh -- a route that floods its failpoint channel costs the
# harness what it wrote, no more (docs/harness.md, "Bounds").
#
# The route writes `PASS x` lines as fast as a pipe goes (yes(1)) for
# longer than its attempt timeout, in both of its tries.  The supervisor
# reads a bounded amount of each channel per wakeup, in linear time, so
# each try is killed at its deadline (timed out, SIGKILL) and the whole
# certify ends in a few seconds; the report keeps RECORD_HITS_KEPT (1000)
# failpoints of each attempt and counts the rest.  (Before: one second of
# flooding cost the harness 38 s and the attempt deadline was not
# enforced meanwhile; this run took more than 200 s.)
. "$(dirname "$0")/lib/bounds.sh"

cat >"$tmp/suite.yaml" <<'YAML'
version: 1
suite: bounds-flood
orchestrator: {retries: 1, attempt_timeout_ms: 1000}
routes:
  - name: flood
    command: [sh, -c, "timeout 3 yes 'PASS x' >&3; exit 0"]
    journal: 'sqlite:{dir}/journal.db'
    target: 'sqlite:{dir}/target.db'
    observe: {sql: "SELECT row_key, COUNT(*) FROM events GROUP BY row_key"}
scenarios:
  - name: clean
YAML

bounds_certify 120 1
[ "$secs" -lt 30 ] || { echo "FAIL: certify took ${secs} s with a flooding route"; exit 1; }
size=$(wc -c <"$tmp/out/report.json")
[ "$size" -lt 500000 ] || { echo "FAIL: report.json is $size bytes"; exit 1; }
python3 - "$tmp/out/report.json" <<'PY' || exit 1
import json, sys
r = json.load(open(sys.argv[1]))
att = [a for s in r["routes"][0]["schedules"] for a in s["attempts"]]
bad = []
if len(att) != 2:
    bad.append(f"{len(att)} attempts, not 2")
for a in att:
    if not a["timed_out"] or a["signal"] != "SIGKILL":
        bad.append(f"attempt {a['index']} ended '{a['end']}', not at its deadline")
    if a["end_ms"] - a["start_ms"] > 5000:
        bad.append(f"attempt {a['index']} ran {a['end_ms'] - a['start_ms']} ms")
    if len(a["failpoints"]) > 1000:
        bad.append(f"attempt {a['index']} keeps {len(a['failpoints'])} failpoints")
    if a.get("failpoints_total", 0) <= 1000 or not a.get("failpoints_truncated"):
        bad.append(f"attempt {a['index']} does not count what it did not keep")
if bad:
    print("FAIL: " + "; ".join(bad))
    sys.exit(1)
print("attempts: " + ", ".join(f"{a['end']} at {a['end_ms'] - a['start_ms']} ms, "
                              f"{a['failpoints_total']} failpoints" for a in att))
PY
echo "bounds_flood: ok (certify ${secs} s, report.json $size bytes)"
