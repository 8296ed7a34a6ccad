#!/bin/sh
# psql_copy.sh -- a loader as it is written without fencecert: psql
# `\copy`s the day's CSV straight into the table (one autocommit COPY, so a
# half-read file never lands).  No journal, no failpoints, no key: a retry
# after the COPY committed but its answer was lost copies every row again;
# scenarios/outside.yaml rejects it.
#
# Protocol used (docs/routes.md): FENCECERT_TARGET (pg_target.sh) and
# FENCECERT_WORKLOAD (workload.sh).  Exit status: psql's (0 done, 1-3
# failed).
set -eu
here=${0%/*}
. "$here/workload.sh"
. "$here/pg_target.sh"
exec "$psql" "$url" -X -q -v ON_ERROR_STOP=1 <<SQL
CREATE SCHEMA IF NOT EXISTS $schema;
CREATE TABLE IF NOT EXISTS $table(row_key text, payload text);
\\copy $table(row_key, payload) FROM '$src' WITH (FORMAT csv, HEADER true)
SQL
