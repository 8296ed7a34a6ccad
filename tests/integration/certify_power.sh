#!/bin/sh
# certify_power.sh -- scenarios/power.yaml with this build: power loss
# ('b', the files go back to what was fsync'd) against process kills
# ('k', the page cache survives), docs in harness/run/snapshot.h.
#
# 1. The whole suite: the correct C routes (SQLite and file targets) are
#    certified-automatic and the no-fsync control is rejected; every one
#    of its violations comes from the `power` scenario, from a schedule
#    that cut power, and names no-loss (invariant 2) or the evidence the
#    journal holds; the power scenario ran recorded, its power-loss
#    schedules were seeded from power-loss states (not from the kill
#    state of the same failpoint), and the tries restored were not run.
#    Power lost after a try-1 kill: seeded from the kill's state and
#    power model, judged once where kills leave the same of both, and
#    every power schedule of no-fsync and c-file has the outcome
#    --reexecute gives it.
# 2. `--only kills`: process kills alone certify no-fsync
#    (certified-automatic -- not its expectation, so certify exits 1).
# 3. Fixed faults: a suite whose scenarios cut power once, at
#    after_target_committed and at after_committing, rejects no-fsync
#    and certifies c-file.
# 4. Power lost at system calls (`power-at-calls`, where seccomp user
#    notification exists): the C routes certified, no-fsync rejected by a
#    schedule that cut power at a call, recorded and seeded, and the same
#    verdicts and outcomes under --reexecute (where the loop cuts power
#    live at the call).
#
# The comment above each check says which wrong behaviour it catches.
set -eu
BUILD=${BUILD:-build}
FENCECERT=${FENCECERT:-$PWD/$BUILD/fencecert}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/fc-certify-power.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/lib/expect.sh"

# the suite names build/fencecert; run it against this build
sed "s#build/fencecert#$FENCECERT#g" scenarios/power.yaml >"$tmp/power.yaml"

# --- 1. the whole suite -------------------------------------------------------
start=$(date +%s)
# power-at-calls needs seccomp user notification
only=
grep -qw user_notif /proc/sys/kernel/seccomp/actions_avail 2>/dev/null ||
	only="--only kills --only power"
# shellcheck disable=SC2086
expect 0 "$FENCECERT" certify "$tmp/power.yaml" --full-report --jobs 2 \
	--format json --out "$tmp/all" --quiet $only
echo "power.yaml: $(($(date +%s) - start)) s"
python3 - "$tmp/all/report.json" <<'PY' || fail "power.yaml: report checks failed"
import json, sys
rep = json.load(open(sys.argv[1]))
routes = {r["name"]: r for r in rep["routes"]}
bad = []

def faults(s):
    return s["schedule"].split(";")

# Catches a power-loss model that loses synced data (a correct route
# rejected) and one that loses nothing (no-fsync certified).
want = {"c-sqlite": "certified-automatic", "c-file": "certified-automatic",
        "no-fsync": "rejected"}
for name, verdict in want.items():
    if name not in routes:
        bad.append(f"no route {name} in the report")
    elif routes[name]["verdict"] != verdict:
        bad.append(f"{name}: verdict {routes[name]['verdict']}, expected {verdict}")
for name in ("c-sqlite", "c-file"):
    for v in routes.get(name, {}).get("violations", []):
        bad.append(f"{name}: violation {v['name']} in {v['scenario']} {v['schedule']}")

nf = routes.get("no-fsync", {"violations": [], "schedules": [], "coverage": {}})
viol = nf["violations"]
# Catches kills modelled as power loss (page cache dropped on a kill):
# no-fsync is correct under kills, so no violation may come from there.
for v in viol:
    if v["scenario"] == "power-at-calls":
        if ":power_loss@" not in v["schedule"]:
            bad.append(f"no-fsync: violation in {v['schedule']}, a schedule "
                       "that never cut power")
    elif v["scenario"] != "power":
        bad.append(f"no-fsync: violation {v['name']} in scenario {v['scenario']} "
                   f"({v['schedule']}), expected only 'power' or 'power-at-calls'")
    elif not any(f.startswith(("b:", "b@")) for f in v["schedule"].split(";")):
        bad.append(f"no-fsync: violation in {v['schedule']}, a schedule that "
                   "never cut power")
