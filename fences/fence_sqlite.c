/*
 * fence_sqlite.c -- the fence for a target that is a SQLite database
 * ("sqlite:PATH").
 *
 * Layout inside the target database:
 *
 *   <table>(row_key TEXT, payload TEXT, operation_id TEXT)   the data; no
 *       uniqueness on row_key, so a duplicate write shows as two rows
 *   fencecert_fence(operation_id PK, epoch, intent_digest, rows, applied_at)
 *       one row per applied operation, written with its data
 *   fencecert_epoch(operation_id PK, epoch)
 *       the highest epoch prepared (or applied) for the operation: the
 *       fencing token
 *
 * Invariants:
 *  1. apply() is ONE write transaction (BEGIN IMMEDIATE ... COMMIT) holding
 *     the data rows, the fence row and the epoch row; SQLite makes it all or
 *     nothing, across SIGKILL and power loss (WAL, synchronous=FULL).
 *  2. apply() reads the fence row and the epoch row inside that transaction,
 *     so its checks and its writes are one step: an existing fence row wins
 *     (ALREADY_APPLIED or INTENT_CONFLICT, never merged), then an epoch above
 *     the caller's refuses (STALE_EPOCH).  A missing epoch row means nobody
 *     prepared this operation; apply is allowed and records its epoch, so the
 *     epoch row is always the highest epoch that ever prepared or applied.
 *  3. prepare(op, e) commits "epoch = e" only when no higher epoch is there.
 *  4. Why a probe's ABSENT is final: writers are serialised (BEGIN IMMEDIATE
 *     takes the single write lock).  Once prepare(op, e) has committed, an
 *     apply from an epoch below e either committed before it -- and the probe
 *     reads its fence row -- or starts its transaction after it, reads epoch
 *     e and refuses.  No fence row after a prepare at a higher epoch thus
 *     proves the mutation absent for good.
 *  5. A database file that does not exist (in a directory that does) probes
 *     ABSENT: apply writes the fence table into the same file as the data in
 *     the same transaction, so without the file nothing was applied.  A
 *     missing directory or any other error is UNKNOWN, never ABSENT.
 *  6. Error classification of apply: anything failing before COMMIT is
 *     rolled back and is PROVED_ABSENT / FC_FENCE_UNAVAILABLE (an uncommitted
 *     WAL transaction can never become visible); an error returned by COMMIT
 *     itself is FENCE_OUTCOME_UNKNOWN / FC_ERR_COMMIT_UNKNOWN and the caller
 *     probes.
 *  7. The connection is opened lazily: opening the fence or probing a
 *     missing database creates no file.  Waiting for the write lock is
 *     bounded (BUSY_TIMEOUT_MS) so a stopped writer cannot hang us.
 */
#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <sqlite3.h>

#include "common/clock.h"
#include "common/sqlite_reader.h"
#include "fences/fence_impl.h"

#define BUSY_TIMEOUT_MS 3000
#define SQL_MAX 512

struct fence_sqlite {
	char *path;
	sqlite3 *db; /* NULL until the first call that needs it */
	int db_readonly; /* db was opened by a probe: read-only, no pragmas */
	dev_t dev;       /* what the path named before a probe opened it */
	ino_t ino;
};

static const char schema_sql[] =
	"CREATE TABLE IF NOT EXISTS fencecert_fence("
	"operation_id TEXT PRIMARY KEY, epoch INTEGER NOT NULL, "
	"intent_digest TEXT NOT NULL, rows INTEGER NOT NULL, "
	"applied_at INTEGER NOT NULL);"
	"CREATE TABLE IF NOT EXISTS fencecert_epoch("
	"operation_id TEXT PRIMARY KEY, epoch INTEGER NOT NULL);";

static struct fence_sqlite *impl(fence *f)
{
	return f->impl;
}


static int db_fail(fence *f, int code, const char *what)
{
	struct fence_sqlite *s = impl(f);

	return fence__fail(f, code, "cannot %s in '%s': %s", what, s->path,
			   s->db ? sqlite3_errmsg(s->db) : "no connection");
}

