/*
 * test_check.c -- the invariants of SPEC section 9, table-driven.
 *
 * Every case starts from one converged schedule record (one operation,
 * three rows, a legal journal history, one attempt, evidence) and changes
 * one thing.  The table says which invariant must fire (0: none) and what
 * the schedule's outcome must be.  Add a row to add a case.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "harness/check/check.h"
#include "harness/model/record.h"

#define OP1 "sha256:1111111111111111111111111111111111111111111111111111111111111111"
#define T0 1000000 /* wall clock ms of the schedule start */

static char *xstrdup(const char *s)
{
	char *d = strdup(s);

	assert_non_null(d);
	return d;
}

static struct rec_attempt *add_attempt(struct rec_schedule *r, int op, int k,
				       long long start, long long end, int code)
{
	struct rec_attempt *a = RECORD_PUSH(r->attempts, r->nattempts);

	assert_non_null(a);
	a->operation = op;
	a->try_number = k;
	a->pid = 100 + (int)r->nattempts;
	a->start_ms = start;
	a->end_ms = end;
	a->start_wall_ms = T0 + start;
	a->end_wall_ms = T0 + end;
	a->exit_code = code;
	a->counted = true;
	a->obs_after = -1;
	return a;
}

static void add_hit(struct rec_attempt *a, const char *name)
{
	struct rec_hit *h = RECORD_PUSH(a->hits, a->nhits);

	assert_non_null(h);
	snprintf(h->name, sizeof(h->name), "%s", name);
	h->at_ms = a->start_ms + (long long)a->nhits;
	h->answer = 'c';
}

/* An observation after attempt idx with the three rows at these counts. */
static struct rec_observation *add_obs(struct rec_schedule *r, int idx,
				       long long c1, long long c2, long long c3)
{
	struct rec_observation *o = RECORD_PUSH(r->obs, r->nobs);
	const long long c[3] = { c1, c2, c3 };
	const char *keys[3] = { "o1-r1", "o1-r2", "o1-r3" };

	assert_non_null(o);
	o->after_attempt = idx;
	o->at_ms = idx >= 0 ? r->attempts[idx].end_ms : 9999;
	if (idx >= 0)
		r->attempts[idx].obs_after = (int)r->nobs - 1;
	for (int i = 0; i < 3; i++) {
		struct rec_row *row;
		if (!c[i])
			continue;
		row = RECORD_PUSH(o->rows, o->nrows);
		assert_non_null(row);
		row->row_key = xstrdup(keys[i]);
		row->count = c[i];
	}
	o->fences_observed = true;
	return o;
}

static void add_fence(struct rec_observation *o, long long applied,
		      long long prepared)
{
	struct rec_fence *f = RECORD_PUSH(o->fences, o->nfences);

	assert_non_null(f);
	snprintf(f->operation_id, sizeof(f->operation_id), "%s", OP1);
	f->applied_epoch = applied;
	f->prepared_epoch = prepared;
	f->rows = 3;
}

static void add_transition(struct rec_operation *op, enum fc_state from,
			   enum fc_state to, long long at)
{
	struct journal_transition *t = RECORD_PUSH(op->history, op->nhistory);

	assert_non_null(t);
	snprintf(t->operation_id, sizeof(t->operation_id), "%s", OP1);
	t->version = (long long)op->nhistory;
	t->from = from;
	t->to = to;
	t->epoch = 1;
	t->at = T0 + at;
	op->entry.state = to;
	op->entry.version = t->version;
}

/* The converged schedule every case starts from. */
static struct rec_schedule *base(void)
{
	struct rec_schedule *r = record_new();
	struct rec_operation *op;
	struct rec_attempt *a;
	struct rec_evidence *ev;
	static const char *const path[] = {
		"before_intent", "after_intent", "before_fence_prepare",
		"after_fence_prepare", "before_target_commit",
		"after_target_commit", "before_probe", "after_probe",
	};

