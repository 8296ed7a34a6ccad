#!/bin/sh
# reports.sh -- the reports end to end: render all four formats from the
# saved real report (tests/data/reports/controls-small.json) and from a
# fresh tiny certify run; validate report.json against
# reports/report.schema.json and report.junit.xml against
# tests/data/junit.xsd; the gate's accept and refuse cases; merge of shard
# reports; the HTML in headless Chromium (screenshot, no console errors,
# inline script ran).
#
# Signatures used here are made by tests/integration/reports_check.py, an
# independent implementation of docs/report-format.md, so the gate is not
# only checked against its own signer.
#
# A part whose tool is missing prints "skipped: ..." and the rest runs.
set -eu

BUILD=${BUILD:-build}
FENCECERT=${FENCECERT:-$PWD/$BUILD/fencecert}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/fc-reports.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
FIXTURE=tests/data/reports/controls-small.json
FIXTURE2=tests/data/reports/fences-small.json
SCHEMA=reports/report.schema.json
XSD=tests/data/junit.xsd
KEY=reports-test-key-1
. "$(dirname "$0")/lib/expect.sh"

# A python3 that has jsonschema (Debian's python3-jsonschema lives in the
# system python, which may not be the first python3 on PATH).
PY=""
for p in python3 /usr/bin/python3; do
	if command -v "$p" >/dev/null 2>&1 &&
	   "$p" -c 'import jsonschema' 2>/dev/null; then
		PY=$p
		break
	fi
done
PYANY=${PY:-python3}
check_py() { "$PYANY" tests/integration/reports_check.py "$@"; }

# gate STATUS [ARGS...] : fencecert gate with the current key settings
gate() {
	want=$1
	shift
	expect "$want" "$FENCECERT" gate "$@"
}

# --- a fresh report from this build -----------------------------------------------
cat >"$tmp/suite.yaml" <<EOF
version: 1
suite: reports-sh
routes:
  - name: c-sqlite
    command: [$FENCECERT, route]
    journal: "sqlite:{dir}/journal.db"
    target: "sqlite:{dir}/target.db"
    observe: &sql
      sql: "SELECT row_key, COUNT(*) FROM events GROUP BY row_key"
    expect: certified-automatic
  - name: naive
    command: [$FENCECERT, route, --variant, naive]
    journal: "sqlite:{dir}/journal.db"
    target: "sqlite:{dir}/target.db"
    observe: *sql
    expect: rejected
workload: {operations: 1, rows_per_operation: 3, seed: 1}
orchestrator: {retries: 2, zombie_delay_ms: 20, lease_ttl_ms: 20, attempt_timeout_ms: 20000}
scenarios:
  - name: clean
  - name: kill-after-target-commit
    faults:
      - {attempt: 1, failpoint: after_target_commit, action: kill}
  - name: zombie-committing
    faults:
      - {attempt: 1, failpoint: after_committing, action: pause, resume: after_next_attempt}
EOF
expect 0 "$FENCECERT" certify "$tmp/suite.yaml" --out "$tmp/fresh" --quiet
ok "certify wrote a fresh report"

# --- JSON Schema --------------------------------------------------------------------
if [ -n "$PY" ]; then
	expect 0 "$PY" tests/integration/reports_check.py validate "$SCHEMA" \
		"$FIXTURE" "$FIXTURE2" "$tmp/fresh/report.json"
	ok "report.json (both fixtures and a fresh one) valid against $SCHEMA"
	# the schema must be able to say no
	check_py route-set "$FIXTURE" "$tmp/bad-schema.json" naive verdict '"maybe"'
	expect 1 "$PY" tests/integration/reports_check.py validate "$SCHEMA" \
		"$tmp/bad-schema.json"
	ok "schema rejects an unknown verdict"
else
	echo "skipped: JSON Schema validation (no python3 with jsonschema;" \
	     "apt-get install python3-jsonschema)"
fi

