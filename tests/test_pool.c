/*
 * test_pool.c -- the worker pool's turns (harness/proc/pool.h): at most
 * `turns` workers run a job at once, a worker that gives its turn up
 * lets another run meanwhile, and the turn of a worker that died holding
 * it comes back.  Pinned, a job runs on one CPU, its turn's: two jobs
 * running at once never share one, and a dead worker's turn comes back
 * with its CPU.
 *
 * A route that finds a worker's result pipe through /proc/<worker>/fd
 * and writes it a line (no nonce, a wrong one, garbage, or a line of its
 * worker's it copied off the pipe, written again during the next job)
 * ends the run; a job that hangs ends it after the stall bound, one that
 * calls pool_progress() does not.
 *
 * The jobs count themselves in a page every worker shares (mapped before
 * the pool forks them).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "harness/proc/pool.h"

struct counts {
	int running;     /* jobs holding a turn now */
	int running_max;
	int started;     /* jobs begun */
	int ended;
	int in_flight_max; /* begun and not ended, at most */
	/* pinned runs: */
	int on_cpu[CPU_SETSIZE]; /* jobs running on each CPU now */
	int shared;       /* times a job found another on its CPU */
	int not_one;      /* times a job could run on other than one CPU */
	int cpus_seen;    /* distinct CPUs jobs ran on */
	int seen[CPU_SETSIZE];
	/* forged lines: */
	int stolen;       /* the thief holds a copy of a result line */
	int second;       /* the second job runs */
};

static bool pinned; /* the next run_jobs() pins its pool */

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

static void bump_max(int *max, int v)
{
	int cur = __atomic_load_n(max, __ATOMIC_SEQ_CST);

	while (v > cur && !__atomic_compare_exchange_n(max, &cur, v, false,
						       __ATOMIC_SEQ_CST,
						       __ATOMIC_SEQ_CST))
		;
}

/* The one CPU this process may run on, counted in c; -1 (and counted in
 * not_one) when it may run on more. */
static int cpu_enter(struct counts *c)
{
	cpu_set_t set;
	int cpu = -1;

	if (sched_getaffinity(0, sizeof(set), &set) != 0 ||
	    CPU_COUNT(&set) != 1) {
		__atomic_add_fetch(&c->not_one, 1, __ATOMIC_SEQ_CST);
		return -1;
	}
	while (!CPU_ISSET(++cpu, &set))
		;
	if (__atomic_add_fetch(&c->on_cpu[cpu], 1, __ATOMIC_SEQ_CST) > 1)
		__atomic_add_fetch(&c->shared, 1, __ATOMIC_SEQ_CST);
	if (__atomic_exchange_n(&c->seen[cpu], 1, __ATOMIC_SEQ_CST) == 0)
		__atomic_add_fetch(&c->cpus_seen, 1, __ATOMIC_SEQ_CST);
	return cpu;
}

static void cpu_leave(struct counts *c, int cpu)
{
	if (cpu >= 0)
		__atomic_sub_fetch(&c->on_cpu[cpu], 1, __ATOMIC_SEQ_CST);
}

/* In a worker: the fd of its result pipe, as a route would find it
 * in /proc/<worker>/fd -- the one write-only pipe the pool opened
 * (close-on-exec, so no fd the test itself inherited, as a make
 * jobserver's). */
static int result_fd(void)
{
	for (int fd = 3; fd < 1024; fd++) {
		struct stat st;
		int fl = fcntl(fd, F_GETFL), fdfl = fcntl(fd, F_GETFD);

		if (fl >= 0 && (fl & O_ACCMODE) == O_WRONLY &&
		    fdfl >= 0 && (fdfl & FD_CLOEXEC) &&
		    fstat(fd, &st) == 0 && S_ISFIFO(st.st_mode))
			return fd;
	}
	fail_msg("no result pipe in the worker");
	return -1;
}

/* A route of the worker's: a child that opens the worker's result pipe
 * by its /proc path (with `mode`) and returns that fd. */
static int open_worker_pipe(int mode)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)getppid(),
		 result_fd());
	return open(path, mode);
}

