/*
 * report_json.c -- the fencecert.report.v1 JSON (report_json.h).
 *
 * Invariants:
 *  1. Every value is built with jansson; strings from routes (failpoint
 *     names, row keys, stderr paths) are escaped by the library.
 *  2. A failed allocation anywhere makes the whole object NULL: a report
 *     is complete or absent, never silently short.
 *  3. The file is written to a temporary name and renamed, so a reader
 *     never sees half a report.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/cli.h"
#include "common/fsutil.h"
#include "harness/check/report_summary.h"
#include "harness/model/schedule.h"
#include "journal/identity.h"
#include "journal/journal_json.h"
#include "journal/states.h"
#include "harness/certify/report_json.h"

/* Build helper: json_object_set_new() steals even on failure. */
struct jb {
	int failed;
};

static void set(struct jb *b, json_t *obj, const char *key, json_t *v)
{
	if (!v || !obj || json_object_set_new(obj, key, v))
		b->failed = 1;
}

static void push(struct jb *b, json_t *arr, json_t *v)
{
	if (!v || !arr || json_array_append_new(arr, v))
		b->failed = 1;
}

static json_t *done(struct jb *b, json_t *obj)
{
	if (b->failed || !obj) {
		json_decref(obj);
		return NULL;
	}
	return obj;
}

static const char *task_name(enum task_state t)
{
	switch (t) {
	case TASK_SUCCESS: return "success";
	case TASK_FAILED: return "failed";
	case TASK_RETRIES_EXHAUSTED: return "retries-exhausted";
	default: return "not-run";
	}
}

static json_t *fault_string(const struct fault *f)
{
	char s[SCHEDULE_STR_MAX];

	if (schedule_format(f, 1, s, sizeof(s)))
		return json_string("?");
	return json_string(s);
}

/* --- one schedule ---------------------------------------------------------- */

/* The kept changes other than first inserts: RECORD_DELTAS_KEPT of them,
 * unless certify --full-deltas kept all (record.h). */
static json_t *deltas_json(const struct rec_deltas *ds)
{
	json_t *arr = json_array();
	struct jb b = { 0 };

	for (size_t d = 0; d < ds->nkept; d++)
		push(&b, arr, json_pack("{s:s, s:I, s:I}", "row_key",
					ds->kept[d].row_key, "before",
					(json_int_t)ds->kept[d].before, "after",
					(json_int_t)ds->kept[d].after));
	return done(&b, arr);
}

/* What a reader needs besides the list, whether or not it was cut: only
 * for an attempt that changed some row other than by a first insert, so
 * the common attempt stays as short as it was. */
static void deltas_counts(struct jb *b, json_t *o, const struct rec_deltas *ds)
{
	if (!record_deltas_listed(ds))
		return;
	set(b, o, "row_deltas_total",
	    json_integer((json_int_t)record_deltas_listed(ds)));
	set(b, o, "row_deltas_duplicated", json_integer((json_int_t)ds->duplicated));
	set(b, o, "row_deltas_gained", json_integer(ds->gained));
	set(b, o, "row_deltas_lost", json_integer((json_int_t)ds->lost));
	if (record_deltas_truncated(ds))
		set(b, o, "row_deltas_truncated", json_true());
	if (ds->keys_cut) /* keys kept only to RECORD_ROW_KEY_MAX bytes */
		set(b, o, "row_keys_cut", json_integer((json_int_t)ds->keys_cut));
}

/* The attempt's first RECORD_HITS_KEPT failpoints; when it reported more
 * (record.h), how many in all. */
static void failpoints_json(struct jb *b, json_t *o, const struct rec_attempt *a)
{
	json_t *hits = json_array();
	size_t n = a->nhits < RECORD_HITS_KEPT ? a->nhits : RECORD_HITS_KEPT;
	size_t total = record_hits_total(a);

	for (size_t h = 0; h < n; h++) {
		char ans[2] = { a->hits[h].answer, 0 };
		push(b, hits, json_pack("{s:s, s:I, s:s}", "name", a->hits[h].name,
					"at_ms", (json_int_t)a->hits[h].at_ms,
					"answer", ans));
	}
	set(b, o, "failpoints", hits);
	if (total > n) {
		set(b, o, "failpoints_total", json_integer((json_int_t)total));
		set(b, o, "failpoints_truncated", json_true());
	}
}

