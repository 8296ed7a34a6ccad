/*
 * child_setup.c -- an attempt's process sets itself up (child_setup.h).
 *
 * Each step is one static function, called in the header's order by both
 * entries; the entries differ only where an exec'd attempt and a clone of
 * a warm server must (signals, rlimits, environment, the report fd, exec).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/child_setup.h"
#include "common/fds.h"
#include "common/protocol.h"
#include "common/sanitizer.h"

extern char **environ;

/* The classic signals (the realtime ones start at their default). */
#define CLASSIC_SIGNALS 32

/* A failed step: its errno to the parent, then out. */
static void fail(int report_fd) __attribute__((noreturn));
static void fail(int report_fd)
{
	int e = errno;

	if (write(report_fd, &e, sizeof(e)) < 0) {
		/* the parent sees EOF and an exit 127 */
	}
	_exit(127);
}

/* Step 1. */
static void attach(pid_t parent)
{
	setpgid(0, 0);
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0 ||
	    getppid() != parent)
		_exit(127); /* the harness died before we could attach */
}

/* Step 2, the dispositions. */
static void reset_signals(const struct child_setup *cs)
{
	struct sigaction dfl = { .sa_handler = SIG_DFL };

	if (cs->signals) {
		for (int i = 0; i < cs->nsignals; i++)
			sigaction(cs->signals[i], &cs->actions[cs->signals[i]],
				  NULL);
		return;
	}
	for (int s = 1; s < CLASSIC_SIGNALS; s++)
		if (s != SIGKILL && s != SIGSTOP)
			sigaction(s, &dfl, NULL);
}

/* Step 3. */
static int place_fds(const struct child_setup *cs)
{
	if (dup2(cs->in_fd, 0) < 0 || dup2(cs->out_fd, 1) < 0 ||
	    dup2(cs->err_fd, 2) < 0)
		return -1;
	if (cs->fp_fd >= 0 && dup2(cs->fp_fd, PROTO_FAILPOINT_FD) < 0)
		return -1;
	return 0;
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

/* Step 4: what one attempt may use. */
static void set_limits(void)
{
	set_limit(RLIMIT_CORE, 0);
	set_limit(RLIMIT_NOFILE, 4096);
	set_limit(RLIMIT_CPU, 600);
	set_limit(RLIMIT_FSIZE, (rlim_t)1 << 30);
#if !FC_SANITIZED
	set_limit(RLIMIT_AS, (rlim_t)8 << 30);
#endif
}

/* Step 6: what our own parent left open, the fds we were handed, and
 * PROTO_FAILPOINT_FD without a channel; the report fd and the seccomp
 * socket stay for step 7. */
static void close_rest(const struct child_setup *cs)
{
	fds_close_from_except(cs->fp_fd >= 0 ? PROTO_FAILPOINT_FD + 1 :
			      PROTO_FAILPOINT_FD, cs->report_fd,
			      cs->filter ? cs->seccomp_sock : -1);
}

int child_setup_filter(const struct sock_filter *filter, size_t len, int sock)
{
	struct sock_fprog prog = { .len = (unsigned short)len,
				   .filter = (struct sock_filter *)filter };
	int lfd, rc;

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return FC_IO;
	lfd = (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
			   SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
	if (lfd < 0)
		return FC_IO;
	rc = fds_send_one(sock, lfd);
	close(lfd); /* invariant 3 */
	return rc;
}

void child_setup_exec(const struct child_setup *cs, char *const argv[],
		      char *const envp[])
{
	sigset_t none;

	attach(cs->parent);
	reset_signals(cs);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	if (place_fds(cs) < 0)
		fail(cs->report_fd);
	set_limits();
	if (cs->cwd && chdir(cs->cwd) < 0)
		fail(cs->report_fd);
	close_rest(cs);
	if (cs->filter && child_setup_filter(cs->filter, cs->filter_len,
					     cs->seccomp_sock) < 0)
		fail(cs->report_fd);
	execvpe(argv[0], argv, envp);
	fail(cs->report_fd);
}

void child_setup_clone(const struct child_setup *cs, char **envp)
{
	attach(cs->parent);
	reset_signals(cs);
	if (place_fds(cs) < 0 || (cs->cwd && chdir(cs->cwd) < 0))
		fail(cs->report_fd);
	environ = envp;
	close_rest(cs);
	close(cs->report_fd); /* EOF: set up */
	if (cs->filter) {
		if (child_setup_filter(cs->filter, cs->filter_len,
				       cs->seccomp_sock) < 0)
			_exit(127); /* the harness sees no listener */
		close(cs->seccomp_sock);
	}
}

int child_setup_fd_high(int fd)
{
	int nfd;

	if (fd < 0 || fd > PROTO_FAILPOINT_FD)
		return fd;
	nfd = fcntl(fd, F_DUPFD_CLOEXEC, PROTO_FAILPOINT_FD + 1);
	close(fd);
	return nfd;
}
