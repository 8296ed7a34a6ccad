/*
 * journal_sqlite_schema.c -- the SQLite journal's schema versions.
 *
 * Invariants:
 *  1. The schema version is the one row of fencecert_schema; version 0 means
 *     "no fencecert schema" (no such table, or a row saying 0).
 *  2. Migrations are an ordered list; step `to` takes version to-1 to `to`
 *     inside one BEGIN IMMEDIATE transaction that re-reads the version under
 *     the write lock, so two processes opening a new file create the schema
 *     once, and a failed step leaves the database as it was.
 *  3. Implicitly (journal_sqlite__ready) only version 0 is upgraded: an
 *     older non-zero version may still be in use by an older fencecert and
 *     waits for an explicit `journal migrate`; a newer version is refused by
 *     every call.
 */
#include <stdio.h>

#include "journal/journal_sqlite_impl.h"

/*
 * The ordered schema migrations.  Step i takes a database at version
 * `to - 1` to `to` inside one transaction; version 0 is "no fencecert
 * schema".  Tables are created without IF NOT EXISTS on purpose: a foreign
 * table of the same name must stop the migration, not be adopted.
 */
static const struct sq_migration {
	int to;
	const char *sql;
} sq_migrations[] = {
	{ 1,
	  "CREATE TABLE IF NOT EXISTS fencecert_schema("
	  "  version INTEGER NOT NULL);"
	  "CREATE TABLE operations("
	  "  operation_id TEXT PRIMARY KEY NOT NULL,"
	  "  intent_digest TEXT NOT NULL,"
	  "  state TEXT NOT NULL,"
	  "  version INTEGER NOT NULL,"
	  "  lease_epoch INTEGER NOT NULL DEFAULT 0,"
	  "  lease_owner TEXT NOT NULL DEFAULT '',"
	  "  lease_expires_at INTEGER NOT NULL DEFAULT 0,"
	  "  created_at INTEGER NOT NULL,"
	  "  updated_at INTEGER NOT NULL,"
	  "  meta TEXT NOT NULL DEFAULT '{}',"
	  "  evidence TEXT NOT NULL DEFAULT '{}'"
	  ") WITHOUT ROWID;"
	  "CREATE TABLE transitions("
	  "  operation_id TEXT NOT NULL,"
	  "  version INTEGER NOT NULL,"
	  "  from_state TEXT NOT NULL,"
	  "  to_state TEXT NOT NULL,"
	  "  epoch INTEGER NOT NULL,"
	  "  at INTEGER NOT NULL,"
	  "  evidence TEXT NOT NULL DEFAULT '{}',"
	  "  PRIMARY KEY(operation_id, version)"
	  ") WITHOUT ROWID;"
	  "CREATE TRIGGER transitions_append_only BEFORE UPDATE ON transitions"
	  " BEGIN SELECT RAISE(ABORT, 'transitions are append-only'); END;"
	  "CREATE TABLE purged("
	  "  operation_id TEXT PRIMARY KEY NOT NULL,"
	  "  intent_digest TEXT NOT NULL,"
	  "  purged_at INTEGER NOT NULL"
	  ") WITHOUT ROWID;" },
};

/* Run a query giving one integer (NULL or no row: 0); not cached. */
static int sq_query_int(journal *j, const char *sql, long long *out)
{
	struct journal_sqlite *s = j->impl;
	sqlite3_stmt *st;
	int rc;

	rc = sqlite3_prepare_v2(s->db, sql, -1, &st, NULL);
	if (rc != SQLITE_OK)
		return journal_sqlite__fail(j, rc, "read the schema of");
	rc = sqlite3_step(st);
	*out = rc == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
	if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
		rc = journal_sqlite__fail(j, rc, "read the schema of");
		sqlite3_finalize(st);
		return rc;
	}
	sqlite3_finalize(st);
	return 0;
}

