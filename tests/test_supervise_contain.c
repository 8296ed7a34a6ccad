/*
 * test_supervise_contain.c -- everything an attempt starts ends with the
 * attempt (harness/proc/supervise.h, guarantee 7; common/child_setup.h).
 *
 * The routes are this binary with "child MODE" (tests/supervise_routes.c):
 * a route that leaves a writer behind (double fork + setsid, or daemon())
 * which appends "late" to a file after a delay, then exits 0.  Contained,
 * the writer is killed when the route ends, the supervisor says so
 * (descendants_killed), no process carrying the test's marker survives
 * (/proc is scanned) and the file never gets the late line, also after
 * waiting longer than the delay.  The same through the fork server, and
 * through `fencecert certify` with a fork-server route.  A paused
 * attempt's namespace lives until it is resumed and ends.  Without the
 * privilege for a PID namespace a user namespace makes one; where neither
 * can be made, a spawn is refused unless uncontained runs were allowed,
 * and `fencecert certify` refuses without --uncontained.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/sched.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <seccomp.h>

#include "common/clock.h"
#include "harness/proc/supervise.h"
#include "routes/fork_server.h"
#include "tests/supervise_routes.h"

#define DELAY_MS 800

/* The route's environment: its scratch dir, the writer's delay, the
 * marker; strings live in *e. */
struct env {
	char dir[4200], delay[64], mark[128];
	char *v[4];
};

static void env_init(struct env *e, const char *tag)
{
	snprintf(e->dir, sizeof(e->dir), "SUPERVISE_TEST_DIR=%s/%s",
		 svt_tmp_dir, tag);
	mkdir(e->dir + strlen("SUPERVISE_TEST_DIR="), 0777);
	snprintf(e->delay, sizeof(e->delay), "SUPERVISE_TEST_DELAY_MS=%d",
		 DELAY_MS);
	snprintf(e->mark, sizeof(e->mark), "SUPERVISE_TEST_MARK=contain-%s-%d",
		 tag, (int)getpid());
	e->v[0] = e->dir;
	e->v[1] = e->delay;
	e->v[2] = e->mark;
	e->v[3] = NULL;
}

/* The marker as /proc shows it: in argv ($0 of the writer) and env. */
static const char *marker(const struct env *e)
{
	return strchr(e->mark, '=') + 1;
}