/* From a child of the worker (a route's process): write `line` into the
 * worker's result pipe. */
static void forge(const char *line)
{
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		int fd = open_worker_pipe(O_WRONLY);

		_exit(fd >= 0 && write(fd, line, strlen(line)) ==
		      (ssize_t)strlen(line) ? 0 : 1);
	}
	assert_int_equal(waitpid(pid, NULL, 0), pid);
}

/* Wait (up to 10 s) until *flag is set. */
static bool wait_flag(int *flag)
{
	for (int i = 0; i < 1000; i++) {
		if (__atomic_load_n(flag, __ATOMIC_SEQ_CST))
			return true;
		sleep_ms(10);
	}
	return false;
}

/* A thief the worker's job leaves behind: it copies the job's result
 * line off the pipe without taking it (tee(2)), and writes it again when
 * the worker runs its next job. */
static void thief(struct counts *c)
{
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid)
		return;
	{
		int in = open_worker_pipe(O_RDONLY), keep[2];
		struct pollfd pfd = { .fd = in, .events = POLLIN };
		char line[4096];
		ssize_t n;

		if (in < 0 || pipe(keep) < 0 || poll(&pfd, 1, 10000) != 1)
			_exit(1);
		sleep_ms(50); /* the whole line: it is one write */
		n = tee(in, keep[1], sizeof(line), 0);
		if (n <= 0 || read(keep[0], line, (size_t)n) != n)
			_exit(1);
		__atomic_store_n(&c->stolen, 1, __ATOMIC_SEQ_CST);
		close(in);
		if (!wait_flag(&c->second))
			_exit(1);
		in = open_worker_pipe(O_WRONLY);
		_exit(in >= 0 && write(in, line, (size_t)n) == n ? 0 : 1);
	}
}

/* Job {"do": "busy" | "give" | "die"}: hold the turn 30 ms; give it up
 * for 30 ms in the middle; die holding it.  Pinned runs count the CPU
 * each job holds from its start (or its taking the turn again) to its
 * end (or its giving the turn up).  {"do": "forge", "line": L}: a route
 * of the job writes L into the result pipe, then the job ends as "busy"
 * does; "steal": a thief copies the result line; "second": the job
 * after it, 500 ms; "late": a route writes a line 200 ms after the job
 * ended; "hang": 10 s; "progress": 600 ms, with a
 * pool_progress() every 100 ms. */
static json_t *work(void *ctx, json_t *job)
{
	struct counts *c = ctx;
	const char *what = json_string_value(json_object_get(job, "do"));
	int n, cpu = pinned ? cpu_enter(c) : -1;

	if (strcmp(what, "forge") == 0) {
		forge(json_string_value(json_object_get(job, "line")));
	} else if (strcmp(what, "steal") == 0) {
		thief(c);
	} else if (strcmp(what, "second") == 0) {
		__atomic_store_n(&c->second, 1, __ATOMIC_SEQ_CST);
		sleep_ms(500);
	} else if (strcmp(what, "late") == 0) {
		pid_t pid = fork();

		assert_true(pid >= 0);
		if (pid == 0) {
			sleep_ms(200);
			forge("{\"pool_job\": 2, \"converged\": true}\n");
			_exit(0);
		}
	} else if (strcmp(what, "hang") == 0) {
		sleep_ms(10000);
	} else if (strcmp(what, "progress") == 0) {
		for (int i = 0; i < 6; i++) {
			sleep_ms(100);
			pool_progress();
		}
	}

	n = __atomic_add_fetch(&c->started, 1, __ATOMIC_SEQ_CST) -
	    __atomic_load_n(&c->ended, __ATOMIC_SEQ_CST);
	bump_max(&c->in_flight_max, n);
	bump_max(&c->running_max,
		 __atomic_add_fetch(&c->running, 1, __ATOMIC_SEQ_CST));
	if (strcmp(what, "die") == 0) {
		cpu_leave(c, cpu); /* it holds no CPU once dead */
		_exit(3);
	}
	if (strcmp(what, "give") == 0) {
		__atomic_sub_fetch(&c->running, 1, __ATOMIC_SEQ_CST);
		cpu_leave(c, cpu);
		pool_turn_give();
		sleep_ms(30);
		pool_turn_take();
		cpu = pinned ? cpu_enter(c) : -1;
		bump_max(&c->running_max,
			 __atomic_add_fetch(&c->running, 1, __ATOMIC_SEQ_CST));
	}
	sleep_ms(30);
	cpu_leave(c, cpu);
	__atomic_sub_fetch(&c->running, 1, __ATOMIC_SEQ_CST);
	__atomic_add_fetch(&c->ended, 1, __ATOMIC_SEQ_CST);
	return json_object(); /* a result line is an object */
}

