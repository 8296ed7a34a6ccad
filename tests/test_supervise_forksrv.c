/*
 * test_supervise_forksrv.c -- the supervisor's fork servers
 * (harness/proc/supervise_forksrv.c, routes/fork_server.c) with real processes:
 * a child started by a server sees what an exec'd one sees, bad servers
 * and requests are errors, a dead server is restarted, seccomp plans and
 * the watchdog work through it, and killing `fencecert certify` leaves no
 * server, worker or attempt behind.
 *
 * The routes are this binary itself with "child MODE"
 * (tests/supervise_routes.c), and it is a fork server too.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
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

#include "common/protocol.h"
#include "harness/proc/supervise.h"
#include "routes/fork_server.h"
#include "tests/supervise_routes.h"

/* --- the fork server ------------------------------------------------------ */

/* Run "describe" exec'd or through the fork server; its output in buf. */
static void describe_via(supervisor *sv, bool fork_server, char *buf,
			 size_t len)
{
	char out[4200], errf[4300], *argv[4], err[256];
	char *env[] = { (char *)"SUPERVISE_TEST_X=1", NULL };
	struct sv_event ev;
	sv_proc *p = NULL;
	FILE *f;
	size_t n;

	snprintf(out, sizeof(out), "%s/describe-%d", svt_tmp_dir, fork_server);
	snprintf(errf, sizeof(errf), "%s.err", out);
	svt_argv_for("describe", argv);
	assert_int_equal(supervisor_spawn(sv, &(struct sv_spawn){
			.argv = argv, .env = env, .cwd = svt_tmp_dir,
			.stdout_path = out, .stderr_path = errf, .failpoints = true,
			.timeout_ms = 10000, .fork_server = fork_server },
			&p, err, sizeof(err)), 0);
	svt_next_event(sv, p, &ev);
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
 * fds, process group, parent, signals, rlimits.  Its environment is the
 * request's and the allow-list's, never the harness's secret or anything
 * else of the harness's (harness/proc/child_env.h). */
static void test_forksrv_same_as_exec(void **state)
{
	static char viaexec[65536], viaserver[65536];
	supervisor *sv;
	char err[256];

	(void)state;
	setenv("FENCECERT_SIGNING_KEY", "forksrv-secret", 1);
	setenv("SUPERVISE_TEST_NOT_ALLOWED", "1", 1);
	setenv("LC_SUPERVISE_TEST", "allowed", 1);
	assert_int_equal(supervisor_new(&sv, err, sizeof(err)), 0);
	describe_via(sv, false, viaexec, sizeof(viaexec));
	assert_int_equal(supervisor_fork_servers(sv), 0);
	describe_via(sv, true, viaserver, sizeof(viaserver));
	assert_int_equal(supervisor_fork_servers(sv), 1);
	if (strcmp(viaexec, viaserver) != 0) {
		char cmd[9000];
		snprintf(cmd, sizeof(cmd), "diff %s/describe-0 %s/describe-1 >&2",
			 svt_tmp_dir, svt_tmp_dir);
		if (system(cmd)) {
			/* shown */
		}
		supervisor_free(sv);
		fail_msg("an attempt sees a difference through the fork server");
	}
	assert_non_null(strstr(viaserver, "env FENCECERT_FAILPOINT_FD=3\n"));
	assert_non_null(strstr(viaserver, "env SUPERVISE_TEST_X=1\n"));
	assert_null(strstr(viaserver, PROTO_ENV_FORK_SERVER_FD));
	/* pid 2 of a namespace of its own, under its init, in its group */
	assert_non_null(strstr(viaserver, "pid 2 parent 1 group 1\n"));
	assert_null(strstr(viaserver, "FENCECERT_SIGNING_KEY"));
	assert_null(strstr(viaserver, "forksrv-secret"));
	assert_null(strstr(viaserver, "SUPERVISE_TEST_NOT_ALLOWED"));
	assert_non_null(strstr(viaserver, "env LC_SUPERVISE_TEST=allowed\n"));
	assert_non_null(strstr(viaserver, "fd 0\nfd 1\nfd 2\nfd 3\nSig"));
	/* the server is reused */
	describe_via(sv, true, viaserver, sizeof(viaserver));
	assert_string_equal(viaexec, viaserver);
	assert_int_equal(supervisor_fork_servers(sv), 1);
	supervisor_free(sv);
	unsetenv("FENCECERT_SIGNING_KEY");
	unsetenv("SUPERVISE_TEST_NOT_ALLOWED");
	unsetenv("LC_SUPERVISE_TEST");
}

/* The server runs where its supervisor runs (supervise_forksrv.c
 * invariant 5): started on every CPU we may use, it starts the next
 * attempt on the one CPU we moved to since, and on all of them again once
 * we are back. */
static void test_forksrv_follows_cpus(void **state)
{
	static char before[65536], moved[65536], back[65536];
	char err[256], want[64];
	cpu_set_t all, one;
	supervisor *sv;
	int last = -1;

	(void)state;
	assert_int_equal(sched_getaffinity(0, sizeof(all), &all), 0);
	if (CPU_COUNT(&all) < 2)
		skip(); /* nothing to move to */
	for (int c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &all))
			last = c;
	assert_int_equal(supervisor_new(&sv, err, sizeof(err)), 0);
	describe_via(sv, true, before, sizeof(before));
	assert_non_null(strstr(before, "Cpus_allowed_list:\t"));
	CPU_ZERO(&one);
	CPU_SET(last, &one);
	assert_int_equal(sched_setaffinity(0, sizeof(one), &one), 0);
	describe_via(sv, true, moved, sizeof(moved));
	assert_int_equal(sched_setaffinity(0, sizeof(all), &all), 0);
	describe_via(sv, true, back, sizeof(back));
	assert_int_equal(supervisor_fork_servers(sv), 1); /* the same one */
	supervisor_free(sv);
	snprintf(want, sizeof(want), "Cpus_allowed_list:\t%d\n", last);
	if (!strstr(moved, want))
		fail_msg("the attempt after the move does not run on CPU %d "
			 "only:\n%s", last, strstr(moved, "Cpus_allowed_list"));
	assert_string_equal(before, back);
	assert_null(strstr(before, want));
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
	long long t0 = clock_mono_ms();
	supervisor *sv;
	char err[256];

	(void)state;
	assert_int_equal(supervisor_new(&sv, err, sizeof(err)), 0);
	supervisor_set_fork_server_timeout(sv, 300);
	expect_spawn_error(sv, hangs, "fork server '/bin/sh' of route 'r1' "
			   "did not say hello within 300 ms", 0);
	assert_true(clock_mono_ms() - t0 < 10000);
	expect_spawn_error(sv, exits, "fork server '/bin/true' of route 'r1' "
			   "exited before saying hello", 0);
	expect_spawn_error(sv, wrong, "said 'nope' instead of hello", 0);
	expect_spawn_error(sv, missing, "cannot run '/nonexistent/route'", 0);
	supervisor_free(sv);
}

