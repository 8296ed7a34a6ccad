/*
 * inject_seccomp.h -- syscall faults without the route's cooperation
 * (SPEC section 8), through seccomp user notification.
 *
 * Failpoints exist only where a route author put them.  This module lets the
 * supervisor stop a route at a chosen system call instead: the route's child
 * installs a seccomp filter that turns the chosen syscalls into notifications
 * on a file descriptor held by the supervisor, and the supervisor decides each
 * call -- let it run, fail it with an errno, kill the route before it runs, or
 * run it on the route's behalf and kill the route before it sees the result.
 * docs/syscall-faults.md explains the mechanism and its limits.
 *
 * Three steps, in this order:
 *
 *   struct inject_seccomp_plan     what to intercept and what to do at which
 *                                  occurrence; built before fork, read-only after
 *   inject_seccomp_plan_bpf()      the plan's filter, compiled before the child
 *                                  starts; the child loads it last thing before
 *                                  it runs the route and hands the listener fd
 *                                  back (common/child_setup.h, step 7)
 *   struct inject_seccomp_session  in the supervisor: owns the listener fd,
 *                                  counts occurrences, answers notifications
 *                                  (inject_seccomp_handle(), one per POLLIN)
 *
 * Who includes it: the harness parts above harness/inject (the supervisor
 * in harness/proc, and through supervise.h the run; the suite model for the
 * syscall table and rule syntax); never a route, which only sees the
 * filter the kernel runs.
 *
 * Occurrences.  A call is "in scope" when the path it acts on (the file behind
 * its fd, or its path argument resolved against cwd / dirfd), or for a socket
 * its peer ("tcp:127.0.0.1:5432", see the event's `peer`), matches one of
 * the plan's watch globs and none of its ignore globs; calls out of scope are
 * let through and never counted, so a route's stderr and its failpoint pipe do
 * not shift the numbering.  Without any watch glob the scope is every absolute
 * path outside /dev, /proc and /sys.  Occurrences are counted per session (one
 * session per route process tree, i.e. per attempt), per syscall and per
 * (syscall, path), starting at 1, and only once the supervisor's decision
 * reached the route: a call the route withdrew (it was signalled while waiting)
 * is not counted, so a restarted call keeps its number.
 *
 * Rules.  A rule is (syscall, occurrence N, optional glob, action).  Each rule
 * keeps its own counter of in-scope calls of its syscall whose path (or
 * from, or peer) matches its glob; it fires on the N-th (N = 0: on every
 * one).  When several rules fire on one call, the first in plan order acts;
 * every matching rule counts.  Rule string form (what reports print and the
 * plan parses):
 *
 *   SYSCALL ['#' N] ':' ACTION ['@' GLOB]
 *   ACTION = count | kill_before | kill_after | errno:NAME     (NAME: EIO, ...)
 *   e.g. "fsync#2:kill_before@/run/t1/journal.db", "write#1:errno:ENOSPC"
 *
 * Globs are fnmatch(3) patterns without FNM_PATHNAME: '*' also matches '/'.
 *
 * Ownership: a plan must outlive every session made from it.  A session owns
 * the listener fd it was given.  Strings in events are copies owned by the
 * event.  Not thread-safe; the supervisor is single-threaded.
 *
 * Errors: functions return 0 or a negative enum fc_error code (FC_USAGE for a
 * bad plan, FC_IO for a system call that failed, FC_NOMEM); the detail is in
 * inject_seccomp_plan_errmsg() / inject_seccomp_session_errmsg().  A failing
 * call leaves its object as it was (see inject_seccomp_handle() for the one
 * unavoidable exception: the route's pending call must be answered).
 */
#ifndef FENCECERT_INJECT_SECCOMP_H
#define FENCECERT_INJECT_SECCOMP_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include <jansson.h>

#include "common/error.h"

/* What a rule does to the call it fires on. */
enum inject_action {
	INJECT_COUNT,       /* let it run; the rule only counts (discovery) */
	INJECT_KILL_BEFORE, /* SIGKILL the route's process group; the call never runs */
	INJECT_KILL_AFTER,  /* run the call on the route's behalf, then SIGKILL:
			     * the effect lands, the route never sees the result.
			     * Only for syscalls where inject_seccomp_syscall_info()
			     * says so: every call that changes a file or a name
			     * (the write family, syncs, ftruncate, fallocate,
			     * truncate, rename*, link*, symlink*, unlink*, rmdir,
			     * mkdir*) and sendto; not open*, reads, connect. */
	INJECT_ERRNO,       /* the call fails with -error and does nothing */
	INJECT_POWER_LOSS,  /* as INJECT_KILL_BEFORE: the call never runs; the
			     * caller (the harness's power-loss model) then
			     * puts the files back to what was synced */
};

