/*
 * runtime.c -- one attempt of a certified route (SPEC section 6).
 *
 * The lease epoch is the fencing token.  Every attempt that will move the
 * operation takes a lease (journal_acquire_lease: epoch + 1) and passes that
 * epoch E to every CAS and to the fence.  fence prepare(op, E) makes every
 * apply with an epoch below E fail at the target, so a zombie of an older try
 * can never land a write after a newer try prepared.
 *
 *   first attempt                        retry (entry exists)
 *   -------------                        --------------------
 *   ids (workload)                       ids; intent differs -> stop (100),
 *   create_or_get -> PREPARING             before any source parse or target
 *   lease E                                I/O
 *   prepare(E)                           COMPLETE -> return.json, exit 0
 *   CAS PREPARED                         COMMIT_UNKNOWN -> stop (100)
 *   CAS COMMITTING                       lease E, then by the state the
 *   apply(E, rows + fence record)          lease returned:
 *   probe: APPLIED                       TARGET_COMMITTED, COMMITTED_INCOMPLETE
 *   CAS TARGET_COMMITTED                   -> finish_evidence()
 *   return.json + checkpoint             COMMITTING -> reconcile_committing()
 *   CAS COMPLETE                         PREPARING, PREPARED, FAILED_PRE_COMMIT
 *                                          -> resume_pre_commit()
 *
 * Invariants:
 *  1. No target mutation without a durable COMMITTING for the same epoch
 *     first: apply() is only reached through a successful CAS to
 *     COMMITTING made under the current lease.  A dead journal therefore
 *     can never lead to a write, and any journal failure ends the attempt
 *     (75) before the next target call.
 *  2. A retry's first target call is a probe (reconcile before I/O), and an
 *     intent mismatch stops before the target is even opened.
 *  3. COMMITTING is only left on proof: TARGET_COMMITTED when the fence
 *     shows the operation applied with our intent; FAILED_PRE_COMMIT when
 *     it is absent after our prepare fenced out every older epoch (or our
 *     own apply failed before it could commit); COMMIT_UNKNOWN when neither
 *     can be shown.  Nothing is guessed.
 *  4. An attempt that learns a newer epoch owns the operation (LEASE_LOST,
 *     STALE_EPOCH, CAS_CONFLICT) stops with 75 and changes nothing more.
 *  5. Evidence is written only after TARGET_COMMITTED is durable, and the
 *     journal reaches COMPLETE only after the evidence is durable.
 *  6. Every journal transition and target call has a failpoint before and
 *     after it (docs/failpoints.md).  'f' at before_X: X is not performed
 *     and fails as an I/O error would; 'f' at after_X: X was performed but
 *     its reply is lost (journal: as if unavailable; apply: outcome
 *     unknown; probe: answer unknown).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "routes/failpoint.h"
#include "routes/runtime_impl.h"

void route_config_init(struct route_config *c)
{
	memset(c, 0, sizeof(*c));
	c->try_number = 1;
	c->lease_owner = ROUTE_DEFAULT_LEASE_OWNER;
	c->lease_ttl_ms = ROUTE_DEFAULT_LEASE_TTL_MS;
}

/* In COMMITTING with the fence prepared at our epoch: apply and prove. */
static int apply_and_prove(struct attempt *a)
{
	struct fence_batch b = {
		.operation_id = a->op,
		.intent_digest = a->intent,
		.table = workload_table(a->w),
		.strategy = workload_strategy(a->w),
		.rows = a->rows,
		.nrows = a->nrows,
	};
	enum fence_outcome outcome = FENCE_OUTCOME_UNKNOWN;
	struct fence_probe p;
	bool present;
	int rc;

	if (failpoint_hit(FP_BEFORE_TARGET_COMMIT)) {
		runtime__note(a, 0, "apply failed before reaching the target "
			      "(failpoint before_target_commit)");
		return runtime__pre_commit_failed(a, "apply failed before commit");
	}
	a->applied = true;
	rc = a->tops->apply(a->target, a->epoch, &b, &outcome);
	if (rc == FC_STALE_EPOCH)
		return runtime__stop(a, ROUTE_EXIT_RETRY, "apply refused, a newer epoch "
				     "prepared the fence: %s", a->tops->errmsg(a->target));
	if (rc == FC_INTENT_CONFLICT)
		return runtime__stop(a, ROUTE_EXIT_STOP, "INTENT_CONFLICT at the target: %s",
				     a->tops->errmsg(a->target));
	if (rc && rc != FC_ALREADY_APPLIED && outcome == FENCE_PROVED_ABSENT) {
		runtime__note(a, rc, "apply failed before commit: %s",
			      a->tops->errmsg(a->target));
		return runtime__pre_commit_failed(a, "apply failed before commit");
	}
	if (rc && rc != FC_ALREADY_APPLIED)
		runtime__note(a, rc, "apply outcome unknown: %s", a->tops->errmsg(a->target));
	present = !rc || rc == FC_ALREADY_APPLIED || outcome == FENCE_PROVED_PRESENT;
	if (failpoint_hit(FP_AFTER_TARGET_COMMIT)) {
		runtime__note(a, 0, "apply reply lost (failpoint after_target_commit)");
		present = false; /* unknown: the probe decides */
	}
	runtime__probe(a, false, &p);
	switch (p.answer) {
	case FENCE_APPLIED:
		rc = runtime__accept_applied(a, &p);
		if (rc)
			return rc;
		snprintf(a->how, sizeof(a->how), "%s %lld rows at epoch %lld",
			 a->mutated ? "applied" : "found applied",
			 a->result_rows, a->result_epoch);
		return runtime__to_target_committed(a);
	case FENCE_ABSENT:
		if (present) {
			runtime__note(a, 0, "apply reported success but the fence is absent");
			return runtime__commit_unknown(a);
		}
		/* Our apply returned without landing and our prepare fenced
		 * out every older epoch: absent for good. */
		return runtime__pre_commit_failed(a, "fence absent after a failed apply");
	default:
		if (present)
			/* The apply proved it landed; only the confirmation is
			 * missing.  COMMITTING stays, the retry's probe decides. */
			return runtime__stop(a, ROUTE_EXIT_RETRY, "applied, but %s; "
					     "operation left COMMITTING", a->why);
		return runtime__commit_unknown(a);
	}
}

