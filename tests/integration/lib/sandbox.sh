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
