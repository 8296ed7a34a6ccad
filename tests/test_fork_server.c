/*
 * test_fork_server.c -- the route side of the fork server
 * (routes/fork_server.c, docs/fork-server.md), driven over its socket
 * without the supervisor.
 *
 * This binary is the server: a test starts it with FENCECERT_FORK_SERVER_FD
 * naming one end of a SEQPACKET socketpair and sends it spawn requests
 * itself, so the children (CLONE_PARENT) are the test's own.  Its warm_up
 * changes what a server may change and an attempt must not see (a signal
 * handler, an ignored signal, a blocked one) and leaves a filled heap
 * buffer behind; the children check what they got ("child MODE").
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/rseq.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/child_setup.h"
#include "common/fds.h"
#include "common/protocol.h"
#include "routes/fork_server.h"

#define PATTERN_LEN (96 * 1024)
/* Faults per spawn a server may take (test_server_faults).  A sanitized
 * server also writes the shadow of its loop's stack frames, which its
 * children inherit. */
#if defined(__SANITIZE_ADDRESS__)
#define SERVER_FAULTS_MAX 6
#else
#define SERVER_FAULTS_MAX 2
#endif

static char self_exe[4096];
static unsigned char *pattern; /* filled by warm_up, in the server */

/* --- the server's warm_up and the children ------------------------------- */

static void on_usr1(int sig)
{
	(void)sig;
}

static void warm_up(void)
{
	struct sigaction sa = { .sa_handler = on_usr1 };
	sigset_t block;

	sigaction(SIGUSR1, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&block);
	sigaddset(&block, SIGUSR2);
	sigprocmask(SIG_BLOCK, &block, NULL);
	pattern = malloc(PATTERN_LEN);
	if (pattern)
		for (size_t i = 0; i < PATTERN_LEN; i++)
			pattern[i] = (unsigned char)(i * 7 + 3);
}

static int complain(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return 1;
}

/* Signals as an exec'd attempt starts: default dispositions, empty mask. */
static int child_signals(void)
{
	static const int sigs[] = { SIGUSR1, SIGPIPE, SIGUSR2, SIGTERM };
	sigset_t mask;

	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
		struct sigaction sa;

		if (sigaction(sigs[i], NULL, &sa) < 0 || sa.sa_handler != SIG_DFL)
			return complain("signal %d is not SIG_DFL", sigs[i]);
	}
	if (sigprocmask(SIG_SETMASK, NULL, &mask) < 0)
		return complain("sigprocmask: %s", strerror(errno));
	for (int s = 1; s < 32; s++)
		if (sigismember(&mask, s))
			return complain("signal %d is blocked", s);
	return 0;
}

/* glibc's rseq area is registered, as in an exec'd process: registering
 * it again with the same arguments is EBUSY. */
static int child_rseq(void)
{
	unsigned len = __rseq_size > 32 ? __rseq_size : 32;

	if (__rseq_size == 0)
		return 0; /* glibc registered none */
	if (syscall(SYS_rseq, (char *)__builtin_thread_pointer() +
		    __rseq_offset, len, 0, RSEQ_SIG) == 0 || errno != EBUSY)
		return complain("rseq was not registered (%s)",
				strerror(errno));
	if (sched_getcpu() < 0)
		return complain("sched_getcpu: %s", strerror(errno));
	return 0;
}

/* 1 kB frames, deep enough to go past what the server populates for
 * it; depth + 1 when every frame kept what it wrote. */
static int recurse(int depth)
{
	volatile char frame[1024];
	int below;

	frame[0] = frame[sizeof(frame) - 1] = (char)(depth & 0x7f);
	below = depth ? recurse(depth - 1) : 0;
	return below + (frame[0] == (char)(depth & 0x7f) &&
			frame[sizeof(frame) - 1] == frame[0]);
}

/* The server's memory as it left it; the stack and heap grow as usual. */
static int child_memory(void)
{
	unsigned char *big;

	if (!pattern)
		return complain("no pattern: warm_up did not run");
	for (size_t i = 0; i < PATTERN_LEN; i++)
		if (pattern[i] != (unsigned char)(i * 7 + 3))
			return complain("pattern differs at %zu", i);
	if (recurse(256) != 257)
		return complain("a stack frame changed");
	big = malloc(4 << 20);
	if (!big)
		return complain("malloc");
	memset(big, 0x5a, 4 << 20);
	for (size_t i = 0; i < (4 << 20); i += 4096)
		if (big[i] != 0x5a)
			return complain("heap byte %zu", i);
	free(big);
	return 0;
}

