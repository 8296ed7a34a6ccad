/*
 * check.c -- prove the invariants of one schedule from its record.  See
 * check.h for what each invariant means and how it is observed; how the
 * schedule ended is check_outcome.c's (called last, never calling back),
 * and the names of outcomes and verdicts and the fold into a route's
 * verdict are verdict.c's.
 *
 * Design rules:
 *  1. Pure: reads the record, allocates only the violations it returns.
 *  4. An operation is what the route made of it: its journal entries are
 *     those attributed to it (record.h), under the ids the route chose;
 *     the checker never computes an id.  An operation without an entry is
 *     judged on the target and its task alone.
 *  2. One violation per (invariant, operation) per schedule, naming the
 *     first evidence of it; the detail lists the rows involved (bounded)
 *     and the attempt and faults that led there, so a reader can replay.
 *  3. Verdicts are computed from violations and outcomes only; the
 *     route's expectation never enters (harness/certify compares
 *     afterwards, with verdict_meets()).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/protocol.h"
#include "common/put.h"
#include "journal/states.h"
#include "harness/check/check.h"

#define LIST_MAX 6 /* rows named in one detail before "..." */

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
	[INV_COMPLETES] = "completes",
	[INV_STABLE_IDENTITY] = "stable-identity",
};

const char *invariant_name(int inv)
{
	if (inv < 1 || inv > INV_COUNT)
		return NULL;
	return inv_names[inv];
}

/* --- collecting violations ----------------------------------------------- */

struct vlist {
	struct violation *v;
	size_t n;
	int rc;
};

static void __attribute__((format(printf, 4, 5)))
violate(struct vlist *vl, int inv, const struct rec_operation *op,
	const char *fmt, ...)
{
	struct violation *v;
	va_list ap;

	if (vl->rc)
		return;
	v = RECORD_PUSH(vl->v, vl->n);
	if (!v) {
		vl->rc = FC_NOMEM;
		return;
	}
	v->invariant = inv;
	v->operation = op ? op->index : 0;
	put(v->operation_id, sizeof(v->operation_id), "%s",
	    op ? op->operation_id : "");
	va_start(ap, fmt);
	vsnprintf(v->detail, sizeof(v->detail), fmt, ap);
	va_end(ap);
}

/* A bounded text accumulator for details. */
struct text {
	char buf[400];
	size_t len;
	int items;
};

static void __attribute__((format(printf, 2, 3)))
text_add(struct text *t, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (t->len >= sizeof(t->buf) - 1)
		return;
	va_start(ap, fmt);
	n = vsnprintf(t->buf + t->len, sizeof(t->buf) - t->len, fmt, ap);
	va_end(ap);
	if (n > 0)
		t->len += (size_t)n;
	if (t->len >= sizeof(t->buf))
		t->len = sizeof(t->buf) - 1;
}

