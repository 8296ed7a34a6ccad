#!/bin/sh
# bench_certify.sh -- how fast certification runs, from report.json counts
# and wall time:
#   schedules/s of the every-failpoint exploration of the SQLite route
#   (scenarios/exhaustive.yaml; target: >= 150 on 2 cores), and the wall
#   time of the whole default suite (target: < 30 s).  Prints what it
#   measured, whatever it is, with the machine's load average beside it.
set -eu
BUILD=${BUILD:-build}
FENCECERT=${FENCECERT:-$PWD/$BUILD/fencecert}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/fc-bench-certify.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
sed "s#build/fencecert#$BUILD/fencecert#g" scenarios/default.yaml >"$tmp/default.yaml"
sed "s#build/fencecert#$BUILD/fencecert#g" scenarios/exhaustive.yaml >"$tmp/exhaustive.yaml"

ms() { date +%s%3N; }
field() { # field REPORT EXPR
	python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print($2)" "$1"
}

echo "load average: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cpu(s)"
t0=$(ms)
"$FENCECERT" certify "$tmp/exhaustive.yaml" --route c-sqlite --only every-failpoint \
	--jobs 2 --out "$tmp/explore" --quiet >/dev/null || true
t1=$(ms)
n=$(field "$tmp/explore/report.json" "r['summary']['schedules']")
wall=$((t1 - t0))
printf '%-44s %8s schedules %8s ms %8s schedules/s (target >= 150)\n' \
	"every-failpoint, c-sqlite, --jobs 2" "$n" "$wall" \
	"$(python3 -c "print(round($n * 1000 / max($wall, 1), 1))")"

t0=$(ms)
rc=0
"$FENCECERT" certify "$tmp/default.yaml" --jobs 2 --out "$tmp/default" \
	--quiet >/dev/null || rc=$?
t1=$(ms)
n=$(field "$tmp/default/report.json" "r['summary']['schedules']")
printf '%-44s %8s schedules %8s ms (target < 30000), exit %s\n' \
	"default suite, all routes, --jobs 2" "$n" "$((t1 - t0))" "$rc"
