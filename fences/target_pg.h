/*
 * target_pg.h -- the read-only observer (target.h) for "postgresql://"
 * targets.  Owner: target_pg.c.  target.c dispatches here by scheme, and
 * harness/run/observe.c asks target_pg_is_url(); everyone else goes
 * through target.h, whose semantics, callbacks, sorting and error codes
 * these follow.  Invariants (nothing written, bytewise order, rows
 * counted): target_pg.c.  Layout: fence_pg.c.
 *
 * Included by fences/target.c and the harness's observer
 * (harness/run/observe.c, which asks whether a URL is a PostgreSQL
 * target).
 */
#ifndef FENCECERT_TARGET_PG_H
#define FENCECERT_TARGET_PG_H

#include <stddef.h>

#include "common/error.h"
#include "fences/target.h"

/* "postgresql:" or "postgres:" */
int target_pg_is_url(const char *url);

/* table: a valid table name (NULL is not accepted here). */
int target_pg_rows(const char *url, const char *table, target_row_fn fn,
		   void *ctx, char *err, size_t errlen) FC_MUST_CHECK;

int target_pg_fences(const char *url, target_fence_fn fn, void *ctx,
		     char *err, size_t errlen) FC_MUST_CHECK;

#endif
