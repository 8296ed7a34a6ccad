/*
 * orchestrator_syscall.c -- syscall faults in a schedule: the seccomp plan
 * of one try, built before it starts (orchestrator.h), and what a discovery
 * try leaves in the record.
 *
 * Invariants:
 *  1. A try gets a plan only when the schedule has a syscall fault for it,
 *     or when it is the discovery try (op 1, try 1) of a syscall
 *     exploration; every other try runs without a filter.
 *  2. Globs hold "{dir}", never the schedule's directory: rules are
 *     expanded here with the directory glob-escaped, and discovery counts
 *     calls per (syscall, scope glob template), so schedule strings replay
 *     in any directory and meet temp files with random names.
 */
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/run/orchestrator_impl.h"

/* tmpl with "{dir}" standing for the escaped schedule directory. */
static int expand_glob(const struct orch *o, const char *tmpl, char **out,
		       char *err, size_t errlen)
{
	char dir[PATH_MAX * 2];

	if (inject_seccomp_glob_escape(o->p->dir, dir, sizeof(dir)) < 0) {
		snprintf(err, errlen, "schedule directory too long for a glob");
		return FC_USAGE;
	}
	return scenario_expand(tmpl, &(struct template_vars){ .dir = dir }, out,
			       err, errlen);
}

static int add_rule(struct orch *o, struct run *r, const char *tmpl,
		    int fault, char *err, size_t errlen)
{
	char *rule = NULL;
	int rc = expand_glob(o, tmpl, &rule, err, errlen);
	size_t n = inject_seccomp_plan_rules(r->plan);
	int *map;

	if (rc)
		return rc;
	rc = inject_seccomp_plan_add_rule(r->plan, rule);
	if (!rc && strchr(rule, '@')) /* its glob is in scope, even under /dev */
		rc = inject_seccomp_plan_watch(r->plan, strchr(rule, '@') + 1);
	if (rc)
		snprintf(err, errlen, "syscall rule '%s': %s", rule,
			 inject_seccomp_plan_errmsg(r->plan));
	free(rule);
	if (rc)
		return rc;
	map = realloc(r->rule_fault, (n + 1) * sizeof(*map));
	if (!map)
		return FC_NOMEM;
	map[n] = fault;
	r->rule_fault = map;
	return 0;
}

static int add_watch(struct orch *o, struct run *r, const char *tmpl,
		     char *err, size_t errlen)
{
	char *glob = NULL;
	int rc = expand_glob(o, tmpl, &glob, err, errlen);

	if (!rc && (rc = inject_seccomp_plan_watch(r->plan, glob)))
		snprintf(err, errlen, "%s", inject_seccomp_plan_errmsg(r->plan));
	free(glob);
	return rc;
}

/* The discovery plan: count every listed syscall on the listed paths. */
static int discovery_plan(struct orch *o, struct run *r, char *err,
			  size_t errlen)
{
	const struct explore_spec *e = o->p->sys_discover;
	int rc = 0;

	for (char **s = e->syscalls; s && *s && !rc; s++)
		rc = inject_seccomp_plan_intercept(r->plan, *s);
	for (char **g = e->sys_paths; g && *g && !rc; g++)
		rc = add_watch(o, r, *g, err, errlen);
	if (rc && !*err)
		snprintf(err, errlen, "%s", inject_seccomp_plan_errmsg(r->plan));
	return rc;
}

int orch__seccomp_plan(struct orch *o, struct run *r, char *err,
		       size_t errlen)
{
	bool discover = o->p->sys_discover && r->op == 1 && r->try_number == 1;
	bool any = discover;
	int rc = 0;

	*err = '\0';
	for (size_t i = 0; i < o->p->nfaults; i++) {
		const struct fault *f = &o->p->faults[i];
		any |= f->action == FAULT_SYSCALL && f->attempt == r->try_number &&
		       (f->operation == 0 || f->operation == r->op);
	}
	if (!any)
		return 0;
	if (inject_seccomp_plan_new(&r->plan) < 0)
		return FC_NOMEM;
	for (size_t i = 0; i < o->p->nfaults && !rc; i++) {
		const struct fault *f = &o->p->faults[i];
		if (f->action == FAULT_SYSCALL && f->attempt == r->try_number &&
		    (f->operation == 0 || f->operation == r->op))
			rc = add_rule(o, r, f->rule, (int)i, err, errlen);
	}
	if (!rc && discover)
		rc = discovery_plan(o, r, err, errlen);
	else if (!rc) /* the schedule's files, even when its dir is in /dev/shm */
		rc = add_watch(o, r, "{dir}/*", err, errlen);
	if (rc)
		orch__seccomp_release(r);
	return rc;
}

void orch__seccomp_release(struct run *r)
{
	inject_seccomp_plan_free(r->plan);
	r->plan = NULL;
	free(r->rule_fault);
	r->rule_fault = NULL;
}

