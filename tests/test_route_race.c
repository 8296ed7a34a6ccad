/*
 * test_route_race.c -- the certified route against other processes and
 * broken surroundings, each as real processes:
 *
 *  - zombie: try 1 is stopped (SIGSTOP) at a failpoint, try 2 runs to the
 *    end, try 1 resumes.  Rows land exactly once whatever the point; from
 *    after_committing on, the zombie's apply is refused by the fence
 *    (STALE_EPOCH) or its journal move by the CAS.
 *  - lease held by another owner: the second worker exits 75 and touches
 *    nothing at the target; with a lease about to run out it waits, takes
 *    over, and the stopped first worker loses when it resumes.
 *  - changed source under the same identity: exit 100 (INTENT_CONFLICT)
 *    with the target untouched (not even created), no failpoint reached.
 *  - journal unavailable (a directory where the file should be, a file
 *    where its directory should be, the journal lost between tries): exit
 *    75 and no target I/O.
 * Both the sqlite: and the file: target.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/route_supervisor.h"

#define ROWS 30
#define KILLED (128 + 9)

#define CHECK(expr) do { if ((expr) != 0) fail_msg("%s", rs_error); } while (0)

static const char *const pause_points[] = {
	"after_lease", "after_fence_prepare", "after_prepared",
	"after_committing", "before_target_commit", "after_target_commit",
	"after_probe", "after_target_committed", "after_evidence",
	"after_complete", NULL,
};

static void expect_complete_once(struct rs_op *op, const char *what)
{
	if (rs_check_rows(op, 1))
		fail_msg("%s: %s", what, rs_error);
	if (rs_journal_state(op) != FC_COMPLETE)
		fail_msg("%s: journal is not COMPLETE", what);
	if (rs_check_history(op))
		fail_msg("%s: %s", what, rs_error);
}

static void zombie(const char *kind)
{
	for (int i = 0; pause_points[i]; i++) {
		struct rs_attempt a, b;
		struct rs_op op;
		char what[128], buf[32];

		snprintf(what, sizeof(what), "%s: zombie paused at %s", kind,
			 pause_points[i]);
		CHECK(rs_op_init(&op, kind, ROWS));
		CHECK(rs_start1(&op, NULL, 1, RS_PAUSE, pause_points[i], &a));
		if (!a.paused)
			fail_msg("%s: try 1 did not reach the point", what);
		CHECK(rs_start1(&op, NULL, 2, RS_NONE, NULL, &b));
		if (b.status != 0) {
			rs_reap(&a);
			rs_log(&op, 2);
			fail_msg("%s: try 2 exited %d", what, b.status);
		}
		if (rs_resume(&a)) {
			rs_reap(&a);
			fail_msg("%s: %s", what, rs_error);
		}
		if (a.status != 0 && a.status != 75) {
			rs_log(&op, 1);
			fail_msg("%s: zombie exited %d", what, a.status);
		}
		expect_complete_once(&op, what);
		/* From COMMITTING on the newer try owns the write; the zombie
		 * must not report it did the work. */
		if (strcmp(pause_points[i], "after_committing") == 0 ||
		    strcmp(pause_points[i], "before_target_commit") == 0) {
			assert_int_equal(a.status, 75);
			CHECK(rs_return_field(&op, 2, "mutated", buf, sizeof(buf)));
			assert_string_equal(buf, "true");
		}
		rs_op_cleanup(&op);
	}
}

static void test_zombie_sqlite(void **state) { (void)state; zombie("sqlite"); }
static void test_zombie_file(void **state) { (void)state; zombie("file"); }

