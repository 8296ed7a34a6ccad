/*
 * cmd_target.c -- `fencecert target`: look at a target the way the checker
 * does (rows, fences) and ask its fence the retry's question (probe).
 *
 *   fencecert target rows   --target URL [--table T] [--json]
 *   fencecert target fences --target URL
 *   fencecert target probe  --target URL --op ID
 *
 * --target defaults to $FENCECERT_TARGET (SPEC section 7).  rows and
 * fences use the read-only observer (target.h); probe opens the fence, which
 * also creates nothing when it only probes.  Machine output is JSON from
 * jansson; `rows` without --json prints "row_key count" lines for shell
 * scripts.  Exit status as cli.h documents; probe exits 0 for APPLIED and
 * ABSENT and with the error's status for UNKNOWN (after printing the JSON).
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli/commands.h"
#include "common/cli.h"
#include "common/error.h"
#include "fences/fence.h"
#include "fences/target.h"

struct opts {
	const char *target;
	const char *table;
	const char *op;
	int json;
};

static const char usage_text[] =
	"usage: fencecert target rows   --target URL [--table T] [--json]\n"
	"       fencecert target fences --target URL\n"
	"       fencecert target probe  --target URL --op ID\n"
	"\n"
	"  rows     'row_key count' lines (count summed over operations),\n"
	"           sorted by row_key; --json gives one object per\n"
	"           (row_key, operation_id) instead\n"
	"  fences   JSON array of the fence records the target holds\n"
	"  probe    JSON {\"answer\":\"APPLIED|ABSENT|UNKNOWN\",\"epoch\":...}\n"
	"\n"
	"  --target URL   sqlite:PATH, file:DIR, etcd://... or postgresql://...\n"
	"                 (default $FENCECERT_TARGET)\n"
	"  --table T      data table (default " FENCE_DEFAULT_TABLE ")\n"
	"  --op ID        operation id to probe\n";

/* Print JSON to stdout followed by a newline; 0 or FC_IO. */
static int print_json(json_t *doc)
{
	int rc = !doc || json_dumpf(doc, stdout, JSON_COMPACT) != 0 ||
		 putchar('\n') == EOF;

	json_decref(doc);
	return rc ? FC_IO : 0;
}

static json_t *string_or_null(const char *s)
{
	return s ? json_string(s) : json_null();
}

/* ---- rows ---- */

struct rows_text {
	char *key; /* key of the pending line; NULL with have == 0 */
	int have, key_null;
	long long count;
};

static int flush_line(struct rows_text *t)
{
	if (t->have && printf("%s %lld\n", t->key_null ? "" : t->key,
			      t->count) < 0)
		return FC_IO;
	free(t->key);
	t->key = NULL;
	t->have = 0;
	return 0;
}

/* Rows arrive sorted by key, so one pending line sums over operations. */
static int rows_line(void *ctx, const char *key, const char *op, long long n)
{
	struct rows_text *t = ctx;
	int rc;

	(void)op;
	if (t->have && t->key_null == !key &&
	    (!key || strcmp(t->key, key) == 0)) {
		t->count += n;
		return 0;
	}
	if ((rc = flush_line(t)))
		return rc;
	if (key && !(t->key = strdup(key)))
		return FC_NOMEM;
	t->key_null = !key;
	t->have = 1;
	t->count = n;
	return 0;
}

static int rows_json(void *ctx, const char *key, const char *op, long long n)
{
	json_t *o = json_pack("{s:o, s:o, s:I}", "row_key", string_or_null(key),
			      "operation_id", string_or_null(op), "count",
			      (json_int_t)n);

	return !o || json_array_append_new(ctx, o) != 0 ? FC_NOMEM : 0;
}

static int run_rows(const struct opts *o)
{
	struct rows_text t = { 0 };
	json_t *arr = NULL;
	char err[1024] = "";
	int rc;

	if (o->json) {
		if (!(arr = json_array()))
			return cli_fail(FC_NOMEM, "out of memory");
		rc = target_observe_rows(o->target, o->table, rows_json, arr,
					 err, sizeof(err));
	} else {
		rc = target_observe_rows(o->target, o->table, rows_line, &t,
					 err, sizeof(err));
		if (!rc)
			rc = flush_line(&t);
		free(t.key);
	}
	if (rc) {
		json_decref(arr);
		return cli_fail(rc, "%s", *err ? err : error_str(rc));
	}
	if (arr && (rc = print_json(arr)))
		return cli_fail(rc, "cannot write the output");
	return fflush(stdout) == 0 ? 0 : cli_fail(FC_IO, "cannot write "
						  "the output");
}

/* ---- fences ---- */

