/*
 * supervise.h -- run route attempts as child processes and watch them.
 *
 * A supervisor starts processes (sv_proc), each in its own process group,
 * and reports what they do as events from one poll loop: a failpoint line
 * ("HIT <name>", or "PASS <name>" when it does not wait) read from the
 * failpoint channel, or the end of the process.
 * It never blocks on one child.  The caller (the orchestrator model) reacts
 * to events by answering the failpoint, killing, pausing or resuming the
 * whole process group.
 *
 * Guarantees:
 *  1. Every process runs in its own process group; kill/pause/resume act on
 *     the group, and when the leader ends the rest of the group is killed.
 *  2. No orphans: children die with the supervising process
 *     (PR_SET_PDEATHSIG), and a watchdog process SIGKILLs every group the
 *     supervisor created when the supervising process goes away, even by
 *     SIGKILL (the watchdog sees EOF on its registration socket).
 *  3. An attempt that outlives its deadline is killed (status timed_out).
 *  4. exec failures are reported to the caller, not as a strange exit.
 *  5. A process spawned through a fork server (sv_spawn.fork_server) is
 *     our child like any other (the server clones it with CLONE_PARENT),
 *     set up the same way; servers are helpers of the supervisor, in their
 *     own process groups under the watchdog, never reported as events.
 *  6. A process spawned with a seccomp plan (inject_seccomp.h) runs under
 *     its filter; the listener is answered from the same poll loop, so no
 *     wait of the supervisor ever blocks on a route stopped at a syscall.
 *     Processes without a plan get no filter and pay nothing.
 *  7. Contained (the default): every process runs in a PID namespace of
 *     its own behind a minimal init of the harness's (common/child_setup.h),
 *     so when it ends, everything it started ends too -- setsid, double
 *     fork and daemon() included -- and its status says how many such
 *     descendants were still alive and killed then.  A paused process's
 *     namespace lives until it is resumed and ends, or is killed.  When
 *     no namespace can be made (supervisor_containment()), spawns fail
 *     unless supervisor_allow_uncontained() said otherwise.
 *  8. Its environment is built from nothing (harness/proc/child_env.h):
 *     the request's entries, the allow-list and the names passed on with
 *     supervisor_pass_env(); never the harness's own secret.
 *  9. Sandboxed (supervisor_containment() is CHILD_CONTAIN_SANDBOX and the
 *     request names what it may write): the process runs in user, PID and
 *     mount namespaces of its own (common/sandbox.h): its own /proc, a
 *     private /tmp and /dev/shm (TMPDIR=/tmp, HOME=SANDBOX_HOME), every
 *     other file read-only but req->writable (named to it in
 *     FENCECERT_WRITABLE, colon-separated), and no capability left.  A
 *     fork server is sandboxed the same way but in the host's PID
 *     namespace (its attempts are its children's children, cloned with
 *     CLONE_PARENT): its own files are those of its attempts' parent
 *     directory, and each attempt it clones narrows that to its own.
 *
 * One supervisor per process (it owns the SIGCHLD handler, which only writes
 * to a self-pipe).  supervisor_new() also makes the calling process a child
 * subreaper so orphaned grandchildren can be reaped.
 *
 * Who includes it: the run (harness/run), certify and the CLI.  It speaks
 * to routes only through processes and the protocol of common/protocol.h
 * (the failpoint channel, the fork server's wire format), never through
 * routes/ code, and takes syscall faults as a harness/inject plan.  The
 * files behind it are laid out in supervise_impl.h.
 *
 * Ownership: sv_proc objects belong to the supervisor; the caller releases
 * each with sv_proc_free() (kills it if still running) or lets
 * supervisor_free() release them all.
 */
#ifndef FENCECERT_SUPERVISE_H
#define FENCECERT_SUPERVISE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "common/child_setup.h"
#include "common/clock.h"
#include "common/error.h"
#include "harness/inject/inject_seccomp.h"
#include "common/protocol.h"

typedef struct supervisor supervisor;
typedef struct sv_proc sv_proc;

