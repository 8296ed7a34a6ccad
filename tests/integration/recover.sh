#!/bin/sh
# recover.sh -- `fencecert recover` end to end with the real binary: each
# operation is driven into COMMIT_UNKNOWN for real (a route attempt killed
# at a failpoint, the retry's reconcile probe failed through the failpoint
# channel by recover_driver.py), then resolved by an operator:
#
#   A  fence APPLIED  -> mark-committed -> the next attempt completes with
#      no second mutation; inspect/plan leave journal and target
#      byte-identical; a stale --expect-version and a racing apply lose
#      with RECOVERY_CONFLICT; a blank --actor or --reason is a usage error
#      that writes nothing; a COMPLETE operation is refused untouched
#   B  fence ABSENT   -> a running lease makes apply wait (LEASE_HELD) ->
#      mark-failed-pre-commit (fenced at a new epoch) -> the next attempt
#      applies exactly once
#   C  fence UNKNOWN  -> refused without --force; --force is audited
#      (forced, actor, reason in the history) -> the next attempt completes
#      with no second mutation; `recover list` shows the stop, then nothing
#   D  a retry after `journal purge` removed its operation is refused
#      (PURGED), not re-applied
#
# Uses $FENCECERT (set by tests/run-all).  The JSON files each scenario
# keeps are checked at the end by one python3: on a loaded machine
# starting python3 is the slow part.
set -eu

