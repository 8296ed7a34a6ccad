/*
 * test_supervise.c -- the supervisor with real processes.
 *
 * The routes under test are this binary itself, re-executed with
 * "child MODE" (see child_main): so every behaviour (talking the failpoint
 * channel, hanging, forking and dying) is plain C, not shell quirks.  The
 * orphan tests mark their processes with a unique environment variable and
 * scan /proc for it afterwards.
 *
 * The binary is also a fork server (routes/fork_server.h): the tests that
 * do not depend on how a process starts run twice, exec'd and through the
 * fork server, and the fork server's own tests compare what a child sees
 * both ways.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "../routes/failpoint.h"

#include "../harness/supervise.h"
#include "../routes/fork_server.h"

static char self_exe[4096];
static bool use_forksrv; /* spawn_mode() goes through the fork server */
static char tmp_dir[] = "/tmp/fc-supervise-XXXXXX";

/* --- the child routes ------------------------------------------------------ */

static int ask(int fd, const char *name)
{
	char line[128], c;
	int n = snprintf(line, sizeof(line), "HIT %s\n", name);

	if (write(fd, line, (size_t)n) != n || read(fd, &c, 1) != 1)
		return -1;
	return c;
}

/* Print what an attempt can see of how it was started: argv is known,
 * so the environment (sorted), cwd, open fds, process group, parent,
 * signal state and rlimits. */
static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int describe(void)
{
	extern char **environ;
	size_t n = 0;
	char **env, cwd[4096], line[256];
	static const int limits[] = { RLIMIT_CORE, RLIMIT_NOFILE, RLIMIT_CPU,
				      RLIMIT_FSIZE, RLIMIT_AS };
	DIR *d;
	struct dirent *e;
	FILE *f;

	for (char **v = environ; *v; v++)
		n++;
	env = calloc(n + 1, sizeof(*env));
	memcpy(env, environ, n * sizeof(*env));
	qsort(env, n, sizeof(*env), cmp_str);
	for (size_t i = 0; i < n; i++)
		printf("env %s\n", env[i]);
	free(env);
	printf("cwd %s\n", getcwd(cwd, sizeof(cwd)) ? cwd : "?");
	printf("leader %d parent-is-harness %d\n", getpgrp() == getpid(),
	       getppid() == atoi(getenv("SUPERVISE_TEST_HARNESS")));
	d = opendir("/proc/self/fd");
	while (d && (e = readdir(d)))
		if (e->d_name[0] != '.' && atoi(e->d_name) != dirfd(d))
			printf("fd %s\n", e->d_name);
	if (d)
		closedir(d);
	f = fopen("/proc/self/status", "r");
	while (f && fgets(line, sizeof(line), f))
		/* SigQ counts the user's queued signals, machine-wide */
		if ((strncmp(line, "Sig", 3) == 0 &&
		     strncmp(line, "SigQ", 4) != 0) ||
		    strncmp(line, "NoNewPrivs", 10) == 0)
			printf("%s", line);
	if (f)
		fclose(f);
	for (size_t i = 0; i < sizeof(limits) / sizeof(limits[0]); i++) {
		struct rlimit rl;
		getrlimit(limits[i], &rl);
		printf("rlimit %d %llu %llu\n", limits[i],
		       (unsigned long long)rl.rlim_cur,
		       (unsigned long long)rl.rlim_max);
	}
	return 0;
}

/* Write and fsync DIR/f twice, then create DIR/out; exit 5 when an fsync
 * fails. */
static int fsyncs(const char *dir)
{
	char path[4200];
	int fd;

	snprintf(path, sizeof(path), "%s/f", dir);
	for (int i = 0; i < 2; i++) {
		fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd < 0 || write(fd, "x", 1) != 1)
			return 4;
		if (fsync(fd) < 0)
			return 5;
		close(fd);
	}
	snprintf(path, sizeof(path), "%s/out", dir);
	close(open(path, O_WRONLY | O_CREAT, 0644));
	return 0;
}

static int child_main(const char *mode)
{
	const char *fdv = getenv("FENCECERT_FAILPOINT_FD");
	int fd = fdv ? atoi(fdv) : -1;

	if (strcmp(mode, "exit3") == 0)
		return 3;
	if (strcmp(mode, "term") == 0) {
		raise(SIGTERM);
		return 1;
	}
	if (strcmp(mode, "hits") == 0) {
		/* 'c' at a, 'f' at b: exit 42; anything else: 10 + step */
		if (ask(fd, "a") != 'c')
			return 11;
		if (ask(fd, "b") != 'f')
			return 12;
		return 42;
	}
	if (strcmp(mode, "passes") == 0) {
		/* the route helper with a wait set of "b": PASS a, HIT b
		 * (answered 'f'), PASS c: exit 42; anything else: 20 + step */
		char err[256];

		if (failpoint_init(err, sizeof(err)))
			return 20;
		if (failpoint_hit("a") != 0)
			return 21;
		if (failpoint_hit("b") != FC_IO)
			return 22;
		if (failpoint_hit("c") != 0)
			return 23;
		return 42;
	}
	if (strcmp(mode, "hang") == 0) {
		for (;;)
			pause();
	}
	if (strcmp(mode, "fork-and-die") == 0) {
		/* a grandchild that would outlive us if nobody killed it */
		if (fork() == 0) {
			setenv("SUPERVISE_TEST_GRANDCHILD", "1", 1);
			for (;;)
				pause();
		}
		return 0;
	}
	if (strcmp(mode, "nofd") == 0)
		return fdv ? 1 : 0;
	if (strcmp(mode, "by-env") == 0) /* one argv, so one fork server */
		return child_main(getenv("SUPERVISE_TEST_MODE"));
	if (strcmp(mode, "describe") == 0)
		return describe();
	if (strcmp(mode, "kill-server") == 0)
		return fork_server_pid() > 0 && kill(fork_server_pid(), SIGKILL) == 0 ?
			0 : 1;
	if (strcmp(mode, "fsyncs") == 0)
		return fsyncs(getenv("SUPERVISE_TEST_DIR"));
	if (strcmp(mode, "hang-noted") == 0) {
		/* leave a note "PID-SERVERPID" in the test's dir, then hang */
		char path[4200];
		snprintf(path, sizeof(path), "%s/%d-%d",
			 getenv("SUPERVISE_TEST_DIR"), (int)getpid(),
			 (int)fork_server_pid());
		close(open(path, O_WRONLY | O_CREAT, 0644));
		for (;;)
			pause();
	}
	return 99;
}

