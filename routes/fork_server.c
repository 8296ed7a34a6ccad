/*
 * fork_server.c -- serve spawn requests of the harness (fork_server.h,
 * docs/fork-server.md).
 *
 * Invariants:
 *  1. The server is single-threaded and allocates nothing the child needs
 *     after the clone: a request is parsed completely before the clone, so
 *     the child only makes system calls and returns into main.
 *  2. The child is cloned with CLONE_PARENT: it is the harness's child, so
 *     the harness reaps it, gets its SIGCHLD and may setpgid() it like any
 *     child it spawned itself.  The child checks getppid() against the
 *     harness after arming PR_SET_PDEATHSIG (the harness may die first).
 *  3. The child ends its setup holding exactly fds 0-2 and the failpoint end
 *     as fd 3, like an exec'd attempt: everything else the server had open
 *     (its socket, the received fds) is closed.
 *  4. The seccomp filter is loaded last, after the report fd was closed:
 *     the child then only sends the listener and closes two fds, calls no
 *     filter intercepts (invariant 1 of inject_seccomp_child.c).
 *  5. A malformed request is answered "error EPROTO" and its fds closed;
 *     the server goes on serving.  EOF on the socket ends the server.
 *  6. Sanitized builds clone the same way: the server has one thread, so
 *     no sanitizer lock can be held across the clone (what their fork
 *     interceptors protect against), and the child keeps the runtime's
 *     signal handlers and exit-time leak check.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../harness/inject_seccomp.h"
#include "../harness/watchdog.h"
#include "fork_server.h"

extern char **environ;

/* The child's end of the failpoint channel, as in the exec path. */
#define CHILD_FP_FD 3

static pid_t server_pid; /* in a child: the server that cloned it */
/* The dispositions the program started with (default, as the harness
 * execs it; a sanitizer runtime's own handlers in sanitized builds): what
 * an exec'd attempt would start main() with. */
static struct sigaction initial_actions[32];
/* in a child: its argv, for as long as it lives (volatile: kept, so leak
 * checkers see it referenced) */
static char **volatile child_argv;

pid_t fork_server_pid(void)
{
	return server_pid;
}

struct request {
	int argc;
	char **argv;           /* point into the message buffer */
	char **env;
	const char *cwd;       /* NULL: inherit */
	bool fp;
	struct sock_filter *bpf;
	size_t bpf_len;        /* instructions */
	int fds[FORK_SERVER_FDS_MAX];
	int nfds;
};

static void request_release(struct request *rq)
{
	for (int i = 0; i < rq->nfds; i++)
		close(rq->fds[i]);
	free(rq->argv);
	free(rq->env);
	free(rq->bpf);
	memset(rq, 0, sizeof(*rq));
}

/* The next NUL-terminated field at *pos, or NULL past the end. */
static char *field(char **pos, char *end)
{
	char *s = *pos, *nul;

	if (s >= end || !(nul = memchr(s, '\0', (size_t)(end - s))))
		return NULL;
	*pos = nul + 1;
	return s;
}

static bool count_field(char **pos, char *end, long max, long *out)
{
	char *s = field(pos, end), *e;

	if (!s || !*s)
		return false;
	errno = 0;
	*out = strtol(s, &e, 10);
	return !errno && !*e && *out >= 0 && *out <= max;
}

static char **str_list(char **pos, char *end, long n)
{
	char **v = calloc((size_t)n + 1, sizeof(*v));

	for (long i = 0; v && i < n; i++) {
		if (!(v[i] = field(pos, end))) {
			free(v);
			return NULL;
		}
	}
	return v;
}

