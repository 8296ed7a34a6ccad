/*
 * cmd_gate.c -- `fencecert gate REPORT.json`: may this release go out?
 *
 * The command line of the release gate (reports/gate.h holds its rules):
 * options become a struct gate_require, the signing key comes from
 * FENCECERT_SIGNING_KEY, every reason is printed on stderr as
 * "fencecert: GATE: ..." and the gate's JSON answer goes to stdout.
 *
 * Exit status: 0 pass, 1 refused, 2 report unreadable or not a
 * fencecert.report.v1 document, 64 usage.
 */
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "common/cli.h"
#include "reports/gate.h"
#include "reports/rview.h"
#include "reports/sign.h"

#define EXIT_REFUSED 1
#define EXIT_BAD_REPORT 2

static void usage(FILE *to)
{
	fprintf(to,
		"usage: fencecert gate REPORT.json [options]\n"
		"\n"
		"Pass (exit 0) only when the report's signature verifies, its\n"
		"digests are the expected ones and the routes reach the required\n"
		"verdict; otherwise print every reason and exit 1.\n"
		"\n"
		"  --require LEVEL        certified-automatic or certified-fail-closed\n"
		"                         (default certified-fail-closed)\n"
		"  --route NAME           check this route (repeatable; default: all,\n"
		"                         and control routes must be rejected)\n"
		"  --suite-digest D       the suite file's digest must be D\n"
		"  --route-digest NAME=D  the route's definition digest must be D\n"
		"  --tool-version V       the report must come from fencecert V\n"
		"  --require-signature    refuse when $%s is not set\n"
		"  --require-containment LEVEL\n"
		"                         the routes must have run contained at\n"
		"                         LEVEL or stronger: sandbox > uid > reaper\n"
		"                         > none (docs/security.md)\n"
		"  --help                 this text\n"
		"\n"
		"The signing key is read from $%s.\n"
		"exit status: 0 pass, 1 refused, 2 unreadable or invalid report,\n"
		"64 usage\n", SIGN_KEY_ENV, SIGN_KEY_ENV);
}

/* Options into req (routes and route_digests hold argc entries);
 * *report_path is the one operand.  0, -1 after --help, or 64. */
static int parse(int argc, char **argv, struct gate_require *req,
		 const char **routes, const char **digests,
		 const char **report_path)
{
	static const struct option longopts[] = {
		{ "require", required_argument, NULL, 'r' },
		{ "route", required_argument, NULL, 'R' },
		{ "suite-digest", required_argument, NULL, 's' },
		{ "route-digest", required_argument, NULL, 'd' },
		{ "tool-version", required_argument, NULL, 't' },
		{ "require-signature", no_argument, NULL, 'S' },
		{ "require-containment", required_argument, NULL, 'C' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case 'r':
			if (verdict_parse(optarg, &req->level) != 0 ||
			    !gate_level_valid(req->level))
				return cli_usage("gate", "--require must be "
						 "certified-automatic or "
						 "certified-fail-closed, not '%s'",
						 optarg);
			break;
		case 'R': routes[req->nroutes++] = optarg; break;
		case 's': req->suite_digest = optarg; break;
		case 'd':
			if (!strchr(optarg, '=') || optarg[0] == '=')
				return cli_usage("gate", "--route-digest wants "
						 "NAME=DIGEST, not '%s'", optarg);
			digests[req->ndigests++] = optarg;
			break;
		case 't': req->tool_version = optarg; break;
		case 'S': req->require_signature = true; break;
		case 'C':
			if (gate_containment_rank(optarg) < 0)
				return cli_usage("gate", "--require-containment "
						 "must be sandbox, uid, reaper "
						 "or none, not '%s'", optarg);
			req->require_containment = optarg;
			break;
		case 'h': usage(stdout); return -1;
		default: return cli_usage("gate", "unknown option");
		}
	}
	if (optind != argc - 1)
		return cli_usage("gate", "give exactly one REPORT.json");
	*report_path = argv[optind];
	return 0;
}

/* Judge the report; print the reasons and the answer.  The exit status. */
static int run(const char *path, struct gate_require *req)
{
	struct sign_key key = { (const unsigned char *)"", 0 };
	json_t *report, *verdict, *reason;
	char err[1024];
	int have, rc;
	size_t i;

	rc = rview_load(path, &report, err, sizeof(err));
	if (rc) {
		fprintf(stderr, "fencecert: %s: %s\n", error_name(rc), err);
		return EXIT_BAD_REPORT;
	}
	/* set but empty: handed on as a key of length 0, which is refused */
	have = sign_key_from_env(&key);
	req->key = have ? &key : NULL;
	if (!have && !req->require_signature)
		fprintf(stderr, "fencecert: gate: signature not checked "
			"(%s is not set)\n", SIGN_KEY_ENV);
	rc = gate_check(report, req, &verdict);
	json_decref(report);
	if (rc)
		return cli_fail(rc, "cannot judge '%s'", path);
	json_array_foreach(json_object_get(verdict, "reasons"), i, reason)
		fprintf(stderr, "fencecert: GATE: %s\n", json_string_value(reason));
	json_dumpf(verdict, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	fputc('\n', stdout);
	rc = json_is_true(json_object_get(verdict, "passed")) ? 0 : EXIT_REFUSED;
	json_decref(verdict);
	return rc;
}

int cmd_gate(int argc, char **argv)
{
	struct gate_require req = { .level = VERDICT_CERTIFIED_FAIL_CLOSED };
	const char **routes = calloc((size_t)argc + 1, sizeof(*routes));
	const char **digests = calloc((size_t)argc + 1, sizeof(*digests));
	const char *path = NULL;
	int rc;

	if (!routes || !digests) {
		rc = cli_fail(FC_NOMEM, "out of memory");
		goto out;
	}
	req.routes = routes;
	req.route_digests = digests;
	rc = parse(argc, argv, &req, routes, digests, &path);
	if (rc == 0)
		rc = run(path, &req);
	else if (rc < 0)
		rc = 0; /* --help */
out:
	free(routes);
	free(digests);
	return rc;
}
