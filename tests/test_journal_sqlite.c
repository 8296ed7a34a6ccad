/*
 * test_journal_sqlite.c -- the journal conformance suite on "sqlite:" temp
 * files, then what only the SQLite adapter promises: its pragmas, its
 * schema table and migrations, its URL options and error mapping; and the
 * port's own dispatch and URL redaction (journal.c).
 *
 * Every database is a real file under one mkdtemp() directory, removed at
 * the end.  The raw sqlite3 connections here look at the files the way an
 * operator with the sqlite3 shell would.
 */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "common/clock.h"
#include "common/fsutil.h"
#include "journal/journal.h"
#include "tests/journal_conformance.h"

/* journal_sqlite.c's test hook: the connection behind a sqlite journal. */
sqlite3 *journal_sqlite__db(journal *j);

static char tmpdir[] = "/tmp/fc-journal-sqlite-XXXXXX";
static int counter;

static char *sqlite_url(void)
{
	char *url;

	if (asprintf(&url, "sqlite:%s/conf%d.db", tmpdir, counter++) < 0)
		return NULL;
	return url;
}

/* A fresh database path and its URL (with an optional query). */
static void fresh(char *path, size_t plen, char *url, size_t ulen,
		  const char *query)
{
	snprintf(path, plen, "%s/t%d.db", tmpdir, counter++);
	snprintf(url, ulen, "sqlite:%s%s", path, query ? query : "");
}

static journal *open_ok(const char *url)
{
	char err[512];
	journal *j = NULL;
	int rc = journal_open(url, &j, err, sizeof(err));

	if (rc)
		fail_msg("cannot open '%s': %s (%s)", url, err, error_name(rc));
	return j;
}

static sqlite3 *raw_open(const char *path)
{
	sqlite3 *db = NULL;

	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	sqlite3_busy_timeout(db, 5000);
	return db;
}

static void raw_exec(sqlite3 *db, const char *sql)
{
	char *msg = NULL;

	if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK)
		fail_msg("'%s': %s", sql, msg);
}

static long long raw_int(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *st;
	long long v;

	assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return v;
}

static void raw_text(sqlite3 *db, const char *sql, char *out, size_t len)
{
	sqlite3_stmt *st;

	assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	snprintf(out, len, "%s", (const char *)sqlite3_column_text(st, 0));
	sqlite3_finalize(st);
}

static int has_table(sqlite3 *db, const char *name)
{
	char sql[160];

	snprintf(sql, sizeof(sql), "SELECT count(*) FROM sqlite_master WHERE "
		 "type = 'table' AND name = '%s'", name);
	return (int)raw_int(db, sql);
}

static void create(journal *j, const char *op, struct journal_entry *e)
{
	int created;

	assert_int_equal(journal_create_or_get(j, op, "intent", NULL, e,
					       &created), 0);
}

static int move(journal *j, struct journal_entry *e, enum fc_state next)
{
	const struct journal_cas req = {
		.operation_id = e->operation_id,
		.expected_version = e->version,
		.next = next,
	};

	return journal_cas(j, &req, e);
}

/* ---- adapter tests ------------------------------------------------------ */

static void test_pragmas(void **state)
{
	char path[256], url[300], mode[16];
	journal *j;
	sqlite3 *db;

	(void)state;
	fresh(path, sizeof(path), url, sizeof(url), NULL);
	j = open_ok(url);
	db = journal_sqlite__db(j);
	assert_non_null(db);
	raw_text(db, "PRAGMA journal_mode", mode, sizeof(mode));
	assert_string_equal(mode, "wal");
	assert_int_equal(raw_int(db, "PRAGMA synchronous"), 2); /* FULL */
	assert_int_equal(raw_int(db, "PRAGMA busy_timeout"), 10000);
	journal_close(j);

	/* WAL is a property of the file: another connection sees it too. */
	db = raw_open(path);
	raw_text(db, "PRAGMA journal_mode", mode, sizeof(mode));
	assert_string_equal(mode, "wal");
	sqlite3_close(db);

	fresh(path, sizeof(path), url, sizeof(url), "?busy_ms=250");
	j = open_ok(url);
	assert_int_equal(raw_int(journal_sqlite__db(j), "PRAGMA busy_timeout"),
			 250);
	journal_close(j);
}

