/*
 * gate.c -- the release gate's rules over a parsed report (gate.h).
 *
 * Invariants:
 *  1. Every check runs, whatever the others found, so the answer lists
 *     every reason at once (a release manager fixes them in one go).
 *  2. The answer is built only from the report and the requirements; a
 *     verdict the report claims is compared by name, never recomputed or
 *     trusted beyond what the signature covers.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "reports/gate.h"
#include "reports/rview.h"

struct gate {
	const struct gate_require *req;
	json_t *reasons;             /* strings */
	json_t *checked;             /* per route results */
	const char *signature;       /* "verified", "refused", "not-checked" */
	int rc;                      /* FC_NOMEM once an append failed */
};

static void refuse(struct gate *g, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void refuse(struct gate *g, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (json_array_append_new(g->reasons, json_string(buf)))
		g->rc = FC_NOMEM;
}

bool gate_level_valid(enum verdict level)
{
	return level == VERDICT_CERTIFIED_AUTOMATIC ||
	       level == VERDICT_CERTIFIED_FAIL_CLOSED;
}

static void check_signature(struct gate *g, const json_t *report)
{
	const struct sign_key *key = g->req->key;
	char err[256];

	g->signature = "not-checked";
	if (key && key->len == 0) {
		refuse(g, "%s is set but empty; cannot verify the signature",
		       SIGN_KEY_ENV);
		return;
	}
	if (!key) {
		if (g->req->require_signature)
			refuse(g, "no signing key: set %s to verify the report's "
			       "signature", SIGN_KEY_ENV);
		return;
	}
	if (sign_verify(report, key, err, sizeof(err)) == 0) {
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

int gate_containment_rank(const char *level)
{
	static const char *const levels[] = { "none", "reaper", "uid",
					      "sandbox" };

	for (int i = 0; i < (int)(sizeof(levels) / sizeof(levels[0])); i++)
		if (level && strcmp(level, levels[i]) == 0)
			return i;
	return -1;
}

static void check_containment(struct gate *g, const json_t *report)
{
	const char *want = g->req->require_containment;
	const char *have = rview_str(json_object_get(report, "environment"),
				     "containment");

	if (want && gate_containment_rank(have) < gate_containment_rank(want))
		refuse(g, "routes ran contained as '%s', the release requires "
		       "'%s' or stronger", have, want);
}

static void check_digests(struct gate *g, const json_t *report)
{
	const struct gate_require *req = g->req;
	const char *have;

	have = rview_str(json_object_get(report, "suite"), "digest");
	if (req->suite_digest && strcmp(have, req->suite_digest) != 0)
		refuse(g, "suite digest is '%s', expected '%s'", have,
		       req->suite_digest);
	have = rview_str(json_object_get(report, "tool"), "version");
	if (req->tool_version && strcmp(have, req->tool_version) != 0)
		refuse(g, "report comes from fencecert '%s', expected '%s'", have,
		       req->tool_version);
	for (size_t i = 0; i < req->ndigests; i++) {
		const char *spec = req->route_digests[i];
		const char *eq = strchr(spec, '=');
		char name[256];
		const json_t *r;

		if (!eq) {
			refuse(g, "route digest '%s' is not NAME=DIGEST", spec);
			continue;
		}
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
	if (json_array_append_new(g->checked, json_pack("{s:s, s:s, s:s, s:b}",
		"name", rview_str(r, "name"), "verdict", rview_str(r, "verdict"),
		"required", needed, "ok", ok)))
		g->rc = FC_NOMEM;
}

static void check_level(struct gate *g, const json_t *r)
{
	const char *v = rview_str(r, "verdict");
	const char *level = verdict_name(g->req->level);
	bool ok = rview_verdict_rank(v) >= rview_verdict_rank(level);

	note_route(g, r, level, ok);
	if (!ok)
		refuse(g, "route '%s' is %s, required %s%s", rview_str(r, "name"), v,
		       level, g->req->level == VERDICT_CERTIFIED_FAIL_CLOSED ?
		       " or better" : "");
}

static void check_verdicts(struct gate *g, const json_t *report)
{
	const char *rejected = verdict_name(VERDICT_REJECTED);
	json_t *r;
	size_t i;

	if (g->req->nroutes) {
		for (i = 0; i < g->req->nroutes; i++) {
			const json_t *named = find_route(report, g->req->routes[i]);
			if (named)
				check_level(g, named);
			else
				refuse(g, "route '%s' is not in the report",
				       g->req->routes[i]);
		}
		return;
	}
	if (!json_array_size(rview_arr(report, "routes")))
		refuse(g, "the report has no routes");
	json_array_foreach(rview_arr(report, "routes"), i, r) {
		/* the expectation "rejected" is the verdict's name */
		if (strcmp(rview_str(r, "expected"), rejected) != 0) {
			check_level(g, r);
			continue;
		}
		note_route(g, r, rejected,
			   strcmp(rview_str(r, "verdict"), rejected) == 0);
		if (strcmp(rview_str(r, "verdict"), rejected) != 0)
			refuse(g, "control route '%s' is %s, expected rejected: the "
			       "suite no longer tells a wrong route from a right one",
			       rview_str(r, "name"), rview_str(r, "verdict"));
	}
}

int gate_check(const json_t *report, const struct gate_require *req,
	       json_t **verdict)
{
	struct gate g = {
		.req = req,
		.reasons = json_array(),
		.checked = json_array(),
	};

	*verdict = NULL;
	if (!g.reasons || !g.checked || !gate_level_valid(req->level) ||
	    (req->require_containment &&
	     gate_containment_rank(req->require_containment) < 0))
		g.rc = g.reasons && g.checked ? FC_USAGE : FC_NOMEM;
	if (!g.rc) {
		check_signature(&g, report);
		check_digests(&g, report);
		check_containment(&g, report);
		check_verdicts(&g, report);
	}
	if (!g.rc) {
		*verdict = json_pack("{s:b, s:s, s:s, s:O, s:O}", "passed",
				     json_array_size(g.reasons) == 0, "required",
				     verdict_name(req->level), "signature",
				     g.signature, "routes", g.checked, "reasons",
				     g.reasons);
		if (!*verdict)
			g.rc = FC_NOMEM;
	}
	json_decref(g.reasons);
	json_decref(g.checked);
	return g.rc;
}
