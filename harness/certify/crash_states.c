/*
 * crash_states.c -- seeds, inheritance and rechecks of a unit's schedules
 * (crash_states.h).
 *
 * The unit keeps four maps, all jansson objects used as hash tables:
 *
 *   states   "RECORDER|TRY|FP#HIT" -> {kill, power, hits, wall}: what a
 *            recording job (its schedule string) saw at each HIT of the
 *            try it recorded
 *   alias    schedule -> its representative's schedule, for inheritors: a
 *            seed looked up under an inheritor's name finds the
 *            representative's recording
 *   reps     dedup key "STATE|TRIES|REST" -> {id, schedule}
 *   jobs     job id -> {schedule, state?, m?, rep?, recheck?} (m: its
 *            seeded tries)
 *
 * and the results of representatives until the unit ends (an inheritor
 * may come after its representative finished).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/certify/crash_states.h"
#include "harness/model/schedule.h"

/* A job waiting for its representative's result. */
struct waiter {
	int rep;
	int id;
	void *tag;
	json_t *res;   /* a recheck: its own result, to compare */
	json_t *skel;  /* an inheritor: what its result is built from */
};

struct cs_unit {
	bool recorded, power, dedup;
	char why[200];
	int recheck_pct;
	uint64_t seed;
	bool rechecked_one;
	json_t *states, *alias, *reps, *jobs, *done, *distinct;
	struct waiter *w;
	size_t nw;
	size_t schedules, executed, seeded, inherited, rechecked, nondet,
	       recorded_states, refused_states;
	char refused_why[256]; /* the first refusal's reason */
};

int cs_unit_new(bool recorded, const char *why, bool power, bool dedup,
		int recheck_pct, uint64_t seed, cs_unit **out)
{
	cs_unit *u = calloc(1, sizeof(*u));

	*out = NULL;
	if (!u)
		return FC_NOMEM;
	u->recorded = recorded;
	snprintf(u->why, sizeof(u->why), "%s", why ? why : "");
	u->power = power;
	u->dedup = dedup;
	u->recheck_pct = recheck_pct;
	u->seed = seed;
	u->states = json_object();
	u->alias = json_object();
	u->reps = json_object();
	u->jobs = json_object();
	u->done = json_object();
	u->distinct = json_object();
	if (!u->states || !u->alias || !u->reps || !u->jobs || !u->done ||
	    !u->distinct) {
		cs_unit_free(u, NULL);
		return FC_NOMEM;
	}
	*out = u;
	return 0;
}

void cs_unit_free(cs_unit *u, void (*free_tag)(void *))
{
	if (!u)
		return;
	for (size_t i = 0; i < u->nw; i++) {
		json_decref(u->w[i].res);
		json_decref(u->w[i].skel);
		if (free_tag)
			free_tag(u->w[i].tag);
	}
	free(u->w);
	json_decref(u->states);
	json_decref(u->alias);
	json_decref(u->reps);
	json_decref(u->jobs);
	json_decref(u->done);
	json_decref(u->distinct);
	free(u);
}

size_t cs_waiting(const cs_unit *u)
{
	return u ? u->nw : 0;
}

/* --- planning ------------------------------------------------------------ */

static json_t *job_info(const cs_unit *u, int id)
{
	char k[24];

	snprintf(k, sizeof(k), "%d", id);
	return json_object_get(u->jobs, k);
}

static bool has_power(const struct explore_job *j)
{
	for (size_t i = 0; i < j->nfaults; i++)
		if (fault_loses_power(&j->faults[i]))
			return true;
	return false;
}

/* Does fault f come after op 1's first m tries (crash_states.h)?  A
 * power loss may, when the last seeded state has its power model. */
static bool later(const struct fault *f, size_t m, bool model)
{
	if (f->operation == 0 || (fault_loses_power(f) && !model))
		return false;
	if (f->operation != 1)
		return true;
	if (fault_at_failpoint(f) || f->action == FAULT_SYSCALL ||
	    fault_is_proxy_action(f->action))
		return f->attempt > (int)m;
	return f->after_attempt >= (int)m;
}

/* The seeded tries of j: its leading kills (or first power loss) whose
 * states were recorded under exactly its earlier faults.  *m tries, the
 * last one's state in *state, and when a power loss follows, the power
 * model recorded with it in *model; 0 tries and NULL when nothing is
 * seeded. */