static void test_schema_created_implicitly(void **state)
{
	char path[256], url[300];
	struct journal_entry e;
	journal *j;
	sqlite3 *db;

	(void)state;
	fresh(path, sizeof(path), url, sizeof(url), NULL);
	j = open_ok(url);
	/* A route's first call on a new file: no init step, no "no such
	 * table", just the answer. */
	assert_int_equal(journal_get(j, "op", &e), FC_NOT_FOUND);
	journal_close(j);

	db = raw_open(path);
	assert_int_equal(raw_int(db, "SELECT count(*) FROM fencecert_schema"), 1);
	assert_int_equal(raw_int(db, "SELECT version FROM fencecert_schema"),
			 JOURNAL_SCHEMA_VERSION);
	assert_true(has_table(db, "operations"));
	assert_true(has_table(db, "transitions"));
	assert_true(has_table(db, "purged"));
	sqlite3_close(db);

	/* init on an initialised journal changes nothing. */
	j = open_ok(url);
	assert_int_equal(journal_init(j), 0);
	journal_close(j);
	db = raw_open(path);
	assert_int_equal(raw_int(db, "SELECT count(*) FROM fencecert_schema"), 1);
	sqlite3_close(db);
}

/* journal_close_as_is() leaves the -wal a write made; journal_close(),
 * the last connection, folds it into the file and removes it.  Either
 * way the entry is there for the next reader. */
static void test_close_as_is_keeps_wal(void **state)
{
	char path[256], url[300], wal[300];
	struct journal_entry e;
	journal *j;
	int created;

	(void)state;
	fresh(path, sizeof(path), url, sizeof(url), NULL);
	snprintf(wal, sizeof(wal), "%s-wal", path);
	j = open_ok(url);
	assert_int_equal(journal_create_or_get(j, "op-1", "intent-1", NULL, &e,
					       &created), 0);
	assert_int_equal(access(wal, F_OK), 0);
	journal_close_as_is(j);
	assert_int_equal(access(wal, F_OK), 0); /* left as the writer left it */

	j = open_ok(url);
	assert_int_equal(journal_get(j, "op-1", &e), 0);
	journal_close(j);
	assert_int_not_equal(access(wal, F_OK), 0); /* checkpointed, gone */
	journal_close_as_is(NULL);
}

/* journal_open_readonly(): reads work, every write is refused before it
 * reaches the file, a missing file is not created, a file without the
 * schema is not given one. */
