/*
 * recover_cli.c -- `fencecert recover`: look at a stopped operation, learn
 * which actions are safe, and take one, audited.
 *
 *   inspect  entry, lease, history and the fence's probe      (read-only)
 *   plan     which actions are safe now and why               (read-only)
 *   apply    one action, as a CAS on --expect-version, audited
 *            (recover_apply.c)
 *   list     operations that stopped or went stale            (read-only)
 *
 * The decision is recover.c's (no I/O there); the facts are gathered by
 * recover_facts.c.  This file holds the options, the read-only
 * subcommands and their output.  inspect, plan and list never write
 * (recover_facts.c says how).
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "journal/journal_json.h"
#include "common/cli.h"
#include "recover/recover_impl.h"

#define DEFAULT_STALE_MS (15LL * 60 * 1000)

static const char exit_codes[] =
	"exit status: 0 ok, 1 other error, 2 NOT_FOUND, 4 the plan refuses the\n"
	"  action (ILLEGAL_TRANSITION), 7 LEASE_HELD (wait for the lease),\n"
	"  8 RECOVERY_CONFLICT (the operation changed: plan again), 64 USAGE,\n"
	"  69 JOURNAL_UNAVAILABLE / FENCE_UNAVAILABLE\n";

/* The help line of each option, by flag. */
static const struct {
	unsigned flag;
	const char *text;
} opt_help[] = {
	{ O_JOURNAL, "  --journal URL       journal (default "
		     "$FENCECERT_JOURNAL)\n" },
	{ O_TARGET, "  --target URL        target whose fence is probed "
		    "(default\n                      $FENCECERT_TARGET)\n" },
	{ O_OP, "  --op ID             operation id\n" },
	{ O_ACTION, "  --action ACTION     what to do (see 'plan')\n" },
	{ O_EXPECT, "  --expect-version N  the version 'plan' showed\n" },
	{ O_ACTOR, "  --actor NAME        who acts (recorded)\n" },
	{ O_REASON, "  --reason TEXT       why (recorded)\n" },
	{ O_FORCE, "  --force             act without proof from the fence "
		   "(recorded)\n" },
	{ O_STATE, "  --state LIST        only these states\n" },
	{ O_STALE, "  --stale-after DUR   idle time before an entry counts as "
		   "stopped\n"
		   "                      (default 15m; e.g. 30s, 2h, 7d)\n" },
	{ O_JSON, "  --json              JSON on stdout instead of text\n" },
};

/* ---- inspect ---------------------------------------------------------- */

static json_t *history_json(struct journal_transition *h, size_t n)
{
	json_t *arr = json_array();

	for (size_t i = 0; arr && i < n; i++) {
		if (json_array_append_new(arr,
					  journal_transition_to_json(&h[i]))) {
			json_decref(arr);
			return NULL;
		}
	}
	return arr;
}

static void print_history(const struct journal_transition *h, size_t n)
{
	char t[40];

	printf("history\n");
	for (size_t i = 0; i < n; i++) {
		char from_to[64];

		snprintf(from_to, sizeof(from_to), "%s -> %s",
			 state_name(h[i].from), state_name(h[i].to));
		printf("  v%-3lld %-40s epoch %-3lld %s  %s\n", h[i].version,
		       from_to, h[i].epoch,
		       recover__fmt_time(h[i].at, t, sizeof(t)), h[i].evidence);
	}
}

static int run_inspect(struct recover_ctx *c)
{
	struct journal_transition *h;
	size_t n;
	int rc;

	if ((rc = recover__gather(c)))
		return rc;
	rc = journal_history(c->j, c->a->op, &h, &n);
	if (rc)
		return cli_fail(rc, "%s", journal_errmsg(c->j));
	if (c->a->seen & O_JSON) {
		rc = recover__print_json(json_pack(
			"{s:s, s:s, s:o, s:o, s:o, s:o}",
			"journal", c->journal_shown, "target", c->target_shown,
			"entry", journal_entry_to_json(&c->e),
			"lease", recover__lease_json(&c->e, c->now),
			"history", history_json(h, n),
			"fence", recover__fence_json(c)));
		free(h);
		return rc;
	}
	recover__print_entry_head(c);
	printf("meta       %s\n", c->e.meta);
	recover__print_lease_line(c);
	recover__print_fence_line(c);
	print_history(h, n);
	free(h);
	return recover__flush_text();
}

