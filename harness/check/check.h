/*
 * check.h -- the invariant checker: the nine invariants a schedule must
 * keep (SPEC section 9's eight, and dead-journal-no-mutation of
 * docs/syscall-faults.md), proved over one schedule's record, and how the
 * schedule ended.
 *
 * check_schedule() proves the invariants of one schedule from its record
 * alone (record.h: journal histories, target observations, attempts and
 * their failpoints, surviving evidence, the workload's expected rows) and
 * classifies how the schedule ended (check_outcome.c).  Folding a route's
 * schedules into a verdict is the verdict module's (verdict.h, included
 * here).  Nothing here does I/O, so tests can feed crafted records.
 *
 * Owns: enum invariant and its names (check.c), struct violation, the
 * classification of a schedule's outcome.  Who includes it: harness/certify
 * and cli/ (and the tests); not reports/, which reads a report's
 * violations and outcomes by name and needs only verdict.h.  Inside
 * harness/check calls point one way: check.c calls check_outcome.c, never
 * the reverse, and verdict.c calls neither.
 *
 * The invariants and how each is observed:
 *  1 no-duplicate      any row_key counted more than once in any observation;
 *                      an operator's mark-failed-pre-commit over rows the
 *                      target held (the recover fault, record.h `moved`)
 *  2 no-loss           an operation the journal calls TARGET_COMMITTED,
 *                      COMMITTED_INCOMPLETE or COMPLETE, or whose task
 *                      succeeded, has every row exactly once at the end;
 *                      an operator's mark-committed over missing rows
 *  3 fail-closed       after an attempt exited 100 or the journal entered
 *                      COMMIT_UNKNOWN, no later observation (until an
 *                      operator's recover resolved it) shows the
 *                      operation's rows changed, and no attempt reported
 *                      success while the journal still said COMMIT_UNKNOWN
 *  4 legal-history     versions 1, 2, 3, ...; each transition continues the
 *                      previous one and is legal per state_transition_legal()
 *  5 intent-conflict   after change_source, the operation's later attempts
 *                      exit 100, hit no target-call failpoint, change no rows
 *  6 reconcile-first   an attempt that started with a journal entry present
 *                      makes before_reconcile_probe its first target call
 *                      (not observable for routes that report no failpoints)
 *  7 fencing           a fence APPLIED with epoch e after an earlier
 *                      observation showed epoch > e prepared and no fence
 *                      (not observable without fence records)
 *  8 evidence-agrees   a surviving return.json saying COMPLETE names the
 *                      operation, its row count, and a journal entry in
 *                      COMPLETE / TARGET_COMMITTED / COMMITTED_INCOMPLETE
 *  9 dead-journal-no-mutation
 *                      a try whose journal failed a write (an injected
 *                      errno) and that ran alone changes no target row
 *                      unless the journal took its COMMITTING during it
 *
 * Ownership: check_result_release() frees what check_schedule() put in a
 * caller-allocated result.
 */
#ifndef FENCECERT_CHECK_H
#define FENCECERT_CHECK_H

#include <stdbool.h>
#include <stddef.h>

#include "common/error.h"
#include "harness/model/record.h"
#include "harness/model/scenario.h"
#include "harness/check/verdict.h"

enum invariant {
	INV_NO_DUPLICATE = 1,
	INV_NO_LOSS,
	INV_FAIL_CLOSED,
	INV_LEGAL_HISTORY,
	INV_INTENT_CONFLICT,
	INV_RECONCILE_FIRST,
	INV_FENCING,
	INV_EVIDENCE,
	INV_DEAD_JOURNAL,  /* a try whose journal failed a write (an injected
			    * errno) mutates the target only if the journal
			    * took its COMMITTING first */
	INV_COUNT = INV_DEAD_JOURNAL
};

#define INV_BIT(i) (1u << (unsigned)(i))

/* "no-duplicate", ... for 1..INV_COUNT; NULL otherwise. */
const char *invariant_name(int inv);

struct violation {
	int invariant;
	char operation_id[JOURNAL_ID_MAX]; /* "" when no operation owns it */
	char detail[512];
};

struct check_result {
	struct violation *violations;
	size_t nviolations;
	enum schedule_outcome outcome;
	char why[256];          /* one line about the outcome */
	unsigned unobservable;  /* INV_BIT()s not observable in this schedule */
};

/*
 * Check one schedule.  `strict_faults`: a requested fault that never fired
 * makes the schedule unverified (fixed and explored schedules); random
 * schedules pass false because their later faults are conditional.
 * Returns 0 or FC_NOMEM (then *res holds nothing).
 */
int check_schedule(const struct rec_schedule *r, bool strict_faults,
		   struct check_result *res) FC_MUST_CHECK;
void check_result_release(struct check_result *res);

/* The outcome of one schedule, with one line about it in why
 * (check_outcome.c; check_schedule() calls it). */
enum schedule_outcome check__outcome(const struct rec_schedule *r,
				     bool strict, char *why, size_t len);

#endif
