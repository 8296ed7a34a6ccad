/*
 * merge.c -- shard reports of one suite (`certify --shard I/N`) into one
 * report, as if one run had produced it (merge.h).
 *
 * Invariants:
 *  1. Only reports of the same run configuration merge: same schema,
 *     tool (name, version, git revision), suite digest and seed; the same
 *     route name must have the same definition digest and expectation in
 *     every shard.  When shards say which shard they are ("shard":
 *     {"index", "count"}), every shard 1..count must be present exactly
 *     once, so a lost CI artifact cannot make a smaller run look whole,
 *     and every shard must list the same routes (a shard run with another
 *     --route selection holds another slice).
 *  2. Verdicts are recomputed, never copied: the union of schedules is
 *     folded with the checker's own verdict_tally_add()/verdict_tally_fold()
 *     (harness/check/verdict.h), the windows their retried stops
 *     challenged counted over all shards (report_schedule_windows()), and
 *     the window rule's notes recomputed, never taken from a shard.  The harness turns a verdict unverified
 *     when exploration had a gap; a shard whose route verdict is unverified
 *     while its own schedules fold to a certified verdict had such a gap,
 *     and the gap is carried into the merged verdict.
 *  3. A schedule (scenario, kind, schedule string) that appears in several
 *     shards counts once; shards that disagree about its outcome or its
 *     violations are refused rather than silently picked from.
 *  4. With a key, every input must verify and the output is signed;
 *     inputs' signatures never reach the output.  Without one (the
 *     caller's explicit choice) nothing is verified and the output says
 *     so in its "unsigned" member, so an unverified merge never looks
 *     like a verified one.
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/check/report_summary.h"
#include "harness/check/verdict.h"
#include "reports/gate.h"
#include "reports/merge.h"
#include "reports/rview.h"
#include "reports/sign.h"

#define NOTES_MAX 20

struct mroute {
	json_t *obj;          /* the merged route being built */
	json_t *seen;         /* schedule key -> schedule */
	json_t *order;        /* scenario names in first-seen order */
	json_t *by_scenario;  /* scenario -> array of schedules */
	json_t *declared, *reached, *faulted; /* objects used as sets */
	json_t *unobservable; /* invariant number -> entry, intersected */
	json_t *notes;
	json_t *exploration;  /* every shard's coverage.exploration entries */
	long long syscalls;
	bool gap;
};

struct merge {
	const char *const *paths;
	json_t *const *in;
	size_t n;
	struct mroute *routes;
	size_t nroutes;
	char *err;
	size_t errlen;
};

