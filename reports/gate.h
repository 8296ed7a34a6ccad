/*
 * gate.h -- may this release go out?  The release gate over a parsed
 * report (rview_load()) and what the release requires of it.
 *
 * The gate trusts nothing it cannot check.  A report passes only when
 * every check below passes; every failing check adds one reason:
 *
 *  1. signature: with a key, the report must carry a signature that
 *     verifies (sign.h); an unsigned report is refused.  A key of length 0
 *     (a variable set but empty: a CI secret that did not expand) is
 *     refused too, so it cannot switch the check off.  Without a key the
 *     signature is not checked, unless require_signature refuses that.
 *  2. digests: suite_digest, each route_digests "NAME=D" and tool_version
 *     must equal what the report says.
 *  2a. containment: with require_containment, the report's
 *     environment.containment must be that level or a stronger one
 *     (gate_containment_rank(): sandbox > uid > reaper > none; a name
 *     the gate does not know is refused).
 *  3. verdicts: every route named in `routes` must reach `level`
 *     (certified-automatic > certified-fail-closed; rejected and
 *     unverified never pass).  With no route named every route is
 *     checked: then a control route (expected "rejected") must have been
 *     rejected -- a control that passes means the suite cannot tell right
 *     from wrong -- and every other route must reach the level.
 *
 * Owns: those rules and the shape of the gate's answer.  The command line
 * (options, messages, exit codes) is cli/cmd_gate.c's.  Who includes it:
 * cli/ and tests/.  It reads the report only through rview.h and verdicts
 * only through harness/check/verdict.h, does no I/O and reads no
 * environment: the caller passes the key.
 */
#ifndef FENCECERT_GATE_H
#define FENCECERT_GATE_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "common/error.h"
#include "harness/check/verdict.h"
#include "reports/sign.h"

struct gate_require {
	enum verdict level;      /* VERDICT_CERTIFIED_AUTOMATIC or
				    VERDICT_CERTIFIED_FAIL_CLOSED */
	const char *const *routes;        /* route names to check ... */
	size_t nroutes;                   /* ... or 0: every route (check 3) */
	const char *const *route_digests; /* "NAME=DIGEST" each */
	size_t ndigests;
	const char *suite_digest;         /* NULL: not checked */
	const char *tool_version;         /* NULL: not checked */
	const struct sign_key *key;       /* NULL: no key (check 1) */
	bool require_signature;           /* refuse when key is NULL */
	const char *require_containment;  /* NULL: not checked (2a) */
};

/* The strength of a containment level as report.json names it
 * (docs/security.md): sandbox 3, uid 2, reaper 1, none 0; -1 for a name
 * that is none of them. */
int gate_containment_rank(const char *level);

/* Whether level is one a release can require (certified-*). */
bool gate_level_valid(enum verdict level);

/*
 * Judge report against req.  *verdict becomes a new object
 *
 *   {"passed": bool, "required": LEVEL, "signature": "verified" |
 *    "refused" | "not-checked", "routes": [{"name", "verdict",
 *    "required", "ok"}], "reasons": ["...", ...]}
 *
 * with one reason per failing check, in the order above.  Returns 0;
 * FC_USAGE when req->level is not one gate_level_valid() accepts, or
 * FC_NOMEM (then *verdict is NULL).
 */
int gate_check(const json_t *report, const struct gate_require *req,
	       json_t **verdict) FC_MUST_CHECK;

#endif
