/*
 * test_target.c -- the read-only target observer and `fencecert target`.
 *
 * Targets are built by hand here (plain SQLite inserts, files written with
 * fputs) so the observer is checked against what is really stored, not
 * against the fence that would normally write it.
 */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>
#include <sqlite3.h>

#include "fences/fence.h"
#include "fences/target.h"
#include "tests/fence_conformance.h"

struct tctx {
	char dir[CONFORMANCE_DIR_MAX];
	char path[CONFORMANCE_DIR_MAX + 16]; /* sqlite database / lake directory */
	char url[CONFORMANCE_PATH_MAX + 16];
};

static int setup_sqlite(void **state)
{
	struct tctx *x = calloc(1, sizeof(*x));

	assert_non_null(x);
	conformance_tempdir(x->dir);
	snprintf(x->path, sizeof(x->path), "%s/t.db", x->dir);
	snprintf(x->url, sizeof(x->url), "sqlite:%s", x->path);
	*state = x;
	return 0;
}

static int setup_fs(void **state)
{
	struct tctx *x = calloc(1, sizeof(*x));

	assert_non_null(x);
	conformance_tempdir(x->dir);
	snprintf(x->path, sizeof(x->path), "%s/lake", x->dir);
	snprintf(x->url, sizeof(x->url), "file:%s", x->path);
	*state = x;
	return 0;
}

static int teardown(void **state)
{
	struct tctx *x = *state;

	conformance_rmtree(x->dir);
	free(x);
	return 0;
}

/* Every callback as one line "key|op|count" ("-" for NULL), for exact
 * comparison of contents and order. */
struct seen {
	char text[4096];
};

static int record_row(void *ctx, const char *key, const char *op, long long n)
{
	struct seen *s = ctx;
	size_t len = strlen(s->text);

	snprintf(s->text + len, sizeof(s->text) - len, "%s|%s|%lld\n",
		 key ? key : "-", op ? op : "-", n);
	return 0;
}

static int record_fence(void *ctx, const struct target_fence_record *r)
{
	struct seen *s = ctx;
	size_t len = strlen(s->text);

	snprintf(s->text + len, sizeof(s->text) - len, "%s|%lld|%lld|%s|%lld\n",
		 r->operation_id, r->applied_epoch, r->prepared_epoch,
		 r->intent_digest ? r->intent_digest : "-", r->rows);
	return 0;
}

static void observe(const char *url, const char *table, struct seen *s)
{
	char err[512];
	int rc;

	s->text[0] = '\0';
	rc = target_observe_rows(url, table, record_row, s, err, sizeof(err));
	if (rc)
		print_error("observe: %s\n", err);
	assert_int_equal(rc, 0);
}

static void list_fences(const char *url, struct seen *s)
{
	char err[512];
	int rc;

	s->text[0] = '\0';
	rc = target_list_fences(url, record_fence, s, err, sizeof(err));
	if (rc)
		print_error("fences: %s\n", err);
	assert_int_equal(rc, 0);
}

static void sql(const char *path, const char *text)
{
	sqlite3 *db;
	char *msg = NULL;

	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	if (sqlite3_exec(db, text, NULL, NULL, &msg) != SQLITE_OK)
		fail_msg("sql: %s", msg);
	sqlite3_close(db);
}

static void write_file(const char *path, const char *text)
{
	FILE *fp = fopen(path, "w");

	assert_non_null(fp);
	fputs(text, fp);
	assert_int_equal(fclose(fp), 0);
}

static int exists(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0;
}

/* ---- sqlite: ---- */

