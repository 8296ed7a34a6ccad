/*
 * report_junit.c -- JUnit XML from a report document (report_junit.h).
 *
 * Invariants:
 *  1. Every string from the report goes through rview_xml(): route names,
 *     schedule strings, details and commands may hold any character.
 *  2. Counts in <testsuite>/<testsuites> are computed from the same
 *     classification (report_schedule_class()) that chooses each
 *     testcase's child, so they always agree with the body.
 *  3. Testcases keep report order: a CI page that diffs runs lines them
 *     up by name; failing-first ordering is the HTML's job.
 */
#include <stdio.h>
#include <string.h>

#include "reports/report_junit.h"
#include "reports/rview.h"

#define MESSAGE_MAX 400 /* bytes of a failure message attribute */

struct counts {
	size_t tests, failures, errors;
	long long ms;
};

static struct counts route_counts(const json_t *route)
{
	struct counts c = { 0, 0, 0, 0 };
	json_t *s;
	size_t i;

	json_array_foreach(rview_arr(route, "schedules"), i, s) {
		enum report_class st = report_schedule_class(s);
		c.tests++;
		c.failures += st == REPORT_FAILED;
		c.errors += st == REPORT_UNVERIFIED;
		c.ms += rview_int(s, "duration_ms", 0);
	}
	return c;
}

static void attr(FILE *out, const char *name, const char *value)
{
	fprintf(out, " %s=\"", name);
	rview_xml(out, value, true);
	fputc('"', out);
}

static void property(FILE *out, const char *name, const char *value)
{
	fputs("      <property", out);
	attr(out, "name", name);
	attr(out, "value", value);
	fputs("/>\n", out);
}

static void properties(FILE *out, const json_t *report, const json_t *route)
{
	json_t *tool = json_object_get(report, "tool");
	json_t *suite = json_object_get(report, "suite");

	fputs("    <properties>\n", out);
	property(out, "verdict", rview_str(route, "verdict"));
	property(out, "expected", rview_str(route, "expected"));
	property(out, "expectation_met",
		 json_is_true(json_object_get(route, "expectation_met")) ?
		 "true" : "false");
	property(out, "route_digest", rview_str(route, "digest"));
	property(out, "suite_digest", rview_str(suite, "digest"));
	property(out, "tool_version", rview_str(tool, "version"));
	property(out, "tool_git_rev", rview_str(tool, "git_rev"));
	fputs("    </properties>\n", out);
}

/* "invariant 1 no-duplicate: detail" */
static void violation_line(FILE *out, const json_t *v, bool attribute)
{
	char head[160];

	snprintf(head, sizeof(head), "invariant %lld %s", rview_int(v, "invariant", 0),
		 rview_str(v, "name"));
	rview_xml(out, head, attribute);
	if (!attribute && *rview_str(v, "operation_id")) {
		fputs(" (operation ", out);
		rview_xml(out, rview_str(v, "operation_id"), false);
		fputc(')', out);
	}
	fputs(": ", out);
	if (attribute)
		rview_xml_cut(out, rview_str(v, "detail"), MESSAGE_MAX, true);
	else
		rview_xml(out, rview_str(v, "detail"), false);
}

static void failure(FILE *out, const json_t *sched)
{
	json_t *vs = rview_arr(sched, "violations"), *v;
	size_t i, n = json_array_size(vs);

	fputs("      <failure message=\"", out);
	violation_line(out, json_array_get(vs, 0), true);
	if (n > 1)
		fprintf(out, " (+%zu more)", n - 1);
	fputs("\" type=\"", out);
	rview_xml(out, rview_str(json_array_get(vs, 0), "name"), true);
	fputs("\">", out);
	json_array_foreach(vs, i, v) {
		violation_line(out, v, false);
		fputc('\n', out);
	}
	fputs("reproduce: ", out);
	rview_xml(out, rview_str(sched, "reproduce"), false);
	fputs("\n</failure>\n", out);
}

static void testcase(FILE *out, const json_t *route, const json_t *sched)
{
	enum report_class st = report_schedule_class(sched);

	fputs("    <testcase name=\"", out);
	rview_xml(out, rview_str(sched, "scenario"), true);
	fputc(' ', out);
	rview_xml(out, rview_str(sched, "schedule"), true);
	fputc('"', out);
	attr(out, "classname", rview_str(route, "name"));
	fprintf(out, " time=\"%.3f\">\n",
		rview_int(sched, "duration_ms", 0) / 1000.0);
	if (st == REPORT_FAILED) {
		failure(out, sched);
	} else if (st == REPORT_UNVERIFIED) {
		fputs("      <error type=\"unverified\" message=\"", out);
		rview_xml_cut(out, rview_str(sched, "outcome_detail"), MESSAGE_MAX,
			      true);
		fputs("\">", out);
		rview_xml(out, rview_str(sched, "error"), false);
		fputs("</error>\n", out);
	}
	fputs("      <system-out>outcome: ", out);
	rview_xml(out, rview_str(sched, "outcome"), false);
	fputs(" -- ", out);
	rview_xml(out, rview_str(sched, "outcome_detail"), false);
	fputs("\nreproduce: ", out);
	rview_xml(out, rview_str(sched, "reproduce"), false);
	fputs("</system-out>\n    </testcase>\n", out);
}

static void testsuite(FILE *out, const json_t *report, const json_t *route,
		      size_t id, const char *stamp)
{
	struct counts c = route_counts(route);
	char pkg[200];
	json_t *s;
	size_t i;

	snprintf(pkg, sizeof(pkg), "fencecert.%s",
		 rview_str(json_object_get(report, "suite"), "name"));
	fputs("  <testsuite", out);
	attr(out, "name", rview_str(route, "name"));
	fprintf(out, " tests=\"%zu\" failures=\"%zu\" errors=\"%zu\" "
		"skipped=\"0\" time=\"%.3f\" id=\"%zu\"", c.tests, c.failures,
		c.errors, c.ms / 1000.0, id);
	attr(out, "package", pkg);
	if (*stamp)
		attr(out, "timestamp", stamp);
	fputs(">\n", out);
	properties(out, report, route);
	json_array_foreach(rview_arr(route, "schedules"), i, s)
		testcase(out, route, s);
	fputs("    <system-out>verdict: ", out);
	rview_xml(out, rview_str(route, "verdict"), false);
	fputs(" (expected ", out);
	rview_xml(out, rview_str(route, "expected"), false);
	fputs(")</system-out>\n  </testsuite>\n", out);
}

int report_junit_write(const json_t *report, FILE *out)
{
	json_t *routes = rview_arr(report, "routes"), *r;
	struct counts all = { 0, 0, 0, 0 };
	char stamp[32], name[200];
	size_t i;

	rview_iso_time(rview_int(report, "started_at", 0), stamp, sizeof(stamp),
		       false);
	json_array_foreach(routes, i, r) {
		struct counts c = route_counts(r);
		all.tests += c.tests;
		all.failures += c.failures;
		all.errors += c.errors;
		all.ms += c.ms;
	}
	snprintf(name, sizeof(name), "fencecert %s",
		 rview_str(json_object_get(report, "suite"), "name"));
	fputs("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites", out);
	attr(out, "name", name);
	fprintf(out, " tests=\"%zu\" failures=\"%zu\" errors=\"%zu\" "
		"time=\"%.3f\">\n", all.tests, all.failures, all.errors,
		rview_int(report, "duration_ms", all.ms) / 1000.0);
	json_array_foreach(routes, i, r)
		testsuite(out, report, r, i, stamp);
	fputs("</testsuites>\n", out);
	return fflush(out) || ferror(out) ? FC_IO : 0;
}
