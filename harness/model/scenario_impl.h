/*
 * scenario_impl.h -- what the files of the suite loader share: the YAML
 * walking context and its typed accessors (scenario_yaml.c), the loader's
 * limits, and two entry points between its files.
 *
 * Who includes it: the loader's files only -- scenario.c (the file, the
 * suite header, services, proxies, routes, workload, orchestrator),
 * scenario_faults.c (the `scenarios:` list), scenario_yaml.c (node
 * access), scenario_template.c (the env-name rule and the output limit),
 * scenario_sql.c (observe.sql) and suite.c (to free the string vectors the
 * accessors build).  Inside the loader calls point one way: scenario.c ->
 * scenario_faults.c -> schedule.c, scenario_template.c, suite.c, fault.c,
 * and scenario.c -> scenario_sql.c; every file may use scenario_yaml.c,
 * which calls none of them.
 *
 * Before any tree is built, the loader reads libyaml's event stream once
 * (yaml_parser_parse) and refuses a file deeper than SUITE_MAX_DEPTH, with
 * more than SUITE_MAX_NODES nodes or more than SUITE_MAX_ANCHORS anchors,
 * at the node that crosses the limit: libyaml's scanner costs time
 * quadratic in the nesting depth and its loader quadratic in the anchors,
 * so the limits have to act while the stream is read, not on the tree.
 * Only then does it build the document (yaml_parser_load) and walk it
 * guided by the schema, never by the shape of the document, so recursion
 * depth is the schema's depth.  Every node it touches is charged to
 * `budget`: anchors and aliases are allowed, but an alias bomb runs the
 * budget out and becomes an ordinary error instead of a long walk.
 */
#ifndef FENCECERT_SCENARIO_IMPL_H
#define FENCECERT_SCENARIO_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <yaml.h>

#include "harness/model/scenario.h"

#define SUITE_MAX_BYTES (1 << 20)     /* a suite is a hand-written file */
#define SUITE_MAX_NODES 100000        /* nodes in the file (aliases count) */
#define SUITE_MAX_DEPTH 64            /* nested lists and mappings */
#define SUITE_MAX_ANCHORS 256         /* libyaml looks anchors up one by one */
#define SUITE_VISIT_BUDGET 1000000    /* node visits, aliases included */
#define SUITE_MAX_ROUTES 64
#define SUITE_MAX_SERVICES 8
#define SUITE_MAX_PROXIES 8
#define SUITE_MAX_SCENARIOS 4096
#define SCENARIO_MAX_FAULTS 32        /* and the schedule string must fit */
#define ARGV_MAX 256                  /* command and observe.command entries */
#define ENV_MAX 64                    /* route env entries */
#define EXPLORE_MAX_FAILPOINTS 256
#define TEMPLATE_MAX_OUTPUT 65536     /* an expanded template */

struct yctx {
	yaml_document_t *doc;
	const char *file;     /* name used in messages */
	char *err;
	size_t errlen;
	long budget;          /* node visits left */
	bool failed;          /* err holds the first error */
	const struct suite *suite; /* being built: its services are known
				      before routes and scenarios */
};

/* Record "FILE:LINE:COLUMN: message" for node (or 1:1 when node is NULL)
 * unless an error is already recorded; returns FC_USAGE. */
