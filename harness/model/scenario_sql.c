/*
 * scenario_sql.c -- what the suite loader can tell about a route's
 * observe.sql without its target: whether it is one statement that only
 * reads.
 *
 * The observer (harness/run/observe.c) runs observe.sql on the target
 * through a query_only connection and prepares it once, so a write fails
 * there on every schedule and a second statement is silently never run.
 * Both are refused here, at load, with the position of the `sql` value.
 *
 * The target's schema is not known at load, so the statement is prepared
 * (sqlite3_prepare_v2, never stepped) on an empty in-memory database that
 * is taught, one error at a time, the tables and columns the statement
 * names: "no such table: T" creates T, "no such column: C" adds C to every
 * table.  Then sqlite3_stmt_readonly() says whether it writes and the tail
 * prepare_v2 leaves says whether another statement follows.
 *
 * Invariants:
 *   1. A syntax error, a write, a statement that returns no rows (BEGIN,
 *      ATTACH, ...), no statement at all or a second statement is refused.
 *   2. What cannot be prepared without the real schema (an ambiguous column
 *      once stubbed, a name in another schema, a missing function, more
 *      than STUB_ROUNDS names) is accepted unchecked: the observer still
 *      refuses it at run time, as before.  Nothing is refused on a guess.
 *   3. Nothing runs: statements are only prepared, on a private :memory:
 *      database closed before return.
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <sqlite3.h>

#include "common/sqlite_setup.h"
#include "harness/model/scenario_impl.h"

#define STUB_ROUNDS 64  /* tables and columns taught before giving up */
#define SQL_EXCERPT 40

/* The text after `prefix` in msg, or NULL. */
static const char *after(const char *msg, const char *prefix)
{
	size_t n = strlen(prefix);

	return strncmp(msg, prefix, n) == 0 ? msg + n : NULL;
}

static bool run(sqlite3 *db, char *sql)
{
	int rc;

	if (!sql)
		return false;
	rc = sqlite3_exec(db, sql, NULL, NULL, NULL);
	sqlite3_free(sql);
	return rc == SQLITE_OK;
}

/* Add column `col` to every table that lacks it; true if one got it. */
static bool add_column(sqlite3 *db, const char *col)
{
	sqlite3_stmt *st;
	bool added = false;

	if (sqlite3_prepare_v2(db, "SELECT name FROM sqlite_schema WHERE "
			       "type = 'table'", -1, &st, NULL) != SQLITE_OK)
		return false;
	while (sqlite3_step(st) == SQLITE_ROW) {
		const char *t = (const char *)sqlite3_column_text(st, 0);

		/* a table that has the column refuses: that is fine */
		if (t && run(db, sqlite3_mprintf("ALTER TABLE \"%w\" ADD COLUMN "
						 "\"%w\"", t, col)))
			added = true;
	}
	sqlite3_finalize(st);
	return added;
}

/* Teach db the object SQLite's message says is missing.  False when the
 * message is not about a missing table or column, or teaching failed. */
static bool add_stub(sqlite3 *db, const char *msg)
{
	char table[256], col[256];
	const char *name;
	int have, given;

	if ((name = after(msg, "no such table: "))) {
		if (strncmp(name, "main.", 5) == 0)
			name += 5;
		else if (strchr(name, '.'))
			return false; /* temp.T, or an attached schema */
		return run(db, sqlite3_mprintf("CREATE TABLE \"%w\"(fc_stub)",
					       name));
	}
	if ((name = after(msg, "no such column: "))) {
		const char *dot = strrchr(name, '.');

		return add_column(db, dot ? dot + 1 : name);
	}
	/* INSERT INTO t(c) ... and INSERT INTO t VALUES (a, b, ...) */
	if (sscanf(msg, "table %255s has no column named %255s", table, col) == 2)
		return run(db, sqlite3_mprintf("ALTER TABLE \"%w\" ADD COLUMN "
					       "\"%w\"", table, col));
	if (sscanf(msg, "table %255s has %d columns but %d values were supplied",
		   table, &have, &given) == 3 && have < given)
		return run(db, sqlite3_mprintf("ALTER TABLE \"%w\" ADD COLUMN "
					       "fc_stub%d", table, have));
	return false;
}

