/*
 * orchestrator.c -- the Airflow model for one schedule (orchestrator.h):
 * the loop that runs tasks, tries and zombies, and the faults that are
 * the loop's own.  Every other fault belongs to a family behind
 * orchestrator_family.h, whose hooks this loop calls at each event.
 *
 * Invariants:
 *  1. At most one counted try of a task is running; zombies (given-up
 *     paused tries) may run beside it but their exits never decide the
 *     task (rec_attempt.counted is set only on the try the task waited for).
 *  2. Every process end is followed by a target observation before any
 *     other process is started or resumed, so each row change is credited
 *     to the attempt(s) alive in that interval; so is giving up on a
 *     paused try, so the record shows what the next try met.
 *  3. A fault fires at most once per operation it names (operation 0:
 *     each operation): kill/pause/fail at the hit-th HIT of its failpoint
 *     in its try, between-try faults once their try ended.  Faults that
 *     never fired stay marked so (never silently passed).
 *  4. Nothing outlives the schedule: zombies never resumed are killed at
 *     the end and every process is reaped before the journal is read; the
 *     families are released only once every process is gone.
 *  5. The loop calls down only: into the families (through
 *     orchestrator_family.c and their tables), its setup, the wait set and
 *     the schedule context; none of them calls back.
 *  6. Every process end is also followed by a listing of the journal
 *     (collect.h) before anything else starts or resumes, so each journal
 *     entry the route wrote is attributed to the operation whose attempt
 *     wrote it, under the id the route gave it.  The harness reads the
 *     journal on its own way there: {proxy:NAME} in the route's journal
 *     URL is the proxy's upstream for it, so no proxy fault meets it.
 *  7. Crash states (orch_params.snaps): a seeded try is never run here --
 *     its recorded state is restored and observed like an ended try, and
 *     the next try waits for its lease as if it had just ended then; the
 *     recorded try is snapshotted at each HIT before anything acts there;
 *     a power loss kills every process of the schedule and puts its files
 *     back to what was synced before the next try starts.
 *
 * Per try:                              per event:
 *   spawn --> drive until it exits        HIT  -> record; maybe resume a
 *     |       or is given up as a                  zombie waiting for this
 *     |       zombie                               point; family hooks;
 *     v                                            kill / pause / fail /
 *   between-try faults, resume                     continue
 *   zombies waiting for "next"            PASS -> record; an error if
 *                                                  anything acts there
 *                                         EXIT -> record, family hooks,
 *                                                 observe target
 */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/fsutil.h"
#include "common/put.h"
#include "common/sqlite_reader.h"
#include "harness/proc/freeze.h"
#include "harness/proc/pool.h"
#include "harness/run/collect.h"
#include "harness/run/orchestrator_family.h"
#include "harness/run/orchestrator_setup.h"
#include "harness/run/orchestrator_wait.h"
#include "journal/identity.h"
#include "journal/journal.h"

/* What the loop knows about one attempt beyond its record. */
struct run {
	sv_proc *proc;       /* NULL once ended */
	int op, try_number;
	bool ended;
	bool paused;         /* stopped at a failpoint by a pause fault, or
				held by a family (a proxy's held COMMIT) */
	long long paused_at; /* monotonic */
	int pause_fault;     /* index into faults, -1 */
	bool given_up;       /* zombie: the task moved on */
	bool resumed;
	bool faulted;        /* a fault acted at one of its HITs */
};

struct orch {
	struct orch_sched s;         /* what the families see */
	struct orch_setup su;        /* workload, observer, argv, env */
	struct orch_families fams;   /* each family's state, opaque here */
	struct run *runs;            /* parallel to s.rec->attempts */
	size_t nruns;
	long long zombie_wait_ms;
	int tries;
	int max_try;         /* highest try number a task may reach: tries, more
				after an operator cleared a task */
	bool *resume_done;   /* per fault: its resume happened as asked */
	collect_watch *watch; /* the journal, listed after every process end */
	int settled_obs;     /* the last observation, when every process had
				ended before it and nothing ran or changed a
				file since; -1 */
};

/* Does a family hold fault a's process without stopping it (and let it go
 * on with its resume hook)? */
static bool held_by_family(enum fault_action a)
{
	const struct orch_family *f = orch__family_of(a);

	return f && f->resume;
}

/* --- observing ------------------------------------------------------------ */

/* The index of the last observation that succeeded, or -1. */
static int last_good_obs(const struct orch *o)
{
	const struct rec_schedule *rec = o->s.rec;

	for (size_t k = rec->nobs; k-- > 0;)
		if (rec->obs[k].status == 0)
			return (int)k;
	return -1;
}

static bool all_ended(const struct orch *o)
{
	for (size_t i = 0; i < o->nruns; i++)
		if (!o->runs[i].ended)
			return false;
	return true;
}

/* Something may change the schedule's files or the target from now on:
 * the next observation reads them again. */
static void unsettle(struct orch *o)
{
	o->settled_obs = -1;
}

/* The final observation repeats observation prev when nothing can have
 * changed since (settled_obs): its rows and fences, not read again.  Only
 * for state in the schedule's files: a server may still finish a
 * transaction of a killed route after the route's end. */
static int repeat_observation(struct orch *o, int prev, int n,
			      struct rec_observation *ob)
{
	const struct rec_observation *was = &o->s.rec->obs[prev];
	int rc = obs_store_same(o->s.rec->rows, n, prev);

	if (rc)
		return rc;
	ob->fences_observed = was->fences_observed;
	if (was->nfences) {
		ob->fences = malloc(was->nfences * sizeof(*ob->fences));
		if (!ob->fences)
			return FC_NOMEM;
		memcpy(ob->fences, was->fences, was->nfences * sizeof(*ob->fences));
		ob->nfences = was->nfences;
	}
	ob->status = 0;
	return 0;
}

