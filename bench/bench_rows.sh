#!/bin/sh
# bench_rows.sh -- what certifying a big partition costs in memory and in
# report size: one kill schedule (kill at after_target_commit in try 1) of
# the naive control route, which writes every row again in try 2, over 1
# operation of 1k rows and of BENCH_ROWS_BIG rows (default 1 000 000, the
# most a workload may hold).  Prints, for each, the peak RSS of certify's
# own processes (the coordinator and its workers: the largest VmHWM among
# them, polled every 10 ms), of certify's whole tree with the route (GNU
# time %M: the route is the code under test and may hold what it likes),
# of `fencecert gate` on the report, the report.json size, and the ratio
# RSS(big)/RSS(1k) of certify's own processes (target <= 2).  An attempt keeps and lists the
# first RECORD_DELTAS_KEPT changed rows and counts the rest
# (harness/model/record.h), so report.json and gate stay flat; the target
# observations the checker needs and the workload's row keys live in a
# private scratch database out of the route's reach
# (harness/model/obs_store.h), and the workload generator writes a partition row by row, so the harness's
# own processes stay flat too.  The route is measured with them: a route
# that reads its whole partition into memory grows with the rows.
set -u
BUILD=${BUILD:-build}
case $BUILD in /*) ;; *) BUILD=$PWD/$BUILD ;; esac
FENCECERT=${FENCECERT:-$BUILD/fencecert}
BIG=${BENCH_ROWS_BIG:-1000000}
TIME=/usr/bin/time
[ -x "$FENCECERT" ] || { echo "bench_rows: no binary at '$FENCECERT'" >&2; exit 1; }
[ -x "$TIME" ] || { echo "bench_rows: skipped, no $TIME (GNU time)"; exit 0; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/fc-bench-rows.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT

# suite ROWS: the one-scenario suite over ROWS rows, to stdout.
suite() {
	cat <<EOF
version: 1
suite: bench-rows
routes:
  - name: naive
    command: [$FENCECERT, route, --variant, naive]
    fork_server: true
    journal: "sqlite:{dir}/journal.db"
    target: "sqlite:{dir}/target.db"
    observe:
      sql: "SELECT row_key, COUNT(*) FROM events GROUP BY row_key"
    expect: rejected
workload:
  operations: 1
  rows_per_operation: $1
orchestrator:
  retries: 3
  zombie_delay_ms: 5
  lease_ttl_ms: 5
  attempt_timeout_ms: 600000
scenarios:
  - name: kill-after-target-commit
    faults:
      - {attempt: 1, failpoint: after_target_commit, action: kill}
EOF
}

# peak_kb FILE ARGS...: run ARGS under GNU time, leave its peak RSS (KB)
# in FILE; the command's own exit status is returned.
peak_kb() {
	out=$1
	shift
	"$TIME" -f %M -o "$out" "$@" >/dev/null 2>"$out.err"
}

# harness_hwm FILE STOP MARK: (STOP.ready once it looks) until STOP
# exists, every 10 ms, the largest
# VmHWM (KB) of a process whose environment holds MARK -- this run's
# certify coordinator and its forked workers; the routes, observers and
# services they start get an environment of their own (child_env.h),
# without it -- into FILE.
harness_hwm() {
	python3 - "$1" "$2" "$3" <<'PY'
import os, sys, time
out, stop, mark = sys.argv[1], sys.argv[2], sys.argv[3].encode()
peak = 0
while True:
    done = os.path.exists(stop)
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            if mark not in open(f"/proc/{pid}/environ", "rb").read().split(b"\0"):
                continue
            for line in open(f"/proc/{pid}/status"):
                if line.startswith("VmHWM:"):
                    peak = max(peak, int(line.split()[1]))
        except OSError:
            pass
    if done:
        break
    if not os.path.exists(stop + ".ready"):
        open(stop + ".ready", "w").close()
    time.sleep(0.01)
open(out, "w").write(f"{peak}\n")
PY
}

# run ROWS: one line "ROWS CERTIFY_KB GATE_KB REPORT_BYTES SECONDS HARNESS_KB".
run() {
	d=$tmp/r$1
	mkdir -p "$d"
	suite "$1" >"$d/suite.yaml"
	mark="BENCH_ROWS_RUN=$$-$1"
	harness_hwm "$d/harness.kb" "$d/stop" "$mark" &
	poller=$!
	while [ ! -e "$d/stop.ready" ]; do sleep 0.01; done
	t0=$(date +%s%N)
	peak_kb "$d/certify.kb" env "$mark" "$FENCECERT" certify "$d/suite.yaml" --jobs 1 \
		--out "$d/out" --quiet
	rc=$?
	t1=$(date +%s%N)
	: >"$d/stop"
	wait "$poller"
	# exit 0: the naive route met its expectation, rejected
	if [ "$rc" != 0 ] || [ ! -f "$d/out/report.json" ]; then
		echo "bench_rows: certify at $1 rows exited $rc" >&2
		cat "$d/certify.kb.err" >&2
		return 1
	fi
	peak_kb "$d/gate.kb" "$FENCECERT" gate "$d/out/report.json"
	echo "$1 $(tail -1 "$d/certify.kb") $(tail -1 "$d/gate.kb")" \
		"$(wc -c <"$d/out/report.json") $(((t1 - t0) / 1000000))" \
		"$(cat "$d/harness.kb")"
}

small=$(run 1000) || exit 1
big=$(run "$BIG") || exit 1
printf '%s\n%s\n' "$small" "$big" | awk '
	{ rows[NR] = $1; cert[NR] = $2; gate[NR] = $3; size[NR] = $4; ms[NR] = $5; hw[NR] = $6
	  printf "naive, kill after_target_commit, %7d rows: certify processes peak RSS %6.1f MB (with the route %7.1f MB), gate %5.1f MB, report.json %8d bytes, %6d ms\n",
		$1, $6 / 1024, $2 / 1024, $3 / 1024, $4, $5 }
	END {
		r = hw[2] / hw[1]
		printf "bench_rows: RSS(%d)/RSS(%d): certify %.1f (target <= 2: %s), gate %.1f, with the route %.1f; report.json %d -> %d bytes\n",
			rows[2], rows[1], r, r <= 2 ? "ok" : "MISSED",
			gate[2] / gate[1], cert[2] / cert[1], size[1], size[2] }'
