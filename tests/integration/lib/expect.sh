# lib/expect.sh -- what the shell tests under tests/integration share for
# checking a command's exit status and output.  Sourced (not run: it lives
# below the directory tests/run-all walks) after $tmp is set:
#
#   . "$(dirname "$0")/lib/expect.sh"
#
# EXPECT_OUT / EXPECT_ERR name the files a command's stdout and stderr go
# to (default $tmp/out and $tmp/err).
: "${EXPECT_OUT:=$tmp/out}" "${EXPECT_ERR:=$tmp/err}"
checks=0

fail() {
	echo "FAIL: $*" >&2
	exit 1
}

# ok TEXT: one check passed
ok() {
	checks=$((checks + 1))
	echo "ok: $*"
}

# expect STATUS CMD... : run CMD, stdout and stderr into EXPECT_OUT and
# EXPECT_ERR; fail unless it exits STATUS
expect() {
	want=$1
	shift
	set +e
	"$@" >"$EXPECT_OUT" 2>"$EXPECT_ERR"
	got=$?
	set -e
	[ "$got" -eq "$want" ] ||
		fail "$*: exit $got, want $want; stderr: $(cat "$EXPECT_ERR")"
}

# err_has TEXT: the last command's stderr holds TEXT
err_has() {
	grep -qF -- "$1" "$EXPECT_ERR" || fail "stderr lacks '$1': $(cat "$EXPECT_ERR")"
}
