/*
 * orchestrator_syscall.c -- the syscalls family (orchestrator_family.h):
 * syscall faults in a schedule.  Each try with one runs under a seccomp
 * plan (inject_seccomp.h) built before it is spawned; what the plan's
 * rules did, and what a discovery try counted, goes into the record once
 * the try's process ended.
 *
 * Invariants:
 *  1. A try gets a plan only when the schedule has a syscall fault for it,
 *     when it is the discovery try (op 1, try 1) of a syscall
 *     exploration, or when the power-loss model is on (invariant 5);
 *     every other try runs without a filter.
 *  2. Globs hold "{dir}", never the schedule's directory: rules are
 *     expanded here with the directory glob-escaped, and discovery counts
 *     calls per (syscall, scope glob template), so schedule strings replay
 *     in any directory and meet temp files with random names.
 *  3. A plan outlives its process (sv_spawn.seccomp): it is freed once the
 *     process is gone, or with the family.
 *  4. A rule that failed a call or killed the try fired its fault, and is
 *     recorded as applied in the words of the supervisor's log.
 *  6. A recorded syscall discovery (orch_params.record with sys_discover)
 *     snapshots the schedule's files at each call of an explored syscall
 *     on an explored glob, while the caller is held: the state a
 *     kill_before there leaves, and for a sync call, which changes no
 *     content, a kill_after's too.  Each is labelled with the rule string
 *     the exploration makes for that occurrence (wave_syscalls), counted
 *     the way the rule counts (in-scope calls matching its glob).  With
 *     the power-loss model on, the power state at that call is kept too:
 *     the state a power_loss there leaves.
 *  5. With the power-loss model on (orch_sched.durable), every try runs
 *     under a plan that intercepts fsync, fdatasync, syncfs and sync, and
 *     each one is told to the model while its caller is held, decided but
 *     before it runs (sync_hook): the content it syncs is what the model
 *     keeps, and a sync a rule keeps from running (kill_before,
 *     power_loss, errno:) syncs nothing.
 *  7. A power_loss rule that fired tells the loop (orch_sched.power_lost),
 *     which brings the rest of the machine down once the try's end is
 *     seen (orchestrator.c, power_lost_at_call).
 */
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/put.h"
#include "harness/model/schedule.h"
#include "harness/run/orchestrator_family.h"

/* The plan of one attempt (NULL: it runs without a filter). */
struct try_plan {
	struct inject_seccomp_plan *plan;
	int *rule_fault;     /* plan rule i -> index into faults (-1: count) */
};

/* A recorded syscall discovery (invariant 6): the in-scope calls of one
 * (syscall, glob) counted so far, and of one path (for the words). */
struct sys_count {
	const char *syscall;  /* the scenario's */
	const char *glob;     /* its template, "{dir}/..." */
	char *expanded;
	unsigned long n;
};
struct path_count {
	char *path;
	char *syscall;
	unsigned long n;
};

/* The family's state: the plans, indexed by attempt. */
struct syscalls {
	struct try_plan *tries;
	size_t n;
	struct orch_sched *s;        /* for the hook */
	struct sys_count *counts;    /* recording: per (syscall, glob) */
	size_t ncounts;
	struct path_count *paths;    /* recording: per (syscall, path) */
	size_t npaths;
};

/* tmpl with "{dir}" standing for the escaped schedule directory. */
static int expand_glob(const struct orch_sched *s, const char *tmpl,
		       char **out, char *err, size_t errlen)
{
	char dir[PATH_MAX * 2];

	if (inject_seccomp_glob_escape(s->p->dir, dir, sizeof(dir)) < 0) {
		snprintf(err, errlen, "schedule directory too long for a glob");
		return FC_USAGE;
	}
	return scenario_expand(tmpl, &(struct template_vars){ .dir = dir }, out,
			       err, errlen);
}

