/*
 * report_md.c -- the Markdown summary (report_md.h).
 *
 * Invariants:
 *  1. Text from the report goes through rview_md() in prose and table
 *     cells; commands go in fenced blocks whose fence is longer than any
 *     run of backticks inside, so no command can end its block early.
 *  2. The output is bounded: violations are capped per route and overall,
 *     with a line saying how many were left out and where to find them.
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "harness/check/verdict.h"
#include "reports/report_md.h"
#include "reports/rview.h"

static const char *verdict_icon(const char *name)
{
	enum verdict v;

	if (verdict_parse(name, &v) != 0)
		return "⚠️";
	switch (v) {
	case VERDICT_CERTIFIED_AUTOMATIC: return "✅";
	case VERDICT_CERTIFIED_FAIL_CLOSED: return "🟦";
	case VERDICT_REJECTED: return "❌";
	default: return "⚠️";
	}
}

static size_t longest_backtick_run(const char *text)
{
	size_t run = 0, longest = 0;

	for (const char *p = text; *p; p++) {
		run = *p == '`' ? run + 1 : 0;
		if (run > longest)
			longest = run;
	}
	return longest;
}

static void backticks(FILE *out, size_t n)
{
	for (size_t i = 0; i < n; i++)
		fputc('`', out);
}

/* A fenced block, every line indented so it stays inside a list item. */
static void code_block(FILE *out, const char *indent, const char *lang,
		       const char *text)
{
	size_t longest = longest_backtick_run(text);
	size_t fence = longest < 3 ? 3 : longest + 1;

	fputs(indent, out);
	backticks(out, fence);
	fprintf(out, "%s\n%s", lang, indent);
	for (const char *p = text; *p; p++) {
		fputc(*p, out);
		if (*p == '\n')
			fputs(indent, out);
	}
	fprintf(out, "\n%s", indent);
	backticks(out, fence);
	fputc('\n', out);
}

/* An inline code span for text outside tables: backslashes mean nothing
 * inside one, so the text goes in raw behind a long enough fence. */
static void code_span(FILE *out, const char *text)
{
	size_t fence = longest_backtick_run(text) + 1;
	bool pad = text[0] == '`' || (*text && text[strlen(text) - 1] == '`');

	backticks(out, fence);
	fputs(pad ? " " : "", out);
	for (const char *p = text; *p; p++)
		fputc(*p == '\n' || *p == '\r' ? ' ' : *p, out);
	fputs(pad ? " " : "", out);
	backticks(out, fence);
}

static void heading(FILE *out, const json_t *report)
{
	json_t *routes = rview_arr(report, "routes"), *r;
	size_t met = 0, i;

	json_array_foreach(routes, i, r)
		met += json_is_true(json_object_get(r, "expectation_met"));
	fprintf(out, "## %s fencecert: suite ", met == json_array_size(routes) ?
		"✅" : "❌");
	code_span(out, rview_str(json_object_get(report, "suite"), "name"));
	fprintf(out, " — %zu of %zu routes met their expectation\n\n", met,
		json_array_size(routes));
}

static void verdict_table(FILE *out, const json_t *report)
{
	json_t *r;
	size_t i;

	fputs("| route | verdict | expected | met | schedules | violations | "
	      "failpoints declared / reached / faulted |\n"
	      "| :--- | :--- | :--- | :---: | ---: | ---: | ---: |\n", out);
	json_array_foreach(rview_arr(report, "routes"), i, r) {
		json_t *c = json_object_get(r, "coverage");
		const char *v = rview_str(r, "verdict");
		fputs("| ", out);
		rview_md(out, rview_str(r, "name"));
		fprintf(out, " | %s ", verdict_icon(v));
		rview_md(out, v);
		fputs(" | ", out);
		rview_md(out, rview_str(r, "expected"));
		fprintf(out, " | %s | %zu | %zu | %lld / %lld / %lld |\n",
			json_is_true(json_object_get(r, "expectation_met")) ?
			"yes" : "**NO**",
			json_array_size(rview_arr(r, "schedules")),
			json_array_size(rview_arr(r, "violations")),
			rview_int(c, "failpoints_declared", 0),
			rview_int(c, "failpoints_reached", 0),
			rview_int(c, "failpoints_faulted", 0));
	}
	fputc('\n', out);
}