# --- rendering ----------------------------------------------------------------------
have_render=1
"$FENCECERT" report --help >/dev/null 2>&1 || have_render=0
if [ "$have_render" = 1 ]; then
	for src in fixture fixture2 fresh; do
		in=$FIXTURE
		[ "$src" = fixture2 ] && in=$FIXTURE2
		[ "$src" = fresh ] && in=$tmp/fresh/report.json
		expect 0 "$FENCECERT" report render "$in" --out "$tmp/r-$src" \
			--format json,junit,md,html
		for f in report.json report.junit.xml summary.md report.html; do
			[ -s "$tmp/r-$src/$f" ] || fail "$src: $f missing or empty"
		done
		xmllint --noout --schema "$XSD" "$tmp/r-$src/report.junit.xml" \
			2>"$tmp/err" || fail "$src: junit invalid: $(cat "$tmp/err")"
		grep -q '| ❌ rejected | rejected | yes |' "$tmp/r-$src/summary.md" ||
			fail "$src: summary.md lacks a rejected control row"
		grep -q 'class="dupband"' "$tmp/r-$src/report.html" ||
			fail "$src: report.html shows no duplicate band"
	done
	ok "rendered json, junit, md, html; JUnit valid against $XSD"
	# the XSD must be able to say no: a testcase without classname
	sed 's/ classname="naive"//' "$tmp/r-fixture/report.junit.xml" >"$tmp/bad.xml"
	if xmllint --noout --schema "$XSD" "$tmp/bad.xml" 2>/dev/null; then
		fail "junit.xsd accepted a testcase without classname"
	fi
	ok "junit.xsd rejects a testcase without classname"
	# a rejected control's timeline says who duplicated what after which
	# fault, in text a reader sees (the browser's DOM is checked below)
	for src in fixture fresh; do
		expect 0 "$PYANY" tests/integration/reports_check.py html-dup \
			"$tmp/r-$src/report.html" naive
	done
	ok "report.html, naive: $(cat "$tmp/out")"
	expect 1 "$PYANY" tests/integration/reports_check.py html-dup \
		"$tmp/r-fixture/report.html" c-sqlite
	ok "html-dup finds no duplicating lane for the certified route"
	expect 2 "$FENCECERT" report render "$tmp/nope.json" --out "$tmp/x"
	expect 64 "$FENCECERT" report render "$FIXTURE" --out "$tmp/x" --format pdf
	ok "report render: exit 2 for a missing report, 64 for an unknown format"
	# --sign signs only a report whose signature verifies with the key
	check_py sign "$FIXTURE" "$tmp/rs-signed.json" "$KEY"
	check_py sign "$FIXTURE" "$tmp/rs-other.json" other-key
	for bad in "$FIXTURE" "$tmp/rs-other.json"; do
		sum=$(sha256sum <"$bad")
		FENCECERT_SIGNING_KEY="$KEY" expect 2 "$FENCECERT" report render \
			"$bad" --out "$tmp/rs-$$" --format json --sign
		[ ! -e "$tmp/rs-$$/report.json" ] || fail "render --sign wrote $bad"
		[ "$(sha256sum <"$bad")" = "$sum" ] || fail "render --sign changed $bad"
	done
	err_has "refusing to sign '$tmp/rs-other.json': signature does not match"
	FENCECERT_SIGNING_KEY="$KEY" expect 2 "$FENCECERT" report render \
		"$FIXTURE" --out "$tmp/rs" --format json --sign
	err_has "refusing to sign '$FIXTURE': it carries no signature"
	FENCECERT_SIGNING_KEY="$KEY" expect 0 "$FENCECERT" report render \
		"$tmp/rs-signed.json" --out "$tmp/rs" --format json --sign
	FENCECERT_SIGNING_KEY="$KEY" expect 0 "$FENCECERT" gate "$tmp/rs/report.json"
	ok "render --sign refuses an unsigned and a wrongly signed report, re-signs a verified one"
else
	echo "skipped: rendering, JUnit XSD and browser checks (this build has" \
	     "no 'fencecert report' command: main.c lacks its row)"
fi