static void test_readonly(void **state)
{
	char path[256], url[300], err[512];
	struct journal_entry e;
	struct journal_cas cas = { .operation_id = "op", .expected_version = 1,
				   .next = FC_COMMITTING };
	struct journal_transition *h = NULL;
	struct journal_entry *list = NULL;
	char (*ids)[JOURNAL_ID_MAX] = NULL;
	size_t n = 0;
	int created, from, to;
	journal *j, *ro;
	sqlite3 *db;

	(void)state;
	fresh(path, sizeof(path), url, sizeof(url), NULL);
	assert_int_equal(journal_open_readonly(url, &ro, err, sizeof(err)),
			 FC_JOURNAL_UNAVAILABLE);
	assert_null(ro);
	assert_int_equal(access(path, F_OK), -1);

	/* an SQLite file without the schema stays without it */
	db = raw_open(path);
	assert_int_equal(sqlite3_exec(db, "CREATE TABLE t(x)", NULL, NULL, NULL),
			 SQLITE_OK);
	sqlite3_close(db);
	assert_int_equal(journal_open_readonly(url, &ro, err, sizeof(err)), 0);
	assert_int_equal(journal_get(ro, "op", &e), FC_JOURNAL_UNAVAILABLE);
	assert_non_null(strstr(journal_errmsg(ro), "no fencecert journal schema"));
	journal_close(ro);
	db = raw_open(path);
	assert_false(has_table(db, "fencecert_schema"));
	assert_int_equal(raw_int(db, "SELECT count(*) FROM pragma_journal_mode "
				 "WHERE journal_mode = 'wal'"), 0);
	sqlite3_close(db);

	/* a journal: reads answer, writes are refused and change nothing */
	fresh(path, sizeof(path), url, sizeof(url), NULL);
	j = open_ok(url);
	assert_int_equal(journal_create_or_get(j, "op", "sha256:i", NULL, &e,
					       &created), 0);
	assert_int_equal(journal_open_readonly(url, &ro, err, sizeof(err)), 0);
	assert_int_equal(journal_get(ro, "op", &e), 0);
	assert_int_equal(e.version, 1);
	assert_int_equal(journal_history(ro, "op", &h, &n), 0);
	assert_int_equal(n, 1);
	free(h);
	assert_int_equal(journal_list(ro, NULL, &list, &n), 0);
	assert_int_equal(n, 1);
	free(list);
	assert_int_equal(journal_cas(ro, &cas, &e), FC_USAGE);
	assert_non_null(strstr(journal_errmsg(ro), "read-only"));
	assert_int_equal(journal_create_or_get(ro, "op2", "sha256:i", NULL, &e,
					       &created), FC_USAGE);
	assert_int_equal(journal_acquire_lease(ro, "op", "me", 1000, &e),
			 FC_USAGE);
	assert_int_equal(journal_purge(ro, clock_wall_ms() + 1000, &ids, &n),
			 FC_USAGE);
	assert_int_equal(journal_init(ro), FC_USAGE);
	assert_int_equal(journal_migrate(ro, &from, &to), FC_USAGE);
	/* even SQL that slipped past the port could not write */
	assert_int_not_equal(sqlite3_exec(journal_sqlite__db(ro), "DELETE FROM "
					  "operations", NULL, NULL, NULL), SQLITE_OK);
	journal_close(ro);
	assert_int_equal(journal_get(j, "op", &e), 0);
	assert_int_equal(e.version, 1);
	assert_int_equal(e.state, FC_PREPARING);
	journal_close(j);
}

static void test_migrate_from_version_0(void **state)
{
	char path[256], url[300];
	struct journal_entry e;
	int from = -1, to = -1;
	journal *j;
	sqlite3 *db;

	(void)state;
	/* Version 0 as written by hand: a schema row saying 0 and a table
	 * that belongs to someone else and must survive. */
	fresh(path, sizeof(path), url, sizeof(url), NULL);
	db = raw_open(path);
	raw_exec(db, "CREATE TABLE fencecert_schema(version INTEGER NOT NULL);"
		     "INSERT INTO fencecert_schema VALUES(0);"
		     "CREATE TABLE user_data(x TEXT);"
		     "INSERT INTO user_data VALUES('keep me');");
	sqlite3_close(db);

	j = open_ok(url);
	assert_int_equal(journal_migrate(j, &from, &to), 0);
	assert_int_equal(from, 0);
	assert_int_equal(to, JOURNAL_SCHEMA_VERSION);
	create(j, "after-migrate", &e);
	assert_int_equal(move(j, &e, FC_PREPARED), 0);
	assert_int_equal(journal_migrate(j, &from, &to), 0);
	assert_int_equal(from, JOURNAL_SCHEMA_VERSION);
	journal_close(j);

	db = raw_open(path);
	assert_int_equal(raw_int(db, "SELECT count(*) FROM fencecert_schema"), 1);
	assert_int_equal(raw_int(db, "SELECT version FROM fencecert_schema"), 1);
	assert_int_equal(raw_int(db, "SELECT count(*) FROM user_data"), 1);
	assert_int_equal(raw_int(db, "SELECT count(*) FROM transitions"), 2);
	sqlite3_close(db);

	/* Version 0 with no schema table at all. */
	fresh(path, sizeof(path), url, sizeof(url), NULL);
	db = raw_open(path);
	raw_exec(db, "CREATE TABLE user_data(x TEXT)");
	sqlite3_close(db);
	j = open_ok(url);
	assert_int_equal(journal_migrate(j, &from, &to), 0);
	assert_int_equal(from, 0);
	assert_int_equal(to, 1);
	journal_close(j);
}

