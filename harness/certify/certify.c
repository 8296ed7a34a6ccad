/*
 * certify.c -- the certification run (certify.h): coordinator and the
 * work each worker does for one schedule.
 *
 * Invariants:
 *  1. The report does not depend on timing: schedules are sorted by
 *     (scenario, job id) before they are written, and explorers build
 *     their waves in job order whatever order results come back in.
 *  2. A verdict is the checker's fold of every schedule of the route,
 *     made unverified by exploration gaps (a declared failpoint never
 *     reached, a discovery that failed); the route's `expect` is only
 *     compared afterwards.
 *  3. A schedule whose worker died is reported as unverified, never
 *     dropped.
 *
 *   coordinator                               worker (pool.c)
 *   -----------                               ------
 *   explorers --job--> idle worker ---------> orchestrator_run()
 *      ^                                       check_schedule()
 *      +--trace-- result line <---------------- report_json_schedule()
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/sqlite_setup.h"
#include "harness/certify/crash_states.h"
#include "harness/certify/report_json.h"
#include "harness/certify/certify.h"
#include "harness/check/check.h"
#include "harness/check/report_summary.h"
#include "harness/model/explore.h"
#include "common/fsutil.h"
#include "harness/run/orchestrator.h"
#include "harness/proc/pool.h"
#include "harness/model/record.h"
#include "harness/model/schedule.h"
#include "harness/proc/supervise.h"
#include "common/put.h"

#define UNVERIFIED_NOTES_MAX 20

volatile sig_atomic_t certify_interrupted;

/* --- the worker side ------------------------------------------------------------ */

struct wctx {
	const struct suite *s;
	const struct certify_opts *o;
	supervisor *sv;
	snap_store *snaps;  /* the store of unit (snaps_r, snaps_s):
			       states_dir(), shared by the workers */
	int snaps_r, snaps_s;
	unsigned long long store_max;   /* its limit (snap_store_limit) */
	unsigned long long *store_used; /* its bytes, in memory the workers
					   share; NULL: counted per worker */
	struct orch_cache cache; /* this worker's, from schedule to schedule */
};

/* Does route rs keep its whole state in the schedule's files (SQLite or
 * file journal and target under {dir}), so a snapshot of the files is a
 * snapshot of the state?  Else *why says what it keeps elsewhere. */
static bool state_in_files(const struct route_spec *rs, const char **why)
{
	const char *urls[2] = { rs->no_journal ? NULL : rs->journal, rs->target };

	for (int i = 0; i < 2; i++) {
		const char *u = urls[i];
		if (!u)
			continue;
		if ((strncmp(u, "sqlite:", 7) && strncmp(u, "file:", 5)) ||
		    !strstr(u, "{dir}") || strstr(u, "{proxy:") ||
		    strstr(u, "{service:")) {
			*why = i ? "its target is not a sqlite: or file: URL "
				   "under {dir} (a service, or files elsewhere, "
				   "cannot be snapshotted)" :
				   "its journal is not a sqlite: or file: URL "
				   "under {dir} (a service, or files elsewhere, "
				   "cannot be snapshotted)";
			return false;
		}
	}
	return true;
}

/* The seeded tries of a job message ("seed", crash_states.h) as the
 * orchestrator takes them; names point into the message. */
static int seed_from_json(json_t *seed, struct orch_seed **out, size_t *n,
			  const char ***names)
{
	size_t k = json_array_size(seed), total = 0, at = 0, i;
	json_t *e;

	*out = NULL;
	*names = NULL;
	*n = 0;
	if (!k)
		return 0;
	json_array_foreach(seed, i, e)
		total += json_array_size(json_object_get(e, "hits"));
	*out = calloc(k, sizeof(**out));
	*names = calloc(total + 1, sizeof(**names));
	if (!*out || !*names)
		return FC_NOMEM;
	json_array_foreach(seed, i, e) {
		struct orch_seed *sd = &(*out)[i];
		json_t *h;
		size_t x;

		sd->op = (int)json_integer_value(json_object_get(e, "op"));
		sd->try_number = (int)json_integer_value(json_object_get(e, "try"));
		sd->fault = (int)json_integer_value(json_object_get(e, "fault"));
		sd->state = json_string_value(json_object_get(e, "state"));
		sd->what = json_string_value(json_object_get(e, "what"));
		sd->model = json_string_value(json_object_get(e, "model"));
		sd->start_wall_ms = json_integer_value(json_object_get(e,
							"start_wall_ms"));
		sd->end_wall_ms = json_integer_value(json_object_get(e, "end_wall_ms"));
		sd->hits = *names + at;
		json_array_foreach(json_object_get(e, "hits"), x, h) {
			const char *s = json_string_value(h);
			(*names)[at++] = s ? s : "";
		}
		sd->nhits = json_array_size(json_object_get(e, "hits"));
		if (!sd->state)
			return FC_USAGE;
	}
	*n = k;
	return 0;
}

/* The states the schedule recorded, for the coordinator. */
static json_t *recorded_json(const struct rec_schedule *rec)
{
	json_t *a = json_array();

	for (size_t i = 0; a && i < rec->nsnaps; i++) {
		const struct rec_snap *s = &rec->snaps[i];
		json_array_append_new(a, json_pack("{s:i, s:i, s:s, s:i, s:I, "
			"s:I, s:s, s:s, s:s, s:s, s:s}", "op", s->operation, "try",
			s->try_number, "failpoint", s->failpoint, "hit", s->hit,
			"wall_ms", (json_int_t)s->wall_ms, "start_wall_ms",
			(json_int_t)s->start_wall_ms, "kill", s->kill, "power",
			s->power, "model", s->model, "rule", s->rule, "what",
			s->what));
	}
	return a;
}

/* Single-quote for sh when needed. */
static void shell_quote(const char *in, char *out, size_t len)
{
	size_t k = 0;
	bool plain = *in != '\0';

	for (const char *c = in; *c; c++)
		if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
			    "0123456789-_./:@,+=", *c))
			plain = false;
	if (plain) {
		snprintf(out, len, "%s", in);
		return;
	}
	if (k + 1 < len)
		out[k++] = '\'';
	for (const char *c = in; *c && k + 5 < len; c++) {
		if (*c == '\'') {
			memcpy(out + k, "'\\''", 4);
			k += 4;
		} else {
			out[k++] = *c;
		}
	}
	if (k + 1 < len)
		out[k++] = '\'';
	out[k < len ? k : len - 1] = '\0';
}