# --- gate ---------------------------------------------------------------------------
DIGEST=$(check_py get "$FIXTURE" 'd["suite"]["digest"]')
check_py sign "$FIXTURE" "$tmp/signed.json" "$KEY"
export FENCECERT_SIGNING_KEY="$KEY"

gate 0 "$tmp/signed.json"
grep -q '"passed": true' "$tmp/out" || fail "gate printed no JSON verdict"
gate 0 "$tmp/signed.json" --route c-sqlite --require certified-automatic \
	--suite-digest "$DIGEST" --tool-version 0.1.0 --require-signature
ok "gate accepts a signed report (default set, and named route at automatic)"

gate 1 "$tmp/signed.json" --suite-digest sha256:0000
err_has "fencecert: GATE: suite digest is '$DIGEST', expected 'sha256:0000'"
ok "gate refuses a suite digest mismatch"

gate 1 "$tmp/signed.json" --route naive --route c-sqlite --route ghost
err_has "fencecert: GATE: route 'naive' is rejected, required certified-fail-closed"
err_has "fencecert: GATE: route 'ghost' is not in the report"
[ "$(grep -c 'GATE:' "$tmp/err")" -eq 2 ] || fail "want 2 reasons: $(cat "$tmp/err")"
ok "gate refuses a route below the required level, one line per reason"

# a route certified only fail-closed: fine for the default, not automatic
check_py route-set "$FIXTURE" "$tmp/fc.json" c-sqlite verdict '"certified-fail-closed"'
check_py sign "$tmp/fc.json" "$tmp/fc.json" "$KEY"
gate 0 "$tmp/fc.json" --route c-sqlite
gate 1 "$tmp/fc.json" --route c-sqlite --require certified-automatic
err_has "route 'c-sqlite' is certified-fail-closed, required certified-automatic"
ok "gate ranks certified-automatic above certified-fail-closed"

# a control that was not rejected: the suite proves nothing
check_py route-set "$FIXTURE" "$tmp/ctl.json" naive verdict '"certified-automatic"'
check_py sign "$tmp/ctl.json" "$tmp/ctl.json" "$KEY"
gate 1 "$tmp/ctl.json"
err_has "control route 'naive' is certified-automatic, expected rejected"
ok "gate refuses when a control route was not rejected"

# tampered: one verdict edited in the signed file's text
sed '0,/"verdict": "rejected"/s//"verdict": "certified-automatic"/' \
	"$tmp/signed.json" >"$tmp/tampered.json"
cmp -s "$tmp/signed.json" "$tmp/tampered.json" && fail "sed changed nothing"
gate 1 "$tmp/tampered.json" --route naive
err_has "fencecert: GATE: signature does not match the report"
ok "gate refuses a tampered verdict"

export FENCECERT_SIGNING_KEY=wrong-key
gate 1 "$tmp/signed.json"
err_has "signature does not match"
export FENCECERT_SIGNING_KEY="$KEY"
ok "gate refuses the wrong key"

gate 1 "$FIXTURE"
err_has "fencecert: GATE: report has no signature"
ok "gate refuses an unsigned report while a key is set"

export FENCECERT_SIGNING_KEY=
gate 1 "$tmp/signed.json"
err_has "FENCECERT_SIGNING_KEY is set but empty"
unset FENCECERT_SIGNING_KEY
gate 1 "$tmp/signed.json" --require-signature
err_has "no signing key"
gate 0 "$FIXTURE"
err_has "signature not checked"
ok "gate: empty key refused; no key: refused with --require-signature, noted otherwise"

echo '{"schema": "fencecert.report.v1"' >"$tmp/broken.json"
gate 2 "$tmp/broken.json"
err_has "is not JSON"
# certify's --out given instead of its report.json: say that, not "not JSON"
gate 2 "$tmp/fresh"
err_has "fencecert: IO: '$tmp/fresh' is a directory, not a report: give the report file, '$tmp/fresh/report.json'"
gate 2 "$tmp/r-fixture/"
err_has "is a directory, not a report"
mkdir "$tmp/empty-dir"
gate 2 "$tmp/empty-dir"
err_has "'$tmp/empty-dir' is a directory, not a report file"
gate 2 "$tmp/missing.json"
gate 64 "$FIXTURE" --require certified-maybe
gate 64
gate 0 --help
ok "gate exit codes: 2 unreadable/invalid, 64 usage"