	assert_non_null(r);
	snprintf(r->route, sizeof(r->route), "r");
	snprintf(r->scenario, sizeof(r->scenario), "s");
	snprintf(r->schedule, sizeof(r->schedule), "clean");
	r->wall_start_ms = T0;
	r->ops = calloc(1, sizeof(*r->ops));
	assert_non_null(r->ops);
	r->nops = 1;
	op = &r->ops[0];
	op->index = 1;
	snprintf(op->operation_id, sizeof(op->operation_id), "%s", OP1);
	op->row_keys = calloc(3, sizeof(char *));
	assert_non_null(op->row_keys);
	op->row_keys[0] = xstrdup("o1-r1");
	op->row_keys[1] = xstrdup("o1-r2");
	op->row_keys[2] = xstrdup("o1-r3");
	op->nrows = 3;
	op->task = TASK_SUCCESS;
	add_transition(op, FC_STATE_NONE, FC_PREPARING, 10);
	add_transition(op, FC_PREPARING, FC_PREPARED, 11);
	add_transition(op, FC_PREPARED, FC_COMMITTING, 12);
	add_transition(op, FC_COMMITTING, FC_TARGET_COMMITTED, 14);
	add_transition(op, FC_TARGET_COMMITTED, FC_COMPLETE, 15);
	a = add_attempt(r, 1, 1, 5, 20, 0);
	for (size_t i = 0; i < sizeof(path) / sizeof(path[0]); i++)
		add_hit(a, path[i]);
	add_fence(add_obs(r, 0, 1, 1, 1), 1, 1);
	ev = RECORD_PUSH(op->evidence, op->nevidence);
	assert_non_null(ev);
	ev->try_number = 1;
	ev->valid = true;
	snprintf(ev->operation_id, sizeof(ev->operation_id), "%s", OP1);
	snprintf(ev->state, sizeof(ev->state), "COMPLETE");
	ev->rows_written = 3;
	return r;
}

static void add_fault(struct rec_schedule *r, enum fault_action act,
		      const char *fp, int attempt, bool fired, int attempt_idx)
{
	struct fault *f;
	struct rec_applied *ap;
	size_t n = r->nfaults;

	f = RECORD_PUSH(r->faults, r->nfaults);
	assert_non_null(f);
	r->fired = realloc(r->fired, r->nfaults * sizeof(*r->fired));
	assert_non_null(r->fired);
	f->action = act;
	f->attempt = attempt;
	f->hit = 1;
	f->operation = 1;
	snprintf(f->failpoint, sizeof(f->failpoint), "%s", fp);
	r->fired[n] = fired;
	if (!fired)
		return;
	ap = RECORD_PUSH(r->applied, r->napplied);
	assert_non_null(ap);
	ap->fault = (int)n;
	ap->attempt = attempt_idx;
	ap->operation = 1;
	snprintf(ap->what, sizeof(ap->what), "%s at %s in try %d",
		 fault_action_name(act), fp, attempt);
}

/* --- the cases ----------------------------------------------------------- */

static void nothing(struct rec_schedule *r) { (void)r; }

/* Try 1's journal failed a write (a syscall fault) and try 1 is credited
 * with the rows. */
static void dead_journal(struct rec_schedule *r)
{
	struct rec_delta *d = RECORD_PUSH(r->attempts[0].deltas,
					  r->attempts[0].ndeltas);

	assert_non_null(d);
	d->row_key = xstrdup("o1-r1");
	d->before = 0;
	d->after = 1;
	r->attempts[0].journal_failed = true;
}

/* ... and its COMMITTING is not the journal's before it died: the
 * COMMITTING row comes from after the try ended. */
static void dead_journal_mutates(struct rec_schedule *r)
{
	dead_journal(r);
	r->ops[0].history[2].at = r->attempts[0].end_wall_ms + 50;
}

static void duplicate(struct rec_schedule *r)
{
	r->obs[0].rows[1].count = 2;
}

static void loss_journal(struct rec_schedule *r)
{
	r->obs[0].nrows = 2; /* o1-r3 missing (freed by record_free via n) */
	free(r->obs[0].rows[2].row_key);
}

static void loss_task_only(struct rec_schedule *r)
{
	loss_journal(r);
	r->ops[0].journal_status = FC_NOT_FOUND;
	r->ops[0].nevidence = 0;
}

/* try 1 exits 100 with nothing written; a zombie later writes the rows */
static void stop_then_write(struct rec_schedule *r)
{
	struct rec_operation *op = &r->ops[0];

	r->attempts[0].exit_code = 100;
	op->task = TASK_FAILED;
	op->nhistory = 3; /* stopped in COMMITTING */
	op->entry.state = FC_COMMITTING;
	op->entry.version = 3;
	op->nevidence = 0;
	for (size_t i = 0; i < r->obs[0].nrows; i++)
		free(r->obs[0].rows[i].row_key);
	r->obs[0].nrows = 0;
	r->obs[0].nfences = 0;
	add_attempt(r, 1, 2, 30, 40, 0)->counted = false;
	r->attempts[1].zombie = true;
	add_obs(r, 1, 1, 1, 1);
}

