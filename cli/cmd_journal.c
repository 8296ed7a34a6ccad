/*
 * cmd_journal.c -- `fencecert journal SUBCOMMAND`: the journal port on the
 * command line, so routes in any language and operators share one journal.
 *
 * Every subcommand opens the journal named by --journal (or, when absent,
 * $FENCECERT_JOURNAL, which the harness sets for routes), makes one port
 * call and prints the result as JSON on stdout (shapes in journal_json.h
 * and docs/journal.md).  A failure prints "fencecert: FAMILY: message" on
 * stderr, nothing on stdout, and exits with cli_exit_code(); messages come
 * from the journal, which never includes a URL password.
 *
 * The read verbs (get, history, list) open the journal read-only
 * (journal_open_readonly()): they create no file, no schema and switch no
 * pragma, so pointing one at a file that is not a journal -- a typo, the
 * target's database -- is refused with that file left byte for byte as
 * it was.  The other verbs create the journal on first use.
 *
 * Options are parsed by one getopt_long loop for all subcommands; the table
 * of subcommands says which options each accepts and requires, so --help
 * and the checks cannot drift apart.
 */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/clock.h"
#include "cli/commands.h"
#include "common/cli.h"
#include "journal/journal.h"
#include "journal/journal_json.h"

enum opt {
	OPT_JOURNAL = 1u << 0,
	OPT_OP = 1u << 1,
	OPT_INTENT = 1u << 2,
	OPT_META = 1u << 3,
	OPT_OWNER = 1u << 4,
	OPT_TTL = 1u << 5,
	OPT_EXPECT = 1u << 6,
	OPT_TO = 1u << 7,
	OPT_FROM = 1u << 8,
	OPT_EPOCH = 1u << 9,
	OPT_EVIDENCE = 1u << 10,
	OPT_STATE = 1u << 11,
	OPT_OLDER = 1u << 12,
};

/* One row per option: getopt value, flag, name, value name, help line. */
static const struct opt_info {
	int val;
	unsigned flag;
	const char *name;
	const char *arg;
	const char *help;
} opt_infos[] = {
	{ 'j', OPT_JOURNAL, "journal", "URL",
	  "journal URL: sqlite:PATH[?busy_ms=N], postgresql://..., etcd://...\n"
	  "      (default $FENCECERT_JOURNAL)" },
	{ 'o', OPT_OP, "op", "ID",
	  "operation id (e.g. sha256:...)" },
	{ 'i', OPT_INTENT, "intent", "DIGEST",
	  "intent digest of the operation" },
	{ 'm', OPT_META, "meta", "JSON",
	  "JSON object stored with a new entry" },
	{ 'w', OPT_OWNER, "owner", "NAME",
	  "lease owner (printable, no spaces)" },
	{ 't', OPT_TTL, "ttl-ms", "N",
	  "lease duration in milliseconds" },
	{ 'v', OPT_EXPECT, "expect-version", "N",
	  "version the entry must have" },
	{ 'T', OPT_TO, "to", "STATE",
	  "state to move to" },
	{ 'f', OPT_FROM, "from", "STATE[,STATE...]",
	  "states the entry must be in (default: any state that may move\n"
	  "      to --to)" },
	{ 'e', OPT_EPOCH, "epoch", "E",
	  "caller's lease epoch; 0 = no lease check (default 0)" },
	{ 'E', OPT_EVIDENCE, "evidence", "JSON",
	  "JSON object recorded with the transition" },
	{ 's', OPT_STATE, "state", "STATE[,STATE...]",
	  "only entries in these states" },
	{ 'O', OPT_OLDER, "older-than", "DURATION",
	  "age of the last change, e.g. 30d, 12h, 15m, 500ms" },
};

#define OPT_COUNT (sizeof(opt_infos) / sizeof(opt_infos[0]))

struct args {
	unsigned seen;
	const char *url, *op, *intent, *meta, *owner, *evidence;
	long long ttl_ms, expect, epoch, older_ms;
	enum fc_state to;
	state_set from, states;
};