static void disconnect(struct fence_sqlite *s)
{
	/* Closing rolls back whatever transaction is still open. */
	sqlite3_close_v2(s->db);
	s->db = NULL;
}

/* 1 when path names no file and its directory exists (so "no file" is a
 * fact about the target, not about a missing mount or a typo'd parent).
 * When it names one, *st is what stat() says of it. */
static int file_provably_missing(const char *path, struct stat *st)
{
	char *copy;
	int missing;

	if (stat(path, st) == 0 || errno != ENOENT)
		return 0;
	copy = strdup(path);
	if (!copy)
		return 0;
	missing = stat(dirname(copy), st) == 0 && S_ISDIR(st->st_mode);
	free(copy);
	return missing;
}

static int configure_writer(struct fence_sqlite *s)
{
	return sqlite3_exec(s->db, "PRAGMA query_only = 0; "
			    "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;",
			    NULL, NULL, NULL);
}

/* A writer after a probe: the probe's connection serves when it was opened
 * read-write (fc_sqlite_open_reader() does so whenever it may) and the
 * path still names the file the probe saw; it then gets exactly the
 * writer's settings.  Saves an open (a schema read and a -shm mapping)
 * per retry.  Non-zero: open a writer afresh. */
static int reuse_probe_connection(struct fence_sqlite *s)
{
	struct stat st;

	if (sqlite3_db_readonly(s->db, "main") != 0 || !s->ino ||
	    stat(s->path, &st) != 0 || st.st_dev != s->dev ||
	    st.st_ino != s->ino)
		return -1;
	return configure_writer(s);
}

/*
 * Make sure s->db is open.  With create == 0 (a probe) the database is
 * opened to read only and left as it is -- no file created, no pragma
 * written (a probe only reads: fence.h; common/sqlite_reader.h) -- and a
 * missing one sets *missing (only when that is provable).  A writer
 * (create == 1) turns a probe's connection into a read-write one in WAL
 * mode (reuse_probe_connection()), or replaces it.
 */
static int connect_db(fence *f, int create, int *missing)
{
	struct fence_sqlite *s = impl(f);
	struct stat st = { 0 };

	if (missing)
		*missing = 0;
	if (s->db && create && s->db_readonly) {
		if (reuse_probe_connection(s) == 0) {
			s->db_readonly = 0;
			return 0;
		}
		disconnect(s);
	}
	if (s->db)
		return 0;
	if (!create && file_provably_missing(s->path, &st)) {
		*missing = 1;
		return 0;
	}
	if ((create ? sqlite3_open_v2(s->path, &s->db, SQLITE_OPEN_READWRITE |
				      SQLITE_OPEN_CREATE, NULL) :
	     fc_sqlite_open_reader(s->path, 0, &s->db)) != SQLITE_OK) {
		int code = db_fail(f, FC_FENCE_UNAVAILABLE, "open target");

		disconnect(s);
		return code;
	}
	s->db_readonly = !create;
	s->dev = st.st_dev;
	s->ino = st.st_ino; /* 0 unless a probe saw the file */
	sqlite3_extended_result_codes(s->db, 1);
	sqlite3_busy_timeout(s->db, BUSY_TIMEOUT_MS);
	if (create && configure_writer(s)) {
		int code = db_fail(f, FC_FENCE_UNAVAILABLE,
				   "configure target");

		disconnect(s);
		return code;
	}
	return 0;
}

static int exec(fence *f, const char *sql, const char *what)
{
	if (sqlite3_exec(impl(f)->db, sql, NULL, NULL, NULL) != SQLITE_OK)
		return db_fail(f, FC_FENCE_UNAVAILABLE, what);
	return 0;
}

static int stmt(fence *f, const char *sql, sqlite3_stmt **st)
{
	if (sqlite3_prepare_v2(impl(f)->db, sql, -1, st, NULL) != SQLITE_OK)
		return db_fail(f, FC_FENCE_UNAVAILABLE, "prepare a statement");
	return 0;
}