static int fence_json(void *ctx, const struct target_fence_record *r)
{
	json_t *o = json_pack("{s:s, s:I, s:I, s:o, s:I}",
			      "operation_id", r->operation_id,
			      "applied_epoch", (json_int_t)r->applied_epoch,
			      "prepared_epoch", (json_int_t)r->prepared_epoch,
			      "intent_digest", string_or_null(r->intent_digest),
			      "rows", (json_int_t)r->rows);

	return !o || json_array_append_new(ctx, o) != 0 ? FC_NOMEM : 0;
}

static int run_fences(const struct opts *o)
{
	json_t *arr = json_array();
	char err[1024] = "";
	int rc;

	if (!arr)
		return cli_fail(FC_NOMEM, "out of memory");
	rc = target_list_fences(o->target, fence_json, arr, err, sizeof(err));
	if (rc) {
		json_decref(arr);
		return cli_fail(rc, "%s", *err ? err : error_str(rc));
	}
	if ((rc = print_json(arr)))
		return cli_fail(rc, "cannot write the output");
	return 0;
}

/* ---- probe ---- */

static const char *answer_name(enum fence_probe_answer a)
{
	switch (a) {
	case FENCE_APPLIED: return "APPLIED";
	case FENCE_ABSENT: return "ABSENT";
	default: return "UNKNOWN";
	}
}

static int run_probe(const struct opts *o)
{
	struct fence_probe p;
	char err[1024] = "";
	fence *f;
	json_t *doc;
	int rc, applied;

	rc = fence_open(o->target, &f, err, sizeof(err));
	if (rc)
		return cli_fail(rc, "%s", err);
	/* Looking must not decide a pending prepared transaction. */
	fence_hands_off(f);
	rc = fence_probe(f, o->op, &p);
	if (rc)
		snprintf(err, sizeof(err), "%s", fence_errmsg(f));
	fence_close(f);
	applied = !rc && p.answer == FENCE_APPLIED;
	doc = json_pack("{s:s, s:s, s:o, s:o, s:o}", "operation_id", o->op,
			"answer", rc ? "UNKNOWN" : answer_name(p.answer),
			"epoch", applied ? json_integer(p.epoch) : json_null(),
			"intent_digest", applied ? json_string(p.intent_digest)
						 : json_null(),
			"rows", applied ? json_integer(p.rows) : json_null());
	if (print_json(doc) != 0)
		return cli_fail(FC_IO, "cannot write the output");
	if (rc)
		return cli_fail(rc, "%s", err);
	return 0;
}

/* ---- dispatch ---- */

static const struct sub {
	const char *name;
	int (*run)(const struct opts *o);
	int wants_table, wants_op;
} subs[] = {
	{ "rows", run_rows, 1, 0 },
	{ "fences", run_fences, 0, 0 },
	{ "probe", run_probe, 0, 1 },
	{ NULL, NULL, 0, 0 },
};

static int parse(const struct sub *s, int argc, char **argv, struct opts *o)
{
	static const struct option longopts[] = {
		{ "target", required_argument, NULL, 't' },
		{ "table", required_argument, NULL, 'T' },
		{ "op", required_argument, NULL, 'o' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	memset(o, 0, sizeof(*o));
	o->target = getenv("FENCECERT_TARGET");
	optind = 0; /* full rescan: argv[0] is the subcommand */
	opterr = 0; /* our message names the command, getopt's would not */
	while ((c = getopt_long(argc, argv, "+", longopts, NULL)) != -1) {
		switch (c) {
		case 't': o->target = optarg; break;
		case 'T': o->table = optarg; break;
		case 'o': o->op = optarg; break;
		case 'j': o->json = 1; break;
		case 'h': fputs(usage_text, stdout); return 1;
		default: return cli_usage("target", "bad option '%s' for "
					  "'target %s'", argv[optind - 1],
					  s->name);
		}
	}
	if (optind < argc)
		return cli_usage("target", "unexpected argument '%s'",
				 argv[optind]);
	if (!o->target || !*o->target)
		return cli_usage("target", "'target %s' needs --target URL",
				 s->name);
	if (o->table && !s->wants_table)
		return cli_usage("target", "--table is for 'target rows'");
	if (o->json && strcmp(s->name, "rows") != 0)
		return cli_usage("target", "--json is for 'target rows'");
	if (s->wants_op != (o->op != NULL))
		return cli_usage("target", s->wants_op ? "'target probe' needs "
				 "--op ID" : "--op is for 'target probe'");
	return 0;
}

static void usage(FILE *to)
{
	fputs(usage_text, to);
}

int cmd_target(int argc, char **argv)
{
	struct opts o;
	int rc;

	if ((rc = cli_help_or_dispatch(argc, argv, usage)) != CLI_DISPATCH)
		return rc;
	for (const struct sub *s = subs; s->name; s++) {
		if (strcmp(argv[1], s->name) != 0)
			continue;
		rc = parse(s, argc - 1, argv + 1, &o);
		if (rc)
			return rc == 1 ? 0 : rc;
		return s->run(&o);
	}
	return cli_usage("target", "unknown target command '%s'", argv[1]);
}
