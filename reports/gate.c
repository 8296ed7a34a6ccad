/*
 * gate.c -- `fencecert gate REPORT.json`: may this release go out?
 *
 * The gate trusts nothing it cannot check.  It passes (exit 0) only when
 * every check below passes, and otherwise prints every reason, one per
 * line, as "fencecert: GATE: ..." on stderr, and exits 1:
 *
 *  1. signature: with FENCECERT_SIGNING_KEY set, the report must carry a
 *     signature that verifies (sign.h); an unsigned report is refused.
 *     A key that is set but empty is refused too (a CI secret that did
 *     not expand must not switch the check off).  Without a key the
 *     signature is not checked, unless --require-signature refuses that.
 *  2. digests: --suite-digest, --route-digest NAME=D and --tool-version
 *     must equal what the report says.
 *  3. verdicts: every route named with --route must reach the --require
 *     level (certified-automatic > certified-fail-closed; rejected and
 *     unverified never pass).  Without --route every route is checked;
 *     then a control route (expected "rejected") must have been rejected
 *     -- a control that passes means the suite cannot tell right from
 *     wrong -- and every other route must reach the level.
 *
 * Exit status: 0 pass, 1 refused, 2 report unreadable or not a
 * fencecert.report.v1 document, 64 usage.  A JSON verdict of the gate
 * goes to stdout.
 */
#include <getopt.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cli.h"
#include "reports/rview.h"
#include "reports/sign.h"

#define EXIT_REFUSED 1
#define EXIT_BAD_REPORT 2

struct gate {
	const char *report_path;
	int require;                 /* rview_verdict_rank() needed */
	const char *require_name;
	const char **routes;         /* --route names */
	size_t nroutes;
	const char **route_digests;  /* "NAME=DIGEST" */
	size_t ndigests;
	const char *suite_digest;
	const char *tool_version;
	bool require_signature;
	json_t *reasons;             /* strings */
	json_t *checked;             /* per route results */
	const char *signature;       /* "verified", "not-checked" */
};

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
		"  --help                 this text\n"
		"\n"
		"The signing key is read from $%s.\n"
		"exit status: 0 pass, 1 refused, 2 unreadable or invalid report,\n"
		"64 usage\n", SIGN_KEY_ENV, SIGN_KEY_ENV);
}

