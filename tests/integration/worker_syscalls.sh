#!/bin/sh
# worker_syscalls.sh -- what a worker does per schedule that it need not
# (docs/harness.md, "What a schedule costs"): under strace, a few schedules
# of the every-failpoint exploration of c-sqlite, and count in the worker
#   - waitpid(pid, WNOHANG) calls that found nothing: the supervisor reaps
#     only after the SIGCHLD self-pipe said a child changed state, so a
#     wakeup for a failpoint line costs none (it was two per wakeup);
#   - reads of a failpoint channel or the self-pipe that found nothing
#     (EAGAIN): a short read already said the pipe was empty;
#   - reads of the partition it wrote itself (digested from memory) and
#     a stat before opening each return.json (the open is the check);
#   - a result line's newline written apart from it (the coordinator would
#     wake twice per line).
# Each bound is far below what the old code did and above what this code
# does, whatever the timing: the counts depend on wakeups, not on speed.
# Skipped without strace.
set -eu
BUILD=${BUILD:-build}
FENCECERT=${FENCECERT:-$PWD/$BUILD/fencecert}
command -v strace >/dev/null || { echo "worker_syscalls: strace not installed, skipped"; exit 0; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/fc-worker-syscalls.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
sed "s#build/fencecert#$FENCECERT#g" scenarios/exhaustive.yaml >"$tmp/s.yaml"
mkdir "$tmp/st"
# LeakSanitizer cannot run under ptrace; a sanitized build is still checked
# for everything else
ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0
export ASAN_OPTIONS
for s in clean 'k:after_lease@1/op1' 'p:before_target_commit@1/op1'; do
	strace -ff -o "$tmp/st/$(echo "$s" | tr -c 'a-z0-9\n' _)" "$FENCECERT" certify --force \
		"$tmp/s.yaml" --route c-sqlite --only every-failpoint --schedule "$s" \
		--jobs 1 --out "$tmp/out" --format json --quiet >/dev/null 2>"$tmp/err" ||
		[ $? -eq 3 ] || # one schedule is no certificate: unverified
		{ cat "$tmp/err"; echo "FAIL: certify --schedule $s"; exit 1; }
done
python3 - "$tmp/st" <<'PY'
import os, re, sys
d = sys.argv[1]
# the worker: the process that wrote the schedule's result line
workers = [f for f in os.listdir(d)
           if re.search(r'^write\(\d+, "\{\\"scenario\\":', open(os.path.join(d, f)).read(), re.M)]
if len(workers) != 3:
    print("FAIL: expected one worker per run, found %d" % len(workers)); sys.exit(1)
bad = 0
for f in sorted(workers):
    t = open(os.path.join(d, f)).read()
    idle_wait = len(re.findall(r'^wait4\(\d+, [^)]*WNOHANG, NULL\) = 0$', t, re.M))
    ends = len(re.findall(r'^wait4\(\d+, \[\{WIF', t, re.M))
    eagain = len(re.findall(r'^read\(\d+, .*= -1 EAGAIN', t, re.M))
    reread = len(re.findall(r'^openat\([^"]*"[^"]*/workload/partition-\d+\.csv", O_RDONLY', t, re.M)) + \
        len(re.findall(r'^newfstatat\([^"]*"[^"]*/return\.json"', t, re.M))
    print("%s: %d attempts ended, %d idle waitpid, %d EAGAIN reads, %d needless stat/read-back"
          % (f.split('.')[0], ends, idle_wait, eagain, reread))
    if ends < 1 or idle_wait > 2 * ends:
        print("FAIL: %s: waitpid() without a SIGCHLD" % f); bad = 1
    if eagain > 2 * ends + 2:
        print("FAIL: %s: reads past a short read" % f); bad = 1
    if re.search(r'^write\(\d+, "\\n", 1\)', t, re.M):
        print("FAIL: %s: the result line's newline written apart" % f); bad = 1
    if reread:
        print("FAIL: %s: reads back what it wrote" % f); bad = 1
sys.exit(bad)
PY
echo "worker_syscalls: ok"
