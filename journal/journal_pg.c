/*
 * journal_pg.c -- the PostgreSQL journal adapter (libpq):
 *
 *   postgresql://[USER[:PASSWORD]@]HOST[:PORT]/DB[?PARAM=V&...]
 *   postgres://...                        (the same; libpq takes both)
 *
 * Every libpq URL parameter is passed through.  Two are fencecert's own and
 * are removed before libpq sees the URL:
 *   schema=NAME      keep the journal's tables in schema NAME (created on
 *                    first use; [a-z_][a-z0-9_]*, at most 63 bytes).  The
 *                    session's search_path is exactly that schema, so two
 *                    names are two independent journals in one database:
 *                    this is how the tests get a fresh namespace per case.
 *                    Without it the tables live where the server's
 *                    search_path puts them (normally "public").
 *   timeout_ms=N     server-side statement_timeout and lock_timeout
 *                    (default 10000); the client gives up waiting for a
 *                    reply after 1.5 N.  connect_timeout defaults to 5 s.
 *
 * Schema version 1 (the SQLite adapter's tables and columns, prefixed,
 * because a PostgreSQL database is usually shared with other data):
 *   fencecert_schema(version)                    one row
 *   fencecert_operations(operation_id PK, ...)   the entries
 *   fencecert_transitions(operation_id, version) append-only history
 *   fencecert_purged(operation_id PK, ...)       tombstones of purge
 *
 * Invariants:
 *  1. Every write is ONE statement in its own (autocommit) transaction with
 *     synchronous_commit=on: the entry and its history row commit together
 *     or not at all, and a reply means the WAL was flushed.
 *  2. A CAS is guarded in that statement by operation_id, version, the
 *     current state being in (legal predecessors of next, from states.c)
 *     intersected with the expected states, and the lease epoch.  When it
 *     matches no row we re-read the row and let journal__check_cas() name
 *     the refusal; if the re-read finds the request applicable (it raced a
 *     writer that has since committed) the statement is sent again, which
 *     is safe because it provably changed nothing.
 *  3. The session runs READ COMMITTED, so a CAS or lease racing another
 *     writer waits for it and re-checks its guard on the committed row:
 *     of N equal CASes exactly one matches.
 *  4. No wait is unbounded: connect_timeout for connecting, the server's
 *     statement/lock timeouts, and a client-side deadline on every reply
 *     (a hung server or backend).  All of these are FC_JOURNAL_UNAVAILABLE.
 *  5. A lost connection is dropped and re-opened at the start of the next
 *     call, never in the middle of one: a write whose reply was lost is
 *     reported FC_JOURNAL_UNAVAILABLE ("outcome unknown") and is never
 *     re-sent; the caller re-reads and reconciles.
 *  6. Statements are prepared once per connection, lazily, and run with
 *     generic plans: each is a primary-key lookup, planned once.
 *     Invariants 4-6 and 8 are kept by the session (common/pg_session.h),
 *     which this file holds in struct journal_pg; every message the
 *     session records is copied onto the journal (pg_failed()).
 *  7. Timestamps are the client's clock_wall_ms(), as in every adapter;
 *     updated_at never goes backwards for one operation.
 *  8. Messages carry the URL only through journal_redact_url(), and libpq's
 *     own messages are scrubbed of the URL's password.
 *
 *   cas:  [cas statement] --1 row--> done
 *                |0 rows
 *                v
 *          [get] -> journal__check_cas() --refused--> that family
 *                         |applicable (raced)
 *                         +--> send the cas statement again (bounded)
 */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/pg_session.h"
#include "journal/journal_impl.h"

#define PG_CAS_TRIES 5
#define PG_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

#define COLS "operation_id, intent_digest, state, version, lease_epoch, " \
	"lease_owner, lease_expires_at, created_at, updated_at, meta, evidence"
#define PURGEABLE "state = 'COMPLETE' AND updated_at < $1"

enum pg_stmt_id {
	PG_GET,
	PG_CREATE,
	PG_CAS,
	PG_LEASE,
	PG_HISTORY,
	PG_LIST,
	PG_PURGE,
	PG_STMT_COUNT
};

