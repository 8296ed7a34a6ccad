/*
 * fence_pg.c -- the two fences of a PostgreSQL target ("postgresql://...",
 * see fence_pg_impl.h for the URL): pg-txn and pg-2pc.  Open, prepare and
 * apply are here; the probe and the prepared transactions are in
 * fence_pg_probe.c.
 *
 * Layout (in the URL's schema, or the server's search_path):
 *
 *   <table>(row_key text, payload text, operation_id text)   the data; no
 *       uniqueness, so a duplicate write shows as two rows
 *   fencecert_fence(operation_id PK, epoch, intent_digest, rows, applied_at)
 *   fencecert_epoch(operation_id PK, epoch)     the fencing token
 *   fencecert_xact(operation_id, epoch, xid xid8, PK(operation_id, xid))
 *       the transaction id of every apply that is about to COMMIT (or
 *       PREPARE) and has not committed yet
 *
 *   apply(E):  BEGIN
 *              upsert fencecert_epoch: raises it to E, and row-locks it
 *              fence row there? -> ALREADY_APPLIED / INTENT_CONFLICT
 *              epoch above E?   -> STALE_EPOCH
 *              (REPLACE: delete the batch's keys) insert rows, fence row
 *              delete op's fencecert_xact rows
 *              side session: INSERT fencecert_xact(op, E, our xid); autocommit
 *      pg-txn: COMMIT
 *      pg-2pc: PREPARE TRANSACTION 'fencecert:<schema>:<op>:<E>'
 *              COMMIT PREPARED '...'
 *
 * Invariants:
 *  1. Rows, fence row and epoch are one transaction: PostgreSQL commits
 *     them together or not at all (synchronous_commit on).
 *  2. Applies of one operation are serialised by the epoch row lock taken
 *     first; so are prepare() and apply().  Once prepare(E2) has returned,
 *     an apply below E2 either committed before (its fence row is there) or
 *     reads E2 and refuses -- as for SQLite.
 *  3. Every transaction that may still commit has its xid in
 *     fencecert_xact, committed before its COMMIT is sent (the side
 *     session); a transaction whose xid could not be recorded is rolled
 *     back and never committed.  The xid row is deleted by the transaction
 *     itself, so it disappears exactly when the fence row appears; what
 *     stays are the xids of applies that aborted (removed by the next apply
 *     that commits) or are still in flight.  This is what lets the probe
 *     tell "in progress" from "aborted" (fence_pg_probe.c).
 *     Why not in the journal: the route's COMMITTING transition comes before
 *     the apply has an xid, and COMMITTING -> COMMITTING is not an edge;
 *     recording at the target keeps the fence port unchanged and the probe
 *     self-contained.  The journal still gets the fence name at PREPARED
 *     and TARGET_COMMITTED.
 *  4. Classification: anything failing before COMMIT (pg-2pc: before
 *     PREPARE) is rolled back: PROVED_ABSENT, FC_FENCE_UNAVAILABLE.  A
 *     failed COMMIT, PREPARE or COMMIT PREPARED is FC_ERR_COMMIT_UNKNOWN;
 *     the probe decides.
 *  5. pg-2pc: a transaction left prepared holds its locks (the epoch row)
 *     until resolved, so prepare(), apply() and the probe first roll it
 *     back (ROLLBACK PREPARED): its attempt is gone, what any reader saw
 *     of it was "absent", and afterwards it provably cannot land.  An
 *     operator may instead commit it (`fencecert recover`, through
 *     fence_resolve_in_doubt()).
 *  6. Tables are created lazily, in their own transaction under an
 *     advisory lock (concurrent CREATE ... IF NOT EXISTS can collide); a
 *     probe never creates them: no fence table means nothing was applied.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/clock.h"
#include "fences/fence_pg_impl.h"

#define DDL_LOCK_KEY "7262051"  /* pg_advisory_xact_lock key of the DDL */
#define SQL_MAX 1024

static struct fence_pg *impl(fence *f)
{
	return f->impl;
}

/* ---- open / close -------------------------------------------------- */

static void pg_close(void *p)
{
	struct fence_pg *s = p;

	pg_session_close(s->main);
	pg_session_close(s->side);
	free(s);
}

