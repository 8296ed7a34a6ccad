# lib/sandbox.sh -- what the sandbox_*.sh tests share: they run a hostile or
# careless route through `fencecert certify` and check that the wall
# between the route and the harness holds (docs/security.md, issue 30).
# Sourced (not run: it lives below the directory tests/run-all walks):
#
#   . "$(dirname "$0")/lib/sandbox.sh"
#
# It sets BUILD, FENCECERT, PY, SB_TIMEOUT and $tmp (a fresh directory,
# removed at exit; world-readable so an unprivileged run can reach it),
# and sources lib/expect.sh (fail, ok, expect, err_has).
#
# $tmp is under $BUILD/sandbox-tests, not /tmp: an attempt's /tmp is a
# private tmpfs, so route scripts and binary copies the test puts there
# must live where a sandboxed route still sees them (read-only); the
# schedule dirs under $tmp/*/work are the attempt's writable ones.
#
# Every certify runs under `timeout`: a run that hangs fails its test
# instead of hanging `make check`.
set -eu
BUILD=${BUILD:-build}
FENCECERT=${FENCECERT:-$PWD/$BUILD/fencecert}
case $FENCECERT in /*) ;; *) FENCECERT=$PWD/$FENCECERT ;; esac
SB_TIMEOUT=${SB_TIMEOUT:-120}
# the system's python: a route run as an unprivileged user cannot reach a
# python under root's home (pyenv)
PY=/usr/bin/python3
[ -x "$PY" ] || PY=$(command -v python3)
SB_NOBODY=65534
case $BUILD in /*) sb_base=$BUILD/sandbox-tests ;; *) sb_base=$PWD/$BUILD/sandbox-tests ;; esac
mkdir -p "$sb_base"
tmp=$(mktemp -d "$sb_base/$(basename "$0" .sh).XXXXXX")
chmod 0755 "$tmp"
sb_cleanup_hook=:
trap 'eval "$sb_cleanup_hook"; rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM HUP
. "$(dirname "$0")/lib/expect.sh"

# sb_users: the users a test that needs no root runs as: "root" and, when
# it runs as root and setpriv exists, "nobody" too; else just "self"
sb_users() {
	if [ "$(id -u)" -ne 0 ]; then
		echo self
	elif command -v setpriv >/dev/null 2>&1; then
		echo root nobody
	else
		echo "sb: setpriv not installed, the unprivileged half is skipped" >&2
		echo root
	fi
}

# sb_dir USER NAME: a fresh directory $tmp/NAME that USER can write, with
# an empty work/ in it; its path on stdout
sb_dir() {
	d=$tmp/$2
	rm -rf "$d"
	mkdir -p "$d/work"
	[ "$1" != nobody ] || chown -R "$SB_NOBODY:$SB_NOBODY" "$d"
	echo "$d"
}

# sb_as USER CMD...: CMD as USER (nobody: uid and gid 65534, no groups,
# HOME and TMPDIR in the test's dir)
sb_as() {
	u=$1
	shift
	if [ "$u" = nobody ]; then
		HOME=$tmp TMPDIR=/tmp setpriv --reuid="$SB_NOBODY" \
			--regid="$SB_NOBODY" --clear-groups -- "$@"
	else
		"$@"
	fi
}

# sb_certify USER DIR SUITE [ARGS...]: certify SUITE as USER with --out
# DIR/out --work-dir DIR/work --keep (the schedule dirs stay for the test
# to read) under a timeout of SB_TIMEOUT seconds; stdout and stderr in
# DIR/stdout and DIR/stderr, the exit status in $sb_rc.  A run that
# outlives the timeout fails the test.
sb_certify() {
	u=$1 d=$2 suite=$3
	shift 3
	set +e
	sb_as "$u" timeout -k 10 "$SB_TIMEOUT" "$FENCECERT" certify "$suite" \
		--out "$d/out" --work-dir "$d/work" --keep --quiet \
		--full-report "$@" >"$d/stdout" 2>"$d/stderr"
	sb_rc=$?
	set -e
	if [ "$sb_rc" -eq 124 ] || [ "$sb_rc" -eq 137 ]; then
		tail -n 20 "$d/stderr" >&2
		fail "certify ($u) hung: still running after ${SB_TIMEOUT} s (exit $sb_rc)"
	fi
}

# sb_verdict DIR ROUTE: ROUTE's verdict in DIR/out/report.json, or
# "no-report" when the run left none
sb_verdict() {
	if [ ! -f "$1/out/report.json" ]; then
		echo no-report
		return
	fi
	"$PY" - "$1/out/report.json" "$2" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
v = [x["verdict"] for x in r["routes"] if x["name"] == sys.argv[2]]
print(v[0] if v else "absent")
PY
}

# sb_containment DIR: environment.containment of DIR/out/report.json
sb_containment() {
	"$PY" -c 'import json, sys; print(json.load(open(sys.argv[1]))["environment"]["containment"])' \
		"$1/out/report.json"
}

# sb_not_certified USER DIR ROUTE: the run may have ended in an error, but
# ROUTE never came out certified
sb_not_certified() {
	v=$(sb_verdict "$2" "$3")
	case $v in
	certified*)
		cat "$2/stdout" >&2
		fail "$3 ($1): came out $v (certify exit $sb_rc)" ;;
	esac
	ok "$3 ($1): $v (certify exit $sb_rc)"
}

# sb_files DIR NAME: every file called NAME in DIR's schedule dirs
sb_files() {
	find "$1/work" -name "$2" -type f 2>/dev/null
}

# sb_ended_with_verdict WHAT DIR: the run in DIR ended with a verdict
# (exit 0, 1 or 3) and left a report; WHAT names the case in a failure
sb_ended_with_verdict() {
	case $sb_rc in
	0 | 1 | 3) ;;
	*) fail "certify ($1) ended with exit $sb_rc, not a verdict: $(tail -n 5 "$2/stderr")" ;;
	esac
	[ -f "$2/out/report.json" ] || fail "certify ($1) left no report (exit $sb_rc)"
}

# sb_marked NAME=VALUE: how many processes carry NAME=VALUE in their
# environment (a route's marker: none may outlive its run)
sb_marked() {
	{ grep -lszxF "$1" /proc/[0-9]*/environ || true; } | wc -l
}

