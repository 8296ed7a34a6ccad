#!/bin/sh
# route_env.sh -- what `fencecert certify` gives the code it runs from its
# own environment (harness/proc/child_env.h, docs/harness.md
# "Environment"), end to end, with FENCECERT_SIGNING_KEY and other harness
# variables set:
#
# 1. a route (`env > FILE`, then the C route), an observe.command (`env >
#    FILE`, then the target's rows) and the scripts of a service (fake
#    etcd-up / etcd-down in FENCECERT_CI_DIR that record their
#    environment) see no signing key, and only names of the allow-list,
#    the protocol, the suite's env: and those passed on with --pass-env
#    (and the service scripts' own knobs; a shell adds PWD, SHLVL, _);
#    the name passed on reaches the route and the observer;
#    and no process's /proc/PID/environ the route can read holds the
#    key (certify zeroes it in its own initial environment at start);
# 2. `--pass-env FENCECERT_SIGNING_KEY` is a usage error (exit 2) that
#    says why, and so is an empty key, before any route runs.
set -eu
BUILD=${BUILD:-build}
FENCECERT=${FENCECERT:-$PWD/$BUILD/fencecert}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/fc-route-env.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/ci" "$tmp/rec" "$tmp/work"

cat >"$tmp/ci/etcd-up" <<EOF
#!/bin/sh
env >"$tmp/rec/etcd-up.env"
echo http://127.0.0.1:1
EOF
cat >"$tmp/ci/etcd-down" <<EOF
#!/bin/sh
env >"$tmp/rec/etcd-down.env"
EOF
chmod 0755 "$tmp/ci/etcd-up" "$tmp/ci/etcd-down"

cat >"$tmp/suite.yaml" <<EOF
version: 1
suite: route-env
services:
  - {name: etcd, kind: etcd, members: 1}
routes:
  - name: dump
    command: [sh, -c, 'env >"\$ENV_OUT/route.\$FENCECERT_TRY_NUMBER.env"; for f in /proc/[0-9]*/environ; do grep -qa FENCECERT_SIGNING_KEY= "\$f" 2>/dev/null && echo "name \$f"; grep -qa route-env-secret "\$f" 2>/dev/null && echo "value \$f"; done >"\$ENV_OUT/proc.scan"; exec "\$FENCECERT_BIN" route']
    journal: 'sqlite:{dir}/journal.db'
    target: 'sqlite:{dir}/target.db'
    observe:
      command: [sh, -c, 'env >"$tmp/rec/observe.env"; exec "$FENCECERT" target rows --target "sqlite:{dir}/target.db"']
    env: {ENV_OUT: '$tmp/rec'}
    writable: ['$tmp/rec']  # sandboxed: where it leaves what it saw
scenarios:
  - name: clean
EOF

run() {
	FENCECERT_SIGNING_KEY=route-env-secret FENCECERT_CI_DIR="$tmp/ci" \
	FENCECERT_ROUTE_ENV_OWN=harness-only ROUTE_ENV_KEPT=kept \
	ROUTE_ENV_PASSED=passed LC_ROUTE_ENV=allowed ETCD_WAIT=7 \
		"$FENCECERT" certify "$tmp/suite.yaml" --out "$tmp/out" \
		--work-dir "$tmp/work" --jobs 1 --quiet "$@"
}

rc=0
run --pass-env ROUTE_ENV_PASSED >"$tmp/certify.out" 2>&1 || rc=$?
if [ "$rc" -eq 2 ] || [ ! -f "$tmp/rec/route.1.env" ]; then
	cat "$tmp/certify.out"
	echo "FAIL: certify did not run the route (exit $rc)"
	exit 1
fi

python3 - "$tmp/rec" <<'PY'
import os, sys
rec = sys.argv[1]
allowed = {"PATH", "HOME", "LANG", "LANGUAGE", "TZ", "TMPDIR", "USER",
           "LOGNAME", "TERM", "ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS"}
