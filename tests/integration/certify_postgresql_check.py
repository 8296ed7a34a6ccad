#!/usr/bin/env python3
"""certify_postgresql_check.py REPORT.json

Checks a scenarios/postgresql.yaml report beyond its verdicts: each proxy
fault fired where the suite's comments say, and did what it should.
Problems go to stderr; exit status 1 if any.
"""
import json
import os
import sys

problems = []


def check(cond, msg):
    if not cond:
        problems.append(msg)


def schedules(route, scenario):
    return [s for s in route["schedules"] if s["scenario"] == scenario]


def one(route, scenario):
    got = schedules(route, scenario)
    check(len(got) == 1, "%s: %d schedules of %s" %
          (route["name"], len(got), scenario))
    return got[0] if got else None


def by_schedule(route, scenario, schedule):
    got = [s for s in schedules(route, scenario) if s["schedule"] == schedule]
    check(len(got) == 1, "%s: %d schedules %s in %s" %
          (route["name"], len(got), schedule, scenario))
    return got[0] if got else None


def applied(s):
    return [a["what"] for a in s["applied"]]


def tries(s):
    return {a["try"]: a for a in s["attempts"] if a["counted"]}


def suite(report):
    routes = {r["name"]: r for r in report["routes"]}
    for r in report["routes"]:
        check(r["expectation_met"], "%s: %s, expected %s" %
              (r["name"], r["verdict"], r["expected"]))
        if r["expected"] == "rejected":
            continue  # a control may never reach a failpoint it lacks
        for s in r["schedules"]:
            for f in s["faults"]:
                check(f["fired"], "%s %s: %s never fired" %
                      (r["name"], s["schedule"], f["fault"]))
    for name in ("naive-pgjournal", "journal-no-fence-pgjournal"):
        v = [x for x in routes[name]["violations"]
             if x["scenario"] == "kill-after-target-commit"]
        check(v and v[0]["invariant"] == 1,
              "%s: not caught duplicating in kill-after-target-commit" % name)

    # the proxies' COMMITs are explored, not listed: each discovery counted
    # them in try 1, and every COMMIT x action is one schedule
    for name, scen, proxy, n, actions in (
            ("c-pg-txn", "target-commits", "pgt", 5, "ch"),
            ("c-pg-2pc", "target-commits", "pgt", 5, "ch"),
            ("pg-fence-row-only", "target-commits-held", "pgt", 5, "h"),
            ("c-pgjournal-sqlite", "journal-commits", "pgj", 7, "ch"),
            ("c-pg-2pc", "journal-commits", "pgj", 7, "ch")):
        got = schedules(routes[name], scen)
        disc = [s for s in got if s["kind"] == "discovery"]
        counted = disc and [a.get("proxy_commits") for a in disc[0]["attempts"]]
        check(counted == [n], "%s %s: discovery counted %r COMMITs on %s, "
              "expected [%d]" % (name, scen, counted, proxy, n))
        want = sorted("%s@1%s/op1=%s" % (a, "#%d" % h if h > 1 else "", proxy)
                      for h in range(1, n + 1) for a in actions)
        have = sorted(s["schedule"] for s in got if s["kind"] == "proxy")
        check(have == want, "%s %s: schedules %r, expected %r" %
              (name, scen, have, want))

    # hit 5 on the target connection is the apply's COMMIT
    for name, stmt in (("c-pg-txn", "relayed Q COMMIT, cut"),
                       ("c-pg-2pc", "relayed Q COMMIT PREPARED 'fencecert:")):
        s = by_schedule(routes[name], "target-commits", "c@1#5/op1=pgt")
        if s:
            check(any(stmt in w for w in applied(s)),
                  "%s target-commits c@1#5 cut %s" % (name, applied(s)))

    # hold: the held try became a zombie, try 2 ran meanwhile, then the
    # COMMIT was released (pg-txn's probe may have ended its session)
    for name, scen in (("c-pg-txn", "target-commits"),
                       ("c-pg-2pc", "target-commits"),
                       ("pg-fence-row-only", "target-commits-held")):
        s = by_schedule(routes[name], scen, "h@1#5/op1=pgt")
        if not s:
            continue
        first = s["attempts"][0]
        check(first["zombie"] and first["resumed"],
              "%s %s h@1#5: try 1 zombie %s resumed %s" %
              (name, scen, first["zombie"], first["resumed"]))
        check(any(w.startswith("proxy pgt: held Q COMMIT") for w in applied(s)),
              "%s %s h@1#5 held %s" % (name, scen, applied(s)))
    # the row-only probe answered while the COMMIT was in flight; the
    # reconcile prepare then waited on the epoch row lock and gave up
    s = by_schedule(routes["pg-fence-row-only"], "target-commits-held",
                    "h@1#5/op1=pgt")
    if s:
        t2 = tries(s).get(2)
        names = [f["name"] for f in t2["failpoints"]] if t2 else []
        check(t2 and t2["end"] == "exit 75" and
              not t2["row_deltas"] and t2["rows_added"] == 0 and
              "after_reconcile_probe" in names and
              names[-1] == "before_fence_prepare",
              "pg-fence-row-only h@1#5 try 2: %r" %
              ((t2 and (t2["end"], names)),))

    # journal down in try 2: exit 75, no target change, try 3 completes
    for name in ("c-pg-txn", "c-pg-2pc", "c-pgjournal-sqlite"):
        for scen in ("journal-down", "journal-down-after-lease"):
            s = one(routes[name], scen)
            if not s:
                continue
            t = tries(s)
            t2, t3 = t.get(2), t.get(3)
            check(t2 and t2["end"] == "exit 75" and t2["row_deltas"] == [] and
                  t2["rows_added"] == 0,
                  "%s %s: try 2 %r" % (name, scen,
                                       t2 and (t2["end"], t2["rows_added"],
                                               t2["row_deltas"])))
            check(t2 and any("proxy pgj:" in w for w in t2["faults"]),
                  "%s %s: try 2 met no proxy fault" % (name, scen))
            check(t3 and t3["end"] == "exit 0",
                  "%s %s: try 3 %s" % (name, scen, t3 and t3["end"]))
            check(s["operations"][0]["task"] == "success",
                  "%s %s: task %s" % (name, scen, s["operations"][0]["task"]))
            if scen == "journal-down":
                check(t3 and t3["rows_added"] == 20 and not t3["row_deltas"],
                      "%s journal-down: try 3 wrote %r" %
                      (name, t3 and (t3["rows_added"], t3["row_deltas"])))
            else:
                check("after_lease" in [f["name"] for f in t2["failpoints"]],
                      "%s %s: try 2 never held its lease" % (name, scen))


