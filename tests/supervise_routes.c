/*
 * supervise_routes.c -- see supervise_routes.h.
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

#include "common/clock.h"
#include "routes/failpoint.h"

#include "harness/proc/supervise.h"
#include "routes/fork_server.h"
#include "tests/supervise_routes.h"

char svt_self_exe[4096];
bool svt_use_forksrv;
char svt_tmp_dir[] = "/tmp/fc-supervise-XXXXXX";

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
	/* contained: pid 2 of its namespace, under its init, in its group */
	printf("pid %d parent %d group %d\n", (int)getpid(), (int)getppid(),
	       (int)getpgrp());
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
		    strncmp(line, "NoNewPrivs", 10) == 0 ||
		    strncmp(line, "Cpus_allowed_list", 17) == 0)
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

/* Sleep SUPERVISE_TEST_DELAY_MS, then append "late" to
 * $SUPERVISE_TEST_DIR/late: the duplicate write of a route's leftover. */
static int late_write(void)
{
	const char *delay = getenv("SUPERVISE_TEST_DELAY_MS");
	long long ms = delay ? atoll(delay) : 1000;
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };
	char path[4200];
	int fd;

	nanosleep(&ts, NULL);
	snprintf(path, sizeof(path), "%s/late", getenv("SUPERVISE_TEST_DIR"));
	fd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0644);
	if (fd < 0 || write(fd, "late\n", 5) != 5)
		return 1;
	close(fd);
	return 0;
}

/*
 * Leave a writer behind and exit 0: a double fork, the grandchild in a
 * session of its own (setsid), exec'd as `sh -c 'sleep; echo late'` with
 * $SUPERVISE_TEST_MARK as its $0, so /proc shows the marker in its
 * argv and environment.  Returns once the writer runs (it creates
 * $SUPERVISE_TEST_DIR/ready), so it is alive when the route ends.
 */
static int leave_writer(void)
{
	const char *dir = getenv("SUPERVISE_TEST_DIR");
	const char *delay = getenv("SUPERVISE_TEST_DELAY_MS");
	const char *mark = getenv("SUPERVISE_TEST_MARK");
	char script[9000], ready[4200];
	pid_t pid;
	int status;

	snprintf(ready, sizeof(ready), "%s/ready", dir);
	snprintf(script, sizeof(script), ": > '%s'; sleep %.3f; "
		 "echo late >> '%s/late'", ready,
		 (delay ? atoll(delay) : 1000) / 1000.0, dir);
	unlink(ready);
	pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0) {
		setsid();
		if (fork() == 0) {
			execl("/bin/sh", "sh", "-c", script,
			      mark ? mark : "writer", (char *)NULL);
			_exit(127);
		}
		_exit(0);
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return 2;
	for (int i = 0; i < 5000 && access(ready, F_OK) != 0; i++)
		usleep(1000);
	return access(ready, F_OK) == 0 ? 0 : 3;
}

static int svt_child_main(const char *mode)
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
		return svt_child_main(getenv("SUPERVISE_TEST_MODE"));
	if (strcmp(mode, "describe") == 0)
		return describe();
	if (strcmp(mode, "kill-server") == 0)
		return fork_server_pid() > 0 && kill(fork_server_pid(), SIGKILL) == 0 ?
			0 : 1;
	if (strcmp(mode, "fsyncs") == 0)
		return fsyncs(getenv("SUPERVISE_TEST_DIR"));
	if (strcmp(mode, "kill-init") == 0) {
		/* try to end the init (and with it the report of our end) */
		kill(1, SIGKILL);
		kill(getppid(), SIGKILL);
		kill(0, SIGKILL); /* our group: the init's too */
		return 5;
	}
	if (strcmp(mode, "server-pid") == 0) {
		printf("%d\n", (int)fork_server_pid());
		return 0;
	}
	if (strcmp(mode, "leave-writer") == 0)
		return leave_writer();
	if (strcmp(mode, "daemon-writer") == 0) {
		/* daemon(): the route's process exits 0 at once, its child
		 * carries on in a session of its own */
		if (daemon(1, 1) < 0)
			return 1;
		return late_write();
	}
	if (strcmp(mode, "writer-then-hit") == 0) {
		/* a writer left behind, then a failpoint (the zombie case) */
		int rc = leave_writer();

		if (rc || ask(fd, "a") != 'c')
			return rc ? rc : 11;
		return 0;
	}
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

char *svt_argv_for(const char *mode, char **argv)
{
	argv[0] = svt_self_exe;
	argv[1] = (char *)"child";
	argv[2] = (char *)mode;
	argv[3] = NULL;
	return argv[0];
}