static json_t *attempt_json(const struct rec_schedule *r, size_t i)
{
	const struct rec_attempt *a = &r->attempts[i];
	json_t *o = json_object();
	struct jb b = { 0 };
	char end[64];

	record_attempt_end(a, end, sizeof(end));
	set(&b, o, "index", json_integer((json_int_t)i + 1));
	set(&b, o, "operation", json_integer(a->operation));
	set(&b, o, "try", json_integer(a->try_number));
	set(&b, o, "pid", json_integer(a->pid));
	set(&b, o, "start_ms", json_integer(a->start_ms));
	set(&b, o, "end_ms", json_integer(a->end_ms));
	set(&b, o, "end", json_string(end));
	set(&b, o, "exit", a->signal || a->spawn_failed ? json_null()
							: json_integer(a->exit_code));
	if (a->signal) {
		const char *sig = sigabbrev_np(a->signal);
		char name[32];
		snprintf(name, sizeof(name), "SIG%s", sig ? sig : "?");
		set(&b, o, "signal", json_string(name));
	} else {
		set(&b, o, "signal", json_null());
	}
	set(&b, o, "timed_out", json_boolean(a->timed_out));
	set(&b, o, "killed", json_boolean(a->killed));
	set(&b, o, "zombie", json_boolean(a->zombie));
	set(&b, o, "resumed", json_boolean(a->resumed));
	set(&b, o, "counted", json_boolean(a->counted));
	set(&b, o, "concurrent", json_integer(a->concurrent));
	set(&b, o, "contained", json_boolean(a->contained));
	set(&b, o, "descendants_killed", a->descendants_killed < 0
		? json_null() : json_integer(a->descendants_killed));
	if (a->seeded[0]) /* not run here: restored from a recorded state */
		set(&b, o, "seeded", json_sprintf("sha256:%s", a->seeded));
	failpoints_json(&b, o, a);
	{
		json_t *faults = json_array();
		for (size_t f = 0; f < r->napplied; f++)
			if (r->applied[f].attempt == (int)i)
				push(&b, faults, json_string(r->applied[f].what));
		set(&b, o, "faults", faults);
	}
	set(&b, o, "rows_added", json_integer((json_int_t)a->deltas.first_inserts));
	set(&b, o, "row_deltas", deltas_json(&a->deltas));
	deltas_counts(&b, o, &a->deltas);
	if (a->nsyscalls) {
		json_t *sys = json_array();
		for (size_t k = 0; k < a->nsyscalls; k++)
			push(&b, sys, json_pack("{s:s, s:s, s:I}", "syscall",
						a->syscalls[k].syscall, "path",
						a->syscalls[k].path, "count",
						(json_int_t)a->syscalls[k].count));
		set(&b, o, "syscalls", sys);
	}
	if (a->proxy_commits)
		set(&b, o, "proxy_commits", json_integer((json_int_t)a->proxy_commits));
	set(&b, o, "journal_failed", json_boolean(a->journal_failed));
	set(&b, o, "stderr", json_string(a->stderr_path ? a->stderr_path : ""));
	return done(&b, o);
}

static json_t *applied_json(const struct rec_schedule *r)
{
	json_t *arr = json_array();
	struct jb b = { 0 };

	for (size_t i = 0; i < r->napplied; i++) {
		const struct rec_applied *ap = &r->applied[i];
		json_t *o = json_object();
		set(&b, o, "at_ms", json_integer(ap->at_ms));
		set(&b, o, "fault", ap->fault >= 0 && (size_t)ap->fault < r->nfaults ?
			fault_string(&r->faults[ap->fault]) : json_null());
		set(&b, o, "attempt", ap->attempt >= 0 ?
			json_integer(ap->attempt + 1) : json_null());
		set(&b, o, "operation", json_integer(ap->operation));
		set(&b, o, "what", json_string(ap->what));
		push(&b, arr, o);
	}
	return done(&b, arr);
}

static json_t *faults_json(const struct rec_schedule *r)
{
	json_t *arr = json_array();
	struct jb b = { 0 };

	for (size_t i = 0; i < r->nfaults; i++)
		push(&b, arr, json_pack("{s:o, s:b}", "fault",
					fault_string(&r->faults[i]), "fired",
					r->fired[i]));
	return done(&b, arr);
}

static const struct rec_observation *final_obs(const struct rec_schedule *r)
{
	for (size_t k = r->nobs; k-- > 0;)
		if (r->obs[k].status == 0)
			return &r->obs[k];
	return NULL;
}

struct rowsum {
	long long expected, present, duplicated, missing;
};

/* op's rows in observation n of the record's store (n < 0: none, all
 * missing).  A store that cannot answer counts nothing present. */