static bool late_landed(const struct env *e)
{
	char path[4300];

	snprintf(path, sizeof(path), "%s/late",
		 e->dir + strlen("SUPERVISE_TEST_DIR="));
	return access(path, F_OK) == 0;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* Run `mode`, which leaves a writer and exits 0: the writer is killed
 * when it ends, counted, and its late write never lands. */
static void leftover_killed(const char *mode)
{
	supervisor *sv;
	sv_proc *p;
	struct sv_event ev;
	struct env e;
	char err[256];

	env_init(&e, mode);
	assert_int_equal(supervisor_new(&sv, err, sizeof(err)), 0);
	p = svt_spawn_mode(sv, mode, false, 20000, e.v);
	svt_next_event(sv, p, &ev);
	assert_int_equal(ev.kind, SV_EV_EXIT);
	assert_int_equal(sv_proc_status(p)->end, SV_EXITED);
	assert_int_equal(sv_proc_status(p)->code, 0);
	assert_true(sv_proc_status(p)->contained);
	if (sv_proc_status(p)->descendants_killed < 1)
		fail_msg("%s: descendants_killed %d, expected the writer",
			 mode, sv_proc_status(p)->descendants_killed);
	/* gone already: the init reaped what it killed before it ended.
	 * (A fork server's clone shows the server's /proc environ, so a
	 * daemon() of it is looked for by the late line only.) */
	if (!svt_use_forksrv || strcmp(mode, "leave-writer") == 0)
		assert_int_equal(svt_count_marked(marker(&e)), 0);
	sv_proc_free(p);
	supervisor_free(sv);
	sleep_ms(DELAY_MS + 700);
	assert_false(late_landed(&e));
}

static void test_setsid_writer_killed(void **state)
{
	(void)state;
	leftover_killed("leave-writer");
}

static void test_daemon_killed(void **state)
{
	(void)state;
	leftover_killed("daemon-writer");
}

/* The route cannot end its init (nor forge its end): the kernel ignores
 * what the route sends it, and its own group kill only kills the route. */
static void test_init_survives_route(void **state)
{
	supervisor *sv;
	sv_proc *p;
	struct sv_event ev;
	char err[256];

	(void)state;
	assert_int_equal(supervisor_new(&sv, err, sizeof(err)), 0);
	p = svt_spawn_mode(sv, "kill-init", false, 20000, NULL);
	svt_next_event(sv, p, &ev);
	assert_int_equal(ev.kind, SV_EV_EXIT);
	assert_int_equal(sv_proc_status(p)->end, SV_SIGNALED);
	assert_int_equal(sv_proc_status(p)->signal, SIGKILL);
	assert_false(sv_proc_status(p)->killed);
	assert_int_equal(sv_proc_status(p)->descendants_killed, 0);
	supervisor_free(sv);
}

/* A paused attempt (a zombie worker) keeps its namespace, writer
 * included, until it is resumed and ends; one killed while paused takes
 * its namespace with it (uncounted: -1). */
static void test_paused_namespace_lives(void **state)
{
	supervisor *sv;
	sv_proc *p;
	struct sv_event ev;
	struct env e;
	char err[256];

	(void)state;
	env_init(&e, "paused");
	snprintf(e.delay, sizeof(e.delay), "SUPERVISE_TEST_DELAY_MS=60000");
	assert_int_equal(supervisor_new(&sv, err, sizeof(err)), 0);
	for (int kill_it = 0; kill_it < 2; kill_it++) {
		p = svt_spawn_mode(sv, "writer-then-hit", true, 20000, e.v);
		svt_next_event(sv, p, &ev);
		assert_int_equal(ev.kind, SV_EV_HIT);
		assert_int_equal(sv_proc_pause(p), 0);
		sleep_ms(100);
		/* the writer (and, exec'd, the route) live on, stopped or not */
		assert_true(svt_count_marked(marker(&e)) >= 1);
		if (kill_it) {
			assert_int_equal(sv_proc_kill(p), 0);
		} else {
			assert_int_equal(sv_proc_answer(p, 'c'), 0);
			assert_int_equal(sv_proc_resume(p), 0);
		}
		svt_next_event(sv, p, &ev);
		assert_int_equal(ev.kind, SV_EV_EXIT);
		assert_int_equal(svt_count_marked(marker(&e)), 0);
		if (kill_it) {
			assert_int_equal(sv_proc_status(p)->signal, SIGKILL);
			assert_int_equal(sv_proc_status(p)->descendants_killed, -1);
		} else {
			assert_int_equal(sv_proc_status(p)->code, 0);
			assert_true(sv_proc_status(p)->descendants_killed >= 1);
		}
		sv_proc_free(p);
	}
	supervisor_free(sv);
}

/* `fencecert certify` with a fork-server route that leaves a writer in
 * every attempt: after the run no marked process is left, and the late
 * writes never land. */
static void test_certify_forksrv_writer(void **state)
{
	const char *bin;
	char suite[4600], out[4600], cmd[9600], dir[4500];
	struct env e;
	FILE *f;
	int rc;

	(void)state;
	bin = svt_fencecert();
	env_init(&e, "certify");
	snprintf(dir, sizeof(dir), "%s", e.dir + strlen("SUPERVISE_TEST_DIR="));
	snprintf(suite, sizeof(suite), "%s/suite.yaml", dir);
	snprintf(out, sizeof(out), "%s/out", dir);
	f = fopen(suite, "w");
	assert_non_null(f);
	fprintf(f, "version: 1\nsuite: contained\nroutes:\n"
		"  - name: writer\n"
		"    command: ['%s', child, leave-writer]\n"
		"    fork_server: true\n"
		"    journal: 'sqlite:{dir}/j.db'\n"
		"    target: 'sqlite:{dir}/t.db'\n"
		"    observe: {sql: 'SELECT 1, 1'}\n"
		"    env: {SUPERVISE_TEST_DIR: '%s', SUPERVISE_TEST_DELAY_MS: '%d',"
		" SUPERVISE_TEST_MARK: '%s'}\n"
		"scenarios:\n  - name: a\n",
		svt_self_exe, dir, DELAY_MS, marker(&e));
	fclose(f);
	snprintf(cmd, sizeof(cmd), "'%s' certify '%s' --out '%s' --work-dir "
		 "'%s' --jobs 1 --quiet >/dev/null 2>&1", bin, suite, out,
		 svt_tmp_dir);
	rc = system(cmd);
	assert_true(WIFEXITED(rc));
	assert_int_not_equal(WEXITSTATUS(rc), 2);
	assert_int_equal(svt_count_marked(marker(&e)), 0);
	sleep_ms(DELAY_MS + 700);
	assert_false(late_landed(&e));
}

/* --- without the privilege for a PID namespace ---------------------------- */

/* Run this binary again with `mode` in a child prepared by `prepare`;
 * its exit status (77: skipped). */
static int run_again(const char *mode, void (*prepare)(void))
{
	pid_t pid = fork();
	int status;

	assert_true(pid >= 0);
	if (pid == 0) {
		prepare();
		execl(svt_self_exe, svt_self_exe, mode, svt_tmp_dir,
		      (char *)NULL);
		_exit(126);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	return WEXITSTATUS(status);
}

static void become_nobody(void)
{
	if (setgroups(0, NULL) < 0 || setresgid(65534, 65534, 65534) < 0 ||
	    setresuid(65534, 65534, 65534) < 0)
		_exit(125);
}

/* The kernel refuses new PID namespaces (and unshare) to this process
 * and its children, as to a harness without the privilege in a sandbox
 * that forbids user namespaces. */
static void forbid_namespaces(void)
{
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);

	if (!ctx ||
	    seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1,
			     SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_NEWPID,
				     CLONE_NEWPID)) < 0 ||
	    seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3),
			     0) < 0 ||
	    seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(unshare),
			     0) < 0 ||
	    seccomp_load(ctx) < 0)
		_exit(125);
	seccomp_release(ctx);
}

