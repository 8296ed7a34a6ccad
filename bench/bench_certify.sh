#!/bin/sh
# bench_certify.sh -- how fast certification runs, from report.json counts,
# wall time and the CPU time of the run (all its processes):
#   schedules/s of the every-failpoint exploration of the SQLite route
#   (scenarios/exhaustive.yaml; target: >= 150 on 2 cores), with its
#   attempts forked by the route's fork server (the suite's setting,
#   docs/fork-server.md) at --jobs 2 and --jobs 4 (a schedule waits for
#   leases to expire between tries, so two workers leave the CPUs idle part
#   of the time), and, in the same run, exec'd one by one; and the wall
#   time of the whole default suite (target: < 30 s).
# Then the floor (bench/bench_floor.c, measured here, right after): what a
# minimal forked attempt with raw SQLite costs on this machine, and what
# the explored schedules' attempts per schedule would allow with a harness
# that costs nothing; fencecert's CPU per attempt, harness included, is
# printed as a multiple of it.  Prints what it measured, whatever it is,
# with the machine's load average beside it: on a shared machine the CPU
# ms per schedule and the ratio to the floor are what compare between
# runs, the wall time depends on what else runs.
set -eu
BUILD=${BUILD:-build}
case $BUILD in /*) ;; *) BUILD=$PWD/$BUILD ;; esac
FENCECERT=${FENCECERT:-$BUILD/fencecert}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/fc-bench-certify.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
sed "s#build/fencecert#$BUILD/fencecert#g" scenarios/default.yaml >"$tmp/default.yaml"
sed "s#build/fencecert#$BUILD/fencecert#g" scenarios/exhaustive.yaml >"$tmp/exhaustive.yaml"
grep -q '^ *fork_server: true' "$tmp/exhaustive.yaml" ||
	echo "bench_certify: exhaustive.yaml has no fork_server route" >&2
sed '/^ *fork_server:/d' "$tmp/exhaustive.yaml" >"$tmp/exhaustive-exec.yaml"

# measure OUT ARGS...: run ARGS, then print "WALL_MS CPU_MS SCHEDULES RC
# ATTEMPTS" (CPU: user + system time of everything the run started).
measure() {
	python3 - "$@" <<'PY'
import json, os, resource, subprocess, sys, time
out, argv = sys.argv[1], sys.argv[2:]
t0 = time.monotonic()
rc = subprocess.call(argv, stdout=subprocess.DEVNULL)
wall = (time.monotonic() - t0) * 1000
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
try:
    rep = json.load(open(out + "/report.json"))
    n = rep["summary"]["schedules"]
    att = sum(len(s["attempts"]) for r in rep["routes"] for s in r["schedules"])
except (OSError, ValueError, KeyError):
    n = att = 0
print(round(wall), round((ru.ru_utime + ru.ru_stime) * 1000), n, rc, att)
PY
}

echo "load average: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cpu(s)"
# explore SUITE JOBS LABEL: the every-failpoint exploration, one result
# line; the fork server run at --jobs 2 also leaves its attempts per
# schedule and CPU per attempt in $tmp/per-attempt for the floor below.
explore() {
	rm -rf "$tmp/explore"
	set -- $(measure "$tmp/explore" "$FENCECERT" certify "$1" --full-report \
		--route c-sqlite --only every-failpoint --jobs "$2" \
		--out "$tmp/explore" --quiet) "$2" "$3"
	python3 -c "
wall, cpu, n, att, jobs, label = $1, $2, $3, $5, $6, '$7'
print('%-42s %5d schedules %7d ms %6.1f schedules/s (target >= 150), '
      '%5.1f ms CPU/schedule, %.2f attempts/schedule, %.2f ms CPU/attempt'
      % ('every-failpoint, c-sqlite, --jobs %d, %s' % (jobs, label), n, wall,
         n * 1000 / max(wall, 1), cpu / max(n, 1), att / max(n, 1),
         cpu / max(att, 1)))
if label == 'fork server' and jobs == 2:
    open('$tmp/per-attempt', 'w').write('%.3f %.3f\n' % (att / max(n, 1), cpu / max(att, 1)))"
}
explore "$tmp/exhaustive.yaml" 2 "fork server"
explore "$tmp/exhaustive.yaml" 4 "fork server"
explore "$tmp/exhaustive-exec.yaml" 2 "exec"

set -- $(measure "$tmp/default" "$FENCECERT" certify "$tmp/default.yaml" --full-report \
	--jobs 2 --out "$tmp/default" --quiet)
python3 -c "
wall, cpu, n, rc = $1, $2, $3, $4
print('%-40s %5d schedules %7d ms (target < 30000), %d ms CPU, exit %d'
      % ('default suite, all routes, --jobs 2', n, wall, cpu, rc))"

# The floor, right after: a minimal forked attempt on this machine.
if [ -x "$BUILD/bench/bench_floor" ] && [ -s "$tmp/per-attempt" ]; then
	read -r aps cpa <"$tmp/per-attempt"
	BENCH_FLOOR_ATTEMPTS_PER_SCHEDULE=$aps BENCH_FLOOR_ROUNDS=3 \
		"$BUILD/bench/bench_floor" >"$tmp/floor" || cat "$tmp/floor" >&2
	cat "$tmp/floor"
	awk -v cpa="$cpa" '/forked per attempt/ { f = $5 }
		END { if (f > 0) printf "fencecert: %.2f ms CPU per attempt, harness included, = %.2fx the floor'"'"'s forked attempt (%.2f ms)\n", cpa, cpa / f, f }' "$tmp/floor"
else
	echo "bench_certify: no $BUILD/bench/bench_floor, floor not measured"
fi
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg) after"
