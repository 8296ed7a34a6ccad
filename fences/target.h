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

#include "../journal/error.h"

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

#endif
