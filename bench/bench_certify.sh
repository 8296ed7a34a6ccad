#!/bin/sh
# bench_certify.sh -- how fast certification runs, from report.json counts,
# wall time and the CPU time of the run (all its processes):
#   schedules/s of the every-failpoint exploration of the SQLite route
#   (scenarios/exhaustive.yaml; target: >= 150 on 2 cores), with its
#   attempts forked by the route's fork server (the suite's setting,
#   docs/fork-server.md) and, in the same run, exec'd one by one; and the
#   wall time of the whole default suite (target: < 30 s).  Prints what it
#   measured, whatever it is, with the machine's load average beside it:
#   on a shared machine the CPU ms per schedule is what compares between
#   runs, the wall time depends on what else runs.
set -eu
BUILD=${BUILD:-build}
FENCECERT=${FENCECERT:-$PWD/$BUILD/fencecert}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/fc-bench-certify.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
sed "s#build/fencecert#$BUILD/fencecert#g" scenarios/default.yaml >"$tmp/default.yaml"
sed "s#build/fencecert#$BUILD/fencecert#g" scenarios/exhaustive.yaml >"$tmp/exhaustive.yaml"
grep -q '^ *fork_server: true' "$tmp/exhaustive.yaml" ||
	echo "bench_certify: exhaustive.yaml has no fork_server route" >&2
sed '/^ *fork_server:/d' "$tmp/exhaustive.yaml" >"$tmp/exhaustive-exec.yaml"

# measure OUT ARGS...: run ARGS, then print "WALL_MS CPU_MS SCHEDULES RC"
# (CPU: user + system time of everything the run started).
measure() {
	python3 - "$@" <<'PY'
import json, os, resource, subprocess, sys, time
out, argv = sys.argv[1], sys.argv[2:]
t0 = time.monotonic()
rc = subprocess.call(argv, stdout=subprocess.DEVNULL)
wall = (time.monotonic() - t0) * 1000
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
try:
    n = json.load(open(out + "/report.json"))["summary"]["schedules"]
except (OSError, ValueError, KeyError):
    n = 0
print(round(wall), round((ru.ru_utime + ru.ru_stime) * 1000), n, rc)
PY
}

echo "load average: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cpu(s)"
# explore SUITE LABEL: the every-failpoint exploration, one result line
explore() {
	rm -rf "$tmp/explore"
	set -- $(measure "$tmp/explore" "$FENCECERT" certify "$1" \
		--route c-sqlite --only every-failpoint --jobs 2 --out "$tmp/explore" \
		--quiet) "$2"
	python3 -c "
wall, cpu, n, label = $1, $2, $3, '$5'
print('%-40s %5d schedules %7d ms %6.1f schedules/s (target >= 150), '
      '%5.1f ms CPU/schedule' % ('every-failpoint, c-sqlite, --jobs 2, ' + label,
      n, wall, n * 1000 / max(wall, 1), cpu / max(n, 1)))"
}
explore "$tmp/exhaustive.yaml" "fork server"
explore "$tmp/exhaustive-exec.yaml" "exec"

set -- $(measure "$tmp/default" "$FENCECERT" certify "$tmp/default.yaml" \
	--jobs 2 --out "$tmp/default" --quiet)
python3 -c "
wall, cpu, n, rc = $1, $2, $3, $4
print('%-40s %5d schedules %7d ms (target < 30000), %d ms CPU, exit %d'
      % ('default suite, all routes, --jobs 2', n, wall, cpu, rc))"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg) after"
