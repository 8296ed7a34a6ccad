#!/usr/bin/env python3
"""certify_etcd_check.py REPORT.json -- check a scenarios/etcd.yaml report.

Used by certify_etcd.sh.  Beyond "every verdict met its expectation":

- the controls are rejected for a duplicate write (invariant 1) in
  kill-after-target-commit;
- one-member-down: m2 was stopped in try 1 (the member action fired), and
  that try still completed the operation (exit 0, all rows);
- quorum-lost: m2 and m3 were stopped in try 1, which then exited 75 and
  changed no row of the target (rows_added 0, no row_deltas); m2 was started
  after it, and a later try completed the operation (journal COMPLETE,
  every row exactly once);
- journal-socket (c-etcd-journal only): syscall faults on the journal's
  connections were explored -- sendto and recvfrom schedules, each fault
  fired (applied), kills and ECONNRESETs among them -- and every schedule
  ended with the operation complete.

Problems go to stderr and make the exit status 1.
"""
import json
import sys

CERTIFIED = ("c-etcd-journal", "c-etcd-both")
CONTROLS = ("naive-etcd", "split-fence-etcd")


def schedule(route, scenario):
    for s in route["schedules"]:
        if s["scenario"] == scenario:
            return s
    raise KeyError(scenario)


def completed(s, problems, where):
    op = s["operations"][0]
    t = op["target"]
    if op["task"] != "success" or (op["journal"] or {}).get("state") != "COMPLETE":
        problems.append("%s: task %s, journal %s" % (
            where, op["task"], (op["journal"] or {}).get("state")))
    if t["rows_present"] != t["rows_expected"] or t["rows_duplicated"]:
        problems.append("%s: target %r" % (where, t))


def check_certified(route, problems):
    name = route["name"]
    s = schedule(route, "one-member-down")
    where = name + " one-member-down"
    a1 = s["attempts"][0]
    if [x["what"] for x in s["applied"]] != ["stopped m2 in op 1 try 1"]:
        problems.append("%s: applied %r" % (where, s["applied"]))
    if a1["exit"] != 0 or len(s["attempts"]) != 1:
        problems.append("%s: try 1 ended %s (%d attempts)" % (
            where, a1["end"], len(s["attempts"])))
    completed(s, problems, where)

    s = schedule(route, "quorum-lost")
    where = name + " quorum-lost"
    applied = [x["what"] for x in s["applied"]]
    want = ["stopped m2 in op 1 try 1", "stopped m3 in op 1 try 1",
            "started m2 in op 1 after try 1"]
    if applied != want:
        problems.append("%s: applied %r" % (where, applied))
    a1 = s["attempts"][0]
    if a1["try"] != 1 or a1["exit"] != 75:
        problems.append("%s: try 1 ended %s, not exit 75" % (where, a1["end"]))
    if a1["row_deltas"] or a1["rows_added"]:
        problems.append("%s: try 1 without quorum changed rows: %d added, %r" % (
            where, a1["rows_added"], a1["row_deltas"][:3]))
    if not any(a["exit"] == 0 and a["try"] > 1 for a in s["attempts"]):
        problems.append("%s: no later try completed" % where)
    if s["outcome"] != "converged":
        problems.append("%s: outcome %s" % (where, s["outcome"]))
    completed(s, problems, where)


def check_journal_socket(route, problems):
    where = route["name"] + " journal-socket"
    runs = [s for s in route["schedules"] if s["scenario"] == "journal-socket"
            and s["schedule"] != "clean"]
    rules = [s["schedule"] for s in runs]
    for call in ("sendto#", "recvfrom#"):
        for action in (":kill_before", ":errno:ECONNRESET"):
            if not any(call in r and action in r for r in rules):
                problems.append("%s: no %s...%s schedule" % (
                    where, call, action))
    for s in runs:
        if not s["applied"]:
            problems.append("%s: %s never fired" % (where, s["schedule"]))
        completed(s, problems, "%s %s" % (where, s["schedule"]))


def main(path):
    report = json.load(open(path))
    problems = []
    seen = set()
    for route in report["routes"]:
        name = route["name"]
        seen.add(name)
        print(name, route["verdict"])
        if not route["expectation_met"]:
            problems.append("%s: verdict %s, expected %s" % (
                name, route["verdict"], route["expected"]))
        if name in CERTIFIED:
            check_certified(route, problems)
        if name == "c-etcd-journal":
            check_journal_socket(route, problems)
        elif name in CONTROLS:
            if not any(v["invariant"] == 1 and
                       v["scenario"] == "kill-after-target-commit"
                       for v in route["violations"]):
                problems.append("%s: not rejected for a duplicate in "
                                "kill-after-target-commit" % name)
    for name in CERTIFIED + CONTROLS:
        if name not in seen:
            problems.append("route %s missing from the report" % name)
    for p in problems:
        print("certify_etcd_check: " + p, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