/* ---- plan ------------------------------------------------------------- */

/* The first action a person should take, if any: a safe one, else a
 * forceable one. */
static int suggested(const struct recover_plan *plan, bool *force)
{
	for (int pass = 0; pass < 2; pass++)
		for (int a = 0; a < RECOVER_ACTION_COUNT; a++)
			if (plan->options[a].verdict ==
			    (pass ? RECOVER_FORCE_ONLY : RECOVER_SAFE)) {
				*force = pass;
				return a;
			}
	return -1;
}

static char *next_command(const struct recover_ctx *c,
			  const struct recover_plan *plan)
{
	bool force = false;
	int a = suggested(plan, &force);
	char *cmd;

	if (a < 0)
		return NULL;
	if (asprintf(&cmd, "fencecert recover apply --journal '%s' --target "
		     "'%s' --op %s --action %s --expect-version %lld --actor "
		     "NAME --reason TEXT%s", c->journal_shown, c->target_shown,
		     c->e.operation_id, recover_action_name(a), c->e.version,
		     force ? " --force" : "") < 0)
		return NULL;
	return cmd;
}

static json_t *plan_json(const struct recover_ctx *c,
			 const struct recover_plan *plan)
{
	json_t *opts = json_array();
	char *cmd = next_command(c, plan);
	json_t *root;

	for (int a = 0; opts && a < RECOVER_ACTION_COUNT; a++) {
		const struct recover_option *o = &plan->options[a];

		if (json_array_append_new(opts, json_pack(
			"{s:s, s:s, s:s, s:b, s:s}",
			"action", recover_action_name(a),
			"verdict", recover_verdict_name(o->verdict),
			"next_state", state_name(o->next),
			"fences_first", o->fences_first, "why", o->why))) {
			json_decref(opts);
			opts = NULL;
		}
	}
	root = json_pack("{s:s, s:s, s:I, s:o, s:o, s:o, s:s, s:o}",
			 "operation_id", c->e.operation_id,
			 "state", state_name(c->e.state),
			 "version", (json_int_t)c->e.version,
			 "lease", recover__lease_json(&c->e, c->now),
			 "fence", recover__fence_json(c),
			 "actions", opts, "summary", plan->summary,
			 "next", recover__str_or_null(cmd));
	free(cmd);
	return root;
}

static void print_plan(const struct recover_ctx *c,
		       const struct recover_plan *plan)
{
	char *cmd = next_command(c, plan);

	recover__print_entry_head(c);
	recover__print_lease_line(c);
	recover__print_fence_line(c);
	printf("\n%s\n\nactions\n", plan->summary);
	for (int a = 0; a < RECOVER_ACTION_COUNT; a++) {
		const struct recover_option *o = &plan->options[a];

		printf("  %-23s %-15s %s\n", recover_action_name(a),
		       recover_verdict_name(o->verdict), o->why);
	}
	if (cmd)
		printf("\nnext\n  %s\n", cmd);
	free(cmd);
}

static int run_plan(struct recover_ctx *c)
{
	struct recover_plan plan;
	int rc;

	if ((rc = recover__gather(c)))
		return rc;
	recover_plan_compute(&c->facts, &plan);
	if (c->a->seen & O_JSON)
		return recover__print_json(plan_json(c, &plan));
	print_plan(c, &plan);
	return recover__flush_text();
}

/* ---- list ------------------------------------------------------------- */

/* Why an entry counts as stopped; NULL when it does not. */
static const char *stopped_why(const struct journal_entry *e, long long now,
			       long long stale_ms)
{
	if (e->state == FC_COMMIT_UNKNOWN)
		return "outcome unknown: needs an operator";
	if (e->state == FC_COMPLETE || now - e->updated_at < stale_ms)
		return NULL;
	return recover__lease_live(e, now) ?
	       "no change for a while, lease running" :
	       "no change for a while, no live lease";
}

