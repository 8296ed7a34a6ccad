/*
 * main.c -- git-style subcommand dispatch for the fencecert binary.
 */
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <sqlite3.h>

#include "cli/commands.h"
#include "common/sqlite_setup.h"
#include "routes/fork_server.h"
#include "common/cli.h"
#include "reports/sign.h"

static const struct command {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *summary;
} commands[] = {
	{ "id", cmd_id, "derive operation_id and intent_digest from fields" },
	{ "journal", cmd_journal, "create, read and move journal entries" },
	{ "route", cmd_route, "run one attempt of a route (SPEC section 7)" },
	{ "certify", cmd_certify, "run a certification suite and give verdicts" },
	{ "gate", cmd_gate, "check a signed report against release requirements" },
	{ "merge", cmd_merge, "combine shard reports into one" },
	{ "recover", cmd_recover, "inspect and resolve stopped operations" },
	{ "target", cmd_target, "observe a target: rows, fences, probe" },
	{ "report", cmd_report, "render a report.json as JUnit, Markdown, HTML" },
	{ NULL, NULL, NULL },
};

/*
 * One-time work of a fork server (docs/fork-server.md), paid once per
 * harness worker instead of once per attempt.  Nothing here may depend on
 * an attempt, start a thread, open a connection or draw random bytes (the
 * children would share the generator's state).
 */
static void warm_up(void)
{
	fc_sqlite_setup(); /* the route's settings, before initialising */
	if (sqlite3_initialize() != SQLITE_OK) {
		/* each attempt tries again and reports it */
	}
}

static void usage(FILE *to)
{
	fprintf(to, "usage: fencecert [--version] [--help] COMMAND [ARGS]\n\n"
		    "commands:\n");
	for (const struct command *c = commands; c->name; c++)
		fprintf(to, "  %-9s %s\n", c->name, c->summary);
	fprintf(to, "\nrun 'fencecert COMMAND --help' for a command's options\n");
}

int main(int argc, char **argv)
{
	int rc;

	/* root: non-dumpable before anything runs (docs/security.md): no
	 * process of a route -- not even one left uid 0 where no sandbox
	 * could be made -- can ptrace this one or reach its memory,
	 * environment or fds through /proc; the harness's processes inherit
	 * it (a fork keeps it, what they exec gets its own).  Not root, it
	 * would keep an attempt's init from writing its own id maps (the
	 * files of a non-dumpable process belong to root): the supervisor
	 * sets it where no namespace is made (supervisor_containment()) */
	if (geteuid() == 0)
		prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	/* the signing key leaves the environment before anything runs: no
	 * child gets it, and /proc/PID/environ shows zeros in its place */
	if (sign_key_take()) {
		fprintf(stderr, "fencecert: out of memory\n");
		return 1;
	}
	/*
	 * A certification execs `fencecert route` once per attempt, so what
	 * libcrypto does at start and exit is paid thousands of times: skip
	 * reading openssl.cnf, loading its error strings and its atexit
	 * cleanup; fencecert needs only SHA-256, HMAC and random bytes.
	 */
	OPENSSL_init_crypto(OPENSSL_INIT_NO_LOAD_CONFIG |
			    OPENSSL_INIT_NO_LOAD_CRYPTO_STRINGS |
			    OPENSSL_INIT_NO_ATEXIT, NULL);
	/* returns at once unless started as a fork server; then returns in
	 * each attempt it spawns, with that attempt's argv */
	fork_server_serve(&argc, &argv, warm_up);
	if ((rc = cli_help_or_dispatch(argc, argv, usage)) != CLI_DISPATCH)
		return rc;
	if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "version") == 0) {
		printf("fencecert %s (%s)\n", fencecert_version, fencecert_git_rev);
		return 0;
	}
	for (const struct command *c = commands; c->name; c++)
		if (strcmp(argv[1], c->name) == 0)
			return c->run(argc - 1, argv + 1);
	fprintf(stderr, "fencecert: USAGE: unknown command '%s'\n", argv[1]);
	usage(stderr);
	return CLI_EXIT_USAGE;
}
