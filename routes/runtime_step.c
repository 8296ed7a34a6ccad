/*
 * runtime_step.c -- the steps of a route attempt: each journal transition
 * and each target call, between the failpoints that name it, with the
 * failure classification the protocol gives it (runtime.c composes them).
 *
 * Invariants:
 *  1. A step that fails leaves a->why saying why and returns the exit
 *     status; it never retries on its own -- the orchestrator retries, and
 *     the next attempt reconciles from what is durable.
 *  2. 'f' at before_X means X is not performed; 'f' at after_X means X was
 *     performed and its reply lost.  For a journal move both end the
 *     attempt with 75 (as a dead journal would); for a probe both answer
 *     FENCE_UNKNOWN; for the fence prepare both are FC_FENCE_UNAVAILABLE.
 *  3. Journal errors are classified once, in runtime__journal_failed():
 *     lost races and an unreachable journal are transient (75); anything
 *     that means journal and code disagree about the protocol stops (100).
 *  4. Evidence is written only in TARGET_COMMITTED/COMMITTED_INCOMPLETE
 *     (or COMPLETE, re-delivering); a failed write removes return.json so
 *     no evidence outlives an attempt that could not complete it.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/clock.h"
#include "routes/evidence.h"
#include "routes/failpoint.h"
#include "routes/runtime_impl.h"

#define LEASE_WAIT_MAX_MS 5000 /* longest wait for a lease about to expire */
#define LEASE_WAITS 3          /* give up (75) after this many waits */

/* Record why the attempt ends and return its exit status. */
int runtime__stop(struct attempt *a, int status, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(a->why, sizeof(a->why), fmt, ap);
	va_end(ap);
	return status;
}

/* Record what went wrong with a target call and return its code. */
int runtime__note(struct attempt *a, int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(a->why, sizeof(a->why), fmt, ap);
	va_end(ap);
	return code;
}

/* ---- the journal side ------------------------------------------------ */

int runtime__journal_failed(struct attempt *a, int rc, const char *doing)
{
	const char *msg = journal_errmsg(a->j);

	switch (rc) {
	case FC_LEASE_LOST:
		return runtime__stop(a, ROUTE_EXIT_RETRY, "lease lost while %s, a newer "
				     "attempt owns the operation: %s", doing, msg);
	case FC_LEASE_HELD:
		return runtime__stop(a, ROUTE_EXIT_RETRY, "lease held by another owner "
				     "while %s: %s", doing, msg);
	case FC_CAS_CONFLICT:
		return runtime__stop(a, ROUTE_EXIT_RETRY, "the operation moved while %s: "
				     "%s", doing, msg);
	case FC_INTENT_CONFLICT:
		return runtime__stop(a, ROUTE_EXIT_STOP, "INTENT_CONFLICT while %s: %s",
				     doing, msg);
	case FC_JOURNAL_UNAVAILABLE:
	case FC_NOMEM:
	case FC_IO:
		return runtime__stop(a, ROUTE_EXIT_RETRY, "journal unavailable while %s: "
				     "%s", doing, msg);
	default:
		/* ILLEGAL_TRANSITION, CORRUPT, ...: the journal and this code
		 * disagree about the protocol; going on would be guessing. */
		return runtime__stop(a, ROUTE_EXIT_STOP, "%s while %s: %s",
				     error_name(rc), doing, msg);
	}
}

/*
 * One CAS from the current state to `next` under our lease, between its two
 * failpoints.  `evidence` is consumed.  Returns 0 or an exit status.
 */
int runtime__move(struct attempt *a, enum fc_state next, const char *before,
		  const char *after, json_t *evidence)
{
	struct journal_entry out;
	struct journal_cas req;
	char doing[64], *text = NULL;
	int rc;

	snprintf(doing, sizeof(doing), "moving to %s", state_name(next));
	if (evidence) {
		text = json_dumps(evidence, JSON_COMPACT);
		json_decref(evidence);
		if (!text)
			return runtime__stop(a, ROUTE_EXIT_RETRY, "out of memory %s", doing);
	}
	if (failpoint_hit(before)) {
		free(text);
		return runtime__stop(a, ROUTE_EXIT_RETRY, "journal unavailable while %s "
				     "(failpoint %s)", doing, before);
	}
	req = (struct journal_cas){
		.operation_id = a->op,
		.expected_version = a->e.version,
		.expected_states = STATE_BIT(a->e.state),
		.next = next,
		.epoch = a->epoch,
		.evidence = text,
	};
	rc = journal_cas(a->j, &req, &out);
	free(text);
	if (rc)
		return runtime__journal_failed(a, rc, doing);
	a->e = out;
	if (failpoint_hit(after))
		return runtime__stop(a, ROUTE_EXIT_RETRY, "journal reply lost after "
				     "moving to %s (failpoint %s)", state_name(next), after);
	return 0;
}

