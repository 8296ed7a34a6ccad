/*
 * test_explore.c -- scenario -> schedules, with synthetic traces (no
 * processes): waves, deduplication of recovery paths (or none: every
 * kill), interleavings, seeded random schedules, unreached declared
 * failpoints, replay, and that the job list does not depend on the order
 * traces come back in.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "harness/model/explore.h"

static const char suite_yaml[] =
	"version: 1\nsuite: t\nroutes:\n"
	"  - name: r\n    command: [x]\n    journal: 'sqlite:{dir}/j'\n"
	"    target: 'sqlite:{dir}/t'\n    observe: {sql: 'SELECT 1, 1'}\n"
	"proxies:\n  - {name: pgt, upstream: '127.0.0.1:5432'}\n"
	"orchestrator: {retries: 3}\n"
	"scenarios:\n"
	"  - name: fixed\n    faults: [{attempt: 1, failpoint: a, action: kill}]\n"
	"  - name: all\n    explore: {failpoints: all, actions: [kill, pause, fail]}\n"
	"  - name: killonly\n    explore: {failpoints: all}\n"
	"  - name: inter\n    explore: {failpoints: all, interleavings: true}\n"
	"  - name: rnd\n    explore: {actions: [kill, pause, fail],"
	" random: {schedules: 5, seed: 9, faults: 3}}\n"
	"  - name: listed\n    explore: {failpoints: [b, zz], actions: [kill]}\n"
	"  - name: commits\n    explore: {proxy: pgt,"
	" actions: [hold_commit, cut_after_commit]}\n"
	"  - name: cuts\n    explore: {proxy: pgt}\n";

/* try 1 reaches a, b, b, c; try 2 after a kill depends on where */
static const char *const try1[] = { "a", "b", "b", "c" };
static const char *const after_a[] = { "a", "b", "c" };
static const char *const after_b[] = { "a", "r", "c" };
static const char *const after_c[] = { "a", "d" };

static struct suite *load(void)
{
	struct suite *s = NULL;
	char err[512];

	if (suite_load_buffer("t.yaml", suite_yaml, sizeof(suite_yaml) - 1, &s,
			      err, sizeof(err))) {
		print_error("%s\n", err);
		fail();
	}
	return s;
}

static const struct scenario *scenario(const struct suite *s, const char *name)
{
	for (size_t i = 0; i < s->nscenarios; i++)
		if (strcmp(s->scenarios[i].name, name) == 0)
			return &s->scenarios[i];
	fail();
	return NULL;
}

static void feed(explorer *ex, int id, const char *const *t1, size_t n1,
		 const char *const *t2, size_t n2)
{
	struct explore_attempt a[2] = {
		{ .operation = 1, .try_number = 1, .hits = t1, .nhits = n1 },
		{ .operation = 1, .try_number = 2, .hits = t2, .nhits = n2 },
	};

	assert_int_equal(explorer_feed(ex, id, a, t2 ? 2 : 1), 0);
}

struct pending {
	int id;
	char x[FAILPOINT_NAME_MAX]; /* where its first fault is */
};

/* Where try 2 goes after the job's first fault (a kill or pause at X). */
static void feed_by_fault(explorer *ex, const struct pending *p)
{
	if (strcmp(p->x, "a") == 0)
		feed(ex, p->id, try1, 4, after_a, 3);
	else if (strcmp(p->x, "b") == 0)
		feed(ex, p->id, try1, 4, after_b, 3);
	else
		feed(ex, p->id, try1, 4, after_c, 2);
}

/*
 * Drain the explorer: hand out jobs, answer traces (discovery at once,
 * the others in reverse order when `reverse`), return the schedule strings
 * joined by '\n' (caller frees).
 */
