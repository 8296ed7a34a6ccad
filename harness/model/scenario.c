/*
 * scenario.c -- load a certification suite (YAML) into struct suite: the
 * file, the suite header, services, proxies, routes, workload and
 * orchestrator, and the `expect:` words; the scenarios themselves are
 * parsed in scenario_faults.c, the typed node access lives in
 * scenario_yaml.c, templates are checked by scenario_template.c and the
 * finished suite is suite.c's.  Nothing in the model calls back into this
 * file: it is the top of the loader.
 *
 * Invariants:
 *   1. suite_load*() either returns a fully validated suite (every default
 *      applied, every template well-formed, every fault within the
 *      orchestrator's tries and the workload's operations) or NULL with one
 *      "FILE:LINE:COLUMN: message" error; nothing half-built escapes.
 *   2. Any byte string is a valid input: it is parsed or refused, never
 *      crashes, never walks more than SUITE_VISIT_BUDGET nodes, never reads
 *      more than SUITE_MAX_BYTES (tests/fuzz/fuzz_scenario.c checks this).
 *      The depth, node and anchor limits act on libyaml's event stream
 *      (scan_events()) before any tree is built, so refusing any file of
 *      up to SUITE_MAX_BYTES costs milliseconds.
 *   3. `version` is checked before any other key, so a newer file is refused
 *      for its version, not for a key this reader does not know.
 *   4. The digest covers the file's exact bytes, so a report names exactly
 *      the suite it ran.
 *   5. Service, proxy and route names are unique and follow the name rule,
 *      so a schedule string can carry them ("=NAME"); a proxy's upstream is
 *      a template that may name services and environment variables but not
 *      a proxy (a proxy in front of itself).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "journal/identity.h"
#include "common/sandbox.h"
#include "harness/model/scenario_impl.h"

static const char *const suite_keys[] = {
	"version", "suite", "services", "proxies", "routes", "workload",
	"orchestrator", "scenarios", NULL,
};
static const char *const service_keys[] = {
	"name", "kind", "members", "env", NULL,
};
static const char *const route_keys[] = {
	"name", "command", "journal", "target", "observe", "expect", "env",
	"fork_server", "writable", NULL,
};
static const char *const observe_keys[] = { "sql", "command", NULL };
static const char *const proxy_keys[] = { "name", "upstream", NULL };
static const char *const workload_keys[] = {
	"operations", "rows_per_operation", "seed", "strategy", "table", NULL,
};
static const char *const orchestrator_keys[] = {
	"retries", "zombie_delay_ms", "attempt_timeout_ms", "lease_ttl_ms", NULL,
};
static const char *const strategies[] = { "append", "replace", "upsert", NULL };

static const char *const expectation_names[] = {
	[EXPECT_CERTIFIED] = "certified",
	[EXPECT_CERTIFIED_AUTOMATIC] = "certified-automatic",
	[EXPECT_CERTIFIED_FAIL_CLOSED] = "certified-fail-closed",
	[EXPECT_REJECTED] = "rejected",
};
#define EXPECTATION_COUNT (sizeof(expectation_names) / sizeof(expectation_names[0]))

/* ---- names ---------------------------------------------------------- */

const char *expectation_name(enum expectation e)
{
	if ((unsigned)e >= EXPECTATION_COUNT)
		return "unknown";
	return expectation_names[e];
}

/* ---- routes --------------------------------------------------------- */

static int check_template(struct yctx *c, yaml_node_t *n, const char *s)
{
	char msg[256];

	if (scenario_template_check(c->suite, s, msg, sizeof(msg)) < 0)
		return scenario__error(c, n, "%s", msg);
	return 0;
}

/* A `writable:` entry: an absolute path, no "..", no template (the
 * sandbox binds it at the same place: common/sandbox.h). */
