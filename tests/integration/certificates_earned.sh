#!/bin/sh
# certificates_earned.sh -- the verdict depends only on what a route does
# (SPEC section 9, "Certificates are earned"; docs/harness.md), shown on
# routes fencecert did not write (tests/data/routes/):
#
#   1. operations as the route names them: a Python route that keeps its
#      journal through `fencecert journal` under ids of its own encoding is
#      certified-automatic; the same route with the try number in its ids
#      is rejected by stable-identity, although its target (read through a
#      de-duplicating query) shows no duplicate;
#   2. routes with no journal: a sqlite3-shell loader (INSERT OR IGNORE on
#      the key, `journal: none`) is certified-automatic under syscall kills
#      on the target, the journal invariants listed as not observable; the
#      plain `.import` loader is rejected for duplicates;
#   3. no certificate for a window no fault reached: the C route under
#      faults that only ever stop it after its commit is unverified, with
#      the reason, in one run and in a merge of its shards;
#   4. fail-closed only where a fault made the outcome unprovable: `exit
#      100` and `false` under clean, lose_xcom and lose_pod scenarios are
#      rejected (completes), certify exits 1 and the gate refuses them.
#
# Each of these was judged otherwise before the change that added this
# test (certified-fail-closed, or certified-automatic for 3).
set -eu
BUILD=${BUILD:-build}
FENCECERT=${FENCECERT:-$PWD/$BUILD/fencecert}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/fc-earned.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
ROUTES=$PWD/tests/data/routes
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3

fail() {
	echo "FAIL: $*" >&2
	exit 1
}

# certify STATUS SUITE OUT [ARGS...]
certify() {
	want=$1 suite=$2 out=$3
	shift 3
	set +e
	"$FENCECERT" certify "$suite" --full-report --out "$out" --quiet --format json "$@" \
		>"$tmp/stdout" 2>"$tmp/stderr"
	got=$?
	set -e
	cat "$tmp/stdout"
	[ "$got" -eq "$want" ] ||
		fail "certify $suite: exit $got, want $want: $(cat "$tmp/stderr")"
}

command -v sqlite3 >/dev/null || fail "the sqlite3 shell is not installed"
seccomp=1
grep -qw user_notif /proc/sys/kernel/seccomp/actions_avail 2>/dev/null ||
	seccomp=0

# --- 1 and 2: routes fencecert did not write ---------------------------------
cat >"$tmp/outside.yaml" <<EOF
version: 1
suite: earned-outside
routes:
  - name: py-own-ids
    command: [$PY, $ROUTES/own_ids.py]
    journal: "sqlite:{dir}/journal.db"
    target: "sqlite:{dir}/target.db"
    observe:
      sql: "SELECT row_key, COUNT(*) FROM events GROUP BY row_key"
    expect: certified-automatic
  - name: py-id-per-try
    command: [$PY, $ROUTES/own_ids.py]
    env: {OWN_IDS: per-try}
    journal: "sqlite:{dir}/journal.db"
    target: "sqlite:{dir}/target.db"
    observe:
      # a target that de-duplicates on read: no duplicate is ever seen
      sql: "SELECT row_key, 1 FROM events GROUP BY row_key"
    expect: rejected
  - name: sqlite3-insert-ignore
    command: [sh, $ROUTES/sqlite_insert_ignore.sh]
    journal: none
    target: "sqlite:{dir}/target.db"
    observe: &sql
      sql: "SELECT row_key, COUNT(*) FROM events GROUP BY row_key"
    expect: certified-automatic
  - name: sqlite3-import
    command: [sh, $ROUTES/sqlite_import.sh]
    journal: "sqlite:{dir}/journal.db"
    target: "sqlite:{dir}/target.db"
    observe: *sql
    expect: rejected
workload: {operations: 1, rows_per_operation: 5, seed: 1}
orchestrator: {retries: 2, zombie_delay_ms: 5, lease_ttl_ms: 5, attempt_timeout_ms: 20000}
scenarios:
  - name: clean
  - name: kill-after-target-commit
    routes: &py [py-own-ids, py-id-per-try]
    faults:
      - {attempt: 1, failpoint: after_target_commit, action: kill}
  - name: zombie-committing
    routes: *py
    faults:
      - {attempt: 1, failpoint: after_committing, action: pause,
         resume: after_next_attempt}
  # no failpoint in a shell loader: its faults are syscalls on the target
  - name: every-target-sync
    routes: &sh [sqlite3-insert-ignore, sqlite3-import]
    explore:
      syscalls: [fdatasync]
      actions: [kill_before, kill_after]
      paths: ["{dir}/target*"]
