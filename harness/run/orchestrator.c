/*
 * orchestrator.c -- the Airflow model for one schedule (orchestrator.h).
 *
 * Invariants:
 *  1. At most one counted try of a task is running; zombies (given-up
 *     paused tries) may run beside it but their exits never decide the
 *     task (rec_attempt.counted is set only on the try the task waited for).
 *  2. Every process end is followed by a target observation before any
 *     other process is started or resumed, so each row change is credited
 *     to the attempt(s) alive in that interval.
 *  3. A fault fires at most once per operation it names (operation 0:
 *     each operation): kill/pause/fail at the hit-th HIT of its failpoint
 *     in its try, between-try faults once their try ended.  Faults that
 *     never fired stay marked so (never silently passed).
 *  4. Nothing outlives the schedule: zombies never resumed are killed at
 *     the end and every process is reaped before the journal is read.
 *
 * Per try:                              per event:
 *   spawn --> drive until it exits        HIT  -> record; maybe resume a
 *     |       or is given up as a                  zombie waiting for this
 *     |       zombie                               point; kill / pause /
 *     v                                            fail / continue
 *                                         PASS -> record; an error if
 *                                                  anything acts there
 *   between-try faults, resume           EXIT -> record, observe target
 *   zombies waiting for "next"
 */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "journal/journal.h"
#include "harness/run/collect.h"
#include "common/fsutil.h"
#include "harness/run/orchestrator_impl.h"
#include "common/put.h"

/* --- small helpers ----------------------------------------------------- */

void orch__trouble(struct orch *o, int code, const char *fmt, ...)
{
	va_list ap;

	if (o->rec->status)
		return;
	o->rec->status = code;
	va_start(ap, fmt);
	vsnprintf(o->rec->error, sizeof(o->rec->error), fmt, ap);
	va_end(ap);
}

static long long rel_now(const struct orch *o)
{
	return supervisor_now_ms() - o->t0;
}

bool orch__fault_for_op(const struct fault *f, int op)
{
	return f->operation == 0 || f->operation == op;
}

void orch__note_applied(struct orch *o, int fault, int attempt, int op,
			const char *fmt, ...)
{
	struct rec_applied *ap = RECORD_PUSH(o->rec->applied, o->rec->napplied);
	va_list va;

	if (!ap) {
		o->rc = FC_NOMEM;
		return;
	}
	ap->fault = fault;
	ap->attempt = attempt;
	ap->operation = op;
	ap->at_ms = rel_now(o);
	va_start(va, fmt);
	vsnprintf(ap->what, sizeof(ap->what), fmt, va);
	va_end(va);
}

/* --- observing ------------------------------------------------------------ */

static const struct rec_observation *last_good_obs(const struct orch *o)
{
	for (size_t k = o->rec->nobs; k-- > 0;)
		if (o->rec->obs[k].status == 0)
			return &o->rec->obs[k];
	return NULL;
}

/* Observe the target after attempt `idx` ended (-1: at the end). */
static void observe(struct orch *o, int idx)
{
	const struct rec_observation *prev = last_good_obs(o);
	size_t prev_i = prev ? (size_t)(prev - o->rec->obs) : 0;
	struct rec_observation *ob = RECORD_PUSH(o->rec->obs, o->rec->nobs);

	if (!ob) {
		o->rc = FC_NOMEM;
		return;
	}
	prev = prev ? &o->rec->obs[prev_i] : NULL; /* the array may have moved */
	ob->at_ms = rel_now(o);
	ob->after_attempt = idx;
	if (observer_take(o->obs, ob)) {
		orch__trouble(o, ob->status, "%s", observer_errmsg(o->obs));
		return;
	}
	if (idx >= 0) {
		o->rec->attempts[idx].obs_after = (int)(o->rec->nobs - 1);
		if (record_credit_delta(&o->rec->attempts[idx], prev, ob))
			o->rc = FC_NOMEM;
	}
}

/* --- processes -------------------------------------------------------------- */

static int step(struct orch *o, long long deadline);

/* Start try k of op.  Returns the attempt index, or -1 when it could not
 * start (recorded as spawn_failed, and as trouble). */