/* Spawn a writer-leaving shell route; 0 when its end is as contained
 * (or, uncontained, as not counted) as expected. */
static int writer_ends(supervisor *sv, const char *dir, bool contained)
{
	char script[5000], err[256];
	char *argv[] = { (char *)"/bin/sh", (char *)"-c", script, NULL };
	struct sv_event ev;
	sv_proc *p;

	snprintf(script, sizeof(script), "setsid sh -c 'sleep %.1f; "
		 "echo late >> %s/late' </dev/null >/dev/null 2>&1 & exit 0",
		 DELAY_MS / 1000.0, dir);
	if (supervisor_spawn(sv, &(struct sv_spawn){ .argv = argv,
			     .timeout_ms = 20000 }, &p, err, sizeof(err))) {
		fprintf(stderr, "spawn: %s\n", err);
		return 1;
	}
	while (!sv_proc_ended(p))
		if (supervisor_wait(sv, clock_mono_ms() + 20000, &ev) ||
		    ev.kind == SV_EV_NONE)
			return 2;
	if (sv_proc_status(p)->code != 0 ||
	    sv_proc_status(p)->contained != contained ||
	    (contained ? sv_proc_status(p)->descendants_killed < 1 :
	     sv_proc_status(p)->descendants_killed != -1)) {
		fprintf(stderr, "code %d contained %d descendants %d\n",
			sv_proc_status(p)->code, sv_proc_status(p)->contained,
			sv_proc_status(p)->descendants_killed);
		return 3;
	}
	sv_proc_free(p);
	return 0;
}

/* As nobody: a user and PID namespace contains the attempt. */
static int userns_check(const char *tmp)
{
	char dir[4200], path[4300], err[256];
	supervisor *sv;
	int rc;

	if (supervisor_containment(err, sizeof(err)) == CHILD_CONTAIN_NONE) {
		fprintf(stderr, "skipped: no namespace for nobody (%s)\n", err);
		return 77;
	}
	if (supervisor_containment(NULL, 0) != CHILD_CONTAIN_USER &&
	    supervisor_containment(NULL, 0) != CHILD_CONTAIN_SANDBOX)
		return 10;
	snprintf(dir, sizeof(dir), "%s/userns", tmp);
	mkdir(dir, 0777);
	if (supervisor_new(&sv, err, sizeof(err)))
		return 11;
	rc = writer_ends(sv, dir, true);
	supervisor_free(sv);
	sleep_ms(DELAY_MS + 700);
	snprintf(path, sizeof(path), "%s/late", dir);
	return rc ? 20 + rc : access(path, F_OK) == 0 ? 12 : 0;
}

