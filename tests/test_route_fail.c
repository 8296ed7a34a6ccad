/*
 * test_route_fail.c -- the supervisor answers 'f' (fail this step as an I/O
 * error would) at each failpoint, on the first attempt and on the retry
 * paths, then lets retries run.
 *
 * Expected: the operation converges to COMPLETE with every row exactly
 * once, except where the fault makes the outcome unprovable -- a failed
 * reconcile probe while the journal says COMMITTING -- where the route must
 * stop fail-closed: exit 100, journal COMMIT_UNKNOWN, no row written twice,
 * and a further try stops again without touching the target.
 *
 * An 'f' also sends the attempt through recovery steps a clean run never
 * takes (FAILED_PRE_COMMIT, COMMITTED_INCOMPLETE, COMMIT_UNKNOWN, the
 * restart to PREPARING); each of those failpoints is also killed, once, on
 * top of the 'f' that leads there.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tests/route_supervisor.h"

#define ROWS 20
#define KILLED (128 + 9)

#define CHECK(expr) do { if ((expr) != 0) fail_msg("%s", rs_error); } while (0)

static const char *const clean_sequence[] = {
	"before_intent", "after_intent", "before_lease", "after_lease",
	"before_fence_prepare", "after_fence_prepare", "before_prepared",
	"after_prepared", "before_committing", "after_committing",
	"before_target_commit", "after_target_commit", "before_probe",
	"after_probe", "before_target_committed", "after_target_committed",
	"before_evidence", "after_evidence", "before_complete", "after_complete",
	NULL,
};

static const char *const seeds[] = {
	"after_lease", "after_prepared", "after_committing",
	"after_target_commit", "after_target_committed", NULL,
};

static bool is_recovery_point(const char *name)
{
	return strstr(name, "failed_pre_commit") || strstr(name, "restart") ||
	       strstr(name, "commit_unknown") || strstr(name, "committed_incomplete");
}

static void expect_complete_once(struct rs_op *op, const struct rs_attempt *last,
				 const char *what)
{
	if (last->status != 0) {
		rs_log(op, last->try_number);
		fail_msg("%s: last try %d exited %d", what, last->try_number,
			 last->status);
	}
	if (rs_check_rows(op, 1))
		fail_msg("%s: %s", what, rs_error);
	if (rs_journal_state(op) != FC_COMPLETE)
		fail_msg("%s: journal is not COMPLETE", what);
	if (rs_check_history(op))
		fail_msg("%s: %s", what, rs_error);
}

/* Exit 100 with COMMIT_UNKNOWN, rows as they were, and a next try stops
 * too without a single target call. */
static void expect_stopped(struct rs_op *op, const struct rs_attempt *last,
			   int rows_each, const char *what)
{
	struct rs_attempt again;

	if (last->status != 100) {
		rs_log(op, last->try_number);
		fail_msg("%s: try %d exited %d, expected 100", what,
			 last->try_number, last->status);
	}
	if (rs_journal_state(op) != FC_COMMIT_UNKNOWN)
		fail_msg("%s: journal is not COMMIT_UNKNOWN", what);
	if (rs_check_rows(op, rows_each) || rs_check_history(op))
		fail_msg("%s: %s", what, rs_error);
	CHECK(rs_start1(op, NULL, last->try_number + 1, RS_NONE, NULL, &again));
	assert_int_equal(again.status, 100);
	assert_int_equal(rs_first_target_call(&again), -1);
	if (rs_check_rows(op, rows_each))
		fail_msg("%s (after another try): %s", what, rs_error);
}

/* 'f' at failpoint `name` (its n-th hit) on try `t` of op, then retries. */
static void fail_then_retry(struct rs_op *op, int t, const char *name, int hit,
			    const char *what, struct rs_attempt *a)
{
	struct rs_fault f[2] = { { RS_FAIL, name, hit }, { RS_NONE, NULL, 0 } };

	CHECK(rs_start(op, NULL, t, f, a));
	if (!a->fired[0])
		fail_msg("%s: failpoint never reached", what);
	if (a->status != 0 && a->status != 75 && a->status != 100) {
		rs_log(op, t);
		fail_msg("%s: try %d exited %d", what, t, a->status);
	}
}

