/*
 * recover_apply.c -- recover_apply() (`fencecert recover apply`): carry
 * out one action the plan allows, as an audited compare-and-set.
 *
 * Invariants:
 *  1. apply gathers the facts afresh and decides again (recover.c); a
 *     version other than --expect-version, or any change racing it
 *     (CAS_CONFLICT, LEASE_LOST), is RECOVERY_CONFLICT (exit 8) and
 *     nothing is moved.
 *  2. An absence is acted on only after fencing: a new lease, the fence
 *     prepared at its epoch, a second probe.  Only then can no older
 *     attempt still land, so only then is FAILED_PRE_COMMIT true.  If the
 *     second probe disagrees, the decision is made again, never carried
 *     over.
 *  3. Every move is one CAS with epoch 0 (the operator's) on (expected
 *     version, current state), whose evidence is the audit record
 *     (recover_audit_json()): who, why, what, forced or not, before and
 *     after, and the fence answer it rests on.
 *  4. --force only widens a FORCE_ONLY verdict (the fence can prove
 *     nothing); a fencing step that fails under --force is skipped and
 *     the audit shows no fenced epoch.
 *  5. commit-prepared / rollback-prepared resolve the operation's prepared
 *     transaction at the target first (fence_resolve_in_doubt()), then
 *     probe again: the journal moves only when the fence now proves what
 *     the action claims (APPLIED / ABSENT), and the audit carries that
 *     proof.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "common/clock.h"
#include "journal/journal_json.h"
#include "common/cli.h"
#include "recover/recover_impl.h"
#include "recover/recover_tool.h"

/* Recovery holds its lease only across prepare + probe + CAS.  Safety
 * rests on the epoch, not on the lease running: a short lease lets the
 * route's next attempt (which waits out a lease ending within 5 s) start
 * right after. */
#define RECOVER_LEASE_OWNER "fencecert-recover"
#define RECOVER_LEASE_TTL_MS 1000

/* ---- apply ------------------------------------------------------------ */

/* Whether option o may be carried out now; 0 or an exit status. */
static int allowed(const struct recover_ctx *c, const struct recover_option *o)
{
	const char *act = recover_action_name(c->r->action);
	char span[32];

	switch (o->verdict) {
	case RECOVER_SAFE:
		return 0;
	case RECOVER_FORCE_ONLY:
		if (c->r->force) {
			recover__warn("forcing '%s' on '%s' without proof "
				      "from the fence: %s", act, c->r->op,
				      o->why);
			return 0;
		}
		return cli_fail(FC_ILLEGAL_TRANSITION, "action '%s' on '%s' "
				"needs --force: %s", act, c->r->op, o->why);
	case RECOVER_WAIT:
		return cli_fail(FC_LEASE_HELD, "action '%s' on '%s' must wait: "
				"lease of '%s' (epoch %lld) ends in %s", act,
				c->r->op, c->e.lease_owner, c->e.lease_epoch,
				recover__fmt_span(c->e.lease_expires_at - c->now,
						  span, sizeof(span)));
	default:
		return cli_fail(FC_ILLEGAL_TRANSITION, "refusing '%s' on '%s' "
				"(%s): %s", act, c->r->op,
				state_name(c->e.state), o->why);
	}
}

static int conflict(const struct recover_ctx *c, const char *what)
{
	return cli_fail(FC_RECOVERY_CONFLICT, "operation '%s' changed while "
			"recovering (%s); run 'fencecert recover plan' again",
			c->r->op, what);
}

/* A fencing step failed: fatal unless forced, where the action goes on
 * without the proof (and the audit shows no fenced epoch). */
static int fencing_failed(const struct recover_ctx *c, int code,
			  const char *msg)
{
	if (!(c->r->force))
		return cli_fail(code, "cannot fence out older attempts of "
				"'%s': %s", c->r->op, msg);
	recover__warn("cannot fence out older attempts of '%s' (%s); going on "
		      "because of --force", c->r->op, msg);
	return 0;
}