static char *drain(explorer *ex, bool reverse, size_t *njobs, size_t *nstrict)
{
	static struct pending pending[1024];
	size_t np = 0, cap = 65536, len = 0;
	char *out = calloc(1, cap);
	const struct explore_job *j;
	enum explore_next n;

	assert_non_null(out);
	*njobs = *nstrict = 0;
	for (;;) {
		while ((n = explorer_next(ex, &j)) == EXPLORE_JOB) {
			len += (size_t)snprintf(out + len, cap - len, "%s %s\n",
						j->kind, j->nfaults ? j->schedule
								    : "clean");
			(*njobs)++;
			*nstrict += j->strict;
			if (!j->wants_trace)
				continue;
			if (j->nfaults == 0)
				feed(ex, j->id, try1, 4, NULL, 0);
			else {
				pending[np].id = j->id;
				snprintf(pending[np].x, sizeof(pending[np].x),
					 "%s", j->faults[0].failpoint);
				np++;
			}
		}
		if (n == EXPLORE_DONE)
			break;
		assert_true(np > 0); /* WAIT with nothing pending would hang */
		for (size_t i = 0; i < np; i++)
			feed_by_fault(ex, &pending[reverse ? np - 1 - i : i]);
		np = 0;
	}
	return out;
}

static void test_fixed(void **state)
{
	struct suite *s = load();
	explorer *ex;
	char err[256], *out;
	size_t n, strict;

	(void)state;
	assert_int_equal(explorer_new(s, scenario(s, "fixed"), NULL, &ex, err,
				      sizeof(err)), 0);
	out = drain(ex, false, &n, &strict);
	assert_string_equal(out, "fixed k:a@1\n");
	assert_int_equal(strict, 1);
	free(out);
	explorer_free(ex);
	suite_free(s);
}

/* The jobs of scenario "all", after checking that the same come, in the
 * same order, whatever order the traces arrive in (caller frees). */
static char *explore_all(const struct suite *s, bool every_kill, size_t *n,
			 size_t *strict)
{
	explorer *ex;
	char err[256], *out, *again;
	size_t n2, s2;

	for (int pass = 0; pass < 2; pass++) {
		assert_int_equal(explorer_new(s, scenario(s, "all"), NULL, &ex,
					      err, sizeof(err)), 0);
		if (every_kill)
			explorer_retry_every_kill(ex);
		if (pass == 0)
			out = drain(ex, false, n, strict);
		else
			again = drain(ex, true, &n2, &s2);
		explorer_free(ex);
	}
	assert_string_equal(out, again);
	free(again);
	return out;
}

static void test_exhaustive(void **state)
{
	struct suite *s = load();
	explorer *ex;
	char err[256], *out;
	size_t n, strict;

	(void)state;
	out = explore_all(s, false, &n, &strict);
	/* discovery + 4 points x 3 actions + recovery paths: after a kill at
	 * a, at b#1 / b#2 (the same path: one case) and at c, try 2 reaches
	 * 3 + 3 + 2 points, each x 3 actions */
	assert_int_equal(n, 1 + 12 + (3 + 3 + 2) * 3);
	assert_int_equal(strict, n);
	assert_non_null(strstr(out, "discovery clean\n"));
	assert_non_null(strstr(out, "try1 k:b@1#2/op1\n"));
	assert_non_null(strstr(out, "try1 p:c@1/op1>next\n"));
	assert_non_null(strstr(out, "try1 f:a@1/op1\n"));
	assert_non_null(strstr(out, "retry k:a@1/op1;p:b@2/op1>next\n"));
	assert_non_null(strstr(out, "retry k:b@1/op1;f:r@2/op1\n"));
	assert_non_null(strstr(out, "retry k:c@1/op1;k:d@2/op1\n"));
	assert_null(strstr(out, "retry k:b@1#2/op1;")); /* same path as b#1 */
	free(out);
	/* actions: [kill] (the default) */
	assert_int_equal(explorer_new(s, scenario(s, "killonly"), NULL, &ex, err,
				      sizeof(err)), 0);
	out = drain(ex, false, &n, &strict);
	assert_int_equal(n, 1 + 4 + (3 + 3 + 2));
	assert_null(strstr(out, "p:"));
	free(out);
	explorer_free(ex);
	suite_free(s);
}