/* PREPARING or PREPARED under our lease: prepare, move, apply. */
static int run_from_pre_commit(struct attempt *a)
{
	int rc = runtime__need_rows(a);

	if (rc)
		return rc;
	if (!a->prepared) {
		rc = runtime__prepare_fence(a);
		if (rc == FC_STALE_EPOCH)
			return runtime__stop(a, ROUTE_EXIT_RETRY, "%s", a->why);
		if (rc == FC_USAGE)
			return runtime__stop(a, ROUTE_EXIT_USAGE, "%s", a->why);
		if (rc)
			return runtime__pre_commit_failed(a, "fence prepare failed");
	}
	if (a->e.state == FC_PREPARING) {
		rc = runtime__move(a, FC_PREPARED, FP_BEFORE_PREPARED,
				   FP_AFTER_PREPARED,
				   json_pack("{s:I, s:s}", "epoch", (json_int_t)a->epoch,
				   "fence", a->tops->name(a->target)));
		if (rc)
			return rc;
	}
	rc = runtime__move(a, FC_COMMITTING, FP_BEFORE_COMMITTING,
			   FP_AFTER_COMMITTING,
			   json_pack("{s:I, s:I}", "epoch", (json_int_t)a->epoch,
			   "rows", (json_int_t)a->nrows));
	if (rc)
		return rc;
	return apply_and_prove(a);
}

/* ---- the retry paths ------------------------------------------------- */

static int restart(struct attempt *a)
{
	return runtime__move(a, FC_PREPARING, FP_BEFORE_RESTART,
			     FP_AFTER_RESTART, runtime__epoch_evidence(a, NULL));
}

/* COMMITTING under our lease: an earlier attempt may or may not have
 * applied.  Prove which before doing anything else. */
static int reconcile_committing(struct attempt *a)
{
	struct fence_probe p;
	int rc;

	runtime__probe(a, true, &p);
	if (p.answer == FENCE_ABSENT) {
		/* Absent now; fence out the old epoch and look again, so an
		 * apply in flight either landed before or can never land. */
		rc = runtime__prepare_fence(a);
		if (rc == FC_USAGE)
			return runtime__stop(a, ROUTE_EXIT_USAGE, "%s", a->why);
		if (rc)
			return runtime__stop(a, ROUTE_EXIT_RETRY, "%s; operation left "
					     "COMMITTING", a->why);
		runtime__probe(a, true, &p);
	}
	switch (p.answer) {
	case FENCE_APPLIED:
		rc = runtime__accept_applied(a, &p);
		if (rc)
			return rc;
		snprintf(a->how, sizeof(a->how), "reconciled: applied by epoch "
			 "%lld, %lld rows", a->result_epoch, a->result_rows);
		return runtime__to_target_committed(a);
	case FENCE_ABSENT:
		rc = runtime__move(a, FC_FAILED_PRE_COMMIT,
				   FP_BEFORE_FAILED_PRE_COMMIT,
				   FP_AFTER_FAILED_PRE_COMMIT,
				   runtime__epoch_evidence(a, "fence absent after prepare"));
		if (!rc)
			rc = restart(a);
		if (rc)
			return rc;
		return run_from_pre_commit(a);
	default:
		return runtime__commit_unknown(a);
	}
}