static int add_rule(const struct orch_sched *s, struct try_plan *t,
		    const char *tmpl, int fault, char *err, size_t errlen)
{
	char *rule = NULL;
	int rc = expand_glob(s, tmpl, &rule, err, errlen);
	size_t n = inject_seccomp_plan_rules(t->plan);
	int *map;

	if (rc)
		return rc;
	rc = inject_seccomp_plan_add_rule(t->plan, rule);
	if (!rc && strchr(rule, '@')) /* its glob is in scope, even under /dev */
		rc = inject_seccomp_plan_watch(t->plan, strchr(rule, '@') + 1);
	if (rc)
		snprintf(err, errlen, "syscall rule '%s': %s", rule,
			 inject_seccomp_plan_errmsg(t->plan));
	free(rule);
	if (rc)
		return rc;
	map = realloc(t->rule_fault, (n + 1) * sizeof(*map));
	if (!map)
		return FC_NOMEM;
	map[n] = fault;
	t->rule_fault = map;
	return 0;
}

static int add_watch(const struct orch_sched *s, struct try_plan *t,
		     const char *tmpl, char *err, size_t errlen)
{
	char *glob = NULL;
	int rc = expand_glob(s, tmpl, &glob, err, errlen);

	if (!rc && (rc = inject_seccomp_plan_watch(t->plan, glob)))
		snprintf(err, errlen, "%s", inject_seccomp_plan_errmsg(t->plan));
	free(glob);
	return rc;
}

/* The discovery plan: count every listed syscall on the listed paths. */
static int discovery_plan(const struct orch_sched *s, struct try_plan *t,
			  char *err, size_t errlen)
{
	const struct explore_spec *e = s->p->sys_discover;
	int rc = 0;

	for (char **sys = e->syscalls; sys && *sys && !rc; sys++)
		rc = inject_seccomp_plan_intercept(t->plan, *sys);
	for (char **g = e->sys_paths; g && *g && !rc; g++)
		rc = add_watch(s, t, *g, err, errlen);
	if (rc && !*err)
		snprintf(err, errlen, "%s", inject_seccomp_plan_errmsg(t->plan));
	return rc;
}

/* The syncs the power-loss model must see (invariant 5). */
static const char *const sync_calls[] = { "fsync", "fdatasync", "syncfs",
					  "sync", NULL };

static int power_plan(struct try_plan *t, char *err, size_t errlen)
{
	int rc = 0;

	for (const char *const *c = sync_calls; *c && !rc; c++)
		rc = inject_seccomp_plan_intercept(t->plan, *c);
	if (rc)
		snprintf(err, errlen, "%s", inject_seccomp_plan_errmsg(t->plan));
	return rc;
}

static void path_glob(const struct orch_sched *s, const char *path,
		      char *out, size_t outlen);

/* A call that changes no file's content: a kill right after it leaves
 * what a kill right before it leaves (sync_file_range too, which the
 * power-loss model does not count as a sync). */
static bool is_sync(const char *sys)
{
	return strcmp(sys, "fsync") == 0 || strcmp(sys, "fdatasync") == 0 ||
	       strcmp(sys, "syncfs") == 0 || strcmp(sys, "sync") == 0 ||
	       strcmp(sys, "sync_file_range") == 0;
}

/* The nth call of sys on this path (for the words of the note). */
static unsigned long count_path(struct syscalls *sc, const char *sys,
				const char *path)
{
	struct path_count *p;

	for (size_t i = 0; i < sc->npaths; i++)
		if (strcmp(sc->paths[i].path, path) == 0 &&
		    strcmp(sc->paths[i].syscall, sys) == 0)
			return ++sc->paths[i].n;
	p = RECORD_PUSH(sc->paths, sc->npaths);
	if (!p)
		return 0;
	p->path = strdup(path);
	p->syscall = strdup(sys);
	p->n = 1;
	return 1;
}

