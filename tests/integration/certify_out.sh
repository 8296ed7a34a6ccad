#!/bin/sh
# certify_out.sh -- `certify --out` is never mixed (reports/outdir.h):
#
#   1. a second certify into the same --out without --force is refused
#      (exit 2, before any schedule runs) and the first run's files stay
#      byte for byte;
#   2. with --force no file of the first run remains (first run json,html,
#      second json: no report.html);
#   3. an --out holding somebody else's file is refused, --force or not;
#   4. an interrupted certify (SIGINT once its schedules run) exits 130
#      and leaves no report.json in --out -- not a new one, and with
#      --force not the earlier one either -- and no staging directory;
#   5. a SIGKILLed certify leaves no report.json, and its janitor removes
#      the staging directory.
set -eu

BUILD=${BUILD:-build}
FENCECERT=${FENCECERT:-$PWD/$BUILD/fencecert}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/fc-certify-out.XXXXXX")
pid=""
trap '[ -z "$pid" ] || kill -KILL "$pid" 2>/dev/null; rm -rf "$tmp"' EXIT INT TERM
EXPECT_OUT=$tmp/stdout EXPECT_ERR=$tmp/stderr
. "$(dirname "$0")/lib/expect.sh"

# hashes DIR: every file in DIR with its bytes' digest, sorted
hashes() {
	(cd "$1" && find . -type f | LC_ALL=C sort | xargs sha256sum)
}

# no_staging PARENT: no ".NAME.incomplete-*" directory left in PARENT
no_staging() {
	! ls -A "$1" | grep -q '\.incomplete-' ||
		fail "a staging directory was left in $1: $(ls -A "$1")"
}

# A control that is rejected as expected: certify exits 0, quickly.
cat >"$tmp/quick.yaml" <<EOF
version: 1
suite: certify-out
routes:
  - name: naive
    command: [$FENCECERT, route, --variant, naive]
    journal: "sqlite:{dir}/journal.db"
    target: "sqlite:{dir}/target.db"
    observe:
      sql: "SELECT row_key, COUNT(*) FROM events GROUP BY row_key"
    expect: rejected
workload: {operations: 1, rows_per_operation: 2, seed: 1}
orchestrator: {retries: 1, zombie_delay_ms: 20, lease_ttl_ms: 20, attempt_timeout_ms: 20000}
scenarios:
  - name: kill-after-target-commit
    faults:
      - {attempt: 1, failpoint: after_target_commit, action: kill}
EOF
# A route that says it started, then sleeps until it is stopped.
mkdir -p "$tmp/sig"
cat >"$tmp/slow.yaml" <<EOF
version: 1
suite: certify-out-slow
routes:
  - name: sleeper
    command: [/bin/sh, -c, 'touch "$tmp/sig/started"; exec sleep 60']
    writable: ["$tmp/sig"]  # sandboxed: the only place outside its dir
    journal: "sqlite:{dir}/journal.db"
    target: "sqlite:{dir}/target.db"
    observe: {sql: "SELECT 'k', 1"}
    expect: rejected
workload: {operations: 1, rows_per_operation: 1, seed: 1}
orchestrator: {retries: 0, attempt_timeout_ms: 60000}
scenarios:
  - name: clean
EOF

# --- 1. no --force: refused, the first run's files intact ---------------------------
expect 0 "$FENCECERT" certify "$tmp/quick.yaml" --out "$tmp/out" --quiet \
	--format json,html
[ -s "$tmp/out/report.json" ] && [ -s "$tmp/out/report.html" ] ||
	fail "the first run wrote no report.json and report.html"
no_staging "$tmp"
hashes "$tmp/out" >"$tmp/first"
mkdir "$tmp/w2"
expect 2 "$FENCECERT" certify "$tmp/quick.yaml" --out "$tmp/out" --quiet \
	--work-dir "$tmp/w2"
err_has "fencecert: USAGE: --out '$tmp/out' holds the reports of an earlier run: give --force to replace them whole, or another --out"
hashes "$tmp/out" >"$tmp/second"
cmp -s "$tmp/first" "$tmp/second" ||
	fail "the refused run changed --out: $(diff "$tmp/first" "$tmp/second")"
