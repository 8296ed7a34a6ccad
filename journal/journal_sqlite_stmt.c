/*
 * journal_sqlite_stmt.c -- what every call of the SQLite journal adapter
 * is made of: its statements (SQL text, prepared once per handle), its
 * transactions, the mapping of SQLite's result codes to fc_error, and the
 * decoding of rows into entries (journal_sqlite_impl.h).
 *
 * It calls nothing else of the adapter: the per-operation calls
 * (journal_sqlite.c), the schema (journal_sqlite_schema.c) and the scans
 * (journal_sqlite_scan.c) are built on it.
 *
 * Invariant: every statement is reset after its use, so no read snapshot
 * outlives a call (journal_sqlite.c, invariant 1).
 */
#include <stdio.h>
#include <string.h>

#include "journal/journal_sqlite_impl.h"

#define ENTRY_COLUMNS "operation_id, intent_digest, state, version, " \
	"lease_epoch, lease_owner, lease_expires_at, created_at, updated_at, " \
	"meta, evidence"
#define PURGEABLE "state = 'COMPLETE' AND updated_at < ?1"

static const char *const sq_sql[SQ_STMT_COUNT] = {
	[SQ_BEGIN] = "BEGIN IMMEDIATE",
	[SQ_COMMIT] = "COMMIT",
	[SQ_GET] = "SELECT " ENTRY_COLUMNS " FROM operations"
		" WHERE operation_id = ?1",
	[SQ_INSERT_OP] = "INSERT INTO operations(" ENTRY_COLUMNS ")"
		" VALUES(?1, ?2, 'PREPARING', 1, 0, '', 0, ?3, ?3, ?4, '{}')",
	[SQ_INSERT_TRANSITION] = "INSERT INTO transitions(operation_id,"
		" version, from_state, to_state, epoch, at, evidence)"
		" VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7)",
	[SQ_UPDATE_STATE] = "UPDATE operations SET state = ?2, version = ?3,"
		" updated_at = ?4, evidence = ?5"
		" WHERE operation_id = ?1 AND version = ?6",
	[SQ_UPDATE_LEASE] = "UPDATE operations SET lease_epoch = ?2,"
		" lease_owner = ?3, lease_expires_at = ?4"
		" WHERE operation_id = ?1 AND lease_epoch = ?5",
	[SQ_HISTORY] = "SELECT version, from_state, to_state, epoch, at,"
		" evidence FROM transitions WHERE operation_id = ?1"
		" ORDER BY version",
	[SQ_LIST] = "SELECT " ENTRY_COLUMNS " FROM operations"
		" WHERE ?1 = 0 OR updated_at < ?1 ORDER BY operation_id",
	[SQ_PURGE_SELECT] = "SELECT operation_id FROM operations WHERE "
		PURGEABLE " ORDER BY operation_id",
	[SQ_PURGE_TOMBSTONES] = "INSERT OR REPLACE INTO purged(operation_id,"
		" intent_digest, purged_at) SELECT operation_id, intent_digest,"
		" ?2 FROM operations WHERE " PURGEABLE,
	[SQ_PURGE_TRANSITIONS] = "DELETE FROM transitions WHERE operation_id"
		" IN (SELECT operation_id FROM operations WHERE " PURGEABLE ")",
	[SQ_PURGE_OPERATIONS] = "DELETE FROM operations WHERE " PURGEABLE,
	[SQ_PURGED_LOOKUP] = "SELECT 1 FROM purged WHERE operation_id = ?1",
};

/* ---- errors, statements, transactions ----------------------------------- */

int journal_sqlite__code(int rc)
{
	switch (rc & 0xff) {
	case SQLITE_NOMEM:
		return FC_NOMEM;
	case SQLITE_CORRUPT:
	case SQLITE_NOTADB:
		return FC_CORRUPT;
	default: /* BUSY, LOCKED, IOERR, CANTOPEN, FULL, READONLY, ... */
		return FC_JOURNAL_UNAVAILABLE;
	}
}

int journal_sqlite__fail(journal *j, int rc, const char *what)
{
	struct journal_sqlite *s = j->impl;

	return journal__fail(j, journal_sqlite__code(rc), "cannot %s journal "
			     "'%s': %s", what, s->path, sqlite3_errmsg(s->db));
}

