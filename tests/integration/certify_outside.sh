#!/bin/sh
# certify_outside.sh -- scenarios/outside.yaml with this build: loaders
# written without fencecert (psql, the sqlite3 shell, a Python loader with
# its own journal ids), judged by syscall and network faults alone.
#
#   1. The suite: every route gets its exact verdict, for the reason its
#      entry in the suite gives (certify_outside_check.py: the invariant
#      and the schedules that reject psql-copy, sqlite3-import and
#      sqlite3-import-wal; the windows the certified ones were stopped in;
#      the Python loader's own ids).
#   2. A window no fault reached certifies nothing: sqlite3-import explored
#      with [fsync, fdatasync] only (not the unlink of target.db-journal
#      that commits it) is `unverified`, "no-duplicate was never
#      challenged" -- never certified, although no schedule broke anything.
#   3. The checker catches a wrong report: a verdict flipped, a rejection
#      for the wrong reason, a certificate without a stop after the commit,
#      the canonical id in place of the loader's own -- each makes
#      certify_outside_check.py fail.
#
# The server is $FENCECERT_PG_URL when set; otherwise the suite's `pg`
# service starts one.  Skipped (exit 0, saying so) when psql or sqlite3 is
# not installed (ci/install-deps installs both), or when the kernel has no
# seccomp user notification (nothing here could be faulted).
set -eu
BUILD=${BUILD:-build}
FENCECERT=${FENCECERT:-$PWD/$BUILD/fencecert}
CHECK=tests/integration/certify_outside_check.py
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3

for tool in psql sqlite3; do
	if ! command -v "$tool" >/dev/null; then
		echo "skipped: $tool is not installed (ci/install-deps installs it)"
		exit 0
	fi
done
if ! grep -qw user_notif /proc/sys/kernel/seccomp/actions_avail 2>/dev/null; then
	echo "skipped: no seccomp user notification on this kernel"
	exit 0
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/fc-certify-outside.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM

fail() {
	echo "FAIL: $*" >&2
	exit 1
}

# --- 1. the suite ---------------------------------------------------------
start=$(date +%s)
rc=0
"$FENCECERT" certify scenarios/outside.yaml --full-report --jobs 2 --out "$tmp/out" --quiet \
	--format json >"$tmp/table" 2>"$tmp/stderr" || rc=$?
cat "$tmp/table"
echo "suite: exit $rc, $(($(date +%s) - start)) s"
[ "$rc" -eq 0 ] || { tail -n 20 "$tmp/stderr"; fail "certify exited $rc"; }
"$PY" "$CHECK" "$tmp/out/report.json" || fail "the outside suite's verdicts"

# --- 2. the rollback-journal import, its commit point not explored -------
sed -e 's/^      syscalls: \[fsync, fdatasync, unlink\]$/      syscalls: [fsync, fdatasync]/' \
	scenarios/outside.yaml >"$tmp/no-unlink.yaml"
grep -q 'syscalls: \[fsync, fdatasync\]$' "$tmp/no-unlink.yaml" ||
	fail "cannot narrow sqlite-commit-point in scenarios/outside.yaml"
rc=0
"$FENCECERT" certify "$tmp/no-unlink.yaml" --full-report --route sqlite3-import \
	--only sqlite-commit-point --jobs 2 --out "$tmp/no-unlink" --quiet \
	--format json >"$tmp/table" 2>"$tmp/stderr" || rc=$?
cat "$tmp/table"
[ "$rc" -eq 3 ] || fail "sqlite3-import without its commit point explored: certify exited $rc, want 3 (unverified)"
"$PY" - "$tmp/no-unlink/report.json" <<'PY' || fail "sqlite3-import without its commit point explored"
import json, sys
rt = json.load(open(sys.argv[1]))["routes"][0]
why = " ".join(rt["coverage"]["unverified"])
ok = (rt["verdict"] == "unverified" and not rt["violations"] and
      rt["coverage"]["retried_stops"]["after_mutation"] == 0 and
      rt["coverage"]["retried_stops"]["before_mutation"] > 0 and
      "no-duplicate was never challenged" in why)
print("narrowed sqlite3-import:", rt["verdict"], rt["coverage"]["retried_stops"], why)
sys.exit(0 if ok else 1)
PY

# --- 3. the checker fails on a wrong report ------------------------------
# mutate NAME PYTHON-STATEMENTS: a copy of the report changed by the
# statements (r: the report, route(name): one of its routes) must fail
mutate() {
	"$PY" - "$tmp/out/report.json" "$tmp/bad-$1.json" "$2" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
def route(name):
    return next(x for x in r["routes"] if x["name"] == name)
exec(sys.argv[3])
json.dump(r, open(sys.argv[2], "w"))
PY
	if "$PY" "$CHECK" "$tmp/bad-$1.json" >/dev/null 2>"$tmp/bad-$1.err"; then
		fail "certify_outside_check.py accepted a report with $1"
	fi
	echo "ok: a report with $1 is refused: $(head -n 1 "$tmp/bad-$1.err")"
}
mutate "the naive psql loader certified" \
	'route("psql-copy")["verdict"] = "certified-automatic"'
mutate "sqlite3-import rejected before its commit" '
rt = route("sqlite3-import")
bad = next(s for s in rt["schedules"] if s["violations"])
good = next(s for s in rt["schedules"] if ":kill_before@" in s["schedule"])
good["violations"], bad["violations"] = bad["violations"], []'
mutate "psql-staged never stopped after its commit" '
route("psql-staged")["coverage"]["retried_stops"]["after_mutation"] = 0'
mutate "the canonical id in place of the loader's own" '
for s in route("py-journal")["schedules"]:
    op = s["operations"][0]
    op["operation_id"] = op["canonical_operation_id"]'

echo "ok: outside routes judged by what they do"
