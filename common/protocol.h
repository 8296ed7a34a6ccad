/*
 * protocol.h -- the route protocol (SPEC sections 6 and 7) as constants: the
 * one thing the harness and a route share besides processes.
 *
 * Owns: the environment an attempt is started with, the failpoint channel
 * (its fd, its lines and answers), the stable failpoint names
 * (docs/failpoints.md), the exit statuses of a route, and the wire format of
 * the fork server (docs/fork-server.md).
 *
 * Who includes it: anything.  The harness (harness/) includes it to start
 * and talk to routes, the routes (routes/) to be started and talk back;
 * neither includes the other (docs/architecture.md).  It holds constants
 * only, so including it costs nothing and couples no code.
 *
 * Invariant: a name or number here is part of the public protocol that
 * routes in any language speak; changing one breaks routes we did not
 * write.  Add, never rename.
 */
#ifndef FENCECERT_PROTOCOL_H
#define FENCECERT_PROTOCOL_H

/* --- the environment of an attempt (SPEC section 7) ---------------------- */

#define PROTO_ENV_JOURNAL "FENCECERT_JOURNAL"       /* journal URL */
#define PROTO_ENV_TARGET "FENCECERT_TARGET"         /* target URL */
#define PROTO_ENV_WORKLOAD "FENCECERT_WORKLOAD"     /* workload file */
#define PROTO_ENV_TRY_NUMBER "FENCECERT_TRY_NUMBER" /* 1, 2, ... */
#define PROTO_ENV_RUN_DIR "FENCECERT_RUN_DIR"       /* the pod's scratch */
#define PROTO_ENV_XCOM_DIR "FENCECERT_XCOM_DIR"     /* this try's evidence */
/* the previous try's evidence dir (the XCom-guard control reads it) */
#define PROTO_ENV_PREV_XCOM_DIR "FENCECERT_PREV_XCOM_DIR"
#define PROTO_ENV_LEASE_TTL_MS "FENCECERT_LEASE_TTL_MS"
#define PROTO_ENV_LEASE_OWNER "FENCECERT_LEASE_OWNER"
/* the fencecert binary, so routes in any language can call its journal CLI */
#define PROTO_ENV_BIN "FENCECERT_BIN"
/* Sandboxed attempts: the directories the route may write, ':'-separated
 * (its schedule dir first, then the suite's `writable:`); everything
 * else outside its private /tmp is read-only (docs/security.md) */
#define PROTO_ENV_WRITABLE "FENCECERT_WRITABLE"

/* --- the failpoint channel ------------------------------------------------ */

/* The channel's fd number in the route; the variable names it. */
#define PROTO_ENV_FAILPOINT_FD "FENCECERT_FAILPOINT_FD"
#define PROTO_FAILPOINT_FD 3
/* Comma-separated names that wait for an answer; the others PASS. */
#define PROTO_ENV_FAILPOINT_WAIT "FENCECERT_FAILPOINT_WAIT"
/* route -> supervisor, one line each: "HIT <name>\n" waits for one byte,
 * "PASS <name>\n" does not */
/* Longest name the harness takes from the channel, NUL included: a line
 * with a longer name is dropped. */
#define PROTO_FAILPOINT_NAME_MAX 64
#define PROTO_HIT "HIT "
#define PROTO_PASS "PASS "
/* supervisor -> route: go on / fail the step as an I/O error would */
#define PROTO_ANSWER_CONTINUE 'c'
#define PROTO_ANSWER_FAIL 'f'

/* --- the stable failpoint names (docs/failpoints.md) --------------------- */

