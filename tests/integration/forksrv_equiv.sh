#!/bin/sh
# forksrv_equiv.sh -- a fork server changes how attempts start, nothing
# else (docs/fork-server.md): the every-failpoint exploration of
# scenarios/exhaustive.yaml's c-sqlite and of the naive control, once with
# every attempt exec'd and once through `fork_server: true`, must give the
# same verdicts, the same schedule strings and the same violations, and the
# fork server suite must really use the servers (a short run under strace,
# when it is installed, execs the route binary once per worker, not once per
# attempt).
set -eu
BUILD=${BUILD:-build}
FENCECERT=${FENCECERT:-$PWD/$BUILD/fencecert}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/fc-forksrv-equiv.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# exec: no fork_server keys; fork: the key after each fencecert route command
sed -e "s#build/fencecert#$BUILD/fencecert#g" -e '/^ *fork_server:/d' \
	scenarios/exhaustive.yaml >"$tmp/exec.yaml"
sed -e 's#^\(    command: \[[^]]*fencecert, route.*\]\)$#\1\n    fork_server: true#' \
	"$tmp/exec.yaml" >"$tmp/fork.yaml"
n=$(grep -c 'fork_server: true' "$tmp/fork.yaml")
[ "$n" -ge 2 ] || { echo "FAIL: fork_server not set in the suite ($n)"; exit 1; }

for mode in exec fork; do
	set -- "$FENCECERT" certify "$tmp/$mode.yaml" --full-report --route c-sqlite \
		--route naive --only every-failpoint --jobs 2 \
		--out "$tmp/$mode" --format json --quiet
	"$@" >/dev/null || true
done

python3 tests/integration/report_equiv.py "$tmp/exec/report.json" \
	"$tmp/fork/report.json" exec "fork server"

if command -v strace >/dev/null; then
	# 'clean' and the first kill: 6 attempts per route; one server per
	# route and worker
	strace -f -qq -e trace=execve -e signal=none -o "$tmp/execs" \
		"$FENCECERT" certify "$tmp/fork.yaml" --full-report --route c-sqlite --route naive \
		--only clean --schedule clean --jobs 1 --out "$tmp/short" \
		--format json --quiet >/dev/null || true
	routes=$(grep -c 'execve("[^"]*fencecert", \["[^"]*fencecert", "route"' "$tmp/execs" || true)
	attempts=$(python3 -c "import json,sys; print(sum(len(s['attempts']) for r in json.load(open(sys.argv[1]))['routes'] for s in r['schedules']))" "$tmp/short/report.json")
	echo "short fork server run: $attempts attempts, $routes execs of 'fencecert route'"
	[ "$attempts" -ge 4 ] && [ "$routes" -eq 2 ] ||
		{ echo "FAIL: attempts were exec'd"; exit 1; }
fi
echo "forksrv_equiv: ok"