static const struct pg_stmt pg_stmts[PG_STMT_COUNT] = {
	[PG_GET] = { "fc_get", "SELECT " COLS " FROM fencecert_operations"
		" WHERE operation_id = $1", 0 },
	/*
	 * Create-if-absent, refusing an id with a tombstone.  Column 0 says
	 * which branch answered: 1 created, 0 existing, 2 purged.  The INSERT
	 * also requires the row to be absent from the statement's snapshot:
	 * a row being purged under us is then answered as existing (we are
	 * ordered before the purge) instead of re-created once the purge
	 * commits.  Zero rows: a concurrent creator committed after our
	 * snapshot; nothing was written, so asking again is safe.
	 */
	[PG_CREATE] = { "fc_create",
		"WITH ins AS (INSERT INTO fencecert_operations(" COLS ")"
		" SELECT $1, $2, 'PREPARING', 1, 0, '', 0, $3, $3, $4, '{}'"
		" WHERE NOT EXISTS (SELECT 1 FROM fencecert_purged"
		" WHERE operation_id = $1) AND NOT EXISTS (SELECT 1"
		" FROM fencecert_operations WHERE operation_id = $1)"
		" ON CONFLICT (operation_id) DO NOTHING RETURNING *),"
		" hist AS (INSERT INTO fencecert_transitions(operation_id,"
		" version, from_state, to_state, epoch, at, evidence)"
		" SELECT operation_id, 1, 'NONE', 'PREPARING', 0, created_at,"
		" '{}' FROM ins)"
		" SELECT 1, " COLS " FROM ins UNION ALL"
		" SELECT 0, " COLS " FROM fencecert_operations"
		" WHERE operation_id = $1 AND NOT EXISTS (SELECT 1 FROM ins)"
		" UNION ALL SELECT 2, operation_id, intent_digest, 'COMPLETE',"
		" 0::bigint, 0::bigint, '', 0::bigint, purged_at, purged_at,"
		" '{}', '{}' FROM fencecert_purged"
		" WHERE operation_id = $1 AND NOT EXISTS (SELECT 1 FROM ins)",
		1 },
	/* cur names the state being left; o.state = cur.state makes the
	 * history row's from_state the state of the row actually updated. */
	[PG_CAS] = { "fc_cas",
		"WITH cur AS (SELECT state FROM fencecert_operations"
		" WHERE operation_id = $1 AND version = $2),"
		" upd AS (UPDATE fencecert_operations o SET state = $4,"
		" version = o.version + 1, evidence = $5,"
		" updated_at = greatest(o.updated_at, $7::bigint) FROM cur"
		" WHERE o.operation_id = $1 AND o.version = $2"
		" AND o.state = cur.state AND o.state = ANY ($3::text[])"
		" AND ($6::bigint = 0 OR o.lease_epoch = $6::bigint)"
		" RETURNING o.*, cur.state AS from_state),"
		" hist AS (INSERT INTO fencecert_transitions(operation_id,"
		" version, from_state, to_state, epoch, at, evidence)"
		" SELECT operation_id, version, from_state, state, $6::bigint,"
		" updated_at, evidence FROM upd)"
		" SELECT " COLS " FROM upd", 1 },
	[PG_LEASE] = { "fc_lease",
		"UPDATE fencecert_operations SET lease_epoch = lease_epoch + 1,"
		" lease_owner = $2, lease_expires_at = $3::bigint + $4::bigint"
		" WHERE operation_id = $1 AND (lease_owner = ''"
		" OR lease_owner = $2 OR lease_expires_at <= $3::bigint)"
		" RETURNING " COLS, 1 },
	[PG_HISTORY] = { "fc_history",
		"SELECT version, from_state, to_state, epoch, at, evidence"
		" FROM fencecert_transitions WHERE operation_id = $1"
		" ORDER BY version", 0 },
	[PG_LIST] = { "fc_list", "SELECT " COLS " FROM fencecert_operations"
		" WHERE ($1::bigint = 0 OR updated_at < $1::bigint)"
		" AND (cardinality($2::text[]) = 0 OR state = ANY ($2::text[]))"
		" ORDER BY operation_id", 0 },
	[PG_PURGE] = { "fc_purge",
		"WITH gone AS (DELETE FROM fencecert_operations WHERE " PURGEABLE
		" RETURNING operation_id, intent_digest),"
		" tomb AS (INSERT INTO fencecert_purged(operation_id,"
		" intent_digest, purged_at) SELECT operation_id, intent_digest,"
		" $2 FROM gone ON CONFLICT (operation_id) DO UPDATE SET"
		" intent_digest = EXCLUDED.intent_digest,"
		" purged_at = EXCLUDED.purged_at),"
		" hist AS (DELETE FROM fencecert_transitions t USING gone"
		" WHERE t.operation_id = gone.operation_id)"
		" SELECT operation_id FROM gone ORDER BY operation_id", 1 },
};

