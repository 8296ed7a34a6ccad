/*
 * inject_seccomp_script.c -- the scripted child route and the supervisor
 * loop used by test_inject_seccomp.c; see inject_seccomp_script.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/child_setup.h"
#include "common/fds.h"
#include "tests/inject_seccomp_script.h"

/* --- the child: a file-operation script -------------------------------- */

static int progress_fd = -1;
static struct { char name[64]; int fd; } files[8];

static int file_fd(const char *name)
{
	size_t i;

	for (i = 0; i < 8 && files[i].name[0]; i++)
		if (strcmp(files[i].name, name) == 0)
			return files[i].fd;
	if (i == 8)
		_exit(90);
	snprintf(files[i].name, sizeof(files[i].name), "%s", name);
	files[i].fd = open(name, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	if (files[i].fd < 0)
		_exit(91);
	return files[i].fd;
}

static void note(const char *fmt, ...)
{
	char line[64];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (write(progress_fd, line, (size_t)n) != n)
		_exit(92);
}

/* Split "a:b:rest" in place: up to max fields, the last takes the rest. */
static int fields(char *op, char **f, int max)
{
	int n = 0;

	f[n++] = op;
	while (n < max && (op = strchr(op, ':'))) {
		*op++ = '\0';
		f[n++] = op;
	}
	return n;
}

static void on_usr1(int sig)
{
	(void)sig;
}

/* A directory fd of the script's dir NAME, for the *at calls. */
static int dir_fd(const char *name)
{
	int fd = open(name, O_PATH | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0)
		_exit(95);
	return fd;
}

/* Build the two-element iovec of "A:B" fields. */
static struct iovec *two(char *x, char *y)
{
	static struct iovec v[2];

	v[0] = (struct iovec){ x, strlen(x) };
	v[1] = (struct iovec){ y, strlen(y) };
	return v;
}

/*
 * The ops named after their system call, each made with syscall(2) so the
 * call is exactly that one whatever libc's wrappers use.  A number field
 * is decimal (a mode: octal).  DIR is a directory of the temp dir opened
 * as the dirfd of an *at call.
 */
static long run_named(char **f, int n)
{
#define NEED(k) do { if (n != (k)) return -2; } while (0)
	if (strcmp(f[0], "writev") == 0) {          /* writev:NAME:A:B */
		NEED(4);
		return syscall(SYS_writev, file_fd(f[1]), two(f[2], f[3]), 2);
	}
	if (strcmp(f[0], "pwritev") == 0) {         /* pwritev:NAME:OFF:A:B */
		NEED(5);
		return syscall(SYS_pwritev, file_fd(f[1]), two(f[3], f[4]), 2,
			       atol(f[2]), 0);
	}
	if (strcmp(f[0], "pwritev2") == 0) {        /* pwritev2:NAME:OFF:A:B */
		NEED(5);
		return syscall(SYS_pwritev2, file_fd(f[1]), two(f[3], f[4]), 2,
			       atol(f[2]), 0, 0);
	}
	if (strcmp(f[0], "pwritev2a") == 0) {       /* ... with RWF_APPEND */
		NEED(5);
		return syscall(SYS_pwritev2, file_fd(f[1]), two(f[3], f[4]), 2,
			       atol(f[2]), 0, RWF_APPEND);
	}
	if (strcmp(f[0], "ftruncate") == 0) {       /* ftruncate:NAME:LEN */
		NEED(3);
		return syscall(SYS_ftruncate, file_fd(f[1]), atol(f[2]));
	}
	if (strcmp(f[0], "fallocate") == 0) {       /* fallocate:NAME:OFF:LEN */
		NEED(4);
		return syscall(SYS_fallocate, file_fd(f[1]), 0, atol(f[2]),
			       atol(f[3]));
	}
	if (strcmp(f[0], "truncate") == 0) {        /* truncate:NAME:LEN */
		NEED(3);
		return syscall(SYS_truncate, f[1], atol(f[2]));
	}
	if (strcmp(f[0], "unlink") == 0) {          /* unlink:NAME */
		NEED(2);
		return syscall(SYS_unlink, f[1]);
	}
	if (strcmp(f[0], "unlinkat") == 0) {        /* unlinkat:DIR:NAME */
		NEED(3);
		return syscall(SYS_unlinkat, dir_fd(f[1]), f[2], 0);
	}
	if (strcmp(f[0], "rmdir") == 0) {           /* rmdir:NAME */
		NEED(2);
		return syscall(SYS_rmdir, f[1]);
	}
	if (strcmp(f[0], "mkdir") == 0) {           /* mkdir:NAME:MODE */
		NEED(3);
		return syscall(SYS_mkdir, f[1], strtol(f[2], NULL, 8));
	}
	if (strcmp(f[0], "mkdirat") == 0) {         /* mkdirat:DIR:NAME:MODE */
		NEED(4);
		return syscall(SYS_mkdirat, dir_fd(f[1]), f[2],
			       strtol(f[3], NULL, 8));
	}
	if (strcmp(f[0], "symlink") == 0) {         /* symlink:TARGET:LINK */
		NEED(3);
		return syscall(SYS_symlink, f[1], f[2]);
	}
	if (strcmp(f[0], "symlinkat") == 0) {       /* symlinkat:TARGET:DIR:LINK */
		NEED(4);
		return syscall(SYS_symlinkat, f[1], dir_fd(f[2]), f[3]);
	}
	if (strcmp(f[0], "renameat") == 0) {        /* renameat:DIR:OLD:NEW */
		NEED(4);
		return syscall(SYS_renameat, dir_fd(f[1]), f[2], dir_fd(f[1]),
			       f[3]);
	}
	if (strcmp(f[0], "renameat2") == 0) {       /* renameat2:DIR:OLD:NEW */
		NEED(4);
		return syscall(SYS_renameat2, dir_fd(f[1]), f[2], dir_fd(f[1]),
			       f[3], RENAME_NOREPLACE);
	}
	if (strcmp(f[0], "linkat") == 0) {          /* linkat:DIR:OLD:NEW */
		NEED(4);
		return syscall(SYS_linkat, dir_fd(f[1]), f[2], dir_fd(f[1]),
			       f[3], 0);
	}
	if (strcmp(f[0], "umask") == 0) {           /* umask:MODE */
		NEED(2);
		umask((mode_t)strtol(f[1], NULL, 8));
		return 0;
	}
	return -2;
#undef NEED
}

static long run_op(char *op)
{
	struct sigaction sa;
	bool named = op[0] && op[1] && op[1] != ':';
	char *f[6];
	int n = fields(op, f, named ? 6 : 4), pipefd[2];
	long r;

	if (named)
		return run_named(f, n);
	switch (f[0][0]) {
	case 'w':
		return n == 3 ? write(file_fd(f[1]), f[2], strlen(f[2])) : -2;
	case 'p':
		return n == 4 ? pwrite(file_fd(f[1]), f[3], strlen(f[3]),
				       atol(f[2])) : -2;
	case 'f':
		return fsync(file_fd(f[1]));
	case 'd':
		return fdatasync(file_fd(f[1]));
	case 'r':
		return n >= 3 ? rename(f[1], f[2]) : -2;
	case 'l':
		return n >= 3 ? link(f[1], f[2]) : -2;
	case 's':
		return sendto(3, f[1], strlen(f[1]), 0, NULL, 0);
	case 'P':
	case 'F':
	case 'Q':
		if (pipe(pipefd) < 0)
			return -1;
		if (f[0][0] == 'Q') {
			signal(SIGPIPE, SIG_IGN);
			close(pipefd[0]);
			pipefd[0] = open("/dev/null", O_RDONLY);
		}
		if (f[0][0] != 'F')
			r = write(pipefd[1], f[1], strlen(f[1]));
		else
			r = fsync(pipefd[1]);
		close(pipefd[0]);
		close(pipefd[1]);
		return r;
	case 'H':
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = on_usr1;
		sa.sa_flags = SA_RESTART;
		return sigaction(SIGUSR1, &sa, NULL);
	}
	return -2;
}

int sct_child_main(int argc, char **argv)
{
	progress_fd = open("progress", O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC,
			   0644);
	if (progress_fd < 0)
		_exit(93);
	for (int i = 0; i < argc; i++) {
		long r = run_op(argv[i]);

		if (r == -2)
			_exit(94);
		if (r < 0) {
			int e = errno;

			note("fail %d %d\n", i, e);
			_exit(e & 0xff);
		}
		note("ok %d\n", i);
	}
	_exit(0);
}

/* --- the supervisor side ---------------------------------------------- */

/* Fork, load the plan's filter, exec argv in dir with sock3 (if >= 0) as
 * fd 3. */
void sct_start(struct sct_child *c, const struct inject_seccomp_plan *p,
	       const char *dir, int sock3, char *const argv[])
{
	int sv[2], nfd = -1;
	void *bpf;
	size_t len;

	memset(c, 0, sizeof(*c));
	c->ev = calloc(SCT_MAX_EVENTS, sizeof(*c->ev));
	assert_non_null(c->ev);
	assert_int_equal(inject_seccomp_plan_bpf(p, &bpf, &len), 0);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	c->pid = fork();
	assert_true(c->pid >= 0);
	if (c->pid == 0) {
		setpgid(0, 0);
		if (chdir(dir) < 0)
			_exit(80);
		if (sock3 >= 0 && dup2(sock3, 3) != 3)
			_exit(81);
		if (child_setup_filter(bpf, len / sizeof(struct sock_filter),
				       sv[1]) < 0)
			_exit(82);
		execv(argv[0], argv);
		_exit(83);
	}
	setpgid(c->pid, c->pid);
	free(bpf);
	close(sv[1]);
	assert_int_equal(fds_recv_one(sv[0], 5000, &nfd), 0);
	close(sv[0]);
	assert_int_equal(inject_seccomp_session_new(p, nfd, c->pid, &c->s), 0);
}

double sct_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The supervisor's poll loop, until the filter has no users left. */
void sct_drive(struct sct_child *c)
{
	struct inject_seccomp_event *ev = malloc(sizeof(*ev));
	double deadline = sct_now() + 30;

	assert_non_null(ev);
	for (;;) {
		struct pollfd pfd = { .fd = inject_seccomp_session_fd(c->s),
				      .events = POLLIN };

		if (poll(&pfd, 1, 100) > 0) {
			if (inject_seccomp_handle(c->s, ev)) {
				c->errors++;
				fprintf(stderr, "handle: %s\n",
					inject_seccomp_session_errmsg(c->s));
			}
			if (ev->outcome == INJECT_OUT_HANGUP)
				break;
			if (ev->outcome == INJECT_OUT_STALE)
				c->stale++;
			if (ev->outcome != INJECT_OUT_NONE &&
			    ev->outcome != INJECT_OUT_IGNORED &&
			    c->nev < SCT_MAX_EVENTS)
				c->ev[c->nev++] = *ev;
		}
		if (sct_now() > deadline) {
			kill(-c->pid, SIGKILL);
			fail_msg("child %d did not finish", (int)c->pid);
		}
	}
	free(ev);
	assert_int_equal(waitpid(c->pid, &c->status, 0), c->pid);
}

void sct_finish(struct sct_child *c)
{
	inject_seccomp_session_free(c->s);
	free(c->ev);
}

/* Run this binary's script mode with ops (NULL-terminated). */
void sct_run_script(struct sct_child *c, const struct inject_seccomp_plan *p,
		    const char *dir, int sock3, const char *const ops[])
{
	char *argv[32];
	int n = 0;

	argv[n++] = "/proc/self/exe";
	argv[n++] = "--child";
	while (*ops && n < 31)
		argv[n++] = (char *)*ops++;
	argv[n] = NULL;
	sct_start(c, p, dir, sock3, argv);
	sct_drive(c);
}

/* --- fixtures and helpers --------------------------------------------- */

int sct_setup(void **state)
{
	struct sct_fx *fx = calloc(1, sizeof(*fx));
	char tmpl[] = "/tmp/fc-seccomp-XXXXXX";
	char real[PATH_MAX];

	if (!fx || !mkdtemp(tmpl) || !realpath(tmpl, real) ||
	    strlen(real) >= sizeof(fx->dir) || inject_seccomp_plan_new(&fx->plan))
		return -1;
	strcpy(fx->dir, real);
	*state = fx;
	return 0;
}

static int rm_one(const char *path, const struct stat *st, int flag,
		  struct FTW *ftw)
{
	return remove(path);
}

int sct_teardown(void **state)
{
	struct sct_fx *fx = *state;

	nftw(fx->dir, rm_one, 8, FTW_DEPTH | FTW_PHYS);
	inject_seccomp_plan_free(fx->plan);
	free(fx);
	return 0;
}

/* Contents of dir/name ("" if absent); static buffer. */
const char *sct_slurp(const struct sct_fx *fx, const char *name)
{
	static char buf[4096];
	char path[PATH_MAX];
	ssize_t n = 0;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", fx->dir, name);
	buf[0] = '\0';
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return buf;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	return buf;
}

bool sct_exists(const struct sct_fx *fx, const char *name)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", fx->dir, name);
	return access(path, F_OK) == 0;
}

