#!/bin/sh
# crash_states.sh -- crash-state exploration (harness/certify/
# crash_states.h) judges exactly what re-executing every schedule judges,
# and reports a route that is not deterministic given its durable state.
#
# (a) Verdict equivalence.  Per route the verdict, and per schedule string
#     the outcome and the sorted violated invariants, must agree between
#       - scenarios/default.yaml recorded (the default), --no-dedup and
#         --reexecute (the C routes on SQLite and on files, the journal-
#         less naive control and split-fence: the shell and Python
#         examples take minutes here, crash_states_shell.sh covers the
#         shell one);
#       - scenarios/exhaustive.yaml's every-failpoint for c-sqlite,
#         recorded and --reexecute -- and the recorded run really seeded
#         and inherited schedules and ran fewer attempts (so a regression
#         that silently re-executes everything fails here);
#       - scenarios/syscalls.yaml (c-file and naive): its explorations
#         are recorded (their kill schedules seeded from the discovery's
#         syscall states), and --reexecute changes no verdict.
# (b) The finding.  A route whose retry depends on a counter outside the
#     schedule's files (odd retries run the naive control, which writes
#     the rows again; even ones the certified route) is run with
#     --recheck 100 --jobs 1 --workers 1 (so which retry is odd is fixed): some
#     rechecked schedule must carry "nondeterministic", the route's
#     exploration must count it, and the route must not be certified and
#     must say "not deterministic".  The certified route beside it, under
#     the same rechecks, must show no such finding.
#
# The comment above each check says which wrong behaviour it catches.
set -eu
BUILD=${BUILD:-build}
FENCECERT=${FENCECERT:-$PWD/$BUILD/fencecert}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/fc-crash-states.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/lib/expect.sh"
check="python3 $(dirname "$0")/crash_states_check.py"

for s in default exhaustive syscalls; do
	sed "s#build/fencecert#$FENCECERT#g" "scenarios/$s.yaml" >"$tmp/$s.yaml"
done

# run NAME STATUS SUITE ARGS...: certify SUITE into $tmp/NAME, expecting
# exit STATUS
run() {
	name=$1 status=$2 suite=$3
	shift 3
	start=$(date +%s)
	expect "$status" "$FENCECERT" certify "$tmp/$suite.yaml" --full-report \
		--format json --out "$tmp/$name" --quiet "$@"
	echo "$name: $(($(date +%s) - start)) s"
}

# --- (a) default.yaml three ways ------------------------------------------------
routes="--route c-sqlite --route c-file --route naive --route split-fence"
# shellcheck disable=SC2086
run default-rec 0 default $routes --jobs 2
# shellcheck disable=SC2086
run default-nodedup 0 default $routes --jobs 2 --no-dedup
# shellcheck disable=SC2086
run default-reexec 0 default $routes --jobs 2 --reexecute
# Catches a seeded or inherited schedule judged otherwise than when run
# whole (a restored state unlike a kill's, a result inherited from
# another experiment, a seeded trace that loses the retries' failpoints).
$check same "$tmp/default-reexec/report.json" "$tmp/default-rec/report.json" \
	"$tmp/default-nodedup/report.json" || fail "default.yaml: the three modes disagree"
# Catches the modes not taking effect: the failpoint explorations must be
# recorded by default and with --no-dedup, and --reexecute re-executes
# them all.
$check modes "$tmp/default-rec/report.json" recorded every-failpoint random ||
	fail "default.yaml: explorations not recorded"
$check modes "$tmp/default-nodedup/report.json" recorded every-failpoint random ||
	fail "default.yaml --no-dedup: explorations not recorded"
$check modes "$tmp/default-reexec/report.json" re-executed ||
	fail "default.yaml --reexecute: something was not re-executed"
python3 - "$tmp/default-rec/report.json" "$tmp/default-nodedup/report.json" \
	"$tmp/default-reexec/report.json" <<'PY' || fail "default.yaml: seeding/dedup counts wrong"
import json, sys
rec, nodedup, reexec = (json.load(open(p)) for p in sys.argv[1:])
bad = []
def expl(rep):
    return [(rt["name"], e) for rt in rep["routes"]
            for e in rt["coverage"]["exploration"]]