static void fail_first_attempt(const char *kind)
{
	for (int i = 0; clean_sequence[i]; i++) {
		struct rs_attempt a, tried;
		struct rs_op op;
		char what[160];

		snprintf(what, sizeof(what), "%s: f at %s", kind, clean_sequence[i]);
		CHECK(rs_op_init(&op, kind, ROWS));
		fail_then_retry(&op, 1, clean_sequence[i], 1, what, &tried);
		if (tried.status != 0 && rs_retry(&op, NULL, 2, 6, &a))
			fail_msg("%s: %s", what, rs_error);
		expect_complete_once(&op, tried.status == 0 ? &tried : &a, what);
		rs_op_cleanup(&op);

		/* Kill each recovery step this 'f' led through. */
		for (int k = i + 1; k < tried.nhits; k++) {
			struct rs_fault f[3] = {
				{ RS_FAIL, clean_sequence[i], 1 },
				{ RS_KILL, tried.hits[k], rs_occurrence(&tried, k) },
				{ RS_NONE, NULL, 0 },
			};

			if (!is_recovery_point(tried.hits[k]))
				continue;
			snprintf(what, sizeof(what), "%s: f at %s, kill at %s", kind,
				 clean_sequence[i], tried.hits[k]);
			CHECK(rs_op_init(&op, kind, ROWS));
			CHECK(rs_start(&op, NULL, 1, f, &a));
			assert_int_equal(a.status, KILLED);
			if (rs_retry(&op, NULL, 2, 6, &a))
				fail_msg("%s: %s", what, rs_error);
			expect_complete_once(&op, &a, what);
			rs_op_cleanup(&op);
		}
	}
}

static void test_fail_first_attempt_sqlite(void **state) { (void)state; fail_first_attempt("sqlite"); }
static void test_fail_first_attempt_file(void **state) { (void)state; fail_first_attempt("file"); }

/* On a copy of base: try 2 fails at fname and is killed at each recovery
 * step that 'f' led through; retries must then complete, or stop
 * fail-closed when the kill came after COMMIT_UNKNOWN was recorded. */
static void kill_recovery_steps(const struct rs_op *base,
				const struct rs_attempt *tried, const char *fname,
				int fhit, int applied, const char *what_f)
{
	int at = 0; /* where the 'f' was answered: only what follows it */

	while (at < tried->nhits && !(strcmp(tried->hits[at], fname) == 0 &&
				      rs_occurrence(tried, at) == fhit))
		at++;
	for (int k = at + 1; k < tried->nhits; k++) {
		struct rs_fault f[3] = {
			{ RS_FAIL, fname, fhit },
			{ RS_KILL, tried->hits[k], rs_occurrence(tried, k) },
			{ RS_NONE, NULL, 0 },
		};
		struct rs_attempt a;
		struct rs_op op;
		char what[256];

		if (!is_recovery_point(tried->hits[k]))
			continue;
		snprintf(what, sizeof(what), "%s, kill at %s", what_f, tried->hits[k]);
		CHECK(rs_op_clone(base, &op));
		CHECK(rs_start(&op, NULL, 2, f, &a));
		if (a.status != KILLED) {
			rs_log(&op, 2);
			fail_msg("%s: try 2 exited %d", what, a.status);
		}
		if (rs_retry(&op, NULL, 3, 8, &a))
			fail_msg("%s: %s", what, rs_error);
		if (a.status == 100)
			expect_stopped(&op, &a, applied, what);
		else
			expect_complete_once(&op, &a, what);
		rs_op_cleanup(&op);
	}
}

static void fail_retry_paths(const char *kind)
{
	for (int s = 0; seeds[s]; s++) {
		bool committing = strcmp(seeds[s], "after_committing") == 0 ||
				  strcmp(seeds[s], "after_target_commit") == 0;
		int applied = strcmp(seeds[s], "after_lease") != 0 &&
			      strcmp(seeds[s], "after_prepared") != 0 &&
			      strcmp(seeds[s], "after_committing") != 0;
		struct rs_attempt a, path, tried;
		struct rs_op base, op;
		char what[200];

		CHECK(rs_op_init(&base, kind, ROWS));
		CHECK(rs_start1(&base, NULL, 1, RS_KILL, seeds[s], &a));
		CHECK(rs_op_clone(&base, &op));
		CHECK(rs_start1(&op, NULL, 2, RS_NONE, NULL, &path));
		assert_int_equal(path.status, 0);
		rs_op_cleanup(&op);

		for (int i = 0; i < path.nhits; i++) {
			const char *name = path.hits[i];
			bool stops = committing && strstr(name, "reconcile_probe");

			snprintf(what, sizeof(what), "%s: kill at %s, f at %s #%d",
				 kind, seeds[s], name, rs_occurrence(&path, i));
			CHECK(rs_op_clone(&base, &op));
			fail_then_retry(&op, 2, name, rs_occurrence(&path, i), what,
					&tried);
			if (stops) {
				expect_stopped(&op, &tried, applied, what);
			} else {
				if (tried.status == 100)
					fail_msg("%s: stopped fail-closed where the "
						 "outcome is provable", what);
				if (tried.status != 0 && rs_retry(&op, NULL, 3, 8, &a))
					fail_msg("%s: %s", what, rs_error);
				expect_complete_once(&op, tried.status == 0 ? &tried : &a,
						     what);
			}
			rs_op_cleanup(&op);
			kill_recovery_steps(&base, &tried, name, rs_occurrence(&path, i),
					    applied, what);
		}
		rs_op_cleanup(&base);
	}
}

static void test_fail_retry_paths_sqlite(void **state) { (void)state; fail_retry_paths("sqlite"); }

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fail_first_attempt_sqlite),
		cmocka_unit_test(test_fail_first_attempt_file),
		cmocka_unit_test(test_fail_retry_paths_sqlite),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
