/*
 * orchestrator_setup.c -- what a schedule needs before its first try: the
 * workload (workgen), the target observer, the expanded journal URL, route
 * argv and env, the record's skeleton; and each attempt's environment.
 *
 * Invariant: nothing here starts a process; orchestrator.c does, with what
 * this file prepared.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/protocol.h"
#include "harness/run/orchestrator_impl.h"
#include "common/put.h"

char *orch__op_path(const struct orch *o, int op, const char *fmt, ...)
{
	char tail[128], *out;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(tail, sizeof(tail), fmt, ap);
	va_end(ap);
	if (asprintf(&out, "%s/op%d%s%s", o->p->dir, op, *tail ? "/" : "",
		     tail) < 0)
		return NULL;
	return out;
}

static int expand_list(char *const *tmpl, const struct template_vars *vars,
		       char ***out, char *err, size_t errlen)
{
	size_t n = 0;
	char **v;

	while (tmpl && tmpl[n])
		n++;
	v = calloc(n + 1, sizeof(*v));
	if (!v)
		return FC_NOMEM;
	*out = v;
	for (size_t i = 0; i < n; i++) {
		int rc = scenario_expand(tmpl[i], vars, &v[i], err, errlen);
		if (rc)
			return rc;
	}
	return 0;
}

void orch__free_list(char **v)
{
	for (size_t i = 0; v && v[i]; i++)
		free(v[i]);
	free(v);
}

static int env_add(char ***env, size_t *n, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int env_add(char ***env, size_t *n, const char *fmt, ...)
{
	char **slot = RECORD_PUSH(*env, *n);
	va_list ap;
	int r;

	if (!slot)
		return FC_NOMEM;
	va_start(ap, fmt);
	r = vasprintf(slot, fmt, ap);
	va_end(ap);
	if (r < 0) {
		*slot = NULL;
		return FC_NOMEM;
	}
	return 0;
}

/* This fencecert binary, for FENCECERT_BIN and the recover fault. */
const char *orch__self_exe(void)
{
	static char path[4096];

	if (!path[0]) {
		static const char gone[] = " (deleted)";
		ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);
		size_t len;

		if (n <= 0) {
			snprintf(path, sizeof(path), "fencecert");
			return path;
		}
		path[n] = '\0';
		/* rebuilt while we run: the new binary is at the same path */
		len = (size_t)n;
		if (len > sizeof(gone) - 1 &&
		    strcmp(path + len - (sizeof(gone) - 1), gone) == 0)
			path[len - (sizeof(gone) - 1)] = '\0';
	}
	return path;
}

/* The SPEC section 7 environment of try k of op, NULL-terminated. */
char **orch__attempt_env(struct orch *o, int op, int k, const char *xcom,
			 const char *run_dir)
{
	const struct workgen_op *w = workgen_op(o->wg, op);
	const struct suite *s = o->p->suite;
	char **env = NULL;
	size_t n = 0;
	char *prev = k > 1 ? orch__op_path(o, op, "xcom/try-%d", k - 1) : NULL;
	char *wait = orch__wait_set(o, op, k);
	int rc = wait ? 0 : FC_NOMEM;

	rc |= env_add(&env, &n, "FENCECERT_JOURNAL=%s", o->journal_url);
	rc |= env_add(&env, &n, "FENCECERT_TARGET=%s", observer_target(o->obs));
	rc |= env_add(&env, &n, "FENCECERT_WORKLOAD=%s", w->workload_path);
	rc |= env_add(&env, &n, "FENCECERT_TRY_NUMBER=%d", k);
	rc |= env_add(&env, &n, "FENCECERT_RUN_DIR=%s", run_dir);
	rc |= env_add(&env, &n, "FENCECERT_XCOM_DIR=%s", xcom);
	if (prev)
		rc |= env_add(&env, &n, "FENCECERT_PREV_XCOM_DIR=%s", prev);
	rc |= env_add(&env, &n, "FENCECERT_LEASE_TTL_MS=%d",
		      s->orchestrator.lease_ttl_ms);
	rc |= env_add(&env, &n, "FENCECERT_LEASE_OWNER=op%d-try%d", op, k);
	/* routes in other languages reach the journal through our CLI */
	rc |= env_add(&env, &n, "FENCECERT_BIN=%s", orch__self_exe());
	/* the failpoints we may act at; the route passes the others */
	if (wait)
		rc |= env_add(&env, &n, "%s=%s", PROTO_ENV_FAILPOINT_WAIT, wait);
	for (size_t i = 0; o->env && o->env[i]; i++)
		rc |= env_add(&env, &n, "%s", o->env[i]);
	free(prev);
	free(wait);
	if (!rc && RECORD_PUSH(env, n))
		return env; /* the pushed slot is the NULL terminator */
	orch__free_list(env);
	return NULL;
}