static int check_writable(struct yctx *c, yaml_node_t *n, const char *s)
{
	if (s[0] != '/')
		return scenario__error(c, n, "writable path '%.200s' is not "
				       "absolute", s);
	if (strstr(s, "/../") || (strlen(s) >= 3 &&
				  strcmp(s + strlen(s) - 3, "/..") == 0))
		return scenario__error(c, n, "writable path '%.200s' has a "
				       "'..' in it", s);
	return 0;
}

static int get_template(struct yctx *c, yaml_node_t *map, const char *key,
			const char *what, char **out)
{
	yaml_node_t *n;

	if (scenario__map_need(c, map, key, what, &n) < 0 ||
	    scenario__get_strdup(c, n, key, out) < 0)
		return FC_USAGE;
	if (!**out)
		return scenario__error(c, n, "'%s' must not be empty", key);
	return check_template(c, n, *out);
}

static int get_argv(struct yctx *c, yaml_node_t *n, const char *key,
		    char ***out)
{
	if (scenario__get_strv(c, n, key, 1, ARGV_MAX, check_template, out) < 0)
		return FC_USAGE;
	if (!(*out)[0][0])
		return scenario__error(c, n, "'%s' must name a program first", key);
	return 0;
}

/*
 * observe.sql reads a sqlite: target (harness/run/observe.c), so a target
 * template that cannot expand to one is refused here; only {env:NAME}
 * at its start leaves that to run time.  The statement itself is
 * scenario_sql.c's.
 */
static int check_observe_sql(struct yctx *c, yaml_node_t *n,
			     const struct route_spec *r)
{
	char msg[300];
	int rc;

	if (strncmp(r->target, "sqlite:", 7) != 0 &&
	    strncmp(r->target, "{env:", 5) != 0)
		return scenario__error(c, n,
				       "observe.sql needs a sqlite: target, not '%.60s' (observe a PostgreSQL, etcd or file target with observe.command, e.g. fencecert target rows)",
				       r->target);
	rc = scenario__observe_sql_check(r->observe_sql, msg, sizeof(msg));
	if (rc < 0) {
		scenario__error(c, n, "%s", msg);
		return rc;
	}
	return 0;
}

static int parse_observe(struct yctx *c, yaml_node_t *n, struct route_spec *r)
{
	yaml_node_t *sql, *cmd, *cmdkey = NULL;

	if (scenario__map_check(c, n, observe_keys, "observe") < 0)
		return FC_USAGE;
	sql = scenario__map_get(c, n, "sql", NULL);
	cmd = scenario__map_get(c, n, "command", &cmdkey);
	if (c->failed)
		return FC_USAGE;
	if (sql && cmd)
		return scenario__error(c, cmdkey,
				       "observe has both 'sql' and 'command' (give one)");
	if (sql) {
		if (scenario__get_strdup(c, sql, "sql", &r->observe_sql) < 0)
			return FC_USAGE;
		if (!r->observe_sql[0])
			return scenario__error(c, sql, "'sql' must not be empty");
		return check_observe_sql(c, sql, r);
	}
	if (cmd)
		return get_argv(c, cmd, "command", &r->observe_command);
	return scenario__error(c, n, "observe needs 'sql' or 'command'");
}

static int parse_expect(struct yctx *c, yaml_node_t *n, enum expectation *out)
{
	const char *v;

	if (scenario__get_str(c, n, "expect", &v) < 0)
		return FC_USAGE;
	for (size_t e = 0; e < EXPECTATION_COUNT; e++) {
		if (strcmp(v, expectation_names[e]) == 0) {
			*out = (enum expectation)e;
			return 0;
		}
	}
	return scenario__error(c, n,
			       "unknown expectation '%.40s' (expected certified, certified-automatic, certified-fail-closed or rejected)",
			       v);
}

