#!/usr/bin/env python3
"""reports_check.py -- JSON helpers for tests/integration/reports.sh.

Independent of the C code on purpose: the signature is recomputed here
from docs/report-format.md's definition (sorted keys, no whitespace,
"signature" removed, HMAC-SHA256), so the gate is tested against a second
implementation, not against itself.

  validate SCHEMA FILE...         JSON Schema (draft 2020-12) validation
  sign IN OUT KEY                 write IN signed with KEY to OUT
  route-set IN OUT ROUTE KEY JSON set routes[name=ROUTE][KEY] = JSON
  split IN PREFIX N [shard-info]  N shards of IN's schedules: PREFIX1.json...
  same A B                        A and B agree on verdicts, schedule sets,
                                  violations and coverage sets
  shards WHOLE SHARD...           real shard reports: each says which shard
                                  it is, each is a proper part, and their
                                  schedules partition WHOLE's
  html-dup HTML ROUTE             the HTML (a browser's DOM dump or the file)
                                  shows, in ROUTE's section, a lane marked
                                  as duplicating that names the attempt,
                                  the rows and the fault before it
  get FILE EXPR                   print a Python expression over `d`
  ci-templates GITHUB GITLAB      the CI templates parse, have the jobs and
                                  keys docs/ci.md promises, and every shell
                                  script in them passes `bash -n`
  ci-certify-exit GITHUB GITLAB   run each template's certify script with a
                                  stand-in fencecert exiting 0, 1, 3 (the
                                  job goes on to sign the report) and 2,
                                  64, 130, 137, 143 (the job stops there)
"""
import hashlib
import hmac
from html.parser import HTMLParser
import json
import re
import subprocess
import sys


def load(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def dump(doc, path):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1, ensure_ascii=False)


def canonical(doc):
    d = {k: v for k, v in doc.items() if k != "signature"}
    return json.dumps(d, sort_keys=True, separators=(",", ":"),
                      ensure_ascii=False).encode("utf-8")


def cmd_validate(schema_path, *files):
    from jsonschema import Draft202012Validator
    schema = load(schema_path)
    Draft202012Validator.check_schema(schema)
    v = Draft202012Validator(schema)
    bad = 0
    for p in files:
        errs = list(v.iter_errors(load(p)))
        for e in errs[:5]:
            path = "/".join(str(x) for x in e.absolute_path)
            print(f"{p}: {path}: {e.message[:300]}")
        print(f"{p}: {'INVALID' if errs else 'valid'}")
        bad += bool(errs)
    return 1 if bad else 0


def cmd_sign(src, out, key):
    doc = load(src)
    mac = hmac.new(key.encode(), canonical(doc), hashlib.sha256).hexdigest()
    doc["signature"] = {"alg": "hmac-sha256", "value": mac}
    dump(doc, out)
    return 0


def cmd_route_set(src, out, route, key, value):
    doc = load(src)
    hit = [r for r in doc["routes"] if r["name"] == route]
    if not hit:
        print(f"no route {route}")
        return 1
    hit[0][key] = json.loads(value)
    dump(doc, out)
    return 0


def cmd_split(src, prefix, n, shard_info=None):
    """Deal each route's schedules round-robin into n shards.  A shard keeps
    the route's verdict (rejected stays rejected: what matters for merge
    is that it is not 'unverified' without an unverified schedule) and
    coverage sets; summary counts are recomputed per shard."""
    doc = load(src)
    n = int(n)
    for k in range(n):
        shard = json.loads(json.dumps(doc))
        shard.pop("signature", None)
        for r in shard["routes"]:
            r["schedules"] = r["schedules"][k::n]
            r["violations"] = [v for s in r["schedules"] for v in s["violations"]]
            r["coverage"]["schedules"] = len(r["schedules"])
        s = shard["summary"]
        s["schedules"] = sum(len(r["schedules"]) for r in shard["routes"])
        s["violations"] = sum(len(r["violations"]) for r in shard["routes"])
        if shard_info:
            shard["shard"] = {"index": k + 1, "count": n}
        dump(shard, f"{prefix}{k + 1}.json")
    return 0


def inherited(*docs):
    """(route, scenario, schedule) inherited in any of docs: their
    violations are a representative's words, which another run (a shard)
    may take from another schedule of the same state."""
    return {(r["name"], s["scenario"], s["schedule"]) for d in docs
            for r in d["routes"] for s in r["schedules"] if "inherited" in s}


