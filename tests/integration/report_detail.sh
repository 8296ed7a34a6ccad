#!/bin/sh
# report_detail.sh -- report.json keeps the detail (attempts, operations,
# applied faults, reached failpoints) of the first REPORT_DETAIL_KEPT (10)
# schedules of each class per route and summarizes the rest
# (harness/check/report_summary.h), without losing what readers, gate and
# merge use:
#
# 1. a run of c-sqlite and naive over default.yaml's fixed and exploring
#    scenarios: per route and class, exactly the first 10 keep detail, the
#    others say "detail": "summary" and keep outcome, violations,
#    retried stops, target counts and the reproduce line; the report
#    validates against the schema; the HTML says a schedule is summarized;
# 2. the same with --full-report: nothing summarized, and the same
#    verdicts, schedules, outcomes and violations;
# 3. three summarized shards merge into a summarized report with the
#    whole run's verdicts and schedules, capped the same way.
set -eu
BUILD=${BUILD:-build}
FENCECERT=${FENCECERT:-$PWD/$BUILD/fencecert}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/fc-report-detail.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
. "$(dirname "$0")/lib/expect.sh"

sed "s|build/fencecert|$FENCECERT|" scenarios/default.yaml >"$tmp/default.yaml"
SEL="--route c-sqlite --route naive --quiet --only clean
 --only kill-after-target-commit --only every-failpoint --only random"
# shellcheck disable=SC2086
expect 0 "$FENCECERT" certify "$tmp/default.yaml" $SEL --out "$tmp/capped"
# shellcheck disable=SC2086
expect 0 "$FENCECERT" certify "$tmp/default.yaml" $SEL --full-report --out "$tmp/full"
for k in 1 2 3; do
	# shellcheck disable=SC2086
	expect 0 "$FENCECERT" certify "$tmp/default.yaml" $SEL --shard "$k/3" \
		--out "$tmp/shard$k"
done
expect 0 "$FENCECERT" merge --unsigned "$tmp/merged.json" "$tmp/shard1/report.json" \
	"$tmp/shard2/report.json" "$tmp/shard3/report.json"
grep -qF "summarized in report.json" "$tmp/capped/report.html" ||
	fail "report.html does not say a schedule is summarized"

python3 - "$tmp/capped/report.json" "$tmp/full/report.json" "$tmp/merged.json" <<'PY' || exit 1
import json, sys
KEPT = 10
DETAIL = ("attempts", "operations", "reached", "applied")
capped, full, merged = (json.load(open(p)) for p in sys.argv[1:])
bad = []

def cls(s):
    if s["violations"]:
        return "failed"
    return "unverified" if s["outcome"] == "unverified" else "passed"

def key(s):
    return (s["scenario"], s["schedule"], s["kind"])

# An inherited schedule's violations and stops are its representative's
# words (docs/crash-states.md): a shard may pick another representative of
# the same state, so those compare without their words.
INHERITED = {(rt["name"], key(s)) for rep in (capped, full, merged)
             for rt in rep["routes"] for s in rt["schedules"] if "inherited" in s}

def words(rt, s):
    if (rt["name"], key(s)) not in INHERITED:
        return json.dumps(s["violations"], sort_keys=True), \
            json.dumps(s.get("retried_stops"), sort_keys=True)
    return json.dumps(sorted((v["invariant"], v["name"], v["operation"])
                             for v in s["violations"])), \
        json.dumps(sorted(x["window"] for x in s.get("retried_stops") or []))

def judged(rep):
    return {rt["name"]: (rt["verdict"], sorted(
        (key(s), s["outcome"]) + words(rt, s)
        for s in rt["schedules"])) for rt in rep["routes"]}

def check_capped(rep, what):
    summarized = 0
    for rt in rep["routes"]:
        seen = {}
        for s in rt["schedules"]:
            c = cls(s)
            seen[c] = seen.get(c, 0) + 1
            if seen[c] <= KEPT:
                if "detail" in s or any(k not in s for k in DETAIL):
                    bad.append(f"{what} {rt['name']} {key(s)}: one of the first {KEPT} {c} lacks detail")
            else:
                summarized += 1
                if s.get("detail") != "summary" or any(k in s for k in DETAIL):
                    bad.append(f"{what} {rt['name']} {key(s)}: not summarized")
                for k in ("outcome", "violations", "retried_stops", "target", "reproduce", "faults"):
                    if k not in s:
                        bad.append(f"{what} {rt['name']} {key(s)}: summary lacks {k}")
    if not summarized:
        bad.append(f"{what}: nothing summarized (the test needs more than {KEPT} schedules of a class)")
    return summarized

n = check_capped(capped, "run")
if any("detail" in s for rt in full["routes"] for s in rt["schedules"]):
    bad.append("--full-report summarized a schedule")
if judged(capped) != judged(full):
    bad.append("a summarized run judged otherwise than a full one")
m = check_capped(merged, "merge")
if judged(merged) != judged(full):
    bad.append("the merged shards judged otherwise than the whole run")
for b in bad:
    print("FAIL:", b)
sys.exit(1 if bad else print(f"{n} schedules summarized in the run, {m} in the merge") or 0)
PY
ok "summarized past the first 10 per class; --full-report keeps all; shards merge the same"
if python3 -c 'import jsonschema' 2>/dev/null; then
	expect 0 python3 tests/integration/reports_check.py validate reports/report.schema.json \
		"$tmp/capped/report.json" "$tmp/full/report.json" "$tmp/merged.json"
	ok "schema-valid, summarized or not"
fi
echo "report_detail.sh: $checks checks passed"