/* --- helpers -------------------------------------------------------------- */

static char *argv_for(const char *mode, char **argv)
{
	argv[0] = self_exe;
	argv[1] = (char *)"child";
	argv[2] = (char *)mode;
	argv[3] = NULL;
	return argv[0];
}

static sv_proc *spawn_mode(supervisor *sv, const char *mode, bool fp,
			   long long timeout, char **env)
{
	char *argv[4];
	sv_proc *p = NULL;
	char err[256];

	argv_for(mode, argv);
	assert_int_equal(supervisor_spawn(sv, &(struct sv_spawn){
				.argv = argv, .env = env, .failpoints = fp,
				.timeout_ms = timeout, .fork_server = use_forksrv },
				&p, err, sizeof(err)), 0);
	assert_non_null(p);
	return p;
}

/* Wait for the next event of p (with a bound so a bug cannot hang);
 * events of other processes are dropped, so use it with one live process
 * or where the others' events do not matter. */
static void next_event(supervisor *sv, sv_proc *p, struct sv_event *ev)
{
	long long until = supervisor_now_ms() + 20000;

	for (;;) {
		assert_int_equal(supervisor_wait(sv, until, ev), 0);
		assert_int_not_equal(ev->kind, SV_EV_NONE);
		if (ev->proc == p)
			return;
	}
}

static char proc_state(pid_t pid)
{
	char path[64], buf[512], *p;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	p = strrchr(buf, ')');
	return p && p[1] ? p[2] : 0;
}

/* Number of live (non-zombie) processes whose environment holds needle. */
static int count_marked(const char *needle)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	int n = 0;

	assert_non_null(d);
	while ((e = readdir(d))) {
		char path[300], buf[65536];
		size_t len;
		FILE *f;

		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/environ", e->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		len = fread(buf, 1, sizeof(buf), f);
		fclose(f);
		if (proc_state(atoi(e->d_name)) == 'Z')
			continue;
		if (memmem(buf, len, needle, strlen(needle)))
			n++;
	}
	closedir(d);
	return n;
}

