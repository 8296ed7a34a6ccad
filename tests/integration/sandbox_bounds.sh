#!/bin/sh
# sandbox_bounds.sh -- what a route does to the machine ends its attempt
# or its schedule, never the run (issue 30, break 8; docs/security.md).
#
#   bomb:   forks up to 10000 sleeping children (a fork bomb the test
#           bounds), then would load its rows;
#   bigtmp: writes 1 GiB to /tmp/fc-big-MARK, then loads its rows.
# certify must finish (within its timeout) with a verdict and a report;
# no child of the bomb outlives the run; and the host's /tmp holds no
# fc-big-MARK afterwards (the attempt's /tmp is its own).  Uncontained,
# the 1 GiB file stayed in the host's /tmp.
. "$(dirname "$0")/lib/sandbox.sh"
mark=fc-big-$$
SB_TIMEOUT=${SB_TIMEOUT_BOUNDS:-120}
sb_cleanup_hook='rm -f /tmp/$mark-*'

cat >"$tmp/suite.yaml" <<EOF
version: 1
suite: bounds
routes:
  - name: bomb
    command:
      - sh
      - -c
      - |
        i=0
        while [ \$i -lt 10000 ]; do sleep 60 & i=\$((i + 1)); done
        exec "\$FENCECERT_BIN" route
    journal: "sqlite:{dir}/journal.db"
    target: "sqlite:{dir}/target.db"
    observe: {sql: "SELECT row_key, COUNT(*) FROM events GROUP BY row_key"}
    env: {BOUNDS_MARK: '$mark'}
  - name: bigtmp
    command:
      - sh
      - -c
      - |
        dd if=/dev/zero of=/tmp/$mark-\$(id -u) bs=1048576 count=1024 2>/dev/null
        ls -l /tmp/$mark-\$(id -u) >"\$FENCECERT_RUN_DIR/big.ls" 2>&1
        exec "\$FENCECERT_BIN" route
    journal: "sqlite:{dir}/journal.db"
    target: "sqlite:{dir}/target.db"
    observe: {sql: "SELECT row_key, COUNT(*) FROM events GROUP BY row_key"}
workload: {operations: 1, rows_per_operation: 3, seed: 1}
orchestrator: {retries: 0, zombie_delay_ms: 5, lease_ttl_ms: 5, attempt_timeout_ms: 8000}
scenarios:
  - name: clean
EOF

for u in $(sb_users); do
	d=$(sb_dir "$u" "$u")
	start=$(date +%s)
	sb_certify "$u" "$d" "$tmp/suite.yaml" --jobs 2
	sb_ended_with_verdict "$u" "$d"
	ok "the run ($u) finished in $(($(date +%s) - start)) s: bomb $(sb_verdict "$d" bomb), bigtmp $(sb_verdict "$d" bigtmp)"
	n=$(sb_marked "BOUNDS_MARK=$mark")
	[ "$n" -eq 0 ] || fail "$n process(es) of the bomb ($u) outlived the run"
	ok "no process of the bomb ($u) is left"
	if ls /tmp/$mark-* >/dev/null 2>&1; then
		ls -l /tmp/$mark-* >&2
		rm -f /tmp/$mark-*
		fail "the route ($u) left its 1 GiB file in the host's /tmp"
	fi
	ok "the host's /tmp holds no file of the route ($u)"
done
echo "sandbox_bounds: ok ($checks checks)"