const char *sct_in_dir(const struct sct_fx *fx, const char *name)
{
	static char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", fx->dir, name);
	return path;
}

void sct_add(struct sct_fx *fx, const char *rule)
{
	if (inject_seccomp_plan_add_rule(fx->plan, rule))
		fail_msg("rule '%s': %s", rule,
			 inject_seccomp_plan_errmsg(fx->plan));
}

unsigned long sct_stat_count(const struct sct_child *c, const char *syscall,
			     const char *path)
{
	for (size_t i = 0; i < inject_seccomp_stats_len(c->s); i++) {
		const char *sc, *pa;
		unsigned long n;

		assert_int_equal(inject_seccomp_stats_get(c->s, i, &sc, &pa, &n), 0);
		if (strcmp(sc, syscall) == 0 && strcmp(pa, path) == 0)
			return n;
	}
	return 0;
}

size_t sct_count_outcome(const struct sct_child *c, enum inject_outcome o)
{
	size_t n = 0;

	for (size_t i = 0; i < c->nev; i++)
		n += c->ev[i].outcome == o;
	return n;
}

const struct inject_seccomp_event *sct_find_outcome(const struct sct_child *c,
						    enum inject_outcome o)
{
	for (size_t i = 0; i < c->nev; i++)
		if (c->ev[i].outcome == o)
			return &c->ev[i];
	return NULL;
}

void sct_assert_killed(const struct sct_child *c, int sig)
{
	if (!WIFSIGNALED(c->status))
		fail_msg("child not killed: wait status 0x%x", c->status);
	assert_int_equal(WTERMSIG(c->status), sig);
}

void sct_assert_exit(const struct sct_child *c, int code)
{
	if (!WIFEXITED(c->status))
		fail_msg("child did not exit: wait status 0x%x", c->status);
	assert_int_equal(WEXITSTATUS(c->status), code);
}