static int sq_read_version(journal *j, int *version)
{
	long long has, v = 0;
	int rc;

	rc = sq_query_int(j, "SELECT count(*) FROM sqlite_master WHERE type ="
			  " 'table' AND name = 'fencecert_schema'", &has);
	if (!rc && has)
		rc = sq_query_int(j, "SELECT max(version) FROM "
				  "fencecert_schema", &v);
	if (rc)
		return rc;
	if (v < 0 || v > INT_MAX)
		return journal__fail(j, FC_CORRUPT, "schema version %lld of "
				     "journal '%s' is not valid", v,
				     ((struct journal_sqlite *)j->impl)->path);
	*version = (int)v;
	return 0;
}

static int sq_newer(journal *j, int v)
{
	struct journal_sqlite *s = j->impl;

	return journal__fail(j, FC_USAGE, "journal '%s' has schema version %d, "
			     "newer than this fencecert supports (%d)", s->path,
			     v, JOURNAL_SCHEMA_VERSION);
}

/* Apply one migration step, re-reading the version under the write lock
 * so concurrent openers of a new file do not both create the schema. */
static int sq_migrate_step(journal *j, const struct sq_migration *m)
{
	struct journal_sqlite *s = j->impl;
	char sql[96];
	int rc, v;

	if ((rc = journal_sqlite__begin(j)))
		return rc;
	if ((rc = sq_read_version(j, &v)))
		goto out;
	if (v > JOURNAL_SCHEMA_VERSION) {
		rc = sq_newer(j, v);
		goto out;
	}
	if (v >= m->to) {
		journal_sqlite__rollback(j);
		return 0;
	}
	snprintf(sql, sizeof(sql), "DELETE FROM fencecert_schema;"
		 "INSERT INTO fencecert_schema(version) VALUES(%d)", m->to);
	if (sqlite3_exec(s->db, m->sql, NULL, NULL, NULL) != SQLITE_OK ||
	    sqlite3_exec(s->db, sql, NULL, NULL, NULL) != SQLITE_OK) {
		int code = journal_sqlite__code(sqlite3_errcode(s->db));

		rc = journal__fail(j, code,
				   "cannot migrate journal '%s' to schema "
				   "version %d: %s", s->path, m->to,
				   sqlite3_errmsg(s->db));
		goto out;
	}
	return journal_sqlite__commit(j);
out:
	journal_sqlite__rollback(j);
	return rc;
}

static int sq_upgrade(journal *j)
{
	int rc;

	for (size_t i = 0; i < JOURNAL_SQLITE_ARRAY_SIZE(sq_migrations); i++)
		if ((rc = sq_migrate_step(j, &sq_migrations[i])))
			return rc;
	return 0;
}

/* Called first by every operation but migrate: see invariant 3. */
int journal_sqlite__ready(journal *j)
{
	struct journal_sqlite *s = j->impl;
	int rc, v;

	if (s->ready)
		return 0;
	if ((rc = sq_read_version(j, &v)))
		return rc;
	if (v == 0 && j->readonly)
		rc = journal__fail(j, FC_JOURNAL_UNAVAILABLE, "'%s' has no fencecert "
				   "journal schema (not a journal, or never "
				   "used); opened read-only, nothing created",
				   s->path);
	else if (v == 0)
		rc = sq_upgrade(j);
	else if (v > JOURNAL_SCHEMA_VERSION)
		rc = sq_newer(j, v);
	else if (v < JOURNAL_SCHEMA_VERSION)
		rc = journal__fail(j, FC_USAGE, "journal '%s' has schema "
				   "version %d, this fencecert needs %d; run "
				   "'fencecert journal migrate'", s->path, v,
				   JOURNAL_SCHEMA_VERSION);
	if (!rc)
		s->ready = 1;
	return rc;
}

int journal_sqlite__init(journal *j)
{
	return journal_sqlite__ready(j);
}

int journal_sqlite__migrate(journal *j, int *from, int *to)
{
	struct journal_sqlite *s = j->impl;
	int rc, v;

	if ((rc = sq_read_version(j, &v)))
		return rc;
	if (v > JOURNAL_SCHEMA_VERSION)
		return sq_newer(j, v);
	if ((rc = sq_upgrade(j)))
		return rc;
	s->ready = 1;
	*from = v;
	*to = JOURNAL_SCHEMA_VERSION;
	return 0;
}