static int pg_open(fence *f, const char *url)
{
	struct pg_target_url u;
	struct fence_pg *s;
	int rc;

	if ((rc = pg_target__parse_url(url, &u, f->errmsg, sizeof(f->errmsg))))
		return rc;
	if (!(s = calloc(1, sizeof(*s)))) {
		pg_target__url_release(&u);
		return fence__fail(f, FC_NOMEM, "out of memory opening a target");
	}
	f->impl = s;
	s->kind = u.kind;
	s->row_only = u.row_only;
	/* One fence name per kind (fence_name() reads f->ops). */
	if (u.kind == PG_FENCE_2PC)
		f->ops = &fence_pg_2pc_ops;
	/* Connected on first use: opening proves nothing about the server. */
	if (!(rc = pg_target__open_session(u.session_url, 0, &s->main,
					   f->errmsg, sizeof(f->errmsg))))
		rc = pg_target__open_session(u.session_url, 0, &s->side,
					     f->errmsg, sizeof(f->errmsg));
	pg_target__url_release(&u);
	return rc;
}

/* ---- tables -------------------------------------------------------- */

/* `"schema".name` (or just the name) into out. */
static void qualify(const pg_session *ps, const char *name, char *out,
		    size_t len)
{
	const char *schema = pg_session_schema(ps);

	if (*schema)
		snprintf(out, len, "\"%s\".\"%s\"", schema, name);
	else
		snprintf(out, len, "\"%s\"", name);
}

/* Make sure the fence tables (and `table`, if given) exist. */
static int ensure_tables(fence *f, const char *table)
{
	struct fence_pg *s = impl(f);
	const char *name = pg_session_schema(s->main);
	char sql[SQL_MAX * 2], fq[160], eq[160], xq[160], tq[160] = "";
	char schema[PG_SCHEMA_MAX + 48] = "";
	int rc;

	if (s->ddl_connection == pg_session_connection(s->main) &&
	    (!table || strcmp(s->ddl_table, table) == 0))
		return 0;
	qualify(s->main, "fencecert_fence", fq, sizeof(fq));
	qualify(s->main, "fencecert_epoch", eq, sizeof(eq));
	qualify(s->main, "fencecert_xact", xq, sizeof(xq));
	if (table)
		qualify(s->main, table, tq, sizeof(tq));
	if (*name)
		snprintf(schema, sizeof(schema), "CREATE SCHEMA IF NOT EXISTS "
			 "\"%s\";", name);
	snprintf(sql, sizeof(sql), "BEGIN; SELECT pg_advisory_xact_lock("
		 DDL_LOCK_KEY "); %s"
		 "CREATE TABLE IF NOT EXISTS %s(operation_id text PRIMARY KEY, "
		 "epoch bigint NOT NULL, intent_digest text NOT NULL, "
		 "rows bigint NOT NULL, applied_at bigint NOT NULL);"
		 "CREATE TABLE IF NOT EXISTS %s(operation_id text PRIMARY KEY, "
		 "epoch bigint NOT NULL);"
		 "CREATE TABLE IF NOT EXISTS %s(operation_id text NOT NULL, "
		 "epoch bigint NOT NULL, xid xid8 NOT NULL, "
		 "PRIMARY KEY(operation_id, xid));"
		 "%s%s%s COMMIT;", schema, fq, eq, xq,
		 table ? "CREATE TABLE IF NOT EXISTS " : "", tq,
		 table ? "(row_key text, payload text, operation_id text);" : "");
	rc = pg_session_exec_n(s->main, sql, 0, NULL, PGRES_COMMAND_OK,
			       "create the tables of", NULL);
	if (rc) {
		pg_session_rollback(s->main);
		return fence_pg__fail(f, s->main, rc == FC_CORRUPT ?
				      FC_FENCE_UNAVAILABLE : rc);
	}
	s->ddl_connection = pg_session_connection(s->main);
	snprintf(s->ddl_table, sizeof(s->ddl_table), "%s", table ? table : "");
	return 0;
}

/* ---- prepare ------------------------------------------------------- */