/*
 * The ordered schema migrations; step i takes version `to - 1` to `to` in
 * one transaction.  Tables are created without IF NOT EXISTS on purpose: a
 * foreign table of the same name must stop the migration, not be adopted.
 */
static const struct pg_migration {
	int to;
	const char *sql;
} pg_migrations[] = {
	{ 1,
	  "CREATE TABLE IF NOT EXISTS fencecert_schema("
	  "  version integer NOT NULL);"
	  "CREATE TABLE fencecert_operations("
	  "  operation_id text PRIMARY KEY,"
	  "  intent_digest text NOT NULL,"
	  "  state text NOT NULL,"
	  "  version bigint NOT NULL,"
	  "  lease_epoch bigint NOT NULL DEFAULT 0,"
	  "  lease_owner text NOT NULL DEFAULT '',"
	  "  lease_expires_at bigint NOT NULL DEFAULT 0,"
	  "  created_at bigint NOT NULL,"
	  "  updated_at bigint NOT NULL,"
	  "  meta text NOT NULL DEFAULT '{}',"
	  "  evidence text NOT NULL DEFAULT '{}');"
	  "CREATE TABLE fencecert_transitions("
	  "  operation_id text NOT NULL,"
	  "  version bigint NOT NULL,"
	  "  from_state text NOT NULL,"
	  "  to_state text NOT NULL,"
	  "  epoch bigint NOT NULL,"
	  "  at bigint NOT NULL,"
	  "  evidence text NOT NULL DEFAULT '{}',"
	  "  PRIMARY KEY (operation_id, version));"
	  "CREATE FUNCTION fencecert_append_only() RETURNS trigger"
	  "  LANGUAGE plpgsql AS $$ BEGIN"
	  "  RAISE EXCEPTION 'transitions are append-only'; END $$;"
	  "CREATE TRIGGER fencecert_transitions_append_only"
	  "  BEFORE UPDATE ON fencecert_transitions"
	  "  FOR EACH ROW EXECUTE FUNCTION fencecert_append_only();"
	  "CREATE TABLE fencecert_purged("
	  "  operation_id text PRIMARY KEY,"
	  "  intent_digest text NOT NULL,"
	  "  purged_at bigint NOT NULL);" },
};

/* j->impl of a PostgreSQL journal. */
struct journal_pg {
	pg_session *s;
	int ready;           /* schema seen at JOURNAL_SCHEMA_VERSION */
};

static pg_session *session(journal *j)
{
	return ((struct journal_pg *)j->impl)->s;
}

/* The session's redacted URL, for messages. */
static const char *pg_url(journal *j)
{
	return pg_session_url(session(j));
}

/* A session call's result: on failure its message becomes the journal's. */
static int pg_failed(journal *j, int rc)
{
	return rc ? journal__fail(j, rc, "%s", pg_session_errmsg(session(j)))
		  : 0;
}

static int pg_exec(journal *j, const char *sql, const char *param,
		   ExecStatusType want, const char *what, PGresult **out)
{
	return pg_failed(j, pg_session_exec(session(j), sql, param, want, what,
					    out));
}

