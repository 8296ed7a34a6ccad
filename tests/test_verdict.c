/*
 * test_verdict.c -- the checker's verdict module (harness/check/verdict.h):
 * verdict and outcome names, the fold of a route's schedules into a
 * verdict, and which verdict meets which `expect:` word of a suite.
 *
 * The expectation table is checked against the suite model's own words
 * (expectation_name()), so the model and the verdict module cannot drift
 * apart without this test failing.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "harness/check/verdict.h"
#include "harness/model/scenario.h"

static void test_verdict_names(void **state)
{
	static const char *const want[VERDICT_COUNT] = {
		"certified-automatic", "certified-fail-closed", "rejected",
		"unverified",
	};
	enum verdict v;

	(void)state;
	for (int i = 0; i < VERDICT_COUNT; i++) {
		assert_string_equal(verdict_name((enum verdict)i), want[i]);
		assert_int_equal(verdict_parse(want[i], &v), 0);
		assert_int_equal(v, i);
	}
	assert_string_equal(verdict_name(VERDICT_COUNT), "unknown");
	assert_int_equal(verdict_parse("certified", &v), FC_USAGE);
	assert_int_equal(verdict_parse("", &v), FC_USAGE);
	assert_int_equal(verdict_parse("Rejected", &v), FC_USAGE);
}

static void test_outcome_names(void **state)
{
	enum schedule_outcome o;

	(void)state;
	for (int i = 0; i < OUTCOME_COUNT; i++) {
		assert_int_equal(outcome_parse(outcome_name(i), &o), 0);
		assert_int_equal(o, i);
	}
	assert_string_equal(outcome_name(OUTCOME_STOP_EXCUSED), "stopped-unprovable");
	assert_string_equal(outcome_name(OUTCOME_COUNT), "unknown");
	assert_int_equal(outcome_parse("unknown", &o), FC_USAGE);
}

static void test_fold(void **state)
{
	struct verdict_tally t;

	(void)state;
	memset(&t, 0, sizeof(t));
	assert_int_equal(verdict_tally_fold(&t), VERDICT_UNVERIFIED);
	verdict_tally_add(&t, 0, OUTCOME_CONVERGED);
	verdict_tally_add(&t, 0, OUTCOME_STOP_EXCUSED);
	verdict_tally_add(&t, 0, OUTCOME_EXHAUSTED);
	assert_int_equal(verdict_tally_fold(&t), VERDICT_CERTIFIED_AUTOMATIC);
	verdict_tally_add(&t, 0, OUTCOME_STOPPED);
	assert_int_equal(verdict_tally_fold(&t), VERDICT_CERTIFIED_FAIL_CLOSED);
	verdict_tally_add(&t, 0, OUTCOME_UNVERIFIED);
	assert_int_equal(verdict_tally_fold(&t), VERDICT_UNVERIFIED);
	verdict_tally_add(&t, 1, OUTCOME_CONVERGED);
	assert_int_equal(verdict_tally_fold(&t), VERDICT_REJECTED);
	memset(&t, 0, sizeof(t));
	verdict_tally_add(&t, 0, OUTCOME_NOT_CONVERGED);
	assert_int_equal(verdict_tally_fold(&t), VERDICT_CERTIFIED_FAIL_CLOSED);
	/* an outcome out of range is a schedule of no outcome */
	memset(&t, 0, sizeof(t));
	verdict_tally_add(&t, 0, OUTCOME_COUNT);
	assert_int_equal(t.schedules, 1);
	assert_int_equal(verdict_tally_fold(&t), VERDICT_CERTIFIED_AUTOMATIC);
}

static void test_fold_ignores_order(void **state)
{
	static const enum schedule_outcome outcomes[] = {
		OUTCOME_CONVERGED, OUTCOME_STOPPED, OUTCOME_EXHAUSTED,
		OUTCOME_NOT_CONVERGED,
	};
	struct verdict_tally a, b;
	size_t n = sizeof(outcomes) / sizeof(outcomes[0]);

	(void)state;
	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	for (size_t i = 0; i < n; i++) {
		verdict_tally_add(&a, 0, outcomes[i]);
		verdict_tally_add(&b, 0, outcomes[n - 1 - i]);
	}
	assert_memory_equal(&a, &b, sizeof(a));
	assert_int_equal(verdict_tally_fold(&a), verdict_tally_fold(&b));
}

static void test_meets(void **state)
{
	/* rows: expectation; columns: automatic, fail-closed, rejected, unverified */
	static const bool table[4][VERDICT_COUNT] = {
		[EXPECT_CERTIFIED] = { true, true, false, false },
		[EXPECT_CERTIFIED_AUTOMATIC] = { true, false, false, false },
		[EXPECT_CERTIFIED_FAIL_CLOSED] = { false, true, false, false },
		[EXPECT_REJECTED] = { false, false, true, false },
	};

	(void)state;
	for (int e = 0; e < 4; e++)
		for (int v = 0; v < VERDICT_COUNT; v++)
			assert_int_equal(verdict_meets((enum verdict)v,
						       expectation_name(e)),
					 table[e][v]);
	/* nobody expects unverified, and unknown words are never met */
	for (int v = 0; v < VERDICT_COUNT; v++) {
		assert_false(verdict_meets((enum verdict)v, "unverified"));
		assert_false(verdict_meets((enum verdict)v, "certifie"));
		assert_false(verdict_meets((enum verdict)v, ""));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_verdict_names),
		cmocka_unit_test(test_outcome_names),
		cmocka_unit_test(test_fold),
		cmocka_unit_test(test_fold_ignores_order),
		cmocka_unit_test(test_meets),
	};

	return cmocka_run_group_tests_name("verdict", tests, NULL, NULL);
}