static bool syntax_problem(const char *msg)
{
	return strstr(msg, "syntax error") || strcmp(msg, "incomplete input") == 0 ||
	       strncmp(msg, "unrecognized token", 18) == 0;
}

/* A one-line excerpt of s for messages. */
static const char *excerpt(const char *s, char out[SQL_EXCERPT + 4])
{
	size_t i;

	while (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r')
		s++;
	for (i = 0; s[i] && i < SQL_EXCERPT; i++)
		out[i] = (unsigned char)s[i] < 0x20 ? ' ' : s[i];
	if (s[i]) {
		memcpy(out + i, "...", 3);
		i += 3;
	}
	out[i] = '\0';
	return out;
}

/* Whether tail holds anything but spaces, comments and empty statements. */
static bool tail_has_statement(sqlite3 *db, const char *tail)
{
	sqlite3_stmt *st = NULL;
	int rc = sqlite3_prepare_v2(db, tail, -1, &st, NULL);

	sqlite3_finalize(st);
	return rc != SQLITE_OK || st != NULL;
}

/* The prepared first statement st (tail after it) against invariant 1. */
static int judge(sqlite3 *db, sqlite3_stmt *st, const char *sql,
		 const char *tail, char *msg, size_t msglen)
{
	char ex[SQL_EXCERPT + 4];

	if (!st) {
		snprintf(msg, msglen, "observe.sql holds no SQL statement");
		return FC_USAGE;
	}
	if (!sqlite3_stmt_readonly(st)) {
		snprintf(msg, msglen, "observe.sql must only read the target, but "
			 "'%s' writes", excerpt(sql, ex));
		return FC_USAGE;
	}
	if (sqlite3_column_count(st) == 0) {
		snprintf(msg, msglen, "observe.sql must be a query returning "
			 "(row_key, count) rows, but '%s' returns none",
			 excerpt(sql, ex));
		return FC_USAGE;
	}
	if (tail_has_statement(db, tail)) {
		snprintf(msg, msglen, "observe.sql must be one statement, but "
			 "another follows: '%s'", excerpt(tail, ex));
		return FC_USAGE;
	}
	return 0;
}

int scenario__observe_sql_check(const char *sql, char *msg, size_t msglen)
{
	sqlite3_stmt *st = NULL;
	const char *tail = NULL;
	sqlite3 *db = NULL;
	int rc = SQLITE_ERROR, out = 0;

	/* The loader may be the process's first SQLite user (certify loads the
	 * suite before it runs anything): settle the settings first. */
	fc_sqlite_setup();
	if (sqlite3_open_v2(":memory:", &db, SQLITE_OPEN_READWRITE |
			    SQLITE_OPEN_CREATE, NULL) != SQLITE_OK) {
		sqlite3_close(db);
		snprintf(msg, msglen, "out of memory checking observe.sql");
		return FC_NOMEM;
	}
	for (int round = 0; round <= STUB_ROUNDS; round++) {
		const char *err;

		rc = sqlite3_prepare_v2(db, sql, -1, &st, &tail);
		if (rc == SQLITE_OK)
			break;
		err = sqlite3_errmsg(db);
		if (syntax_problem(err)) {
			snprintf(msg, msglen, "observe.sql is not valid SQL: %s",
				 err);
			out = FC_USAGE;
			break;
		}
		if (rc == SQLITE_NOMEM) {
			snprintf(msg, msglen, "out of memory checking observe.sql");
			out = FC_NOMEM;
			break;
		}
		if (round == STUB_ROUNDS || !add_stub(db, err))
			break; /* invariant 2: left to the observer */
	}
	if (rc == SQLITE_OK)
		out = judge(db, st, sql, tail, msg, msglen);
	sqlite3_finalize(st);
	sqlite3_close(db);
	return out;
}
