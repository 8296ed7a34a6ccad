#!/bin/sh
# sqlite3_insert_ignore.sh -- a loader written without fencecert that is
# safe to retry: the sqlite3 shell imports the CSV into a TEMP staging
# table, then copies it with INSERT OR IGNORE on the natural key
# (row_key PRIMARY KEY), in one transaction of the target database (its
# default rollback-journal mode).  A retry after any crash finds the rows
# that committed and adds only what is missing; a crash before the commit
# leaves nothing behind (the staging table is not in the target).
#
# No journal, no failpoints, no evidence: the suite runs it with
# `journal: none` and judges it on the target and its exit status.
# Protocol used (docs/routes.md): FENCECERT_TARGET (sqlite:PATH) and
# FENCECERT_WORKLOAD (workload.sh).  Exit status: sqlite3's.
set -eu
. "${0%/*}/workload.sh"
db=${FENCECERT_TARGET#sqlite:}
exec sqlite3 -bail "$db" <<SQL
CREATE TABLE IF NOT EXISTS $table(row_key TEXT PRIMARY KEY, payload TEXT);
CREATE TEMP TABLE stage(row_key TEXT, payload TEXT);
.import --csv --skip 1 --schema temp "$src" stage
BEGIN;
INSERT OR IGNORE INTO main.$table(row_key, payload)
  SELECT row_key, payload FROM temp.stage;
COMMIT;
SQL
