/*
 * fence_pg_probe.c -- the probe of the PostgreSQL fences, and what is done
 * with a transaction left prepared (layout and apply: fence_pg.c).
 *
 *   probe(op):
 *     no fence table ----------------------------------------> ABSENT
 *     op prepared (pg_prepared_xacts) -> ROLLBACK PREPARED      (pg-2pc)
 *     one statement (one snapshot): op's fence row and op's fencecert_xact
 *     rows with pg_xact_status(xid)
 *     fence row --------------------------------------------> APPLIED
 *     a xid 'committed' -> read again (its fence row must now be visible;
 *                          if it is not twice in a row: UNKNOWN)
 *     a xid 'in progress' -> end its session (pg_terminate_backend), wait
 *                          for the final status (polling, at most
 *                          timeout_ms), read again; still running: UNKNOWN
 *     every xid 'aborted' or NULL ----------------------------> ABSENT
 *
 * Invariants:
 *  1. Never ABSENT while a transaction of op may still commit: every such
 *     transaction has its xid row committed before its COMMIT was sent
 *     (fence_pg.c invariant 3), and the fence row and the xid rows are read
 *     in one statement, so a commit between two reads cannot hide both.
 *  2. pg_xact_status() NULL means the xid is older than the oldest commit
 *     log PostgreSQL keeps: that transaction ended long ago, and had it
 *     committed, its fence row would be in our snapshot.  The fence row
 *     alone decides (xid8 does not wrap, so NULL is never "too new").  An
 *     xid from another cluster (a restored dump) makes the statement fail:
 *     UNKNOWN.
 *  3. The probe decides what is pending, so that a retry is not stuck
 *     behind an attempt that will never finish: a transaction of op left
 *     prepared is rolled back (its attempt is gone; every reader saw it as
 *     absent, and afterwards it provably cannot land -- committing it
 *     instead would turn an absence someone already observed into a
 *     presence), and the session of an apply of op still in flight (its
 *     COMMIT held back by a network fault, its worker paused or gone) is
 *     ended.  PostgreSQL then settles that transaction for good: a COMMIT
 *     it is already processing completes, anything else is rolled back.
 *     Either way the status becomes final and the answer decisive.  Only
 *     the lease holder probes in the route, and it has decided the older
 *     attempt's fate.  (A stale attempt that probes -- a zombie resumed
 *     after a newer attempt started -- may end the newer one's apply;
 *     safety holds, because that apply is then aborted, found absent and
 *     applied once by the next attempt, at the cost of a retry.)  Ending a
 *     session needs the same role as the route (or pg_signal_backend).
 *  4. fence_hands_off() (recover, `fencecert target probe`) makes the
 *     probe decide nothing: it answers UNKNOWN while a transaction is
 *     prepared or in flight, so an operator can still choose.
 *  5. probe=fence-row-only (a control, never certified) skips the xid
 *     check: it answers ABSENT while the transaction is still in progress,
 *     which is the hole `hold_commit` shows.
 */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/clock.h"
#include "fences/fence_pg_impl.h"

#define PROBE_ROUNDS_COMMITTED 2 /* re-reads after a 'committed' xid */
#define WAIT_STEP_MIN_MS 5
#define WAIT_STEP_MAX_MS 200

static struct fence_pg *impl(fence *f)
{
	return f->impl;
}


void fence_pg__gid_prefix(const pg_session *s, const char *op, char *out,
			  size_t len)
{
	snprintf(out, len, "fencecert:%s:%s:", pg_session_schema(s), op);
}

/* Is gid one of op's: the prefix, then the epoch's digits only. */
static int gid_is_ops(const char *gid, const char *prefix)
{
	size_t n = strlen(prefix);

	if (strncmp(gid, prefix, n) != 0 || !gid[n])
		return 0;
	return strspn(gid + n, "0123456789") == strlen(gid + n);
}

/* A read on the main session with op as $1 (or no parameter); a failure
 * is FC_FENCE_UNAVAILABLE with the session's message. */
static int read_op(fence *f, const char *sql, const char *op,
		   const char *what, PGresult **res)
{
	pg_session *s = impl(f)->main;

	if (pg_session_exec_n(s, sql, op ? 1 : 0, &op, PGRES_TUPLES_OK, what,
			      res))
		return fence_pg__fail(f, s, FC_FENCE_UNAVAILABLE);
	return 0;
}

