/*
 * orchestrator_setup.c -- a schedule's workload, observer, expanded
 * templates and record skeleton, and each attempt's environment
 * (orchestrator_setup.h, whose invariants this file keeps).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/protocol.h"
#include "common/put.h"
#include "harness/run/orchestrator_setup.h"
#include "harness/run/orchestrator_wait.h"
#include "harness/run/services.h"

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

/* The SPEC section 7 environment of try k of op, NULL-terminated. */
char **orch__attempt_env(const struct orch_setup *su,
			 const struct orch_sched *s, int op, int k,
			 const char *xcom, const char *run_dir)
{
	const struct workgen_op *w = workgen_op(su->wg, op);
	char **env = NULL;
	size_t n = 0;
	char *prev = k > 1 ? orch__op_path(s, op, "xcom/try-%d", k - 1) : NULL;
	char *wait = orch__wait_set(s->p, op, k);
	int rc = wait ? 0 : FC_NOMEM;

	if (!s->p->route->no_journal) /* `journal: none`: no URL at all */
		rc |= env_add(&env, &n, PROTO_ENV_JOURNAL "=%s", su->journal_url);
	rc |= env_add(&env, &n, PROTO_ENV_TARGET "=%s", observer_target(su->obs));
	rc |= env_add(&env, &n, PROTO_ENV_WORKLOAD "=%s", w->workload_path);
	rc |= env_add(&env, &n, PROTO_ENV_TRY_NUMBER "=%d", k);
	rc |= env_add(&env, &n, PROTO_ENV_RUN_DIR "=%s", run_dir);
	rc |= env_add(&env, &n, PROTO_ENV_XCOM_DIR "=%s", xcom);
	if (prev)
		rc |= env_add(&env, &n, PROTO_ENV_PREV_XCOM_DIR "=%s", prev);
	rc |= env_add(&env, &n, PROTO_ENV_LEASE_TTL_MS "=%d",
		      s->p->suite->orchestrator.lease_ttl_ms);
	rc |= env_add(&env, &n, PROTO_ENV_LEASE_OWNER "=op%d-try%d", op, k);
	/* routes in other languages reach the journal through our CLI */
	rc |= env_add(&env, &n, PROTO_ENV_BIN "=%s", orch__self_exe());
	/* the failpoints we may act at; the route passes the others -- but
	 * the try being recorded waits at every one, to be snapshotted */
	if (wait && !(s->p->record && s->p->snaps && op == 1 &&
		      k == (int)s->p->nseed + 1))
		rc |= env_add(&env, &n, PROTO_ENV_FAILPOINT_WAIT "=%s", wait);
	for (size_t i = 0; su->env && su->env[i]; i++)
		rc |= env_add(&env, &n, "%s", su->env[i]);
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

void orch__setup_vars(struct orch_sched *s)
{
	const struct orch_params *p = s->p;
	const char *base = strrchr(p->dir, '/');

	services_schedule_id(base ? base + 1 : p->dir, s->schedule_id,
			     sizeof(s->schedule_id));
	s->vars = (struct template_vars){
		.dir = p->dir, .schedule_id = s->schedule_id,
		.service = services_address, .service_ctx = p->services,
	};
}

/* The schedule dir, then the route's `writable:` (copies). */
static int writable_list(const struct orch_params *p, char ***out)
{
	size_t n = 0;
	char **v;

	while (p->route->writable && p->route->writable[n])
		n++;
	if (!(v = calloc(n + 2, sizeof(*v))))
		return FC_NOMEM;
	*out = v;
	if (!(v[0] = strdup(p->dir)))
		return FC_NOMEM;
	for (size_t i = 0; i < n; i++)
		if (!(v[i + 1] = strdup(p->route->writable[i])))
			return FC_NOMEM;
	return 0;
}

int orch__setup_start(struct orch_setup *su, struct orch_sched *s, char *err,
		      size_t errlen)
{
	const struct orch_params *p = s->p;
	const struct suite *suite = p->suite;
	char wdir[4096];
	int rc;

	put(wdir, sizeof(wdir), "%s/workload", p->dir);
	rc = workgen_generate(&suite->workload, p->operations, wdir, &su->wg,
			      err, errlen);
	if (rc)
		return rc;
	{
		struct template_vars hv;
		struct orch_upstreams *u;

		/* the route reaches its target through its proxies, the
		 * observer reaches it directly */
		rc = orch__harness_vars(s, &hv, &u, err, errlen);
		if (!rc)
			rc = observer_new(p->route, &suite->workload, &s->vars,
					  &hv, p->sv, &su->obs, err, errlen);
		orch__upstreams_free(u);
	}
	/* a power loss replaces the files under the observer, and a
	 * snapshot opens and closes them in this process -- which drops
	 * every POSIX lock this process holds on them, the observer's
	 * SQLite read locks included: no connection of ours may stay open
	 * while the route runs then */
	if (!rc && (under_syscall_faults(p) || p->track_power || p->record))
		observer_one_shot(su->obs);
	if (!rc)
		rc = scenario_expand(p->route->journal, &s->vars, &su->journal_url,
				     err, errlen);
	s->journal_url = su->journal_url;
	if (!rc)
		rc = expand_list(p->route->command, &s->vars, &su->argv, err,
				 errlen);
	if (!rc)
		rc = expand_list(p->route->env, &s->vars, &su->env, err, errlen);
	if (!rc)
		rc = writable_list(p, &su->writable);
	return rc;
}

void orch__setup_release(struct orch_setup *su)
{
	workgen_free(su->wg);
	observer_free(su->obs);
	free(su->journal_url);
	orch__free_list(su->argv);
	orch__free_list(su->env);
	orch__free_list(su->writable);
	*su = (struct orch_setup){ 0 };
}

/* Give the row store every operation's keys, in file order, in one
 * transaction. */
static int expect_rows(obs_store *rows, const struct workgen *wg, size_t n)
{
	char key[WORKGEN_KEY_MAX];
	int rc = obs_store_begin(rows);

	for (size_t i = 0; !rc && i < n; i++) {
		const struct workgen_op *w = workgen_op(wg, (int)i + 1);
		for (size_t j = 0; !rc && j < w->nrows; j++) {
			workgen_row_key(w, j, key);
			rc = obs_store_expect(rows, w->index, key);
		}
	}
	if (!rc)
		rc = obs_store_commit(rows);
	if (rc)
		obs_store_rollback(rows);
	return rc;
}

/* The workload's shape (orch_cache): each operation's row count, which
 * with its index gives every key (workgen_row_key).  Heap, or NULL. */
static char *workload_shape(const struct workgen *wg, size_t n)
{
	char *shape = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&shape, &len);

	if (!f)
		return NULL;
	for (size_t i = 0; i < n; i++)
		fprintf(f, "%zu,", workgen_op(wg, (int)i + 1)->nrows);
	if (fclose(f)) {
		free(shape);
		return NULL;
	}
	return shape;
}

