#!/usr/bin/env python3
"""crash_states_check.py -- compare and inspect certify reports for the
crash-state tests (crash_states.sh, crash_states_shell.sh).

  crash_states_check.py same REPORT REPORT...
      Every report has the same routes with the same verdicts, the same
      schedules (scenario, schedule string) and, per schedule, the same
      outcome and the same sorted list of violated invariants as the
      first.  Recording, seeding and inheriting are only a way to run
      fewer tries: any difference is a bug (a restored state that is not
      the state a kill leaves, a result inherited from an experiment that
      is not the same, a seeded try whose trace loses failpoints, so the
      retries explored differ).

  crash_states_check.py modes REPORT MODE [SCENARIO...]
      Every route's coverage.exploration entry of each SCENARIO (all of
      them when none is named) has mode MODE ("recorded" or
      "re-executed"); a re-executed one says why.  Also checks that the
      per-schedule marks agree with the mode: a re-executed scenario has
      no schedule with "seeded" or "inherited", and an inherited schedule
      ran no attempt and names a representative of the same route and
      scenario that started from the same state.

Problems go to stdout as "FAIL: ..." lines and make the exit status 1.
"""
import json
import sys


def load(path):
    return json.load(open(path))


def schedules(route):
    out = {}
    for s in route["schedules"]:
        key = (s["scenario"], s["schedule"])
        out[key] = (s["outcome"],
                    sorted(v["invariant"] for v in s["violations"]))
    return out


def same(paths):
    problems = []
    base = {r["name"]: r for r in load(paths[0])["routes"]}
    for path in paths[1:]:
        other = {r["name"]: r for r in load(path)["routes"]}
        if set(base) != set(other):
            problems.append("%s: routes %s, %s has %s" %
                            (path, sorted(other), paths[0], sorted(base)))
        for name in sorted(set(base) & set(other)):
            a, b = base[name], other[name]
            if a["verdict"] != b["verdict"]:
                problems.append("%s: verdict %s in %s, %s in %s" %
                                (name, a["verdict"], paths[0], b["verdict"],
                                 path))
            sa, sb = schedules(a), schedules(b)
            for key in sorted(set(sa) | set(sb)):
                if sa.get(key) != sb.get(key):
                    problems.append(
                        "%s: %s %s: %s in %s, %s in %s" %
                        (name, key[0], key[1], sa.get(key, "not run"),
                         paths[0], sb.get(key, "not run"), path))
    return problems


def modes(path, mode, scenarios):
    problems = []
    for rt in load(path)["routes"]:
        name = rt["name"]
        expl = {e["scenario"]: e for e in rt["coverage"].get("exploration", [])}
        for sc in scenarios or sorted(expl):
            e = expl.get(sc)
            if e is None:
                problems.append("%s: no exploration entry for %s" % (name, sc))
                continue
            if e["mode"] != mode:
                problems.append("%s: %s: mode %s, expected %s (%s)" %
                                (name, sc, e["mode"], mode, e.get("why")))
            if e["mode"] == "re-executed" and not e.get("why"):
                problems.append("%s: %s re-executed without a why" % (name, sc))
        by_sched = {(s["scenario"], s["schedule"]): s for s in rt["schedules"]}
        for s in rt["schedules"]:
            e = expl.get(s["scenario"], {})
            if e.get("mode") == "re-executed" and ("seeded" in s or
                                                   "inherited" in s):
                problems.append("%s: %s %s is seeded/inherited in a "
                                "re-executed scenario" %
                                (name, s["scenario"], s["schedule"]))
            inh = s.get("inherited")
            if not inh:
                continue
            rep = by_sched.get((s["scenario"], inh.get("from")))
            if s["attempts"]:
                problems.append("%s: %s inherited, yet ran %d attempt(s)" %
                                (name, s["schedule"], len(s["attempts"])))
            if not rep or rep.get("seeded", {}).get("state") != inh.get("state") \
                    or s.get("seeded", {}).get("state") != inh.get("state"):
                problems.append("%s: %s inherited from %r, which did not start "
                                "from its state %s" %
                                (name, s["schedule"], inh.get("from"),
                                 inh.get("state")))
    return problems


def main(argv):
    if len(argv) >= 3 and argv[1] == "same":
        problems = same(argv[2:])
    elif len(argv) >= 4 and argv[1] == "modes":
        problems = modes(argv[2], argv[3], argv[4:])
    else:
        sys.stderr.write(__doc__)
        return 2
    for p in problems:
        print("FAIL:", p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