# --- merge --------------------------------------------------------------------------
check_py split "$FIXTURE" "$tmp/shard" 3
expect 0 "$FENCECERT" merge --unsigned "$tmp/merged.json" "$tmp/shard1.json" \
	"$tmp/shard2.json" "$tmp/shard3.json"
check_py same "$FIXTURE" "$tmp/merged.json" >"$tmp/same" ||
	fail "merged report differs: $(cat "$tmp/same")"
ok "merge of 3 shards of the fixture == the fixture ($(cat "$tmp/same"))"
[ -z "$PY" ] || expect 0 "$PY" tests/integration/reports_check.py validate \
	"$SCHEMA" "$tmp/merged.json"

# shards that say which shard they are must all be there, once
check_py split "$FIXTURE" "$tmp/sh" 3 shard-info
expect 1 "$FENCECERT" merge --unsigned "$tmp/m.json" "$tmp/sh1.json" "$tmp/sh2.json"
err_has "shard 3/3 is missing"
expect 1 "$FENCECERT" merge --unsigned "$tmp/m.json" "$tmp/sh1.json" "$tmp/sh2.json" \
	"$tmp/sh2.json" "$tmp/sh3.json"
err_has "shard 2/3 is given twice"
expect 0 "$FENCECERT" merge --unsigned "$tmp/m.json" "$tmp/sh3.json" "$tmp/sh1.json" \
	"$tmp/sh2.json"
ok "merge refuses a missing or repeated shard"

"$PYANY" - "$tmp/shard2.json" "$tmp/other.json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
d["suite"]["digest"] = "sha256:" + "0" * 64
json.dump(d, open(sys.argv[2], "w"))
EOF
expect 1 "$FENCECERT" merge --unsigned "$tmp/m.json" "$tmp/shard1.json" "$tmp/other.json"
err_has "ran suite sha256:0000"
"$PYANY" - "$tmp/shard2.json" "$tmp/other.json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
d["tool"]["version"] = "9.9.9"
json.dump(d, open(sys.argv[2], "w"))
EOF
expect 1 "$FENCECERT" merge --unsigned "$tmp/m.json" "$tmp/shard1.json" "$tmp/other.json"
err_has "comes from fencecert 9.9.9"
ok "merge refuses shards of another suite or another fencecert"

# the same schedule in two shards counts once; disagreeing copies are refused
expect 0 "$FENCECERT" merge --unsigned "$tmp/m.json" "$tmp/shard1.json" "$tmp/shard1.json" \
	"$tmp/shard2.json" "$tmp/shard3.json"
check_py same "$FIXTURE" "$tmp/m.json" >/dev/null || fail "duplicate shard changed the merge"
"$PYANY" - "$tmp/shard1.json" "$tmp/other.json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
s = [s for r in d["routes"] if r["name"] == "naive" for s in r["schedules"]][0]
s["outcome"] = "converged" if s["outcome"] != "converged" else "not-converged"
json.dump(d, open(sys.argv[2], "w"))
EOF
expect 1 "$FENCECERT" merge --unsigned "$tmp/m.json" "$tmp/shard1.json" "$tmp/other.json"
err_has "differs between shards"
ok "merge counts a repeated schedule once and refuses disagreeing copies"

# verdicts are recomputed: a shard's violations reject the merged route
"$PYANY" - "$tmp/shard1.json" "$tmp/lying.json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
for r in d["routes"]:
    r["verdict"] = "certified-automatic" if r["name"] == "naive" else r["verdict"]
json.dump(d, open(sys.argv[2], "w"))
EOF
expect 0 "$FENCECERT" merge --unsigned "$tmp/m.json" "$tmp/lying.json" "$tmp/shard2.json" \
	"$tmp/shard3.json"
