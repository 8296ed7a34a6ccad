#!/bin/sh
# bounds_explore.sh -- what a route reports never decides how big an
# exploration is (docs/harness.md, "Bounds").
#
# The route announces 500 distinct failpoint names (`PASS fp000` ...
# `PASS fp499`) and then runs the C route, which loads the rows.  An
# exhaustive exploration of it would plan 1 + 500 + 500 x 500 schedules
# (and more for the C route's own failpoints); the explorer plans only the
# points of the first EXPLORE_NAMES_MAX (64) names a try reaches, and the
# route is unverified, saying which bound the scenario met.
. "$(dirname "$0")/lib/bounds.sh"

cat >"$tmp/suite.yaml" <<'YAML'
version: 1
suite: bounds-explore
orchestrator: {retries: 1, lease_ttl_ms: 5, zombie_delay_ms: 5}
workload: {rows_per_operation: 5}
routes:
  - name: many-names
    command:
      - sh
      - -c
      - |
        i=0
        while [ $i -lt 500 ]; do printf 'PASS fp%03d\n' $i; i=$((i + 1)); done >&3
        exec "$FENCECERT_BIN" route
    journal: 'sqlite:{dir}/journal.db'
    target: 'sqlite:{dir}/target.db'
    observe: {sql: "SELECT row_key, COUNT(*) FROM events GROUP BY row_key"}
scenarios:
  - name: every-failpoint
    explore: {failpoints: all, actions: [kill]}
YAML

bounds_certify 300 2 20
[ "$rc" -eq 3 ] || { tail -n 20 "$tmp/certify.out"; echo "FAIL: exit $rc, not 3 (unverified)"; exit 1; }
python3 - "$tmp/out/report.json" <<'PY' || exit 1
import json, sys
r = json.load(open(sys.argv[1]))
rt = r["routes"][0]
n = len(rt["schedules"])
notes = rt["coverage"]["unverified"]
bad = []
# discovery, a kill at each of the 64 points of try 1 (fp000..fp063),
# and one retry wave: at most 64 more
if n > 1 + 64 + 64:
    bad.append(f"{n} schedules")
faulted = {f["fault"] for s in rt["schedules"] for f in s["faults"]}
if any("fp064" in f or "fp499" in f for f in faulted):
    bad.append("a name past the bound was explored")
if rt["verdict"] != "unverified":
    bad.append(f"verdict {rt['verdict']}")
if not any("more than 64 distinct failpoint names (EXPLORE_NAMES_MAX)" in x for x in notes):
    bad.append(f"no reason names the bound: {notes}")
if bad:
    print("FAIL: " + "; ".join(bad))
    sys.exit(1)
print(f"{n} schedules; {[x for x in notes if 'EXPLORE' in x][0]}")
PY
echo "bounds_explore: ok (certify ${secs} s)"