static int pg_prepare(fence *f, const char *op, long long epoch)
{
	struct fence_pg *s = impl(f);
	char e[24];
	const char *params[2] = { op, e };
	PGresult *res;
	int rc;

	snprintf(e, sizeof(e), "%lld", epoch);
	if ((rc = pg_session_live(s->main)))
		return fence_pg__fail(f, s->main, rc);
	if ((rc = ensure_tables(f, NULL)))
		return rc;
	/* A prepared transaction of op holds the epoch row: end it. */
	if (s->kind == PG_FENCE_2PC &&
	    (rc = fence_pg__resolve_prepared(f, op, 0, NULL)))
		return rc;
	rc = pg_session_exec_n(s->main, "INSERT INTO fencecert_epoch AS e"
			       "(operation_id, epoch) VALUES($1, $2::bigint) "
			       "ON CONFLICT (operation_id) DO UPDATE SET "
			       "epoch = excluded.epoch WHERE e.epoch <= "
			       "excluded.epoch RETURNING epoch", 2, params,
			       PGRES_TUPLES_OK, "prepare the fence in", &res);
	if (rc)
		/* Unknown whether it stuck; prepare is idempotent. */
		return fence_pg__fail(f, s->main, FC_FENCE_UNAVAILABLE);
	rc = PQntuples(res) == 1 ? 0 :
	     fence__fail(f, FC_STALE_EPOCH, "epoch %lld for '%s' is stale: a "
			 "higher epoch is prepared", epoch, op);
	PQclear(res);
	return rc;
}

/* ---- apply --------------------------------------------------------- */

/*
 * A PostgreSQL array literal of the rows' keys (payloads when payload)
 * into a malloc'd string: {"k1","k2",NULL}.  Every element is quoted, with
 * '"' and '\' escaped.
 */
static char *array_literal(const struct fence_batch *b, int payload)
{
	size_t cap = 3;
	char *out, *w;

	for (size_t i = 0; i < b->nrows; i++) {
		const char *v = payload ? b->rows[i].payload : b->rows[i].row_key;

		cap += v ? 2 * strlen(v) + 3 : 5;
	}
	if (!(out = malloc(cap)))
		return NULL;
	w = out;
	*w++ = '{';
	for (size_t i = 0; i < b->nrows; i++) {
		const char *v = payload ? b->rows[i].payload : b->rows[i].row_key;

		if (i)
			*w++ = ',';
		if (!v) {
			memcpy(w, "NULL", 4);
			w += 4;
			continue;
		}
		*w++ = '"';
		for (; *v; v++) {
			if (*v == '"' || *v == '\\')
				*w++ = '\\';
			*w++ = *v;
		}
		*w++ = '"';
	}
	*w++ = '}';
	*w = '\0';
	return out;
}

/* The writes of the apply transaction after its checks. */
static int write_batch(fence *f, long long epoch, const struct fence_batch *b)
{
	pg_session *ps = impl(f)->main;
	char sql[SQL_MAX], e[24], n[24], now[24];
	char *keys = array_literal(b, 0), *vals = array_literal(b, 1);
	const char *params[5] = { keys, vals, b->operation_id };
	int rc = 0;

	if (!keys || !vals) {
		rc = fence__fail(f, FC_NOMEM, "out of memory writing a batch");
		goto out;
	}
	if (b->strategy == FENCE_REPLACE) {
		snprintf(sql, sizeof(sql), "DELETE FROM \"%s\" WHERE row_key = "
			 "ANY($1::text[])", b->table);
		rc = pg_session_exec_n(ps, sql, 1, params, PGRES_COMMAND_OK,
				       "delete the replaced rows in", NULL);
	}
	if (!rc) {
		snprintf(sql, sizeof(sql), "INSERT INTO \"%s\"(row_key, payload, "
			 "operation_id) SELECT k, v, $3 FROM unnest($1::text[], "
			 "$2::text[]) AS r(k, v)", b->table);
		rc = pg_session_exec_n(ps, sql, 3, params, PGRES_COMMAND_OK,
				       "insert the rows into", NULL);
	}
	if (!rc) {
		snprintf(e, sizeof(e), "%lld", epoch);
		snprintf(n, sizeof(n), "%zu", b->nrows);
		snprintf(now, sizeof(now), "%lld", clock_wall_ms());
		params[0] = b->operation_id;
		params[1] = e;
		params[2] = b->intent_digest;
		params[3] = n;
		params[4] = now;
		rc = pg_session_exec_n(ps, "INSERT INTO fencecert_fence("
				       "operation_id, epoch, intent_digest, rows, "
				       "applied_at) VALUES($1, $2::bigint, $3, "
				       "$4::bigint, $5::bigint)", 5, params,
				       PGRES_COMMAND_OK, "write the fence row in",
				       NULL);
	}
	if (rc)
		rc = fence_pg__fail(f, ps, FC_FENCE_UNAVAILABLE);
out:
	free(keys);
	free(vals);
	return rc;
}

