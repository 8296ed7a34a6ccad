/*
 * fence_pg.h -- what the PostgreSQL fences offer beyond the fence port:
 * the transactions pg-2pc may leave prepared, for operator recovery
 * (harness/recover*.c).  Layout and rules: fence_pg.c, fence_pg_probe.c.
 */
#ifndef FENCECERT_FENCE_PG_H
#define FENCECERT_FENCE_PG_H

#include "fences/fence.h"

/* 1 when f is a PostgreSQL fence (pg-txn or pg-2pc). */
int fence_pg_is(const fence *f);

/*
 * Make f's probe decide nothing: it neither finishes a transaction of the
 * operation left prepared nor ends an apply still in flight, and answers
 * UNKNOWN while either is pending (by default the probe does both, as the
 * route's reconcile wants: fence_pg_probe.c).  For `fencecert target
 * probe` and `fencecert recover`, where looking must not decide.
 */
void fence_pg_hands_off(fence *f);

/* How many transactions of op are left prepared (0 for pg-txn targets,
 * which never prepare).  FC_FENCE_UNAVAILABLE, FC_USAGE (not a pg fence). */
int fence_pg_prepared(fence *f, const char *op, int *n) FC_MUST_CHECK;

/* COMMIT PREPARED (commit = 1) or ROLLBACK PREPARED every transaction of
 * op left prepared; *n (if n) receives how many were resolved. */
int fence_pg_resolve_prepared(fence *f, const char *op, int commit, int *n)
	FC_MUST_CHECK;

#endif