static int build_chain(cs_unit *u, const struct explore_job *j, json_t **seed,
		       size_t *m, const char **state, const char **model)
{
	char prefix[SCHEDULE_STR_MAX] = "clean", key[SCHEDULE_STR_MAX + 96];
	bool power_later = has_power(j);

	*m = 0;
	*state = NULL;
	*model = NULL;
	*seed = json_array();
	if (!*seed)
		return FC_NOMEM;
	for (size_t i = 0; i < j->nfaults; i++) {
		const struct fault *f = &j->faults[i];
		bool power = f->action == FAULT_POWER_LOSS;
		const char *pre = json_string_value(json_object_get(u->alias, prefix));
		json_t *st, *d, *md;

		bool sys = f->action == FAULT_SYSCALL;

		if (f->operation != 1 || f->attempt != (int)i + 1 ||
		    !(f->action == FAULT_KILL || ((power || sys) && i == 0)))
			break;
		if (sys)
			snprintf(key, sizeof(key), "%s|%d|rule:%s", pre ? pre :
				 prefix, f->attempt, f->rule);
		else
			snprintf(key, sizeof(key), "%s|%d|%s#%d", pre ? pre :
				 prefix, f->attempt, f->failpoint, f->hit);
		st = json_object_get(u->states, key);
		d = json_object_get(st, power ? "power" : "kill");
		md = power_later && !power ? json_object_get(st, "model") : NULL;
		if (!json_string_length(d))
			break;
		if (json_array_append_new(*seed, json_pack("{s:i, s:i, s:O, s:i, "
				"s:O, s:O, s:O, s:O*, s:O*}", "op", 1, "try",
				f->attempt, "hits", json_object_get(st, "hits"),
				"fault", (int)i, "state", d, "start_wall_ms",
				json_object_get(st, "start"), "end_wall_ms",
				json_object_get(st, "wall"), "what",
				json_object_get(st, "what"), "model",
				json_string_length(md) ? md : NULL)))
			return FC_NOMEM;
		*m = i + 1;
		*state = json_string_value(d);
		*model = json_string_length(md) ? json_string_value(md) : NULL;
		if (power || sys || schedule_format(j->faults, i + 1, prefix,
						    sizeof(prefix)))
			break; /* nothing is recorded after these */
	}
	for (size_t i = *m; i < j->nfaults && *m; i++)
		if (!later(&j->faults[i], *m, *model != NULL))
			*m = 0;
	if (!*m) {
		json_decref(*seed);
		*seed = NULL;
		*state = NULL;
		*model = NULL;
	}
	return 0;
}

/* Is inheritor `id` run anyway?  The first of the unit always is. */
static bool draw_recheck(cs_unit *u, int id)
{
	uint64_t x = u->seed ^ (0x9e3779b97f4a7c15ULL * (uint64_t)(id + 1));

	if (!u->rechecked_one) {
		u->rechecked_one = true;
		return true;
	}
	x ^= x >> 31;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	return (int)(x % 100) < u->recheck_pct;
}

/*
 * Seeded job j (its info, the dedup key) is the first with the key: it
 * runs, the representative; or a later one: it inherits, unless drawn to
 * run anyway (a recheck).
 */
static int judge_once(cs_unit *u, const struct explore_job *j, json_t *info,
		      const char *key, struct cs_plan *out)
{
	const char *sched = j->nfaults ? j->schedule : "clean";
	json_t *rep = json_object_get(u->reps, key);

	if (!rep) {
		if (json_object_set_new(u->reps, key, json_pack("{s:i, s:s}", "id",
					j->id, "schedule", sched)) ||
		    json_object_set_new(info, "representative", json_true()))
			return FC_NOMEM;
	}
	if (!rep || !u->dedup) {
		u->executed++;
		u->seeded++;
		return 0;
	}
	if (json_object_set(info, "rep", json_object_get(rep, "id")) ||
	    json_object_set(info, "rep_schedule", json_object_get(rep, "schedule")))
		return FC_NOMEM;
	if (draw_recheck(u, j->id)) {
		u->executed++;
		u->seeded++;
		u->rechecked++;
		out->record = false; /* its representative's recording serves */
		if (json_object_set(u->alias, sched,
				    json_object_get(rep, "schedule")))
			return FC_NOMEM;
		return json_object_set_new(info, "recheck", json_true()) ?
			FC_NOMEM : 0;
	}
	json_decref(out->seed);
	out->seed = NULL;
	out->record = false;
	out->inherit = true;
	u->inherited++;
	return json_object_set(u->alias, sched,
			       json_object_get(rep, "schedule")) ? FC_NOMEM : 0;
}