static void test_migration_step_is_atomic(void **state)
{
	char path[256], url[300];
	struct journal_entry e;
	int from, to;
	journal *j;
	sqlite3 *db;

	(void)state;
	/* A foreign "operations" table stops the step half-way; the step's
	 * transaction must leave no trace of the tables created before it. */
	fresh(path, sizeof(path), url, sizeof(url), NULL);
	db = raw_open(path);
	raw_exec(db, "CREATE TABLE operations(x INTEGER)");
	sqlite3_close(db);

	j = open_ok(url);
	assert_int_equal(journal_migrate(j, &from, &to), FC_JOURNAL_UNAVAILABLE);
	assert_non_null(strstr(journal_errmsg(j), "operations"));
	assert_int_equal(journal_get(j, "op", &e), FC_JOURNAL_UNAVAILABLE);
	journal_close(j);

	db = raw_open(path);
	assert_false(has_table(db, "fencecert_schema"));
	assert_false(has_table(db, "transitions"));
	assert_false(has_table(db, "purged"));
	sqlite3_close(db);
}

static void test_newer_schema_refused(void **state)
{
	char path[256], url[300];
	struct journal_entry e;
	int from, to;
	journal *j;
	sqlite3 *db;

	(void)state;
	fresh(path, sizeof(path), url, sizeof(url), NULL);
	j = open_ok(url);
	assert_int_equal(journal_init(j), 0);
	journal_close(j);
	db = raw_open(path);
	raw_exec(db, "UPDATE fencecert_schema SET version = 99");
	sqlite3_close(db);

	j = open_ok(url);
	assert_int_equal(journal_get(j, "op", &e), FC_USAGE);
	assert_non_null(strstr(journal_errmsg(j), "newer"));
	assert_int_equal(journal_migrate(j, &from, &to), FC_USAGE);
	assert_int_equal(journal_init(j), FC_USAGE);
	journal_close(j);
}

static void test_transitions_append_only(void **state)
{
	char path[256], url[300];
	struct journal_entry e;
	journal *j;
	sqlite3 *db;

	(void)state;
	fresh(path, sizeof(path), url, sizeof(url), NULL);
	j = open_ok(url);
	create(j, "op", &e);
	journal_close(j);

	db = raw_open(path);
	assert_int_not_equal(sqlite3_exec(db, "UPDATE transitions SET "
					  "to_state = 'COMPLETE'", NULL, NULL,
					  NULL), SQLITE_OK);
	assert_non_null(strstr(sqlite3_errmsg(db), "append-only"));
	sqlite3_close(db);
}

static void test_stored_form(void **state)
{
	char path[256], url[300], text[128];
	struct journal_entry e;
	int created;
	journal *j;
	sqlite3 *db;

	(void)state;
	fresh(path, sizeof(path), url, sizeof(url), NULL);
	j = open_ok(url);
	assert_int_equal(journal_create_or_get(j, "op", "intent",
					       "{ \"b\" : 2, \"a\" : [1, 2] }",
					       &e, &created), 0);
	assert_int_equal(move(j, &e, FC_FAILED_PRE_COMMIT), 0);
	journal_close(j);

	/* Compact JSON, key order kept; states by name, readable in the
	 * sqlite3 shell. */
	db = raw_open(path);
	raw_text(db, "SELECT meta FROM operations", text, sizeof(text));
	assert_string_equal(text, "{\"b\":2,\"a\":[1,2]}");
	raw_text(db, "SELECT state FROM operations", text, sizeof(text));
	assert_string_equal(text, "FAILED_PRE_COMMIT");
	raw_text(db, "SELECT from_state || '>' || to_state FROM transitions "
		     "WHERE version = 1", text, sizeof(text));
	assert_string_equal(text, "NONE>PREPARING");
	sqlite3_close(db);
}

