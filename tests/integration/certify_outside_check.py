#!/usr/bin/env python3
"""certify_outside_check.py REPORT.json -- check a scenarios/outside.yaml report.

Used by certify_outside.sh.  Every route must get its exact verdict for the
reason scenarios/outside.yaml gives at its entry:

- the rejected loaders break no-duplicate and nothing else, every row x2,
  and only where the suite says: psql-copy at the COMMIT whose answer the
  proxy cut (and the held one), sqlite3-import ONLY at the kill right after
  the unlink of target.db-journal that commits its import (every other
  schedule of its exploration converged), sqlite3-import-wal at the sync of
  its WAL's commit frame and every stop after it;
- the certified loaders converged in every schedule, and earned it: some
  schedule stopped a try after its rows were visible and retried it, some
  stopped one before (retried_stops), by the faults the suite says
  (psql-staged: the cut COMMIT after, the held COMMIT before, a retry that
  met the held transaction's keys failed and a later one completed);
- the loaders with no journal have the journal invariants listed as not
  observable; the Python loader's operations carry its own ids, not
  docs/identity.md's, with one journal entry each;
- every fault of every schedule fired (nothing unverified), and each
  exploration counted what the loader really does (one COMMIT per psql
  try; the unlink of target.db-journal among sqlite3-import's calls).

Prints one line per route; problems go to stderr and make the exit status 1.
"""
import json
import sys

EXPECT = {
    "psql-copy": "rejected",
    "psql-staged": "certified-automatic",
    "sqlite3-import": "rejected",
    "sqlite3-import-wal": "rejected",
    "sqlite3-insert-ignore": "certified-automatic",
    "py-journal": "certified-automatic",
}
JOURNAL_LESS = set(EXPECT) - {"py-journal"}
JOURNAL_INVARIANTS = {"legal-history", "reconcile-before-io", "fencing",
                      "dead-journal-no-mutation", "stable-identity"}
ROWS = 5  # workload.rows_per_operation

problems = []


def need(cond, what):
    if not cond:
        problems.append(what)


def doubled(s):
    """Every row of the partition present twice at the end."""
    t = s["target"]
    return t["rows_duplicated"] == ROWS and t["rows_total"] == ROWS


SCHEDULES = {}  # (route, scenario, schedule) -> schedule, for inheritors


def applied(s):
    """What was applied: an inherited schedule ran nothing itself, its
    representative (same durable state, same later faults) did."""
    inh = s.get("inherited")
    if inh:
        s = SCHEDULES.get((s["_route"], s["scenario"], inh["from"]), s)
    return " | ".join(a["what"] for a in s.get("applied", []))


def check_common(rt):
    name = rt["name"]
    need(rt["verdict"] == EXPECT[name],
         f"{name}: verdict {rt['verdict']}, expected {EXPECT[name]} "
         f"({rt['coverage'].get('unverified')})")
    for s in rt["schedules"]:
        need(s["outcome"] != "unverified" and all(f["fired"] for f in s["faults"]),
             f"{name} {s['schedule']}: unverified or a fault never fired "
             f"({s['outcome_detail']})")
        need(all(a["exit"] != 64 for a in s["attempts"]),
             f"{name} {s['schedule']}: a try exited 64 (configuration)")
    unobs = {u["name"] for u in rt["coverage"]["invariants_not_observable"]}
    if name in JOURNAL_LESS:
        need(JOURNAL_INVARIANTS <= unobs,
             f"{name} keeps no journal, yet {sorted(JOURNAL_INVARIANTS - unobs)} "
             "are observable")
    else:
        need(not (JOURNAL_INVARIANTS - {"reconcile-before-io"}) & unobs,
             f"{name} keeps a journal, yet {sorted(unobs)} are not observable")


def check_rejected(rt, rejecting):
    """Only no-duplicate, every row x2, in exactly the schedules
    rejecting(s) accepts, and some."""
    name = rt["name"]
    bad = [s for s in rt["schedules"] if s["violations"]]
    need(bad, f"{name}: no schedule broke an invariant")
    for s in bad:
        names = {v["name"] for v in s["violations"]}
        need(names == {"no-duplicate"},
             f"{name} {s['schedule']}: violations {sorted(names)}, "
             "expected no-duplicate alone")
        need(doubled(s), f"{name} {s['schedule']}: not every row x2: {s['target']}")
        need(rejecting(s), f"{name}: rejected by {s['schedule']} "
             f"({applied(s)}), which the suite does not expect to expose it")
    for s in rt["schedules"]:
        if not s["violations"]:
            need(s["outcome"] == "converged" and not rejecting(s),
                 f"{name} {s['schedule']}: {s['outcome']} without a violation "
                 f"({applied(s)})")


def check_certified(rt):
    name = rt["name"]
    stops = rt["coverage"]["retried_stops"]
    need(stops["before_mutation"] > 0 and stops["after_mutation"] > 0,
         f"{name}: certified without a stop on each side of its commit: {stops}")
    for s in rt["schedules"]:
        need(s["outcome"] == "converged" and not s["violations"],
             f"{name} {s['schedule']}: {s['outcome']} ({s['outcome_detail']})")
        need(s["target"]["rows_present"] == ROWS and s["target"]["rows_total"] == ROWS,
             f"{name} {s['schedule']}: rows {s['target']}")


def windows(s):
    return [w["window"] for w in s["retried_stops"]]


def by_schedule(rt, prefix):
    return [s for s in rt["schedules"] if s["schedule"].startswith(prefix)]