# Catches a rejection for some other reason than lost unsynced writes.
if not any(v["invariant"] == 2 or v["name"] == "evidence-agrees" for v in viol):
    bad.append("no-fsync: no violation of no-loss (invariant 2) or "
               f"evidence-agrees: {sorted({v['name'] for v in viol})}")

for name, rt in routes.items():
    expl = {e["scenario"]: e for e in rt["coverage"].get("exploration", [])}
    p = expl.get("power")
    # Catches the power scenario silently re-executed (or never seeded):
    # the crash-state exploration must have been used.
    if not p or p.get("mode") != "recorded" or p.get("seeded", 0) <= 0:
        bad.append(f"{name}: power exploration {p}, expected mode 'recorded' "
                   "with seeded schedules")
    power = [s for s in rt["schedules"] if s["scenario"] == "power"]
    kill_state = {s["schedule"][2:]: s["seeded"]["state"] for s in power
                  if s["schedule"].startswith("k:") and ";" not in s["schedule"]
                  and "seeded" in s}
    b_seeded = [s for s in power if s["schedule"].startswith("b:") and "seeded" in s]
    # Catches power-loss schedules that are never seeded (each one run
    # whole: the recorded power-loss states are unused).
    if not b_seeded:
        bad.append(f"{name}: no power-loss schedule ('b:...') was seeded")
    for s in b_seeded:
        # Catches a seeded try that ran anyway, or a seed that is not the
        # state the report names: the restored try's attempt says which
        # state it stands for and ran no process.
        if "inherited" in s:
            continue
        first = s["attempts"][0] if s["attempts"] else {}
        if first.get("seeded") != s["seeded"]["state"] or first.get("pid"):
            bad.append(f"{name}: {s['schedule']}: first attempt {first.get('seeded')} "
                       f"pid {first.get('pid')}, expected the restored state "
                       f"{s['seeded']['state']} and no process")
    if name == "no-fsync":
        # Catches power-loss schedules seeded from the kill state (files as
        # a killed process leaves them, page cache included): no-fsync's
        # lost writes must show as a different state at the same point.
        differ = [s for s in b_seeded
                  if kill_state.get(s["schedule"][2:], s["seeded"]["state"])
                  != s["seeded"]["state"]]
        if not differ:
            bad.append("no-fsync: every seeded power-loss state equals the kill "
                       "state of its failpoint")
        # Catches the violation found only by a schedule run whole: a
        # seeded power-loss state must expose the loss.
        if not any(v["invariant"] == 2 for s in differ for v in s["violations"]):
            bad.append("no-fsync: no seeded power-loss schedule violated no-loss")
for b in bad:
    print("FAIL:", b)
sys.exit(1 if bad else 0)
PY
ok "power.yaml: c-sqlite and c-file certified, no-fsync rejected by power loss alone"

# --- 1b. power lost after a kill: seeded with the power model ---------------
# A kill in try 1 then a power loss in try 2 starts from the kill's state
# with the power model recorded there (snapshot.h, snap_take_model), and
# kills that leave the same files and the same model are one experiment.
# Catches a model put back wrong and an inheritance that is not the same
# experiment: every power schedule of no-fsync (violations) and c-file
# (none) recorded must have the outcome and violations --reexecute gives
# it; and catches these schedules run whole, or never judged once.
expect 0 "$FENCECERT" certify "$tmp/power.yaml" --route no-fsync --route c-file \
	--only power --reexecute --full-report --format json --out "$tmp/rex" \
	--quiet
python3 - "$tmp/all/report.json" "$tmp/rex/report.json" <<'PY' || fail "power: power lost after a kill, inherited, differs from re-executed"
import json, sys
def load(path):
    out = {}
    for rt in json.load(open(path))["routes"]:
        if rt["name"] not in ("no-fsync", "c-file"):
            continue
        for s in rt["schedules"]:
            if s["scenario"] == "power":
                out[(rt["name"], s["schedule"])] = s
    return out
