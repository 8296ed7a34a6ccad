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
 *  3. The fold depends only on counts -- of violations, of outcomes and
 *     of schedules that challenged each window -- not on the order
 *     schedules arrive in (shards merge to the same verdict as one run).
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
	OUTCOME_CONVERGED,      /* every task succeeded, every entry COMPLETE
				   (without a journal: every row once) */
	OUTCOME_STOP_EXCUSED,   /* stopped fail-closed where a fault made the
				   outcome unprovable (fail at a probe) or
				   the source changed under the operation */
	OUTCOME_EXHAUSTED,      /* every try of a task was faulted: not provable */
	OUTCOME_STOPPED,        /* stopped fail-closed (exit 100 or
				   COMMIT_UNKNOWN) after a fault that may have
				   hidden a commit: an operator must decide */
	OUTCOME_NOT_CONVERGED,  /* a task ended unfinished with no fault to
				   excuse it (always with a violation) */
	OUTCOME_UNVERIFIED,     /* the harness could not observe everything */
	OUTCOME_COUNT
};

const char *outcome_name(enum schedule_outcome o); /* "converged", ... */
/* 0, or FC_USAGE for an unknown name. */
int outcome_parse(const char *name, enum schedule_outcome *out) FC_MUST_CHECK;

/* The two windows a stopped and retried try can leave its operation in
 * (harness/check/check.h, struct retried_stop): its mutation not yet
 * visible in the target, or already visible. */
enum verdict_window {
	VERDICT_WINDOW_BEFORE, /* no-loss challenged */
	VERDICT_WINDOW_AFTER,  /* no-duplicate challenged */
};

/* The schedules of one route, counted for the fold.  Zero it to start. */
struct verdict_tally {
	size_t schedules;
	size_t violations;
	size_t by_outcome[OUTCOME_COUNT];
	/* Schedules that said which windows their retried stops challenged
	 * (every schedule of this harness; none of a report written before
	 * windows were recorded), and how many of them stopped a try before
	 * resp. after its operation's mutation and retried it. */
	size_t windows_known;
	size_t stopped[2];   /* indexed by enum verdict_window */
};

/* Count one schedule: its number of violations and its outcome (an
 * out-of-range outcome counts as a schedule but in no outcome). */
void verdict_tally_add(struct verdict_tally *t, size_t nviolations,
		       enum schedule_outcome o);

/* Count the windows one schedule challenged: whether some try of it was
 * stopped by a fault before (resp. after) its operation's mutation was
 * visible and the operation retried. */
void verdict_tally_windows(struct verdict_tally *t, bool before, bool after);

/*
 * any violation -> rejected; else any unverified schedule -> unverified;
 * else, when windows are known, a window no schedule challenged ->
 * unverified (a certificate covers only what a fault reached); else any
 * stopped-fail-closed / not-converged schedule -> certified-fail-closed;
 * else certified-automatic.  No schedules at all is unverified.
 */
enum verdict verdict_tally_fold(const struct verdict_tally *t);

/* Why window w makes the route unverified ("no schedule stopped a try
 * after its target mutation: no-duplicate was never challenged"), or NULL
 * when some schedule challenged it or windows are not known.  The same
 * words in a run's report and in a merge of its shards. */
const char *verdict_window_gap(const struct verdict_tally *t,
			       enum verdict_window w);

#endif