EOF
if [ "$seccomp" = 0 ]; then
	echo "skipped: the shell loaders' part (no seccomp user notification)"
	sed -i -e 's/^  - name: sqlite3-insert-ignore$/  - name: sqlite3-insert-ignore-unused/' \
		"$tmp/outside.yaml"
fi
certify 0 "$tmp/outside.yaml" "$tmp/outside"
"$PY" - "$tmp/outside/report.json" "$seccomp" <<'PY'
import json, sys
rep = json.load(open(sys.argv[1]))
routes = {r["name"]: r for r in rep["routes"]}
bad = []
def need(cond, what):
    if not cond:
        bad.append(what)

# 1. the ids the route used are the operation's; the canonical id is a hint
r = routes["py-own-ids"]
need(r["verdict"] == "certified-automatic" and not r["violations"],
     f"py-own-ids: {r['verdict']} {[v['detail'] for v in r['violations']]}")
for s in r["schedules"]:
    op = s["operations"][0]
    need(op["operation_id"].startswith("myloader:") and
         op["canonical_operation_id"].startswith("sha256:") and
         op["journal"] and op["journal"]["state"] == "COMPLETE" and
         len(op["journal_entries"]) == 1,
         f"py-own-ids {s['schedule']}: {op['operation_id']} {op['journal']}")
    need(s["outcome"] == "converged", f"py-own-ids {s['schedule']}: {s['outcome_detail']}")
r = routes["py-id-per-try"]
names = {v["name"] for v in r["violations"]}
# (its retries also skip the reconcile its first entry asks for)
need(r["verdict"] == "rejected" and "stable-identity" in names and
     "no-duplicate" not in names, f"py-id-per-try: {r['verdict']} {names}")
v = [v for v in r["violations"] if v["scenario"] == "kill-after-target-commit"
     and v["name"] == "stable-identity"]
need(v and v[0]["operation_id"].startswith("myloader:") and
     v[0]["detail"].count("'myloader:") == 2 and v[0]["operation"] == 1,
     f"py-id-per-try: the violation names both ids: {v}")

# 2. no journal: judged on the target and the task
if sys.argv[2] == "1":
    r = routes["sqlite3-insert-ignore"]
    need(r["verdict"] == "certified-automatic" and not r["violations"],
         f"insert-ignore: {r['verdict']} {r['coverage']['unverified']}")
    unobs = {u["name"]: u["why"] for u in r["coverage"]["invariants_not_observable"]}
    for n in ("legal-history", "evidence-agrees", "fail-closed",
              "reconcile-before-io", "stable-identity"):
        need(n in unobs and "keeps no journal" in unobs[n],
             f"insert-ignore: {n} not listed as unobservable: {unobs}")
    stops = r["coverage"]["retried_stops"]
    need(stops["before_mutation"] > 0 and stops["after_mutation"] > 0,
         f"insert-ignore: windows {stops}")
    r = routes["sqlite3-import"]
    need(r["verdict"] == "rejected" and
         {v["name"] for v in r["violations"]} == {"no-duplicate"},
         f"import: {r['verdict']} {[v['name'] for v in r['violations']]}")
for b in bad:
    print("FAIL:", b)
sys.exit(1 if bad else 0)
PY
echo "ok: routes with their own ids, and without a journal, judged by what they do"

# --- 3: no certificate for a window no fault reached -------------------------
cat >"$tmp/window.yaml" <<EOF
version: 1
suite: earned-window
routes:
  - name: c-sqlite
    command: [$FENCECERT, route]
    journal: "sqlite:{dir}/journal.db"
    target: "sqlite:{dir}/target.db"
    observe:
      sql: "SELECT row_key, COUNT(*) FROM events GROUP BY row_key"
    expect: certified-automatic
workload: {operations: 1, rows_per_operation: 3, seed: 1}
orchestrator: {retries: 2, zombie_delay_ms: 5, lease_ttl_ms: 5, attempt_timeout_ms: 20000}
scenarios:
  - name: clean
  - name: kill-after-target-commit
    faults:
      - {attempt: 1, failpoint: after_target_commit, action: kill}
  - name: xcom-lost
    faults:
      - {attempt: 1, failpoint: after_evidence, action: kill}
      - {after_attempt: 1, action: lose_xcom}
  - name: kill-before-commit
    faults:
      - {attempt: 1, failpoint: before_target_commit, action: kill}
EOF
# without the last scenario no try was stopped before the commit
certify 3 "$tmp/window.yaml" "$tmp/w1" --only clean \
	--only kill-after-target-commit --only xcom-lost
for k in 1 2; do  # (a shard exits 1 only for a violation)
	certify 0 "$tmp/window.yaml" "$tmp/ws$k" --only clean \
		--only kill-after-target-commit --only xcom-lost --shard "$k/2"