/* Contained (NS 1): pid 2 of a namespace of its own, under its init. */
static int child_ns(void)
{
	if (getpid() != 2 || getppid() != 1)
		return complain("pid %d parent %d, not 2 and 1", (int)getpid(),
				(int)getppid());
	return 0;
}

/* Leave a process behind in a session of its own, then exit 7. */
static int child_leave(void)
{
	pid_t pid = fork();

	if (pid == 0) {
		setsid();
		for (;;)
			pause();
	}
	return pid > 0 ? 7 : complain("fork: %s", strerror(errno));
}

static int child_run(const char *mode)
{
	if (strcmp(mode, "signals") == 0)
		return child_signals();
	if (strcmp(mode, "memory") == 0)
		return child_memory();
	if (strcmp(mode, "rseq") == 0)
		return child_rseq();
	if (strcmp(mode, "exit0") == 0)
		return 0;
	if (strcmp(mode, "ns") == 0)
		return child_ns();
	if (strcmp(mode, "leave") == 0)
		return child_leave();
	return complain("unknown child mode '%s'", mode);
}

/* --- the harness side, by hand ------------------------------------------- */

struct server {
	pid_t pid;
	int sock;
};

static void server_start(struct server *s)
{
	int sv[2];
	char hello[64];
	ssize_t n;

	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0,
				    sv), 0);
	s->pid = fork();
	assert_true(s->pid >= 0);
	if (s->pid == 0) {
		char *argv[] = { self_exe, NULL };
		int nul = open("/dev/null", O_RDWR);

		if (sv[1] == 3)
			fcntl(3, F_SETFD, 0);
		else
			dup2(sv[1], 3); /* not close-on-exec */
		if (nul >= 0) {
			dup2(nul, 0);
			dup2(nul, 1);
		}
		setenv(PROTO_ENV_FORK_SERVER_FD, "3", 1);
		execv(self_exe, argv);
		_exit(127);
	}
	close(sv[1]);
	s->sock = sv[0];
	n = recv(s->sock, hello, sizeof(hello) - 1, 0);
	assert_true(n > 0);
	hello[n] = '\0';
	assert_string_equal(hello, FORK_SERVER_HELLO);
}