/* Without any namespace: the attempt's init is a child subreaper that
 * kills what the route left (CHILD_CONTAIN_REAPER), where certify used to
 * refuse; certify runs and says `reaper` (`uid` as root). */
static int none_check(const char *tmp)
{
	char why[200], err[400], dir[4200], cmd[18000];
	supervisor *sv;
	const char *bin = getenv("FENCECERT");
	int rc;

	if (supervisor_containment(why, sizeof(why)) != CHILD_CONTAIN_REAPER ||
	    !strstr(why, "Operation not permitted"))
		return 10;
	if (supervisor_new(&sv, err, sizeof(err)))
		return 11;
	snprintf(dir, sizeof(dir), "%s/none", tmp);
	mkdir(dir, 0777);
	rc = writer_ends(sv, dir, true);
	supervisor_free(sv);
	sleep_ms(DELAY_MS + 700);
	snprintf(cmd, sizeof(cmd), "%s/late", dir);
	if (rc)
		return 20 + rc;
	if (access(cmd, F_OK) == 0)
		return 12; /* the setsid'd writer outlived its attempt */
	if (!bin || access(bin, X_OK) != 0)
		bin = "build/fencecert";
	/* one clean scenario earns no certificate: unverified, exit 3 */
	snprintf(cmd, sizeof(cmd), "'%s' certify scenarios/default.yaml "
		 "--route c-sqlite --only clean --out '%s/out' --quiet "
		 ">'%s/certify.out' 2>&1", bin, dir, dir);
	rc = system(cmd);
	if (!WIFEXITED(rc) || WEXITSTATUS(rc) != 3)
		return 13;
	/* as root the routes ran under a uid of their own */
	snprintf(cmd, sizeof(cmd), "grep -q '\"containment\": \"%s\"' "
		 "'%s/out/report.json'", geteuid() == 0 ? "uid" : "reaper", dir);
	if (system(cmd) != 0)
		return 16;
	return 0;
}

static void test_userns_fallback(void **state)
{
	int rc;

	(void)state;
	chmod(svt_tmp_dir, 0777);
	rc = run_again("userns-check", become_nobody);
	if (rc == 77 || rc == 126) {
		print_message("skipped: %s\n", rc == 77 ? "no user namespaces "
			      "for nobody" : "nobody cannot run this binary");
		skip();
	}
	assert_int_equal(rc, 0);
}

static void test_no_namespace_reaper(void **state)
{
	(void)state;
	assert_int_equal(run_again("none-check", forbid_namespaces), 0);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_setsid_writer_killed),
		cmocka_unit_test(test_daemon_killed),
		cmocka_unit_test(test_init_survives_route),
		cmocka_unit_test(test_paused_namespace_lives),
		cmocka_unit_test(test_certify_forksrv_writer),
		cmocka_unit_test(test_userns_fallback),
		cmocka_unit_test(test_no_namespace_reaper),
	};
	const struct CMUnitTest through_server[] = {
		cmocka_unit_test(test_setsid_writer_killed),
		cmocka_unit_test(test_daemon_killed),
		cmocka_unit_test(test_init_survives_route),
		cmocka_unit_test(test_paused_namespace_lives),
	};
	int failed;

	/* returns at once, or in each process a fork server spawns */
	fork_server_serve(&argc, &argv, NULL);
	if (argc == 3 && strcmp(argv[1], "userns-check") == 0)
		return userns_check(argv[2]);
	if (argc == 3 && strcmp(argv[1], "none-check") == 0)
		return none_check(argv[2]);
	if (svt_start(argc, argv, &failed))
		return failed;
	failed = cmocka_run_group_tests_name("exec", tests, NULL, NULL);
	failed += cmocka_run_group_tests_name("fork server", through_server,
					      svt_forksrv_on, svt_teardown_dir);
	return failed;
}