static int env_entry(struct yctx *c, yaml_node_pair_t *p, char **out)
{
	yaml_node_t *k = scenario__node(c, p->key), *v;
	const char *name, *value;

	if (!k || scenario__get_str(c, k, "env", &name) < 0)
		return FC_USAGE;
	if (!scenario__env_name_valid(name, strlen(name)))
		return scenario__error(c, k, "'%.40s' is not an environment variable name",
				       name);
	if (strncmp(name, "FENCECERT_", 10) == 0)
		return scenario__error(c, k,
				       "environment variable '%.40s' is set by the harness and cannot be overridden",
				       name);
	v = scenario__node(c, p->value);
	if (!v || scenario__get_str(c, v, name, &value) < 0 ||
	    check_template(c, v, value) < 0)
		return FC_USAGE;
	if (asprintf(out, "%s=%s", name, value) < 0) {
		*out = NULL;
		scenario__error(c, v, "out of memory");
		return FC_NOMEM;
	}
	return 0;
}

static int parse_env(struct yctx *c, yaml_node_t *n, struct route_spec *r)
{
	size_t count, i = 0;

	if (n->type != YAML_MAPPING_NODE)
		return scenario__error(c, n, "'env' must be a mapping, got %s",
				       scenario__kind(n));
	count = (size_t)(n->data.mapping.pairs.top - n->data.mapping.pairs.start);
	if (count > ENV_MAX)
		return scenario__error(c, n, "'env' has more than %d entries", ENV_MAX);
	free(r->env);
	r->env = calloc(count + 1, sizeof(char *));
	if (!r->env) {
		scenario__error(c, n, "out of memory");
		return FC_NOMEM;
	}
	for (yaml_node_pair_t *p = n->data.mapping.pairs.start;
	     p < n->data.mapping.pairs.top; p++, i++) {
		int rc = env_entry(c, p, &r->env[i]);

		if (rc < 0)
			return rc;
		for (size_t j = 0; j < i; j++) {
			size_t len = strcspn(r->env[i], "=");

			if (strncmp(r->env[j], r->env[i], len + 1) == 0)
				return scenario__error(c, scenario__node(c, p->key),
						       "duplicate key '%.*s' in env",
						       (int)len, r->env[i]);
		}
	}
	return 0;
}

static int parse_route(struct yctx *c, yaml_node_t *n, void *entry,
		       const struct suite *s)
{
	struct route_spec *r = entry;
	yaml_node_t *v;

	r->line = (int)n->start_mark.line + 1;
	r->column = (int)n->start_mark.column + 1;
	r->expect = EXPECT_CERTIFIED;
	r->env = calloc(1, sizeof(char *));
	if (!r->env) {
		scenario__error(c, n, "out of memory");
		return FC_NOMEM;
	}
	if (scenario__map_check(c, n, route_keys, "route") < 0 ||
	    scenario__map_need(c, n, "name", "route", &v) < 0 ||
	    scenario__get_name(c, v, "name", r->name) < 0 ||
	    scenario__map_need(c, n, "command", "route", &v) < 0 ||
	    get_argv(c, v, "command", &r->command) < 0 ||
	    get_template(c, n, "journal", "route", &r->journal) < 0 ||
	    get_template(c, n, "target", "route", &r->target) < 0 ||
	    scenario__map_need(c, n, "observe", "route", &v) < 0 ||
	    parse_observe(c, v, r) < 0)
		return FC_USAGE;
	r->no_journal = strcmp(r->journal, "none") == 0;
	if ((v = scenario__map_get(c, n, "expect", NULL)) &&
	    parse_expect(c, v, &r->expect) < 0)
		return FC_USAGE;
	if ((v = scenario__map_get(c, n, "env", NULL)) && parse_env(c, v, r) < 0)
		return FC_USAGE;
	if ((v = scenario__map_get(c, n, "fork_server", NULL)) &&
	    scenario__get_bool(c, v, "fork_server", &r->fork_server) < 0)
		return FC_USAGE;
	/* the schedule dir is writable already: what else the route may
	 * write, at most SANDBOX_WRITABLE_MAX - 2 (the dir, and a fork
	 * server's area, take two) */
	if ((v = scenario__map_get(c, n, "writable", NULL)) &&
	    scenario__get_strv(c, v, "writable", 1, SANDBOX_WRITABLE_MAX - 2,
			       check_writable, &r->writable) < 0)
		return FC_USAGE;
	return c->failed ? FC_USAGE : 0;
}

