/*
 * check_outcome.c -- how one schedule ended: its outcome (verdict.h) and
 * one line about why, and which operations did not do their work with no
 * fault to excuse them (invariant 10, completes).  check.c's
 * check_schedule() calls it after proving the invariants; nothing here
 * calls check.c (only check_window.c's check__interrupts()), and the fold
 * of outcomes into a route's verdict is verdict.c's.
 *
 * Outcomes are per operation first, then the worst over the schedule:
 * converged < stopped-unprovable < retries-exhausted-by-faults <
 * stopped-fail-closed < not-converged < unverified.
 *
 * Only faults excuse an operation from converging, and only some:
 *   - a stop (exit 100 or COMMIT_UNKNOWN) after a `fail` at a probe
 *     failpoint, or after the source changed: stopped-unprovable;
 *   - a stop after a fault that may have hidden a commit (one that
 *     interrupts a try, check__interrupts()): stopped-fail-closed, the one
 *     outcome that makes a route certified-fail-closed;
 *   - retries run out while every try was disturbed by a fault:
 *     retries-exhausted-by-faults.
 * Everything else that does not converge is not-converged and breaks
 * invariant 10 (or no-loss / no-duplicate, for a route without a journal
 * whose rows are not there exactly once): a stop with no such fault, a try
 * that failed undisturbed when retries ran out, a task that succeeded
 * while a journal entry of its operation is not COMPLETE.
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

static bool for_op(const struct rec_applied *ap, int op)
{
	return ap->operation == 0 || ap->operation == op;
}

/* Was attempt idx disturbed by a fault: one applied to it, one applied to
 * another attempt of its operation while it ran (a zombie resumed beside
 * it), or a member down while it ran (stopped before it and not started
 * again, or stopped during it)?  Faults between tries (lost XCom, pod)
 * disturb no try. */
