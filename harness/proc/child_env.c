/*
 * child_env.c -- the environment of a process the harness starts, from an
 * allow-list (child_env.h).
 *
 * Invariants:
 *  1. Nothing of the harness's environment reaches a child unless its name
 *     is on the allow-list or was passed on by name.
 *  2. No entry naming CHILD_ENV_SECRET is ever in the result, whoever
 *     asked for it.
 *  3. The first entry for a name wins: what the starter sets overrides
 *     the harness's value, and a name appears once.
 */
#include <stdlib.h>
#include <string.h>

#include "common/protocol.h"
#include "harness/proc/child_env.h"

extern char **environ;

static const char *const allowed[] = { CHILD_ENV_ALLOWED };
static const char *const allowed_prefixes[] = { CHILD_ENV_ALLOWED_PREFIXES };

/* Set per attempt by the harness: never passed on from its own
 * environment. */
static const char *const protocol_names[] = {
	PROTO_ENV_JOURNAL, PROTO_ENV_TARGET, PROTO_ENV_WORKLOAD,
	PROTO_ENV_TRY_NUMBER, PROTO_ENV_RUN_DIR, PROTO_ENV_XCOM_DIR,
	PROTO_ENV_PREV_XCOM_DIR, PROTO_ENV_LEASE_TTL_MS, PROTO_ENV_LEASE_OWNER,
	PROTO_ENV_BIN, PROTO_ENV_FAILPOINT_FD, PROTO_ENV_FAILPOINT_WAIT,
	PROTO_ENV_FORK_SERVER_FD, PROTO_ENV_WRITABLE,
};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static bool named(const char *entry, const char *name, size_t len)
{
	return strncmp(entry, name, len) == 0 && entry[len] == '=';
}

static bool is_secret(const char *entry)
{
	return named(entry, CHILD_ENV_SECRET, sizeof(CHILD_ENV_SECRET) - 1);
}

bool child_env_allowed(const char *name, size_t len)
{
	for (size_t i = 0; i < COUNT(allowed); i++)
		if (strlen(allowed[i]) == len && memcmp(name, allowed[i], len) == 0)
			return true;
	for (size_t i = 0; i < COUNT(allowed_prefixes); i++) {
		size_t pl = strlen(allowed_prefixes[i]);

		if (len > pl && memcmp(name, allowed_prefixes[i], pl) == 0)
			return true;
	}
	return false;
}

const char *child_env_pass_refused(const char *name)
{
	size_t len = strlen(name);

	if (!len || strchr(name, '=') || (name[0] >= '0' && name[0] <= '9'))
		return "not an environment variable name";
	for (size_t i = 0; i < len; i++) {
		char c = name[i];

		if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
		      (c >= '0' && c <= '9') || c == '_'))
			return "not an environment variable name";
	}
	if (strcmp(name, CHILD_ENV_SECRET) == 0)
		return "the signing key is the harness's secret and never "
		       "reaches a route";
	for (size_t i = 0; i < COUNT(protocol_names); i++)
		if (strcmp(name, protocol_names[i]) == 0)
			return "the harness sets this protocol variable itself";
	return NULL;
}

/* Whether out[0..n) already has an entry for the name of `entry`. */
static bool present(char **out, size_t n, const char *entry)
{
	size_t len = strcspn(entry, "=");

	for (size_t i = 0; i < n; i++)
		if (named(out[i], entry, len))
			return true;
	return false;
}

static bool passed(const char *const *pass, const char *entry, size_t len)
{
	for (size_t i = 0; pass && pass[i]; i++)
		if (strlen(pass[i]) == len && memcmp(entry, pass[i], len) == 0)
			return true;
	return false;
}

char **child_env_build(char *const *set, const char *const *pass,
		       const char *extra)
{
	size_t cap = 2, n = 0;
	char **out;

	for (size_t i = 0; set && set[i]; i++)
		cap++;
	for (char **e = environ; e && *e; e++)
		cap++;
	out = calloc(cap, sizeof(*out));
	if (!out)
		return NULL;
	if (extra && !is_secret(extra))
		out[n++] = (char *)extra;
	for (size_t i = 0; set && set[i]; i++)
		if (strchr(set[i], '=') && !is_secret(set[i]) &&
		    !present(out, n, set[i]))
			out[n++] = set[i];
	for (char **e = environ; e && *e; e++) {
		size_t len = strcspn(*e, "=");

		if (!(*e)[len] || is_secret(*e) || present(out, n, *e))
			continue;
		if (child_env_allowed(*e, len) || passed(pass, *e, len))
			out[n++] = *e;
	}
	out[n] = NULL;
	return out;
}
