# workload.sh -- sourced by the shell loaders of routes/outside/: what to
# load, from the workload file the harness names (docs/routes.md, "The
# workload").  Sets `src` (the source partition CSV: "source", relative to
# the workload file) and `table` ("table").  The file is the harness's own
# JSON of plain "key": "value" fields, so one sed finds both; a loader in a
# language with a JSON parser reads it with that (py_journal.py).  Only
# names of [A-Za-z0-9._-] are taken, so what is eval'd is plain words.
w=${FENCECERT_WORKLOAD:?FENCECERT_WORKLOAD is not set}
src='' table=''
eval "$(sed -n -e h -e 's/.*"source": *"\([A-Za-z0-9._-]*\)".*/src=\1/p' \
	-e g -e 's/.*"table": *"\([A-Za-z_][A-Za-z0-9_]*\)".*/table=\1/p' "$w")"
if [ -z "$src" ] || [ -z "$table" ]; then
	echo "$0: no plain \"source\" and \"table\" in '$w'" >&2
	exit 64
fi
src=${w%/*}/$src
[ -r "$src" ] || { echo "$0: cannot read the source '$src'" >&2; exit 64; }
