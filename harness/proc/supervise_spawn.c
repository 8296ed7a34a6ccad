/*
 * supervise_spawn.c -- start one process for the supervisor (supervise.h):
 * its channels, the child (cloned here and exec'd, or cloned by a fork
 * server), and whether it got as far as running the route.
 *
 * Invariants:
 *  1. Everything that allocates happens before the clone (the environment,
 *     the compiled seccomp filter); the child only runs
 *     child_setup_exec() (common/child_setup.h), async-signal-safe, until
 *     exec.
 *  2. Every fd the parent opens is close-on-exec and numbered above
 *     PROTO_FAILPOINT_FD (child_setup_fd_high()), so the child's dup2s onto
 *     0-3 clobber nothing it needs; the child holds exactly 0-2 and its
 *     failpoint end as fd 3, as through a fork server.
 *  3. Setup and exec failures come back as the child's errno over a
 *     close-on-exec pipe: EOF on it means the route runs.
 *  4. The child shares our memory until it execs (CLONE_VM | CLONE_VFORK,
 *     as posix_spawn does; fork under the sanitizers), and our signals are
 *     blocked until it has reset their dispositions, so no handler of ours
 *     ever runs in it.
 *  5. With a seccomp plan the child is forked instead: loading the filter
 *     is its last step before exec, and until exec is confirmed the parent
 *     must run, answering notifications while it waits on the exec pipe
 *     (the child's write of its errno would itself be intercepted).  The
 *     listener comes back over a socketpair.
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
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/child_setup.h"
#include "common/fds.h"
#include "common/protocol.h"
#include "common/sanitizer.h"
#include "harness/proc/child_env.h"
#include "harness/proc/supervise_impl.h"

static int open_out(const char *path)
{
	if (!path)
		path = "/dev/null";
	return child_setup_fd_high(open(path, O_WRONLY | O_CREAT | O_TRUNC |
					O_CLOEXEC, 0644));
}

#if !FC_SANITIZED
#define CHILD_STACK_SIZE (64 * 1024)

static int child_main(void *arg)
{
	const struct child_plan *cp = arg;

	child_setup_exec(&cp->cs, cp->argv, cp->envp);
}
#endif

/*
 * Start the child.  fork() copies the page tables of the whole harness and
 * makes every page it then writes fault once; a certification starts
 * thousands of attempts, so the child borrows our memory instead until its
 * exec (invariant 4).  Sanitized builds fork.
 */
#if !FC_SANITIZED
static pid_t start_shared(const struct child_plan *cp);
#endif

static pid_t start_child(const struct child_plan *cp)
{
#if !FC_SANITIZED
	if (!cp->cs.filter)
		return start_shared(cp);
#endif
	{
		pid_t pid = fork(); /* invariant 5 */

		if (pid == 0)
			child_setup_exec(&cp->cs, cp->argv, cp->envp);
		return pid;
	}
}

#if !FC_SANITIZED
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

/* Start the child: through the launcher, or clone and exec. */
static int launch(const struct sv_launcher *via, const struct sv_spawn *req,
		  const struct child_plan *cp, pid_t *pid, char *err,
		  size_t errlen)
{
	if (via)
		return via->launch(via->ctx, req, cp, pid, err, errlen);
	*pid = start_child(cp);
	if (*pid < 0) {
		snprintf(err, errlen, "cannot start a process: %s",
			 strerror(errno));
		return FC_IO;
	}
	return 0;
}

int sv__spawn(supervisor *sv, const struct sv_spawn *req,
	      const struct sv_launcher *via, bool server, sv_proc **out,
	      char *err, size_t errlen)
{
	/* (in: sv->null_fd), out, err, fp parent, fp child, report read,
	 * report write, seccomp parent, seccomp child */
	int fds[9] = { -1, -1, -1, -1, -1, -1, -1, -1, -1 };
	char fpvar[48];
	struct child_plan cp;
	void *bpf = NULL;
	size_t bpf_len = 0;
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
		sv->null_fd = child_setup_fd_high(open("/dev/null",
						       O_RDONLY | O_CLOEXEC));
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
		fds[3] = child_setup_fd_high(sp[0]);
		fds[4] = child_setup_fd_high(sp[1]);
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
		fds[5] = child_setup_fd_high(rp[0]);
		fds[6] = child_setup_fd_high(rp[1]);
	}
	if (req->seccomp) {
		int sp[2];
		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) < 0) {
			snprintf(err, errlen, "cannot create seccomp channel: %s",
				 strerror(errno));
			goto fail;
		}
		fds[7] = child_setup_fd_high(sp[0]);
		fds[8] = child_setup_fd_high(sp[1]);
		if (fds[7] < 0 || fds[8] < 0) {
			snprintf(err, errlen, "cannot set up seccomp channel");
			goto fail;
		}
		/* compiled here, loaded by the child (invariants 1, 5) */
		attach_rc = inject_seccomp_plan_bpf(req->seccomp, &bpf,
						    &bpf_len);
		if (attach_rc) {
			snprintf(err, errlen, "cannot compile the seccomp "
				 "filter for '%s'", req->argv[0]);
			goto fail;
		}
	}
	cp = (struct child_plan){
		.cs = {
			.parent = getpid(), .in_fd = sv->null_fd,
			.out_fd = fds[1], .err_fd = fds[2], .fp_fd = fds[4],
			.report_fd = fds[6], .cwd = req->cwd,
			.filter = bpf,
			.filter_len = bpf_len / sizeof(struct sock_filter),
			.seccomp_sock = fds[8],
		},
		.argv = req->argv,
	};
	cp.envp = child_env_build(req->env, sv->pass_env,
				  req->failpoints || server ? fpvar : NULL);
	if (!cp.envp) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	rc = launch(via, req, &cp, &pid, err, errlen);
	free(cp.envp);
	free(bpf);
	bpf = NULL;
	if (rc) {
		attach_rc = rc;
		goto fail;
	}
	setpgid(pid, pid); /* also done by the child; whoever runs first wins */
	watchdog_register(&sv->wd, pid);
	p->registered = true;
	p->pid = pid;
	p->sv = sv;
	p->st.start_ms = clock_mono_ms();
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
	free(bpf);
	inject_seccomp_session_free(p->sess);
	free(p->sysfaults);
	free(p);
	return attach_rc ? attach_rc : FC_IO;
}
