/*
 * orchestrator_member.c -- the members family (orchestrator_family.h):
 * stop_member and start_member faults stop and start one member of an
 * etcd service of the suite, at a failpoint or between tries.
 *
 * Invariants:
 *  1. A member fault fired only when the services say the member is down
 *     (its process gone) or up and serving; otherwise the schedule is in
 *     trouble (unverified), never passed.
 *  2. A start_member due after a counted try is applied as soon as that
 *     try's process is gone, before the target is observed (an observer
 *     may need the quorum it brings back); starting a server changes no
 *     row, so the observation still credits only the try.  After a zombie
 *     (given up, still alive) it waits for the between-tries turn.
 *  3. A schedule with a member fault has the services to itself
 *     (`exclusive`), so no other schedule sees a member down.
 * The family has no state of its own.
 */
#include <stdio.h>
#include <string.h>

#include "harness/run/orchestrator_family.h"
#include "harness/run/services.h"

/* Stop or start a member for fault fi (attempt: index, -1 between). */
static void apply(struct orch_sched *s, int fi, int attempt, int op)
{
	const struct fault *f = &s->p->faults[fi];
	bool up = f->action == FAULT_START_MEMBER;
	char err[600];

	if (services_member(s->p->services, f->service, f->member, up, err,
			    sizeof(err))) {
		orch__trouble(s, FC_IO, "%s %s: %s", fault_action_name(f->action),
			      f->member, err);
		return;
	}
	s->rec->fired[fi] = true;
	orch__note_applied(s, fi, attempt, op, "%s %s%s%s in op %d %s %d",
			   up ? "started" : "stopped", f->service,
			   f->service[0] ? "/" : "", f->member, op,
			   attempt >= 0 ? "try" : "after try",
			   attempt >= 0 ? s->rec->attempts[attempt].try_number :
			   f->after_attempt);
}

/* The member actions at this hit, in the order the schedule lists them. */
static void hit(void *st, struct orch_sched *s, int idx, const char *fp,
		int nth)
{
	int op = s->rec->attempts[idx].operation;
	int k = s->rec->attempts[idx].try_number;

	for (size_t i = 0; i < s->p->nfaults && !s->rec->status; i++) {
		const struct fault *f = &s->p->faults[i];
		if (fault_is_member_action(f->action) &&
		    orch__fault_here(f, op, k, fp, nth))
			apply(s, (int)i, idx, op);
	}
}

/* start_member faults due after counted try idx (invariant 2). */
static void gone(void *st, struct orch_sched *s, int idx, bool zombie)
{
	int op = s->rec->attempts[idx].operation;
	int k = s->rec->attempts[idx].try_number;

	if (zombie)
		return;
	for (size_t i = 0; i < s->p->nfaults && !s->rec->status; i++) {
		const struct fault *f = &s->p->faults[i];
		if (f->action == FAULT_START_MEMBER && !fault_at_failpoint(f) &&
		    f->after_attempt == k && orch__fault_for_op(f, op))
			apply(s, (int)i, -1, op);
	}
}

static void between(void *st, struct orch_sched *s, int fi,
		    struct orch_between *b)
{
	if (s->p->faults[fi].action == FAULT_START_MEMBER && !b->zombie)
		return; /* applied when the try's process was gone */
	apply(s, fi, -1, b->op);
}

static bool owns(enum fault_action a)
{
	return fault_is_member_action(a);
}

const struct orch_family orch__members = {
	.owns = owns,
	.exclusive = true,
	.hit = hit,
	.gone = gone,
	.between = between,
};