static void refuse(struct gate *g, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void refuse(struct gate *g, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	fprintf(stderr, "fencecert: GATE: %s\n", buf);
	json_array_append_new(g->reasons, json_string(buf));
}

static void check_signature(struct gate *g, const json_t *report)
{
	struct sign_key key;
	char err[256];
	int have = sign_key_from_env(&key);

	g->signature = "not-checked";
	if (have < 0) {
		refuse(g, "%s is set but empty; cannot verify the signature",
		       SIGN_KEY_ENV);
		return;
	}
	if (!have) {
		if (g->require_signature)
			refuse(g, "no signing key: set %s to verify the report's "
			       "signature", SIGN_KEY_ENV);
		else
			fprintf(stderr, "fencecert: gate: signature not checked "
				"(%s is not set)\n", SIGN_KEY_ENV);
		return;
	}
	if (sign_verify(report, &key, err, sizeof(err)) == 0) {
		g->signature = "verified";
		return;
	}
	g->signature = "refused";
	refuse(g, "%s", err);
}

static const json_t *find_route(const json_t *report, const char *name)
{
	json_t *r;
	size_t i;

	json_array_foreach(rview_arr(report, "routes"), i, r)
		if (strcmp(rview_str(r, "name"), name) == 0)
			return r;
	return NULL;
}

static void check_digests(struct gate *g, const json_t *report)
{
	const char *have;

	have = rview_str(json_object_get(report, "suite"), "digest");
	if (g->suite_digest && strcmp(have, g->suite_digest) != 0)
		refuse(g, "suite digest is '%s', expected '%s'", have,
		       g->suite_digest);
	have = rview_str(json_object_get(report, "tool"), "version");
	if (g->tool_version && strcmp(have, g->tool_version) != 0)
		refuse(g, "report comes from fencecert '%s', expected '%s'", have,
		       g->tool_version);
	for (size_t i = 0; i < g->ndigests; i++) {
		const char *spec = g->route_digests[i];
		const char *eq = strchr(spec, '=');
		char name[256];
		const json_t *r;

		snprintf(name, sizeof(name), "%.*s", (int)(eq - spec), spec);
		r = find_route(report, name);
		if (!r)
			refuse(g, "route '%s' is not in the report", name);
		else if (strcmp(rview_str(r, "digest"), eq + 1) != 0)
			refuse(g, "route '%s' digest is '%s', expected '%s'", name,
			       rview_str(r, "digest"), eq + 1);
	}
}

static void note_route(struct gate *g, const json_t *r, const char *needed,
		       bool ok)
{
	json_array_append_new(g->checked, json_pack("{s:s, s:s, s:s, s:b}",
		"name", rview_str(r, "name"), "verdict", rview_str(r, "verdict"),
		"required", needed, "ok", ok));
}

static void check_level(struct gate *g, const json_t *r)
{
	const char *v = rview_str(r, "verdict");
	bool ok = rview_verdict_rank(v) >= g->require;

	note_route(g, r, g->require_name, ok);
	if (!ok)
		refuse(g, "route '%s' is %s, required %s%s", rview_str(r, "name"), v,
		       g->require_name, g->require == 1 ? " or better" : "");
}

static void check_verdicts(struct gate *g, const json_t *report)
{
	json_t *r;
	size_t i;

	if (g->nroutes) {
		for (i = 0; i < g->nroutes; i++) {
			const json_t *named = find_route(report, g->routes[i]);
			if (named)
				check_level(g, named);
			else
				refuse(g, "route '%s' is not in the report",
				       g->routes[i]);
		}
		return;
	}
	if (!json_array_size(rview_arr(report, "routes")))
		refuse(g, "the report has no routes");
	json_array_foreach(rview_arr(report, "routes"), i, r) {
		if (strcmp(rview_str(r, "expected"), "rejected") != 0) {
			check_level(g, r);
			continue;
		}
		note_route(g, r, "rejected",
			   strcmp(rview_str(r, "verdict"), "rejected") == 0);
		if (strcmp(rview_str(r, "verdict"), "rejected") != 0)
			refuse(g, "control route '%s' is %s, expected rejected: the "
			       "suite no longer tells a wrong route from a right one",
			       rview_str(r, "name"), rview_str(r, "verdict"));
	}
}

static int parse(struct gate *g, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "require", required_argument, NULL, 'r' },
		{ "route", required_argument, NULL, 'R' },
		{ "suite-digest", required_argument, NULL, 's' },
		{ "route-digest", required_argument, NULL, 'd' },
		{ "tool-version", required_argument, NULL, 't' },
		{ "require-signature", no_argument, NULL, 'S' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case 'r':
			g->require = rview_verdict_rank(optarg);
			if (!g->require)
				return cli_usage("gate", "--require must be "
						 "certified-automatic or "
						 "certified-fail-closed, not '%s'",
						 optarg);
			g->require_name = optarg;
			break;
		case 'R': g->routes[g->nroutes++] = optarg; break;
		case 's': g->suite_digest = optarg; break;
		case 'd':
			if (!strchr(optarg, '=') || optarg[0] == '=')
				return cli_usage("gate", "--route-digest wants "
						 "NAME=DIGEST, not '%s'", optarg);
			g->route_digests[g->ndigests++] = optarg;
			break;
		case 't': g->tool_version = optarg; break;
		case 'S': g->require_signature = true; break;
		case 'h': usage(stdout); return -1;
		default: return cli_usage("gate", "unknown option");
		}
	}
	if (optind != argc - 1)
		return cli_usage("gate", "give exactly one REPORT.json");
	g->report_path = argv[optind];
	return 0;
}

static int run(struct gate *g)
{
	json_t *report, *out;
	char err[1024];
	int rc = rview_load(g->report_path, &report, err, sizeof(err));
	bool passed;

	if (rc) {
		fprintf(stderr, "fencecert: %s: %s\n", error_name(rc), err);
		return EXIT_BAD_REPORT;
	}
	check_signature(g, report);
	check_digests(g, report);
	check_verdicts(g, report);
	passed = json_array_size(g->reasons) == 0;
	out = json_pack("{s:b, s:s, s:s, s:O, s:O}", "passed", passed,
			"required", g->require_name, "signature", g->signature,
			"routes", g->checked, "reasons", g->reasons);
	if (out) {
		json_dumpf(out, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
		fputc('\n', stdout);
	}
	json_decref(out);
	json_decref(report);
	return passed ? 0 : EXIT_REFUSED;
}

int cmd_gate(int argc, char **argv)
{
	struct gate g = {
		.require = 1,
		.require_name = "certified-fail-closed",
	};
	int rc;

	g.routes = calloc((size_t)argc + 1, sizeof(*g.routes));
	g.route_digests = calloc((size_t)argc + 1, sizeof(*g.route_digests));
	g.reasons = json_array();
	g.checked = json_array();
	if (!g.routes || !g.route_digests || !g.reasons || !g.checked) {
		rc = cli_fail(FC_NOMEM, "out of memory");
		goto out;
	}
	rc = parse(&g, argc, argv);
	if (rc == 0)
		rc = run(&g);
	else if (rc < 0)
		rc = 0; /* --help */
out:
	free(g.routes);
	free(g.route_digests);
	json_decref(g.reasons);
	json_decref(g.checked);
	return rc;
}