static int run_list(struct recover_ctx *c)
{
	const state_set all = STATE_SET_ALL & ~STATE_BIT(FC_COMPLETE);
	struct journal_filter f = {
		.states = c->a->states ? c->a->states : all,
	};
	long long stale = c->a->seen & O_STALE ? c->a->stale_ms :
						 DEFAULT_STALE_MS;
	struct journal_entry *e;
	json_t *arr = json_array();
	size_t n, shown = 0;
	int rc;

	if ((rc = recover__open_journal(c))) {
		json_decref(arr);
		return rc;
	}
	c->now = journal_now_ms();
	rc = journal_list(c->j, &f, &e, &n);
	if (rc) {
		json_decref(arr);
		return cli_fail(rc, "%s", journal_errmsg(c->j));
	}
	if (!(c->a->seen & O_JSON))
		printf("%-20s %-8s %-10s %-26s %s\n", "STATE", "VERSION",
		       "IDLE", "LEASE", "OPERATION");
	for (size_t i = 0; i < n; i++) {
		const char *why = stopped_why(&e[i], c->now, stale);
		char idle[32], lease[JOURNAL_OWNER_MAX + 16];

		if (!why)
			continue;
		shown++;
		recover__fmt_span(c->now - e[i].updated_at, idle, sizeof(idle));
		if (c->a->seen & O_JSON) {
			if (json_array_append_new(arr, json_pack(
				"{s:s, s:s, s:I, s:I, s:I, s:o, s:s}",
				"operation_id", e[i].operation_id,
				"state", state_name(e[i].state),
				"version", (json_int_t)e[i].version,
				"updated_at", (json_int_t)e[i].updated_at,
				"idle_ms", (json_int_t)(c->now - e[i].updated_at),
				"lease", recover__lease_json(&e[i], c->now),
				"why", why)))
				break;
			continue;
		}
		snprintf(lease, sizeof(lease), "%s%s",
			 e[i].lease_owner[0] ? e[i].lease_owner : "-",
			 recover__lease_live(&e[i], c->now) ? " (running)" : "");
		printf("%-20s %-8lld %-10s %-26s %s\n", state_name(e[i].state),
		       e[i].version, idle, lease, e[i].operation_id);
	}
	free(e);
	if (c->a->seen & O_JSON)
		return recover__print_json(arr);
	json_decref(arr);
	printf("%zu stopped operation%s\n", shown, shown == 1 ? "" : "s");
	return recover__flush_text();
}

/* ---- the command line ------------------------------------------------- */

struct subcommand {
	const char *name;
	int (*run)(struct recover_ctx *c);
	unsigned accepts, requires;
	const char *synopsis, *about;
};

static const struct subcommand subcommands[] = {
	{ "inspect", run_inspect, O_JOURNAL | O_TARGET | O_OP | O_JSON, O_OP,
	  "inspect --journal URL --target URL --op ID [--json]",
	  "Show the journal entry, its lease (owner, epoch, expiry), its\n"
	  "history and the fence's probe of the target.  Writes nothing.\n" },
	{ "plan", run_plan, O_JOURNAL | O_TARGET | O_OP | O_JSON, O_OP,
	  "plan    --journal URL --target URL --op ID [--json]",
	  "Say which recovery actions are safe now and why: safe (the fence\n"
	  "proves it), force-only (nothing provable), wait (a lease runs),\n"
	  "refused, not-applicable.  Writes nothing; prints the apply\n"
	  "command to run.\n" },
	{ "apply", recover__run_apply, O_JOURNAL | O_TARGET | O_OP | O_JSON |
	  O_ACTION | O_EXPECT | O_ACTOR | O_REASON | O_FORCE,
	  O_OP | O_ACTION | O_EXPECT | O_ACTOR | O_REASON,
	  "apply   --journal URL --target URL --op ID --action ACTION\n"
	  "--expect-version N --actor NAME --reason TEXT\n"
	  "[--force] [--json]",
	  "Decide again from fresh facts and, when the plan allows it, move\n"
	  "the operation as a CAS on --expect-version with an audit record\n"
	  "as the transition's evidence.  ACTION is mark-committed,\n"
	  "mark-failed-pre-commit, commit-prepared or rollback-prepared.\n"
	  "mark-failed-pre-commit first takes a new lease and prepares the\n"
	  "fence at its epoch, then probes again.  --force allows an action\n"
	  "the fence can neither prove nor disprove; it never overrides a\n"
	  "proof or a running lease.\n" },
	{ "list", run_list, O_JOURNAL | O_JSON | O_STATE | O_STALE, 0,
	  "list    --journal URL [--state STATE[,STATE...]]\n"
	  "[--stale-after DURATION] [--json]",
	  "List stopped operations: every COMMIT_UNKNOWN, and entries in\n"
	  "another state but COMPLETE (or in --state) whose last change is\n"
	  "older than --stale-after (default 15m).\n" },
	{ NULL, NULL, 0, 0, NULL, NULL },
};