struct subcommand {
	const char *name;
	int (*run)(journal *j, const struct args *a);
	bool read_only;   /* opened with journal_open_readonly() */
	unsigned accepts; /* OPT_JOURNAL is implied */
	unsigned requires;
	const char *about;
};

static const char exit_codes[] =
	"exit status: 0 ok, 1 other error, 2 NOT_FOUND, 3 CAS_CONFLICT,\n"
	"  4 ILLEGAL_TRANSITION, 5 INTENT_CONFLICT, 6 LEASE_LOST,\n"
	"  7 LEASE_HELD, 64 USAGE, 69 JOURNAL_UNAVAILABLE\n";

/* ---- output ------------------------------------------------------------- */

/* Print v (stolen) as JSON on stdout; returns the exit status. */
static int print_json(json_t *v)
{
	int rc;

	if (!v)
		return cli_fail(FC_NOMEM, "out of memory building JSON output");
	rc = json_dumpf(v, stdout, JSON_INDENT(2));
	json_decref(v);
	if (rc == 0 && putchar('\n') != EOF && fflush(stdout) == 0)
		return 0;
	return cli_fail(FC_IO, "cannot write to standard output");
}

static int journal_failed(journal *j, int rc)
{
	return cli_fail(rc, "%s", journal_errmsg(j));
}

static json_t *entries_to_json(const struct journal_entry *e, size_t n)
{
	json_t *arr = json_array();

	for (size_t i = 0; arr && i < n; i++) {
		if (json_array_append_new(arr, journal_entry_to_json(&e[i]))) {
			json_decref(arr);
			return NULL;
		}
	}
	return arr;
}

/* ---- subcommands -------------------------------------------------------- */

static int run_init(journal *j, const struct args *a)
{
	int rc = journal_init(j);

	if (rc)
		return journal_failed(j, rc);
	return print_json(json_pack("{s:i}", "schema_version",
				    JOURNAL_SCHEMA_VERSION));
}

static int run_migrate(journal *j, const struct args *a)
{
	int from, to, rc = journal_migrate(j, &from, &to);

	if (rc)
		return journal_failed(j, rc);
	return print_json(json_pack("{s:i,s:i}", "schema_version", to,
				    "from", from));
}

static int run_create(journal *j, const struct args *a)
{
	struct journal_entry e;
	int created, rc;
	json_t *obj;

	rc = journal_create_or_get(j, a->op, a->intent, a->meta, &e, &created);
	if (rc)
		return journal_failed(j, rc);
	obj = journal_entry_to_json(&e);
	if (obj && json_object_set_new(obj, "created", json_boolean(created))) {
		json_decref(obj);
		obj = NULL;
	}
	return print_json(obj);
}

static int run_get(journal *j, const struct args *a)
{
	struct journal_entry e;
	int rc = journal_get(j, a->op, &e);

	if (rc)
		return journal_failed(j, rc);
	return print_json(journal_entry_to_json(&e));
}

static int run_lease(journal *j, const struct args *a)
{
	struct journal_entry e;
	int rc = journal_acquire_lease(j, a->op, a->owner, a->ttl_ms, &e);

	if (rc)
		return journal_failed(j, rc);
	return print_json(journal_entry_to_json(&e));
}

static int run_cas(journal *j, const struct args *a)
{
	const struct journal_cas req = {
		.operation_id = a->op,
		.expected_version = a->expect,
		.expected_states = a->from,
		.next = a->to,
		.epoch = a->epoch,
		.evidence = a->evidence,
	};
	struct journal_entry e;
	int rc = journal_cas(j, &req, &e);

	if (rc)
		return journal_failed(j, rc);
	return print_json(journal_entry_to_json(&e));
}

