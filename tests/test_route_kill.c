/*
 * test_route_kill.c -- the certified C route as real processes under
 * SIGKILL: a clean run (the documented failpoint order), a rerun that
 * changes nothing at the target, then a kill of the whole process group at
 * EACH failpoint of the first attempt, followed by retries until the route
 * exits 0.  Afterwards every source row is in the target exactly once (read
 * back by the observer), the journal is COMPLETE with a legal history, and
 * every retry's first target call was a probe.  Both the sqlite: and the
 * file: target.  The retry paths are in test_route_retry.c.
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

/* The documented order of a clean first attempt (docs/failpoints.md). */
static const char *const clean_sequence[] = {
	"before_intent", "after_intent", "before_lease", "after_lease",
	"before_fence_prepare", "after_fence_prepare", "before_prepared",
	"after_prepared", "before_committing", "after_committing",
	"before_target_commit", "after_target_commit", "before_probe",
	"after_probe", "before_target_committed", "after_target_committed",
	"before_evidence", "after_evidence", "before_complete", "after_complete",
	NULL,
};

#define CHECK(expr) do { if ((expr) != 0) fail_msg("%s", rs_error); } while (0)

static void expect_complete_once(struct rs_op *op, const struct rs_attempt *last,
				 const char *what)
{
	char buf[128];

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
	CHECK(rs_return_field(op, last->try_number, "rows_written", buf, sizeof(buf)));
	if (atoi(buf) != ROWS)
		fail_msg("%s: return.json rows_written %s", what, buf);
	CHECK(rs_return_field(op, last->try_number, "state", buf, sizeof(buf)));
	assert_string_equal(buf, "COMPLETE");
}

static void clean_and_rerun(const char *kind)
{
	char before[8192], after[8192], buf[128], opid[80], intent[80];
	struct rs_attempt a;
	struct rs_op op;
	int i;

	CHECK(rs_op_init(&op, kind, ROWS));
	CHECK(rs_start1(&op, NULL, 1, RS_NONE, NULL, &a));
	if (a.status != 0)
		rs_log(&op, 1);
	assert_int_equal(a.status, 0);
	for (i = 0; clean_sequence[i]; i++) {
		if (i >= a.nhits || strcmp(a.hits[i], clean_sequence[i]) != 0)
			fail_msg("hit %d is %s, expected %s", i,
				 i < a.nhits ? a.hits[i] : "(none)", clean_sequence[i]);
	}
	assert_int_equal(a.nhits, i);
	expect_complete_once(&op, &a, "clean run");
	CHECK(rs_ids(&op, opid, intent));
	CHECK(rs_return_field(&op, 1, "operation_id", buf, sizeof(buf)));
	assert_string_equal(buf, opid);
	CHECK(rs_return_field(&op, 1, "intent_digest", buf, sizeof(buf)));
	assert_string_equal(buf, intent);
	CHECK(rs_return_field(&op, 1, "mutated", buf, sizeof(buf)));
	assert_string_equal(buf, "true");
	CHECK(rs_return_field(&op, 1, "epoch", buf, sizeof(buf)));
	assert_string_equal(buf, "1");

	/* The same workload again: nothing at the target moves. */
	rs_target_stamp(&op, before, sizeof(before));
	CHECK(rs_start1(&op, NULL, 2, RS_NONE, NULL, &a));
	assert_int_equal(a.status, 0);
	rs_target_stamp(&op, after, sizeof(after));
	assert_string_equal(before, after);
	assert_int_equal(rs_first_target_call(&a), -1);
	expect_complete_once(&op, &a, "rerun");
	CHECK(rs_return_field(&op, 2, "mutated", buf, sizeof(buf)));
	assert_string_equal(buf, "false");
	CHECK(rs_return_field(&op, 2, "try_number", buf, sizeof(buf)));
	assert_string_equal(buf, "2");
	rs_op_cleanup(&op);
}

static void test_clean_sqlite(void **state) { (void)state; clean_and_rerun("sqlite"); }
static void test_clean_file(void **state) { (void)state; clean_and_rerun("file"); }

static void kill_first_attempt(const char *kind)
{
	for (int i = 0; clean_sequence[i]; i++) {
		struct rs_attempt a;
		struct rs_op op;
		char what[128];

		snprintf(what, sizeof(what), "%s: kill at %s", kind, clean_sequence[i]);
		CHECK(rs_op_init(&op, kind, ROWS));
		CHECK(rs_start1(&op, NULL, 1, RS_KILL, clean_sequence[i], &a));
		if (a.status != KILLED)
			fail_msg("%s: try 1 exited %d, not killed", what, a.status);
		if (rs_retry(&op, NULL, 2, 6, &a))
			fail_msg("%s: %s", what, rs_error);
		expect_complete_once(&op, &a, what);
		rs_op_cleanup(&op);
	}
}

static void test_kill_first_attempt_sqlite(void **state) { (void)state; kill_first_attempt("sqlite"); }
static void test_kill_first_attempt_file(void **state) { (void)state; kill_first_attempt("file"); }

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_clean_sqlite),
		cmocka_unit_test(test_clean_file),
		cmocka_unit_test(test_kill_first_attempt_sqlite),
		cmocka_unit_test(test_kill_first_attempt_file),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
