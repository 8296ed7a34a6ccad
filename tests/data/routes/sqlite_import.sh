#!/bin/sh
# sqlite_import.sh -- the naive loader: `.import` straight into the table.
# A retry after its commit landed imports every row again.
set -eu
db=${FENCECERT_TARGET#sqlite:}
src=$(dirname "$FENCECERT_WORKLOAD")/$(sed -n 's/.*"source": *"\([^"]*\)".*/\1/p' "$FENCECERT_WORKLOAD")
sqlite3 -bail "$db" <<SQL
PRAGMA journal_mode=WAL;
CREATE TABLE IF NOT EXISTS events(row_key TEXT, payload TEXT);
.import --csv --skip 1 $src events
SQL