rec, rex = load(sys.argv[1]), load(sys.argv[2])
def outcome(s):
    return (s["outcome"], sorted({(v["invariant"], v.get("operation"))
                                  for v in s["violations"]}, key=str))
bad = [k for k in set(rec) | set(rex)
       if k not in rec or k not in rex or outcome(rec[k]) != outcome(rex[k])]
kb = [(k[0], s) for k, s in rec.items() if s["schedule"].startswith("k:")
      and ";b:" in s["schedule"]]
after = [(name, s) for name, s in kb if "inherited" in s]
modelled = [s for _, s in after if "power model" in s["inherited"]["detail"]]
lost = [s for name, s in after if name == "no-fsync" and s["violations"]]
ran = [s for _, s in kb if "inherited" not in s]
seeded = [s for s in ran if s.get("seeded") and s["attempts"] and
          s["attempts"][0].get("seeded") == s["seeded"]["state"] and
          not s["attempts"][0].get("pid")]
print("%d power schedules compared, %d differ; of %d that lose power after "
      "a kill, %d ran seeded (of %d run) and %d inherited (%d of no-fsync's "
      "with a violation)" % (len(rec), len(bad), len(kb), len(seeded),
                             len(ran), len(modelled), len(lost)))
for k in sorted(bad)[:10]:
    print("differs:", k, rec.get(k) and outcome(rec[k]), rex.get(k) and outcome(rex[k]))
sys.exit(1 if bad or not modelled or len(modelled) != len(after) or
         not lost or len(seeded) != len(ran) else 0)
PY
ok "power: power lost after a kill, seeded with its power model and judged once, as --reexecute judges it"

# --- 2. kills alone -----------------------------------------------------------
# Catches a kill that loses unsynced data: under kills no-fsync is a
# correct route.  Its expectation is `rejected`, so certify exits 1; the
# verdict itself is checked, not only the exit status.
expect 1 "$FENCECERT" certify "$tmp/power.yaml" --route no-fsync --only kills \
	--format json --out "$tmp/kills" --quiet
python3 - "$tmp/kills/report.json" <<'PY' || fail "--only kills: no-fsync was not certified"
import json, sys
rt = json.load(open(sys.argv[1]))["routes"][0]
print(rt["name"], rt["verdict"], len(rt["violations"]), "violation(s)")
sys.exit(0 if rt["name"] == "no-fsync" and rt["verdict"] == "certified-automatic"
         and not rt["violations"] and not rt["expectation_met"] else 1)
PY
ok "--only kills: no-fsync certified-automatic (exit 1: not its expectation)"

# --- 3. fixed power-loss faults -----------------------------------------------
cat >"$tmp/fixed.yaml" <<EOF
version: 1
suite: power-fixed
routes:
  - name: c-file
    command: [$FENCECERT, route]
    fork_server: true
    journal: "sqlite:{dir}/journal.db"
    target: "file:{dir}/target"
    observe: &files
      command: [$FENCECERT, target, rows, --target, "file:{dir}/target"]
    expect: certified-automatic
  - name: no-fsync
    command: [$FENCECERT, route, --variant, no-fsync]
    fork_server: true
    journal: "sqlite:{dir}/journal.db"
    target: "file:{dir}/target"
    observe: *files
    expect: rejected
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
  # the target and the journal's TARGET_COMMITTED are written, not synced
  - name: lose-power-committed
    faults:
      - {attempt: 1, failpoint: after_target_committed, action: power_loss}
  # before the target mutation (so c-file's certificate has a stop on
  # each side of its commit)
  - name: lose-power-committing
    faults:
      - {attempt: 1, failpoint: after_committing, action: power_loss}
EOF
# Catches a fixed power_loss fault that is ignored or run as a kill
# (no-fsync would be certified), and one that loses synced data (c-file
# rejected).
expect 0 "$FENCECERT" certify "$tmp/fixed.yaml" --full-report --format json \
	--out "$tmp/fixed" --quiet
