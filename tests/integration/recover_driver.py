#!/usr/bin/env python3
"""recover_driver.py -- run route attempts with a failpoint channel.

    recover_driver.py --attempt SPEC [--attempt SPEC ...] -- ARGV...

SPEC is space-separated key=value pairs:

    try=N          FENCECERT_TRY_NUMBER and lease owner "tryN" (required)
    expect=S       the exit status the attempt must end with (137: killed)
    kill=NAME      SIGKILL the attempt's process group when it reaches NAME
    fail=A,B,...   answer `f` at these failpoints (`c` at every other)

Each attempt runs ARGV (normally `fencecert route`) in its own process
group with FENCECERT_FAILPOINT_FD set to one end of a socket pair, in
order.  Exits 0 when every attempt ended as expected, else 1 with the
failing attempt's failpoints and stderr.  One interpreter runs several
attempts because starting python3 is the slow part on a loaded machine.
Used by tests/integration/recover.sh to drive operations into
COMMIT_UNKNOWN for real.
"""

import argparse
import os
import signal
import socket
import subprocess
import sys

KILLED = 137


def parse_spec(text):
    spec = dict(item.split("=", 1) for item in text.split())
    unknown = set(spec) - {"try", "expect", "kill", "fail"}
    if unknown or "try" not in spec or "expect" not in spec:
        sys.exit("bad --attempt %r" % text)
    return spec


def run_attempt(argv, spec):
    """Run one attempt; returns (status, failpoints hit, stderr)."""
    fail = {n for n in spec.get("fail", "").split(",") if n}
    ours, theirs = socket.socketpair()
    env = dict(os.environ, FENCECERT_FAILPOINT_FD=str(theirs.fileno()),
               FENCECERT_TRY_NUMBER=spec["try"],
               FENCECERT_LEASE_OWNER="try" + spec["try"])
    proc = subprocess.Popen(argv, env=env, pass_fds=[theirs.fileno()],
                            stderr=subprocess.PIPE, start_new_session=True)
    theirs.close()
    hits, killed = [], False
    with ours.makefile("rb") as reader:
        for raw in reader:
            line = raw.decode("utf-8", "replace").strip()
            if not line.startswith("HIT "):
                continue
            hits.append(line[4:])
            if line[4:] == spec.get("kill"):
                os.killpg(proc.pid, signal.SIGKILL)
                killed = True
                break
            ours.sendall(b"f" if line[4:] in fail else b"c")
    _, err = proc.communicate()
    ours.close()
    status = KILLED if killed or proc.returncode < 0 else proc.returncode
    return status, hits, err.decode("utf-8", "replace")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--attempt", action="append", required=True)
    ap.add_argument("argv", nargs="+")
    args = ap.parse_args()
    for text in args.attempt:
        spec = parse_spec(text)
        status, hits, err = run_attempt(args.argv, spec)
        if status != int(spec["expect"]):
            sys.exit("try %s: exit %d, want %s\nfailpoints: %s\nstderr: %s"
                     % (spec["try"], status, spec["expect"], " ".join(hits),
                        err))


if __name__ == "__main__":
    main()
