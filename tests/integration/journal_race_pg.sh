#!/bin/sh
# journal_race_pg.sh -- tests/test_journal_race.c (eight processes racing
# the same CAS, create and lease each round; exactly one winner) against the
# PostgreSQL journal adapter.
#
# The server is $FENCECERT_PG_URL when set, else one started here with
# ci/pg-up in a temp dir and stopped at the end.  The journal lives in a
# schema of its own (?schema=fc_race_PID), dropped afterwards.
set -eu
BUILD=${BUILD:-build}
bin=$BUILD/tests/test_journal_race
PG_BIN=${PG_BIN:-/usr/lib/postgresql/15/bin}

[ -x "$bin" ] || { echo "FAIL: $bin is not built (make $bin)" >&2; exit 1; }

dir=""
url=${FENCECERT_PG_URL:-}
schema=fc_race_$$

cleanup() {
	if [ -n "$url" ]; then
		"$PG_BIN/psql" -X -q "$url" -c "DROP SCHEMA IF EXISTS $schema CASCADE" \
			>/dev/null 2>&1 || true
	fi
	if [ -n "$dir" ]; then
		ci/pg-down "$dir" || true
		rm -rf "$dir"
	fi
}
trap cleanup EXIT
trap 'exit 1' INT TERM

if [ -z "$url" ]; then
	dir=$(mktemp -d /tmp/fc-race-pg-XXXXXX)
	url=$(ci/pg-up "$dir")
fi
case $url in
*\?*) race_url="$url&schema=$schema" ;;
*) race_url="$url?schema=$schema" ;;
esac

echo "racing on $(echo "$race_url" | sed 's|//[^@/]*:[^@/]*@|//***@|')"
FENCECERT_RACE_URL=$race_url "$bin"
