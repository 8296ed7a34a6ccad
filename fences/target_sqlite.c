/*
 * target_sqlite.c -- the read-only observer of a sqlite: target (target.h),
 * as one connection that can be kept across observations.
 *
 * The harness observes the target after every process of a schedule ends.
 * Opening SQLite for each look costs more than the look itself: the open
 * parses the schema, maps the WAL index and, on close as the last
 * connection, checkpoints and deletes the -wal and -shm files that the
 * route's next attempt then creates again.  A target_reader therefore holds
 * one connection, and its prepared statements, from the first observation
 * that finds the file until it is freed.
 *
 * Invariants:
 *  1. Nothing is written: the file is opened only after stat() shows it,
 *     and only a regular file with no symbolic link on its path (a FIFO
 *     would hold SQLite's open), as every reader of ours opens one (fc_sqlite_open_reader(),
 *     common/sqlite_reader.h): without SQLITE_OPEN_CREATE, with query_only
 *     set, and read-write where it may be -- a read-only connection to a
 *     WAL database creates the -wal and -shm files and cannot remove them
 *     on close.  A hot
 *     rollback journal left by a killed writer is rolled back on the first
 *     read, the recovery any next connection performs.
 *  2. Every call reads what the file holds now: it stats the path first and
 *     reopens when the path names another file (or closes when it names
 *     none: no rows), and it resets each statement and ends the one read
 *     transaction its statements share before it returns, so no read
 *     transaction outlives a call.  Between calls a connection to a
 *     WAL database keeps only what any idle WAL connection keeps (a shared
 *     lock on the file, its mapping of the -shm): writers are not blocked,
 *     but the route's own close no longer finds itself last, so it leaves
 *     the checkpoint to SQLite's auto-checkpoint and the -wal in place.
 *  3. After any error the connection is dropped; the next call starts
 *     from a fresh open, as a one-shot observation would.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <sqlite3.h>

#include "common/sqlite_reader.h"
#include "fences/target_impl.h"

/* The connection's page cache, and so the memory a GROUP BY over a big
 * target sorts in before it spills to a temporary file: small, so an
 * observation's memory does not grow with the target's rows. */
#define TARGET_SQLITE_CACHE "-500"

#define BUSY_TIMEOUT_MS 3000

enum { HAS_FENCE = 1, HAS_EPOCH = 2 };

/* A statement kept while what it was made for (key) stays the same. */
struct keyed {
	sqlite3_stmt *st;
	char *key;
};

struct target_sqlite {
	char *path;
	sqlite3 *db;            /* NULL: not open (no file yet, or an error) */
	dev_t dev;              /* the file db was opened on */
	ino_t ino;
	sqlite3_stmt *has;      /* is there a table or view named ?1 */
	sqlite3_stmt *begin, *commit; /* one read transaction per call */
	struct keyed rows;      /* the rows of the table named by its key */
	sqlite3_stmt *fences[4]; /* by HAS_FENCE | HAS_EPOCH */
	struct keyed sql;       /* observe.sql, its text as the key */
};

static void drop(struct target_sqlite *t)
{
	sqlite3_finalize(t->has);
	sqlite3_finalize(t->begin);
	sqlite3_finalize(t->commit);
	sqlite3_finalize(t->rows.st);
	for (size_t i = 0; i < sizeof(t->fences) / sizeof(t->fences[0]); i++)
		sqlite3_finalize(t->fences[i]);
	sqlite3_finalize(t->sql.st);
	sqlite3_close_v2(t->db);
	t->has = t->begin = t->commit = t->rows.st = t->sql.st = NULL;
	memset(t->fences, 0, sizeof(t->fences));
	t->db = NULL;
}

int target_sqlite__new(const char *path, struct target_sqlite **out)
{
	struct target_sqlite *t = calloc(1, sizeof(*t));

	*out = NULL;
	if (!t || !(t->path = strdup(path))) {
		free(t);
		return FC_NOMEM;
	}
	*out = t;
	return 0;
}

void target_sqlite__drop(struct target_sqlite *t)
{
	drop(t);
}

void target_sqlite__free(struct target_sqlite *t)
{
	if (!t)
		return;
	drop(t);
	free(t->rows.key);
	free(t->sql.key);
	free(t->path);
	free(t);
}

static int fail(struct target_sqlite *t, const char *what, char *err,
		size_t errlen)
{
	snprintf(err, errlen, "cannot %s in '%s': %s", what, t->path,
		 t->db ? sqlite3_errmsg(t->db) : "no connection");
	drop(t);
	return FC_FENCE_UNAVAILABLE;
}