/* Undo an open transaction; keeps the message of the failure that got us
 * here.  If even ROLLBACK fails the connection is dropped, which rolls back
 * too and leaves no lock behind. */
static void rollback(fence *f)
{
	struct fence_sqlite *s = impl(f);

	if (!s->db || sqlite3_get_autocommit(s->db))
		return;
	if (sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL) != SQLITE_OK)
		disconnect(s);
}

/* The epoch row of op: *found = 0 when there is none. */
static int read_epoch(fence *f, const char *op, long long *epoch, int *found)
{
	sqlite3_stmt *st;
	int rc;

	rc = stmt(f, "SELECT epoch FROM fencecert_epoch WHERE operation_id = ?",
		  &st);
	if (rc)
		return rc;
	sqlite3_bind_text(st, 1, op, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	*found = rc == SQLITE_ROW;
	if (*found)
		*epoch = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return db_fail(f, FC_FENCE_UNAVAILABLE, "read the epoch");
	return 0;
}

static int write_epoch(fence *f, const char *op, long long epoch)
{
	sqlite3_stmt *st;
	int rc;

	rc = stmt(f, "INSERT INTO fencecert_epoch(operation_id, epoch) "
		     "VALUES(?, ?) ON CONFLICT(operation_id) "
		     "DO UPDATE SET epoch = excluded.epoch", &st);
	if (rc)
		return rc;
	sqlite3_bind_text(st, 1, op, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, epoch);
	rc = sqlite3_step(st);
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE)
		return db_fail(f, FC_FENCE_UNAVAILABLE, "record the epoch");
	return 0;
}