json_t *runtime__epoch_evidence(struct attempt *a, const char *reason)
{
	if (reason)
		return json_pack("{s:I, s:s}", "epoch", (json_int_t)a->epoch,
				 "reason", reason);
	return json_pack("{s:I}", "epoch", (json_int_t)a->epoch);
}

static const char *fence_label(struct attempt *a)
{
	if (a->target)
		return a->tops->name(a->target);
	return a->fence[0] ? a->fence : "unknown";
}

static json_t *commit_evidence(struct attempt *a, const char *reason)
{
	json_t *ev = json_pack("{s:I, s:I, s:s}",
			       "epoch", (json_int_t)a->result_epoch,
			       "rows", (json_int_t)a->result_rows,
			       "fence", fence_label(a));

	if (ev && reason)
		json_object_set_new(ev, "reason", json_string(reason));
	return ev;
}

/*
 * Another owner holds the lease.  When it runs out soon -- no later than a
 * lease of our own would, and within LEASE_WAIT_MAX_MS -- wait for it: the
 * holder is most likely a try that died a moment ago, and the orchestrator
 * would otherwise burn a retry on our exit 75.  Returns 1 after waiting,
 * 0 when the caller should give up.  Taking over an expired lease skips
 * nothing: the state it returns is reconciled like any other.
 */
static int wait_for_lease(struct attempt *a)
{
	struct journal_entry cur;
	long long left, bound = a->cfg->lease_ttl_ms;

	if (journal_get(a->j, a->op, &cur))
		return 0;
	left = cur.lease_expires_at - clock_wall_ms();
	if (bound > LEASE_WAIT_MAX_MS)
		bound = LEASE_WAIT_MAX_MS;
	if (left > bound)
		return 0;
	if (left > 0) {
		long long ms = left + 5; /* just past the expiry */
		struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

		while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
			;
	}
	return 1;
}

int runtime__take_lease(struct attempt *a)
{
	struct journal_entry out;
	int rc, waits = 0;

	if (failpoint_hit(FP_BEFORE_LEASE))
		return runtime__stop(a, ROUTE_EXIT_RETRY, "journal unavailable while "
				     "taking the lease (failpoint before_lease)");
	rc = journal_acquire_lease(a->j, a->op, a->cfg->lease_owner,
				   a->cfg->lease_ttl_ms, &out);
	while (rc == FC_LEASE_HELD && waits++ < LEASE_WAITS && wait_for_lease(a))
		rc = journal_acquire_lease(a->j, a->op, a->cfg->lease_owner,
					   a->cfg->lease_ttl_ms, &out);
	if (rc)
		return runtime__journal_failed(a, rc, "taking the lease");
	a->e = out;
	a->epoch = out.lease_epoch;
	if (failpoint_hit(FP_AFTER_LEASE))
		return runtime__stop(a, ROUTE_EXIT_RETRY, "journal reply lost after "
				     "taking lease epoch %lld (failpoint after_lease)",
				     a->epoch);
	return 0;
}

/* Best effort after a failure that happened before any mutation could
 * land: record FAILED_PRE_COMMIT, keep the original reason, exit 75. */
int runtime__pre_commit_failed(struct attempt *a, const char *reason)
{
	char why[sizeof(a->why)];
	int rc;

	snprintf(why, sizeof(why), "%s", a->why);
	rc = runtime__move(a, FC_FAILED_PRE_COMMIT, FP_BEFORE_FAILED_PRE_COMMIT,
			   FP_AFTER_FAILED_PRE_COMMIT,
			   runtime__epoch_evidence(a, reason));
	if (rc == ROUTE_EXIT_STOP)
		return rc;
	return runtime__stop(a, ROUTE_EXIT_RETRY, "%s; operation %s", why,
			     rc ? "left as it was" : "FAILED_PRE_COMMIT");
}

