/*
 * child_env.h -- the environment of every process the harness starts: a
 * route attempt, a fork server, an observe.command, the operator's
 * `fencecert recover`, a service script.  It is built from nothing, never
 * inherited whole (SPEC section 9: the route is untrusted code and never
 * sees a harness secret; docs/harness.md, "Environment"):
 *
 *   1. what the starter sets (a route attempt: the protocol's variables
 *      and the suite's `env:`; the others: nothing, or their own knobs);
 *   2. from the harness's own environment, when set there, the names of
 *      the allow-list CHILD_ENV_ALLOWED (and names starting with one of
 *      CHILD_ENV_ALLOWED_PREFIXES);
 *   3. the names the caller passes on (`fencecert certify --pass-env`, or
 *      a service's script knobs), also from the harness's environment.
 *
 * Nothing else reaches a child, and FENCECERT_SIGNING_KEY never does:
 * an entry of any of the three naming it is dropped, and it cannot be
 * passed on (child_env_pass_refused()).
 *
 * Who includes it: the supervisor (harness/proc/supervise_spawn.c) and
 * the service keeper (harness/run/services.c); the command line, to check
 * --pass-env names before a run starts.
 *
 * Ownership: child_env_build() returns one allocation whose entries point
 * into set[] and the harness's environ (free() it, not its entries); it
 * must not outlive either.
 */
#ifndef FENCECERT_CHILD_ENV_H
#define FENCECERT_CHILD_ENV_H

#include <stdbool.h>
#include <stddef.h>

/* The harness's secret, which no child gets.  The same name as
 * SIGN_KEY_ENV (reports/sign.h; tests/test_child_env.c checks). */
#define CHILD_ENV_SECRET "FENCECERT_SIGNING_KEY"

/* Taken from the harness's environment when set there (documented in
 * docs/harness.md and `fencecert certify --help`). */
#define CHILD_ENV_ALLOWED \
	"PATH", "HOME", "LANG", "LANGUAGE", "TZ", "TMPDIR", "USER", \
	"LOGNAME", "TERM", "ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS"
#define CHILD_ENV_ALLOWED_PREFIXES "LC_"

/* true when `name` (len bytes, no '=') is on the allow-list. */
bool child_env_allowed(const char *name, size_t len);

/* NULL when `name` may be passed on to children, else why not: not a
 * variable name, the harness's secret, or a protocol variable the
 * harness sets itself. */
const char *child_env_pass_refused(const char *name);

/*
 * The environment of a child: `extra` (one "NAME=value" the harness sets
 * over anything else, or NULL), set[] (NULL-terminated "NAME=value", or
 * NULL), then each allowed name and each name of pass[] (NULL-terminated,
 * or NULL) that the harness's environment has and neither sets.
 * NULL-terminated; NULL when out of memory.
 */
char **child_env_build(char *const *set, const char *const *pass,
		       const char *extra);

#endif
