#!/bin/sh
# route_fsync.sh -- what the certified C route makes durable before the
# journal moves on, in the order strace sees it (fsync, fdatasync, rename,
# link, mkdir), and what the no-fsync control leaves out:
#
# 1. file: target -- each file is fsynced under its temporary name before
#    its rename or link into place (the epoch file, the data file), and
#    its directory after it (.fencecert/, the table directory); each
#    directory it creates is synced in its parent;
# 2. sqlite: target -- the target's WAL is synced (and its directory, by
#    SQLite) before any evidence is written;
# 3. evidence, both targets -- checkpoint.json and return.json fsynced
#    before their rename, their directories after it, and an XCom
#    directory the route had to create synced in its parent;
# 4. `--variant no-fsync`, file: target -- not one fsync or fdatasync of
#    anything but the journal's own files (kept in a directory of their
#    own), and the same target files, rows and evidence as 1.
#
# Each run's rows are read back (`fencecert target rows`).  Skipped
# without strace, or where strace cannot trace.
set -eu
BUILD=${BUILD:-build}
FENCECERT=${FENCECERT:-$PWD/$BUILD/fencecert}
if ! strace -qq -o /dev/null true 2>/dev/null; then
	echo "route_fsync: strace not installed or not allowed to trace, skipped"
	exit 0
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/fc-route-fsync.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/lib/expect.sh"
# LeakSanitizer cannot run under ptrace
ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0
export ASAN_OPTIONS

cat >"$tmp/workload.json" <<'EOF'
{"identity": {"release": "r1", "deployment": "d1", "dag": "orders",
  "run": "2026-11-01", "workload": "load_orders", "partition": "p0",
  "interval": "2026-11-01/2026-11-02", "target": "events"},
 "intent": {"pack": "pk1", "strategy": "append",
  "target_contract": "events.v1", "schema": "s1"},
 "source": "partition-p0.csv", "table": "events"}
EOF
printf 'row_key,payload\nk1,a\nk2,"b,c"\nk3,\n' >"$tmp/partition-p0.csv"
printf 'k1 1\nk2 1\nk3 1\n' >"$tmp/rows.want"

# run NAME TARGET [ROUTE ARGS...]: one attempt in $tmp/NAME (D; the
# journal in D/j) under strace; its syncs, renames, links and mkdirs that
# succeeded, one "call path [path]" line each with D for $tmp/NAME, in
# $tmp/NAME/calls
run() {
	name=$1 target=$2
	shift 2
	d=$tmp/$name
	mkdir -p "$d/run" "$d/pod" "$d/j"
	expect 0 strace -f -y -qq -e trace=fsync,fdatasync,rename,link,mkdir \
		-o "$d/strace" "$FENCECERT" route --journal "sqlite:$d/j/journal.db" \
		--target "$(echo "$target" | sed "s#DIR#$d#")" \
		--workload "$tmp/workload.json" --run-dir "$d/run" \
		--xcom-dir "$d/pod/xcom" "$@"
	sed -n -e 's/^[0-9]* *\(f[a-z]*sync\)([0-9]*<\([^>]*\)>) = 0$/\1 \2/p' \
		-e 's/^[0-9]* *\(rename\|link\)("\([^"]*\)", "\([^"]*\)") = 0$/\1 \2 \3/p' \
		-e 's/^[0-9]* *\(mkdir\)("\([^"]*\)", [0-7]*) = 0$/\1 \2/p' \
		"$d/strace" | sed "s#$d#D#g" >"$d/calls"
}

# in_order NAME WHAT REGEX...: lines of NAME's calls match the REGEXes
# (whole lines, extended) one after the other, in this order
in_order() {
	name=$1 what=$2
	shift 2
	awk -v n=$# 'BEGIN { for (i = 1; i <= n; i++) re[i] = "^" ARGV[i] "$"; ARGC = 1; i = 1 }
		i <= n && $0 ~ re[i] { i++ }
		END { exit i <= n }' "$@" <"$tmp/$name/calls" ||
		fail "$name: $what: not in order: $*; calls: $(tr '\n' ';' <"$tmp/$name/calls")"
	ok "$name: $what"
}