int cs_plan_job(cs_unit *u, const struct explore_job *j, struct cs_plan *out)
{
	const char *sched = j->nfaults ? j->schedule : "clean", *state, *model;
	char id[24], key[SCHEDULE_STR_MAX * 2 + 160], rest[SCHEDULE_STR_MAX];
	json_t *info = json_pack("{s:s}", "schedule", sched);
	size_t m;
	int rc;

	memset(out, 0, sizeof(*out));
	snprintf(id, sizeof(id), "%d", j->id);
	if (!info || json_object_set_new(u->jobs, id, info))
		return FC_NOMEM;
	u->schedules++;
	out->power = u->power && has_power(j);
	if (!u->recorded) {
		u->executed++;
		return 0;
	}
	/* the recordings: the discovery run (its try 1, with power states
	 * when the scenario loses power) and kills in try 1 (their try 2) */
	out->record = j->wants_trace &&
		      (j->nfaults == 0 ||
		       (j->nfaults == 1 && j->faults[0].action == FAULT_KILL &&
			j->faults[0].attempt == 1 && j->faults[0].operation == 1));
	if (j->nfaults == 0)
		out->power = u->power;
	if ((rc = build_chain(u, j, &out->seed, &m, &state, &model)))
		return rc;
	if (!m) {
		u->executed++;
		return 0;
	}
	/* seeded: a power loss after it only with its model (later()) */
	out->power = model != NULL;
	if (schedule_format(j->faults + m, j->nfaults - m, rest, sizeof(rest)))
		rest[0] = '\0';
	snprintf(key, sizeof(key), "%s|%s|%zu|%s", state, model ? model : "", m,
		 rest);
	if (json_object_set_new(info, "state", json_string(state)) ||
	    json_object_set_new(info, "m", json_integer((json_int_t)m)) ||
	    (model && json_object_set_new(info, "model", json_string(model))) ||
	    json_object_set_new(u->distinct, state, json_true()))
		return FC_NOMEM;
	return judge_once(u, j, info, key, out);
}

/* --- results --------------------------------------------------------------- */

static int push_ready(struct cs_ready **ready, size_t *n, void *tag, int id,
		      json_t *res, json_t *trace)
{
	struct cs_ready *r = realloc(*ready, (*n + 1) * sizeof(*r));

	if (!r) {
		json_decref(res);
		return FC_NOMEM;
	}
	r[*n] = (struct cs_ready){ .tag = tag, .id = id, .res = res,
				   .trace = trace };
	*ready = r;
	(*n)++;
	return 0;
}

static int add_waiter(cs_unit *u, int rep, int id, void *tag, json_t *res,
		      json_t *skel)
{
	struct waiter *w = realloc(u->w, (u->nw + 1) * sizeof(*w));

	if (!w)
		return FC_NOMEM;
	w[u->nw++] = (struct waiter){ .rep = rep, .id = id, .tag = tag,
				      .res = res, .skel = skel };
	u->w = w;
	return 0;
}

/* What the route reached in the recorded try, up to the hit-th HIT of fp
 * (fp NULL: its first `hit` HITs): the failpoint names of the attempt
 * (op, try) that ran here. */
static json_t *hits_until(json_t *attempts, int op, int k, const char *fp,
			  int hit)
{
	json_t *a, *h, *out = json_array();
	size_t i, x;

	json_array_foreach(attempts, i, a) {
		int seen = 0;
		if (json_integer_value(json_object_get(a, "operation")) != op ||
		    json_integer_value(json_object_get(a, "try")) != k ||
		    json_object_get(a, "seeded"))
			continue;
		if (!fp && hit == 0)
			return out;
		json_array_foreach(json_object_get(a, "failpoints"), x, h) {
			const char *name = json_string_value(json_object_get(h, "name"));
			json_array_append_new(out, json_string(name ? name : ""));
			if (fp ? name && strcmp(name, fp) == 0 && ++seen == hit :
			    (int)x + 1 == hit)
				return out;
		}
	}
	json_decref(out);
	return NULL;
}