# Catches recorded mode that seeds nothing (every schedule run whole).
if sum(e["seeded"] for _, e in expl(rec)) == 0:
    bad.append("recorded: no schedule was seeded")
# Catches --no-dedup that still inherits, or that stops seeding.
for name, e in expl(nodedup):
    if e["inherited"]:
        bad.append(f"--no-dedup: {name} {e['scenario']}: {e['inherited']} inherited")
if sum(e["seeded"] for _, e in expl(nodedup)) == 0:
    bad.append("--no-dedup: no schedule was seeded")
# Catches --reexecute that still seeds, and a why that is not the flag.
for name, e in expl(reexec):
    if e["seeded"] or e["inherited"] or e.get("why") != "--reexecute":
        bad.append(f"--reexecute: {name} {e['scenario']}: {e}")
for b in bad:
    print("FAIL:", b)
sys.exit(1 if bad else 0)
PY
ok "default.yaml: recorded, --no-dedup and --reexecute agree on every verdict and schedule"

# --- (a) exhaustive every-failpoint, c-sqlite ---------------------------------
run exh-rec 0 exhaustive --route c-sqlite --only every-failpoint --jobs 2
run exh-reexec 0 exhaustive --route c-sqlite --only every-failpoint --jobs 2 --reexecute
$check same "$tmp/exh-reexec/report.json" "$tmp/exh-rec/report.json" ||
	fail "exhaustive every-failpoint: recorded and --reexecute disagree"
$check modes "$tmp/exh-rec/report.json" recorded every-failpoint ||
	fail "exhaustive every-failpoint: not recorded"
python3 - "$tmp/exh-rec/report.json" "$tmp/exh-reexec/report.json" <<'PY' || fail "exhaustive every-failpoint: the recorded run did not seed, inherit and save attempts"
import json, sys
rec, reexec = ({e["scenario"]: e for e in json.load(open(p))["routes"][0]
                ["coverage"]["exploration"]}["every-failpoint"]
               for p in sys.argv[1:])
print("recorded:", rec)
print("re-executed:", reexec)
# Catches a regression that silently re-executes everything (or never
# dedups): seeded and inherited schedules, fewer attempts run.  And the
# retry wave back on its recovery-path guess: try 2 must be explored after
# every try-1 kill (20 failpoints, each x kill/pause/fail in try 1 and in
# the try 2 after every kill: far more than the 367 schedules the guess
# made), in both modes.
ok = (rec["seeded"] > 0 and rec["inherited"] > 0 and
      rec["attempts_run"] < reexec["attempts_run"] and
      rec["schedules"] == reexec["schedules"] and
      rec.get("retry_wave") == reexec.get("retry_wave") == "every kill" and
      rec["schedules"] > 367)
sys.exit(0 if ok else 1)
PY
ok "exhaustive.yaml every-failpoint (c-sqlite): recorded agrees with --reexecute, with fewer attempts"

# --- (a) a full state store: no state recorded, every schedule run whole ----
# Catches a refused state turned into trouble (the schedules unverified
# instead of re-executed), a schedule seeded from a state that was never
# stored, and a report that hides the refusals.
run exh-full 0 exhaustive --route c-sqlite --only every-failpoint --jobs 2 \
	--state-store-max 1 --format json,md
$check same "$tmp/exh-reexec/report.json" "$tmp/exh-full/report.json" ||
	fail "a full state store changed verdicts"
python3 - "$tmp/exh-full/report.json" "$tmp/exh-reexec/report.json" <<'PY' || fail "a full state store: refusals not reported, or schedules still seeded"
import json, sys
full, reexec = ({e["scenario"]: e for e in json.load(open(p))["routes"][0]
                 ["coverage"]["exploration"]}["every-failpoint"]
                for p in sys.argv[1:])
print("store full:", full)
ok = (full["states_refused"] > 0 and "limit" in full["refused_why"] and
      full["seeded"] == 0 and full["inherited"] == 0 and
      full["states_recorded"] == 0 and
      full["attempts_run"] == reexec["attempts_run"])
sys.exit(0 if ok else 1)
PY
grep -q "state(s) not recorded" "$tmp/exh-full/summary.md" ||
	fail "a full state store: summary.md does not say so"
expect 2 "$FENCECERT" certify "$tmp/exhaustive.yaml" --state-store-max 10X \
	--out "$tmp/bad-size"