static void violation(FILE *out, const json_t *v)
{
	fprintf(out, "- invariant %lld **", rview_int(v, "invariant", 0));
	rview_md(out, rview_str(v, "name"));
	fputs("** in ", out);
	code_span(out, rview_str(v, "scenario"));
	fputs(" schedule ", out);
	code_span(out, rview_str(v, "schedule"));
	fputs(": ", out);
	rview_md(out, rview_str(v, "detail"));
	fputs("\n\n  reproduce:\n\n", out);
	code_block(out, "  ", "sh", rview_str(v, "reproduce"));
	fputc('\n', out);
}

static void violations(FILE *out, const json_t *report)
{
	json_t *r, *v;
	size_t i, k, shown = 0, total = 0, left = 0;

	json_array_foreach(rview_arr(report, "routes"), i, r)
		total += json_array_size(rview_arr(r, "violations"));
	if (!total)
		return;
	fprintf(out, "### Violations (%zu)\n\n", total);
	json_array_foreach(rview_arr(report, "routes"), i, r) {
		json_t *vs = rview_arr(r, "violations");
		if (!json_array_size(vs))
			continue;
		fputs("#### ", out);
		rview_md(out, rview_str(r, "name"));
		fputs(" — ", out);
		rview_md(out, rview_str(r, "verdict"));
		fputs(json_is_true(json_object_get(r, "expectation_met")) ?
		      " (expected)\n\n" : " (**not expected**)\n\n", out);
		json_array_foreach(vs, k, v) {
			if (k >= MD_VIOLATIONS_PER_ROUTE || shown >= MD_VIOLATIONS_MAX) {
				left += json_array_size(vs) - k;
				break;
			}
			violation(out, v);
			shown++;
		}
	}
	if (left)
		fprintf(out, "_%zu more violation(s) are in report.json and "
			"report.html._\n\n", left);
}

static void unverified(FILE *out, const json_t *report)
{
	json_t *r, *n;
	size_t i, k;
	bool any = false;

	json_array_foreach(rview_arr(report, "routes"), i, r) {
		json_t *notes = rview_arr(json_object_get(r, "coverage"), "unverified");
		json_array_foreach(notes, k, n) {
			if (!any)
				fputs("### Unverified\n\n", out);
			any = true;
			fputs("- **", out);
			rview_md(out, rview_str(r, "name"));
			fputs("**: ", out);
			rview_md(out, json_string_value(n) ? json_string_value(n) : "");
			fputc('\n', out);
		}
	}
	if (any)
		fputc('\n', out);
}

static void names(FILE *out, const json_t *arr)
{
	json_t *n;
	size_t i;

	if (!json_array_size(arr))
		fputs("—", out);
	json_array_foreach(arr, i, n) {
		fputs(i ? ", " : "", out);
		rview_md(out, json_string_value(n) ? json_string_value(n) : "");
	}
}

static void coverage(FILE *out, const json_t *report)
{
	json_t *r;
	size_t i;

	fputs("<details><summary>Coverage</summary>\n\n"
	      "| route | reached | never faulted | syscall occurrences |\n"
	      "| :--- | :--- | :--- | ---: |\n", out);
	json_array_foreach(rview_arr(report, "routes"), i, r) {
		json_t *c = json_object_get(r, "coverage");
		fputs("| ", out);
		rview_md(out, rview_str(r, "name"));
		fputs(" | ", out);
		names(out, rview_arr(c, "reached"));
		fputs(" | ", out);
		names(out, rview_arr(c, "never_faulted"));
		fprintf(out, " | %lld |\n",
			rview_int(c, "syscall_occurrences_explored", 0));
	}
	fputs("\n</details>\n\n", out);
}

/* How each scenario ran: recorded (schedules seeded from recorded states,
 * equal states judged once) or re-executed, with the counts
 * (docs/crash-states.md). */
