#!/bin/sh
# sandbox_pause_setsid.sh -- pause freezes the whole attempt, setsid'd
# children included, and resume thaws them (issue 30, break 5;
# docs/scenario-format.md, `pause`).
#
# The loader (no journal) checks the target in a writer it starts in a
# session of its own (setsid), and the writer inserts every row 0.5 s
# later unless the check found rows: a check-then-write race, which a
# zombie worker turns into duplicates.  The main process waits until the
# writer has checked, reports failpoint `loading` and waits for the
# writer.  Scenario zombie: try 1 paused at `loading`, given up after
# 1.5 s, resumed after try 2.
#   - Really frozen (the fix): the writer stops after its check; try 2
#     finds no rows and loads them; the resumed writer loads them again:
#     no-duplicate, rejected.
#   - Escaped (SIGSTOP of the process group only): the writer inserts
#     while its attempt is "paused"; try 2 sees the rows and skips; no
#     duplicate, and with kill-at-start challenging the other window the
#     loader was certified-automatic.
. "$(dirname "$0")/lib/sandbox.sh"
command -v sqlite3 >/dev/null || { echo "sandbox_pause_setsid: sqlite3 not installed, skipped"; exit 0; }
command -v setsid >/dev/null || { echo "sandbox_pause_setsid: setsid not installed, skipped"; exit 0; }

{
	sb_sh_route
	cat <<'EOF'
fp start
sqlite3 "$db" "CREATE TABLE IF NOT EXISTS events(row_key TEXT, payload TEXT)" || exit 75
checked=$FENCECERT_RUN_DIR/checked.$FENCECERT_TRY_NUMBER
done_f=$FENCECERT_RUN_DIR/written.$FENCECERT_TRY_NUMBER
rm -f "$checked" "$done_f"
setsid sh -c '
	n=$(sqlite3 "$1" "SELECT COUNT(*) FROM events")
	: >"$2"
	sleep 0.5
	[ "$n" -gt 0 ] || sqlite3 "$1" ".import --csv --skip 1 $3 events"
	: >"$4"' writer "$db" "$checked" "$src" "$done_f" </dev/null >/dev/null 2>&1 &
while [ ! -e "$checked" ]; do sleep 0.02; done
fp loading
while [ ! -e "$done_f" ]; do sleep 0.05; done
exit 0
EOF
} >"$tmp/loader.sh"

cat >"$tmp/suite.yaml" <<EOF
version: 1
suite: pause-setsid
routes:
  - name: escaping-loader
    command: [sh, $tmp/loader.sh]
    journal: none
    target: "sqlite:{dir}/target.db"
    observe: {sql: "SELECT row_key, COUNT(*) FROM events GROUP BY row_key"}
workload: {operations: 1, rows_per_operation: 3, seed: 1}
orchestrator: {retries: 1, zombie_delay_ms: 1500, lease_ttl_ms: 5, attempt_timeout_ms: 20000}
scenarios:
  - name: kill-at-start
    faults:
      - {attempt: 1, failpoint: start, action: kill}
  - name: zombie
    faults:
      - {attempt: 1, failpoint: loading, action: pause, resume: after_next_attempt}
EOF

for u in $(sb_users); do
	d=$(sb_dir "$u" "$u")
	sb_certify "$u" "$d" "$tmp/suite.yaml" --jobs 1
	[ -f "$d/out/report.json" ] || fail "no report ($u, exit $sb_rc): $(cat "$d/stderr")"
	"$PY" - "$d/out/report.json" "$u" <<'PY' || { cat "$d/stdout" >&2; exit 1; }
import json, sys
r = json.load(open(sys.argv[1]))["routes"][0]
names = sorted({v["name"] for v in r["violations"]})
z = [s for s in r["schedules"] if s["scenario"] == "zombie"][0]
if r["verdict"] != "rejected" or "no-duplicate" not in names:
    print("FAIL: the loader (%s) is %s (violations %s; zombie schedule %s): its "
          "setsid writer was not frozen with its attempt" % (sys.argv[2], r["verdict"],
          names, z["outcome"]), file=sys.stderr)
    sys.exit(1)
print("ok: the loader (%s) is rejected for %s: the writer froze and thawed with "
      "its attempt" % (sys.argv[2], ", ".join(names)))
PY
done
echo "sandbox_pause_setsid: ok"