static int pg_live(journal *j)
{
	return pg_failed(j, pg_session_live(session(j)));
}

static int pg_run(journal *j, enum pg_stmt_id id, int n,
		  const char *const *params, const char *what, PGresult **out)
{
	return pg_failed(j, pg_session_run(session(j), &pg_stmts[id],
					   (unsigned)id, n, params,
					   PGRES_TUPLES_OK, what, out));
}

/* ---- rows --------------------------------------------------------------- */

static int pg_text(journal *j, const PGresult *r, int row, int col, char *out,
		   size_t len)
{
	size_t n = (size_t)PQgetlength(r, row, col);

	if (n >= len)
		return journal__fail(j, FC_CORRUPT, "column '%s' too long in "
				     "journal '%s'", PQfname(r, col),
				     pg_url(j));
	memcpy(out, PQgetvalue(r, row, col), n);
	out[n] = '\0';
	return 0;
}

static int pg_ll(journal *j, const PGresult *r, int row, int col,
		 long long *out)
{
	const char *v = PQgetvalue(r, row, col);
	char *end;

	errno = 0;
	*out = strtoll(v, &end, 10);
	if (errno || end == v || *end)
		return journal__fail(j, FC_CORRUPT, "column '%s' is not an "
				     "integer ('%.32s') in journal '%s'",
				     PQfname(r, col), v,
				     pg_url(j));
	return 0;
}

static int pg_state(journal *j, const PGresult *r, int row, int col,
		    int allow_none, enum fc_state *out)
{
	const char *v = PQgetvalue(r, row, col);

	if (allow_none && strcmp(v, "NONE") == 0) {
		*out = FC_STATE_NONE;
		return 0;
	}
	if (!state_parse(v, out))
		return 0;
	return journal__fail(j, FC_CORRUPT, "unknown state '%.32s' in journal "
			     "'%s'", v, pg_url(j));
}

/* Columns COLS starting at column `c` of row `row`. */
static int pg_row_entry(journal *j, const PGresult *r, int row, int c,
			struct journal_entry *e)
{
	int rc;

	if ((rc = pg_text(j, r, row, c, e->operation_id,
			  sizeof(e->operation_id))) ||
	    (rc = pg_text(j, r, row, c + 1, e->intent_digest,
			  sizeof(e->intent_digest))) ||
	    (rc = pg_state(j, r, row, c + 2, 0, &e->state)) ||
	    (rc = pg_ll(j, r, row, c + 3, &e->version)) ||
	    (rc = pg_ll(j, r, row, c + 4, &e->lease_epoch)) ||
	    (rc = pg_text(j, r, row, c + 5, e->lease_owner,
			  sizeof(e->lease_owner))) ||
	    (rc = pg_ll(j, r, row, c + 6, &e->lease_expires_at)) ||
	    (rc = pg_ll(j, r, row, c + 7, &e->created_at)) ||
	    (rc = pg_ll(j, r, row, c + 8, &e->updated_at)) ||
	    (rc = pg_text(j, r, row, c + 9, e->meta, sizeof(e->meta))) ||
	    (rc = pg_text(j, r, row, c + 10, e->evidence,
			  sizeof(e->evidence))))
		return rc;
	return 0;
}

static int pg_row_transition(journal *j, const PGresult *r, int row,
			     const char *op, struct journal_transition *t)
{
	int rc;

	snprintf(t->operation_id, sizeof(t->operation_id), "%s", op);
	if ((rc = pg_ll(j, r, row, 0, &t->version)) ||
	    (rc = pg_state(j, r, row, 1, 1, &t->from)) ||
	    (rc = pg_state(j, r, row, 2, 0, &t->to)) ||
	    (rc = pg_ll(j, r, row, 3, &t->epoch)) ||
	    (rc = pg_ll(j, r, row, 4, &t->at)) ||
	    (rc = pg_text(j, r, row, 5, t->evidence, sizeof(t->evidence))))
		return rc;
	return 0;
}

