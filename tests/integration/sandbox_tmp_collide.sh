#!/bin/sh
# sandbox_tmp_collide.sh -- schedules running at once do not share /tmp
# (issue 30, break 6; docs/security.md).
#
# A correct loader (no journal; INSERT OR IGNORE on the key, one
# transaction) stages its partition through /tmp/stage.$$.csv, the
# common idiom, and removes the file when done.  Every attempt's shell
# is pid 2 in its PID namespace, so with a host /tmp two schedules under
# --jobs 2 staged through the same file: one imported the other's rows,
# or found the file gone (no-loss violated, or a failed task).  Each
# attempt now has a /tmp of its own: every schedule converges without a
# violation and the loader is certified.
. "$(dirname "$0")/lib/sandbox.sh"
command -v sqlite3 >/dev/null || { echo "sandbox_tmp_collide: sqlite3 not installed, skipped"; exit 0; }

{
	sb_sh_route
	cat <<'EOF'
stage=/tmp/stage.$$.csv
fp before_load
sed 1d "$src" >"$stage" || exit 75
sleep 0.3
sqlite3 "$db" <<SQL
CREATE TABLE IF NOT EXISTS events(row_key TEXT PRIMARY KEY, payload TEXT);
CREATE TEMP TABLE stage(row_key TEXT, payload TEXT);
.import --csv $stage stage
INSERT OR IGNORE INTO events SELECT row_key, payload FROM stage;
SQL
rm -f "$stage"
fp after_load
exit 0
EOF
} >"$tmp/stager.sh"

cat >"$tmp/suite.yaml" <<EOF
version: 1
suite: tmp-collide
routes:
  - name: stager
    command: [sh, $tmp/stager.sh]
    journal: none
    target: "sqlite:{dir}/target.db"
    observe: {sql: "SELECT row_key, COUNT(*) FROM events GROUP BY row_key"}
    expect: certified-automatic
workload: {operations: 2, rows_per_operation: 20, seed: 1}
orchestrator: {retries: 1, zombie_delay_ms: 5, lease_ttl_ms: 5, attempt_timeout_ms: 20000}
scenarios:
  - name: clean
  - name: clean-2
  - name: clean-3
  - name: kill-before-load
    faults:
      - {attempt: 1, failpoint: before_load, action: kill}
  - name: kill-after-load
    faults:
      - {attempt: 1, failpoint: after_load, action: kill}
  - name: clean-4
EOF

for u in $(sb_users); do
	d=$(sb_dir "$u" "$u")
	sb_certify "$u" "$d" "$tmp/suite.yaml" --jobs 2
	[ -f "$d/out/report.json" ] || fail "no report ($u, exit $sb_rc): $(cat "$d/stderr")"
	"$PY" - "$d/out/report.json" "$u" <<'PY' || { cat "$d/stdout" >&2; exit 1; }
import json, sys
r = json.load(open(sys.argv[1]))["routes"][0]
bad = ["%s: %s %s" % (s["scenario"], s["outcome"], s["outcome_detail"])
       for s in r["schedules"] if s["outcome"] != "converged"]
if r["verdict"] != "certified-automatic" or r["violations"] or bad:
    print("FAIL: the stager (%s) is %s: %s; %s" % (sys.argv[2], r["verdict"],
          [v["detail"] for v in r["violations"]][:3], bad[:3]), file=sys.stderr)
    sys.exit(1)
print("ok: the stager (%s) is certified-automatic, every schedule converged" % sys.argv[2])
PY
done
echo "sandbox_tmp_collide: ok"