static void exploration(FILE *out, const json_t *report)
{
	json_t *r, *e;
	size_t i, k;
	bool any = false;

	json_array_foreach(rview_arr(report, "routes"), i, r)
		any |= json_array_size(rview_arr(json_object_get(r, "coverage"),
						 "exploration")) > 0;
	if (!any)
		return;
	fputs("<details><summary>Exploration</summary>\n\n"
	      "| route | scenario | mode | schedules | run | from a recorded "
	      "state | inherited | distinct states | attempts run | "
	      "nondeterministic |\n"
	      "| :--- | :--- | :--- | ---: | ---: | ---: | ---: | ---: | ---: "
	      "| ---: |\n", out);
	json_array_foreach(rview_arr(report, "routes"), i, r)
		json_array_foreach(rview_arr(json_object_get(r, "coverage"),
					     "exploration"), k, e) {
			fputs("| ", out);
			rview_md(out, rview_str(r, "name"));
			fputs(" | ", out);
			rview_md(out, rview_str(e, "scenario"));
			fputs(" | ", out);
			rview_md(out, rview_str(e, "mode"));
			fprintf(out, " | %lld | %lld | %lld | %lld | %lld | %lld | "
				"%lld |\n", rview_int(e, "schedules", 0),
				rview_int(e, "executed", 0),
				rview_int(e, "seeded", 0),
				rview_int(e, "inherited", 0),
				rview_int(e, "distinct_states", 0),
				rview_int(e, "attempts_run", 0),
				rview_int(e, "nondeterministic", 0));
		}
	fputs("\n", out);
	json_array_foreach(rview_arr(report, "routes"), i, r)
		json_array_foreach(rview_arr(json_object_get(r, "coverage"),
					     "exploration"), k, e) {
			if (rview_int(e, "states_refused", 0) <= 0)
				continue;
			fputs("- ", out);
			rview_md(out, rview_str(r, "name"));
			fputs(" / ", out);
			rview_md(out, rview_str(e, "scenario"));
			fprintf(out, ": %lld state(s) not recorded (",
				rview_int(e, "states_refused", 0));
			rview_md(out, rview_str(e, "refused_why"));
			fputs("); the schedules that would have started there "
			      "ran whole\n", out);
		}
	json_array_foreach(rview_arr(report, "routes"), i, r)
		json_array_foreach(rview_arr(json_object_get(r, "coverage"),
					     "exploration"), k, e) {
			const char *w = rview_str(e, "retry_wave");

			if (strcmp(w, "one kill per recovery path") != 0)
				continue;
			fputs("- ", out);
			rview_md(out, rview_str(r, "name"));
			fputs(" / ", out);
			rview_md(out, rview_str(e, "scenario"));
			fputs(": try 2 explored after one kill per recovery path "
			      "(its state cannot be compared: kills that leave "
			      "different states but the same try-2 failpoints "
			      "were followed once)\n", out);
		}
	fputs("\n</details>\n\n", out);
}

static void facts(FILE *out, const json_t *report)
{
	json_t *tool = json_object_get(report, "tool");
	json_t *suite = json_object_get(report, "suite");

	fputs("<sub>fencecert ", out);
	rview_md(out, rview_str(tool, "version"));
	fputs(" (git ", out);
	rview_md(out, rview_str(tool, "git_rev"));
	fputs(") · suite digest ", out);
	code_span(out, rview_str(suite, "digest"));
	fprintf(out, " · %.1f s · %s</sub>\n",
		rview_int(report, "duration_ms", 0) / 1000.0,
		json_is_object(json_object_get(report, "signature")) ?
		"signed (hmac-sha256)" : "unsigned");
}

int report_md_write(const json_t *report, FILE *out)
{
	heading(out, report);
	verdict_table(out, report);
	violations(out, report);
	unverified(out, report);
	coverage(out, report);
	exploration(out, report);
	facts(out, report);
	return fflush(out) || ferror(out) ? FC_IO : 0;
}