/* States a recording job took but the store refused (FC_NOSPACE): counted,
 * the first reason kept; out of the result like "recorded". */
static void note_refused(cs_unit *u, json_t *res)
{
	json_t *r = json_object_get(res, "refused_states");

	if (!r)
		return;
	if (!u->refused_states)
		snprintf(u->refused_why, sizeof(u->refused_why), "%s",
			 json_string_value(json_object_get(r, "why")) ?
			 json_string_value(json_object_get(r, "why")) : "");
	u->refused_states += (size_t)json_integer_value(json_object_get(r,
							"count"));
	json_object_del(res, "refused_states");
}

/* The states a recording job saw, under its schedule's name. */
static void store_recorded(cs_unit *u, const char *sched, json_t *res)
{
	json_t *rec = json_object_get(res, "recorded"), *s;
	json_t *attempts = json_object_get(res, "attempts");
	char key[SCHEDULE_STR_MAX + 96];
	size_t i;

	json_array_foreach(rec, i, s) {
		const char *fp = json_string_value(json_object_get(s, "failpoint"));
		const char *rule = json_string_value(json_object_get(s, "rule"));
		int k = (int)json_integer_value(json_object_get(s, "try"));
		int op = (int)json_integer_value(json_object_get(s, "op"));
		int hit = (int)json_integer_value(json_object_get(s, "hit"));
		json_t *hits;

		if (!fp)
			continue;
		if (rule && rule[0]) { /* a syscall's: the first `hit` HITs */
			hits = hits_until(attempts, op, k, NULL, hit);
			snprintf(key, sizeof(key), "%s|%d|rule:%s", sched, k, rule);
		} else {
			hits = hits_until(attempts, op, k, fp, hit);
			snprintf(key, sizeof(key), "%s|%d|%s#%d", sched, k, fp, hit);
		}
		if (!hits)
			continue;
		if (json_object_set_new(u->states, key, json_pack("{s:O, s:O, "
				"s:O*, s:o, s:O, s:O, s:O}", "kill", json_object_get(s,
				"kill"), "power", json_object_get(s, "power"),
				"model", json_object_get(s, "model"),
				"hits", hits, "wall", json_object_get(s, "wall_ms"),
				"start", json_object_get(s, "start_wall_ms"),
				"what", json_object_get(s, "what"))) == 0)
			u->recorded_states++;
	}
	json_object_del(res, "recorded");
}

/* The violated invariants of a result, as a sorted string "1,4,4". */
static void violation_list(const json_t *res, char *out, size_t len)
{
	json_t *v;
	size_t i, n = 0;
	int inv[64];

	json_array_foreach(json_object_get(res, "violations"), i, v)
		if (n < 64)
			inv[n++] = (int)json_integer_value(json_object_get(v, "invariant"));
	for (size_t a = 1; a < n; a++)
		for (size_t b = a; b > 0 && inv[b - 1] > inv[b]; b--) {
			int t = inv[b];
			inv[b] = inv[b - 1];
			inv[b - 1] = t;
		}
	out[0] = '\0';
	for (i = 0; i < n; i++) {
		size_t l = strlen(out);
		snprintf(out + l, len - l, "%s%d", i ? "," : "", inv[i]);
	}
}

/* A recheck against its representative: a different outcome or other
 * violated invariants is a finding, written into the recheck's result. */
