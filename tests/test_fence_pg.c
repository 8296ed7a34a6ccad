/*
 * test_fence_pg.c -- the PostgreSQL fences: the conformance suite on
 * pg-txn and on pg-2pc, then what only PostgreSQL can show: a transaction
 * still in progress is never ABSENT while it may commit (held open from a
 * second connection),
 * an aborted one is ABSENT, a committed one APPLIED; a transaction left
 * prepared is finished by the probe and by prepare(), or rolled back by the
 * operator's fence_resolve_in_doubt(); the fence-row-only control answers ABSENT while the
 * transaction is still in progress (the hole hold_commit exploits).
 *
 * The route's probe ends the session of an apply still in flight and then
 * answers from the final status; with fence_hands_off() it answers
 * UNKNOWN instead and touches nothing.
 *
 * The server is $FENCECERT_PG_URL when set, else one started here with
 * ci/pg-up in a temp dir (and stopped at the end).  Every target lives in
 * its own schema ("schema=fc_fp_PID_N"), dropped at the end.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <libpq-fe.h>

#include "fences/fence.h"
#include "tests/fence_conformance.h"
#include "tests/pg_server.h"

/* "...?schema=fc_fp_PID_N&fence=KIND[&extra]" for a fresh schema. */
static void make_url(const char *kind, const char *extra, char *url,
		     size_t len, char *schema)
{
	char more[128];

	snprintf(more, sizeof(more), "fence=%s%s%s", kind, extra ? "&" : "",
		 extra ? extra : "");
	pg_server_target("fp", more, url, len, schema);
}

static void txn_url(const char *dir, char *url, size_t len)
{
	(void)dir;
	make_url("pg-txn", NULL, url, len, NULL);
}

static void tpc_url(const char *dir, char *url, size_t len)
{
	(void)dir;
	make_url("pg-2pc", NULL, url, len, NULL);
}

static void unreachable_url(const char *dir, char *url, size_t len)
{
	(void)dir;
	/* Port 1: nothing listens, the connection is refused at once. */
	snprintf(url, len, "postgresql://127.0.0.1:1/x?connect_timeout=2");
}

/* ---- a transaction of our own, as an apply would leave it ---------- */

struct target {
	char url[768];
	char schema[64];
	fence *f;
	PGconn *a; /* the "apply" transaction */
	PGconn *b; /* the side session */
};

static PGconn *connect_to(const char *schema)
{
	PGconn *c = PQconnectdb(pg_server_url());
	char sql[128];

	assert_int_equal(PQstatus(c), CONNECTION_OK);
	snprintf(sql, sizeof(sql), "SET search_path = \"%s\"", schema);
	PQclear(PQexec(c, sql));
	return c;
}

static void sql_ok(PGconn *c, const char *sql)
{
	PGresult *r = PQexec(c, sql);
	ExecStatusType st = PQresultStatus(r);

	if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK)
		fail_msg("%s: %s", sql, PQerrorMessage(c));
	PQclear(r);
}

static void target_open(struct target *t, const char *kind, const char *extra)
{
	char err[512];

	memset(t, 0, sizeof(*t));
	make_url(kind, extra, t->url, sizeof(t->url), t->schema);
	assert_int_equal(fence_open(t->url, &t->f, err, sizeof(err)), 0);
}

static void target_close(struct target *t)
{
	fence_close(t->f);
	PQfinish(t->a);
	PQfinish(t->b);
}

static void apply_ok(fence *f, const char *op, long long epoch, size_t rows)
{
	struct conformance_batch *cb;
	enum fence_outcome out;
	char intent[80];

	conformance_id("intent a", intent);
	cb = conformance_batch_new(op, intent, "k", rows);
	assert_int_equal(fence_prepare(f, op, epoch), 0);
	if (fence_apply(f, epoch, conformance_batch(cb), &out))
		fail_msg("apply: %s", fence_errmsg(f));
	conformance_batch_release(cb);
}

/*
 * Begin, on connection a, the transaction an apply of op at epoch 1 makes
 * (epoch row locked, rows and fence row written, xid recorded from a side
 * connection) and stop before its COMMIT.  With prepare_gid, PREPARE it.
 */