static void test_purge_writes_tombstones(void **state)
{
	char path[256], url[300], text[128];
	char (*ids)[JOURNAL_ID_MAX];
	struct journal_entry e;
	journal *j;
	sqlite3 *db;
	size_t n;

	(void)state;
	fresh(path, sizeof(path), url, sizeof(url), NULL);
	j = open_ok(url);
	create(j, "done", &e);
	assert_int_equal(move(j, &e, FC_PREPARED), 0);
	assert_int_equal(move(j, &e, FC_COMMITTING), 0);
	assert_int_equal(move(j, &e, FC_TARGET_COMMITTED), 0);
	assert_int_equal(move(j, &e, FC_COMPLETE), 0);
	create(j, "open", &e);
	assert_int_equal(journal_purge(j, clock_wall_ms() + 1000, &ids, &n), 0);
	assert_int_equal(n, 1);
	free(ids);
	journal_close(j);

	db = raw_open(path);
	raw_text(db, "SELECT operation_id || ' ' || intent_digest FROM purged",
		 text, sizeof(text));
	assert_string_equal(text, "done intent");
	assert_true(raw_int(db, "SELECT purged_at FROM purged") > 0);
	assert_int_equal(raw_int(db, "SELECT count(*) FROM transitions WHERE "
				 "operation_id = 'done'"), 0);
	assert_int_equal(raw_int(db, "SELECT count(*) FROM operations"), 1);
	sqlite3_close(db);
}

static void test_busy_is_unavailable(void **state)
{
	char path[256], url[300];
	struct journal_entry e, before;
	long long t0;
	journal *j;
	sqlite3 *db;

	(void)state;
	fresh(path, sizeof(path), url, sizeof(url), "?busy_ms=50");
	j = open_ok(url);
	create(j, "op", &e);
	before = e;

	/* Another writer holds the lock longer than our busy timeout. */
	db = raw_open(path);
	raw_exec(db, "BEGIN IMMEDIATE");
	t0 = clock_wall_ms();
	assert_int_equal(move(j, &e, FC_PREPARED), FC_JOURNAL_UNAVAILABLE);
	assert_true(clock_wall_ms() - t0 < 5000);
	assert_non_null(strstr(journal_errmsg(j), "locked"));
	assert_int_equal(e.version, before.version);
	raw_exec(db, "ROLLBACK");
	sqlite3_close(db);

	/* The refused call left the journal as it was and the handle usable. */
	assert_int_equal(journal_get(j, "op", &e), 0);
	assert_int_equal(e.version, 1);
	assert_int_equal(move(j, &e, FC_PREPARED), 0);
	assert_int_equal(e.version, 2);
	journal_close(j);
}

