/*
 * target_pg.c -- the read-only observer (target.h) for "postgresql://"
 * targets; target.c dispatches here by scheme.  Layout: fence_pg.c.
 *
 * Invariants:
 *  1. Nothing is written: every read runs in a READ ONLY transaction, and
 *     missing tables (or a missing schema) simply hold no rows and no
 *     fences -- nothing is created.
 *  2. Sorting matches the other targets: bytewise (COLLATE "C"), NULL
 *     first.
 *  3. Rows are counted, never taken from the fence rows; fence rows and
 *     epoch rows are both reported, so one without the other still shows.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fences/fence_pg_impl.h"
#include "fences/target_pg.h"

struct observer {
	pg_session *s;
};

static int obs_open(const char *url, struct observer *o, char *err,
		    size_t errlen)
{
	struct pg_target_url u;
	int rc;

	memset(o, 0, sizeof(*o));
	if ((rc = pg_target__parse_url(url, &u, err, errlen)))
		return rc;
	rc = pg_target__open_session(u.session_url, 1, &o->s, err, errlen);
	pg_target__url_release(&u);
	if (!rc && (rc = pg_session_exec_n(o->s, "BEGIN READ ONLY", 0, NULL,
					   PGRES_COMMAND_OK, "read", NULL)))
		snprintf(err, errlen, "%s", pg_session_errmsg(o->s));
	if (rc) {
		pg_session_close(o->s);
		o->s = NULL;
		return rc == FC_CORRUPT ? FC_FENCE_UNAVAILABLE : rc;
	}
	return 0;
}

static void obs_close(struct observer *o)
{
	pg_session_close(o->s); /* closing ends the transaction */
}

/* Run a read; FC_FENCE_UNAVAILABLE with the message in err. */
static int obs_read(struct observer *o, const char *sql, const char *param,
		    PGresult **res, char *err, size_t errlen)
{
	int rc = pg_session_exec_n(o->s, sql, param ? 1 : 0, &param,
				   PGRES_TUPLES_OK, "read", res);

	if (rc)
		snprintf(err, errlen, "%s", pg_session_errmsg(o->s));
	return rc ? FC_FENCE_UNAVAILABLE : 0;
}

static int has_table(struct observer *o, const char *name, int *has,
		     char *err, size_t errlen)
{
	PGresult *res;
	int rc = obs_read(o, "SELECT to_regclass(quote_ident($1)) IS NOT NULL",
			  name, &res, err, errlen);

	if (!rc)
		*has = strcmp(PQgetvalue(res, 0, 0), "t") == 0;
	PQclear(res);
	return rc;
}

int target_pg_is_url(const char *url)
{
	return pg_target__is_url(url);
}

static const char *value(PGresult *res, int row, int col)
{
	return PQgetisnull(res, row, col) ? NULL : PQgetvalue(res, row, col);
}

int target_pg_rows(const char *url, const char *table, target_row_fn fn,
		   void *ctx, char *err, size_t errlen)
{
	struct observer o;
	PGresult *res = NULL;
	char sql[256];
	int has, rc;

	if ((rc = obs_open(url, &o, err, errlen)))
		return rc;
	rc = has_table(&o, table, &has, err, errlen);
	if (rc || !has)
		goto out;
	snprintf(sql, sizeof(sql), "SELECT row_key, operation_id, count(*) "
		 "FROM \"%s\" GROUP BY 1, 2 ORDER BY row_key COLLATE \"C\" "
		 "NULLS FIRST, operation_id COLLATE \"C\" NULLS FIRST", table);
	if ((rc = obs_read(&o, sql, NULL, &res, err, errlen)))
		goto out;
	for (int i = 0; i < PQntuples(res) && !rc; i++)
		rc = fn(ctx, value(res, i, 0), value(res, i, 1),
			atoll(PQgetvalue(res, i, 2)));
out:
	PQclear(res);
	obs_close(&o);
	return rc;
}

int target_pg_fences(const char *url, target_fence_fn fn, void *ctx,
		     char *err, size_t errlen)
{
	struct target_fence_record r;
	struct observer o;
	PGresult *res = NULL;
	char sql[768];
	int has_fence, has_epoch, rc;

	if ((rc = obs_open(url, &o, err, errlen)))
		return rc;
	if ((rc = has_table(&o, "fencecert_fence", &has_fence, err, errlen)) ||
	    (rc = has_table(&o, "fencecert_epoch", &has_epoch, err, errlen)) ||
	    (!has_fence && !has_epoch))
		goto out;
	snprintf(sql, sizeof(sql), "SELECT operation_id, max(applied), "
		 "max(prepared), max(intent), max(rows) FROM (%s%s%s) u "
		 "GROUP BY operation_id ORDER BY operation_id COLLATE \"C\"",
		 has_fence ? "SELECT operation_id, epoch AS applied, 0 AS "
			     "prepared, intent_digest AS intent, rows FROM "
			     "fencecert_fence" : "",
		 has_fence && has_epoch ? " UNION ALL " : "",
		 has_epoch ? "SELECT operation_id, 0 AS applied, epoch AS "
			     "prepared, NULL::text AS intent, 0 AS rows FROM "
			     "fencecert_epoch" : "");
	if ((rc = obs_read(&o, sql, NULL, &res, err, errlen)))
		goto out;
	for (int i = 0; i < PQntuples(res) && !rc; i++) {
		r.operation_id = PQgetvalue(res, i, 0);
		r.applied_epoch = atoll(PQgetvalue(res, i, 1));
		r.prepared_epoch = atoll(PQgetvalue(res, i, 2));
		r.intent_digest = value(res, i, 3);
		r.rows = atoll(PQgetvalue(res, i, 4));
		rc = fn(ctx, &r);
	}
out:
	PQclear(res);
	obs_close(&o);
	return rc;
}
