/*
 * child_setup.h -- what an attempt's process does to itself before it runs
 * the route: the one copy of those steps, for an attempt the supervisor
 * execs (harness/proc/supervise_spawn.c) and one a fork server clones
 * (routes/fork_server.c, docs/fork-server.md "Protocol").
 *
 * Containment (SPEC section 9: everything a route starts ends with its
 * attempt).  A contained attempt is cloned into a PID namespace of its own
 * (cs->contain: CHILD_CONTAIN_PID, or CHILD_CONTAIN_USER when only a new
 * user namespace lets an unprivileged harness make one).  Its first
 * process -- the supervisor's child, pid 1 inside -- is not the route but
 * a minimal init that belongs to the harness:
 *
 *   supervisor --clone(NEWPID)--> init (pid 1) --clone--> route (pid 2)
 *                                   | reaps orphans while the route runs
 *                                   | route ended: kill(-1, SIGKILL), reap
 *                                   v and count what was left
 *                         CHILD_REPORT_END {route's wait status, count}
 *                         on the report fd, then _exit(0): the kernel
 *                         has nothing left to kill in the namespace
 *
 * Where no PID namespace can be made (CHILD_CONTAIN_REAPER) the init is
 * the same program without one: a child subreaper, not pid 1, that kills
 * its children until none are left (orphans come to it) instead of
 * kill(-1), and reports the same records.
 *
 * The route is in the init's process group, so the supervisor's SIGKILL,
 * SIGSTOP and SIGCONT to the group reach both; from inside, the route can
 * neither signal the init (the kernel ignores it for a namespace's init)
 * nor reach the report fd (closed before the route runs), so the status and
 * count the supervisor gets are the init's own observation.  Whatever
 * ends the init (a kill of the group, the harness dying) ends every
 * process of the namespace: setsid, double fork and daemon() included.
 *
 * The steps, in this order:
 *
 *   1. its own process group; PR_SET_PDEATHSIG(SIGKILL), then exit 127
 *      unless the harness is still alive: getppid() is still `parent`
 *      (uncontained), or `parent_pidfd` is not readable yet (contained:
 *      getppid() is 0 in a new namespace); contained with a user
 *      namespace, the caller's uid and gid mapped to themselves.
 *      Contained, the init then starts the route process, which takes the
 *      steps below (the init takes none of them);
 *   1a. sandboxed (cs->sandbox): the mounts of common/sandbox.h, in the
 *      new mount namespace, before anything else;
 *   2. signal dispositions back to what a program starts with: every one
 *      default (exec'd), or `signals` back to `actions` (cloned: only what
 *      the server's warm-up changed); the mask empty (exec'd; a clone's
 *      setcontext() empties it);
 *   3. in, out and err onto 0-2, the failpoint end onto PROTO_FAILPOINT_FD;
 *   4. exec'd only: the attempt's rlimits (a fork server was exec'd with
 *      them, and its clones inherit them);
 *   5. chdir(cwd);
 *   6. every other fd closed, PROTO_FAILPOINT_FD too when there is no
 *      failpoint end: the attempt holds exactly 0-2 and its channel;
 *   6a. sandboxed, or switch_ids: every capability given up
 *      (sandbox_drop_caps(), which switches the ids first), so
 *      the route cannot undo its mounts nor act on anything outside its
 *      user namespace, even where the harness runs as root;
 *   7. last, the seccomp filter: PR_SET_NO_NEW_PRIVS, the program loaded
 *      with a new listener, the listener sent over `seccomp_sock` and
 *      closed; then exec (exec'd) or return (cloned).
 *
 * The report fd tells the parent how it went, in struct child_report
 * records (each one write(), atomic on a pipe):
 *   - a step that fails writes CHILD_REPORT_ERRNO and _exits 127;
 *   - set up: uncontained, EOF (exec'd: the fd is close-on-exec; cloned:
 *     closed before step 7); contained, CHILD_REPORT_RUNNING (the init
 *     holds the fd, so there is no EOF until it ends);
 *   - contained, when the route has ended: CHILD_REPORT_END.
 * A filter that cannot be loaded in a clone is an _exit(127) with no
 * listener sent.
 *
 * Who includes it: anything that starts an attempt (common/).
 *
 * Invariants:
 *  1. Async-signal-safe and allocation-free, and no global is written
 *     (errno aside, as in posix_spawn; a clone sets environ): the exec'd
 *     child shares the supervisor's memory until it execs (CLONE_VM |
 *     CLONE_VFORK), and every page a fork server's clone writes is a
 *     copy-on-write fault (docs/fork-server.md, "What a fork costs").
 *  2. Every fd in struct child_setup is above PROTO_FAILPOINT_FD
 *     (child_setup_fd_high()), so the dup2s of step 3 clobber none of them.
 *  3. After the filter is loaded the child makes only sendmsg and close
 *     before it execs or returns: none is a call a plan intercepts
 *     (harness/inject), so it never waits on a notification nobody listens
 *     to yet, and its copy of the listener is closed (the route cannot
 *     answer its own calls, and once the supervisor closes its copy the
 *     filtered calls fail with ENOSYS instead of hanging).
 *  4. The init of an exec'd attempt may share the supervisor's memory for
 *     the attempt's whole life (child_setup_init_shared()): it makes only
 *     raw system calls, which write no errno, keeps every signal blocked,
 *     and touches nothing but its own stack; the route process it starts
 *     runs (until exec) only while the supervisor waits for its report
 *     with its signals blocked.
 */