def plain(route, v, skip):
    if (route, v.get("scenario"), v.get("schedule")) in skip:
        v = {k: x for k, x in v.items() if k != "detail"}
    return json.dumps(v, sort_keys=True)


def facts(doc, skip=frozenset()):
    out = {}
    for r in doc["routes"]:
        out[r["name"]] = {
            "verdict": r["verdict"],
            "expectation_met": r["expectation_met"],
            "schedules": sorted((s["scenario"], s["kind"], s["schedule"],
                                 s["outcome"]) for s in r["schedules"]),
            "violations": sorted(plain(r["name"], v, skip)
                                 for v in r["violations"]),
            "reached": sorted(r["coverage"]["reached"]),
            "faulted": sorted(r["coverage"]["faulted"]),
        }
    return out


def cmd_same(a, b):
    da, db = load(a), load(b)
    skip = inherited(da, db)
    fa, fb = facts(da, skip), facts(db, skip)
    if fa == fb:
        print(f"same: {len(fa)} routes, "
              f"{sum(len(x['schedules']) for x in fa.values())} schedules")
        return 0
    for name in sorted(set(fa) | set(fb)):
        x, y = fa.get(name), fb.get(name)
        if x != y:
            for key in sorted(set(x or {}) | set(y or {})):
                if (x or {}).get(key) != (y or {}).get(key):
                    print(f"route {name}: {key} differs:\n  {a}: "
                          f"{(x or {}).get(key)}\n  {b}: {(y or {}).get(key)}")
    return 1


def sched_keys(doc):
    return [(r["name"], s["scenario"], s["kind"], s["schedule"])
            for r in doc["routes"] for s in r["schedules"]]


def cmd_shards(whole, *paths):
    want = sched_keys(load(whole))
    seen = {}
    n = len(paths)
    for k, p in enumerate(paths, 1):
        d = load(p)
        if d.get("shard") != {"index": k, "count": n}:
            print(f"{p}: shard is {d.get('shard')}, want {k}/{n}")
            return 1
        keys = sched_keys(d)
        if not keys or len(keys) >= len(want):
            print(f"{p}: {len(keys)} of {len(want)} schedules: not a slice")
            return 1
        for key in keys:
            if key in seen:
                print(f"{key} is in shard {seen[key]} and shard {k}")
                return 1
            seen[key] = k
    if sorted(seen) != sorted(want):
        print(f"the shards hold {len(seen)} schedules, the whole run "
              f"{len(want)}: {sorted(set(want) ^ set(seen))[:5]}")
        return 1
    sizes = [sum(1 for v in seen.values() if v == k) for k in range(1, n + 1)]
    print(f"{len(want)} schedules partitioned into shards of {sizes}")
    return 0


class LaneText(HTMLParser):
    """Per route section (its <h2>'s first word), the text of each
    timeline lane (<g class="lane">) by class, and whether it has a
    duplicate band."""

    def __init__(self):
        super().__init__()
        self.route = None
        self.in_h2 = False
        self.lanes = []      # (route, {"dup": bool, class: [text]})
        self.lane = None
        self.depth = 0
        self.cls = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "h2":
            self.in_h2, self.h2 = True, ""
        if self.lane is not None:
            if tag == "g":
                self.depth += 1
            if a.get("class") == "dupband":
                self.lane["dup"] = True
        elif tag == "g" and a.get("class") == "lane":
            self.lane, self.depth = {"dup": False}, 1
        self.cls.append(a.get("class", ""))

    def handle_endtag(self, tag):
        if self.cls:
            self.cls.pop()
        if tag == "h2" and self.in_h2:
            self.in_h2 = False
            self.route = self.h2.split()[0] if self.h2.split() else None
        if tag == "g" and self.lane is not None:
            self.depth -= 1
            if self.depth == 0:
                self.lanes.append((self.route, self.lane))
                self.lane = None

    def handle_data(self, data):
        if self.in_h2:
            self.h2 += data
        if self.lane is not None and self.cls:
            self.lane.setdefault(self.cls[-1], []).append(data)


