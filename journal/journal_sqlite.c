/*
 * journal_sqlite.c -- the SQLite journal adapter: "sqlite:PATH[?busy_ms=N]".
 *
 * Schema version 1 (see docs/journal.md):
 *
 *   fencecert_schema(version)               one row: the schema version
 *   operations(operation_id PK, ...)        one row per operation (the entry)
 *   transitions(operation_id, version) PK   append-only history
 *   purged(operation_id PK, ...)            tombstones written by purge
 *
 * Invariants:
 *  1. The connection runs in WAL mode with synchronous=FULL and every write
 *     is one BEGIN IMMEDIATE ... COMMIT: a call that returns 0 has its change
 *     in the fsync'd WAL; a call that fails has rolled its transaction back.
 *  2. A state change and its transitions row are written in the same
 *     transaction.  transitions rows are never updated (a trigger refuses)
 *     and only purge deletes them, together with their operation.
 *  3. Whether a CAS applies is decided by journal__check_cas() on the row
 *     read inside the write transaction; the UPDATE repeats the version
 *     guard, so the row can never move twice for one expected version.
 *  4. Version 0 means "no fencecert schema" (a new file, or one whose
 *     fencecert_schema row says 0): it is created implicitly by the first
 *     call that needs it, so routes need no separate init step.  A database
 *     at an older non-zero version is refused until `journal migrate`
 *     (another fencecert may still use it); a newer one is always refused.
 *
 *   cas:  BEGIN IMMEDIATE -> SELECT row -> journal__check_cas()
 *         -> UPDATE ... WHERE version = expected -> INSERT transitions
 *         -> COMMIT                      (any failure: ROLLBACK)
 *
 * Statements are prepared once per handle (SQLITE_PREPARE_PERSISTENT) and
 * reset after every use so no read snapshot outlives a call; they, the
 * transactions and row decoding are in journal_sqlite_stmt.c, the schema
 * and its migrations in journal_sqlite_schema.c, history/list/purge in
 * journal_sqlite_scan.c (journal_sqlite_impl.h lists what they share).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "journal/journal_sqlite_impl.h"
#include "common/sqlite_reader.h"

#define SQ_BUSY_MS_DEFAULT 10000

/*
 * Look op up with statement id: 1 when it has a row (st stands on it; the
 * caller reads it and resets st), 0 when it has none, or an error; st is
 * reset unless the answer is 1.
 */
static int sq_find(journal *j, enum journal_sqlite_stmt id, const char *op,
		   sqlite3_stmt **st)
{
	int rc, step;

	if ((rc = journal_sqlite__prepare_op(j, id, op, st)))
		return rc;
	step = sqlite3_step(*st);
	if (step == SQLITE_ROW)
		return 1;
	rc = step == SQLITE_DONE ? 0 : journal_sqlite__fail(j, step, "read");
	sqlite3_reset(*st);
	return rc;
}

static int sq_lookup(journal *j, const char *op, struct journal_entry *e)
{
	struct journal_sqlite *s = j->impl;
	sqlite3_stmt *st;
	int rc = sq_find(j, SQ_GET, op, &st);

	if (rc == 0)
		return journal__fail(j, FC_NOT_FOUND, "operation '%s' not found "
				     "in journal '%s'", op, s->path);
	if (rc < 0)
		return rc;
	rc = journal_sqlite__row_entry(j, st, e);
	sqlite3_reset(st);
	return rc;
}

/* A purged operation completed once; re-creating it would let a late retry
 * apply the same mutation again, so creation is refused with FC_PURGED. */
static int sq_check_tombstone(journal *j, const char *op)
{
	struct journal_sqlite *s = j->impl;
	sqlite3_stmt *st;
	int rc = sq_find(j, SQ_PURGED_LOOKUP, op, &st);

	if (rc <= 0)
		return rc;
	sqlite3_reset(st);
	return journal__fail(j, FC_PURGED, "operation '%s' was purged from "
			     "journal '%s' after completing; refusing to "
			     "create it again", op, s->path);
}

/* ---- schema ------------------------------------------------------------- */

/* ---- open / close ------------------------------------------------------- */