static int run_history(journal *j, const struct args *a)
{
	struct journal_transition *t;
	json_t *arr;
	size_t n;
	int rc = journal_history(j, a->op, &t, &n);

	if (rc)
		return journal_failed(j, rc);
	arr = json_array();
	for (size_t i = 0; arr && i < n; i++) {
		json_t *row = journal_transition_to_json(&t[i]);

		if (json_array_append_new(arr, row)) {
			json_decref(arr);
			arr = NULL;
		}
	}
	free(t);
	return print_json(arr);
}

static int run_list(journal *j, const struct args *a)
{
	const struct journal_filter f = { .states = a->states };
	struct journal_entry *e;
	json_t *arr;
	size_t n;
	int rc = journal_list(j, &f, &e, &n);

	if (rc)
		return journal_failed(j, rc);
	arr = entries_to_json(e, n);
	free(e);
	return print_json(arr);
}

static int run_purge(journal *j, const struct args *a)
{
	long long before = clock_wall_ms() - a->older_ms;
	char (*ids)[JOURNAL_ID_MAX];
	json_t *removed;
	size_t n;
	int rc;

	if (before < 0)
		before = 0;
	rc = journal_purge(j, before, &ids, &n);
	if (rc)
		return journal_failed(j, rc);
	removed = json_array();
	for (size_t i = 0; removed && i < n; i++) {
		if (json_array_append_new(removed, json_string(ids[i]))) {
			json_decref(removed);
			removed = NULL;
		}
	}
	free(ids);
	if (!removed)
		return print_json(NULL);
	return print_json(json_pack("{s:o,s:I,s:I}", "removed", removed,
				    "count", (json_int_t)n,
				    "before", (json_int_t)before));
}

static const struct subcommand subcommands[] = {
	{ "init", run_init, false, 0, 0,
	  "Create the journal schema if absent (idempotent).\n"
	  "Prints {\"schema_version\": N}." },
	{ "create", run_create, false, OPT_OP | OPT_INTENT | OPT_META,
	  OPT_OP | OPT_INTENT,
	  "Create the entry for an operation in PREPARING, or return the\n"
	  "existing one when the intent matches (\"created\": false).\n"
	  "Another intent is INTENT_CONFLICT and changes nothing." },
	{ "get", run_get, true, OPT_OP, OPT_OP,
	  "Print the entry of an operation.  Read-only: a missing file or\n"
	  "one that is not a journal is refused, nothing is created." },
	{ "lease", run_lease, false, OPT_OP | OPT_OWNER | OPT_TTL,
	  OPT_OP | OPT_OWNER | OPT_TTL,
	  "Take the lease of an operation for --ttl-ms.  The lease epoch\n"
	  "rises by one on every success; another owner's unexpired lease\n"
	  "is LEASE_HELD.  Prints the entry with its new epoch." },
	{ "cas", run_cas, false,
	  OPT_OP | OPT_EXPECT | OPT_TO | OPT_FROM | OPT_EPOCH | OPT_EVIDENCE,
	  OPT_OP | OPT_EXPECT | OPT_TO,
	  "Move an operation to --to if it is at --expect-version (and in one\n"
	  "of --from).  Refusals: CAS_CONFLICT (version or state moved),\n"
	  "ILLEGAL_TRANSITION (not an edge of the state table), LEASE_LOST\n"
	  "(--epoch is not the current lease epoch).  Prints the new entry." },
	{ "history", run_history, true, OPT_OP, OPT_OP,
	  "Print every transition of an operation, oldest first, as an array\n"
	  "of {version, from, to, epoch, at, evidence}.  Read-only, like get." },
	{ "list", run_list, true, OPT_STATE, 0,
	  "Print the entries of the journal (optionally only some states) as\n"
	  "an array.  Read-only, like get." },
	{ "purge", run_purge, false, OPT_OLDER, OPT_OLDER,
	  "Delete COMPLETE operations, and their history, whose last change\n"
	  "is older than --older-than; nothing else is ever removed.  Prints\n"
	  "{\"removed\": [ids], \"count\": N, \"before\": ms}." },
	{ "migrate", run_migrate, false, 0, 0,
	  "Upgrade the journal schema in place.  Prints\n"
	  "{\"schema_version\": N, \"from\": M}." },
	{ NULL, NULL, false, 0, 0, NULL },
};