/* Inside the open transaction: lock and raise the epoch row, then the
 * checks of fence.h invariant 2 (fence row first, then the epoch). */
static int lock_and_check(fence *f, long long epoch,
			  const struct fence_batch *b,
			  enum fence_outcome *outcome)
{
	pg_session *ps = impl(f)->main;
	const char *op = b->operation_id;
	char e[24];
	const char *params[2] = { op, e };
	long long cur;
	PGresult *res;
	int rc;

	snprintf(e, sizeof(e), "%lld", epoch);
	rc = pg_session_exec_n(ps, "INSERT INTO fencecert_epoch AS e(operation_id,"
			       " epoch) VALUES($1, $2::bigint) ON CONFLICT "
			       "(operation_id) DO UPDATE SET epoch = "
			       "greatest(e.epoch, excluded.epoch) RETURNING "
			       "epoch", 2, params, PGRES_TUPLES_OK,
			       "lock the epoch in", &res);
	if (rc)
		return fence_pg__fail(f, ps, FC_FENCE_UNAVAILABLE);
	cur = atoll(PQgetvalue(res, 0, 0));
	PQclear(res);
	rc = pg_session_exec_n(ps, "SELECT epoch, intent_digest FROM "
			       "fencecert_fence WHERE operation_id = $1", 1,
			       params, PGRES_TUPLES_OK, "read the fence in",
			       &res);
	if (rc)
		return fence_pg__fail(f, ps, FC_FENCE_UNAVAILABLE);
	if (PQntuples(res) == 1) {
		long long had = atoll(PQgetvalue(res, 0, 0));
		int same = strcmp(PQgetvalue(res, 0, 1), b->intent_digest) == 0;

		*outcome = FENCE_PROVED_PRESENT;
		rc = same ? fence__fail(f, FC_ALREADY_APPLIED, "'%s' was "
					"already applied at epoch %lld", op, had) :
		     fence__fail(f, FC_INTENT_CONFLICT, "'%s' was applied with "
				 "intent '%s', not '%s'", op,
				 PQgetvalue(res, 0, 1), b->intent_digest);
		PQclear(res);
		return rc;
	}
	PQclear(res);
	if (cur > epoch)
		return fence__fail(f, FC_STALE_EPOCH, "epoch %lld for '%s' is "
				   "stale: epoch %lld is prepared", epoch, op, cur);
	return 0;
}

/* Invariant 3: our xid, committed on the side session before COMMIT. */
static int record_xid(fence *f, long long epoch, const char *op)
{
	struct fence_pg *s = impl(f);
	char e[24], xid[32];
	const char *params[3] = { op, e, xid };
	PGresult *res;
	int rc;

	rc = pg_session_exec_n(s->main, "SELECT pg_current_xact_id()::text", 0,
			       NULL, PGRES_TUPLES_OK, "read the xid in", &res);
	if (rc)
		return fence_pg__fail(f, s->main, FC_FENCE_UNAVAILABLE);
	snprintf(xid, sizeof(xid), "%s", PQgetvalue(res, 0, 0));
	PQclear(res);
	snprintf(e, sizeof(e), "%lld", epoch);
	if ((rc = pg_session_live(s->side)) ||
	    (rc = pg_session_exec_n(s->side, "INSERT INTO fencecert_xact("
				    "operation_id, epoch, xid) VALUES($1, "
				    "$2::bigint, $3::xid8)", 3, params,
				    PGRES_COMMAND_OK, "record the xid in",
				    NULL)))
		return fence_pg__fail(f, s->side, FC_FENCE_UNAVAILABLE);
	/* Ours included: the row goes when the fence row comes. */
	if (pg_session_exec_n(s->main, "DELETE FROM fencecert_xact WHERE "
			      "operation_id = $1", 1, params, PGRES_COMMAND_OK,
			      "clear the xids in", NULL))
		return fence_pg__fail(f, s->main, FC_FENCE_UNAVAILABLE);
	return 0;
}