shell = {"PWD", "SHLVL", "_", "OLDPWD"}
protocol = {"FENCECERT_JOURNAL", "FENCECERT_TARGET", "FENCECERT_WORKLOAD",
            "FENCECERT_TRY_NUMBER", "FENCECERT_RUN_DIR", "FENCECERT_XCOM_DIR",
            "FENCECERT_PREV_XCOM_DIR", "FENCECERT_LEASE_TTL_MS",
            "FENCECERT_LEASE_OWNER", "FENCECERT_BIN", "FENCECERT_FAILPOINT_FD",
            "FENCECERT_FAILPOINT_WAIT",
            "FENCECERT_WRITABLE"}  # sandboxed: what the route may write
knobs = {"ETCD_WAIT", "ETCD_HEARTBEAT_MS", "ETCD_ELECTION_MS",
         "ETCD_MAX_TXN_OPS", "PG_BIN", "PG_DOWN_WAIT",
         "FENCECERT_PG_PORT_FIRST", "FENCECERT_PG_PORT_COUNT"}
cases = {
    "route.1.env": (allowed | shell | protocol | {"ENV_OUT", "ROUTE_ENV_PASSED"},
                    ["ROUTE_ENV_PASSED=passed", "ENV_OUT=" + rec,
                     "LC_ROUTE_ENV=allowed", "FENCECERT_TRY_NUMBER=1"]),
    "observe.env": (allowed | shell | {"ROUTE_ENV_PASSED"},
                    ["ROUTE_ENV_PASSED=passed", "LC_ROUTE_ENV=allowed"]),
    "etcd-up.env": (allowed | shell | knobs, ["ETCD_WAIT=7"]),
    "etcd-down.env": (allowed | shell | knobs, ["ETCD_WAIT=7"]),
}
bad = 0
for name, (names, want) in cases.items():
    path = os.path.join(rec, name)
    if not os.path.exists(path):
        print("FAIL: %s was not recorded" % name); bad = 1; continue
    lines = open(path).read().splitlines()
    for line in lines:
        key = line.split("=", 1)[0]
        if "route-env-secret" in line or key == "FENCECERT_SIGNING_KEY":
            print("FAIL: %s: the signing key reached it" % name); bad = 1
        elif key not in names and not key.startswith("LC_"):
            print("FAIL: %s: %s is not on the allow-list" % (name, key)); bad = 1
    for w in want:
        if w not in lines:
            print("FAIL: %s lacks %s" % (name, w)); bad = 1
    print("%s: %d variables" % (name, len(lines)))
scan = open(os.path.join(rec, "proc.scan")).read().split()
named = [f for kind, f in zip(scan[0::2], scan[1::2]) if kind == "name"]
valued = [f for kind, f in zip(scan[0::2], scan[1::2]) if kind == "value"]
if valued:
    print("FAIL: the route read the signing key in %s" % " ".join(valued)); bad = 1
elif named:
    print("/proc scan: certify's environment readable (%d), the key zeroed" % len(named))
else:
    print("/proc scan: no environment with the key's name readable here")
sys.exit(bad)
PY

rc=0
run --pass-env FENCECERT_SIGNING_KEY >"$tmp/refused.out" 2>&1 || rc=$?
if [ "$rc" -ne 2 ] || ! grep -q "pass-env 'FENCECERT_SIGNING_KEY'.*signing key" "$tmp/refused.out"; then
	cat "$tmp/refused.out"
	echo "FAIL: --pass-env FENCECERT_SIGNING_KEY gave exit $rc"
	exit 1
fi
rc=0
mkdir "$tmp/work-empty"
FENCECERT_SIGNING_KEY= "$FENCECERT" certify "$tmp/suite.yaml" --out "$tmp/out-empty" \
	--work-dir "$tmp/work-empty" --jobs 1 --quiet >"$tmp/empty.out" 2>&1 || rc=$?
if [ "$rc" -ne 2 ] || ! grep -q "FENCECERT_SIGNING_KEY is set but empty" "$tmp/empty.out" ||
	[ -n "$(ls -A "$tmp/work-empty")" ] || [ -n "$(ls "$tmp/rec"/route.*.env 2>/dev/null | grep -v route.1.env)" ]; then
	cat "$tmp/empty.out"
	echo "FAIL: an empty key gave exit $rc, or a route ran before it was refused"
	exit 1
fi
echo "route_env: ok"
