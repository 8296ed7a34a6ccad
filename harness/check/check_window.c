/*
 * check_window.c -- which faults stop a try, and which window of its
 * operation each stopped and retried try challenged (check.h).
 *
 * A certificate is earned only where a fault reached: a route whose
 * retries never met a target that already held its mutation has never had
 * its no-duplicate tested, and one whose retries never met a target that
 * lacked it has never had its no-loss tested (verdict.h folds both counts).
 * The window is read from the target itself, as the observer saw it when
 * the retry began:
 *
 *   try k stopped by a fault ------ observation ------ try k+1 starts
 *                                  (after try k ended; for a paused try,
 *                                   the last one before k+1 started)
 *      any of the operation's rows there  -> after-mutation
 *      none of them                       -> before-mutation
 *
 * Pure: reads the record, allocates only the stops it returns; calls
 * nothing else of harness/check.
 */
#include <stdlib.h>
#include <string.h>

#include "harness/check/check.h"

const char *stop_window_name(enum stop_window w)
{
	return w == WINDOW_AFTER_MUTATION ? "after-mutation" : "before-mutation";
}

bool check__interrupts(const struct rec_schedule *r,
		       const struct rec_applied *ap)
{
	if (ap->fault < 0 || (size_t)ap->fault >= r->nfaults)
		return false;
	switch (r->faults[ap->fault].action) {
	case FAULT_KILL:
	case FAULT_PAUSE:
	case FAULT_FAIL:
	case FAULT_POWER_LOSS:
	case FAULT_SYSCALL:
	case FAULT_CUT_AFTER_COMMIT:
	case FAULT_HOLD_COMMIT:
	case FAULT_REFUSE:
	case FAULT_STOP_MEMBER:
		return true;
	default:
		return false;
	}
}

/* The applied fault that stopped attempt idx, or -1: an interrupting one
 * applied to it, the try then given up (a zombie) or ended without
 * success. */
static int stopping_fault(const struct rec_schedule *r, size_t idx)
{
	const struct rec_attempt *a = &r->attempts[idx];

	if (!a->zombie && !a->spawn_failed && !a->signal && a->exit_code == 0)
		return -1; /* it succeeded: nothing was stopped */
	for (size_t i = 0; i < r->napplied; i++)
		if (r->applied[i].attempt == (int)idx &&
		    check__interrupts(r, &r->applied[i]))
			return (int)i;
	return -1;
}

/* The first later try of attempt idx's operation, or -1. */
static int retry_of(const struct rec_schedule *r, size_t idx)
{
	const struct rec_attempt *a = &r->attempts[idx];

	for (size_t i = idx + 1; i < r->nattempts; i++)
		if (r->attempts[i].operation == a->operation &&
		    r->attempts[i].try_number > a->try_number)
			return (int)i;
	return -1;
}

/* The observation that says what the retry met, or -1. */
static int window_obs(const struct rec_schedule *r, size_t idx, int next)
{
	const struct rec_attempt *a = &r->attempts[idx];
	int k = -1;

	if (!a->zombie)
		return a->obs_after >= 0 && (size_t)a->obs_after < r->nobs &&
		       r->obs[a->obs_after].status == 0 ? a->obs_after : -1;
	/* paused: what was visible when the next try started */
	for (size_t o = 0; o < r->nobs; o++)
		if (r->obs[o].status == 0 &&
		    r->obs[o].at_ms <= r->attempts[next].start_ms)
			k = (int)o;
	return k;
}

static bool mutation_visible(const struct rec_schedule *r, int op, int k)
{
	struct obs_rowsum s;

	if (op < 1 || (size_t)op > r->nops ||
	    obs_store_op_rows(r->rows, k, r->ops[op - 1].index, &s))
		return false;
	return s.present > 0;
}

int check__retried_stops(const struct rec_schedule *r,
			 struct check_result *res)
{
	for (size_t i = 0; i < r->nattempts; i++) {
		struct retried_stop *s;
		int ap = stopping_fault(r, i), next, k;

		if (ap < 0 || (next = retry_of(r, i)) < 0 ||
		    (k = window_obs(r, i, next)) < 0)
			continue;
		s = RECORD_PUSH(res->stops, res->nstops);
		if (!s)
			return FC_NOMEM;
		s->attempt = (int)i;
		s->applied = ap;
		s->window = mutation_visible(r, r->attempts[i].operation, k) ?
			    WINDOW_AFTER_MUTATION : WINDOW_BEFORE_MUTATION;
	}
	return 0;
}