/* Observe the target after attempt `idx` ended (-1: at the end). */
static void observe(struct orch *o, int idx)
{
	struct rec_schedule *rec = o->s.rec;
	int prev = last_good_obs(o);
	struct rec_observation *ob = RECORD_PUSH(rec->obs, rec->nobs);
	int n = (int)rec->nobs - 1;
	int rc;

	if (!ob) {
		orch__out_of_memory(&o->s);
		return;
	}
	ob->at_ms = orch__elapsed_ms(&o->s);
	ob->after_attempt = idx;
	ob->applied_before = rec->napplied;
	if (idx < 0 && prev >= 0 && prev == o->settled_obs && o->s.p->snaps) {
		if ((rc = repeat_observation(o, prev, n, ob))) {
			ob->status = rc;
			if (rc == FC_NOMEM)
				orch__out_of_memory(&o->s);
			else
				orch__trouble(&o->s, rc, "%s",
					      obs_store_errmsg(rec->rows));
		}
		return;
	}
	if (observer_take(o->su.obs, rec->rows, n, ob)) {
		orch__trouble(&o->s, ob->status, "%s", observer_errmsg(o->su.obs));
		return;
	}
	o->settled_obs = all_ended(o) ? n : -1;
	if (idx >= 0) {
		rec->attempts[idx].obs_after = n;
		rc = record_credit_delta(&rec->attempts[idx], rec->rows, prev, n,
					 o->s.p->full_deltas ? SIZE_MAX :
					 RECORD_DELTAS_KEPT);
		if (rc == FC_NOMEM)
			orch__out_of_memory(&o->s);
		else if (rc)
			orch__trouble(&o->s, rc, "%s",
				      obs_store_errmsg(rec->rows));
	}
}

/* --- processes -------------------------------------------------------------- */

static int step(struct orch *o, long long deadline);
static void power_lost_at_call(struct orch *o, int idx);

/* The record and the run of a new attempt: try k of op.  Its index, or -1
 * when out of memory. */
static int new_attempt(struct orch *o, int op, int k)
{
	struct rec_schedule *rec = o->s.rec;
	struct rec_attempt *a = RECORD_PUSH(rec->attempts, rec->nattempts);
	struct run *r = a ? RECORD_PUSH(o->runs, o->nruns) : NULL;

	if (!a || !r)
		return -1;
	a->operation = op;
	a->try_number = k;
	a->obs_after = -1;
	a->start_ms = orch__elapsed_ms(&o->s);
	a->start_wall_ms = clock_wall_ms();
	r->op = op;
	r->try_number = k;
	r->pause_fault = -1;
	return (int)rec->nattempts - 1;
}

/* Attempt idx could not start: recorded as spawn_failed, and as trouble. */
static void spawn_failed(struct orch *o, int idx, int rc, const char *err)
{
	struct rec_attempt *a = &o->s.rec->attempts[idx];

	a->spawn_failed = true;
	a->end_ms = a->start_ms;
	a->end_wall_ms = a->start_wall_ms;
	a->exit_code = -1;
	o->runs[idx].ended = true;
	orch__trouble(&o->s, rc, "%s", err);
}

/* Start attempt idx with env.  0, also when it could not start (then
 * recorded by spawn_failed), or FC_NOMEM. */
static int spawn_attempt(struct orch *o, int idx, char **env)
{
	const struct orch_params *p = o->s.p;
	struct rec_attempt *a = &o->s.rec->attempts[idx];
	struct run *r = &o->runs[idx];
	struct sv_spawn req = {
		.argv = o->su.argv,
		.env = env,
		.stdout_path = a->stdout_path,
		.stderr_path = a->stderr_path,
		.failpoints = true,
		.timeout_ms = p->suite->orchestrator.attempt_timeout_ms,
		.fork_server = p->route->fork_server,
		.label = p->route->name,
		.writable = (const char *const *)o->su.writable,
	};
	char err[400];
	int rc = orch__families_try_starts(&o->fams, &o->s, idx, &req, err,
					   sizeof(err));

	if (rc == FC_NOMEM)
		return rc;
	unsettle(o);
	if (!rc)
		rc = supervisor_spawn(p->sv, &req, &r->proc, err, sizeof(err));
	if (rc) {
		spawn_failed(o, idx, rc, err);
		return 0;
	}
	a->pid = sv_proc_pid(r->proc);
	sv_proc_set_data(r->proc, (void *)(intptr_t)idx);
	pool_progress(); /* the run watchdog's clock (pool.h) */
	return 0;
}

/* Start try k of op.  Returns the attempt index, or -1 when it could not
 * start (recorded as spawn_failed, and as trouble) or out of memory. */
static int spawn_try(struct orch *o, int op, int k)
{
	char *xcom = orch__op_path(&o->s, op, "xcom/try-%d", k);
	char *run_dir = orch__op_path(&o->s, op, "run");
	char *out = orch__op_path(&o->s, op, "try-%d.out", k);
	char *errp = orch__op_path(&o->s, op, "try-%d.err", k);
	char **env = NULL;
	int idx = -1;

	if (!xcom || !run_dir || !out || !errp)
		goto nomem;
	if (fs_mkdirs(run_dir) || fs_empty_dir(xcom)) {
		orch__trouble(&o->s, FC_IO, "cannot prepare '%s'", xcom);
		goto done;
	}
	env = orch__attempt_env(&o->su, &o->s, op, k, xcom, run_dir);
	idx = env ? new_attempt(o, op, k) : -1;
	if (idx < 0)
		goto nomem;
	o->s.rec->attempts[idx].stdout_path = out;
	o->s.rec->attempts[idx].stderr_path = errp;
	out = errp = NULL;
	if (spawn_attempt(o, idx, env) == 0)
		goto done;
nomem:
	orch__out_of_memory(&o->s);
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
	struct rec_attempt *a = &o->s.rec->attempts[idx];
	struct run *r = &o->runs[idx];
	const struct sv_status *st = sv_proc_status(r->proc);

	a->end_ms = st->end_ms - o->s.t0;
	a->end_wall_ms = clock_wall_ms();
	a->exit_code = st->end == SV_EXITED ? st->code : -1;
	a->signal = st->end == SV_SIGNALED ? st->signal : 0;
	a->timed_out = st->timed_out;
	a->killed = st->killed;
	a->contained = st->contained;
	a->descendants_killed = st->descendants_killed;
	if (a->exit_code == 64)
		orch__trouble(&o->s, FC_USAGE, "route exited 64 (usage or "
			      "configuration error) in op %d try %d; see '%s'",
			      a->operation, a->try_number, a->stderr_path);
	orch__families_exited(&o->fams, &o->s, idx, r->proc);
	sv_proc_free(r->proc);
	r->proc = NULL;
	r->ended = true;
	r->paused = false;
	orch__families_gone(&o->fams, &o->s, idx, r->given_up);
	if (o->s.power_lost >= 0)
		power_lost_at_call(o, idx);
	observe(o, idx);
	if (o->watch && collect_watch_attempt(o->watch, o->s.rec, idx))
		orch__out_of_memory(&o->s);
}