/* The pid of the fork server that spawns "server-pid". */
static pid_t server_pid(supervisor *sv)
{
	char out[4200], *argv[4], err[256], buf[32] = "";
	struct sv_event ev;
	sv_proc *p = NULL;
	FILE *f;

	snprintf(out, sizeof(out), "%s/server-pid", svt_tmp_dir);
	svt_argv_for("by-env", argv);
	assert_int_equal(supervisor_spawn(sv, &(struct sv_spawn){
			.argv = argv, .stdout_path = out, .timeout_ms = 10000,
			.env = (char *[]){ (char *)"SUPERVISE_TEST_MODE=server-pid",
					   NULL },
			.fork_server = true }, &p, err, sizeof(err)), 0);
	svt_next_event(sv, p, &ev);
	assert_int_equal(sv_proc_status(p)->code, 0);
	sv_proc_free(p);
	f = fopen(out, "r");
	assert_non_null(f);
	assert_non_null(fgets(buf, sizeof(buf), f));
	fclose(f);
	assert_true(atoi(buf) > 0);
	return (pid_t)atoi(buf);
}

/* A server that died is started again; one that answers garbage is given
 * up on after one restart; "error N" fails the spawn with N.  An attempt
 * cannot kill its server: the server is outside the attempt's PID
 * namespace, so the pid it knows names nothing in there. */
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
	pid_t server;

	(void)state;
	assert_int_equal(supervisor_new(&sv, err, sizeof(err)), 0);
	svt_use_forksrv = true;
	server = server_pid(sv);
	p = svt_spawn_mode(sv, "by-env", false, 10000, killer);
	svt_next_event(sv, p, &ev);
	assert_int_equal(sv_proc_status(p)->code, 1); /* its kill failed */
	sv_proc_free(p);
	assert_int_equal(server_pid(sv), server);
	assert_int_equal(kill(server, SIGKILL), 0);
	/* the server is gone: the next spawn starts another */
	p = svt_spawn_mode(sv, "by-env", false, 10000, exit3);
	svt_next_event(sv, p, &ev);
	assert_int_equal(sv_proc_status(p)->code, 3);
	assert_int_equal(supervisor_fork_servers(sv), 1);
	assert_int_not_equal(server_pid(sv), server);
	svt_use_forksrv = false;
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
	svt_argv_for("fsyncs", argv);
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
		svt_next_event(sv, p, &ev);
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
	svt_argv_for("hang", argv);
	/* the server and the attempt */
	svt_sigkill_supervisor(marker, &(struct sv_spawn){ .argv = argv,
			   .fork_server = true }, 2, true);
}