python3 - "$tmp/fixed/report.json" <<'PY' || fail "fixed power_loss faults: report checks failed"
import json, sys
routes = {r["name"]: r for r in json.load(open(sys.argv[1]))["routes"]}
bad = []
if routes["c-file"]["verdict"] != "certified-automatic" or routes["c-file"]["violations"]:
    bad.append(f"c-file: {routes['c-file']['verdict']}, {routes['c-file']['violations']}")
nf = routes["no-fsync"]
hit = [v for v in nf["violations"] if v["invariant"] == 2 and
       v["scenario"] == "lose-power-committed" and
       v["schedule"] == "b:after_target_committed@1"]
if nf["verdict"] != "rejected" or not hit:
    bad.append(f"no-fsync: {nf['verdict']}, violations "
               f"{[(v['name'], v['schedule']) for v in nf['violations']]}")
for rt in routes.values():
    for s in rt["schedules"]:
        if not any(a["what"].startswith("power lost at ") for a in s["applied"]):
            bad.append(f"{rt['name']}: {s['schedule']}: power never lost: {s['applied']}")
for b in bad:
    print("FAIL:", b)
sys.exit(1 if bad else 0)
PY
ok "fixed power_loss faults: no-fsync rejected, c-file certified"

# --- 4. power lost at system calls --------------------------------------------
if [ -n "$only" ]; then
	echo "skipped: power-at-calls (no seccomp user notification here)"
else
	expect 0 "$FENCECERT" certify "$tmp/power.yaml" --only power-at-calls \
		--full-report --jobs 2 --format json --out "$tmp/calls-rx" --quiet \
		--reexecute
	python3 - "$tmp/all/report.json" "$tmp/calls-rx/report.json" <<'PY' || fail "power-at-calls: report checks failed"
import json, sys
rec, rx = ({r["name"]: r for r in json.load(open(p))["routes"]} for p in sys.argv[1:])
bad = []
for name, rt in rec.items():
    calls = [s for s in rt["schedules"] if s["scenario"] == "power-at-calls"]
    expl = {e["scenario"]: e for e in rt["coverage"]["exploration"]}["power-at-calls"]
    # Catches a power_loss rule never generated, never firing, or fired as
    # a plain kill (the applied words say what the harness did).
    cut = [s for s in calls if any(a["what"].startswith("power_loss at ")
                                   for a in s["applied"])]
    if len(cut) < 5:
        bad.append(f"{name}: {len(cut)} of {len(calls)} schedules cut power at a call")
    # Catches the exploration run whole: the discovery records the power
    # state at each call and the schedules start from it.
    if expl["mode"] != "recorded" or expl["seeded"] <= 0:
        bad.append(f"{name}: power-at-calls exploration {expl}")
    nv = [v for v in rt["violations"] if v["scenario"] == "power-at-calls"]
    if name == "no-fsync":
        # Catches power loss at calls that loses nothing unsynced: the
        # route that skips its fsyncs must lose committed rows.
        if not any(v["invariant"] == 2 for v in nv):
            bad.append("no-fsync: no no-loss violation from power-at-calls")
    elif nv:
        # Catches a model that loses synced data at a call.
        bad.append(f"{name}: {[(v['name'], v['schedule']) for v in nv]}")
    # Catches a seeded power state unlike the power loss the loop makes
    # live at the call: --reexecute must judge every schedule alike.
    want = {s["schedule"]: (s["outcome"], sorted(v["invariant"] for v in s["violations"]))
            for s in rx[name]["schedules"]}
    got = {s["schedule"]: (s["outcome"], sorted(v["invariant"] for v in s["violations"]))
           for s in calls}
    if want != got:
        bad.append(f"{name}: recorded and --reexecute differ: "
                   f"{sorted(set(want.items()) ^ set(got.items()))[:4]}")
for b in bad:
    print("FAIL:", b)
sys.exit(1 if bad else 0)
PY
	ok "power-at-calls: C routes certified, no-fsync rejected by power lost at a call; recorded = --reexecute"
fi
echo "ok: $checks checks"
