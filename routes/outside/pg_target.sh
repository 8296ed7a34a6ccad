# pg_target.sh -- sourced by the psql loaders of routes/outside/: where to
# load.  FENCECERT_TARGET is a libpq URL that names the schema to load
# into with a `schema=NAME` parameter, as fencecert's own PostgreSQL
# targets do; libpq does not know that one, so it is taken off the URL
# (the other parameters stay) and made the session's search_path.  Sets
# `url`, `schema` and `psql`, exports PGOPTIONS.
# shellcheck disable=SC2034 # url, schema, psql: for the loader sourcing it
t=${FENCECERT_TARGET:?FENCECERT_TARGET is not set}
url=${t%%\?*}
schema=public
rest=
case $t in
*\?*)
	set -f
	old_ifs=$IFS IFS='&'
	for kv in ${t#*\?}; do
		case $kv in
		schema=*) schema=${kv#schema=} ;;
		?*) rest=${rest:+$rest&}$kv ;;
		esac
	done
	IFS=$old_ifs
	set +f
	;;
esac
url=$url${rest:+?$rest}
case $schema in
'' | [0-9]* | *[!a-z0-9_]*)
	echo "$0: bad schema name '$schema' in FENCECERT_TARGET" >&2
	exit 64
	;;
esac
# lock_timeout: never wait forever behind another session's load;
# client_min_messages: no NOTICE for every IF NOT EXISTS
PGOPTIONS="-c search_path=$schema -c lock_timeout=500ms -c client_min_messages=warning"
export PGOPTIONS
# Debian's /usr/bin/psql is a Perl wrapper that looks for local clusters
# first (~0.2 s per call on a loaded machine); call the client itself when
# it is installed there.
psql=psql
for p in /usr/lib/postgresql/*/bin/psql; do
	[ -x "$p" ] && psql=$p
done