static void stop_clean(struct rec_schedule *r)
{
	stop_then_write(r);
	r->nattempts = 1; /* no zombie: nothing changes after the stop */
	free(r->attempts[1].hits);
	for (size_t i = 0; i < r->obs[1].nrows; i++)
		free(r->obs[1].rows[i].row_key);
	free(r->obs[1].rows);
	free(r->obs[1].fences);
	r->nobs = 1;
}

static void success_while_unknown(struct rec_schedule *r)
{
	struct rec_operation *op = &r->ops[0];

	op->nhistory = 3;
	add_transition(op, FC_COMMITTING, FC_COMMIT_UNKNOWN, 13);
	op->nevidence = 0;
}

static void illegal_edge(struct rec_schedule *r)
{
	r->ops[0].history[1].to = FC_COMPLETE;
}

static void version_gap(struct rec_schedule *r)
{
	r->ops[0].history[3].version = 7;
}

static void entry_disagrees(struct rec_schedule *r)
{
	r->ops[0].entry.version = 9;
}

/* the source changed after try 1; try 2 must stop with 100 */
static void intent_setup(struct rec_schedule *r, int code)
{
	struct rec_attempt *a;

	r->ops[0].source_changed_after = 1;
	a = add_attempt(r, 1, 2, 30, 40, code);
	add_hit(a, "before_intent");
	add_obs(r, 1, 1, 1, 1);
	add_fence(&r->obs[1], 1, 1);
	r->attempts[0].exit_code = 75;
	r->attempts[0].signal = 0;
}

static void intent_ok(struct rec_schedule *r)
{
	intent_setup(r, 100);
	r->ops[0].task = TASK_FAILED;
	r->ops[0].nevidence = 0;
}

static void intent_exit0(struct rec_schedule *r)
{
	intent_setup(r, 0);
}

static void intent_target_io(struct rec_schedule *r)
{
	intent_ok(r);
	add_hit(&r->attempts[1], "before_target_commit");
}

static void intent_rows(struct rec_schedule *r)
{
	intent_ok(r);
	r->obs[1].rows[0].count = 2;
	assert_non_null(RECORD_PUSH(r->attempts[1].deltas, r->attempts[1].ndeltas));
	r->attempts[1].deltas[0].row_key = xstrdup("o1-r1");
	r->attempts[1].deltas[0].before = 1;
	r->attempts[1].deltas[0].after = 2;
}

/* try 2 starts with the entry present */
static struct rec_attempt *retry(struct rec_schedule *r)
{
	struct rec_attempt *a = add_attempt(r, 1, 2, 30, 40, 0);

	r->attempts[0].exit_code = -1;
	r->attempts[0].signal = 9;
	add_hit(a, "before_intent");
	add_hit(a, "after_lease");
	return a;
}

static void reconcile_ok(struct rec_schedule *r)
{
	struct rec_attempt *a = retry(r);

	add_hit(a, "before_reconcile_probe");
	add_hit(a, "after_reconcile_probe");
	add_hit(a, "before_target_commit");
}

static void reconcile_bad(struct rec_schedule *r)
{
	add_hit(retry(r), "before_fence_prepare");
}

static void fence_stale(struct rec_schedule *r)
{
	struct rec_observation *o = &r->obs[0];

	o->fences[0].applied_epoch = 0;
	o->fences[0].prepared_epoch = 2;
	add_attempt(r, 1, 2, 30, 40, 0);
	add_fence(add_obs(r, 1, 1, 1, 1), 1, 2);
}

static void fence_fresh(struct rec_schedule *r)
{
	fence_stale(r);
	r->obs[1].fences[0].applied_epoch = 2;
}

static void no_fences(struct rec_schedule *r)
{
	fence_stale(r);
	r->obs[0].fences_observed = r->obs[1].fences_observed = false;
}

static void evidence_state(struct rec_schedule *r)
{
	struct rec_operation *op = &r->ops[0];

	op->nhistory = 2;
	op->entry.state = FC_PREPARED;
	op->entry.version = 2;
}

static void evidence_rows(struct rec_schedule *r)
{
	r->ops[0].evidence[0].rows_written = 4;
}

static void evidence_op(struct rec_schedule *r)
{
	snprintf(r->ops[0].evidence[0].operation_id, JOURNAL_ID_MAX, "sha256:2");
}

static void evidence_torn(struct rec_schedule *r)
{
	r->ops[0].evidence[0].valid = false;
}

static void probe_fail_stop(struct rec_schedule *r)
{
	struct rec_operation *op = &r->ops[0];

	op->nhistory = 3;
	add_transition(op, FC_COMMITTING, FC_COMMIT_UNKNOWN, 13);
	op->task = TASK_FAILED;
	op->nevidence = 0;
	r->attempts[0].exit_code = 100;
	add_fault(r, FAULT_FAIL, "before_probe", 1, true, 0);
}

