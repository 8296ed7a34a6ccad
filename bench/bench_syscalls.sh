#!/bin/sh
# bench_syscalls.sh -- the same exploration run two ways in one run: "kill
# the route at the N-th fdatasync of try 1, then retry", for every N the
# route reaches (the SQLite journal's and target's files).
#
#   fencecert   `fencecert certify` of an explore scenario
#               {syscalls: [fdatasync], actions: [kill_before]} on the C
#               route, one worker (--jobs 1): seccomp user notification,
#               discovery run included, every schedule checked; run twice,
#               with the route's attempts forked by its fork server
#               (docs/fork-server.md) and exec'd, and the faster one is
#               compared with strace.
#   strace      for N = 1..COUNT: a fresh directory, try 1 under
#               `strace -f -e inject=fdatasync:signal=SIGKILL:when=N`, then
#               try 2 plain -- no discovery, no checking, no observation,
#               so the baseline does strictly less work per schedule.
#
# Reports schedules per second for each and the ratio; target: fencecert
# at least 3x faster at 20 rows, 2x at 5000 (the route's own work counts
# for more there: see below).  Rows per operation: each of $BENCH_SYS_ROWS (default
# "20 5000": the exhaustive suite's partition, and a small real one), the
# whole comparison once per size.  COUNT is the fdatasync count of one
# plain try 1, counted with strace -c, so both explore the same N.
#
# What bounds the ratio.  strace stops the route at every system call
# (ptrace; ~50 us a stop on the PVM development VM, a 5000-row try costs
# 4x its plain CPU traced), seccomp only at the intercepted fdatasync.  But
# only try 1 runs traced, killed on average half way, and try 2 runs plain
# both ways.  With 20 rows starting the route dominates: strace pays an
# exec of strace and of the route per try, fencecert's fork server neither.
# With 5000 rows the route's own work dominates: strace ~ 4 x T/2 + T per
# schedule (T = one plain try).  A harness re-running each try 1 up to its
# kill pays T/2 + T at best, 2x; fencecert records try 1 once and starts
# each schedule from the state recorded at its fdatasync (docs/
# crash-states.md), so it pays T plus the checking: the target read after
# the retry (the end of the schedule repeats that observation when nothing
# ran since) and the verdict, and each worker copies a workload's expected
# rows from the last schedule instead of inserting them again; an
# observation of rows the worker has seen before repeats them, with the
# checks' counts kept (obs_store.h: observations named by content), so
# the checking costs the target read and a sort.
set -u
FENCECERT=${FENCECERT:-build/fencecert}
ROWS=${BENCH_SYS_ROWS:-20 5000} # rows per operation, both ways
case $ROWS in *" "*) # one whole comparison per size
	for r in $ROWS; do BENCH_SYS_ROWS=$r sh "$0" || exit 1; done
	exit 0 ;;
esac
command -v strace >/dev/null || { echo "bench_syscalls: strace not installed, skipped"; exit 0; }
[ -x "$FENCECERT" ] || { echo "bench_syscalls: no binary at '$FENCECERT'" >&2; exit 1; }
# tmpfs when there is one, like certify's work dir: the kills test process
# death, and a disk's fsyncs would drown what is compared
[ -w /dev/shm ] && dflt=/dev/shm || dflt=${TMPDIR:-/tmp}
base=$(mktemp -d "${BENCH_DIR:-$dflt}/fc-bench-sys.XXXXXX") || exit 1
trap '[ -n "${BENCH_KEEP:-}" ] || rm -rf "$base"' EXIT

cat >"$base/suite.yaml" <<EOF
version: 1
suite: bench-syscalls
routes:
  - name: c-sqlite
    command: [$FENCECERT, route]
    fork_server: true
    journal: "sqlite:{dir}/journal.db"
    target: "sqlite:{dir}/target.db"
    observe:
      sql: "SELECT row_key, COUNT(*) FROM events GROUP BY row_key"
workload: {operations: 1, rows_per_operation: $ROWS, seed: 1}
orchestrator: {retries: 1, zombie_delay_ms: 5, lease_ttl_ms: 5, attempt_timeout_ms: 20000}
scenarios:
  - name: kill-at-every-fdatasync
    explore:
      syscalls: [fdatasync]
      actions: [kill_before]
      paths: ["{dir}/*"]
EOF

printf '{"identity": {"release": "r1", "deployment": "d1", "dag": "orders",
  "run": "2026-11-01", "workload": "load_orders", "partition": "p1",
  "interval": "2026-11-01/2026-11-02", "target": "events"},
 "intent": {"pack": "pk1", "strategy": "append", "target_contract": "events.v1",
  "schema": "s1"},
 "source": "partition.csv", "table": "events"}\n' >"$base/workload.json"
awk -v n="$ROWS" 'BEGIN { print "row_key,payload"; for (i = 0; i < n; i++) printf "k%d,p%d\n", i, i }' \
	>"$base/partition.csv"

