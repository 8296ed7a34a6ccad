/*
 * check_outcome.c -- how one schedule ended: its outcome (verdict.h) and
 * one line about why.  check.c's check_schedule() calls it after proving
 * the invariants; nothing here calls check.c, and the fold of outcomes
 * into a route's verdict is verdict.c's.
 *
 * Outcomes are per operation first, then the worst over the schedule:
 * converged < stopped-unprovable < retries-exhausted-by-faults <
 * stopped-fail-closed < not-converged < unverified.  Only faults excuse a
 * schedule from converging: a `fail` at a probe failpoint (the outcome of
 * the commit became unprovable), a changed source (the route must stop),
 * or faults in every try of a task.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "journal/states.h"
#include "harness/check/check.h"
#include "common/put.h"

static bool is_probe_failpoint(const char *fp)
{
	size_t n = strlen(fp);

	return fault_failpoint_is_target_call(fp) && n >= 5 &&
	       strcmp(fp + n - 5, "probe") == 0;
}

static bool try_faulted(const struct rec_schedule *r, int op, int try_number)
{
	for (size_t i = 0; i < r->napplied; i++) {
		int a = r->applied[i].attempt;
		if (a >= 0 && (size_t)a < r->nattempts &&
		    r->attempts[a].operation == op &&
		    r->attempts[a].try_number == try_number)
			return true;
	}
	return false;
}

static bool probe_failed(const struct rec_schedule *r, int op)
{
	for (size_t i = 0; i < r->napplied; i++) {
		const struct rec_applied *ap = &r->applied[i];
		const struct fault *f = &r->faults[ap->fault];
		if (ap->operation == op && f->action == FAULT_FAIL &&
		    is_probe_failpoint(f->failpoint))
			return true;
	}
	return false;
}

static enum schedule_outcome op_outcome(const struct rec_schedule *r,
					const struct rec_operation *op,
					char *why, size_t len)
{
	bool stopped = op->task == TASK_FAILED ||
		       (op->journal_status == 0 &&
			op->entry.state == FC_COMMIT_UNKNOWN);

	if (op->journal_status && op->journal_status != FC_NOT_FOUND) {
		put(why, len, "op %d: journal could not be read", op->index);
		return OUTCOME_UNVERIFIED;
	}
	if (op->task == TASK_NOT_RUN) {
		put(why, len, "op %d was never run", op->index);
		return OUTCOME_UNVERIFIED;
	}
	if (op->task == TASK_SUCCESS && op->journal_status == 0 &&
	    op->entry.state == FC_COMPLETE)
		return OUTCOME_CONVERGED;
	if (stopped) {
		if (probe_failed(r, op->index) || op->source_changed_after) {
			put(why, len, "op %d stopped where the outcome "
				 "was made unprovable", op->index);
			return OUTCOME_STOP_EXCUSED;
		}
		put(why, len, "op %d stopped fail-closed (%s)", op->index,
			 op->task == TASK_FAILED ? "exit 100" : "COMMIT_UNKNOWN");
		return OUTCOME_STOPPED;
	}
	if (op->task == TASK_RETRIES_EXHAUSTED) {
		bool all = true;
		for (size_t a = 0; a < r->nattempts; a++) {
			const struct rec_attempt *at = &r->attempts[a];
			if (at->operation == op->index && at->counted &&
			    !try_faulted(r, op->index, at->try_number))
				all = false;
		}
		if (all) {
			put(why, len, "op %d: faults used every try",
				 op->index);
			return OUTCOME_EXHAUSTED;
		}
		put(why, len, "op %d: retries exhausted", op->index);
		return OUTCOME_NOT_CONVERGED;
	}
	put(why, len, "op %d: task %s, journal %s", op->index,
		 op->task == TASK_SUCCESS ? "succeeded" : "failed",
		 op->journal_status == 0 ? state_name(op->entry.state)
					 : "has no entry");
	return OUTCOME_NOT_CONVERGED;
}

enum schedule_outcome check__outcome(const struct rec_schedule *r,
				     bool strict, char *why, size_t len)
{
	enum schedule_outcome worst = OUTCOME_CONVERGED;

	if (r->status) {
		put(why, len, "%s", r->error[0] ? r->error : "harness error");
		return OUTCOME_UNVERIFIED;
	}
	for (size_t k = 0; k < r->nobs; k++) {
		if (r->obs[k].status != 0) {
			put(why, len, "target observation %zu failed", k + 1);
			return OUTCOME_UNVERIFIED;
		}
	}
	if (!r->nobs) {
		put(why, len, "the target was never observed");
		return OUTCOME_UNVERIFIED;
	}
	for (size_t i = 0; strict && i < r->nfaults; i++) {
		char s[SCHEDULE_STR_MAX];
		if (r->fired[i])
			continue;
		if (schedule_format(&r->faults[i], 1, s, sizeof(s)))
			put(s, sizeof(s), "#%zu", i + 1);
		put(why, len, "fault '%s' never fired", s);
		return OUTCOME_UNVERIFIED;
	}
	why[0] = '\0';
	for (size_t i = 0; i < r->nops; i++) {
		char w[200];
		enum schedule_outcome o = op_outcome(r, &r->ops[i], w, sizeof(w));
		if (o > worst) {
			worst = o;
			put(why, len, "%s", w);
		}
	}
	if (worst == OUTCOME_CONVERGED)
		put(why, len, "every operation COMPLETE");
	return worst;
}