static const struct subcommand *find_subcommand(const char *name)
{
	for (const struct subcommand *sc = subcommands; sc->name; sc++)
		if (strcmp(sc->name, name) == 0)
			return sc;
	return NULL;
}

/* The synopsis after `lead`; its continuation lines (after '\n') go under
 * the first option. */
static void print_synopsis(FILE *to, const char *lead, const char *synopsis)
{
	int indent = (int)strlen(lead) + 8; /* "apply   " */
	const char *nl;

	fprintf(to, "%s", lead);
	while ((nl = strchr(synopsis, '\n'))) {
		fprintf(to, "%.*s\n%*s", (int)(nl - synopsis), synopsis, indent,
			"");
		synopsis = nl + 1;
	}
	fprintf(to, "%s\n", synopsis);
}

static void help(const struct subcommand *sc)
{
	print_synopsis(stdout, "usage: fencecert recover ", sc->synopsis);
	printf("\n%s\noptions:\n", sc->about);
	for (size_t i = 0; i < sizeof(opt_help) / sizeof(opt_help[0]); i++)
		if (sc->accepts & opt_help[i].flag)
			fputs(opt_help[i].text, stdout);
	printf("  --help\n\n%s", exit_codes);
}

static void list_subcommands(FILE *to)
{
	fprintf(to, "usage: fencecert recover SUBCOMMAND [OPTIONS]\n\n");
	for (const struct subcommand *sc = subcommands; sc->name; sc++)
		print_synopsis(to, "  fencecert recover ", sc->synopsis);
	fprintf(to, "\nrun 'fencecert recover SUBCOMMAND --help' for details; "
		    "runbook: docs/runbook.md\n\n%s", exit_codes);
}

static int take(const char *cmd, const struct option *lo, const char *v,
		struct recover_args *a)
{
	int opt = lo->val;
	static const unsigned flag_of[128] = {
		['j'] = O_JOURNAL, ['t'] = O_TARGET, ['o'] = O_OP,
		['J'] = O_JSON, ['a'] = O_ACTION, ['v'] = O_EXPECT,
		['w'] = O_ACTOR, ['r'] = O_REASON, ['F'] = O_FORCE,
		['s'] = O_STATE, ['S'] = O_STALE,
	};
	int ok = 1;

	switch (opt) {
	case 'j': a->journal_url = v; break;
	case 't': a->target_url = v; break;
	case 'o': a->op = v; break;
	case 'w': a->actor = v; break;
	case 'r': a->reason = v; break;
	case 'J': case 'F': break;
	case 'a': ok = !recover_action_parse(v, &a->action); break;
	case 'v': ok = !cli_parse_ll(v, &a->expect) && a->expect > 0; break;
	case 's': ok = !state_set_parse(v, &a->states); break;
	case 'S': ok = !cli_parse_duration(v, &a->stale_ms); break;
	}
	if (!ok)
		return cli_usage(cmd, "invalid value '%s' for --%s%s", v,
				 lo->name, opt == 'a' ? " (mark-committed, "
				 "mark-failed-pre-commit, commit-prepared, "
				 "rollback-prepared)" : "");
	a->seen |= flag_of[opt];
	return 0;
}