/* ---- option parsing ----------------------------------------------------- */

static const struct opt_info *opt_by_val(int val)
{
	for (size_t i = 0; i < OPT_COUNT; i++)
		if (opt_infos[i].val == val)
			return &opt_infos[i];
	return NULL;
}

static void help(const struct subcommand *sc)
{
	unsigned accepts = sc->accepts | OPT_JOURNAL;

	int indent = printf("usage: fencecert journal %s", sc->name);
	int col = indent + printf(" --journal URL");

	/* The synopsis, wrapped under the subcommand at 78 columns. */
	for (size_t i = 1; i < OPT_COUNT; i++) {
		const struct opt_info *o = &opt_infos[i];
		char piece[64];
		int len;

		if (!(accepts & o->flag))
			continue;
		len = snprintf(piece, sizeof(piece), sc->requires & o->flag ?
			       " --%s %s" : " [--%s %s]", o->name, o->arg);
		if (col + len > 78)
			col = printf("\n%*s", indent, "") - 1;
		col += printf("%s", piece);
	}
	printf("\n\n%s\n\noptions:\n", sc->about);
	for (size_t i = 0; i < OPT_COUNT; i++) {
		const struct opt_info *o = &opt_infos[i];

		if (accepts & o->flag)
			printf("  --%s %s\n      %s\n", o->name, o->arg,
			       o->help);
	}
	printf("  --help\n      show this text\n\n%s", exit_codes);
}

static void list_subcommands(FILE *to)
{
	fprintf(to, "usage: fencecert journal SUBCOMMAND --journal URL "
		    "[OPTIONS]\n\nsubcommands:\n");
	for (const struct subcommand *sc = subcommands; sc->name; sc++)
		fprintf(to, "  %s\n", sc->name);
	fprintf(to, "\nrun 'fencecert journal SUBCOMMAND --help' for its "
		    "options\n\n%s", exit_codes);
}

/* Store one option's value in a; returns 0 or a usage exit status. */
static int take_value(const char *cmd, const struct opt_info *o,
		      const char *v, struct args *a)
{
	int ok = 1;

	switch (o->flag) {
	case OPT_JOURNAL: a->url = v; break;
	case OPT_OP: a->op = v; break;
	case OPT_INTENT: a->intent = v; break;
	case OPT_META: a->meta = v; break;
	case OPT_OWNER: a->owner = v; break;
	case OPT_EVIDENCE: a->evidence = v; break;
	case OPT_TTL:
		ok = !cli_parse_ll(v, &a->ttl_ms) && a->ttl_ms > 0;
		break;
	case OPT_EXPECT:
		ok = !cli_parse_ll(v, &a->expect) && a->expect > 0;
		break;
	case OPT_EPOCH: ok = !cli_parse_ll(v, &a->epoch); break;
	case OPT_TO: ok = !state_parse(v, &a->to); break;
	case OPT_FROM: ok = !state_set_parse(v, &a->from); break;
	case OPT_STATE: ok = !state_set_parse(v, &a->states); break;
	case OPT_OLDER: ok = !cli_parse_duration(v, &a->older_ms); break;
	}
	if (!ok)
		return cli_usage(cmd, "invalid value '%s' for --%s %s", v,
				 o->name, o->arg);
	a->seen |= o->flag;
	return 0;
}

