/*
 * scenario_template.c -- the placeholders of route templates ({dir},
 * {schedule_id}, {env:VAR}, {service:NAME}, {proxy:NAME}): checked when a
 * suite is loaded (scenario_template_check(), by the loader and by
 * schedule.c for a syscall rule's glob), expanded when a schedule runs
 * (scenario_expand()).  It looks names up in the loaded suite (suite.c)
 * and calls nothing else of the model.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/model/scenario_impl.h"

/* ---- templates ------------------------------------------------------ */

bool scenario__env_name_valid(const char *s, size_t len)
{
	if (len == 0 || !((s[0] >= 'A' && s[0] <= 'Z') ||
			  (s[0] >= 'a' && s[0] <= 'z') || s[0] == '_'))
		return false;
	for (size_t i = 1; i < len; i++)
		if (!((s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= 'a' && s[i] <= 'z') ||
		      (s[i] >= '0' && s[i] <= '9') || s[i] == '_'))
			return false;
	return true;
}

static bool service_name_valid(const char *s, size_t len)
{
	if (len == 0 || len >= SCENARIO_NAME_MAX)
		return false;
	for (size_t i = 0; i < len; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
		      (s[i] >= '0' && s[i] <= '9') ||
		      (i > 0 && (s[i] == '.' || s[i] == '_' || s[i] == '-'))))
			return false;
	return true;
}

/* What {service:NAME} and {proxy:NAME} name: the same rules for both. */
enum named { NAMED_SERVICE, NAMED_PROXY, NAMED_COUNT };
static const char *const named_noun[NAMED_COUNT] = { "service", "proxy" };

/* Which kind `name` (len bytes) names as "KIND:NAME", with NAME copied
 * into var; -1 when it is neither. */
static int named_kind(const char *name, size_t len, char *var)
{
	for (int k = 0; k < NAMED_COUNT; k++) {
		size_t n = strlen(named_noun[k]);

		if (len > n + 1 && memcmp(name, named_noun[k], n) == 0 &&
		    name[n] == ':' &&
		    service_name_valid(name + n + 1, len - n - 1)) {
			memcpy(var, name + n + 1, len - n - 1);
			var[len - n - 1] = '\0';
			return k;
		}
	}
	return -1;
}

static bool named_in_suite(const struct suite *s, enum named k,
			   const char *var)
{
	return k == NAMED_SERVICE ? suite_service(s, var) != NULL
				  : suite_proxy(s, var) != NULL;
}

/* The address of the running service or proxy, NULL when none runs. */
static const char *named_running(const struct template_vars *v, enum named k,
				 const char *var)
{
	if (k == NAMED_SERVICE)
		return v->service ? v->service(v->service_ctx, var) : NULL;
	return v->proxy ? v->proxy(v->proxy_ctx, var) : NULL;
}

/* A {service:NAME} or {proxy:NAME} placeholder, as placeholder() below
 * treats it. */
static int named_placeholder(enum named k, const char *var,
			     const struct suite *s,
			     const struct template_vars *v, const char **value,
			     char *err, size_t errlen)
{
	const char *noun = named_noun[k];

	if (!v && s && !named_in_suite(s, k, var)) {
		snprintf(err, errlen,
			 "placeholder '{%s:%s}' names no %s of the suite",
			 noun, var, noun);
		return FC_USAGE;
	}
	if (v && !(*value = named_running(v, k, var))) {
		snprintf(err, errlen, "%s '%s' is not running", noun, var);
		return FC_USAGE;
	}
	return 0;
}

/* The value of one placeholder `name` (len bytes, without braces).  With
 * v NULL only the syntax is checked, and `{service:NAME}` against the
 * suite's services when s is given.  {env:NAME} is looked up only when
 * expanding: the environment belongs to the run, not the file. */