#ifndef FENCECERT_CHILD_SETUP_H
#define FENCECERT_CHILD_SETUP_H

#include <linux/filter.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/error.h"
#include "common/sandbox.h"

/* How an attempt is contained (struct child_setup.contain). */
enum child_contain {
	CHILD_CONTAIN_NONE = 0, /* no namespace: the route is the child */
	CHILD_CONTAIN_PID = 1,  /* CLONE_NEWPID */
	CHILD_CONTAIN_USER = 2, /* CLONE_NEWUSER | CLONE_NEWPID, ids mapped
				   to themselves */
	CHILD_CONTAIN_SANDBOX = 3, /* CLONE_NEWUSER | CLONE_NEWPID |
				   CLONE_NEWNS, ids mapped to themselves,
				   the route process enters cs->sandbox */
	CHILD_CONTAIN_FS = 4,   /* CLONE_NEWUSER | CLONE_NEWNS, no init: a
				   fork server, whose own clones are
				   sandboxed (cs->sandbox without a /proc
				   of its own) */
	CHILD_CONTAIN_REAPER = 5, /* no namespace (none can be made): the
				   init is a child subreaper, not pid 1, and
				   kills its descendants by walking its
				   children (every orphan comes to it) */
};

/* Whether a containment starts an init (the namespace's pid 1). */
bool child_contain_has_init(enum child_contain how);

/* The clone flags of a containment. */
int child_contain_flags(enum child_contain how);

/* Whether this process can start a child contained so: a child is cloned
 * into the namespaces (and maps its ids) and exits.  0, or a negative
 * errno saying what the kernel refused. */
int child_contain_probe(enum child_contain how) FC_MUST_CHECK;

/* One record on the report fd. */
enum { CHILD_REPORT_ERRNO = 1, CHILD_REPORT_RUNNING = 2, CHILD_REPORT_END = 3 };
struct child_report {
	int32_t what;   /* CHILD_REPORT_* */
	int32_t value;  /* ERRNO: the errno; END: the route's wait status */
	int32_t killed; /* END: processes of the namespace still alive when
			   the route ended, killed by the init */
};

struct child_setup {
	pid_t parent;              /* uncontained: getppid() must say so */
	int parent_pidfd;          /* contained: a pidfd of the harness,
				      readable once it ended; -1: unchecked */
	enum child_contain contain;
	/* CHILD_CONTAIN_SANDBOX and _FS: the mounts the route process makes
	 * before step 2, and every capability it gives up before step 7
	 * (common/sandbox.h) */
	const struct sandbox *sandbox;
	/* the route process switches to run_uid/run_gid (groups dropped)
	 * and gives up every capability before step 7: the `uid` level,
	 * certify root and no sandbox (docs/security.md) */
	bool switch_ids;
	uid_t run_uid;
	gid_t run_gid;
	/* CHILD_CONTAIN_USER, _SANDBOX, _FS: "ID ID 1\n" for
	 * /proc/self/{uid,gid}_map */
	char uid_map[32], gid_map[32];
	int in_fd, out_fd, err_fd; /* become 0, 1, 2 */
	int fp_fd;                 /* becomes PROTO_FAILPOINT_FD; -1: none */
	int report_fd;             /* struct child_report records go there */
	const char *cwd;           /* NULL: inherit */
	/* step 2 for a clone: signals[0..nsignals) back to actions[signal];
	 * NULL: every signal to its default */
	const int *signals;
	int nsignals;
	const struct sigaction *actions;
	/* step 7: a classic BPF program of filter_len instructions, loaded
	 * with SECCOMP_FILTER_FLAG_NEW_LISTENER; NULL: no filter */
	const struct sock_filter *filter;
	size_t filter_len;
	int seccomp_sock;          /* the listener is sent there */
};