static void compare(cs_unit *u, json_t *res, const json_t *rep,
		    const json_t *info)
{
	const char *o1 = json_string_value(json_object_get(res, "outcome"));
	const char *o2 = json_string_value(json_object_get(rep, "outcome"));
	char v1[400], v2[400];

	violation_list(res, v1, sizeof(v1));
	violation_list(rep, v2, sizeof(v2));
	json_object_set_new(res, "recheck_of", json_pack("{s:O, s:s+}",
		"schedule", json_object_get(info, "rep_schedule"), "state",
		"sha256:", json_string_value(json_object_get(info, "state"))));
	if (o1 && o2 && strcmp(o1, o2) == 0 && strcmp(v1, v2) == 0)
		return;
	u->nondet++;
	json_object_set_new(res, "nondeterministic", json_pack(
		"{s:O, s:s+, s:s, s:s, s:s, s:s, s:s}", "representative",
		json_object_get(info, "rep_schedule"), "state", "sha256:",
		json_string_value(json_object_get(info, "state")),
		"representative_outcome", o2 ? o2 : "?", "outcome", o1 ? o1 : "?",
		"representative_violations", v2, "violations", v1, "detail",
		"run again from the same durable state with the same later faults, "
		"the route did something else: it depends on what the harness "
		"does not restore (time, randomness, state outside the "
		"schedule's files), so inherited outcomes of this scenario are "
		"not proof"));
}

/* An inheritor's result: its representative's, under its own name. */
static json_t *inherited_result(const json_t *skel, const json_t *rep)
{
	json_t *r = json_copy((json_t *)rep), *faults = json_array();
	json_t *repf = json_object_get(rep, "faults"), *f, *faulted, *viol;
	size_t m = (size_t)json_integer_value(json_object_get(skel, "m")), i;
	const char *state = json_string_value(json_object_get(skel, "state"));
	const char *from = json_string_value(json_object_get(skel, "rep_schedule"));
	const char *model = json_string_value(json_object_get(skel, "model"));
	char detail[SCHEDULE_STR_MAX + 400];

	if (!r || !faults) {
		json_decref(r);
		json_decref(faults);
		return NULL;
	}
	json_array_foreach(json_object_get(skel, "faults"), i, f)
		json_array_append_new(faults, json_pack("{s:O, s:b}", "fault", f,
			"fired", i < m || json_is_true(json_object_get(
				json_array_get(repf, i), "fired"))));
	faulted = json_copy(json_object_get(skel, "faulted"));
	json_array_foreach(json_object_get(rep, "faulted"), i, f) {
		bool dup = false;
		json_t *g;
		size_t k;
		json_array_foreach(faulted, k, g)
			dup |= json_equal(f, g);
		if (!dup)
			json_array_append(faulted, f);
	}
	/* its violations, under its own name (certify adds the reproduce
	 * line of this schedule) */
	viol = json_array();
	json_array_foreach(json_object_get(rep, "violations"), i, f) {
		json_t *v = json_copy(f);
		json_object_set(v, "schedule", json_object_get(skel, "schedule"));
		json_object_del(v, "reproduce");
		json_array_append_new(viol, v);
	}
	snprintf(detail, sizeof(detail), "same durable state%s as '%s' "
		 "(sha256:%.16s...%s%.16s%s) and the same faults after it: "
		 "judged once, its outcome holds here", model ? " and power "
		 "model" : "", from ? from : "?", state ? state : "", model ?
		 ", power model sha256:" : "", model ? model : "", model ? "..." :
		 "");
	json_object_set(r, "schedule", json_object_get(skel, "schedule"));
	json_object_set(r, "kind", json_object_get(skel, "kind"));
	json_object_set(r, "strict", json_object_get(skel, "strict"));
	json_object_set_new(r, "duration_ms", json_integer(0));
	json_object_set_new(r, "attempts", json_array());
	json_object_set_new(r, "applied", json_array());
	json_object_set_new(r, "faults", faults);
	json_object_set_new(r, "faulted", faulted);
	json_object_set_new(r, "violations", viol);
	json_object_set_new(r, "inherited", json_pack("{s:s?, s:s+, s:s}",
		"from", from, "state", "sha256:", state ? state : "", "detail",
		detail));
	json_object_del(r, "dir");
	json_object_del(r, "recheck_of");
	json_object_del(r, "nondeterministic");
	return r;
}

int cs_inherit(cs_unit *u, const struct explore_job *j, void *tag,
	       struct cs_ready **ready, size_t *n)
{
	json_t *info = job_info(u, j->id), *skel, *faults = json_array();
	json_t *faulted = json_array(), *rep;
	int rid = (int)json_integer_value(json_object_get(info, "rep"));
	char one[SCHEDULE_STR_MAX], k[24];

