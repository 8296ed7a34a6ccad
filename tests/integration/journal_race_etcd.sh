#!/bin/sh
# journal_race_etcd.sh -- tests/test_journal_race.c (eight processes racing
# the same CAS, create and lease each round; exactly one winner) against the
# etcd journal adapter on a three-member cluster.
#
# The cluster is always started here (ci/etcd-up --members 3 in a temp dir)
# and stopped at the end.  The URL lists all three members with ?first=pid,
# so each racing process starts at member (pid mod 3): the racers talk to
# different members and meet only in raft.  Afterwards each member's gRPC
# counters must show that at least two members served client txns.
set -eu
BUILD=${BUILD:-build}
bin=$BUILD/tests/test_journal_race

[ -x "$bin" ] || { echo "FAIL: $bin is not built (make $bin)" >&2; exit 1; }

dir=$(mktemp -d /tmp/fc-race-etcd-XXXXXX)
cleanup() {
	ci/etcd-down "$dir" || true
	rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# Client txns a member has served: its grpc_server_handled_total for Txn.
txns() {
	python3 - "$1/metrics" <<'EOF'
import re, sys, urllib.request
opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
text = opener.open(sys.argv[1], timeout=5).read().decode()
print(sum(int(float(m.group(1))) for m in re.finditer(
    r'^grpc_server_handled_total\{[^}]*grpc_method="Txn"[^}]*\} (\S+)$',
    text, re.M)))
EOF
}

urls=$(ci/etcd-up "$dir" --members 3)
hosts=$(echo "$urls" | sed 's|http://||g')
race_url="etcd://$hosts/fencecert-race/run-$$?first=pid"

before=""
for u in $(echo "$urls" | tr ',' ' '); do
	before="$before $(txns "$u")"
done

echo "racing on $race_url"
FENCECERT_RACE_URL=$race_url "$bin"

served=0
set -- $before
for u in $(echo "$urls" | tr ',' ' '); do
	n=$(($(txns "$u") - $1))
	shift
	echo "member $u served $n txns"
	[ "$n" -gt 0 ] && served=$((served + 1))
done
if [ "$served" -lt 2 ]; then
	echo "FAIL: the racers did not spread over the members" >&2
	exit 1
fi
echo "ok: $served of 3 members served the racers"
