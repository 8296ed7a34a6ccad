/*
 * supervise_spawn.c -- start one process for the supervisor (supervise.h):
 * clone, set the child up, exec, and learn whether exec worked.
 *
 * Invariants:
 *  1. Everything that allocates happens before fork; the child only makes
 *     async-signal-safe calls until exec.
 *  2. Every fd the parent opens is close-on-exec and numbered above
 *     PROTO_FAILPOINT_FD, so the child's dup2s onto 0-3 clobber nothing it
 *     needs;
 *     the child inherits exactly 0-2 and its failpoint end as fd 3 (it
 *     closes what our own parent left open), as through a fork server.
 *  3. The child is in its own process group, dies with its parent
 *     (PR_SET_PDEATHSIG, checked with getppid()), and starts with default
 *     signal dispositions and an empty mask.
 *  4. exec failures come back as the child's errno over a close-on-exec
 *     pipe: EOF on it means exec succeeded.
 *  5. The child shares our memory until it execs (CLONE_VM | CLONE_VFORK,
 *     as posix_spawn does; fork under the sanitizers): it writes nothing
 *     but its own stack, and our signals are blocked until it has reset
 *     their dispositions, so no handler of ours ever runs in it.
 *  6. With a seccomp plan the child is forked instead (the install
 *     allocates, and we must run to answer it), and loading the filter is
 *     its last step before exec (after the dup2s, rlimits, PDEATHSIG and
 *     chdir); the listener fd comes back over a socketpair, and until exec
 *     is confirmed the parent answers notifications while it waits on the
 *     exec pipe (the child's write of its errno would itself be
 *     intercepted).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/fds.h"
#include "common/protocol.h"
#include "harness/proc/supervise_impl.h"

extern char **environ;

/* Sanitizer runtimes reserve terabytes of shadow memory and do not expect a
 * second thread of control on a borrowed address space. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SANITIZED_BUILD 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define SANITIZED_BUILD 1
#endif
#endif

/* Move fd to a number above PROTO_FAILPOINT_FD (close-on-exec), so the dup2s
 * onto 0-3 in the child can never clobber another fd the child needs. */
static int fd_high(int fd)
{
	int nfd;

	if (fd < 0 || fd > PROTO_FAILPOINT_FD)
		return fd;
	nfd = fcntl(fd, F_DUPFD_CLOEXEC, PROTO_FAILPOINT_FD + 1);
	close(fd);
	return nfd;
}

static int open_out(const char *path)
{
	if (!path)
		path = "/dev/null";
	return fd_high(open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
}

static bool env_overridden(const char *entry, char *const *env, const char *extra)
{
	size_t len = strcspn(entry, "=");

	if (extra && strncmp(entry, extra, len) == 0 && extra[len] == '=')
		return true;
	for (size_t i = 0; env && env[i]; i++)
		if (strncmp(entry, env[i], len) == 0 && env[i][len] == '=')
			return true;
	return false;
}

/* The child's environment: ours, minus what the request sets, minus any
 * inherited failpoint or fork server fd, plus the request's entries and
 * `fpvar`. */
static char **build_env(char *const *env, const char *fpvar)
{
	size_t n = 0, extra = 0, k = 0;
	char **out;

	for (char **e = environ; e && *e; e++)
		n++;
	for (size_t i = 0; env && env[i]; i++)
		extra++;
	out = calloc(n + extra + 2, sizeof(*out));
	if (!out)
		return NULL;
	for (char **e = environ; e && *e; e++) {
		if (strncmp(*e, PROTO_ENV_FAILPOINT_FD "=",
			    sizeof(PROTO_ENV_FAILPOINT_FD)) == 0 ||
		    strncmp(*e, PROTO_ENV_FORK_SERVER_FD "=",
			    sizeof(PROTO_ENV_FORK_SERVER_FD)) == 0 ||
		    env_overridden(*e, env, NULL))
			continue;
		out[k++] = *e;
	}
	for (size_t i = 0; i < extra; i++)
		out[k++] = env[i];
	if (fpvar)
		out[k++] = (char *)fpvar;
	out[k] = NULL;
	return out;
}

static void set_limit(int res, rlim_t v)
{
	struct rlimit rl;

	if (getrlimit(res, &rl) < 0)
		return;
	if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < v)
		v = rl.rlim_max;
	rl.rlim_cur = v;
	if (rl.rlim_max == RLIM_INFINITY || rl.rlim_max > v)
		rl.rlim_max = v;
	setrlimit(res, &rl);
}