/* PREPARING, PREPARED or FAILED_PRE_COMMIT under our lease. */
static int resume_pre_commit(struct attempt *a, bool fresh)
{
	struct fence_probe p;
	int rc;

	if (!fresh) {
		runtime__probe(a, true, &p);
		if (p.answer == FENCE_UNKNOWN)
			return runtime__stop(a, ROUTE_EXIT_RETRY, "%s; operation left %s",
					     a->why, state_name(a->e.state));
		/* Applied by a newer epoch: our lease was taken over after we
		 * read the journal, and the newer attempt moved past COMMITTING;
		 * our view is stale, so step aside and let the next try read
		 * the journal again. */
		if (p.answer == FENCE_APPLIED && p.epoch > a->epoch)
			return runtime__stop(a, ROUTE_EXIT_RETRY, "the target holds "
					     "the operation applied by epoch %lld, "
					     "newer than ours (%lld): a newer attempt "
					     "owns it", p.epoch, a->epoch);
		if (p.answer == FENCE_APPLIED)
			return runtime__stop(a, ROUTE_EXIT_STOP, "the target holds the "
					     "operation (epoch %lld) although the journal "
					     "says %s, which the protocol rules out: an "
					     "operator must look", p.epoch,
					     state_name(a->e.state));
	}
	if (a->e.state == FC_FAILED_PRE_COMMIT) {
		rc = restart(a);
		if (rc)
			return rc;
	}
	return run_from_pre_commit(a);
}

/* COMPLETE or COMMIT_UNKNOWN: no worker moves the entry on, lease or
 * not -- the recorded result is delivered, or an operator must look. */
static int settled(struct attempt *a)
{
	if (a->e.state == FC_COMPLETE)
		return runtime__deliver_recorded(a);
	return runtime__stop(a, ROUTE_EXIT_STOP, "operation is COMMIT_UNKNOWN: "
			     "an operator must resolve it");
}

/* Under our lease: continue from whatever state the lease returned. */
static int continue_from(struct attempt *a, bool fresh)
{
	switch (a->e.state) {
	case FC_COMPLETE:
	case FC_COMMIT_UNKNOWN:
		return settled(a);
	case FC_TARGET_COMMITTED:
	case FC_COMMITTED_INCOMPLETE: {
		int rc = runtime__recorded_result(a);

		if (rc)
			return rc;
		snprintf(a->how, sizeof(a->how), "evidence finished for epoch "
			 "%lld, %lld rows", a->result_epoch, a->result_rows);
		return runtime__finish_evidence(a);
	}
	case FC_COMMITTING:
		return reconcile_committing(a);
	case FC_PREPARING:
	case FC_PREPARED:
	case FC_FAILED_PRE_COMMIT:
		if (!*a->how)
			snprintf(a->how, sizeof(a->how), "%s", "resumed");
		return resume_pre_commit(a, fresh);
	default:
		return runtime__stop(a, ROUTE_EXIT_STOP, "journal entry in state %d",
				     (int)a->e.state);
	}
}

/* The entry exists (a retry, or a concurrent worker created it). */
static int existing(struct attempt *a, bool fresh)
{
	int rc;

	if (strcmp(a->e.intent_digest, a->intent) != 0)
		return runtime__stop(a, ROUTE_EXIT_STOP, "INTENT_CONFLICT: the journal "
				     "holds intent %s for this operation, the workload "
				     "gives %s", a->e.intent_digest, a->intent);
	switch (a->e.state) {
	case FC_COMPLETE:
	case FC_COMMIT_UNKNOWN:
		return settled(a);
	case FC_TARGET_COMMITTED:
	case FC_COMMITTED_INCOMPLETE:
		break;
	default:
		if ((rc = runtime__need_rows(a)) || (rc = runtime__target_ready(a)))
			return rc;
	}
	/* The lease returns the entry as it is now; states only move forward
	 * from TARGET_COMMITTED, so the target is ready wherever needed. */
	rc = runtime__take_lease(a);
	if (rc)
		return rc;
	return continue_from(a, fresh);
}