/*
 * Invariant 3: take a new lease, prepare the fence at its epoch (no older
 * epoch can apply after this returns), probe again.  *fenced receives the
 * epoch, or stays 0 when a forced action goes on without it.
 */
static int fence_out(struct recover_ctx *c, long long *fenced)
{
	struct journal_entry leased;
	int rc;

	rc = journal_acquire_lease(c->j, c->r->op, RECOVER_LEASE_OWNER,
				   RECOVER_LEASE_TTL_MS, &leased);
	if (rc == FC_LEASE_HELD)
		return cli_fail(rc, "cannot take the lease of '%s': %s",
				c->r->op, journal_errmsg(c->j));
	if (rc)
		return fencing_failed(c, rc, journal_errmsg(c->j));
	if (leased.version != c->e.version)
		return conflict(c, "its version moved before the lease");
	if (!c->f)
		return fencing_failed(c, FC_FENCE_UNAVAILABLE, c->probe_err);
	rc = fence_prepare(c->f, c->r->op, leased.lease_epoch);
	if (rc == FC_STALE_EPOCH)
		return conflict(c, "a newer epoch prepared the fence");
	if (rc)
		return fencing_failed(c, rc, fence_errmsg(c->f));
	*fenced = leased.lease_epoch;
	c->e = leased;
	recover__probe(c);
	recover__settle_facts(c);
	c->facts.lease_live = false; /* the running lease is ours */
	return 0;
}

/* After fencing the answer may have changed: decide again. */
static int recheck(struct recover_ctx *c, const struct recover_option *before,
		   const struct recover_option *now)
{
	if (now->verdict == before->verdict ||
	    (now->verdict == RECOVER_SAFE && before->verdict ==
	     RECOVER_FORCE_ONLY))
		return 0;
	if (c->p.answer == FENCE_APPLIED)
		return cli_fail(FC_RECOVERY_CONFLICT, "after fencing '%s', the "
				"fence shows it applied at epoch %lld: an older "
				"attempt landed it; run 'fencecert recover "
				"plan' again", c->r->op, c->p.epoch);
	if (now->verdict == RECOVER_FORCE_ONLY)
		return cli_fail(FC_FENCE_UNAVAILABLE, "cannot prove '%s' "
				"absent after fencing: %s", c->r->op,
				c->probe_err);
	return allowed(c, now);
}

static const char *after_hint(enum fc_state next)
{
	return next == FC_TARGET_COMMITTED ?
	       "run the route again (clear the task): it finishes the "
	       "evidence without writing to the target" :
	       "run the route again (clear the task): it starts over at a "
	       "new epoch and applies once";
}

static int report_applied(const struct recover_ctx *c,
			  const struct journal_entry *before,
			  const struct journal_entry *after, bool forced)
{
	if (c->r->json) {
		/* The audit record is after.evidence. */
		return recover__print_json(json_pack("{s:s, s:s, s:b, "
			"s:{s:s, s:I}, s:o, s:s}", "operation_id", c->r->op,
			"action", recover_action_name(c->r->action),
			"forced", forced, "before", "state",
			state_name(before->state), "version",
			(json_int_t)before->version,
			"after", journal_entry_to_json(after),
			"next", after_hint(after->state)));
	}
	printf("recovered  %s\n", c->r->op);
	printf("           %s (v%lld) -> %s (v%lld) by '%s' with %s%s\n",
	       state_name(before->state), before->version,
	       state_name(after->state), after->version, c->r->actor,
	       recover_action_name(c->r->action), forced ? " (forced)" : "");
	recover__print_fence_line(c);
	printf("next       %s\n", after_hint(after->state));
	return recover__flush_text();
}