static void reproduce(const struct certify_opts *o, const char *route,
		      const char *scenario, const char *schedule, char *out,
		      size_t len)
{
	char a[1024], b[300], c[300], d[SCHEDULE_STR_MAX + 64];

	shell_quote(o->suite_path, a, sizeof(a));
	shell_quote(route, b, sizeof(b));
	shell_quote(scenario, c, sizeof(c));
	/* always quoted: schedule strings hold ';' and '>' */
	snprintf(d, sizeof(d), "'%s'", schedule);
	/* into a directory of its own, replaced by the next replay, so
	 * the run that found the schedule keeps its report */
	put(out, len, "fencecert certify %s --route %s --only %s "
		 "--schedule %s --out certify-replay --force", a, b, c, d);
}

/* The state store of route ri x scenario si: a directory of its own, which
 * goes when the unit is finished (unit_finished()), so a long run keeps
 * the states of the units still running only. */
static void states_dir(const struct certify_opts *o, int ri, int si,
		       char *out, size_t len)
{
	snprintf(out, len, "%s/states/r%d-s%d", o->work_dir, ri, si);
}

static json_t *work_error(const char *msg)
{
	return json_pack("{s:s}", "error", msg);
}

static json_t *work(void *ctx, json_t *job)
{
	struct wctx *w = ctx;
	int ri = (int)json_integer_value(json_object_get(job, "r"));
	int si = (int)json_integer_value(json_object_get(job, "s"));
	int id = (int)json_integer_value(json_object_get(job, "id"));
	const char *sched = json_string_value(json_object_get(job, "schedule"));
	const struct route_spec *rs;
	const struct scenario *sc;
	struct rec_schedule *rec = NULL;
	struct check_result cr;
	struct fault *faults = NULL;
	size_t nfaults = 0, nseed = 0;
	struct orch_seed *seed = NULL;
	const char **seed_names = NULL, *why, *seeded = NULL;
	char err[600], dir[4096], repro[2048];
	json_t *res;
	int rc;

	if (ri < 0 || (size_t)ri >= w->s->nroutes || si < 0 ||
	    (size_t)si >= w->s->nscenarios || !sched)
		return work_error("malformed job");
	rs = &w->s->routes[ri];
	sc = &w->s->scenarios[si];
	if (!w->sv) {
		if (supervisor_new(&w->sv, err, sizeof(err)))
			return work_error(err);
		supervisor_allow_uncontained(w->sv, w->o->uncontained);
		if (supervisor_pass_env(w->sv, w->o->pass_env, err, sizeof(err)))
			return work_error(err);
	}
	if (!w->snaps || w->snaps_r != ri || w->snaps_s != si) {
		snap_store_close(w->snaps);
		w->snaps = NULL;
		states_dir(w->o, ri, si, dir, sizeof(dir));
		if (snap_store_open(dir, &w->snaps, err, sizeof(err)))
			return work_error(err);
		snap_store_limit(w->snaps, w->store_max, w->store_used);
		w->snaps_r = ri;
		w->snaps_s = si;
	}
	if (seed_from_json(json_object_get(job, "seed"), &seed, &nseed,
			   &seed_names)) {
		free(seed);
		free(seed_names);
		return work_error("malformed seed");
	}
	if (schedule_parse(sched, &faults, &nfaults, err, sizeof(err))) {
		free(seed);
		free(seed_names);
		return work_error(err);
	}
	/* under a directory of this worker's: a sandboxed fork server may
	 * write its attempts' parent directory, never another worker's
	 * (harness/proc/supervise.h, invariant 9) */
	snprintf(dir, sizeof(dir), "%s/w%d", w->o->work_dir, (int)getpid());
	if (fs_mkdirs(dir) == 0)
		snprintf(dir, sizeof(dir), "%s/w%d/r%d-s%d-j%d", w->o->work_dir,
			 (int)getpid(), ri, si, id);
	if (fs_empty_dir(dir)) {
		free(faults);
		put(err, sizeof(err), "cannot create '%s'", dir);
		return work_error(err);
	}
	rc = orchestrator_run(&(struct orch_params){
			.suite = w->s, .route = rs, .scenario = sc->name,
			.schedule = sched, .faults = faults, .nfaults = nfaults,
			.operations = (int)json_integer_value(
				json_object_get(job, "operations")),
			.dir = dir, .sv = w->sv, .services = w->o->services,
			.keep_namespaces = w->o->keep,
			.full_deltas = w->o->full_deltas,
			.sys_discover = sc->explore && sc->explore->syscalls &&
				strcmp(json_string_value(json_object_get(job, "kind")),
				       "discovery") == 0 ? sc->explore : NULL,
			.proxy_discover = sc->explore && sc->explore->proxy[0] &&
				strcmp(json_string_value(json_object_get(job, "kind")),
				       "discovery") == 0 ? sc->explore : NULL,
			.snaps = state_in_files(rs, &why) ? w->snaps : NULL,
			.record = json_is_true(json_object_get(job, "record")),
			.track_power = json_is_true(json_object_get(job, "power")),
			.seed = seed, .nseed = nseed, .cache = &w->cache,
		}, &rec, err, sizeof(err));
	if (nseed) /* the state the last seeded try left (in the message) */
		seeded = seed[nseed - 1].state;
	free(faults);
	free(seed);
	free(seed_names);
	if (rc)
		return work_error(err);
	if (check_schedule(rec, json_is_true(json_object_get(job, "strict")),
			   &cr)) {
		record_free(rec);
		return work_error("out of memory checking the schedule");
	}
	reproduce(w->o, rs->name, sc->name, sched, repro, sizeof(repro));
	res = report_json_schedule(rec, &cr, &(struct report_job_info){
			.kind = json_string_value(json_object_get(job, "kind")),
			.strict = json_is_true(json_object_get(job, "strict")),
			.reproduce = repro,
		});
	check_result_release(&cr);
	if (res && rec->nsnaps)
		json_object_set_new(res, "recorded", recorded_json(rec));
	if (res && rec->snaps_refused)
		json_object_set_new(res, "refused_states", json_pack("{s:I, s:s}",
			"count", (json_int_t)rec->snaps_refused, "why",
			rec->refused_why));
	record_free(rec);
	if (!w->o->keep && fs_remove_tree(dir)) {
		/* a leftover dir goes with the work dir at the end */
	}
	if (!res)
		return work_error("out of memory reporting the schedule");
	if (w->o->keep)
		json_object_set_new(res, "dir", json_string(dir));
	if (seeded)
		json_object_set_new(res, "seeded", json_pack("{s:s+, s:I}",
			"state", "sha256:", seeded, "tries", (json_int_t)nseed));
	return res;
}

