/*
 * test_route_controls.c -- each control route produces the wrong outcome
 * docs/controls.md says it does, as real processes:
 *
 *   naive             two runs -> every row twice
 *   xcom-guard        kill after the target commit + retry -> every row
 *                     twice (and: with surviving evidence it does skip)
 *   checkpoint-guard  kill after the write -> the retry stops with 100
 *                     (fail-closed); a zombie paused between check and arm
 *                     -> every row twice
 *   journal-no-fence  kill at after_target_commit -> the retry re-applies
 *   split-fence       kill between the data and the fence transaction ->
 *                     the retry re-applies (a kill after both is harmless)
 *   no-fsync          the opposite pin: under kills it must be the
 *                     certified route exactly (same rows, same evidence,
 *                     same failpoints on every retry after a kill at any
 *                     failpoint), since only a power loss -- which no
 *                     process test can cause -- shows its missing fsyncs
 *                     (tests/integration/route_fsync.sh shows them gone)
 *
 * These are the failures the certification harness must reject; if a
 * control stopped producing its failure, the harness's "rejected" verdict
 * would prove nothing, so this test pins them.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fences/target.h"
#include "tests/route_supervisor.h"

#define ROWS 15
#define KILLED (128 + 9)

#define CHECK(expr) do { if ((expr) != 0) fail_msg("%s", rs_error); } while (0)

struct variant_route {
	const char *argv[5];
	struct rs_route route;
};

static const struct rs_route *variant(struct variant_route *v, const char *name)
{
	const char *fencecert = getenv("FENCECERT");

	v->argv[0] = fencecert ? fencecert : "build/fencecert";
	v->argv[1] = "route";
	v->argv[2] = "--variant";
	v->argv[3] = name;
	v->argv[4] = NULL;
	v->route.argv = v->argv;
	v->route.env = NULL;
	return &v->route;
}

static void expect_rows(struct rs_op *op, int each, const char *what)
{
	if (rs_check_rows(op, each))
		fail_msg("%s: %s", what, rs_error);
}

static void naive(const char *kind)
{
	struct variant_route v;
	const struct rs_route *r = variant(&v, "naive");
	struct rs_attempt a;
	struct rs_op op;

	CHECK(rs_op_init(&op, kind, ROWS));
	CHECK(rs_start1(&op, r, 1, RS_NONE, NULL, &a));
	assert_int_equal(a.status, 0);
	expect_rows(&op, 1, "naive, one run");
	CHECK(rs_start1(&op, r, 2, RS_NONE, NULL, &a));
	assert_int_equal(a.status, 0);
	expect_rows(&op, 2, "naive, two runs");
	rs_op_cleanup(&op);
}

static void test_naive_sqlite(void **state) { (void)state; naive("sqlite"); }
static void test_naive_file(void **state) { (void)state; naive("file"); }

static void xcom_guard(const char *kind)
{
	struct variant_route v;
	const struct rs_route *base = variant(&v, "xcom-guard");
	struct rs_route r = *base;
	const char *env[2] = { NULL, NULL };
	char prev[RS_PATH + 64], buf[32];
	struct rs_attempt a;
	struct rs_op op;

	/* With its evidence intact the guard does skip... */
	CHECK(rs_op_init(&op, kind, ROWS));
	snprintf(prev, sizeof(prev), "FENCECERT_PREV_XCOM_DIR=%s/xcom-1", op.dir);
	env[0] = prev;
	r.env = env;
	CHECK(rs_start1(&op, &r, 1, RS_NONE, NULL, &a));
	assert_int_equal(a.status, 0);
	CHECK(rs_start1(&op, &r, 2, RS_NONE, NULL, &a));
	assert_int_equal(a.status, 0);
	CHECK(rs_return_field(&op, 2, "mutated", buf, sizeof(buf)));
	assert_string_equal(buf, "false");
	expect_rows(&op, 1, "xcom-guard with evidence");
	rs_op_cleanup(&op);

	/* ...but a try that dies after its commit leaves none. */
	CHECK(rs_op_init(&op, kind, ROWS));
	snprintf(prev, sizeof(prev), "FENCECERT_PREV_XCOM_DIR=%s/xcom-1", op.dir);
	CHECK(rs_start1(&op, &r, 1, RS_KILL, "after_target_commit", &a));
	assert_int_equal(a.status, KILLED);
	CHECK(rs_start1(&op, &r, 2, RS_NONE, NULL, &a));
	assert_int_equal(a.status, 0);
	expect_rows(&op, 2, "xcom-guard after a kill");
	rs_op_cleanup(&op);
}

static void test_xcom_guard_sqlite(void **state) { (void)state; xcom_guard("sqlite"); }
static void test_xcom_guard_file(void **state) { (void)state; xcom_guard("file"); }

