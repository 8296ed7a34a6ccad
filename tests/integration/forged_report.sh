#!/bin/sh
# forged_report.sh -- a rejected route's shard report, rewritten to say
# certified, must not get through the CI template's chain:
#
#   certify --shard 1/1 (signed)  ->  render --sign  ->  merge  ->  gate
#
# The route under certification behaves like `route --variant naive`
# (duplicates after a kill) while its suite expects certified-automatic,
# so certify rejects it and signs that.  What a route could do after
# certify exited is done here: rewrite the shard's report.json so every
# schedule converged without a violation and the route is certified, then
#   a. strip the signature (hoping render --sign or merge signs it),
#   b. keep the old signature (hoping nobody checks it),
#   c. hope the report job runs without a key (merge without a key).
# Each step of the chain that is given the forged file must refuse it.
#
# The controls show the forgery is good enough that only the signature
# stops it: signed with the key (by tests/integration/reports_check.py, an
# independent signer) it passes render --sign, merge and the gate; the
# genuine report passes render --sign and merge and the gate refuses it
# for its verdict.
set -eu

BUILD=${BUILD:-build}
FENCECERT=${FENCECERT:-$PWD/$BUILD/fencecert}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/fc-forged.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
KEY=forged-report-test-key
. "$(dirname "$0")/lib/expect.sh"

py() { python3 tests/integration/reports_check.py "$@"; }

cat >"$tmp/suite.yaml" <<EOF
version: 1
suite: forged-report
routes:
  - name: loader
    command: [$FENCECERT, route, --variant, naive]
    journal: "sqlite:{dir}/journal.db"
    target: "sqlite:{dir}/target.db"
    observe:
      sql: "SELECT row_key, COUNT(*) FROM events GROUP BY row_key"
    expect: certified-automatic
workload: {operations: 1, rows_per_operation: 3, seed: 1}
orchestrator: {retries: 2, zombie_delay_ms: 20, lease_ttl_ms: 20, attempt_timeout_ms: 20000}
scenarios:
  - name: clean
  - name: kill-after-target-commit
    faults:
      - {attempt: 1, failpoint: after_target_commit, action: kill}
  - name: kill-before-target-commit
    faults:
      - {attempt: 1, failpoint: before_target_commit, action: kill}
EOF
DIGEST="sha256:$(sha256sum "$tmp/suite.yaml" | cut -d' ' -f1)"
export FENCECERT_SIGNING_KEY="$KEY"

# --- the genuine shard: rejected, signed by certify ----------------------------------
# a shard exits 1 when a route expected to certify has a violation in it
expect 1 "$FENCECERT" certify "$tmp/suite.yaml" --shard 1/1 \
	--out "$tmp/shard-1" --quiet
[ "$(py get "$tmp/shard-1/report.json" 'd["routes"][0]["verdict"]')" = rejected ] ||
	fail "the naive loader was not rejected: $(cat "$tmp/out")"
[ "$(py get "$tmp/shard-1/report.json" '"signature" in d')" = True ] ||
	fail "certify did not sign its report"
cp "$tmp/shard-1/report.json" "$tmp/genuine.json"
ok "certify rejected the naive loader and signed the shard report"

# --- the forgery ------------------------------------------------------------------------
python3 - "$tmp/genuine.json" "$tmp/forged-kept-sig.json" "$tmp/forged.json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
for r in d["routes"]:
    r["verdict"] = "certified-automatic"
    r["expectation_met"] = True
    r["violations"] = []
    for s in r["schedules"]:
        s["outcome"] = "converged"
        s["outcome_detail"] = ""
        s["violations"] = []
    r["coverage"]["by_outcome"] = {"converged": len(r["schedules"])}
    r["coverage"]["unverified"] = []
d["summary"]["expectations_met"] = len(d["routes"])
d["summary"]["violations"] = 0
d["summary"]["verdicts"] = {"certified-automatic": len(d["routes"])}
json.dump(d, open(sys.argv[2], "w"), indent=1)
del d["signature"]
json.dump(d, open(sys.argv[3], "w"), indent=1)
EOF

# The forgery is convincing: signed with the key it passes every step.
mkdir -p "$tmp/ctl/shard-1"
py sign "$tmp/forged.json" "$tmp/ctl/shard-1/report.json" "$KEY"
expect 0 "$FENCECERT" report render "$tmp/ctl/shard-1/report.json" \
	--out "$tmp/ctl/shard-1" --format json --sign
