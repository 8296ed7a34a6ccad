#!/bin/sh
# sandbox_fs.sh -- what a route can see and write in its sandbox (issue
# 30, "A sandbox per attempt"; docs/security.md):
#   - its schedule dir and the suite's `writable:` paths are writable;
#   - the checkout, another schedule's dir and the harness's work dir are
#     not (EROFS);
#   - /tmp is its own: a file it leaves there is not in the host's /tmp;
#     HOME and TMPDIR are writable;
#   - it holds no capability (CapEff 0), even when certify is root;
#   - its /proc shows only its attempt's processes.
# Uncontained, every write succeeded (the checkout and other schedules'
# targets included) and a root route held every capability.
. "$(dirname "$0")/lib/sandbox.sh"
mark=fc-fs-$$

cat >"$tmp/probe.py" <<'EOF'
import glob, os, sys
checkout, writable, mark = sys.argv[1:4]
# the schedule dir: FENCECERT_WORKLOAD is SCHED/workload/workload-1.json
sched = os.path.dirname(os.path.dirname(os.environ["FENCECERT_WORKLOAD"]))
work = os.path.dirname(sched)
res = []
def w(name, path):
    try:
        with open(path, "w") as f:
            f.write("x")
        res.append("%s writable %s" % (name, path))
    except OSError as e:
        res.append("%s refused %s %s" % (name, path, e.strerror))
w("schedule", os.path.join(sched, "probe"))
w("writable", os.path.join(writable, "probe.%s" % os.path.basename(sched)))
w("checkout", os.path.join(checkout, ".%s.%s" % (mark, os.path.basename(sched))))
w("workdir", os.path.join(work, "%s.%s" % (mark, os.path.basename(sched))))
# other schedules' dirs: this worker's (beside ours) and other workers'
for other in sorted(set(glob.glob(os.path.join(work, "r*-s*-j*")) +
                        glob.glob(os.path.join(os.path.dirname(work), "w*",
                                               "r*-s*-j*")))):
    if other != sched:
        w("other", os.path.join(other, "probe-from-" + os.path.basename(sched)))
w("home", os.path.join(os.environ.get("HOME", "/nonexistent"), mark))
w("tmpdir", os.path.join(os.environ.get("TMPDIR", "/tmp"), mark + ".t"))
w("tmp", "/tmp/%s" % mark)
cap = [l.split()[1] for l in open("/proc/self/status") if l.startswith("CapEff")][0]
res.append("capeff %s" % cap)
res.append("procs %d" % len([p for p in os.listdir("/proc") if p.isdigit()]))
open(os.path.join(sched, "probe.txt"), "w").write("\n".join(res) + "\n")
EOF

for u in $(sb_users); do
	d=$(sb_dir "$u" "$u")
	mkdir "$d/extra"
	[ "$u" != nobody ] || chown "$SB_NOBODY:$SB_NOBODY" "$d/extra"
	cat >"$d/suite.yaml" <<EOF
version: 1
suite: sandbox-fs
routes:
  - name: prober
    command: [sh, -c, '$PY $tmp/probe.py $PWD $d/extra $mark; exec "\$FENCECERT_BIN" route']
    journal: "sqlite:{dir}/journal.db"
    target: "sqlite:{dir}/target.db"
    observe: {sql: "SELECT row_key, COUNT(*) FROM events GROUP BY row_key"}
    writable: ['$d/extra']
workload: {operations: 1, rows_per_operation: 3, seed: 1}
orchestrator: {retries: 1, zombie_delay_ms: 5, lease_ttl_ms: 5, attempt_timeout_ms: 20000}
scenarios:
  - name: clean
  - name: clean-2
EOF
	sb_certify "$u" "$d" "$d/suite.yaml" --jobs 1
	rm -f "$PWD"/."$mark".* /tmp/"$mark" /tmp/"$mark".t "$HOME/$mark" "$tmp/$mark"
	probes=$(sb_files "$d" probe.txt)
	[ -n "$probes" ] || fail "the route never ran ($u, exit $sb_rc): $(cat "$d/stderr")"
	cat $probes | sort -u >"$d/probes"
	sed 's/^/  /' "$d/probes"
	bad=$(grep -E '^(schedule|writable|home|tmpdir|tmp) refused' "$d/probes" || true)
	# a write the route made to the checkout, the work dir or another
	# schedule's dir must not be on the host: refused (EROFS), or, where
	# the path lies under /tmp (a checkout CI cloned there), made in the
	# attempt's own upper layer of /tmp and gone with it
	for f in $(sed -n 's/^\(checkout\|workdir\|other\) writable //p' "$d/probes"); do
		[ ! -e "$f" ] || bad="$bad the route wrote $f on the host"
	done
	grep -q '^other ' "$d/probes" || bad="$bad no other schedule dir was tried"
	grep -qx 'capeff 0000000000000000' "$d/probes" || bad="$bad $(grep capeff "$d/probes")"
	n=$(sed -n 's/^procs //p' "$d/probes" | sort -n | tail -n 1)
	[ "${n:-999}" -le 16 ] || bad="$bad the route sees $n processes in /proc"
	[ -z "$bad" ] || fail "the sandbox ($u) leaks: $bad"
	ok "the sandbox ($u) holds"
done

# A `writable:` directory that is not there: every attempt cannot run,
# saying which, and the route is unverified (never a half-made sandbox).
d=$(sb_dir root missing)
cat >"$d/suite.yaml" <<EOF
version: 1
suite: sandbox-missing
routes:
  - name: c
    command: ["$FENCECERT", route]
    journal: "sqlite:{dir}/journal.db"
    target: "sqlite:{dir}/target.db"
    observe: {sql: "SELECT row_key, COUNT(*) FROM events GROUP BY row_key"}
    writable: ['$d/not-there']
scenarios:
  - name: clean
EOF
sb_certify root "$d" "$d/suite.yaml" --jobs 1
[ "$(sb_verdict "$d" c)" = unverified ] || fail "a missing writable dir: $(sb_verdict "$d" c)"
grep -q "writable directory '$d/not-there' is missing" "$d/out/report.json" ||
	fail "a missing writable dir is not named: $(head -c 600 "$d/out/report.json")"
ok "a missing writable: directory makes the route unverified, naming it"
echo "sandbox_fs: ok ($checks checks)"