/* Runs in the child: only async-signal-safe calls until exec. */
static void child_exec(const struct child_plan *cp) __attribute__((noreturn));
static void child_exec(const struct child_plan *cp)
{
	sigset_t none;
	int e;

	setpgid(0, 0);
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0 ||
	    getppid() != cp->parent)
		_exit(127); /* the harness died before we could attach */
	for (int s = 1; s < 32; s++)
		if (s != SIGKILL && s != SIGSTOP)
			signal(s, SIG_DFL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	if (dup2(cp->in_fd, 0) < 0 || dup2(cp->out_fd, 1) < 0 ||
	    dup2(cp->err_fd, 2) < 0)
		goto fail;
	if (cp->fp_fd >= 0 && dup2(cp->fp_fd, PROTO_FAILPOINT_FD) < 0)
		goto fail;
	set_limit(RLIMIT_CORE, 0);
	set_limit(RLIMIT_NOFILE, 4096);
	set_limit(RLIMIT_CPU, 600);
	set_limit(RLIMIT_FSIZE, (rlim_t)1 << 30);
#ifndef SANITIZED_BUILD
	set_limit(RLIMIT_AS, (rlim_t)8 << 30);
#endif
	if (cp->cwd && chdir(cp->cwd) < 0)
		goto fail;
	/* fds our own parent left open without close-on-exec */
	fds_close_from_except(PROTO_FAILPOINT_FD + 1, cp->report_fd,
				    cp->seccomp ? cp->seccomp_sock : -1);
	if (cp->seccomp && inject_seccomp_child_install(cp->seccomp,
							cp->seccomp_sock) < 0) {
		if (!errno)
			errno = EPERM;
		goto fail;
	}
	execvpe(cp->argv[0], cp->argv, cp->envp);
fail:
	e = errno;
	if (write(cp->report_fd, &e, sizeof(e)) < 0) {
		/* the parent sees EOF and an exit 127 */
	}
	_exit(127);
}

#ifndef SANITIZED_BUILD
#define CHILD_STACK_SIZE (64 * 1024)

static int child_main(void *cp)
{
	child_exec(cp);
}
#endif

/*
 * Start the child.  fork() copies the page tables of the whole harness and
 * makes every page it then writes fault once; a certification starts
 * thousands of attempts, so the child borrows our memory instead until its
 * exec (invariant 5).  Sanitized builds fork.
 */
#ifndef SANITIZED_BUILD
static pid_t start_shared(const struct child_plan *cp);
#endif

static pid_t start_child(const struct child_plan *cp)
{
#ifndef SANITIZED_BUILD
	if (!cp->seccomp)
		return start_shared(cp);
#endif
	{
		pid_t pid = fork(); /* invariant 6 */

		if (pid == 0)
			child_exec(cp);
		return pid;
	}
}

#ifndef SANITIZED_BUILD
static pid_t start_shared(const struct child_plan *cp)
{
	char *stack = malloc(CHILD_STACK_SIZE);
	sigset_t all, old;
	pid_t pid;

	if (!stack)
		return -1;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pid = clone(child_main, stack + CHILD_STACK_SIZE,
		    CLONE_VM | CLONE_VFORK | SIGCHLD, (void *)cp);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	free(stack);
	return pid;
}
#endif

