/*
 * test_route_pg.c -- the certified C route (`fencecert route`, real
 * processes) with the journal on SQLite and the target on PostgreSQL, once
 * per fence (pg-txn, pg-2pc): a clean run reaches COMPLETE with every row
 * once; a kill of the whole process group at each failpoint of the first
 * attempt (after_target_commit: the commit landed, nobody was told) is
 * followed by retries that complete without a duplicate; the fence-row-only control
 * runs a clean workload to COMPLETE too (its hole needs hold_commit).
 *
 * Server: tests/pg_server.h.  Needs FENCECERT (the fencecert binary), as
 * every route test does.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "pg_server.h"
#include "tests/route_supervisor.h"

#define ROWS 25
#define KILLED (128 + 9)

#define CHECK(expr) do { if ((expr) != 0) fail_msg("%s", rs_error); } while (0)

/* A scratch operation whose target is a fresh schema with `fence`. */
static void pg_op(struct rs_op *op, const char *fence)
{
	char extra[64];

	CHECK(rs_op_init(op, "sqlite", ROWS));
	snprintf(extra, sizeof(extra), "fence=%s", fence);
	pg_server_target("rt", extra, op->target, sizeof(op->target), NULL);
	snprintf(op->kind, sizeof(op->kind), "pg");
}

static void expect_complete_once(struct rs_op *op, const struct rs_attempt *a,
				 const char *what)
{
	if (a->status != 0) {
		rs_log(op, a->try_number);
		fail_msg("%s: try %d exited %d", what, a->try_number, a->status);
	}
	if (rs_check_rows(op, 1))
		fail_msg("%s: %s", what, rs_error);
	if (rs_journal_state(op) != FC_COMPLETE)
		fail_msg("%s: journal is not COMPLETE", what);
	if (rs_check_history(op))
		fail_msg("%s: %s", what, rs_error);
}

static void clean_run(const char *fence, const char *variant)
{
	const char *argv[] = { getenv("FENCECERT"), "route", "--variant",
			       variant, NULL };
	struct rs_route r = { .argv = argv };
	struct rs_attempt a;
	struct rs_op op;
	char buf[64];

	pg_op(&op, fence);
	CHECK(rs_start1(&op, variant ? &r : NULL, 1, RS_NONE, NULL, &a));
	expect_complete_once(&op, &a, fence);
	CHECK(rs_return_field(&op, 1, "mutated", buf, sizeof(buf)));
	assert_string_equal(buf, "true");
	/* A rerun touches nothing and says so. */
	CHECK(rs_start1(&op, variant ? &r : NULL, 2, RS_NONE, NULL, &a));
	expect_complete_once(&op, &a, fence);
	assert_int_equal(rs_first_target_call(&a), -1);
	rs_op_cleanup(&op);
}

static void kill_and_retry(const char *fence, const char *failpoint)
{
	struct rs_attempt a;
	struct rs_op op;
	char what[96];

	snprintf(what, sizeof(what), "%s: kill at %s", fence, failpoint);
	pg_op(&op, fence);
	CHECK(rs_start1(&op, NULL, 1, RS_KILL, failpoint, &a));
	if (a.status != KILLED) {
		rs_log(&op, 1);
		fail_msg("%s: try 1 exited %d, not killed", what, a.status);
	}
	if (rs_retry(&op, NULL, 2, 6, &a))
		fail_msg("%s: %s", what, rs_error);
	expect_complete_once(&op, &a, what);
	rs_op_cleanup(&op);
}

static void test_txn_clean(void **s) { (void)s; clean_run("pg-txn", NULL); }
static void test_2pc_clean(void **s) { (void)s; clean_run("pg-2pc", NULL); }
static void test_row_only_clean(void **s)
{
	(void)s;
	clean_run("pg-txn", "pg-fence-row-only");
}

/* Every failpoint of a clean first attempt (docs/failpoints.md). */
static const char *const first_attempt[] = {
	"after_intent", "before_lease", "after_lease", "before_fence_prepare",
	"after_fence_prepare", "before_prepared", "after_prepared",
	"before_committing", "after_committing", "before_target_commit",
	"after_target_commit", "before_probe", "after_probe",
	"before_target_committed", "after_target_committed", "before_evidence",
	"after_evidence", "before_complete", "after_complete", NULL,
};

static void test_txn_kills(void **s)
{
	(void)s;
	for (int i = 0; first_attempt[i]; i++)
		kill_and_retry("pg-txn", first_attempt[i]);
}

static void test_2pc_kills(void **s)
{
	(void)s;
	for (int i = 0; first_attempt[i]; i++)
		kill_and_retry("pg-2pc", first_attempt[i]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_txn_clean),
		cmocka_unit_test(test_2pc_clean),
		cmocka_unit_test(test_row_only_clean),
		cmocka_unit_test(test_txn_kills),
		cmocka_unit_test(test_2pc_kills),
	};
	int failed;

	if (!getenv("FENCECERT")) {
		printf("[  SKIPPED ] route pg: FENCECERT is not set\n");
		return 0;
	}
	if (!pg_server_url())
		return 0;
	failed = cmocka_run_group_tests_name("route pg", tests, NULL, NULL);
	return failed + (pg_server_release() ? 1 : 0);
}
