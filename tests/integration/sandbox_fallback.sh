#!/bin/sh
# sandbox_fallback.sh -- where namespaces cannot be made, certify still
# contains its routes, at a lower level the report names (issue 30,
# "Fallbacks"; docs/security.md).
#
# tests/tools/nocontainer reproduces an unprivileged container: Docker's
# default seccomp profile (unshare, setns and clone with CLONE_NEW* denied,
# clone3 ENOSYS) and, with --drop-caps, its capability set (no
# CAP_SYS_ADMIN).  Under it:
#   root, with and without --drop-caps: environment.containment is `uid`
#     (the route runs under a dedicated unprivileged uid);
#   nobody (setpriv, uid 65534): `reaper` (PR_SET_CHILD_SUBREAPER).
# In each, the C route, which leaves a setsid'd writer behind that adds
# every row a second time 2 s later, is certified-automatic, the writer
# does not outlive its attempt (no row twice after waiting it out, no
# process left), and `gate --require-containment sandbox` refuses the
# report while `--require-containment LEVEL` at its own level passes it.
# Before the fallbacks, certify refused to run there (exit 2) unless
# given --uncontained.
. "$(dirname "$0")/lib/sandbox.sh"
command -v sqlite3 >/dev/null || { echo "sandbox_fallback: sqlite3 not installed, skipped"; exit 0; }
NOC=$(dirname "$FENCECERT")/tests/tools/nocontainer
[ -x "$NOC" ] || NOC=$PWD/$BUILD/tests/tools/nocontainer
[ -x "$NOC" ] || fail "tests/tools/nocontainer is not built (make check builds it)"
mark=fc-fallback-$$
delay=2

cat >"$tmp/suite.yaml" <<EOF
version: 1
suite: fallback
routes:
  - name: leaves-writer
    command:
      - sh
      - -c
      - |
        "\$FENCECERT_BIN" route; rc=\$?
        t=\$(printf %s "\$FENCECERT_TARGET" | cut -d: -f2-)
        ready=\$FENCECERT_RUN_DIR/writer-ready
        setsid sh -c ": >'\$ready'; sleep $delay; sqlite3 '\$t' 'INSERT INTO events SELECT * FROM events'" </dev/null >/dev/null 2>&1 &
        while [ ! -e "\$ready" ]; do sleep 0.05; done
        exit \$rc
    journal: 'sqlite:{dir}/journal.db'
    target: 'sqlite:{dir}/target.db'
    observe: {sql: "SELECT row_key, COUNT(*) FROM events GROUP BY row_key"}
    env: {CONTAIN_MARK: '$mark'}
    expect: certified-automatic
workload: {operations: 1, rows_per_operation: 5, seed: 1}
orchestrator: {retries: 2, zombie_delay_ms: 5, lease_ttl_ms: 5, attempt_timeout_ms: 20000}
scenarios:
  - name: clean
  - name: kill-after-target-commit
    faults:
      - {attempt: 1, failpoint: after_target_commit, action: kill}
  - name: kill-before-target-commit
    faults:
      - {attempt: 1, failpoint: before_target_commit, action: kill}
EOF

# case USER LEVEL NOCONTAINER-ARGS...
check_case() {
	u=$1 level=$2
	shift 2
	d=$(sb_dir "$u" "$u-$level-$#")
	FENCECERT_REAL=$FENCECERT
	printf '#!/bin/sh\nexec %s %s -- %s "$@"\n' "$NOC" "$*" "$FENCECERT" >"$d/fencecert"
	chmod 0755 "$d/fencecert"
	FENCECERT=$d/fencecert
	sb_certify "$u" "$d" "$tmp/suite.yaml" --jobs 2
	FENCECERT=$FENCECERT_REAL
	what="$u under nocontainer $*"
	[ -f "$d/out/report.json" ] ||
		fail "$what: no report (exit $sb_rc): $(tail -n 3 "$d/stderr")"
	got=$(sb_containment "$d")
	[ "$got" = "$level" ] || fail "$what: containment '$got', want '$level'"
	v=$(sb_verdict "$d" leaves-writer)
	[ "$v" = certified-automatic ] && [ "$sb_rc" -eq 0 ] ||
		{ cat "$d/stdout" >&2; fail "$what: the route is $v (exit $sb_rc)"; }
	ok "$what: containment $got, $v"
	sleep $((delay + 1))
	n=$(sb_marked "CONTAIN_MARK=$mark")
	[ "$n" -eq 0 ] || fail "$what: $n process(es) of the route outlived the run"
	for t in $(sb_files "$d" target.db); do
		dup=$(sqlite3 "$t" "SELECT COUNT(*) FROM (SELECT row_key FROM events GROUP BY row_key HAVING COUNT(*) > 1)")
		[ "$dup" -eq 0 ] || fail "$what: the setsid writer outlived its attempt: $dup row(s) twice in $t"
	done
	ok "$what: the setsid writer did not outlive its attempt"
	set +e
	"$FENCECERT" gate "$d/out/report.json" --require-containment sandbox >"$d/gate.out" 2>&1
	g=$?
	"$FENCECERT" gate "$d/out/report.json" --require-containment "$level" >"$d/gate-own.out" 2>&1
	g_own=$?
	set -e
	[ "$g" -eq 1 ] || fail "$what: gate --require-containment sandbox gave exit $g, want 1: $(cat "$d/gate.out")"
	[ "$g_own" -eq 0 ] || fail "$what: gate --require-containment $level gave exit $g_own: $(cat "$d/gate-own.out")"
	ok "$what: the gate refuses it for sandbox, passes it for $level"
}

if [ "$(id -u)" -eq 0 ]; then
	check_case root uid --drop-caps
	check_case root uid
	if command -v setpriv >/dev/null 2>&1; then
		check_case nobody reaper
	else
		echo "sandbox_fallback: setpriv not installed, the unprivileged half is skipped"
	fi
else
	check_case self reaper
fi
echo "sandbox_fallback: ok ($checks checks)"
