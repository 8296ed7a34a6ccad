#!/bin/sh
# sandbox_fifo.sh -- a FIFO a route leaves where the harness reads or
# writes never hangs the run (issue 30, break 7; docs/security.md).
#
# The harness opens what a route can write non-blocking, no-follow, and
# only as a regular file of bounded size; a run watchdog ends a stuck
# run.  Three routes, each in a run of its own (a hang names its case):
#   ret:        the C route, then a FIFO in place of its return.json;
#   out:        try 1 leaves FIFOs as the next tries' try-N.out and
#               try-N.err (op1/ beside $FENCECERT_XCOM_DIR/..) and exits
#               75; the next try is the C route;
#   everywhere: both, plus a FIFO in the run dir, the schedule dir, the
#               next tries' XCom dirs, $HOME and $TMPDIR.
# Uncontained, the harness blocked in a plain open() for ever.  Now each
# run ends (well within its timeout) with a verdict and a report.
. "$(dirname "$0")/lib/sandbox.sh"
command -v mkfifo >/dev/null || { echo "sandbox_fifo: mkfifo not installed, skipped"; exit 0; }
SB_TIMEOUT=${SB_TIMEOUT_FIFO:-60}

cat >"$tmp/fifo.sh" <<'EOF'
#!/bin/sh
# fifo.sh CASE: the C route, with FIFOs left where the harness looks
set -u
case=$1
xcom=$FENCECERT_XCOM_DIR
op=$(cd "$xcom/../.." && pwd)
sched=$(cd "$(dirname "$FENCECERT_WORKLOAD")/.." && pwd) # SCHED/workload/workload-1.json
k=$FENCECERT_TRY_NUMBER
mk() { rm -rf "$1" 2>/dev/null; mkfifo "$1" 2>/dev/null; }
if [ "$k" -eq 1 ] && [ "$case" != ret ]; then
	for n in 2 3; do
		mk "$op/try-$n.out"
		mk "$op/try-$n.err"
		if [ "$case" = everywhere ]; then
			mkdir -p "$op/xcom/try-$n" 2>/dev/null
			mk "$op/xcom/try-$n/return.json"
		fi
	done
	if [ "$case" = everywhere ]; then
		mk "$FENCECERT_RUN_DIR/fifo"
		mk "$sched/fifo"
		mk "$op/fifo"
		mk "$xcom/return.json"
		mk "${HOME:-/nonexistent}/fifo"
		mk "${TMPDIR:-/tmp}/fifo.$$"
	fi
	exit 75
fi
"$FENCECERT_BIN" route
rc=$?
mk "$xcom/return.json"
[ "$case" != everywhere ] || { mk "$FENCECERT_RUN_DIR/fifo2"; mk "$sched/fifo2"; }
exit $rc
EOF

for c in ret out everywhere; do
	cat >"$tmp/suite-$c.yaml" <<EOF
version: 1
suite: fifo-$c
routes:
  - name: fifo-$c
    command: [sh, $tmp/fifo.sh, $c]
    journal: "sqlite:{dir}/journal.db"
    target: "sqlite:{dir}/target.db"
    observe: {sql: "SELECT row_key, COUNT(*) FROM events GROUP BY row_key"}
workload: {operations: 1, rows_per_operation: 3, seed: 1}
orchestrator: {retries: 2, zombie_delay_ms: 5, lease_ttl_ms: 5, attempt_timeout_ms: 10000}
scenarios:
  - name: clean
EOF
done

for u in $(sb_users); do
	for c in ${SB_FIFO_CASES:-ret out everywhere}; do
		d=$(sb_dir "$u" "$u-$c")
		start=$(date +%s)
		sb_certify "$u" "$d" "$tmp/suite-$c.yaml" --jobs 1
		sb_ended_with_verdict "$u, $c" "$d"
		ok "$c ($u): $(sb_verdict "$d" "fifo-$c") in $(($(date +%s) - start)) s (exit $sb_rc)"
	done
done
echo "sandbox_fifo: ok ($checks checks)"