static struct counts *counts_new(void)
{
	struct counts *c = mmap(NULL, sizeof(*c), PROT_READ | PROT_WRITE,
				MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	assert_true(c != MAP_FAILED);
	memset(c, 0, sizeof(*c));
	return c;
}

/* Submit n jobs {"do": what} at once to a pool of `workers` with
 * `turns`; collect them all (each must come back within 10 s); how many
 * died. */
static int run_jobs(struct counts *c, int workers, int turns,
		    const char *const *what, int n)
{
	char err[256];
	pool *p;
	int died = 0;

	assert_int_equal(pool_new(workers, turns, pinned, work, NULL, c, &p,
				  err, sizeof(err)), 0);
	for (int sent = 0, got = 0; got < n;) {
		json_t *res;
		void *tag;
		while (sent < n && pool_has_idle(p)) {
			json_t *job = json_pack("{ss}", "do", what[sent++]);
			assert_int_equal(pool_submit(p, job, NULL), 0);
			json_decref(job);
		}
		/* 0: nothing came back in 10 s (a turn lost) */
		assert_int_equal(pool_collect(p, 10000, &res, &tag), 1);
		died += !res;
		json_decref(res);
		got++;
	}
	pool_free(p, NULL);
	return died;
}

static const char *const busy4[] = { "busy", "busy", "busy", "busy" };
static const char *const give4[] = { "give", "give", "give", "give" };

/* Four workers, one turn: never two jobs at once.  Four turns: they
 * overlap (the count can see an overlap). */
static void test_turns_bound_jobs(void **state)
{
	struct counts *c = counts_new();

	(void)state;
	assert_int_equal(run_jobs(c, 4, 1, busy4, 4), 0);
	assert_int_equal(c->running_max, 1);
	assert_int_equal(c->in_flight_max, 1);
	memset(c, 0, sizeof(*c));
	assert_int_equal(run_jobs(c, 4, 4, busy4, 4), 0);
	assert_true(c->running_max > 1);
	munmap(c, sizeof(*c));
}

/* A job that gives its turn up while it waits lets the others start;
 * still never two hold a turn at once. */
static void test_give_lets_others_run(void **state)
{
	struct counts *c = counts_new();

	(void)state;
	assert_int_equal(run_jobs(c, 4, 1, give4, 4), 0);
	assert_int_equal(c->running_max, 1);
	assert_true(c->in_flight_max > 1);
	munmap(c, sizeof(*c));
}

/* One turn, a job dies holding it: the next job still runs (the
 * coordinator writes the turn back), and the dead one is reported. */
static void test_dead_worker_turn_returns(void **state)
{
	static const char *const jobs[] = { "die", "busy", "busy" };
	struct counts *c = counts_new();

	(void)state;
	assert_int_equal(run_jobs(c, 2, 1, jobs, 3), 1);
	assert_int_equal(c->ended, 2);
	munmap(c, sizeof(*c));
}

static int cpus_allowed(void)
{
	cpu_set_t set;

	assert_int_equal(sched_getaffinity(0, sizeof(set), &set), 0);
	return CPU_COUNT(&set);
}

/* Pinned, four workers and two turns: each job runs on exactly one CPU,
 * two at once never on the same, and both turns' CPUs are used; after a
 * worker died holding a turn, the jobs still run pinned on distinct CPUs
 * (its turn came back as itself).  Unpinned, a job may run anywhere. */
static void test_pinned_turns(void **state)
{
	static const char *const eight[] = { "give", "busy", "give", "busy",
					     "give", "busy", "give", "busy" };
	static const char *const dying[] = { "die", "busy", "busy", "busy",
					     "busy", "busy" };
	struct counts *c = counts_new();

	(void)state;
	if (cpus_allowed() < 2)
		skip(); /* two turns need two CPUs to pin */
	pinned = true;
	assert_int_equal(run_jobs(c, 4, 2, eight, 8), 0);
	assert_int_equal(c->not_one, 0);
	assert_int_equal(c->shared, 0);
	assert_int_equal(c->cpus_seen, 2);
	assert_int_equal(c->running_max, 2);
	memset(c, 0, sizeof(*c));
	assert_int_equal(run_jobs(c, 3, 2, dying, 6), 1);
	assert_int_equal(c->not_one, 0);
	assert_int_equal(c->shared, 0);
	assert_int_equal(c->ended, 5);
	/* more turns than CPUs: nothing pinned */
	memset(c, 0, sizeof(*c));
	assert_int_equal(run_jobs(c, 64, cpus_allowed() + 1, busy4, 4), 0);
	assert_int_equal(c->not_one, 4);
	pinned = false;
	memset(c, 0, sizeof(*c));
	assert_int_equal(run_jobs(c, 4, 2, busy4, 4), 0);
	assert_int_equal(c->cpus_seen, 0); /* cpu_enter() never ran */
	munmap(c, sizeof(*c));
}

/* Outside a worker the calls do nothing (and do not block). */
static void test_outside_worker(void **state)
{
	(void)state;
	pool_turn_give();
	pool_turn_take();
	pool_turn_take();
	pool_progress();
}

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

static pool *pool_of(struct counts *c, int workers)
{
	char err[256];
	pool *p;

	assert_int_equal(pool_new(workers, workers, false, work, NULL, c, &p,
				  err, sizeof(err)), 0);
	assert_string_equal(pool_errmsg(p), "");
	return p;
}

static void submit(pool *p, json_t *job)
{
	assert_non_null(job);
	assert_int_equal(pool_submit(p, job, NULL), 0);
	json_decref(job);
}

/* Collect until the pool fails (within 10 s); no result may come. */
static int collect_failure(pool *p)
{
	long long t0 = now_ms();

	while (now_ms() - t0 < 10000) {
		json_t *res;
		void *tag;
		int rc = pool_collect(p, 100, &res, &tag);

		if (rc < 0)
			return rc;
		assert_int_equal(rc, 0); /* a forged line taken as a result */
	}
	fail_msg("the pool never refused");
	return 0;
}

/* The run has ended: it stays ended, and its workers were killed (a
 * second worker's 10 s job does not hold pool_free()). */
static void assert_ended(pool *p, int rc)
{
	json_t *res;
	void *tag;
	long long t0;

	assert_int_equal(pool_collect(p, 0, &res, &tag), rc);
	assert_null(res);
	t0 = now_ms();
	pool_free(p, NULL);
	assert_true(now_ms() - t0 < 3000);
}

/* A line a route wrote into a busy worker's result pipe, before the
 * worker's own: no nonce, a wrong one, not JSON, not an object. */
static void test_forged_line_refused(void **state)
{
	static const char *const lines[] = {
		"{\"converged\": true}\n",
		"{\"pool_job\": 1, \"converged\": true}\n",
		"{\"pool_job\": 1, \"pool_nonce\": "
		"\"00000000000000000000000000000000\", \"converged\": true}\n",
		"{\"pool_job\": 1, \"pool_nonce\": \"\", \"converged\": true}\n",
		"converged\n",
		"[1]\n",
	};
	static const char *const why[] = { "no nonce", "no nonce",
					   "wrong nonce", "wrong nonce",
					   "not a JSON object",
					   "not a JSON object" };
	struct counts *c = counts_new();

	(void)state;
	for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
		pool *p = pool_of(c, 2);

		submit(p, json_pack("{ss, ss}", "do", "forge", "line",
				    lines[i]));
		submit(p, json_pack("{ss}", "do", "hang"));
		assert_int_equal(collect_failure(p), FC_CORRUPT);
		if (!strstr(pool_errmsg(p), why[i]))
			fail_msg("line %zu: '%s'", i, pool_errmsg(p));
		assert_ended(p, FC_CORRUPT);
	}
	munmap(c, sizeof(*c));
}

