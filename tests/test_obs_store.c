/*
 * test_obs_store.c -- the schedule's row store (harness/model/obs_store.c):
 * an observation that repeats another answers every question as the one
 * it repeats, a write to either gives the repeat its own rows first, and
 * a store copied from another holds what that one held and nothing it
 * does later.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "harness/model/obs_store.h"

/* Operation 1 asks for r1..r3; observation 0 holds r1 once and r2 twice,
 * observation 1 holds r1..r3 once. */
static obs_store *two_observations(void)
{
	obs_store *s;
	char err[200];

	assert_int_equal(obs_store_open(NULL, &s, err, sizeof(err)), 0);
	assert_int_equal(obs_store_expect(s, 1, "r1"), 0);
	assert_int_equal(obs_store_expect(s, 1, "r2"), 0);
	assert_int_equal(obs_store_expect(s, 1, "r3"), 0);
	assert_int_equal(obs_store_add(s, 0, "r1", 1), 0);
	assert_int_equal(obs_store_add(s, 0, "r2", 2), 0);
	assert_int_equal(obs_store_add(s, 1, "r1", 1), 0);
	assert_int_equal(obs_store_add(s, 1, "r2", 1), 0);
	assert_int_equal(obs_store_add(s, 1, "r3", 1), 0);
	return s;
}

static int count_rows(void *ctx, const char *key, long long before,
		      long long after)
{
	(void)key;
	(void)before;
	(void)after;
	(*(int *)ctx)++;
	return 0;
}

static int count_ops(void *ctx, int op)
{
	(void)op;
	(*(int *)ctx)++;
	return 0;
}

/* Every question about the repeat gets the answer about the original. */
static void test_same_answers_as_its_original(void **state)
{
	obs_store *s = two_observations();
	struct obs_rowsum a, b;
	int n = 0;

	(void)state;
	assert_int_equal(obs_store_same(s, 2, 0), 0);
	assert_int_equal(obs_store_count(s, 2, "r2"), 2);
	assert_int_equal(obs_store_count(s, 2, "r3"), 0);
	assert_int_equal(obs_store_rows_total(s, 2), 2);
	assert_int_equal(obs_store_op_rows(s, 2, 1, &a), 0);
	assert_int_equal(obs_store_op_rows(s, 0, 1, &b), 0);
	assert_memory_equal(&a, &b, sizeof(a));
	assert_int_equal(a.duplicated, 1);
	assert_int_equal(a.missing, 1);
	assert_int_equal(obs_store_duplicated(s, 2, 1, count_rows, &n), 0);
	assert_int_equal(n, 1);
	n = 0;
	assert_int_equal(obs_store_owners_duplicated(s, 2, count_ops, &n), 0);
	assert_int_equal(n, 1);
	n = 0;
	assert_int_equal(obs_store_missing(s, 2, 1, count_rows, &n), 0);
	assert_int_equal(n, 1);
	/* nothing differs between a repeat and its original */
	n = 0;
	assert_int_equal(obs_store_deltas(s, 0, 2, count_rows, &n), 0);
	assert_int_equal(obs_store_changed(s, 0, 2, 1, count_rows, &n), 0);
	assert_int_equal(n, 0);
	/* and what differs from observation 1 is what differs from 0 */
	assert_int_equal(obs_store_deltas(s, 1, 2, count_rows, &n), 0);
	assert_int_equal(n, 2); /* r2: 1 -> 2, r3: 1 -> 0 */
	obs_store_free(s);
}

/* A repeat of a repeat reads the first original. */
static void test_same_of_a_repeat(void **state)
{
	obs_store *s = two_observations();

	(void)state;
	assert_int_equal(obs_store_same(s, 2, 1), 0);
	assert_int_equal(obs_store_same(s, 3, 2), 0);
	assert_int_equal(obs_store_count(s, 3, "r3"), 1);
	assert_int_equal(obs_store_rows_total(s, 3), 3);
	obs_store_free(s);
}

/* Writing to the repeat leaves the original alone, and the other way. */
static void test_writes_do_not_show_through(void **state)
{
	obs_store *s = two_observations();

	(void)state;
	assert_int_equal(obs_store_same(s, 2, 0), 0);
	assert_int_equal(obs_store_add(s, 2, "r3", 5), 0);
	assert_int_equal(obs_store_count(s, 2, "r3"), 5);
	assert_int_equal(obs_store_count(s, 2, "r2"), 2); /* its own copy */
	assert_int_equal(obs_store_count(s, 0, "r3"), 0);

	assert_int_equal(obs_store_same(s, 3, 1), 0);
	assert_int_equal(obs_store_drop(s, 1, "r1"), 0);
	assert_int_equal(obs_store_count(s, 1, "r1"), 0);
	assert_int_equal(obs_store_count(s, 3, "r1"), 1);
	assert_int_equal(obs_store_clear(s, 1), 0);
	assert_int_equal(obs_store_rows_total(s, 3), 3);
	assert_int_equal(obs_store_rows_total(s, 1), 0);
	obs_store_free(s);
}

/* Rows n held before it became a repeat are gone; nonsense is refused. */
static void test_same_replaces_and_refuses(void **state)
{
	obs_store *s = two_observations();

	(void)state;
	assert_int_equal(obs_store_same(s, 1, 0), 0);
	assert_int_equal(obs_store_count(s, 1, "r3"), 0);
	assert_int_equal(obs_store_count(s, 1, "r2"), 2);
	assert_int_equal(obs_store_same(s, 0, 0), FC_USAGE);
	assert_int_equal(obs_store_same(s, -1, 0), FC_USAGE);
	assert_int_equal(obs_store_same(s, 4, -1), FC_USAGE);
	assert_non_null(strstr(obs_store_errmsg(s), "cannot repeat"));
	obs_store_free(s);
}

/* A copy holds the expected rows and observations, and later writes to
 * either store stay in that store. */
static void test_copy(void **state)
{
	obs_store *s = two_observations(), *c;
	struct obs_rowsum sum;
	char err[200];

	(void)state;
	assert_int_equal(obs_store_open_copy(s, "", &c, err, sizeof(err)), 0);
	assert_int_equal(obs_store_count(c, 0, "r2"), 2);
	assert_int_equal(obs_store_op_rows(c, 1, 1, &sum), 0);
	assert_int_equal(sum.expected, 3);
	assert_int_equal(sum.once, 3);
	assert_int_equal(obs_store_add(c, 5, "r1", 1), 0);
	assert_int_equal(obs_store_expect(c, 2, "q1"), 0);
	assert_int_equal(obs_store_rows_total(s, 5), 0);
	assert_int_equal(obs_store_op_rows(s, 5, 2, &sum), 0);
	assert_int_equal(sum.expected, 0);
	assert_int_equal(obs_store_add(s, 0, "r3", 1), 0);
	assert_int_equal(obs_store_count(c, 0, "r3"), 0);
	obs_store_free(c);

	/* a store whose observations repeat others is not copied */
	assert_int_equal(obs_store_same(s, 2, 0), 0);
	assert_int_equal(obs_store_open_copy(s, "", &c, err, sizeof(err)),
			 FC_USAGE);
	assert_null(c);
	assert_non_null(strstr(err, "repeat"));
	obs_store_free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_same_answers_as_its_original),
		cmocka_unit_test(test_same_of_a_repeat),
		cmocka_unit_test(test_writes_do_not_show_through),
		cmocka_unit_test(test_same_replaces_and_refuses),
		cmocka_unit_test(test_copy),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
