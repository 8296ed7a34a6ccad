/*
 * check_outcome.c -- how a schedule ended (its outcome) and how a route's
 * schedules fold into a verdict (check.h).  check.c proves the invariants.
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

static const char *const inv_names[INV_COUNT + 1] = {
	[INV_NO_DUPLICATE] = "no-duplicate",
	[INV_NO_LOSS] = "no-loss",
	[INV_FAIL_CLOSED] = "fail-closed",
	[INV_LEGAL_HISTORY] = "legal-history",
	[INV_INTENT_CONFLICT] = "intent-conflict-stops-early",
	[INV_RECONCILE_FIRST] = "reconcile-before-io",
	[INV_FENCING] = "fencing",
	[INV_EVIDENCE] = "evidence-agrees",
	[INV_DEAD_JOURNAL] = "dead-journal-no-mutation",
};

static const char *const outcome_names[OUTCOME_COUNT] = {
	[OUTCOME_CONVERGED] = "converged",
	[OUTCOME_STOP_EXCUSED] = "stopped-unprovable",
	[OUTCOME_EXHAUSTED] = "retries-exhausted-by-faults",
	[OUTCOME_STOPPED] = "stopped-fail-closed",
	[OUTCOME_NOT_CONVERGED] = "not-converged",
	[OUTCOME_UNVERIFIED] = "unverified",
};

const char *invariant_name(int inv)
{
	if (inv < 1 || inv > INV_COUNT)
		return NULL;
	return inv_names[inv];
}

const char *outcome_name(enum schedule_outcome o)
{
	if ((unsigned)o >= OUTCOME_COUNT)
		return "unknown";
	return outcome_names[o];
}

int outcome_parse(const char *name, enum schedule_outcome *out)
{
	for (int o = 0; o < OUTCOME_COUNT; o++) {
		if (strcmp(outcome_names[o], name) == 0) {
			*out = (enum schedule_outcome)o;
			return 0;
		}
	}
	return FC_USAGE;
}

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

void check_tally_add(struct check_tally *t, size_t nviolations,
		     enum schedule_outcome o)
{
	t->schedules++;
	t->violations += nviolations;
	if ((unsigned)o < OUTCOME_COUNT)
		t->by_outcome[o]++;
}

enum verdict check_tally_verdict(const struct check_tally *t)
{
	if (t->violations)
		return VERDICT_REJECTED;
	if (!t->schedules || t->by_outcome[OUTCOME_UNVERIFIED])
		return VERDICT_UNVERIFIED;
	if (t->by_outcome[OUTCOME_STOPPED] || t->by_outcome[OUTCOME_NOT_CONVERGED])
		return VERDICT_CERTIFIED_FAIL_CLOSED;
	return VERDICT_CERTIFIED_AUTOMATIC;
}