/* Invariant 2: t->db on the file the path names now; NULL when none. */
static int attach(struct target_sqlite *t, char *err, size_t errlen)
{
	struct stat st;
	int rc;

	if (stat(t->path, &st) != 0) {
		drop(t);
		if (errno == ENOENT)
			return 0;
		snprintf(err, errlen, "cannot open target '%s': %s", t->path,
			 strerror(errno));
		return FC_FENCE_UNAVAILABLE;
	}
	if (t->db && t->dev == st.st_dev && t->ino == st.st_ino)
		return 0;
	drop(t);
	/* a reader like the others (common/sqlite_reader.h): query_only, and
	 * no checkpoint on close under the power-loss model */
	rc = fc_sqlite_open_reader(t->path, SQLITE_OPEN_NOMUTEX, &t->db);
	if (rc != SQLITE_OK) {
		/* a FIFO, a device or a link in the route's place is refused
		 * before SQLite would block on it */
		snprintf(err, errlen, "cannot open target '%s': %s", t->path,
			 fc_sqlite_reader_errmsg(t->db, rc));
		drop(t);
		return FC_FENCE_UNAVAILABLE;
	}
	if (sqlite3_exec(t->db, "PRAGMA cache_size = " TARGET_SQLITE_CACHE,
			 NULL, NULL, NULL))
		return fail(t, "open target", err, errlen);
	sqlite3_busy_timeout(t->db, BUSY_TIMEOUT_MS);
	t->dev = st.st_dev;
	t->ino = st.st_ino;
	return 0;
}

static int prepare(struct target_sqlite *t, sqlite3_stmt **st, const char *sql)
{
	if (*st)
		return SQLITE_OK;
	return sqlite3_prepare_v3(t->db, sql, -1, SQLITE_PREPARE_PERSISTENT, st,
				  NULL);
}

static int prepare_keyed(struct target_sqlite *t, struct keyed *k,
			 const char *key, const char *sql)
{
	if (k->st && strcmp(k->key, key) == 0)
		return SQLITE_OK;
	sqlite3_finalize(k->st);
	k->st = NULL;
	free(k->key);
	if (!(k->key = strdup(key)))
		return SQLITE_NOMEM;
	return prepare(t, &k->st, sql);
}

/* The reads of one call (the schema, then the rows or fences) share one
 * read transaction: one shared lock and one look at the WAL index instead
 * of one per statement, and one snapshot for all of them.  end_read()
 * finishes it before the call returns (invariant 2); rc passes through. */
static int begin_read(struct target_sqlite *t, char *err, size_t errlen)
{
	if (prepare(t, &t->begin, "BEGIN") || sqlite3_step(t->begin) != SQLITE_DONE) {
		if (t->begin)
			sqlite3_reset(t->begin);
		return fail(t, "begin a read", err, errlen);
	}
	sqlite3_reset(t->begin);
	return 0;
}

static int end_read(struct target_sqlite *t, int rc, char *err, size_t errlen)
{
	int step;

	if (!t->db) /* dropped after an error: nothing is open */
		return rc;
	if (prepare(t, &t->commit, "COMMIT")) {
		step = SQLITE_ERROR;
	} else {
		step = sqlite3_step(t->commit);
		sqlite3_reset(t->commit);
	}
	if (step != SQLITE_DONE && !rc)
		return fail(t, "end a read", err, errlen);
	if (step != SQLITE_DONE)
		drop(t);
	return rc;
}

static int has_table(struct target_sqlite *t, const char *name, int *has,
		     char *err, size_t errlen)
{
	int rc;

	if (prepare(t, &t->has, "SELECT count(*) FROM main.sqlite_master "
		    "WHERE type IN ('table', 'view') AND name = ?1"))
		return fail(t, "read the schema", err, errlen);
	sqlite3_bind_text(t->has, 1, name, -1, SQLITE_STATIC);
	rc = sqlite3_step(t->has);
	*has = rc == SQLITE_ROW && sqlite3_column_int(t->has, 0) > 0;
	sqlite3_reset(t->has);
	if (rc != SQLITE_ROW)
		return fail(t, "read the schema", err, errlen);
	return 0;
}

static const char *text(sqlite3_stmt *st, int col)
{
	return (const char *)sqlite3_column_text(st, col);
}

/* Where walk() hands each row: one of the two callbacks of target.h. */
struct sink {
	int (*each)(sqlite3_stmt *st, const struct sink *to);
	target_row_fn row;
	target_fence_fn fence;
	void *ctx;
};

/* Run st to its end, handing each row on; reset it in every case. */
static int walk(struct target_sqlite *t, sqlite3_stmt *st,
		const struct sink *to, const char *what, char *err,
		size_t errlen)
{
	int rc = 0, step;

	while ((step = sqlite3_step(st)) == SQLITE_ROW)
		if ((rc = to->each(st, to)))
			break;
	sqlite3_reset(st);
	if (!rc && step != SQLITE_DONE)
		rc = fail(t, what, err, errlen);
	return rc;
}

