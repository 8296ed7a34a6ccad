#!/bin/sh
# sqlite3_import.sh [wal] -- a loader as it is written without fencecert:
# the sqlite3 shell imports the day's CSV straight into the table.  No
# journal, no failpoints, no key: whatever the file holds is appended.
#
# With `wal` the database is switched to WAL mode first (a persistent
# property of the file), otherwise it stays in SQLite's default
# rollback-journal mode.  Either way a retry after the import committed
# appends every row again: scenarios/outside.yaml rejects it.
#
# Protocol used (docs/routes.md): FENCECERT_TARGET (sqlite:PATH) and
# FENCECERT_WORKLOAD (workload.sh).  Exit status: sqlite3's.
set -eu
. "${0%/*}/workload.sh"
db=${FENCECERT_TARGET#sqlite:}
mode=delete
[ "${1:-}" = wal ] && mode=wal
exec sqlite3 -bail "$db" <<SQL
PRAGMA journal_mode=$mode;
CREATE TABLE IF NOT EXISTS $table(row_key TEXT, payload TEXT);
.import --csv --skip 1 "$src" $table
SQL
