/*
 * test_route_retry.c -- SIGKILL at each failpoint of the retry paths.
 *
 * A first attempt is killed so that the operation is left in each state a
 * retry must handle (PREPARING, PREPARED, COMMITTING with nothing applied,
 * COMMITTING with the rows applied, TARGET_COMMITTED).  One undisturbed
 * retry from that state lists the failpoints of its path; then, for each of
 * them, a copy of the killed state gets a retry killed there, and further
 * retries run until the route exits 0.  Every source row must end up in the
 * target exactly once, the journal COMPLETE with a legal history, and every
 * retry's first target call a probe.  Both the sqlite: and file: target.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tests/route_supervisor.h"

#define ROWS 25
#define KILLED (128 + 9)

#define CHECK(expr) do { if ((expr) != 0) fail_msg("%s", rs_error); } while (0)

/* Each leaves the operation in another state for the retry. */
static const char *const seeds[] = {
	"after_lease",            /* PREPARING under a dead lease */
	"after_prepared",         /* PREPARED */
	"after_committing",       /* COMMITTING, nothing applied */
	"after_target_commit",    /* COMMITTING, rows applied */
	"after_target_committed", /* TARGET_COMMITTED */
	NULL,
};

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

static void kill_retry_path(const char *kind)
{
	for (int s = 0; seeds[s]; s++) {
		struct rs_attempt a, path;
		struct rs_op base, op;
		char what[160];

		CHECK(rs_op_init(&base, kind, ROWS));
		CHECK(rs_start1(&base, NULL, 1, RS_KILL, seeds[s], &a));
		assert_int_equal(a.status, KILLED);

		CHECK(rs_op_clone(&base, &op));
		CHECK(rs_start1(&op, NULL, 2, RS_NONE, NULL, &path));
		snprintf(what, sizeof(what), "%s: retry after kill at %s", kind, seeds[s]);
		expect_complete_once(&op, &path, what);
		assert_true(rs_first_target_call(&path) < 0 ||
			    strcmp(path.hits[rs_first_target_call(&path)],
				   "before_reconcile_probe") == 0);
		rs_op_cleanup(&op);

		for (int i = 0; i < path.nhits; i++) {
			struct rs_fault f[2] = {
				{ RS_KILL, path.hits[i], rs_occurrence(&path, i) },
				{ RS_NONE, NULL, 0 },
			};

			snprintf(what, sizeof(what), "%s: kill at %s, then at %s #%d",
				 kind, seeds[s], path.hits[i], f[0].hit);
			CHECK(rs_op_clone(&base, &op));
			CHECK(rs_start(&op, NULL, 2, f, &a));
			if (a.status != KILLED)
				fail_msg("%s: try 2 exited %d", what, a.status);
			if (rs_retry(&op, NULL, 3, 8, &a))
				fail_msg("%s: %s", what, rs_error);
			expect_complete_once(&op, &a, what);
			rs_op_cleanup(&op);
		}
		rs_op_cleanup(&base);
	}
}

static void test_retry_paths_sqlite(void **state) { (void)state; kill_retry_path("sqlite"); }
static void test_retry_paths_file(void **state) { (void)state; kill_retry_path("file"); }

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_retry_paths_sqlite),
		cmocka_unit_test(test_retry_paths_file),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