static void server_stop(struct server *s)
{
	int status;

	close(s->sock);
	assert_int_equal(waitpid(s->pid, &status, 0), s->pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

/* Send msg[0..len) with fds; the reply in reply[]. */
static void exchange(struct server *s, const char *msg, size_t len,
		     const int *fds, int nfds, char *reply, size_t rlen)
{
	ssize_t n;

	assert_int_equal(fds_send(s->sock, msg, len, fds, nfds), 0);
	n = recv(s->sock, reply, rlen - 1, 0);
	assert_true(n > 0);
	reply[n] = '\0';
}

/* "spawn" with argv {self, "child", mode}, counts and namespace as
 * given. */
static size_t request_ns(char *buf, size_t len, const char *argc,
			 const char *envc, const char *ns, const char *mode)
{
	size_t n = 0;
	const char *parts[] = { "spawn", argc, envc, "", "0", "0", ns, self_exe,
				"child", mode, "FORK_SERVER_TEST=1" };

	for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
		size_t l = strlen(parts[i]) + 1;

		assert_true(n + l <= len);
		memcpy(buf + n, parts[i], l);
		n += l;
	}
	return n;
}

static size_t request(char *buf, size_t len, const char *argc,
		      const char *envc, const char *mode)
{
	return request_ns(buf, len, argc, envc, "0", mode);
}

/* Spawn "child MODE"; its pid (a child of ours), with its setup done. */
static pid_t spawn(struct server *s, const char *mode)
{
	char msg[8192], reply[64], c;
	int report[2], fds[4];
	int nul = open("/dev/null", O_RDWR | O_CLOEXEC);
	size_t len = request(msg, sizeof(msg), "3", "1", mode);
	long pid;

	assert_true(nul >= 0);
	assert_int_equal(pipe2(report, O_CLOEXEC), 0);
	fds[0] = nul;
	fds[1] = nul;
	fds[2] = 2; /* the child's complaints show in the test's output */
	fds[3] = report[1];
	exchange(s, msg, len, fds, 4, reply, sizeof(reply));
	close(nul);
	close(report[1]);
	if (sscanf(reply, "pid %ld", &pid) != 1)
		fail_msg("reply '%s'", reply);
	/* EOF: set up; an errno otherwise */
	assert_int_equal(read(report[0], &c, 1), 0);
	close(report[0]);
	return (pid_t)pid;
}

static int exit_code(pid_t pid);

/*
 * Spawn "child MODE" contained (NS 1): the reply's pid is the namespace's
 * init, which reports RUNNING once the route process is set up and END
 * {the route's wait status, what it left and had to kill} when it has
 * ended, then exits 0.  Returns the END record.
 */
static struct child_report spawn_contained(struct server *s, const char *mode)
{
	char msg[8192], reply[64];
	int report[2], fds[4];
	int nul = open("/dev/null", O_RDWR | O_CLOEXEC);
	size_t len = request_ns(msg, sizeof(msg), "3", "1", "1", mode);
	struct child_report rec;
	long pid;

	assert_true(nul >= 0);
	assert_int_equal(pipe2(report, O_CLOEXEC), 0);
	fds[0] = nul;
	fds[1] = nul;
	fds[2] = 2;
	fds[3] = report[1];
	exchange(s, msg, len, fds, 4, reply, sizeof(reply));
	close(nul);
	close(report[1]);
	if (sscanf(reply, "pid %ld", &pid) != 1)
		fail_msg("reply '%s'", reply);
	assert_int_equal(read(report[0], &rec, sizeof(rec)), sizeof(rec));
	assert_int_equal(rec.what, CHILD_REPORT_RUNNING);
	assert_int_equal(exit_code((pid_t)pid), 0);
	assert_int_equal(read(report[0], &rec, sizeof(rec)), sizeof(rec));
	assert_int_equal(rec.what, CHILD_REPORT_END);
	/* every writer is gone: the init and everything in its namespace */
	assert_int_equal(read(report[0], msg, 1), 0);
	close(report[0]);
	return rec;
}

static int exit_code(pid_t pid)
{
	int status;

	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	return WEXITSTATUS(status);
}

/* Minor faults of a process so far (/proc/PID/stat field 10). */
static long minflt(pid_t pid)
{
	char path[64], buf[1024], *p;
	long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	assert_non_null(f);
	assert_non_null(fgets(buf, sizeof(buf), f));
	fclose(f);
	p = strrchr(buf, ')');
	assert_non_null(p);
	/* state ppid pgrp session tty tpgid flags minflt */
	assert_int_equal(sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %ld", &v),
			 1);
	return v;
}

/* --- the tests ------------------------------------------------------------ */

/* What warm_up changed (a handler, an ignored and a blocked signal) an
 * attempt does not inherit, and it has glibc's rseq area registered
 * (which the server unregistered): it starts as an exec'd one would. */
static void test_child_starts_as_exec(void **state)
{
	struct server s;

	(void)state;
	server_start(&s);
	assert_int_equal(exit_code(spawn(&s, "signals")), 0);
	assert_int_equal(exit_code(spawn(&s, "signals")), 0);
	assert_int_equal(exit_code(spawn(&s, "rseq")), 0);
	server_stop(&s);
}

/* Populating a child's stack and heap changes no byte of what it
 * inherited, and both grow past the populated range as usual. */
static void test_memory_inherited(void **state)
{
	struct server s;
	pid_t a, b;

	(void)state;
	server_start(&s);
	a = spawn(&s, "memory");
	b = spawn(&s, "memory"); /* while the first may still run */
	assert_int_equal(exit_code(a), 0);
	assert_int_equal(exit_code(b), 0);
	server_stop(&s);
}

/* Contained, a child is pid 2 of a PID namespace of its own; its init
 * relays its exact exit status, and what it leaves running is killed and
 * counted when it ends. */
static void test_child_contained(void **state)
{
	struct server s;
	struct child_report rec;

	(void)state;
	server_start(&s);
	rec = spawn_contained(&s, "ns");
	assert_true(WIFEXITED(rec.value));
	assert_int_equal(WEXITSTATUS(rec.value), 0);
	assert_int_equal(rec.killed, 0);
	rec = spawn_contained(&s, "leave");
	assert_true(WIFEXITED(rec.value));
	assert_int_equal(WEXITSTATUS(rec.value), 7);
	assert_int_equal(rec.killed, 1);
	/* the route process starts as an exec'd one would, as uncontained */
	rec = spawn_contained(&s, "signals");
	assert_int_equal(rec.value, 0);
	rec = spawn_contained(&s, "rseq");
	assert_int_equal(rec.value, 0);
	rec = spawn_contained(&s, "memory");
	assert_int_equal(rec.value, 0);
	server_stop(&s);
}

/* The init's route clone writes the route's pid into the server's word
 * in the kernel (CLONE_PARENT_SETTID), which wakes nobody; an init
 * stopped before its own wake (a pause at the route's first failpoint,
 * SIGSTOP to the group) once held the server, and the next spawn timed
 * out.  The server's wait must see a word changed without a wake. */
static void *store_unwoken(void *word)
{
	struct timespec ms20 = { 0, 20000000 };

	nanosleep(&ms20, NULL);
	__atomic_store_n((int *)word, 2, __ATOMIC_RELEASE); /* no FUTEX_WAKE */
	return NULL;
}

static void test_wait_started_unwoken(void **state)
{
	int word = CHILD_INIT_STARTING;
	pthread_t t;

	(void)state;
	assert_int_equal(pthread_create(&t, NULL, store_unwoken, &word), 0);
	alarm(5); /* before the bounded wait: blocked forever */
	child_setup_wait_started(&word);
	alarm(0);
	assert_int_equal(word, 2);
	pthread_join(t, NULL);
}

/* Malformed requests are answered "error EPROTO" (counts out of range,
 * not decimal, overflowing, missing; an unknown namespace) and the server
 * goes on serving. */
static void test_malformed_requests(void **state)
{
	static const char *const counts[][2] = {
		{ "3", "" }, { "", "1" }, { "-1", "1" }, { "3a", "1" },
		{ "0", "1" }, { "4097", "1" }, { "3", "65537" },
		{ "99999999999999999999999", "1" }, { "3", "2" }, { "4", "1" },
	};
	char msg[8192], reply[64], want[32];
	struct server s;

	(void)state;
	snprintf(want, sizeof(want), "error %d", EPROTO);
	server_start(&s);
	for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++) {
		size_t len = request(msg, sizeof(msg), counts[i][0],
				     counts[i][1], "exit0");
		int fds[4] = { 0, 1, 2, 2 };

		exchange(&s, msg, len, fds, 4, reply, sizeof(reply));
		if (strcmp(reply, want) != 0)
			fail_msg("counts '%s' '%s': reply '%s'", counts[i][0],
				 counts[i][1], reply);
	}
	/* a namespace the protocol does not know */
	for (size_t i = 0; i < 3; i++) {
		static const char *const bad[] = { "3", "", "x" };
		int fds[4] = { 0, 1, 2, 2 };

		exchange(&s, msg, request_ns(msg, sizeof(msg), "3", "1", bad[i],
					     "exit0"), fds, 4, reply,
			 sizeof(reply));
		if (strcmp(reply, want) != 0)
			fail_msg("NS '%s': reply '%s'", bad[i], reply);
	}
	/* a request without its fds */
	exchange(&s, msg, request(msg, sizeof(msg), "3", "1", "exit0"), NULL,
		 0, reply, sizeof(reply));
	assert_string_equal(reply, want);
	assert_int_equal(exit_code(spawn(&s, "exit0")), 0);
	server_stop(&s);
}