static int parse_args(const struct subcommand *sc, const char *cmd, int argc,
		      char **argv, struct args *a)
{
	struct option longs[OPT_COUNT + 2];
	unsigned accepts = sc->accepts | OPT_JOURNAL;
	int c, rc;

	for (size_t i = 0; i < OPT_COUNT; i++)
		longs[i] = (struct option){ opt_infos[i].name,
					    required_argument, NULL,
					    opt_infos[i].val };
	longs[OPT_COUNT] = (struct option){ "help", no_argument, NULL, 'h' };
	longs[OPT_COUNT + 1] = (struct option){ NULL, 0, NULL, 0 };
	optind = 0; /* GNU: full reset, in case a caller parsed before us */
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+:h", longs, NULL)) != -1) {
		const struct opt_info *o = opt_by_val(c);

		if (c == 'h') {
			help(sc);
			return -1;
		}
		if (c == ':')
			return cli_usage(cmd, "option '%s' needs a value",
					 argv[optind - 1]);
		if (c == '?' || !o) {
			char shortopt[3] = { '-', (char)optopt, '\0' };

			return cli_usage(cmd, "unknown option '%s'", optopt ?
					 shortopt : argv[optind - 1]);
		}
		if (!(accepts & o->flag))
			return cli_usage(cmd, "option '--%s' is not valid for "
					 "'%s'", o->name, cmd);
		if ((rc = take_value(cmd, o, optarg, a)))
			return rc;
	}
	if (optind < argc)
		return cli_usage(cmd, "unexpected argument '%s'", argv[optind]);
	if (!(a->seen & OPT_JOURNAL))
		a->url = getenv("FENCECERT_JOURNAL");
	if (!a->url || !*a->url)
		return cli_usage(cmd, "missing --journal URL (or "
				 "FENCECERT_JOURNAL)");
	for (size_t i = 0; i < OPT_COUNT; i++)
		if ((sc->requires & opt_infos[i].flag) &&
		    !(a->seen & opt_infos[i].flag))
			return cli_usage(cmd, "missing --%s %s",
					 opt_infos[i].name, opt_infos[i].arg);
	return 0;
}

/*
 * A read verb on a sqlite: journal that does not exist: NOT_FOUND, as for
 * an operation the journal does not hold (a route may go on to `create`,
 * which makes the file).  Opening it read-only would say only "unable to
 * open database file".  0 when the file exists or the URL is another's.
 */
static int sqlite_journal_missing(const char *url)
{
	const char *p = url + strlen("sqlite:");
	char path[4096];
	struct stat st;
	size_t n;

	if (strncmp(url, "sqlite:", 7) != 0)
		return 0;
	if (strncmp(p, "//", 2) == 0)
		p += 2;
	n = strcspn(p, "?");
	if (n == 0 || n >= sizeof(path))
		return 0; /* the journal explains a malformed URL */
	memcpy(path, p, n);
	path[n] = '\0';
	if (stat(path, &st) == 0 || errno != ENOENT)
		return 0;
	return cli_fail(FC_NOT_FOUND, "journal '%s' does not exist (read "
			"verbs create nothing; 'fencecert journal init' does)",
			path);
}

static int run_subcommand(const struct subcommand *sc, int argc, char **argv)
{
	struct args a = { 0 };
	char cmd[32], err[512];
	journal *j;
	int rc;

	snprintf(cmd, sizeof(cmd), "journal %s", sc->name);
	rc = parse_args(sc, cmd, argc, argv, &a);
	if (rc)
		return rc < 0 ? 0 : rc; /* -1: --help was printed */
	if (sc->read_only && (rc = sqlite_journal_missing(a.url)))
		return rc;
	rc = (sc->read_only ? journal_open_readonly : journal_open)(
		a.url, &j, err, sizeof(err));
	if (rc)
		return cli_fail(rc, "%s", err);
	rc = sc->run(j, &a);
	journal_close(j);
	return rc;
}

int cmd_journal(int argc, char **argv)
{
	const struct subcommand *sc;
	int rc;

	if ((rc = cli_help_or_dispatch(argc, argv, list_subcommands)) != CLI_DISPATCH)
		return rc;
	for (sc = subcommands; sc->name; sc++)
		if (strcmp(argv[1], sc->name) == 0)
			return run_subcommand(sc, argc - 1, argv + 1);
	return cli_usage("journal", "unknown journal subcommand '%s'", argv[1]);
}
