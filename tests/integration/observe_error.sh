#!/bin/sh
# observe_error.sh -- an observe.command that fails is reported with what
# it wrote on stderr, in certify's output and in report.json: the file it
# wrote (observe.err) lives in the schedule's work dir, which is gone
# once certify exits, so a message pointing there would point at nothing.
set -eu
BUILD=${BUILD:-build}
FENCECERT=${FENCECERT:-$PWD/$BUILD/fencecert}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/fc-observe-err.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

cat >"$tmp/suite.yaml" <<EOF
version: 1
suite: observe-error
routes:
  - name: c
    command: [$FENCECERT, route]
    journal: 'sqlite:{dir}/journal.db'
    target: 'sqlite:{dir}/target.db'
    observe:
      command: [sh, -c, 'echo "first line" >&2; echo "observer: no such table: events_v2" >&2; exit 3']
scenarios:
  - name: clean
EOF

rc=0
"$FENCECERT" certify "$tmp/suite.yaml" --out "$tmp/out" --quiet >"$tmp/certify.out" 2>&1 || rc=$?
want="observe.command 'sh' failed (exit 3): first line observer: no such table: events_v2"
if [ "$rc" -ne 3 ] || ! grep -qF "$want" "$tmp/certify.out" ||
	! grep -qF "$want" "$tmp/out/report.json"; then
	cat "$tmp/certify.out"
	echo "FAIL: exit $rc (want 3, unverified); the observer's stderr is not in the message"
	exit 1
fi
echo "observe_error: ok"
