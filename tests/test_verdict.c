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

#include "harness/check/report_summary.h"
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
	verdict_tally_windows(&t, true, true);
	assert_int_equal(verdict_tally_fold(&t), VERDICT_CERTIFIED_FAIL_CLOSED);
	/* an outcome out of range is a schedule of no outcome */
	memset(&t, 0, sizeof(t));
	verdict_tally_add(&t, 0, OUTCOME_COUNT);
	assert_int_equal(t.schedules, 1);
	assert_int_equal(verdict_tally_fold(&t), VERDICT_CERTIFIED_AUTOMATIC);
}

/* No certificate for a window no fault reached: both windows must have
 * been challenged by some schedule; a rejection stays a rejection. */
static void test_fold_windows(void **state)
{
	struct verdict_tally t;

	(void)state;
	memset(&t, 0, sizeof(t));
	verdict_tally_add(&t, 0, OUTCOME_CONVERGED);
	verdict_tally_windows(&t, false, false);
	assert_int_equal(verdict_tally_fold(&t), VERDICT_UNVERIFIED);
	assert_string_equal(verdict_window_gap(&t, VERDICT_WINDOW_AFTER),
			    "no schedule stopped a try after its target mutation: "
			    "no-duplicate was never challenged");
	assert_string_equal(verdict_window_gap(&t, VERDICT_WINDOW_BEFORE),
			    "no schedule stopped a try before its target mutation: "
			    "no-loss was never challenged");
	verdict_tally_add(&t, 0, OUTCOME_CONVERGED);
	verdict_tally_windows(&t, true, false);
	assert_int_equal(verdict_tally_fold(&t), VERDICT_UNVERIFIED);
	assert_null(verdict_window_gap(&t, VERDICT_WINDOW_BEFORE));
	assert_non_null(verdict_window_gap(&t, VERDICT_WINDOW_AFTER));
	verdict_tally_add(&t, 0, OUTCOME_STOPPED);
	verdict_tally_windows(&t, false, true);
	assert_int_equal(verdict_tally_fold(&t), VERDICT_CERTIFIED_FAIL_CLOSED);
	assert_null(verdict_window_gap(&t, VERDICT_WINDOW_AFTER));
	/* one schedule challenging both is enough */
	memset(&t, 0, sizeof(t));
	verdict_tally_add(&t, 0, OUTCOME_CONVERGED);
	verdict_tally_windows(&t, true, true);
	assert_int_equal(verdict_tally_fold(&t), VERDICT_CERTIFIED_AUTOMATIC);
	/* rejected stays rejected, unchallenged or not */
	memset(&t, 0, sizeof(t));
	verdict_tally_add(&t, 2, OUTCOME_NOT_CONVERGED);
	verdict_tally_windows(&t, false, false);
	assert_int_equal(verdict_tally_fold(&t), VERDICT_REJECTED);
	/* a report that records no windows (an older harness): no rule */
	memset(&t, 0, sizeof(t));
	verdict_tally_add(&t, 0, OUTCOME_CONVERGED);
	assert_int_equal(verdict_tally_fold(&t), VERDICT_CERTIFIED_AUTOMATIC);
	assert_null(verdict_window_gap(&t, VERDICT_WINDOW_AFTER));
}

/* What a report's schedule says about its windows. */
static void test_schedule_windows(void **state)
{
	static const struct {
		const char *json;
		bool known, before, after;
	} cases[] = {
		{ "{}", false, false, false },
		{ "{\"retried_stops\": []}", true, false, false },
		{ "{\"retried_stops\": [{\"window\": \"after-mutation\"}]}",
		  true, false, true },
		{ "{\"retried_stops\": [{\"window\": \"before-mutation\"}, "
		  "{\"window\": \"after-mutation\"}]}", true, true, true },
		{ "{\"retried_stops\": [{\"window\": \"sideways\"}]}",
		  true, false, false },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		json_t *s = json_loads(cases[i].json, 0, NULL);
		bool before = true, after = true;

		assert_non_null(s);
		assert_int_equal(report_schedule_windows(s, &before, &after),
				 cases[i].known);
		assert_int_equal(before, cases[i].before);
		assert_int_equal(after, cases[i].after);
		json_decref(s);
	}
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
		verdict_tally_windows(&a, i % 2, i == 2);
		verdict_tally_add(&b, 0, outcomes[n - 1 - i]);
		verdict_tally_windows(&b, (n - 1 - i) % 2, n - 1 - i == 2);
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
		cmocka_unit_test(test_fold_windows),
		cmocka_unit_test(test_schedule_windows),
		cmocka_unit_test(test_fold_ignores_order),
		cmocka_unit_test(test_meets),
	};

	return cmocka_run_group_tests_name("verdict", tests, NULL, NULL);
}
