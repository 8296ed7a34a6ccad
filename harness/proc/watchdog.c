/*
 * watchdog.c -- kill the supervisor's process groups when it dies
 * (watchdog.h).
 *
 * Invariants:
 *  1. The watchdog holds only its end of the socket: every other fd is
 *     closed after fork, so EOF means exactly "the supervising process is
 *     gone" (its end is close-on-exec, so routes never hold it past exec).
 *  2. It signals only groups it was told about and not yet told are empty;
 *     a pgid is not reused while any member of the group lives.
 *  3. It runs in its own process group and ignores terminal signals: a ^C
 *     or a group kill aimed at the harness reaches it only as that EOF.
 */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/fds.h"
#include "harness/proc/watchdog.h"

struct wd_msg {
	int32_t op; /* '+' register, '-' unregister */
	int32_t pgid;
};

static int read_full(int fd, void *buf, size_t len)
{
	size_t got = 0;

	while (got < len) {
		ssize_t r = read(fd, (char *)buf + got, len - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		got += (size_t)r;
	}
	return 0;
}

/*
 * The watchdog outlives nothing: it runs until the supervising process's
 * end of the socket closes (exit, crash or SIGKILL), then SIGKILLs every
 * group still registered.  It sits in its own process group and ignores
 * terminal signals so a ^C or a group kill of the harness reaches it only
 * as that EOF.
 */
static void watchdog_main(int fd) __attribute__((noreturn));
static void watchdog_main(int fd)
{
	pid_t *groups = NULL;
	size_t n = 0, cap = 0;
	struct wd_msg m;

	setpgid(0, 0);
	signal(SIGINT, SIG_IGN);
	signal(SIGTERM, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	signal(SIGQUIT, SIG_IGN);
	signal(SIGPIPE, SIG_IGN);
	signal(SIGTSTP, SIG_IGN);
	signal(SIGCHLD, SIG_DFL);
	if (fd != 3) {
		dup2(fd, 3);
		fd = 3;
	}
	fds_close_from(4);
	prctl(PR_SET_NAME, "fencecert-wdog", 0, 0, 0);

	while (read_full(fd, &m, sizeof(m)) == 0) {
		if (m.op == '+') {
			if (n == cap) {
				size_t nc = cap ? cap * 2 : 64;
				pid_t *ng = realloc(groups, nc * sizeof(*ng));
				if (!ng) {
					/* cannot track more: fail safe */
					kill(-(pid_t)m.pgid, SIGKILL);
					continue;
				}
				groups = ng;
				cap = nc;
			}
			groups[n++] = (pid_t)m.pgid;
		} else if (m.op == '-') {
			for (size_t i = 0; i < n; i++) {
				if (groups[i] == (pid_t)m.pgid) {
					groups[i] = groups[--n];
					break;
				}
			}
		}
	}
	for (size_t i = 0; i < n; i++)
		kill(-groups[i], SIGKILL);
	_exit(0);
}

int watchdog_start(struct watchdog *w, char *err, size_t errlen)
{
	int sp[2];
	pid_t pid;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) < 0) {
		snprintf(err, errlen, "cannot create watchdog socket: %s",
			 strerror(errno));
		return FC_IO;
	}
	pid = fork();
	if (pid < 0) {
		snprintf(err, errlen, "cannot start watchdog: %s",
			 strerror(errno));
		close(sp[0]);
		close(sp[1]);
		return FC_IO;
	}
	if (pid == 0) {
		close(sp[0]);
		watchdog_main(sp[1]);
	}
	close(sp[1]);
	w->fd = sp[0];
	w->pid = pid;
	return 0;
}

static void tell(struct watchdog *w, int op, pid_t pgid)
{
	struct wd_msg m = { .op = op, .pgid = (int32_t)pgid };

	if (w->fd < 0)
		return;
	/* 8 bytes on a stream socket: one send, never split in practice */
	if (send(w->fd, &m, sizeof(m), MSG_NOSIGNAL) != (ssize_t)sizeof(m)) {
		/* watchdog gone: children still have PDEATHSIG */
	}
}

void watchdog_register(struct watchdog *w, pid_t pgid)
{
	tell(w, '+', pgid);
}

void watchdog_unregister(struct watchdog *w, pid_t pgid)
{
	tell(w, '-', pgid);
}

void watchdog_stop(struct watchdog *w)
{
	if (w->fd < 0)
		return;
	close(w->fd);
	w->fd = -1;
	while (waitpid(w->pid, NULL, 0) < 0 && errno == EINTR)
		;
}