ok "a full state store (--state-store-max 1): nothing recorded, every schedule run whole, same verdicts, refusals reported"

# --- (a) a finished scenario's states go ----------------------------------
# c-sqlite's every-failpoint stores nearly 3 MB of states (2.85 MB is too
# little: the journal's WAL as the killed try left it, no reader of ours
# checkpoints it), random over 1 MB more; under a 4 MB limit both are
# recorded whole only if the first one's states are removed when it
# finishes.  --keep keeps them (the schedule
# dirs and the states stay for a look), so the second one then meets the
# limit: that run shows the check can fail.  --jobs 1 --workers 1 runs
# the two scenarios one after the other.
# Catches a store that is never pruned (a long run recording less and less)
# and a pruned store whose bytes are not given back to the limit.
mkdir "$tmp/keep"
run prune-on 0 exhaustive --route c-sqlite --only every-failpoint --only random \
	--jobs 1 --workers 1 --state-store-max 4M
run prune-keep 0 exhaustive --route c-sqlite --only every-failpoint --only random \
	--jobs 1 --workers 1 --state-store-max 4M --keep --work-dir "$tmp/keep"
python3 - "$tmp/prune-on/report.json" "$tmp/prune-keep/report.json" <<'PY' || fail "finished scenarios' states are not removed (or their bytes not given back)"
import json, sys
on, keep = ({e["scenario"]: e for e in json.load(open(p))["routes"][0]
             ["coverage"]["exploration"]} for p in sys.argv[1:])
print("pruned:", {k: (e["seeded"], e.get("states_refused", 0)) for k, e in on.items()})
print("--keep:", {k: (e["seeded"], e.get("states_refused", 0)) for k, e in keep.items()})
ok = (all(e.get("states_refused", 0) == 0 and e["seeded"] > 0 for e in on.values())
      and keep["random"].get("states_refused", 0) > 0)
sys.exit(0 if ok else 1)
PY
ok "a finished scenario's states are removed and their bytes given back (under --keep they stay)"

# --- (a) syscalls.yaml: recorded discovery, same verdicts -----------------
if grep -qw user_notif /proc/sys/kernel/seccomp/actions_avail 2>/dev/null; then
	run sys-rec 0 syscalls --route c-file --route naive --jobs 2
	run sys-reexec 0 syscalls --route c-file --route naive --jobs 2 --reexecute
	# Catches syscall explorations silently re-executed: their discovery
	# is recorded at each explored call, so their kill schedules start
	# from try 2 (the fixed `clean` scenario re-executes, with its why).
	$check modes "$tmp/sys-rec/report.json" recorded every-sync every-target-write ||
		fail "syscalls.yaml: explorations not recorded"
	python3 - "$tmp/sys-rec/report.json" <<'PY' || fail "syscalls.yaml: nothing was seeded from a recorded syscall"
import json, sys
n = sum(e["seeded"] for rt in json.load(open(sys.argv[1]))["routes"]
        for e in rt["coverage"]["exploration"] if e["mode"] == "recorded")
sys.exit(0 if n > 0 else 1)
PY
	$check same "$tmp/sys-reexec/report.json" "$tmp/sys-rec/report.json" ||
		fail "syscalls.yaml: recorded and --reexecute disagree on a verdict or an outcome"
	ok "syscalls.yaml: recorded (seeded from syscall states), same verdicts as --reexecute"
else
	echo "skipped syscalls.yaml: no seccomp user notification on this kernel"
fi

# --- (b) a route that is not deterministic given its durable state --------------
# Its retries alternate: odd ones (counted in $tmp/flips, outside the
# schedule's files, which the harness neither snapshots nor restores)
# run the naive control, even ones the certified route.  Try 1 is always
# the certified route, so every recorded state is one it leaves.
cat >"$tmp/flip.sh" <<EOF
#!/bin/sh
if [ "\$FENCECERT_TRY_NUMBER" -ge 2 ]; then
	n=\$(cat "\$FLIP_COUNTER" 2>/dev/null || echo 0)
	n=\$((n + 1))
	echo "\$n" >"\$FLIP_COUNTER"
	[ \$((n % 2)) -eq 0 ] || exec "$FENCECERT" route --variant naive
