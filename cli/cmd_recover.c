/*
 * cmd_recover.c -- `fencecert recover`: look at a stopped operation, learn
 * which actions are safe, and take one, audited.
 *
 *   inspect  entry, lease, history and the fence's probe      (read-only)
 *   plan     which actions are safe now and why               (read-only)
 *   apply    one action, as a CAS on --expect-version, audited
 *   list     operations that stopped or went stale            (read-only)
 *
 * This file is the command line only: options, help, and one call of the
 * recovery tool (recover/recover_tool.h) per subcommand, whose exit status
 * it returns.  What is gathered, decided, printed and written is recover/'s.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cli.h"
#include "journal/states.h"
#include "recover/recover.h"
#include "recover/recover_tool.h"

/* The options, as bits: which a subcommand accepts, requires, was given. */
enum recover_opt {
	O_JOURNAL = 1u << 0,
	O_TARGET = 1u << 1,
	O_OP = 1u << 2,
	O_JSON = 1u << 3,
	O_ACTION = 1u << 4,
	O_EXPECT = 1u << 5,
	O_ACTOR = 1u << 6,
	O_REASON = 1u << 7,
	O_FORCE = 1u << 8,
	O_STATE = 1u << 9,
	O_STALE = 1u << 10,
};

struct recover_args {
	unsigned seen; /* enum recover_opt bits given on the command line */
	struct recover_request r;
};

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

/* ---- the command line ------------------------------------------------- */

struct subcommand {
	const char *name;
	int (*run)(const struct recover_request *r);
	unsigned accepts, requires;
	const char *synopsis, *about;
};

static const struct subcommand subcommands[] = {
	{ "inspect", recover_inspect, O_JOURNAL | O_TARGET | O_OP | O_JSON, O_OP,
	  "inspect --journal URL --target URL --op ID [--json]",
	  "Show the journal entry, its lease (owner, epoch, expiry), its\n"
	  "history and the fence's probe of the target.  Writes nothing.\n" },
	{ "plan", recover_plan, O_JOURNAL | O_TARGET | O_OP | O_JSON, O_OP,
	  "plan    --journal URL --target URL --op ID [--json]",
	  "Say which recovery actions are safe now and why: safe (the fence\n"
	  "proves it), force-only (nothing provable), wait (a lease runs),\n"
	  "refused, not-applicable.  Writes nothing; prints the apply\n"
	  "command to run.\n" },
	{ "apply", recover_apply, O_JOURNAL | O_TARGET | O_OP | O_JSON |
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
	{ "list", recover_list, O_JOURNAL | O_JSON | O_STATE | O_STALE, 0,
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
	case 'j': a->r.journal_url = v; break;
	case 't': a->r.target_url = v; break;
	case 'o': a->r.op = v; break;
	case 'w': a->r.actor = v; break;
	case 'r': a->r.reason = v; break;
	case 'J': a->r.json = true; break;
	case 'F': a->r.force = true; break;
	case 'a': ok = !recover_action_parse(v, &a->r.action); break;
	case 'v': ok = !cli_parse_ll(v, &a->r.expect) && a->r.expect > 0;
		break;
	case 's': ok = !state_set_parse(v, &a->r.states); break;
	case 'S': ok = !cli_parse_duration(v, &a->r.stale_ms); break;
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
	struct recover_request *r = &a->r;

	if (!r->journal_url)
		r->journal_url = getenv("FENCECERT_JOURNAL");
	if (!r->journal_url || !*r->journal_url)
		return cli_usage(cmd, "missing --journal URL (or "
				 "FENCECERT_JOURNAL)");
	if (sc->accepts & O_TARGET) {
		if (!r->target_url)
			r->target_url = getenv("FENCECERT_TARGET");
		if (!r->target_url || !*r->target_url)
			return cli_usage(cmd, "missing --target URL (or "
					 "FENCECERT_TARGET)");
	}
	for (size_t i = 0; i < sizeof(required_names) /
			   sizeof(required_names[0]); i++)
		if ((sc->requires & required_names[i].flag) &&
		    !(a->seen & required_names[i].flag))
			return cli_usage(cmd, "missing %s",
					 required_names[i].text);
	if ((a->seen & O_ACTOR) && recover_text_blank(r->actor))
		return cli_usage(cmd, "--actor must name someone, not be empty "
				 "or only white space");
	if ((a->seen & O_REASON) && recover_text_blank(r->reason))
		return cli_usage(cmd, "--reason must say why, not be empty or "
				 "only white space");
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
	struct recover_args a = {
		.r.stale_ms = RECOVER_STALE_AFTER_DEFAULT_MS,
	};
	char cmd[32];
	int rc;

	if ((rc = cli_help_or_dispatch(argc, argv, list_subcommands)) != CLI_DISPATCH)
		return rc;
	if (!(sc = find_subcommand(argv[1]))) {
		fprintf(stderr, "fencecert: USAGE: unknown recover subcommand "
			"'%s'\n", argv[1]);
		list_subcommands(stderr);
		return CLI_EXIT_USAGE;
	}
	snprintf(cmd, sizeof(cmd), "recover %s", sc->name);
	rc = parse(sc, cmd, argc - 1, argv + 1, &a);
	if (rc)
		return rc < 0 ? 0 : rc;
	return sc->run(&a.r);
}