[ -z "$(ls -A "$tmp/w2")" ] || fail "the refused run created schedule dirs: $(ls -A "$tmp/w2")"
no_staging "$tmp"
ok "a second certify into the same --out is refused (exit 2, no schedule run), the first run's files intact"

# --- 2. --force: replaced whole ---------------------------------------------------------
expect 0 "$FENCECERT" certify "$tmp/quick.yaml" --out "$tmp/out" --quiet \
	--format json --force
[ -s "$tmp/out/report.json" ] || fail "--force wrote no report.json"
[ "$(ls -A "$tmp/out")" = report.json ] ||
	fail "files of the first run remain beside the new report: $(ls -A "$tmp/out")"
[ "$(sha256sum <"$tmp/out/report.json" | cut -d' ' -f1)" != \
  "$(grep ' ./report.json$' "$tmp/first" | cut -d' ' -f1)" ] ||
	fail "report.json was not rewritten"
no_staging "$tmp"
ok "with --force no file of the first run remains (no report.html)"

# --- 3. somebody else's files -----------------------------------------------------------
mkdir "$tmp/mine"
echo "keep me" >"$tmp/mine/notes.txt"
for force in "" --force; do
	# shellcheck disable=SC2086
	expect 2 "$FENCECERT" certify "$tmp/quick.yaml" --out "$tmp/mine" --quiet $force
	err_has "holds 'notes.txt', which is not a fencecert report"
done
[ "$(cat "$tmp/mine/notes.txt")" = "keep me" ] || fail "notes.txt changed"
expect 2 "$FENCECERT" certify "$tmp/quick.yaml" --out "$tmp/mine/notes.txt" --quiet
err_has "is not a directory"
ok "an --out holding other files (or a file) is refused, --force or not"

# --- 4. SIGINT once the schedules run -------------------------------------------------------
# start_slow ARGS... : certify the sleeper in the background; returns once
# the route runs (so a schedule has started), $pid set
start_slow() {
	rm -f "$tmp/sig/started"
	"$FENCECERT" certify "$tmp/slow.yaml" --quiet --work-dir "$tmp" "$@" \
		>"$tmp/stdout" 2>"$tmp/stderr" &
	pid=$!
	n=0
	while [ ! -e "$tmp/sig/started" ]; do
		n=$((n + 1))
		[ "$n" -lt 400 ] || fail "the slow route never started: $(cat "$tmp/stderr")"
		kill -0 "$pid" 2>/dev/null || fail "certify ended early: $(cat "$tmp/stderr")"
		sleep 0.05
	done
}

# stop_slow SIGNAL WANT_EXIT
stop_slow() {
	kill "-$1" "$pid"
	set +e
	wait "$pid"
	got=$?
	set -e
	pid=""
	[ "$got" -eq "$2" ] || fail "certify after SIG$1: exit $got, want $2: $(cat "$tmp/stderr")"
}

start_slow --out "$tmp/int"
stop_slow INT 130
[ ! -e "$tmp/int/report.json" ] || fail "an interrupted run wrote report.json"
no_staging "$tmp"
# with --force over an earlier report: that one is gone too
cp -r "$tmp/out" "$tmp/old"
start_slow --out "$tmp/old" --force
stop_slow INT 130
[ ! -e "$tmp/old/report.json" ] || fail "an interrupted --force run left the earlier report.json"
no_staging "$tmp"
ok "SIGINT: exit 130, no report.json in --out (neither new nor earlier), no staging dir"

# --- 5. SIGKILL -------------------------------------------------------------------------------
start_slow --out "$tmp/killed"
ls -A "$tmp" | grep -q '^\.killed\.incomplete-' ||
	fail "no staging directory while the run is going: $(ls -A "$tmp")"
stop_slow KILL 137
[ ! -e "$tmp/killed/report.json" ] || fail "a killed run wrote report.json"
n=0
while ls -A "$tmp" | grep -q '\.incomplete-'; do
	n=$((n + 1))
	[ "$n" -lt 200 ] || fail "the janitor did not remove the staging dir: $(ls -A "$tmp")"
	sleep 0.05
done
ok "SIGKILL: no report.json, the staging dir removed by the janitor ($((n * 50)) ms)"

echo "certify_out.sh: $checks checks passed"
