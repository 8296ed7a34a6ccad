#!/bin/sh
# certify_syscalls.sh -- scenarios/syscalls.yaml with this build: the
# bundled routes under syscall faults alone (seccomp user notification, no
# failpoint fault in the suite).  Checks, from the report:
#   - every verdict equals the route's expectation (the correct C and
#     Python routes certified, naive and split-fence rejected), and the
#     controls are rejected for duplicated rows;
#   - every syscall schedule's fault fired (an unfired one is unverified);
#   - the exploration covered kill_before, kill_after and EIO on syncs and
#     writes of every correct route;
#   - dead journal: some attempts of the correct routes had a journal
#     write/sync failed with EIO, the checker judged them (invariant 9),
#     and those that changed target rows had journaled COMMITTING first;
#   - the sqlite3 shell's plain .import into a rollback-journal database is
#     rejected because the schedule that killed it right after the unlink
#     of target.db-journal (its commit point: kill_after on unlink) made
#     the retry import every row again.
# Skipped (exit 0, saying so) when the machine lacks seccomp user
# notification.
set -eu
BUILD=${BUILD:-build}
FENCECERT=${FENCECERT:-$PWD/$BUILD/fencecert}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/fc-certify-syscalls.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

if ! grep -qw user_notif /proc/sys/kernel/seccomp/actions_avail 2>/dev/null; then
	echo "skipped: no seccomp user notification on this kernel"
	exit 0
fi
sed "s#build/fencecert#$BUILD/fencecert#g" scenarios/syscalls.yaml >"$tmp/syscalls.yaml"
start=$(date +%s)
rc=0
"$FENCECERT" certify "$tmp/syscalls.yaml" --full-report --out "$tmp/out" --quiet --format json \
	>"$tmp/table" || rc=$?
took=$(($(date +%s) - start))
cat "$tmp/table"
echo "certify: exit $rc, $took s"
[ "$rc" -eq 0 ] || { echo "certify exited $rc"; exit 1; }
python3 - "$tmp/out/report.json" <<'PY'
import json, sys
rep = json.load(open(sys.argv[1]))
bad = []
correct = {"c-sqlite", "c-file", "py-sqlite"}
controls = {"naive", "split-fence", "sqlite3-import"}
dead = judged = 0
for rt in rep["routes"]:
    name, verdict = rt["name"], rt["verdict"]
    want = "rejected" if name in controls else "certified-automatic"
    if verdict != want:
        bad.append(f"{name}: verdict {verdict}, expected {want}")
    kinds = set()
    for s in rt["schedules"]:
        if any(not f["fault"].startswith("y@") for f in s["faults"]):
            bad.append(f"{name}: schedule {s['schedule']} has a non-syscall fault")
        if s["kind"] == "syscall":
            # an inherited schedule ran nothing itself: its representative
            # (same state, same later faults) applied the fault
            if not all(f["fired"] for f in s["faults"]) or \
                    not (s["applied"] or s.get("inherited")):
                bad.append(f"{name}: {s['schedule']}: fault never fired")
            rule = s["schedule"].split("=", 1)[1]
            sysname, rest = rule.split("#", 1)
            action = rest.split(":", 1)[1].split("@", 1)[0]
            kinds.add(("sync" if "sync" in sysname else "write", action))
        for a in s["attempts"]:
            if a.get("journal_failed") and name in correct:
                dead += 1
                judged += not a["row_deltas"] and a["rows_added"] == 0
    if name in correct:
        for k in [(w, a) for w in ("sync", "write")
                  for a in ("kill_before", "kill_after", "errno:EIO")]:
            if k not in kinds:
                bad.append(f"{name}: no schedule with {k[1]} on a {k[0]}")
    if name in controls:
        invs = {v["name"] for s in rt["schedules"] for v in s["violations"]}
        if "no-duplicate" not in invs:
            bad.append(f"{name}: rejected without a no-duplicate violation: {invs}")
    if name == "sqlite3-import":
        # every one of the suite's 5 rows went from 1 to 2
        hit = [s for s in rt["schedules"]
               if ":kill_after@" in s["schedule"] and "=unlink#" in s["schedule"]
               and any("kill_after at unlink on {dir}/target.db-journal" in a["what"]
                       for a in s["applied"])
               and any(v["name"] == "no-duplicate" for v in s["violations"])
               and all(d["after"] == 2 for a in s["attempts"]
                       for d in a["row_deltas"])
               and sum(len(a["row_deltas"]) for a in s["attempts"]) == 5]
        if not hit:
            bad.append("sqlite3-import: no schedule killed it right after the "
                       "unlink of target.db-journal and saw every row doubled")
if dead == 0:
    bad.append("no attempt of a correct route had its journal fail (dead journal untested)")
if judged == 0:
    bad.append("no dead-journal attempt left the target untouched")
for b in bad:
    print("FAIL:", b)
print(f"dead-journal attempts: {dead}, of which {judged} changed no target row")
sys.exit(1 if bad else 0)
PY
echo "ok: syscall faults alone certify the routes and reject the controls"