static int parse_routes(struct yctx *c, yaml_node_t *list, struct suite *s)
{
	static const struct scenario__list routes = {
		"routes", "route", 1, SUITE_MAX_ROUTES, sizeof(struct route_spec),
		offsetof(struct route_spec, name),
		offsetof(struct route_spec, line), parse_route,
	};

	return scenario__parse_list(c, list, &routes, s, (void **)&s->routes,
				    &s->nroutes);
}

/* ---- services ------------------------------------------------------- */

static int parse_service(struct yctx *c, yaml_node_t *n, void *entry,
			 const struct suite *s)
{
	struct service_spec *sv = entry;
	yaml_node_t *v, *k = NULL;
	const char *kind;

	sv->line = (int)n->start_mark.line + 1;
	sv->column = (int)n->start_mark.column + 1;
	if (scenario__map_check(c, n, service_keys, "service") < 0 ||
	    scenario__map_need(c, n, "name", "service", &v) < 0 ||
	    scenario__get_name(c, v, "name", sv->name) < 0 ||
	    scenario__map_need(c, n, "kind", "service", &v) < 0 ||
	    scenario__get_str(c, v, "kind", &kind) < 0)
		return FC_USAGE;
	if (strcmp(kind, "etcd") == 0) {
		sv->kind = SERVICE_ETCD;
		sv->members = 1;
		if (scenario__map_get(c, n, "env", &k))
			return scenario__error(c, k, "'env' does not apply to kind 'etcd' (the harness always starts it)");
		if ((v = scenario__map_get(c, n, "members", NULL)) &&
		    scenario__get_int(c, v, "members", 1, 3, &sv->members) < 0)
			return FC_USAGE;
		if (sv->members == 2)
			return scenario__error(c, v, "'members' must be 1 or 3, got 2");
	} else if (strcmp(kind, "postgresql") == 0) {
		sv->kind = SERVICE_POSTGRESQL;
		if (scenario__map_get(c, n, "members", &k))
			return scenario__error(c, k, "'members' does not apply to kind 'postgresql'");
		if ((v = scenario__map_get(c, n, "env", NULL))) {
			if (scenario__get_strbuf(c, v, "env", sv->env,
						 sizeof(sv->env)) < 0)
				return FC_USAGE;
			if (!scenario__env_name_valid(sv->env, strlen(sv->env)))
				return scenario__error(c, v, "'%.40s' is not an environment variable name",
						       sv->env);
		}
	} else {
		return scenario__error(c, v, "unknown service kind '%.40s' (expected etcd or postgresql)",
				       kind);
	}
	return c->failed ? FC_USAGE : 0;
}

static int parse_services(struct yctx *c, yaml_node_t *list, struct suite *s)
{
	static const struct scenario__list services = {
		"services", "service", 0, SUITE_MAX_SERVICES,
		sizeof(struct service_spec), offsetof(struct service_spec, name),
		offsetof(struct service_spec, line), parse_service,
	};

	return scenario__parse_list(c, list, &services, s,
				    (void **)&s->services, &s->nservices);
}

/* ---- proxies -------------------------------------------------------- */

/* Fault proxies (tcp_proxy.h) that every schedule starts in front of a
 * server, named in templates as {proxy:NAME} and in faults as `proxy:
 * NAME` (invariant 5). */
