#!/bin/sh
# pg_rows.sh URL SCHEMA TABLE -- the outside suite's observer for the psql
# loaders (observe.command): one "row_key count" line per key of
# SCHEMA.TABLE, nothing while the table does not exist yet.  It counts rows
# by the source row's key, so a row loaded twice shows as 2 whatever else
# the loader's table holds.  Read-only: one READ ONLY transaction, on the
# server directly (never through a fault proxy).
set -eu
[ $# -eq 3 ] || { echo "usage: pg_rows.sh URL SCHEMA TABLE" >&2; exit 64; }
psql=psql
for p in /usr/lib/postgresql/*/bin/psql; do
	[ -x "$p" ] && psql=$p
done
exec "$psql" "$1" -X -q -A -t -F ' ' -v ON_ERROR_STOP=1 -v t="$2.$3" <<'SQL'
BEGIN READ ONLY;
SELECT to_regclass(:'t') IS NOT NULL AS present \gset
\if :present
SELECT row_key, count(*) FROM :t GROUP BY row_key ORDER BY row_key;
\endif
COMMIT;
SQL