static void close_fds(int *fds, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (fds[i] >= 0)
			close(fds[i]);
}

/* Read the child's exec report (an errno, or EOF once exec worked).  With
 * a session, notifications are answered meanwhile (invariant 5). */
static ssize_t read_exec_report(sv_proc *p, int fd, int *child_errno)
{
	for (;;) {
		struct pollfd pf[2] = { { .fd = fd, .events = POLLIN } };
		nfds_t n = 1;
		ssize_t r;

		if (p->sess && !p->sess_hup) {
			pf[1].fd = inject_seccomp_session_fd(p->sess);
			pf[1].events = POLLIN;
			n = 2;
		}
		if (poll(pf, n, -1) < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (n == 2 && pf[1].revents && sv__handle_syscall(p) < 0)
			continue; /* recorded; the call was answered */
		if (!pf[0].revents)
			continue;
		while ((r = read(fd, child_errno, sizeof(*child_errno))) < 0 &&
		       errno == EINTR)
			;
		return r;
	}
}

/* Receive the child's listener and make the session; on failure the
 * child is left to fail (it _exits before exec). */
static int attach_seccomp(sv_proc *p, const struct sv_spawn *req, int sock,
			  char *err, size_t errlen)
{
	int nfd;

	if (fds_recv_one(sock, 10000, &nfd) < 0) {
		snprintf(err, errlen, "cannot run '%s': the seccomp filter "
			 "was not installed", req->argv[0]);
		return FC_IO;
	}
	if (inject_seccomp_session_new(req->seccomp, nfd, p->pid, &p->sess) < 0) {
		close(nfd);
		snprintf(err, errlen, "cannot run '%s': out of memory for the "
			 "seccomp session", req->argv[0]);
		return FC_NOMEM;
	}
	return 0;
}

int supervisor_spawn(supervisor *sv, const struct sv_spawn *req,
		     sv_proc **out, char *err, size_t errlen)
{
	int rc = sv__spawn(sv, req, false, out, err, errlen);

	if (rc)
		return rc;
	(*out)->next = sv->procs;
	sv->procs = *out;
	return 0;
}

/* Start the child: through its fork server, or clone and exec. */
static int launch(supervisor *sv, const struct sv_spawn *req, bool server,
		  const struct child_plan *cp, pid_t *pid, char *err,
		  size_t errlen)
{
	if (req->fork_server && !server)
		return sv__forksrv_spawn(sv, req, cp, pid, err, errlen);
	*pid = start_child(cp);
	if (*pid < 0) {
		snprintf(err, errlen, "cannot start a process: %s",
			 strerror(errno));
		return FC_IO;
	}
	return 0;
}

int sv__spawn(supervisor *sv, const struct sv_spawn *req, bool server,
	      sv_proc **out, char *err, size_t errlen)
{
	/* (in: sv->null_fd), out, err, fp parent, fp child, report read,
	 * report write, seccomp parent, seccomp child */
	int fds[9] = { -1, -1, -1, -1, -1, -1, -1, -1, -1 };
	char fpvar[48];
	struct child_plan cp;
	sv_proc *p;
	pid_t pid;
	int child_errno = 0, attach_rc = 0, rc;
	ssize_t r;

	*out = NULL;
	if (!req->argv || !req->argv[0]) {
		snprintf(err, errlen, "empty command");
		return FC_USAGE;
	}
	p = calloc(1, sizeof(*p));
	if (!p) {
		snprintf(err, errlen, "out of memory");
		return FC_NOMEM;
	}
	/* every child's stdin: one /dev/null the supervisor keeps open */
	if (sv->null_fd < 0)
		sv->null_fd = fd_high(open("/dev/null", O_RDONLY | O_CLOEXEC));
	fds[1] = open_out(req->stdout_path);
	fds[2] = open_out(req->stderr_path);
	if (sv->null_fd < 0 || fds[1] < 0 || fds[2] < 0) {
		snprintf(err, errlen, "cannot open output file '%s': %s",
			 fds[1] < 0 ? req->stdout_path : req->stderr_path,
			 strerror(errno));
		goto fail;
	}
	if (req->failpoints || server) {
		int sp[2];
		if (socketpair(AF_UNIX, (server ? SOCK_SEQPACKET : SOCK_STREAM) |
			       SOCK_CLOEXEC, 0, sp) < 0) {
			snprintf(err, errlen, "cannot create failpoint channel: %s",
				 strerror(errno));
			goto fail;
		}
		fds[3] = fd_high(sp[0]);
		fds[4] = fd_high(sp[1]);
		if (fds[3] < 0 || fds[4] < 0 ||
		    fcntl(fds[3], F_SETFL, O_NONBLOCK) < 0) {
			snprintf(err, errlen, "cannot set up failpoint channel");
			goto fail;
		}
		snprintf(fpvar, sizeof(fpvar), "%s=%d", server ?
			 PROTO_ENV_FORK_SERVER_FD : PROTO_ENV_FAILPOINT_FD,
			 PROTO_FAILPOINT_FD);
	}
	{
		int rp[2];
		if (pipe2(rp, O_CLOEXEC) < 0) {
			snprintf(err, errlen, "cannot create exec pipe: %s",
				 strerror(errno));
			goto fail;
		}
		fds[5] = fd_high(rp[0]);
		fds[6] = fd_high(rp[1]);
	}
	if (req->seccomp) {
		int sp[2];
		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) < 0) {
			snprintf(err, errlen, "cannot create seccomp channel: %s",
				 strerror(errno));
			goto fail;
		}
		fds[7] = fd_high(sp[0]);
		fds[8] = fd_high(sp[1]);
		if (fds[7] < 0 || fds[8] < 0) {
			snprintf(err, errlen, "cannot set up seccomp channel");
			goto fail;
		}
	}
	cp = (struct child_plan){
		.argv = req->argv, .cwd = req->cwd,
		.in_fd = sv->null_fd, .out_fd = fds[1], .err_fd = fds[2],
		.fp_fd = fds[4], .report_fd = fds[6], .parent = getpid(),
		.seccomp = req->seccomp, .seccomp_sock = fds[8],
	};
	cp.envp = build_env(req->env, req->failpoints || server ? fpvar : NULL);
	if (!cp.envp) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	rc = launch(sv, req, server, &cp, &pid, err, errlen);
	free(cp.envp);
	if (rc) {
		attach_rc = rc;
		goto fail;
	}
	setpgid(pid, pid); /* also done by the child; whoever runs first wins */
	watchdog_register(&sv->wd, pid);
	p->registered = true;
	p->pid = pid;
	p->sv = sv;
	p->st.start_ms = supervisor_now_ms();
	close(fds[6]);
	fds[6] = -1;
	if (req->seccomp) {
		close(fds[8]);
		fds[8] = -1;
		attach_rc = attach_seccomp(p, req, fds[7], err, errlen);
	}
	r = read_exec_report(p, fds[5], &child_errno);
	if (r > 0 || attach_rc) {
		kill(-pid, SIGKILL);
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
		watchdog_unregister(&sv->wd, pid);
		if (!attach_rc)
			snprintf(err, errlen, "cannot run '%s': %s", req->argv[0],
				 strerror(child_errno));
		goto fail;
	}
	p->fp_fd = fds[3];
	fds[3] = -1;
	if (p->fp_fd < 0)
		p->fp_eof = true;
	if (req->timeout_ms > 0)
		p->deadline_ms = p->st.start_ms + req->timeout_ms;
	close_fds(fds, 9);
	*out = p;
	return 0;
fail:
	close_fds(fds, 9);
	inject_seccomp_session_free(p->sess);
	free(p->sysfaults);
	free(p);
	return attach_rc ? attach_rc : FC_IO;
}