static void text_item(struct text *t, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void text_item(struct text *t, const char *fmt, ...)
{
	va_list ap;
	char item[160];

	t->items++;
	if (t->items > LIST_MAX) {
		if (t->items == LIST_MAX + 1)
			text_add(t, ", ...");
		return;
	}
	va_start(ap, fmt);
	vsnprintf(item, sizeof(item), fmt, ap);
	va_end(ap);
	text_add(t, "%s%s", t->items > 1 ? ", " : "", item);
}

/* "attempt 3 (op 1 try 2, exit 0)" */
static void describe_attempt(const struct rec_schedule *r, int idx,
			     char *out, size_t len)
{
	const struct rec_attempt *a;
	char end[48];

	if (idx < 0 || (size_t)idx >= r->nattempts) {
		put(out, len, "the end of the schedule");
		return;
	}
	a = &r->attempts[idx];
	record_attempt_end(a, end, sizeof(end));
	put(out, len, "attempt %d (op %d try %d%s, %s)", idx + 1,
		 a->operation, a->try_number, a->zombie ? ", zombie" : "", end);
}

/* The faults applied to op before observation k was taken: " after kill
 * at X#1 in try 1".  By order, not by time: a fault applied in the same
 * millisecond right after the observation is not before it. */
static void describe_faults_before(const struct rec_schedule *r, int op,
				   size_t k, char *out, size_t len)
{
	struct text tx = { .len = 0 };

	for (size_t i = 0; i < r->obs[k].applied_before && i < r->napplied; i++) {
		const struct rec_applied *ap = &r->applied[i];
		if (ap->operation && ap->operation != op)
			continue;
		text_item(&tx, "%s", ap->what);
	}
	if (tx.items)
		put(out, len, " after %s", tx.buf);
	else
		put(out, len, " with no fault before it");
}

/* The attempt whose end triggered observation k, described. */
static void blame(const struct rec_schedule *r, size_t k, int op,
		  char *out, size_t len)
{
	char who[128], faults[300];
	int idx = r->obs[k].after_attempt;

	describe_attempt(r, idx, who, sizeof(who));
	describe_faults_before(r, op, k, faults, sizeof(faults));
	put(out, len, "by %s%s", who, faults);
}

/* --- rows (the record's store) --------------------------------------------- */

/* The slot of operation index op in r->ops; r->nops for rows no
 * operation owns (op 0). */
static size_t slot_of(const struct rec_schedule *r, int op)
{
	for (size_t i = 0; i < r->nops; i++)
		if (r->ops[i].index == op)
			return i;
	return r->nops;
}

/* Row visitors that list rows in a detail (every one counted). */
static int list_key(void *ctx, const char *key, long long before,
		    long long after)
{
	(void)before;
	(void)after;
	text_item(ctx, "%s", key);
	return 0;
}

static int list_copies(void *ctx, const char *key, long long count,
		       long long same)
{
	(void)same;
	text_item(ctx, "%s x%lld", key, count);
	return 0;
}

static int list_change(void *ctx, const char *key, long long before,
		       long long after)
{
	text_item(ctx, "%s %lld->%lld", key, before, after);
	return 0;
}

/* The rows of op in observation k, counted; a store error goes to vl. */
static struct obs_rowsum op_rows(const struct rec_schedule *r,
				 const struct rec_operation *op, size_t k,
				 struct vlist *vl)
{
	struct obs_rowsum s;
	int rc = obs_store_op_rows(r->rows, (int)k, op->index, &s);

	if (rc && !vl->rc)
		vl->rc = rc;
	return s;
}

static bool obs_ok(const struct rec_schedule *r, size_t k)
{
	return r->obs[k].status == 0;
}

static int final_obs(const struct rec_schedule *r)
{
	for (size_t k = r->nobs; k-- > 0;)
		if (obs_ok(r, k))
			return (int)k;
	return -1;
}

/* --- 1 no duplicate ---------------------------------------------------- */

struct dup_scan {
	const struct rec_schedule *r;
	int *first; /* per slot: the first observation with a duplicate */
	size_t k;
};

static int note_duplicated(void *ctx, int op)
{
	struct dup_scan *d = ctx;
	size_t s = slot_of(d->r, op);

	if (d->first[s] < 0)
		d->first[s] = (int)d->k;
	return 0;
}

static void check_duplicates(const struct rec_schedule *r, struct vlist *vl)
{
	/* one slot per operation plus one for rows no operation owns */
	size_t nslots = r->nops + 1;
	struct text *tx = calloc(nslots, sizeof(*tx));
	int *first = malloc(nslots * sizeof(*first));
	struct dup_scan d = { r, first, 0 };
	int rc = 0;

	if (!tx || !first) {
		vl->rc = FC_NOMEM;
		goto out;
	}
	for (size_t s = 0; s < nslots; s++)
		first[s] = -1;
	for (size_t k = 0; k < r->nobs && !rc; k++) {
		if (!obs_ok(r, k))
			continue;
		d.k = k;
		rc = obs_store_owners_duplicated(r->rows, (int)k,
						 note_duplicated, &d);
	}
	for (size_t s = 0; s < nslots && !rc; s++) {
		char by[400];
		int op = s < r->nops ? r->ops[s].index : 0;
		if (first[s] < 0)
			continue;
		rc = obs_store_duplicated(r->rows, first[s], op, list_copies,
					  &tx[s]);
		if (rc)
			break;
		blame(r, (size_t)first[s], op, by, sizeof(by));
		violate(vl, INV_NO_DUPLICATE,
			s < r->nops ? &r->ops[s] : NULL,
			"%d row(s) present more than once (%s); added %s",
			tx[s].items, tx[s].buf, by);
	}
	if (rc && !vl->rc)
		vl->rc = rc;
out:
	free(tx);
	free(first);
}

/* --- 2 no loss --------------------------------------------------------- */

static bool state_committed(enum fc_state s)
{
	return s == FC_TARGET_COMMITTED || s == FC_COMMITTED_INCOMPLETE ||
	       s == FC_COMPLETE;
}

/* An entry of op that says the operation committed, or NULL. */
static const struct rec_entry *committed_entry(const struct rec_operation *op)
{
	if (op->journal_status)
		return NULL;
	for (size_t k = 0; k < op->nentries; k++)
		if (op->entries[k].status == 0 &&
		    state_committed(op->entries[k].entry.state))
			return &op->entries[k];
	return NULL;
}

static void check_loss(const struct rec_schedule *r, struct vlist *vl)
{
	int k = final_obs(r);

	if (k < 0)
		return;
	for (size_t i = 0; i < r->nops; i++) {
		const struct rec_operation *op = &r->ops[i];
		const struct rec_entry *e = committed_entry(op);
		struct text tx = { .len = 0 };

		int rc;

		if (!e && op->task != TASK_SUCCESS)
			continue;
		rc = obs_store_missing(r->rows, k, op->index, list_key, &tx);
		if (rc && !vl->rc)
			vl->rc = rc;
		if (rc || !tx.items)
			continue;
		if (e)
			violate(vl, INV_NO_LOSS, op, "%d of %zu row(s) missing "
				"at the end (%s) although the journal says %s "
				"('%s')", tx.items, op->nrows, tx.buf,
				state_name(e->entry.state), e->operation_id);
		else
			violate(vl, INV_NO_LOSS, op, "%d of %zu row(s) missing "
				"at the end (%s) although the task succeeded",
				tx.items, op->nrows, tx.buf);
	}
}

/* --- 3 fail-closed ------------------------------------------------------- */

/* The observation taken when op first stopped, or -1; *why says how. */
static int stop_point(const struct rec_schedule *r,
		      const struct rec_operation *op, char *why, size_t len,
		      long long *stop_wall)
{
	int best = -1;
	long long best_at = -1;

	for (size_t i = 0; i < r->nattempts; i++) {
		const struct rec_attempt *a = &r->attempts[i];
		if (a->operation != op->index || !a->counted || a->signal ||
		    a->exit_code != PROTO_EXIT_STOP || a->obs_after < 0)
			continue;
		best = a->obs_after;
		best_at = r->obs[best].at_ms;
		*stop_wall = a->end_wall_ms;
		put(why, len, "try %d exited %d", a->try_number, PROTO_EXIT_STOP);
		break;
	}
	for (size_t e = 0; e < op->nentries; e++) {
		const struct rec_entry *en = &op->entries[e];
		const struct journal_transition *t = NULL;
		long long w;
		int k = -1;

		for (size_t h = 0; h < en->nhistory && !t; h++)
			if (en->history[h].to == FC_COMMIT_UNKNOWN)
				t = &en->history[h];
		if (!t)
			continue;
		w = t->at;
		/* the first observation after the transition was written */
		for (size_t i = 0; i < r->nattempts; i++) {
			const struct rec_attempt *a = &r->attempts[i];
			if (a->operation != op->index || a->obs_after < 0 ||
			    a->start_wall_ms > w || a->end_wall_ms < w)
				continue;
			if (k < 0 || a->obs_after < k)
				k = a->obs_after;
		}
		if (k >= 0 && (best < 0 || r->obs[k].at_ms < best_at)) {
			best = k;
			best_at = r->obs[k].at_ms;
			*stop_wall = w;
			put(why, len, "the journal entered COMMIT_UNKNOWN "
				 "('%s' version %lld)", en->operation_id,
				 t->version);
		}
	}
	return best;
}

/* The state of an entry at wall time t (FC_STATE_NONE before create). */
static enum fc_state state_at(const struct rec_entry *e, long long t)
{
	enum fc_state s = FC_STATE_NONE;

	for (size_t h = 0; h < e->nhistory; h++)
		if (e->history[h].at <= t)
			s = e->history[h].to;
	return s;
}

/* An entry of op in COMMIT_UNKNOWN at wall time t, or NULL. */
static const struct rec_entry *unknown_at(const struct rec_operation *op,
					  long long t)
{
	for (size_t k = 0; k < op->nentries; k++)
		if (state_at(&op->entries[k], t) == FC_COMMIT_UNKNOWN)
			return &op->entries[k];
	return NULL;
}

/* The entry of op created first, or NULL: the one a retry must find. */
static const struct rec_entry *first_entry(const struct rec_operation *op)
{
	const struct rec_entry *best = NULL;

	for (size_t k = 0; k < op->nentries; k++) {
		const struct rec_entry *e = &op->entries[k];
		if (!e->nhistory)
			continue;
		if (!best || e->history[0].at < best->history[0].at)
			best = e;
	}
	return best;
}

/* The operator recover faults of op whose apply moved the operation. */
static bool operator_moved(const struct rec_schedule *r,
			   const struct rec_applied *ap, int op)
{
	return ap->moved && ap->operation == op && ap->fault >= 0 &&
	       (size_t)ap->fault < r->nfaults &&
	       r->faults[ap->fault].action == FAULT_RECOVER;
}

/* When an operator resolved op's stop after time t (recover apply moved
 * it, and the task was cleared), or -1: the fail-closed window ends. */
static long long operator_after(const struct rec_schedule *r, int op,
				long long t)
{
	for (size_t i = 0; i < r->napplied; i++)
		if (operator_moved(r, &r->applied[i], op) &&
		    r->applied[i].at_ms >= t)
			return r->applied[i].at_ms;
	return -1;
}

static void check_fail_closed(const struct rec_schedule *r, struct vlist *vl)
{
	for (size_t i = 0; i < r->nops; i++) {
		const struct rec_operation *op = &r->ops[i];
		char why[128], by[400];
		long long stop_wall = 0, resolved;
		int base = stop_point(r, op, why, sizeof(why), &stop_wall);

		resolved = base < 0 ? -1 : operator_after(r, op->index,
							  r->obs[base].at_ms);
		for (size_t k = base < 0 ? r->nobs : (size_t)base + 1;
		     k < r->nobs; k++) {
			struct text tx = { .len = 0 };
			int rc;
			if (resolved >= 0 && r->obs[k].at_ms > resolved)
				break; /* an operator resolved the stop */
			if (!obs_ok(r, k))
				continue;
			rc = obs_store_changed(r->rows, base, (int)k, op->index,
					       list_change, &tx);
			if (rc && !vl->rc)
				vl->rc = rc;
			if (rc || !tx.items)
				continue;
			blame(r, k, op->index, by, sizeof(by));
			violate(vl, INV_FAIL_CLOSED, op,
				"target rows changed after %s: %s; changed %s",
				why, tx.buf, by);
			break;
		}
		for (size_t a = 0; a < r->nattempts; a++) {
			const struct rec_attempt *at = &r->attempts[a];
			const struct rec_entry *e;
			if (at->operation != op->index || !at->counted ||
			    at->signal || at->exit_code != 0)
				continue;
			if (!(e = unknown_at(op, at->end_wall_ms)))
				continue;
			violate(vl, INV_FAIL_CLOSED, op,
				"try %d reported success (exit 0) while the "
				"journal said COMMIT_UNKNOWN ('%s')",
				at->try_number, e->operation_id);
			break;
		}
	}
}

/*
 * An operator's decision must agree with the target as it was when the
 * operator acted (the last observation before): mark-failed-pre-commit
 * over rows that landed invites a second write (1 no-duplicate, even when
 * the route then refuses to write again), mark-committed over rows that
 * are missing loses them (2 no-loss).
 */
static void check_operator(const struct rec_schedule *r, struct vlist *vl)
{
	for (size_t i = 0; i < r->napplied; i++) {
		const struct rec_applied *ap = &r->applied[i];
		const struct rec_operation *op;
		enum operator_decision d;
		size_t present = 0;
		int k = -1;

		if (!operator_moved(r, ap, ap->operation) || ap->operation < 1 ||
		    (size_t)ap->operation > r->nops)
			continue;
		op = &r->ops[ap->operation - 1];
		d = r->faults[ap->fault].decision;
		for (size_t o = 0; o < r->nobs && r->obs[o].at_ms <= ap->at_ms; o++)
			if (obs_ok(r, o))
				k = (int)o;
		if (k < 0)
			continue;
		present = (size_t)op_rows(r, op, (size_t)k, vl).present;
		if (d == DECIDE_MARK_FAILED_PRE_COMMIT && present)
			violate(vl, INV_NO_DUPLICATE, op,
				"%s, although the target held %zu of its %zu "
				"rows: the journal now says they never landed, "
				"so a retry that trusts it writes them again",
				ap->what, present, op->nrows);
		else if (d == DECIDE_MARK_COMMITTED && present < op->nrows)
			violate(vl, INV_NO_LOSS, op,
				"%s, although the target held only %zu of its "
				"%zu rows: the journal now says they landed, so "
				"no retry writes the missing ones", ap->what,
				present, op->nrows);
	}
}

/* --- 4 legal history ----------------------------------------------------- */

/* One entry's history; true when it broke the invariant. */
static bool entry_history(const struct rec_operation *op,
			  const struct rec_entry *e, struct vlist *vl)
{
	enum fc_state prev = FC_STATE_NONE;

	if (e->status)
		return false;
	for (size_t h = 0; h < e->nhistory; h++) {
		const struct journal_transition *t = &e->history[h];
		const char *problem = NULL;
		if (t->version != (long long)h + 1)
			problem = "version does not rise by one from 1";
		else if (t->from != prev)
			problem = "transition does not start where the "
				  "previous one ended";
		else if (!state_transition_legal(t->from, t->to))
			problem = "transition is not an edge of the state "
				  "table";
		if (problem) {
			violate(vl, INV_LEGAL_HISTORY, op, "'%s' history row "
				"%zu (version %lld, %s -> %s): %s",
				e->operation_id, h + 1, t->version,
				state_name(t->from), state_name(t->to), problem);
			return true;
		}
		prev = t->to;
	}
	if (e->nhistory &&
	    (e->entry.version != e->history[e->nhistory - 1].version ||
	     e->entry.state != e->history[e->nhistory - 1].to)) {
		violate(vl, INV_LEGAL_HISTORY, op, "'%s' entry (version %lld, "
			"%s) disagrees with its last history row (version "
			"%lld, %s)", e->operation_id, e->entry.version,
			state_name(e->entry.state),
			e->history[e->nhistory - 1].version,
			state_name(e->history[e->nhistory - 1].to));
		return true;
	}
	return false;
}

static void check_history(const struct rec_schedule *r, struct vlist *vl)
{
	for (size_t i = 0; i < r->nops; i++)
		for (size_t k = 0; k < r->ops[i].nentries; k++)
			if (entry_history(&r->ops[i], &r->ops[i].entries[k], vl))
				break;
}

/* --- 5 intent conflict stops early -------------------------------------- */

static void check_intent(const struct rec_schedule *r, struct vlist *vl)
{
	for (size_t i = 0; i < r->nops; i++) {
		const struct rec_operation *op = &r->ops[i];

		if (!op->source_changed_after)
			continue;
		for (size_t a = 0; a < r->nattempts; a++) {
			const struct rec_attempt *at = &r->attempts[a];
			char who[128];
			if (at->operation != op->index ||
			    at->try_number <= op->source_changed_after)
				continue;
			describe_attempt(r, (int)a, who, sizeof(who));
			for (size_t h = 0; h < at->nhits; h++) {
				if (!fault_failpoint_is_target_call(at->hits[h].name))
					continue;
				violate(vl, INV_INTENT_CONFLICT, op,
					"%s reached target call %s after the "
					"source changed under the operation",
					who, at->hits[h].name);
				break;
			}
			if (at->deltas.changed) {
				const struct rec_delta *d = &at->deltas.first;
				violate(vl, INV_INTENT_CONFLICT, op,
					"%s changed %zu target row(s) (first %s "
					"%lld->%lld) after the source changed",
					who, at->deltas.changed, d->row_key,
					d->before, d->after);
			} else if (!at->killed && !at->timed_out &&
				   !at->spawn_failed && !at->zombie &&
				   (at->signal || at->exit_code != PROTO_EXIT_STOP)) {
				violate(vl, INV_INTENT_CONFLICT, op,
					"%s did not stop with exit %d after the "
					"source changed under the operation", who,
					PROTO_EXIT_STOP);
			}
		}
	}
}

/* --- 6 reconcile before target I/O ---------------------------------------- */

static void check_reconcile(const struct rec_schedule *r, struct vlist *vl)
{
	for (size_t a = 0; a < r->nattempts; a++) {
		const struct rec_attempt *at = &r->attempts[a];
		const struct rec_operation *op = NULL;
		const struct rec_entry *e;
		char who[128];

		for (size_t i = 0; i < r->nops; i++)
			if (r->ops[i].index == at->operation)
				op = &r->ops[i];
		if (!op || !(e = first_entry(op)) ||
		    e->history[0].at >= at->start_wall_ms)
			continue; /* no entry when it started: a first attempt */
		for (size_t h = 0; h < at->nhits; h++) {
			const char *fp = at->hits[h].name;
			if (!fault_failpoint_is_target_call(fp))
				continue;
			if (strcmp(fp, FP_BEFORE_RECONCILE_PROBE) != 0) {
				describe_attempt(r, (int)a, who, sizeof(who));
				violate(vl, INV_RECONCILE_FIRST, op,
					"%s started with the journal entry '%s' in "
					"%s but its first target call was %s, not "
					FP_BEFORE_RECONCILE_PROBE, who,
					e->operation_id,
					state_name(state_at(e, at->start_wall_ms)),
					fp);
			}
			break;
		}
	}
}

/* --- 7 fencing ------------------------------------------------------------ */

static bool fences_seen(const struct rec_schedule *r)
{
	for (size_t k = 0; k < r->nobs; k++)
		if (obs_ok(r, k) && r->obs[k].fences_observed)
			return true;
	return false;
}

/* The fence of the entry named id over the observations; true when a
 * stale write landed. */
static bool fence_history(const struct rec_schedule *r,
			  const struct rec_operation *op, const char *id,
			  struct vlist *vl)
{
	long long prepared = 0, was_applied = 0;
	size_t prepared_at = 0;

	for (size_t k = 0; k < r->nobs; k++) {
		const struct rec_fence *f;
		long long applied;
		char by[400];
		if (!obs_ok(r, k) || !r->obs[k].fences_observed)
			continue;
		f = record_fence(&r->obs[k], id);
		applied = f ? f->applied_epoch : 0;
		if (applied && !was_applied && prepared > applied) {
			blame(r, k, op->index, by, sizeof(by));
			violate(vl, INV_FENCING, op, "fence of '%s' applied with "
				"epoch %lld although observation %zu already "
				"showed epoch %lld prepared and no fence: a stale "
				"write landed, %s", id, applied, prepared_at + 1,
				prepared, by);
			return true;
		}
		if (!applied && f && f->prepared_epoch > prepared) {
			prepared = f->prepared_epoch;
			prepared_at = k;
		}
		was_applied = applied;
	}
	return false;
}

/* Fences are keyed by the ids the route used: those of its entries. */
static void check_fencing(const struct rec_schedule *r, struct vlist *vl)
{
	for (size_t i = 0; i < r->nops; i++)
		for (size_t k = 0; k < r->ops[i].nentries; k++)
			if (fence_history(r, &r->ops[i],
					  r->ops[i].entries[k].operation_id, vl))
				break;
}

/* --- 8 evidence agrees ----------------------------------------------------- */

static void check_evidence(const struct rec_schedule *r, struct vlist *vl)
{
	for (size_t i = 0; i < r->nops; i++) {
		const struct rec_operation *op = &r->ops[i];

		for (size_t e = 0; e < op->nevidence; e++) {
			const struct rec_evidence *ev = &op->evidence[e];
			if (!ev->valid) {
				violate(vl, INV_EVIDENCE, op,
					"return.json of try %d is not a JSON "
					"object", ev->try_number);
				break;
			}
			const struct rec_entry *en;
			if (strcmp(ev->state, "COMPLETE") != 0)
				continue;
			/* without a journal there is no id to compare with */
			en = record_entry(op, ev->operation_id);
			if (op->nentries && !en) {
				violate(vl, INV_EVIDENCE, op,
					"return.json of try %d names operation "
					"'%s', for which the journal holds no "
					"entry", ev->try_number, ev->operation_id);
				break;
			}
			if (ev->rows_written >= 0 &&
			    ev->rows_written != (long long)op->nrows) {
				violate(vl, INV_EVIDENCE, op,
					"return.json of try %d says %lld rows "
					"written, the operation has %zu",
					ev->try_number, ev->rows_written, op->nrows);
				break;
			}
			if (en && op->journal_status == 0 && en->status == 0 &&
			    !state_committed(en->entry.state)) {
				violate(vl, INV_EVIDENCE, op,
					"return.json of try %d says COMPLETE, the "
					"journal says %s", ev->try_number,
					state_name(en->entry.state));
				break;
			}
		}
	}
}

/* --- 9 a dead journal stops the try ------------------------------------------- */

/* Did op's journal take COMMITTING while attempt a lived? */
static bool committing_during(const struct rec_operation *op,
			      const struct rec_attempt *a)
{
	for (size_t k = 0; k < op->nentries; k++) {
		const struct rec_entry *e = &op->entries[k];
		for (size_t h = 0; h < e->nhistory; h++)
			if (e->history[h].to == FC_COMMITTING &&
			    e->history[h].at >= a->start_wall_ms &&
			    e->history[h].at <= a->end_wall_ms)
				return true;
	}
	return false;
}

/*
 * A try whose journal write failed (a syscall fault answered a write or
 * sync of the journal's files with an errno) cannot know what the journal
 * holds, so it must not touch the target -- unless the journal had already
 * taken its COMMITTING (the target commit was sanctioned before the journal
 * died).  Judged only for tries that ran alone (no shared row credit).
 */
static void check_dead_journal(const struct rec_schedule *r, struct vlist *vl)
{
	for (size_t i = 0; i < r->nattempts; i++) {
		const struct rec_attempt *a = &r->attempts[i];
		const struct rec_operation *op;

		if (!a->journal_failed || !a->deltas.changed || a->concurrent ||
		    a->operation < 1 || (size_t)a->operation > r->nops)
			continue;
		op = &r->ops[a->operation - 1];
		if (committing_during(op, a))
			continue;
		violate(vl, INV_DEAD_JOURNAL, op,
			"op %d try %d changed %zu target row(s) (first '%s' "
			"%lld -> %lld) after its journal failed a write, and "
			"the journal holds no COMMITTING from that try",
			a->operation, a->try_number, a->deltas.changed,
			a->deltas.first.row_key, a->deltas.first.before,
			a->deltas.first.after);
	}
}

/* --- 10 completes --------------------------------------------------------- */

/* An operation that did not do its work with no fault to excuse it
 * (check_outcome.c says which); not judged where the harness itself could
 * not see everything. */
static void check_completes(const struct rec_schedule *r, struct vlist *vl)
{
	if (r->status)
		return;
	for (size_t k = 0; k < r->nobs; k++)
		if (!obs_ok(r, k))
			return;
	for (size_t i = 0; i < r->nops; i++) {
		char why[256];
		bool unexcused;

		check__op_outcome(r, &r->ops[i], &unexcused, why, sizeof(why));
		if (unexcused)
			violate(vl, INV_COMPLETES, &r->ops[i], "%s", why);
	}
}

/* --- 11 stable identity ----------------------------------------------------- */

/* The first retry of op that began after wall time `after` and at or
 * before `until`, or -1. */
static int retry_between(const struct rec_schedule *r, int op, long long after,
			 long long until)
{
	for (size_t a = 0; a < r->nattempts; a++) {
		const struct rec_attempt *at = &r->attempts[a];
		if (at->operation == op && at->try_number > 1 &&
		    at->start_wall_ms > after && at->start_wall_ms <= until)
			return (int)a;
	}
	return -1;
}

/*
 * A retry must find the entry its operation already has: an entry created
 * after a retry of the operation began, while an older entry existed, is
 * the operation named anew -- a retry that reconciles against the new name
 * cannot see what the old one committed, whether or not the target
 * happens to stop a duplicate this time.
 */
static void check_identity(const struct rec_schedule *r, struct vlist *vl)
{
	for (size_t i = 0; i < r->nops; i++) {
		const struct rec_operation *op = &r->ops[i];
		const struct rec_entry *first = first_entry(op);

		for (size_t k = 0; first && k < op->nentries; k++) {
			const struct rec_entry *e = &op->entries[k];
			char who[128];
			int a;
			if (e == first || !e->nhistory)
				continue;
			a = retry_between(r, op->index, first->history[0].at,
					  e->history[0].at);
			if (a < 0)
				continue;
			describe_attempt(r, a, who, sizeof(who));
			violate(vl, INV_STABLE_IDENTITY, op, "the journal entry "
				"'%s' was created after %s began, although the "
				"operation already had the entry '%s': its "
				"retries do not name it the same way",
				e->operation_id, who, first->operation_id);
			break;
		}
	}
}

int check_schedule(const struct rec_schedule *r, bool strict_faults,
		   struct check_result *res)
{
	struct vlist vl = { NULL, 0, 0 };

	memset(res, 0, sizeof(*res));
	check_duplicates(r, &vl);
	check_loss(r, &vl);
	check_fail_closed(r, &vl);
	check_operator(r, &vl);
	check_history(r, &vl);
	check_intent(r, &vl);
	if (record_has_failpoints(r))
		check_reconcile(r, &vl);
	else
		res->unobservable |= INV_BIT(INV_RECONCILE_FIRST);
	if (fences_seen(r))
		check_fencing(r, &vl);
	else
		res->unobservable |= INV_BIT(INV_FENCING);
	check_evidence(r, &vl);
	check_dead_journal(r, &vl);
	check_completes(r, &vl);
	check_identity(r, &vl);
	if (record_journal_less(r))
		res->unobservable |= CHECK_JOURNAL_INVARIANTS;
	if (!vl.rc)
		vl.rc = check__retried_stops(r, res);
	if (vl.rc) {
		free(vl.v);
		check_result_release(res);
		return vl.rc;
	}
	res->violations = vl.v;
	res->nviolations = vl.n;
	res->outcome = check__outcome(r, strict_faults, res->why, sizeof(res->why));
	return 0;
}

void check_result_release(struct check_result *res)
{
	if (!res)
		return;
	free(res->violations);
	free(res->stops);
	memset(res, 0, sizeof(*res));
}