/* Is prepared transaction gid gone (1), there (0), or unknown (-1)? */
static int prepared_gone(fence *f, const char *gid)
{
	PGresult *res;
	int gone;

	if (read_op(f, "SELECT count(*) FROM pg_prepared_xacts WHERE gid = $1",
		    gid, "list prepared transactions in", &res))
		return -1;
	gone = strcmp(PQgetvalue(res, 0, 0), "0") == 0;
	PQclear(res);
	return gone;
}

/* List (n_out) or resolve (commit 1 / 0) op's prepared transactions.  One
 * that is gone by the time it is resolved was resolved meanwhile (by the
 * apply that prepared it, still alive, or by another resolver): not
 * counted, not an error. */
static int prepared_walk(fence *f, const char *op, int action, int *n)
{
	pg_session *s = impl(f)->main;
	char prefix[256], lit[GID_LITERAL_MAX], sql[GID_SQL_MAX];
	PGresult *res;
	int rc, done = 0;

	if (n)
		*n = 0;
	if ((rc = pg_session_live(s)))
		return fence_pg__fail(f, s, rc);
	fence_pg__gid_prefix(s, op, prefix, sizeof(prefix));
	if ((rc = read_op(f, "SELECT gid FROM pg_prepared_xacts WHERE database = "
			  "current_database() AND starts_with(gid, $1) ORDER BY "
			  "gid", prefix, "list prepared transactions in", &res)))
		return rc;
	for (int i = 0; i < PQntuples(res) && !rc; i++) {
		const char *gid = PQgetvalue(res, i, 0);

		if (!gid_is_ops(gid, prefix))
			continue;
		if (action < 0) {
			done++;
			continue;
		}
		if (pg_session_literal(s, gid, lit, sizeof(lit))) {
			rc = fence__fail(f, FC_NOMEM, "cannot quote gid '%s'", gid);
			break;
		}
		snprintf(sql, sizeof(sql), "%s PREPARED %s",
			 action ? "COMMIT" : "ROLLBACK", lit);
		rc = pg_session_exec_n(s, sql, 0, NULL, PGRES_COMMAND_OK,
				       action ? "commit a prepared apply in" :
				       "roll back a prepared apply in", NULL);
		if (rc && prepared_gone(f, gid) == 1)
			rc = 0;
		else if (rc)
			rc = fence_pg__fail(f, s, FC_FENCE_UNAVAILABLE);
		else
			done++;
	}
	PQclear(res);
	if (n)
		*n = done;
	return rc;
}

int fence_pg__resolve_prepared(fence *f, const char *op, int commit, int *n)
{
	return prepared_walk(f, op, commit ? 1 : 0, n);
}

int fence_pg__in_doubt(fence *f, const char *op, int *n)
{
	return prepared_walk(f, op, -1, n);
}

/* What one read of op showed. */
struct sight {
	int applied;      /* fence row (filled into the probe) */
	int in_progress;  /* xids still running */
	int committed;    /* xids committed (their fence row not yet seen) */
};

static int fence_table_exists(fence *f, int *exists)
{
	PGresult *res;
	int rc;

	if ((rc = read_op(f, "SELECT to_regclass('fencecert_fence') IS NOT NULL",
			  NULL, "read the schema of", &res)))
		return rc;
	*exists = strcmp(PQgetvalue(res, 0, 0), "t") == 0;
	PQclear(res);
	return 0;
}

static int look(fence *f, const char *op, struct fence_probe *out,
		struct sight *s)
{
	PGresult *res;
	int rc;

	memset(s, 0, sizeof(*s));
	if ((rc = read_op(f, impl(f)->row_only ?
			  "SELECT 'f', epoch, intent_digest, rows, NULL FROM "
			  "fencecert_fence WHERE operation_id = $1" :
			  "SELECT 'f', epoch, intent_digest, rows, NULL FROM "
			  "fencecert_fence WHERE operation_id = $1 UNION ALL "
			  "SELECT 'x', epoch, NULL, 0, pg_xact_status(xid) "
			  "FROM fencecert_xact WHERE operation_id = $1", op,
			  "probe", &res)))
		return rc;
	for (int i = 0; i < PQntuples(res); i++) {
		const char *status = PQgetvalue(res, i, 4);

		if (*PQgetvalue(res, i, 0) == 'f') {
			s->applied = 1;
			out->answer = FENCE_APPLIED;
			out->epoch = atoll(PQgetvalue(res, i, 1));
			snprintf(out->intent_digest, sizeof(out->intent_digest),
				 "%s", PQgetvalue(res, i, 2));
			out->rows = atoll(PQgetvalue(res, i, 3));
		} else if (PQgetisnull(res, i, 4)) {
			continue; /* invariant 2 */
		} else if (strcmp(status, "in progress") == 0) {
			s->in_progress++;
		} else if (strcmp(status, "committed") == 0) {
			s->committed++;
		}
	}
	PQclear(res);
	return 0;
}