/* explorer_retry_every_kill(): b#1 and b#2 walk the same recovery path
 * but may leave different states, so both get their retry wave; nothing
 * else changes. */
static void test_every_kill(void **state)
{
	struct suite *s = load();
	char *out;
	size_t n, strict;

	(void)state;
	out = explore_all(s, true, &n, &strict);
	/* discovery + 4 points x 3 actions + try 2 after each of the four
	 * kills: 3 + 3 + 3 + 2 points, each x 3 actions */
	assert_int_equal(n, 1 + 12 + (3 + 3 + 3 + 2) * 3);
	assert_int_equal(strict, n);
	assert_non_null(strstr(out, "retry k:b@1/op1;f:r@2/op1\n"));
	assert_non_null(strstr(out, "retry k:b@1#2/op1;k:a@2/op1\n"));
	assert_non_null(strstr(out, "retry k:b@1#2/op1;p:r@2/op1>next\n"));
	assert_non_null(strstr(out, "retry k:b@1#2/op1;f:c@2/op1\n"));
	assert_non_null(strstr(out, "retry k:c@1/op1;k:d@2/op1\n"));
	free(out);
	suite_free(s);
}

/* Drain ex feeding every trace try 1 = t1 and try 2 = t2; the number of
 * jobs. */
static size_t drain_with(explorer *ex, const char *const *t1, size_t n1,
			 size_t total1, const char *const *t2, size_t n2)
{
	struct explore_attempt a[2] = {
		{ .operation = 1, .try_number = 1, .hits = t1, .nhits = n1,
		  .hits_total = total1 },
		{ .operation = 1, .try_number = 2, .hits = t2, .nhits = n2 },
	};
	const struct explore_job *j;
	enum explore_next n;
	size_t jobs = 0;

	while ((n = explorer_next(ex, &j)) != EXPLORE_DONE) {
		assert_int_equal(n, EXPLORE_JOB); /* every trace is fed at once */
		jobs++;
		if (j->wants_trace)
			assert_int_equal(explorer_feed(ex, j->id, a, 2), 0);
	}
	return jobs;
}

/* A route that reports 500 distinct failpoint names (in try 1, and in
 * try 2 after every kill) would make 1 + 500 x 3 + 500 x 500 x 3
 * schedules; the explorer plans the points of the first EXPLORE_NAMES_MAX
 * names of each try and stops at EXPLORE_SCHEDULES_MAX, and says both. */
static void test_bounded_names(void **state)
{
	struct suite *s = load();
	static char names[500][16];
	const char *v[500];
	explorer *ex;
	char err[256];
	const char *why;
	size_t jobs;

	(void)state;
	for (int i = 0; i < 500; i++) {
		snprintf(names[i], sizeof(names[i]), "fp%03d", i);
		v[i] = names[i];
	}
	assert_int_equal(explorer_new(s, scenario(s, "all"), NULL, &ex, err,
				      sizeof(err)), 0);
	explorer_retry_every_kill(ex);
	jobs = drain_with(ex, v, 500, 0, v, 500);
	assert_true(jobs <= EXPLORE_SCHEDULES_MAX);
	assert_true(jobs > 1 + EXPLORE_NAMES_MAX * 3);
	why = explorer_bounded(ex);
	assert_non_null(why);
	assert_non_null(strstr(why, "op 1 try 1 reached more than 64 distinct "
			       "failpoint names (EXPLORE_NAMES_MAX)"));
	assert_non_null(strstr(why, "op 1 try 2 reached more than 64"));
	assert_non_null(strstr(why, "exploration capped at 10000 schedules"));
	explorer_free(ex);

	/* under the bounds: no reason */
	assert_int_equal(explorer_new(s, scenario(s, "all"), NULL, &ex, err,
				      sizeof(err)), 0);
	jobs = drain_with(ex, v, 10, 0, v, 10);
	assert_int_equal(jobs, 1 + 10 * 3 + 10 * 3);
	assert_null(explorer_bounded(ex));
	explorer_free(ex);
	suite_free(s);
}