static void work_fini(void *ctx)
{
	struct wctx *w = ctx;

	supervisor_free(w->sv);
	w->sv = NULL;
	snap_store_close(w->snaps);
	w->snaps = NULL;
	orch_cache_release(&w->cache);
}

/* --- the coordinator ------------------------------------------------------------ */

struct unit {              /* one route x scenario */
	int r, s;
	explorer *ex;
	cs_unit *cs;       /* its seeds and inheritance (crash_states.h) */
	int inflight;      /* handed out, not yet accounted */
	bool done;
	size_t schedules, violations;
	size_t attempts_run; /* attempts that ran here (not seeded, not
				inherited) */
	const char *retry_wave; /* whose try-2 points it explores, for the
				   report; NULL: it has no retry wave */
};

struct sched_entry {
	long long key;     /* scenario * 2^32 + job id */
	json_t *json;
};

struct route_acc {
	bool selected;
	size_t nunits;                        /* (route, scenario) pairs run */
	struct verdict_tally tally;
	struct sched_entry *sched;
	size_t nsched;
	json_t *reached, *faulted, *declared; /* objects used as sets */
	json_t *by_kind;
	size_t unobservable[INV_COUNT + 1];   /* schedules where each invariant
						 was not observable */
	json_t *notes;                        /* unverified reasons */
	json_t *modes;                        /* per scenario: cs_summary() */
	bool gap;                             /* exploration could not finish */
};

struct inflight {
	struct unit *u;
	int id;
	bool wants_trace;
	bool mine;          /* reported by this shard (always, unsharded) */
	char kind[16];
	char schedule[SCHEDULE_STR_MAX];
};

struct run {
	const struct suite *s;
	const struct certify_opts *o;
	pool *pool;
	struct unit *units;
	size_t nunits;
	struct route_acc *acc;
	size_t done_schedules;
	long long t0, last_progress;
	unsigned long long *store_used; /* the state stores' counter (wctx) */
};