static void test_sqlite_counts_duplicates(void **state)
{
	struct tctx *x = *state;
	struct seen s;

	sql(x->path, "CREATE TABLE events(row_key TEXT, payload TEXT, "
		     "operation_id TEXT);"
		     "INSERT INTO events VALUES('b', 'x', 'op1');"
		     "INSERT INTO events VALUES('a', 'x', 'op1');"
		     "INSERT INTO events VALUES('a', 'x', 'op1');"
		     "INSERT INTO events VALUES('a', 'y', 'op2');"
		     "INSERT INTO events VALUES('c', 'z', NULL);");
	observe(x->url, NULL, &s);
	assert_string_equal(s.text, "a|op1|2\na|op2|1\nb|op1|1\nc|-|1\n");
	assert_int_equal(conformance_duplicate_keys(x->url, NULL), 1);
	/* Another table, and one that is not there. */
	sql(x->path, "CREATE TABLE other(row_key TEXT, payload TEXT, "
		     "operation_id TEXT);"
		     "INSERT INTO other VALUES('q', '', 'op9');");
	observe(x->url, "other", &s);
	assert_string_equal(s.text, "q|op9|1\n");
	observe(x->url, "missing", &s);
	assert_string_equal(s.text, "");
}

static void test_sqlite_missing_database_creates_nothing(void **state)
{
	struct tctx *x = *state;
	struct seen s;

	observe(x->url, NULL, &s);
	assert_string_equal(s.text, "");
	list_fences(x->url, &s);
	assert_string_equal(s.text, "");
	assert_false(exists(x->path));
}