[ "$(check_py get "$tmp/m.json" '[r["verdict"] for r in d["routes"] if r["name"] == "naive"][0]')" = rejected ] ||
	fail "merge copied a shard's verdict instead of recomputing it"
ok "merge recomputes verdicts from the schedules"

# signed merge: inputs must verify, the output is signed
export FENCECERT_SIGNING_KEY="$KEY"
expect 1 "$FENCECERT" merge "$tmp/m.json" "$tmp/shard1.json" "$tmp/shard2.json"
err_has "report has no signature"
for k in 1 2 3; do check_py sign "$tmp/shard$k.json" "$tmp/s$k.json" "$KEY"; done
expect 0 "$FENCECERT" merge "$tmp/m.json" "$tmp/s1.json" "$tmp/s2.json" "$tmp/s3.json"
gate 0 "$tmp/m.json" --suite-digest "$DIGEST"
unset FENCECERT_SIGNING_KEY
ok "signed merge: unsigned inputs refused, output verifies at the gate"

# without a key nothing can be verified: refused unless --unsigned, whose
# output says it is unsigned; --unsigned with a key is a contradiction
rm -f "$tmp/m.json"
expect 1 "$FENCECERT" merge "$tmp/m.json" "$tmp/s1.json" "$tmp/s2.json" "$tmp/s3.json"
err_has "fencecert: MERGE: no signing key: set \$FENCECERT_SIGNING_KEY"
[ ! -e "$tmp/m.json" ] || fail "a refused merge wrote its output"
expect 0 "$FENCECERT" merge --unsigned "$tmp/m.json" "$tmp/s1.json" \
	"$tmp/s2.json" "$tmp/s3.json"
err_has "no signature checked (--unsigned)"
[ "$(check_py get "$tmp/m.json" '"unsigned" in d and "signature" not in d')" = True ] ||
	fail "merge --unsigned did not mark its output unsigned"
[ -z "$PY" ] || expect 0 "$PY" tests/integration/reports_check.py validate \
	"$SCHEMA" "$tmp/m.json"
FENCECERT_SIGNING_KEY="$KEY" expect 1 "$FENCECERT" gate "$tmp/m.json"
err_has "fencecert: GATE: report has no signature"
FENCECERT_SIGNING_KEY="$KEY" expect 64 "$FENCECERT" merge --unsigned \
	"$tmp/m.json" "$tmp/s1.json" "$tmp/s2.json" "$tmp/s3.json"
err_has "--unsigned merges without verifying signatures"
ok "merge without a key: refused, or --unsigned and marked (the gate refuses it)"

# --- real shards: 3 shard runs merged == 1 unsharded run ---------------------------
# scenarios/default.yaml limited to the C route and two controls, two
# fixed scenarios and every exploration kind (discovery and retry waves,
# interleavings, random schedules), so the slicing is exercised on every
# kind of job.
sed "s|build/fencecert|$FENCECERT|" scenarios/default.yaml >"$tmp/default.yaml"
SEL="--route c-sqlite --route naive --route xcom-guard --quiet --only clean
 --only kill-after-target-commit --only every-failpoint --only interleavings
 --only random"
# shellcheck disable=SC2086
expect 0 "$FENCECERT" certify "$tmp/default.yaml" --full-report $SEL --out "$tmp/whole"
for k in 1 2 3; do
	# shellcheck disable=SC2086
	expect 0 "$FENCECERT" certify "$tmp/default.yaml" --full-report $SEL --shard "$k/3" \
		--out "$tmp/real$k"
	grep -q "^shard $k/3: verdicts over this shard" "$tmp/out" ||
		fail "shard $k/3 does not say it is a shard: $(cat "$tmp/out")"
done
expect 0 "$PYANY" tests/integration/reports_check.py shards \
	"$tmp/whole/report.json" "$tmp/real1/report.json" \
	"$tmp/real2/report.json" "$tmp/real3/report.json"