static bool under_syscall_faults(const struct orch_params *p)
{
	for (size_t i = 0; i < p->nfaults; i++)
		if (p->faults[i].action == FAULT_SYSCALL)
			return true;
	return p->sys_discover != NULL;
}

int orch__setup(struct orch *o, char *err, size_t errlen)
{
	const struct orch_params *p = o->p;
	const struct suite *s = p->suite;
	const char *base = strrchr(p->dir, '/');
	char wdir[4096];
	int rc;

	services_schedule_id(base ? base + 1 : p->dir, o->schedule_id,
			     sizeof(o->schedule_id));
	o->vars = (struct template_vars){
		.dir = p->dir, .schedule_id = o->schedule_id,
		.service = services_address, .service_ctx = p->services,
	};
	rc = orch__proxies_start(o, err, errlen);
	if (rc)
		return rc;
	put(wdir, sizeof(wdir), "%s/workload", p->dir);
	rc = workgen_generate(&s->workload, p->operations, wdir, &o->wg, err,
			      errlen);
	if (rc)
		return rc;
	rc = observer_new(p->route, &s->workload, &o->vars, p->sv, &o->obs, err,
			  errlen);
	if (!rc && under_syscall_faults(p))
		observer_one_shot(o->obs);
	if (!rc)
		rc = scenario_expand(p->route->journal, &o->vars, &o->journal_url,
				     err, errlen);
	if (!rc)
		rc = expand_list(p->route->command, &o->vars, &o->argv, err, errlen);
	if (!rc)
		rc = expand_list(p->route->env, &o->vars, &o->env, err, errlen);
	return rc;
}

int orch__record_ops(struct orch *o)
{
	size_t n = workgen_count(o->wg);

	o->rec->ops = calloc(n ? n : 1, sizeof(*o->rec->ops));
	if (!o->rec->ops)
		return FC_NOMEM;
	o->rec->nops = n;
	for (size_t i = 0; i < n; i++) {
		const struct workgen_op *w = workgen_op(o->wg, (int)i + 1);
		struct rec_operation *ro = &o->rec->ops[i];
		ro->index = (int)i + 1;
		put(ro->operation_id, sizeof(ro->operation_id), "%s",
		    w->operation_id);
		put(ro->intent_digest, sizeof(ro->intent_digest), "%s",
		    w->intent_digest);
		ro->row_keys = calloc(w->nrows ? w->nrows : 1, sizeof(char *));
		if (!ro->row_keys)
			return FC_NOMEM;
		for (size_t j = 0; j < w->nrows; j++) {
			ro->row_keys[j] = strdup(w->row_keys[j]);
			if (!ro->row_keys[j])
				return FC_NOMEM;
			ro->nrows = j + 1;
		}
	}
	return 0;
}

int orch__record_faults(struct orch *o)
{
	const struct orch_params *p = o->p;
	size_t n = p->nfaults ? p->nfaults : 1;

	o->rec->faults = calloc(n, sizeof(*o->rec->faults));
	o->rec->fired = calloc(n, sizeof(*o->rec->fired));
	o->resume_done = calloc(n, sizeof(*o->resume_done));
	if (!o->rec->faults || !o->rec->fired || !o->resume_done)
		return FC_NOMEM;
	if (p->nfaults)
		memcpy(o->rec->faults, p->faults, p->nfaults * sizeof(*p->faults));
	o->rec->nfaults = p->nfaults;
	return 0;
}