static int first_attempt(struct attempt *a)
{
	char *meta;
	json_t *m;
	int created, rc;

	/* Everything that could be a configuration error is found before
	 * the journal entry exists. */
	if ((rc = runtime__need_rows(a)) || (rc = runtime__target_ready(a)))
		return rc;
	/* Identities and digests only: never rows, paths or URLs. */
	m = json_pack("{s:s, s:s, s:s}", "table", workload_table(a->w),
		      "strategy", workload_strategy_name(a->w),
		      "source", workload_source_digest(a->w));
	meta = m ? json_dumps(m, JSON_COMPACT) : NULL;
	json_decref(m);
	if (!meta)
		return runtime__stop(a, ROUTE_EXIT_RETRY, "out of memory");
	if (failpoint_hit(FP_BEFORE_INTENT)) {
		free(meta);
		return runtime__stop(a, ROUTE_EXIT_RETRY, "journal unavailable while "
				     "creating the intent (failpoint before_intent)");
	}
	rc = journal_create_or_get(a->j, a->op, a->intent, meta, &a->e, &created);
	free(meta);
	if (rc)
		return runtime__journal_failed(a, rc, "creating the intent");
	if (failpoint_hit(FP_AFTER_INTENT))
		return runtime__stop(a, ROUTE_EXIT_RETRY, "journal reply lost after "
				     "creating the intent (failpoint after_intent)");
	if (!created)
		return existing(a, false);
	snprintf(a->how, sizeof(a->how), "first attempt");
	return existing(a, true);
}

/* ---- the attempt ----------------------------------------------------- */

static int setup(struct attempt *a)
{
	const struct route_config *c = a->cfg;
	char err[512];
	int rc;

	if (!c->journal_url || !c->target_url || !c->workload_path)
		return runtime__stop(a, ROUTE_EXIT_USAGE, "journal, target and workload "
				     "are required");
	if (c->try_number < 1 || !c->lease_owner || !*c->lease_owner ||
	    c->lease_ttl_ms < 1)
		return runtime__stop(a, ROUTE_EXIT_USAGE, "try number, lease owner and "
				     "lease ttl must be positive");
	rc = workload_load(c->workload_path, &a->w, err, sizeof(err));
	if (rc)
		return runtime__stop(a, rc == FC_USAGE ? ROUTE_EXIT_USAGE : ROUTE_EXIT_RETRY,
				     "%s", err);
	a->op = workload_operation_id(a->w);
	a->intent = workload_intent_digest(a->w);
	rc = journal_open(c->journal_url, &a->j, err, sizeof(err));
	if (rc)
		return runtime__stop(a, rc == FC_USAGE ? ROUTE_EXIT_USAGE : ROUTE_EXIT_RETRY,
				     "journal unavailable: %s", err);
	rc = journal_init(a->j);
	if (rc)
		return runtime__journal_failed(a, rc, "opening the journal");
	return 0;
}

static int run_attempt(struct attempt *a)
{
	int rc = setup(a);

	if (rc)
		return rc;
	rc = journal_get(a->j, a->op, &a->e);
	if (rc == FC_NOT_FOUND)
		return first_attempt(a);
	if (rc)
		return runtime__journal_failed(a, rc, "reading the operation");
	snprintf(a->how, sizeof(a->how), "retry of %s", state_name(a->e.state));
	return existing(a, false);
}

int runtime_run_with(const struct route_config *c,
		     const struct runtime_target *target)
{
	struct attempt a = { .cfg = c, .tops = target };
	int status = run_attempt(&a);

	fprintf(stderr, "fencecert route%s%s%s: try %lld: operation %.23s...: "
		"%s, exit %d: %s\n", target->variant ? " (" : "",
		target->variant ? target->variant : "",
		target->variant ? ")" : "", c->try_number, a.op ? a.op : "(none)",
		a.e.state ? state_name(a.e.state) : "no journal entry", status,
		status == ROUTE_EXIT_COMPLETE ? a.how : a.why);
	if (a.target)
		target->close(a.target);
	journal_close(a.j);
	workload_free(a.w);
	return status;
}

/* ---- the certified target: the fence port ---------------------------- */

static int port_open(const char *url, void **t, char *err, size_t errlen)
{
	fence *f;
	int rc = fence_open(url, &f, err, errlen);

	*t = rc ? NULL : f;
	return rc;
}

static void port_close(void *t) { fence_close(t); }
static const char *port_name(void *t) { return fence_name(t); }
static const char *port_errmsg(void *t) { return fence_errmsg(t); }
static int port_prepare(void *t, const char *op, long long epoch)
{
	return fence_prepare(t, op, epoch);
}
static int port_apply(void *t, long long epoch, const struct fence_batch *b,
		      enum fence_outcome *outcome)
{
	return fence_apply(t, epoch, b, outcome);
}
static int port_probe(void *t, const char *op, struct fence_probe *out)
{
	return fence_probe(t, op, out);
}

const struct runtime_target runtime_fence_port = {
	.open = port_open,
	.close = port_close,
	.name = port_name,
	.errmsg = port_errmsg,
	.prepare = port_prepare,
	.apply = port_apply,
	.probe = port_probe,
};

int runtime_run(const struct route_config *c)
{
	return runtime_run_with(c, &runtime_fence_port);
}
