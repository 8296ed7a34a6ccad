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
	o->applied_before = r->napplied;
	if (idx >= 0)
		r->attempts[idx].obs_after = (int)r->nobs - 1;
	for (int i = 0; i < 3; i++)
		if (c[i])
			assert_int_equal(obs_store_add(r->rows, (int)r->nobs - 1,
						       keys[i], c[i]), 0);
	o->fences_observed = true;
	return o;
}

/* Observation k holds `more` more copies of key. */
static void add_copies(struct rec_schedule *r, int k, const char *key,
		       long long more)
{
	assert_int_equal(obs_store_add(r->rows, k, key, more), 0);
}

/* Observation k holds no rows. */
static void clear_rows(struct rec_schedule *r, int k)
{
	assert_int_equal(obs_store_clear(r->rows, k), 0);
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

/* The route's first (usually only) journal entry of op. */
static struct rec_entry *entry0(struct rec_operation *op)
{
	assert_true(op->nentries > 0);
	return &op->entries[0];
}

static void add_entry_transition(struct rec_entry *e, enum fc_state from,
				 enum fc_state to, long long at)
{
	struct journal_transition *t = RECORD_PUSH(e->history, e->nhistory);

	assert_non_null(t);
	snprintf(t->operation_id, sizeof(t->operation_id), "%s",
		 e->operation_id);
	t->version = (long long)e->nhistory;
	t->from = from;
	t->to = to;
	t->epoch = 1;
	t->at = T0 + at;
	e->entry.state = to;
	e->entry.version = t->version;
}

static void add_transition(struct rec_operation *op, enum fc_state from,
			   enum fc_state to, long long at)
{
	add_entry_transition(entry0(op), from, to, at);
}

/* Cut op's first entry back to its first n transitions. */
static void keep_history(struct rec_operation *op, size_t n)
{
	struct rec_entry *e = entry0(op);

	e->nhistory = n;
	e->entry.state = e->history[n - 1].to;
	e->entry.version = e->history[n - 1].version;
}

/* op keeps no journal: its entries are gone. */
static void drop_entries(struct rec_operation *op)
{
	for (size_t k = 0; k < op->nentries; k++)
		free(op->entries[k].history);
	free(op->entries);
	op->entries = NULL;
	op->nentries = 0;
	op->operation_id[0] = '\0';
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
	char err[200];

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
	assert_non_null(record_attribute(op, OP1, 0, T0 + 10));
	assert_string_equal(op->operation_id, OP1);
	assert_int_equal(obs_store_open(NULL, &r->rows, err, sizeof(err)), 0);
	assert_int_equal(obs_store_expect(r->rows, 1, "o1-r1"), 0);
	assert_int_equal(obs_store_expect(r->rows, 1, "o1-r2"), 0);
	assert_int_equal(obs_store_expect(r->rows, 1, "o1-r3"), 0);
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

static struct rec_applied *add_fault(struct rec_schedule *r,
				     enum fault_action act, const char *fp,
				     int attempt, bool fired, int attempt_idx)
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
		return NULL;
	ap = RECORD_PUSH(r->applied, r->napplied);
	assert_non_null(ap);
	ap->fault = (int)n;
	ap->attempt = attempt_idx;
	ap->operation = 1;
	snprintf(ap->what, sizeof(ap->what), "%s at %s in try %d",
		 fault_action_name(act), fp, attempt);
	ap->at_ms = attempt_idx >= 0 ? r->attempts[attempt_idx].end_ms : 0;
	return ap;
}

/* --- the cases ----------------------------------------------------------- */

static void nothing(struct rec_schedule *r) { (void)r; }

/* Try 1's journal failed a write (a syscall fault) and try 1 is credited
 * with the rows. */
static void dead_journal(struct rec_schedule *r)
{
	assert_int_equal(record_add_delta(&r->attempts[0], "o1-r1", 0, 1,
					  RECORD_DELTAS_KEPT), 0);
	r->attempts[0].journal_failed = true;
}

/* ... and its COMMITTING is not the journal's before it died: the
 * COMMITTING row comes from after the try ended. */
static void dead_journal_mutates(struct rec_schedule *r)
{
	dead_journal(r);
	entry0(&r->ops[0])->history[2].at = r->attempts[0].end_wall_ms + 50;
}

static void duplicate(struct rec_schedule *r)
{
	add_copies(r, 0, "o1-r2", 1); /* now 2 */
}

static void loss_journal(struct rec_schedule *r)
{
	assert_int_equal(obs_store_drop(r->rows, 0, "o1-r3"), 0);
}

static void loss_task_only(struct rec_schedule *r)
{
	loss_journal(r);
	drop_entries(&r->ops[0]);
	r->ops[0].nevidence = 0;
}

/* try 1 exits 100 with nothing written; a zombie later writes the rows */
static void stop_then_write(struct rec_schedule *r)
{
	struct rec_operation *op = &r->ops[0];

	r->attempts[0].exit_code = 100;
	op->task = TASK_FAILED;
	keep_history(op, 3); /* stopped in COMMITTING */
	op->nevidence = 0;
	clear_rows(r, 0);
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
	clear_rows(r, 1);
	free(r->obs[1].fences);
	r->nobs = 1;
}

static void success_while_unknown(struct rec_schedule *r)
{
	struct rec_operation *op = &r->ops[0];

	keep_history(op, 3);
	add_transition(op, FC_COMMITTING, FC_COMMIT_UNKNOWN, 13);
	op->nevidence = 0;
}

static void illegal_edge(struct rec_schedule *r)
{
	entry0(&r->ops[0])->history[1].to = FC_COMPLETE;
}

static void version_gap(struct rec_schedule *r)
{
	entry0(&r->ops[0])->history[3].version = 7;
}

static void entry_disagrees(struct rec_schedule *r)
{
	entry0(&r->ops[0])->entry.version = 9;
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
	add_copies(r, 1, "o1-r1", 1); /* now 2 */
	assert_int_equal(record_add_delta(&r->attempts[1], "o1-r1", 1, 2,
					  RECORD_DELTAS_KEPT), 0);
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
	keep_history(&r->ops[0], 2);
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

	keep_history(op, 3);
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
	keep_history(op, 3);
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

/* exit 100 in COMMITTING; the faults given are all the schedule had */
static void stop_after(struct rec_schedule *r, enum fault_action act,
		       int attempt_idx)
{
	stop_clean(r);
	add_fault(r, act, act == FAULT_KILL ? "after_committing" : "", 1, true,
		  attempt_idx);
}

/* a lost XCom cannot hide a commit: no excuse for the stop */
static void stop_after_lose_xcom(struct rec_schedule *r)
{
	stop_after(r, FAULT_LOSE_XCOM, -1);
}

static void stop_after_lose_pod(struct rec_schedule *r)
{
	stop_after(r, FAULT_LOSE_POD, -1);
}

/* a kill in try 1 may have hidden the commit: a fail-closed stop */
static void stop_after_kill(struct rec_schedule *r)
{
	stop_after(r, FAULT_KILL, 0);
}

/* a syscall fault in try 1 likewise */
static void stop_after_syscall(struct rec_schedule *r)
{
	stop_after(r, FAULT_SYSCALL, 0);
}

/* the task succeeded; the journal entry never got to COMPLETE */
static void success_unfinished(struct rec_schedule *r)
{
	keep_history(&r->ops[0], 4);
	r->ops[0].nevidence = 0;
}

/* the route keeps no journal and did its work: judged on the target */
static void journal_less(struct rec_schedule *r)
{
	drop_entries(&r->ops[0]);
	snprintf(r->ops[0].evidence[0].operation_id, JOURNAL_ID_MAX, "mine");
	r->obs[0].nfences = 0;
}

static void journal_less_dup(struct rec_schedule *r)
{
	journal_less(r);
	duplicate(r);
}

static void journal_less_exit100(struct rec_schedule *r)
{
	journal_less(r);
	r->ops[0].nevidence = 0;
	r->ops[0].task = TASK_FAILED;
	r->attempts[0].exit_code = 100;
	clear_rows(r, 0);
}

/* try 2 (a retry) names the operation anew: entry "own:2" created while
 * it ran, the old entry left behind */
static void second_entry(struct rec_schedule *r, long long created)
{
	struct rec_operation *op = &r->ops[0];
	struct rec_entry *e;

	r->attempts[0].exit_code = -1;
	r->attempts[0].signal = 9;
	add_fault(r, FAULT_KILL, "after_target_commit", 1, true, 0);
	add_attempt(r, 1, 2, 30, 40, 0);
	add_obs(r, 1, 1, 1, 1);
	e = record_attribute(op, "own:2", 1, T0 + created);
	assert_non_null(e);
	add_entry_transition(e, FC_STATE_NONE, FC_PREPARING, created);
	add_entry_transition(e, FC_PREPARING, FC_PREPARED, created + 1);
	add_entry_transition(e, FC_PREPARED, FC_COMMITTING, created + 2);
	add_entry_transition(e, FC_COMMITTING, FC_TARGET_COMMITTED, created + 3);
	add_entry_transition(e, FC_TARGET_COMMITTED, FC_COMPLETE, created + 4);
}

static void new_id_on_retry(struct rec_schedule *r)
{
	second_entry(r, 32);
}

/* a second entry made by try 1 itself: a route may keep two */
static void two_entries_one_try(struct rec_schedule *r)
{
	second_entry(r, 12);
}

/* the new entry was left unfinished: the retry also did not complete */
static void new_id_unfinished(struct rec_schedule *r)
{
	second_entry(r, 32);
	r->ops[0].entries[1].nhistory = 3;
	r->ops[0].entries[1].entry.state = FC_COMMITTING;
	r->ops[0].entries[1].entry.version = 3;
}

/* a lost XCom right as the try ended disturbed no try */
static void exhausted_lose_xcom(struct rec_schedule *r)
{
	not_converged(r);
	add_fault(r, FAULT_LOSE_XCOM, "", 1, true, -1)->at_ms =
		r->attempts[0].end_ms;
}

/* a member stopped before the try and never started again did */
static void exhausted_member_down(struct rec_schedule *r)
{
	not_converged(r);
	add_fault(r, FAULT_STOP_MEMBER, "", 1, true, -1)->at_ms = 1;
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
	  OUTCOME_NOT_CONVERGED, 0 },
	{ "exit 100 with no fault", stop_clean, true, INV_COMPLETES,
	  OUTCOME_NOT_CONVERGED, 0 },
	{ "exit 100 after lose_xcom", stop_after_lose_xcom, true, INV_COMPLETES,
	  OUTCOME_NOT_CONVERGED, 0 },
	{ "exit 100 after lose_pod", stop_after_lose_pod, true, INV_COMPLETES,
	  OUTCOME_NOT_CONVERGED, 0 },
	{ "exit 100 after a kill", stop_after_kill, true, 0, OUTCOME_STOPPED, 0 },
	{ "exit 100 after a syscall fault", stop_after_syscall, true, 0,
	  OUTCOME_STOPPED, 0 },
	{ "success while COMMIT_UNKNOWN", success_while_unknown, true,
	  INV_FAIL_CLOSED, OUTCOME_NOT_CONVERGED, 0 },
	{ "success, entry not COMPLETE", success_unfinished, true,
	  INV_COMPLETES, OUTCOME_NOT_CONVERGED, 0 },
	{ "no journal, rows once", journal_less, true, 0, OUTCOME_CONVERGED,
	  CHECK_JOURNAL_INVARIANTS },
	{ "no journal, rows twice", journal_less_dup, true, INV_NO_DUPLICATE,
	  OUTCOME_NOT_CONVERGED, CHECK_JOURNAL_INVARIANTS },
	{ "no journal, exit 100 unprovoked", journal_less_exit100, true,
	  INV_COMPLETES, OUTCOME_NOT_CONVERGED, CHECK_JOURNAL_INVARIANTS },
	{ "retry opens a second entry", new_id_on_retry, true,
	  INV_STABLE_IDENTITY, OUTCOME_CONVERGED, 0 },
	{ "second entry of try 1", two_entries_one_try, true, 0,
	  OUTCOME_CONVERGED, 0 },
	{ "retry's new entry unfinished", new_id_unfinished, true,
	  INV_STABLE_IDENTITY, OUTCOME_NOT_CONVERGED, 0 },
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
	{ "stop after a kill, probe fine", unprovoked_stop, true, 0,
	  OUTCOME_STOPPED, 0 },
	{ "faults used every try", exhausted, true, 0, OUTCOME_EXHAUSTED, 0 },
	{ "retries ran out unfaulted", not_converged, true, INV_COMPLETES,
	  OUTCOME_NOT_CONVERGED, 0 },
	{ "retries ran out, XCom lost", exhausted_lose_xcom, true,
	  INV_COMPLETES, OUTCOME_NOT_CONVERGED, 0 },
	{ "retries ran out, member down", exhausted_member_down, true, 0,
	  OUTCOME_EXHAUSTED, 0 },
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

/* The windows stopped and retried tries challenged (check_window.c). */
struct window_case {
	const char *name;
	enum fault_action act;   /* applied to try 1 */
	int try1_exit;           /* -1: killed */
	bool zombie;             /* try 1 paused and given up on */
	bool rows_after_try1;    /* the observation the retry met */
	bool retried;            /* a try 2 follows */
	int want;                /* -1: no stop; else enum stop_window */
};

static const struct window_case window_cases[] = {
	{ "kill after the rows landed", FAULT_KILL, -1, false, true, true,
	  WINDOW_AFTER_MUTATION },
	{ "kill before the rows", FAULT_KILL, -1, false, false, true,
	  WINDOW_BEFORE_MUTATION },
	{ "syscall errno, exit 75, rows there", FAULT_SYSCALL, 75, false, true,
	  true, WINDOW_AFTER_MUTATION },
	{ "fail, exit 75, no rows", FAULT_FAIL, 75, false, false, true,
	  WINDOW_BEFORE_MUTATION },
	{ "paused, no rows when try 2 began", FAULT_PAUSE, 0, true, false, true,
	  WINDOW_BEFORE_MUTATION },
	{ "proxy cut, exit 75", FAULT_CUT_AFTER_COMMIT, 75, false, true, true,
	  WINDOW_AFTER_MUTATION },
	{ "kill, never retried", FAULT_KILL, -1, false, true, false, -1 },
	{ "fail, but the try succeeded", FAULT_FAIL, 0, false, true, true, -1 },
	{ "delay cannot stop a try", FAULT_DELAY, 75, false, true, true, -1 },
	{ "lost XCom stops nothing", FAULT_LOSE_XCOM, 75, false, true, true, -1 },
};

static void test_retried_stops(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(window_cases) / sizeof(window_cases[0]);
	     i++) {
		const struct window_case *c = &window_cases[i];
		struct rec_schedule *r = base();
		struct rec_attempt *a = &r->attempts[0];
		struct check_result res;

		a->exit_code = c->try1_exit;
		a->signal = c->try1_exit < 0 ? 9 : 0;
		a->zombie = c->zombie;
		if (!c->rows_after_try1) {
			clear_rows(r, 0);
		}
		add_fault(r, c->act, "x", 1, true,
			  c->act == FAULT_LOSE_XCOM ? -1 : 0);
		if (c->retried) {
			add_attempt(r, 1, 2, 30, 40, 0);
			add_obs(r, 1, 1, 1, 1);
		}
		assert_int_equal(check_schedule(r, true, &res), 0);
		if (c->want < 0 ? res.nstops != 0 :
		    res.nstops != 1 || res.stops[0].window != (enum stop_window)c->want ||
		    res.stops[0].attempt != 0) {
			print_error("window case '%s': %zu stops, first %s\n",
				    c->name, res.nstops, res.nstops ?
				    stop_window_name(res.stops[0].window) : "-");
			fail();
		}
		check_result_release(&res);
		record_free(r);
	}
}

static void test_names(void **state)
{
	(void)state;
	assert_string_equal(invariant_name(INV_COMPLETES), "completes");
	assert_string_equal(invariant_name(INV_STABLE_IDENTITY),
			    "stable-identity");
	assert_string_equal(stop_window_name(WINDOW_AFTER_MUTATION),
			    "after-mutation");
	assert_string_equal(stop_window_name(WINDOW_BEFORE_MUTATION),
			    "before-mutation");
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
		cmocka_unit_test(test_retried_stops),
		cmocka_unit_test(test_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