/* rec->rows with the workload's expected rows: a loan of the cache's
 * store when it holds this workload's (obs_store_borrow: given back, its
 * observations gone, when the record is freed), else inserted here (and
 * then kept there). */
static int open_rows(const struct orch_sched *s, const struct workgen *wg,
		     size_t n, char *err, size_t errlen)
{
	struct orch_cache *c = s->p->cache;
	struct rec_schedule *rec = s->rec;
	char *shape = c ? workload_shape(wg, n) : NULL;
	int rc;

	if (c && !shape)
		return FC_NOMEM;
	/* not in s->p->dir: the route may write there (obs_store.h) */
	if (c && c->shape && strcmp(c->shape, shape) == 0) {
		if (obs_store_borrow(c->expected, &rec->rows, err, errlen) == 0) {
			free(shape);
			return 0;
		}
		/* a store that cannot lend is not kept: start again */
		orch_cache_release(c);
		err[0] = '\0';
	}
	rc = obs_store_open("", &rec->rows, err, errlen);
	if (!rc && (rc = expect_rows(rec->rows, wg, n)))
		snprintf(err, errlen, "cannot keep the workload's rows: %s",
			 obs_store_errmsg(rec->rows));
	if (!rc && c) {
		orch_cache_release(c);
		if (obs_store_open_copy(rec->rows, "", &c->expected, err,
					errlen) == 0) {
			c->shape = shape;
			shape = NULL;
		}
		/* a cache that could not be filled stays empty */
	}
	free(shape);
	return rc;
}

void orch__keep_rows(const struct orch_sched *s)
{
	struct orch_cache *c = s->p->cache;
	const struct rec_schedule *rec = s->rec;

	/* the cache holds this workload's rows since open_rows(), or none */
	if (!c || !c->expected || !c->shape || !rec->rows)
		return;
	for (size_t k = 0; k < rec->nobs; k++)
		if (obs_store_keep(c->expected, rec->rows, (int)k)) {
			orch_cache_release(c); /* half kept: start again */
			return;
		}
}

void orch_cache_release(struct orch_cache *c)
{
	if (!c)
		return;
	obs_store_free(c->expected);
	free(c->shape);
	*c = (struct orch_cache){ 0 };
}

int orch__record_ops(struct orch_sched *s, const struct orch_setup *su,
		     char *err, size_t errlen)
{
	size_t n = workgen_count(su->wg);
	struct rec_schedule *rec = s->rec;

	rec->ops = calloc(n ? n : 1, sizeof(*rec->ops));
	if (!rec->ops)
		return FC_NOMEM;
	rec->nops = n;
	for (size_t i = 0; i < n; i++) {
		const struct workgen_op *w = workgen_op(su->wg, (int)i + 1);
		struct rec_operation *ro = &rec->ops[i];
		ro->index = (int)i + 1;
		put(ro->canonical_id, sizeof(ro->canonical_id), "%s",
		    w->operation_id);
		put(ro->intent_digest, sizeof(ro->intent_digest), "%s",
		    w->intent_digest);
		ro->nrows = w->nrows;
	}
	return open_rows(s, su->wg, n, err, errlen);
}

int orch__record_faults(struct orch_sched *s)
{
	const struct orch_params *p = s->p;
	size_t n = p->nfaults ? p->nfaults : 1;

	s->rec->faults = calloc(n, sizeof(*s->rec->faults));
	s->rec->fired = calloc(n, sizeof(*s->rec->fired));
	if (!s->rec->faults || !s->rec->fired)
		return FC_NOMEM;
	if (p->nfaults)
		memcpy(s->rec->faults, p->faults, p->nfaults * sizeof(*p->faults));
	s->rec->nfaults = p->nfaults;
	return 0;
}