FENCECERT=${FENCECERT:-$PWD/${BUILD:-build}/fencecert}
DRIVER=$(dirname "$0")/recover_driver.py
tmp=$(mktemp -d "${TMPDIR:-/tmp}/fc-recover.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM

fail() {
	echo "FAIL: $*" >&2
	exit 1
}

# setup NAME: a scenario directory with its own journal, target, workload.
setup() {
	d=$tmp/$1
	mkdir -p "$d/state" "$d/tgt" "$d/xcom" "$d/run"
	printf 'row_key,payload\nk1,hello\nk2,"a,b"\n' >"$d/part.csv"
	cat >"$d/workload.json" <<EOF
{"identity": {"release": "r1", "deployment": "d1", "dag": "orders",
              "run": "2026-11-01", "workload": "load_orders",
              "partition": "$1", "interval": "2026-11-01/2026-11-02",
              "target": "events"},
 "intent": {"pack": "pk1", "strategy": "append",
            "target_contract": "events.v1", "schema": "s1"},
 "source": "part.csv", "table": "events"}
EOF
	J="sqlite:$d/state/journal.db"
	T="sqlite:$d/tgt/target.db"
}

# attempts SPEC...: route attempts in order (recover_driver.py --attempt).
attempts() {
	n=$#
	for spec in "$@"; do
		set -- "$@" --attempt "$spec"
	done
	shift "$n"
	FENCECERT_JOURNAL=$J FENCECERT_TARGET=$T \
	FENCECERT_WORKLOAD=$d/workload.json FENCECERT_XCOM_DIR=$d/xcom \
	FENCECERT_RUN_DIR=$d/run FENCECERT_LEASE_TTL_MS=300 \
		python3 "$DRIVER" "$@" -- "$FENCECERT" route ||
		fail "$(basename "$d"): route attempts did not end as expected"
}

# route_try TRY WANT_EXIT: one attempt without failpoints.
route_try() {
	set +e
	FENCECERT_JOURNAL=$J FENCECERT_TARGET=$T \
	FENCECERT_WORKLOAD=$d/workload.json FENCECERT_XCOM_DIR=$d/xcom \
	FENCECERT_RUN_DIR=$d/run FENCECERT_TRY_NUMBER=$1 \
	FENCECERT_LEASE_OWNER=try$1 FENCECERT_LEASE_TTL_MS=300 \
		"$FENCECERT" route >/dev/null 2>"$tmp/route.err"
	got=$?
	set -e
	[ "$got" -eq "$2" ] ||
		fail "$(basename "$d"): try $1 exited $got, want $2: $(cat "$tmp/route.err")"
}

# stopped_at KILL_POINT: try 1 killed there, try 2's reconcile probe fails
# -> COMMIT_UNKNOWN (exit 100); the operation id in $OP.
stopped_at() {
	attempts "try=1 expect=137 kill=$1" \
		"try=2 expect=100 fail=before_reconcile_probe,after_reconcile_probe"
	OP=$("$FENCECERT" journal list --journal "$J" |
		sed -n 's/^ *"operation_id": "\(sha256:[0-9a-f]*\)",$/\1/p')
	[ -n "$OP" ] || fail "no operation in the journal"
	[ "$(version)" -eq 4 ] || fail "COMMIT_UNKNOWN should be version 4"
	"$FENCECERT" journal get --journal "$J" --op "$OP" |
		grep -q '"state": "COMMIT_UNKNOWN"' || fail "not COMMIT_UNKNOWN"
}

# recover WANT_EXIT ARGS...: stdout in $tmp/out, stderr in $tmp/err.
recover() {
	want=$1
	shift
	set +e
	"$FENCECERT" recover "$@" >"$tmp/out" 2>"$tmp/err"
	got=$?
	set -e
	[ "$got" -eq "$want" ] ||
		fail "recover $*: exit $got, want $want; stderr: $(cat "$tmp/err")"
}

# keep NAME: keep the last recover's stdout as $tmp/NAME.
keep() {
	cp "$tmp/out" "$tmp/$1"
}

# check FILE EXPR... [+ FILE EXPR...]: every EXPR must hold, `d` being the
# JSON of the FILE before it.
check() {
	python3 -c '
import json, sys
d = None
args = sys.argv[1:]
while args:
    path, args = args[0], args[1:]
    with open(path) as f:
        d = json.load(f)
    while args and args[0] != "+":
        expr, args = args[0], args[1:]
        if not eval(expr):
            sys.exit("check failed in %s: %s\njson: %s"
                     % (path, expr, json.dumps(d)[:3000]))
    args = args[1:]
' "$@" || fail "JSON checks (file and expression above)"
}

stderr_has() {
	grep -q "$1" "$tmp/err" || fail "stderr lacks '$1': $(cat "$tmp/err")"
}

rows() {
	"$FENCECERT" target rows --target "$T" | awk '{ n += $2 } END { print n + 0 }'
}

version() {
	"$FENCECERT" journal get --journal "$J" --op "$OP" |
		sed -n 's/^  "version": \([0-9]*\),$/\1/p'
}

history() {
	"$FENCECERT" journal history --journal "$J" --op "$OP" >"$tmp/$1"
}

# Every file under the journal and target directories, names and bytes.
snapshot() {
	(cd "$d" && find state tgt -type f | LC_ALL=C sort | xargs sha256sum)
}

apply() {
	recover "$1" apply --journal "$J" --target "$T" --op "$OP" \
		--expect-version "$2" --action "$3" --actor "$4" --reason "$5" \
		${6:-}
}

# ---- A: fence APPLIED ------------------------------------------------------
setup applied
stopped_at after_target_commit
[ "$(rows)" -eq 2 ] || fail "A: try 1 should have landed 2 rows"
sleep 0.4 # try 2's lease runs out

# inspect and plan write nothing; neither does inspecting a missing journal.
snapshot >"$tmp/before"
recover 0 inspect --journal "$J" --target "$T" --op "$OP"
grep -q "^state      COMMIT_UNKNOWN, version 4" "$tmp/out" || fail "A: inspect text"
grep -q "APPLIED at epoch 1, 2 rows, intent matches" "$tmp/out" || fail "A: inspect fence"
recover 0 inspect --journal "$J" --target "$T" --op "$OP" --json
keep A-inspect.json
recover 0 plan --journal "$J" --target "$T" --op "$OP"
grep -q "^  mark-committed  *safe" "$tmp/out" || fail "A: plan text"
grep -q "not applicable: target has no prepared transactions" "$tmp/out" || fail "A: 2pc line"
recover 0 plan --journal "$J" --target "$T" --op "$OP" --json
keep A-plan.json
snapshot >"$tmp/after"
cmp -s "$tmp/before" "$tmp/after" ||
	fail "A: inspect/plan changed files: $(diff "$tmp/before" "$tmp/after")"
recover 2 inspect --journal "sqlite:$d/state/nope.db" --target "$T" --op "$OP"
[ ! -e "$d/state/nope.db" ] || fail "A: inspect created a journal"
# A SQLite file that is no journal (rollback-journal mode, a table of its
# own) and a file that is no database: inspect and plan fail cleanly and
# leave them as they were -- no schema, no WAL switch, no -wal/-shm --
# also when the same file is the probed target.
mkdir "$d/other"
python3 -c 'import sqlite3, sys
c = sqlite3.connect(sys.argv[1]); c.execute("CREATE TABLE t(x)")
c.execute("INSERT INTO t VALUES (1)"); c.commit(); c.close()' "$d/other/plain.db"
printf 'not a database, not at all: %0400d\n' 0 >"$d/other/garbage.db"
others() { (cd "$d/other" && find . -type f | LC_ALL=C sort | xargs sha256sum); }
others >"$tmp/before"
for sub in inspect plan; do
	recover 69 "$sub" --journal "sqlite:$d/other/plain.db" \
		--target "sqlite:$d/other/plain.db" --op "$OP"
	stderr_has "^fencecert: JOURNAL_UNAVAILABLE: .*plain.db' has no fencecert journal schema"
	set +e
	"$FENCECERT" recover "$sub" --journal "sqlite:$d/other/garbage.db" \
		--target "$T" --op "$OP" >"$tmp/out" 2>"$tmp/err"
	got=$?
	set -e
	[ "$got" -ne 0 ] && [ "$got" -lt 64 ] ||
		fail "A: $sub on a non-database exited $got: $(cat "$tmp/err")"
	grep -q "^fencecert: [A-Z_]*: " "$tmp/err" || fail "A: $sub garbage: $(cat "$tmp/err")"
	# the journal is fine, the target is the plain file: probed read-only
	recover 0 "$sub" --journal "$J" --target "sqlite:$d/other/plain.db" --op "$OP"
done
others >"$tmp/after"
cmp -s "$tmp/before" "$tmp/after" ||
	fail "A: inspect/plan wrote to a foreign file: $(diff "$tmp/before" "$tmp/after")"
[ "$(python3 -c 'import sqlite3, sys
print(sqlite3.connect(sys.argv[1]).execute("PRAGMA journal_mode").fetchone()[0])' \
	"$d/other/plain.db")" = delete ] || fail "A: the probe switched the target to WAL"

# A blank actor or reason names nobody and explains nothing: a usage error
# before anything is opened, so no audit record, and not a byte changes.
snapshot >"$tmp/before"
apply 64 4 mark-committed "   " "fence proves the commit"
stderr_has "^fencecert: USAGE: --actor must name someone"
apply 64 4 mark-committed "$(printf '\t \342\200\202\302\240')" "fence proves the commit"
stderr_has "^fencecert: USAGE: --actor must name someone"
apply 64 4 mark-committed alice "$(printf ' \t\n \r ')"
stderr_has "^fencecert: USAGE: --reason must say why"
apply 64 4 mark-committed alice "$(printf '\342\200\213\343\200\200')"
stderr_has "^fencecert: USAGE: --reason must say why"
snapshot >"$tmp/after"
cmp -s "$tmp/before" "$tmp/after" ||
	fail "A: a blank actor/reason changed files: $(diff "$tmp/before" "$tmp/after")"
[ "$(version)" -eq 4 ] || fail "A: a blank actor or reason moved the operation"

# The plan refuses the opposite of the proof, --force or not.
apply 4 4 mark-failed-pre-commit alice test --force
stderr_has "^fencecert: ILLEGAL_TRANSITION: .*does not override a proof"

# A stale --expect-version loses with RECOVERY_CONFLICT and moves nothing.
apply 8 3 mark-committed alice "stale plan"
stderr_has "^fencecert: RECOVERY_CONFLICT: "
[ "$(version)" -eq 4 ] || fail "A: a refused apply moved the operation"

# Two operators apply at once: exactly one wins, the other conflicts.
for who in alice bob; do
	(
		set +e
		"$FENCECERT" recover apply --journal "$J" --target "$T" --op "$OP" \
			--expect-version 4 --action mark-committed --actor "$who" \
			--reason "fence proves the commit" >"$tmp/race.$who.out" \
			2>"$tmp/race.$who.err"
		echo $? >"$tmp/race.$who.rc"
	) &
done
wait
codes=$(cat "$tmp/race.alice.rc" "$tmp/race.bob.rc" | sort | tr '\n' ' ')
[ "$codes" = "0 8 " ] ||
	fail "A: racing applies exited '$codes', want one 0 and one 8: $(cat "$tmp"/race.*.err)"
grep -q "^fencecert: RECOVERY_CONFLICT: " "$tmp"/race.*.err ||
	fail "A: the loser did not say RECOVERY_CONFLICT"
[ "$(version)" -eq 5 ] || fail "A: want exactly one transition"
history A-history.json

# The next attempt completes without a second mutation.
route_try 3 0
[ "$(rows)" -eq 2 ] || fail "A: the attempt after mark-committed wrote again"
cp "$d/xcom/return.json" "$tmp/A-return.json"
[ "$(version)" -eq 6 ] || fail "A: want COMPLETE at version 6"

# COMPLETE: nothing to do; apply refused, --force too, nothing written.
recover 0 plan --journal "$J" --target "$T" --op "$OP" --json
keep A-complete.json
snapshot >"$tmp/before"
apply 4 6 mark-committed alice again
stderr_has "COMPLETE: nothing to do"
apply 4 6 mark-failed-pre-commit alice again --force
snapshot >"$tmp/after"
cmp -s "$tmp/before" "$tmp/after" || fail "A: a refused apply changed files"
[ "$(version)" -eq 6 ] || fail "A: COMPLETE operation moved"

set -- "$tmp/A-inspect.json" \
	'd["entry"]["state"] == "COMMIT_UNKNOWN" and len(d["history"]) == 4' \
	'd["fence"]["answer"] == "APPLIED" and d["fence"]["epoch"] == 1' \
	'd["fence"]["rows"] == 2 and d["fence"]["intent_matches"] is True' \
	'd["lease"]["owner"] == "try2" and d["lease"]["epoch"] == 2' \
	'd["lease"]["expired"] is True' \
+ "$tmp/A-plan.json" \
	'[a["verdict"] for a in d["actions"]] == ["safe", "refused", "not-applicable", "not-applicable"]' \
	'"--action mark-committed --expect-version 4" in d["next"]' \
+ "$tmp/A-history.json" \
	'len(d) == 5 and d[-1]["from"] == "COMMIT_UNKNOWN"' \
	'd[-1]["to"] == "TARGET_COMMITTED" and d[-1]["epoch"] == 0' \
	'd[-1]["evidence"]["recovery"]["actor"] in ("alice", "bob")' \
	'd[-1]["evidence"]["recovery"]["forced"] is False' \
	'd[-1]["evidence"]["recovery"]["fence"]["answer"] == "APPLIED"' \
	'd[-1]["evidence"]["recovery"]["before"] == {"state": "COMMIT_UNKNOWN", "version": 4}' \
	'd[-1]["evidence"]["recovery"]["after"] == {"state": "TARGET_COMMITTED", "version": 5}' \
+ "$tmp/A-return.json" \
	'd["state"] == "COMPLETE" and d["mutated"] is False and d["rows_written"] == 2' \
+ "$tmp/A-complete.json" \
	'all(a["verdict"] == "refused" for a in d["actions"])' \
	'd["next"] is None'

# ---- B: fence ABSENT -------------------------------------------------------
setup absent
stopped_at before_target_commit
[ "$(rows)" -eq 0 ] || fail "B: nothing should have landed"

# Someone else's lease runs (a worker that may still write): fencing waits.
# (try 2's own 300 ms lease may still run on a slow machine: wait it out.)
i=0
until "$FENCECERT" journal lease --journal "$J" --op "$OP" --owner zombie \
	--ttl-ms 4000 >/dev/null 2>"$tmp/err"; do
	grep -q "LEASE_HELD" "$tmp/err" || fail "B: lease: $(cat "$tmp/err")"
	i=$((i + 1))
	[ "$i" -lt 50 ] || fail "B: try 2's lease never expired"
	sleep 0.1
done
recover 0 plan --journal "$J" --target "$T" --op "$OP"
grep -q "^  mark-failed-pre-commit  wait" "$tmp/out" || fail "B: plan: $(cat "$tmp/out")"
apply 7 4 mark-failed-pre-commit alice "fence absent"
stderr_has "^fencecert: LEASE_HELD: "
[ "$(version)" -eq 4 ] || fail "B: a waiting apply moved the operation"
i=0
until "$FENCECERT" recover plan --journal "$J" --target "$T" --op "$OP" |
	grep -q "^  mark-failed-pre-commit  safe"; do
	i=$((i + 1))
	[ "$i" -lt 60 ] || fail "B: the lease never expired"
	sleep 0.5
done
recover 0 plan --journal "$J" --target "$T" --op "$OP" --json
keep B-plan.json
apply 0 4 mark-failed-pre-commit alice "fence absent" --json
keep B-apply.json
# The target's fence now refuses every epoch below the one recovery took.
"$FENCECERT" target fences --target "$T" >"$tmp/B-fences.json"
sleep 1 # recovery's own lease (1 s) runs out; routes here wait only 300 ms
route_try 3 0
cp "$d/xcom/return.json" "$tmp/B-return.json"
"$FENCECERT" target rows --target "$T" >"$tmp/rows.txt"
[ "$(cat "$tmp/rows.txt")" = "k1 1
k2 1" ] || fail "B: want each row exactly once: $(cat "$tmp/rows.txt")"
# epochs: try 1 = 1, try 2 = 2, zombie = 3, recovery = 4, try 3 = 5
set -- "$@" + "$tmp/B-plan.json" \
	'd["actions"][0]["verdict"] == "refused"' \
	'd["actions"][1]["verdict"] == "safe" and d["actions"][1]["fences_first"] is True' \
	'"new lease" in d["summary"]' \
+ "$tmp/B-apply.json" \
	'd["after"]["state"] == "FAILED_PRE_COMMIT" and d["after"]["version"] == 5' \
	'd["after"]["evidence"]["recovery"]["fence"] == {"name": "sqlite", "answer": "ABSENT", "epoch": None, "fenced_epoch": 4}' \
+ "$tmp/B-fences.json" \
	'len(d) == 1 and d[0]["prepared_epoch"] == 4 and d[0]["applied_epoch"] == 0' \
+ "$tmp/B-return.json" \
	'd["mutated"] is True and d["epoch"] == 5'

# ---- C: fence UNKNOWN, forced ----------------------------------------------
setup forced
stopped_at after_target_commit
recover 0 list --journal "$J"
grep -q "^COMMIT_UNKNOWN .*$OP" "$tmp/out" || fail "C: list: $(cat "$tmp/out")"
recover 0 list --journal "$J" --json
keep C-list.json
sleep 0.4
mv "$d/tgt" "$d/tgt.away" # the target is unreachable: the probe proves nothing
recover 0 plan --journal "$J" --target "$T" --op "$OP" --json
keep C-plan.json
apply 4 4 mark-committed carol "rows checked by hand"
stderr_has "needs --force"
[ "$(version)" -eq 4 ] || fail "C: refused apply moved the operation"
apply 0 4 mark-committed carol \
	"target restored; 2 rows of op checked by hand (INC-42)" --force
stderr_has "^fencecert: warning: forcing 'mark-committed'"
history C-history.json
mv "$d/tgt.away" "$d/tgt"
route_try 3 0
[ "$(rows)" -eq 2 ] || fail "C: the attempt after a forced mark-committed wrote again"
recover 0 list --journal "$J"
grep -q "^0 stopped operations" "$tmp/out" || fail "C: list: $(cat "$tmp/out")"
set -- "$@" + "$tmp/C-plan.json" \
	'[a["verdict"] for a in d["actions"]][:2] == ["force-only", "force-only"]' \
	'd["fence"]["answer"] == "UNKNOWN" and d["fence"]["error"]' \
	'd["next"].endswith("--force")' \
+ "$tmp/C-history.json" \
	'd[-1]["evidence"]["recovery"]["forced"] is True' \
	'd[-1]["evidence"]["recovery"]["actor"] == "carol"' \
	'd[-1]["evidence"]["recovery"]["reason"] == "target restored; 2 rows of op checked by hand (INC-42)"' \
	'd[-1]["evidence"]["recovery"]["fence"]["answer"] == "UNKNOWN"' \
	'd[-1]["epoch"] == 0 and d[-1]["to"] == "TARGET_COMMITTED"' \
+ "$tmp/C-list.json" \
	'len(d) == 1 and d[0]["state"] == "COMMIT_UNKNOWN"' \
	"d[0]['operation_id'] == '$OP'" \
	'd[0]["lease"]["owner"] == "try2"'

# ---- D: a retry after purge ------------------------------------------------
setup applied # A's operation, COMPLETE
sleep 0.05
"$FENCECERT" journal purge --journal "$J" --older-than 1ms >"$tmp/D-purge.json"
set +e
FENCECERT_JOURNAL=$J FENCECERT_TARGET=$T FENCECERT_WORKLOAD=$d/workload.json \
FENCECERT_TRY_NUMBER=4 FENCECERT_XCOM_DIR=$d/xcom FENCECERT_RUN_DIR=$d/run \
	"$FENCECERT" route >/dev/null 2>"$tmp/err"
got=$?
set -e
[ "$got" -ne 0 ] || fail "D: a retry of a purged operation exited 0 (must be refused)"
stderr_has "PURGED"
[ "$(rows)" -eq 2 ] || fail "D: the retry of a purged operation changed the target"
set -- "$@" + "$tmp/D-purge.json" 'd["count"] == 1'

# Every JSON check of every scenario, in one python3.
check "$@"

echo "recover.sh: all checks passed"
