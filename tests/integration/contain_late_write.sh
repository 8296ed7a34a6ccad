#!/bin/sh
# contain_late_write.sh -- a route's descendants end with its attempt
# (docs/harness.md, "Containment"), end to end through `fencecert certify`.
#
# The route runs the C route (which loads the rows correctly), then leaves
# a writer behind in a session of its own (setsid, backgrounded: the
# double fork of a daemon) that appends every row to the target a second
# time after a delay, waits until the writer runs, and exits with the C
# route's status.  Uncontained, the
# checker looks before the late write and certifies; the duplicates land
# afterwards.  Contained, the writer is killed when the attempt ends:
# after the run, and again after waiting longer than the delay, no row of
# the target is there twice, and no process carrying the suite's marker
# (in its environment) is left.
set -eu
BUILD=${BUILD:-build}
FENCECERT=${FENCECERT:-$PWD/$BUILD/fencecert}
command -v sqlite3 >/dev/null || { echo "contain_late_write: sqlite3 not installed, skipped"; exit 0; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/fc-contain.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/work"
mark="fc-contain-late-$$"
delay=2

cat >"$tmp/suite.yaml" <<EOF
version: 1
suite: contain
routes:
  - name: leaves-writer
    command:
      - sh
      - -c
      - |
        "\$FENCECERT_BIN" route; rc=\$?
        t=\$(printf %s "\$FENCECERT_TARGET" | cut -d: -f2-)
        ready=\$FENCECERT_RUN_DIR/writer-ready
        setsid sh -c ": >'\$ready'; sleep $delay; sqlite3 '\$t' 'INSERT INTO events SELECT * FROM events'" </dev/null >/dev/null 2>&1 &
        while [ ! -e "\$ready" ]; do sleep 0.05; done
        exit \$rc
    journal: 'sqlite:{dir}/journal.db'
    target: 'sqlite:{dir}/target.db'
    observe: {sql: "SELECT row_key, COUNT(*) FROM events GROUP BY row_key"}
    env: {CONTAIN_MARK: '$mark'}
scenarios:
  - name: clean
EOF

# processes whose environment carries the marker
marked() {
	{ grep -lszxF "CONTAIN_MARK=$mark" /proc/[0-9]*/environ || true; } | wc -l
}

rc=0
"$FENCECERT" certify "$tmp/suite.yaml" --full-report --out "$tmp/out" --work-dir "$tmp/work" \
	--keep --jobs 1 --quiet >"$tmp/certify.out" 2>&1 || rc=$?
target=$(find "$tmp/work" -name target.db | head -n 1)
if [ "$rc" -eq 2 ] || [ -z "$target" ]; then
	cat "$tmp/certify.out"
	echo "FAIL: certify did not run the route (exit $rc)"
	exit 1
fi

dups() {
	sqlite3 "$target" "SELECT COUNT(*) FROM (SELECT row_key FROM events GROUP BY row_key HAVING COUNT(*) > 1)"
}
rows=$(sqlite3 "$target" "SELECT COUNT(*) FROM events")
[ "$rows" -gt 0 ] || { echo "FAIL: the route wrote no rows"; exit 1; }
left=$(marked)
[ "$left" -eq 0 ] || { echo "FAIL: $left process(es) of the route outlived the run"; exit 1; }
sleep $((delay + 2))
left=$(marked)
[ "$left" -eq 0 ] || { echo "FAIL: $left process(es) of the route still run"; exit 1; }
d=$(dups)
if [ "$d" -ne 0 ]; then
	echo "FAIL: the late write landed after the run: $d row(s) twice"
	exit 1
fi
# the report says what was contained and what the end of the attempt killed
python3 - "$tmp/out/report.json" <<'PY' || exit 1
import json, sys
r = json.load(open(sys.argv[1]))
how = r["environment"]["containment"]
attempts = [a for rt in r["routes"] for s in rt["schedules"] for a in s["attempts"]]
killed = [a["descendants_killed"] for a in attempts]
ok = how != "none" and attempts and all(a["contained"] for a in attempts) and \
    any(k is not None and k >= 1 for k in killed)
if not ok:
    print(f"FAIL: the report does not say the writer was killed: containment {how}, "
          f"descendants_killed {killed}")
    sys.exit(1)
PY
echo "contain_late_write: ok ($rows rows, none twice after $((delay + 2)) s; report: descendant killed)"