static int spawn_try(struct orch *o, int op, int k)
{
	char *xcom = orch__op_path(o, op, "xcom/try-%d", k);
	char *run_dir = orch__op_path(o, op, "run");
	char *out = orch__op_path(o, op, "try-%d.out", k);
	char *errp = orch__op_path(o, op, "try-%d.err", k);
	char **env = NULL, err[400];
	struct rec_attempt *a;
	struct run *r;
	int idx = -1, rc;

	if (!xcom || !run_dir || !out || !errp)
		goto nomem;
	if (fs_mkdirs(run_dir) || fs_empty_dir(xcom)) {
		orch__trouble(o, FC_IO, "cannot prepare '%s'", xcom);
		goto done;
	}
	env = orch__attempt_env(o, op, k, xcom, run_dir);
	a = RECORD_PUSH(o->rec->attempts, o->rec->nattempts);
	r = a ? RECORD_PUSH(o->runs, o->nruns) : NULL;
	if (!env || !a || !r)
		goto nomem;
	idx = (int)o->rec->nattempts - 1;
	a->operation = op;
	a->try_number = k;
	a->obs_after = -1;
	a->start_ms = rel_now(o);
	a->start_wall_ms = journal_now_ms();
	a->stdout_path = out;
	a->stderr_path = errp;
	out = errp = NULL;
	r->op = op;
	r->try_number = k;
	r->pause_fault = -1;
	orch__proxy_try_starts(o, op, k);
	rc = orch__seccomp_plan(o, r, err, sizeof(err));
	if (rc == FC_NOMEM)
		goto nomem;
	if (!rc)
		rc = supervisor_spawn(o->p->sv, &(struct sv_spawn){
			.argv = o->argv,
			.env = env,
			.stdout_path = a->stdout_path,
			.stderr_path = a->stderr_path,
			.failpoints = true,
			.timeout_ms = o->p->suite->orchestrator.attempt_timeout_ms,
			.seccomp = r->plan,
			.fork_server = o->p->route->fork_server,
			.label = o->p->route->name,
		}, &r->proc, err, sizeof(err));
	if (rc) {
		a->spawn_failed = true;
		a->end_ms = a->start_ms;
		a->end_wall_ms = a->start_wall_ms;
		a->exit_code = -1;
		r->ended = true;
		orch__trouble(o, rc, "%s", err);
		goto done;
	}
	a->pid = sv_proc_pid(r->proc);
	sv_proc_set_data(r->proc, (void *)(intptr_t)idx);
	goto done;
nomem:
	o->rc = FC_NOMEM;
	idx = -1;
done:
	orch__free_list(env);
	free(xcom);
	free(run_dir);
	free(out);
	free(errp);
	return idx;
}

static void on_exit_event(struct orch *o, int idx)
{
	struct rec_attempt *a = &o->rec->attempts[idx];
	struct run *r = &o->runs[idx];
	const struct sv_status *st = sv_proc_status(r->proc);

	a->end_ms = st->end_ms - o->t0;
	a->end_wall_ms = journal_now_ms();
	a->exit_code = st->end == SV_EXITED ? st->code : -1;
	a->signal = st->end == SV_SIGNALED ? st->signal : 0;
	a->timed_out = st->timed_out;
	a->killed = st->killed;
	if (a->exit_code == 64)
		orch__trouble(o, FC_USAGE, "route exited 64 (usage or configuration "
			"error) in op %d try %d; see '%s'", a->operation,
			a->try_number, a->stderr_path);
	orch__collect_syscalls(o, idx);
	sv_proc_free(r->proc);
	orch__seccomp_release(r);
	r->proc = NULL;
	r->ended = true;
	r->paused = false;
	if (!r->given_up)
		orch__starts_after(o, idx);
	observe(o, idx);
}

/* Does fault f apply at the nth hit of fp in try k of op? */
bool orch__fault_here(const struct fault *f, int op, int k, const char *fp,
		       int nth)
{
	return fault_at_failpoint(f) && f->attempt == k && orch__fault_for_op(f, op) &&
	       strcmp(f->failpoint, fp) == 0 && (f->hit ? f->hit : 1) == nth;
}

static int match_fault(const struct orch *o, int op, int k, const char *fp,
		       int nth)
{
	for (size_t i = 0; i < o->p->nfaults; i++) {
		const struct fault *f = &o->p->faults[i];
		if (fault_is_member_action(f->action) ||
		    fault_is_proxy_action(f->action))
			continue; /* applied beside: member_actions_at, orch__proxy_hit */
		if (!orch__fault_here(f, op, k, fp, nth))
			continue;
		return (int)i;
	}
	return -1;
}