static int wait_unmarked(const char *needle, long long ms)
{
	long long until = supervisor_now_ms() + ms;
	int n;

	while ((n = count_marked(needle)) && supervisor_now_ms() < until) {
		struct timespec ts = { 0, 20 * 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
	return n;
}

/* --- tests ------------------------------------------------------------------ */

static void test_exit_and_signal(void **state)
{
	supervisor *sv;
	sv_proc *a, *b;
	struct sv_event ev;
	char err[256];

	(void)state;
	assert_int_equal(supervisor_new(&sv, err, sizeof(err)), 0);
	a = spawn_mode(sv, "exit3", false, 0, NULL);
	b = spawn_mode(sv, "term", false, 0, NULL);
	/* both end, in whatever order */
	for (int i = 0; i < 2; i++) {
		assert_int_equal(supervisor_wait(sv, supervisor_now_ms() + 20000,
						 &ev), 0);
		assert_int_equal(ev.kind, SV_EV_EXIT);
		assert_true(ev.proc == a || ev.proc == b);
	}
	assert_true(sv_proc_ended(a) && sv_proc_ended(b));
	assert_int_equal(sv_proc_status(a)->end, SV_EXITED);
	assert_int_equal(sv_proc_status(a)->code, 3);
	assert_int_equal(sv_proc_status(b)->end, SV_SIGNALED);
	assert_int_equal(sv_proc_status(b)->signal, SIGTERM);
	assert_false(sv_proc_status(b)->timed_out);
	assert_int_equal(supervisor_live(sv), 0);
	/* nothing left: a wait without deadline returns at once */
	assert_int_equal(supervisor_wait(sv, -1, &ev), 0);
	assert_int_equal(ev.kind, SV_EV_NONE);
	supervisor_free(sv);
}

static void test_failpoint_answers(void **state)
{
	supervisor *sv;
	sv_proc *p;
	struct sv_event ev;
	char err[256];

	(void)state;
	assert_int_equal(supervisor_new(&sv, err, sizeof(err)), 0);
	p = spawn_mode(sv, "hits", true, 10000, NULL);
	next_event(sv, p, &ev);
	assert_int_equal(ev.kind, SV_EV_HIT);
	assert_string_equal(ev.failpoint, "a");
	assert_int_equal(sv_proc_answer(p, 'c'), 0);
	next_event(sv, p, &ev);
	assert_int_equal(ev.kind, SV_EV_HIT);
	assert_string_equal(ev.failpoint, "b");
	assert_int_equal(sv_proc_answer(p, 'f'), 0);
	next_event(sv, p, &ev);
	assert_int_equal(ev.kind, SV_EV_EXIT);
	assert_int_equal(sv_proc_status(p)->code, 42);
	/* a route started without the channel sees no variable */
	p = spawn_mode(sv, "nofd", false, 10000, NULL);
	next_event(sv, p, &ev);
	assert_int_equal(sv_proc_status(p)->code, 0);
	supervisor_free(sv);
}

/* PASS lines are hits like HIT lines, flagged `passed`, and need no
 * answer: the route runs on to its next failpoint by itself. */
static void test_failpoint_passes(void **state)
{
	char *env[] = { (char *)FAILPOINT_WAIT_ENV "=b", NULL };
	const char *want[] = { "a", "b", "c" };
	supervisor *sv;
	sv_proc *p;
	struct sv_event ev;
	char err[256];

	(void)state;
	assert_int_equal(supervisor_new(&sv, err, sizeof(err)), 0);
	p = spawn_mode(sv, "passes", true, 10000, env);
	for (int i = 0; i < 3; i++) {
		next_event(sv, p, &ev);
		assert_int_equal(ev.kind, SV_EV_HIT);
		assert_string_equal(ev.failpoint, want[i]);
		assert_int_equal(ev.passed, i != 1);
		if (!ev.passed)
			assert_int_equal(sv_proc_answer(p, 'f'), 0);
	}
	next_event(sv, p, &ev);
	assert_int_equal(ev.kind, SV_EV_EXIT);
	assert_int_equal(sv_proc_status(p)->code, 42);
	supervisor_free(sv);
}

static void test_pause_resume_kill(void **state)
{
	supervisor *sv;
	sv_proc *p;
	struct sv_event ev;
	char err[256];
	struct timespec ts = { 0, 50 * 1000 * 1000 };

	(void)state;
	assert_int_equal(supervisor_new(&sv, err, sizeof(err)), 0);
	p = spawn_mode(sv, "hits", true, 10000, NULL);
	next_event(sv, p, &ev);
	assert_int_equal(sv_proc_pause(p), 0);
	nanosleep(&ts, NULL);
	assert_int_equal(proc_state(sv_proc_pid(p)), 'T');
	assert_true(sv_proc_paused(p));
	/* no event while stopped */
	assert_int_equal(supervisor_wait(sv, supervisor_now_ms() + 100, &ev), 0);
	assert_int_equal(ev.kind, SV_EV_NONE);
	assert_int_equal(sv_proc_answer(p, 'c'), 0);
	assert_int_equal(sv_proc_resume(p), 0);
	next_event(sv, p, &ev);
	assert_int_equal(ev.kind, SV_EV_HIT);
	assert_string_equal(ev.failpoint, "b");
	assert_int_equal(sv_proc_kill(p), 0);
	next_event(sv, p, &ev);
	assert_int_equal(ev.kind, SV_EV_EXIT);
	assert_int_equal(sv_proc_status(p)->signal, SIGKILL);
	assert_true(sv_proc_status(p)->killed);
	/* a paused process can be killed too */
	p = spawn_mode(sv, "hits", true, 10000, NULL);
	next_event(sv, p, &ev);
	assert_int_equal(sv_proc_pause(p), 0);
	assert_int_equal(sv_proc_kill(p), 0);
	next_event(sv, p, &ev);
	assert_int_equal(ev.kind, SV_EV_EXIT);
	assert_int_equal(sv_proc_status(p)->signal, SIGKILL);
	supervisor_free(sv);
}

static void test_timeout(void **state)
{
	supervisor *sv;
	sv_proc *p;
	struct sv_event ev;
	char err[256];
	long long t0 = supervisor_now_ms();

	(void)state;
	assert_int_equal(supervisor_new(&sv, err, sizeof(err)), 0);
	p = spawn_mode(sv, "hang", false, 300, NULL);
	next_event(sv, p, &ev);
	assert_int_equal(ev.kind, SV_EV_EXIT);
	assert_true(sv_proc_status(p)->timed_out);
	assert_int_equal(sv_proc_status(p)->signal, SIGKILL);
	assert_true(supervisor_now_ms() - t0 >= 300);
	assert_true(supervisor_now_ms() - t0 < 5000);
	supervisor_free(sv);
}

static void test_group_killed_after_leader(void **state)
{
	supervisor *sv;
	sv_proc *p;
	struct sv_event ev;
	char err[256], marker[128];
	char *env[2] = { marker, NULL };
	pid_t pgid;

	(void)state;
	snprintf(marker, sizeof(marker), "SUPERVISE_TEST_MARK=group-%d", getpid());
	assert_int_equal(supervisor_new(&sv, err, sizeof(err)), 0);
	p = spawn_mode(sv, "fork-and-die", false, 10000, env);
	pgid = sv_proc_pid(p);
	next_event(sv, p, &ev);
	assert_int_equal(ev.kind, SV_EV_EXIT);
	assert_int_equal(sv_proc_status(p)->code, 0);
	sv_proc_free(p);
	/* the grandchild was in the group: nothing of the group survives */
	assert_int_equal(kill(-pgid, 0), -1);
	assert_int_equal(errno, ESRCH);
	/* /proc/PID/environ of a fork server's child shows the server's
	 * environment, so the marker is looked for in exec'd ones only */
	if (!use_forksrv)
		assert_int_equal(wait_unmarked(marker, 2000), 0);
	supervisor_free(sv);
}

static void test_exec_failure(void **state)
{
	supervisor *sv;
	sv_proc *p = NULL;
	char err[256];
	char *argv[] = { (char *)"/nonexistent/route", NULL };

	(void)state;
	assert_int_equal(supervisor_new(&sv, err, sizeof(err)), 0);
	assert_int_equal(supervisor_spawn(sv, &(struct sv_spawn){ .argv = argv },
					  &p, err, sizeof(err)), FC_IO);
	assert_null(p);
	assert_non_null(strstr(err, "cannot run '/nonexistent/route'"));
	assert_int_equal(supervisor_live(sv), 0);
	supervisor_free(sv);
}

/* --- syscall faults (seccomp plan) ---------------------------------------- */

/* Run `dd ... conv=fsync` twice into DIR/f under a plan with `rule`, to its
 * end; returns the process (still owned by sv). */
static sv_proc *run_under_plan(supervisor *sv, struct inject_seccomp_plan **plan,
			       const char *dir, const char *rule)
{
	char script[600], glob[600], err[256];
	char *argv[] = { (char *)"/bin/sh", (char *)"-c", script, NULL };
	struct sv_event ev;
	sv_proc *p = NULL;

	snprintf(script, sizeof(script),
		 "dd if=/dev/zero of=%s/f bs=1 count=1 conv=fsync 2>/dev/null && "
		 "dd if=/dev/zero of=%s/f bs=1 count=2 conv=fsync 2>/dev/null && "
		 "echo done > %s/out", dir, dir, dir);
	snprintf(glob, sizeof(glob), "%s/*", dir);
	assert_int_equal(inject_seccomp_plan_new(plan), 0);
	assert_int_equal(inject_seccomp_plan_watch(*plan, glob), 0);
	assert_int_equal(inject_seccomp_plan_add_rule(*plan, rule), 0);
	assert_int_equal(supervisor_spawn(sv, &(struct sv_spawn){
			.argv = argv, .seccomp = *plan, .timeout_ms = 20000 },
			&p, err, sizeof(err)), 0);
	while (!sv_proc_ended(p)) {
		assert_int_equal(supervisor_wait(sv, supervisor_now_ms() + 30000,
						 &ev), 0);
		assert_int_not_equal(ev.kind, SV_EV_NONE);
	}
	assert_false(sv_proc_status(p)->timed_out);
	return p;
}

static void test_seccomp_faults(void **state)
{
	char dir[] = "/tmp/fc-sv-seccomp.XXXXXX", path[600];
	struct inject_seccomp_plan *plan;
	const struct sv_sysfault *sf;
	supervisor *sv;
	sv_proc *p;
	size_t n, total;
	char err[256];

	(void)state;
	assert_non_null(mkdtemp(dir));
	assert_int_equal(supervisor_new(&sv, err, sizeof(err)), 0);
	snprintf(path, sizeof(path), "%s/out", dir);

	/* the second fsync is killed before it runs: SIGKILL, nothing after */
	p = run_under_plan(sv, &plan, dir, "fsync#2:kill_before");
	assert_int_equal(sv_proc_status(p)->end, SV_SIGNALED);
	assert_int_equal(sv_proc_status(p)->signal, SIGKILL);
	assert_true(sv_proc_status(p)->killed);
	sf = sv_proc_sysfaults(p, &n, &total);
	assert_int_equal(n, 1);
	assert_int_equal(total, 1);
	assert_int_equal(sf[0].outcome, INJECT_OUT_KILLED_BEFORE);
	assert_string_equal(sf[0].syscall, "fsync");
	assert_int_equal(sf[0].rule, 0);
	assert_int_not_equal(access(path, F_OK), 0);
	assert_int_equal(inject_seccomp_stats_len(sv_proc_seccomp(p)), 1);
	sv_proc_free(p);
	inject_seccomp_plan_free(plan);

	/* the first fsync fails with EIO: dd fails, the script stops */
	p = run_under_plan(sv, &plan, dir, "fsync#1:errno:EIO");
	assert_int_equal(sv_proc_status(p)->end, SV_EXITED);
	assert_int_not_equal(sv_proc_status(p)->code, 0);
	assert_false(sv_proc_status(p)->killed);
	sf = sv_proc_sysfaults(p, &n, &total);
	assert_int_equal(n, 1);
	assert_int_equal(sf[0].outcome, INJECT_OUT_FAILED);
	assert_int_equal(sf[0].error, EIO);
	assert_int_not_equal(access(path, F_OK), 0);
	sv_proc_free(p);
	inject_seccomp_plan_free(plan);

	/* a rule that never matches: the script runs to its end */
	p = run_under_plan(sv, &plan, dir, "fsync#3:kill_before");
	assert_int_equal(sv_proc_status(p)->end, SV_EXITED);
	assert_int_equal(sv_proc_status(p)->code, 0);
	sv_proc_sysfaults(p, &n, &total);
	assert_int_equal(n, 0);
	assert_int_equal(access(path, F_OK), 0);
	sv_proc_free(p);
	inject_seccomp_plan_free(plan);

	unlink(path);
	snprintf(path, sizeof(path), "%s/f", dir);
	unlink(path);
	rmdir(dir);
	supervisor_free(sv);
}

/* exec fails under a plan: reported, not a hang (the child's write of its
 * errno is itself intercepted and answered while we wait for it). */
static void test_seccomp_exec_failure(void **state)
{
	struct inject_seccomp_plan *plan;
	supervisor *sv;
	sv_proc *p = NULL;
	char err[256];
	char *argv[] = { (char *)"/nonexistent/route", NULL };

	(void)state;
	assert_int_equal(supervisor_new(&sv, err, sizeof(err)), 0);
	assert_int_equal(inject_seccomp_plan_new(&plan), 0);
	/* the exec report is a write to a pipe: notified, must be answered */
	assert_int_equal(inject_seccomp_plan_add_rule(plan, "fsync:kill_before"), 0);
	assert_int_equal(inject_seccomp_plan_intercept(plan, "write"), 0);
	assert_int_equal(inject_seccomp_plan_watch(plan, "pipe:*"), 0);
	assert_int_equal(supervisor_spawn(sv, &(struct sv_spawn){
			.argv = argv, .seccomp = plan }, &p, err, sizeof(err)),
			FC_IO);
	assert_null(p);
	assert_non_null(strstr(err, "cannot run '/nonexistent/route': No such file"));
	assert_int_equal(supervisor_live(sv), 0);
	inject_seccomp_plan_free(plan);
	supervisor_free(sv);
}

static void test_run_queues_other_events(void **state)
{
	supervisor *sv;
	sv_proc *p;
	struct sv_event ev;
	struct sv_status st;
	char err[256], *argv[4];

	(void)state;
	assert_int_equal(supervisor_new(&sv, err, sizeof(err)), 0);
	p = spawn_mode(sv, "hits", true, 10000, NULL);
	argv_for("exit3", argv);
	/* the helper's wait must not swallow p's failpoint */
	assert_int_equal(supervisor_run(sv, &(struct sv_spawn){ .argv = argv },
					&st, err, sizeof(err)), 0);
	assert_int_equal(st.code, 3);
	next_event(sv, p, &ev);
	assert_int_equal(ev.kind, SV_EV_HIT);
	assert_string_equal(ev.failpoint, "a");
	supervisor_free(sv); /* kills p */
}

/* Fork a supervising process that spawns req (with marker in its own
 * environment too when harness_marked), wait until `marked` processes
 * carry the marker, SIGKILL it: none of them may survive. */
static void sigkill_supervisor(char *marker, const struct sv_spawn *req,
			       int marked, bool harness_marked)
{
	int ready[2];
	pid_t harness;
	char c;

	assert_int_equal(pipe(ready), 0);
	harness = fork();
	assert_true(harness >= 0);
	if (harness == 0) {
		supervisor *sv;
		sv_proc *p;
		char err[256];

		close(ready[0]);
		if (harness_marked)
			putenv(marker);
		if (supervisor_new(&sv, err, sizeof(err)) ||
		    supervisor_spawn(sv, req, &p, err, sizeof(err)))
			_exit(1);
		while (count_marked(marker) < marked)
			usleep(10000);
		if (write(ready[1], "r", 1) != 1)
			_exit(1);
		for (;;)
			pause();
	}
	close(ready[1]);
	assert_int_equal(read(ready[0], &c, 1), 1);
	close(ready[0]);
	assert_true(count_marked(marker) >= marked);
	kill(harness, SIGKILL);
	waitpid(harness, NULL, 0);
	assert_int_equal(wait_unmarked(marker, 2000), 0);
}

/*
 * The supervising process dies by SIGKILL while a route and the route's
 * own child run: the route dies of PDEATHSIG, the grandchild (no PDEATHSIG)
 * only because the watchdog kills the group.
 */
static void test_watchdog(void **state)
{
	char marker[128], *argv[] = { (char *)"sh", (char *)"-c",
				      (char *)"sleep 300 & sleep 300", NULL };
	char *env[2] = { marker, NULL };

	(void)state;
	snprintf(marker, sizeof(marker), "SUPERVISE_TEST_MARK=wd-%d", getpid());
	/* sh, its background sleep and its foreground one */
	sigkill_supervisor(marker, &(struct sv_spawn){ .argv = argv,
			   .env = env }, 3, false);
}

/* --- the fork server ------------------------------------------------------ */

/* Run "describe" exec'd or through the fork server; its output in buf. */
static void describe_via(supervisor *sv, bool fork_server, char *buf,
			 size_t len)
{
	char out[4200], errf[4300], harness[64], *argv[4], err[256];
	char *env[] = { (char *)"SUPERVISE_TEST_X=1", harness, NULL };
	struct sv_event ev;
	sv_proc *p = NULL;
	FILE *f;
	size_t n;

	snprintf(out, sizeof(out), "%s/describe-%d", tmp_dir, fork_server);
	snprintf(errf, sizeof(errf), "%s.err", out);
	snprintf(harness, sizeof(harness), "SUPERVISE_TEST_HARNESS=%d",
		 (int)getpid());
	argv_for("describe", argv);
	assert_int_equal(supervisor_spawn(sv, &(struct sv_spawn){
			.argv = argv, .env = env, .cwd = tmp_dir,
			.stdout_path = out, .stderr_path = errf, .failpoints = true,
			.timeout_ms = 10000, .fork_server = fork_server },
			&p, err, sizeof(err)), 0);
	next_event(sv, p, &ev);
	assert_int_equal(ev.kind, SV_EV_EXIT);
	if (sv_proc_status(p)->code != 0) {
		char cmd[4400];
		snprintf(cmd, sizeof(cmd), "cat %s >&2", errf);
		if (system(cmd)) {
			/* shown */
		}
		fail_msg("describe exited %d", sv_proc_status(p)->code);
	}
	sv_proc_free(p);
	f = fopen(out, "r");
	assert_non_null(f);
	n = fread(buf, 1, len - 1, f);
	buf[n] = '\0';
	fclose(f);
}

/* What an attempt sees is the same exec'd and forked: environment, cwd,
 * fds, process group, parent, signals, rlimits. */
static void test_forksrv_same_as_exec(void **state)
{
	static char viaexec[65536], viaserver[65536];
	supervisor *sv;
	char err[256];

	(void)state;
	assert_int_equal(supervisor_new(&sv, err, sizeof(err)), 0);
	describe_via(sv, false, viaexec, sizeof(viaexec));
	assert_int_equal(supervisor_fork_servers(sv), 0);
	describe_via(sv, true, viaserver, sizeof(viaserver));
	assert_int_equal(supervisor_fork_servers(sv), 1);
	if (strcmp(viaexec, viaserver) != 0) {
		char cmd[9000];
		snprintf(cmd, sizeof(cmd), "diff %s/describe-0 %s/describe-1 >&2",
			 tmp_dir, tmp_dir);
		if (system(cmd)) {
			/* shown */
		}
		supervisor_free(sv);
		fail_msg("an attempt sees a difference through the fork server");
	}
	assert_non_null(strstr(viaserver, "env FENCECERT_FAILPOINT_FD=3\n"));
	assert_non_null(strstr(viaserver, "env SUPERVISE_TEST_X=1\n"));
	assert_null(strstr(viaserver, FORK_SERVER_ENV));
	assert_non_null(strstr(viaserver, "leader 1 parent-is-harness 1\n"));
	assert_non_null(strstr(viaserver, "fd 0\nfd 1\nfd 2\nfd 3\nSig"));
	/* the server is reused */
	describe_via(sv, true, viaserver, sizeof(viaserver));
	assert_string_equal(viaexec, viaserver);
	assert_int_equal(supervisor_fork_servers(sv), 1);
	supervisor_free(sv);
}

static void expect_spawn_error(supervisor *sv, char **argv, const char *msg,
			       size_t servers_left)
{
	sv_proc *p = NULL;
	char err[400];

	assert_int_equal(supervisor_spawn(sv, &(struct sv_spawn){
			.argv = argv, .fork_server = true, .label = "r1" },
			&p, err, sizeof(err)), FC_IO);
	assert_null(p);
	if (!strstr(err, msg))
		fail_msg("error '%s' lacks '%s'", err, msg);
	assert_int_equal(supervisor_fork_servers(sv), servers_left);
	assert_int_equal(supervisor_live(sv), 0);
}

/* A program that is no fork server fails the spawn, naming the route. */
static void test_forksrv_no_hello(void **state)
{
	char *hangs[] = { (char *)"/bin/sh", (char *)"-c", (char *)"sleep 30",
			  NULL };
	char *exits[] = { (char *)"/bin/true", NULL };
	char *wrong[] = { (char *)"/bin/sh", (char *)"-c",
			  (char *)"printf nope >&3; sleep 30", NULL };
	char *missing[] = { (char *)"/nonexistent/route", NULL };
	long long t0 = supervisor_now_ms();
	supervisor *sv;
	char err[256];

	(void)state;
	assert_int_equal(supervisor_new(&sv, err, sizeof(err)), 0);
	supervisor_set_fork_server_timeout(sv, 300);
	expect_spawn_error(sv, hangs, "fork server '/bin/sh' of route 'r1' "
			   "did not say hello within 300 ms", 0);
	assert_true(supervisor_now_ms() - t0 < 10000);
	expect_spawn_error(sv, exits, "fork server '/bin/true' of route 'r1' "
			   "exited before saying hello", 0);
	expect_spawn_error(sv, wrong, "said 'nope' instead of hello", 0);
	expect_spawn_error(sv, missing, "cannot run '/nonexistent/route'", 0);
	supervisor_free(sv);
}

/* A server that died is started again; one that answers garbage is given
 * up on after one restart; "error N" fails the spawn with N. */
static void test_forksrv_restart(void **state)
{
	static const char bogus[] =
		"import socket\n"
		"s = socket.socket(fileno=3)\n"
		"s.send(b'" FORK_SERVER_HELLO "')\n"
		"while s.recv(300000):\n"
		"    s.send(b'%s')\n";
	char script[512], *py[] = { (char *)"python3", (char *)"-c", script,
				    NULL };
	char *killer[] = { (char *)"SUPERVISE_TEST_MODE=kill-server", NULL };
	char *exit3[] = { (char *)"SUPERVISE_TEST_MODE=exit3", NULL };
	supervisor *sv;
	sv_proc *p;
	struct sv_event ev;
	char err[256];

	(void)state;
	assert_int_equal(supervisor_new(&sv, err, sizeof(err)), 0);
	use_forksrv = true;
	p = spawn_mode(sv, "by-env", false, 10000, killer);
	next_event(sv, p, &ev);
	assert_int_equal(sv_proc_status(p)->code, 0);
	sv_proc_free(p);
	/* the server is gone: the next spawn starts another */
	p = spawn_mode(sv, "by-env", false, 10000, exit3);
	next_event(sv, p, &ev);
	assert_int_equal(sv_proc_status(p)->code, 3);
	assert_int_equal(supervisor_fork_servers(sv), 1);
	use_forksrv = false;
	supervisor_free(sv);

	assert_int_equal(supervisor_new(&sv, err, sizeof(err)), 0);
	snprintf(script, sizeof(script), bogus, "bogus");
	expect_spawn_error(sv, py, "fork server 'python3' of route 'r1' died "
			   "or did not answer a spawn request, twice", 0);
	snprintf(script, sizeof(script), bogus, "error 24");
	/* a server that says why it cannot fork stays */
	expect_spawn_error(sv, py, "cannot start 'python3': Too many open files",
			   1);
	supervisor_free(sv);
}

/* Syscall faults work on a forked attempt: the filter comes as BPF in the
 * request and the listener back over the passed socket. */
static void test_forksrv_seccomp(void **state)
{
	char dir[] = "/tmp/fc-sv-fsseccomp.XXXXXX", path[600], var[600];
	char errf[560];
	static const char *const rules[] = { "fsync#2:kill_before",
					     "fsync#1:errno:EIO" };
	char *argv[4], *env[] = { var, NULL }, err[256];
	supervisor *sv;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(var, sizeof(var), "SUPERVISE_TEST_DIR=%s", dir);
	snprintf(path, sizeof(path), "%s/out", dir);
	snprintf(errf, sizeof(errf), "%s/err", dir);
	argv_for("fsyncs", argv);
	assert_int_equal(supervisor_new(&sv, err, sizeof(err)), 0);
	for (int i = 0; i < 2; i++) {
		struct inject_seccomp_plan *plan;
		const struct sv_sysfault *sf;
		struct sv_event ev;
		sv_proc *p = NULL;
		char glob[600];
		size_t n, total;

		snprintf(glob, sizeof(glob), "%s/*", dir);
		assert_int_equal(inject_seccomp_plan_new(&plan), 0);
		assert_int_equal(inject_seccomp_plan_watch(plan, glob), 0);
		assert_int_equal(inject_seccomp_plan_add_rule(plan, rules[i]), 0);
		assert_int_equal(supervisor_spawn(sv, &(struct sv_spawn){
				.argv = argv, .env = env, .seccomp = plan,
				.stderr_path = errf, .timeout_ms = 20000,
				.fork_server = true }, &p, err, sizeof(err)), 0);
		next_event(sv, p, &ev);
		assert_int_equal(ev.kind, SV_EV_EXIT);
		sf = sv_proc_sysfaults(p, &n, &total);
		assert_int_equal(n, 1);
		assert_string_equal(sf[0].syscall, "fsync");
		if (i == 0) {
			assert_int_equal(sv_proc_status(p)->signal, SIGKILL);
			assert_int_equal(sf[0].outcome, INJECT_OUT_KILLED_BEFORE);
		} else {
			if (sv_proc_status(p)->code != 5) {
				snprintf(glob, sizeof(glob), "cat %s >&2", errf);
				if (system(glob)) {
					/* shown */
				}
			}
			assert_int_equal(sv_proc_status(p)->code, 5);
			assert_int_equal(sf[0].outcome, INJECT_OUT_FAILED);
			assert_int_equal(sf[0].error, EIO);
		}
		assert_int_not_equal(access(path, F_OK), 0);
		sv_proc_free(p);
		inject_seccomp_plan_free(plan);
	}
	assert_int_equal(supervisor_fork_servers(sv), 1);
	supervisor_free(sv);
	snprintf(path, sizeof(path), "%s/f", dir);
	unlink(path);
	unlink(errf);
	rmdir(dir);
}

/* SIGKILL the supervising process while its fork server and an attempt
 * run: neither survives.  The marker is in the harness's environment, so
 * in the server's and (a clone of it) the attempt's /proc environ. */
static void test_forksrv_watchdog(void **state)
{
	char marker[128], *argv[4];

	(void)state;
	snprintf(marker, sizeof(marker), "SUPERVISE_TEST_MARK=fswd-%d", getpid());
	argv_for("hang", argv);
	/* the server and the attempt */
	sigkill_supervisor(marker, &(struct sv_spawn){ .argv = argv,
			   .fork_server = true }, 2, true);
}

/* The same through `fencecert certify`: SIGKILL it mid-suite. */
static void test_certify_killed(void **state)
{
	const char *bin = getenv("FENCECERT");
	char marker[128], suite[4200], out[4200];
	FILE *f;
	pid_t pid;

	(void)state;
	if (!bin || access(bin, X_OK) != 0)
		bin = "build/fencecert";
	if (access(bin, X_OK) != 0) {
		print_message("skipped: no fencecert binary ($FENCECERT)\n");
		skip();
	}
	snprintf(marker, sizeof(marker), "certify-%d-%ld", getpid(),
		 (long)time(NULL));
	snprintf(suite, sizeof(suite), "%s/suite.yaml", tmp_dir);
	snprintf(out, sizeof(out), "%s/out", tmp_dir);
	f = fopen(suite, "w");
	assert_non_null(f);
	fprintf(f, "version: 1\nsuite: orphans\nroutes:\n"
		"  - name: sleeper\n"
		"    command: [sh, -c, 'sleep 300 & sleep 300']\n"
		"    journal: 'sqlite:{dir}/j.db'\n"
		"    target: 'sqlite:{dir}/t.db'\n"
		"    observe: {sql: 'SELECT 1, 1'}\n"
		"    env: {SUPERVISE_TEST_MARK: '%s'}\n"
		"scenarios:\n  - name: a\n  - name: b\n  - name: c\n", marker);
	fclose(f);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);
		dup2(null, 1);
		dup2(null, 2);
		execl(bin, bin, "certify", suite, "--out", out, "--work-dir",
		      tmp_dir, "--jobs", "2", (char *)NULL);
		_exit(127);
	}
	/* wait until routes (and their children) run */
	for (int i = 0; i < 500 && count_marked(marker) < 4; i++)
		usleep(10000);
	assert_true(count_marked(marker) >= 4);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	assert_int_equal(wait_unmarked(marker, 2000), 0);
}