/* A line of the worker's own, nonce and all, copied off the pipe and
 * written again while the worker runs its next job: it names the job
 * before, and is refused. */
static void test_replayed_line_refused(void **state)
{
	struct counts *c = counts_new();
	pool *p = pool_of(c, 1);
	json_t *res;
	void *tag;

	(void)state;
	submit(p, json_pack("{ss}", "do", "steal"));
	assert_true(wait_flag(&c->stolen)); /* before the coordinator reads */
	assert_int_equal(pool_collect(p, 10000, &res, &tag), 1);
	assert_non_null(res);
	/* the pool's members are the pool's */
	assert_null(json_object_get(res, "pool_nonce"));
	assert_null(json_object_get(res, "pool_job"));
	json_decref(res);
	submit(p, json_pack("{ss}", "do", "second"));
	assert_int_equal(collect_failure(p), FC_CORRUPT);
	if (!strstr(pool_errmsg(p), "names job 1, not job 2"))
		fail_msg("'%s'", pool_errmsg(p));
	assert_ended(p, FC_CORRUPT);
	munmap(c, sizeof(*c));
}

/* A line written after the worker's result, while it runs no job: not
 * its own. */
static void test_line_from_idle_worker_refused(void **state)
{
	struct counts *c = counts_new();
	pool *p = pool_of(c, 2);
	json_t *res;
	void *tag;

	(void)state;
	submit(p, json_pack("{ss}", "do", "hang"));
	submit(p, json_pack("{ss}", "do", "late"));
	assert_int_equal(pool_collect(p, 10000, &res, &tag), 1);
	assert_non_null(res);
	json_decref(res);
	assert_int_equal(collect_failure(p), FC_CORRUPT);
	if (!strstr(pool_errmsg(p), "came while it ran no job"))
		fail_msg("'%s'", pool_errmsg(p));
	assert_ended(p, FC_CORRUPT);
	munmap(c, sizeof(*c));
}