static void hold_apply(struct target *t, const char *op, int prepare)
{
	char sql[512], xid[32];
	PGresult *r;

	t->a = connect_to(t->schema);
	t->b = connect_to(t->schema);
	sql_ok(t->a, "BEGIN");
	snprintf(sql, sizeof(sql), "INSERT INTO fencecert_epoch VALUES('%s', 1) "
		 "ON CONFLICT (operation_id) DO UPDATE SET epoch = 1", op);
	sql_ok(t->a, sql);
	snprintf(sql, sizeof(sql), "INSERT INTO events VALUES('held', 'p', "
		 "'%s')", op);
	sql_ok(t->a, sql);
	snprintf(sql, sizeof(sql), "INSERT INTO fencecert_fence VALUES('%s', 1, "
		 "'intent-held', 1, 0)", op);
	sql_ok(t->a, sql);
	r = PQexec(t->a, "SELECT pg_current_xact_id()::text");
	assert_int_equal(PQresultStatus(r), PGRES_TUPLES_OK);
	snprintf(xid, sizeof(xid), "%s", PQgetvalue(r, 0, 0));
	PQclear(r);
	snprintf(sql, sizeof(sql), "INSERT INTO fencecert_xact VALUES('%s', 1, "
		 "'%s')", op, xid);
	sql_ok(t->b, sql);
	snprintf(sql, sizeof(sql), "DELETE FROM fencecert_xact WHERE "
		 "operation_id = '%s'", op);
	sql_ok(t->a, sql);
	if (prepare) {
		snprintf(sql, sizeof(sql), "PREPARE TRANSACTION "
			 "'fencecert:%s:%s:1'", t->schema, op);
		sql_ok(t->a, sql);
	}
}

static enum fence_probe_answer probe(fence *f, const char *op)
{
	struct fence_probe p;
	int rc = fence_probe(f, op, &p);

	if (rc)
		assert_int_equal(p.answer, FENCE_UNKNOWN);
	return p.answer;
}

/* The tables exist (as after any apply) but op is not there. */
static void init_tables(struct target *t)
{
	char other[80];

	conformance_id("op other", other);
	apply_ok(t->f, other, 1, 1);
}

/* Looking only (recover, `fencecert target probe`): UNKNOWN while the
 * transaction may still commit, and the transaction is left alone. */
static void test_in_progress_is_unknown_hands_off(void **state)
{
	struct target t;
	char op[80];

	(void)state;
	conformance_id("op held", op);
	target_open(&t, "pg-txn", NULL);
	fence_hands_off(t.f);
	init_tables(&t);
	hold_apply(&t, op, 0);
	assert_int_equal(probe(t.f, op), FENCE_UNKNOWN);
	assert_non_null(strstr(fence_errmsg(t.f), "in progress"));
	assert_int_equal(conformance_rows(t.url, NULL, op), 0);
	/* Committed: the same probe now proves it present. */
	sql_ok(t.a, "COMMIT");
	assert_int_equal(probe(t.f, op), FENCE_APPLIED);
	assert_int_equal(conformance_rows(t.url, NULL, op), 1);
	target_close(&t);
}

/* The route's probe ends the session of an apply in flight, and answers
 * ABSENT only once that transaction can no longer commit. */
static void test_in_progress_is_ended_then_absent(void **state)
{
	struct target t;
	PGresult *r;
	char op[80];

	(void)state;
	conformance_id("op held 2", op);
	target_open(&t, "pg-txn", NULL);
	init_tables(&t);
	hold_apply(&t, op, 0);
	assert_int_equal(probe(t.f, op), FENCE_ABSENT);
	/* The held COMMIT, released now, cannot land any more. */
	r = PQexec(t.a, "COMMIT");
	assert_int_not_equal(PQresultStatus(r), PGRES_COMMAND_OK);
	PQclear(r);
	assert_int_equal(conformance_rows(t.url, NULL, op), 0);
	assert_int_equal(probe(t.f, op), FENCE_ABSENT);
	/* The retry applies it, once. */
	apply_ok(t.f, op, 2, 2);
	assert_int_equal(conformance_rows(t.url, NULL, op), 2);
	target_close(&t);
}

static void test_aborted_is_absent(void **state)
{
	struct target t;
	char op[80];

	(void)state;
	conformance_id("op aborted", op);
	target_open(&t, "pg-txn", NULL);
	init_tables(&t);
	hold_apply(&t, op, 0);
	sql_ok(t.a, "ROLLBACK");
	/* The xid row stays behind, its transaction aborted. */
	assert_int_equal(probe(t.f, op), FENCE_ABSENT);
	/* The next apply that commits clears it. */
	apply_ok(t.f, op, 2, 3);
	assert_int_equal(probe(t.f, op), FENCE_APPLIED);
	{
		PGresult *r = PQexec(t.b, "SELECT count(*) FROM fencecert_xact");

		assert_string_equal(PQgetvalue(r, 0, 0), "0");
		PQclear(r);
	}
	target_close(&t);
}

/* The control: the fence row alone says ABSENT while the transaction may
 * still commit -- and then it commits. */
static void test_row_only_control_says_absent_in_progress(void **state)
{
	struct target t;
	char op[80];

	(void)state;
	conformance_id("op row only", op);
	target_open(&t, "pg-txn", "probe=fence-row-only");
	init_tables(&t);
	hold_apply(&t, op, 0);
	assert_int_equal(probe(t.f, op), FENCE_ABSENT);
	sql_ok(t.a, "COMMIT");
	assert_int_equal(probe(t.f, op), FENCE_APPLIED);
	target_close(&t);
}