sv_proc *svt_spawn_mode(supervisor *sv, const char *mode, bool fp,
			   long long timeout, char **env)
{
	char *argv[4];
	sv_proc *p = NULL;
	char err[256];

	svt_argv_for(mode, argv);
	assert_int_equal(supervisor_spawn(sv, &(struct sv_spawn){
				.argv = argv, .env = env, .failpoints = fp,
				.timeout_ms = timeout, .fork_server = svt_use_forksrv },
				&p, err, sizeof(err)), 0);
	assert_non_null(p);
	return p;
}

/* Wait for the next event of p (with a bound so a bug cannot hang);
 * events of other processes are dropped, so use it with one live process
 * or where the others' events do not matter. */
void svt_next_event(supervisor *sv, sv_proc *p, struct sv_event *ev)
{
	long long until = clock_mono_ms() + 20000;

	for (;;) {
		assert_int_equal(supervisor_wait(sv, until, ev), 0);
		assert_int_not_equal(ev->kind, SV_EV_NONE);
		if (ev->proc == p)
			return;
	}
}

char svt_proc_state(pid_t pid)
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
int svt_count_marked(const char *needle)
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
		if (svt_proc_state(atoi(e->d_name)) == 'Z')
			continue;
		if (memmem(buf, len, needle, strlen(needle)))
			n++;
	}
	closedir(d);
	return n;
}

int svt_wait_unmarked(const char *needle, long long ms)
{
	long long until = clock_mono_ms() + ms;
	int n;

	while ((n = svt_count_marked(needle)) && clock_mono_ms() < until) {
		struct timespec ts = { 0, 20 * 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
	return n;
}


/* Fork a supervising process that spawns req (with marker in its own
 * environment too when harness_marked), wait until `marked` processes
 * carry the marker, SIGKILL it: none of them may survive. */
void svt_sigkill_supervisor(char *marker, const struct sv_spawn *req,
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
		static const char *const pass[] = { "SUPERVISE_TEST_MARK",
						    NULL };

		if (harness_marked)
			putenv(marker);
		/* the marker reaches what the harness starts only by name */
		if (supervisor_new(&sv, err, sizeof(err)) ||
		    (harness_marked &&
		     supervisor_pass_env(sv, pass, err, sizeof(err))) ||
		    supervisor_spawn(sv, req, &p, err, sizeof(err)))
			_exit(1);
		while (svt_count_marked(marker) < marked)
			usleep(10000);
		if (write(ready[1], "r", 1) != 1)
			_exit(1);
		for (;;)
			pause();
	}
	close(ready[1]);
	assert_int_equal(read(ready[0], &c, 1), 1);
	close(ready[0]);
	assert_true(svt_count_marked(marker) >= marked);
	kill(harness, SIGKILL);
	waitpid(harness, NULL, 0);
	assert_int_equal(svt_wait_unmarked(marker, 2000), 0);
}

int svt_teardown_dir(void **state)
{
	char cmd[4200];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", svt_tmp_dir);
	return system(cmd) == 0 ? 0 : -1;
}

int svt_forksrv_on(void **state)
{
	(void)state;
	svt_use_forksrv = true;
	return 0;
}


const char *svt_fencecert(void)
{
	const char *bin = getenv("FENCECERT");

	if (!bin || access(bin, X_OK) != 0)
		bin = "build/fencecert";
	if (access(bin, X_OK) != 0) {
		print_message("skipped: no fencecert binary ($FENCECERT)\n");
		skip();
	}
	return bin;
}

pid_t svt_certify_bg(const char *bin, const char *suite, const char *out,
		     char *env)
{
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);

		dup2(null, 1);
		dup2(null, 2);
		if (env) {
			/* certify passes it on to its routes by name only */
			char name[128];

			snprintf(name, sizeof(name), "%.*s",
				 (int)strcspn(env, "="), env);
			putenv(env);
			execl(bin, bin, "certify", suite, "--out", out,
			      "--work-dir", svt_tmp_dir, "--jobs", "2",
			      "--pass-env", name, (char *)NULL);
		}
		execl(bin, bin, "certify", suite, "--out", out, "--work-dir",
		      svt_tmp_dir, "--jobs", "2", (char *)NULL);
		_exit(127);
	}
	return pid;
}

void svt_kill_leaves_none(pid_t pid, const char *marker, int marked)
{
	assert_true(svt_count_marked(marker) >= marked);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	assert_int_equal(svt_wait_unmarked(marker, 10000), 0);
}

bool svt_start(int argc, char **argv, int *status)
{
	ssize_t n;

	if (argc == 3 && strcmp(argv[1], "child") == 0) {
		*status = svt_child_main(argv[2]);
		return true;
	}
	*status = 1;
	n = readlink("/proc/self/exe", svt_self_exe, sizeof(svt_self_exe) - 1);
	if (n <= 0)
		return true;
	svt_self_exe[n] = '\0';
	if (!mkdtemp(svt_tmp_dir))
		return true;
	return false;
}
