#!/bin/sh
# schedule_replay.sh -- `fencecert certify --schedule STRING` naming what
# does not exist is a usage error (exit 2) with a message that says so,
# not an unverified run (exit 3): an operation beyond the scenario's, a try
# beyond the orchestrator's (both refused before anything runs), and a
# failpoint occurrence the route never reaches (known once the replay ran;
# the message lists what the route does reach).  A schedule whose fault
# only failed to fire because an earlier fault stopped the try stays
# unverified, and a schedule that exists replays normally (unverified too:
# one schedule does not challenge both windows of a certificate).
set -eu

BUILD=${BUILD:-build}
FENCECERT=${FENCECERT:-$PWD/$BUILD/fencecert}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/fc-replay.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
checks=0

fail() {
	echo "FAIL: $*" >&2
	exit 1
}

cat >"$tmp/suite.yaml" <<YAML
version: 1
suite: replay
routes:
  - name: c
    command: [$FENCECERT, route]
    journal: "sqlite:{dir}/journal.db"
    target: "sqlite:{dir}/target.db"
    observe: {sql: "SELECT row_key, COUNT(*) FROM events GROUP BY row_key"}
workload: {operations: 2, rows_per_operation: 3}
orchestrator: {retries: 2, zombie_delay_ms: 20, lease_ttl_ms: 20}
scenarios:
  - name: clean
YAML

# replay WANT_EXIT SCHEDULE [TEXT]: the exit status, the text in the output,
# and no report.json after a usage error.
n=0
replay() {
	want=$1 sched=$2 text=${3:-}
	n=$((n + 1))
	out="$tmp/out$n"
	set +e
	"$FENCECERT" certify "$tmp/suite.yaml" --route c --only clean \
		--schedule "$sched" --out "$out" >"$tmp/stdout$n" 2>"$tmp/stderr$n"
	rc=$?
	set -e
	if [ "$rc" -ne "$want" ]; then
		cat "$tmp/stderr$n" >&2
		fail "'$sched': exit $rc, want $want"
	fi
	if [ -n "$text" ] && ! cat "$tmp/stderr$n" "$tmp/stdout$n" |
	   grep -qF -- "$text"; then
		cat "$tmp/stderr$n" "$tmp/stdout$n" >&2
		fail "'$sched': the output lacks: $text"
	fi
	if [ "$want" -eq 2 ] && [ -e "$out/report.json" ]; then
		fail "'$sched': a usage error wrote a report"
	fi
	checks=$((checks + 1))
	echo "ok: '$sched' -> exit $rc"
}

# before anything runs
replay 2 'k:after_intent@1/op3' \
	"fault 'k:after_intent@1/op3' of the schedule cannot fire in scenario 'clean': operation 3 does not exist (the scenario runs 2 operations)"
replay 2 'x@4' "after try 4 is beyond the last try (retries: 2 gives 3 tries)"
replay 2 'c@1=pgt' "'pgt' names no proxy of the suite"
# after the replay: what the route reaches decides
replay 2 'k:after_intent@1#2/op1' \
	"route 'c': fault 'k:after_intent@1#2/op1' of the schedule names a failpoint occurrence that does not exist: op 1 try 1 reaches 'after_intent' 1 time, not 2; it reaches before_intent, after_intent,"
grep -qF "after_target_commit" "$tmp/stderr$n" ||
	fail "the message does not list what the route reaches"
replay 2 'f:after_nothing@1' "op 1 try 1 never reaches 'after_nothing'"
replay 2 'k:after_target_commit@2/op2' "op 2 never reached try 2 (the task ended before it)"
# an occurrence that exists, kept from firing by an earlier fault: unverified
replay 3 'k:after_target_commit@1/op1;k:after_intent@1/op1' \
	"fault 'k:after_target_commit@1/op1' never fired"
# an occurrence that exists replays; one schedule that stops a try only
# after its commit earns no certificate (no-loss was never challenged)
replay 3 'k:after_target_commit@1/op1' "no-loss was never challenged"
[ -s "$tmp/out$n/report.json" ] || fail "no report for a valid replay"

# a rejecting schedule's reproduce line, copied from the report and run
# twice where the user stands: the same verdict both times (the second
# replaces the first's certify-replay/), the run that found it untouched
sed 's/^  - name: c$/  - name: naive/; s|command: \[\(.*\), route\]|command: [\1, route, --variant, naive]|' \
	"$tmp/suite.yaml" >"$tmp/naive.yaml"
printf '  - name: kill-after-commit\n    faults: [{attempt: 1, failpoint: after_target_commit, action: kill}]\n' \
	>>"$tmp/naive.yaml"
mkdir "$tmp/cwd"
rc=0
(cd "$tmp/cwd" && "$FENCECERT" certify "$tmp/naive.yaml" --out found --quiet) \
	>"$tmp/found.out" 2>&1 || rc=$?
[ "$rc" -eq 1 ] || { cat "$tmp/found.out"; fail "the naive route was not rejected (exit $rc)"; }
repro=$(python3 -c 'import json,sys
r = json.load(open(sys.argv[1]))
print(next(s["reproduce"] for rt in r["routes"] for s in rt["schedules"] if s["violations"]))' \
	"$tmp/cwd/found/report.json")
case $repro in "fencecert certify "*) ;; *) fail "reproduce line: $repro" ;; esac
cp "$tmp/cwd/found/report.json" "$tmp/found.json"
for i in 1 2; do
	rc=0
	(cd "$tmp/cwd" && eval "\"\$FENCECERT\" ${repro#fencecert }" --quiet) \
		>"$tmp/repro$i.out" 2>&1 || rc=$?
	[ "$rc" -eq 1 ] || { cat "$tmp/repro$i.out"; fail "reproduce run $i: exit $rc, want 1 (rejected): $repro"; }
	[ -s "$tmp/cwd/certify-replay/report.json" ] || fail "reproduce run $i wrote no certify-replay/report.json"
	checks=$((checks + 1))
done
cmp -s "$tmp/found.json" "$tmp/cwd/found/report.json" || fail "a replay changed the run that found the schedule"
echo "ok: the reproduce line replays the rejection twice: $repro"
echo "schedule_replay: $checks checks passed"