def journal_socket(report):
    """journal-send / journal-receive: syscall faults on the journal's
    socket all fired and every operation completed; ECONNRESET made tries
    whose journal failed (invariant 9 judges them), and most of those
    changed no target row."""
    route = {r["name"]: r for r in report["routes"]}.get("c-pgjournal-sqlite")
    check(route is not None, "c-pgjournal-sqlite missing")
    if not route:
        return
    dead = untouched = 0
    for scen in ("journal-send", "journal-receive"):
        runs = [s for s in schedules(route, scen) if s["kind"] == "syscall"]
        check(len(runs) >= 4, "%s: %d syscall schedules" % (scen, len(runs)))
        for s in runs:
            check(s["applied"] and all(f["fired"] for f in s["faults"]),
                  "%s %s: never fired" % (scen, s["schedule"]))
            check(s["operations"][0]["task"] == "success",
                  "%s %s: task %s" % (scen, s["schedule"],
                                      s["operations"][0]["task"]))
            for a in s["attempts"]:
                if a.get("journal_failed"):
                    dead += 1
                    untouched += (not a["row_deltas"] and
                                  a["rows_added"] == 0)
    check(dead > 0, "journal-send: no try had its journal connection fail")
    check(untouched * 2 > dead, "journal-send: only %d of %d tries whose "
          "journal failed left the target untouched" % (untouched, dead))
    print("journal socket: %d tries with a failed journal call, %d changed "
          "no target row" % (dead, untouched))


def retry_wave(report, summary):
    """A route on a server cannot have its states compared: its retry
    wave follows one kill per recovery path, and both reports say so."""
    for r in report["routes"]:
        for e in r["coverage"].get("exploration", []):
            if e["scenario"] != "every-failpoint":
                continue
            check(e.get("retry_wave") == "one kill per recovery path",
                  "%s every-failpoint: retry_wave %r" %
                  (r["name"], e.get("retry_wave")))
            check("%s / every-failpoint: try 2 explored after one kill per "
                  "recovery path" % r["name"] in summary,
                  "%s every-failpoint: summary.md does not say its retry "
                  "wave is a guess" % r["name"])


def main(path):
    report = json.load(open(path))
    suite(report)
    journal_socket(report)
    with open(os.path.join(os.path.dirname(path), "summary.md")) as fh:
        retry_wave(report, fh.read())
    for p in problems:
        print("problem: " + p, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
