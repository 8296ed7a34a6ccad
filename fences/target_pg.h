/*
 * target_pg.h -- the read-only observer (target.h) for "postgresql://"
 * targets.  target.c dispatches here by scheme; the semantics, callbacks,
 * sorting and error codes are target.h's.  Layout: fence_pg.c.
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
