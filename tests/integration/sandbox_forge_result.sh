#!/bin/sh
# sandbox_forge_result.sh -- a route cannot forge its schedule's result
# (issue 30, break 1; docs/security.md).
#
# The route is a naive loader: it inserts every row twice, so honestly
# judged it is rejected (no-duplicate).  It also walks /proc, finds the
# certify run it belongs to (its topmost fencecert ancestor and that
# process's descendants: it leaves other runs on the machine alone) and
# writes twenty "converged" schedule lines, claiming both windows
# challenged, into
#   fd9:   every /proc/PID/fd/9 of the run that is a pipe (the worker's
#          result pipe), and
#   pipes: every pipe of every process of the run.
# Uncontained, pool.c took the first line on a busy worker's pipe as its
# job's result and the route came out certified-automatic, signed, and
# `gate --require-signature` passed it.  Now the route either cannot see
# the harness (its /proc is its own) or its lines lack the job id and
# the worker's nonce, which ends the run with an error: it is never
# certified, and a report that exists never passes the gate.
. "$(dirname "$0")/lib/sandbox.sh"
SB_TIMEOUT=${SB_TIMEOUT_FORGE:-60}

{
	cat <<'EOF'
import json, os, sqlite3, sys
mode = sys.argv[1]
db = os.environ["FENCECERT_TARGET"].split(":", 1)[1]
wl_path = os.environ["FENCECERT_WORKLOAD"]
wl = json.load(open(wl_path))
src = os.path.join(os.path.dirname(wl_path), wl["source"])
rows = [l.rstrip("\n").split(",", 1) for l in open(src)][1:]
c = sqlite3.connect(db)
c.execute("CREATE TABLE IF NOT EXISTS events(row_key TEXT, payload TEXT)")
c.executemany("INSERT INTO events VALUES (?, ?)", rows * 2)  # naive: twice
c.commit()
c.close()
EOF
	sb_py_run
	cat <<'EOF'
line = json.dumps({
    "scenario": "clean", "schedule": "clean", "kind": "fixed", "strict": True,
    "reproduce": "", "duration_ms": 1, "outcome": "converged",
    "outcome_detail": "converged", "error": None, "violations": [],
    "unobservable": [], "faults": [], "applied": [], "reached": [],
    "faulted": [], "attempts": [], "operations": [], "target": None,
    "retried_stops": [
        {"attempt": 1, "operation": 1, "try": 1, "window": "before-mutation",
         "fault": "kill"},
        {"attempt": 2, "operation": 1, "try": 2, "window": "after-mutation",
         "fault": "kill"}],
}) + "\n"
hits = 0
for p in procs:
    if p == me or top is None or not in_run(p):
        continue
    try:
        fds = os.listdir("/proc/%s/fd" % p)
    except OSError:
        continue
    for fd in fds:
        if mode == "fd9" and fd != "9":
            continue
        path = "/proc/%s/fd/%s" % (p, fd)
        try:
            if not os.readlink(path).startswith("pipe:"):
                continue
            w = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
        except OSError:
            continue
        try:
            os.write(w, (line * 20).encode())
            hits += 1
        except OSError:
            pass
        os.close(w)
with open(os.path.join(os.path.dirname(wl_path), "forged.%s" %
                       os.environ["FENCECERT_TRY_NUMBER"]), "w") as f:
    f.write("run %s, %d pipe(s) written\n" % (top, hits))
EOF
} >"$tmp/forge.py"

for mode in fd9 pipes; do
	cat >"$tmp/suite-$mode.yaml" <<EOF
version: 1
suite: forge-$mode
routes:
  - name: naive
    command: [$PY, $tmp/forge.py, $mode]
    journal: none
    target: "sqlite:{dir}/target.db"
    observe: {sql: "SELECT row_key, COUNT(*) FROM events GROUP BY row_key"}
workload: {operations: 1, rows_per_operation: 3, seed: 1}
orchestrator: {retries: 1, zombie_delay_ms: 5, lease_ttl_ms: 5, attempt_timeout_ms: 20000}
scenarios:
  - name: clean
EOF
done

key=forge-test-key
for u in $(sb_users); do
	for mode in fd9 pipes; do
		d=$(sb_dir "$u" "$u-$mode")
		FENCECERT_SIGNING_KEY=$key sb_certify "$u" "$d" "$tmp/suite-$mode.yaml" --jobs 1
		[ "$sb_rc" -ne 2 ] || fail "certify refused the suite ($u, $mode): $(cat "$d/stderr")"
		[ -n "$(sb_files "$d" target.db)" ] || fail "the route never ran ($u, $mode): $(cat "$d/stderr")"
		sb_not_certified "$u" "$d" naive
		if [ -f "$d/out/report.json" ]; then
			set +e
			FENCECERT_SIGNING_KEY=$key "$FENCECERT" gate "$d/out/report.json" \
				--require-signature >"$d/gate.out" 2>&1
			g=$?
			set -e
			[ "$g" -ne 0 ] || fail "gate passed the naive route's report ($u, $mode)"
			ok "gate refuses the report ($u, $mode: exit $g)"
		fi
	done
done
echo "sandbox_forge_result: ok ($checks checks)"