/* What inject_seccomp_handle() did with one notification. */
enum inject_outcome {
	INJECT_OUT_NONE,         /* nothing was pending (or it was withdrawn
				  * before it could be read); nothing to log */
	INJECT_OUT_HANGUP,       /* no process uses the filter any more: stop
				  * polling and free the session */
	INJECT_OUT_IGNORED,      /* out of scope: let through, not counted */
	INJECT_OUT_CONTINUED,    /* in scope, counted, let through */
	INJECT_OUT_FAILED,       /* answered with -error (INJECT_ERRNO) */
	INJECT_OUT_KILLED_BEFORE,/* route killed, the call did not run */
	INJECT_OUT_KILLED_AFTER, /* call run on the route's behalf, route killed */
	INJECT_OUT_STALE,        /* the route died or withdrew the call before
				  * the decision took effect; nothing was done,
				  * nothing counted */
	INJECT_OUT_COUNT
};

#define INJECT_SYSCALL_NAME_MAX 32
#define INJECT_PEER_MAX 128

/* One handled notification, for the harness's log and reports. */
struct inject_seccomp_event {
	enum inject_outcome outcome;
	char syscall[INJECT_SYSCALL_NAME_MAX]; /* "" for NONE / HANGUP */
	int nr;                   /* syscall number (native architecture) */
	pid_t pid;                /* the calling thread, in our pid namespace */
	char path[PATH_MAX];      /* subject: the fd's file, the sole path
				   * argument, or the destination of rename /
				   * link / symlink; "" when the call has none */
	char from[PATH_MAX];      /* source of rename / link, target of
				   * symlink; "" otherwise */
	char peer[INJECT_PEER_MAX]; /* fd-based call on a connected socket:
				   * "tcp:ADDR:PORT", "udp:ADDR:PORT" (IPv6
				   * as "[ADDR]"), "unix:PATH" ("unix:@NAME"
				   * abstract); "" otherwise.  Discovery
				   * counts such a socket by its peer. */
	unsigned long occurrence;         /* of (syscall, path) in this session,
					   * this call included; 0 if out of scope */
	unsigned long syscall_occurrence; /* of syscall over all in-scope paths */
	int rule;                 /* index of the rule that acted, -1 if none */
	enum inject_action action;/* that rule's action (INJECT_COUNT if none) */
	int error;                /* INJECT_ERRNO: the positive errno answered */
	long long result;         /* KILLED_AFTER: what the call run on the
				   * route's behalf returned (bytes written, 0,
				   * or -errno); 0 otherwise */
};

/* --- plan ------------------------------------------------------------- */

struct inject_seccomp_plan;

int inject_seccomp_plan_new(struct inject_seccomp_plan **out) FC_MUST_CHECK;
void inject_seccomp_plan_free(struct inject_seccomp_plan *p); /* NULL: no-op */

/* The message of the last failing call on p ("" if none). */
const char *inject_seccomp_plan_errmsg(const struct inject_seccomp_plan *p);

/* Add a scope glob (see above).  FC_USAGE for an empty glob. */
int inject_seccomp_plan_watch(struct inject_seccomp_plan *p, const char *glob)
	FC_MUST_CHECK;
int inject_seccomp_plan_ignore(struct inject_seccomp_plan *p, const char *glob)
	FC_MUST_CHECK;

/* Intercept a syscall without a rule: discovery counts it.  FC_USAGE for a
 * name this module does not support (inject_seccomp_syscall_info()). */
int inject_seccomp_plan_intercept(struct inject_seccomp_plan *p,
				  const char *syscall) FC_MUST_CHECK;

/* Append a rule (and intercept its syscall).  glob may be NULL (any in-scope
 * path); error is the positive errno for INJECT_ERRNO and ignored otherwise.
 * FC_USAGE for an unsupported syscall, an action it cannot take, or an errno
 * outside 1..4095. */
int inject_seccomp_plan_add(struct inject_seccomp_plan *p, const char *syscall,
			    unsigned long occurrence, enum inject_action action,
			    int error, const char *glob) FC_MUST_CHECK;

/* Append a rule given in its string form. */
int inject_seccomp_plan_add_rule(struct inject_seccomp_plan *p,
				 const char *rule) FC_MUST_CHECK;

/* The action of a rule string, read the way the plan reads it (no plan,
 * no allocation).  FC_USAGE when the string is not a rule. */
int inject_seccomp_rule_action(const char *rule, enum inject_action *out)
	FC_MUST_CHECK;

/* Does the call an action acts on run?  Counted (let through) and
 * kill_after (run on the route's behalf) ones do; the others never do. */
bool inject_action_runs_call(enum inject_action a);

/* Number of rules, and the string form of rule i (round-trips through
 * inject_seccomp_plan_add_rule()).  FC_USAGE if i is out of range or the
 * string does not fit. */
