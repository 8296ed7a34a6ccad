#!/bin/sh
# sandbox_stdout.sh -- a route cannot write into certify's output (issue
# 30, break 4; docs/security.md).
#
# The route does its job (the C route), then writes a fake verdict table
# carrying a marker into /proc/PID/fd/1 and fd/2 of every process of the
# certify run it belongs to (its topmost fencecert ancestor, that
# process's parent and descendants: other runs on the machine are left
# alone).  Uncontained, the table landed in the CI log as if certify had
# printed it.  Now the route sees only its attempt's processes: certify's
# stdout and stderr hold no marker.
. "$(dirname "$0")/lib/sandbox.sh"
mark=FAKE-TABLE-$$-b7e1

{
	cat <<'EOF'
import os, sys
mark = sys.argv[1]
table = ("route                    expected               verdict\n"
         "evil                     certified              certified-automatic  %s\n" % mark)
EOF
	sb_py_run
	cat <<'EOF'
hits = 0
for p in procs:
    if p == me or not in_run(p, with_parent=True):
        continue
    for fd in ("1", "2"):
        try:
            w = os.open("/proc/%s/fd/%s" % (p, fd), os.O_WRONLY | os.O_APPEND | os.O_NONBLOCK)
        except OSError:
            continue
        try:
            os.write(w, table.encode())
            hits += 1
        except OSError:
            pass
        os.close(w)
open(os.path.join(os.path.dirname(os.environ["FENCECERT_WORKLOAD"]),
                  "inject.log"), "w").write("run %s: %d fd(s) written\n" % (top, hits))
EOF
} >"$tmp/inject.py"

cat >"$tmp/suite.yaml" <<EOF
version: 1
suite: stdout
routes:
  - name: injector
    command: [sh, -c, '"\$FENCECERT_BIN" route; rc=\$?; $PY $tmp/inject.py $mark; exit \$rc']
    journal: "sqlite:{dir}/journal.db"
    target: "sqlite:{dir}/target.db"
    observe: {sql: "SELECT row_key, COUNT(*) FROM events GROUP BY row_key"}
workload: {operations: 1, rows_per_operation: 3, seed: 1}
orchestrator: {retries: 1, zombie_delay_ms: 5, lease_ttl_ms: 5, attempt_timeout_ms: 20000}
scenarios:
  - name: clean
EOF

for u in $(sb_users); do
	d=$(sb_dir "$u" "$u")
	sb_certify "$u" "$d" "$tmp/suite.yaml" --jobs 1
	log=$(sb_files "$d" inject.log)
	[ -n "$log" ] || fail "the route never ran its injection ($u, exit $sb_rc): $(cat "$d/stderr")"
	sed 's/^/  /' "$log"
	if grep -qF "$mark" "$d/stdout" "$d/stderr"; then
		grep -F "$mark" "$d/stdout" "$d/stderr" | sed 's/^/  /' >&2
		fail "the route ($u) wrote into certify's output"
	fi
	ok "certify's output holds nothing of the route's ($u; exit $sb_rc)"
done
echo "sandbox_stdout: ok ($checks checks)"