/* The statement that decides: COMMIT, or PREPARE + COMMIT PREPARED. */
static int finish(fence *f, long long epoch, const char *op,
		  enum fence_outcome *outcome)
{
	struct fence_pg *s = impl(f);
	char prefix[256], gid[300], lit[GID_LITERAL_MAX], sql[GID_SQL_MAX];

	*outcome = FENCE_OUTCOME_UNKNOWN;
	if (s->kind == PG_FENCE_TXN) {
		if (pg_session_exec_n(s->main, "COMMIT", 0, NULL,
				      PGRES_COMMAND_OK, "commit the apply in",
				      NULL))
			return fence_pg__fail(f, s->main, FC_ERR_COMMIT_UNKNOWN);
		*outcome = FENCE_PROVED_PRESENT;
		return 0;
	}
	fence_pg__gid_prefix(s->main, op, prefix, sizeof(prefix));
	snprintf(gid, sizeof(gid), "%s%lld", prefix, epoch);
	if (pg_session_literal(s->main, gid, lit, sizeof(lit))) {
		*outcome = FENCE_PROVED_ABSENT;
		return fence__fail(f, FC_NOMEM, "cannot quote gid '%s'", gid);
	}
	snprintf(sql, sizeof(sql), "PREPARE TRANSACTION %s", lit);
	if (pg_session_exec_n(s->main, sql, 0, NULL, PGRES_COMMAND_OK,
			      "prepare the apply in", NULL))
		return fence_pg__fail(f, s->main, FC_ERR_COMMIT_UNKNOWN);
	snprintf(sql, sizeof(sql), "COMMIT PREPARED %s", lit);
	if (pg_session_live(s->main) ||
	    pg_session_exec_n(s->main, sql, 0, NULL, PGRES_COMMAND_OK,
			      "commit the prepared apply in", NULL))
		return fence_pg__fail(f, s->main, FC_ERR_COMMIT_UNKNOWN);
	*outcome = FENCE_PROVED_PRESENT;
	return 0;
}

static int pg_apply(fence *f, long long epoch, const struct fence_batch *b,
		    enum fence_outcome *outcome)
{
	struct fence_pg *s = impl(f);
	int rc;

	*outcome = FENCE_PROVED_ABSENT;
	if ((rc = pg_session_live(s->main)))
		return fence_pg__fail(f, s->main, rc);
	if ((rc = ensure_tables(f, b->table)))
		return rc;
	if (s->kind == PG_FENCE_2PC &&
	    (rc = fence_pg__resolve_prepared(f, b->operation_id, 0, NULL)))
		return rc;
	if ((rc = pg_session_exec_n(s->main, "BEGIN", 0, NULL,
				    PGRES_COMMAND_OK, "start the apply in",
				    NULL)))
		return fence_pg__fail(f, s->main, FC_FENCE_UNAVAILABLE);
	rc = lock_and_check(f, epoch, b, outcome);
	if (!rc)
		rc = write_batch(f, epoch, b);
	if (!rc)
		rc = record_xid(f, epoch, b->operation_id);
	if (rc) {
		/* Nothing was committed, and COMMIT will never be sent. */
		pg_session_rollback(s->main);
		return rc;
	}
	return finish(f, epoch, b->operation_id, outcome);
}

/* The three tables differ in scheme and name only.  Both kinds resolve
 * in-doubt transactions: a pg-txn URL may name a schema where pg-2pc
 * left one, and the operator must still see and end it. */
#define PG_FENCE_OPS(scheme_, name_) {		\
	.scheme = scheme_,			\
	.name = name_,				\
	.capability = FENCE_CAP_AUTOMATIC,	\
	.open = pg_open,			\
	.close = pg_close,			\
	.prepare = pg_prepare,			\
	.apply = pg_apply,			\
	.probe = fence_pg__probe,		\
	.features = FENCE_HAS_IN_DOUBT,		\
	.in_doubt = fence_pg__in_doubt,		\
	.resolve_in_doubt = fence_pg__resolve_prepared, \
}

const struct fence_ops fence_pg_txn_ops = PG_FENCE_OPS("postgresql", "pg-txn");
/* The short scheme; pg_open() picks the table of the URL's fence. */
const struct fence_ops fence_pg_short_ops = PG_FENCE_OPS("postgres", "pg-txn");
const struct fence_ops fence_pg_2pc_ops = PG_FENCE_OPS("postgresql", "pg-2pc");