ok "3 real shards partition the unsharded run's schedules ($(cat "$tmp/out"))"
expect 0 "$FENCECERT" merge --unsigned "$tmp/real.json" "$tmp/real1/report.json" \
	"$tmp/real2/report.json" "$tmp/real3/report.json"
check_py same "$tmp/whole/report.json" "$tmp/real.json" >"$tmp/same" ||
	fail "3 merged shards differ from the unsharded run: $(cat "$tmp/same")"
[ "$(check_py get "$tmp/real.json" '" ".join(r["verdict"] for r in d["routes"])')" = \
  "certified-automatic rejected rejected" ] || fail "merged verdicts: $(cat "$tmp/real.json")"
ok "3 real shards merged == 1 unsharded run ($(cat "$tmp/same"))"
[ -z "$PY" ] || expect 0 "$PY" tests/integration/reports_check.py validate \
	"$SCHEMA" "$tmp/real1/report.json" "$tmp/real.json"
expect 1 "$FENCECERT" merge --unsigned "$tmp/m.json" "$tmp/real1/report.json" \
	"$tmp/real2/report.json"
err_has "shard 3/3 is missing"
expect 1 "$FENCECERT" merge --unsigned "$tmp/m.json" "$tmp/real1/report.json" \
	"$tmp/real2/report.json" "$tmp/real3/report.json" "$tmp/whole/report.json"
err_has "some inputs say which shard they are and some do not"
# a shard of another route selection (the count fits, the work does not)
expect 0 "$FENCECERT" certify "$tmp/default.yaml" --route c-sqlite \
	--route naive --quiet --shard 3/3 --out "$tmp/other3" --only clean
expect 1 "$FENCECERT" merge --unsigned "$tmp/m.json" "$tmp/real1/report.json" \
	"$tmp/real2/report.json" "$tmp/other3/report.json"
err_has "certified routes"
expect 0 "$FENCECERT" certify "$tmp/default.yaml" --route c-sqlite \
	--quiet --shard 2/2 --out "$tmp/two" --only clean
expect 1 "$FENCECERT" merge --unsigned "$tmp/m.json" "$tmp/real1/report.json" \
	"$tmp/two/report.json"
err_has "does not fit 3 shards"
for bad in 0/3 4/3 3 1/0 1/3x -1/3 a/b 1/1001; do
	expect 2 "$FENCECERT" certify "$tmp/default.yaml" --shard "$bad"
	err_has "--shard takes I/N with 1 <= I <= N <= 1000 (shards count from 1), not '$bad'"
done
expect 2 "$FENCECERT" certify "$tmp/default.yaml" --shard 1/2 --only clean \
	--schedule clean
err_has "does not combine with --shard"
ok "merge refuses missing, mixed, foreign-selection and other-count shards; bad --shard forms exit 2"