static void unprovoked_stop(struct rec_schedule *r)
{
	probe_fail_stop(r);
	r->faults[0].action = FAULT_KILL; /* no longer an excuse */
}

static void exhausted(struct rec_schedule *r)
{
	struct rec_operation *op = &r->ops[0];

	op->task = TASK_RETRIES_EXHAUSTED;
	op->nhistory = 3;
	op->entry.state = FC_COMMITTING;
	op->entry.version = 3;
	op->nevidence = 0;
	r->attempts[0].exit_code = -1;
	r->attempts[0].signal = 9;
	add_fault(r, FAULT_KILL, "after_target_commit", 1, true, 0);
}

static void not_converged(struct rec_schedule *r)
{
	exhausted(r);
	r->attempts[0].signal = 0;
	r->attempts[0].exit_code = 75;
	r->napplied = 0; /* the try failed without a fault */
}

static void unfired(struct rec_schedule *r)
{
	add_fault(r, FAULT_KILL, "never_reached", 1, false, -1);
}

static void observer_failed(struct rec_schedule *r)
{
	r->obs[0].status = FC_FENCE_UNAVAILABLE;
}

struct check_case {
	const char *name;
	void (*mutate)(struct rec_schedule *r);
	bool strict;
	int invariant;                 /* expected first violation; 0: none */
	enum schedule_outcome outcome;
	unsigned unobservable;
};

static const struct check_case cases[] = {
	{ "clean", nothing, true, 0, OUTCOME_CONVERGED, 0 },
	{ "duplicate row", duplicate, true, INV_NO_DUPLICATE, OUTCOME_CONVERGED, 0 },
	{ "row lost, journal COMPLETE", loss_journal, true, INV_NO_LOSS,
	  OUTCOME_CONVERGED, 0 },
	{ "row lost, task succeeded", loss_task_only, true, INV_NO_LOSS,
	  OUTCOME_NOT_CONVERGED, 0 },
	{ "rows written after exit 100", stop_then_write, true, INV_FAIL_CLOSED,
	  OUTCOME_STOPPED, 0 },
	{ "nothing after exit 100", stop_clean, true, 0, OUTCOME_STOPPED, 0 },
	{ "success while COMMIT_UNKNOWN", success_while_unknown, true,
	  INV_FAIL_CLOSED, OUTCOME_STOPPED, 0 },
	{ "illegal transition", illegal_edge, true, INV_LEGAL_HISTORY,
	  OUTCOME_CONVERGED, 0 },
	{ "version gap", version_gap, true, INV_LEGAL_HISTORY, OUTCOME_CONVERGED, 0 },
	{ "entry disagrees with history", entry_disagrees, true,
	  INV_LEGAL_HISTORY, OUTCOME_CONVERGED, 0 },
	{ "intent conflict stops", intent_ok, true, 0, OUTCOME_STOP_EXCUSED, 0 },
	{ "intent conflict exit 0", intent_exit0, true, INV_INTENT_CONFLICT,
	  OUTCOME_CONVERGED, 0 },
	{ "intent conflict target I/O", intent_target_io, true,
	  INV_INTENT_CONFLICT, OUTCOME_STOP_EXCUSED, 0 },
	{ "intent conflict rows", intent_rows, true, INV_NO_DUPLICATE,
	  OUTCOME_STOP_EXCUSED, 0 },
	{ "retry probes first", reconcile_ok, true, 0, OUTCOME_CONVERGED, 0 },
	{ "retry prepares first", reconcile_bad, true, INV_RECONCILE_FIRST,
	  OUTCOME_CONVERGED, 0 },
	{ "stale epoch landed", fence_stale, true, INV_FENCING,
	  OUTCOME_CONVERGED, 0 },
	{ "fresh epoch landed", fence_fresh, true, 0, OUTCOME_CONVERGED, 0 },
	{ "fences not observable", no_fences, true, 0, OUTCOME_CONVERGED,
	  INV_BIT(INV_FENCING) },
	{ "evidence COMPLETE, journal PREPARED", evidence_state, true,
	  INV_EVIDENCE, OUTCOME_NOT_CONVERGED, 0 },
	{ "evidence row count", evidence_rows, true, INV_EVIDENCE,
	  OUTCOME_CONVERGED, 0 },
	{ "evidence names another op", evidence_op, true, INV_EVIDENCE,
	  OUTCOME_CONVERGED, 0 },
	{ "evidence torn", evidence_torn, true, INV_EVIDENCE, OUTCOME_CONVERGED, 0 },
	{ "stop after a failed probe", probe_fail_stop, true, 0,
	  OUTCOME_STOP_EXCUSED, 0 },
	{ "stop without excuse", unprovoked_stop, true, 0, OUTCOME_STOPPED, 0 },
	{ "faults used every try", exhausted, true, 0, OUTCOME_EXHAUSTED, 0 },
	{ "retries ran out unfaulted", not_converged, true, 0,
	  OUTCOME_NOT_CONVERGED, 0 },
	{ "fault never fired (strict)", unfired, true, 0, OUTCOME_UNVERIFIED, 0 },
	{ "fault never fired (random)", unfired, false, 0, OUTCOME_CONVERGED, 0 },
	{ "observer failed", observer_failed, true, 0, OUTCOME_UNVERIFIED, 0 },
	{ "dead journal after COMMITTING", dead_journal, true, 0,
	  OUTCOME_CONVERGED, 0 },
	{ "dead journal, rows anyway", dead_journal_mutates, true,
	  INV_DEAD_JOURNAL, OUTCOME_CONVERGED, 0 },
};