/* An array of n items of elem bytes for a result (NULL when n is 0). */
static int pg_alloc(journal *j, void **arr, size_t n, size_t elem)
{
	*arr = NULL;
	if (n == 0)
		return 0;
	if (n > SIZE_MAX / elem || !(*arr = calloc(n, elem)))
		return journal__fail(j, FC_NOMEM, "out of memory reading "
				     "journal '%s'", pg_url(j));
	return 0;
}

/* A set of states as a PostgreSQL text[] literal: "{PREPARING,PREPARED}". */
static void pg_state_array(state_set set, char *out, size_t len)
{
	size_t used = (size_t)snprintf(out, len, "{");

	for (int s = FC_PREPARING; s < FC_STATE_COUNT && used < len; s++)
		if (set & STATE_BIT(s))
			used += (size_t)snprintf(out + used, len - used, "%s%s",
						 used > 1 ? "," : "",
						 state_name((enum fc_state)s));
	if (used < len)
		snprintf(out + used, len - used, "}");
}

/* Read op's entry: 0, FC_NOT_FOUND (with a message) or another error. */
static int pg_lookup(journal *j, const char *op, struct journal_entry *e)
{
	PGresult *res;
	int rc;

	if ((rc = pg_run(j, PG_GET, 1, &op, "read", &res)))
		return rc;
	if (PQntuples(res) == 0)
		rc = journal__fail(j, FC_NOT_FOUND, "operation '%s' not found "
				   "in journal '%s'", op, pg_url(j));
	else
		rc = pg_row_entry(j, res, 0, 0, e);
	PQclear(res);
	return rc;
}

/* ---- schema ------------------------------------------------------------- */

/* Schema statements are plain text: the tables may not exist yet. */
static int pg_cmd(journal *j, const char *sql, const char *param)
{
	return pg_exec(j, sql, param, PGRES_COMMAND_OK, "migrate", NULL);
}

static int pg_query(journal *j, const char *sql, const char *param,
		    PGresult **res)
{
	return pg_exec(j, sql, param, PGRES_TUPLES_OK, "read the schema of",
		       res);
}

static int pg_read_version(journal *j, int *version)
{
	PGresult *res;
	long long v = 0;
	int rc, has;

	if ((rc = pg_query(j, "SELECT to_regclass('fencecert_schema') IS NOT "
			   "NULL", NULL, &res)))
		return rc;
	has = strcmp(PQgetvalue(res, 0, 0), "t") == 0;
	PQclear(res);
	if (has) {
		if ((rc = pg_query(j, "SELECT coalesce(max(version), 0) FROM "
				   "fencecert_schema", NULL, &res)))
			return rc;
		rc = pg_ll(j, res, 0, 0, &v);
		PQclear(res);
		if (rc)
			return rc;
	}
	if (v < 0 || v > INT_MAX)
		return journal__fail(j, FC_CORRUPT, "schema version %lld of "
				     "journal '%s' is not valid", v,
				     pg_url(j));
	*version = (int)v;
	return 0;
}

static int pg_newer(journal *j, int v)
{
	return journal__fail(j, FC_USAGE, "journal '%s' has schema version %d, "
			     "newer than this fencecert supports (%d)",
			     pg_url(j), v,
			     JOURNAL_SCHEMA_VERSION);
}

/*
 * Apply one migration step.  The advisory lock serialises every fencecert
 * migrating this schema, and the version is re-read under it, so parallel
 * first users of a new schema create it once.
 */
static int pg_migrate_step(journal *j, const struct pg_migration *m)
{
	const char *schema = pg_session_schema(session(j));
	char key[96], sql[160];
	int rc, v;

	snprintf(key, sizeof(key), "fencecert migrate %s", schema);
	if ((rc = pg_cmd(j, "BEGIN", NULL)) ||
	    (rc = pg_exec(j, "SELECT pg_advisory_xact_lock(hashtext($1))",
			  key, PGRES_TUPLES_OK, "lock", NULL)) ||
	    (rc = pg_read_version(j, &v)))
		goto out;
	if (v > JOURNAL_SCHEMA_VERSION) {
		rc = pg_newer(j, v);
		goto out;
	}
	if (v >= m->to)
		goto out;
	if (v == 0 && schema[0]) {
		snprintf(sql, sizeof(sql), "CREATE SCHEMA IF NOT EXISTS %s",
			 schema);
		if ((rc = pg_cmd(j, sql, NULL)))
			goto out;
	}
	snprintf(sql, sizeof(sql), "DELETE FROM fencecert_schema; INSERT INTO "
		 "fencecert_schema(version) VALUES (%d)", m->to);
	if ((rc = pg_cmd(j, m->sql, NULL)) || (rc = pg_cmd(j, sql, NULL)) ||
	    (rc = pg_cmd(j, "COMMIT", NULL)))
		goto out;
	return 0;
out:
	pg_session_rollback(session(j));
	return rc;
}