static void test_prepared_left_behind_is_finished_by_probe(void **state)
{
	struct target t;
	char op[80];
	int n;

	(void)state;
	conformance_id("op prepared", op);
	target_open(&t, "pg-2pc", NULL);
	init_tables(&t);
	hold_apply(&t, op, 1);
	assert_int_equal(fence_in_doubt(t.f, op, &n), 0);
	assert_int_equal(n, 1);
	/* Prepared: invisible, and the locks are held. */
	assert_int_equal(conformance_rows(t.url, NULL, op), 0);
	/* Rolled back: absent, as every reader saw it, and for good. */
	assert_int_equal(probe(t.f, op), FENCE_ABSENT);
	assert_int_equal(conformance_rows(t.url, NULL, op), 0);
	assert_int_equal(fence_in_doubt(t.f, op, &n), 0);
	assert_int_equal(n, 0);
	target_close(&t);
}

static void test_prepared_left_behind_is_finished_by_prepare(void **state)
{
	struct target t;
	struct conformance_batch *cb;
	enum fence_outcome out;
	char op[80];

	(void)state;
	conformance_id("op prepared 2", op);
	target_open(&t, "pg-2pc", "timeout_ms=2000");
	init_tables(&t);
	hold_apply(&t, op, 1);
	/* Without ending it, prepare would wait on the epoch row lock. */
	assert_int_equal(fence_prepare(t.f, op, 2), 0);
	cb = conformance_batch_new(op, "intent-held", "k", 1);
	assert_int_equal(fence_apply(t.f, 2, conformance_batch(cb), &out), 0);
	assert_int_equal(out, FENCE_PROVED_PRESENT);
	assert_int_equal(conformance_rows(t.url, NULL, op), 1);
	conformance_batch_release(cb);
	target_close(&t);
}

static void test_prepared_rolled_back_is_absent(void **state)
{
	struct target t;
	char op[80];
	int n;

	(void)state;
	conformance_id("op prepared rb", op);
	target_open(&t, "pg-2pc", NULL);
	init_tables(&t);
	hold_apply(&t, op, 1);
	assert_int_equal(fence_resolve_in_doubt(t.f, op, 0, &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(probe(t.f, op), FENCE_ABSENT);
	assert_int_equal(conformance_rows(t.url, NULL, op), 0);
	/* The retry applies it, once. */
	apply_ok(t.f, op, 2, 2);
	assert_int_equal(conformance_rows(t.url, NULL, op), 2);
	target_close(&t);
}

static void test_fence_names_and_bad_urls(void **state)
{
	struct target t;
	char err[512], url[768];
	fence *f;

	(void)state;
	target_open(&t, "pg-txn", NULL);
	assert_string_equal(fence_name(t.f), "pg-txn");
	assert_true(fence_features(t.f) & FENCE_HAS_IN_DOUBT);
	target_close(&t);
	target_open(&t, "pg-2pc", NULL);
	assert_string_equal(fence_name(t.f), "pg-2pc");
	assert_true(fence_features(t.f) & FENCE_HAS_IN_DOUBT);
	target_close(&t);
	pg_server_target("fp", "fence=pg-3pc", url, sizeof(url), NULL);
	assert_int_equal(fence_open(url, &f, err, sizeof(err)), FC_USAGE);
	assert_non_null(strstr(err, "fence=pg-3pc"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_in_progress_is_unknown_hands_off),
		cmocka_unit_test(test_in_progress_is_ended_then_absent),
		cmocka_unit_test(test_aborted_is_absent),
		cmocka_unit_test(test_row_only_control_says_absent_in_progress),
		cmocka_unit_test(test_prepared_left_behind_is_finished_by_probe),
		cmocka_unit_test(test_prepared_left_behind_is_finished_by_prepare),
		cmocka_unit_test(test_prepared_rolled_back_is_absent),
		cmocka_unit_test(test_fence_names_and_bad_urls),
	};
	const struct fence_conformance txn = {
		.name = "pg-txn",
		.fresh_url = txn_url,
		.unreachable_url = unreachable_url,
		.supports_replace = 1,
	};
	const struct fence_conformance tpc = {
		.name = "pg-2pc",
		.fresh_url = tpc_url,
		.unreachable_url = unreachable_url,
		.supports_replace = 1,
	};
	int failed;

	if (!pg_server_url())
		return 0;
	failed = fence_conformance_run(&txn);
	failed += fence_conformance_run(&tpc);
	failed += cmocka_run_group_tests_name("fence pg", tests, NULL, NULL);
	return failed + (pg_server_release() ? 1 : 0);
}