/* A trace whose failpoints were cut (the report keeps RECORD_HITS_KEPT)
 * is explored as far as it was kept, and the scenario says so. */
static void test_bounded_hits(void **state)
{
	struct suite *s = load();
	explorer *ex;
	char err[256];

	(void)state;
	assert_int_equal(explorer_new(s, scenario(s, "killonly"), NULL, &ex, err,
				      sizeof(err)), 0);
	assert_int_equal(drain_with(ex, try1, 4, 5000, after_c, 2),
			 1 + 4 + 2);
	assert_non_null(explorer_bounded(ex));
	assert_non_null(strstr(explorer_bounded(ex), "op 1 try 1 reported more "
			       "than 1000 failpoints (RECORD_HITS_KEPT)"));
	explorer_free(ex);
	suite_free(s);
}

static void test_interleavings(void **state)
{
	struct suite *s = load();
	explorer *ex;
	char err[256], *out;
	size_t n, strict;

	(void)state;
	assert_int_equal(explorer_new(s, scenario(s, "inter"), NULL, &ex, err,
				      sizeof(err)), 0);
	out = drain(ex, false, &n, &strict);
	/* discovery + A paused at each of 4 points (B to completion) + A
	 * paused until B reaches each point B reached, first hits only */
	assert_int_equal(n, 1 + 4 + (3 + 3 + 3 + 2));
	assert_non_null(strstr(out, "interleave p:b@1#2/op1>next\n"));
	assert_non_null(strstr(out, "interleave p:a@1/op1>c\n"));
	assert_non_null(strstr(out, "interleave p:c@1/op1>d\n"));
	assert_null(strstr(out, "retry"));
	assert_null(strstr(out, "k:"));
	free(out);
	explorer_free(ex);
	suite_free(s);
}

static void test_random(void **state)
{
	struct suite *s = load();
	explorer *ex;
	char err[256], *a, *b, *c;
	size_t n, strict;
	uint64_t other = 10;

	(void)state;
	assert_int_equal(explorer_new(s, scenario(s, "rnd"), NULL, &ex, err,
				      sizeof(err)), 0);
	a = drain(ex, false, &n, &strict);
	explorer_free(ex);
	/* discovery + kills at the 4 points (recovery paths) + 5 random */
	assert_int_equal(n, 1 + 4 + 5);
	assert_int_equal(strict, 1 + 4); /* random ones are not strict */
	assert_non_null(strstr(a, "random "));
	assert_int_equal(explorer_new(s, scenario(s, "rnd"), NULL, &ex, err,
				      sizeof(err)), 0);
	b = drain(ex, true, &n, &strict);
	explorer_free(ex);
	assert_string_equal(a, b); /* same seed, same schedules */
	assert_int_equal(explorer_new(s, scenario(s, "rnd"), &other, &ex, err,
				      sizeof(err)), 0);
	c = drain(ex, false, &n, &strict);
	explorer_free(ex);
	assert_string_not_equal(a, c); /* --seed changes them */
	free(a);
	free(b);
	free(c);
	suite_free(s);
}

static void test_listed_and_unreached(void **state)
{
	struct suite *s = load();
	explorer *ex;
	const char *const *un;
	char err[256], *out;
	size_t n, strict;

	(void)state;
	assert_int_equal(explorer_new(s, scenario(s, "listed"), NULL, &ex, err,
				      sizeof(err)), 0);
	out = drain(ex, false, &n, &strict);
	/* only b is faulted: b#1 and b#2 in try 1; try 2 after them reaches
	 * no b (a, r, c) */
	assert_int_equal(n, 1 + 2);
	assert_null(strstr(out, ":a@"));
	un = explorer_unreached(ex);
	assert_string_equal(un[0], "zz");
	assert_null(un[1]);
	assert_false(explorer_incomplete(ex));
	free(out);
	explorer_free(ex);
	suite_free(s);
}

