#!/bin/sh
# services_kill.sh -- harness-managed services (harness/run/services.c) end to
# end, for both kinds:
#
# 1. a suite declaring a three-member etcd and a postgresql service (no
#    FENCECERT_PG_URL: the harness runs ci/pg-up) whose route records what
#    {service:etcd}, {service:pg} and {schedule_id} became and then hangs;
#    once it runs, the harness is SIGKILLed.  Every server it started (etcd
#    members, the postmaster and its backends) must be gone soon after, and
#    the services dir with them: the keeper tears down on EOF.
# 2. the same postgresql entry with its variable set: that server is used
#    (the URL reaches the route) and no server is started.
set -eu
BUILD=${BUILD:-build}
FENCECERT=${FENCECERT:-$PWD/$BUILD/fencecert}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/fc-services-kill.XXXXXX")
harness=""
cleanup() {
	[ -z "$harness" ] || kill -9 "$harness" 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT
mkdir "$tmp/w" "$tmp/w2"
chmod 0755 "$tmp" # ci/pg-up runs the server as user postgres under root

# pids whose command line mentions $1 (this script's own do not)
procs_under() {
	for f in /proc/[0-9]*/cmdline; do
		{ tr '\0' ' ' <"$f"; } 2>/dev/null | grep -qF -- "$1" || continue
		p=${f#/proc/}
		echo "${p%/cmdline}"
	done
}

# wait until $1 succeeds, at most $2 tenths of a second
wait_for() {
	i=0
	until eval "$1"; do
		i=$((i + 1))
		[ "$i" -lt "$2" ] || return 1
		sleep 0.1
	done
}

mkdir -p "$tmp/sig"
cat >"$tmp/suite.yaml" <<YAML
version: 1
suite: services-kill
services:
  - {name: etcd, kind: etcd, members: 3}
  - {name: pg, kind: postgresql, env: FC_TEST_SERVICES_PG_URL}
routes:
  - name: hang
    command: [sh, -c, 'echo "\$1" >"\$2.tmp" && mv "\$2.tmp" "\$2" && exec sleep 600', sh,
              "{service:etcd} {service:pg} {schedule_id}", "$tmp/sig/seen"]
    writable: ["$tmp/sig"]  # sandboxed: the only place it writes outside its dir
    journal: "sqlite:{dir}/journal.db"
    target: "sqlite:{dir}/target.db"
    observe: {sql: "SELECT row_key, COUNT(*) FROM events GROUP BY row_key"}
scenarios:
  - name: clean
YAML

unset FC_TEST_SERVICES_PG_URL
"$FENCECERT" certify "$tmp/suite.yaml" --work-dir "$tmp/w" --out "$tmp/out" \
	--quiet >"$tmp/log" 2>&1 &
harness=$!
wait_for '[ -s "$tmp/sig/seen" ]' 900 || { echo "the route never ran"; cat "$tmp/log"; exit 1; }
read -r etcd pg id <"$tmp/sig/seen"
echo "route saw: etcd=$etcd pg=$pg id=$id"
case $etcd in 127.0.0.1:*,127.0.0.1:*,127.0.0.1:*) ;; *) echo "bad {service:etcd}"; exit 1 ;; esac
case $pg in postgresql://*) ;; *) echo "bad {service:pg}"; exit 1 ;; esac
case $id in fc_*_r0_s0_j*) ;; *) echo "bad {schedule_id}"; exit 1 ;; esac
svc=$(ls -d "$tmp"/w/fencecert-*-services)
n=$(procs_under "$svc" | wc -l)
[ "$n" -ge 4 ] || { echo "expected 3 etcd members and a postmaster, found $n"; exit 1; }
pg_port=${pg##*:}
pg_port=${pg_port%%/*}

kill -9 "$harness"
wait "$harness" 2>/dev/null || true
harness=""
# the keeper stops the members (a clean etcd stop takes ~1 s each) and the
# postmaster, then kills its group and removes the dir
if ! wait_for '[ -z "$(procs_under "$svc")" ] && [ ! -e "$svc" ]' 600; then
	echo "left behind after SIGKILL of the harness:"
	for p in $(procs_under "$svc"); do tr '\0' ' ' <"/proc/$p/cmdline"; echo; done
	exit 1
fi
if ss -Hltn "sport = :$pg_port" | grep -q .; then
	echo "something still listens on the postgresql port $pg_port"; exit 1
fi
echo "ok: SIGKILL of the harness left no server"

# 2: an existing server named by the entry's variable: nothing started
rm -f "$tmp/sig/seen"
export FC_TEST_SERVICES_PG_URL="postgresql://fc@127.0.0.1:1/external"
"$FENCECERT" certify "$tmp/suite.yaml" --work-dir "$tmp/w2" --out "$tmp/out2" \
	--quiet >"$tmp/log2" 2>&1 &
harness=$!
wait_for '[ -s "$tmp/sig/seen" ]' 900 || { echo "the route never ran"; cat "$tmp/log2"; exit 1; }
read -r etcd pg id <"$tmp/sig/seen"
[ "$pg" = "$FC_TEST_SERVICES_PG_URL" ] || { echo "route saw pg=$pg"; exit 1; }
svc=$(ls -d "$tmp"/w2/fencecert-*-services)
[ ! -e "$svc/pg" ] || { echo "a postgresql server was started"; exit 1; }
kill -9 "$harness"
wait "$harness" 2>/dev/null || true
harness=""
wait_for '[ -z "$(procs_under "$svc")" ] && [ ! -e "$svc" ]' 600 ||
	{ echo "etcd left behind"; exit 1; }
echo "ok: an existing postgresql server is used, none started"
