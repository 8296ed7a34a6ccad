#!/bin/sh
# bounds_report.sh -- what a route leaves in its journal and its target
# never decides the size of report.json (docs/report-format.md, "Bounds").
#
# The route makes its journal entry with the journal CLI, then appends
# 200000 transitions to its history behind the port's back, and writes 20
# rows of 2 MB keys into the target, each twice.  The harness asks the
# entry's version first and does not read a history over
# COLLECT_HISTORY_MAX (the schedule is unverified, `history_total` counts
# it); each changed row's key is kept to RECORD_ROW_KEY_MAX bytes
# (`row_keys_cut` counts them).  (Before: 200k transitions cost 50 s and
# 1 GB, and 20 such keys made a 40 MB report.json.)
. "$(dirname "$0")/lib/bounds.sh"
command -v sqlite3 >/dev/null || { echo "bounds_report: sqlite3 not installed, skipped"; exit 0; }

cat >"$tmp/suite.yaml" <<'YAML'
version: 1
suite: bounds-report
orchestrator: {retries: 0}
routes:
  - name: hoarder
    command:
      - sh
      - -c
      - |
        set -e
        j=$(printf %s "$FENCECERT_JOURNAL" | cut -d: -f2-)
        t=$(printf %s "$FENCECERT_TARGET" | cut -d: -f2-)
        "$FENCECERT_BIN" journal create --op big --intent i >/dev/null
        sqlite3 "$j" "WITH RECURSIVE c(v) AS (SELECT 2 UNION ALL SELECT v + 1 FROM c WHERE v < 200000)
          INSERT INTO transitions SELECT 'big', v,
            CASE v % 2 WHEN 0 THEN 'PREPARING' ELSE 'FAILED_PRE_COMMIT' END,
            CASE v % 2 WHEN 0 THEN 'FAILED_PRE_COMMIT' ELSE 'PREPARING' END, 0, 0, json_object() FROM c;
          UPDATE operations SET version = 200000, state = 'FAILED_PRE_COMMIT';"
        sqlite3 "$t" "CREATE TABLE events(row_key TEXT);
          WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 20)
          INSERT INTO events SELECT 'k' || i || replace(hex(zeroblob(1000000)), '0', 'x') FROM c, (SELECT 1 UNION ALL SELECT 2);"
    journal: 'sqlite:{dir}/journal.db'
    target: 'sqlite:{dir}/target.db'
    observe: {sql: "SELECT row_key, COUNT(*) FROM events GROUP BY row_key"}
scenarios:
  - name: clean
YAML

bounds_certify 300 1 20
size=$(wc -c <"$tmp/out/report.json")
html=$(wc -c <"$tmp/out/report.html")
[ "$size" -lt 200000 ] || { echo "FAIL: report.json is $size bytes"; exit 1; }
[ "$html" -lt 1000000 ] || { echo "FAIL: report.html is $html bytes"; exit 1; }
python3 - "$tmp/out/report.json" <<'PY' || exit 1
import json, sys
r = json.load(open(sys.argv[1]))
s = r["routes"][0]["schedules"][0]
a = s["attempts"][0]
op = s["operations"][0]
ent = [e for e in op["journal_entries"] if e["operation_id"] == "big"]
bad = []
if s["outcome"] != "unverified" or "COLLECT_HISTORY_MAX" not in (s["error"] or ""):
    bad.append(f"outcome {s['outcome']}, error {s['error']}")
if len(op["history"]) > 1000:
    bad.append(f"{len(op['history'])} transitions in the report")
if not ent or ent[0].get("history_total") != 200000:
    bad.append(f"history_total not counted: {ent}")
keys = [d["row_key"] for d in a["row_deltas"]]
if not keys or max(len(k) for k in keys) > 256:
    bad.append(f"row keys of {max(len(k) for k in keys) if keys else 0} bytes kept")
if a.get("row_keys_cut", 0) < len(keys):
    bad.append(f"row_keys_cut {a.get('row_keys_cut')} for {len(keys)} cut keys")
if bad:
    print("FAIL: " + "; ".join(bad))
    sys.exit(1)
print(f"{len(keys)} row keys of at most {max(len(k) for k in keys)} bytes "
      f"({a['row_keys_cut']} cut); history of {ent[0]['history_total']} not read")
PY
echo "bounds_report: ok (certify ${secs} s, report.json $size bytes, report.html $html bytes)"
