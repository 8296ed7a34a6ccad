/*
 * test_supervise.c -- the supervisor with real processes.
 *
 * The routes under test are this binary itself, re-executed with
 * "child MODE" (tests/supervise_routes.c): so every behaviour (talking the
 * failpoint channel, hanging, forking and dying) is plain C, not shell
 * quirks.  The orphan tests mark their processes with a unique environment
 * variable and scan /proc for it afterwards.
 *
 * The binary is also a fork server (routes/fork_server.h): the tests that
 * do not depend on how a process starts run twice, exec'd and through the
 * fork server.  The fork server's own tests are in
 * test_supervise_forksrv.c.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <sched.h>
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

#include "harness/proc/channel.h"
#include "harness/proc/supervise.h"
#include "routes/fork_server.h"
#include "tests/supervise_routes.h"

/* --- tests ------------------------------------------------------------------ */

static void test_exit_and_signal(void **state)
{
	supervisor *sv;
	sv_proc *a, *b;
	struct sv_event ev;
	char err[256];

	(void)state;
	assert_int_equal(supervisor_new(&sv, err, sizeof(err)), 0);
	a = svt_spawn_mode(sv, "exit3", false, 0, NULL);
	b = svt_spawn_mode(sv, "term", false, 0, NULL);
	/* both end, in whatever order */
	for (int i = 0; i < 2; i++) {
		assert_int_equal(supervisor_wait(sv, clock_mono_ms() + 20000,
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
	/* contained, the status is the route's own, relayed by its init,
	 * which had nothing else to kill */
	for (int i = 0; i < 2; i++) {
		assert_true(sv_proc_status(i ? b : a)->contained);
		assert_int_equal(sv_proc_status(i ? b : a)->descendants_killed, 0);
	}
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
	p = svt_spawn_mode(sv, "hits", true, 10000, NULL);
	svt_next_event(sv, p, &ev);
	assert_int_equal(ev.kind, SV_EV_HIT);
	assert_string_equal(ev.failpoint, "a");
	assert_int_equal(sv_proc_answer(p, 'c'), 0);
	svt_next_event(sv, p, &ev);
	assert_int_equal(ev.kind, SV_EV_HIT);
	assert_string_equal(ev.failpoint, "b");
	assert_int_equal(sv_proc_answer(p, 'f'), 0);
	svt_next_event(sv, p, &ev);
	assert_int_equal(ev.kind, SV_EV_EXIT);
	assert_int_equal(sv_proc_status(p)->code, 42);
	/* a route started without the channel sees no variable */
	p = svt_spawn_mode(sv, "nofd", false, 10000, NULL);
	svt_next_event(sv, p, &ev);
	assert_int_equal(sv_proc_status(p)->code, 0);
	supervisor_free(sv);
}

/* PASS lines are hits like HIT lines, flagged `passed`, and need no
 * answer: the route runs on to its next failpoint by itself. */
static void test_failpoint_passes(void **state)
{
	char *env[] = { (char *)PROTO_ENV_FAILPOINT_WAIT "=b", NULL };
	const char *want[] = { "a", "b", "c" };
	supervisor *sv;
	sv_proc *p;
	struct sv_event ev;
	char err[256];

	(void)state;
	assert_int_equal(supervisor_new(&sv, err, sizeof(err)), 0);
	p = svt_spawn_mode(sv, "passes", true, 10000, env);
	for (int i = 0; i < 3; i++) {
		svt_next_event(sv, p, &ev);
		assert_int_equal(ev.kind, SV_EV_HIT);
		assert_string_equal(ev.failpoint, want[i]);
		assert_int_equal(ev.passed, i != 1);
		if (!ev.passed)
			assert_int_equal(sv_proc_answer(p, 'f'), 0);
	}
	svt_next_event(sv, p, &ev);
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
	p = svt_spawn_mode(sv, "hits", true, 10000, NULL);
	svt_next_event(sv, p, &ev);
	assert_int_equal(sv_proc_pause(p), 0);
	/* SIGSTOP takes effect when the child next runs: wait for it (5 s) */
	for (int i = 0; i < 100 && svt_proc_state(sv_proc_pid(p)) != 'T'; i++)
		nanosleep(&ts, NULL);
	assert_int_equal(svt_proc_state(sv_proc_pid(p)), 'T');
	assert_true(sv_proc_paused(p));
	/* no event while stopped */
	assert_int_equal(supervisor_wait(sv, clock_mono_ms() + 100, &ev), 0);
	assert_int_equal(ev.kind, SV_EV_NONE);
	assert_int_equal(sv_proc_answer(p, 'c'), 0);
	assert_int_equal(sv_proc_resume(p), 0);
	svt_next_event(sv, p, &ev);
	assert_int_equal(ev.kind, SV_EV_HIT);
	assert_string_equal(ev.failpoint, "b");
	assert_int_equal(sv_proc_kill(p), 0);
	svt_next_event(sv, p, &ev);
	assert_int_equal(ev.kind, SV_EV_EXIT);
	assert_int_equal(sv_proc_status(p)->signal, SIGKILL);
	assert_true(sv_proc_status(p)->killed);
	/* a paused process can be killed too */
	p = svt_spawn_mode(sv, "hits", true, 10000, NULL);
	svt_next_event(sv, p, &ev);
	assert_int_equal(sv_proc_pause(p), 0);
	assert_int_equal(sv_proc_kill(p), 0);
	svt_next_event(sv, p, &ev);
	assert_int_equal(ev.kind, SV_EV_EXIT);
	assert_int_equal(sv_proc_status(p)->signal, SIGKILL);
	supervisor_free(sv);
}

/* The CPUs pid may run on, as a count, and whether `cpu` is one. */
static int cpus_of(pid_t pid, int cpu, bool *has)
{
	cpu_set_t set;

	assert_int_equal(sched_getaffinity(pid, sizeof(set), &set), 0);
	*has = CPU_ISSET(cpu, &set);
	return CPU_COUNT(&set);
}

/* Is pid the init of a PID namespace of its own (two NSpid entries)? */
static bool is_ns_init(pid_t pid)
{
	char path[64], line[256];
	bool init = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, "NSpid:", 6) == 0)
			init = strchr(line + 7, '\t') != NULL;
	fclose(f);
	return init;
}

/* A paused process resumed goes on where its supervisor runs now, its
 * children (a contained route under its init) with it
 * (supervise_proc.c invariant 5). */
static void test_resume_follows_cpus(void **state)
{
	supervisor *sv;
	sv_proc *p;
	struct sv_event ev;
	char err[256], path[64];
	cpu_set_t all, one;
	int last = -1, moved = 0;
	bool has;
	long child;
	FILE *f;

	(void)state;
	assert_int_equal(sched_getaffinity(0, sizeof(all), &all), 0);
	if (CPU_COUNT(&all) < 2)
		skip();
	for (int c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &all))
			last = c;
	assert_int_equal(supervisor_new(&sv, err, sizeof(err)), 0);
	p = svt_spawn_mode(sv, "hits", true, 10000, NULL);
	svt_next_event(sv, p, &ev);
	assert_int_equal(sv_proc_pause(p), 0);
	CPU_ZERO(&one);
	CPU_SET(last, &one);
	assert_int_equal(sched_setaffinity(0, sizeof(one), &one), 0);
	assert_int_equal(sv_proc_resume(p), 0);
	assert_int_equal(sched_setaffinity(0, sizeof(all), &all), 0);
	assert_int_equal(cpus_of(sv_proc_pid(p), last, &has), 1);
	assert_true(has);
	snprintf(path, sizeof(path), "/proc/%d/task/%d/children",
		 (int)sv_proc_pid(p), (int)sv_proc_pid(p));
	f = fopen(path, "re");
	assert_non_null(f);
	while (fscanf(f, "%ld", &child) == 1) {
		assert_int_equal(cpus_of((pid_t)child, last, &has), 1);
		assert_true(has);
		moved++;
	}
	fclose(f);
	if (is_ns_init(sv_proc_pid(p))) /* its route is its child */
		assert_int_equal(moved, 1);
	assert_int_equal(sv_proc_kill(p), 0);
	svt_next_event(sv, p, &ev);
	assert_int_equal(ev.kind, SV_EV_EXIT);
	supervisor_free(sv);
}

