#!/bin/sh
# psql_staged.sh -- a loader written without fencecert that is safe to
# retry: psql `\copy`s the CSV into a temporary staging table, then
# `INSERT ... ON CONFLICT (row_key) DO NOTHING` into the table, in one
# transaction.  A retry after a COMMIT whose answer was lost finds the rows
# and adds nothing; one after a failure before the COMMIT finds nothing and
# loads everything.  While an earlier session's COMMIT is still in flight,
# its inserted keys make the retry wait (a unique index waits for the
# transaction that inserted a key): lock_timeout (pg_target.sh) ends that
# wait with an error instead of a hang, and a later retry finds the rows
# committed.
#
# No journal, no failpoints, no evidence: the suite runs it with
# `journal: none` and judges it on the target and its exit status.
# Protocol used (docs/routes.md): FENCECERT_TARGET (pg_target.sh) and
# FENCECERT_WORKLOAD (workload.sh).  Exit status: psql's (0 done, 1-3
# failed).
set -eu
here=${0%/*}
. "$here/workload.sh"
. "$here/pg_target.sh"
exec "$psql" "$url" -X -q -v ON_ERROR_STOP=1 <<SQL
CREATE SCHEMA IF NOT EXISTS $schema;
CREATE TABLE IF NOT EXISTS $table(row_key text PRIMARY KEY, payload text);
BEGIN;
CREATE TEMP TABLE stage(row_key text, payload text) ON COMMIT DROP;
\\copy stage(row_key, payload) FROM '$src' WITH (FORMAT csv, HEADER true)
INSERT INTO $table(row_key, payload)
  SELECT row_key, payload FROM stage
  ON CONFLICT (row_key) DO NOTHING;
COMMIT;
SQL