/* The same with a fork server route: SIGKILL `fencecert certify` while
 * attempts forked by the servers hang; no server, worker or attempt is
 * left (the marker is in certify's environment, so in all of them). */
static void test_certify_killed_forksrv(void **state)
{
	const char *bin = getenv("FENCECERT");
	char marker[128], suite[4200], out[4200], notes[4200];
	int seen = 0;
	FILE *f;
	pid_t pid;

	(void)state;
	if (!bin || access(bin, X_OK) != 0)
		bin = "build/fencecert";
	if (access(bin, X_OK) != 0) {
		print_message("skipped: no fencecert binary ($FENCECERT)\n");
		skip();
	}
	snprintf(marker, sizeof(marker), "SUPERVISE_TEST_MARK=certify-fs-%d",
		 getpid());
	snprintf(suite, sizeof(suite), "%s/suite-fs.yaml", tmp_dir);
	snprintf(out, sizeof(out), "%s/out-fs", tmp_dir);
	snprintf(notes, sizeof(notes), "%s/notes", tmp_dir);
	assert_int_equal(mkdir(notes, 0755), 0);
	f = fopen(suite, "w");
	assert_non_null(f);
	fprintf(f, "version: 1\nsuite: orphans\nroutes:\n"
		"  - name: sleeper\n"
		"    command: ['%s', child, hang-noted]\n"
		"    fork_server: true\n"
		"    journal: 'sqlite:{dir}/j.db'\n"
		"    target: 'sqlite:{dir}/t.db'\n"
		"    observe: {sql: 'SELECT 1, 1'}\n"
		"    env: {SUPERVISE_TEST_DIR: '%s'}\n"
		"scenarios:\n  - name: a\n  - name: b\n  - name: c\n",
		self_exe, notes);
	fclose(f);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);
		dup2(null, 1);
		dup2(null, 2);
		putenv(marker);
		execl(bin, bin, "certify", suite, "--out", out, "--work-dir",
		      tmp_dir, "--jobs", "2", (char *)NULL);
		_exit(127);
	}
	/* wait until both workers' attempts run (up to 60 s: a sanitized
	 * certify starting two workers and their servers on a loaded machine
	 * took longer than 10 s) */
	for (int i = 0; i < 6000 && seen < 2; i++) {
		DIR *d = opendir(notes);
		struct dirent *e;

		seen = 0;
		while (d && (e = readdir(d)))
			if (e->d_name[0] != '.') {
				/* "PID-SERVERPID": forked by a server */
				assert_true(atoi(strchr(e->d_name, '-') + 1) > 0);
				seen++;
			}
		if (d)
			closedir(d);
		usleep(10000);
	}
	assert_int_equal(seen, 2);
	assert_true(count_marked(marker) >= 4);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	assert_int_equal(wait_unmarked(marker, 2000), 0);
}

