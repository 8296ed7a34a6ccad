#!/bin/sh
# bench_route.sh -- what the protocol costs: the certified route (journal,
# lease, fence, evidence) against the naive control route (one plain insert
# transaction, no journal), loading the same 1k- and 100k-row partitions
# into a fresh SQLite target, in the same run, alternating the two so drift
# on a shared machine hits both alike.  Reports the median wall time of
# BENCH_REPS runs each (default 5), the overhead, and the fsync + fdatasync
# calls per operation on the happy path, counted with strace -f -c (every
# process of the route, journal and target included): once with new
# database files, once in the steady state (another operation went into the
# same journal and target first).  Target: <= 5 % overhead at 100k rows.
#
# Files go to $BENCH_DIR (default $TMPDIR or /tmp): a real disk, because
# the fsyncs are what the protocol adds.
set -u
FENCECERT=${FENCECERT:-build/fencecert}
REPS=${BENCH_REPS:-5}
base=$(mktemp -d "${BENCH_DIR:-${TMPDIR:-/tmp}}/fc-bench-route.XXXXXX") || exit 1
trap 'rm -rf "$base"' EXIT

workload() { # workload PARTITION: the workload JSON of one operation
	printf '{"identity": {"release": "r1", "deployment": "d1", "dag": "orders",
  "run": "2026-11-01", "workload": "load_orders", "partition": "%s",
  "interval": "2026-11-01/2026-11-02", "target": "events"},
 "intent": {"pack": "pk1", "strategy": "append", "target_contract": "events.v1",
  "schema": "s1"},
 "source": "partition.csv", "table": "events"}\n' "$1"
}

# Partition of $1 rows in $base/p$1 and two workloads over it: workload.json
# is measured, warmup.json is another operation that fills the databases
# first for the steady-state count.
make_partition() {
	d=$base/p$1
	mkdir -p "$d"
	workload "p-$1" >"$d/workload.json"
	workload "p-$1-warmup" >"$d/warmup.json"
	awk -v n="$1" 'BEGIN {
		print "row_key,payload"
		for (i = 0; i < n; i++)
			printf "k%07d,\"payload %d, quoted \"\"%d\"\"\"\n", i, i, i * 7919 % 100003
	}' >"$d/partition.csv"
}

now_ns() { date +%s%N; }

# route VARIANT WORKLOAD: one attempt into the databases of $base/run.
route() {
	variant=$1 w=$2
	shift 2
	set -- --workload "$w" --target "sqlite:$base/run/target.db" \
		--journal "sqlite:$base/run/journal.db" --xcom-dir "$base/run/xcom" \
		--run-dir "$base/run/scratch" "$@"
	[ "$variant" = fenced ] || set -- --variant "$variant" "$@"
	"$FENCECERT" route "$@" 2>>"$base/run.log"
}

fresh_run_dir() { rm -rf "$base/run" && mkdir -p "$base/run"; }

# load_once VARIANT ROWS: wall time in microseconds of one load into new
# database files.
load_once() {
	fresh_run_dir
	sync
	t0=$(now_ns)
	route "$1" "$base/p$2/workload.json" || { cat "$base/run.log" >&2; return 1; }
	t1=$(now_ns)
	echo $(((t1 - t0) / 1000))
}

median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

# syncs VARIANT ROWS fresh|warm: fsync + fdatasync calls of one load.
syncs() {
	command -v strace >/dev/null || { echo n/a; return; }
	fresh_run_dir
	if [ "$3" = warm ]; then
		route "$1" "$base/p$2/warmup.json" || { echo n/a; return; }
	fi
	# shellcheck disable=SC2046 # "--variant NAME" is two words
	strace -f -c -e trace=fsync,fdatasync -o "$base/strace" "$FENCECERT" route \
		$([ "$1" = fenced ] || echo "--variant $1") \
		--workload "$base/p$2/workload.json" --target "sqlite:$base/run/target.db" \
		--journal "sqlite:$base/run/journal.db" --xcom-dir "$base/run/xcom" \
		--run-dir "$base/run/scratch" 2>/dev/null || { echo n/a; return; }
	awk '$NF == "fsync" || $NF == "fdatasync" { n += $4 } END { print n + 0 }' \
		"$base/strace"
}

[ -x "$FENCECERT" ] || { echo "bench_route: no binary at '$FENCECERT'" >&2; exit 1; }
printf '%-7s %10s %10s %9s   %s\n' rows naive_ms fenced_ms overhead \
	"fsync+fdatasync per operation: naive/fenced (new files; steady state)"
summary=""
for n in 1000 100000; do
	make_partition "$n"
	: >"$base/naive.t"
	: >"$base/fenced.t"
	for _ in $(seq "$REPS"); do
		load_once naive "$n" >>"$base/naive.t" || exit 1
		load_once fenced "$n" >>"$base/fenced.t" || exit 1
	done
	naive=$(median <"$base/naive.t")
	fenced=$(median <"$base/fenced.t")
	overhead=$(awk -v f="$fenced" -v b="$naive" 'BEGIN { printf "%.1f", (f - b) * 100 / b }')
	syncs_new="$(syncs naive "$n" fresh)/$(syncs fenced "$n" fresh)"
	syncs_warm="$(syncs naive "$n" warm)/$(syncs fenced "$n" warm)"
	printf '%-7s %10.1f %10.1f %8s%%   %s; %s\n' "$n" \
		"$(awk -v u="$naive" 'BEGIN { print u / 1000 }')" \
		"$(awk -v u="$fenced" 'BEGIN { print u / 1000 }')" "$overhead" \
		"$syncs_new" "$syncs_warm"
	if [ "$n" = 100000 ]; then
		verdict=$(awk -v o="$overhead" 'BEGIN { print (o <= 5.0) ? "ok" : "MISSED" }')
		summary="bench_route: 100000 rows: fenced $((fenced / 1000)) ms vs naive $((naive / 1000)) ms (median of $REPS), overhead $overhead% (target <= 5%: $verdict); fsync+fdatasync per operation naive/fenced: $syncs_new with new files, $syncs_warm steady state"
	fi
done
echo "$summary"