/* A transaction of op left prepared: roll it back (invariant 3), or with
 * hands_off say UNKNOWN at once (its xid would only look "in progress"
 * until the wait runs out). */
static int prepared_step(fence *f, const char *op)
{
	struct fence_pg *s = impl(f);
	int n = 0, rc;

	if (s->row_only)
		return 0;
	if (!f->hands_off)
		return s->kind == PG_FENCE_2PC ?
		       fence_pg__resolve_prepared(f, op, 0, NULL) : 0;
	if ((rc = prepared_walk(f, op, -1, &n)))
		return rc;
	if (n)
		return fence__fail(f, FC_FENCE_UNAVAILABLE, "a transaction of "
				   "'%s' is prepared and not resolved: it may "
				   "still commit ('fencecert recover' "
				   "commit-prepared or rollback-prepared)", op);
	return 0;
}

/* Invariant 3: end the sessions whose transactions of op are in flight.
 * A prepared transaction holds its xid lock without a session (pid NULL)
 * and is left to prepared_step(). */
static int end_in_flight(fence *f, const char *op)
{
	PGresult *res;
	int rc;

	if ((rc = read_op(f, "SELECT pg_terminate_backend(l.pid) FROM "
			  "fencecert_xact x JOIN pg_locks l ON l.locktype = "
			  "'transactionid' AND l.transactionid = xid(x.xid) AND "
			  "l.mode = 'ExclusiveLock' AND l.granted WHERE "
			  "x.operation_id = $1 AND l.pid IS NOT NULL AND l.pid <> "
			  "pg_backend_pid() AND pg_xact_status(x.xid) = "
			  "'in progress'", op, "end an apply in flight in", &res)))
		return rc;
	PQclear(res);
	return 0;
}

static void wait_a_little(int *step)
{
	poll(NULL, 0, *step);
	*step = *step * 2 > WAIT_STEP_MAX_MS ? WAIT_STEP_MAX_MS : *step * 2;
}

int fence_pg__probe(fence *f, const char *op, struct fence_probe *out)
{
	struct fence_pg *s = impl(f);
	long long deadline;
	int rc, exists = 0, committed_seen = 0, step = WAIT_STEP_MIN_MS;
	struct sight seen;

	if ((rc = pg_session_live(s->main)))
		return fence_pg__fail(f, s->main, rc);
	if ((rc = fence_table_exists(f, &exists)))
		return rc;
	if (!exists) {
		out->answer = FENCE_ABSENT;
		return 0;
	}
	deadline = clock_mono_ms() + pg_session_timeout_ms(s->main);
	for (int round = 0;; round++) {
		if ((rc = prepared_step(f, op)))
			return rc;
		if ((rc = look(f, op, out, &seen)))
			return rc;
		if (seen.applied)
			return 0;
		if (seen.committed && ++committed_seen > PROBE_ROUNDS_COMMITTED)
			return fence__fail(f, FC_FENCE_UNAVAILABLE, "a transaction "
					   "of '%s' committed but its fence row "
					   "is not there: the target was changed "
					   "by hand", op);
		if (!seen.committed && !seen.in_progress) {
			out->answer = FENCE_ABSENT;
			return 0;
		}
		if (seen.in_progress && (f->hands_off || clock_mono_ms() >= deadline))
			return fence__fail(f, FC_FENCE_UNAVAILABLE, "a transaction "
					   "of '%s' is still in progress%s: it "
					   "may still commit", op, f->hands_off ?
					   "" : " after its session was ended");
		if (seen.in_progress && round == 0 &&
		    (rc = end_in_flight(f, op)))
			return rc;
		if (seen.in_progress)
			wait_a_little(&step);
	}
}

int fence_pg__fail(fence *f, const pg_session *s, int code)
{
	return fence__fail(f, code, "%s", pg_session_errmsg(s));
}
