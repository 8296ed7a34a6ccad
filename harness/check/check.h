/*
 * check.h -- the invariant checker: the eleven invariants a schedule must
 * keep (SPEC section 9's eight, dead-journal-no-mutation of
 * docs/syscall-faults.md, and completes and stable-identity of "certificates
 * are earned"), proved over one schedule's record, how the schedule ended,
 * and which of its stopped tries challenged which window.
 *
 * check_schedule() proves the invariants of one schedule from its record
 * alone (record.h: journal histories, target observations, attempts and
 * their failpoints, surviving evidence, the workload's expected rows) and
 * classifies how the schedule ended (check_outcome.c).  Folding a route's
 * schedules into a verdict is the verdict module's (verdict.h, included
 * here).  Nothing here does I/O, so tests can feed crafted records.
 *
 * Owns: enum invariant and its names (check.c), struct violation, the
 * classification of a schedule's outcome (check_outcome.c) and of its
 * retried stops (check_window.c).  Who includes it: harness/certify
 * and cli/ (and the tests); not reports/, which reads a report's
 * violations and outcomes by name and needs only verdict.h.  Inside
 * harness/check calls point one way: check.c calls check_outcome.c and
 * check_window.c, check_outcome.c calls check_window.c, never the
 * reverse, and verdict.c calls none of them.
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
 * 10 completes         an operation that did not converge had a fault
 *                      that could hide a commit (check__interrupts()):
 *                      a stop (exit 100, COMMIT_UNKNOWN) or retries run
 *                      out with no such fault to blame, or a task that
 *                      succeeded while its journal entry is not COMPLETE,
 *                      is a route that does not do its work
 * 11 stable-identity   a retry opens no second journal entry for its
 *                      operation: an entry created after a retry began,
 *                      when the operation already had one, names the
 *                      operation anew (both ids in the detail)
 *
 * Operations are taken as the route names them: the journal entries
 * attributed to each (record.h, struct rec_entry), never an id the
 * harness computes.  A schedule in which the route wrote no journal entry
 * is judged on the target and the task outcome alone; invariants 3 (its
 * COMMIT_UNKNOWN half), 4, 6, 7, 8 (its journal half), 9 and 11 are then
 * not observable (CHECK_JOURNAL_INVARIANTS).
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
	INV_COMPLETES,     /* no fault excuses an operation left unfinished */
	INV_STABLE_IDENTITY, /* a retry opens no second entry */
	INV_COUNT = INV_STABLE_IDENTITY
};

#define INV_BIT(i) (1u << (unsigned)(i))

/* What a route that keeps no journal leaves unobservable. */
#define CHECK_JOURNAL_INVARIANTS                                             \
	(INV_BIT(INV_FAIL_CLOSED) | INV_BIT(INV_LEGAL_HISTORY) |             \
	 INV_BIT(INV_RECONCILE_FIRST) | INV_BIT(INV_FENCING) |               \
	 INV_BIT(INV_EVIDENCE) | INV_BIT(INV_DEAD_JOURNAL) |                 \
	 INV_BIT(INV_STABLE_IDENTITY))

/* "no-duplicate", ... for 1..INV_COUNT; NULL otherwise. */
const char *invariant_name(int inv);

struct violation {
	int invariant;
	int operation;                     /* 1-based; 0 when none owns it */
	char operation_id[JOURNAL_ID_MAX]; /* the route's id; "" when none */
	char detail[512];
};

/* Where a stopped try left its operation when the operation was retried
 * (check_window.c): its mutation already visible in the target (a retry
 * must not write it again: no-duplicate is challenged) or not yet (the
 * retry must write it: no-loss is challenged). */
enum stop_window {
	WINDOW_BEFORE_MUTATION,
	WINDOW_AFTER_MUTATION,
};

/* A try a fault stopped (check__interrupts()) that did not succeed, and
 * whose operation was then tried again. */
struct retried_stop {
	int attempt;             /* index into the record's attempts */
	int applied;             /* index into its applied faults: the fault */
	enum stop_window window;
};

struct check_result {
	struct violation *violations;
	size_t nviolations;
	enum schedule_outcome outcome;
	char why[256];          /* one line about the outcome */
	unsigned unobservable;  /* INV_BIT()s not observable in this schedule */
	struct retried_stop *stops; /* in attempt order */
	size_t nstops;
};

/* "after-mutation", "before-mutation". */
const char *stop_window_name(enum stop_window w);

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

/* How operation op ended (check_outcome.c).  *unexcused: it did not
 * complete its work and no fault excuses that (invariant 10, whose detail
 * is then why). */
enum schedule_outcome check__op_outcome(const struct rec_schedule *r,
					const struct rec_operation *op,
					bool *unexcused, char *why, size_t len);

/*
 * Whether the fault applied as ap interrupts a try and so may hide a
 * commit from the tries after it (check_window.c): kill, pause, fail at a
 * failpoint, a syscall fault (kill or errno), a proxy's cut_after_commit,
 * hold_commit or refuse, and stop_member.  lose_xcom, lose_pod,
 * change_source, start_member, delay and an operator's recover leave every
 * try's view of its commit intact.  The harness cannot know where a route
 * commits, so it judges by kind, never by failpoint name.
 */
bool check__interrupts(const struct rec_schedule *r,
		       const struct rec_applied *ap);

/* The retried stops of a schedule into res->stops (check_window.c).
 * 0 or FC_NOMEM. */
int check__retried_stops(const struct rec_schedule *r,
			 struct check_result *res) FC_MUST_CHECK;

#endif