static int parse_proxy(struct yctx *c, yaml_node_t *n, void *entry,
		       const struct suite *s)
{
	struct proxy_spec *px = entry;
	char msg[256];
	yaml_node_t *v;

	px->line = (int)n->start_mark.line + 1;
	px->column = (int)n->start_mark.column + 1;
	if (scenario__map_check(c, n, proxy_keys, "proxy") < 0 ||
	    scenario__map_need(c, n, "name", "proxy", &v) < 0 ||
	    scenario__get_name(c, v, "name", px->name) < 0 ||
	    scenario__map_need(c, n, "upstream", "proxy", &v) < 0 ||
	    scenario__get_strdup(c, v, "upstream", &px->upstream) < 0)
		return FC_USAGE;
	if (!px->upstream[0])
		return scenario__error(c, v, "'upstream' must not be empty");
	if (strstr(px->upstream, "{proxy:"))
		return scenario__error(c, v, "a proxy's upstream cannot be a proxy");
	if (scenario_template_check(c->suite, px->upstream, msg, sizeof(msg)) < 0)
		return scenario__error(c, v, "%s", msg);
	return 0;
}

static int parse_proxies(struct yctx *c, yaml_node_t *list, struct suite *s)
{
	static const struct scenario__list proxies = {
		"proxies", "proxy", 0, SUITE_MAX_PROXIES,
		sizeof(struct proxy_spec), offsetof(struct proxy_spec, name),
		offsetof(struct proxy_spec, line), parse_proxy,
	};

	return scenario__parse_list(c, list, &proxies, s, (void **)&s->proxies,
				    &s->nproxies);
}

/* ---- workload and orchestrator -------------------------------------- */

static int opt_int(struct yctx *c, yaml_node_t *map, const char *key,
		   long long min, long long max, int *out)
{
	yaml_node_t *v = scenario__map_get(c, map, key, NULL);

	if (c->failed)
		return FC_USAGE;
	return v ? scenario__get_int(c, v, key, min, max, out) : 0;
}

static bool table_name_valid(const char *s)
{
	return scenario__env_name_valid(s, strlen(s)); /* an SQL identifier, unquoted */
}

static int parse_workload(struct yctx *c, yaml_node_t *n, struct workload_spec *w)
{
	yaml_node_t *v;

	if (scenario__map_check(c, n, workload_keys, "workload") < 0 ||
	    opt_int(c, n, "operations", 1, 1000, &w->operations) < 0 ||
	    opt_int(c, n, "rows_per_operation", 1, 1000000,
		    &w->rows_per_operation) < 0)
		return FC_USAGE;
	if ((v = scenario__map_get(c, n, "seed", NULL)) &&
	    scenario__get_u64(c, v, "seed", &w->seed) < 0)
		return FC_USAGE;
	if ((v = scenario__map_get(c, n, "strategy", NULL))) {
		const char *name;
		const char *const *k;

		if (scenario__get_str(c, v, "strategy", &name) < 0)
			return FC_USAGE;
		for (k = strategies; *k && strcmp(name, *k) != 0; k++)
			;
		if (!*k)
			return scenario__error(c, v,
					       "unknown strategy '%.40s' (expected append, replace or upsert)",
					       name);
		snprintf(w->strategy, sizeof(w->strategy), "%s", *k);
	}
	if ((v = scenario__map_get(c, n, "table", NULL))) {
		if (scenario__get_strbuf(c, v, "table", w->table,
					 sizeof(w->table)) < 0)
			return FC_USAGE;
		if (!table_name_valid(w->table))
			return scenario__error(c, v,
					       "'table' must be an SQL identifier ([A-Za-z_][A-Za-z0-9_]*), got '%s'",
					       w->table);
	}
	return c->failed ? FC_USAGE : 0;
}

static int parse_orchestrator(struct yctx *c, yaml_node_t *n,
			      struct orchestrator_spec *o)
{
	if (scenario__map_check(c, n, orchestrator_keys, "orchestrator") < 0 ||
	    opt_int(c, n, "retries", 0, 20, &o->retries) < 0 ||
	    opt_int(c, n, "zombie_delay_ms", 0, 3600000, &o->zombie_delay_ms) < 0 ||
	    opt_int(c, n, "attempt_timeout_ms", 1, 86400000,
		    &o->attempt_timeout_ms) < 0 ||
	    opt_int(c, n, "lease_ttl_ms", 1, 3600000, &o->lease_ttl_ms) < 0)
		return FC_USAGE;
	return 0;
}