def main(path):
    report = json.load(open(path))
    routes = {rt["name"]: rt for rt in report["routes"]}
    for rt in report["routes"]:
        for sc in rt["schedules"]:
            sc["_route"] = rt["name"]
            SCHEDULES[(rt["name"], sc["scenario"], sc["schedule"])] = sc
    need(set(routes) == set(EXPECT), f"routes {sorted(routes)}")
    for name in EXPECT:
        if name not in routes:
            continue
        rt = routes[name]
        print(name, rt["verdict"], rt["coverage"]["retried_stops"])
        check_common(rt)
        if EXPECT[name] == "rejected":
            continue
        check_certified(rt)

    # psql: one commit per try (psql-copy's is the CopyDone that ends its
    # autocommit COPY, psql-staged's the COMMIT); cut -> after, held -> before
    commit_msg = {"psql-copy": "c CopyDone (autocommit COPY)", "psql-staged": "Q COMMIT"}
    for name in ("psql-copy", "psql-staged"):
        rt = routes.get(name)
        if not rt:
            continue
        disc = [a.get("proxy_commits") for s in rt["schedules"]
                if s["scenario"] == "pg-commits" and s["kind"] == "discovery"
                for a in s["attempts"] if a["try"] == 1]
        need(disc == [1], f"{name}: pg-commits discovery counted {disc} COMMITs, not 1")
        cut, held = by_schedule(rt, "c@1/op1=pgt"), by_schedule(rt, "h@1/op1=pgt")
        need(len(cut) == 1 and windows(cut[0]) == ["after-mutation"] and
             f"relayed {commit_msg[name]}, cut its answer" in applied(cut[0]),
             f"{name}: the cut COMMIT did not stop try 1 after its rows landed")
        need(len(held) == 1 and windows(held[0]) == ["before-mutation"] and
             f"held {commit_msg[name]}" in applied(held[0]),
             f"{name}: the held COMMIT did not stop try 1 before its rows landed")
    if "psql-copy" in routes:
        # the cut or held COMMIT (pg-commits), the cut one with XCom and pod lost
        check_rejected(routes["psql-copy"], lambda s: s["schedule"].startswith(("c@1", "h@1")))
    if "psql-staged" in routes:
        held = by_schedule(routes["psql-staged"], "h@1/op1=pgt")
        exits = [a["exit"] for a in held[0]["attempts"] if not a.get("zombie")] if held else []
        need(len(exits) >= 2 and exits[-1] == 0 and any(e not in (0, None) for e in exits),
             f"psql-staged: no retry met the held COMMIT's keys and failed "
             f"before one completed: exits {exits}")
        sends = [s for s in routes["psql-staged"]["schedules"] if s["scenario"] == "pg-sends"
                 and s["kind"] == "syscall"]
        need(len(sends) >= 5 and sum(w == ["before-mutation"] for w in map(windows, sends)) >= 5,
             f"psql-staged: pg-sends cut too few connections before the commit")

    # sqlite3-import: rejected only by the kill right after its commit, the
    # last unlink of target.db-journal (the first is the CREATE TABLE's)
    def unlink_hit(s):
        rule = s["schedule"].split("=unlink#", 1)
        return int(rule[1].split(":", 1)[0]) if len(rule) == 2 else 0

    def at_journal_unlink(s, rt):
        last = max(unlink_hit(x) for x in rt["schedules"])
        return (unlink_hit(s) == last and ":kill_after@" in s["schedule"] and
                "kill_after at unlink on {dir}/target.db-journal" in applied(s))
    if "sqlite3-import" in routes:
        rt = routes["sqlite3-import"]
        check_rejected(rt, lambda s: at_journal_unlink(s, rt))
        need(sum(bool(s["violations"]) for s in routes["sqlite3-import"]["schedules"]) == 1,
             "sqlite3-import: rejected by more than its commit point")
    if "sqlite3-insert-ignore" in routes:
        rt = routes["sqlite3-insert-ignore"]
        after = [s for s in rt["schedules"] if windows(s) == ["after-mutation"]]
        need(after and all(at_journal_unlink(s, rt) for s in after),
             "sqlite3-insert-ignore: the stop after its commit is not the kill "
             "right after the unlink of target.db-journal")

    # sqlite3-import-wal: the commit frame is in the WAL; every stop at or
    # after its sync duplicates, every stop before converges
    if "sqlite3-import-wal" in routes:
        rt = routes["sqlite3-import-wal"]
        check_rejected(rt, lambda s: windows(s) == ["after-mutation"] and
                       "on {dir}/target.db-wal" in applied(s))
        need(any(":kill_before@" in s["schedule"] and "=fdatasync#" in s["schedule"]
                 for s in rt["schedules"] if s["violations"]),
             "sqlite3-import-wal: no kill BEFORE a WAL sync found the commit "
             "frame already there")

    # py-journal: its own ids; one entry per operation, COMPLETE
    rt = routes.get("py-journal")
    if rt:
        for s in rt["schedules"]:
            op = s["operations"][0]
            need(op["operation_id"].startswith("etl:") and
                 op["canonical_operation_id"].startswith("sha256:") and
                 len(op["journal_entries"]) == 1 and op["journal"] and
                 op["journal"]["state"] == "COMPLETE",
                 f"py-journal {s['schedule']}: operation {op['operation_id']}, "
                 f"entries {op['journal_entries']}")
        restarted = [s for s in rt["schedules"]
                     if "FAILED_PRE_COMMIT" in [h["to"] for h in s["operations"][0]["history"]]]
        need(restarted, "py-journal: no schedule left it COMMITTING without its "
             "rows, so the proof of absence was never exercised")
        # power lost at its calls: really cut (not run as a kill), and
        # survived (its syncs make the journal and target durable)
        cut = [s for s in rt["schedules"] if s["scenario"] == "py-power-at-calls"
               and "power_loss at " in applied(s)]
        need(len(cut) >= 10, "py-journal: %d schedules cut power at a call"
             % len(cut))

    for p in problems:
        print("certify_outside_check: " + p, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
