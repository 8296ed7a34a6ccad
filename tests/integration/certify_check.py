#!/usr/bin/env python3
"""certify_check.py REPORT.json -- check a default-suite report.

Used by certify_default.sh and certify_repeat.sh.  Checks that every route's
computed verdict equals its expectation and that each control is rejected
for the reason docs/controls.md gives (the invariant its violations must
name, and the scenario that must expose it).  Prints one line per route
("name verdict") on stdout, for comparing runs; problems go to stderr and
make the exit status 1.
"""
import json
import sys

# control -> (scenario that must expose it, invariant it must break)
CONTROLS = {
    "naive": ("kill-after-target-commit", 1),
    "xcom-guard": ("xcom-lost", 1),
    "checkpoint-guard": ("zombie-worker", 1),
    "journal-no-fence": ("kill-after-target-commit", 1),
    "split-fence": ("kill-after-target-commit", 1),
}


def main(path):
    report = json.load(open(path))
    problems = []
    if report.get("schema") != "fencecert.report.v1":
        problems.append("schema is %r" % report.get("schema"))
    for route in report["routes"]:
        name, verdict = route["name"], route["verdict"]
        print(name, verdict)
        if not route["expectation_met"]:
            problems.append("%s: verdict %s, expected %s" %
                            (name, verdict, route["expected"]))
        if name not in CONTROLS:
            if route["violations"]:
                v = route["violations"][0]
                problems.append("%s: violation %s in %s" %
                                (name, v["name"], v["schedule"]))
            continue
        scenario, invariant = CONTROLS[name]
        hits = [v for v in route["violations"]
                if v["scenario"] == scenario and v["invariant"] == invariant]
        if not hits:
            problems.append("%s: no invariant %d violation in scenario %s" %
                            (name, invariant, scenario))
        for v in route["violations"]:
            for key in ("invariant", "operation_id", "scenario", "schedule",
                        "detail", "reproduce"):
                if key not in v:
                    problems.append("%s: violation without %s" % (name, key))
    # the interim mitigation is fail-closed on one worker
    for route in report["routes"]:
        if route["name"] != "checkpoint-guard":
            continue
        for s in route["schedules"]:
            if s["scenario"] != "kill-after-target-commit":
                continue
            stopped = [o for o in s["operations"] if o["task"] == "failed"]
            if s["violations"] or not stopped:
                problems.append("checkpoint-guard: one worker is not a clean "
                                "fail-closed stop (%s)" % s["outcome_detail"])
    for p in problems:
        print("certify_check: " + p, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