now_ms() { echo $(($(date +%s%N) / 1000000)); }

# try DIR N [strace args...]: one attempt of the route in DIR (its own
# variable names: sh functions share the caller's).
try() {
	t_dir=$1 t_n=$2
	shift 2
	FENCECERT_LEASE_TTL_MS=5 FENCECERT_LEASE_OWNER="try$t_n" "$@" "$FENCECERT" route \
		--workload "$base/workload.json" --target "sqlite:$t_dir/target.db" \
		--journal "sqlite:$t_dir/journal.db" --xcom-dir "$t_dir/xcom-$t_n" \
		--run-dir "$t_dir/run" --try "$t_n" 2>>"$base/route.log"
}

# COUNT: fdatasync calls of one plain try 1 (all on the journal and target)
mkdir -p "$base/count"
strace -f -c -e trace=fdatasync -o "$base/count.strace" sh -c "$(cat <<EOF
FENCECERT_LEASE_TTL_MS=5 "$FENCECERT" route --workload "$base/workload.json" \
	--target "sqlite:$base/count/target.db" --journal "sqlite:$base/count/journal.db" \
	--xcom-dir "$base/count/xcom" --run-dir "$base/count/run" 2>/dev/null
EOF
)" || { echo "bench_syscalls: the route failed" >&2; exit 1; }
count=$(awk '$NF == "fdatasync" { n += $4 } END { print n + 0 }' "$base/count.strace")
[ "$count" -gt 0 ] || { echo "bench_syscalls: no fdatasync seen" >&2; exit 1; }

# strace: kill at the N-th fdatasync, then retry
t0=$(now_ms)
n=1
while [ "$n" -le "$count" ]; do
	d=$base/s$n
	mkdir -p "$d"
	try "$d" 1 strace -f -o /dev/null -e trace=fdatasync \
		-e inject=fdatasync:signal=SIGKILL:when="$n" >/dev/null 2>&1
	# the retry: exit 75 while the killed try's 5 ms lease is still live
	k=0
	until try "$d" 2; do
		k=$((k + 1))
		[ "$k" -lt 200 ] || { echo "bench_syscalls: retry after a kill at fdatasync #$n failed" >&2; exit 1; }
	done
	rm -rf "$d"
	n=$((n + 1))
done
t1=$(now_ms)
strace_ms=$((t1 - t0))

# fencecert: the same exploration, plus discovery and checking, with the
# fork server (the suite as written) and exec'd
sed '/^ *fork_server:/d' "$base/suite.yaml" >"$base/suite-exec.yaml"
fencecert_run() { # SUITE: prints "MS SCHEDULES"
	rm -rf "$base/out"
	t0=$(now_ms)
	"$FENCECERT" certify "$1" --jobs 1 --quiet --format json \
		--out "$base/out" --work-dir "$base" >/dev/null 2>"$base/certify.log" ||
		{ cat "$base/certify.log" >&2; echo "bench_syscalls: certify failed" >&2; exit 1; }
	t1=$(now_ms)
	echo "$((t1 - t0)) $(python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print(sum(1 for s in r['routes'][0]['schedules'] if s['kind'] == 'syscall'))" "$base/out/report.json")"
}
set -- $(fencecert_run "$base/suite.yaml") $(fencecert_run "$base/suite-exec.yaml")
fk_ms=$1 fk_sched=$2 ex_ms=$3 ex_sched=$4

# the target of this size: 3x up to the suite's partition, 2x above
want=3
[ "$ROWS" -gt 20 ] && want=2
awk -v c="$count" -v sm="$strace_ms" -v ks="$fk_sched" -v km="$fk_ms" -v want="$want" \
	-v es="$ex_sched" -v em="$ex_ms" -v rows="$ROWS" -v load="$(cut -d' ' -f1-3 /proc/loadavg)" 'BEGIN {
	s = c * 1000 / sm; k = ks * 1000 / km; e = es * 1000 / em
	f = k > e ? k : e; r = f / s
	printf "%-22s %10s %10s %12s\n", "way", "schedules", "ms", "schedules/s"
	printf "%-22s %10d %10d %12.1f\n", "strace", c, sm, s
	printf "%-22s %10d %10d %12.1f  (%.1fx strace)\n", "fencecert fork server", ks, km, k, k / s
	printf "%-22s %10d %10d %12.1f  (%.1fx strace)\n", "fencecert exec", es, em, e, e / s
	printf "bench_syscalls: %d rows, kill at the N-th fdatasync then retry, N = 1..%d: fencecert %.1f schedules/s (%s; seccomp, checked, discovery included) vs strace %.1f schedules/s: %.1fx (target >= %dx: %s); load average %s\n", rows, c, f, (k > e ? "fork server" : "exec"), s, r, want, (r >= want ? "ok" : "MISSED"), load
}'