done
"$FENCECERT" merge --unsigned "$tmp/merged.json" "$tmp/ws1/report.json" \
	"$tmp/ws2/report.json" || fail "merge of the window shards"
certify 0 "$tmp/window.yaml" "$tmp/w2"
# shard 1 (clean, xcom-lost) lacks the stop before the commit that shard 2
# has: its note must not survive the merge
for k in 1 2; do
	certify 0 "$tmp/window.yaml" "$tmp/wf$k" --shard "$k/2"
done
"$FENCECERT" merge --unsigned "$tmp/merged-full.json" "$tmp/wf1/report.json" \
	"$tmp/wf2/report.json" || fail "merge of the full shards"
"$PY" - "$tmp/wf1/report.json" "$tmp/merged-full.json" <<'PY'
import json, sys
one = json.load(open(sys.argv[1]))["routes"][0]
merged = json.load(open(sys.argv[2]))["routes"][0]
if one["verdict"] != "unverified" or not one["coverage"]["unverified"]:
    sys.exit(f"FAIL: shard 1 was meant to lack a window: {one['verdict']}")
if merged["verdict"] != "certified-automatic" or merged["coverage"]["unverified"]:
    sys.exit(f"FAIL: merged {merged['verdict']} {merged['coverage']['unverified']}")
PY
"$PY" - "$tmp/w1/report.json" "$tmp/merged.json" "$tmp/w2/report.json" <<'PY'
import json, sys
reason = ("no schedule stopped a try before its target mutation: "
          "no-loss was never challenged")
bad = []
for path in sys.argv[1:3]:
    r = json.load(open(path))["routes"][0]
    c = r["coverage"]
    if not (r["verdict"] == "unverified" and reason in c["unverified"] and
            c["retried_stops"]["after_mutation"] == 2 and
            c["retried_stops"]["before_mutation"] == 0 and
            not any("after its target mutation" in n for n in c["unverified"])):
        bad.append(f"{path}: {r['verdict']} {c['unverified']} {c['retried_stops']}")
r = json.load(open(sys.argv[3]))["routes"][0]
if r["verdict"] != "certified-automatic" or r["coverage"]["unverified"]:
    bad.append(f"with a kill before the commit: {r['verdict']} {r['coverage']['unverified']}")
for b in bad:
    print("FAIL:", b)
sys.exit(1 if bad else 0)
PY
echo "ok: a window no fault reached is unverified, in a run and in a merge"

# --- 4: a route that does not do its work is not fail-closed -----------------
cat >"$tmp/lazy.yaml" <<EOF
version: 1
suite: earned-lazy
routes:
  - name: exit-100
    command: [sh, -c, "exit 100"]
    journal: "sqlite:{dir}/journal.db"
    target: "sqlite:{dir}/target.db"
    observe: &sql
      sql: "SELECT row_key, COUNT(*) FROM events GROUP BY row_key"
  - name: false
    command: ["false"]
    journal: "sqlite:{dir}/journal.db"
    target: "sqlite:{dir}/target.db"
    observe: *sql
workload: {operations: 1, rows_per_operation: 3, seed: 1}
orchestrator: {retries: 2, zombie_delay_ms: 5, lease_ttl_ms: 5, attempt_timeout_ms: 20000}
scenarios:
  - name: clean
  - name: xcom-lost
    faults:
      - {after_attempt: 1, action: lose_xcom}
  - name: pod-lost
    faults:
      - {after_attempt: 1, action: lose_pod}
EOF
certify 1 "$tmp/lazy.yaml" "$tmp/lazy"
"$PY" - "$tmp/lazy/report.json" <<'PY'
import json, sys
bad = []
for r in json.load(open(sys.argv[1]))["routes"]:
    names = {v["name"] for v in r["violations"]}
    scen = {v["scenario"] for v in r["violations"]}
    if (r["verdict"] != "rejected" or names != {"completes"} or
            scen != {"clean", "xcom-lost", "pod-lost"} or r["expectation_met"]):
        bad.append(f"{r['name']}: {r['verdict']} {names} {scen}")
for b in bad:
    print("FAIL:", b)
sys.exit(1 if bad else 0)
PY
for route in exit-100 false; do
	set +e
	"$FENCECERT" gate "$tmp/lazy/report.json" --route "$route" \
		>"$tmp/gate.out" 2>"$tmp/gate.err"
	rc=$?
	set -e
	[ "$rc" -eq 1 ] || fail "gate passed '$route' (exit $rc)"
	grep -q "route '$route' is rejected" "$tmp/gate.err" ||
		fail "gate: $(cat "$tmp/gate.err")"
done
echo "ok: exit 100 and false without a fault to blame are rejected; the gate refuses them"