/* Parse msg[0..len) into rq (fds already in rq); false if malformed. */
static bool request_parse(char *msg, size_t len, struct request *rq)
{
	char *pos = msg, *end = msg + len, *tag, *cwd;
	long argc, envc, fp, bpf;

	tag = field(&pos, end);
	if (!tag || strcmp(tag, "spawn") != 0 ||
	    !count_field(&pos, end, 4096, &argc) || argc < 1 ||
	    !count_field(&pos, end, 65536, &envc) ||
	    !(cwd = field(&pos, end)) || !count_field(&pos, end, 1, &fp) ||
	    !count_field(&pos, end, FORK_SERVER_MSG_MAX, &bpf) ||
	    bpf % (long)sizeof(struct sock_filter))
		return false;
	rq->argc = (int)argc;
	rq->cwd = *cwd ? cwd : NULL;
	rq->fp = fp;
	if (!(rq->argv = str_list(&pos, end, argc)) ||
	    !(rq->env = str_list(&pos, end, envc)) ||
	    end - pos != bpf || rq->nfds != 4 + (int)fp + (bpf > 0))
		return false;
	rq->bpf_len = (size_t)bpf / sizeof(struct sock_filter);
	if (bpf) {
		rq->bpf = malloc((size_t)bpf); /* aligned for the kernel */
		if (!rq->bpf)
			return false;
		memcpy(rq->bpf, pos, (size_t)bpf);
	}
	return true;
}

/* Receive one request; 0 on EOF, -1 on a socket error, 1 with rq filled
 * (rq->argv NULL when it was malformed). */
static int request_recv(int sock, char *msg, struct request *rq)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * FORK_SERVER_FDS_MAX)];
		struct cmsghdr align;
	} ctl;
	struct iovec iov = { .iov_base = msg, .iov_len = FORK_SERVER_MSG_MAX };
	struct msghdr mh = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = ctl.buf, .msg_controllen = sizeof(ctl.buf),
	};
	ssize_t n;

	memset(rq, 0, sizeof(*rq));
	do
		n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n <= 0)
		return n == 0 ? 0 : -1;
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm;
	     cm = CMSG_NXTHDR(&mh, cm)) {
		size_t k;

		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		k = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < k; i++) {
			int fd;

			memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
			if (rq->nfds < FORK_SERVER_FDS_MAX)
				rq->fds[rq->nfds++] = fd;
			else
				close(fd);
		}
	}
	if ((mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) ||
	    !request_parse(msg, (size_t)n, rq)) {
		free(rq->argv);
		rq->argv = NULL;
	}
	return 1;
}

static void reply(int sock, const char *fmt, long v)
{
	char buf[64];
	int n = snprintf(buf, sizeof(buf), fmt, v);

	if (send(sock, buf, (size_t)n, MSG_NOSIGNAL) != n) {
		/* the harness is gone: the next recvmsg sees EOF */
	}
}

