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
	size_t ncap;
	void *p;

	if (n < *cap)
		return 0;
	ncap = *cap ? *cap * 2 : 8;
	if (ncap > SIZE_MAX / elem ||
	    !(p = realloc(*arr, ncap * elem)))
		return journal__fail(j, FC_NOMEM, "out of memory reading "
				     "journal '%s'", s->path);
	*arr = p;
	*cap = ncap;
	return 0;
}

int journal_sqlite__history(journal *j, const char *op,
			    struct journal_transition **out, size_t *n)
{
	struct journal_transition *arr = NULL;
	struct journal_sqlite *s = j->impl;
	size_t count = 0, cap = 0;
	sqlite3_stmt *st;
	int rc, step;

	if ((rc = journal_sqlite__ready(j)) ||
	    (rc = journal_sqlite__prepare(j, SQ_HISTORY, &st)) ||
	    (rc = journal_sqlite__bound(j, sqlite3_bind_text(st, 1, op, -1,
						      SQLITE_STATIC))))
		return rc;
	while ((step = sqlite3_step(st)) == SQLITE_ROW) {
		if ((rc = sq_grow(j, (void **)&arr, &cap, count,
				   sizeof(*arr))) ||
		    (rc = sq_row_transition(j, st, op, &arr[count])))
			break;
		count++;
	}
	if (!rc && step != SQLITE_DONE)
		rc = journal_sqlite__fail(j, step, "read");
	sqlite3_reset(st);
	/* create writes the first row with the entry, so no rows means no
	 * operation, in the same snapshot. */
	if (!rc && count == 0)
		rc = journal__fail(j, FC_NOT_FOUND, "operation '%s' not found "
				   "in journal '%s'", op, s->path);
	if (rc) {
		free(arr);
		return rc;
	}
	*out = arr;
	*n = count;
	return 0;
}

int journal_sqlite__list(journal *j, const struct journal_filter *f,
			 struct journal_entry **out, size_t *n)
{
	struct journal_entry *arr = NULL;
	size_t count = 0, cap = 0;
	sqlite3_stmt *st;
	int rc, step;

	if ((rc = journal_sqlite__ready(j)) ||
	    (rc = journal_sqlite__prepare(j, SQ_LIST, &st)) ||
	    (rc = journal_sqlite__bound(j, sqlite3_bind_int64(st, 1,
						       f->updated_before))))
		return rc;
	/* The state filter runs here, not in SQL: an index on state would
	 * cost every CAS a second page write for a rare query. */
	while ((step = sqlite3_step(st)) == SQLITE_ROW) {
		if ((rc = sq_grow(j, (void **)&arr, &cap, count,
				   sizeof(*arr))) ||
		    (rc = journal_sqlite__row_entry(j, st, &arr[count])))
			break;
		if (!f->states || (f->states & STATE_BIT(arr[count].state)))
			count++;
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

static int sq_purge_ids(journal *j, long long before,
			char (**ids)[JOURNAL_ID_MAX], size_t *n)
{
	char (*arr)[JOURNAL_ID_MAX] = NULL;
	size_t count = 0, cap = 0;
	sqlite3_stmt *st;
	int rc, step;

	if ((rc = journal_sqlite__prepare(j, SQ_PURGE_SELECT, &st)) ||
	    (rc = journal_sqlite__bound(j, sqlite3_bind_int64(st, 1, before))))
		return rc;
	while ((step = sqlite3_step(st)) == SQLITE_ROW) {
		if ((rc = sq_grow(j, (void **)&arr, &cap, count,
				   sizeof(*arr))) ||
		    (rc = journal_sqlite__text(j, st, 0, arr[count],
					       sizeof(*arr))))
			break;
		count++;
	}
	if (!rc && step != SQLITE_DONE)
		rc = journal_sqlite__fail(j, step, "read");
	sqlite3_reset(st);
	if (rc) {
		free(arr);
		return rc;
	}
	*ids = arr;
	*n = count;
	return 0;
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
