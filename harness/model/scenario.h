/*
 * scenario.h -- the certification suite model: what a suite YAML file says,
 * after parsing and validation.  See docs/scenario-format.md for the file
 * format.
 *
 * A suite names routes (the programs to certify), one workload (generated
 * deterministically from a seed), an orchestrator policy (Airflow-like) and
 * scenarios.  A scenario is either a fixed list of faults or an exploration
 * request that explore.c expands into many schedules.  A schedule is one
 * concrete, reproducible list of faults (struct fault) and has a compact
 * string form (schedule.h).
 *
 * Owns: the suite's types and the functions below, grouped by the file
 * that implements them: loading (scenario.c and its helpers, behind
 * scenario_impl.h), the loaded suite (suite.c), templates
 * (scenario_template.c).  The faults themselves and their names are
 * fault.h's, included here.  Verdicts are not the model's: the checker's
 * verdict module (harness/check/verdict.h) owns them.
 *
 * Who includes it: anything in harness/ at or above harness/model, and
 * cli/ (ci/check-layers); never reports/, which reads what the harness
 * wrote, not the suite.
 *
 * Ownership: suite_load() returns one heap object; suite_free() releases it
 * and everything inside.  Strings inside are owned by the suite.
 */
#ifndef FENCECERT_SCENARIO_H
#define FENCECERT_SCENARIO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "harness/model/fault.h"

struct explore_spec {
	bool failpoints_all;     /* failpoints: all */
	char **failpoints;       /* or an explicit list (NULL-terminated) */
	unsigned actions;        /* FAULT_BIT(FAULT_KILL) | ... (kill/pause/fail) */
	bool interleavings;      /* two-worker pause/run interleavings */
	int random_schedules;    /* random: {schedules: N, seed: S}; 0 = none */
	uint64_t random_seed;
	int max_faults;          /* random: faults per schedule (default 3) */
	/* syscalls: [...] -- a syscall-fault exploration instead (then the
	 * fields above are unused): discovery counts the calls of op 1 try 1
	 * per (syscall, glob of `paths`), then each occurrence x action is
	 * one schedule.  NULL-terminated; sys_actions are rule actions
	 * ("kill_before", "kill_after", "errno:EIO"). */
	char **syscalls;
	char **sys_actions;
	char **sys_paths;        /* "{dir}/..." (every file) when not given */
	/* proxy: NAME -- a proxy-commit exploration instead: discovery counts
	 * the COMMITs the suite proxy NAME relays in op 1 try 1, then each
	 * COMMIT x action is one schedule.  "" = none; proxy_actions is a
	 * FAULT_BIT set of FAULT_CUT_AFTER_COMMIT, FAULT_HOLD_COMMIT. */
	char proxy[SCENARIO_NAME_MAX];
	unsigned proxy_actions;
};

struct scenario {
	char name[SCENARIO_NAME_MAX];
	struct fault *faults;    /* fixed schedule; may be empty */
	size_t nfaults;
	struct explore_spec *explore; /* NULL for a fixed schedule */
	int operations;          /* override of workload.operations; 0 = suite's */
	char **routes;           /* routes it applies to (NULL-terminated);
				  * NULL = every route of the suite */
	int line, column;
};

/* What a route is expected to get (`expect:`); EXPECT_CERTIFIED accepts
 * either certified-* verdict (the default).  The checker's verdict module
 * (harness/check/verdict.h, verdict_meets()) says which verdict meets
 * which expectation, by these names. */
enum expectation {
	EXPECT_CERTIFIED,
	EXPECT_CERTIFIED_AUTOMATIC,
	EXPECT_CERTIFIED_FAIL_CLOSED,
	EXPECT_REJECTED,
};

struct route_spec {
	char name[SCENARIO_NAME_MAX];
	char **command;          /* argv, NULL-terminated; templates expanded later */
	char *journal;           /* URL template, e.g. "sqlite:{dir}/journal.db" */
	bool no_journal;         /* `journal: none`: the route keeps no journal;
				    attempts get no FENCECERT_JOURNAL */
	char *target;            /* URL template */
	char *observe_sql;       /* observe.sql, or NULL */
	char **observe_command;  /* observe.command argv, or NULL */
	char **env;              /* extra "NAME=value" entries, NULL-terminated */
	enum expectation expect;
	bool fork_server;        /* start attempts through the program's fork
				    server (docs/fork-server.md) */
	char **writable;         /* `writable:`: absolute paths the sandboxed
				    route may write besides its schedule dir
				    (NULL-terminated), or NULL */
	int line, column;
};