/* ---- the suite ------------------------------------------------------ */

static void set_defaults(struct suite *s)
{
	s->version = 1;
	s->workload.operations = 1;
	s->workload.rows_per_operation = 100;
	s->workload.seed = 1;
	strcpy(s->workload.strategy, "append");
	strcpy(s->workload.table, "events");
	s->orchestrator.retries = 3;
	s->orchestrator.zombie_delay_ms = 500;
	s->orchestrator.attempt_timeout_ms = 30000;
	s->orchestrator.lease_ttl_ms = 200;
}

static int parse_suite(struct yctx *c, yaml_node_t *root, struct suite *s)
{
	yaml_node_t *v;
	int version;

	if (root->type != YAML_MAPPING_NODE)
		return scenario__error(c, root, "a suite must be a mapping, got %s",
				       scenario__kind(root));
	/* Invariant 3: the version decides which keys exist. */
	if (scenario__map_need(c, root, "version", "suite", &v) < 0 ||
	    scenario__get_int(c, v, "version", 0, 1000000, &version) < 0)
		return FC_USAGE;
	if (version != 1)
		return scenario__error(c, v,
				       "unsupported version %d (this fencecert reads version 1)",
				       version);
	if (scenario__map_check(c, root, suite_keys, "suite") < 0 ||
	    scenario__map_need(c, root, "suite", "suite", &v) < 0 ||
	    scenario__get_name(c, v, "suite", s->name) < 0)
		return FC_USAGE;
	/* services first: routes and faults refer to them */
	if ((v = scenario__map_get(c, root, "services", NULL)) &&
	    parse_services(c, v, s) < 0)
		return FC_USAGE;
	/* proxies next: their upstream may name a service, routes name them */
	if ((v = scenario__map_get(c, root, "proxies", NULL)) &&
	    parse_proxies(c, v, s) < 0)
		return FC_USAGE;
	if (scenario__map_need(c, root, "routes", "suite", &v) < 0 ||
	    parse_routes(c, v, s) < 0)
		return FC_USAGE;
	if ((v = scenario__map_get(c, root, "workload", NULL)) &&
	    parse_workload(c, v, &s->workload) < 0)
		return FC_USAGE;
	if ((v = scenario__map_get(c, root, "orchestrator", NULL)) &&
	    parse_orchestrator(c, v, &s->orchestrator) < 0)
		return FC_USAGE;
	if (scenario__map_need(c, root, "scenarios", "suite", &v) < 0)
		return FC_USAGE;
	return scenario__parse_scenarios(c, v, s);
}

/* "FILE:LINE:COLUMN: yaml syntax error: ..." from libyaml's problem. */
static int syntax_error(yaml_parser_t *p, const char *name, const char *buf,
			size_t len, char *err, size_t errlen)
{
	size_t line = p->problem_mark.line + 1, column = p->problem_mark.column + 1;

	if (p->error == YAML_MEMORY_ERROR) {
		snprintf(err, errlen, "%s: out of memory reading the suite", name);
		return FC_NOMEM;
	}
	if (p->error == YAML_READER_ERROR) {
		/* The reader reports a byte offset, not a mark. */
		size_t off = p->problem_offset < len ? p->problem_offset : len;

		line = 1, column = 1;
		for (size_t i = 0; i < off; i++, column++)
			if (buf[i] == '\n')
				line++, column = 0;
	}
	snprintf(err, errlen, "%s:%zu:%zu: yaml syntax error: %s%s%s%s", name,
		 line, column, p->problem ? p->problem : "unknown problem",
		 p->context ? " (" : "", p->context ? p->context : "",
		 p->context ? ")" : "");
	return FC_USAGE;
}