static int pg_upgrade(journal *j)
{
	int rc;

	for (size_t i = 0; i < PG_ARRAY_SIZE(pg_migrations); i++)
		if ((rc = pg_migrate_step(j, &pg_migrations[i])))
			return rc;
	return 0;
}

/* Called first by every operation: a live session and a current schema
 * (created implicitly when absent, as in the SQLite adapter). */
static int pg_ready(journal *j)
{
	struct journal_pg *p = j->impl;
	int rc, v;

	if ((rc = pg_live(j)))
		return rc;
	if (p->ready)
		return 0;
	if ((rc = pg_read_version(j, &v)))
		return rc;
	if (v == 0 && j->readonly)
		rc = journal__fail(j, FC_JOURNAL_UNAVAILABLE, "journal '%s' has no "
				   "fencecert schema; opened read-only, nothing "
				   "created", pg_url(j));
	else if (v == 0)
		rc = pg_upgrade(j);
	else if (v > JOURNAL_SCHEMA_VERSION)
		rc = pg_newer(j, v);
	else if (v < JOURNAL_SCHEMA_VERSION)
		rc = journal__fail(j, FC_USAGE, "journal '%s' has schema "
				   "version %d, this fencecert needs %d; run "
				   "'fencecert journal migrate'", pg_url(j), v,
				   JOURNAL_SCHEMA_VERSION);
	if (!rc)
		p->ready = 1;
	return rc;
}

/* ---- the port ----------------------------------------------------------- */

/* Connect now: a wrong URL or a dead server shows at open. */
static int pg_open(journal *j, const char *url)
{
	struct journal_pg *p = calloc(1, sizeof(*p));
	char shown[256];
	struct pg_session_conf conf = {
		.kind = "journal",
		.shown = shown,
		.unavailable = FC_JOURNAL_UNAVAILABLE,
		.readonly = j->readonly,
		.connect = 1,
	};
	int rc;

	if (!p)
		return journal__fail(j, FC_NOMEM, "out of memory opening a "
				     "journal");
	journal_redact_url(url, shown, sizeof(shown));
	if ((rc = pg_session_open(url, &conf, &p->s, j->errmsg,
				  sizeof(j->errmsg)))) {
		free(p);
		return rc;
	}
	j->impl = p;
	return 0;
}

static void pg_close(void *impl)
{
	struct journal_pg *p = impl;

	if (p)
		pg_session_close(p->s);
	free(p);
}

static int pg_init(journal *j)
{
	return pg_ready(j);
}

static int pg_migrate(journal *j, int *from, int *to)
{
	struct journal_pg *p = j->impl;
	int rc, v;

	if ((rc = pg_live(j)) || (rc = pg_read_version(j, &v)))
		return rc;
	if (v > JOURNAL_SCHEMA_VERSION)
		return pg_newer(j, v);
	if ((rc = pg_upgrade(j)))
		return rc;
	p->ready = 1;
	*from = v;
	*to = JOURNAL_SCHEMA_VERSION;
	return 0;
}

