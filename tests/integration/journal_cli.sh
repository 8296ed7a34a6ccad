#!/bin/sh
# journal_cli.sh -- `fencecert journal ...` end to end on a real SQLite file:
# JSON on stdout, "fencecert: FAMILY: message" on stderr, documented exit
# codes.  Uses $FENCECERT (set by tests/run-all).  JSON checks are Python
# expressions over `d`, collected as the script runs and evaluated by one
# python3 process at the end (python3 starts slowly on a loaded machine).
set -eu

FENCECERT=${FENCECERT:-$PWD/${BUILD:-build}/fencecert}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/fc-journal-cli.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
J="sqlite:$tmp/journal.db"
OP=sha256:1111111111111111111111111111111111111111111111111111111111111111
INTENT=sha256:2222222222222222222222222222222222222222222222222222222222222222
OTHER=sha256:3333333333333333333333333333333333333333333333333333333333333333

fail() {
	echo "FAIL: $*" >&2
	exit 1
}

# run EXPECTED_EXIT ARGS... : run fencecert journal ARGS, keep stdout in
# $tmp/out (and a numbered copy for the JSON checks) and stderr in
# $tmp/err, check the exit status.
runs=0
run() {
	want=$1
	shift
	set +e
	"$FENCECERT" journal "$@" >"$tmp/out" 2>"$tmp/err"
	got=$?
	set -e
	[ "$got" -eq "$want" ] ||
		fail "journal $*: exit $got, want $want; stderr: $(cat "$tmp/err")"
	runs=$((runs + 1))
	cp "$tmp/out" "$tmp/out.$runs"
	echo "journal $*" >"$tmp/cmd.$runs"
}

# check PYTHON_EXPR : a check on `d`, the JSON printed by the last run.
: >"$tmp/checks"
check() {
	printf '%s\t%s\n' "$runs" "$1" >>"$tmp/checks"
}

check_all() {
	python3 - "$tmp" <<'EOF'
import json, os, sys
tmp = sys.argv[1]
checks = open(os.path.join(tmp, "checks")).read().splitlines()
failed = 0
for line in checks:
    n, expr = line.split("\t", 1)
    cmd = open(os.path.join(tmp, "cmd." + n)).read().strip()
    try:
        d = json.load(open(os.path.join(tmp, "out." + n)))
        ok = eval(expr)
    except Exception as e:
        ok, d = False, "%s: %s" % (type(e).__name__, e)
    if not ok:
        failed += 1
        print("FAIL: %s\n  check: %s\n  json: %s" % (cmd, expr, d),
              file=sys.stderr)
print("%d JSON checks, %d failed" % (len(checks), failed))
sys.exit(1 if failed else 0)
EOF
}