static int fail(struct merge *m, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static int fail(struct merge *m, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(m->err, m->errlen, fmt, ap);
	va_end(ap);
	return FC_USAGE;
}

/* --- compatibility --------------------------------------------------------------- */

static bool same_member(const json_t *a, const json_t *b, const char *obj,
			const char *key)
{
	json_t *x = json_object_get(json_object_get(a, obj), key);
	json_t *y = json_object_get(json_object_get(b, obj), key);

	return json_equal(x, y) || (!x && !y);
}

/* Shards of one run list the same routes in the same (suite) order. */
static bool same_route_names(const json_t *a, const json_t *b)
{
	const json_t *ra = rview_arr(a, "routes"), *rb = rview_arr(b, "routes");
	size_t n = json_array_size(ra);

	if (json_array_size(rb) != n)
		return false;
	for (size_t i = 0; i < n; i++)
		if (strcmp(rview_str(json_array_get(ra, i), "name"),
			   rview_str(json_array_get(rb, i), "name")))
			return false;
	return true;
}

static int check_shards(struct merge *m)
{
	bool any_shard = false, all_shard = true;
	long long count = 0;
	bool *have = NULL;
	int rc = 0;

	for (size_t i = 1; i < m->n; i++) {
		const json_t *a = m->in[0], *b = m->in[i];
		if (!same_member(a, b, "tool", "name") ||
		    !same_member(a, b, "tool", "version") ||
		    !same_member(a, b, "tool", "git_rev"))
			return fail(m, "'%s' comes from fencecert %s (%s) but '%s' "
				    "from %s (%s)", m->paths[i],
				    rview_str(json_object_get(b, "tool"), "version"),
				    rview_str(json_object_get(b, "tool"), "git_rev"),
				    m->paths[0],
				    rview_str(json_object_get(a, "tool"), "version"),
				    rview_str(json_object_get(a, "tool"), "git_rev"));
		if (!same_member(a, b, "suite", "digest"))
			return fail(m, "'%s' ran suite %s but '%s' ran %s",
				    m->paths[i],
				    rview_str(json_object_get(b, "suite"), "digest"),
				    m->paths[0],
				    rview_str(json_object_get(a, "suite"), "digest"));
		if (!json_equal(json_object_get(a, "seed"), json_object_get(b, "seed")) &&
		    (json_object_get(a, "seed") || json_object_get(b, "seed")))
			return fail(m, "'%s' and '%s' used different seeds",
				    m->paths[i], m->paths[0]);
	}
	for (size_t i = 0; i < m->n; i++) {
		json_t *sh = json_object_get(m->in[i], "shard");
		any_shard |= sh != NULL;
		all_shard &= sh != NULL;
	}
	if (!any_shard)
		return 0;
	if (!all_shard)
		return fail(m, "some inputs say which shard they are and some do "
			    "not");
	count = rview_int(json_object_get(m->in[0], "shard"), "count", 0);
	have = calloc(count > 0 && count < 100000 ? (size_t)count + 1 : 1,
		      sizeof(*have));
	if (!have)
		return FC_NOMEM;
	for (size_t i = 0; i < m->n && !rc; i++) {
		json_t *sh = json_object_get(m->in[i], "shard");
		long long idx = rview_int(sh, "index", 0);
		if (rview_int(sh, "count", 0) != count || count < 1 ||
		    count >= 100000 || idx < 1 || idx > count)
			rc = fail(m, "'%s' is shard %lld/%lld, which does not fit "
				  "%lld shards", m->paths[i], idx,
				  rview_int(sh, "count", 0), count);
		else if (have[idx])
			rc = fail(m, "shard %lld/%lld is given twice ('%s')", idx,
				  count, m->paths[i]);
		else
			have[idx] = true;
	}
	for (long long k = 1; k <= count && !rc; k++)
		if (!have[k])
			rc = fail(m, "shard %lld/%lld is missing", k, count);
	free(have);
	for (size_t i = 1; i < m->n && !rc; i++)
		if (!same_route_names(m->in[0], m->in[i]))
			rc = fail(m, "shards '%s' and '%s' certified routes of "
				  "different selections: run every shard with the "
				  "same --route and --only", m->paths[0],
				  m->paths[i]);
	return rc;
}

static int check_signatures(struct merge *m, const struct sign_key *key)
{
	char err[256];

	if (key && key->len == 0)
		return fail(m, "%s is set but empty", SIGN_KEY_ENV);
	for (size_t i = 0; key && i < m->n; i++)
		if (sign_verify(m->in[i], key, err, sizeof(err)))
			return fail(m, "'%s': %s", m->paths[i], err);
	return 0;
}

/* --- routes ---------------------------------------------------------------------- */

static void mroute_release(struct mroute *mr)
{
	json_decref(mr->obj);
	json_decref(mr->seen);
	json_decref(mr->order);
	json_decref(mr->by_scenario);
	json_decref(mr->declared);
	json_decref(mr->reached);
	json_decref(mr->faulted);
	json_decref(mr->unobservable);
	json_decref(mr->notes);
	json_decref(mr->exploration);
}

static struct mroute *route_get(struct merge *m, const json_t *r)
{
	const char *name = rview_str(r, "name");
	struct mroute *mr;

	for (size_t i = 0; i < m->nroutes; i++)
		if (strcmp(rview_str(m->routes[i].obj, "name"), name) == 0)
			return &m->routes[i];
	mr = &m->routes[m->nroutes];
	memset(mr, 0, sizeof(*mr));
	mr->obj = json_pack("{s:s, s:O*, s:s, s:s}", "name", name, "command",
			    json_object_get(r, "command"), "digest", rview_str(r, "digest"), "expected",
			    rview_str(r, "expected"));
	mr->seen = json_object();
	mr->order = json_array();
	mr->by_scenario = json_object();
	mr->declared = json_object();
	mr->reached = json_object();
	mr->faulted = json_object();
	mr->notes = json_array();
	mr->exploration = json_array();
	if (!mr->obj || !mr->seen || !mr->order || !mr->by_scenario ||
	    !mr->declared || !mr->reached || !mr->faulted || !mr->notes ||
	    !mr->exploration) {
		mroute_release(mr);
		return NULL;
	}
	if (json_object_get(r, "executable_digest"))
		json_object_set(mr->obj, "executable_digest",
				json_object_get(r, "executable_digest"));
	m->nroutes++;
	return mr;
}

static void set_add(json_t *set, const json_t *names)
{
	json_t *v;
	size_t i;

	json_array_foreach(names, i, v)
		if (json_is_string(v))
			json_object_set_new(set, json_string_value(v), json_true());
}

/* The tally of a route's schedules, as the harness folds them. */
static struct verdict_tally tally_of(const json_t *schedules)
{
	struct verdict_tally t;
	json_t *s;
	size_t i;

	memset(&t, 0, sizeof(t));
	json_array_foreach(schedules, i, s) {
		enum schedule_outcome o;
		bool before, after;
		if (outcome_parse(rview_str(s, "outcome"), &o))
			o = OUTCOME_UNVERIFIED;
		verdict_tally_add(&t, json_array_size(rview_arr(s, "violations")), o);
		if (report_schedule_windows(s, &before, &after))
			verdict_tally_windows(&t, before, after);
	}
	return t;
}

/* A note of the window rule: recomputed over the union, never copied. */
static bool window_note(const json_t *note)
{
	struct verdict_tally none;
	const char *n = json_string_value(note);

	memset(&none, 0, sizeof(none));
	none.windows_known = 1;
	return n && (strcmp(n, verdict_window_gap(&none, VERDICT_WINDOW_BEFORE)) == 0 ||
		     strcmp(n, verdict_window_gap(&none, VERDICT_WINDOW_AFTER)) == 0);
}

static int add_schedule(struct merge *m, struct mroute *mr, json_t *s,
			const char *path)
{
	char key[3 * 1100];
	const char *scen = rview_str(s, "scenario");
	json_t *prev, *list;

	snprintf(key, sizeof(key), "%s\x1f%s\x1f%s", scen, rview_str(s, "kind"),
		 rview_str(s, "schedule"));
	prev = json_object_get(mr->seen, key);
	if (prev) {
		if (strcmp(rview_str(prev, "outcome"), rview_str(s, "outcome")) ||
		    !json_equal(json_object_get(prev, "violations"),
				json_object_get(s, "violations")))
			return fail(m, "route '%s' schedule '%s %s' differs between "
				    "shards ('%s' has outcome %s)",
				    rview_str(mr->obj, "name"), scen,
				    rview_str(s, "schedule"), path,
				    rview_str(s, "outcome"));
		return 0;
	}
	list = json_object_get(mr->by_scenario, scen);
	if (!list) {
		list = json_array();
		if (!list || json_object_set_new(mr->by_scenario, scen, list) ||
		    json_array_append_new(mr->order, json_string(scen)))
			return FC_NOMEM;
	}
	if (json_object_set(mr->seen, key, s) || json_array_append(list, s))
		return FC_NOMEM;
	return 0;
}

/* Entries of "invariants_not_observable" survive only when every shard
 * with this route reports them: the harness lists an invariant when no
 * schedule of the route could observe it. */
static void intersect_unobservable(struct mroute *mr, const json_t *cov)
{
	json_t *next = json_object(), *e;
	size_t i;
	char k[16];

	json_array_foreach(rview_arr(cov, "invariants_not_observable"), i, e) {
		snprintf(k, sizeof(k), "%lld", rview_int(e, "invariant", 0));
		if (!mr->unobservable || json_object_get(mr->unobservable, k))
			json_object_set(next, k, e);
	}
	json_decref(mr->unobservable);
	mr->unobservable = next;
}

static int add_route(struct merge *m, size_t in, const json_t *r)
{
	struct mroute *mr = route_get(m, r);
	const json_t *cov = json_object_get(r, "coverage");
	json_t *s, *n;
	size_t i;
	struct verdict_tally t;
	enum verdict own;

	if (!mr)
		return FC_NOMEM;
	if (strcmp(rview_str(mr->obj, "digest"), rview_str(r, "digest")) ||
	    strcmp(rview_str(mr->obj, "expected"), rview_str(r, "expected")))
		return fail(m, "route '%s' is defined differently in '%s' and "
			    "'%s'", rview_str(r, "name"), m->paths[in],
			    m->paths[0]);
	json_array_foreach(rview_arr(r, "schedules"), i, s) {
		int rc = add_schedule(m, mr, s, m->paths[in]);
		if (rc)
			return rc;
	}
	t = tally_of(rview_arr(r, "schedules"));
	own = verdict_tally_fold(&t);
	if (strcmp(rview_str(r, "verdict"), "unverified") == 0 &&
	    (own == VERDICT_CERTIFIED_AUTOMATIC ||
	     own == VERDICT_CERTIFIED_FAIL_CLOSED))
		mr->gap = true;
	set_add(mr->declared, rview_arr(cov, "declared"));
	set_add(mr->reached, rview_arr(cov, "reached"));
	set_add(mr->faulted, rview_arr(cov, "faulted"));
	/* a shard without schedules of this route observed nothing */
	if (json_array_size(rview_arr(r, "schedules")))
		intersect_unobservable(mr, cov);
	mr->syscalls += rview_int(cov, "syscall_occurrences_explored", 0);
	/* each shard's own counts, side by side (crash states) */
	if (json_is_array(json_object_get(cov, "exploration")))
		json_array_extend(mr->exploration, json_object_get(cov,
							   "exploration"));
	json_array_foreach(rview_arr(cov, "unverified"), i, n) {
		bool dup = false;
		json_t *x;
		size_t k;
		json_array_foreach(mr->notes, k, x)
			dup |= json_equal(x, n);
		if (!dup && !window_note(n) &&
		    json_array_size(mr->notes) < NOTES_MAX)
			json_array_append(mr->notes, n);
	}
	return 0;
}

/* --- the merged route ------------------------------------------------------------ */

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* A set object as a sorted array; with `minus`, without its members. */
static json_t *sorted(json_t *set, const json_t *minus)
{
	size_t n = json_object_size(set), k = 0;
	const char **names = calloc(n ? n : 1, sizeof(*names));
	json_t *arr = json_array(), *v;
	const char *key;

	if (!names || !arr) {
		free(names);
		json_decref(arr);
		return NULL;
	}
	json_object_foreach(set, key, v)
		if (!minus || !json_object_get(minus, key))
			names[k++] = key;
	if (k > 1)
		qsort(names, k, sizeof(*names), name_cmp);
	for (size_t i = 0; i < k; i++)
		json_array_append_new(arr, json_string(names[i]));
	free(names);
	return arr;
}

static json_t *coverage(const struct mroute *mr, const json_t *schedules,
		       const struct verdict_tally *t)
{
	json_t *by_outcome = json_object(), *by_kind = json_object(), *s, *unobs;
	json_t *stops;
	const char *k;
	json_t *v;
	size_t i;

	json_array_foreach(schedules, i, s) {
		const char *o = rview_str(s, "outcome");
		const char *kind = rview_str(s, "kind");
		json_object_set_new(by_outcome, o, json_integer(
			rview_int(by_outcome, o, 0) + 1));
		json_object_set_new(by_kind, kind, json_integer(
			rview_int(by_kind, kind, 0) + 1));
	}
	unobs = json_array();
	json_object_foreach(mr->unobservable, k, v)
		json_array_append(unobs, v);
	/* a report of a harness that recorded no windows says nothing */
	stops = !t->windows_known ? NULL :
		json_pack("{s:I, s:I}", "before_mutation",
			  (json_int_t)t->stopped[VERDICT_WINDOW_BEFORE],
			  "after_mutation",
			  (json_int_t)t->stopped[VERDICT_WINDOW_AFTER]);
	return json_pack("{s:I, s:I, s:I, s:o, s:o, s:o, s:o, s:I, s:o, s:o, "
			 "s:o, s:I, s:O, s:o*, s:O}",
			 "failpoints_declared",
			 (json_int_t)json_object_size(mr->declared),
			 "failpoints_reached",
			 (json_int_t)json_object_size(mr->reached),
			 "failpoints_faulted",
			 (json_int_t)json_object_size(mr->faulted),
			 "declared", sorted(mr->declared, NULL),
			 "reached", sorted(mr->reached, NULL),
			 "faulted", sorted(mr->faulted, NULL),
			 "never_faulted", sorted(mr->declared, mr->faulted),
			 "schedules", (json_int_t)json_array_size(schedules),
			 "by_outcome", by_outcome, "by_kind", by_kind,
			 "invariants_not_observable", unobs,
			 "syscall_occurrences_explored", (json_int_t)mr->syscalls,
			 "unverified", mr->notes, "retried_stops", stops,
			 "exploration", mr->exploration);
}

static int finish_route(struct mroute *mr)
{
	json_t *schedules = json_array(), *violations = json_array(), *name, *s;
	json_t *v;
	size_t i, k, j;
	struct verdict_tally t;
	enum verdict verdict;

	if (!schedules || !violations)
		goto nomem;
	json_array_foreach(mr->order, i, name) {
		json_t *list = json_object_get(mr->by_scenario,
					       json_string_value(name));
		json_array_foreach(list, k, s) {
			if (json_array_append(schedules, s))
				goto nomem;
			json_array_foreach(rview_arr(s, "violations"), j, v)
				if (json_array_append(violations, v))
					goto nomem;
		}
	}
	t = tally_of(schedules);
	verdict = verdict_tally_fold(&t);
	if (verdict != VERDICT_REJECTED && mr->gap)
		verdict = VERDICT_UNVERIFIED;
	/* the window rule's reasons lead the notes, as certify.c writes them */
	for (int w = VERDICT_WINDOW_BEFORE; verdict != VERDICT_REJECTED &&
	     w <= VERDICT_WINDOW_AFTER; w++) {
		const char *gap = verdict_window_gap(&t, w);
		if (gap && json_array_insert_new(mr->notes, 0, json_string(gap)))
			return FC_NOMEM;
	}
	if (json_object_set_new(mr->obj, "verdict",
				json_string(verdict_name(verdict))) ||
	    json_object_set_new(mr->obj, "expectation_met",
				json_boolean(verdict_meets(verdict,
				rview_str(mr->obj, "expected")))) ||
	    json_object_set_new(mr->obj, "coverage", coverage(mr, schedules, &t)) ||
	    json_object_set_new(mr->obj, "violations", violations) ||
	    json_object_set_new(mr->obj, "schedules", schedules))
		return FC_NOMEM;
	return 0;
nomem:
	json_decref(schedules);
	json_decref(violations);
	return FC_NOMEM;
}

/* --- the merged report ------------------------------------------------------------- */

/* Whether some input schedule was summarized (`"detail": "summary"`). */
static bool summarized(const struct merge *m)
{
	json_t *r, *s;
	size_t i, j;

	for (size_t k = 0; k < m->n; k++)
		json_array_foreach(json_object_get(m->in[k], "routes"), i, r)
			json_array_foreach(json_object_get(r, "schedules"), j, s)
				if (json_object_get(s, "detail"))
					return true;
	return false;
}

static json_t *build(struct merge *m)
{
	json_t *first = m->in[0], *out, *routes = json_array(), *from = json_array();
	json_t *env = json_deep_copy(json_object_get(first, "environment"));
	long long start = 0, end = 0;
	/* summarized shards give a summarized merge (report_summary.h);
	 * shards with every detail (certify --full-report) keep them all */
	bool cap = summarized(m);

	for (size_t i = 0; i < m->n; i++) {
		long long s = rview_int(m->in[i], "started_at", 0);
		long long e = s + rview_int(m->in[i], "duration_ms", 0);
		if (i == 0 || s < start)
			start = s;
		if (e > end)
			end = e;
		/* the merged run was contained as its weakest shard was */
		{
			const char *c = rview_str(json_object_get(m->in[i],
						  "environment"), "containment");

			if (gate_containment_rank(c) <
			    gate_containment_rank(rview_str(env, "containment")))
				json_object_set_new(env, "containment",
						    json_string(gate_containment_rank(c) < 0 ?
								"none" : c));
		}
		json_array_append_new(from, json_pack("{s:s, s:I, s:I, s:O*}",
			"path", m->paths[i], "started_at", (json_int_t)s,
			"duration_ms", (json_int_t)(e - s),
			"shard", json_object_get(m->in[i], "shard")));
	}
	for (size_t i = 0; i < m->nroutes; i++) {
		if (cap)
			report_cap_details(json_object_get(m->routes[i].obj,
							   "schedules"));
		json_array_append(routes, m->routes[i].obj);
	}
	out = json_pack("{s:s, s:O, s:O, s:o, s:o*, s:I, s:o, s:I, s:o}",
			"schema", RVIEW_SCHEMA,
			"tool", json_object_get(first, "tool"),
			"suite", json_object_get(first, "suite"),
			"seed", json_object_get(first, "seed") ?
			json_incref(json_object_get(first, "seed")) : json_null(),
			"environment", env,
			"started_at", (json_int_t)start,
			"routes", routes,
			"duration_ms", (json_int_t)(end - start),
			"merged_from", from);
	if (out && json_object_set_new(out, "summary",
				       report_summary(json_object_get(out,
								      "routes")))) {
		json_decref(out);
		return NULL;
	}
	return out;
}

static void merge_release(struct merge *m)
{
	for (size_t i = 0; i < m->nroutes; i++)
		mroute_release(&m->routes[i]);
	free(m->routes);
}

int merge_reports(json_t *const *in, const char *const *paths, size_t n,
		  const struct sign_key *key, json_t **out, char *err,
		  size_t errlen)
{
	struct merge m = {
		.paths = paths, .in = in, .n = n, .err = err, .errlen = errlen,
	};
	size_t total = 0;
	json_t *r;
	int rc;

	*out = NULL;
	if (n == 0)
		return fail(&m, "no reports to merge");
	rc = check_shards(&m);
	if (!rc)
		rc = check_signatures(&m, key);
	if (rc)
		return rc;
	for (size_t i = 0; i < m.n; i++)
		total += json_array_size(rview_arr(m.in[i], "routes"));
	m.routes = calloc(total ? total : 1, sizeof(*m.routes));
	if (!m.routes)
		return FC_NOMEM;
	for (size_t i = 0; i < m.n && !rc; i++) {
		size_t k;
		json_array_foreach(rview_arr(m.in[i], "routes"), k, r)
			if (!rc)
				rc = add_route(&m, i, r);
	}
	for (size_t i = 0; i < m.nroutes && !rc; i++)
		rc = finish_route(&m.routes[i]);
	if (!rc && !(*out = build(&m)))
		rc = FC_NOMEM;
	if (!rc && key)
		rc = sign_report(*out, key);
	else if (!rc && json_object_set_new(*out, "unsigned",
					    json_string(MERGE_UNSIGNED_NOTE)))
		rc = FC_NOMEM;
	if (rc) {
		json_decref(*out);
		*out = NULL;
	}
	merge_release(&m);
	return rc;
}
