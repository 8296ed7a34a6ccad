/*
 * orchestrator_member.c -- the suite's services during a schedule: stopping
 * and starting etcd members at failpoints and between tries, and giving the
 * services back (namespace cleaned, every member serving) at the end.
 */
#include <stdio.h>
#include <string.h>

#include "harness/run/orchestrator_impl.h"

/* start_member faults due after this (counted) try: applied as soon as it
 * ends, before the target is observed, since an observer may need the
 * quorum they bring back.  Starting a server changes no row, so the
 * observation still credits only the try (invariant 2). */
void orch__starts_after(struct orch *o, int idx)
{
	const struct run *r = &o->runs[idx];

	for (size_t i = 0; i < o->p->nfaults && !o->rec->status; i++) {
		const struct fault *f = &o->p->faults[i];
		if (f->action == FAULT_START_MEMBER && !fault_at_failpoint(f) &&
		    f->after_attempt == r->try_number && orch__fault_for_op(f, r->op))
			orch__apply_member(o, (int)i, -1, r->op);
	}
}

/* Stop or start a member for fault fi; it fired only when the script says
 * the member is down (its process gone) or up and serving. */
void orch__apply_member(struct orch *o, int fi, int attempt, int op)
{
	const struct fault *f = &o->p->faults[fi];
	bool up = f->action == FAULT_START_MEMBER;
	char err[600];

	if (services_member(o->p->services, f->service, f->member, up, err,
			    sizeof(err))) {
		orch__trouble(o, FC_IO, "%s %s: %s", fault_action_name(f->action),
			f->member, err);
		return;
	}
	o->rec->fired[fi] = true;
	orch__note_applied(o, fi, attempt, op, "%s %s%s%s in op %d %s %d",
		     up ? "started" : "stopped", f->service,
		     f->service[0] ? "/" : "", f->member, op,
		     attempt >= 0 ? "try" : "after try",
		     attempt >= 0 ? o->runs[attempt].try_number : f->after_attempt);
}

/* The member actions at this hit, in the order the schedule lists them. */
void orch__member_actions_at(struct orch *o, int idx, const char *fp, int nth)
{
	const struct run *r = &o->runs[idx];

	for (size_t i = 0; i < o->p->nfaults && !o->rec->status; i++) {
		const struct fault *f = &o->p->faults[i];
		if (fault_is_member_action(f->action) &&
		    orch__fault_here(f, r->op, r->try_number, fp, nth))
			orch__apply_member(o, (int)i, idx, r->op);
	}
}

bool orch__changes_members(const struct orch_params *p)
{
	for (size_t i = 0; i < p->nfaults; i++)
		if (fault_is_member_action(p->faults[i].action))
			return true;
	return false;
}

/* Clean the schedule's namespace and give the services back (every
 * member serving); a failure makes the schedule unverified. */
void orch__leave_services(struct orch *o)
{
	char err[600];

	if (!o->p->keep_namespaces && o->schedule_id[0] &&
	    services_clean(o->p->services, o->schedule_id, err, sizeof(err)))
		orch__trouble(o, FC_IO, "cleaning namespace '%s': %s", o->schedule_id,
			err);
	if (services_leave(o->p->services, err, sizeof(err)))
		orch__trouble(o, FC_IO, "restoring the services: %s", err);
}
