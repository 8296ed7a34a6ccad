/*
 * rview.c -- read helpers over a fencecert.report.v1 document (rview.h).
 *
 * Invariants:
 *  1. Getters never fail: a missing member reads as "" / the default, so
 *     a renderer prints something sensible for a report from an older or
 *     newer harness.  Whether a document is a report at all is decided in
 *     one place, rview_check().
 *  2. Escapers produce well-formed output for every valid UTF-8 input
 *     (jansson only hands out valid UTF-8): nothing a route writes into a
 *     failpoint name or a row key can break out of an attribute, a table
 *     cell or an element.
 */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "harness/check/verdict.h"
#include "harness/check/report_summary.h"
#include "reports/rview.h"

const char *rview_str(const json_t *obj, const char *key)
{
	const char *s = json_string_value(json_object_get(obj, key));

	return s ? s : "";
}

long long rview_int(const json_t *obj, const char *key, long long dflt)
{
	json_t *v = json_object_get(obj, key);

	return json_is_integer(v) ? (long long)json_integer_value(v) : dflt;
}

json_t *rview_arr(const json_t *obj, const char *key)
{
	json_t *v = json_object_get(obj, key);

	return json_is_array(v) ? v : NULL;
}

static bool is_directory(FILE *f)
{
	struct stat st;

	return fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode);
}

/* A directory given for a report, most often certify's --out itself:
 * say so, and name the report inside when there is one. */
static void dir_message(const char *path, char *err, size_t errlen)
{
	size_t n = strlen(path);
	char inside[4096];

	while (n > 1 && path[n - 1] == '/')
		n--;
	snprintf(inside, sizeof(inside), "%.*s/report.json", (int)n, path);
	if (access(inside, F_OK) == 0)
		snprintf(err, errlen, "'%s' is a directory, not a report: give "
			 "the report file, '%s'", path, inside);
	else
		snprintf(err, errlen, "'%s' is a directory, not a report file "
			 "(a report is a report.json)", path);
}

int rview_load(const char *path, json_t **out, char *err, size_t errlen)
{
	json_error_t je;
	json_t *doc;
	FILE *f = fopen(path, "r");
	int rc;

	if (!f) {
		snprintf(err, errlen, "cannot read report '%s': %m", path);
		return FC_IO;
	}
	if (is_directory(f)) {
		fclose(f);
		dir_message(path, err, errlen);
		return FC_IO;
	}
	doc = json_loadf(f, JSON_REJECT_DUPLICATES, &je);
	fclose(f);
	if (!doc) {
		snprintf(err, errlen, "report '%s' is not JSON: line %d column "
			 "%d: %s", path, je.line, je.column, je.text);
		return FC_CORRUPT;
	}
	rc = rview_check(doc, err, errlen);
	if (rc) {
		json_decref(doc);
		return rc;
	}
	*out = doc;
	return 0;
}

static int check_route(const json_t *r, size_t i, char *err, size_t errlen)
{
	json_t *scheds = json_object_get(r, "schedules"), *s;
	const char *name = json_string_value(json_object_get(r, "name"));
	const char *v = json_string_value(json_object_get(r, "verdict"));
	enum verdict verdict;
	size_t k;

	if (!json_is_object(r) || !name) {
		snprintf(err, errlen, "routes[%zu] has no 'name'", i);
		return FC_CORRUPT;
	}
	if (!v || verdict_parse(v, &verdict) != 0) {
		snprintf(err, errlen, "route '%s' has no valid 'verdict'", name);
		return FC_CORRUPT;
	}
	if (!json_is_array(scheds)) {
		snprintf(err, errlen, "route '%s' has no 'schedules' array", name);
		return FC_CORRUPT;
	}
	json_array_foreach(scheds, k, s) {
		if (!json_is_string(json_object_get(s, "scenario")) ||
		    !json_is_string(json_object_get(s, "schedule")) ||
		    !json_is_string(json_object_get(s, "outcome")) ||
		    !json_is_array(json_object_get(s, "violations"))) {
			snprintf(err, errlen, "route '%s' schedules[%zu] lacks "
				 "scenario, schedule, outcome or violations", name, k);
			return FC_CORRUPT;
		}
	}
	return 0;
}