/* One recorded state for the rule "SYS#N:ACTION@GLOB" (invariant 6). */
static void push_state(struct orch_sched *s, const struct sys_count *c,
		       const char *action, const char *digest, const char *what)
{
	struct rec_schedule *rec = s->rec;
	struct rec_attempt *a = &rec->attempts[rec->nattempts - 1];
	struct rec_snap *sn = RECORD_PUSH(rec->snaps, rec->nsnaps);
	char why[256];

	if (!sn) {
		orch__out_of_memory(s);
		return;
	}
	sn->operation = a->operation;
	sn->try_number = a->try_number;
	sn->hit = (int)a->nhits; /* the failpoints reached before the call */
	sn->wall_ms = clock_wall_ms();
	sn->start_wall_ms = a->start_wall_ms;
	put(sn->kill, sizeof(sn->kill), "%s", digest);
	snprintf(sn->what, sizeof(sn->what), "%s %s", action, what);
	if (schedule_rule_make(sn->rule, sizeof(sn->rule), c->syscall, c->n,
			       action, c->glob, why, sizeof(why)))
		rec->nsnaps--; /* no rule names it: nothing will ask */
}

/* A call of the recorded discovery, its caller held (invariant 6). */
static void record_call(struct syscalls *sc, const struct inject_seccomp_event *ev)
{
	struct orch_sched *s = sc->s;
	char digest[SNAP_DIGEST_HEX + 1] = "", err[400], what[200];
	char power[SNAP_DIGEST_HEX + 1] = "";
	char glob[PATH_MAX * 2];
	unsigned long nth = 0;

	for (size_t i = 0; i < sc->ncounts; i++) {
		struct sys_count *c = &sc->counts[i];
		if (strcmp(c->syscall, ev->syscall) != 0 ||
		    fnmatch(c->expanded, ev->path, 0) != 0)
			continue;
		c->n++;
		if (!digest[0]) {
			int rc = snap_take(s->p->snaps, s->p->dir, digest, err,
					   sizeof(err));
			/* the power state as the call is made: what a
			 * power_loss there leaves */
			if (!rc && s->durable)
				rc = snap_take_power(s->durable, power, err,
						     sizeof(err));
			if (rc == FC_NOSPACE) {
				orch__state_refused(s, err);
				return;
			}
			if (rc) {
				orch__trouble(s, FC_IO, "recording the state at %s "
					      "of '%s': %s", ev->syscall,
					      ev->path, err);
				return;
			}
			nth = count_path(sc, ev->syscall, ev->path);
			path_glob(s, ev->path, glob, sizeof(glob));
			snprintf(what, sizeof(what), "at %s on %.50s (#%lu there)",
				 ev->syscall, glob, nth);
		}
		push_state(s, c, "kill_before", digest, what);
		if (is_sync(ev->syscall))
			push_state(s, c, "kill_after", digest, what);
		if (power[0])
			push_state(s, c, "power_loss", power, what);
	}
}

/* A notification, its caller held: a sync makes content durable; a
 * recorded discovery snapshots. */
static void sync_hook(void *arg, const struct inject_seccomp_event *ev)
{
	struct syscalls *sc = arg;
	struct orch_sched *s = sc->s;
	char err[400];
	int rc = 0;

	if (sc->ncounts && ev->path[0])
		record_call(sc, ev);
	if (!s->durable)
		return;
	/* a call that will not run syncs nothing (inject_seccomp_hook) */
	if (!inject_action_runs_call(ev->action))
		return;
	if (strcmp(ev->syscall, "fsync") == 0 ||
	    strcmp(ev->syscall, "fdatasync") == 0)
		rc = ev->path[0] ? snap_durable_synced(s->durable, ev->path, err,
							sizeof(err)) : 0;
	else if (strcmp(ev->syscall, "sync") == 0 ||
		 (strcmp(ev->syscall, "syncfs") == 0 && /* of our file system */
		  strncmp(ev->path, s->p->dir, strlen(s->p->dir)) == 0))
		rc = snap_durable_synced_all(s->durable, err, sizeof(err));
	if (rc)
		orch__trouble(s, rc, "power-loss model, at %s of '%s': %s",
			      ev->syscall, ev->path, err);
}