fi
exec "$FENCECERT" route
EOF
mkdir -p "$tmp/flips"
cat >"$tmp/flip.yaml" <<EOF
version: 1
suite: flip
routes:
  - name: flip
    command: [sh, "$tmp/flip.sh"]
    journal: "sqlite:{dir}/journal.db"
    target: "sqlite:{dir}/target.db"
    observe: &sql
      sql: "SELECT row_key, COUNT(*) FROM events GROUP BY row_key"
    env: {FLIP_COUNTER: "$tmp/flips/n"}
    writable: ["$tmp/flips"]  # sandboxed: its counter outlives the attempt
    expect: rejected
  - name: steady
    command: [$FENCECERT, route]
    journal: "sqlite:{dir}/journal.db"
    target: "sqlite:{dir}/target.db"
    observe: *sql
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
  # after_target_commit .. before_target_committed leave one state: a
  # representative and three schedules judged from the same state
  - name: after-commit
    explore:
      failpoints: [after_committing, after_target_commit, before_probe,
                   after_probe, before_target_committed]
      actions: [kill]
EOF
# exit 0 or 1: flip must not be certified (rejected when its representative
# ran naive, unverified otherwise); the check below looks at the verdicts
set +e
"$FENCECERT" certify "$tmp/flip.yaml" --recheck 100 --jobs 1 --workers 1 --full-report \
	--format json --out "$tmp/flip" --quiet >"$tmp/flip.table" 2>&1
rc=$?
set -e
[ -f "$tmp/flip/report.json" ] || fail "flip suite: no report (exit $rc): $(cat "$tmp/flip.table")"
python3 - "$tmp/flip/report.json" <<'PY' || fail "flip suite: the nondeterminism was not reported"
import json, sys
routes = {r["name"]: r for r in json.load(open(sys.argv[1]))["routes"]}
bad = []
flip, steady = routes["flip"], routes["steady"]
e = {x["scenario"]: x for x in flip["coverage"]["exploration"]}["after-commit"]
nd = [s for s in flip["schedules"] if "nondeterministic" in s]
print("flip:", flip["verdict"], e)
for s in nd:
    n = s["nondeterministic"]
    print(f"   {n['representative']}: {n['representative_outcome']}; "
          f"rechecked as {s['schedule']}: {s['outcome']}")
# Catches rechecks that never run (--recheck ignored: every schedule
# after the representative inherits its outcome, and the flip is hidden).
if e["mode"] != "recorded" or e["rechecked"] == 0:
    bad.append(f"flip: nothing rechecked: {e}")
# Catches a recheck whose different outcome is not written into its
# schedule, or not against the representative that ran from its state.
if not nd:
    bad.append("flip: no schedule carries 'nondeterministic'")
for s in nd:
    n = s["nondeterministic"]
    if s.get("recheck_of", {}).get("schedule") != n.get("representative") or \
            n.get("state") != s.get("seeded", {}).get("state"):
        bad.append(f"flip: {s['schedule']}: nondeterministic {n} does not name "
                   f"the representative it was rechecked against {s.get('recheck_of')}")
# Catches the finding not counted in the scenario's summary.
if e["nondeterministic"] != len(nd) or e["nondeterministic"] == 0:
    bad.append(f"flip: exploration counts {e['nondeterministic']} "
               f"nondeterministic, {len(nd)} schedule(s) carry it")
# Catches a finding that leaves the route certified, or says nothing.
if flip["verdict"].startswith("certified"):
    bad.append(f"flip: verdict {flip['verdict']} despite the finding")
if not any("not deterministic" in n for n in flip["coverage"]["unverified"]):
    bad.append(f"flip: no note says 'not deterministic': {flip['coverage']['unverified']}")
# Catches false findings: the same rechecks on a deterministic route.
es = {x["scenario"]: x for x in steady["coverage"]["exploration"]}["after-commit"]
print("steady:", steady["verdict"], es)
if steady["verdict"] != "certified-automatic" or es["nondeterministic"] or \
        es["rechecked"] == 0 or \
        any("nondeterministic" in s for s in steady["schedules"]):
    bad.append(f"steady: {steady['verdict']}, {es}, notes {steady['coverage']['unverified']}")
for b in bad:
    print("FAIL:", b)
sys.exit(1 if bad else 0)
PY
ok "a route that is not deterministic given its durable state is reported, not certified"
echo "ok: $checks checks"