static void resume_zombie(struct orch *o, int zi, const char *why)
{
	struct run *z = &o->runs[zi];
	long long timeout = o->p->suite->orchestrator.attempt_timeout_ms;

	z->resumed = true;
	z->paused = false;
	o->rec->attempts[zi].resumed = true;
	orch__note_applied(o, z->pause_fault, zi, z->op, "resumed op %d try %d %s",
		     z->op, z->try_number, why);
	if (o->p->faults[z->pause_fault].action == FAULT_HOLD_COMMIT) {
		/* the COMMIT goes on, also when its try has ended meanwhile:
		 * the late COMMIT of a worker that gave up waiting */
		orch__proxy_release(o, z->pause_fault);
		if (!z->ended) /* it was never stopped */
			sv_proc_set_deadline(z->proc, supervisor_now_ms() + timeout);
		return;
	}
	sv_proc_set_deadline(z->proc, supervisor_now_ms() + timeout);
	if (sv_proc_answer(z->proc, 'c')) {
		/* it died while stopped; its exit event follows */
	}
	sv_proc_resume(z->proc);
}

/*
 * Let every lease another try may hold expire before a try starts or a
 * zombie continues (Airflow's retry_delay / zombie detection): whether an
 * attempt meets a live lease or a stale epoch then never depends on how
 * fast the machine is, and the zombie always meets the adversarial case.
 */
/* Keep serving live processes until the monotonic time `until`. */
static void wait_until(struct orch *o, long long until)
{
	while (!o->rc && supervisor_now_ms() < until)
		if (step(o, until))
			break;
}

static void wait_leases(struct orch *o)
{
	wait_until(o, supervisor_now_ms() + o->zombie_wait_ms);
}

static void wait_ended(struct orch *o, int idx)
{
	while (!o->rc && !o->runs[idx].ended)
		if (step(o, -1))
			break;
}

/* The next try of a zombie's task reached `fp`: resume the zombies that
 * wait for exactly that, and let each run to its end first. */
static void resume_waiting_at(struct orch *o, int idx, const char *fp)
{
	for (size_t zi = 0; zi < o->nruns; zi++) {
		const struct run *z = &o->runs[zi];
		if (!orch__zombie_resumes_at(o, (int)zi, idx, fp))
			continue;
		o->resume_done[z->pause_fault] = true;
		wait_leases(o);
		resume_zombie(o, (int)zi, "when the next try reached its failpoint");
		wait_ended(o, (int)zi);
		wait_leases(o); /* before the held try goes on */
	}
}

/* A failpoint the route passed without waiting (not in its wait set):
 * recorded like a continued HIT; if anything was meant to happen there the
 * wait set was wrong, and the schedule cannot be certified. */
static void on_passed(struct orch *o, int idx, const char *fp, int nth)
{
	const struct run *r = &o->runs[idx];

	if (orch__acts_at(o, idx, fp, nth))
		orch__trouble(o, FC_USAGE, "op %d try %d passed failpoint %s#%d "
			      "without waiting, but the schedule acts there "
			      "(wrong wait set)", r->op, r->try_number, fp, nth);
}

static void on_hit_event(struct orch *o, int idx, const char *fp, long long at,
			 bool passed)
{
	struct run *r = &o->runs[idx];
	struct rec_attempt *a = &o->rec->attempts[idx];
	struct rec_hit *h = RECORD_PUSH(a->hits, a->nhits);
	const struct fault *f;
	size_t hi;
	int nth = 0, fi;

	if (!h) {
		o->rc = FC_NOMEM;
		return;
	}
	hi = a->nhits - 1;
	put(h->name, sizeof(h->name), "%s", fp);
	h->at_ms = at - o->t0;
	h->answer = 'c';
	for (size_t i = 0; i < a->nhits; i++)
		nth += strcmp(a->hits[i].name, fp) == 0;
	if (passed) {
		on_passed(o, idx, fp, nth);
		return;
	}
	resume_waiting_at(o, idx, fp);
	if (r->ended)
		return; /* killed meanwhile (e.g. its deadline) */
	orch__member_actions_at(o, idx, fp, nth);
	orch__proxy_hit(o, idx, fp, nth);
	a = &o->rec->attempts[idx];
	/* (op, try, failpoint, nth hit) happens once: no fault fires twice
	 * for an operation, and an operation-0 fault fires for each one */
	fi = match_fault(o, r->op, r->try_number, fp, nth);
	if (fi < 0) {
		if (sv_proc_answer(r->proc, 'c')) {
			/* died while waiting: its exit event follows */
		}
		return;
	}
	f = &o->p->faults[fi];
	o->rec->fired[fi] = true;
	switch (f->action) {
	case FAULT_KILL:
		a->hits[hi].answer = 'k';
		orch__note_applied(o, fi, idx, r->op, "kill at %s#%d in op %d try %d",
			     fp, nth, r->op, r->try_number);
		sv_proc_kill(r->proc);
		break;
	case FAULT_PAUSE:
		a->hits[hi].answer = 'p';
		orch__note_applied(o, fi, idx, r->op, "pause at %s#%d in op %d try %d",
			     fp, nth, r->op, r->try_number);
		sv_proc_set_deadline(r->proc, 0);
		sv_proc_pause(r->proc);
		r->paused = true;
		r->paused_at = supervisor_now_ms();
		r->pause_fault = fi;
		break;
	default:
		a->hits[hi].answer = 'f';
		orch__note_applied(o, fi, idx, r->op, "fail at %s#%d in op %d try %d",
			     fp, nth, r->op, r->try_number);
		if (sv_proc_answer(r->proc, 'f')) {
			/* died while waiting: its exit event follows */
		}
		break;
	}
}