static int load_filter(const struct request *rq, int sock)
{
	struct sock_fprog prog = { .len = (unsigned short)rq->bpf_len,
				   .filter = rq->bpf };
	int lfd, rc;

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return -1;
	lfd = (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
			   SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
	if (lfd < 0)
		return -1;
	rc = inject_seccomp_send_fd(sock, lfd);
	close(lfd);
	return rc;
}

/* The child's side of one request (the steps of child_exec() in
 * harness/supervise_spawn.c); _exits 127 when a step fails. */
static void child_setup(const struct request *rq, pid_t harness)
{
	int in = rq->fds[0], out = rq->fds[1], err = rq->fds[2];
	int report = rq->fds[3], fp = rq->fp ? rq->fds[4] : -1;
	int secsock = rq->bpf ? rq->fds[4 + rq->fp] : -1;
	sigset_t none;
	int e;

	setpgid(0, 0);
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0 ||
	    getppid() != harness)
		_exit(127);
	for (int s = 1; s < 32; s++)
		if (s != SIGKILL && s != SIGSTOP)
			sigaction(s, &initial_actions[s], NULL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	if (dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0)
		goto fail;
	if (fp >= 0 && dup2(fp, CHILD_FP_FD) < 0)
		goto fail;
	if (fp < 0)
		close(CHILD_FP_FD);
	if (rq->cwd && chdir(rq->cwd) < 0)
		goto fail;
	environ = rq->env;
	watchdog__close_from_except(CHILD_FP_FD + 1, report, secsock);
	close(report);
	if (secsock >= 0) {
		if (load_filter(rq, secsock) < 0)
			_exit(127); /* the harness sees no listener */
		close(secsock);
	}
	return;
fail:
	e = errno;
	if (write(report, &e, sizeof(e)) < 0) {
		/* the harness sees EOF and an exit 127 */
	}
	_exit(127);
}

/* Sanitizer runtimes check for leaks in their exit handlers. */
#if defined(__SANITIZE_ADDRESS__)
#define SANITIZED_BUILD 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SANITIZED_BUILD 1
#endif
#endif

/*
 * A child ends by flushing stdio and _exit(): the handlers registered
 * before it was cloned (library destructors run by _dl_fini) were the
 * server's, and undoing the server's initialisation in every attempt is
 * pure cost.  Handlers the attempt registers itself still run (first).
 */
#ifndef SANITIZED_BUILD
static void child_exit(int status, void *arg)
{
	(void)arg;
	fflush(NULL);
	_exit(status);
}
#endif

/* The request's fds must not sit on 0-3, where the child dup2s. */
static bool fds_high(struct request *rq)
{
	for (int i = 0; i < rq->nfds; i++) {
		if (rq->fds[i] > CHILD_FP_FD)
			continue;
		int nfd = fcntl(rq->fds[i], F_DUPFD_CLOEXEC, CHILD_FP_FD + 1);
		if (nfd < 0)
			return false;
		close(rq->fds[i]);
		rq->fds[i] = nfd;
	}
	return true;
}

int fork_server_serve(int *argc, char ***argv, void (*warm_up)(void))
{
	static char msg[FORK_SERVER_MSG_MAX];
	const char *v = getenv(FORK_SERVER_ENV);
	pid_t harness = getppid(), self = getpid();
	char *end;
	long fdl;
	int sock;

	if (!v || !*v)
		return 0;
	errno = 0;
	fdl = strtol(v, &end, 10);
	if (errno || *end || fdl < 0 || fdl > 65535 ||
	    fcntl((int)fdl, F_GETFD) < 0) {
		fprintf(stderr, "fencecert: USAGE: %s='%s' is not an open "
			"descriptor\n", FORK_SERVER_ENV, v);
		exit(64);
	}
	sock = (int)fdl;
	for (int s = 1; s < 32; s++)
		sigaction(s, NULL, &initial_actions[s]);
	fcntl(sock, F_SETFD, FD_CLOEXEC);
	if (warm_up)
		warm_up();
	fflush(NULL);
	if (send(sock, FORK_SERVER_HELLO, strlen(FORK_SERVER_HELLO),
		 MSG_NOSIGNAL) < 0)
		exit(1);
	for (;;) {
		struct request rq;
		int r = request_recv(sock, msg, &rq);
		pid_t pid;

		if (r <= 0)
			exit(r == 0 ? 0 : 1);
		if (!rq.argv || !fds_high(&rq)) {
			reply(sock, "error %ld", EPROTO);
			request_release(&rq);
			continue;
		}
		/* fork(), but the child's parent is the harness (invariant 2) */
		pid = (pid_t)syscall(SYS_clone, CLONE_PARENT | SIGCHLD, NULL,
				     NULL, NULL, NULL);
		if (pid == 0) {
			child_setup(&rq, harness);
			free(rq.bpf); /* loaded; argv and env stay */
#ifndef SANITIZED_BUILD
			on_exit(child_exit, NULL);
#endif
			server_pid = self;
			child_argv = rq.argv;
			*argc = rq.argc;
			*argv = child_argv;
			return 0;
		}
		if (pid < 0)
			reply(sock, "error %ld", errno);
		else
			reply(sock, "pid %ld", pid);
		request_release(&rq);
	}
}