static bool is_discovery(const struct orch_sched *s, int op, int k)
{
	return s->p->sys_discover && op == 1 && k == 1;
}

/* Is f a syscall fault of try k of op? */
static bool for_try(const struct fault *f, int op, int k)
{
	return f->action == FAULT_SYSCALL && f->attempt == k &&
	       orch__fault_for_op(f, op);
}

static void plan_release(struct try_plan *t)
{
	inject_seccomp_plan_free(t->plan);
	t->plan = NULL;
	free(t->rule_fault);
	t->rule_fault = NULL;
}

/* Make t's plan for try k of op, when it needs one (invariant 1). */
static int plan_try(const struct orch_sched *s, struct try_plan *t, int op,
		    int k, char *err, size_t errlen)
{
	bool discover = is_discovery(s, op, k);
	bool any = discover || s->durable;
	int rc = 0;

	*err = '\0';
	for (size_t i = 0; i < s->p->nfaults; i++)
		any |= for_try(&s->p->faults[i], op, k);
	if (!any)
		return 0;
	if (inject_seccomp_plan_new(&t->plan) < 0)
		return FC_NOMEM;
	for (size_t i = 0; i < s->p->nfaults && !rc; i++) {
		const struct fault *f = &s->p->faults[i];
		if (for_try(f, op, k))
			rc = add_rule(s, t, f->rule, (int)i, err, errlen);
	}
	if (!rc && s->durable)
		rc = power_plan(t, err, errlen);
	if (!rc && discover)
		rc = discovery_plan(s, t, err, errlen);
	else if (!rc) /* the schedule's files, even when its dir is in /dev/shm */
		rc = add_watch(s, t, "{dir}/*", err, errlen);
	if (rc)
		plan_release(t);
	return rc;
}

/* The counters of a recorded discovery: one per explored (syscall,
 * glob). */
static int start_counts(struct syscalls *sc, struct orch_sched *s, char *err,
			size_t errlen)
{
	const struct explore_spec *e = s->p->sys_discover;

	for (char **sys = e->syscalls; sys && *sys; sys++)
		for (char **g = e->sys_paths; g && *g; g++) {
			struct sys_count *c = RECORD_PUSH(sc->counts, sc->ncounts);
			int rc;
			if (!c)
				return FC_NOMEM;
			c->syscall = *sys;
			c->glob = *g;
			if ((rc = expand_glob(s, *g, &c->expanded, err, errlen)))
				return rc;
		}
	return 0;
}

static int try_starts(void *st, struct orch_sched *s, int idx,
		      struct sv_spawn *req, char *err, size_t errlen)
{
	struct syscalls *sc = st;
	const struct rec_attempt *a = &s->rec->attempts[idx];
	struct try_plan *t;
	int rc;

	if ((size_t)idx >= sc->n) {
		t = realloc(sc->tries, ((size_t)idx + 1) * sizeof(*t));
		if (!t)
			return FC_NOMEM;
		memset(t + sc->n, 0, ((size_t)idx + 1 - sc->n) * sizeof(*t));
		sc->tries = t;
		sc->n = (size_t)idx + 1;
	}
	t = &sc->tries[idx];
	rc = plan_try(s, t, a->operation, a->try_number, err, errlen);
	if (!rc)
		req->seccomp = t->plan;
	sc->s = s;
	if (!rc && is_discovery(s, a->operation, a->try_number) &&
	    s->p->record && s->p->snaps)
		rc = start_counts(sc, s, err, errlen);
	if (!rc && t->plan && (s->durable || sc->ncounts)) {
		req->seccomp_hook = sync_hook;
		req->seccomp_hook_arg = sc;
	}
	return rc;
}

/* A path made relative to the schedule's directory, as a glob:
 * "{dir}/a\*b" (or the escaped absolute path outside it). */