static void note(struct route_acc *a, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void note(struct route_acc *a, const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	if (json_array_size(a->notes) >= UNVERIFIED_NOTES_MAX)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	json_array_append_new(a->notes, json_string(buf));
}

static void set_add_all(json_t *set, json_t *names)
{
	size_t i;
	json_t *v;

	json_array_foreach(names, i, v)
		if (json_is_string(v))
			json_object_set_new(set, json_string_value(v), json_true());
}

/* Failpoints a scenario names itself: they count as declared. */
static void declare_scenario(json_t *set, const struct scenario *sc)
{
	for (size_t i = 0; i < sc->nfaults; i++) {
		const struct fault *f = &sc->faults[i];
		if (f->failpoint[0])
			json_object_set_new(set, f->failpoint, json_true());
		if (f->resume == RESUME_AT_NEXT_FAILPOINT && f->resume_at[0])
			json_object_set_new(set, f->resume_at, json_true());
	}
	if (sc->explore && sc->explore->failpoints)
		for (char **p = sc->explore->failpoints; *p; p++)
			json_object_set_new(set, *p, json_true());
}

/* The report entry of a schedule that produced no result: same keys as
 * report_json_schedule(), nothing observed. */
static json_t *lost_schedule(const struct run *R, const struct unit *u,
			     const struct inflight *in, const char *why)
{
	char repro[2048];

	reproduce(R->o, R->s->routes[u->r].name, R->s->scenarios[u->s].name,
		  in->schedule, repro, sizeof(repro));
	return json_pack("{s:s, s:s, s:s, s:b, s:s, s:i, s:s, s:s, s:s, s:[], "
			 "s:[], s:[], s:[], s:[], s:[], s:[], s:[], s:[], s:n}",
			 "scenario", R->s->scenarios[u->s].name,
			 "schedule", in->schedule, "kind", in->kind,
			 "strict", true, "reproduce", repro, "duration_ms", 0,
			 "outcome", outcome_name(OUTCOME_UNVERIFIED),
			 "outcome_detail", why, "error", why, "violations",
			 "unobservable", "retried_stops", "faults", "applied",
			 "reached", "faulted", "attempts", "operations", "target");
}

/* Feed a discovery trace (attempts -> failpoint names) to the explorer. */
static int feed_trace(struct unit *u, int id, json_t *sched)
{
	json_t *attempts = json_object_get(sched, "attempts"), *a;
	size_t n = json_array_size(attempts), i;
	struct explore_attempt *ea = calloc(n ? n : 1, sizeof(*ea));
	int rc = 0;

	if (!ea)
		return FC_NOMEM;
	json_array_foreach(attempts, i, a) {
		json_t *fps = json_object_get(a, "failpoints"), *fp;
		json_t *sys = json_object_get(a, "syscalls");
		size_t k;
		const char **names = calloc(json_array_size(fps) + 1, sizeof(*names));
		struct explore_syscall *es = calloc(json_array_size(sys) + 1,
						    sizeof(*es));
		ea[i].syscalls = es;
		ea[i].hits = names;
		if (!names || !es) {
			rc = FC_NOMEM;
			break;
		}
		json_array_foreach(fps, k, fp)
			names[k] = json_string_value(json_object_get(fp, "name"));
		json_array_foreach(sys, k, fp) {
			es[k].syscall = json_string_value(json_object_get(fp, "syscall"));
			es[k].path = json_string_value(json_object_get(fp, "path"));
			es[k].count = (unsigned long)json_integer_value(
				json_object_get(fp, "count"));
			if (!es[k].syscall || !es[k].path)
				es[k].count = 0;
			else
				ea[i].nsyscalls = k + 1;
		}
		ea[i].commits = (unsigned long)json_integer_value(
			json_object_get(a, "proxy_commits"));
		ea[i].operation = (int)json_integer_value(json_object_get(a, "operation"));
		ea[i].try_number = (int)json_integer_value(json_object_get(a, "try"));
		ea[i].nhits = json_array_size(fps);
		/* the report keeps the first RECORD_HITS_KEPT (record.h) */
		ea[i].hits_total = (size_t)json_integer_value(
			json_object_get(a, "failpoints_total"));
	}
	if (!rc)
		rc = explorer_feed(u->ex, id, ea, n);
	for (i = 0; i < n; i++) {
		free((void *)ea[i].hits);
		free((void *)ea[i].syscalls);
	}
	free(ea);
	return rc;
}

static void account(struct run *R, struct unit *u, const struct inflight *in,
		    json_t *sched)
{
	struct route_acc *a = &R->acc[u->r];
	const char *oname = json_string_value(json_object_get(sched, "outcome"));
	enum schedule_outcome oc = OUTCOME_UNVERIFIED;
	size_t nv = json_array_size(json_object_get(sched, "violations")), i;
	json_t *unobs = json_object_get(sched, "unobservable"), *v;
	struct sched_entry *e;
	bool before, after;

	if (!oname || outcome_parse(oname, &oc))
		oc = OUTCOME_UNVERIFIED;
	verdict_tally_add(&a->tally, nv, oc);
	/* every schedule of this harness counts, a lost one as none */
	report_schedule_windows(sched, &before, &after);
	verdict_tally_windows(&a->tally, before, after);
	if (oc == OUTCOME_UNVERIFIED)
		note(a, "scenario '%s' schedule '%s': %s",
		     R->s->scenarios[u->s].name, in->schedule,
		     json_string_value(json_object_get(sched, "outcome_detail")));
	if (json_object_get(sched, "nondeterministic")) {
		/* a finding: inherited outcomes of this scenario prove nothing */
		a->gap = true;
		note(a, "scenario '%s' schedule '%s': not deterministic given its "
		     "durable state (%s there, %s in '%s')",
		     R->s->scenarios[u->s].name, in->schedule,
		     json_string_value(json_object_get(sched, "outcome")),
		     json_string_value(json_object_get(json_object_get(sched,
				"nondeterministic"), "representative_outcome")),
		     json_string_value(json_object_get(json_object_get(sched,
				"nondeterministic"), "representative")));
	}
	json_array_foreach(json_object_get(sched, "attempts"), i, v)
		u->attempts_run += !json_object_get(v, "seeded");
	json_array_foreach(unobs, i, v) {
		json_int_t inv = json_integer_value(v);
		if (inv >= 1 && inv <= INV_COUNT)
			a->unobservable[inv]++;
	}
	set_add_all(a->reached, json_object_get(sched, "reached"));
	set_add_all(a->faulted, json_object_get(sched, "faulted"));
	set_add_all(a->declared, json_object_get(sched, "reached"));
	{
		json_t *c = json_object_get(a->by_kind, in->kind);
		json_object_set_new(a->by_kind, in->kind,
				    json_integer(c ? json_integer_value(c) + 1 : 1));
	}
	u->schedules++;
	u->violations += nv;
	R->done_schedules++;
	e = RECORD_PUSH(a->sched, a->nsched);
	if (!e) {
		json_decref(sched);
		return;
	}
	e->key = ((long long)u->s << 32) | (unsigned)in->id;
	e->json = sched;
}

/* Results that are final (crash_states.h): each fed to the explorer when
 * its job wants a trace, then accounted. */
static void take_ready(struct run *R, struct unit *u, struct cs_ready *ready,
		       size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct inflight *in = ready[i].tag;
		json_t *sched = ready[i].res;
		bool lost = json_string_value(json_object_get(sched, "error")) &&
			    !json_array_size(json_object_get(ready[i].trace,
							     "attempts"));

		u->inflight--;
		if (json_object_get(sched, "inherited")) {
			char repro[2048];
			json_t *v;
			size_t k;

			reproduce(R->o, R->s->routes[u->r].name,
				  R->s->scenarios[u->s].name, in->schedule, repro,
				  sizeof(repro));
			json_object_set_new(sched, "reproduce", json_string(repro));
			json_array_foreach(json_object_get(sched, "violations"), k, v)
				json_object_set_new(v, "reproduce", json_string(repro));
		}
		if (in->wants_trace &&
		    (lost || feed_trace(u, in->id, ready[i].trace)))
			explorer_feed_failed(u->ex, in->id);
		if (sched && in->mine)
			account(R, u, in, sched);
		else
			json_decref(sched); /* another shard's discovery run */
		free(in);
	}
	free(ready);
}

static int handle_result(struct run *R, struct inflight *in, json_t *res)
{
	struct unit *u = in->u;
	json_t *sched = res;
	const char *err = json_string_value(json_object_get(res, "error"));
	struct cs_ready *ready = NULL;
	size_t n = 0;
	int rc;

	if (!res || (err && !json_object_get(res, "attempts"))) {
		char why[400];
		snprintf(why, sizeof(why), "%s", !res ? "the worker running it "
			 "died" : err);
		sched = lost_schedule(R, u, in, why);
		json_decref(res);
		if (!sched) {
			u->inflight--;
			if (in->wants_trace)
				explorer_feed_failed(u->ex, in->id);
			free(in);
			return FC_NOMEM;
		}
	}
	rc = cs_finished(u->cs, in->id, in, sched, &ready, &n);
	take_ready(R, u, ready, n);
	return rc;
}

static void progress(struct run *R, bool force)
{
	long long now = clock_mono_ms();
	size_t total = 0;
	double rate, eta;

	if (R->o->quiet || !R->o->progress_tty)
		return;
	if (!force && now - R->last_progress < 100)
		return;
	R->last_progress = now;
	for (size_t i = 0; i < R->nunits; i++)
		total += explorer_jobs(R->units[i].ex);
	rate = R->done_schedules / ((now - R->t0) / 1000.0 + 1e-3);
	eta = rate > 0 ? (total - R->done_schedules) / rate : 0;
	fprintf(stderr, "\rcertify: %zu/%zu schedules, %.0f/s, ETA %.0fs   ",
		R->done_schedules, total, rate, eta);
	fflush(stderr);
}