int journal_sqlite__prepare(journal *j, enum journal_sqlite_stmt id,
			    sqlite3_stmt **out)
{
	struct journal_sqlite *s = j->impl;
	int rc;

	*out = NULL;
	if (!s->stmt[id]) {
		rc = sqlite3_prepare_v3(s->db, sq_sql[id], -1,
					SQLITE_PREPARE_PERSISTENT,
					&s->stmt[id], NULL);
		if (rc != SQLITE_OK)
			return journal_sqlite__fail(j, rc, "prepare a "
						    "statement on");
	}
	*out = s->stmt[id];
	return 0;
}

int journal_sqlite__prepare_op(journal *j, enum journal_sqlite_stmt id,
			       const char *op, sqlite3_stmt **out)
{
	int rc;

	if ((rc = journal_sqlite__prepare(j, id, out)))
		return rc;
	return journal_sqlite__bound(j, sqlite3_bind_text(*out, 1, op, -1,
							  SQLITE_STATIC));
}

/* Step a statement that returns no rows (or ignore its rows); reset it. */
int journal_sqlite__run(journal *j, sqlite3_stmt *st, const char *what)
{
	int rc = sqlite3_step(st);
	int ret = 0;

	if (rc != SQLITE_DONE && rc != SQLITE_ROW)
		ret = journal_sqlite__fail(j, rc, what);
	sqlite3_reset(st);
	return ret;
}

static int sq_run_id(journal *j, enum journal_sqlite_stmt id, const char *what)
{
	sqlite3_stmt *st;
	int rc;

	if ((rc = journal_sqlite__prepare(j, id, &st)))
		return rc;
	return journal_sqlite__run(j, st, what);
}

int journal_sqlite__begin(journal *j)
{
	return sq_run_id(j, SQ_BEGIN, "lock");
}

/* Undo the open transaction, if SQLite has not already; keeps j->errmsg. */
void journal_sqlite__rollback(journal *j)
{
	struct journal_sqlite *s = j->impl;

	if (!sqlite3_get_autocommit(s->db))
		sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
}

int journal_sqlite__commit(journal *j)
{
	int rc = sq_run_id(j, SQ_COMMIT, "commit to");

	if (rc)
		journal_sqlite__rollback(j);
	return rc;
}

int journal_sqlite__bound(journal *j, int rc)
{
	if (rc == SQLITE_OK)
		return 0;
	return journal_sqlite__fail(j, rc, "bind a value for");
}

/* ---- rows --------------------------------------------------------------- */

int journal_sqlite__text(journal *j, sqlite3_stmt *st, int col, char *out,
			 size_t len)
{
	const unsigned char *t = sqlite3_column_text(st, col);
	size_t n = (size_t)sqlite3_column_bytes(st, col);
	struct journal_sqlite *s = j->impl;

	if (!t)
		n = 0;
	if (n >= len)
		return journal__fail(j, FC_CORRUPT, "column '%s' too long in "
				     "journal '%s'",
				     sqlite3_column_name(st, col), s->path);
	if (n)
		memcpy(out, t, n);
	out[n] = '\0';
	return 0;
}

int journal_sqlite__state(journal *j, sqlite3_stmt *st, int col,
			  int allow_none, enum fc_state *out)
{
	const char *t = (const char *)sqlite3_column_text(st, col);
	struct journal_sqlite *s = j->impl;

	if (t && allow_none && strcmp(t, "NONE") == 0) {
		*out = FC_STATE_NONE;
		return 0;
	}
	if (t && !state_parse(t, out))
		return 0;
	return journal__fail(j, FC_CORRUPT, "unknown state '%.32s' in journal "
			     "'%s'", t ? t : "(null)", s->path);
}

#define TEXT(col, field) journal_sqlite__text(j, st, col, field, sizeof(field))

int journal_sqlite__row_entry(journal *j, sqlite3_stmt *st,
			      struct journal_entry *e)
{
	int rc;

	/* Column numbers follow ENTRY_COLUMNS. */
	if ((rc = TEXT(0, e->operation_id)) ||
	    (rc = TEXT(1, e->intent_digest)) ||
	    (rc = journal_sqlite__state(j, st, 2, 0, &e->state)) ||
	    (rc = TEXT(5, e->lease_owner)) ||
	    (rc = TEXT(9, e->meta)) ||
	    (rc = TEXT(10, e->evidence)))
		return rc;
	e->version = sqlite3_column_int64(st, 3);
	e->lease_epoch = sqlite3_column_int64(st, 4);
	e->lease_expires_at = sqlite3_column_int64(st, 6);
	e->created_at = sqlite3_column_int64(st, 7);
	e->updated_at = sqlite3_column_int64(st, 8);
	return 0;
}

#undef TEXT

/* Read op's entry: 0, FC_NOT_FOUND (with a message) or another error. */
