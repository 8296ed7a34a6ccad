/*
 * test_states.c -- the transition table against an independent reading of
 * SPEC section 3 (written out here as from/to name pairs, deliberately not
 * using states.c's own encoding), plus parsing.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "journal/states.h"

static const char *const spec_edges[][2] = {
	{ "NONE", "PREPARING" },
	{ "PREPARING", "PREPARED" },
	{ "PREPARING", "FAILED_PRE_COMMIT" },
	{ "PREPARED", "FAILED_PRE_COMMIT" },
	{ "PREPARED", "COMMITTING" },
	{ "COMMITTING", "TARGET_COMMITTED" },
	{ "COMMITTING", "FAILED_PRE_COMMIT" },
	{ "COMMITTING", "COMMIT_UNKNOWN" },
	{ "COMMIT_UNKNOWN", "TARGET_COMMITTED" },
	{ "COMMIT_UNKNOWN", "FAILED_PRE_COMMIT" },
	{ "TARGET_COMMITTED", "COMMITTED_INCOMPLETE" },
	{ "TARGET_COMMITTED", "COMPLETE" },
	{ "COMMITTED_INCOMPLETE", "COMPLETE" },
	{ "FAILED_PRE_COMMIT", "PREPARING" },
};

static int in_spec(const char *from, const char *to)
{
	for (size_t i = 0; i < sizeof(spec_edges) / sizeof(spec_edges[0]); i++)
		if (!strcmp(spec_edges[i][0], from) && !strcmp(spec_edges[i][1], to))
			return 1;
	return 0;
}

static void test_table_matches_spec(void **state)
{
	int legal = 0;

	(void)state;
	for (int f = FC_STATE_NONE; f < FC_STATE_COUNT; f++) {
		for (int t = FC_STATE_NONE; t < FC_STATE_COUNT; t++) {
			const char *fn = state_name((enum fc_state)f);
			const char *tn = state_name((enum fc_state)t);
			bool got = state_transition_legal((enum fc_state)f, (enum fc_state)t);

			if (got != (bool)in_spec(fn, tn))
				fail_msg("%s -> %s: table says %d", fn, tn, got);
			legal += got;
		}
	}
	assert_int_equal(legal, (int)(sizeof(spec_edges) / sizeof(spec_edges[0])));
}

static void test_complete_is_terminal(void **state)
{
	(void)state;
	assert_true(state_is_terminal(FC_COMPLETE));
	for (int t = FC_STATE_NONE; t < FC_STATE_COUNT; t++)
		assert_false(state_transition_legal(FC_COMPLETE, (enum fc_state)t));
	for (int s = FC_PREPARING; s < FC_COMPLETE; s++)
		assert_false(state_is_terminal((enum fc_state)s));
}

static void test_names_round_trip(void **state)
{
	enum fc_state s;

	(void)state;
	for (int i = FC_PREPARING; i < FC_STATE_COUNT; i++) {
		assert_int_equal(state_parse(state_name((enum fc_state)i), &s), 0);
		assert_int_equal(s, i);
	}
	assert_int_not_equal(state_parse("NONE", &s), 0);
	assert_int_not_equal(state_parse("complete", &s), 0);
	assert_int_not_equal(state_parse("", &s), 0);
	assert_null(state_name((enum fc_state)FC_STATE_COUNT));
}

static void test_sets(void **state)
{
	state_set set;

	(void)state;
	assert_int_equal(state_set_parse("PREPARING,PREPARED", &set), 0);
	assert_int_equal(set, STATE_BIT(FC_PREPARING) | STATE_BIT(FC_PREPARED));
	assert_int_not_equal(state_set_parse("PREPARING,", &set), 0);
	assert_int_not_equal(state_set_parse(",PREPARING", &set), 0);
	assert_int_not_equal(state_set_parse("PREPARING,,PREPARED", &set), 0);
	assert_int_not_equal(state_set_parse("BOGUS", &set), 0);
	assert_int_not_equal(state_set_parse("", &set), 0);
	assert_int_equal(state_predecessors(FC_COMPLETE),
			 STATE_BIT(FC_TARGET_COMMITTED) | STATE_BIT(FC_COMMITTED_INCOMPLETE));
	assert_int_equal(state_predecessors(FC_PREPARING),
			 STATE_BIT(FC_STATE_NONE) | STATE_BIT(FC_FAILED_PRE_COMMIT));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table_matches_spec),
		cmocka_unit_test(test_complete_is_terminal),
		cmocka_unit_test(test_names_round_trip),
		cmocka_unit_test(test_sets),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