static void path_glob(const struct orch_sched *s, const char *path,
		      char *out, size_t outlen)
{
	size_t dl = strlen(s->p->dir);

	if (strncmp(path, s->p->dir, dl) == 0 && path[dl] == '/' && outlen > 5) {
		memcpy(out, "{dir}", 5);
		if (inject_seccomp_glob_escape(path + dl, out + 5, outlen - 5) == 0)
			return;
	} else if (inject_seccomp_glob_escape(path, out, outlen) == 0) {
		return;
	}
	snprintf(out, outlen, "%s", "?");
}

/* The calls of `sys` the session saw on paths matching glob. */
static unsigned long count_matching(const struct inject_seccomp_session *ss,
				    const char *sys, const char *glob)
{
	unsigned long n = 0;

	for (size_t i = 0; i < inject_seccomp_stats_len(ss); i++) {
		const char *sy, *path;
		unsigned long count;

		if (inject_seccomp_stats_get(ss, i, &sy, &path, &count) == 0 &&
		    strcmp(sy, sys) == 0 && fnmatch(glob, path, 0) == 0)
			n += count;
	}
	return n;
}

/*
 * Copy a discovery session's statistics into attempt idx; 0 or FC_NOMEM.
 * Per (syscall, scope glob), not per path: temp files carry random names
 * (".tmp-6LAcUN"), so a rule must name the glob the occurrence was counted
 * under for a replay to meet the same call.
 */
static int discovery_stats(struct orch_sched *s, int idx,
			   const struct inject_seccomp_session *ss)
{
	const struct explore_spec *e = s->p->sys_discover;
	struct rec_attempt *a = &s->rec->attempts[idx];
	char err[200];

	for (char **g = e->sys_paths; ss && g && *g; g++) {
		char *glob = NULL;
		int rc = expand_glob(s, *g, &glob, err, sizeof(err));

		if (rc) {
			free(glob);
			return rc == FC_NOMEM ? rc : 0;
		}
		for (char **sys = e->syscalls; sys && *sys; sys++) {
			unsigned long n = count_matching(ss, *sys, glob);
			struct rec_syscall *rs;

			if (!n)
				continue;
			rs = RECORD_PUSH(a->syscalls, a->nsyscalls);
			if (!rs || !(rs->path = strdup(*g))) {
				free(glob);
				return FC_NOMEM;
			}
			snprintf(rs->syscall, sizeof(rs->syscall), "%s", *sys);
			rs->count = n;
		}
		free(glob);
	}
	return 0;
}

static bool has_prefix(const char *str, const char *prefix)
{
	return str && strncmp(str, prefix, strlen(prefix)) == 0;
}

/*
 * A failed call on a socket is one on the journal's connection when the
 * journal is a server (PostgreSQL, etcd) and the target is not (SQLite, a
 * file): the journal is then the only server the route talks to.  With
 * both on servers the fault record (it names "socket:[N]", not the peer)
 * cannot tell the two connections apart, and nothing is claimed.
 */
static bool journal_socket(const struct orch_sched *s, const char *path)
{
	const char *target = s->p->route->target;

	return has_prefix(path, "socket:[") &&
	       (has_prefix(s->journal_url, "postgresql://") ||
		has_prefix(s->journal_url, "postgres://") ||
		has_prefix(s->journal_url, "etcd://")) &&
	       (has_prefix(target, "sqlite:") || has_prefix(target, "file:"));
}

/* Does path name one of the journal's files (sqlite: the database and its
 * -journal / -wal), or its connection (journal_socket)? */
static bool journal_file(const struct orch_sched *s, const char *path)
{
	const char *db;
	size_t n;

	if (journal_socket(s, path))
		return true;
	if (!has_prefix(s->journal_url, "sqlite:"))
		return false;
	db = s->journal_url + 7;
	n = strlen(db);
	return strncmp(path, db, n) == 0 &&
	       (path[n] == '\0' || strcmp(path + n, "-journal") == 0 ||
		strcmp(path + n, "-wal") == 0);
}