static int placeholder(const char *name, size_t len, const struct suite *s,
		       const struct template_vars *v, const char **value,
		       char *err, size_t errlen)
{
	char var[SCENARIO_NAME_MAX > 256 ? SCENARIO_NAME_MAX : 256];
	int k;

	*value = "";
	if (len == 3 && memcmp(name, "dir", 3) == 0) {
		if (v && !(*value = v->dir)) {
			snprintf(err, errlen, "placeholder '{dir}' has no value here");
			return FC_USAGE;
		}
		return 0;
	}
	if (len == 11 && memcmp(name, "schedule_id", 11) == 0) {
		if (v && !(*value = v->schedule_id)) {
			snprintf(err, errlen, "placeholder '{schedule_id}' has no value here");
			return FC_USAGE;
		}
		return 0;
	}
	if ((k = named_kind(name, len, var)) >= 0)
		return named_placeholder(k, var, s, v, value, err, errlen);
	if (len > 4 && memcmp(name, "env:", 4) == 0 &&
	    scenario__env_name_valid(name + 4, len - 4)) {
		if (len - 4 >= sizeof(var)) {
			snprintf(err, errlen, "environment variable name in '{%.40s' is too long",
				 name);
			return FC_USAGE;
		}
		memcpy(var, name + 4, len - 4);
		var[len - 4] = '\0';
		/* the harness's secret (reports/sign.h SIGN_KEY_ENV) never
		 * reaches a route (harness/proc/child_env.h) */
		if (strcmp(var, "FENCECERT_SIGNING_KEY") == 0) {
			snprintf(err, errlen, "placeholder '{env:%s}': the signing "
				 "key is never given to a route", var);
			return FC_USAGE;
		}
		if (v && !(*value = getenv(var))) {
			snprintf(err, errlen, "environment variable '%s' is not set", var);
			return FC_USAGE;
		}
		return 0;
	}
	snprintf(err, errlen,
		 "unknown placeholder '{%.*s}' (expected {dir}, {schedule_id}, {service:NAME}, {proxy:NAME} or {env:NAME})",
		 (int)(len > 40 ? 40 : len), name);
	return FC_USAGE;
}

/*
 * Walk a template.  With sink NULL only the syntax is checked.
 * Grammar: "{{" is a literal '{'; "{dir}"; "{schedule_id}";
 * "{service:NAME}"; "{env:NAME}"; any other "{...}" is an error; '}' on
 * its own is literal.
 */
static int template_walk(const char *tmpl, const struct suite *s,
			 const struct template_vars *v, FILE *sink,
			 char *err, size_t errlen)
{
	for (const char *p = tmpl; *p; p++) {
		const char *end, *value;
		int rc;

		if (*p != '{') {
			if (sink)
				fputc(*p, sink);
			continue;
		}
		if (p[1] == '{') {
			if (sink)
				fputc('{', sink);
			p++;
			continue;
		}
		end = strchr(p, '}');
		if (!end) {
			snprintf(err, errlen, "unterminated placeholder '%.40s' (write '{{' for a literal brace)",
				 p);
			return FC_USAGE;
		}
		rc = placeholder(p + 1, (size_t)(end - p - 1), s, v, &value, err,
				 errlen);
		if (rc)
			return rc;
		if (sink)
			fputs(value, sink);
		p = end;
	}
	return 0;
}

int scenario_template_check(const struct suite *s, const char *tmpl,
			     char *err, size_t errlen)
{
	return template_walk(tmpl, s, NULL, NULL, err, errlen);
}

int scenario_expand(const char *tmpl, const struct template_vars *v,
		    char **out, char *err, size_t errlen)
{
	char *buf = NULL;
	size_t size = 0;
	FILE *sink = open_memstream(&buf, &size);
	int rc;

	*out = NULL;
	if (!sink) {
		snprintf(err, errlen, "out of memory expanding '%.40s'", tmpl);
		return FC_NOMEM;
	}
	rc = template_walk(tmpl, NULL, v, sink, err, errlen);
	if (fclose(sink) != 0 && rc == 0) {
		snprintf(err, errlen, "out of memory expanding '%.40s'", tmpl);
		rc = FC_NOMEM;
	}
	if (rc == 0 && size > TEMPLATE_MAX_OUTPUT) {
		snprintf(err, errlen, "expansion of '%.40s' is longer than %d bytes",
			 tmpl, TEMPLATE_MAX_OUTPUT);
		rc = FC_USAGE;
	}
	if (rc < 0) {
		free(buf);
		return rc;
	}
	*out = buf;
	return 0;
}