static int sq_parse_query(journal *j, struct journal_sqlite *s, const char *q)
{
	while (*q) {
		size_t len = strcspn(q, "&");
		char *end;
		long v;

		if (strncmp(q, "busy_ms=", 8) != 0 || len == 8)
			return journal__fail(j, FC_USAGE, "unknown sqlite "
					     "journal option '%.*s' (known: "
					     "busy_ms=N)", (int)len, q);
		errno = 0;
		v = strtol(q + 8, &end, 10);
		if (errno || end != q + len || v < 0 || v > INT_MAX)
			return journal__fail(j, FC_USAGE, "invalid busy_ms "
					     "'%.*s'", (int)(len - 8), q + 8);
		s->busy_ms = (int)v;
		q += len + (q[len] ? 1 : 0);
	}
	return 0;
}

static int sq_parse_url(journal *j, struct journal_sqlite *s, const char *url)
{
	const char *p = url + strlen("sqlite:");
	size_t n;

	if (strncmp(p, "//", 2) == 0) /* sqlite:///abs/path */
		p += 2;
	n = strcspn(p, "?");
	if (n == 0)
		return journal__fail(j, FC_USAGE, "journal url '%s' has no "
				     "path", url);
	if (n >= sizeof(s->path))
		return journal__fail(j, FC_USAGE, "journal path too long in "
				     "'%.60s...'", url);
	memcpy(s->path, p, n);
	s->path[n] = '\0';
	s->busy_ms = SQ_BUSY_MS_DEFAULT;
	return p[n] ? sq_parse_query(j, s, p + n + 1) : 0;
}

static void sq_close(void *impl)
{
	struct journal_sqlite *s = impl;

	if (!s)
		return;
	for (int i = 0; i < SQ_STMT_COUNT; i++)
		sqlite3_finalize(s->stmt[i]);
	sqlite3_close_v2(s->db);
	free(s);
}

/* No checkpoint when this connection closes last: the -wal stays. */
static void sq_leave_as_is(void *impl)
{
	struct journal_sqlite *s = impl;

	sqlite3_db_config(s->db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, NULL);
}

static int sq_pragmas(journal *j)
{
	struct journal_sqlite *s = j->impl;
	sqlite3_stmt *st;
	char mode[16] = "";
	int rc;

	rc = sqlite3_prepare_v2(s->db, "PRAGMA journal_mode=WAL", -1, &st,
				NULL);
	if (rc != SQLITE_OK)
		return journal_sqlite__fail(j, rc, "open");
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		snprintf(mode, sizeof(mode), "%s", sqlite3_column_text(st, 0));
	else
		rc = journal_sqlite__fail(j, rc, "open");
	sqlite3_finalize(st);
	if (rc != SQLITE_ROW)
		return rc;
	/* WAL is part of the durability argument; a file system or path
	 * (":memory:") that cannot do it cannot hold a journal. */
	if (strcmp(mode, "wal") != 0)
		return journal__fail(j, FC_JOURNAL_UNAVAILABLE, "cannot use "
				     "WAL for journal '%s' (mode '%s')",
				     s->path, mode);
	rc = sqlite3_exec(s->db, "PRAGMA synchronous=FULL", NULL, NULL, NULL);
	return rc == SQLITE_OK ? 0 : journal_sqlite__fail(j, rc, "open");
}

static int sq_open(journal *j, const char *url)
{
	struct journal_sqlite *s = calloc(1, sizeof(*s));
	int rc;

	if (!s)
		return journal__fail(j, FC_NOMEM, "out of memory opening a "
				     "journal");
	if ((rc = sq_parse_url(j, s, url))) {
		free(s);
		return rc;
	}
	j->impl = s;
	/* read-only: no file created, no pragma written (journal.h) */
	if (j->readonly)
		rc = fc_sqlite_open_reader(s->path, SQLITE_OPEN_NOMUTEX, &s->db);
	else
		rc = sqlite3_open_v2(s->path, &s->db, SQLITE_OPEN_READWRITE |
				     SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
				     NULL);
	if (rc != SQLITE_OK) {
		rc = journal__fail(j, journal_sqlite__code(rc), "cannot open "
				   "journal '%s': %s", s->path, j->readonly ?
				   fc_sqlite_reader_errmsg(s->db, rc) : s->db ?
				   sqlite3_errmsg(s->db) : sqlite3_errstr(rc));
	} else {
		sqlite3_busy_timeout(s->db, s->busy_ms);
		rc = j->readonly ? 0 : sq_pragmas(j);
	}
	if (rc) {
		sq_close(s);
		j->impl = NULL;
	}
	return rc;
}

sqlite3 *journal_sqlite__db(journal *j)
{
	if (!j || j->ops != &journal_sqlite_ops || !j->impl)
		return NULL;
	return ((struct journal_sqlite *)j->impl)->db;
}