/* The fence row of op, if any, into p (answer FENCE_APPLIED). */
static int read_fence(fence *f, const char *op, struct fence_probe *p,
		      int *found)
{
	sqlite3_stmt *st;
	int rc;

	rc = stmt(f, "SELECT epoch, intent_digest, rows FROM fencecert_fence "
		     "WHERE operation_id = ?", &st);
	if (rc)
		return rc;
	sqlite3_bind_text(st, 1, op, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	*found = rc == SQLITE_ROW;
	if (*found) {
		const unsigned char *intent = sqlite3_column_text(st, 1);

		p->answer = FENCE_APPLIED;
		p->epoch = sqlite3_column_int64(st, 0);
		snprintf(p->intent_digest, sizeof(p->intent_digest), "%s",
			 intent ? (const char *)intent : "");
		p->rows = sqlite3_column_int64(st, 2);
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return db_fail(f, FC_FENCE_UNAVAILABLE, "read the fence");
	return 0;
}

static int sqlite_open(fence *f, const char *url)
{
	const char *path = url + strlen("sqlite:");
	struct fence_sqlite *s;

	if (!*path)
		return fence__fail(f, FC_USAGE, "target url '%s' names no "
				   "database file", url);
	s = calloc(1, sizeof(*s));
	if (!s || !(s->path = strdup(path))) {
		free(s);
		return fence__fail(f, FC_NOMEM, "out of memory opening '%s'",
				   url);
	}
	f->impl = s;
	return 0;
}

static void sqlite_close(void *p)
{
	struct fence_sqlite *s = p;

	disconnect(s);
	free(s->path);
	free(s);
}

static int sqlite_prepare(fence *f, const char *op, long long epoch)
{
	long long cur = 0;
	int found, rc;

	rc = connect_db(f, 1, NULL);
	if (rc)
		return rc;
	rc = exec(f, "BEGIN IMMEDIATE", "start the prepare transaction");
	if (rc)
		return rc;
	rc = exec(f, schema_sql, "create the fence tables");
	if (!rc)
		rc = read_epoch(f, op, &cur, &found);
	if (!rc && found && cur > epoch)
		rc = fence__fail(f, FC_STALE_EPOCH, "epoch %lld for '%s' is "
				 "stale: epoch %lld is prepared", epoch, op, cur);
	if (!rc && (!found || cur < epoch))
		rc = write_epoch(f, op, epoch);
	if (rc) {
		rollback(f);
		return rc;
	}
	if (sqlite3_exec(impl(f)->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
		/* Unknown whether it stuck; prepare is idempotent, so the
		 * caller simply has not prepared yet. */
		rc = db_fail(f, FC_FENCE_UNAVAILABLE, "commit the prepare");
		rollback(f);
		return rc;
	}
	return 0;
}

/* Delete the target rows whose key is in the batch: the keys go to a temp
 * table so one scan of the data table suffices (it has no key index, which
 * keeps appends as cheap as a plain insert). */
static int delete_replaced(fence *f, const struct fence_batch *b)
{
	char sql[SQL_MAX];
	sqlite3_stmt *st;
	int rc;

	rc = exec(f, "CREATE TEMP TABLE IF NOT EXISTS fencecert_replace_keys"
		     "(row_key TEXT); DELETE FROM temp.fencecert_replace_keys",
		  "collect the replaced keys");
	if (rc)
		return rc;
	rc = stmt(f, "INSERT INTO temp.fencecert_replace_keys VALUES(?)", &st);
	if (rc)
		return rc;
	for (size_t i = 0; i < b->nrows && !rc; i++) {
		sqlite3_bind_text(st, 1, b->rows[i].row_key, -1, SQLITE_STATIC);
		if (sqlite3_step(st) != SQLITE_DONE)
			rc = db_fail(f, FC_FENCE_UNAVAILABLE,
				     "collect the replaced keys");
		sqlite3_reset(st);
	}
	sqlite3_finalize(st);
	if (rc)
		return rc;
	snprintf(sql, sizeof(sql), "DELETE FROM main.\"%s\" WHERE row_key IN "
		 "(SELECT row_key FROM temp.fencecert_replace_keys); "
		 "DELETE FROM temp.fencecert_replace_keys", b->table);
	return exec(f, sql, "delete the replaced rows");
}

static int insert_rows(fence *f, const struct fence_batch *b)
{
	char sql[SQL_MAX];
	sqlite3_stmt *st;
	int rc;

	snprintf(sql, sizeof(sql), "INSERT INTO main.\"%s\"(row_key, payload, "
		 "operation_id) VALUES(?, ?, ?)", b->table);
	rc = stmt(f, sql, &st);
	if (rc)
		return rc;
	/* Bindings survive sqlite3_reset(): bind the operation once. */
	sqlite3_bind_text(st, 3, b->operation_id, -1, SQLITE_STATIC);
	for (size_t i = 0; i < b->nrows && !rc; i++) {
		const struct fence_row *r = &b->rows[i];

		sqlite3_bind_text(st, 1, r->row_key, -1, SQLITE_STATIC);
		if (r->payload)
			sqlite3_bind_text(st, 2, r->payload, -1, SQLITE_STATIC);
		else
			sqlite3_bind_null(st, 2);
		if (sqlite3_step(st) != SQLITE_DONE)
			rc = db_fail(f, FC_FENCE_UNAVAILABLE, "insert the rows");
		sqlite3_reset(st);
	}
	sqlite3_finalize(st);
	return rc;
}

static int insert_fence(fence *f, long long epoch, const struct fence_batch *b)
{
	sqlite3_stmt *st;
	int rc;

	rc = stmt(f, "INSERT INTO fencecert_fence(operation_id, epoch, "
		     "intent_digest, rows, applied_at) VALUES(?, ?, ?, ?, ?)",
		  &st);
	if (rc)
		return rc;
	sqlite3_bind_text(st, 1, b->operation_id, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, epoch);
	sqlite3_bind_text(st, 3, b->intent_digest, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 4, (sqlite3_int64)b->nrows);
	sqlite3_bind_int64(st, 5, clock_wall_ms());
	rc = sqlite3_step(st);
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE)
		return db_fail(f, FC_FENCE_UNAVAILABLE, "write the fence row");
	return 0;
}

/* The checks of invariant 2, inside the open transaction.  Returns 0 when
 * the batch may be written, else the refusal with *outcome set. */
static int check_fence_and_epoch(fence *f, long long epoch,
				 const struct fence_batch *b,
				 enum fence_outcome *outcome)
{
	const char *op = b->operation_id;
	struct fence_probe have = { 0 };
	long long cur = 0;
	int found, rc;

	rc = read_fence(f, op, &have, &found);
	if (rc)
		return rc;
	if (found) {
		*outcome = FENCE_PROVED_PRESENT;
		if (strcmp(have.intent_digest, b->intent_digest) == 0)
			return fence__fail(f, FC_ALREADY_APPLIED, "'%s' was "
					   "already applied at epoch %lld", op,
					   have.epoch);
		return fence__fail(f, FC_INTENT_CONFLICT, "'%s' was applied "
				   "with intent '%s', not '%s'", op,
				   have.intent_digest, b->intent_digest);
	}
	rc = read_epoch(f, op, &cur, &found);
	if (rc)
		return rc;
	if (found && cur > epoch)
		return fence__fail(f, FC_STALE_EPOCH, "epoch %lld for '%s' is "
				   "stale: epoch %lld is prepared", epoch, op,
				   cur);
	if (!found || cur < epoch)
		return write_epoch(f, op, epoch);
	return 0;
}

static int sqlite_apply(fence *f, long long epoch, const struct fence_batch *b,
			enum fence_outcome *outcome)
{
	char sql[SQL_MAX];
	int rc;

	*outcome = FENCE_PROVED_ABSENT;
	rc = connect_db(f, 1, NULL);
	if (rc)
		return rc;
	rc = exec(f, "BEGIN IMMEDIATE", "start the apply transaction");
	if (rc)
		return rc;
	snprintf(sql, sizeof(sql), "%sCREATE TABLE IF NOT EXISTS main.\"%s\""
		 "(row_key TEXT, payload TEXT, operation_id TEXT)", schema_sql,
		 b->table);
	rc = exec(f, sql, "create the target tables");
	if (!rc)
		rc = check_fence_and_epoch(f, epoch, b, outcome);
	if (!rc && b->strategy == FENCE_REPLACE)
		rc = delete_replaced(f, b);
	if (!rc)
		rc = insert_rows(f, b);
	if (!rc)
		rc = insert_fence(f, epoch, b);
	if (rc) {
		rollback(f);
		return rc;
	}
	if (sqlite3_exec(impl(f)->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
		*outcome = FENCE_OUTCOME_UNKNOWN;
		rc = db_fail(f, FC_ERR_COMMIT_UNKNOWN, "commit the apply");
		rollback(f);
		return rc;
	}
	*outcome = FENCE_PROVED_PRESENT;
	return 0;
}

static int sqlite_probe(fence *f, const char *op, struct fence_probe *out)
{
	sqlite3_stmt *st;
	int missing, found, has_table = 0, rc;

	rc = connect_db(f, 0, &missing);
	if (rc)
		return rc;
	if (missing) {
		out->answer = FENCE_ABSENT;
		return 0;
	}
	/* One read transaction: the table check and the read see one
	 * snapshot. */
	rc = exec(f, "BEGIN", "start the probe");
	if (rc)
		return rc;
	rc = stmt(f, "SELECT count(*) FROM main.sqlite_master WHERE "
		     "type = 'table' AND name = 'fencecert_fence'", &st);
	if (!rc) {
		if (sqlite3_step(st) == SQLITE_ROW)
			has_table = sqlite3_column_int(st, 0) > 0;
		else
			rc = db_fail(f, FC_FENCE_UNAVAILABLE,
				     "read the schema");
		sqlite3_finalize(st);
	}
	found = 0;
	if (!rc && has_table)
		rc = read_fence(f, op, out, &found);
	rollback(f);
	if (rc)
		return rc;
	if (!found)
		out->answer = FENCE_ABSENT;
	return 0;
}

const struct fence_ops fence_sqlite_ops = {
	.scheme = "sqlite",
	.name = "sqlite",
	.capability = FENCE_CAP_AUTOMATIC,
	.open = sqlite_open,
	.close = sqlite_close,
	.prepare = sqlite_prepare,
	.apply = sqlite_apply,
	.probe = sqlite_probe,
};