static void test_sqlite_observer_is_read_only(void **state)
{
	struct tctx *x = *state;
	struct seen s;
	sqlite3 *db;
	sqlite3_stmt *st;

	char side[CONFORMANCE_PATH_MAX];

	sql(x->path, "PRAGMA journal_mode=WAL; CREATE TABLE unrelated(x);");
	observe(x->url, NULL, &s);
	list_fences(x->url, &s);
	/* No WAL side files left behind by the observer's connection. */
	snprintf(side, sizeof(side), "%s-wal", x->path);
	assert_false(exists(side));
	snprintf(side, sizeof(side), "%s-shm", x->path);
	assert_false(exists(side));
	assert_int_equal(sqlite3_open(x->path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(db, "SELECT group_concat(name) "
					    "FROM sqlite_master", -1, &st,
					    NULL), SQLITE_OK);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	assert_string_equal((const char *)sqlite3_column_text(st, 0),
			    "unrelated");
	sqlite3_finalize(st);
	sqlite3_close(db);
}

static void test_sqlite_fences(void **state)
{
	struct tctx *x = *state;
	char op1[80], op2[80], intent[80], err[512], expect[1024];
	struct conformance_batch *cb;
	enum fence_outcome out;
	struct seen s;
	fence *f;

	conformance_id("t op1", op1);
	conformance_id("t op2", op2);
	conformance_id("t intent", intent);
	assert_int_equal(fence_open(x->url, &f, err, sizeof(err)), 0);
	/* op1: prepared at 3, never applied.  op2: applied at 1, then a
	 * newer worker prepared 2. */
	assert_int_equal(fence_prepare(f, op1, 3), 0);
	cb = conformance_batch_new(op2, intent, "k", 4);
	assert_int_equal(fence_prepare(f, op2, 1), 0);
	assert_int_equal(fence_apply(f, 1, conformance_batch(cb), &out), 0);
	assert_int_equal(fence_prepare(f, op2, 2), 0);
	fence_close(f);
	list_fences(x->url, &s);
	snprintf(expect, sizeof(expect), "%s|0|3|-|0\n%s|1|2|%s|4\n",
		 strcmp(op1, op2) < 0 ? op1 : op2,
		 strcmp(op1, op2) < 0 ? op2 : op1, intent);
	if (strcmp(op1, op2) > 0)
		snprintf(expect, sizeof(expect), "%s|1|2|%s|4\n%s|0|3|-|0\n",
			 op2, intent, op1);
	assert_string_equal(s.text, expect);
	/* A fence row nobody prepared for (written by hand) still shows. */
	sql(x->path, "INSERT INTO fencecert_fence VALUES('hand', 7, 'i', 1, 0)");
	list_fences(x->url, &s);
	assert_non_null(strstr(s.text, "hand|7|0|i|1\n"));
	conformance_batch_release(cb);
}

/* One reader across many looks, as the harness keeps it for a schedule. */
static void reader_rows(target_reader *r, struct seen *s)
{
	char err[512];
	int rc;

	s->text[0] = '\0';
	rc = target_reader_rows(r, NULL, record_row, s, err, sizeof(err));
	if (rc)
		print_error("reader rows: %s\n", err);
	assert_int_equal(rc, 0);
}

static void reader_fences(target_reader *r, struct seen *s)
{
	char err[512];
	int rc;

	s->text[0] = '\0';
	rc = target_reader_fences(r, record_fence, s, err, sizeof(err));
	if (rc)
		print_error("reader fences: %s\n", err);
	assert_int_equal(rc, 0);
}

static int reader_sql(target_reader *r, const char *query, struct seen *s)
{
	char err[512];

	s->text[0] = '\0';
	return target_reader_sql(r, query, record_row, s, err, sizeof(err));
}

static int stop_row(void *ctx, const char *key, const char *op, long long n)
{
	(void)ctx, (void)key, (void)op, (void)n;
	return 7;
}

/* Take the write lock a rollback-journal writer needs: it fails (BUSY) if
 * the reader kept a read transaction open after its call returned. */
static void write_exclusively(const char *path, const char *text)
{
	sqlite3 *db;
	char *msg = NULL, *tx;

	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_true(asprintf(&tx, "BEGIN EXCLUSIVE; %s; COMMIT", text) > 0);
	if (sqlite3_exec(db, tx, NULL, NULL, &msg) != SQLITE_OK)
		fail_msg("exclusive write: %s", msg);
	free(tx);
	sqlite3_close(db);
}

static void test_sqlite_reader_kept_open(void **state)
{
	struct tctx *x = *state;
	char err[512], moved[CONFORMANCE_PATH_MAX + 8];
	target_reader *r;
	struct seen s;

	assert_int_equal(target_reader_new(x->url, &r, err, sizeof(err)), 0);
	/* no file yet: no rows, and none created */
	reader_rows(r, &s);
	assert_string_equal(s.text, "");
	assert_int_equal(reader_sql(r, "SELECT row_key, count(*) FROM events "
				       "GROUP BY row_key", &s), 0);
	assert_string_equal(s.text, "");
	assert_false(exists(x->path));
	sql(x->path, "CREATE TABLE events(row_key TEXT, payload TEXT, "
		     "operation_id TEXT);"
		     "INSERT INTO events VALUES('a', 'x', 'op1');");
	reader_rows(r, &s);
	assert_string_equal(s.text, "a|op1|1\n");
	reader_fences(r, &s);
	assert_string_equal(s.text, "");
	/* between calls the reader holds no lock a writer waits for, and the
	 * next call sees what that writer committed */
	write_exclusively(x->path, "INSERT INTO events VALUES('a', 'y', 'op1')");
	reader_rows(r, &s);
	assert_string_equal(s.text, "a|op1|2\n");
	assert_int_equal(reader_sql(r, "SELECT row_key, count(*) FROM events "
				       "GROUP BY row_key", &s), 0);
	assert_string_equal(s.text, "a|-|2\n");
	write_exclusively(x->path, "CREATE TABLE fencecert_epoch("
			  "operation_id TEXT PRIMARY KEY, epoch INTEGER);"
			  "INSERT INTO fencecert_epoch VALUES('op1', 4)");
	reader_fences(r, &s);
	assert_string_equal(s.text, "op1|0|4|-|0\n");
	/* a walk stopped by its callback ends its read as well */
	assert_int_equal(target_reader_rows(r, NULL, stop_row, NULL, err,
					    sizeof(err)), 7);
	write_exclusively(x->path, "INSERT INTO events VALUES('b', 'y', 'op1')");
	reader_rows(r, &s);
	assert_string_equal(s.text, "a|op1|2\nb|op1|1\n");
	/* the path now names another file: the reader follows the path */
	snprintf(moved, sizeof(moved), "%s.old", x->path);
	assert_int_equal(rename(x->path, moved), 0);
	sql(x->path, "CREATE TABLE events(row_key TEXT, payload TEXT, "
		     "operation_id TEXT);"
		     "INSERT INTO events VALUES('z', 'x', 'op9');");
	reader_rows(r, &s);
	assert_string_equal(s.text, "z|op9|1\n");
	reader_fences(r, &s);
	assert_string_equal(s.text, "");
	/* and none at all: no rows */
	assert_int_equal(unlink(x->path), 0);
	reader_rows(r, &s);
	assert_string_equal(s.text, "");
	assert_false(exists(x->path));
	target_reader_free(r);
}

/* In WAL mode a kept connection holds what any idle WAL connection holds
 * (the route's last close then finds it and leaves the -wal alone);
 * target_reader_drop() lets go of everything. */
static int switch_to_rollback(const char *path)
{
	sqlite3 *db;
	int rc;

	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	rc = sqlite3_exec(db, "PRAGMA journal_mode=DELETE", NULL, NULL, NULL);
	sqlite3_close(db);
	return rc;
}

static void test_sqlite_reader_drop(void **state)
{
	struct tctx *x = *state;
	char err[512];
	target_reader *r;
	struct seen s;

	sql(x->path, "PRAGMA journal_mode=WAL; CREATE TABLE events(row_key "
		     "TEXT, payload TEXT, operation_id TEXT);"
		     "INSERT INTO events VALUES('a', 'x', 'op1');");
	assert_int_equal(target_reader_new(x->url, &r, err, sizeof(err)), 0);
	reader_rows(r, &s);
	assert_string_equal(s.text, "a|op1|1\n");
	assert_int_equal(switch_to_rollback(x->path), SQLITE_BUSY);
	target_reader_drop(r);
	assert_int_equal(switch_to_rollback(x->path), SQLITE_OK);
	reader_rows(r, &s); /* and it opens again */
	assert_string_equal(s.text, "a|op1|1\n");
	target_reader_free(r);
}

static void test_sqlite_reader_sql_errors(void **state)
{
	struct tctx *x = *state;
	char err[512];
	target_reader *r;
	struct seen s;

	sql(x->path, "CREATE TABLE events(row_key TEXT, payload TEXT, "
		     "operation_id TEXT);"
		     "INSERT INTO events VALUES(NULL, 'x', 'op1');");
	assert_int_equal(target_reader_new(x->url, &r, err, sizeof(err)), 0);
	assert_int_equal(reader_sql(r, "SELECT row_key FROM events", &s),
			 FC_USAGE);
	assert_int_equal(reader_sql(r, "SELECT nonsense(", &s), FC_USAGE);
	/* a write through the query is refused (query_only), never done */
	assert_int_equal(reader_sql(r, "DELETE FROM events RETURNING "
				       "row_key, 1", &s), FC_FENCE_UNAVAILABLE);
	assert_int_equal(reader_sql(r, "SELECT row_key, count(*) FROM events "
				       "GROUP BY row_key", &s), 0);
	assert_string_equal(s.text, "-|-|1\n");
	target_reader_free(r);
	assert_int_equal(target_reader_new("file:/x", &r, err, sizeof(err)), 0);
	assert_int_equal(reader_sql(r, "SELECT 1, 2", &s), FC_USAGE);
	target_reader_free(r);
	target_reader_free(NULL);
}

/* ---- file: ---- */

static void make_lake(const struct tctx *x)
{
	char p[CONFORMANCE_PATH_MAX];

	assert_int_equal(mkdir(x->path, 0755), 0);
	snprintf(p, sizeof(p), "%s/events", x->path);
	assert_int_equal(mkdir(p, 0755), 0);
}

static void lake_file(const struct tctx *x, const char *name, const char *text)
{
	char p[CONFORMANCE_PATH_MAX];

	snprintf(p, sizeof(p), "%s/events/%s", x->path, name);
	write_file(p, text);
}

static void test_fs_counts_duplicates(void **state)
{
	struct tctx *x = *state;
	struct seen s;

	make_lake(x);
	lake_file(x, "one.csv", "# fencecert op=op1 epoch=1 intent=i rows=3\n"
				"row_key,payload\nb,1\na,\"2,\"\"x\"\"\"\na,3\n");
	/* The same file copied by hand: every row now twice. */
	lake_file(x, "copy.csv", "# fencecert op=op1 epoch=1 intent=i rows=1\n"
				 "row_key,payload\nb,1\n");
	lake_file(x, "plain.csv", "row_key,payload\nz,\"multi\nline\"\n");
	lake_file(x, ".tmp-123456", "row_key,payload\nghost,1\n");
	observe(x->url, NULL, &s);
	assert_string_equal(s.text, "a|op1|2\nb|op1|2\nz|-|1\n");
	assert_int_equal(conformance_duplicate_keys(x->url, NULL), 2);
}

static void test_fs_missing_and_malformed(void **state)
{
	struct tctx *x = *state;
	struct seen s;
	char err[512];

	observe(x->url, NULL, &s);
	assert_string_equal(s.text, "");
	list_fences(x->url, &s);
	assert_string_equal(s.text, "");
	assert_false(exists(x->path));
	make_lake(x);
	lake_file(x, "bad.csv", "row_key,payload\na,\"unterminated\n");
	assert_int_equal(target_observe_rows(x->url, NULL, record_row, &s, err,
					     sizeof(err)), FC_CORRUPT);
	assert_non_null(strstr(err, "bad.csv"));
	lake_file(x, "bad.csv", "no column line\n");
	assert_int_equal(target_observe_rows(x->url, NULL, record_row, &s, err,
					     sizeof(err)), FC_CORRUPT);
	lake_file(x, "bad.csv", "row_key,payload\na,b,c\n");
	assert_int_equal(target_observe_rows(x->url, NULL, record_row, &s, err,
					     sizeof(err)), FC_CORRUPT);
}

static void test_fs_fences(void **state)
{
	struct tctx *x = *state;
	char op[80], op2[80], intent[80], err[512], src[CONFORMANCE_PATH_MAX];
	char dst[CONFORMANCE_PATH_MAX], expect[1024], cmd[4 * CONFORMANCE_PATH_MAX];
	struct conformance_batch *cb;
	enum fence_outcome out;
	struct seen s;
	fence *f;

	conformance_id("t op", op);
	conformance_id("t op2", op2);
	conformance_id("t intent", intent);
	assert_int_equal(fence_open(x->url, &f, err, sizeof(err)), 0);
	cb = conformance_batch_new(op, intent, "k", 2);
	assert_int_equal(fence_prepare(f, op, 1), 0);
	assert_int_equal(fence_apply(f, 1, conformance_batch(cb), &out), 0);
	assert_int_equal(fence_prepare(f, op, 4), 0);
	assert_int_equal(fence_prepare(f, op2, 2), 0);
	fence_close(f);
	list_fences(x->url, &s);
	if (strcmp(op, op2) < 0)
		snprintf(expect, sizeof(expect), "%s|1|4|%s|2\n%s|0|2|-|0\n",
			 op, intent, op2);
	else
		snprintf(expect, sizeof(expect), "%s|0|2|-|0\n%s|1|4|%s|2\n",
			 op2, op, intent);
	assert_string_equal(s.text, expect);
	/* A copy of the data file is a second application: two records. */
	snprintf(src, sizeof(src), "%s/events/%s.csv", x->path, op + 7);
	snprintf(dst, sizeof(dst), "%s/events/copy.csv", x->path);
	snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", src, dst);
	assert_int_equal(system(cmd), 0);
	list_fences(x->url, &s);
	snprintf(expect, sizeof(expect), "%s|1|4|%s|2\n%s|1|4|%s|2\n", op,
		 intent, op, intent);
	assert_non_null(strstr(s.text, expect));
	assert_int_equal(conformance_duplicate_keys(x->url, NULL), 2);
	conformance_batch_release(cb);
}

/* ---- what the route planted ---- */

/* target_observe_rows() and target_list_fences() on url fail, at once
 * (the alarm ends a reader that blocks), with an error naming `why`. */
static void refused(const char *url, int code, const char *why)
{
	struct seen s;
	char err[512];

	alarm(10);
	s.text[0] = '\0';
	assert_int_equal(target_observe_rows(url, NULL, record_row, &s, err,
					     sizeof(err)), code);
	if (!strstr(err, why))
		fail_msg("rows: '%s' does not say '%s'", err, why);
	assert_int_equal(target_list_fences(url, record_fence, &s, err,
					    sizeof(err)), code);
	if (!strstr(err, why))
		fail_msg("fences: '%s' does not say '%s'", err, why);
	alarm(0);
}

/* A FIFO at the target's path (or at its -wal or -journal) would hold
 * SQLite's open for ever; a symlink would have the harness read another
 * database.  Each is refused, and an error, not an empty target. */
static void test_sqlite_hostile_files(void **state)
{
	struct tctx *x = *state;
	char side[CONFORMANCE_PATH_MAX + 16], real[CONFORMANCE_PATH_MAX];
	char url[CONFORMANCE_PATH_MAX + 32];

	assert_int_equal(mkfifo(x->path, 0644), 0);
	refused(x->url, FC_FENCE_UNAVAILABLE, "not a regular file");
	assert_int_equal(unlink(x->path), 0);
	/* a symlink to a real target */
	snprintf(real, sizeof(real), "%s/real.db", x->dir);
	sql(real, "CREATE TABLE events(row_key TEXT, payload TEXT, "
		  "operation_id TEXT); INSERT INTO events VALUES('a','x','o');");
	assert_int_equal(symlink(real, x->path), 0);
	refused(x->url, FC_FENCE_UNAVAILABLE, "symbolic link");
	/* ... or a directory on the way */
	snprintf(side, sizeof(side), "%s/via", x->dir);
	assert_int_equal(symlink(x->dir, side), 0);
	snprintf(url, sizeof(url), "sqlite:%s/via/real.db", x->dir);
	refused(url, FC_FENCE_UNAVAILABLE, "symbolic link");
	/* the real one reads, until a FIFO stands at its -wal, -journal */
	snprintf(url, sizeof(url), "sqlite:%s", real);
	{
		struct seen s;

		observe(url, NULL, &s);
		assert_string_equal(s.text, "a|o|1\n");
	}
	snprintf(side, sizeof(side), "%s-journal", real);
	assert_int_equal(mkfifo(side, 0644), 0);
	refused(url, FC_FENCE_UNAVAILABLE, "-journal' is not a regular file");
	assert_int_equal(unlink(side), 0);
	snprintf(side, sizeof(side), "%s-wal", real);
	assert_int_equal(symlink("/dev/zero", side), 0);
	refused(url, FC_FENCE_UNAVAILABLE, "-wal' is a symbolic link");
}

/* A file: target is the route's directory: a FIFO among the data files
 * or as an epoch file, a symlinked table directory or data file, is an
 * error, never opened (a FIFO would block) nor followed. */
static void test_fs_hostile_files(void **state)
{
	struct tctx *x = *state;
	char p[CONFORMANCE_PATH_MAX], q[CONFORMANCE_PATH_MAX];

	make_lake(x);
	lake_file(x, "one.csv", "row_key,payload\na,1\n");
	snprintf(p, sizeof(p), "%s/events/fifo.csv", x->path);
	assert_int_equal(mkfifo(p, 0644), 0);
	refused(x->url, FC_CORRUPT, "fifo.csv' is not a file");
	assert_int_equal(unlink(p), 0);
	/* a data file linked from outside the target */
	snprintf(q, sizeof(q), "%s/outside.csv", x->dir);
	write_file(q, "row_key,payload\nb,1\n");
	assert_int_equal(symlink(q, p), 0);
	refused(x->url, FC_CORRUPT, "fifo.csv' is not a file");
	assert_int_equal(unlink(p), 0);
	/* the table directory itself a link */
	snprintf(q, sizeof(q), "%s/events", x->path);
	snprintf(p, sizeof(p), "%s/events-real", x->dir);
	assert_int_equal(rename(q, p), 0);
	assert_int_equal(symlink(p, q), 0);
	{
		struct seen s;
		char err[512];

		assert_int_equal(target_observe_rows(x->url, NULL, record_row,
						     &s, err, sizeof(err)),
				 FC_CORRUPT);
		assert_non_null(strstr(err, "symbolic link"));
	}
	assert_int_equal(unlink(q), 0);
	assert_int_equal(rename(p, q), 0);
	/* a FIFO as an epoch file */
	snprintf(p, sizeof(p), "%s/.fencecert", x->path);
	mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/.fencecert/x.epoch", x->path);
	assert_int_equal(mkfifo(p, 0644), 0);
	alarm(10);
	{
		struct seen s;
		char err[512];

		assert_int_equal(target_list_fences(x->url, record_fence, &s,
						    err, sizeof(err)),
				 FC_CORRUPT);
		assert_non_null(strstr(err, "x.epoch' is not a file"));
	}
	alarm(0);
}

/* ---- common ---- */

static int stop_at_first(void *ctx, const char *key, const char *op,
			 long long n)
{
	(void)key;
	(void)op;
	(void)n;
	++*(int *)ctx;
	return 7;
}

static void test_usage_and_stop(void **state)
{
	struct tctx *x = *state;
	char err[512];
	int calls = 0;

	assert_int_equal(target_observe_rows("mysql://x", NULL, record_row,
					     NULL, err, sizeof(err)), FC_USAGE);
	assert_int_equal(target_observe_rows("sqlite:", NULL, record_row, NULL,
					     err, sizeof(err)), FC_USAGE);
	assert_int_equal(target_observe_rows(x->url, "x\"; DROP TABLE y; --",
					     record_row, NULL, err,
					     sizeof(err)), FC_USAGE);
	sql(x->path, "CREATE TABLE events(row_key TEXT, payload TEXT, "
		     "operation_id TEXT);"
		     "INSERT INTO events VALUES('a', 'x', 'op1');"
		     "INSERT INTO events VALUES('b', 'x', 'op1');");
	assert_int_equal(target_observe_rows(x->url, NULL, stop_at_first,
					     &calls, err, sizeof(err)), 7);
	assert_int_equal(calls, 1);
}

/* ---- the CLI, as a real process ---- */

/* $FENCECERT (tests/run-all sets it), else the fencecert built next to
 * this test binary: BUILD/tests/test_target -> BUILD/fencecert. */
static const char *fencecert_bin(void)
{
	static char path[CONFORMANCE_PATH_MAX];
	const char *env = getenv("FENCECERT");
	char *slash;
	ssize_t n;

	if (env && *env) {
		snprintf(path, sizeof(path), "%s", env);
	} else {
		n = readlink("/proc/self/exe", path, sizeof(path) - 16);
		if (n <= 0)
			return NULL;
		path[n] = '\0';
		for (int up = 0; up < 2; up++)
			if ((slash = strrchr(path, '/')))
				*slash = '\0';
		strcat(path, "/fencecert");
	}
	return access(path, X_OK) == 0 ? path : NULL;
}

/* Run a shell command; stdout into out; returns the exit status. */
static int run(const char *cmd, char *out, size_t len)
{
	FILE *p = popen(cmd, "r");
	size_t n = 0;
	int st;

	assert_non_null(p);
	while (n + 1 < len && fgets(out + n, (int)(len - n), p))
		n += strlen(out + n);
	out[n] = '\0';
	st = pclose(p);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

static void test_cli(void **state)
{
	struct tctx *x = *state;
	const char *bin = fencecert_bin();
	char cmd[4 * CONFORMANCE_PATH_MAX], out[4096], op[80], intent[80], err[512];
	struct conformance_batch *cb;
	enum fence_outcome o;
	json_t *doc;
	fence *f;

	if (!bin) {
		print_message("[ skipped  ] no fencecert binary "
			      "(set FENCECERT)\n");
		skip();
	}
	conformance_id("cli op", op);
	conformance_id("cli intent", intent);
	/* The probe of a target nobody wrote: ABSENT, nothing created. */
	snprintf(cmd, sizeof(cmd), "%s target probe --target '%s' --op '%s'",
		 bin, x->url, op);
	assert_int_equal(run(cmd, out, sizeof(out)), 0);
	doc = json_loads(out, 0, NULL);
	assert_non_null(doc);
	assert_string_equal(json_string_value(json_object_get(doc, "answer")),
			    "ABSENT");
	assert_true(json_is_null(json_object_get(doc, "epoch")));
	json_decref(doc);
	assert_false(exists(x->path));

	assert_int_equal(fence_open(x->url, &f, err, sizeof(err)), 0);
	cb = conformance_batch_new(op, intent, "k", 3);
	assert_int_equal(fence_apply(f, 2, conformance_batch(cb), &o), 0);
	fence_close(f);
	sql(x->path, "INSERT INTO events VALUES('k-1', 'dup', 'other-op')");

	assert_int_equal(run(cmd, out, sizeof(out)), 0);
	doc = json_loads(out, 0, NULL);
	assert_non_null(doc);
	assert_string_equal(json_string_value(json_object_get(doc, "answer")),
			    "APPLIED");
	assert_int_equal(json_integer_value(json_object_get(doc, "epoch")), 2);
	assert_int_equal(json_integer_value(json_object_get(doc, "rows")), 3);
	json_decref(doc);

	snprintf(cmd, sizeof(cmd), "%s target rows --target '%s'", bin, x->url);
	assert_int_equal(run(cmd, out, sizeof(out)), 0);
	assert_string_equal(out, "k-0 1\nk-1 2\nk-2 1\n");

	snprintf(cmd, sizeof(cmd), "FENCECERT_TARGET='%s' %s target fences",
		 x->url, bin);
	assert_int_equal(run(cmd, out, sizeof(out)), 0);
	doc = json_loads(out, 0, NULL);
	assert_true(json_is_array(doc));
	assert_int_equal(json_array_size(doc), 1);
	assert_int_equal(json_integer_value(json_object_get(
				 json_array_get(doc, 0), "applied_epoch")), 2);
	json_decref(doc);

	/* Usage errors exit 64; an unreachable target 69 with UNKNOWN. */
	snprintf(cmd, sizeof(cmd), "%s target probe --target '%s' 2>/dev/null",
		 bin, x->url);
	assert_int_equal(run(cmd, out, sizeof(out)), 64);
	snprintf(cmd, sizeof(cmd), "%s target rows --help", bin);
	assert_int_equal(run(cmd, out, sizeof(out)), 0);
	assert_non_null(strstr(out, "usage: fencecert target"));
	snprintf(cmd, sizeof(cmd), "%s target probe --target "
		 "'sqlite:%s/t.db/x.db' --op '%s' 2>/dev/null", bin, x->path,
		 op);
	assert_int_equal(run(cmd, out, sizeof(out)), 69);
	assert_non_null(strstr(out, "\"UNKNOWN\""));
	conformance_batch_release(cb);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_sqlite_counts_duplicates,
						setup_sqlite, teardown),
		cmocka_unit_test_setup_teardown(
			test_sqlite_missing_database_creates_nothing,
			setup_sqlite, teardown),
		cmocka_unit_test_setup_teardown(
			test_sqlite_observer_is_read_only, setup_sqlite,
			teardown),
		cmocka_unit_test_setup_teardown(test_sqlite_reader_kept_open,
						setup_sqlite, teardown),
		cmocka_unit_test_setup_teardown(test_sqlite_reader_drop,
						setup_sqlite, teardown),
		cmocka_unit_test_setup_teardown(test_sqlite_reader_sql_errors,
						setup_sqlite, teardown),
		cmocka_unit_test_setup_teardown(test_sqlite_fences,
						setup_sqlite, teardown),
		cmocka_unit_test_setup_teardown(test_fs_counts_duplicates,
						setup_fs, teardown),
		cmocka_unit_test_setup_teardown(test_fs_missing_and_malformed,
						setup_fs, teardown),
		cmocka_unit_test_setup_teardown(test_fs_fences, setup_fs,
						teardown),
		cmocka_unit_test_setup_teardown(test_sqlite_hostile_files,
						setup_sqlite, teardown),
		cmocka_unit_test_setup_teardown(test_fs_hostile_files,
						setup_fs, teardown),
		cmocka_unit_test_setup_teardown(test_usage_and_stop,
						setup_sqlite, teardown),
		cmocka_unit_test_setup_teardown(test_cli, setup_sqlite,
						teardown),
	};

	return cmocka_run_group_tests_name("target", tests, NULL, NULL);
}