size_t inject_seccomp_plan_rules(const struct inject_seccomp_plan *p);
int inject_seccomp_plan_format_rule(const struct inject_seccomp_plan *p,
				    size_t i, char *out, size_t outlen)
	FC_MUST_CHECK;

/* Escape fnmatch metacharacters so a discovered path becomes a glob matching
 * exactly that path.  FC_USAGE if it does not fit. */
int inject_seccomp_glob_escape(const char *path, char *out, size_t outlen)
	FC_MUST_CHECK;

/* Whether this module can intercept `syscall` on this architecture, and
 * whether it supports INJECT_KILL_AFTER for it.  Returns 1 if supported. */
int inject_seccomp_syscall_info(const char *syscall, bool *kill_after);

/* 1 if the kernel and libseccomp provide what this module needs (user
 * notification with CONTINUE, pidfd_open / pidfd_getfd, process_vm_readv);
 * 0 with the reason in why.  The harness marks syscall scenarios unverified
 * when this is 0. */
int inject_seccomp_available(char *why, size_t whylen);

const char *inject_action_name(enum inject_action a); /* "kill_after", ... */
const char *inject_outcome_name(enum inject_outcome o); /* "killed_after", ... */

/* --- supervisor side -------------------------------------------------- */

/* The plan's filter as a classic BPF program (struct sock_filter[], *len
 * bytes, malloc'd into *prog; the caller frees it): default allow, notify
 * for the plan's syscalls on the native architecture, other architectures
 * allowed untouched.  The child loads it with SECCOMP_FILTER_FLAG_NEW_LISTENER
 * (child_setup_filter()); it is inherited across exec and by every process
 * the route forks.  0, FC_USAGE (plan intercepts nothing), FC_IO or
 * FC_NOMEM; nothing is allocated on failure. */
int inject_seccomp_plan_bpf(const struct inject_seccomp_plan *p, void **prog,
			    size_t *len) FC_MUST_CHECK;

struct inject_seccomp_session;

/* A session over `notify_fd` (taken over on success, left open on failure)
 * for the route whose process group is `pgid` (the kill target; <= 0 kills
 * only the calling process). */
int inject_seccomp_session_new(const struct inject_seccomp_plan *p,
			       int notify_fd, pid_t pgid,
			       struct inject_seccomp_session **out) FC_MUST_CHECK;
void inject_seccomp_session_free(struct inject_seccomp_session *s); /* closes fd */

/* The fd to poll for POLLIN (a notification) and POLLHUP (route gone). */
int inject_seccomp_session_fd(const struct inject_seccomp_session *s);

const char *inject_seccomp_session_errmsg(const struct inject_seccomp_session *s);

/* Called with each received notification once it is described (syscall,
 * paths) and, when in scope, decided (rule, action: whether the call will
 * run), before anything is done about it; the event's outcome is still
 * NONE.  For tracing, the power-loss model (a call that will not run syncs
 * nothing), and for tests that need to race the route. */
typedef void inject_seccomp_hook(void *arg,
				 const struct inject_seccomp_event *ev);
void inject_seccomp_session_set_hook(struct inject_seccomp_session *s,
				     inject_seccomp_hook *fn, void *arg);

/*
 * Handle at most one notification; never waits for one (it polls the fd with
 * a zero timeout first).  Fills *ev and returns 0 for every outcome above,
 * including STALE.  Returns FC_IO when the supervisor itself could not do its
 * part (e.g. pidfd_getfd denied); the route's call must still be answered, so
 * the route has then been killed before its call ran and ev says
 * KILLED_BEFORE; the message says why.
 */
int inject_seccomp_handle(struct inject_seccomp_session *s,
			  struct inject_seccomp_event *ev) FC_MUST_CHECK;

/* Discovery: the (syscall, path) pairs seen in scope and their counts, in
 * first-seen order; a connected socket is listed by its peer
 * ("tcp:127.0.0.1:5432"), which is the same in every run, not by its
 * "socket:[INODE]".  Strings stay valid until the session is freed. */
size_t inject_seccomp_stats_len(const struct inject_seccomp_session *s);
int inject_seccomp_stats_get(const struct inject_seccomp_session *s, size_t i,
			     const char **syscall, const char **path,
			     unsigned long *count) FC_MUST_CHECK;

/* JSON for reports (new references; NULL on allocation failure):
 * stats as [{"syscall","path","count"}...], an event as an object with the
 * fields above ("rule" as its string form, "errno" as its name). */
json_t *inject_seccomp_stats_json(const struct inject_seccomp_session *s);
json_t *inject_seccomp_event_json(const struct inject_seccomp_session *s,
				  const struct inject_seccomp_event *ev);

#endif