/* The same with a fork server route: SIGKILL `fencecert certify` while
 * attempts forked by the servers hang; no server, worker or attempt is
 * left (the marker is in certify's environment, so in all of them). */
static void test_certify_killed_forksrv(void **state)
{
	const char *bin;
	char marker[128], suite[4200], out[4200], notes[4200];
	int seen = 0;
	FILE *f;
	pid_t pid;

	(void)state;
	bin = svt_fencecert();
	snprintf(marker, sizeof(marker), "SUPERVISE_TEST_MARK=certify-fs-%d",
		 getpid());
	snprintf(suite, sizeof(suite), "%s/suite-fs.yaml", svt_tmp_dir);
	snprintf(out, sizeof(out), "%s/out-fs", svt_tmp_dir);
	snprintf(notes, sizeof(notes), "%s/notes", svt_tmp_dir);
	assert_int_equal(mkdir(notes, 0755), 0);
	/* as root a fork server's attempts run as their worker's uid: a
	 * writable: dir must be writable to them */
	assert_int_equal(chmod(notes, 01777), 0);
	assert_int_equal(chmod(svt_tmp_dir, 0711), 0);
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
		"    writable: ['%s']\n" /* sandboxed: the notes dir */
		"scenarios:\n  - name: a\n  - name: b\n  - name: c\n",
		svt_self_exe, notes, notes);
	fclose(f);
	pid = svt_certify_bg(bin, suite, out, marker);
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
	svt_kill_leaves_none(pid, marker, 4);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_forksrv_same_as_exec),
		cmocka_unit_test(test_forksrv_follows_cpus),
		cmocka_unit_test(test_forksrv_no_hello),
		cmocka_unit_test(test_forksrv_restart),
		cmocka_unit_test(test_forksrv_seccomp),
		cmocka_unit_test(test_forksrv_watchdog),
		cmocka_unit_test(test_certify_killed_forksrv),
	};
	int status;

	/* returns at once, or in each process a fork server spawns */
	fork_server_serve(&argc, &argv, NULL);
	if (svt_start(argc, argv, &status))
		return status;
	return cmocka_run_group_tests_name("fork server", tests, NULL,
					   svt_teardown_dir);
}