static int move(struct recover_ctx *c, const struct recover_option *o,
		long long fenced, bool forced)
{
	struct recover_audit au = {
		.actor = c->r->actor, .reason = c->r->reason,
		.action = c->r->action, .forced = forced,
		.at = clock_wall_ms(), .before_state = c->e.state,
		.before_version = c->e.version, .after_state = o->next,
		.answer = c->p.answer, .applied_epoch = c->p.epoch,
		.rows = c->p.rows, .fenced_epoch = fenced,
		.fence_name = c->f ? fence_name(c->f) : NULL,
	};
	struct journal_cas req = {
		.operation_id = c->r->op,
		.expected_version = c->r->expect,
		.expected_states = STATE_BIT(c->e.state),
		.next = o->next,
		.epoch = 0, /* the operator's: no lease check */
	};
	struct journal_entry before = c->e, after;
	char *audit;
	int rc;

	if (recover_audit_json(&au, &audit))
		return cli_fail(FC_USAGE, "actor and reason must be non-empty "
				"UTF-8 (at most %d and %d bytes)",
				RECOVER_ACTOR_MAX - 1, RECOVER_REASON_MAX - 1);
	req.evidence = audit;
	rc = journal_cas(c->j, &req, &after);
	free(audit);
	if (rc == FC_CAS_CONFLICT || rc == FC_LEASE_LOST)
		return conflict(c, journal_errmsg(c->j));
	if (rc)
		return cli_fail(rc, "%s", journal_errmsg(c->j));
	return report_applied(c, &before, &after, forced);
}

/* Invariant 5: COMMIT PREPARED or ROLLBACK PREPARED, then prove it. */
static int resolve_prepared(struct recover_ctx *c)
{
	bool commit = c->r->action == RECOVER_COMMIT_PREPARED;
	enum fence_probe_answer want = commit ? FENCE_APPLIED : FENCE_ABSENT;
	int n = 0, rc = fence_resolve_in_doubt(c->f, c->r->op, commit, &n);

	if (rc)
		return cli_fail(rc, "cannot %s the prepared transaction of '%s': "
				"%s", commit ? "commit" : "roll back", c->r->op,
				fence_errmsg(c->f));
	if (n == 0)
		return conflict(c, "its prepared transaction was resolved "
				"meanwhile");
	recover__probe(c);
	if (c->p.answer != want)
		return cli_fail(FC_RECOVERY_CONFLICT, "after %s the prepared "
				"transaction of '%s' the fence answers %s, not %s%s%s",
				commit ? "committing" : "rolling back", c->r->op,
				recover_answer_name(c->p.answer),
				recover_answer_name(want), *c->probe_err ? ": " : "",
				c->probe_err);
	return 0;
}

static int run_apply(struct recover_ctx *c)
{
	struct recover_plan plan, again;
	struct recover_option *o;
	long long fenced = 0;
	bool forced;
	int rc;

	c->writes = true;
	if ((rc = recover__gather(c)))
		return rc;
	if (c->e.version != c->r->expect)
		return cli_fail(FC_RECOVERY_CONFLICT, "operation '%s' is at "
				"version %lld (%s), not %lld: it changed since "
				"it was planned; run 'fencecert recover plan' "
				"again", c->r->op, c->e.version,
				state_name(c->e.state), c->r->expect);
	recover_plan_compute(&c->facts, &plan);
	o = &plan.options[c->r->action];
	if ((rc = allowed(c, o)))
		return rc;
	forced = o->verdict == RECOVER_FORCE_ONLY;
	if ((c->r->action == RECOVER_COMMIT_PREPARED ||
	     c->r->action == RECOVER_ROLLBACK_PREPARED) &&
	    (rc = resolve_prepared(c)))
		return rc;
	if (o->fences_first) {
		if ((rc = fence_out(c, &fenced)))
			return rc;
		recover_plan_compute(&c->facts, &again);
		if ((rc = recheck(c, o, &again.options[c->r->action])))
			return rc;
	}
	return move(c, o, fenced, forced);
}


int recover_apply(const struct recover_request *r)
{
	return recover__run(r, run_apply);
}