static struct rowsum op_rows(const struct rec_schedule *r,
			     const struct rec_operation *op, int n)
{
	struct rowsum s = { (long long)op->nrows, 0, 0, 0 };
	struct obs_rowsum c;

	if (n >= 0 && obs_store_op_rows(r->rows, n, op->index, &c) == 0) {
		s.present = c.present;
		s.duplicated = c.duplicated;
	}
	s.missing = s.expected - s.present;
	return s;
}

static json_t *rowsum_json(struct rowsum s)
{
	return json_pack("{s:I, s:I, s:I, s:I}", "rows_expected",
			 (json_int_t)s.expected, "rows_present",
			 (json_int_t)s.present, "rows_duplicated",
			 (json_int_t)s.duplicated, "rows_missing",
			 (json_int_t)s.missing);
}

static json_t *history_json(const struct rec_entry *e)
{
	json_t *hist = json_array();
	struct jb b = { 0 };

	for (size_t h = 0; e && h < e->nhistory; h++)
		push(&b, hist, journal_transition_to_json(&e->history[h]));
	return done(&b, hist);
}

/* Every entry attributed to op: its id, when a listing first showed it,
 * its state; the full history of all but the first (which is the
 * operation's `journal` and `history`). */
static json_t *entries_json(const struct rec_operation *op)
{
	json_t *arr = json_array();
	struct jb b = { 0 };

	for (size_t k = 0; k < op->nentries; k++) {
		const struct rec_entry *e = &op->entries[k];
		json_t *o = json_object();
		set(&b, o, "operation_id", json_string(e->operation_id));
		set(&b, o, "seen_after_attempt", e->seen_after >= 0 ?
		    json_integer(e->seen_after + 1) : json_null());
		set(&b, o, "state", e->status ? json_null() :
		    json_string(state_name(e->entry.state)));
		if (k > 0)
			set(&b, o, "history", history_json(e));
		if (e->history_total) /* past collect.h's bounds: not read */
			set(&b, o, "history_total",
			    json_integer((json_int_t)e->history_total));
		push(&b, arr, o);
	}
	return done(&b, arr);
}

static json_t *operation_json(const struct rec_operation *op,
			      struct rowsum s)
{
	json_t *o = json_object(), *ev = json_array();
	const struct rec_entry *first = op->nentries ? &op->entries[0] : NULL;
	int status = op->journal_status ? op->journal_status :
		     first ? first->status : 0;
	struct jb b = { 0 };

	set(&b, o, "index", json_integer(op->index));
	set(&b, o, "operation_id", json_string(op->operation_id));
	set(&b, o, "canonical_operation_id", json_string(op->canonical_id));
	set(&b, o, "intent_digest", json_string(op->intent_digest));
	set(&b, o, "task", json_string(task_name(op->task)));
	set(&b, o, "source_changed_after_try",
	    json_integer(op->source_changed_after));
	set(&b, o, "target", rowsum_json(s));
	if (status)
		set(&b, o, "journal", json_pack("{s:s}", "error",
						error_name(status)));
	else if (first)
		set(&b, o, "journal", journal_entry_to_json(&first->entry));
	else
		set(&b, o, "journal", json_null());
	set(&b, o, "history", history_json(first));
	set(&b, o, "journal_entries", entries_json(op));
	for (size_t e = 0; e < op->nevidence; e++) {
		const struct rec_evidence *x = &op->evidence[e];
		push(&b, ev, json_pack("{s:i, s:s, s:b, s:s, s:s, s:I}",
				       "try", x->try_number, "path", x->path,
				       "valid", x->valid, "state", x->state,
				       "operation_id", x->operation_id,
				       "rows_written", (json_int_t)x->rows_written));
	}
	set(&b, o, "evidence", ev);
	return done(&b, o);
}

/* Failpoint names as a sorted, unique JSON array. */
static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static json_t *name_set(const char **names, size_t n)
{
	json_t *arr = json_array();
	struct jb b = { 0 };

	if (n > 1)
		qsort(names, n, sizeof(*names), name_cmp);
	for (size_t i = 0; i < n; i++)
		if (i == 0 || strcmp(names[i], names[i - 1]) != 0)
			push(&b, arr, json_string(names[i]));
	return done(&b, arr);
}