enum service_kind { SERVICE_ETCD, SERVICE_POSTGRESQL };

/* A server the harness starts before the first schedule (services.h). */
struct service_spec {
	char name[SCENARIO_NAME_MAX];
	enum service_kind kind;
	int members;             /* etcd: 1 or 3 (m1, m2, m3) */
	char env[128];           /* postgresql: use $env when set; "" = never */
	int line, column;
};

/* A fault proxy (tcp_proxy.h) each schedule starts in front of upstream;
 * templates name it {proxy:NAME}. */
struct proxy_spec {
	char name[SCENARIO_NAME_MAX];
	char *upstream;          /* template: "HOST:PORT" or a URL */
	int line, column;
};

struct workload_spec {
	int operations;          /* number of operations (mapped partitions) */
	int rows_per_operation;
	uint64_t seed;
	char strategy[16];       /* "append" (default) or "replace" */
	char table[64];          /* default "events" */
};

struct orchestrator_spec {
	int retries;             /* Airflow retries: tries = retries + 1 */
	int zombie_delay_ms;     /* before a new try starts beside a paused one */
	int attempt_timeout_ms;  /* a hung attempt is killed after this */
	int lease_ttl_ms;        /* passed to routes as FENCECERT_LEASE_TTL_MS */
};

struct suite {
	int version;             /* 1 */
	char name[SCENARIO_NAME_MAX];
	char *path;              /* the file it was loaded from */
	char digest[80];         /* "sha256:..." of the file's bytes */
	struct route_spec *routes;
	size_t nroutes;
	struct service_spec *services;
	size_t nservices;
	struct proxy_spec *proxies;
	size_t nproxies;
	struct workload_spec workload;
	struct orchestrator_spec orchestrator;
	struct scenario *scenarios;
	size_t nscenarios;
};

/* ---- loading (scenario.c, scenario_faults.c, scenario_yaml.c) ---- */

/*
 * Parse and validate a suite file.  On error returns FC_USAGE (bad content)
 * or FC_IO (unreadable) with err = "FILE:LINE:COLUMN: message" (1-based line
 * and column of the offending node), and *out = NULL.
 */
int suite_load(const char *path, struct suite **out, char *err, size_t errlen)
	FC_MUST_CHECK;

/* The same, from a buffer; `name` is used in messages (fuzzing, tests). */
int suite_load_buffer(const char *name, const char *buf, size_t len,
		      struct suite **out, char *err, size_t errlen) FC_MUST_CHECK;

/* "certified", "certified-automatic", ...: the words of `expect:`. */
const char *expectation_name(enum expectation e);

/* ---- the loaded suite (suite.c) ------------------------------------ */

void suite_free(struct suite *s); /* NULL is a no-op */

/* The suite's service named `name` ("" or NULL: its only etcd service),
 * or NULL. */
const struct service_spec *suite_service(const struct suite *s,
					 const char *name);

/* The suite's proxy named `name`, or NULL. */
const struct proxy_spec *suite_proxy(const struct suite *s, const char *name);

/* Whether scenario sc runs against the route named `route` (its `routes:`
 * list, or every route when it has none). */
bool scenario_applies_to(const struct scenario *sc, const char *route);

/* ---- templates (scenario_template.c) ------------------------------- */

/* What a template's placeholders become for one schedule. */
struct template_vars {
	const char *dir;          /* {dir}: the schedule's scratch dir */
	const char *schedule_id;  /* {schedule_id}; NULL: none here */
	/* {service:NAME}: the running service's address, NULL if none */
	const char *(*service)(const void *ctx, const char *name);
	const void *service_ctx;
	/* {proxy:NAME}: the running proxy's URL, NULL if none */
	const char *(*proxy)(const void *ctx, const char *name);
	const void *proxy_ctx;
};

/*
 * Expand "{dir}", "{schedule_id}", "{service:NAME}", "{proxy:NAME}" and
 * "{env:NAME}" in a template into out (heap, caller frees).  A placeholder
 * without a value here (an unset environment variable, a service not
 * running) is FC_USAGE with a message.
 */
int scenario_expand(const char *tmpl, const struct template_vars *v,
		    char **out, char *err, size_t errlen) FC_MUST_CHECK;

/*
 * Check a template without expanding it: its syntax, and {service:NAME} /
 * {proxy:NAME} against s's services and proxies when s is not NULL
 * ({env:NAME} is looked up only when expanding).  0, or FC_USAGE with a
 * message naming the placeholder.
 */
int scenario_template_check(const struct suite *s, const char *tmpl,
			    char *err, size_t errlen) FC_MUST_CHECK;

#endif