/* ---- the port ----------------------------------------------------------- */

static int sq_insert_transition(journal *j, const char *op, long long version,
				enum fc_state from, enum fc_state to,
				long long epoch, long long at,
				const char *evidence)
{
	sqlite3_stmt *st;
	int rc;

	if ((rc = journal_sqlite__prepare(j, SQ_INSERT_TRANSITION, &st)))
		return rc;
	rc = sqlite3_bind_text(st, 1, op, -1, SQLITE_STATIC) |
	     sqlite3_bind_int64(st, 2, version) |
	     sqlite3_bind_text(st, 3, state_name(from), -1, SQLITE_STATIC) |
	     sqlite3_bind_text(st, 4, state_name(to), -1, SQLITE_STATIC) |
	     sqlite3_bind_int64(st, 5, epoch) |
	     sqlite3_bind_int64(st, 6, at) |
	     sqlite3_bind_text(st, 7, evidence, -1, SQLITE_STATIC);
	if ((rc = journal_sqlite__bound(j, rc)))
		return rc;
	return journal_sqlite__run(j, st, "write");
}

static int sq_insert_entry(journal *j, const struct journal_entry *e)
{
	sqlite3_stmt *st;
	int rc;

	if ((rc = journal_sqlite__prepare(j, SQ_INSERT_OP, &st)))
		return rc;
	rc = sqlite3_bind_text(st, 1, e->operation_id, -1, SQLITE_STATIC) |
	     sqlite3_bind_text(st, 2, e->intent_digest, -1, SQLITE_STATIC) |
	     sqlite3_bind_int64(st, 3, e->created_at) |
	     sqlite3_bind_text(st, 4, e->meta, -1, SQLITE_STATIC);
	if ((rc = journal_sqlite__bound(j, rc)) ||
	    (rc = journal_sqlite__run(j, st, "write")))
		return rc;
	return sq_insert_transition(j, e->operation_id, 1, FC_STATE_NONE,
				    FC_PREPARING, 0, e->created_at, "{}");
}

static int sq_create_or_get(journal *j, const char *op, const char *intent,
			    const char *meta, struct journal_entry *out,
			    int *created)
{
	struct journal_entry e;
	int rc;

	if ((rc = journal_sqlite__ready(j)) || (rc = journal_sqlite__begin(j)))
		return rc;
	rc = sq_lookup(j, op, &e);
	if (rc != FC_NOT_FOUND) {
		journal_sqlite__rollback(j);
		if (rc || (rc = journal__check_intent(j, &e, intent)))
			return rc;
		*out = e;
		*created = 0;
		return 0;
	}
	if ((rc = sq_check_tombstone(j, op))) {
		journal_sqlite__rollback(j);
		return rc;
	}
	journal__new_entry(&e, op, intent, meta);
	if ((rc = sq_insert_entry(j, &e))) {
		journal_sqlite__rollback(j);
		return rc;
	}
	if ((rc = journal_sqlite__commit(j)))
		return rc;
	*out = e;
	*created = 1;
	return 0;
}

static int sq_get(journal *j, const char *op, struct journal_entry *out)
{
	struct journal_entry e;
	int rc;

	if ((rc = journal_sqlite__ready(j)) || (rc = sq_lookup(j, op, &e)))
		return rc;
	*out = e;
	return 0;
}

static int sq_update_state(journal *j, const struct journal_entry *cur,
			   const struct journal_cas *req, long long now)
{
	struct journal_sqlite *s = j->impl;
	sqlite3_stmt *st;
	int rc;

	if ((rc = journal_sqlite__prepare(j, SQ_UPDATE_STATE, &st)))
		return rc;
	rc = sqlite3_bind_text(st, 1, cur->operation_id, -1, SQLITE_STATIC) |
	     sqlite3_bind_text(st, 2, state_name(req->next), -1,
			       SQLITE_STATIC) |
	     sqlite3_bind_int64(st, 3, cur->version + 1) |
	     sqlite3_bind_int64(st, 4, now) |
	     sqlite3_bind_text(st, 5, req->evidence, -1, SQLITE_STATIC) |
	     sqlite3_bind_int64(st, 6, cur->version);
	if ((rc = journal_sqlite__bound(j, rc)) ||
	    (rc = journal_sqlite__run(j, st, "write")))
		return rc;
	/* Cannot happen under the write lock; never write history for it. */
	if (sqlite3_changes(s->db) != 1)
		return journal__fail(j, FC_CORRUPT, "row of '%s' changed "
				     "under the write lock of journal '%s'",
				     cur->operation_id, s->path);
	return sq_insert_transition(j, cur->operation_id, cur->version + 1,
				    cur->state, req->next, req->epoch, now,
				    req->evidence);
}

