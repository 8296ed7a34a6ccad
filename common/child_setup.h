/*
 * child_setup.h -- what an attempt's process does to itself before it runs
 * the route: the one copy of those steps, for an attempt the supervisor
 * execs (harness/proc/supervise_spawn.c) and one a fork server clones
 * (routes/fork_server.c, docs/fork-server.md "Protocol").
 *
 * The steps, in this order:
 *
 *   1. its own process group; PR_SET_PDEATHSIG(SIGKILL), then exit 127
 *      unless getppid() is still `parent` (the harness may have died
 *      first);
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
 *   7. last, the seccomp filter: PR_SET_NO_NEW_PRIVS, the program loaded
 *      with a new listener, the listener sent over `seccomp_sock` and
 *      closed; then exec (exec'd) or return (cloned).
 *
 * The report fd tells the parent how it went: a step that fails writes its
 * errno (an int) there and _exits 127.  Exec'd, the fd is close-on-exec,
 * so EOF means the exec worked; cloned, it is closed before step 7 (EOF:
 * set up), and a filter that cannot be loaded is an _exit(127) with no
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
 */
#ifndef FENCECERT_CHILD_SETUP_H
#define FENCECERT_CHILD_SETUP_H

#include <linux/filter.h>
#include <signal.h>
#include <stddef.h>
#include <sys/types.h>

#include "common/error.h"

struct child_setup {
	pid_t parent;              /* the harness: getppid() must say so */
	int in_fd, out_fd, err_fd; /* become 0, 1, 2 */
	int fp_fd;                 /* becomes PROTO_FAILPOINT_FD; -1: none */
	int report_fd;             /* the errno of a failed step goes there */
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

/* Steps 1-7 in a child the supervisor started, then execvpe(argv[0], argv,
 * envp).  Never returns: the exec, or the errno to report_fd and
 * _exit(127). */
void child_setup_exec(const struct child_setup *cs, char *const argv[],
		      char *const envp[]) __attribute__((noreturn));

/* Steps 1-7 in a fork server's clone (rlimits inherited, the mask left to
 * the caller), with environ set to envp; returns once the child is set up,
 * _exits 127 when a step fails. */
void child_setup_clone(const struct child_setup *cs, char **envp);

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

#endif