struct sv_spawn {
	char *const *argv;       /* argv[0] is searched in PATH */
	char *const *env;        /* "NAME=value" the process gets, besides
				    the allow-list (invariant 8);
				    NULL-terminated or NULL */
	const char *cwd;         /* NULL: inherit */
	const char *stdout_path; /* created or truncated; NULL: /dev/null */
	const char *stderr_path;
	bool failpoints;         /* open the channel as the child's fd 3 and set
				    FENCECERT_FAILPOINT_FD=3 */
	long long timeout_ms;    /* kill after this long; 0: no deadline */
	const struct inject_seccomp_plan *seccomp; /* syscall faults, or NULL;
				    must outlive the process (sv_proc_free) */
	inject_seccomp_hook *seccomp_hook; /* with seccomp: sees each
				    notification while the caller is held
				    (inject_seccomp_session_set_hook) */
	void *seccomp_hook_arg;
	bool fork_server;        /* start it through the program's fork server
				    (docs/fork-server.md): one server per
				    supervisor and (argv, cwd), started on
				    first use; the process is the same */
	const char *label;       /* names the process in errors (the route),
				    or NULL */
	const char *const *writable; /* an attempt: sandboxed where the
				    supervisor can (invariant 9), these
				    directories writable, the first its own
				    (a fork server of it gets that one's
				    parent); NULL-terminated.  NULL: not an
				    attempt, contained as before */
};

/* A rule of the process's seccomp plan that acted (failed a call or killed
 * the process), as recorded by the supervisor. */
struct sv_sysfault {
	int rule;                 /* index in the plan */
	enum inject_outcome outcome; /* FAILED, KILLED_BEFORE, KILLED_AFTER */
	char syscall[INJECT_SYSCALL_NAME_MAX];
	char path[256];           /* truncated */
	unsigned long occurrence; /* of (syscall, path) */
	int error;                /* FAILED: the errno answered */
	long long result;         /* KILLED_AFTER: what the performed call gave */
};

enum sv_event_kind {
	SV_EV_NONE, /* the wait's deadline passed */
	SV_EV_HIT,  /* the process reported a failpoint and waits for an answer
		       (unless `passed`: it went on without one) */
	SV_EV_EXIT, /* the process ended; see sv_proc_status() */
};

struct sv_event {
	enum sv_event_kind kind;
	sv_proc *proc;
	char failpoint[PROTO_FAILPOINT_NAME_MAX]; /* SV_EV_HIT */
	bool passed;                        /* SV_EV_HIT from "PASS <name>":
					       never answer it */
	long long at_ms;                    /* when it was seen (monotonic) */
};

enum sv_end {
	SV_RUNNING,
	SV_EXITED,   /* code is the exit status */
	SV_SIGNALED, /* signal is the terminating signal */
};

struct sv_status {
	enum sv_end end;
	int code;
	int signal;
	bool timed_out;      /* the supervisor killed it at its deadline */
	bool killed;         /* sv_proc_kill() was called */
	long long start_ms;  /* monotonic */
	long long end_ms;
	bool contained;      /* it ran in a PID namespace of its own */
	/* Processes it had started that were still alive when it ended and
	 * were killed then (its namespace's init counted them); 0: none.
	 * -1: not known -- it ran uncontained, or it was killed as a whole
	 * (a kill, a timeout, a syscall fault: everything in its namespace
	 * died with it, uncounted). */
	int descendants_killed;
};

int supervisor_new(supervisor **out, char *err, size_t errlen) FC_MUST_CHECK;

/*
 * How this process's children can be contained, found out once per
 * process and kept (a forked worker inherits the answer): a PID namespace
 * (CHILD_CONTAIN_PID, root), else a PID namespace inside a user namespace
 * of their own with the caller's ids mapped to themselves
 * (CHILD_CONTAIN_USER), else CHILD_CONTAIN_NONE with `why` saying what
 * the kernel refused (why may be NULL).
 */
enum child_contain supervisor_containment(char *why, size_t whylen);

/* The level a report names (environment.containment): "sandbox", else
 * "uid" as root (attempts under supervisor_fallback_uid(), in a PID
 * namespace where one can be made, else behind a subreaper), "reaper"
 * otherwise (a PID namespace or a subreaper contains what the route
 * starts, the file system is not sandboxed), "none" (no containment). */
const char *supervisor_containment_name(enum child_contain how);