static void test_cases(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct check_case *c = &cases[i];
		struct rec_schedule *r = base();
		struct check_result res;

		c->mutate(r);
		assert_int_equal(check_schedule(r, c->strict, &res), 0);
		if (c->invariant == 0 && res.nviolations) {
			print_error("case '%s': unexpected violation %d: %s\n",
				    c->name, res.violations[0].invariant,
				    res.violations[0].detail);
			fail();
		}
		if (c->invariant) {
			bool found = false;
			for (size_t v = 0; v < res.nviolations; v++)
				found |= res.violations[v].invariant == c->invariant;
			if (!found) {
				print_error("case '%s': invariant %d not reported "
					    "(%zu others)\n", c->name, c->invariant,
					    res.nviolations);
				fail();
			}
		}
		if (res.outcome != c->outcome) {
			print_error("case '%s': outcome %s, want %s (%s)\n", c->name,
				    outcome_name(res.outcome),
				    outcome_name(c->outcome), res.why);
			fail();
		}
		if ((res.unobservable & c->unobservable) != c->unobservable) {
			print_error("case '%s': unobservable %#x\n", c->name,
				    res.unobservable);
			fail();
		}
		check_result_release(&res);
		record_free(r);
	}
}

/* The duplicate detail names the row and who added it. */
static void test_duplicate_detail(void **state)
{
	struct rec_schedule *r = base();
	struct check_result res;

	(void)state;
	r->attempts[0].exit_code = -1;
	r->attempts[0].signal = 9;
	add_fault(r, FAULT_KILL, "after_target_commit", 1, true, 0);
	add_attempt(r, 1, 2, 30, 40, 0);
	add_obs(r, 1, 2, 2, 2);
	assert_int_equal(check_schedule(r, true, &res), 0);
	assert_int_equal(res.nviolations, 1);
	assert_int_equal(res.violations[0].invariant, INV_NO_DUPLICATE);
	assert_string_equal(res.violations[0].operation_id, OP1);
	assert_non_null(strstr(res.violations[0].detail, "o1-r1 x2"));
	assert_non_null(strstr(res.violations[0].detail, "op 1 try 2"));
	assert_non_null(strstr(res.violations[0].detail,
			       "kill at after_target_commit in try 1"));
	check_result_release(&res);
	record_free(r);
}

static void test_no_failpoints(void **state)
{
	struct rec_schedule *r = base();
	struct check_result res;

	(void)state;
	r->attempts[0].nhits = 0;
	assert_int_equal(check_schedule(r, true, &res), 0);
	assert_true(res.unobservable & INV_BIT(INV_RECONCILE_FIRST));
	check_result_release(&res);
	record_free(r);
}

static void test_names(void **state)
{
	(void)state;
	assert_string_equal(invariant_name(INV_NO_DUPLICATE), "no-duplicate");
	assert_string_equal(invariant_name(INV_EVIDENCE), "evidence-agrees");
	assert_string_equal(invariant_name(INV_DEAD_JOURNAL), "dead-journal-no-mutation");
	assert_null(invariant_name(0));
	assert_null(invariant_name(INV_COUNT + 1));
	for (int i = 1; i <= INV_COUNT; i++)
		assert_non_null(invariant_name(i));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cases),
		cmocka_unit_test(test_duplicate_detail),
		cmocka_unit_test(test_no_failpoints),
		cmocka_unit_test(test_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
