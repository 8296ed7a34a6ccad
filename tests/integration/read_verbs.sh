#!/bin/sh
# read_verbs.sh -- the read verbs change nothing they are pointed at:
#
#   journal get | list | history     (cli/cmd_journal.c, read-only open)
#   target rows | fences | probe     (cli/cmd_target.c, read-only observer)
#   recover list | inspect | plan    (recover/, read-only open)
#
# Each runs against files that are not journals -- an SQLite database with
# a table of its own (rollback-journal mode), one in WAL mode, a file that
# is no database, a path that does not exist -- and every file of the
# directory (names and bytes) is compared before and after: a journal verb
# must refuse them with a clear error and change not one byte (no schema,
# no WAL switch, no -wal/-shm, no new file).  Then a real journal still
# reads, and reading it leaves it byte for byte as it was.  With
# FENCECERT_PG_URL set, the same on a PostgreSQL schema that holds no
# journal: refused, and the schema is not created.
set -eu

FENCECERT=${FENCECERT:-$PWD/${BUILD:-build}/fencecert}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/fc-read-verbs.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
OP=sha256:1111111111111111111111111111111111111111111111111111111111111111
INTENT=sha256:2222222222222222222222222222222222222222222222222222222222222222
. "$(dirname "$0")/lib/expect.sh"

# snapshot: every file under $tmp/d, names and bytes
snapshot() {
	(cd "$tmp/d" && find . -type f | LC_ALL=C sort | xargs -r sha256sum)
}

# verb WANT_EXIT FAMILY ARGS... : fencecert ARGS; exit status WANT_EXIT,
# "fencecert: FAMILY: " on stderr (FAMILY "-": no error expected)
verb() {
	want=$1 family=$2
	shift 2
	set +e
	"$FENCECERT" "$@" >"$tmp/out" 2>"$tmp/err"
	got=$?
	set -e
	[ "$got" -eq "$want" ] ||
		fail "$*: exit $got, want $want; stderr: $(cat "$tmp/err")"
	if [ "$family" != - ]; then
		grep -q "^fencecert: $family: " "$tmp/err" ||
			fail "$*: stderr lacks '$family': $(cat "$tmp/err")"
	fi
}

# untouched FILE WANT_JOURNAL WANT_TARGET: run every read verb on FILE (a
# journal verb must exit WANT_JOURNAL "STATUS FAMILY", a target verb
# WANT_TARGET likewise) and compare the directory before and after each
untouched() {
	f=$1
	J="sqlite:$tmp/d/$f"
	snapshot >"$tmp/before"
	for args in "journal get --journal $J --op $OP" \
		    "journal list --journal $J" \
		    "journal history --journal $J --op $OP" \
		    "recover list --journal $J" \
		    "recover inspect --journal $J --target $J --op $OP" \
		    "recover plan --journal $J --target $J --op $OP" \
		    "target rows --target $J" \
		    "target fences --target $J" \
		    "target probe --target $J --op $OP"; do
		case "$args" in
		target*) want=$3 ;;
		*) want=$2 ;;
		esac
		# shellcheck disable=SC2086
		verb $want $args
		snapshot >"$tmp/after"
		cmp -s "$tmp/before" "$tmp/after" ||
			fail "'$args' changed files: $(diff "$tmp/before" "$tmp/after")"
	done
}

mkdir "$tmp/d"
python3 - "$tmp/d" <<'EOF'
import sqlite3, sys
d = sys.argv[1]
c = sqlite3.connect(d + "/plain.db")
c.execute("CREATE TABLE people(name TEXT, age INTEGER)")
c.execute("INSERT INTO people VALUES ('ada', 36)")
c.commit()
c.close()
c = sqlite3.connect(d + "/wal.db")
c.execute("PRAGMA journal_mode=WAL")
c.execute("CREATE TABLE orders(id INTEGER PRIMARY KEY, total REAL)")
c.execute("INSERT INTO orders(total) VALUES (9.5)")
c.commit()
c.close()
EOF
printf 'not a database, not at all: %0400d\n' 0 >"$tmp/d/text.db"

# --- files that are not journals ---------------------------------------------------
untouched plain.db "69 JOURNAL_UNAVAILABLE" "0 -"
verb 69 JOURNAL_UNAVAILABLE journal list --journal "sqlite:$tmp/d/plain.db"
grep -q "plain.db' has no fencecert journal schema" "$tmp/err" ||
	fail "journal list: unclear refusal: $(cat "$tmp/err")"