static void test_open_errors(void **state)
{
	char err[512], path[256], url[300];
	journal *j = (journal *)&j;
	int fd;

	(void)state;
	assert_int_equal(journal_open("sqlite:", &j, err, sizeof(err)), FC_USAGE);
	assert_null(j);
	assert_int_equal(journal_open("", &j, err, sizeof(err)), FC_USAGE);
	assert_int_equal(journal_open("no-scheme", &j, err, sizeof(err)),
			 FC_USAGE);
	assert_int_equal(journal_open("mysql://x/y", &j, err, sizeof(err)),
			 FC_USAGE);
	assert_non_null(strstr(err, "unknown journal scheme"));
	assert_int_equal(journal_open("sqlite:/x.db?bogus=1", &j, err,
				      sizeof(err)), FC_USAGE);
	assert_int_equal(journal_open("sqlite:/x.db?busy_ms=abc", &j, err,
				      sizeof(err)), FC_USAGE);
	assert_int_equal(journal_open("sqlite:/nonexistent-dir-fc/x.db", &j,
				      err, sizeof(err)), FC_JOURNAL_UNAVAILABLE);
	assert_non_null(strstr(err, "/nonexistent-dir-fc/x.db"));
	assert_null(j);

	/* A password never shows, whatever the scheme. */
	assert_int_equal(journal_open("mysql://fc:s3cret@db:3306/fc", &j, err,
				      sizeof(err)), FC_USAGE);
	assert_non_null(strstr(err, "mysql://fc:***@db"));
	assert_null(strstr(err, "s3cret"));

	/* Not a database: refused as corrupt, the file untouched. */
	fresh(path, sizeof(path), url, sizeof(url), NULL);
	fd = open(path, O_CREAT | O_WRONLY, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "this is not sqlite, not at all.......\n",
			       38), 38);
	close(fd);
	assert_int_equal(journal_open(url, &j, err, sizeof(err)), FC_CORRUPT);

	/* sqlite:///abs/path is the same file as sqlite:/abs/path. */
	fresh(path, sizeof(path), url, sizeof(url), NULL);
	snprintf(url, sizeof(url), "sqlite://%s", path);
	j = open_ok(url);
	assert_int_equal(journal_init(j), 0);
	journal_close(j);
	assert_int_equal(access(path, F_OK), 0);
}

static void test_redact_url(void **state)
{
	static const char *const cases[][2] = {
		{ "postgresql://fc:pw@db:5432/fc", "postgresql://fc:***@db:5432/fc" },
		{ "postgresql://fc@db/fc", "postgresql://fc@db/fc" },
		{ "postgresql://db/fc?user=fc&password=pw&sslmode=require",
		  "postgresql://db/fc?user=fc&password=***&sslmode=require" },
		{ "postgresql://u:p@h/d?password=x", "postgresql://u:***@h/d?password=***" },
		{ "etcd://h1:2379,h2:2379/fc", "etcd://h1:2379,h2:2379/fc" },
		{ "sqlite:/tmp/password=x.db", "sqlite:/tmp/password=x.db" },
		{ "http://a:b:c@h/p@q", "http://a:***@h/p@q" },
		{ "", "" },
	};
	char out[128], tiny[8];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		journal_redact_url(cases[i][0], out, sizeof(out));
		assert_string_equal(out, cases[i][1]);
	}
	journal_redact_url("postgresql://u:secret@h/d", tiny, sizeof(tiny));
	assert_int_equal(strlen(tiny), sizeof(tiny) - 1);
	assert_null(strstr(tiny, "secret"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pragmas),
		cmocka_unit_test(test_schema_created_implicitly),
		cmocka_unit_test(test_readonly),
		cmocka_unit_test(test_close_as_is_keeps_wal),
		cmocka_unit_test(test_migrate_from_version_0),
		cmocka_unit_test(test_migration_step_is_atomic),
		cmocka_unit_test(test_newer_schema_refused),
		cmocka_unit_test(test_transitions_append_only),
		cmocka_unit_test(test_stored_form),
		cmocka_unit_test(test_purge_writes_tombstones),
		cmocka_unit_test(test_busy_is_unavailable),
		cmocka_unit_test(test_open_errors),
		cmocka_unit_test(test_redact_url),
	};
	int failed;

	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	failed = journal_conformance_run("sqlite", sqlite_url);
	failed += cmocka_run_group_tests_name("journal sqlite adapter", tests,
					      NULL, NULL);
	if (fs_remove_tree(tmpdir))
		fprintf(stderr, "cannot remove '%s'\n", tmpdir);
	return failed ? 1 : 0;
}