int scenario__error(struct yctx *c, const yaml_node_t *node,
		    const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* The node with this id, charged to the budget; NULL (with an error) when
 * the budget is spent. */
yaml_node_t *scenario__node(struct yctx *c, int id);

/* A short noun for error messages: "a mapping", "a list", "null", ... */
const char *scenario__kind(const yaml_node_t *n);

/*
 * Check that n is a mapping whose keys are strings (plain or quoted) drawn
 * from `allowed` (NULL-terminated), none given twice.  `what` names the context
 * in messages ("route", "fault").
 */
int scenario__map_check(struct yctx *c, yaml_node_t *n,
			const char *const *allowed, const char *what)
	FC_MUST_CHECK;

/* The value of key in a checked mapping, or NULL when absent.  With
 * keynode, also its key node (for "both X and Y" errors). */
yaml_node_t *scenario__map_get(struct yctx *c, yaml_node_t *map,
			       const char *key, yaml_node_t **keynode);

/* Like scenario__map_get, but a missing key is an error naming `what`. */
int scenario__map_need(struct yctx *c, yaml_node_t *map, const char *key,
		       const char *what, yaml_node_t **out)
	FC_MUST_CHECK;

/* Typed scalars.  `key` names the value in messages. */
int scenario__get_str(struct yctx *c, yaml_node_t *n, const char *key,
		      const char **out)
	FC_MUST_CHECK;
int scenario__get_strbuf(struct yctx *c, yaml_node_t *n, const char *key,
			 char *buf, size_t size)
	FC_MUST_CHECK;
int scenario__get_strdup(struct yctx *c, yaml_node_t *n, const char *key,
			 char **out)
	FC_MUST_CHECK;
int scenario__get_int(struct yctx *c, yaml_node_t *n, const char *key,
		      long long min, long long max, int *out)
	FC_MUST_CHECK;
int scenario__get_u64(struct yctx *c, yaml_node_t *n, const char *key,
		      uint64_t *out)
	FC_MUST_CHECK;
int scenario__get_bool(struct yctx *c, yaml_node_t *n, const char *key,
		       bool *out)
	FC_MUST_CHECK;

/* A list of strings into a NULL-terminated heap argv (min_items..max_items
 * entries).  Each entry is checked with `check` when it is not NULL. */
int scenario__get_strv(struct yctx *c, yaml_node_t *n, const char *key,
		       size_t min_items, size_t max_items,
		       int (*check)(struct yctx *, yaml_node_t *, const char *),
		       char ***out)
	FC_MUST_CHECK;

/* Free a NULL-terminated string vector (NULL is a no-op). */
void scenario__strv_free(char **v);

/* A suite, route, scenario, service or proxy name:
 * [A-Za-z0-9][A-Za-z0-9._-]*, shorter than SCENARIO_NAME_MAX; checked and
 * copied into buf. */
int scenario__get_name(struct yctx *c, yaml_node_t *n, const char *key,
		       char buf[SCENARIO_NAME_MAX])
	FC_MUST_CHECK;

/* NAME of {env:NAME} (and of a route's env key, a service's env, a table):
 * [A-Za-z_][A-Za-z0-9_]* (scenario_template.c). */
bool scenario__env_name_valid(const char *s, size_t len);

/* A route's observe.sql: one statement that reads (scenario_sql.c states
 * what is checked without the target).  0, FC_USAGE with msg saying why,
 * or FC_NOMEM. */
int scenario__observe_sql_check(const char *sql, char *msg, size_t msglen)
	FC_MUST_CHECK;

/* One of the suite's lists of named entries: routes, services, proxies,
 * scenarios. */
struct scenario__list {
	const char *key;         /* "routes": the suite key, in messages */
	const char *noun;        /* "route": in the duplicate-name message */
	size_t min, max;         /* entries allowed; min is 0 or 1 */
	size_t size;             /* bytes of one entry */
	size_t name_at, line_at; /* offsetof() its char name[] and int line */
	int (*parse)(struct yctx *c, yaml_node_t *n, void *entry,
		     const struct suite *s);
};

/*
 * The list at node `list` as l describes it, into a calloc'd array of
 * entries (*entries); *n counts the entries begun, so suite_free()
 * releases a half-built one.  Names must be unique within the list.
 */
int scenario__parse_list(struct yctx *c, yaml_node_t *list,
			 const struct scenario__list *l, const struct suite *s,
			 void **entries, size_t *n)
	FC_MUST_CHECK;

/* The `scenarios:` list (scenario_faults.c).  Needs s->workload,
 * s->orchestrator, s->services and s->proxies already parsed: faults are
 * checked against them. */
int scenario__parse_scenarios(struct yctx *c, yaml_node_t *list,
			      struct suite *s)
	FC_MUST_CHECK;

#endif