/* The watchdog: a job that hangs ends the run after the bound, with the
 * job named; one that reports progress runs past it. */
static void test_watchdog(void **state)
{
	struct counts *c = counts_new();
	pool *p = pool_of(c, 2);
	long long t0 = now_ms();
	json_t *res;
	void *tag;

	(void)state;
	pool_set_stall_ms(p, 300);
	submit(p, json_pack("{ss}", "do", "hang"));
	assert_int_equal(collect_failure(p), FC_IO);
	assert_true(now_ms() - t0 >= 300);
	assert_true(now_ms() - t0 < 5000);
	if (!strstr(pool_errmsg(p), "no schedule finished in 300 ms; the run "
		    "is stuck at job 1 {\"do\":\"hang\"}"))
		fail_msg("'%s'", pool_errmsg(p));
	assert_ended(p, FC_IO);

	p = pool_of(c, 1);
	pool_set_stall_ms(p, 300);
	submit(p, json_pack("{ss}", "do", "progress"));
	assert_int_equal(pool_collect(p, -1, &res, &tag), 0); /* progress */
	for (int rc = 0; rc == 0;)
		rc = pool_collect(p, -1, &res, &tag);
	assert_non_null(res);
	assert_null(json_object_get(res, "pool_progress"));
	json_decref(res);
	pool_free(p, NULL);
	munmap(c, sizeof(*c));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_turns_bound_jobs),
		cmocka_unit_test(test_give_lets_others_run),
		cmocka_unit_test(test_dead_worker_turn_returns),
		cmocka_unit_test(test_pinned_turns),
		cmocka_unit_test(test_outside_worker),
		cmocka_unit_test(test_forged_line_refused),
		cmocka_unit_test(test_replayed_line_refused),
		cmocka_unit_test(test_line_from_idle_worker_refused),
		cmocka_unit_test(test_watchdog),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