/* Neither present nor absent can be shown: automatic execution stops. */
int runtime__commit_unknown(struct attempt *a)
{
	char why[sizeof(a->why)];
	int rc;

	snprintf(why, sizeof(why), "%s", a->why);
	rc = runtime__move(a, FC_COMMIT_UNKNOWN, FP_BEFORE_COMMIT_UNKNOWN,
			   FP_AFTER_COMMIT_UNKNOWN,
			   runtime__epoch_evidence(a, "fence outcome not provable"));
	if (rc)
		return rc;
	return runtime__stop(a, ROUTE_EXIT_STOP, "COMMIT_UNKNOWN (%s): an operator "
			     "must resolve it ('fencecert recover')", why);
}

/* ---- the target side ------------------------------------------------- */

int runtime__target_ready(struct attempt *a)
{
	char err[512];
	int rc;

	if (a->target)
		return 0;
	rc = a->tops->open(a->cfg->target_url, &a->target, err, sizeof(err));
	if (rc == FC_USAGE)
		return runtime__stop(a, ROUTE_EXIT_USAGE, "bad target: %s", err);
	if (rc)
		return runtime__stop(a, ROUTE_EXIT_RETRY, "target unavailable: %s", err);
	return 0;
}

int runtime__prepare_fence(struct attempt *a)
{
	int rc;

	if (failpoint_hit(FP_BEFORE_FENCE_PREPARE))
		return runtime__note(a, FC_FENCE_UNAVAILABLE, "fence prepare failed "
				     "(failpoint before_fence_prepare)");
	rc = a->tops->prepare(a->target, a->op, a->epoch);
	if (rc)
		return runtime__note(a, rc, "cannot prepare the fence at epoch %lld: %s",
				     a->epoch, a->tops->errmsg(a->target));
	a->prepared = true;
	if (failpoint_hit(FP_AFTER_FENCE_PREPARE))
		return runtime__note(a, FC_FENCE_UNAVAILABLE, "fence prepare reply lost "
				     "(failpoint after_fence_prepare)");
	return 0;
}

/* Probe between the failpoints of its kind; any failure is UNKNOWN. */
void runtime__probe(struct attempt *a, bool reconcile, struct fence_probe *p)
{
	const char *before = reconcile ? FP_BEFORE_RECONCILE_PROBE :
				 FP_BEFORE_PROBE;
	const char *after = reconcile ? FP_AFTER_RECONCILE_PROBE :
				FP_AFTER_PROBE;

	memset(p, 0, sizeof(*p));
	p->answer = FENCE_UNKNOWN;
	if (failpoint_hit(before)) {
		runtime__note(a, 0, "probe failed (failpoint %s)", before);
		return;
	}
	if (a->tops->probe(a->target, a->op, p)) {
		p->answer = FENCE_UNKNOWN;
		runtime__note(a, 0, "probe failed: %s", a->tops->errmsg(a->target));
		return;
	}
	if (failpoint_hit(after)) {
		p->answer = FENCE_UNKNOWN;
		runtime__note(a, 0, "probe reply lost (failpoint %s)", after);
	}
}

/* The fence shows the operation applied: make sure it is ours.  Returns 0
 * or an exit status. */
int runtime__accept_applied(struct attempt *a, const struct fence_probe *p)
{
	if (strcmp(p->intent_digest, a->intent) != 0)
		return runtime__stop(a, ROUTE_EXIT_STOP, "INTENT_CONFLICT: the target "
				     "holds the operation applied with intent %s", p->intent_digest);
	if (p->epoch > a->epoch)
		return runtime__stop(a, ROUTE_EXIT_RETRY, "the target holds the operation "
				     "applied by epoch %lld, newer than ours (%lld)",
				     p->epoch, a->epoch);
	a->result_epoch = p->epoch;
	a->result_rows = p->rows;
	a->mutated = a->applied && p->epoch == a->epoch;
	return 0;
}

/* ---- evidence and completion ----------------------------------------- */

static int evidence_failed(struct attempt *a, const char *why)
{
	int rc = 0;

	evidence_remove_return(a->cfg->xcom_dir);
	if (a->e.state == FC_TARGET_COMMITTED)
		rc = runtime__move(a, FC_COMMITTED_INCOMPLETE,
				   FP_BEFORE_COMMITTED_INCOMPLETE,
				   FP_AFTER_COMMITTED_INCOMPLETE,
				   commit_evidence(a, "evidence not written"));
	if (rc == ROUTE_EXIT_STOP)
		return rc;
	return runtime__stop(a, ROUTE_EXIT_RETRY, "%s; operation %s", why,
			     state_name(a->e.state));
}