static void test_timeout(void **state)
{
	supervisor *sv;
	sv_proc *p;
	struct sv_event ev;
	char err[256];
	long long t0 = clock_mono_ms();

	(void)state;
	assert_int_equal(supervisor_new(&sv, err, sizeof(err)), 0);
	p = svt_spawn_mode(sv, "hang", false, 300, NULL);
	svt_next_event(sv, p, &ev);
	assert_int_equal(ev.kind, SV_EV_EXIT);
	assert_true(sv_proc_status(p)->timed_out);
	assert_int_equal(sv_proc_status(p)->signal, SIGKILL);
	/* killed as a whole: what it left died uncounted */
	assert_int_equal(sv_proc_status(p)->descendants_killed, -1);
	assert_true(clock_mono_ms() - t0 >= 300);
	assert_true(clock_mono_ms() - t0 < 5000);
	supervisor_free(sv);
}

/* A route flooding its channel with PASS lines (yes(1), as fast as a pipe
 * goes) is killed at its deadline, and the loop that reads it hands out
 * every line as an event meanwhile: the deadline holds while it floods,
 * and the events before the end are a bounded number.  (The loop used to
 * read a flooding channel until it was empty, with a memmove of the whole
 * queue per event taken: this attempt ran for minutes.) */
static void test_flood_meets_deadline(void **state)
{
	char *argv[] = { "sh", "-c", "exec yes 'PASS x' >&3", NULL };
	struct sv_spawn req = { .argv = argv, .failpoints = true,
				.timeout_ms = 500,
				.fork_server = false };
	supervisor *sv;
	sv_proc *p;
	struct sv_event ev;
	char err[256];
	long long t0 = clock_mono_ms(), end;
	size_t hits = 0;

	(void)state;
	assert_int_equal(supervisor_new(&sv, err, sizeof(err)), 0);
	assert_int_equal(supervisor_spawn(sv, &req, &p, err, sizeof(err)), 0);
	do {
		assert_int_equal(supervisor_wait(sv, t0 + 20000, &ev), 0);
		assert_int_not_equal(ev.kind, SV_EV_NONE);
		if (ev.kind == SV_EV_HIT) {
			assert_true(ev.passed);
			assert_string_equal(ev.failpoint, "x");
			hits++;
		}
	} while (ev.kind != SV_EV_EXIT);
	end = clock_mono_ms();
	assert_true(sv_proc_status(p)->timed_out);
	assert_int_equal(sv_proc_status(p)->signal, SIGKILL);
	assert_true(hits > 0);
	assert_true(end - t0 >= 500);
	assert_true(end - t0 < 3000);
	supervisor_free(sv);
}