static int teardown_dir(void **state)
{
	char cmd[4200];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp_dir);
	return system(cmd) == 0 ? 0 : -1;
}

static int forksrv_on(void **state)
{
	(void)state;
	use_forksrv = true;
	return 0;
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exit_and_signal),
		cmocka_unit_test(test_failpoint_answers),
		cmocka_unit_test(test_failpoint_passes),
		cmocka_unit_test(test_pause_resume_kill),
		cmocka_unit_test(test_timeout),
		cmocka_unit_test(test_group_killed_after_leader),
		cmocka_unit_test(test_exec_failure),
		cmocka_unit_test(test_seccomp_faults),
		cmocka_unit_test(test_seccomp_exec_failure),
		cmocka_unit_test(test_run_queues_other_events),
		cmocka_unit_test(test_watchdog),
		cmocka_unit_test(test_certify_killed),
		cmocka_unit_test(test_certify_killed_forksrv),
		cmocka_unit_test(test_forksrv_same_as_exec),
		cmocka_unit_test(test_forksrv_no_hello),
		cmocka_unit_test(test_forksrv_restart),
		cmocka_unit_test(test_forksrv_seccomp),
		cmocka_unit_test(test_forksrv_watchdog),
	};
	/* the same behaviours, every process started by a fork server */
	const struct CMUnitTest through_server[] = {
		cmocka_unit_test(test_exit_and_signal),
		cmocka_unit_test(test_failpoint_answers),
		cmocka_unit_test(test_failpoint_passes),
		cmocka_unit_test(test_pause_resume_kill),
		cmocka_unit_test(test_timeout),
		cmocka_unit_test(test_group_killed_after_leader),
		cmocka_unit_test(test_run_queues_other_events),
	};
	ssize_t n;
	int failed;

	/* returns at once, or in each process a fork server spawns */
	fork_server_serve(&argc, &argv, NULL);
	if (argc == 3 && strcmp(argv[1], "child") == 0)
		return child_main(argv[2]);
	n = readlink("/proc/self/exe", self_exe, sizeof(self_exe) - 1);
	if (n <= 0)
		return 1;
	self_exe[n] = '\0';
	if (!mkdtemp(tmp_dir))
		return 1;
	failed = cmocka_run_group_tests_name("exec", tests, NULL, NULL);
	failed += cmocka_run_group_tests_name("fork server", through_server,
					      forksrv_on, teardown_dir);
	return failed;
}