void orch__path_glob(const struct orch *o, const char *path, char *out,
		     size_t outlen)
{
	size_t dl = strlen(o->p->dir);

	if (strncmp(path, o->p->dir, dl) == 0 && path[dl] == '/' && outlen > 5) {
		memcpy(out, "{dir}", 5);
		if (inject_seccomp_glob_escape(path + dl, out + 5, outlen - 5) == 0)
			return;
	} else if (inject_seccomp_glob_escape(path, out, outlen) == 0) {
		return;
	}
	snprintf(out, outlen, "%s", "?");
}

/* The calls of `sys` the session saw on paths matching glob. */
static unsigned long count_matching(const struct inject_seccomp_session *s,
				    const char *sys, const char *glob)
{
	unsigned long n = 0;

	for (size_t i = 0; i < inject_seccomp_stats_len(s); i++) {
		const char *sy, *path;
		unsigned long count;

		if (inject_seccomp_stats_get(s, i, &sy, &path, &count) == 0 &&
		    strcmp(sy, sys) == 0 && fnmatch(glob, path, 0) == 0)
			n += count;
	}
	return n;
}

/*
 * Per (syscall, scope glob), not per path: temp files carry random names
 * (".tmp-6LAcUN"), so a rule must name the glob the occurrence was counted
 * under for a replay to meet the same call.
 */
int orch__seccomp_stats(struct orch *o, int idx,
			const struct inject_seccomp_session *s)
{
	const struct explore_spec *e = o->p->sys_discover;
	struct rec_attempt *a = &o->rec->attempts[idx];
	char err[200];

	for (char **g = e->sys_paths; s && g && *g; g++) {
		char *glob = NULL;
		int rc = expand_glob(o, *g, &glob, err, sizeof(err));

		if (rc) {
			free(glob);
			return rc == FC_NOMEM ? rc : 0;
		}
		for (char **sys = e->syscalls; sys && *sys; sys++) {
			unsigned long n = count_matching(s, *sys, glob);
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

static bool has_prefix(const char *s, const char *prefix)
{
	return s && strncmp(s, prefix, strlen(prefix)) == 0;
}

/*
 * A failed call on a socket is one on the journal's connection when the
 * journal is a server (PostgreSQL, etcd) and the target is not (SQLite, a
 * file): the journal is then the only server the route talks to.  With
 * both on servers the fault record (it names "socket:[N]", not the peer)
 * cannot tell the two connections apart, and nothing is claimed.
 */
static bool journal_socket(const struct orch *o, const char *path)
{
	const char *target = o->p->route->target;

	return has_prefix(path, "socket:[") &&
	       (has_prefix(o->journal_url, "postgresql://") ||
		has_prefix(o->journal_url, "postgres://") ||
		has_prefix(o->journal_url, "etcd://")) &&
	       (has_prefix(target, "sqlite:") || has_prefix(target, "file:"));
}

bool orch__journal_file(const struct orch *o, const char *path)
{
	const char *db;
	size_t n;

	if (journal_socket(o, path))
		return true;
	if (!has_prefix(o->journal_url, "sqlite:"))
		return false;
	db = o->journal_url + 7;
	n = strlen(db);
	return strncmp(path, db, n) == 0 &&
	       (path[n] == '\0' || strcmp(path + n, "-journal") == 0 ||
		strcmp(path + n, "-wal") == 0);
}

/* What the try's seccomp plan did: each rule that acted fired its fault. */
void orch__collect_syscalls(struct orch *o, int idx)
{
	struct run *r = &o->runs[idx];
	size_t n, total;
	const struct sv_sysfault *sf = sv_proc_sysfaults(r->proc, &n, &total);

	if (!r->plan)
		return;
	if (*sv_proc_seccomp_error(r->proc))
		orch__trouble(o, FC_IO, "syscall faults in op %d try %d: %s", r->op,
			r->try_number, sv_proc_seccomp_error(r->proc));
	for (size_t i = 0; i < n; i++) {
		int fi = r->rule_fault[sf[i].rule];
		char glob[PATH_MAX * 2], how[40];

		if (fi < 0)
			continue;
		o->rec->fired[fi] = true;
		if (sf[i].outcome == INJECT_OUT_FAILED) {
			const char *e = strerrorname_np(sf[i].error);
			if (e)
				snprintf(how, sizeof(how), "errno:%s", e);
			else
				snprintf(how, sizeof(how), "errno:%d", sf[i].error);
			o->rec->attempts[idx].journal_failed |=
				orch__journal_file(o, sf[i].path);
		} else {
			snprintf(how, sizeof(how), "%s",
				 sf[i].outcome == INJECT_OUT_KILLED_AFTER ?
				 "kill_after" : "kill_before");
		}
		orch__path_glob(o, sf[i].path, glob, sizeof(glob));
		orch__note_applied(o, fi, idx, r->op, "%s at %s on %.50s (#%lu there)",
			     how, sf[i].syscall, glob, sf[i].occurrence);
	}
	if (total > n && r->rule_fault[sf[n - 1].rule] >= 0)
		orch__note_applied(o, r->rule_fault[sf[n - 1].rule], idx, r->op,
			     "and %zu more syscall faults", total - n);
	if (o->p->sys_discover && r->op == 1 && r->try_number == 1 &&
	    orch__seccomp_stats(o, idx, sv_proc_seccomp(r->proc)))
		o->rc = FC_NOMEM;
}