/* Checks and writes one change of cur at time now, inside the write
 * transaction sq_change() holds. */
typedef int sq_change_fn(journal *j, const struct journal_entry *cur,
			 const void *arg, long long now);

/*
 * cas and acquire_lease: in one write transaction, read op's entry into
 * *cur and hand it to change(), then commit (invariants 1 and 3).  *now
 * is read once the write lock is held.  On failure, rolled back.
 */
static int sq_change(journal *j, const char *op, sq_change_fn *change,
		     const void *arg, struct journal_entry *cur,
		     long long *now)
{
	int rc;

	if ((rc = journal_sqlite__ready(j)) || (rc = journal_sqlite__begin(j)))
		return rc;
	*now = clock_wall_ms();
	if ((rc = sq_lookup(j, op, cur)) || (rc = change(j, cur, arg, *now))) {
		journal_sqlite__rollback(j);
		return rc;
	}
	return journal_sqlite__commit(j);
}

static int sq_cas_change(journal *j, const struct journal_entry *cur,
			 const void *req, long long now)
{
	int rc = journal__check_cas(j, cur, req);

	return rc ? rc : sq_update_state(j, cur, req, now);
}

static int sq_cas(journal *j, const struct journal_cas *req,
		  struct journal_entry *out)
{
	struct journal_entry cur;
	long long now;
	int rc;

	if ((rc = sq_change(j, req->operation_id, sq_cas_change, req, &cur,
			    &now)))
		return rc;
	cur.state = req->next;
	cur.version++;
	cur.updated_at = now;
	snprintf(cur.evidence, sizeof(cur.evidence), "%s", req->evidence);
	*out = cur;
	return 0;
}

static int sq_update_lease(journal *j, const struct journal_entry *cur,
			   const char *owner, long long expires)
{
	sqlite3_stmt *st;
	int rc;

	if ((rc = journal_sqlite__prepare(j, SQ_UPDATE_LEASE, &st)))
		return rc;
	rc = sqlite3_bind_text(st, 1, cur->operation_id, -1, SQLITE_STATIC) |
	     sqlite3_bind_int64(st, 2, cur->lease_epoch + 1) |
	     sqlite3_bind_text(st, 3, owner, -1, SQLITE_STATIC) |
	     sqlite3_bind_int64(st, 4, expires) |
	     sqlite3_bind_int64(st, 5, cur->lease_epoch);
	if ((rc = journal_sqlite__bound(j, rc)))
		return rc;
	return journal_sqlite__run(j, st, "write");
}

struct sq_lease {
	const char *owner;
	long long ttl_ms;
};

static int sq_lease_change(journal *j, const struct journal_entry *cur,
			   const void *arg, long long now)
{
	const struct sq_lease *l = arg;
	int rc = journal__check_lease(j, cur, l->owner, now);

	return rc ? rc : sq_update_lease(j, cur, l->owner, now + l->ttl_ms);
}

static int sq_acquire_lease(journal *j, const char *op, const char *owner,
			    long long ttl_ms, struct journal_entry *out)
{
	struct sq_lease l = { owner, ttl_ms };
	struct journal_entry cur;
	long long now;
	int rc;

	if ((rc = sq_change(j, op, sq_lease_change, &l, &cur, &now)))
		return rc;
	cur.lease_epoch++;
	snprintf(cur.lease_owner, sizeof(cur.lease_owner), "%s", owner);
	cur.lease_expires_at = now + ttl_ms;
	*out = cur;
	return 0;
}

const struct journal_ops journal_sqlite_ops = {
	.scheme = "sqlite",
	.open = sq_open,
	.close = sq_close,
	.leave_as_is = sq_leave_as_is,
	.init = journal_sqlite__init,
	.migrate = journal_sqlite__migrate,
	.create_or_get = sq_create_or_get,
	.get = sq_get,
	.cas = sq_cas,
	.history = journal_sqlite__history,
	.list = journal_sqlite__list,
	.acquire_lease = sq_acquire_lease,
	.purge = journal_sqlite__purge,
};