def cmd_html_dup(path, route):
    p = LaneText()
    p.feed(open(path, encoding="utf-8").read())
    found = []
    for r, lane in p.lanes:
        if r != route or not lane["dup"]:
            continue
        label = "".join(lane.get("lanelabel", []))
        sub = "".join(lane.get("lanesub", []))
        note = "".join(lane.get("note", []))
        m1 = re.fullmatch(r"op (\d+) · try (\d+)", label)
        m2 = re.match(r"attempt (\d+) · pid \d+", sub)
        m3 = re.fullmatch(r"\+(\d+) duplicate rows?: (o\d+-r\d+.*) — after "
                          r"(.*(?:kill|pause|fail|lost|crash|changed).* in "
                          r"(?:op \d+ )?try (\d+).*)", note)
        if m1 and m2 and m3 and int(m3.group(4)) < int(m1.group(2)):
            found.append(f"attempt {m2.group(1)} (op {m1.group(1)} try "
                         f"{m1.group(2)}) added {m3.group(1)} duplicate rows "
                         f"({m3.group(2)[:30]}) after {m3.group(3)}")
    if not found:
        print(f"{path}: route {route}: no lane shows which attempt duplicated "
              f"which rows after which fault ({len(p.lanes)} lanes seen)")
        return 1
    print(f"{route}: {len(found)} lanes, e.g. {found[0]}")
    return 0


def cmd_get(path, expr):
    d = load(path)
    print(eval(expr, {"d": d}))
    return 0


def shell_ok(script, where):
    """bash -n over a script, with ${{ ... }} expressions made inert."""
    script = re.sub(r"\$\{\{[^}]*\}\}", "1", script)
    r = subprocess.run(["bash", "-n"], input=script, text=True,
                       capture_output=True)
    if r.returncode:
        raise AssertionError(f"{where}: shell syntax: {r.stderr.strip()}")


def need(cond, what):
    if not cond:
        raise AssertionError(what)


def check_github(path):
    import yaml
    d = yaml.safe_load(open(path))
    # YAML 1.1 reads the key `on` as true
    need("on" in d or True in d, "no 'on' trigger")
    jobs = d["jobs"]
    shards = jobs["certify"]["strategy"]["matrix"]["shard"]
    need(isinstance(shards, list) and len(shards) >= 2, "matrix.shard list")
    need(jobs["report"]["needs"] == "certify", "report needs certify")
    text = {}
    for name, job in jobs.items():
        runs = []
        for i, step in enumerate(job["steps"]):
            need("run" in step or "uses" in step, f"{name} step {i}: no run/uses")
            if "run" in step:
                shell_ok(step["run"], f"{name} step {i}")
                runs.append(step["run"])
        text[name] = "\n".join(runs)
        uses = [s.get("uses", "") for s in job["steps"]]
        need(any(u.startswith("actions/checkout@") for u in uses),
             f"{name}: no checkout")
    need("--shard" in text["certify"], "certify without --shard")
    need("merge" in text["report"] and "gate" in text["report"],
         "report job lacks merge or gate")
    need("GITHUB_STEP_SUMMARY" in text["report"], "no step summary")
    need("--require-signature" in text["report"], "gate without signature")
    need("--format junit,md,html" in text["report"], "report not rendered")
    junit = [s for s in jobs["report"]["steps"]
             if "junit" in s.get("uses", "")]
    need(junit and junit[0]["with"]["report_paths"] ==
         "merged/report.junit.xml", "JUnit XML not published")
    need(jobs["report"]["permissions"]["checks"] == "write",
         "JUnit check run needs checks: write")
    gate = [i for i, s in enumerate(jobs["report"]["steps"])
            if "fencecert gate" in s.get("run", "")]
    need(gate and gate[-1] == len(jobs["report"]["steps"]) - 1,
         "the gate is not the last step of the report job")
    for name in ("certify", "report"):
        need(any(s.get("uses", "").startswith("actions/upload-artifact@")
                 for s in jobs[name]["steps"]), f"{name}: no artifact upload")
    need("secrets.FENCECERT_SIGNING_KEY" in open(path).read(), "no key secret")
    return len(jobs)