static void lease_held(const char *kind)
{
	static const char *const other[] = {
		"FENCECERT_LEASE_OWNER=worker-b", "FENCECERT_LEASE_TTL_MS=600000", NULL,
	};
	static const char *const mine[] = { "FENCECERT_LEASE_TTL_MS=600000", NULL };
	struct rs_route rb = { NULL, other }, ra = { NULL, mine };
	char before[8192], after[8192];
	struct rs_attempt a, b;
	struct rs_op op;

	CHECK(rs_op_init(&op, kind, ROWS));
	CHECK(rs_start1(&op, &ra, 1, RS_PAUSE, "after_lease", &a));
	rs_target_stamp(&op, before, sizeof(before));
	CHECK(rs_start1(&op, &rb, 2, RS_NONE, NULL, &b));
	rs_target_stamp(&op, after, sizeof(after));
	if (b.status != 75) {
		rs_reap(&a);
		rs_log(&op, 2);
		fail_msg("%s: second owner exited %d, expected 75", kind, b.status);
	}
	assert_int_equal(rs_first_target_call(&b), -1);
	assert_string_equal(before, after);
	CHECK(rs_resume(&a));
	assert_int_equal(a.status, 0);
	expect_complete_once(&op, kind);
	rs_op_cleanup(&op);
}

/* Owners as the harness names them (one per try) and a short lease: the
 * second try waits the lease out instead of giving up, takes over, and the
 * first try -- stopped after preparing the fence -- loses when resumed. */
static void lease_expires(const char *kind)
{
	static const char *const one[] = {
		"FENCECERT_LEASE_OWNER=op1-try1", "FENCECERT_LEASE_TTL_MS=400", NULL,
	};
	static const char *const two[] = {
		"FENCECERT_LEASE_OWNER=op1-try2", "FENCECERT_LEASE_TTL_MS=400", NULL,
	};
	struct rs_route r1 = { NULL, one }, r2 = { NULL, two };
	struct rs_attempt a, b;
	struct rs_op op;

	CHECK(rs_op_init(&op, kind, ROWS));
	CHECK(rs_start1(&op, &r1, 1, RS_PAUSE, "after_fence_prepare", &a));
	CHECK(rs_start1(&op, &r2, 2, RS_NONE, NULL, &b));
	if (b.status != 0) {
		rs_reap(&a);
		rs_log(&op, 2);
		fail_msg("%s: second try exited %d", kind, b.status);
	}
	CHECK(rs_resume(&a));
	assert_int_equal(a.status, 75);
	expect_complete_once(&op, kind);
	rs_op_cleanup(&op);
}

static void test_lease_expires_sqlite(void **state) { (void)state; lease_expires("sqlite"); }
static void test_lease_expires_file(void **state) { (void)state; lease_expires("file"); }

static void test_lease_held_sqlite(void **state) { (void)state; lease_held("sqlite"); }
static void test_lease_held_file(void **state) { (void)state; lease_held("file"); }

static bool log_mentions(const struct rs_op *op, int t, const char *what)
{
	char path[RS_PATH + 32], buf[8192];
	size_t n;
	FILE *f;

	snprintf(path, sizeof(path), "%s/try-%d.log", op->dir, t);
	f = fopen(path, "r");
	if (!f)
		return false;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	return strstr(buf, what) != NULL;
}

static void intent_conflict(const char *kind)
{
	char before[8192], after[8192];
	struct rs_attempt a;
	struct rs_op op;

	/* Before any target I/O: the target must not even come to exist. */
	CHECK(rs_op_init(&op, kind, ROWS));
	CHECK(rs_start1(&op, NULL, 1, RS_KILL, "after_intent", &a));
	assert_int_equal(a.status, KILLED);
	CHECK(rs_op_change_source(&op));
	CHECK(rs_start1(&op, NULL, 2, RS_NONE, NULL, &a));
	assert_int_equal(a.status, 100);
	assert_int_equal(a.nhits, 0);
	assert_true(log_mentions(&op, 2, "INTENT_CONFLICT"));
	assert_int_equal(access(op.target_path, F_OK), -1);
	assert_int_equal(rs_journal_state(&op), FC_PREPARING);
	rs_op_cleanup(&op);

	/* After a complete load: not one byte of the target changes. */
	CHECK(rs_op_init(&op, kind, ROWS));
	CHECK(rs_start1(&op, NULL, 1, RS_NONE, NULL, &a));
	assert_int_equal(a.status, 0);
	rs_target_stamp(&op, before, sizeof(before));
	CHECK(rs_op_change_source(&op));
	CHECK(rs_start1(&op, NULL, 2, RS_NONE, NULL, &a));
	assert_int_equal(a.status, 100);
	assert_int_equal(a.nhits, 0);
	rs_target_stamp(&op, after, sizeof(after));
	assert_string_equal(before, after);
	assert_int_equal(rs_journal_state(&op), FC_COMPLETE);
	rs_op_cleanup(&op);
}

