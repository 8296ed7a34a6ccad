/*
 * test_route_examples.c -- the connector-author examples
 * routes/examples/route.sh and route.py, run as real processes under the
 * same supervisor as the C route: a clean run (the same failpoints in the
 * same order as the C route, the same operation_id and intent_digest), a
 * rerun that changes nothing at the target, a kill at after_target_commit
 * followed by a retry that reconciles instead of writing again -- and
 * retries across languages (the C route killed, the example finishing, and
 * back), since they share the journal and the fence tables.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tests/route_supervisor.h"

#define ROWS 12
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

struct example {
	const char *argv[3];
	const char *env[4];
	char bin[600];
	char owner[64];
	struct rs_route route;
};

/* The example in `lang`; with an owner, as the harness runs it: its own
 * lease owner per try and a short lease. */
static const struct rs_route *example_as(struct example *e, const char *lang,
					 const char *owner)
{
	const char *fencecert = getenv("FENCECERT");

	snprintf(e->bin, sizeof(e->bin), "FENCECERT_BIN=%s",
		 fencecert ? fencecert : "build/fencecert");
	snprintf(e->owner, sizeof(e->owner), "FENCECERT_LEASE_OWNER=%s",
		 owner ? owner : "route");
	e->env[0] = e->bin;
	e->env[1] = e->owner;
	e->env[2] = owner ? "FENCECERT_LEASE_TTL_MS=1500" : NULL;
	e->env[3] = NULL;
	e->argv[0] = strcmp(lang, "sh") == 0 ? "sh" : "python3";
	e->argv[1] = strcmp(lang, "sh") == 0 ? "routes/examples/route.sh"
					     : "routes/examples/route.py";
	e->argv[2] = NULL;
	e->route.argv = e->argv;
	e->route.env = e->env;
	return &e->route;
}

static const struct rs_route *example(struct example *e, const char *lang)
{
	return example_as(e, lang, NULL);
}

static void expect_complete_once(struct rs_op *op, const struct rs_attempt *a,
				 const char *what)
{
	if (a->status != 0) {
		rs_log(op, a->try_number);
		fail_msg("%s: try %d exited %d", what, a->try_number, a->status);
	}
	if (rs_check_rows(op, 1) || rs_check_history(op))
		fail_msg("%s: %s", what, rs_error);
	if (rs_journal_state(op) != FC_COMPLETE)
		fail_msg("%s: journal is not COMPLETE", what);
}

static void clean_rerun_kill(const char *lang)
{
	char before[8192], after[8192], opid[80], intent[80], buf[128];
	struct example ex;
	const struct rs_route *r = example(&ex, lang);
	struct rs_attempt a;
	struct rs_op op;
	int i;

	CHECK(rs_op_init(&op, "sqlite", ROWS));
	CHECK(rs_start1(&op, r, 1, RS_NONE, NULL, &a));
	expect_complete_once(&op, &a, lang);
	for (i = 0; clean_sequence[i]; i++)
		if (i >= a.nhits || strcmp(a.hits[i], clean_sequence[i]) != 0)
			fail_msg("%s: hit %d is %s, expected %s", lang, i,
				 i < a.nhits ? a.hits[i] : "(none)", clean_sequence[i]);
	assert_int_equal(a.nhits, i);
	/* the same ids as the C route derives from the same workload */
	CHECK(rs_ids(&op, opid, intent));
	CHECK(rs_return_field(&op, 1, "operation_id", buf, sizeof(buf)));
	assert_string_equal(buf, opid);
	CHECK(rs_return_field(&op, 1, "intent_digest", buf, sizeof(buf)));
	assert_string_equal(buf, intent);
	CHECK(rs_return_field(&op, 1, "rows_written", buf, sizeof(buf)));
	assert_int_equal(atoi(buf), ROWS);
	CHECK(rs_return_field(&op, 1, "mutated", buf, sizeof(buf)));
	assert_string_equal(buf, "true");

	rs_target_stamp(&op, before, sizeof(before));
	CHECK(rs_start1(&op, r, 2, RS_NONE, NULL, &a));
	rs_target_stamp(&op, after, sizeof(after));
	expect_complete_once(&op, &a, lang);
	assert_string_equal(before, after);
	assert_int_equal(rs_first_target_call(&a), -1);
	CHECK(rs_return_field(&op, 2, "mutated", buf, sizeof(buf)));
	assert_string_equal(buf, "false");
	rs_op_cleanup(&op);

	CHECK(rs_op_init(&op, "sqlite", ROWS));
	CHECK(rs_start1(&op, r, 1, RS_KILL, "after_target_commit", &a));
	assert_int_equal(a.status, KILLED);
	CHECK(rs_retry(&op, r, 2, 4, &a));
	expect_complete_once(&op, &a, lang);
	assert_false(rs_hit(&a, "before_target_commit")); /* reconciled */
	CHECK(rs_return_field(&op, a.try_number, "mutated", buf, sizeof(buf)));
	assert_string_equal(buf, "false");
	rs_op_cleanup(&op);
}

static void test_shell(void **state) { (void)state; clean_rerun_kill("sh"); }
static void test_python(void **state) { (void)state; clean_rerun_kill("py"); }

/* One language dies, another finishes: one protocol, one set of tables. */
static void across(const struct rs_route *first, const char *kill_at,
		   const struct rs_route *second, const char *what)
{
	struct rs_attempt a;
	struct rs_op op;

	CHECK(rs_op_init(&op, "sqlite", ROWS));
	CHECK(rs_start1(&op, first, 1, RS_KILL, kill_at, &a));
	assert_int_equal(a.status, KILLED);
	CHECK(rs_retry(&op, second, 2, 4, &a));
	expect_complete_once(&op, &a, what);
	rs_op_cleanup(&op);
}

static void test_across_languages(void **state)
{
	struct example sh, py;

	(void)state;
	across(NULL, "after_target_commit", example(&sh, "sh"), "C then shell");
	across(example(&py, "py"), "after_committing", NULL, "python then C");
	/* owners differ: the python try must wait out the shell try's lease */
	across(example_as(&sh, "sh", "op1-try1"), "after_prepared",
	       example_as(&py, "py", "op1-try2"), "shell then python");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_shell),
		cmocka_unit_test(test_python),
		cmocka_unit_test(test_across_languages),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