/* "FILE:LINE:COLUMN: suite <what> <limit> <unit>" at an event's start. */
static int limit_error(const char *name, const yaml_event_t *ev, char *err,
		       size_t errlen, const char *what, int limit,
		       const char *unit)
{
	snprintf(err, errlen, "%s:%zu:%zu: suite %s %d %s", name,
		 ev->start_mark.line + 1, ev->start_mark.column + 1, what,
		 limit, unit);
	return FC_USAGE;
}

/* One event against the limits; depth and counts are the walk's state. */
static int event_check(const char *name, const yaml_event_t *ev, int *depth,
		       long *nodes, int *anchors, char *err, size_t errlen)
{
	const yaml_char_t *anchor = NULL;

	switch (ev->type) {
	case YAML_SEQUENCE_START_EVENT:
		anchor = ev->data.sequence_start.anchor;
		break;
	case YAML_MAPPING_START_EVENT:
		anchor = ev->data.mapping_start.anchor;
		break;
	case YAML_SCALAR_EVENT:
		anchor = ev->data.scalar.anchor;
		break;
	case YAML_ALIAS_EVENT:
		break;
	case YAML_SEQUENCE_END_EVENT:
	case YAML_MAPPING_END_EVENT:
		(*depth)--;
		return 0;
	default:
		return 0;
	}
	if (++*nodes > SUITE_MAX_NODES)
		return limit_error(name, ev, err, errlen, "has more than",
				   SUITE_MAX_NODES, "nodes");
	if (anchor && ++*anchors > SUITE_MAX_ANCHORS)
		return limit_error(name, ev, err, errlen, "has more than",
				   SUITE_MAX_ANCHORS, "anchors");
	if ((ev->type == YAML_SEQUENCE_START_EVENT ||
	     ev->type == YAML_MAPPING_START_EVENT) && ++*depth > SUITE_MAX_DEPTH)
		return limit_error(name, ev, err, errlen,
				   "nests lists and mappings deeper than",
				   SUITE_MAX_DEPTH, "levels");
	return 0;
}

/*
 * Read the whole event stream once, building nothing, and refuse a syntax
 * error or a file over the limits of scenario_impl.h at the event that
 * shows it.  libyaml then has nothing left to refuse but memory, and no
 * input reaches its quadratic paths with a large n.
 */
static int scan_events(const char *name, const char *buf, size_t len,
		       char *err, size_t errlen)
{
	yaml_parser_t parser;
	yaml_event_t ev;
	int depth = 0, anchors = 0, rc = 0;
	long nodes = 0;
	bool end = false;

	if (!yaml_parser_initialize(&parser)) {
		snprintf(err, errlen, "%s: out of memory reading the suite", name);
		return FC_NOMEM;
	}
	yaml_parser_set_input_string(&parser, (const unsigned char *)buf, len);
	while (!rc && !end) {
		if (!yaml_parser_parse(&parser, &ev)) {
			rc = syntax_error(&parser, name, buf, len, err, errlen);
			break;
		}
		end = ev.type == YAML_STREAM_END_EVENT;
		rc = event_check(name, &ev, &depth, &nodes, &anchors, err, errlen);
		yaml_event_delete(&ev);
	}
	yaml_parser_delete(&parser);
	return rc;
}