static int write_evidence(struct attempt *a, const char *state, char *err,
			  size_t errlen)
{
	struct route_result r = {
		.operation_id = a->op,
		.intent_digest = a->intent,
		.rows = a->result_rows,
		.try_number = a->cfg->try_number,
		.epoch = a->result_epoch,
		.mutated = a->mutated,
	};
	enum evidence_sync sync = a->cfg->evidence_no_fsync ?
				  EVIDENCE_NO_FSYNC : EVIDENCE_FSYNC;
	int rc;

	if (failpoint_hit(FP_BEFORE_EVIDENCE)) {
		snprintf(err, errlen, "evidence write failed (failpoint before_evidence)");
		return FC_IO;
	}
	rc = evidence_write_checkpoint(a->cfg->run_dir, state, &r, sync, err,
				       errlen);
	if (!rc)
		rc = evidence_write_return(a->cfg->xcom_dir, &r, sync, err,
					   errlen);
	if (rc)
		return rc;
	if (failpoint_hit(FP_AFTER_EVIDENCE)) {
		snprintf(err, errlen, "evidence reply lost (failpoint after_evidence)");
		return FC_IO;
	}
	return 0;
}

/* TARGET_COMMITTED or COMMITTED_INCOMPLETE -> evidence -> COMPLETE. */
int runtime__finish_evidence(struct attempt *a)
{
	char err[512];
	int rc;

	if (write_evidence(a, "TARGET_COMMITTED", err, sizeof(err)))
		return evidence_failed(a, err);
	rc = runtime__move(a, FC_COMPLETE, FP_BEFORE_COMPLETE, FP_AFTER_COMPLETE,
			   json_pack("{s:I, s:I, s:I}", "rows", (json_int_t)a->result_rows,
			   "try", (json_int_t)a->cfg->try_number,
			   "epoch", (json_int_t)a->result_epoch));
	if (rc)
		return rc;
	return ROUTE_EXIT_COMPLETE;
}

int runtime__to_target_committed(struct attempt *a)
{
	int rc = runtime__move(a, FC_TARGET_COMMITTED,
			       FP_BEFORE_TARGET_COMMITTED,
			       FP_AFTER_TARGET_COMMITTED,
			       commit_evidence(a, NULL));

	return rc ? rc : runtime__finish_evidence(a);
}

/* Find rows and epoch of the committed result: in the entry's evidence, or
 * the newest history row that carries both (an operator's recovery may
 * have moved the entry with other evidence).  Returns 1 when found. */
static int evidence_result(struct attempt *a, const char *text)
{
	json_t *obj = json_loads(text, 0, NULL);
	json_t *r = json_object_get(obj, "rows"), *e = json_object_get(obj, "epoch");
	const char *f = json_string_value(json_object_get(obj, "fence"));
	int ok = json_is_integer(r) && json_is_integer(e);

	if (ok) {
		a->result_rows = json_integer_value(r);
		a->result_epoch = json_integer_value(e);
		if (f)
			snprintf(a->fence, sizeof(a->fence), "%s", f);
	}
	json_decref(obj);
	return ok;
}

int runtime__recorded_result(struct attempt *a)
{
	struct journal_transition *h;
	size_t n;
	int rc, found = 0;

	if (evidence_result(a, a->e.evidence))
		return 0;
	rc = journal_history(a->j, a->op, &h, &n);
	if (rc)
		return runtime__journal_failed(a, rc, "reading the history");
	for (size_t i = n; i-- > 0 && !found;)
		found = evidence_result(a, h[i].evidence);
	free(h);
	if (!found)
		return runtime__stop(a, ROUTE_EXIT_STOP, "journal says %s but records no "
				     "rows and epoch for the result", state_name(a->e.state));
	return 0;
}

/* COMPLETE already: hand back the recorded result, touch nothing. */
int runtime__deliver_recorded(struct attempt *a)
{
	char err[512];
	int rc = runtime__recorded_result(a);

	if (rc)
		return rc;
	snprintf(a->how, sizeof(a->how), "already COMPLETE, no target I/O");
	if (write_evidence(a, "COMPLETE", err, sizeof(err))) {
		evidence_remove_return(a->cfg->xcom_dir);
		return runtime__stop(a, ROUTE_EXIT_RETRY, "%s", err);
	}
	return ROUTE_EXIT_COMPLETE;
}

/* ---- the source rows ---------------------------------------------- */

int runtime__need_rows(struct attempt *a)
{
	char err[512];

	if (a->have_rows)
		return 0;
	if (workload_rows(a->w, &a->rows, &a->nrows, err, sizeof(err)))
		return runtime__stop(a, ROUTE_EXIT_USAGE, "%s", err);
	a->have_rows = true;
	return 0;
}
