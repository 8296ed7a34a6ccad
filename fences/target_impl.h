/*
 * target_impl.h -- what the files of the target observer share: the
 * sqlite: observer as an object a target_reader can keep
 * (target_sqlite.c tells why), and the order in which target.c (file:)
 * and target_etcd.c report the rows they count (target_rows.c).  Same
 * errors and callback rules as target.h.
 *
 * Included by fences/ only: target.c, target_rows.c and the per-scheme
 * observers.
 */
#ifndef FENCECERT_TARGET_IMPL_H
#define FENCECERT_TARGET_IMPL_H

#include "fences/target.h"

struct target_sqlite;

/* A reader of the SQLite file at path; opens nothing yet. */
int target_sqlite__new(const char *path, struct target_sqlite **out)
	FC_MUST_CHECK;
void target_sqlite__free(struct target_sqlite *t); /* NULL is a no-op */
void target_sqlite__drop(struct target_sqlite *t); /* close the connection */

int target_sqlite__rows(struct target_sqlite *t, const char *table,
			target_row_fn fn, void *ctx, char *err, size_t errlen)
	FC_MUST_CHECK;
int target_sqlite__fences(struct target_sqlite *t, target_fence_fn fn,
			  void *ctx, char *err, size_t errlen) FC_MUST_CHECK;
int target_sqlite__sql(struct target_sqlite *t, const char *sql,
		       target_row_fn fn, void *ctx, char *err, size_t errlen)
	FC_MUST_CHECK;

/*
 * One stored row as an observer that counts rows collects it: its key and
 * the operation that wrote it, each NULL where the row carries none.  Who
 * owns the strings is the collector's business.
 */
struct target_pair {
	char *key;
	char *op;
};

/* Sort v into target.h's order and call fn once per (row_key,
 * operation_id) group with its count: 0, or fn's first non-zero answer. */
int target__report_rows(struct target_pair *v, size_t n, target_row_fn fn,
			void *ctx);

#endif