int rview_check(const json_t *report, char *err, size_t errlen)
{
	json_t *routes = json_object_get(report, "routes"), *r;
	const char *schema = json_string_value(json_object_get(report, "schema"));
	size_t i;

	if (!json_is_object(report)) {
		snprintf(err, errlen, "report is not a JSON object");
		return FC_CORRUPT;
	}
	if (!schema || strcmp(schema, RVIEW_SCHEMA) != 0) {
		snprintf(err, errlen, "unknown report schema '%s' (want '%s')",
			 schema ? schema : "", RVIEW_SCHEMA);
		return FC_CORRUPT;
	}
	if (!json_is_string(json_object_get(json_object_get(report, "tool"),
					    "version")) ||
	    !json_is_string(json_object_get(json_object_get(report, "suite"),
					    "digest"))) {
		snprintf(err, errlen, "report lacks 'tool.version' or "
			 "'suite.digest'");
		return FC_CORRUPT;
	}
	if (!json_is_array(routes)) {
		snprintf(err, errlen, "report has no 'routes' array");
		return FC_CORRUPT;
	}
	json_array_foreach(routes, i, r) {
		int rc = check_route(r, i, err, errlen);
		if (rc)
			return rc;
	}
	return 0;
}

int rview_verdict_rank(const char *verdict)
{
	enum verdict v;

	if (verdict_parse(verdict, &v) != 0)
		return 0;
	return v == VERDICT_CERTIFIED_AUTOMATIC ? 2 :
	       v == VERDICT_CERTIFIED_FAIL_CLOSED ? 1 : 0;
}

void rview_schedule_order(const json_t *route, size_t *idx)
{
	static const enum report_class order[] = {
		REPORT_FAILED, REPORT_UNVERIFIED, REPORT_PASSED,
	};
	json_t *scheds = rview_arr(route, "schedules"), *s;
	size_t k = 0, i;

	for (size_t g = 0; g < sizeof(order) / sizeof(*order); g++)
		json_array_foreach(scheds, i, s)
			if (report_schedule_class(s) == order[g])
				idx[k++] = i;
}

void rview_iso_time(long long ms, char *out, size_t len, bool zone)
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;

	if (ms <= 0 || !gmtime_r(&t, &tm) ||
	    !strftime(out, len, zone ? "%Y-%m-%dT%H:%M:%SZ" : "%Y-%m-%dT%H:%M:%S",
		      &tm))
		out[0] = '\0';
}

/* --- escaping -------------------------------------------------------------------- */

static void xml_byte(FILE *out, unsigned char c, bool attribute)
{
	switch (c) {
	case '&': fputs("&amp;", out); return;
	case '<': fputs("&lt;", out); return;
	case '>': fputs("&gt;", out); return;
	case '"': fputs("&quot;", out); return;
	case '\'': fputs("&#39;", out); return;
	case '\n': fputs(attribute ? "&#10;" : "\n", out); return;
	case '\t': fputs(attribute ? "&#9;" : "\t", out); return;
	case '\r': fputs("&#13;", out); return;
	}
	if (c < 0x20)
		fputs("\xef\xbf\xbd", out); /* XML 1.0 has no way to say these */
	else
		fputc(c, out);
}

/* Escape the first n bytes of s (n ends on a character boundary). */
static void xml_n(FILE *out, const char *s, size_t n, bool attribute)
{
	const unsigned char *p = (const unsigned char *)s;

	for (size_t i = 0; i < n; i++) {
		/* U+FFFE and U+FFFF (EF BF BE/BF) are not XML characters. */
		if (p[i] == 0xef && i + 2 < n && p[i + 1] == 0xbf &&
		    (p[i + 2] == 0xbe || p[i + 2] == 0xbf)) {
			fputs("\xef\xbf\xbd", out);
			i += 2;
			continue;
		}
		xml_byte(out, p[i], attribute);
	}
}

void rview_xml(FILE *out, const char *s, bool attribute)
{
	xml_n(out, s, strlen(s), attribute);
}

void rview_xml_cut(FILE *out, const char *s, size_t max, bool attribute)
{
	size_t n = strlen(s);

	if (n <= max) {
		xml_n(out, s, n, attribute);
		return;
	}
	while (max > 0 && ((unsigned char)s[max] & 0xc0) == 0x80)
		max--; /* do not split a UTF-8 sequence */
	xml_n(out, s, max, attribute);
	fputs("\xe2\x80\xa6", out);
}

void rview_md(FILE *out, const char *s)
{
	for (const char *p = s; *p; p++) {
		switch (*p) {
		case '|': case '`': case '*': case '_': case '[': case ']':
		case '\\': case '#': case '~':
			fputc('\\', out);
			fputc(*p, out);
			break;
		case '<': fputs("&lt;", out); break;
		case '>': fputs("&gt;", out); break;
		case '&': fputs("&amp;", out); break;
		case '\n': fputs("<br>", out); break;
		case '\r': break;
		default:
			if ((unsigned char)*p < 0x20)
				fputs("\xef\xbf\xbd", out);
			else
				fputc(*p, out);
		}
	}
}