static void test_no_failpoints(void **state)
{
	struct suite *s = load();
	explorer *ex;
	const struct explore_job *j;
	char err[256];

	(void)state;
	assert_int_equal(explorer_new(s, scenario(s, "all"), NULL, &ex, err,
				      sizeof(err)), 0);
	assert_int_equal(explorer_next(ex, &j), EXPLORE_JOB);
	feed(ex, j->id, NULL, 0, NULL, 0);
	assert_int_equal(explorer_next(ex, &j), EXPLORE_DONE);
	assert_true(explorer_incomplete(ex));
	explorer_free(ex);
	suite_free(s);
}

static void test_replay(void **state)
{
	struct suite *s = load();
	explorer *ex;
	const struct explore_job *j;
	char err[256];

	(void)state;
	assert_int_equal(explorer_new_replay(s, scenario(s, "all"),
					     "k:b@1#2/op1;p:r@2/op1>next", &ex,
					     err, sizeof(err)), 0);
	assert_int_equal(explorer_next(ex, &j), EXPLORE_JOB);
	assert_string_equal(j->schedule, "k:b@1#2/op1;p:r@2/op1>next");
	assert_int_equal(j->operations, 1); /* explore scenarios: 1 operation */
	assert_true(j->strict);
	assert_int_equal(explorer_next(ex, &j), EXPLORE_DONE);
	explorer_free(ex);
	assert_int_equal(explorer_new_replay(s, scenario(s, "all"), "k:", &ex,
					     err, sizeof(err)), FC_USAGE);
	suite_free(s);
}

/* Feed a proxy discovery: op 1 try 1 committed `commits` times through
 * the proxy (and a later try, which must not count, 9 times). */
static void feed_commits(explorer *ex, int id, unsigned long commits)
{
	struct explore_attempt a[2] = {
		{ .operation = 1, .try_number = 1, .commits = commits },
		{ .operation = 1, .try_number = 2, .commits = 9 },
	};

	assert_int_equal(explorer_feed(ex, id, a, 2), 0);
}

static void test_proxy_commits(void **state)
{
	static const char *const want[] = {
		"c@1/op1=pgt", "h@1/op1=pgt", "c@1#2/op1=pgt", "h@1#2/op1=pgt",
		"c@1#3/op1=pgt", "h@1#3/op1=pgt",
	};
	struct suite *s = load();
	const struct explore_job *j;
	explorer *ex;
	char err[256];

	(void)state;
	assert_int_equal(explorer_new(s, scenario(s, "commits"), NULL, &ex, err,
				      sizeof(err)), 0);
	assert_int_equal(explorer_next(ex, &j), EXPLORE_JOB);
	assert_string_equal(j->kind, "discovery");
	assert_int_equal(j->nfaults, 0);
	assert_true(j->wants_trace);
	assert_int_equal(j->operations, 1);
	assert_int_equal(explorer_next(ex, &j), EXPLORE_WAIT);
	feed_commits(ex, j->id, 3);
	/* every COMMIT x action, in COMMIT order, cut before hold */
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		struct fault *f;
		size_t n;
		char back[SCHEDULE_STR_MAX];

		assert_int_equal(explorer_next(ex, &j), EXPLORE_JOB);
		assert_string_equal(j->kind, "proxy");
		assert_string_equal(j->schedule, want[i]);
		assert_true(j->strict);
		assert_false(j->wants_trace);
		assert_int_equal(j->nfaults, 1);
		assert_string_equal(j->faults[0].proxy, "pgt");
		assert_int_equal(j->faults[0].hit, (int)i / 2 + 1);
		assert_int_equal(j->faults[0].attempt, 1);
		assert_int_equal(j->faults[0].operation, 1);
		/* the string replays: the same fault back */
		assert_int_equal(schedule_parse(j->schedule, &f, &n, err,
						sizeof(err)), 0);
		assert_int_equal(n, 1);
		assert_int_equal(f[0].action, j->faults[0].action);
		assert_int_equal(f[0].hit, j->faults[0].hit);
		assert_int_equal(schedule_format(f, n, back, sizeof(back)), 0);
		assert_string_equal(back, want[i]);
		free(f);
	}
	assert_int_equal(explorer_next(ex, &j), EXPLORE_DONE);
	assert_false(explorer_incomplete(ex));
	explorer_free(ex);

	/* actions default to cut_after_commit */
	assert_int_equal(explorer_new(s, scenario(s, "cuts"), NULL, &ex, err,
				      sizeof(err)), 0);
	assert_int_equal(explorer_next(ex, &j), EXPLORE_JOB);
	feed_commits(ex, j->id, 2);
	assert_int_equal(explorer_next(ex, &j), EXPLORE_JOB);
	assert_string_equal(j->schedule, "c@1/op1=pgt");
	assert_int_equal(explorer_next(ex, &j), EXPLORE_JOB);
	assert_string_equal(j->schedule, "c@1#2/op1=pgt");
	assert_int_equal(explorer_next(ex, &j), EXPLORE_DONE);
	explorer_free(ex);

	/* nothing committed through the proxy: nothing to explore, and the
	 * scenario says so */
	assert_int_equal(explorer_new(s, scenario(s, "commits"), NULL, &ex, err,
				      sizeof(err)), 0);
	assert_int_equal(explorer_next(ex, &j), EXPLORE_JOB);
	feed_commits(ex, j->id, 0);
	assert_int_equal(explorer_next(ex, &j), EXPLORE_DONE);
	assert_true(explorer_incomplete(ex));
	explorer_free(ex);
	suite_free(s);
}