/* The loop's own fault at the nth hit of fp in try k of op (kill, pause,
 * fail), or -1; the families act there beside it (families_hit). */
static int match_fault(const struct orch *o, int op, int k, const char *fp,
		       int nth)
{
	for (size_t i = 0; i < o->s.p->nfaults; i++) {
		const struct fault *f = &o->s.p->faults[i];

		if (!orch__family_of(f->action) &&
		    orch__fault_here(f, op, k, fp, nth))
			return (int)i;
	}
	return -1;
}

static void resume_zombie(struct orch *o, int zi, const char *why)
{
	struct run *z = &o->runs[zi];
	long long timeout = o->s.p->suite->orchestrator.attempt_timeout_ms;

	z->resumed = true;
	z->paused = false;
	o->s.rec->attempts[zi].resumed = true;
	orch__note_applied(&o->s, z->pause_fault, zi, z->op,
			   "resumed op %d try %d %s", z->op, z->try_number, why);
	unsettle(o);
	if (held_by_family(o->s.p->faults[z->pause_fault].action)) {
		/* e.g. a held COMMIT goes on, also when its try has ended
		 * meanwhile: the late COMMIT of a worker that gave up waiting */
		orch__families_resume(&o->fams, &o->s, z->pause_fault);
		if (!z->ended) /* it was never stopped */
			sv_proc_set_deadline(z->proc, clock_mono_ms() + timeout);
		return;
	}
	sv_proc_set_deadline(z->proc, clock_mono_ms() + timeout);
	if (sv_proc_answer(z->proc, 'c')) {
		/* it died while stopped; its exit event follows */
	}
	sv_proc_resume(z->proc);
}

/* Keep serving live processes until the monotonic time `until`, without
 * the worker's turn: every process of the schedule has ended, is paused
 * or waits at a failpoint, so nothing of it needs a CPU meanwhile. */
static void wait_until(struct orch *o, long long until)
{
	if (o->s.fatal || clock_mono_ms() >= until)
		return;
	pool_turn_give();
	while (!o->s.fatal && clock_mono_ms() < until)
		if (step(o, until))
			break;
	pool_turn_take();
}

/* The wall time since which no process of the schedule can have taken
 * or renewed a lease: the latest end of a process (a seeded try's as
 * recorded) or pause of one stopped by a pause fault; now while one
 * runs, waits at a failpoint or is held by a family without a stop. */
static long long quiet_since(const struct orch *o)
{
	long long now = clock_wall_ms(), since = 0;

	for (size_t i = 0; i < o->nruns; i++) {
		const struct run *r = &o->runs[i];
		long long t;
		if (r->ended)
			t = o->s.rec->attempts[i].end_wall_ms;
		else if (r->paused && r->pause_fault >= 0 &&
			 !held_by_family(o->s.p->faults[r->pause_fault].action))
			t = now - (clock_mono_ms() - r->paused_at);
		else
			return now;
		if (t > since)
			since = t;
	}
	return since;
}

/*
 * Let every lease another try may hold expire before a try starts or a
 * zombie continues (Airflow's retry_delay / zombie detection): whether an
 * attempt meets a live lease or a stale epoch then never depends on how
 * fast the machine is, and the zombie always meets the adversarial case.
 * Counted from quiet_since(): a lease outlives its last renewal by its
 * ttl at most, and the harness's own work since then counts.
 */
static void wait_leases(struct orch *o)
{
	long long left = quiet_since(o) + o->zombie_wait_ms - clock_wall_ms();

	if (left > 0)
		wait_until(o, clock_mono_ms() + left);
}

static void wait_ended(struct orch *o, int idx)
{
	if (idx < 0 || (size_t)idx >= o->nruns)
		return;
	while (!o->s.fatal && !o->runs[idx].ended)
		if (step(o, -1))
			break;
}

/* Does zombie zi resume when attempt idx (its task's next try) reaches
 * fp? */
static bool zombie_resumes_at(const struct orch *o, int zi, int idx,
			      const char *fp)
{
	const struct run *z = &o->runs[zi], *b = &o->runs[idx];
	const struct fault *f;

	if (!z->given_up || z->resumed || z->ended || z->op != b->op ||
	    z->try_number + 1 != b->try_number || z->pause_fault < 0)
		return false;
	f = &o->s.p->faults[z->pause_fault];
	return f->resume == RESUME_AT_NEXT_FAILPOINT &&
	       strcmp(f->resume_at, fp) == 0;
}

/* The next try of a zombie's task reached `fp`: resume the zombies that
 * wait for exactly that, and let each run to its end first. */
