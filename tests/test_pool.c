/*
 * test_pool.c -- the worker pool's turns (harness/proc/pool.h): at most
 * `turns` workers run a job at once, a worker that gives its turn up
 * lets another run meanwhile, and the turn of a worker that died holding
 * it comes back.  Pinned, a job runs on one CPU, its turn's: two jobs
 * running at once never share one, and a dead worker's turn comes back
 * with its CPU.
 *
 * The jobs count themselves in a page every worker shares (mapped before
 * the pool forks them).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/mman.h>
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

/* Job {"do": "busy" | "give" | "die"}: hold the turn 30 ms; give it up
 * for 30 ms in the middle; die holding it.  Pinned runs count the CPU
 * each job holds from its start (or its taking the turn again) to its
 * end (or its giving the turn up). */
static json_t *work(void *ctx, json_t *job)
{
	struct counts *c = ctx;
	const char *what = json_string_value(json_object_get(job, "do"));
	int n, cpu = pinned ? cpu_enter(c) : -1;

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
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_turns_bound_jobs),
		cmocka_unit_test(test_give_lets_others_run),
		cmocka_unit_test(test_dead_worker_turn_returns),
		cmocka_unit_test(test_pinned_turns),
		cmocka_unit_test(test_outside_worker),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
