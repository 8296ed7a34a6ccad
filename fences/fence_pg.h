/*
 * fence_pg.h -- the PostgreSQL fences' own names, for the callers that
 * predate the port's fence_hands_off(): cli/cmd_target.c.  Everything a
 * PostgreSQL fence offers -- including the transactions pg-2pc may leave
 * prepared (fence_in_doubt(), fence_resolve_in_doubt()) -- is reached
 * through the fence port (fence.h); new code includes that instead.
 * Layout and rules: fence_pg.c, fence_pg_probe.c.
 */
#ifndef FENCECERT_FENCE_PG_H
#define FENCECERT_FENCE_PG_H

#include "fences/fence.h"

/* 1 when f is a PostgreSQL fence (pg-txn or pg-2pc). */
int fence_pg_is(const fence *f);

/* fence_hands_off(f): kept for cli/cmd_target.c. */
void fence_pg_hands_off(fence *f);

#endif