static void resume_waiting_at(struct orch *o, int idx, const char *fp)
{
	for (size_t zi = 0; zi < o->nruns; zi++) {
		const struct run *z = &o->runs[zi];
		if (!zombie_resumes_at(o, (int)zi, idx, fp))
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
	bool acts = orch__fault_acts_at(o->s.p, r->op, r->try_number, fp, nth);

	for (size_t zi = 0; zi < o->nruns && !acts; zi++)
		acts = zombie_resumes_at(o, (int)zi, idx, fp);
	if (acts)
		orch__trouble(&o->s, FC_USAGE, "op %d try %d passed failpoint "
			      "%s#%d without waiting, but the schedule acts "
			      "there (wrong wait set)", r->op, r->try_number, fp,
			      nth);
}

/* --- crash states (invariant 7) ------------------------------------------ */

/* Put state `digest` in the schedule's directory.  With the power-loss
 * model on, it starts again there: from `model` (recorded with the state,
 * snap_take_model) when given, else with everything restored counting as
 * synced (a machine that came back up). */
static int restore_state(struct orch *o, const char *digest, const char *model,
			 char *err, size_t errlen)
{
	int rc;

	/* no connection of ours may span the old and the new files */
	observer_drop(o->su.obs);
	unsettle(o);
	rc = snap_restore(o->s.p->snaps, digest, o->s.p->dir, err, errlen);

	if (rc || !o->s.durable)
		return rc;
	snap_durable_free(o->s.durable);
	o->s.durable = NULL;
	if (model)
		return snap_durable_restore(o->s.p->snaps, o->s.p->dir, model,
					    &o->s.durable, err, errlen);
	return snap_durable_new(o->s.p->snaps, o->s.p->dir, &o->s.durable, err,
				errlen);
}

/* Is attempt idx the try this schedule records: the first try of op 1 run
 * here (op 1's seeds are its first tries), while no fault acted in it? */
static bool recording(const struct orch *o, int idx)
{
	const struct run *r = &o->runs[idx];

	return o->s.p->record && o->s.p->snaps && r->op == 1 && !r->faulted &&
	       !r->given_up && r->try_number == (int)o->s.p->nseed + 1;
}

/* The states a kill and a power loss at the nth hit of fp would leave. */
static void record_point(struct orch *o, int idx, const char *fp, int nth)
{
	struct rec_schedule *rec = o->s.rec;
	struct rec_snap *sn = RECORD_PUSH(rec->snaps, rec->nsnaps);
	struct frozen fz = { 0 };
	char err[400];
	int rc;

	if (!sn) {
		orch__out_of_memory(&o->s);
		return;
	}
	sn->operation = o->runs[idx].op;
	sn->try_number = o->runs[idx].try_number;
	put(sn->failpoint, sizeof(sn->failpoint), "%s", fp);
	sn->hit = nth;
	sn->wall_ms = clock_wall_ms();
	sn->start_wall_ms = rec->attempts[idx].start_wall_ms;
	/* the route's other processes stand still too: a kill stops them
	 * all at once (harness/proc/freeze.h) */
	rc = freeze_tree(sv_proc_pid(o->runs[idx].proc), &fz);
	if (rc)
		snprintf(err, sizeof(err), "cannot stop the attempt's processes");
	if (!rc)
		rc = snap_take(o->s.p->snaps, o->s.p->dir, sn->kill, err,
			       sizeof(err));
	if (!rc && o->s.durable)
		rc = snap_take_power(o->s.durable, sn->power, err, sizeof(err));
	/* no model (a name that is not UTF-8, a hard link, no room): the
	 * schedules that lose power after a kill here run whole */
	if (!rc && o->s.durable && snap_take_model(o->s.durable, sn->model,
						    err, sizeof(err)))
		sn->model[0] = '\0';
	if (fz.n)
		freeze_thaw(&fz);
	if (rc)
		rec->nsnaps--;
	if (rc == FC_NOSPACE)
		orch__state_refused(&o->s, err);
	else if (rc)
		orch__trouble(&o->s, rc, "recording the state at %s#%d: %s", fp,
			      nth, err);
}

/* The machine goes down now: the power state of the schedule's files is
 * taken, every process of the schedule dies, and the files go back to that
 * state.  0, or an error with err set. */
static int cut_power(struct orch *o, char *err, size_t errlen)
{
	char digest[SNAP_DIGEST_HEX + 1];
	int rc = FC_USAGE;

	if (o->s.durable)
		rc = snap_take_power(o->s.durable, digest, err, errlen);
	else
		snprintf(err, errlen, "the route keeps state outside the "
			 "schedule's files (its journal or target is not a "
			 "sqlite: or file: URL under {dir}), which cannot lose "
			 "power here");
	for (size_t i = 0; i < o->nruns; i++)
		if (!o->runs[i].ended)
			sv_proc_kill(o->runs[i].proc);
	for (size_t i = 0; i < o->nruns && !o->s.fatal; i++)
		wait_ended(o, (int)i);
	return rc ? rc : restore_state(o, digest, NULL, err, errlen);
}

/* power_loss (fault fi) at the nth hit of fp in attempt idx: the machine
 * goes down -- every process of the schedule dies -- and comes back with
 * the files as they were synced; the change is credited to idx. */
static void lose_power(struct orch *o, int idx, int fi, const char *fp,
		       int nth)
{
	struct run *r = &o->runs[idx];
	char err[400];
	int rc;

	orch__note_applied(&o->s, fi, idx, r->op, "power lost at %s#%d in op "
			   "%d try %d", fp, nth, r->op, r->try_number);
	if ((rc = cut_power(o, err, sizeof(err)))) {
		orch__trouble(&o->s, rc, "power_loss at %s#%d: %s", fp, nth, err);
		return;
	}
	observe(o, idx);
}

/* A syscall fault's power_loss killed attempt idx as it made the call
 * (orch_sched.power_lost): the rest of the machine goes down too.  The
 * attempt's end is then observed as usual. */
static void power_lost_at_call(struct orch *o, int idx)
{
	char err[400];
	int fi = o->s.power_lost, rc;

	o->s.power_lost = -1;
	if ((rc = cut_power(o, err, sizeof(err))))
		orch__trouble(&o->s, rc, "power_loss at a call (%s) in op %d "
			      "try %d: %s", o->s.p->faults[fi].rule,
			      o->runs[idx].op, o->runs[idx].try_number, err);
}

/* The seed of try k of op, or NULL. */
static const struct orch_seed *seed_of(const struct orch *o, int op, int k)
{
	for (size_t i = 0; i < o->s.p->nseed; i++)
		if (o->s.p->seed[i].op == op && o->s.p->seed[i].try_number == k)
			return &o->s.p->seed[i];
	return NULL;
}

/* Try sd, recorded elsewhere: its attempt as the recording saw it, its
 * state restored and observed.  Its index, or -1 out of memory. */
static int seeded_try(struct orch *o, const struct orch_seed *sd)
{
	const struct fault *f = &o->s.p->faults[sd->fault];
	int idx = new_attempt(o, sd->op, sd->try_number), nth = 0;
	struct rec_attempt *a;
	char err[400];

	if (idx < 0)
		goto nomem;
	a = &o->s.rec->attempts[idx];
	for (size_t i = 0; i < sd->nhits; i++) {
		struct rec_hit *h = RECORD_PUSH(a->hits, a->nhits);
		if (!h)
			goto nomem;
		put(h->name, sizeof(h->name), "%s", sd->hits[i]);
		h->answer = 'c';
		nth += strcmp(sd->hits[i], f->failpoint) == 0;
	}
	if (a->nhits && f->action != FAULT_SYSCALL)
		a->hits[a->nhits - 1].answer =
			f->action == FAULT_POWER_LOSS ? 'b' : 'k';
	a->start_ms = a->end_ms = 0;
	a->start_wall_ms = sd->start_wall_ms;
	a->end_wall_ms = sd->end_wall_ms;
	a->exit_code = -1;
	a->signal = SIGKILL;
	a->killed = a->counted = a->contained = true;
	put(a->seeded, sizeof(a->seeded), "%s", sd->state);
	o->runs[idx].ended = o->runs[idx].faulted = true;
	o->s.rec->fired[sd->fault] = true;
	if (f->action == FAULT_SYSCALL)
		orch__note_applied(&o->s, sd->fault, idx, sd->op, "%s (recorded)",
				   sd->what ? sd->what : f->rule);
	else /* the state is the attempt's `seeded`: these words stay the
	      * same from run to run */
		orch__note_applied(&o->s, sd->fault, idx, sd->op, "%s at %s#%d in "
				   "op %d try %d (recorded)",
				   f->action == FAULT_POWER_LOSS ? "power lost" :
				   "kill", f->failpoint, nth, sd->op,
				   sd->try_number);
	if (restore_state(o, sd->state, sd->model, err, sizeof(err)))
		orch__trouble(&o->s, FC_IO, "restoring the recorded state of op "
			      "%d try %d: %s", sd->op, sd->try_number, err);
	observe(o, idx);
	if (o->watch && collect_watch_attempt(o->watch, o->s.rec, idx))
		goto nomem;
	return idx;
nomem:
	orch__out_of_memory(&o->s);
	return -1;
}

/* Before the next try: the leases run out (a seeded try's from when it
 * was recorded), unless prev was given up as a zombie (that wait is
 * already over). */
static void wait_after(struct orch *o, int prev)
{
	if (!o->s.rec->attempts[prev].zombie)
		wait_leases(o);
}

/* Power tracking: every directory the harness makes for the tries exists
 * before the model starts, so it counts as synced (a route cannot be
 * blamed for the harness's mkdir), then the model starts. */
static int start_power(struct orch *o, char *err, size_t errlen)
{
	const struct orch_params *p = o->s.p;

	if (!p->snaps) {
		snprintf(err, errlen, "power_loss: the route keeps state outside "
			 "the schedule's files (its journal or target is not a "
			 "sqlite: or file: URL under {dir}), which cannot lose "
			 "power here");
		return FC_USAGE;
	}
	for (int op = 1; op <= (int)o->s.rec->nops; op++)
		for (int k = 1; k <= o->tries; k++) {
			char *x = orch__op_path(&o->s, op, "xcom/try-%d", k);
			char *run = orch__op_path(&o->s, op, "run");
			int rc = !x || !run ? FC_NOMEM :
				 fs_mkdirs(x) || fs_mkdirs(run) ? FC_IO : 0;
			free(x);
			free(run);
			if (rc) {
				snprintf(err, errlen, "cannot make the tries' "
					 "directories");
				return rc;
			}
		}
	return snap_durable_new(p->snaps, p->dir, &o->s.durable, err, errlen);
}

/* Fault fi (kill, pause or fail) at hit h (NULL: one past the kept
 * ones, record.h), the nth of fp, in attempt idx. */
static void act_at_hit(struct orch *o, int idx, struct rec_hit *h, int fi,
		       const char *fp, int nth)
{
	struct run *r = &o->runs[idx];
	struct rec_hit unkept;

	if (!h)
		h = &unkept;

	o->s.rec->fired[fi] = true;
	r->faulted = true;
	switch (o->s.p->faults[fi].action) {
	case FAULT_POWER_LOSS:
		h->answer = 'b';
		lose_power(o, idx, fi, fp, nth);
		break;
	case FAULT_KILL:
		h->answer = 'k';
		orch__note_applied(&o->s, fi, idx, r->op, "kill at %s#%d in op %d "
				   "try %d", fp, nth, r->op, r->try_number);
		sv_proc_kill(r->proc);
		break;
	case FAULT_PAUSE:
		h->answer = 'p';
		orch__note_applied(&o->s, fi, idx, r->op, "pause at %s#%d in op %d "
				   "try %d", fp, nth, r->op, r->try_number);
		sv_proc_set_deadline(r->proc, 0);
		sv_proc_pause(r->proc);
		r->paused = true;
		r->paused_at = clock_mono_ms();
		r->pause_fault = fi;
		break;
	default:
		h->answer = 'f';
		orch__note_applied(&o->s, fi, idx, r->op, "fail at %s#%d in op %d "
				   "try %d", fp, nth, r->op, r->try_number);
		if (sv_proc_answer(r->proc, 'f')) {
			/* died while waiting: its exit event follows */
		}
		break;
	}
}

static void on_hit_event(struct orch *o, int idx, const char *fp, long long at,
			 bool passed)
{
	struct run *r = &o->runs[idx];
	struct rec_attempt *a = &o->s.rec->attempts[idx];
	struct rec_hit *h;
	int nth = 0, fi;

	/* kept while the record has room, counted always (record.h) */
	if (record_hit(a, fp, at - o->s.t0, &h, &nth)) {
		orch__out_of_memory(&o->s);
		return;
	}
	if (passed) {
		on_passed(o, idx, fp, nth);
		return;
	}
	resume_waiting_at(o, idx, fp);
	if (r->ended)
		return; /* killed meanwhile (e.g. its deadline) */
	if (recording(o, idx))
		record_point(o, idx, fp, nth);
	orch__families_hit(&o->fams, &o->s, idx, fp, nth);
	/* (op, try, failpoint, nth hit) happens once: no fault fires twice
	 * for an operation, and an operation-0 fault fires for each one */
	fi = match_fault(o, r->op, r->try_number, fp, nth);
	if (fi >= 0) {
		act_at_hit(o, idx, h, fi, fp, nth);
	} else if (sv_proc_answer(r->proc, 'c')) {
		/* died while waiting: its exit event follows */
	}
}

/* Wait for one event (until deadline; negative: no bound) and act on it. */
static int step(struct orch *o, long long deadline)
{
	struct sv_event ev;
	int rc = supervisor_wait(o->s.p->sv, deadline, &ev);

	if (rc) {
		orch__fail(&o->s, rc, "cannot wait for the schedule's processes: "
			   "%s", error_str(rc));
		return rc;
	}
	if (ev.kind == SV_EV_NONE)
		return 0;
	if (ev.kind == SV_EV_HIT)
		on_hit_event(o, (int)(intptr_t)sv_proc_data(ev.proc), ev.failpoint,
			     ev.at_ms, ev.passed);
	else
		on_exit_event(o, (int)(intptr_t)sv_proc_data(ev.proc));
	return o->s.fatal;
}

/* --- tries and tasks --------------------------------------------------------- */

/*
 * Wait for the next event of running attempt idx.  While a family may
 * hold it (a proxy's hold_commit armed), it is asked every HOLD_POLL_MS
 * whether it does (the COMMIT is held): then the attempt waits like a
 * paused one (a zombie once given up), with no deadline, until the family
 * lets it go on.
 */
#define HOLD_POLL_MS 10

static void wait_running(struct orch *o, int idx)
{
	struct run *r = &o->runs[idx];
	bool armed;
	int fi = orch__families_holding(&o->fams, &o->s, idx, &armed);

	if (fi >= 0) {
		sv_proc_set_deadline(r->proc, 0);
		r->paused = true;
		r->paused_at = clock_mono_ms();
		r->pause_fault = fi;
		return;
	}
	step(o, armed ? clock_mono_ms() + HOLD_POLL_MS : -1);
}

/* Run try k until it ends or is given up as a zombie.  Returns its index
 * or -1 when it could not start. */
static int run_try(struct orch *o, int op, int k)
{
	int idx = spawn_try(o, op, k);

	if (idx < 0)
		return -1;
	while (!o->s.fatal && !o->runs[idx].ended) {
		struct run *r = &o->runs[idx];
		if (r->paused) {
			long long until = r->paused_at + o->zombie_wait_ms;
			if (clock_mono_ms() >= until) {
				r->given_up = true;
				o->s.rec->attempts[idx].zombie = true;
				/* what the next try will meet (check_window.c) */
				observe(o, idx);
				break;
			}
			pool_turn_give(); /* stopped: it needs no CPU */
			step(o, until);
			pool_turn_take();
		} else {
			wait_running(o, idx);
		}
	}
	orch__families_try_over(&o->fams, &o->s, idx);
	o->s.rec->attempts[idx].counted = true;
	return idx;
}

/* Empty DIR/op<op>/<tail>; 0, FC_NOMEM or FC_IO. */
static int empty_op_dir(const struct orch *o, int op, const char *tail)
{
	char *path = orch__op_path(&o->s, op, "%s", tail);
	int rc = path ? fs_empty_dir(path) : FC_NOMEM;

	free(path);
	return rc;
}

/* The loop's between-tries faults, on the task's own XCom, pod and
 * source, and the machine: lose_xcom / lose_pod / change_source /
 * power_loss (fault fi) once try k of op, attempt idx, ended. */
static void task_fault(struct orch *o, int fi, int op, int k, int idx)
{
	const struct fault *f = &o->s.p->faults[fi];
	char err[300], intent[IDENTITY_DIGEST_LEN + 1], tail[32];
	int rc = 0;

	switch (f->action) {
	case FAULT_LOSE_XCOM:
		for (int t = 1; t <= k && !rc; t++) {
			snprintf(tail, sizeof(tail), "xcom/try-%d", t);
			rc = empty_op_dir(o, op, tail);
		}
		orch__note_applied(&o->s, fi, -1, op, "lost XCom of op %d tries "
				   "1-%d", op, k);
		break;
	case FAULT_LOSE_POD:
		rc = empty_op_dir(o, op, "run");
		orch__note_applied(&o->s, fi, -1, op, "lost the pod of op %d after "
				   "try %d", op, k);
		break;
	case FAULT_POWER_LOSS: /* the try ended, then the machine went down */
		orch__note_applied(&o->s, fi, -1, op, "power lost after op %d "
				   "try %d ended", op, k);
		if ((rc = cut_power(o, err, sizeof(err)))) {
			orch__trouble(&o->s, rc, "power_loss after try %d of op "
				      "%d: %s", k, op, err);
			return;
		}
		o->s.rec->fired[fi] = true;
		observe(o, idx);
		return;
	case FAULT_CHANGE_SOURCE:
		rc = workgen_change_source(o->su.wg, op, intent, err, sizeof(err));
		if (rc) {
			orch__trouble(&o->s, rc, "change_source: %s", err);
			return;
		}
		if (!o->s.rec->ops[op - 1].source_changed_after)
			o->s.rec->ops[op - 1].source_changed_after = k;
		orch__note_applied(&o->s, fi, -1, op, "changed the source of op "
				   "%d after try %d", op, k);
		break;
	default:
		return;
	}
	if (rc)
		orch__trouble(&o->s, rc, "cannot apply %s after try %d of op %d",
			      fault_action_name(f->action), k, op);
	else
		o->s.rec->fired[fi] = true;
}

/* Fault fi, a family's, once try k of op ended; *cleared when the family
 * cleared the task. */
static void family_fault(struct orch *o, const struct orch_family *f, int fi,
			 int op, int k, bool zombie, bool *cleared)
{
	struct orch_between b = { .op = op, .k = k, .zombie = zombie };

	if (!f->between)
		return;
	if (f->leases_expire_first)
		wait_leases(o);
	orch__families_between(&o->fams, &o->s, fi, &b);
	if (b.hold_ms > 0)
		wait_until(o, clock_mono_ms() + b.hold_ms);
	*cleared |= b.cleared;
}

/* What the harness itself changed between tries (fault fi after try k of
 * op) is synced: the model must not undo a lost XCom or pod on a power
 * loss.  An emptied directory is synced as it is; anything else (a new
 * source, an operator's recover, a member) syncs every file, the dead
 * try's unsynced writes with it (docs/crash-states.md, limits). */
static void harness_synced(struct orch *o, int fi, int op, int k)
{
	const struct fault *f = &o->s.p->faults[fi];
	char err[400], *path;
	int rc = 0;

	if (!o->s.durable || !o->s.rec->fired[fi])
		return;
	switch (f->action) {
	case FAULT_LOSE_XCOM:
		for (int t = 1; t <= k && !rc; t++) {
			path = orch__op_path(&o->s, op, "xcom/try-%d", t);
			rc = path ? snap_durable_synced(o->s.durable, path, err,
							sizeof(err)) : FC_NOMEM;
			free(path);
		}
		break;
	case FAULT_LOSE_POD:
		path = orch__op_path(&o->s, op, "run");
		rc = path ? snap_durable_synced(o->s.durable, path, err,
						sizeof(err)) : FC_NOMEM;
		free(path);
		break;
	default:
		rc = snap_durable_synced_all(o->s.durable, err, sizeof(err));
		break;
	}
	if (rc == FC_NOMEM)
		orch__out_of_memory(&o->s);
	else if (rc)
		orch__trouble(&o->s, rc, "power-loss model, after %s: %s",
			      fault_action_name(f->action), err);
}

/* The between-tries faults once try k of op, attempt idx, ended (or was
 * given up as a zombie), in the order the schedule lists them.  *cleared:
 * an operator's recover apply moved the operation, after which the
 * operator clears the task in Airflow (a new try even after exit 100). */
static void between_tries(struct orch *o, int op, int k, int idx,
			  bool *cleared)
{
	bool zombie = o->s.rec->attempts[idx].zombie;

	*cleared = false;
	for (size_t i = 0; i < o->s.p->nfaults && !o->s.fatal; i++) {
		const struct fault *f = &o->s.p->faults[i];
		const struct orch_family *fam;

		if (fault_at_failpoint(f) || f->after_attempt != k ||
		    !orch__fault_for_op(f, op))
			continue;
		unsettle(o);
		fam = orch__family_of(f->action);
		if (fam)
			family_fault(o, fam, (int)i, op, k, zombie, cleared);
		else
			task_fault(o, (int)i, op, k, idx);
		harness_synced(o, (int)i, op, k);
	}
}

/* Resume given-up zombies of op that wait for "the next try ended" (and,
 * when `task_over`, every zombie still waiting), one at a time. */
static void resume_after(struct orch *o, int op, int k, bool task_over)
{
	for (size_t zi = 0; zi < o->nruns && !o->s.fatal; zi++) {
		struct run *z = &o->runs[zi];
		const struct fault *f;
		if (!z->given_up || z->resumed || z->op != op ||
		    z->try_number >= k || z->pause_fault < 0)
			continue;
		f = &o->s.p->faults[z->pause_fault];
		if (z->ended && !held_by_family(f->action))
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
	struct rec_operation *ro = &o->s.rec->ops[op - 1];
	int k, idx = -1, last = o->tries;
	bool cleared;

	ro->task = TASK_RETRIES_EXHAUSTED;
	for (k = 1; k <= last && !o->s.fatal; k++) {
		const struct orch_seed *sd = seed_of(o, op, k);
		const struct rec_attempt *a;

		/* a retry waits out the previous try's lease */
		if (idx >= 0)
			wait_after(o, idx);
		idx = sd ? seeded_try(o, sd) : run_try(o, op, k);

		if (idx < 0)
			return; /* cannot start the route: nothing to certify */
		between_tries(o, op, k, idx, &cleared);
		resume_after(o, op, k, false);
		a = &o->s.rec->attempts[idx];
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

/* Kill what is left (zombies never resumed) and reap everything; after a
 * fatal error, free what could not be waited for (sv_proc_free kills and
 * reaps it). */
static void finish_processes(struct orch *o)
{
	for (size_t i = 0; i < o->nruns; i++) {
		if (o->runs[i].ended)
			continue;
		sv_proc_kill(o->runs[i].proc);
		wait_ended(o, (int)i);
	}
	for (size_t i = 0; i < o->nruns; i++) {
		sv_proc_free(o->runs[i].proc);
		o->runs[i].proc = NULL;
	}
}

/* --- the whole schedule ----------------------------------------------------- */

/* A pause whose resume was asked for but did not happen as asked has not
 * fired as the schedule says. */
static void settle_fired(struct orch *o)
{
	for (size_t i = 0; i < o->s.p->nfaults; i++) {
		const struct fault *f = &o->s.p->faults[i];
		if (f->action == FAULT_PAUSE && f->resume != RESUME_NEVER &&
		    !o->resume_done[i])
			o->s.rec->fired[i] = false;
	}
}

/* The clock, the record's names, and the task policy. */
static void begin(struct orch *o)
{
	const struct orch_params *p = o->s.p;
	const struct orchestrator_spec *policy = &p->suite->orchestrator;
	struct rec_schedule *rec = o->s.rec;

	o->s.t0 = clock_mono_ms();
	rec->wall_start_ms = clock_wall_ms();
	put(rec->route, sizeof(rec->route), "%s", p->route->name);
	put(rec->scenario, sizeof(rec->scenario), "%s", p->scenario);
	put(rec->schedule, sizeof(rec->schedule), "%s", p->schedule);
	o->tries = policy->retries + 1;
	o->max_try = o->tries;
	o->zombie_wait_ms = policy->zombie_delay_ms;
	if (policy->lease_ttl_ms > o->zombie_wait_ms)
		o->zombie_wait_ms = policy->lease_ttl_ms;
}

/*
 * The route's journal as the harness reads it (invariant 6), or NULL for
 * `journal: none`.  A URL without {dir} or {schedule_id} is the same for
 * every schedule: the harness could not tell this schedule's entries from
 * another's, so it is an error.  0, or an error with err set.
 */
static int harness_journal_url(const struct orch *o, char **out, char *err,
			       size_t errlen)
{
	const struct route_spec *rs = o->s.p->route;
	struct template_vars v;
	struct orch_upstreams *u;
	int rc;

	*out = NULL;
	if (rs->no_journal)
		return 0;
	if (!strstr(rs->journal, "{dir}") && !strstr(rs->journal, "{schedule_id}")) {
		snprintf(err, errlen, "route '%s': journal '%s' is the same for "
			 "every schedule (it names neither {dir} nor "
			 "{schedule_id}): its entries cannot be told apart",
			 rs->name, rs->journal);
		return FC_USAGE;
	}
	rc = orch__harness_vars(&o->s, &v, &u, err, errlen);
	if (!rc)
		rc = scenario_expand(rs->journal, &v, out, err, errlen);
	orch__upstreams_free(u);
	return rc;
}

/* The watch on the journal (collect.h).  0, or an error with err set. */
static int start_watch(struct orch *o, char *err, size_t errlen)
{
	char *url;
	int rc = harness_journal_url(o, &url, err, errlen);

	if (!rc)
		rc = collect_watch_new(url, &o->watch);
	free(url);
	if (!rc && orch__families_read_entries(o->s.p))
		collect_watch_eager(o->watch);
	return rc;
}

/* Set up, run every task, and read what the schedule left behind. */
static void run_schedule(struct orch *o, char *err, size_t errlen)
{
	struct rec_schedule *rec = o->s.rec;
	int rc;

	/* the harness's own reads must not checkpoint what the route wrote:
	 * the next try meets its files as the last one left them, and the
	 * power-loss model sees every write (common/sqlite_reader.h) */
	fc_sqlite_readers_keep_wal(true);
	orch__setup_vars(&o->s);
	rc = orch__families_init(&o->fams, &o->s, err, errlen);
	if (!rc)
		rc = orch__setup_start(&o->su, &o->s, err, errlen);
	if (!rc)
		rc = orch__record_ops(&o->s, &o->su, err, errlen);
	if (!rc)
		rc = start_watch(o, err, errlen);
	if (!rc && o->s.p->track_power)
		rc = start_power(o, err, errlen);
	if (rc == FC_NOMEM) {
		orch__out_of_memory(&o->s);
		return;
	}
	if (rc) {
		orch__trouble(&o->s, rc, "%s", err);
		return;
	}
	for (int op = 1; op <= (int)rec->nops && !o->s.fatal && !rec->status;
	     op++)
		run_task(o, op);
	finish_processes(o);
	observe(o, -1);
	settle_fired(o);
	record_count_concurrency(rec);
	if (collect_journal(rec, o->watch) ||
	    collect_evidence(rec, o->s.p->dir, o->max_try))
		orch__out_of_memory(&o->s);
}

/* Clean the schedule's namespace and give the services back (every
 * member serving); a failure makes the schedule unverified. */
static void leave_services(struct orch *o)
{
	const struct orch_params *p = o->s.p;
	char err[600];

	if (!p->keep_namespaces && o->s.schedule_id[0] &&
	    services_clean(p->services, o->s.schedule_id, err, sizeof(err)))
		orch__trouble(&o->s, FC_IO, "cleaning namespace '%s': %s",
			      o->s.schedule_id, err);
	if (services_leave(p->services, err, sizeof(err)))
		orch__trouble(&o->s, FC_IO, "restoring the services: %s", err);
}

/* Every process gone, then the families (no held transaction keeps its
 * locks), then the services given back (when entered), then the rest. */
static void end_schedule(struct orch *o, bool entered)
{
	finish_processes(o);
	collect_watch_free(o->watch); /* its connection, before any cleaning */
	o->watch = NULL;
	orch__families_release(&o->fams, &o->s);
	snap_durable_free(o->s.durable);
	o->s.durable = NULL;
	fc_sqlite_readers_keep_wal(false);
	if (entered)
		leave_services(o);
	orch__setup_release(&o->su);
	o->s.journal_url = NULL;
	free(o->runs);
	free(o->resume_done);
	o->runs = NULL;
	o->resume_done = NULL;
}

int orchestrator_run(const struct orch_params *p, struct rec_schedule **out,
		     char *err, size_t errlen)
{
	struct orch o = { .s.p = p, .s.power_lost = -1, .settled_obs = -1 };
	size_t nf = p->nfaults ? p->nfaults : 1;
	int enter_rc;

	*out = NULL;
	o.s.rec = record_new();
	if (!o.s.rec) {
		snprintf(err, errlen, "out of memory running schedule");
		return FC_NOMEM;
	}
	/* before the clock starts: waiting for a member-changing schedule
	 * elsewhere is not part of this one */
	enter_rc = services_enter(p->services, orch__families_exclusive(p), err,
				  errlen);
	begin(&o);
	if (orch__record_faults(&o.s) ||
	    !(o.resume_done = calloc(nf, sizeof(*o.resume_done))))
		orch__out_of_memory(&o.s);
	else if (enter_rc)
		orch__trouble(&o.s, enter_rc, "%s", err);
	else
		run_schedule(&o, err, errlen);
	end_schedule(&o, enter_rc == 0);
	if (o.s.fatal) {
		snprintf(err, errlen, "%s", o.s.fatal_msg);
		record_free(o.s.rec);
		return o.s.fatal;
	}
	o.s.rec->duration_ms = orch__elapsed_ms(&o.s);
	orch__keep_rows(&o.s); /* the worker's, not the schedule's time */
	*out = o.s.rec;
	return 0;
}