	if (!faults || !faulted) {
		json_decref(faults);
		json_decref(faulted);
		return FC_NOMEM;
	}
	for (size_t i = 0; i < j->nfaults; i++) {
		if (schedule_format(&j->faults[i], 1, one, sizeof(one)))
			one[0] = '\0';
		json_array_append_new(faults, json_string(one));
		if (j->faults[i].action == FAULT_KILL ||
		    j->faults[i].action == FAULT_POWER_LOSS)
			json_array_append_new(faulted,
					      json_string(j->faults[i].failpoint));
	}
	skel = json_pack("{s:s, s:s, s:b, s:o, s:o, s:O, s:O, s:O*, s:O}",
			 "schedule", j->nfaults ? j->schedule : "clean", "kind",
			 j->kind, "strict", j->strict, "faults", faults, "faulted",
			 faulted, "m", json_object_get(info, "m"), "state",
			 json_object_get(info, "state"), "model",
			 json_object_get(info, "model"), "rep_schedule",
			 json_object_get(info, "rep_schedule"));
	if (!skel)
		return FC_NOMEM;
	snprintf(k, sizeof(k), "%d", rid);
	rep = json_object_get(u->done, k);
	if (!rep)
		return add_waiter(u, rid, j->id, tag, NULL, skel);
	{
		json_t *r = inherited_result(skel, rep);
		json_decref(skel);
		return r ? push_ready(ready, n, tag, j->id, r, rep) : FC_NOMEM;
	}
}

int cs_finished(cs_unit *u, int id, void *tag, json_t *res,
		struct cs_ready **ready, size_t *n)
{
	json_t *info = job_info(u, id), *rep = NULL;
	const char *sched = json_string_value(json_object_get(info, "schedule"));
	char k[24];
	int rc = 0;

	if (sched)
		store_recorded(u, sched, res);
	else
		json_object_del(res, "recorded");
	note_refused(u, res);
	if (json_is_true(json_object_get(info, "representative"))) {
		snprintf(k, sizeof(k), "%d", id);
		if (json_object_set(u->done, k, res))
			rc = FC_NOMEM;
	}
	if (json_is_true(json_object_get(info, "recheck"))) {
		snprintf(k, sizeof(k), "%d",
			 (int)json_integer_value(json_object_get(info, "rep")));
		rep = json_object_get(u->done, k);
		if (!rep)
			return add_waiter(u, (int)json_integer_value(
				json_object_get(info, "rep")), id, tag, res, NULL);
		compare(u, res, rep, info);
	}
	if (!rc)
		rc = push_ready(ready, n, tag, id, res, res);
	else
		json_decref(res);
	for (size_t i = 0; i < u->nw && !rc;) {
		struct waiter w = u->w[i];
		json_t *r;

		if (w.rep != id) {
			i++;
			continue;
		}
		memmove(&u->w[i], &u->w[i + 1], (u->nw - i - 1) * sizeof(*u->w));
		u->nw--;
		if (w.res) {
			compare(u, w.res, res, job_info(u, w.id));
			rc = push_ready(ready, n, w.tag, w.id, w.res, w.res);
			continue;
		}
		r = inherited_result(w.skel, res);
		json_decref(w.skel);
		rc = r ? push_ready(ready, n, w.tag, w.id, r, res) : FC_NOMEM;
	}
	return rc;
}

json_t *cs_summary(const cs_unit *u)
{
	json_t *o = json_pack("{s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}",
		"mode", u->recorded ? "recorded" : "re-executed",
		"schedules", (json_int_t)u->schedules,
		"executed", (json_int_t)u->executed,
		"seeded", (json_int_t)u->seeded,
		"inherited", (json_int_t)u->inherited,
		"distinct_states", (json_int_t)json_object_size(u->distinct),
		"rechecked", (json_int_t)u->rechecked,
		"nondeterministic", (json_int_t)u->nondet,
		"states_recorded", (json_int_t)u->recorded_states);

	if (o && u->why[0])
		json_object_set_new(o, "why", json_string(u->why));
	if (o && u->refused_states) {
		json_object_set_new(o, "states_refused",
				    json_integer((json_int_t)u->refused_states));
		json_object_set_new(o, "refused_why",
				    json_string(u->refused_why));
	}
	return o;
}