[ "$(python3 -c 'import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
print(c.execute("PRAGMA journal_mode").fetchone()[0],
      [r[0] for r in c.execute("SELECT name FROM sqlite_master")])' \
	"$tmp/d/plain.db")" = "delete ['people']" ] ||
	fail "plain.db gained tables or WAL"
ok "an SQLite file with a table of its own: journal verbs refuse it (69), target verbs see no rows; not a byte changed"

untouched wal.db "69 JOURNAL_UNAVAILABLE" "0 -"
ok "the same in WAL mode: no byte, no -wal/-shm left"

untouched text.db "1 CORRUPT" "69 FENCE_UNAVAILABLE"
grep -q "file is not a database" "$tmp/err" || fail "text.db: unclear: $(cat "$tmp/err")"
ok "a file that is no database: refused by every verb, not a byte changed"

untouched missing.db "2 NOT_FOUND" "0 -"
[ ! -e "$tmp/d/missing.db" ] || fail "a read verb created missing.db"
verb 2 NOT_FOUND journal get --journal "sqlite:$tmp/d/missing.db" --op "$OP"
grep -q "journal '$tmp/d/missing.db' does not exist" "$tmp/err" ||
	fail "missing journal: unclear: $(cat "$tmp/err")"
ok "a journal that does not exist: NOT_FOUND (2), no file created"

# --- a real journal still reads, and reading writes nothing --------------------------
J="sqlite:$tmp/d/journal.db"
verb 0 - journal create --journal "$J" --op "$OP" --intent "$INTENT"
verb 0 - journal lease --journal "$J" --op "$OP" --owner w1 --ttl-ms 1000
verb 0 - journal cas --journal "$J" --op "$OP" --expect-version 1 --to PREPARED --epoch 1
snapshot >"$tmp/before"
verb 0 - journal get --journal "$J" --op "$OP"
grep -q '"state": "PREPARED"' "$tmp/out" || fail "get: $(cat "$tmp/out")"
verb 0 - journal list --journal "$J"
grep -q "\"operation_id\": \"$OP\"" "$tmp/out" || fail "list: $(cat "$tmp/out")"
verb 0 - journal history --journal "$J" --op "$OP"
[ "$(grep -c '"version"' "$tmp/out")" -eq 2 ] || fail "history: $(cat "$tmp/out")"
verb 2 NOT_FOUND journal get --journal "$J" --op sha256:0000
verb 0 - recover list --journal "$J"
snapshot >"$tmp/after"
cmp -s "$tmp/before" "$tmp/after" ||
	fail "reading a real journal changed files: $(diff "$tmp/before" "$tmp/after")"
# and the write verbs still write
verb 0 - journal cas --journal "$J" --op "$OP" --expect-version 2 --to COMMITTING --epoch 1
verb 0 - journal get --journal "$J" --op "$OP"
grep -q '"state": "COMMITTING"' "$tmp/out" || fail "get after cas: $(cat "$tmp/out")"
ok "a real journal: get/list/history read it and change no byte; writes still work"

# --- PostgreSQL: a schema without a journal is not created ----------------------------
if [ -n "${FENCECERT_PG_URL:-}" ] && command -v psql >/dev/null 2>&1 &&
   ! psql "$FENCECERT_PG_URL" -Atc 'SELECT 1' >/dev/null 2>&1; then
	fail "FENCECERT_PG_URL is set but the server does not answer"
elif [ -n "${FENCECERT_PG_URL:-}" ] && command -v psql >/dev/null 2>&1; then
	S="fc_read_verbs_$$"
	case "$FENCECERT_PG_URL" in
	*\?*) PJ="$FENCECERT_PG_URL&schema=$S" ;;
	*) PJ="$FENCECERT_PG_URL?schema=$S" ;;
	esac
	schema_count() {
		psql "$FENCECERT_PG_URL" -Atc \
			"SELECT count(*) FROM pg_namespace WHERE nspname = '$S'"
	}
	[ "$(schema_count)" -eq 0 ] || fail "schema $S exists already"
	verb 69 JOURNAL_UNAVAILABLE journal list --journal "$PJ"
	grep -q "has no fencecert schema; opened read-only, nothing created" "$tmp/err" ||
		fail "pg: unclear: $(cat "$tmp/err")"
	verb 69 JOURNAL_UNAVAILABLE journal get --journal "$PJ" --op "$OP"
	verb 69 JOURNAL_UNAVAILABLE journal history --journal "$PJ" --op "$OP"
	verb 0 - target rows --target "$PJ"
	verb 0 - target fences --target "$PJ"
	verb 0 - target probe --target "$PJ" --op "$OP"
	[ "$(schema_count)" -eq 0 ] || {
		psql "$FENCECERT_PG_URL" -qc "DROP SCHEMA $S CASCADE" >/dev/null 2>&1
		fail "a read verb created schema $S"
	}
	ok "PostgreSQL: journal verbs refuse a schema without a journal (69), no verb creates it"
else
	echo "skipped: PostgreSQL part (FENCECERT_PG_URL unset or no psql)"
fi

echo "read_verbs.sh: $checks checks passed"