static json_t *reached_json(const struct rec_schedule *r)
{
	size_t n = 0, k = 0;
	const char **v;
	json_t *out;

	/* of the failpoints the report lists (failpoints_json()) */
	for (size_t i = 0; i < r->nattempts; i++)
		n += r->attempts[i].nhits < RECORD_HITS_KEPT ?
		     r->attempts[i].nhits : RECORD_HITS_KEPT;
	v = malloc((n ? n : 1) * sizeof(*v));
	if (!v)
		return NULL;
	for (size_t i = 0; i < r->nattempts; i++)
		for (size_t h = 0; h < r->attempts[i].nhits &&
				   h < RECORD_HITS_KEPT; h++)
			v[k++] = r->attempts[i].hits[h].name;
	out = name_set(v, k);
	free(v);
	return out;
}

static json_t *faulted_json(const struct rec_schedule *r)
{
	const char **v = malloc((r->nfaults ? r->nfaults : 1) * sizeof(*v));
	size_t k = 0;
	json_t *out;

	if (!v)
		return NULL;
	for (size_t i = 0; i < r->nfaults; i++) {
		const struct fault *f = &r->faults[i];
		if (r->fired[i] && fault_is_point_action(f->action) &&
		    f->failpoint[0])
			v[k++] = f->failpoint;
	}
	out = name_set(v, k);
	free(v);
	return out;
}

static json_t *violations_json(const struct rec_schedule *r,
			       const struct check_result *c, const char *repro)
{
	json_t *arr = json_array();
	struct jb b = { 0 };

	for (size_t i = 0; i < c->nviolations; i++) {
		const struct violation *v = &c->violations[i];
		push(&b, arr, json_pack("{s:i, s:s, s:i, s:s, s:s, s:s, s:s, s:s}",
					"invariant", v->invariant,
					"name", invariant_name(v->invariant),
					"operation", v->operation,
					"operation_id", v->operation_id,
					"scenario", r->scenario,
					"schedule", r->schedule,
					"detail", v->detail,
					"reproduce", repro));
	}
	return done(&b, arr);
}

/* The stopped tries whose operation was retried, and which window each
 * challenged (check.h). */
static json_t *stops_json(const struct rec_schedule *r,
			  const struct check_result *c)
{
	json_t *arr = json_array();
	struct jb b = { 0 };

	for (size_t i = 0; i < c->nstops; i++) {
		const struct retried_stop *st = &c->stops[i];
		const struct rec_attempt *a = &r->attempts[st->attempt];
		push(&b, arr, json_pack("{s:i, s:i, s:i, s:s, s:s}",
					"attempt", st->attempt + 1,
					"operation", a->operation,
					"try", a->try_number,
					"window", stop_window_name(st->window),
					"fault", r->applied[st->applied].what));
	}
	return done(&b, arr);
}

json_t *report_json_schedule(const struct rec_schedule *r,
			     const struct check_result *c,
			     const struct report_job_info *info)
{
	json_t *o = json_object(), *attempts = json_array(), *ops = json_array();
	json_t *unobs = json_array();
	const struct rec_observation *ob = final_obs(r);
	int obn = ob ? (int)(ob - r->obs) : -1;
	struct rowsum total = { 0, 0, 0, 0 };
	struct jb b = { 0 };

	set(&b, o, "scenario", json_string(r->scenario));
	set(&b, o, "schedule", json_string(r->schedule));
	set(&b, o, "kind", json_string(info->kind ? info->kind : "fixed"));
	set(&b, o, "strict", json_boolean(info->strict));
	set(&b, o, "reproduce", json_string(info->reproduce));
	set(&b, o, "duration_ms", json_integer(r->duration_ms));
	set(&b, o, "outcome", json_string(outcome_name(c->outcome)));
	set(&b, o, "outcome_detail", json_string(c->why));
	set(&b, o, "error", r->status ? json_string(r->error) : json_null());
	set(&b, o, "violations", violations_json(r, c, info->reproduce));
	for (int inv = 1; inv <= INV_COUNT; inv++)
		if (c->unobservable & INV_BIT(inv))
			push(&b, unobs, json_integer(inv));
	set(&b, o, "unobservable", unobs);
	set(&b, o, "retried_stops", stops_json(r, c));
	set(&b, o, "faults", faults_json(r));
	set(&b, o, "applied", applied_json(r));
	set(&b, o, "reached", reached_json(r));
	set(&b, o, "faulted", faulted_json(r));
	for (size_t i = 0; i < r->nattempts; i++)
		push(&b, attempts, attempt_json(r, i));
	set(&b, o, "attempts", attempts);
	for (size_t i = 0; i < r->nops; i++) {
		struct rowsum s = op_rows(r, &r->ops[i], obn);
		total.expected += s.expected;
		total.present += s.present;
		total.duplicated += s.duplicated;
		total.missing += s.missing;
		push(&b, ops, operation_json(&r->ops[i], s));
	}
	set(&b, o, "operations", ops);
	{
		json_t *t = rowsum_json(total);
		set(&b, t, "observations", json_integer((json_int_t)r->nobs));
		set(&b, t, "fences_observed",
		    json_boolean(ob && ob->fences_observed));
		set(&b, t, "rows_total", json_integer(ob ? (json_int_t)
		    obs_store_rows_total(r->rows, obn) : 0));
		set(&b, o, "target", t);
	}
	return done(&b, o);
}