expect 0 "$FENCECERT" merge "$tmp/ctl/merged.json" "$tmp/ctl/shard-1/report.json"
expect 0 "$FENCECERT" gate "$tmp/ctl/merged.json" --require-signature \
	--suite-digest "$DIGEST" --require certified-automatic
ok "control: the forged content, signed with the key, passes render --sign, merge and gate"

# The genuine report goes through, and the gate refuses it for its verdict.
mkdir -p "$tmp/real"
expect 0 "$FENCECERT" report render "$tmp/genuine.json" --out "$tmp/real" \
	--format json --sign
expect 0 "$FENCECERT" merge "$tmp/real/merged.json" "$tmp/real/report.json"
expect 1 "$FENCECERT" gate "$tmp/real/merged.json" --require-signature \
	--suite-digest "$DIGEST" --require certified-automatic
err_has "fencecert: GATE: route 'loader' is rejected, required certified-automatic"
ok "control: the genuine report is re-signed and merged, the gate refuses its verdict"

# --- a. signature stripped: every step refuses it -----------------------------------------
# the CI template's steps, on the shard directory the route rewrote
cp "$tmp/forged.json" "$tmp/shard-1/report.json"
sum=$(sha256sum "$tmp/shard-1/report.json")
expect 2 "$FENCECERT" report render "$tmp/shard-1/report.json" \
	--out "$tmp/shard-1" --format json --sign
err_has "refusing to sign '$tmp/shard-1/report.json': it carries no signature"
[ "$(sha256sum "$tmp/shard-1/report.json")" = "$sum" ] ||
	fail "render --sign changed the forged file"
mkdir -p "$tmp/merged"
expect 1 "$FENCECERT" merge "$tmp/merged/report.json" "$tmp/shard-1/report.json"
err_has "report has no signature"
[ ! -e "$tmp/merged/report.json" ] || fail "merge wrote a report from a forged shard"
expect 1 "$FENCECERT" gate "$tmp/shard-1/report.json" --require-signature \
	--suite-digest "$DIGEST" --require certified-automatic
err_has "fencecert: GATE: report has no signature"
ok "stripped signature: render --sign (exit 2), merge (exit 1) and gate (exit 1) refuse"

# --- b. the old signature kept: it no longer matches --------------------------------------
cp "$tmp/forged-kept-sig.json" "$tmp/shard-1/report.json"
expect 2 "$FENCECERT" report render "$tmp/shard-1/report.json" \
	--out "$tmp/shard-1" --format json --sign
err_has "signature does not match the report"
expect 1 "$FENCECERT" merge "$tmp/merged/report.json" "$tmp/shard-1/report.json"
err_has "signature does not match the report"
expect 1 "$FENCECERT" gate "$tmp/shard-1/report.json" --require-signature \
	--suite-digest "$DIGEST" --require certified-automatic
err_has "fencecert: GATE: signature does not match the report"
ok "kept signature: render --sign, merge and gate refuse"

# --- c. a report job without the key ----------------------------------------------------------
cp "$tmp/forged.json" "$tmp/shard-1/report.json"
expect 1 env -u FENCECERT_SIGNING_KEY "$FENCECERT" merge \
	"$tmp/merged/report.json" "$tmp/shard-1/report.json"
err_has "no signing key"
[ ! -e "$tmp/merged/report.json" ] || fail "merge without a key wrote a report"
expect 0 env -u FENCECERT_SIGNING_KEY "$FENCECERT" merge --unsigned \
	"$tmp/merged/report.json" "$tmp/shard-1/report.json"
[ "$(py get "$tmp/merged/report.json" '"unsigned" in d and "signature" not in d')" = True ] ||
	fail "merge --unsigned did not mark its output unsigned"
expect 2 "$FENCECERT" report render "$tmp/merged/report.json" \
	--out "$tmp/merged" --format json --sign
err_has "it carries no signature (it is marked unsigned)"
expect 1 "$FENCECERT" gate "$tmp/merged/report.json" --require-signature \
	--suite-digest "$DIGEST" --require certified-automatic
err_has "fencecert: GATE: report has no signature"
ok "no key: merge refuses; --unsigned marks the output, which render --sign and gate refuse"

echo "forged_report.sh: $checks checks passed"
