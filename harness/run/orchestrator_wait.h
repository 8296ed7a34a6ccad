/*
 * orchestrator_wait.h -- which failpoints of an attempt wait for an answer
 * (FENCECERT_FAILPOINT_WAIT, docs/failpoints.md): read from the schedule's
 * faults alone.
 *
 * Owns: the wait set of a try and the faults' half of "does anything act
 * here" (the zombies' half is the loop's: it owns the zombies).
 *
 * Who includes it: orchestrator_wait.c, orchestrator_setup.c (the env of a
 * try), orchestrator.c (checking a PASS) and tests/test_orchestrator.c.
 * It has no state and calls nothing of the orchestrator but
 * orchestrator_sched.h's fault predicates.
 *
 * Invariants:
 *  1. The wait set of try k of op names every failpoint at which the
 *     orchestrator can act in that try: each fault given a failpoint for
 *     (op, k) -- kill, pause, fail, member and proxy actions alike -- and
 *     the resume_at of each fault of try k-1 that resumes "at the next
 *     failpoint".  It may name more; it never names fewer.
 *  2. orch__fault_acts_at() and the loop's zombie check are the
 *     orchestrator's own view of "something happens here"; a PASS line
 *     where either is true means the wait set (or the route) is wrong, and
 *     the schedule is recorded as an error, never as passed.
 */
#ifndef FENCECERT_ORCHESTRATOR_WAIT_H
#define FENCECERT_ORCHESTRATOR_WAIT_H

#include <stdbool.h>

#include "harness/run/orchestrator.h"

/* The comma-separated names try k of op must wait at (heap; NULL: out of
 * memory). */
char *orch__wait_set(const struct orch_params *p, int op, int k);

/* Does a fault of the schedule act at the nth hit of fp in try k of op? */
bool orch__fault_acts_at(const struct orch_params *p, int op, int k,
			 const char *fp, int nth);

#endif