/* Load the single document of buf into doc.  0, or an error with err set. */
static int load_document(const char *name, const char *buf, size_t len,
			 yaml_document_t *doc, char *err, size_t errlen)
{
	yaml_parser_t parser;
	yaml_document_t extra;
	yaml_node_t *root;
	int rc = scan_events(name, buf, len, err, errlen);

	if (rc < 0)
		return rc;
	if (!yaml_parser_initialize(&parser)) {
		snprintf(err, errlen, "%s: out of memory reading the suite", name);
		return FC_NOMEM;
	}
	yaml_parser_set_input_string(&parser, (const unsigned char *)buf, len);
	if (!yaml_parser_load(&parser, doc)) {
		rc = syntax_error(&parser, name, buf, len, err, errlen);
		yaml_parser_delete(&parser);
		return rc;
	}
	if (!yaml_document_get_root_node(doc)) {
		snprintf(err, errlen, "%s:1:1: suite is empty", name);
		rc = FC_USAGE;
	} else if (!yaml_parser_load(&parser, &extra)) {
		rc = syntax_error(&parser, name, buf, len, err, errlen);
	} else {
		root = yaml_document_get_root_node(&extra);
		if (root) {
			snprintf(err, errlen,
				 "%s:%zu:%zu: a suite file holds one YAML document, found another",
				 name, root->start_mark.line + 1,
				 root->start_mark.column + 1);
			rc = FC_USAGE;
		}
		yaml_document_delete(&extra);
	}
	if (rc < 0)
		yaml_document_delete(doc);
	yaml_parser_delete(&parser);
	return rc;
}

int suite_load_buffer(const char *name, const char *buf, size_t len,
		      struct suite **out, char *err, size_t errlen)
{
	yaml_document_t doc;
	struct yctx c = {
		.doc = &doc, .file = name, .err = err, .errlen = errlen,
		.budget = SUITE_VISIT_BUDGET,
	};
	struct suite *s;
	int rc;

	*out = NULL;
	if (len > SUITE_MAX_BYTES) {
		snprintf(err, errlen, "%s:1:1: suite is larger than 1 MiB (%zu "
			 "bytes, at most %d)", name, len, SUITE_MAX_BYTES);
		return FC_USAGE;
	}
	rc = load_document(name, buf, len, &doc, err, errlen);
	if (rc < 0)
		return rc;
	s = calloc(1, sizeof(*s));
	if (!s || !(s->path = strdup(name))) {
		free(s);
		yaml_document_delete(&doc);
		snprintf(err, errlen, "%s: out of memory reading the suite", name);
		return FC_NOMEM;
	}
	set_defaults(s);
	c.suite = s;
	rc = parse_suite(&c, yaml_document_get_root_node(&doc), s);
	yaml_document_delete(&doc);
	if (rc < 0 || c.failed) {
		suite_free(s);
		return rc < 0 ? rc : FC_USAGE;
	}
	identity_buffer_digest(buf, len, s->digest);
	*out = s;
	return 0;
}

int suite_load(const char *path, struct suite **out, char *err, size_t errlen)
{
	struct stat st;
	char *buf;
	size_t got = 0;
	int fd, rc;

	*out = NULL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0) {
		snprintf(err, errlen, "cannot read suite '%s': %s", path,
			 strerror(errno));
		if (fd >= 0)
			close(fd);
		return FC_IO;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "cannot read suite '%s': not a regular file",
			 path);
		close(fd);
		return FC_IO;
	}
	if (st.st_size > SUITE_MAX_BYTES) {
		/* refused before a byte is read */
		snprintf(err, errlen, "%s:1:1: suite is larger than 1 MiB (%lld "
			 "bytes, at most %d)", path, (long long)st.st_size,
			 SUITE_MAX_BYTES);
		close(fd);
		return FC_USAGE;
	}
	buf = malloc((size_t)st.st_size + 1);
	if (!buf) {
		close(fd);
		snprintf(err, errlen, "cannot read suite '%s': out of memory", path);
		return FC_NOMEM;
	}
	while (got < (size_t)st.st_size) {
		ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			snprintf(err, errlen, "cannot read suite '%s': %s", path,
				 n < 0 ? strerror(errno) : "file shrank while reading");
			free(buf);
			close(fd);
			return FC_IO;
		}
		got += (size_t)n;
	}
	close(fd);
	rc = suite_load_buffer(path, buf, got, out, err, errlen);
	free(buf);
	return rc;
}
