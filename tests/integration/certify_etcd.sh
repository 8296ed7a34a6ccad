#!/bin/sh
# certify_etcd.sh -- `fencecert certify scenarios/etcd.yaml` with nothing
# running beforehand: the harness starts the three etcd members the suite
# declares, stops and starts them as the scenarios say, and tears them
# down.  The verdicts and the member-loss behaviour are checked from the
# report (certify_etcd_check.py); afterwards no etcd of this run may be
# left and its services dir must be gone.
set -eu
BUILD=${BUILD:-build}
FENCECERT=${FENCECERT:-$PWD/$BUILD/fencecert}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/fc-certify-etcd.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/w"

sed "s#build/fencecert#$BUILD/fencecert#g" scenarios/etcd.yaml >"$tmp/etcd.yaml"
start=$(date +%s)
rc=0
"$FENCECERT" certify "$tmp/etcd.yaml" --full-report --out "$tmp/out" --work-dir "$tmp/w" \
	--quiet >"$tmp/table" || rc=$?
cat "$tmp/table"
echo "certify: exit $rc, $(($(date +%s) - start)) s"
[ "$rc" -eq 0 ] || { echo "certify exited $rc"; exit 1; }
python3 tests/integration/certify_etcd_check.py "$tmp/out/report.json"

# nothing outlives the run: the servers ran under $tmp/w
left=$(grep -l -- "$tmp/w" /proc/[0-9]*/cmdline 2>/dev/null || true)
[ -z "$left" ] || { echo "processes left behind: $left"; exit 1; }
[ -z "$(ls "$tmp/w")" ] || { echo "left in the work dir: $(ls "$tmp/w")"; exit 1; }
echo "ok: etcd suite certified, member loss handled, nothing left running"