/*
 * Between two clones the server writes no page its children inherit
 * (routes/fork_server.c invariant 7): per spawn it takes a fault on the
 * one fresh page a request is received into (1.0 measured).  A server
 * writing its stack, heap or errno copies a page per write (7-9 per spawn
 * before), one whose rseq area the kernel updates one more.
 */
static void test_server_faults(void **state)
{
	enum { SPAWNS = 40 };
	struct server s;
	long before, after;

	(void)state;
	server_start(&s);
	assert_int_equal(exit_code(spawn(&s, "exit0")), 0);
	before = minflt(s.pid);
	for (int i = 0; i < SPAWNS; i += 2) {
		/* the first may live while the server answers the second */
		pid_t p = spawn(&s, "exit0"), q = spawn(&s, "exit0");

		assert_int_equal(exit_code(p), 0);
		assert_int_equal(exit_code(q), 0);
	}
	after = minflt(s.pid);
	print_message("server faults per spawn: %.2f\n",
		      (double)(after - before) / SPAWNS);
	assert_true(after - before <= SERVER_FAULTS_MAX * SPAWNS);
	server_stop(&s);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_child_starts_as_exec),
		cmocka_unit_test(test_memory_inherited),
		cmocka_unit_test(test_child_contained),
		cmocka_unit_test(test_wait_started_unwoken),
		cmocka_unit_test(test_malformed_requests),
		cmocka_unit_test(test_server_faults),
	};
	ssize_t n;

	/* returns at once, or in each process the server spawns */
	fork_server_serve(&argc, &argv, warm_up);
	if (argc == 3 && strcmp(argv[1], "child") == 0)
		return child_run(argv[2]);
	n = readlink("/proc/self/exe", self_exe, sizeof(self_exe) - 1);
	if (n <= 0)
		return 1;
	self_exe[n] = '\0';
	return cmocka_run_group_tests_name("fork server", tests, NULL, NULL);
}