static const struct option longopts[] = {
	{ "journal", required_argument, NULL, 'j' },
	{ "target", required_argument, NULL, 't' },
	{ "op", required_argument, NULL, 'o' },
	{ "json", no_argument, NULL, 'J' },
	{ "action", required_argument, NULL, 'a' },
	{ "expect-version", required_argument, NULL, 'v' },
	{ "actor", required_argument, NULL, 'w' },
	{ "reason", required_argument, NULL, 'r' },
	{ "force", no_argument, NULL, 'F' },
	{ "state", required_argument, NULL, 's' },
	{ "stale-after", required_argument, NULL, 'S' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

/* Options the subcommand requires, by flag, for the "missing" message. */
static const struct { unsigned flag; const char *text; } required_names[] = {
	{ O_OP, "--op ID" }, { O_ACTION, "--action ACTION" },
	{ O_EXPECT, "--expect-version N" }, { O_ACTOR, "--actor NAME" },
	{ O_REASON, "--reason TEXT" },
};

static int defaults_and_requirements(const struct subcommand *sc,
				     const char *cmd, struct recover_args *a)
{
	if (!a->journal_url)
		a->journal_url = getenv("FENCECERT_JOURNAL");
	if (!a->journal_url || !*a->journal_url)
		return cli_usage(cmd, "missing --journal URL (or "
				 "FENCECERT_JOURNAL)");
	if (sc->accepts & O_TARGET) {
		if (!a->target_url)
			a->target_url = getenv("FENCECERT_TARGET");
		if (!a->target_url || !*a->target_url)
			return cli_usage(cmd, "missing --target URL (or "
					 "FENCECERT_TARGET)");
	}
	for (size_t i = 0; i < sizeof(required_names) /
			   sizeof(required_names[0]); i++)
		if ((sc->requires & required_names[i].flag) &&
		    !(a->seen & required_names[i].flag))
			return cli_usage(cmd, "missing %s",
					 required_names[i].text);
	if ((a->seen & O_ACTOR) && !*a->actor)
		return cli_usage(cmd, "--actor must not be empty");
	if ((a->seen & O_REASON) && !*a->reason)
		return cli_usage(cmd, "--reason must not be empty");
	return 0;
}

static int parse(const struct subcommand *sc, const char *cmd, int argc,
		 char **argv, struct recover_args *a)
{
	int opt, idx, rc;

	optind = 0; /* GNU: full reset */
	opterr = 0;
	while ((opt = getopt_long(argc, argv, "+:h", longopts, &idx)) != -1) {
		if (opt == 'h') {
			help(sc);
			return -1;
		}
		if (opt == ':' || opt == '?')
			return cli_usage(cmd, opt == ':' ? "option '%s' needs "
					 "a value" : "unknown option '%s'",
					 argv[optind - 1]);
		if ((rc = take(cmd, &longopts[idx], optarg, a)))
			return rc;
		if (a->seen & ~sc->accepts)
			return cli_usage(cmd, "option '--%s' is not valid for "
					 "'%s'", longopts[idx].name, cmd);
	}
	if (optind < argc)
		return cli_usage(cmd, "unexpected argument '%s'", argv[optind]);
	return defaults_and_requirements(sc, cmd, a);
}

int cmd_recover(int argc, char **argv)
{
	const struct subcommand *sc;
	struct recover_args a = { 0 };
	struct recover_ctx c;
	char cmd[32];
	int rc;

	if (argc < 2) {
		list_subcommands(stderr);
		return CLI_EXIT_USAGE;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
	    strcmp(argv[1], "help") == 0) {
		list_subcommands(stdout);
		return 0;
	}
	if (!(sc = find_subcommand(argv[1]))) {
		fprintf(stderr, "fencecert: USAGE: unknown recover subcommand "
			"'%s'\n", argv[1]);
		list_subcommands(stderr);
		return CLI_EXIT_USAGE;
	}
	memset(&c, 0, sizeof(c));
	snprintf(cmd, sizeof(cmd), "recover %s", sc->name);
	rc = parse(sc, cmd, argc - 1, argv + 1, &a);
	if (rc)
		return rc < 0 ? 0 : rc;
	c.a = &a;
	rc = sc->run(&c);
	recover__release(&c);
	return rc;
}