/* Record one rule's act: its fault fired (invariant 4). */
static void note_sysfault(struct orch_sched *s, int idx, int fi,
			  const struct sv_sysfault *sf)
{
	int op = s->rec->attempts[idx].operation;
	char glob[PATH_MAX * 2], how[40];

	s->rec->fired[fi] = true;
	if (sf->outcome == INJECT_OUT_FAILED) {
		const char *e = strerrorname_np(sf->error);
		if (e)
			snprintf(how, sizeof(how), "errno:%s", e);
		else
			snprintf(how, sizeof(how), "errno:%d", sf->error);
		s->rec->attempts[idx].journal_failed |=
			journal_file(s, sf->path);
	} else if (fault_rule_loses_power(s->p->faults[fi].rule)) {
		snprintf(how, sizeof(how), "power_loss");
		s->power_lost = fi; /* the loop restores the synced files */
	} else {
		snprintf(how, sizeof(how), "%s",
			 sf->outcome == INJECT_OUT_KILLED_AFTER ?
			 "kill_after" : "kill_before");
	}
	path_glob(s, sf->path, glob, sizeof(glob));
	orch__note_applied(s, fi, idx, op, "%s at %s on %.50s (#%lu there)",
			   how, sf->syscall, glob, sf->occurrence);
}

/* What attempt idx's plan did: each rule that acted fired its fault. */
static void exited(void *st, struct orch_sched *s, int idx,
		   const sv_proc *proc)
{
	struct syscalls *sc = st;
	const struct try_plan *t = (size_t)idx < sc->n ? &sc->tries[idx] : NULL;
	const struct rec_attempt *a = &s->rec->attempts[idx];
	int op = a->operation, k = a->try_number;
	const struct sv_sysfault *sf;
	size_t n, total;

	if (!t || !t->plan)
		return;
	sf = sv_proc_sysfaults(proc, &n, &total);
	if (*sv_proc_seccomp_error(proc))
		orch__trouble(s, FC_IO, "syscall faults in op %d try %d: %s", op,
			      k, sv_proc_seccomp_error(proc));
	for (size_t i = 0; i < n; i++)
		if (t->rule_fault[sf[i].rule] >= 0)
			note_sysfault(s, idx, t->rule_fault[sf[i].rule], &sf[i]);
	if (total > n && t->rule_fault[sf[n - 1].rule] >= 0)
		orch__note_applied(s, t->rule_fault[sf[n - 1].rule], idx, op,
				   "and %zu more syscall faults", total - n);
	if (is_discovery(s, op, k) &&
	    discovery_stats(s, idx, sv_proc_seccomp(proc)))
		orch__out_of_memory(s);
}

/* Its process is gone: the plan may go too (invariant 3). */
static void gone(void *st, struct orch_sched *s, int idx, bool zombie)
{
	struct syscalls *sc = st;

	if ((size_t)idx < sc->n)
		plan_release(&sc->tries[idx]);
}

static int init(struct orch_sched *s, void **state, char *err, size_t errlen)
{
	*state = calloc(1, sizeof(struct syscalls));
	return *state ? 0 : FC_NOMEM;
}

static void release(void *st, struct orch_sched *s)
{
	struct syscalls *sc = st;

	if (!sc)
		return;
	for (size_t i = 0; i < sc->n; i++)
		plan_release(&sc->tries[i]);
	free(sc->tries);
	for (size_t i = 0; i < sc->ncounts; i++)
		free(sc->counts[i].expanded);
	free(sc->counts);
	for (size_t i = 0; i < sc->npaths; i++) {
		free(sc->paths[i].path);
		free(sc->paths[i].syscall);
	}
	free(sc->paths);
	free(sc);
}

static bool owns(enum fault_action a)
{
	return a == FAULT_SYSCALL;
}

const struct orch_family orch__syscalls = {
	.owns = owns,
	.init = init,
	.try_starts = try_starts,
	.exited = exited,
	.gone = gone,
	.release = release,
};