static void checkpoint_guard(const char *kind)
{
	struct variant_route v;
	const struct rs_route *r = variant(&v, "checkpoint-guard");
	struct rs_attempt a, b;
	struct rs_op op;

	/* One worker: the armed checkpoint stops the retry. */
	CHECK(rs_op_init(&op, kind, ROWS));
	CHECK(rs_start1(&op, r, 1, RS_KILL, "after_target_commit", &a));
	assert_int_equal(a.status, KILLED);
	CHECK(rs_start1(&op, r, 2, RS_NONE, NULL, &a));
	assert_int_equal(a.status, 100);
	expect_rows(&op, 1, "checkpoint-guard, one worker");
	rs_op_cleanup(&op);

	/* Two workers: a zombie between check and arm writes again. */
	CHECK(rs_op_init(&op, kind, ROWS));
	CHECK(rs_start1(&op, r, 1, RS_PAUSE, "after_intent", &a));
	assert_true(a.paused);
	CHECK(rs_start1(&op, r, 2, RS_NONE, NULL, &b));
	assert_int_equal(b.status, 0);
	CHECK(rs_resume(&a));
	assert_int_equal(a.status, 0);
	expect_rows(&op, 2, "checkpoint-guard with a zombie");
	rs_op_cleanup(&op);
}

static void test_checkpoint_guard_sqlite(void **state) { (void)state; checkpoint_guard("sqlite"); }
static void test_checkpoint_guard_file(void **state) { (void)state; checkpoint_guard("file"); }

/* A zombie stopped just before its apply, released after the retry
 * finished: without an epoch check at the target, it lands. */
static void zombie_lands(const char *name)
{
	struct variant_route v;
	const struct rs_route *r = variant(&v, name);
	struct rs_attempt a, b;
	struct rs_op op;
	char what[96];

	snprintf(what, sizeof(what), "%s with a zombie", name);
	CHECK(rs_op_init(&op, "sqlite", ROWS));
	CHECK(rs_start1(&op, r, 1, RS_PAUSE, "after_committing", &a));
	assert_true(a.paused);
	CHECK(rs_start1(&op, r, 2, RS_NONE, NULL, &b));
	assert_int_equal(b.status, 0);
	CHECK(rs_resume(&a));
	expect_rows(&op, 2, what);
	rs_op_cleanup(&op);
}

static void test_journal_no_fence(void **state)
{
	struct variant_route v;
	const struct rs_route *r = variant(&v, "journal-no-fence");
	struct rs_attempt a;
	struct rs_op op;

	(void)state;
	CHECK(rs_op_init(&op, "sqlite", ROWS));
	CHECK(rs_start1(&op, r, 1, RS_NONE, NULL, &a));
	assert_int_equal(a.status, 0);
	expect_rows(&op, 1, "journal-no-fence, clean");
	rs_op_cleanup(&op);

	CHECK(rs_op_init(&op, "sqlite", ROWS));
	CHECK(rs_start1(&op, r, 1, RS_KILL, "after_target_commit", &a));
	assert_int_equal(a.status, KILLED);
	CHECK(rs_start1(&op, r, 2, RS_NONE, NULL, &a));
	assert_int_equal(a.status, 0);
	assert_true(rs_hit(&a, "before_target_commit")); /* it re-applied */
	expect_rows(&op, 2, "journal-no-fence after a kill");
	assert_int_equal(rs_journal_state(&op), FC_COMPLETE);
	assert_int_equal(rs_check_history(&op), 0); /* and it all looks legal */
	rs_op_cleanup(&op);

	zombie_lands("journal-no-fence");
}

static void test_split_fence(void **state)
{
	struct variant_route v;
	const struct rs_route *r = variant(&v, "split-fence");
	struct rs_fault between[2] = { { RS_KILL, "after_target_commit", 1 },
				       { RS_NONE, NULL, 0 } };
	struct rs_fault after[2] = { { RS_KILL, "after_target_commit", 2 },
				     { RS_NONE, NULL, 0 } };
	struct rs_attempt a;
	struct rs_op op;

	(void)state;
	/* Killed after both transactions: the fence row is there. */
	CHECK(rs_op_init(&op, "sqlite", ROWS));
	CHECK(rs_start(&op, r, 1, after, &a));
	assert_int_equal(a.status, KILLED);
	CHECK(rs_start1(&op, r, 2, RS_NONE, NULL, &a));
	assert_int_equal(a.status, 0);
	expect_rows(&op, 1, "split-fence killed after both");
	rs_op_cleanup(&op);

	/* Killed between them: rows without a fence, applied again. */
	CHECK(rs_op_init(&op, "sqlite", ROWS));
	CHECK(rs_start(&op, r, 1, between, &a));
	assert_int_equal(a.status, KILLED);
	CHECK(rs_start1(&op, r, 2, RS_NONE, NULL, &a));
	assert_int_equal(a.status, 0);
	expect_rows(&op, 2, "split-fence killed between the transactions");
	rs_op_cleanup(&op);

	zombie_lands("split-fence");
}

/* The rows a target holds, as the observer reports them: one
 * "row_key operation_id count" line each. */
