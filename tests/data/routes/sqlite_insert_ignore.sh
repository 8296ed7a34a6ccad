#!/bin/sh
# sqlite_insert_ignore.sh -- a loader written without fencecert: the
# sqlite3 shell stages the CSV, then inserts it with INSERT OR IGNORE on
# the natural key, in one transaction.  No journal, no failpoints: a retry
# after any crash finds the rows that landed and adds only what is missing.
# Run with `journal: none`: it checks that it got no journal URL.
set -eu
[ -z "${FENCECERT_JOURNAL+set}" ] || { echo "got FENCECERT_JOURNAL" >&2; exit 64; }
db=${FENCECERT_TARGET#sqlite:}
src=$(dirname "$FENCECERT_WORKLOAD")/$(sed -n 's/.*"source": *"\([^"]*\)".*/\1/p' "$FENCECERT_WORKLOAD")
sqlite3 -bail "$db" <<SQL
PRAGMA journal_mode=WAL;
CREATE TABLE IF NOT EXISTS events(row_key TEXT PRIMARY KEY, payload TEXT);
DROP TABLE IF EXISTS stage;
CREATE TABLE stage(row_key TEXT, payload TEXT);
.import --csv --skip 1 $src stage
BEGIN;
INSERT OR IGNORE INTO events SELECT row_key, payload FROM stage;
DROP TABLE stage;
COMMIT;
SQL
