"""report_equiv.py -- do two certify reports say the same?

usage: report_equiv.py A.json B.json LABEL_A LABEL_B [--failpoints]

Compares, route by route, the verdict, the expected verdict, the schedule
strings, the violations and the schedules in error; with --failpoints also
every attempt's failpoint log (names in order, answers; not the times).
Prints one summary line per route (from A) and a FAIL line per difference;
exits 1 on a difference or unless A's c-sqlite is certified-automatic and
A's naive control is rejected.  Used by forksrv_equiv.sh and
failpoint_pass_equiv.sh."""
import json
import sys


def summary(path, failpoints):
    out = {}
    for r in json.load(open(path))["routes"]:
        scheds = sorted((s["scenario"], s["schedule"]) for s in r["schedules"])
        viol = sorted((v["invariant"], str(v.get("operation_id")),
                       v["scenario"], v["schedule"]) for v in r["violations"])
        errors = sorted((s["scenario"], s["schedule"]) for s in r["schedules"]
                        if s.get("error"))
        out[r["name"]] = {"verdict": r["verdict"], "expected": r["expected"],
                          "schedules": scheds, "violations": viol,
                          "errors": errors}
        if failpoints:
            out[r["name"]]["failpoints"] = sorted(
                (s["scenario"], s["schedule"], i,
                 tuple((h["name"], h["answer"]) for h in at["failpoints"]))
                for s in r["schedules"] for i, at in enumerate(s["attempts"]))
    return out


def main(argv):
    failpoints = "--failpoints" in argv
    path_a, path_b, la, lb = [x for x in argv if x != "--failpoints"]
    a, b = summary(path_a, failpoints), summary(path_b, failpoints)
    bad = 0
    for name in sorted(set(a) | set(b)):
        if name not in a or name not in b:
            print("FAIL: route %s in one report only" % name)
            bad = 1
            continue
        for key in sorted(a[name]):
            if a[name][key] != b[name][key]:
                x, y = a[name][key], b[name][key]
                if isinstance(x, list):
                    x = sorted(set(x) - set(y))[:3]
                    y = sorted(set(y) - set(a[name][key]))[:3]
                print("FAIL: %s %s differs: %s %s, %s %s" %
                      (name, key, la, x, lb, y))
                bad = 1
        line = "%-9s %-22s %4d schedules %3d violations" % (
            name, a[name]["verdict"], len(a[name]["schedules"]),
            len(a[name]["violations"]))
        if failpoints:
            line += " %6d failpoint hits" % sum(
                len(h[3]) for h in a[name]["failpoints"])
        print(line)
    if a.get("c-sqlite", {}).get("verdict") != "certified-automatic" or \
       a.get("naive", {}).get("verdict") != "rejected":
        print("FAIL: unexpected verdicts %s" %
              {k: v["verdict"] for k, v in a.items()})
        bad = 1
    return bad


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