def check_gitlab(path):
    import yaml
    d = yaml.safe_load(open(path))
    need(d["stages"] == ["certify", "report"], "stages")
    need(isinstance(d["certify"]["parallel"], int) and
         d["certify"]["parallel"] >= 2, "certify.parallel")
    need(d["report"]["artifacts"]["reports"]["junit"] ==
         "merged/report.junit.xml", "artifacts:reports:junit")
    need(any(n.get("job") == "certify" for n in d["report"]["needs"]),
         "report needs certify")
    for name in ("certify", "report"):
        script = "\n".join(d["default"]["before_script"] + d[name]["script"])
        shell_ok(script, name)
    certify = " ".join(d["certify"]["script"])
    report = " ".join(d["report"]["script"])
    need("--shard \"$CI_NODE_INDEX/$CI_NODE_TOTAL\"" in certify, "--shard")
    need("merge" in report and "gate" in report, "merge and gate")
    need("--require-signature" in report, "gate without signature")
    need("cat merged/summary.md" in report, "Markdown summary not shown")
    need("merged/" in d["report"]["artifacts"]["paths"], "merged/ not kept")
    need(d["report"]["script"][-1].lstrip().startswith(
        "build/fencecert gate"), "the gate is not the last command")
    return 2


def cmd_ci_templates(github, gitlab):
    try:
        n = check_github(github)
        m = check_gitlab(gitlab)
    except (AssertionError, KeyError, TypeError) as e:
        print(f"ci template check failed: {e!r}")
        return 1
    print(f"ci templates: github {n} jobs, gitlab {m} jobs, scripts parse")
    return 0


FAKE_FENCECERT = """#!/bin/sh
echo "$1" >>"$FAKE_LOG"
[ "$1" = certify ] && exit "$FAKE_RC"
exit 0
"""


def certify_scripts(github, gitlab):
    """The certify job's script of each template, as its runner runs it."""
    import yaml
    gh = yaml.safe_load(open(github))
    runs = [s["run"] for s in gh["jobs"]["certify"]["steps"]
            if "fencecert certify" in s.get("run", "")]
    need(len(runs) == 1, "github: no single certify step")
    gl = yaml.safe_load(open(gitlab))
    # GitHub runs `bash -e -o pipefail`; GitLab stops at the first
    # command that fails, as `set -e` does.
    return {
        "github": "set -eo pipefail\n" +
                  re.sub(r"\$\{\{[^}]*\}\}", "1", runs[0]),
        "gitlab": "set -eo pipefail\n" + "\n".join(gl["certify"]["script"]),
    }


def cmd_ci_certify_exit(github, gitlab):
    import os
    import tempfile
    try:
        scripts = certify_scripts(github, gitlab)
    except (AssertionError, KeyError, TypeError) as e:
        print(f"ci certify-exit check failed: {e!r}")
        return 1
    bad = []
    with tempfile.TemporaryDirectory() as d:
        os.mkdir(os.path.join(d, "build"))
        fake = os.path.join(d, "build", "fencecert")
        with open(fake, "w") as f:
            f.write(FAKE_FENCECERT)
        os.chmod(fake, 0o755)
        log = os.path.join(d, "log")
        for name, script in scripts.items():
            for rc in (0, 1, 3, 2, 64, 130, 137, 143):
                open(log, "w").close()
                env = dict(os.environ, FAKE_LOG=log, FAKE_RC=str(rc),
                           SUITE="suite.yaml", CI_NODE_INDEX="1",
                           CI_NODE_TOTAL="1")
                r = subprocess.run(["bash", "-c", script], cwd=d, env=env,
                                   capture_output=True, text=True)
                ran = open(log).read().split()
                goes_on = rc in (0, 1, 3)
                want = ["certify", "report"] if goes_on else ["certify"]
                if (r.returncode == 0) != goes_on or ran != want:
                    bad.append(f"{name}: certify exit {rc}: job exit "
                               f"{r.returncode}, ran {ran}, want {want}")
    if bad:
        print("ci certify-exit check failed:\n  " + "\n  ".join(bad))
        return 1
    print("ci templates: certify exit 0/1/3 goes on to sign, "
          "2/64/130/137/143 stop the job (github, gitlab)")
    return 0


def main(argv):
    cmds = {"validate": cmd_validate, "sign": cmd_sign,
            "route-set": cmd_route_set, "split": cmd_split,
            "same": cmd_same, "get": cmd_get, "shards": cmd_shards,
            "html-dup": cmd_html_dup,
            "ci-templates": cmd_ci_templates,
            "ci-certify-exit": cmd_ci_certify_exit}
    if len(argv) < 2 or argv[1] not in cmds:
        print(__doc__)
        return 64
    return cmds[argv[1]](*argv[2:])


if __name__ == "__main__":
    sys.exit(main(sys.argv))