/* --- the whole report ------------------------------------------------------ */

void report_json_route_digest(const struct route_spec *rs, char out[80])
{
	json_t *o = json_object(), *cmd = json_array(), *env = json_array();
	json_t *obs = json_array();
	char *text;

	for (size_t i = 0; rs->command && rs->command[i]; i++)
		json_array_append_new(cmd, json_string(rs->command[i]));
	for (size_t i = 0; rs->env && rs->env[i]; i++)
		json_array_append_new(env, json_string(rs->env[i]));
	for (size_t i = 0; rs->observe_command && rs->observe_command[i]; i++)
		json_array_append_new(obs, json_string(rs->observe_command[i]));
	json_object_set_new(o, "command", cmd);
	json_object_set_new(o, "env", env);
	json_object_set_new(o, "journal", json_string(rs->journal));
	json_object_set_new(o, "target", json_string(rs->target));
	json_object_set_new(o, "observe_sql", rs->observe_sql ?
			    json_string(rs->observe_sql) : json_null());
	json_object_set_new(o, "observe_command", obs);
	text = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(o);
	if (!text) {
		snprintf(out, 80, "unknown");
		return;
	}
	identity_buffer_digest(text, strlen(text), out);
	free(text);
}

json_t *report_json_new(const struct suite *s, const uint64_t *seed, int jobs,
			const char *containment)
{
	json_t *o = json_object();
	struct utsname u;
	struct jb b = { 0 };
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);

	set(&b, o, "schema", json_string(REPORT_SCHEMA));
	set(&b, o, "tool", json_pack("{s:s, s:s, s:s}", "name", "fencecert",
				     "version", fencecert_version, "git_rev",
				     fencecert_git_rev));
	set(&b, o, "suite", json_pack("{s:s, s:s, s:s, s:i}", "name", s->name,
				      "path", s->path ? s->path : "",
				      "digest", s->digest, "version", s->version));
	set(&b, o, "seed", seed ? json_integer((json_int_t)*seed) : json_null());
	if (uname(&u) == 0)
		set(&b, o, "environment",
		    json_pack("{s:s, s:s, s:s, s:i, s:i, s:s}", "system",
			      u.sysname, "release", u.release, "machine",
			      u.machine, "cpus", (int)cpus, "jobs", jobs,
			      "containment", containment));
	set(&b, o, "started_at", json_integer(clock_wall_ms()));
	set(&b, o, "routes", json_array());
	return done(&b, o);
}

int report_json_add_route(json_t *report, const struct route_spec *rs,
			  enum verdict v, json_t *coverage, json_t *violations,
			  json_t *schedules)
{
	json_t *o = json_object(), *cmd = json_array();
	struct jb b = { 0 };
	char digest[80];

	report_json_route_digest(rs, digest);
	for (size_t i = 0; rs->command && rs->command[i]; i++)
		push(&b, cmd, json_string(rs->command[i]));
	set(&b, o, "name", json_string(rs->name));
	set(&b, o, "command", cmd);
	set(&b, o, "digest", json_string(digest));
	set(&b, o, "verdict", json_string(verdict_name(v)));
	set(&b, o, "expected", json_string(expectation_name(rs->expect)));
	set(&b, o, "expectation_met",
	    json_boolean(verdict_meets(v, expectation_name(rs->expect))));
	set(&b, o, "coverage", coverage);
	set(&b, o, "violations", violations);
	set(&b, o, "schedules", schedules);
	o = done(&b, o);
	if (!o || json_array_append_new(json_object_get(report, "routes"), o))
		return FC_NOMEM;
	return 0;
}

int report_json_finish(json_t *report, long long duration_ms)
{
	if (json_object_set_new(report, "duration_ms", json_integer(duration_ms)) ||
	    json_object_set_new(report, "summary",
				report_summary(json_object_get(report, "routes"))))
		return FC_NOMEM;
	return 0;
}