/* Wait for one event (until deadline; negative: no bound) and act on it. */
static int step(struct orch *o, long long deadline)
{
	struct sv_event ev;
	int rc = supervisor_wait(o->p->sv, deadline, &ev);

	if (rc) {
		o->rc = rc;
		return rc;
	}
	if (ev.kind == SV_EV_NONE)
		return 0;
	if (ev.kind == SV_EV_HIT)
		on_hit_event(o, (int)(intptr_t)sv_proc_data(ev.proc), ev.failpoint,
			     ev.at_ms, ev.passed);
	else
		on_exit_event(o, (int)(intptr_t)sv_proc_data(ev.proc));
	return o->rc;
}

/* --- tries and tasks --------------------------------------------------------- */

/*
 * Wait for the next event of running attempt idx.  While a hold_commit is
 * armed for it the proxy is asked every HOLD_POLL_MS whether it holds the
 * COMMIT: then the attempt waits like a paused one (a zombie once given
 * up), with no deadline, until the COMMIT is released.
 */
#define HOLD_POLL_MS 10

static void wait_running(struct orch *o, int idx)
{
	struct run *r = &o->runs[idx];
	bool armed;
	int fi = orch__proxy_holding(o, idx, &armed);

	if (fi >= 0) {
		sv_proc_set_deadline(r->proc, 0);
		r->paused = true;
		r->paused_at = supervisor_now_ms();
		r->pause_fault = fi;
		return;
	}
	step(o, armed ? supervisor_now_ms() + HOLD_POLL_MS : -1);
}

/* Run try k until it ends or is given up as a zombie.  Returns its index
 * or -1 when it could not start. */
static int run_try(struct orch *o, int op, int k)
{
	int idx = spawn_try(o, op, k);

	if (idx < 0)
		return -1;
	while (!o->rc && !o->runs[idx].ended) {
		struct run *r = &o->runs[idx];
		if (r->paused) {
			long long until = r->paused_at + o->zombie_wait_ms;
			if (supervisor_now_ms() >= until) {
				r->given_up = true;
				o->rec->attempts[idx].zombie = true;
				break;
			}
			step(o, until);
		} else {
			wait_running(o, idx);
		}
	}
	orch__proxy_try_ends(o, idx);
	o->rec->attempts[idx].counted = true;
	return idx;
}

/* lose_xcom / lose_pod / change_source / recover / member actions once try
 * k of op ended (or was given up as a zombie: `zombie`).  The start_member
 * faults of a try that ended were applied at its end already
 * (starts_after).  *cleared: an operator's recover apply moved the
 * operation, after which the operator clears the task in Airflow (a new
 * try even after exit 100). */
