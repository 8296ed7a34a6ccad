#!/bin/sh
# certify_postgresql.sh -- scenarios/postgresql.yaml with this build: the
# PostgreSQL fences, the journal on PostgreSQL, and the fault proxy's
# faults (every COMMIT of try 1 cut and held, explored; refuse).  Every
# verdict must meet its expectation, and certify_postgresql_check.py checks
# that each exploration counted the COMMITs it should and each proxy fault
# did what the scenario says (which COMMIT was cut or held, that the
# journal-down try exited 75 without touching the target, ...).
#
# The server is $FENCECERT_PG_URL when set; otherwise the suite's `pg`
# service starts one with ci/pg-up (and stops it).
#
# Four workers: a schedule of this suite mostly waits (on the server, on
# the 2 s lock timeout a held COMMIT makes a retry meet, on zombie delays),
# about half a core each, and the explored COMMITs make ~200 schedules.
set -eu
BUILD=${BUILD:-build}
FENCECERT=${FENCECERT:-$PWD/$BUILD/fencecert}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/fc-certify-pg.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

sed "s#build/fencecert#$BUILD/fencecert#g" scenarios/postgresql.yaml >"$tmp/pg.yaml"

start=$(date +%s)
rc=0
"$FENCECERT" certify "$tmp/pg.yaml" --full-report --jobs 4 --out "$tmp/out" --quiet >"$tmp/table" \
	2>"$tmp/stderr" || rc=$?
cat "$tmp/table"
echo "suite: exit $rc, $(($(date +%s) - start)) s"
[ "$rc" -eq 0 ] || { tail -n 20 "$tmp/stderr"; echo "certify exited $rc"; exit 1; }
python3 tests/integration/certify_postgresql_check.py "$tmp/out/report.json"

echo "ok: postgresql suite"
