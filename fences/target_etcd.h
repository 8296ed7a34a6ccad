/*
 * target_etcd.h -- the read-only observer (target.h) for "etcd://" targets.
 * target.c dispatches here by scheme; the semantics, callbacks, sorting and
 * error codes are target.h's.  Layout: etcd_layout.h.
 *
 * Included by fences/ only (target.c, target_etcd.c).
 */
#ifndef FENCECERT_TARGET_ETCD_H
#define FENCECERT_TARGET_ETCD_H

#include <stddef.h>

#include "common/error.h"
#include "fences/target.h"

/* table: a valid table name (NULL is not accepted here). */
int target_etcd_rows(const char *url, const char *table, target_row_fn fn,
		     void *ctx, char *err, size_t errlen) FC_MUST_CHECK;

int target_etcd_fences(const char *url, target_fence_fn fn, void *ctx,
		       char *err, size_t errlen) FC_MUST_CHECK;

#endif