static void unit_finished(struct run *R, struct unit *u)
{
	struct route_acc *a = &R->acc[u->r];
	const struct scenario *sc = &R->s->scenarios[u->s];

	u->done = true;
	if (!R->o->keep) { /* nothing starts from its states any more */
		char dir[4096], err[400];
		states_dir(R->o, u->r, u->s, dir, sizeof(dir));
		if (snap_store_remove(dir, R->store_used, err, sizeof(err)))
			fprintf(stderr, "fencecert: %s (it goes with the work "
				"dir)\n", err);
	}
	for (const char *const *p = explorer_unreached(u->ex); *p; p++) {
		a->gap = true;
		note(a, "scenario '%s': declared failpoint '%s' was never reached",
		     sc->name, *p);
	}
	if (explorer_incomplete(u->ex)) {
		a->gap = true;
		note(a, "scenario '%s': exploration incomplete (the route reported "
		     "no failpoints or a discovery run failed)", sc->name);
	}
	if (explorer_bounded(u->ex)) { /* explore.h: past a bound */
		char buf[640];

		a->gap = true;
		/* first among the scenarios' notes, whatever came before */
		snprintf(buf, sizeof(buf), "scenario '%s': %s", sc->name,
			 explorer_bounded(u->ex));
		json_array_insert_new(a->notes, 0, json_string(buf));
		if (json_array_size(a->notes) > UNVERIFIED_NOTES_MAX)
			json_array_remove(a->notes, UNVERIFIED_NOTES_MAX);
	}
	{
		json_t *m = cs_summary(u->cs);
		if (m) {
			json_object_set_new(m, "scenario", json_string(sc->name));
			json_object_set_new(m, "attempts_run",
					    json_integer((json_int_t)u->attempts_run));
			if (u->retry_wave)
				json_object_set_new(m, "retry_wave",
						    json_string(u->retry_wave));
			json_array_append_new(a->modes, m);
		}
	}
	if (!R->o->quiet && !R->o->progress_tty)
		fprintf(stderr, "fencecert: %s / %s: %zu schedule(s), %zu "
			"violation(s)\n", R->s->routes[u->r].name, sc->name,
			u->schedules, u->violations);
}

/* Whether this shard reports job j of unit u (certify.h, sharding). */
static bool mine(const struct run *R, const struct unit *u,
		 const struct explore_job *j)
{
	size_t k = (size_t)(u - R->units);

	if (R->o->shard_count <= 0)
		return true;
	return (k + (size_t)j->id) % (size_t)R->o->shard_count ==
	       (size_t)(R->o->shard_index - 1);
}

/* The next job of the first unit that has one.  Another shard's job is
 * skipped unless later waves need its trace. */
static struct unit *next_job(struct run *R, const struct explore_job **job)
{
	for (size_t i = 0; i < R->nunits; i++) {
		struct unit *u = &R->units[i];
		enum explore_next n;
		if (u->done)
			continue;
		do
			n = explorer_next(u->ex, job);
		while (n == EXPLORE_JOB && !(*job)->wants_trace &&
		       !mine(R, u, *job));
		if (n == EXPLORE_JOB)
			return u;
		if (n == EXPLORE_DONE && u->inflight == 0)
			unit_finished(R, u);
	}
	return NULL;
}

static int submit(struct run *R, struct unit *u, const struct explore_job *j)
{
	struct inflight *in = calloc(1, sizeof(*in));
	struct cs_plan plan;
	json_t *msg;
	int rc;

	if (!in)
		return FC_NOMEM;
	if ((rc = cs_plan_job(u->cs, j, &plan))) {
		free(in);
		return rc;
	}
	in->u = u;
	in->id = j->id;
	in->wants_trace = j->wants_trace;
	in->mine = mine(R, u, j);
	snprintf(in->kind, sizeof(in->kind), "%s", j->kind);
	snprintf(in->schedule, sizeof(in->schedule), "%s",
		 j->nfaults ? j->schedule : "clean");
	if (plan.inherit) {
		struct cs_ready *ready = NULL;
		size_t n = 0;
		u->inflight++;
		rc = cs_inherit(u->cs, j, in, &ready, &n);
		take_ready(R, u, ready, n);
		return rc;
	}
	msg = json_pack("{s:i, s:i, s:i, s:s, s:i, s:b, s:s, s:b, s:b, s:o*}",
			"r", u->r, "s", u->s, "id", j->id, "schedule",
			in->schedule, "operations", j->operations, "strict",
			j->strict, "kind", j->kind, "record", plan.record,
			"power", plan.power, "seed", plan.seed);
	rc = msg ? pool_submit(R->pool, msg, in) : FC_NOMEM;
	json_decref(msg);
	if (rc) {
		free(in);
		return rc;
	}
	u->inflight++;
	return 0;
}

static int loop(struct run *R)
{
	for (;;) {
		const struct explore_job *job;
		struct unit *u;
		json_t *res;
		void *tag;
		int rc;

		if (certify_interrupted)
			return FC_IO;
		while (pool_has_idle(R->pool) && (u = next_job(R, &job))) {
			rc = submit(R, u, job);
			if (rc)
				return rc;
		}
		if (!pool_busy(R->pool)) {
			if (!pool_has_idle(R->pool))
				return FC_IO; /* every worker is gone */
			return 0;     /* nothing runs and nothing is ready */
		}
		rc = pool_collect(R->pool, R->o->progress_tty ? 100 : -1, &res, &tag);
		if (rc < 0)
			return rc;
		if (rc == 1 && tag && (rc = handle_result(R, tag, res)))
			return rc;
		progress(R, false);
	}
}

/* --- assembling the report ------------------------------------------------------ */

static int entry_cmp(const void *a, const void *b)
{
	long long x = ((const struct sched_entry *)a)->key;
	long long y = ((const struct sched_entry *)b)->key;

	return (x > y) - (x < y);
}

static json_t *set_list(json_t *set)
{
	json_t *arr = json_array();
	const char *k;
	json_t *v;

	json_object_foreach(set, k, v)
		json_array_append_new(arr, json_string(k));
	return arr;
}

