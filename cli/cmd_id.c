/*
 * cmd_id.c -- `fencecert id`: derive operation_id and intent_digest
 * from --field / --intent-field NAME=VALUE pairs (SPEC section 2).  Field
 * order on the command line does not matter; identity.c sorts them.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "cli/commands.h"
#include "common/cli.h"
#include "journal/identity.h"

static const char id_help[] =
	"usage: fencecert id --field NAME=VALUE... [--intent-field NAME=VALUE...]\n"
	"\n"
	"Print {\"operation_id\": ..., \"intent_digest\": ...} for the given fields.\n"
	"operation_id is SHA-256 over the canonical encoding of the --field pairs;\n"
	"intent_digest is the same construction over the --intent-field pairs (null\n"
	"when none are given).  See docs/identity.md.\n"
	"\n"
	"  --field NAME=VALUE         an identity field (release, deployment, dag, run,\n"
	"                             workload, partition, interval, target, ...)\n"
	"  --intent-field NAME=VALUE  an intent field (pack, strategy, source, ...)\n"
	"  --help                     show this help\n"
	"\n"
	"Exit status: 0 ok, 64 usage (empty or duplicate name, forbidden name such as\n"
	"try_number/host/pid/time, invalid UTF-8).\n";

struct field_list {
	struct identity_field f[IDENTITY_MAX_FIELDS];
	size_t n;
};

static int add_field(struct field_list *l, char *arg, const char *opt)
{
	char *eq = strchr(arg, '=');

	if (!eq)
		return cli_usage("id", "%s '%s' is not NAME=VALUE", opt, arg);
	if (l->n == IDENTITY_MAX_FIELDS)
		return cli_usage("id", "more than %d %s options", IDENTITY_MAX_FIELDS, opt);
	*eq = '\0';
	l->f[l->n].name = arg;
	l->f[l->n].value = eq + 1;
	l->n++;
	return 0;
}

int cmd_id(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "field", required_argument, NULL, 'f' },
		{ "intent-field", required_argument, NULL, 'i' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct field_list ident = { .n = 0 }, intent = { .n = 0 };
	char op[IDENTITY_DIGEST_LEN + 1], in[IDENTITY_DIGEST_LEN + 1];
	char err[256];
	json_t *out;
	int c, rc;

	optind = 1;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'f':
			if ((rc = add_field(&ident, optarg, "--field")))
				return rc;
			break;
		case 'i':
			if ((rc = add_field(&intent, optarg, "--intent-field")))
				return rc;
			break;
		case 'h':
			fputs(id_help, stdout);
			return 0;
		default:
			return cli_usage("id", "unknown option");
		}
	}
	if (optind < argc)
		return cli_usage("id", "unexpected argument '%s'", argv[optind]);
	if (ident.n == 0)
		return cli_usage("id", "at least one --field is required");
	if (identity_digest(ident.f, ident.n, op, err, sizeof(err)))
		return cli_fail(FC_USAGE, "identity: %s", err);
	if (intent.n && identity_digest(intent.f, intent.n, in, err, sizeof(err)))
		return cli_fail(FC_USAGE, "intent: %s", err);

	out = json_pack("{s:s, s:s?}", "operation_id", op, "intent_digest",
			intent.n ? in : NULL);
	if (!out)
		return cli_fail(FC_NOMEM, "cannot build output");
	if (!intent.n)
		json_object_set_new(out, "intent_digest", json_null());
	json_dumpf(out, stdout, JSON_COMPACT);
	fputc('\n', stdout);
	json_decref(out);
	return 0;
}