#define FP_BEFORE_INTENT "before_intent"
#define FP_AFTER_INTENT "after_intent"
#define FP_BEFORE_LEASE "before_lease"
#define FP_AFTER_LEASE "after_lease"
#define FP_BEFORE_RESTART "before_restart"
#define FP_AFTER_RESTART "after_restart"
#define FP_BEFORE_FENCE_PREPARE "before_fence_prepare"
#define FP_AFTER_FENCE_PREPARE "after_fence_prepare"
#define FP_BEFORE_PREPARED "before_prepared"
#define FP_AFTER_PREPARED "after_prepared"
#define FP_BEFORE_COMMITTING "before_committing"
#define FP_AFTER_COMMITTING "after_committing"
#define FP_BEFORE_TARGET_COMMIT "before_target_commit"
#define FP_AFTER_TARGET_COMMIT "after_target_commit"
#define FP_BEFORE_PROBE "before_probe"
#define FP_AFTER_PROBE "after_probe"
#define FP_BEFORE_RECONCILE_PROBE "before_reconcile_probe"
#define FP_AFTER_RECONCILE_PROBE "after_reconcile_probe"
#define FP_BEFORE_TARGET_COMMITTED "before_target_committed"
#define FP_AFTER_TARGET_COMMITTED "after_target_committed"
#define FP_BEFORE_COMMITTED_INCOMPLETE "before_committed_incomplete"
#define FP_AFTER_COMMITTED_INCOMPLETE "after_committed_incomplete"
#define FP_BEFORE_EVIDENCE "before_evidence"
#define FP_AFTER_EVIDENCE "after_evidence"
#define FP_BEFORE_COMPLETE "before_complete"
#define FP_AFTER_COMPLETE "after_complete"
#define FP_BEFORE_COMMIT_UNKNOWN "before_commit_unknown"
#define FP_AFTER_COMMIT_UNKNOWN "after_commit_unknown"
#define FP_BEFORE_FAILED_PRE_COMMIT "before_failed_pre_commit"
#define FP_AFTER_FAILED_PRE_COMMIT "after_failed_pre_commit"
/* the prefixes every name starts with: the step is about to run / has run */
#define FP_BEFORE_PREFIX "before_"
#define FP_AFTER_PREFIX "after_"

/* --- how a route attempt ends (SPEC section 6) ---------------------------- */

#define PROTO_EXIT_COMPLETE 0   /* the operation is complete */
#define PROTO_EXIT_USAGE 64     /* usage or configuration error */
#define PROTO_EXIT_RETRY 75     /* transient failure: may be retried */
#define PROTO_EXIT_STOP 100     /* fail-closed stop: must not be retried */

/* --- the fork server (docs/fork-server.md) -------------------------------- *
 *
 * A route declared with `fork_server: true` is started once per harness
 * worker with PROTO_ENV_FORK_SERVER_FD naming a SOCK_SEQPACKET unix socket.
 * One message per record; "\0" separates fields:
 *
 *   server -> harness  FORK_SERVER_HELLO                      once
 *   harness -> server  "spawn\0ARGC\0ENVC\0CWD\0FP\0BPFLEN\0NS\0"
 *                      ARGV... ENV... (each NUL-terminated), then BPFLEN
 *                      bytes of a classic BPF seccomp program (struct
 *                      sock_filter[]); SCM_RIGHTS: stdin, stdout, stderr,
 *                      report, then the failpoint end if FP is 1, then the
 *                      seccomp socket if BPFLEN > 0.  CWD "" = inherit.
 *                      NS: 0 no namespace, 1 a new PID namespace, 2 a new
 *                      user and PID namespace (common/child_setup.h).
 *   server -> harness  "pid N" or "error ERRNO"
 *
 * The report fd carries struct child_report records (common/child_setup.h):
 * the child writes ERRNO there and _exits 127 when its setup fails; set
 * up, it closes it (NS 0: EOF = ok) or writes RUNNING first (NS 1, 2: the
 * namespace's init, the child the reply names, holds it and writes END
 * when the route has ended), before it loads the seccomp filter and sends
 * the listener over the seccomp socket.
 */
#define PROTO_ENV_FORK_SERVER_FD "FENCECERT_FORK_SERVER_FD"
#define FORK_SERVER_HELLO "fencecert-fork-server 2"
#define FORK_SERVER_SPAWN "spawn"
/* Largest request (argv + environment + filter). */
#define FORK_SERVER_MSG_MAX (256 * 1024)
/* fds of one request: in, out, err, report, failpoint, seccomp socket */
#define FORK_SERVER_FDS_MAX 6

#endif