static int each_row(sqlite3_stmt *st, const struct sink *to)
{
	return to->row(to->ctx, text(st, 0), text(st, 1),
		       sqlite3_column_int64(st, 2));
}

int target_sqlite__rows(struct target_sqlite *t, const char *table,
			target_row_fn fn, void *ctx, char *err, size_t errlen)
{
	char sql[256];
	int has, rc;

	if ((rc = attach(t, err, errlen)) || !t->db ||
	    (rc = begin_read(t, err, errlen)))
		return rc;
	if ((rc = has_table(t, table, &has, err, errlen)) || !has)
		return end_read(t, rc, err, errlen);
	snprintf(sql, sizeof(sql), "SELECT row_key, operation_id, count(*) "
		 "FROM main.\"%s\" GROUP BY row_key, operation_id "
		 "ORDER BY row_key, operation_id", table);
	if (prepare_keyed(t, &t->rows, table, sql))
		return fail(t, "read the rows", err, errlen);
	rc = walk(t, t->rows.st, &(struct sink){ .each = each_row, .row = fn,
		  .ctx = ctx }, "read the rows", err, errlen);
	return end_read(t, rc, err, errlen);
}

static const char applied_part[] =
	"SELECT operation_id, epoch AS applied, 0 AS prepared, "
	"intent_digest AS intent, rows FROM main.fencecert_fence";
/* Named as in applied_part: it may be the only part. */
static const char prepared_part[] =
	"SELECT operation_id, 0 AS applied, epoch AS prepared, "
	"NULL AS intent, 0 AS rows FROM main.fencecert_epoch";

static int each_fence(sqlite3_stmt *st, const struct sink *to)
{
	struct target_fence_record r = {
		.operation_id = text(st, 0),
		.applied_epoch = sqlite3_column_int64(st, 1),
		.prepared_epoch = sqlite3_column_int64(st, 2),
		.intent_digest = text(st, 3),
		.rows = sqlite3_column_int64(st, 4),
	};

	return to->fence(to->ctx, &r);
}

int target_sqlite__fences(struct target_sqlite *t, target_fence_fn fn,
			  void *ctx, char *err, size_t errlen)
{
	char sql[768];
	int has_fence, has_epoch, which, rc;

	if ((rc = attach(t, err, errlen)) || !t->db ||
	    (rc = begin_read(t, err, errlen)))
		return rc;
	if ((rc = has_table(t, "fencecert_fence", &has_fence, err, errlen)) ||
	    (rc = has_table(t, "fencecert_epoch", &has_epoch, err, errlen)))
		return end_read(t, rc, err, errlen);
	which = (has_fence ? HAS_FENCE : 0) | (has_epoch ? HAS_EPOCH : 0);
	if (!which)
		return end_read(t, 0, err, errlen);
	/* Both sides, so a fence row without an epoch row (or the reverse)
	 * still shows: the observer does not assume the fence kept its own
	 * invariants. */
	snprintf(sql, sizeof(sql), "SELECT operation_id, max(applied), "
		 "max(prepared), max(intent), max(rows) FROM (%s%s%s) "
		 "GROUP BY operation_id ORDER BY operation_id",
		 has_fence ? applied_part : "",
		 which == (HAS_FENCE | HAS_EPOCH) ? " UNION ALL " : "",
		 has_epoch ? prepared_part : "");
	if (prepare(t, &t->fences[which], sql))
		return fail(t, "read the fences", err, errlen);
	rc = walk(t, t->fences[which], &(struct sink){ .each = each_fence,
		  .fence = fn, .ctx = ctx }, "read the fences", err, errlen);
	return end_read(t, rc, err, errlen);
}

static int each_sql_row(sqlite3_stmt *st, const struct sink *to)
{
	return to->row(to->ctx, text(st, 0), NULL, sqlite3_column_int64(st, 1));
}

int target_sqlite__sql(struct target_sqlite *t, const char *sql,
		       target_row_fn fn, void *ctx, char *err, size_t errlen)
{
	int rc;

	if ((rc = attach(t, err, errlen)) || !t->db)
		return rc;
	if (prepare_keyed(t, &t->sql, sql, sql)) {
		const char *msg = sqlite3_errmsg(t->db);

		/* the route has not created its table yet: no rows */
		if (strncmp(msg, "no such table", 13) == 0)
			return 0;
		snprintf(err, errlen, "the query failed on '%s': %s", t->path,
			 msg);
		drop(t);
		return FC_USAGE;
	}
	if (sqlite3_column_count(t->sql.st) < 2) {
		snprintf(err, errlen, "the query must yield (row_key, count)");
		return FC_USAGE;
	}
	return walk(t, t->sql.st, &(struct sink){ .each = each_sql_row, .row = fn,
		    .ctx = ctx }, "run the query", err, errlen);
}