/* Why no schedule of the route could observe invariant inv. */
static const char *unobservable_why(const struct route_acc *a, int inv)
{
	/* every schedule journal-less: legal-history is unobservable only
	 * then (check.h, CHECK_JOURNAL_INVARIANTS) */
	if (a->unobservable[INV_LEGAL_HISTORY] == a->nsched) {
		if (inv == INV_FAIL_CLOSED)
			return "the route keeps no journal: only the exit-100 "
			       "half is checked, not COMMIT_UNKNOWN";
		if (inv == INV_EVIDENCE)
			return "the route keeps no journal: a return.json is "
			       "checked for its form and row count only";
		return "the route keeps no journal";
	}
	if (inv == INV_RECONCILE_FIRST)
		return "the route reports no failpoints";
	if (inv == INV_FENCING)
		return "the target's fence records cannot be observed";
	return "no schedule could observe it";
}

static json_t *unobservable_json(const struct route_acc *a)
{
	json_t *unobs = json_array();

	for (int inv = 1; inv <= INV_COUNT && a->nsched; inv++)
		if (a->unobservable[inv] == a->nsched)
			json_array_append_new(unobs, json_pack("{s:i, s:s, s:s}",
				"invariant", inv, "name", invariant_name(inv),
				"why", unobservable_why(a, inv)));
	return unobs;
}

static json_t *coverage(const struct route_acc *a)
{
	json_t *c = json_object(), *never = json_array();
	json_t *by = json_object();
	const char *k;
	json_t *v;

	json_object_foreach(a->declared, k, v)
		if (!json_object_get(a->faulted, k))
			json_array_append_new(never, json_string(k));
	for (int o = 0; o < OUTCOME_COUNT; o++)
		if (a->tally.by_outcome[o])
			json_object_set_new(by, outcome_name(o),
					    json_integer((json_int_t)a->tally.by_outcome[o]));
	json_object_set_new(c, "failpoints_declared",
			    json_integer((json_int_t)json_object_size(a->declared)));
	json_object_set_new(c, "failpoints_reached",
			    json_integer((json_int_t)json_object_size(a->reached)));
	json_object_set_new(c, "failpoints_faulted",
			    json_integer((json_int_t)json_object_size(a->faulted)));
	json_object_set_new(c, "declared", set_list(a->declared));
	json_object_set_new(c, "reached", set_list(a->reached));
	json_object_set_new(c, "faulted", set_list(a->faulted));
	json_object_set_new(c, "never_faulted", never);
	json_object_set_new(c, "schedules", json_integer((json_int_t)a->nsched));
	json_object_set_new(c, "by_outcome", by);
	json_object_set_new(c, "by_kind", json_deep_copy(a->by_kind));
	json_object_set_new(c, "invariants_not_observable", unobservable_json(a));
	json_object_set_new(c, "retried_stops", json_pack("{s:I, s:I}",
		"before_mutation",
		(json_int_t)a->tally.stopped[VERDICT_WINDOW_BEFORE],
		"after_mutation",
		(json_int_t)a->tally.stopped[VERDICT_WINDOW_AFTER]));
	json_object_set_new(c, "syscall_occurrences_explored", json_integer(0));
	json_object_set_new(c, "unverified", json_deep_copy(a->notes));
	json_object_set_new(c, "exploration", json_deep_copy(a->modes));
	return c;
}

static enum verdict route_verdict(const struct route_acc *a)
{
	enum verdict v = verdict_tally_fold(&a->tally);

	if (v != VERDICT_REJECTED && a->gap)
		return VERDICT_UNVERIFIED;
	return v;
}

static int add_route(struct run *R, json_t *report, size_t r)
{
	struct route_acc *a = &R->acc[r];
	json_t *schedules = json_array(), *violations = json_array();
	enum verdict verdict = route_verdict(a);

	/* the window rule's reasons lead the notes, as merge.c writes them */
	for (int w = VERDICT_WINDOW_BEFORE; verdict != VERDICT_REJECTED &&
	     w <= VERDICT_WINDOW_AFTER; w++) {
		const char *gap = verdict_window_gap(&a->tally, w);
		if (gap && json_array_insert_new(a->notes, 0, json_string(gap)))
			return FC_NOMEM;
	}

	if (a->nsched > 1) /* a shard may hold none: no array */
		qsort(a->sched, a->nsched, sizeof(*a->sched), entry_cmp);
	for (size_t i = 0; i < a->nsched; i++) {
		json_t *vs = json_object_get(a->sched[i].json, "violations"), *v;
		size_t k;
		json_array_foreach(vs, k, v)
			json_array_append(violations, v);
		json_array_append_new(schedules, a->sched[i].json);
		a->sched[i].json = NULL;
	}
	if (!R->o->full_report)
		report_cap_details(schedules);
	return report_json_add_route(report, &R->s->routes[r], verdict,
				     coverage(a), violations, schedules);
}

/* --- setup ---------------------------------------------------------------------- */

static bool listed(const char *const *names, const char *name)
{
	if (!names)
		return true;
	for (; *names; names++)
		if (strcmp(*names, name) == 0)
			return true;
	return false;
}

/* --schedule: a string naming a try, operation, member or proxy that
 * does not exist is a usage error before anything runs
 * (schedule_check_suite()). */
static int replay_explorer(const struct suite *s, const struct scenario *sc,
			   const char *schedule, explorer **ex, char *err,
			   size_t errlen)
{
	struct fault *f = NULL;
	size_t n = 0;
	char why[600];
	int rc = schedule_parse(schedule, &f, &n, err, errlen);

	if (!rc && (rc = schedule_check_suite(s, sc, f, n, why, sizeof(why))))
		snprintf(err, errlen, "--schedule: %s", why);
	free(f);
	return rc ? rc : explorer_new_replay(s, sc, schedule, ex, err, errlen);
}

/* One replayed schedule's report entry against schedule_check_reached():
 * 0, or FC_USAGE when it names an occurrence the route never reaches. */
