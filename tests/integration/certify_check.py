#!/usr/bin/env python3
"""certify_check.py REPORT.json -- check a default-suite report.

Used by certify_default.sh and certify_repeat.sh.  Checks that every route's
computed verdict equals its expectation and that each control is rejected
for the reason docs/controls.md gives (the invariant its violations must
name, and the scenario that must expose it); that every certified route
earned it (some schedule stopped a try on each side of its commit and
retried it); that operations carry the id the route used and the canonical
one beside it (the bundled routes use docs/identity.md's, so the two
agree); and that a control keeping no journal has the journal invariants
listed as not observable.  Prints one line per route ("name verdict") on
stdout, for comparing runs; problems go to stderr and make the exit status
1.
"""
import json
import sys

# controls that keep no journal (routes/controls.c): judged on the target
JOURNAL_LESS = {"naive", "xcom-guard", "checkpoint-guard"}
JOURNAL_INVARIANTS = {"legal-history", "reconcile-before-io",
                      "stable-identity"}

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
        stops = route["coverage"].get("retried_stops", {})
        if verdict.startswith("certified") and not (
                stops.get("before_mutation") and stops.get("after_mutation")):
            problems.append("%s: %s without a stop on each side of the "
                            "commit: %s" % (name, verdict, stops))
        for s in route["schedules"]:
            if "retried_stops" not in s:
                problems.append("%s: schedule %s has no retried_stops" %
                                (name, s["schedule"]))
            for op in s["operations"]:
                ours = op["operation_id"]
                if (name not in JOURNAL_LESS and ours and
                        ours != op.get("canonical_operation_id")):
                    problems.append("%s: op %d is %r, not the canonical %r" %
                                    (name, op["index"], ours,
                                     op.get("canonical_operation_id")))
        unobs = {u["name"] for u in route["coverage"]["invariants_not_observable"]}
        if name in JOURNAL_LESS and not JOURNAL_INVARIANTS <= unobs:
            problems.append("%s keeps no journal, yet %s are observable" %
                            (name, sorted(JOURNAL_INVARIANTS - unobs)))
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
