/*
 * target.h -- observing a target as the checker must: by reading what is
 * there, not by asking the fence.
 *
 * The observer shares the target URLs of the fence port ("sqlite:PATH",
 * "file:DIR", "etcd://..." via target_etcd.c) but none of its trust: it counts the rows actually stored
 * (a duplicate written by hand shows as count 2) and reports the fence
 * records as stored, including the highest prepared epoch, so the harness
 * can tell a write that landed from a stale epoch.
 *
 * Everything here is read-only: SQLite connections are query_only (and
 * never create the database), no table, directory or file is created, and
 * a database or directory that does not exist simply holds no rows and no
 * fences.
 *
 * Callbacks return 0 to go on; any other value stops the walk and becomes
 * the function's return value.  Strings passed to callbacks are valid only
 * during the call.
 *
 * Errors: FC_USAGE (bad URL or table name), FC_FENCE_UNAVAILABLE (the
 * target cannot be read), FC_CORRUPT (a data file is malformed); err holds
 * the message.
 */
#ifndef FENCECERT_TARGET_H
#define FENCECERT_TARGET_H

#include <stddef.h>

#include "common/error.h"

/*
 * One (row_key, operation_id) group of the table and how many rows it has.
 * Calls come sorted by row_key, then operation_id (bytewise).  row_key and
 * operation_id are NULL when a row carries none (rows written by hand or
 * by a route that does not use the fence).
 */
typedef int (*target_row_fn)(void *ctx, const char *row_key,
			     const char *operation_id, long long count);

/* Walk the rows of `table` (NULL: FENCE_DEFAULT_TABLE). */
int target_observe_rows(const char *url, const char *table, target_row_fn fn,
			void *ctx, char *err, size_t errlen) FC_MUST_CHECK;

struct target_fence_record {
	const char *operation_id;
	long long applied_epoch;   /* 0: no fence record (not applied) */
	long long prepared_epoch;  /* highest epoch prepared; 0: none stored */
	const char *intent_digest; /* NULL when not applied */
	long long rows;            /* rows the fence record claims */
};

/*
 * Walk every operation the target's fence knows, sorted by operation id.
 * An operation applied more than once (a data file copied by hand) yields
 * one record per copy.
 */
typedef int (*target_fence_fn)(void *ctx,
			       const struct target_fence_record *r);

int target_list_fences(const char *url, target_fence_fn fn, void *ctx,
		       char *err, size_t errlen) FC_MUST_CHECK;

/*
 * A reader for repeated observations of one target (the harness looks
 * after every process of a schedule).  Each call reads what the target
 * holds at that moment, exactly as the one-shot functions above do (they
 * are a reader used once).  For a sqlite: target the reader keeps one
 * query_only connection and its prepared statements between calls instead
 * of opening the file for every look; it reopens when the path names
 * another file, and holds no read transaction between calls (an idle WAL
 * connection: writers go on, but the last writer to close leaves the -wal
 * file to the reader; see target_sqlite.c).  Other kinds read afresh on
 * every call.
 *
 * Ownership: target_reader_new() returns a heap object that
 * target_reader_free() releases (closing the connection); url is copied.
 */
typedef struct target_reader target_reader;

int target_reader_new(const char *url, target_reader **out, char *err,
		      size_t errlen) FC_MUST_CHECK;
void target_reader_free(target_reader *r); /* NULL is a no-op */
/* Close the connection now (the next call opens the file again): between
 * calls the target then sees no connection of ours at all. */
void target_reader_drop(target_reader *r);

int target_reader_rows(target_reader *r, const char *table, target_row_fn fn,
		       void *ctx, char *err, size_t errlen) FC_MUST_CHECK;
int target_reader_fences(target_reader *r, target_fence_fn fn, void *ctx,
			 char *err, size_t errlen) FC_MUST_CHECK;
/*
 * sqlite: only (else FC_USAGE): run a query yielding (row_key, count) and
 * call fn(ctx, row_key, NULL, count) for each row.  A query naming a table
 * that does not exist yet yields no rows; any other error preparing it, or
 * fewer than two columns, is FC_USAGE; a failure while it runs is
 * FC_FENCE_UNAVAILABLE.
 */
int target_reader_sql(target_reader *r, const char *sql, target_row_fn fn,
		      void *ctx, char *err, size_t errlen) FC_MUST_CHECK;

#endif