static void between_tries(struct orch *o, int op, int k, bool zombie,
			  bool *cleared)
{
	*cleared = false;
	for (size_t i = 0; i < o->p->nfaults && !o->rc; i++) {
		const struct fault *f = &o->p->faults[i];
		char *path = NULL, err[300], intent[IDENTITY_DIGEST_LEN + 1];
		char what[sizeof(o->rec->applied->what)];
		long long left;
		int rc = 0;

		if (fault_at_failpoint(f) || f->after_attempt != k ||
		    !orch__fault_for_op(f, op))
			continue;
		switch (f->action) {
		case FAULT_START_MEMBER:
			if (zombie)
				orch__apply_member(o, (int)i, -1, op);
			continue;
		case FAULT_STOP_MEMBER:
			orch__apply_member(o, (int)i, -1, op);
			continue;
		case FAULT_LOSE_XCOM:
			for (int t = 1; t <= k && !rc; t++) {
				path = orch__op_path(o, op, "xcom/try-%d", t);
				rc = path ? fs_empty_dir(path) : FC_NOMEM;
				free(path);
			}
			orch__note_applied(o, (int)i, -1, op, "lost XCom of op %d tries 1-%d",
				     op, k);
			break;
		case FAULT_LOSE_POD:
			path = orch__op_path(o, op, "run");
			rc = path ? fs_empty_dir(path) : FC_NOMEM;
			free(path);
			orch__note_applied(o, (int)i, -1, op, "lost the pod of op %d after "
				     "try %d", op, k);
			break;
		case FAULT_CHANGE_SOURCE:
			rc = workgen_change_source(o->wg, op, intent, err, sizeof(err));
			if (rc) {
				orch__trouble(o, rc, "change_source: %s", err);
				continue;
			}
			if (!o->rec->ops[op - 1].source_changed_after)
				o->rec->ops[op - 1].source_changed_after = k;
			orch__note_applied(o, (int)i, -1, op, "changed the source of op %d "
				     "after try %d", op, k);
			break;
		case FAULT_RECOVER:
			/* the stopped try's lease runs out before anyone acts */
			wait_leases(o);
			rc = orch__operator(o, (int)i, op, k, what, sizeof(what),
					    &left);
			orch__note_applied(o, (int)i, -1, op, "%s", what);
			if (rc != 0) {
				rc = 0; /* refused: recorded, the fault did not fire */
				continue;
			}
			if (o->rec->napplied)
				o->rec->applied[o->rec->napplied - 1].moved = true;
			wait_until(o, supervisor_now_ms() + left);
			*cleared = true;
			break;
		default:
			continue;
		}
		if (rc)
			orch__trouble(o, rc, "cannot apply %s after try %d of op %d",
				fault_action_name(f->action), k, op);
		else
			o->rec->fired[i] = true;
	}
}

/* Resume given-up zombies of op that wait for "the next try ended" (and,
 * when `task_over`, every zombie still waiting), one at a time. */
static void resume_after(struct orch *o, int op, int k, bool task_over)
{
	for (size_t zi = 0; zi < o->nruns && !o->rc; zi++) {
		struct run *z = &o->runs[zi];
		const struct fault *f;
		if (!z->given_up || z->resumed || z->op != op ||
		    z->try_number >= k || z->pause_fault < 0)
			continue;
		f = &o->p->faults[z->pause_fault];
		if (z->ended && f->action != FAULT_HOLD_COMMIT)
			continue; /* a held COMMIT outlives its try */
		if (f->resume == RESUME_NEVER)
			continue;
		if (f->resume == RESUME_AT_NEXT_FAILPOINT && !task_over &&
		    z->try_number + 1 != k)
			continue; /* its next try has not run yet */
		if (f->resume == RESUME_AFTER_NEXT_ATTEMPT)
			o->resume_done[z->pause_fault] = true;
		wait_leases(o);
		resume_zombie(o, (int)zi, f->resume == RESUME_AFTER_NEXT_ATTEMPT ?
			      "after the next try ended" :
			      "after the next try ended (its failpoint never came)");
		wait_ended(o, (int)zi);
	}
}

static void run_task(struct orch *o, int op)
{
	struct rec_operation *ro = &o->rec->ops[op - 1];
	int k, idx = -1, last = o->tries;
	bool cleared;

	ro->task = TASK_RETRIES_EXHAUSTED;
	for (k = 1; k <= last && !o->rc; k++) {
		const struct rec_attempt *a;

		/* a retry waits out the previous try's lease, unless it was
		 * given up as a zombie (that wait is already over) */
		if (idx >= 0 && !o->rec->attempts[idx].zombie)
			wait_leases(o);
		idx = run_try(o, op, k);

		if (idx < 0)
			return; /* cannot start the route: nothing to certify */
		between_tries(o, op, k, o->rec->attempts[idx].zombie, &cleared);
		resume_after(o, op, k, false);
		a = &o->rec->attempts[idx];
		if (!a->zombie && !a->signal && a->exit_code == 0) {
			ro->task = TASK_SUCCESS;
			break;
		}
		if (cleared) {
			/* Airflow's "clear": the task runs again with its retries
			 * renewed, even after exit 100 (docs/harness.md) */
			last = k + o->tries;
			if (o->max_try < last)
				o->max_try = last;
			continue;
		}
		if (a->zombie || a->signal)
			continue;
		if (a->exit_code == 100) {
			ro->task = TASK_FAILED;
			break;
		}
	}
	/* no next try will come for zombies still waiting for one */
	resume_after(o, op, last + 1, true);
}