# stderr_has FAMILY : the last run printed exactly one "fencecert: FAMILY:"
# line and nothing on stdout.
stderr_has() {
	grep -q "^fencecert: $1: " "$tmp/err" || fail "stderr lacks '$1': $(cat "$tmp/err")"
	[ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "stderr has extra lines: $(cat "$tmp/err")"
	[ ! -s "$tmp/out" ] || fail "stdout not empty on error: $(cat "$tmp/out")"
}

# init, twice: idempotent.
run 0 init --journal "$J"
check 'd == {"schema_version": 1}'
run 0 init --journal "$J"
check 'd["schema_version"] == 1'

# create; the same intent again returns the entry; another intent is exit 5.
run 0 create --journal "$J" --op "$OP" --intent "$INTENT" --meta '{"dag": "load", "partition": 7}'
check 'd["created"] is True and d["state"] == "PREPARING" and d["version"] == 1'
check 'd["operation_id"] == "'"$OP"'" and d["intent_digest"] == "'"$INTENT"'"'
check 'd["meta"] == {"dag": "load", "partition": 7} and d["evidence"] == {}'
check 'd["lease_epoch"] == 0 and d["lease_owner"] is None and d["updated_at"] == d["created_at"] > 0'
run 0 create --journal "$J" --op "$OP" --intent "$INTENT"
check 'd["created"] is False and d["version"] == 1 and d["meta"]["partition"] == 7'
run 5 create --journal "$J" --op "$OP" --intent "$OTHER"
stderr_has INTENT_CONFLICT
run 0 get --journal "$J" --op "$OP"
check 'd["intent_digest"] == "'"$INTENT"'" and d["version"] == 1'

# lease: epoch 1 for w1; w2 is refused with exit 7 while it runs.
run 0 lease --journal "$J" --op "$OP" --owner w1 --ttl-ms 60000
check 'd["lease_epoch"] == 1 and d["lease_owner"] == "w1" and d["lease_expires_at"] > d["created_at"]'
run 7 lease --journal "$J" --op "$OP" --owner w2 --ttl-ms 60000
stderr_has LEASE_HELD

# cas ok (with the epoch); a stale version is exit 3; a stale epoch exit 6;
# an illegal edge exit 4.
run 0 cas --journal "$J" --op "$OP" --expect-version 1 --to PREPARED --from PREPARING --epoch 1 --evidence '{"fence": "prepared"}'
check 'd["state"] == "PREPARED" and d["version"] == 2 and d["evidence"] == {"fence": "prepared"}'
run 3 cas --journal "$J" --op "$OP" --expect-version 1 --to PREPARED
stderr_has CAS_CONFLICT
run 3 cas --journal "$J" --op "$OP" --expect-version 2 --to COMMITTING --from PREPARING
stderr_has CAS_CONFLICT
run 6 cas --journal "$J" --op "$OP" --expect-version 2 --to COMMITTING --epoch 7
stderr_has LEASE_LOST
run 4 cas --journal "$J" --op "$OP" --expect-version 2 --to COMPLETE
stderr_has ILLEGAL_TRANSITION
run 0 get --journal "$J" --op "$OP"
check 'd["state"] == "PREPARED" and d["version"] == 2'
run 0 cas --journal "$J" --op "$OP" --expect-version 2 --to COMMITTING --epoch 1
run 0 cas --journal "$J" --op "$OP" --expect-version 3 --to TARGET_COMMITTED --epoch 1
run 0 cas --journal "$J" --op "$OP" --expect-version 4 --to COMPLETE --epoch 1 --evidence '{"rows": 3}'
check 'd["state"] == "COMPLETE" and d["version"] == 5'

# history: one row per version, a chain from NONE.
run 0 history --journal "$J" --op "$OP"
check 'len(d) == 5 and [r["version"] for r in d] == [1, 2, 3, 4, 5]'
check 'd[0]["from"] == "NONE" and d[0]["to"] == "PREPARING" and d[-1]["to"] == "COMPLETE"'
check 'all(d[i]["from"] == d[i - 1]["to"] for i in range(1, len(d)))'
check 'd[1]["epoch"] == 1 and d[1]["evidence"] == {"fence": "prepared"} and d[4]["evidence"] == {"rows": 3}'
check 'all(set(r) >= {"version", "from", "to", "epoch", "at", "evidence"} for r in d)'

# list, with and without --state.
run 0 create --journal "$J" --op op-two --intent "$INTENT"
run 0 list --journal "$J"
check 'len(d) == 2'
run 0 list --journal "$J" --state COMPLETE
check '[e["operation_id"] for e in d] == ["'"$OP"'"]'
run 0 list --journal "$J" --state PREPARING,PREPARED
check '[e["operation_id"] for e in d] == ["op-two"]'
run 0 list --journal "$J" --state COMMIT_UNKNOWN
check 'd == []'

# purge: a long window keeps everything; 0s removes only the COMPLETE one.
run 0 purge --journal "$J" --older-than 1d
check 'd["removed"] == [] and d["count"] == 0'
sleep 1
run 0 purge --journal "$J" --older-than 0s
check 'd["removed"] == ["'"$OP"'"] and d["count"] == 1'
run 2 get --journal "$J" --op "$OP"
stderr_has NOT_FOUND
run 2 history --journal "$J" --op "$OP"
run 0 get --journal "$J" --op op-two
check 'd["state"] == "PREPARING"'

# migrate on a current journal.
run 0 migrate --journal "$J"
check 'd == {"schema_version": 1, "from": 1}'

# FENCECERT_JOURNAL stands in for --journal.
FENCECERT_JOURNAL="$J" run 0 get --op op-two
check 'd["operation_id"] == "op-two"'

# --help on every subcommand: exit 0, usage and exit codes on stdout.
for sub in init create get lease cas history list purge migrate; do
	run 0 "$sub" --help
	grep -q "^usage: fencecert journal $sub" "$tmp/out" || fail "$sub --help: no usage line"
	grep -q "exit status" "$tmp/out" || fail "$sub --help: no exit codes"
done
run 0 --help
grep -q purge "$tmp/out" || fail "journal --help does not list subcommands"

# usage errors are exit 64 with one USAGE line.
run 64 get --journal "$J" --op x --bogus
stderr_has USAGE
run 64 get --journal "$J"
stderr_has USAGE
run 64 cas --journal "$J" --op x --expect-version one --to PREPARED
stderr_has USAGE
run 64 cas --journal "$J" --op x --expect-version 1 --to NOT_A_STATE
stderr_has USAGE
run 64 get --journal "$J" --op x --to PREPARED
stderr_has USAGE
run 64 create --journal "$J" --op bad-meta --intent "$INTENT" --meta '[1, 2]'
stderr_has USAGE
run 2 get --journal "$J" --op bad-meta
run 64 frobnicate
stderr_has USAGE
run 64 get --journal "mysql://u:topsecret@h/db" --op x
stderr_has USAGE
if grep -q topsecret "$tmp/err"; then fail "password printed: $(cat "$tmp/err")"; fi

# an unreachable journal is exit 69 (a verb that may create the file
# cannot); a read verb creates nothing, so a journal that does not exist is
# NOT_FOUND (exit 2), and no directory or file appears.
run 69 init --journal "sqlite:$tmp/no/such/dir/j.db"
stderr_has JOURNAL_UNAVAILABLE
run 69 create --journal "sqlite:$tmp/no/such/dir/j.db" --op x --intent "$INTENT"
stderr_has JOURNAL_UNAVAILABLE
for sub in "get --op x" list "history --op x"; do
	# shellcheck disable=SC2086
	run 2 $sub --journal "sqlite:$tmp/nope.db"
	stderr_has NOT_FOUND
	grep -q "journal '$tmp/nope.db' does not exist" "$tmp/err" ||
		fail "journal $sub: unclear: $(cat "$tmp/err")"
done
[ ! -e "$tmp/nope.db" ] && [ ! -e "$tmp/no" ] || fail "a read verb created a file"

# the read verbs open read-only: an SQLite file that is not a journal is
# refused, its bytes as they were (no journal tables, no WAL switch);
# tests/integration/read_verbs.sh does this for every read verb.
python3 -c 'import sqlite3, sys
c = sqlite3.connect(sys.argv[1]); c.execute("CREATE TABLE t(x)")
c.execute("INSERT INTO t VALUES (1)"); c.commit()' "$tmp/other.db"
sum=$(sha256sum <"$tmp/other.db")
for sub in "get --op x" list "history --op x"; do
	# shellcheck disable=SC2086
	run 69 $sub --journal "sqlite:$tmp/other.db"
	stderr_has JOURNAL_UNAVAILABLE
	[ "$(sha256sum <"$tmp/other.db")" = "$sum" ] || fail "journal $sub changed other.db"
done
[ "$(ls "$tmp" | grep -c '^other.db')" -eq 1 ] || fail "other.db gained -wal/-shm: $(ls "$tmp")"

check_all || fail "JSON checks"
echo "journal_cli.sh: ok"