static int append_row(void *ctx, const char *row_key, const char *operation_id,
		      long long count)
{
	char *out = ctx;
	size_t len = strlen(out);

	snprintf(out + len, 8192 - len, "%s %s %lld\n", row_key ? row_key : "-",
		 operation_id ? operation_id : "-", count);
	return 0;
}

static void observed_rows(const struct rs_op *op, char out[8192])
{
	char err[512];

	out[0] = '\0';
	if (target_observe_rows(op->target, NULL, append_row, out, err,
				sizeof(err)))
		fail_msg("cannot observe '%s': %s", op->target, err);
}

/* Two attempts hit the same failpoints in the same order. */
static void expect_same_hits(const struct rs_attempt *a,
			     const struct rs_attempt *b, const char *what)
{
	for (int i = 0; i < a->nhits && i < b->nhits; i++)
		if (strcmp(a->hits[i], b->hits[i]) != 0)
			fail_msg("%s: failpoint %d is %s, the certified route's "
				 "%s", what, i + 1, a->hits[i], b->hits[i]);
	if (a->nhits != b->nhits)
		fail_msg("%s: %d failpoints, the certified route %d", what,
			 a->nhits, b->nhits);
}

/* Both routes after the same kill: the same retries, the same end. */
static void no_fsync_killed_at(const struct rs_route *r, const char *point,
			       const char *ref_rows)
{
	static const struct rs_route certified = { NULL, NULL };
	struct rs_attempt a, b;
	struct rs_op op, ref;
	char rows[8192], what[128];

	snprintf(what, sizeof(what), "no-fsync killed at %s", point);
	CHECK(rs_op_init(&op, "file", ROWS));
	CHECK(rs_op_init(&ref, "file", ROWS));
	CHECK(rs_start1(&op, r, 1, RS_KILL, point, &a));
	CHECK(rs_start1(&ref, &certified, 1, RS_KILL, point, &b));
	assert_int_equal(a.status, KILLED);
	assert_int_equal(b.status, KILLED);
	CHECK(rs_retry(&op, r, 2, 4, &a));
	CHECK(rs_retry(&ref, &certified, 2, 4, &b));
	assert_int_equal(a.try_number, b.try_number);
	expect_same_hits(&a, &b, what);
	CHECK(rs_check_complete(&op, &a));
	observed_rows(&op, rows);
	if (strcmp(rows, ref_rows) != 0)
		fail_msg("%s: the target holds\n%s\nnot\n%s", what, rows,
			 ref_rows);
	rs_op_cleanup(&ref);
	rs_op_cleanup(&op);
}

static void test_no_fsync(void **state)
{
	static const struct rs_route certified = { NULL, NULL };
	static const char *const fields[] = { "operation_id", "rows_written",
					      "epoch", "mutated", NULL };
	struct variant_route v;
	const struct rs_route *r = variant(&v, "no-fsync");
	char rows[8192], ref_rows[8192], got[128], want[128];
	struct rs_attempt a, b;
	struct rs_op op, ref;

	(void)state;
	/* A clean run: what the certified route does, file for file. */
	CHECK(rs_op_init(&op, "file", ROWS));
	CHECK(rs_op_init(&ref, "file", ROWS));
	CHECK(rs_start1(&op, r, 1, RS_NONE, NULL, &a));
	CHECK(rs_start1(&ref, &certified, 1, RS_NONE, NULL, &b));
	CHECK(rs_check_complete(&op, &a));
	CHECK(rs_check_complete(&ref, &b));
	expect_same_hits(&a, &b, "no-fsync, clean");
	observed_rows(&op, rows);
	observed_rows(&ref, ref_rows);
	assert_string_equal(rows, ref_rows);
	for (int i = 0; fields[i]; i++) {
		CHECK(rs_return_field(&op, 1, fields[i], got, sizeof(got)));
		CHECK(rs_return_field(&ref, 1, fields[i], want, sizeof(want)));
		assert_string_equal(got, want);
	}
	rs_op_cleanup(&ref);

	/* SIGKILL at each failpoint of that run, then retries. */
	for (int i = 0; i < a.nhits; i++)
		if (rs_occurrence(&a, i) == 1)
			no_fsync_killed_at(r, a.hits[i], ref_rows);

	/* Only a target whose fence can leave its syncs out will do. */
	snprintf(op.target, sizeof(op.target), "sqlite:%s/target.db", op.dir);
	CHECK(rs_start1(&op, r, 2, RS_NONE, NULL, &a));
	assert_int_equal(a.status, 64);
	rs_op_cleanup(&op);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_naive_sqlite),
		cmocka_unit_test(test_naive_file),
		cmocka_unit_test(test_xcom_guard_sqlite),
		cmocka_unit_test(test_xcom_guard_file),
		cmocka_unit_test(test_checkpoint_guard_sqlite),
		cmocka_unit_test(test_checkpoint_guard_file),
		cmocka_unit_test(test_journal_no_fence),
		cmocka_unit_test(test_split_fence),
		cmocka_unit_test(test_no_fsync),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