static int replay_reached(json_t *sched, const struct fault *f, size_t n,
			  const char *route, char *err, size_t errlen)
{
	json_t *faults = json_object_get(sched, "faults");
	json_t *attempts = json_object_get(sched, "attempts"), *a;
	size_t na = json_array_size(attempts), i;
	struct schedule_attempt *sa = calloc(na + 1, sizeof(*sa));
	bool *fired = calloc(n + 1, sizeof(*fired));
	char why[1000];
	int rc = 0;

	/* a schedule the harness could not finish proves nothing */
	if (json_string_value(json_object_get(sched, "error")) ||
	    json_array_size(faults) != n || !sa || !fired)
		goto out;
	for (i = 0; i < n; i++)
		fired[i] = json_is_true(json_object_get(
			json_array_get(faults, i), "fired"));
	json_array_foreach(attempts, i, a) {
		json_t *hits = json_object_get(a, "failpoints"), *h;
		const char **names = calloc(json_array_size(hits) + 1,
					    sizeof(*names));
		size_t k;

		if (!names)
			goto out;
		sa[i].hits = names;
		json_array_foreach(hits, k, h) {
			const char *name = json_string_value(json_object_get(h, "name"));

			names[sa[i].nhits++] = name ? name : "";
		}
		sa[i].operation = (int)json_integer_value(json_object_get(a, "operation"));
		sa[i].try_number = (int)json_integer_value(json_object_get(a, "try"));
		sa[i].ran_to_end = json_is_integer(json_object_get(a, "exit")) &&
				   !json_is_true(json_object_get(a, "killed")) &&
				   !json_is_true(json_object_get(a, "timed_out"));
	}
	rc = schedule_check_reached(f, n, fired, (int)json_array_size(
				json_object_get(sched, "operations")), sa, na,
				why, sizeof(why));
	if (rc)
		snprintf(err, errlen, "--schedule: route '%s': %s", route, why);
out:
	for (i = 0; sa && i < na; i++)
		free((void *)sa[i].hits);
	free(sa);
	free(fired);
	return rc;
}

/* After a --schedule replay ran: a fault that never fired because the
 * route never reaches its occurrence is a usage error, naming what the
 * route does reach, instead of an unverified run. */
static int replay_check(const struct run *R, char *err, size_t errlen)
{
	struct fault *f = NULL;
	size_t n = 0;
	int rc = schedule_parse(R->o->schedule, &f, &n, err, errlen);

	for (size_t r = 0; !rc && r < R->s->nroutes; r++)
		for (size_t i = 0; !rc && i < R->acc[r].nsched; i++)
			rc = replay_reached(R->acc[r].sched[i].json, f, n,
					    R->s->routes[r].name, err, errlen);
	free(f);
	return rc;
}

/* Every name of `names` must exist in the suite. */
static int check_names(const char *const *names, const struct suite *s,
		       bool routes, char *err, size_t errlen)
{
	for (; names && *names; names++) {
		bool found = false;
		size_t n = routes ? s->nroutes : s->nscenarios;
		for (size_t i = 0; i < n && !found; i++)
			found = strcmp(*names, routes ? s->routes[i].name :
				       s->scenarios[i].name) == 0;
		if (!found) {
			snprintf(err, errlen, "the suite has no %s named '%s'",
				 routes ? "route" : "scenario", *names);
			return FC_USAGE;
		}
	}
	return 0;
}

/* Does scenario sc lose power anywhere? */
static bool loses_power(const struct scenario *sc)
{
	if (sc->explore && (sc->explore->actions & FAULT_BIT(FAULT_POWER_LOSS)))
		return true;
	for (char **a = sc->explore ? sc->explore->sys_actions : NULL; a && *a;
	     a++)
		if (strcmp(*a, "power_loss") == 0)
			return true;
	for (size_t i = 0; i < sc->nfaults; i++)
		if (fault_loses_power(&sc->faults[i]))
			return true;
	return false;
}

/* The unit's crash-state bookkeeping: recorded when its route keeps its
 * state in files and its scenario explores failpoints. */
static int unit_states(const struct run *R, const struct route_spec *rs,
		       const struct scenario *sc, size_t k, cs_unit **out)
{
	const struct certify_opts *o = R->o;
	const char *why = NULL;
	uint64_t seed = (o->seed ? *o->seed : 0x5eedULL) ^ (k * 0x100000001b3ULL);

	if (o->reexecute)
		why = "--reexecute";
	else if (o->schedule)
		why = "a replay runs its one schedule whole";
	else if (!sc->explore)
		why = "a fixed scenario is one schedule: nothing to share";
	else if (sc->explore->proxy[0])
		why = "a proxy exploration re-executes every schedule (the "
		      "state of a connection cannot be snapshotted)";
	else
		state_in_files(rs, &why);
	return cs_unit_new(why == NULL, why, loses_power(sc), !o->no_dedup,
			   o->recheck_pct, seed, out);
}

/* Which try-1 kills the retry wave of an exhaustive failpoint exploration
 * follows.  Every one when the route's state is in files: kills that leave
 * equal states then have equal digests and their schedules are judged once
 * (crash_states.h), in --reexecute too, so that both modes judge the same
 * schedules.  Else one kill per recovery path, the only guess at equal
 * states a service allows.  NULL when the scenario has no retry wave. */
static const char *retry_wave(const struct route_spec *rs, explorer *ex)
{
	const char *why;

	if (!explorer_has_retry_wave(ex))
		return NULL;
	if (!state_in_files(rs, &why))
		return "one kill per recovery path";
	explorer_retry_every_kill(ex);
	return "every kill";
}

static int select_units(struct run *R, char *err, size_t errlen)
{
	const struct suite *s = R->s;
	const struct certify_opts *o = R->o;
	int rc;

	if ((rc = check_names(o->routes, s, true, err, errlen)) ||
	    (rc = check_names(o->scenarios, s, false, err, errlen)))
		return rc;
	R->units = calloc(s->nroutes * s->nscenarios + 1, sizeof(*R->units));
	R->acc = calloc(s->nroutes, sizeof(*R->acc));
	if (!R->units || !R->acc)
		return FC_NOMEM;
	for (size_t r = 0; r < s->nroutes; r++) {
		struct route_acc *a = &R->acc[r];
		if (!listed(o->routes, s->routes[r].name))
			continue;
		a->selected = true;
		a->reached = json_object();
		a->faulted = json_object();
		a->declared = json_object();
		a->by_kind = json_object();
		a->notes = json_array();
		a->modes = json_array();
		if (!a->reached || !a->faulted || !a->declared || !a->by_kind ||
		    !a->notes || !a->modes)
			return FC_NOMEM;
		for (size_t i = 0; i < s->nscenarios; i++) {
			const struct scenario *sc = &s->scenarios[i];
			struct unit *u = &R->units[R->nunits];
			if (!listed(o->scenarios, sc->name) ||
			    !scenario_applies_to(sc, s->routes[r].name))
				continue;
			declare_scenario(a->declared, sc);
			if (o->schedule)
				rc = replay_explorer(s, sc, o->schedule, &u->ex,
						     err, errlen);
			else
				rc = explorer_new(s, sc, o->seed, &u->ex, err, errlen);
			if (!rc)
				rc = unit_states(R, &s->routes[r], sc, R->nunits,
						 &u->cs);
			if (!rc && !o->schedule)
				u->retry_wave = retry_wave(&s->routes[r], u->ex);
			if (rc)
				return rc;
			u->r = (int)r;
			u->s = (int)i;
			R->nunits++;
			a->nunits++;
		}
		/* A route no selected scenario applies to is left out,
		 * unless it was asked for by name. */
		if (!a->nunits && o->routes) {
			snprintf(err, errlen, "no selected scenario applies to "
				 "route '%s' (see the scenarios' routes: lists)",
				 s->routes[r].name);
			return FC_USAGE;
		}
		a->selected = a->nunits > 0;
	}
	if (!R->nunits) {
		snprintf(err, errlen, "no selected scenario applies to any "
			 "selected route");
		return FC_USAGE;
	}
	return 0;
}

