/*
 * test_route_pg.c -- the certified C route (`fencecert route`, real
 * processes) with the journal on SQLite and the target on PostgreSQL, once
 * per fence (pg-txn, pg-2pc): a clean run reaches COMPLETE with every row
 * once; a kill of the whole process group at each failpoint of the first
 * attempt (after_target_commit: the commit landed, nobody was told) is
 * followed by retries that complete without a duplicate; the fence-row-only control
 * runs a clean workload to COMPLETE too (its hole needs hold_commit).
 * An older attempt's transaction held in flight (no COMMIT yet) does not
 * stop the retry: its probe ends that session and applies once.
 * Recovery: an operation stopped in COMMITTING with its transaction left
 * prepared at the target is offered commit-prepared and rollback-prepared
 * by `fencecert recover plan`, and `apply` carries out either; the route's
 * next attempt then completes (rows once, or rows applied anew).
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
#include <sys/wait.h>

#include <cmocka.h>
#include <jansson.h>
#include <libpq-fe.h>

#include "tests/pg_server.h"
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
	if (rs_check_complete(op, a))
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

/* ---- a transaction of an older attempt, left behind ------------------ */

/* Run one statement batch; the last result must be `want`. */
static PGresult *exec_ok(PGconn *c, const char *sql, ExecStatusType want)
{
	PGresult *res = PQexec(c, sql);

	if (PQresultStatus(res) != want)
		fail_msg("%s: %s", sql, PQerrorMessage(c));
	return res;
}

/*
 * Try 1 of a fresh operation on a `fence` target dies right after
 * COMMITTING (its lease ends at once).  Then, on a connection returned to
 * the caller, the transaction its apply makes is begun and left open: the
 * epoch row locked, row k000000 and the fence row written (rows 1); with
 * `prepare`, PREPAREd as a pg-2pc apply killed before COMMIT PREPARED
 * leaves it (the connection is then free).
 */
static PGconn *stop_in_committing(struct rs_op *op, const char *fence,
				  int prepare, char *schema, char *opid)
{
	const char *env[] = { "FENCECERT_LEASE_TTL_MS=1", NULL };
	struct rs_route r = { .env = env };
	char intent[80], sql[1024], extra[64];
	struct rs_attempt a;
	PGconn *c;

	CHECK(rs_op_init(op, "sqlite", ROWS));
	snprintf(extra, sizeof(extra), "fence=%s", fence);
	pg_server_target("rt", extra, op->target, sizeof(op->target), schema);
	CHECK(rs_start1(op, &r, 1, RS_KILL, "after_committing", &a));
	assert_int_equal(a.status, KILLED);
	CHECK(rs_ids(op, opid, intent));
	c = PQconnectdb(pg_server_url());
	assert_int_equal(PQstatus(c), CONNECTION_OK);
	snprintf(sql, sizeof(sql), "SET search_path = \"%s\"; CREATE TABLE "
		 "events(row_key text, payload text, operation_id text); BEGIN; "
		 "UPDATE fencecert_epoch SET epoch = 1 WHERE operation_id = '%s'; "
		 "INSERT INTO events VALUES('k000000', 'p', '%s'); "
		 "INSERT INTO fencecert_fence VALUES('%s', 1, '%s', 1, 0)",
		 schema, opid, opid, opid, intent);
	PQclear(exec_ok(c, sql, PGRES_COMMAND_OK));
	if (prepare) {
		snprintf(sql, sizeof(sql), "PREPARE TRANSACTION "
			 "'fencecert:%s:%s:1'", schema, opid);
		PQclear(exec_ok(c, sql, PGRES_COMMAND_OK));
	}
	return c;
}

/*
 * An older attempt's apply still in flight (its COMMIT held back, as
 * hold_commit or a paused worker leaves it), its xid recorded.  The
 * retry's probe must end it rather than wait for it or call it absent
 * while it may commit; the retry then applies all rows once and the held
 * COMMIT can no longer land.
 */
static void held_in_flight(const char *fence)
{
	char schema[64], opid[80], sql[512];
	struct rs_attempt a;
	struct rs_op op;
	PGconn *held = stop_in_committing(&op, fence, 0, schema, opid);
	PGconn *side = PQconnectdb(pg_server_url());
	PGresult *res;

	res = exec_ok(held, "SELECT pg_current_xact_id()::text",
		      PGRES_TUPLES_OK);
	snprintf(sql, sizeof(sql), "INSERT INTO \"%s\".fencecert_xact "
		 "VALUES('%s', 1, '%s')", schema, opid, PQgetvalue(res, 0, 0));
	PQclear(res);
	PQclear(exec_ok(side, sql, PGRES_COMMAND_OK));
	CHECK(rs_start1(&op, NULL, 2, RS_NONE, NULL, &a));
	expect_complete_once(&op, &a, "retry behind a held commit");
	/* The held COMMIT, released now, cannot land any more. */
	res = PQexec(held, "COMMIT");
	assert_int_not_equal(PQresultStatus(res), PGRES_COMMAND_OK);
	PQclear(res);
	CHECK(rs_check_rows(&op, 1));
	PQfinish(held);
	PQfinish(side);
	rs_op_cleanup(&op);
}