static void test_intent_conflict_sqlite(void **state) { (void)state; intent_conflict("sqlite"); }
static void test_intent_conflict_file(void **state) { (void)state; intent_conflict("file"); }

static void journal_unavailable(const char *kind)
{
	char before[8192], after[8192], jpath[RS_PATH];
	struct rs_attempt a;
	struct rs_op op;

	/* A directory where the journal file should be. */
	CHECK(rs_op_init(&op, kind, ROWS));
	strcpy(jpath, op.journal + strlen("sqlite:")); /* shorter than RS_PATH */
	assert_int_equal(mkdir(jpath, 0755), 0);
	CHECK(rs_start1(&op, NULL, 1, RS_NONE, NULL, &a));
	assert_int_equal(a.status, 75);
	assert_int_equal(a.nhits, 0);
	assert_int_equal(access(op.target_path, F_OK), -1);
	rs_op_cleanup(&op);

	/* A regular file where the journal's directory should be. */
	CHECK(rs_op_init(&op, kind, ROWS));
	snprintf(op.journal, sizeof(op.journal), "sqlite:%s/workload.json/j.db",
		 op.dir);
	CHECK(rs_start1(&op, NULL, 1, RS_NONE, NULL, &a));
	assert_int_equal(a.status, 75);
	assert_int_equal(access(op.target_path, F_OK), -1);
	rs_op_cleanup(&op);

	/* Lost between tries, with the rows applied and COMMITTING recorded:
	 * the retry must not even probe. */
	CHECK(rs_op_init(&op, kind, ROWS));
	CHECK(rs_start1(&op, NULL, 1, RS_KILL, "after_target_commit", &a));
	strcpy(jpath, op.journal + strlen("sqlite:")); /* shorter than RS_PATH */
	assert_int_equal(unlink(jpath), 0);
	assert_int_equal(mkdir(jpath, 0755), 0);
	rs_target_stamp(&op, before, sizeof(before));
	CHECK(rs_start1(&op, NULL, 2, RS_NONE, NULL, &a));
	rs_target_stamp(&op, after, sizeof(after));
	assert_int_equal(a.status, 75);
	assert_int_equal(rs_first_target_call(&a), -1);
	assert_string_equal(before, after);
	assert_true(log_mentions(&op, 2, "journal"));
	rs_op_cleanup(&op);
}

static void test_journal_unavailable_sqlite(void **state) { (void)state; journal_unavailable("sqlite"); }
static void test_journal_unavailable_file(void **state) { (void)state; journal_unavailable("file"); }

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_zombie_sqlite),
		cmocka_unit_test(test_zombie_file),
		cmocka_unit_test(test_lease_held_sqlite),
		cmocka_unit_test(test_lease_held_file),
		cmocka_unit_test(test_lease_expires_sqlite),
		cmocka_unit_test(test_lease_expires_file),
		cmocka_unit_test(test_intent_conflict_sqlite),
		cmocka_unit_test(test_intent_conflict_file),
		cmocka_unit_test(test_journal_unavailable_sqlite),
		cmocka_unit_test(test_journal_unavailable_file),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