static void release(struct run *R)
{
	for (size_t i = 0; i < R->nunits; i++) {
		explorer_free(R->units[i].ex);
		cs_unit_free(R->units[i].cs, free);
	}
	free(R->units);
	for (size_t r = 0; R->acc && r < R->s->nroutes; r++) {
		struct route_acc *a = &R->acc[r];
		for (size_t i = 0; i < a->nsched; i++)
			json_decref(a->sched[i].json);
		free(a->sched);
		json_decref(a->reached);
		json_decref(a->faulted);
		json_decref(a->declared);
		json_decref(a->by_kind);
		json_decref(a->notes);
		json_decref(a->modes);
	}
	free(R->acc);
}

/* The state store's limit and its counter, shared by the workers the
 * pool forks (mapped before it does). */
static void store_limit(const struct certify_opts *o, struct wctx *w)
{
	struct statvfs fs;
	void *m;

	w->store_max = o->state_store_max;
	if (!w->store_max && statvfs(o->work_dir, &fs) == 0)
		w->store_max = (unsigned long long)fs.f_blocks * fs.f_frsize / 4;
	m = mmap(NULL, sizeof(*w->store_used), PROT_READ | PROT_WRITE,
		 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	w->store_used = m == MAP_FAILED ? NULL : m; /* zero-filled */
}

/*
 * The worker processes for `jobs` when --workers does not say: three
 * times as many, of which `jobs` hold a turn at a time (pool_new()).  A
 * schedule spends much of its time waiting out leases on the clock (the
 * scenario's zombie_delay_ms and lease_ttl_ms: real time the route must
 * see pass), and a worker gives up its turn while it does, so another
 * worker's schedule uses the CPU meanwhile.  With twice as many the two
 * cores still idled a sixth of the time in every-failpoint (a pause
 * schedule waits twice); with three times, a fourteenth (harness.md,
 * "Parallel runs").  At most 64.
 */
static int workers_for(int jobs)
{
	return jobs > 21 ? 64 : 3 * jobs;
}

int certify_run(const struct suite *s, const struct certify_opts *o,
		json_t **report, char *err, size_t errlen)
{
	struct run R = { .s = s, .o = o };
	struct wctx w = { .s = s, .o = o };
	json_t *rep = NULL;
	int rc;

	*report = NULL;
	fc_sqlite_setup(); /* before a worker opens its first target */
	if (o->schedule && (!o->scenarios || !o->scenarios[0] ||
			    o->scenarios[1])) {
		snprintf(err, errlen, "--schedule needs exactly one --only SCENARIO");
		return FC_USAGE;
	}
	if (o->schedule && o->shard_count) {
		snprintf(err, errlen, "--schedule replays one schedule: it does "
			 "not combine with --shard");
		return FC_USAGE;
	}
	rc = select_units(&R, err, errlen);
	if (rc) {
		if (rc == FC_NOMEM)
			snprintf(err, errlen, "out of memory");
		release(&R);
		return rc;
	}
	store_limit(o, &w);
	R.store_used = w.store_used;
	R.t0 = clock_mono_ms();
	rc = pool_new(o->workers ? o->workers : workers_for(o->jobs),
		      o->jobs, !o->no_pin, work, work_fini, &w, &R.pool, err,
		      errlen);
	if (!rc) {
		/* the run watchdog: each attempt a worker starts is progress
		 * (orchestrator.c), so the longest quiet spell of a schedule
		 * that is not stuck is one attempt's timeout */
		long long quiet = (long long)s->orchestrator.attempt_timeout_ms +
				  120 * 1000;

		pool_set_stall_ms(R.pool, quiet > POOL_STALL_MS ? quiet :
				  POOL_STALL_MS);
		rc = loop(&R);
		if (rc && certify_interrupted)
			snprintf(err, errlen, "interrupted");
		else if (rc)
			snprintf(err, errlen, "the worker pool failed (%s): %s",
				 error_name(rc), *pool_errmsg(R.pool) ?
				 pool_errmsg(R.pool) : "a worker ended");
	}
	pool_free(R.pool, free); /* the inflight records of jobs cut short */
	if (w.store_used)
		munmap(w.store_used, sizeof(*w.store_used));
	if (!rc && o->schedule)
		rc = replay_check(&R, err, errlen);
	progress(&R, true);
	if (o->progress_tty && !o->quiet)
		fputc('\n', stderr);
	if (!rc) {
		rep = report_json_new(s, o->seed, o->jobs,
				      supervisor_containment_name(
					      supervisor_containment(NULL, 0)));
		if (rep && o->shard_count &&
		    json_object_set_new(rep, "shard", json_pack("{s:i, s:i}",
				"index", o->shard_index, "count", o->shard_count)))
			rc = FC_NOMEM;
		for (size_t r = 0; rep && r < s->nroutes && !rc; r++)
			if (R.acc[r].selected)
				rc = add_route(&R, rep, r);
		if (!rep || rc) {
			snprintf(err, errlen, "out of memory building the report");
			rc = FC_NOMEM;
		}
	}
	release(&R);
	if (rc) {
		json_decref(rep);
		return rc;
	}
	*report = rep;
	return 0;
}
