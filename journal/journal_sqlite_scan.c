/*
 * journal_sqlite_scan.c -- the SQLite journal calls over many rows:
 * history, list, purge.
 *
 * Reads are single statements, so each answer is one snapshot.  purge is
 * one write transaction: select the ids, write their tombstones, delete
 * their history, delete them -- all by the same predicate (COMPLETE and
 * last changed before the cutoff), so nothing else can ever be removed.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/array.h"
#include "common/clock.h"
#include "journal/journal_sqlite_impl.h"

static int sq_row_transition(journal *j, sqlite3_stmt *st, const char *op,
			     struct journal_transition *t)
{
	int rc;

	snprintf(t->operation_id, sizeof(t->operation_id), "%s", op);
	if ((rc = journal_sqlite__state(j, st, 1, 1, &t->from)) ||
	    (rc = journal_sqlite__state(j, st, 2, 0, &t->to)) ||
	    (rc = journal_sqlite__text(j, st, 5, t->evidence,
				       sizeof(t->evidence))))
		return rc;
	t->version = sqlite3_column_int64(st, 0);
	t->epoch = sqlite3_column_int64(st, 3);
	t->at = sqlite3_column_int64(st, 4);
	return 0;
}

/* Make room for item n of an array of elem-byte items. */
static int sq_grow(journal *j, void **arr, size_t *cap, size_t n, size_t elem)
{
	struct journal_sqlite *s = j->impl;

	if (array_grow(arr, cap, n, elem, 8))
		return journal__fail(j, FC_NOMEM, "out of memory reading "
				     "journal '%s'", s->path);
	return 0;
}

/* Decode the row st stands on into item: 1 keeps it, 0 leaves it out,
 * or an error. */
typedef int sq_row_fn(journal *j, sqlite3_stmt *st, void *item,
		      const void *arg);

/*
 * Step st to its end, decoding each row into an array of elem-byte items;
 * resets st.  0 with the array in *out (the caller frees it; NULL when
 * there was no row) and the number of rows kept in *n, or an error with
 * nothing handed out.
 */
static int sq_collect(journal *j, sqlite3_stmt *st, size_t elem,
		      sq_row_fn *row, const void *arg, void **out, size_t *n)
{
	void *arr = NULL;
	size_t count = 0, cap = 0;
	int rc = 0, step, kept;

	while ((step = sqlite3_step(st)) == SQLITE_ROW) {
		if ((rc = sq_grow(j, &arr, &cap, count, elem)))
			break;
		if ((kept = row(j, st, (char *)arr + count * elem, arg)) < 0) {
			rc = kept;
			break;
		}
		count += (size_t)kept;
	}
	if (!rc && step != SQLITE_DONE)
		rc = journal_sqlite__fail(j, step, "read");
	sqlite3_reset(st);
	if (rc) {
		free(arr);
		return rc;
	}
	*out = arr;
	*n = count;
	return 0;
}

static int keep_transition(journal *j, sqlite3_stmt *st, void *item,
			   const void *op)
{
	int rc = sq_row_transition(j, st, op, item);

	return rc ? rc : 1;
}

/* The state filter runs here, not in SQL: an index on state would cost
 * every CAS a second page write for a rare query. */
static int keep_listed(journal *j, sqlite3_stmt *st, void *item,
		       const void *filter)
{
	const struct journal_filter *f = filter;
	struct journal_entry *e = item;
	int rc = journal_sqlite__row_entry(j, st, e);

	if (rc)
		return rc;
	return !f->states || (f->states & STATE_BIT(e->state));
}

static int keep_id(journal *j, sqlite3_stmt *st, void *item, const void *arg)
{
	int rc = journal_sqlite__text(j, st, 0, item, JOURNAL_ID_MAX);

	return rc ? rc : 1;
}

int journal_sqlite__history(journal *j, const char *op,
			    struct journal_transition **out, size_t *n)
{
	struct journal_transition *arr = NULL;
	struct journal_sqlite *s = j->impl;
	size_t count = 0;
	sqlite3_stmt *st;
	int rc;

	if ((rc = journal_sqlite__ready(j)) ||
	    (rc = journal_sqlite__prepare_op(j, SQ_HISTORY, op, &st)) ||
	    (rc = sq_collect(j, st, sizeof(*arr), keep_transition, op,
			     (void **)&arr, &count)))
		return rc;
	/* create writes the first row with the entry, so no rows means no
	 * operation, in the same snapshot. */
	if (count == 0) {
		free(arr);
		return journal__fail(j, FC_NOT_FOUND, "operation '%s' not "
				     "found in journal '%s'", op, s->path);
	}
	*out = arr;
	*n = count;
	return 0;
}

int journal_sqlite__list(journal *j, const struct journal_filter *f,
			 struct journal_entry **out, size_t *n)
{
	sqlite3_stmt *st;
	int rc;

	if ((rc = journal_sqlite__ready(j)) ||
	    (rc = journal_sqlite__prepare(j, SQ_LIST, &st)) ||
	    (rc = journal_sqlite__bound(j, sqlite3_bind_int64(st, 1,
							       f->updated_before))))
		return rc;
	return sq_collect(j, st, sizeof(**out), keep_listed, f, (void **)out,
			  n);
}

static int sq_purge_ids(journal *j, long long before,
			char (**ids)[JOURNAL_ID_MAX], size_t *n)
{
	sqlite3_stmt *st;
	int rc;

	if ((rc = journal_sqlite__prepare(j, SQ_PURGE_SELECT, &st)) ||
	    (rc = journal_sqlite__bound(j, sqlite3_bind_int64(st, 1, before))))
		return rc;
	return sq_collect(j, st, sizeof(**ids), keep_id, NULL, (void **)ids, n);
}

/* Tombstones first: they are selected from the rows about to go. */
static int sq_purge_rows(journal *j, long long before, long long now)
{
	static const enum journal_sqlite_stmt steps[] = {
		SQ_PURGE_TOMBSTONES, SQ_PURGE_TRANSITIONS, SQ_PURGE_OPERATIONS,
	};
	sqlite3_stmt *st;
	int rc;

	for (size_t i = 0; i < JOURNAL_SQLITE_ARRAY_SIZE(steps); i++) {
		if ((rc = journal_sqlite__prepare(j, steps[i], &st)))
			return rc;
		rc = sqlite3_bind_int64(st, 1, before);
		if (steps[i] == SQ_PURGE_TOMBSTONES)
			rc |= sqlite3_bind_int64(st, 2, now);
		if ((rc = journal_sqlite__bound(j, rc)) ||
		    (rc = journal_sqlite__run(j, st, "purge")))
			return rc;
	}
	return 0;
}

int journal_sqlite__purge(journal *j, long long before,
			  char (**ids)[JOURNAL_ID_MAX], size_t *n)
{
	char (*arr)[JOURNAL_ID_MAX] = NULL;
	size_t count = 0;
	int rc;

	if ((rc = journal_sqlite__ready(j)) || (rc = journal_sqlite__begin(j)))
		return rc;
	if ((rc = sq_purge_ids(j, before, &arr, &count)) ||
	    (rc = sq_purge_rows(j, before, clock_wall_ms()))) {
		journal_sqlite__rollback(j);
		free(arr);
		return rc;
	}
	if ((rc = journal_sqlite__commit(j))) {
		free(arr);
		return rc;
	}
	*ids = arr;
	*n = count;
	return 0;
}