static int pg_create_or_get(journal *j, const char *op, const char *intent,
			    const char *meta, struct journal_entry *out,
			    int *created)
{
	struct journal_entry e;
	char now[24];
	const char *params[] = { op, intent, now, meta };
	PGresult *res = NULL;
	int rc, made;

	if ((rc = pg_ready(j)))
		return rc;
	snprintf(now, sizeof(now), "%lld", clock_wall_ms());
	for (int i = 0; i < PG_CAS_TRIES; i++) {
		if ((rc = pg_run(j, PG_CREATE, 4, params, "write", &res)))
			return rc;
		if (PQntuples(res) == 1)
			break;
		PQclear(res);
		res = NULL;
	}
	if (!res)
		return journal__fail(j, FC_JOURNAL_UNAVAILABLE, "operation "
				     "'%s' kept changing in journal '%s'", op,
				     pg_url(j));
	made = atoi(PQgetvalue(res, 0, 0));
	rc = made == 2 ? 0 : pg_row_entry(j, res, 0, 1, &e);
	PQclear(res);
	if (rc)
		return rc;
	/* It completed once; a new entry would let a late retry apply the
	 * same mutation again. */
	if (made == 2)
		return journal__fail(j, FC_PURGED, "operation '%s' was purged "
				     "from journal '%s' after completing; "
				     "refusing to create it again", op,
				     pg_url(j));
	if (!made && (rc = journal__check_intent(j, &e, intent)))
		return rc;
	*out = e;
	*created = made;
	return 0;
}

static int pg_get(journal *j, const char *op, struct journal_entry *out)
{
	struct journal_entry e;
	int rc;

	if ((rc = pg_ready(j)) || (rc = pg_lookup(j, op, &e)))
		return rc;
	*out = e;
	return 0;
}

/*
 * Run a guarded write (one statement that changes the entry and returns
 * it when its guard holds): 1 when it applied, with the entry in *out; 0
 * when the guard refused (no row); or an error.
 */
static int pg_guarded_write(journal *j, enum pg_stmt_id id, int n,
			    const char *const *params, struct journal_entry *out)
{
	struct journal_entry e;
	PGresult *res;
	int rc;

	if ((rc = pg_run(j, id, n, params, "write", &res)))
		return rc;
	if (PQntuples(res) != 1) {
		PQclear(res);
		return 0;
	}
	rc = pg_row_entry(j, res, 0, 0, &e);
	PQclear(res);
	if (rc)
		return rc;
	*out = e;
	return 1;
}

static int pg_cas(journal *j, const struct journal_cas *req,
		  struct journal_entry *out)
{
	state_set from = state_predecessors(req->next) & STATE_SET_ALL;
	char version[24], states[160], epoch[24], now[24];
	const char *params[] = { req->operation_id, version, states,
				 state_name(req->next), req->evidence, epoch,
				 now };
	struct journal_entry cur;
	int rc;

	if ((rc = pg_ready(j)))
		return rc;
	if (req->expected_states)
		from &= req->expected_states;
	pg_state_array(from, states, sizeof(states));
	snprintf(version, sizeof(version), "%lld", req->expected_version);
	snprintf(epoch, sizeof(epoch), "%lld", req->epoch);
	snprintf(now, sizeof(now), "%lld", clock_wall_ms());
	for (int i = 0; i < PG_CAS_TRIES; i++) {
		if ((rc = pg_guarded_write(j, PG_CAS, 7, params, out)))
			return rc < 0 ? rc : 0;
		/* Refused: a fresh read names why (invariant 2). */
		if ((rc = pg_lookup(j, req->operation_id, &cur)) ||
		    (rc = journal__check_cas(j, &cur, req)))
			return rc;
	}
	return journal__fail(j, FC_CAS_CONFLICT, "operation '%s' kept changing "
			     "under cas in journal '%s'", req->operation_id,
			     pg_url(j));
}

static int pg_history(journal *j, const char *op,
		      struct journal_transition **out, size_t *n)
{
	struct journal_transition *arr = NULL;
	PGresult *res;
	int rc, rows;