# sb_sh_route: the opening of a route written in sh (printed): set -u,
# db (the sqlite target's path), src (the workload's CSV) and fp NAME,
# which reports failpoint NAME and exits 75 unless told to continue
sb_sh_route() {
	cat <<'EOF'
#!/bin/sh
set -u
db=${FENCECERT_TARGET#sqlite:}
src=$(dirname "$FENCECERT_WORKLOAD")/$(sed -n 's/.*"source": *"\([^"]*\)".*/\1/p' "$FENCECERT_WORKLOAD")
fp() {
	printf 'HIT %s\n' "$1" >&3 || exit 75
	[ "$(dd bs=1 count=1 2>/dev/null <&3)" = c ] || exit 75
}
EOF
}

# sb_py_status: Python (printed) defining status(PID): the fields of
# /proc/PID/status as a dict, {} when it cannot be read
sb_py_status() {
	cat <<'EOF'
def status(pid):
    d = {}
    try:
        for l in open("/proc/%s/status" % pid):
            k, _, v = l.partition(":")
            d[k] = v.strip()
    except OSError:
        pass
    return d
EOF
}

# sb_py_run: Python (printed; the script imports os) that finds the
# certify run a hostile route belongs to, as its /proc shows it: me (its
# own pid), top (its topmost fencecert ancestor, or None), procs (every
# pid), parent (pid to parent pid), and in_run(P, with_parent=False): P is
# top or one of its descendants (or, with_parent, top's parent)
sb_py_run() {
	sb_py_status
	cat <<'EOF'
me = os.readlink("/proc/self")  # my pid as this /proc numbers it
top, pid = None, me
while pid and pid not in ("0", "1"):
    st = status(pid)
    if st.get("Name", "").startswith("fencecert"):
        top = pid
    pid = st.get("PPid", "0")
procs = [p for p in os.listdir("/proc") if p.isdigit()]
parent = {p: status(p).get("PPid") for p in procs}
def in_run(p, with_parent=False):
    if with_parent and top is not None and p == parent.get(top):
        return True
    while p and p not in ("0", "1"):
        if p == top:
            return True
        p = parent.get(p)
    return False
EOF
}
