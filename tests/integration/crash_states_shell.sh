#!/bin/sh
# crash_states_shell.sh -- crash-state exploration of a route that writes
# its SQLite target through short-lived processes: default.yaml's
# sh-sqlite (routes/examples/route.sh, one sqlite3 CLI session per step,
# each closing its connection), on the commit window of its
# every-failpoint scenario (kills at after_committing and
# after_target_commit, then in the retry after each).
#
# Recorded (the default) and --reexecute must give the same verdict,
# certified-automatic, and per schedule the same outcome and violated
# invariants (crash_states_check.py same).  Catches a recorded or seeded
# run that disturbs the target it observes: a schedule seeded from try 1
# records its retry (a snapshot of the files at every failpoint), and the
# harness's own reads must neither break nor be broken by the route's.
# crash_states.sh runs default.yaml three ways without this route (its
# full suite takes minutes here).
set -eu
BUILD=${BUILD:-build}
FENCECERT=${FENCECERT:-$PWD/$BUILD/fencecert}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/fc-crash-states-shell.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/lib/expect.sh"
check="python3 $(dirname "$0")/crash_states_check.py"

cat >"$tmp/sh.yaml" <<EOF
version: 1
suite: crash-states-shell
routes:
  - name: sh-sqlite
    command: [sh, routes/examples/route.sh]
    journal: "sqlite:{dir}/journal.db"
    target: "sqlite:{dir}/target.db"
    observe:
      sql: "SELECT row_key, COUNT(*) FROM events GROUP BY row_key"
    expect: certified-automatic
workload:
  operations: 1
  rows_per_operation: 5
  seed: 1
orchestrator:
  retries: 3
  zombie_delay_ms: 5
  lease_ttl_ms: 5
  attempt_timeout_ms: 20000
scenarios:
  - name: commit-window
    explore:
      failpoints: [after_committing, after_target_commit]
      actions: [kill]
EOF

for mode in recorded reexecute; do
	flag=
	[ "$mode" = recorded ] || flag=--reexecute
	start=$(date +%s)
	set +e
	# shellcheck disable=SC2086
	"$FENCECERT" certify "$tmp/sh.yaml" --full-report --jobs 2 --format json \
		--out "$tmp/$mode" --quiet $flag >"$tmp/$mode.table" 2>&1
	rc=$?
	set -e
	cat "$tmp/$mode.table"
	echo "$mode: exit $rc, $(($(date +%s) - start)) s"
	[ -f "$tmp/$mode/report.json" ] || fail "$mode: no report"
done
# Catches the route certified only when re-executed (or only when
# recorded): the two runs must judge every schedule alike.
$check same "$tmp/reexecute/report.json" "$tmp/recorded/report.json" ||
	fail "sh-sqlite: recorded and --reexecute disagree"
# Catches the recorded run silently re-executing (then the comparison
# above proves nothing).
$check modes "$tmp/recorded/report.json" recorded commit-window ||
	fail "sh-sqlite: the exploration was not recorded"
python3 - "$tmp/recorded/report.json" <<'PY' || fail "sh-sqlite: not certified-automatic when recorded"
import json, sys
rt = json.load(open(sys.argv[1]))["routes"][0]
print(rt["name"], rt["verdict"], rt["coverage"]["unverified"])
e = rt["coverage"]["exploration"][0]
sys.exit(0 if rt["verdict"] == "certified-automatic" and e["seeded"] > 0 else 1)
PY
ok "sh-sqlite: recorded and --reexecute agree, certified-automatic"
echo "ok: $checks checks"