static bool try_disturbed(const struct rec_schedule *r, size_t idx)
{
	const struct rec_attempt *a = &r->attempts[idx];
	int down = 0;

	for (size_t i = 0; i < r->napplied; i++) {
		const struct rec_applied *ap = &r->applied[i];
		enum fault_action act;
		if (ap->attempt == (int)idx)
			return true;
		if (!for_op(ap, a->operation) || ap->fault < 0 ||
		    (size_t)ap->fault >= r->nfaults)
			continue;
		act = r->faults[ap->fault].action;
		if (ap->at_ms >= a->start_ms && ap->at_ms <= a->end_ms &&
		    (ap->attempt >= 0 || act == FAULT_STOP_MEMBER))
			return true;
		if (ap->at_ms < a->start_ms && act == FAULT_STOP_MEMBER)
			down++;
		if (ap->at_ms < a->start_ms && act == FAULT_START_MEMBER && down)
			down--;
	}
	return down > 0;
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

/* The first fault applied to op that may have hidden a commit, or NULL. */
static const struct rec_applied *hiding_fault(const struct rec_schedule *r,
					      int op)
{
	for (size_t i = 0; i < r->napplied; i++)
		if (for_op(&r->applied[i], op) &&
		    check__interrupts(r, &r->applied[i]))
			return &r->applied[i];
	return NULL;
}

static const struct rec_observation *final_obs(const struct rec_schedule *r)
{
	for (size_t k = r->nobs; k-- > 0;)
		if (r->obs[k].status == 0)
			return &r->obs[k];
	return NULL;
}

/* The entry of op that is not COMPLETE, or NULL when all are. */
static const struct rec_entry *unfinished_entry(const struct rec_operation *op)
{
	for (size_t k = 0; k < op->nentries; k++)
		if (op->entries[k].entry.state != FC_COMPLETE)
			return &op->entries[k];
	return NULL;
}

/* Without a journal: every row of op exactly once at the end. */
static bool rows_exactly_once(const struct rec_schedule *r,
			      const struct rec_operation *op)
{
	const struct rec_observation *o = final_obs(r);
	struct obs_rowsum s;

	if (!o || obs_store_op_rows(r->rows, (int)(o - r->obs), op->index,
				    &s))
		return false;
	return s.once == s.expected;
}

static bool op_stopped(const struct rec_operation *op)
{
	if (op->task == TASK_FAILED)
		return true;
	for (size_t k = 0; k < op->nentries; k++)
		if (op->entries[k].entry.state == FC_COMMIT_UNKNOWN)
			return true;
	return false;
}

static enum schedule_outcome stop_outcome(const struct rec_schedule *r,
					  const struct rec_operation *op,
					  bool *unexcused, char *why,
					  size_t len)
{
	const char *how = op->task == TASK_FAILED ? "exit 100" : "COMMIT_UNKNOWN";
	const struct rec_applied *ap;

	if (probe_failed(r, op->index) || op->source_changed_after) {
		put(why, len, "op %d stopped where the outcome was made "
			 "unprovable", op->index);
		return OUTCOME_STOP_EXCUSED;
	}
	if ((ap = hiding_fault(r, op->index))) {
		put(why, len, "op %d stopped fail-closed (%s) after %s",
			 op->index, how, ap->what);
		return OUTCOME_STOPPED;
	}
	*unexcused = true;
	put(why, len, "op %d stopped (%s) although no fault could have hidden "
		 "a commit from it", op->index, how);
	return OUTCOME_NOT_CONVERGED;
}

static enum schedule_outcome exhausted_outcome(const struct rec_schedule *r,
					       const struct rec_operation *op,
					       bool *unexcused, char *why,
					       size_t len)
{
	for (size_t a = 0; a < r->nattempts; a++) {
		const struct rec_attempt *at = &r->attempts[a];
		char end[48];
		if (at->operation != op->index || !at->counted ||
		    try_disturbed(r, a))
			continue;
		record_attempt_end(at, end, sizeof(end));
		*unexcused = true;
		put(why, len, "op %d: retries ran out and try %d failed (%s) "
			 "with no fault to blame", op->index, at->try_number,
			 end);
		return OUTCOME_NOT_CONVERGED;
	}
	put(why, len, "op %d: faults used every try", op->index);
	return OUTCOME_EXHAUSTED;
}

enum schedule_outcome check__op_outcome(const struct rec_schedule *r,
					const struct rec_operation *op,
					bool *unexcused, char *why, size_t len)
{
	const struct rec_entry *left = unfinished_entry(op);

	*unexcused = false;
	if (op->journal_status) {
		put(why, len, "op %d: journal could not be read", op->index);
		return OUTCOME_UNVERIFIED;
	}
	if (op->task == TASK_NOT_RUN) {
		put(why, len, "op %d was never run", op->index);
		return OUTCOME_UNVERIFIED;
	}
	if (op->task == TASK_SUCCESS && !left &&
	    (op->nentries || rows_exactly_once(r, op)))
		return OUTCOME_CONVERGED;
	if (op_stopped(op))
		return stop_outcome(r, op, unexcused, why, len);
	if (op->task == TASK_RETRIES_EXHAUSTED)
		return exhausted_outcome(r, op, unexcused, why, len);
	if (left) {
		*unexcused = true;
		put(why, len, "op %d: task succeeded, journal entry '%s' is %s",
			 op->index, left->operation_id,
			 state_name(left->entry.state));
	} else {
		/* no journal: no-loss or no-duplicate names the rows */
		put(why, len, "op %d: task succeeded, its rows are not in the "
			 "target exactly once", op->index);
	}
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
	for (size_t i = 0; i < r->nattempts; i++) {
		const struct rec_attempt *a = &r->attempts[i];
		if (record_hits_total(a) > a->nhits) {
			/* the checks that read failpoints saw only the kept
			 * ones (record.h, RECORD_HITS_KEPT) */
			put(why, len, "op %d try %d reported %zu failpoints, "
			    "more than the %d the record keeps", a->operation,
			    a->try_number, record_hits_total(a),
			    RECORD_HITS_KEPT);
			return OUTCOME_UNVERIFIED;
		}
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
		bool unexcused;
		enum schedule_outcome o = check__op_outcome(r, &r->ops[i],
							    &unexcused, w,
							    sizeof(w));
		if (o > worst) {
			worst = o;
			put(why, len, "%s", w);
		}
	}
	if (worst == OUTCOME_CONVERGED)
		put(why, len, "every operation done (COMPLETE, or its rows "
			 "once in the target)");
	return worst;
}
