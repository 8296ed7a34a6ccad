/*
 * journal_sqlite_impl.h -- what the files of the SQLite journal adapter
 * share; nothing outside them includes it.
 *
 *   journal_sqlite_stmt.c    statements, transactions, result codes, rows
 *                            (calls nothing else of the adapter)
 *   journal_sqlite_schema.c  schema versions, migrations, init/migrate
 *   journal_sqlite_scan.c    calls that read or delete many rows (history,
 *                            list, purge)
 *   journal_sqlite.c         the connection, the ops table and the
 *                            per-operation calls (create, get, cas, lease)
 *
 * Calls point down that list's reverse: journal_sqlite.c uses the other
 * three, scan uses schema and stmt, schema uses stmt.
 *
 * The helpers follow the port's rule: return 0 or a negative fc_error with
 * a message on the journal; the caller rolls back on failure.
 */
#ifndef FENCECERT_JOURNAL_SQLITE_IMPL_H
#define FENCECERT_JOURNAL_SQLITE_IMPL_H

#include <limits.h>
#include <sqlite3.h>

#include "journal/journal_impl.h"

#define JOURNAL_SQLITE_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* Cached statements, prepared on first use; SQL text in journal_sqlite_stmt.c. */
enum journal_sqlite_stmt {
	SQ_BEGIN,
	SQ_COMMIT,
	SQ_GET,
	SQ_INSERT_OP,
	SQ_INSERT_TRANSITION,
	SQ_UPDATE_STATE,
	SQ_UPDATE_LEASE,
	SQ_HISTORY,
	SQ_LIST,
	SQ_PURGE_SELECT,
	SQ_PURGE_TOMBSTONES,
	SQ_PURGE_TRANSITIONS,
	SQ_PURGE_OPERATIONS,
	SQ_PURGED_LOOKUP,
	SQ_STMT_COUNT
};

/* j->impl of a sqlite journal. */
struct journal_sqlite {
	sqlite3 *db;
	int busy_ms;
	int ready; /* schema seen at JOURNAL_SCHEMA_VERSION on this handle */
	sqlite3_stmt *stmt[SQ_STMT_COUNT];
	char path[PATH_MAX];
};

/* ---- journal_sqlite_stmt.c ---------------------------------------------- */

/* The fc_error for an SQLite result code. */
int journal_sqlite__code(int rc);
/* Record SQLite's message for a failed step; `what` is a verb ("read"). */
int journal_sqlite__fail(journal *j, int rc, const char *what);
/* Non-zero result of OR-ed sqlite3_bind_*() calls -> failure. */
int journal_sqlite__bound(journal *j, int rc);
int journal_sqlite__prepare(journal *j, enum journal_sqlite_stmt id,
			    sqlite3_stmt **out);
/* journal_sqlite__prepare() with op bound to ?1 (the statements that look
 * up one operation). */
int journal_sqlite__prepare_op(journal *j, enum journal_sqlite_stmt id,
			       const char *op, sqlite3_stmt **out);
/* Step a statement whose rows are not wanted; always resets it. */
int journal_sqlite__run(journal *j, sqlite3_stmt *st, const char *what);
int journal_sqlite__begin(journal *j); /* BEGIN IMMEDIATE */
int journal_sqlite__commit(journal *j); /* rolls back when it fails */
void journal_sqlite__rollback(journal *j); /* keeps j's message */
/* Copy a text column; FC_CORRUPT when it does not fit. */
int journal_sqlite__text(journal *j, sqlite3_stmt *st, int col, char *out,
			 size_t len);
int journal_sqlite__state(journal *j, sqlite3_stmt *st, int col,
			  int allow_none, enum fc_state *out);
/* An entry from a row of the ENTRY_COLUMNS select. */
int journal_sqlite__row_entry(journal *j, sqlite3_stmt *st,
			      struct journal_entry *e);

/* ---- journal_sqlite_schema.c -------------------------------------------- */

/* Called first by every call but migrate: creates a version-0 schema,
 * refuses an older or newer one. */
int journal_sqlite__ready(journal *j);
int journal_sqlite__init(journal *j);
int journal_sqlite__migrate(journal *j, int *from, int *to);

/* ---- journal_sqlite_scan.c ---------------------------------------------- */

int journal_sqlite__history(journal *j, const char *op,
			    struct journal_transition **out, size_t *n);
int journal_sqlite__list(journal *j, const struct journal_filter *f,
			 struct journal_entry **out, size_t *n);
int journal_sqlite__purge(journal *j, long long before,
			  char (**ids)[JOURNAL_ID_MAX], size_t *n);

/* ---- journal_sqlite.c --------------------------------------------------- */

/* For tests (test_journal_sqlite.c declares it too): the connection behind
 * a sqlite journal, else NULL. */
sqlite3 *journal_sqlite__db(journal *j);

#endif