/* explore: {proxy: ...} is checked where the suite is loaded. */
static void test_proxy_explore_errors(void **state)
{
	static const struct {
		const char *explore;
		const char *message;
	} bad[] = {
		{ "{proxy: nope}", "'nope' names no proxy of the suite" },
		{ "{proxy: pgt, actions: [kill]}",
		  "action 'kill' cannot be explored on a proxy" },
		{ "{proxy: pgt, actions: [refuse]}",
		  "action 'refuse' cannot be explored on a proxy" },
		{ "{proxy: pgt, actions: [hold_commit, hold_commit]}",
		  "'hold_commit' is listed twice" },
		{ "{proxy: pgt, syscalls: [fsync]}",
		  "'syscalls' does not apply to a proxy exploration" },
		{ "{proxy: pgt, failpoints: all}",
		  "'failpoints' does not apply to a proxy exploration" },
	};
	char yaml[1024], err[512];

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct suite *s = NULL;
		int n = snprintf(yaml, sizeof(yaml),
				 "version: 1\nsuite: t\nroutes:\n"
				 "  - name: r\n    command: [x]\n"
				 "    journal: 'sqlite:{dir}/j'\n"
				 "    target: 'sqlite:{dir}/t'\n"
				 "    observe: {sql: 'SELECT 1, 1'}\n"
				 "proxies:\n  - {name: pgt, upstream: '127.0.0.1:1'}\n"
				 "scenarios:\n  - name: x\n    explore: %s\n",
				 bad[i].explore);

		assert_int_equal(suite_load_buffer("t.yaml", yaml, (size_t)n, &s,
						   err, sizeof(err)), FC_USAGE);
		assert_null(s);
		if (!strstr(err, bad[i].message))
			fail_msg("%s: got '%s'", bad[i].explore, err);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fixed),
		cmocka_unit_test(test_exhaustive),
		cmocka_unit_test(test_every_kill),
		cmocka_unit_test(test_bounded_names),
		cmocka_unit_test(test_bounded_hits),
		cmocka_unit_test(test_interleavings),
		cmocka_unit_test(test_random),
		cmocka_unit_test(test_listed_and_unreached),
		cmocka_unit_test(test_no_failpoints),
		cmocka_unit_test(test_replay),
		cmocka_unit_test(test_proxy_commits),
		cmocka_unit_test(test_proxy_explore_errors),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