struct line_count {
	size_t n;
	bool in_order;
};

static int count_line(void *ctx, const struct channel_line *line)
{
	struct line_count *c = ctx;

	c->in_order &= strcmp(line->failpoint, c->n % 2 ? "b" : "a") == 0;
	c->n++;
	return 0;
}

static int refuse_line(void *ctx, const struct channel_line *line)
{
	(void)line;
	return ++*(int *)ctx == 2 ? -1 : 0;
}

/* channel_parse() costs the bytes it is given: 4 million lines in one
 * 28 MB buffer are parsed in well under a second (a memmove of the rest
 * per line would move some 60 TB).  A refused line stays at the front. */
static void test_channel_linear(void **state)
{
	size_t lines = 4u << 20, len = 0, cap = lines * 7 + 1;
	char *buf = malloc(cap);
	struct line_count c = { 0, true };
	long long t0;
	int calls = 0;
	char small[] = "PASS a\nHIT b\nPASS c\nPASS d";
	size_t slen = sizeof(small) - 1;

	(void)state;
	assert_non_null(buf);
	for (size_t i = 0; i < lines; i++) {
		memcpy(buf + len, i % 2 ? "PASS b\n" : "PASS a\n", 7);
		len += 7;
	}
	t0 = clock_mono_ms();
	assert_int_equal(channel_parse(buf, &len, cap, count_line, &c), 0);
	assert_true(clock_mono_ms() - t0 < 2000);
	assert_int_equal(c.n, lines);
	assert_true(c.in_order);
	assert_int_equal(len, 0);
	free(buf);

	assert_int_equal(channel_parse(small, &slen, sizeof(small), refuse_line,
				       &calls), -1);
	assert_int_equal(slen, strlen("HIT b\nPASS c\nPASS d"));
	assert_memory_equal(small, "HIT b\nPASS c\nPASS d", slen);
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
	p = svt_spawn_mode(sv, "fork-and-die", false, 10000, env);
	pgid = sv_proc_pid(p);
	svt_next_event(sv, p, &ev);
	assert_int_equal(ev.kind, SV_EV_EXIT);
	assert_int_equal(sv_proc_status(p)->code, 0);
	/* the grandchild was alive when the route ended: killed, counted */
	assert_int_equal(sv_proc_status(p)->descendants_killed, 1);
	sv_proc_free(p);
	/* the grandchild was in the group: nothing of the group survives */
	assert_int_equal(kill(-pgid, 0), -1);
	assert_int_equal(errno, ESRCH);
	/* /proc/PID/environ of a fork server's child shows the server's
	 * environment, so the marker is looked for in exec'd ones only */
	if (!svt_use_forksrv)
		assert_int_equal(svt_wait_unmarked(marker, 2000), 0);
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
		assert_int_equal(supervisor_wait(sv, clock_mono_ms() + 30000,
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
	p = svt_spawn_mode(sv, "hits", true, 10000, NULL);
	svt_argv_for("exit3", argv);
	/* the helper's wait must not swallow p's failpoint */
	assert_int_equal(supervisor_run(sv, &(struct sv_spawn){ .argv = argv },
					&st, err, sizeof(err)), 0);
	assert_int_equal(st.code, 3);
	svt_next_event(sv, p, &ev);
	assert_int_equal(ev.kind, SV_EV_HIT);
	assert_string_equal(ev.failpoint, "a");
	supervisor_free(sv); /* kills p */
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
	svt_sigkill_supervisor(marker, &(struct sv_spawn){ .argv = argv,
			   .env = env }, 3, false);
}


/* The same through `fencecert certify`: SIGKILL it mid-suite. */
static void test_certify_killed(void **state)
{
	const char *bin;
	char marker[128], suite[4200], out[4200];
	FILE *f;
	pid_t pid;

	(void)state;
	bin = svt_fencecert();
	snprintf(marker, sizeof(marker), "certify-%d-%ld", getpid(),
		 (long)time(NULL));
	snprintf(suite, sizeof(suite), "%s/suite.yaml", svt_tmp_dir);
	snprintf(out, sizeof(out), "%s/out", svt_tmp_dir);
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
	pid = svt_certify_bg(bin, suite, out, NULL);
	/* wait until routes (and their children) run: up to 60 s, as in
	 * test_supervise_forksrv.c (a sanitized certify on a loaded machine
	 * takes seconds to start its workers) */
	for (int i = 0; i < 6000 && svt_count_marked(marker) < 4; i++)
		usleep(10000);
	svt_kill_leaves_none(pid, marker, 4);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exit_and_signal),
		cmocka_unit_test(test_failpoint_answers),
		cmocka_unit_test(test_failpoint_passes),
		cmocka_unit_test(test_pause_resume_kill),
		cmocka_unit_test(test_resume_follows_cpus),
		cmocka_unit_test(test_timeout),
		cmocka_unit_test(test_flood_meets_deadline),
		cmocka_unit_test(test_channel_linear),
		cmocka_unit_test(test_group_killed_after_leader),
		cmocka_unit_test(test_exec_failure),
		cmocka_unit_test(test_seccomp_faults),
		cmocka_unit_test(test_seccomp_exec_failure),
		cmocka_unit_test(test_run_queues_other_events),
		cmocka_unit_test(test_watchdog),
		cmocka_unit_test(test_certify_killed),
	};
	/* the same behaviours, every process started by a fork server */
	const struct CMUnitTest through_server[] = {
		cmocka_unit_test(test_exit_and_signal),
		cmocka_unit_test(test_failpoint_answers),
		cmocka_unit_test(test_failpoint_passes),
		cmocka_unit_test(test_pause_resume_kill),
		cmocka_unit_test(test_resume_follows_cpus),
		cmocka_unit_test(test_timeout),
		cmocka_unit_test(test_group_killed_after_leader),
		cmocka_unit_test(test_run_queues_other_events),
	};
	int failed;

	/* returns at once, or in each process a fork server spawns */
	fork_server_serve(&argc, &argv, NULL);
	if (svt_start(argc, argv, &failed))
		return failed;
	failed = cmocka_run_group_tests_name("exec", tests, NULL, NULL);
	failed += cmocka_run_group_tests_name("fork server", through_server,
					      svt_forksrv_on, svt_teardown_dir);
	return failed;
}