	if ((rc = pg_ready(j)) ||
	    (rc = pg_run(j, PG_HISTORY, 1, &op, "read", &res)))
		return rc;
	rows = PQntuples(res);
	/* create writes the first row with the entry: no rows, no entry. */
	if (rows == 0)
		rc = journal__fail(j, FC_NOT_FOUND, "operation '%s' not found "
				   "in journal '%s'", op,
				   pg_url(j));
	else
		rc = pg_alloc(j, (void **)&arr, (size_t)rows, sizeof(*arr));
	for (int i = 0; !rc && i < rows; i++)
		rc = pg_row_transition(j, res, i, op, &arr[i]);
	PQclear(res);
	if (rc) {
		free(arr);
		return rc;
	}
	*out = arr;
	*n = (size_t)rows;
	return 0;
}

static int pg_list(journal *j, const struct journal_filter *f,
		   struct journal_entry **out, size_t *n)
{
	char before[24], states[160];
	const char *params[] = { before, states };
	struct journal_entry *arr;
	PGresult *res;
	int rc, rows;

	snprintf(before, sizeof(before), "%lld", f->updated_before);
	pg_state_array(f->states & STATE_SET_ALL, states, sizeof(states));
	if ((rc = pg_ready(j)) ||
	    (rc = pg_run(j, PG_LIST, 2, params, "read", &res)))
		return rc;
	rows = PQntuples(res);
	rc = pg_alloc(j, (void **)&arr, (size_t)rows, sizeof(*arr));
	for (int i = 0; !rc && i < rows; i++)
		rc = pg_row_entry(j, res, i, 0, &arr[i]);
	PQclear(res);
	if (rc) {
		free(arr);
		return rc;
	}
	*out = arr;
	*n = (size_t)rows;
	return 0;
}

static int pg_acquire_lease(journal *j, const char *op, const char *owner,
			    long long ttl_ms, struct journal_entry *out)
{
	char now[24], ttl[24];
	const char *params[] = { op, owner, now, ttl };
	struct journal_entry cur;
	long long t = clock_wall_ms();
	int rc;

	if ((rc = pg_ready(j)))
		return rc;
	snprintf(now, sizeof(now), "%lld", t);
	snprintf(ttl, sizeof(ttl), "%lld", ttl_ms);
	for (int i = 0; i < PG_CAS_TRIES; i++) {
		if ((rc = pg_guarded_write(j, PG_LEASE, 4, params, out)))
			return rc < 0 ? rc : 0;
		if ((rc = pg_lookup(j, op, &cur)) ||
		    (rc = journal__check_lease(j, &cur, owner, t)))
			return rc;
	}
	return journal__fail(j, FC_JOURNAL_UNAVAILABLE, "lease on '%s' kept "
			     "changing in journal '%s'", op,
			     pg_url(j));
}

static int pg_purge(journal *j, long long before,
		    char (**ids)[JOURNAL_ID_MAX], size_t *n)
{
	char (*arr)[JOURNAL_ID_MAX];
	char cut[24], now[24];
	const char *params[] = { cut, now };
	PGresult *res;
	int rc, rows;

	snprintf(cut, sizeof(cut), "%lld", before);
	snprintf(now, sizeof(now), "%lld", clock_wall_ms());
	if ((rc = pg_ready(j)) ||
	    (rc = pg_run(j, PG_PURGE, 2, params, "purge",
			 &res)))
		return rc;
	rows = PQntuples(res);
	rc = pg_alloc(j, (void **)&arr, (size_t)rows, sizeof(*arr));
	for (int i = 0; !rc && i < rows; i++)
		rc = pg_text(j, res, i, 0, arr[i], sizeof(*arr));
	PQclear(res);
	/* The rows are gone either way; a caller that sees an error here
	 * re-lists.  Only an impossible oversized id lands here. */
	if (rc) {
		free(arr);
		return rc;
	}
	*ids = arr;
	*n = (size_t)rows;
	return 0;
}

const struct journal_ops journal_pg_ops = {
	.scheme = "postgresql",
	.open = pg_open,
	.close = pg_close,
	.init = pg_init,
	.migrate = pg_migrate,
	.create_or_get = pg_create_or_get,
	.get = pg_get,
	.cas = pg_cas,
	.history = pg_history,
	.list = pg_list,
	.acquire_lease = pg_acquire_lease,
	.purge = pg_purge,
};