/* Kill what is left (zombies never resumed) and reap everything. */
static void finish_processes(struct orch *o)
{
	for (size_t i = 0; i < o->nruns; i++) {
		if (o->runs[i].ended)
			continue;
		sv_proc_kill(o->runs[i].proc);
		wait_ended(o, (int)i);
	}
}

/* --- setup and the whole schedule --------------------------------------------- */

/* A pause whose resume was asked for but did not happen as asked has not
 * fired as the schedule says. */
static void settle_fired(struct orch *o)
{
	for (size_t i = 0; i < o->p->nfaults; i++) {
		const struct fault *f = &o->p->faults[i];
		if (f->action == FAULT_PAUSE && f->resume != RESUME_NEVER &&
		    !o->resume_done[i])
			o->rec->fired[i] = false;
	}
}

int orchestrator_run(const struct orch_params *p, struct rec_schedule **out,
		     char *err, size_t errlen)
{
	const struct suite *s = p->suite;
	struct orch o = { .p = p };
	bool entered = false;
	int rc, enter_rc;

	*out = NULL;
	o.rec = record_new();
	if (!o.rec)
		return FC_NOMEM;
	/* before the clock starts: waiting for a member-changing schedule
	 * elsewhere is not part of this one */
	enter_rc = services_enter(p->services, orch__changes_members(p), err, errlen);
	entered = enter_rc == 0;
	o.t0 = supervisor_now_ms();
	o.rec->wall_start_ms = journal_now_ms();
	put(o.rec->route, sizeof(o.rec->route), "%s", p->route->name);
	put(o.rec->scenario, sizeof(o.rec->scenario), "%s", p->scenario);
	put(o.rec->schedule, sizeof(o.rec->schedule), "%s", p->schedule);
	o.tries = s->orchestrator.retries + 1;
	o.max_try = o.tries;
	o.zombie_wait_ms = s->orchestrator.zombie_delay_ms;
	if (s->orchestrator.lease_ttl_ms > o.zombie_wait_ms)
		o.zombie_wait_ms = s->orchestrator.lease_ttl_ms;
	rc = orch__record_faults(&o);
	if (rc)
		goto fatal;
	rc = entered ? orch__setup(&o, err, errlen) : enter_rc;
	if (rc == FC_NOMEM)
		goto fatal;
	if (rc) {
		orch__trouble(&o, rc, "%s", err);
	} else {
		rc = orch__record_ops(&o);
		if (rc)
			goto fatal;
		for (int op = 1; op <= (int)o.rec->nops && !o.rc && !o.rec->status;
		     op++)
			run_task(&o, op);
		finish_processes(&o);
		observe(&o, -1);
		settle_fired(&o);
		record_count_concurrency(o.rec);
		collect_journal(o.rec, o.journal_url);
		if (collect_evidence(o.rec, p->dir, o.max_try))
			o.rc = FC_NOMEM;
	}
	orch__proxies_free(&o); /* no held transaction keeps its locks */
	if (entered)
		orch__leave_services(&o);
	entered = false;
	if (o.rc) {
		rc = o.rc;
		goto fatal;
	}
	o.rec->duration_ms = rel_now(&o);
	rc = 0;
	*out = o.rec;
	o.rec = NULL;
fatal:
	if (rc)
		snprintf(err, errlen, "out of memory running schedule");
	finish_processes(&o);
	if (entered && services_leave(p->services, err, errlen)) {
		/* out of memory already: the schedule has no record to mark */
	}
	for (size_t i = 0; i < o.nruns; i++) {
		sv_proc_free(o.runs[i].proc);
		orch__seccomp_release(&o.runs[i]);
	}
	free(o.runs);
	free(o.resume_done);
	workgen_free(o.wg);
	observer_free(o.obs);
	orch__proxies_free(&o);
	free(o.journal_url);
	orch__free_list(o.argv);
	orch__free_list(o.env);
	record_free(o.rec);
	return rc;
}