rows_are_one_each() {
	"$FENCECERT" target rows --target "$1" >"$tmp/rows.got" ||
		fail "target rows of $1"
	cmp -s "$tmp/rows.want" "$tmp/rows.got" ||
		fail "rows of $1: $(cat "$tmp/rows.got")"
}

json_synced() {
	in_order "$1" "$2: fsync, rename, fsync of its dir" \
		"fsync D/$3/\.$2\.[0-9]+\.tmp" \
		"rename D/$3/\.$2\.[0-9]+\.tmp D/$3/$2" "fsync D/$3"
}

evidence_synced() {
	json_synced "$1" checkpoint.json run
	in_order "$1" "a created XCom dir: synced in its parent" \
		'mkdir D/pod/xcom' 'fsync D/pod' 'rename .* D/pod/xcom/return\.json'
	json_synced "$1" return.json pod/xcom
}

# The table dir and .fencecert/ are synced in their parent every time,
# created or not (fence_fs.c, ensure_dir()).
run c-file 'file:DIR/target'
rows_are_one_each "file:$tmp/c-file/target"
in_order c-file "target dir, .fencecert/: created, synced in the parent" \
	'mkdir D/target' 'fsync D' 'mkdir D/target/\.fencecert' 'fsync D/target'
in_order c-file "epoch file: fsync, rename, fsync of .fencecert/" \
	'fsync D/target/\.fencecert/\.epoch-[A-Za-z0-9]+' \
	'rename D/target/\.fencecert/\.epoch-[A-Za-z0-9]+ D/target/\.fencecert/[0-9a-f]+\.epoch' \
	'fsync D/target/\.fencecert'
in_order c-file "table dir: created, synced in the target dir" \
	'mkdir D/target/events' 'fsync D/target'
in_order c-file "data file: fsync, link, fsync of the table dir" \
	'fsync D/target/events/\.tmp-[A-Za-z0-9]+' \
	'link D/target/events/\.tmp-[A-Za-z0-9]+ D/target/events/[0-9a-f]+\.csv' \
	'fsync D/target/events'
evidence_synced c-file

run c-sqlite 'sqlite:DIR/target.db'
rows_are_one_each "sqlite:$tmp/c-sqlite/target.db"
in_order c-sqlite "target WAL: synced, its dir synced (SQLite), then the evidence" \
	'fdatasync D/target\.db-wal' 'fdatasync D' 'fdatasync D/target\.db-wal' \
	'rename .* D/run/checkpoint\.json'
evidence_synced c-sqlite

run nf-file 'file:DIR/target' --variant no-fsync
rows_are_one_each "file:$tmp/nf-file/target"
in_order nf-file "the journal still synced" 'fdatasync D/j/journal\.db-wal'
unsynced=$(grep -E '^f[a-z]*sync ' "$tmp/nf-file/calls" |
	grep -Ev '^f[a-z]*sync D/j(/journal\.db(-wal|-journal)?)?$' || true)
[ -z "$unsynced" ] || fail "no-fsync synced more than its journal: $unsynced"
ok "nf-file: no sync of the target, its directories or the evidence"
(cd "$tmp/c-file/target" && find . | sort) >"$tmp/c-file/tree"
(cd "$tmp/nf-file/target" && find . | sort) >"$tmp/nf-file/tree"
cmp -s "$tmp/c-file/tree" "$tmp/nf-file/tree" ||
	fail "no-fsync target files differ: $(diff "$tmp/c-file/tree" "$tmp/nf-file/tree")"
csv=$(cd "$tmp/c-file" && echo target/events/*.csv)
for f in "$csv" pod/xcom/return.json run/checkpoint.json; do
	cmp -s "$tmp/c-file/$f" "$tmp/nf-file/$f" || fail "no-fsync: $f differs"
done
ok "nf-file: the same target files, data file, return.json and checkpoint.json"

echo "route_fsync: $checks checks ok"