/* The `uid` level (certify root, no sandbox): the uid and gid an
 * attempt of this process runs as, SV_FALLBACK_UID_BASE plus the low 16
 * bits of our pid -- one per worker, so attempts of two workers cannot
 * signal each other; the schedule dir is chowned to it before each
 * attempt (its `writable:` paths are not: they must be writable to it). */
#define SV_FALLBACK_UID_BASE 2000000000u
uid_t supervisor_fallback_uid(void);

/* Run processes uncontained when no namespace can be made (`certify
 * --uncontained`); without it such a spawn fails, saying why. */
void supervisor_allow_uncontained(supervisor *sv, bool allow);

/* Names every process started from now on gets from the harness's
 * environment besides the allow-list (`certify --pass-env`), each checked
 * by child_env_pass_refused() first; names (NULL-terminated, or NULL)
 * must outlive sv.  FC_USAGE, with err saying which and why, when one
 * may not be passed on: then nothing changed. */
int supervisor_pass_env(supervisor *sv, const char *const *names, char *err,
			size_t errlen) FC_MUST_CHECK;

/* Kill every process still running, stop the watchdog.  NULL is a no-op. */
void supervisor_free(supervisor *sv);

/* Start a process.  On failure nothing is left running and err says why
 * (FC_IO "cannot run 'x': ..." for exec failures). */
int supervisor_spawn(supervisor *sv, const struct sv_spawn *req,
		     sv_proc **out, char *err, size_t errlen) FC_MUST_CHECK;

/*
 * Wait for the next event until deadline_ms (monotonic, see
 * clock_mono_ms(); a negative deadline waits without bound).  Returns 0
 * with ev->kind SV_EV_NONE when the deadline passed, or when nothing could
 * ever happen (no live process).  Deadlines of processes are enforced here.
 */
int supervisor_wait(supervisor *sv, long long deadline_ms, struct sv_event *ev)
	FC_MUST_CHECK;

/*
 * Spawn, then wait until that process ends; events of other processes
 * arriving meanwhile are queued for later supervisor_wait() calls.  Used for
 * short helper commands (target observers).
 */
int supervisor_run(supervisor *sv, const struct sv_spawn *req,
		   struct sv_status *st, char *err, size_t errlen) FC_MUST_CHECK;

/* How long a fork server may take to say hello or to answer a request
 * before it is given up on (default FORKSRV_TIMEOUT_MS, 10 s). */
void supervisor_set_fork_server_timeout(supervisor *sv, long long ms);

/* Fork servers running (not counted as processes). */
size_t supervisor_fork_servers(const supervisor *sv);

/* Processes started and not yet ended. */
size_t supervisor_live(const supervisor *sv);

pid_t sv_proc_pid(const sv_proc *p);
const struct sv_status *sv_proc_status(const sv_proc *p);
bool sv_proc_ended(const sv_proc *p);
bool sv_proc_paused(const sv_proc *p);

/* Answer the pending failpoint: 'c' continue, 'f' fail the step. */
int sv_proc_answer(sv_proc *p, char answer) FC_MUST_CHECK;

/* SIGKILL / SIGSTOP / SIGCONT to the whole group.  No-ops once ended.
 * A resumed process goes on on the CPUs the caller runs on
 * (supervise_proc.c invariant 5). */
int sv_proc_kill(sv_proc *p);
int sv_proc_pause(sv_proc *p);
int sv_proc_resume(sv_proc *p);

/* Replace the deadline (monotonic ms; 0 removes it). */
void sv_proc_set_deadline(sv_proc *p, long long deadline_ms);

/* A caller's pointer carried with the process. */
void sv_proc_set_data(sv_proc *p, void *data);
void *sv_proc_data(const sv_proc *p);

/* The syscall faults that acted in p so far (at most SV_SYSFAULT_LOG kept;
 * *total counts all), its seccomp session for discovery statistics (NULL
 * without a plan), and the first error handling a notification ("" if
 * none).  Valid until sv_proc_free(). */
#define SV_SYSFAULT_LOG 64
const struct sv_sysfault *sv_proc_sysfaults(const sv_proc *p, size_t *n,
					    size_t *total);
const struct inject_seccomp_session *sv_proc_seccomp(const sv_proc *p);
const char *sv_proc_seccomp_error(const sv_proc *p);

/* Kill (if running), reap, forget.  NULL is a no-op. */
void sv_proc_free(sv_proc *p);

#endif
