#!/bin/sh
# sandbox_replace_bin.sh -- a route cannot replace the fencecert binary
# (issue 30, break 3; docs/security.md).
#
# certify runs from a copy of the binary in a directory its user owns (as
# a build dir is), and the test makes a second copy where a checkout's
# build/fencecert would be.  The route does its job (the C route), then
# tries to put a program of its own in place of both: a rename from the
# binary's own directory, a rename from its schedule dir, and a copy over
# the file.  Uncontained, every later observe.command, operator or CI
# step that ran build/fencecert ran the route's program.  Now the rest of
# the file system is read-only to the route: afterwards both copies are
# byte for byte what they were (cmp).  The copies keep a failure on old
# code from touching the real build.
. "$(dirname "$0")/lib/sandbox.sh"

cat >"$tmp/replace.sh" <<'EOF'
#!/bin/sh
# the route's job first, then the attack; its status is the route's
"$FENCECERT_BIN" route
rc=$?
log=$(dirname "$FENCECERT_WORKLOAD")/replace.log
for victim in "$FENCECERT_BIN" "$CHECKOUT_BIN"; do
	evil=$(dirname "$victim")/.evil.$$
	printf '#!/bin/sh\necho replaced-by-the-route\n' >"$evil" 2>>"$log" &&
		chmod 0755 "$evil" 2>>"$log" && mv -f "$evil" "$victim" 2>>"$log" &&
		echo "renamed over $victim from its dir" >>"$log"
	evil=$FENCECERT_RUN_DIR/evil.$$
	printf '#!/bin/sh\necho replaced-by-the-route\n' >"$evil" 2>>"$log" &&
		chmod 0755 "$evil" && mv -f "$evil" "$victim" 2>>"$log" &&
		echo "moved over $victim from the run dir" >>"$log"
	printf '#!/bin/sh\necho replaced-by-the-route\n' 2>>"$log" >"$victim" &&
		echo "wrote over $victim" >>"$log"
done
echo "done" >>"$log"
exit $rc
EOF
chmod 0755 "$tmp/replace.sh"

for u in $(sb_users); do
	d=$(sb_dir "$u" "$u")
	mkdir -p "$d/bin" "$d/checkout/build"
	cp "$FENCECERT" "$d/bin/fencecert"
	cp "$FENCECERT" "$d/checkout/build/fencecert"
	[ "$u" != nobody ] || chown -R "$SB_NOBODY:$SB_NOBODY" "$d/bin" "$d/checkout"
	cat >"$d/suite.yaml" <<EOF
version: 1
suite: replace-bin
routes:
  - name: replacer
    command: [sh, $tmp/replace.sh]
    journal: "sqlite:{dir}/journal.db"
    target: "sqlite:{dir}/target.db"
    observe: {sql: "SELECT row_key, COUNT(*) FROM events GROUP BY row_key"}
    env: {CHECKOUT_BIN: "$d/checkout/build/fencecert"}
workload: {operations: 1, rows_per_operation: 3, seed: 1}
orchestrator: {retries: 1, zombie_delay_ms: 5, lease_ttl_ms: 5, attempt_timeout_ms: 20000}
scenarios:
  - name: clean
EOF
	FENCECERT=$d/bin/fencecert sb_certify "$u" "$d" "$d/suite.yaml" --jobs 1
	log=$(sb_files "$d" replace.log)
	[ -n "$log" ] || fail "the route never ran ($u, exit $sb_rc): $(cat "$d/stderr")"
	grep -q '^done' "$log" || fail "the route did not finish its attack ($u)"
	bad=""
	cmp -s "$FENCECERT" "$d/bin/fencecert" || bad="$bad \$FENCECERT_BIN"
	cmp -s "$FENCECERT" "$d/checkout/build/fencecert" || bad="$bad checkout/build/fencecert"
	if [ -n "$bad" ]; then
		grep -v '^done' "$log" | sed 's/^/  /' >&2
		fail "the route ($u) replaced:$bad"
	fi
	ok "the binaries are intact ($u; certify exit $sb_rc)"
done
echo "sandbox_replace_bin: ok ($checks checks)"