/* The ids of the calling process as a user namespace maps them to
 * themselves: fills cs->uid_map and cs->gid_map. */
void child_setup_id_maps(struct child_setup *cs);

/* Uncontained: steps 1-7 in a child the supervisor started, then
 * execvpe(argv[0], argv, envp).  Never returns: the exec, or the errno to
 * report_fd and _exit(127). */
void child_setup_exec(const struct child_setup *cs, char *const argv[],
		      char *const envp[]) __attribute__((noreturn));

/* Contained and exec'd: the init (pid 1 of the new namespace).  Step 1,
 * then the route process on route_stack (its top; CLONE_VM | CLONE_VFORK)
 * takes steps 2-7 and execs; once it has (or failed), the init reports
 * CHILD_REPORT_RUNNING and serves as init until the route ends.  Never
 * returns.
 * _shared: the init shares the supervisor's memory (invariant 4), it was
 * cloned with CLONE_VM; the caller keeps every signal blocked until the
 * report says RUNNING or ERRNO, and keeps the stacks until the init is
 * reaped.  _private: the init has memory of its own (cloned without
 * CLONE_VM). */
void child_setup_init_shared(const struct child_setup *cs, char *const argv[],
			     char *const envp[], char *route_stack)
	__attribute__((noreturn));
void child_setup_init_private(const struct child_setup *cs, char *const argv[],
			      char *const envp[], char *route_stack)
	__attribute__((noreturn));

/* Uncontained: steps 1-7 in a fork server's clone (rlimits inherited,
 * the mask left to the caller), with environ set to envp; returns once
 * the child is set up, _exits 127 when a step fails.  Contained: steps
 * 2-7 in the route process of a fork server's attempt, which its init
 * started (child_setup_init_clone()). */
void child_setup_clone(const struct child_setup *cs, char **envp);

/*
 * Contained, in a fork server's clone, the namespace's init: step 1, then
 * the route process, which runs route_fn(arg) (it calls
 * child_setup_clone() and carries on into the program): cloned onto
 * route_stack (the top of a stack in its own memory, a copy of the
 * server's), or with route_stack NULL forked (_Fork(): route_fn runs on
 * a copy of ours).  Then *started (unless NULL) becomes
 * CHILD_INIT_STARTED (on route_stack, the kernel writes the route's pid
 * there first, in the clone itself), and it serves as init until the
 * route ends.  Never
 * returns.  An init that shares the server's memory (cloned with
 * CLONE_VM) makes raw system calls only once *started is set: the server
 * waits for it (child_setup_wait_started()) before it goes on, so the
 * route process copies an unchanged request.
 */
enum { CHILD_INIT_FREE = 0, CHILD_INIT_STARTING = 1, CHILD_INIT_STARTED = 2 };
void child_setup_init_clone(const struct child_setup *cs,
			    int (*route_fn)(void *), char *route_stack,
			    void *arg, int *started) __attribute__((noreturn));

/* In the server: wait while *word is CHILD_INIT_STARTING (the init it
 * cloned with CLONE_VM has not started its route process yet; its exit
 * clears the word too, with CLONE_CHILD_CLEARTID).  Looks again every
 * millisecond: a word the kernel changed wakes nobody.  No errno
 * written. */
void child_setup_wait_started(int *word);

/* Step 7 alone: load filter[0..len) (instructions) with a new listener,
 * send the listener over sock (fds_send_one()) and close it.  0, or FC_IO
 * (errno says why; once the filter is loaded, nobody listens: the caller
 * must _exit).  For tests that start a child under a plan by hand. */
int child_setup_filter(const struct sock_filter *filter, size_t len,
		       int sock) FC_MUST_CHECK;

/* fd itself when it is above PROTO_FAILPOINT_FD (or negative), else a
 * close-on-exec duplicate above it, with fd closed (invariant 2).  -1
 * (errno) when it cannot be moved; fd is closed then too. */
int child_setup_fd_high(int fd);

/* true where child_setup_init_shared() can run (it needs raw system calls
 * for this architecture). */
bool child_setup_can_share(void);

#endif