# --- CI templates -------------------------------------------------------------------
if "$PYANY" -c 'import yaml' 2>/dev/null; then
	expect 0 "$PYANY" tests/integration/reports_check.py ci-templates \
		ci/templates/github-actions.yml ci/templates/gitlab-ci.yml
	ok "$(cat "$tmp/out")"
	# the check must be able to say no: no JUnit publishing, no summary
	sed '/name: publish the JUnit results/,/include_passed/d' \
		ci/templates/github-actions.yml >"$tmp/gh.yml"
	expect 1 "$PYANY" tests/integration/reports_check.py ci-templates \
		"$tmp/gh.yml" ci/templates/gitlab-ci.yml
	grep -q "JUnit XML not published" "$tmp/out" || fail "gh: $(cat "$tmp/out")"
	grep -v 'cat merged/summary.md' ci/templates/gitlab-ci.yml >"$tmp/gl.yml"
	expect 1 "$PYANY" tests/integration/reports_check.py ci-templates \
		ci/templates/github-actions.yml "$tmp/gl.yml"
	grep -q "Markdown summary not shown" "$tmp/out" || fail "gl: $(cat "$tmp/out")"
	ok "the CI template check refuses a template that does not publish"
	# the certify job goes on only after 0, 1 or 3: an interrupted (130)
	# or killed (137) run must not reach the signing step
	expect 0 "$PYANY" tests/integration/reports_check.py ci-certify-exit \
		ci/templates/github-actions.yml ci/templates/gitlab-ci.yml
	ok "$(cat "$tmp/out")"
	# the check must be able to say no: the old "anything but 2" line
	sed 's/case "$rc" in 0|1|3) ;; \*) exit "$rc" ;; esac/[ "$rc" -ne 2 ]/' \
		ci/templates/github-actions.yml >"$tmp/gh.yml"
	sed 's/case "$rc" in 0|1|3) ;; \*) exit "$rc" ;; esac/test "$rc" -ne 2/' \
		ci/templates/gitlab-ci.yml >"$tmp/gl.yml"
	cmp -s "$tmp/gh.yml" ci/templates/github-actions.yml && fail "sed changed nothing (gh)"
	cmp -s "$tmp/gl.yml" ci/templates/gitlab-ci.yml && fail "sed changed nothing (gl)"
	expect 1 "$PYANY" tests/integration/reports_check.py ci-certify-exit \
		"$tmp/gh.yml" "$tmp/gl.yml"
	grep -q "github: certify exit 130: job exit 0" "$tmp/out" || fail "gh: $(cat "$tmp/out")"
	grep -q "gitlab: certify exit 137: job exit 0" "$tmp/out" || fail "gl: $(cat "$tmp/out")"
	ok "the certify-exit check refuses a template that tolerates 130/137"
else
	echo "skipped: CI template check (no python3 yaml module; apt-get install" \
	     "python3-yaml)"
fi
# the options the templates use exist
for opt in --require-signature --suite-digest; do
	"$FENCECERT" gate --help | grep -q -- "$opt" || fail "gate lacks $opt"
done
if [ "$have_render" = 1 ]; then
	"$FENCECERT" report --help | grep -q -- --sign || fail "report lacks --sign"
fi
ok "the fencecert options the CI templates use exist"

# --- the HTML in a browser -----------------------------------------------------------
CHROMIUM=""
for c in chromium chromium-browser google-chrome; do
	command -v "$c" >/dev/null 2>&1 && { CHROMIUM=$c; break; }
done
if [ "$have_render" = 0 ]; then
	: # said above
elif [ -z "$CHROMIUM" ]; then
	echo "skipped: no chromium (apt-get install chromium)"
else
	html="$tmp/r-fixture/report.html"
	# --dump-dom prints the DOM after scripts ran; the inline script sets
	# data-fc-script="ran" on <html>.
	for mode in dump shot; do
		set -- --headless --no-sandbox --disable-gpu \
			--disable-background-networking --disable-component-update \
			--disable-sync --no-first-run --user-data-dir="$tmp/chrome-$mode" \
			--enable-logging=stderr --v=0
		if [ "$mode" = dump ]; then
			set -- "$@" --dump-dom
		else
			set -- "$@" --screenshot="$tmp/report.png" --window-size=1400,1000
		fi
		timeout 120 "$CHROMIUM" "$@" "file://$html" >"$tmp/chrome-$mode.out" \
			2>"$tmp/chrome-$mode.err" || true
		if grep -E 'Uncaught|CONSOLE' "$tmp/chrome-$mode.err"; then
			fail "console messages while loading report.html"
		fi
	done
	grep -q 'data-fc-script="ran"' "$tmp/chrome-dump.out" ||
		fail "the inline script did not run (no data-fc-script in the DOM)"
	expect 0 "$PYANY" tests/integration/reports_check.py html-dup \
		"$tmp/chrome-dump.out" naive
	ok "in the browser's DOM, $(cat "$tmp/out")"
	size=$(wc -c <"$tmp/report.png" 2>/dev/null || echo 0)
	[ "$size" -gt 20000 ] || fail "screenshot missing or trivial ($size bytes)"
	ok "chromium: report.html loads without console messages, script ran," \
	   "screenshot $size bytes"
fi

echo "reports.sh: $checks checks passed"