static void test_txn_held_commit(void **s) { (void)s; held_in_flight("pg-txn"); }
static void test_2pc_held_commit(void **s) { (void)s; held_in_flight("pg-2pc"); }

/* ---- recovery of a transaction left prepared ------------------------- */

/* Run a shell command; its stdout into out (may be NULL); exit status. */
static int run(char *out, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int run(char *out, size_t len, const char *fmt, ...)
{
	char cmd[4096];
	size_t used = 0, n;
	va_list ap;
	FILE *f;
	int st;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	f = popen(cmd, "r");
	assert_non_null(f);
	if (out) {
		while (used + 1 < len && (n = fread(out + used, 1, len - used - 1,
						    f)) > 0)
			used += n;
		out[used] = '\0';
	}
	st = pclose(f);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* The verdict of `action` in a `recover plan --json` document. */
static void expect_verdict(const char *plan, const char *action,
			   const char *verdict)
{
	json_t *doc = json_loads(plan, 0, NULL), *acts;
	size_t i;
	json_t *a;

	if (!doc)
		fail_msg("plan is not JSON: %s", plan);
	acts = json_object_get(doc, "actions");
	json_array_foreach(acts, i, a) {
		if (strcmp(json_string_value(json_object_get(a, "action")),
			   action) == 0) {
			const char *v = json_string_value(json_object_get(a,
								"verdict"));

			if (strcmp(v, verdict) != 0)
				fail_msg("%s is %s, want %s: %s", action, v,
					 verdict, plan);
			json_decref(doc);
			return;
		}
	}
	fail_msg("no action %s in %s", action, plan);
}

static void recover_prepared(const char *action, const char *next_state)
{
	const char *fc = getenv("FENCECERT");
	char schema[64], opid[80], out[16384];
	struct rs_attempt a;
	struct rs_op op;

	PQfinish(stop_in_committing(&op, "pg-2pc", 1, schema, opid));
	/* Looking decides nothing: the probe leaves it prepared. */
	assert_int_equal(run(out, sizeof(out), "'%s' recover plan --journal '%s' "
			     "--target '%s' --op '%s' --json", fc, op.journal,
			     op.target, opid), 0);
	expect_verdict(out, "commit-prepared", "safe");
	expect_verdict(out, "rollback-prepared", "safe");
	expect_verdict(out, "mark-committed", "refused");
	expect_verdict(out, "mark-failed-pre-commit", "refused");
	assert_int_equal(rs_total_rows(&op), 0);
	/* COMMITTING is version 3 (PREPARING 1, PREPARED 2). */
	assert_int_equal(rs_journal_state(&op), FC_COMMITTING);
	assert_int_equal(run(out, sizeof(out), "'%s' recover apply --journal '%s' "
			     "--target '%s' --op '%s' --action %s "
			     "--expect-version 3 --actor test --reason t --json",
			     fc, op.journal, op.target, opid, action), 0);
	assert_non_null(strstr(out, next_state));
	if (strcmp(action, "commit-prepared") == 0) {
		assert_int_equal(rs_journal_state(&op), FC_TARGET_COMMITTED);
		assert_int_equal(rs_total_rows(&op), 1);
		CHECK(rs_start1(&op, NULL, 2, RS_NONE, NULL, &a));
		assert_int_equal(a.status, 0);
		/* The evidence is finished; nothing is written again. */
		assert_int_equal(rs_total_rows(&op), 1);
		assert_int_equal(rs_first_target_call(&a), -1);
	} else {
		assert_int_equal(rs_journal_state(&op), FC_FAILED_PRE_COMMIT);
		assert_int_equal(rs_total_rows(&op), 0);
		CHECK(rs_start1(&op, NULL, 2, RS_NONE, NULL, &a));
		expect_complete_once(&op, &a, "after rollback-prepared");
	}
	assert_int_equal(rs_journal_state(&op), FC_COMPLETE);
	CHECK(rs_check_history(&op));
	rs_op_cleanup(&op);
}

static void test_recover_commit_prepared(void **s)
{
	(void)s;
	recover_prepared("commit-prepared", "TARGET_COMMITTED");
}

static void test_recover_rollback_prepared(void **s)
{
	(void)s;
	recover_prepared("rollback-prepared", "FAILED_PRE_COMMIT");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_txn_clean),
		cmocka_unit_test(test_2pc_clean),
		cmocka_unit_test(test_row_only_clean),
		cmocka_unit_test(test_txn_kills),
		cmocka_unit_test(test_2pc_kills),
		cmocka_unit_test(test_txn_held_commit),
		cmocka_unit_test(test_2pc_held_commit),
		cmocka_unit_test(test_recover_commit_prepared),
		cmocka_unit_test(test_recover_rollback_prepared),
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
