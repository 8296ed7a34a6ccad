/*
 * verdict.h -- what the checker decides, as names a report carries: how a
 * schedule ended (its outcome), a route's verdict, whether a verdict meets
 * the route's expectation, and the fold of a route's schedules into its
 * verdict.
 *
 * Owns: the one table of verdict names and the one table of outcome names
 * (verdict.c), and the verdict rule (verdict_tally_fold()).  The harness
 * decides verdicts with it when it runs a suite (harness/certify), and
 * reports/ decides them again from a report.json with the same code when
 * it merges shards, so a merged verdict cannot drift from a run's.
 *
 * Who includes it: check.h (the invariant checker, which classifies one
 * schedule's outcome), harness/certify, reports/ and cli/.  It depends on
 * nothing above common/: reports/ may include harness/check/ but not the
 * suite model, so nothing here names a model type (a suite's `expect:` is
 * passed by its word, see verdict_meets()).
 *
 * Invariants:
 *  1. Every name parses back to its value: verdict_parse(verdict_name(v))
 *     is v and outcome_parse(outcome_name(o)) is o; unknown names are
 *     FC_USAGE, never a default.
 *  2. Outcomes are ordered from best to worst, so the worst over a
 *     schedule's operations is a maximum.
 *  3. The fold depends only on the count of violations and of outcomes,
 *     not on the order schedules arrive in (shards merge to the same
 *     verdict as one run).
 *  4. Pure: no allocation, no I/O.
 */
#ifndef FENCECERT_VERDICT_H
#define FENCECERT_VERDICT_H

#include <stdbool.h>
#include <stddef.h>

#include "common/error.h"

enum verdict {
	VERDICT_CERTIFIED_AUTOMATIC,
	VERDICT_CERTIFIED_FAIL_CLOSED,
	VERDICT_REJECTED,
	VERDICT_UNVERIFIED,
	VERDICT_COUNT
};

/* "certified-automatic", "certified-fail-closed", "rejected",
 * "unverified"; "unknown" out of range. */
const char *verdict_name(enum verdict v);
/* 0, or FC_USAGE for another name. */
int verdict_parse(const char *name, enum verdict *out) FC_MUST_CHECK;

/*
 * Whether verdict v meets the expectation named `expected` (a suite's
 * `expect:` word, harness/model/scenario.h expectation_name()):
 * "certified" is met by either certified-* verdict, "certified-automatic",
 * "certified-fail-closed" and "rejected" by that verdict only.  Any other
 * word (unverified included: nobody expects it) is never met.
 */
bool verdict_meets(enum verdict v, const char *expected);

/* How a schedule ended, best first: a worse outcome has a larger value
 * (invariant 2); verdict_tally_fold() reads them. */
enum schedule_outcome {
	OUTCOME_CONVERGED,      /* every task succeeded, every entry COMPLETE */
	OUTCOME_STOP_EXCUSED,   /* stopped fail-closed where a fault made the
				   outcome unprovable (fail at a probe) or
				   the source changed under the operation */
	OUTCOME_EXHAUSTED,      /* every try of a task was faulted: not provable */
	OUTCOME_STOPPED,        /* stopped fail-closed (exit 100 or
				   COMMIT_UNKNOWN) with no fault to blame */
	OUTCOME_NOT_CONVERGED,  /* a task ended unfinished with no fault to blame */
	OUTCOME_UNVERIFIED,     /* the harness could not observe everything */
	OUTCOME_COUNT
};

const char *outcome_name(enum schedule_outcome o); /* "converged", ... */
/* 0, or FC_USAGE for an unknown name. */
int outcome_parse(const char *name, enum schedule_outcome *out) FC_MUST_CHECK;

/* The schedules of one route, counted for the fold.  Zero it to start. */
struct verdict_tally {
	size_t schedules;
	size_t violations;
	size_t by_outcome[OUTCOME_COUNT];
};

/* Count one schedule: its number of violations and its outcome (an
 * out-of-range outcome counts as a schedule but in no outcome). */
void verdict_tally_add(struct verdict_tally *t, size_t nviolations,
		       enum schedule_outcome o);

/*
 * any violation -> rejected; else any unverified schedule -> unverified;
 * else any stopped / not-converged schedule -> certified-fail-closed;
 * else certified-automatic.  No schedules at all is unverified.
 */
enum verdict verdict_tally_fold(const struct verdict_tally *t);

#endif
