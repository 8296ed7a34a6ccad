#!/bin/sh
# sandbox_signing_key.sh -- a route cannot read the signing key (issue 30,
# break 2; docs/security.md).
#
# certify runs with FENCECERT_SIGNING_KEY set, under `timeout`, whose
# environment still holds it (the CI step's shell that starts certify).
# The route reads every /proc/*/environ it can open and the memory of
# each of its ancestors (/proc/PID/maps, then every readable mapping
# through /proc/PID/mem) and saves, in its schedule dir, every stretch of
# bytes around the key's name or its value that it finds.  Uncontained
# (host /proc, no user namespace, no Yama) it found the key in timeout's
# environment and in certify's memory.  The test then greps everything
# the run left in its work dir (the route's files, stdout and stderr) for
# the key's value: it must be nowhere.  (The route is given only the
# key's prefix to look for, never the value.)
. "$(dirname "$0")/lib/sandbox.sh"
prefix=sbkey-
key=$prefix$$-7d1c0ffee5e1f0
SB_TIMEOUT=${SB_TIMEOUT_KEY:-90}

{
	cat <<'EOF'
import os, re, sys
# the key's prefix only: the suite (and so the harness's memory) never
# holds the value itself
key = sys.argv[1].encode()
wl = os.environ["FENCECERT_WORKLOAD"]
out = open(os.path.join(os.path.dirname(wl), "found.%s" %
                        os.environ["FENCECERT_TRY_NUMBER"]), "wb")
name = b"FENCECERT_SIGNING_KEY="
envs = mems = 0
def report(where, blob, at):
    out.write(b"%s: %s\n" % (where.encode(), blob[max(0, at - 8):at + 64]))
for p in os.listdir("/proc"):
    if not p.isdigit():
        continue
    try:
        e = open("/proc/%s/environ" % p, "rb").read()
    except OSError:
        continue
    envs += 1
    for pat in (name, key):
        for m in re.finditer(re.escape(pat), e):
            report("environ " + p, e, m.start())
EOF
	sb_py_status
	cat <<'EOF'
pid = status(os.readlink("/proc/self")).get("PPid", "0")
while pid not in ("0", "1", ""):
    try:
        maps = open("/proc/%s/maps" % pid).read().splitlines()
        mem = open("/proc/%s/mem" % pid, "rb", 0)
    except OSError:
        pid = status(pid).get("PPid", "0")
        continue
    for m in maps:
        f = m.split()
        if not f[1].startswith("r") or (len(f) > 5 and f[5] in ("[vvar]", "[vsyscall]")):
            continue
        lo, hi = (int(x, 16) for x in f[0].split("-"))
        if hi - lo > (256 << 20):
            continue
        try:
            mem.seek(lo)
            b = mem.read(hi - lo)
        except (OSError, ValueError, OverflowError):
            continue
        mems += 1
        for pat in (key, name):
            for n, m in enumerate(re.finditer(re.escape(pat), b)):
                if n < 64:
                    report("mem %s %s" % (pid, f[0]), b, m.start())
    mem.close()
    pid = status(pid).get("PPid", "0")
out.write(b"scanned %d environ(s), %d mapping(s)\n" % (envs, mems))
EOF
} >"$tmp/scan.py"

cat >"$tmp/suite.yaml" <<EOF
version: 1
suite: signing-key
routes:
  - name: key-thief
    command: [sh, -c, '$PY $tmp/scan.py $prefix; exec "\$FENCECERT_BIN" route']
    journal: "sqlite:{dir}/journal.db"
    target: "sqlite:{dir}/target.db"
    observe: {sql: "SELECT row_key, COUNT(*) FROM events GROUP BY row_key"}
workload: {operations: 1, rows_per_operation: 3, seed: 1}
orchestrator: {retries: 1, zombie_delay_ms: 5, lease_ttl_ms: 5, attempt_timeout_ms: 60000}
scenarios:
  - name: clean
EOF

# parent: the key in the environment of certify's parent (timeout), as
# in a CI step's shell; memory: only certify gets it (env(1) execs
# certify, the key read from a file), so only certify's memory holds it
printf %s "$key" >"$tmp/key"
chmod 0644 "$tmp/key"
printf '#!/bin/sh\nexec env FENCECERT_SIGNING_KEY="$(cat %s)" %s "$@"\n' \
	"$tmp/key" "$FENCECERT" >"$tmp/keyed-fencecert"
chmod 0755 "$tmp/keyed-fencecert"
real=$FENCECERT
bad=0
for u in $(sb_users); do
	for how in parent memory; do
		d=$(sb_dir "$u" "$u-$how")
		if [ "$how" = parent ]; then
			FENCECERT_SIGNING_KEY=$key sb_certify "$u" "$d" "$tmp/suite.yaml" --jobs 1
		else
			FENCECERT=$tmp/keyed-fencecert
			sb_certify "$u" "$d" "$tmp/suite.yaml" --jobs 1
			FENCECERT=$real
		fi
		found=$(sb_files "$d" found.1)
		[ -n "$found" ] || fail "the route did not run its scan ($u, $how, exit $sb_rc): $(cat "$d/stderr")"
		sed 's/^/  /' "$found" | tail -n 1
		if grep -rlaF -- "$key" "$d/work" >"$d/leaks" 2>/dev/null; then
			grep -aF -- "$key" "$found" | head -n 5 | sed 's/^/  /' >&2
			echo "FAIL: the route ($u, key in $how) read the signing key: its value is in $(tr '\n' ' ' <"$d/leaks")" >&2
			bad=$((bad + 1))
		else
			ok "the signing key ($how) is nowhere in what the route ($u) saved"
		fi
	done
done
[ "$bad" -eq 0 ] || fail "$bad case(s) leaked the key"
echo "sandbox_signing_key: ok ($checks checks)"
