/*
 * report_html.c -- the self-contained HTML report (report_html.h).
 *
 * Invariants:
 *  1. Nothing is fetched: the stylesheet, the timelines and the script
 *     are inline; links are fragment links inside the page.
 *  2. Every string from the report is escaped with rview_xml(); ids and
 *     anchors are built from indices, never from names.
 *  3. A reader finds the trouble without opening anything: failing and
 *     unverified schedules come first and open, passing ones collapsed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/check/verdict.h"
#include "reports/report_html.h"
#include "reports/rview.h"
#include "reports/timeline.h"

static const char css[] =
	":root{--ok:#1a7f37;--fc:#0969da;--bad:#cf222e;--unv:#9a6700;"
	"--mut:#57606a;--bg:#f6f8fa;--bd:#d0d7de}\n"
	"*{box-sizing:border-box}\n"
	"body{margin:0;color:#1f2328;background:#fff;font:14px/1.45 system-ui,"
	"-apple-system,'Segoe UI',Roboto,'DejaVu Sans',sans-serif}\n"
	"main{max-width:1180px;margin:0 auto;padding:20px 24px 40px}\n"
	"h1{font-size:22px;margin:0 0 2px}h2{font-size:18px;margin:28px 0 8px;"
	"padding-top:12px;border-top:2px solid var(--bd)}"
	"h3{font-size:15px;margin:18px 0 6px}\n"
	".sub{color:var(--mut);margin:0 0 14px}\n"
	"dl.facts{display:grid;grid-template-columns:max-content 1fr;gap:2px 14px;"
	"margin:0 0 14px;font-size:13px}dl.facts dt{color:var(--mut)}"
	"dl.facts dd{margin:0;overflow-wrap:anywhere}\n"
	".cards{display:flex;gap:10px;flex-wrap:wrap;margin:10px 0 16px}\n"
	".card{border:1px solid var(--bd);border-radius:8px;padding:8px 14px;"
	"min-width:120px}.card b{display:block;font-size:22px}"
	".card .lbl{color:var(--mut);font-size:12px}\n"
	".badge{display:inline-block;padding:1px 9px;border-radius:10px;"
	"font-size:12px;font-weight:600;color:#fff;white-space:nowrap}\n"
	".v-certified-automatic{background:var(--ok)}"
	".v-certified-fail-closed{background:var(--fc)}"
	".v-rejected{background:var(--bad)}.v-unverified{background:var(--unv)}\n"
	".s-failed{background:var(--bad)}.s-unverified{background:var(--unv)}"
	".s-passed{background:var(--ok)}\n"
	"table{border-collapse:collapse;width:100%;margin:6px 0 12px;font-size:13px}"
	"th,td{border-bottom:1px solid var(--bd);padding:5px 8px;text-align:left;"
	"vertical-align:top}th{background:var(--bg);font-weight:600}"
	"td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}\n"
	"td.bad{color:var(--bad);font-weight:700}tr.miss td:first-child{"
	"border-left:3px solid var(--bad)}\n"
	"code,pre{font:12px/1.4 'DejaVu Sans Mono',ui-monospace,monospace}"
	"code{background:var(--bg);padding:0 3px;border-radius:3px;"
	"overflow-wrap:anywhere}dd code{display:inline-block;margin:1px 0}\n"
	"pre.repro{background:#0d1117;color:#e6edf3;padding:8px 10px;"
	"border-radius:6px;white-space:pre-wrap;word-break:break-all;margin:4px 0}\n"
	".viol{border-left:3px solid var(--bad);background:#fff5f5;"
	"padding:6px 10px;margin:6px 0;border-radius:0 6px 6px 0}\n"
	"details.sched{border:1px solid var(--bd);border-radius:6px;margin:10px 0}"
	"details.sched>summary{padding:7px 10px;cursor:pointer;background:var(--bg);"
	"border-radius:6px}details.sched[open]>summary{border-radius:6px 6px 0 0}"
	"details.sched .body{padding:6px 12px 10px}\n"
	"details.sched.failed{border-color:var(--bad)}"
	"details.sched.failed>summary{background:#ffebe9}"
	"details.sched.unverified{border-color:#d4a72c}"
	"details.sched.unverified>summary{background:#fff8c5}\n"
	"details.group>summary{cursor:pointer;font-weight:600;margin:10px 0}\n"
	".muted{color:var(--mut)}.svgwrap{overflow-x:auto;margin:6px 0}\n"
	".tools{float:right}.tools button{font:12px system-ui,sans-serif;"
	"margin-left:6px;padding:3px 10px;border:1px solid var(--bd);"
	"border-radius:6px;background:#fff;cursor:pointer}\n"
	"html:not([data-fc-script]) .tools{display:none}\n"
	"svg.tl{display:block;font-family:'DejaVu Sans',system-ui,sans-serif}"
	"svg.legend{vertical-align:middle}\n"
	".axis{stroke:#8c959f}.grid{stroke:#eaeef2}.tick{font-size:10px;"
	"fill:#57606a}\n"
	".lanelabel{font-size:12px;font-weight:600;fill:#1f2328}"
	".lanesub{font-size:10px;fill:#57606a}\n"
	".bar{fill:#8c959f}.bar.zombie{fill:#a8a29e}"
	".hit{stroke:#24292f;stroke-width:1;opacity:.45}\n"
	".kill{stroke:#cf222e;stroke-width:2.6;fill:none;stroke-linecap:round}"
	".pause{fill:#9a6700}.resume{fill:#1a7f37}.fail{fill:#bc4c00}"
	".failmark{font-size:10px;font-weight:700;fill:#fff}\n"
	".flag{fill:#8250df}.flagtext{font-size:10px;fill:#fff;font-weight:600}"
	".flagpole{stroke:#8250df;stroke-width:1.5}\n"
	".state{font-size:9px;font-family:'DejaVu Sans Mono',monospace}"
	".leader{stroke:#afb8c1;fill:none;stroke-width:.8}\n"
	".st-prep{fill:#6e7781}.st-commit{fill:#0969da}.st-tc{fill:#1b7c83}"
	".st-complete{fill:#1a7f37}.st-unknown{fill:#bc4c00}"
	".st-failed{fill:#a40e26}\n"
	".endlabel{font-size:11px;fill:#1f2328}.endlabel.bad{fill:#cf222e;"
	"font-weight:600}\n"
	".dupband{fill:#ffebe9;stroke:#cf222e;stroke-width:1.2}"
	".lossband{fill:#fff8c5;stroke:#cf222e;stroke-dasharray:5 3}"
	".opband{fill:#f6f8fa}.opsep{stroke:#d0d7de}"
	".note{font-size:11.5px;font-weight:600;fill:#a40e26}\n"
	".hatchbg{fill:#fff1c2}.hatchline{stroke:#d4a72c;stroke-width:2}\n"
	"footer{margin-top:30px;color:var(--mut);font-size:12px}\n";

/* Marks that the script ran (tests check it) and toggles every <details>. */
static const char script[] =
	"document.documentElement.setAttribute('data-fc-script','ran');\n"
	"function fcToggle(open){document.querySelectorAll('details')"
	".forEach(function(d){d.open=open;});}\n";

static void esc(FILE *out, const char *s)
{
	rview_xml(out, s, false);
}

static void badge(FILE *out, const char *cls_prefix, const char *value)
{
	fprintf(out, "<span class=\"badge %s", cls_prefix);
	rview_xml(out, value, true);
	fputs("\">", out);
	esc(out, value);
	fputs("</span>", out);
}

static void fact(FILE *out, const char *name, const char *value, bool code)
{
	fprintf(out, "<dt>%s</dt><dd>%s", name, code ? "<code>" : "");
	esc(out, value);
	fprintf(out, "%s</dd>\n", code ? "</code>" : "");
}

static void repro(FILE *out, const char *cmd)
{
	fputs("<pre class=\"repro\">", out);
	esc(out, cmd);
	fputs("</pre>\n", out);
}

/* --- run facts and the verdict table ------------------------------------------------ */

static void header(FILE *out, const json_t *report)
{
	json_t *tool = json_object_get(report, "tool");
	json_t *suite = json_object_get(report, "suite");
	json_t *env = json_object_get(report, "environment");
	json_t *sig = json_object_get(report, "signature");
	char buf[256], stamp[32];

	fputs("<header><div class=\"tools\"><button type=\"button\" "
	      "onclick=\"fcToggle(true)\">expand all</button><button "
	      "type=\"button\" onclick=\"fcToggle(false)\">collapse all"
	      "</button></div>\n<h1>fencecert certification report</h1>\n"
	      "<p class=\"sub\">suite <b>", out);
	esc(out, rview_str(suite, "name"));
	fputs("</b></p>\n<dl class=\"facts\">\n", out);
	snprintf(buf, sizeof(buf), "%s %s (git %s)", rview_str(tool, "name"),
		 rview_str(tool, "version"), rview_str(tool, "git_rev"));
	fact(out, "tool", buf, false);
	fact(out, "suite file", rview_str(suite, "path"), true);
	fact(out, "suite digest", rview_str(suite, "digest"), true);
	rview_iso_time(rview_int(report, "started_at", 0), stamp, sizeof(stamp),
		       true);
	snprintf(buf, sizeof(buf), "%s, %.1f s", stamp,
		 rview_int(report, "duration_ms", 0) / 1000.0);
	fact(out, "started", buf, false);
	if (json_is_integer(json_object_get(report, "seed")))
		snprintf(buf, sizeof(buf), "%lld", rview_int(report, "seed", 0));
	else
		snprintf(buf, sizeof(buf), "each scenario's own");
	fact(out, "seed", buf, false);
	snprintf(buf, sizeof(buf), "%s %s %s, %lld cpus, %lld jobs, routes "
		 "contained: %s", rview_str(env, "system"),
		 rview_str(env, "release"), rview_str(env, "machine"),
		 rview_int(env, "cpus", 0), rview_int(env, "jobs", 0),
		 *rview_str(env, "containment") ? rview_str(env, "containment")
						: "not recorded");
	fact(out, "environment", buf, false);
	if (json_is_object(sig))
		snprintf(buf, sizeof(buf), "%s (verify with 'fencecert gate')",
			 rview_str(sig, "alg"));
	else
		snprintf(buf, sizeof(buf), "unsigned");
	fact(out, "signature", buf, false);
	fputs("</dl></header>\n", out);
}

static void cards(FILE *out, const json_t *report)
{
	json_t *routes = rview_arr(report, "routes"), *r;
	size_t counts[VERDICT_COUNT] = { 0 }, met = 0, i;

	json_array_foreach(routes, i, r) {
		enum verdict v;

		if (verdict_parse(rview_str(r, "verdict"), &v) == 0)
			counts[v]++;
		met += json_is_true(json_object_get(r, "expectation_met"));
	}
	fputs("<div class=\"cards\">", out);
	fprintf(out, "<div class=\"card\"><b>%zu / %zu</b><span class=\"lbl\">routes met "
		"their expectation</span></div>", met, json_array_size(routes));
	for (int v = 0; v < VERDICT_COUNT; v++) {
		fprintf(out, "<div class=\"card\"><b>%zu</b>", counts[v]);
		badge(out, "v-", verdict_name((enum verdict)v));
		fputs("</div>", out);
	}
	fputs("</div>\n", out);
}

static void coverage_cell(FILE *out, const json_t *route)
{
	json_t *c = json_object_get(route, "coverage");

	fprintf(out, "<td class=\"num\">%lld / %lld / %lld</td>",
		rview_int(c, "failpoints_declared", 0),
		rview_int(c, "failpoints_reached", 0),
		rview_int(c, "failpoints_faulted", 0));
}

static void verdict_table(FILE *out, const json_t *report)
{
	json_t *r;
	size_t i;

	fputs("<h2>Verdicts</h2>\n<table><thead><tr><th>route</th><th>verdict"
	      "</th><th>expected</th><th>met</th><th class=\"num\">schedules</th>"
	      "<th class=\"num\">violations</th><th class=\"num\">failpoints "
	      "declared / reached / faulted</th></tr></thead><tbody>\n", out);
	json_array_foreach(rview_arr(report, "routes"), i, r) {
		bool met = json_is_true(json_object_get(r, "expectation_met"));
		size_t nv = json_array_size(rview_arr(r, "violations"));
		fprintf(out, "<tr%s><td><a href=\"#route-%zu\">", met ? "" :
			" class=\"miss\"", i);
		esc(out, rview_str(r, "name"));
		fputs("</a></td><td>", out);
		badge(out, "v-", rview_str(r, "verdict"));
		fputs("</td><td>", out);
		esc(out, rview_str(r, "expected"));
		fprintf(out, "</td><td%s>%s</td><td class=\"num\">%zu</td>"
			"<td class=\"num%s\">%zu</td>", met ? "" : " class=\"bad\"",
			met ? "yes" : "NO", json_array_size(rview_arr(r, "schedules")),
			nv ? " bad" : "", nv);
		coverage_cell(out, r);
		fputs("</tr>\n", out);
	}
	fputs("</tbody></table>\n", out);
}

static void legend(FILE *out)
{
	fputs("<h3>Reading the timelines</h3>\n<p class=\"muted\">One lane per "
	      "attempt (worker process), time in ms from the schedule's start. "
	      "Thin ticks are failpoint hits, dots are journal transitions "
	      "(labelled with the state entered), hatching is time spent "
	      "stopped. Hover a mark for details.</p>\n<p>"
	      "<svg class=\"tl legend\" width=\"810\" height=\"24\" "
	      "viewBox=\"0 0 810 24\" role=\"img\" aria-label=\"legend\">"
	      "<path d=\"M5 7l10 10m0 -10l-10 10\" class=\"kill\"/>"
	      "<text x=\"22\" y=\"16\" class=\"lanesub\">kill</text>"
	      "<rect x=\"60\" y=\"6\" width=\"3.5\" height=\"12\" class=\"pause\"/>"
	      "<rect x=\"66.5\" y=\"6\" width=\"3.5\" height=\"12\" class=\"pause\"/>"
	      "<text x=\"76\" y=\"16\" class=\"lanesub\">pause</text>"
	      "<path d=\"M120 6l10 6l-10 6z\" class=\"resume\"/>"
	      "<text x=\"136\" y=\"16\" class=\"lanesub\">resume</text>"
	      "<circle cx=\"190\" cy=\"12\" r=\"6.5\" class=\"fail\"/>"
	      "<text x=\"190\" y=\"15.5\" class=\"failmark\" text-anchor=\"middle\">"
	      "!</text><text x=\"200\" y=\"16\" class=\"lanesub\">fail</text>"
	      "<rect x=\"235\" y=\"5\" width=\"60\" height=\"13\" rx=\"3\" "
	      "class=\"flag\"/><text x=\"239\" y=\"15\" class=\"flagtext\">"
	      "XCom lost</text><text x=\"300\" y=\"16\" class=\"lanesub\">"
	      "between-try fault</text>"
	      "<circle cx=\"410\" cy=\"12\" r=\"3.2\" class=\"st-complete\"/>"
	      "<text x=\"418\" y=\"16\" class=\"lanesub\">journal transition"
	      "</text><rect x=\"520\" y=\"3\" width=\"150\" height=\"18\" rx=\"4\" "
	      "class=\"dupband\"/><text x=\"528\" y=\"16\" class=\"note\">"
	      "added duplicate rows</text><rect x=\"680\" y=\"3\" width=\"120\" "
	      "height=\"18\" rx=\"4\" class=\"lossband\"/><text x=\"688\" y=\"16\" "
	      "class=\"note\">rows missing</text></svg></p>\n", out);
}

/* --- one schedule ------------------------------------------------------------------ */

static void violation_block(FILE *out, const json_t *v, bool with_where)
{
	fprintf(out, "<div class=\"viol\"><b>invariant %lld ",
		rview_int(v, "invariant", 0));
	esc(out, rview_str(v, "name"));
	fputs("</b>", out);
	if (with_where) {
		fputs(" in <b>", out);
		esc(out, rview_str(v, "scenario"));
		fputs("</b> <code>", out);
		esc(out, rview_str(v, "schedule"));
		fputs("</code>", out);
	}
	if (*rview_str(v, "operation_id")) {
		fputs(" <span class=\"muted\">operation <code>", out);
		esc(out, rview_str(v, "operation_id"));
		fputs("</code></span>", out);
	}
	fputs("<br>", out);
	esc(out, rview_str(v, "detail"));
	repro(out, rview_str(v, "reproduce"));
	fputs("</div>\n", out);
}

static void operations_table(FILE *out, const json_t *s)
{
	json_t *op, *t = json_object_get(s, "target");
	size_t i;

	fputs("<table><thead><tr><th>op</th><th>operation_id</th><th>task</th>"
	      "<th>journal</th><th class=\"num\">rows expected</th><th "
	      "class=\"num\">present</th><th class=\"num\">duplicated</th><th "
	      "class=\"num\">missing</th><th class=\"num\">transitions</th>"
	      "</tr></thead><tbody>\n", out);
	json_array_foreach(rview_arr(s, "operations"), i, op) {
		json_t *ot = json_object_get(op, "target");
		json_t *j = json_object_get(op, "journal");
		long long dup = rview_int(ot, "rows_duplicated", 0);
		long long miss = rview_int(ot, "rows_missing", 0);
		fprintf(out, "<tr><td>%lld</td><td><code title=\"", rview_int(op,
			"index", 0));
		rview_xml(out, rview_str(op, "operation_id"), true);
		fputs("\">", out);
		rview_xml_cut(out, rview_str(op, "operation_id"), 23, false);
		fputs("</code></td><td>", out);
		esc(out, rview_str(op, "task"));
		fputs("</td><td>", out);
		if (json_is_object(j) && json_is_string(json_object_get(j, "state"))) {
			esc(out, rview_str(j, "state"));
			fprintf(out, " v%lld", rview_int(j, "version", 0));
		} else if (json_is_object(j)) {
			esc(out, rview_str(j, "error"));
		} else {
			fputs("<span class=\"muted\">no entry</span>", out);
		}
		fprintf(out, "</td><td class=\"num\">%lld</td><td class=\"num\">%lld"
			"</td><td class=\"num%s\">%lld</td><td class=\"num%s\">%lld</td>"
			"<td class=\"num\">%zu</td></tr>\n",
			rview_int(ot, "rows_expected", 0),
			rview_int(ot, "rows_present", 0), dup ? " bad" : "", dup,
			miss ? " bad" : "", miss,
			json_array_size(rview_arr(op, "history")));
	}
	fputs("</tbody></table>\n", out);
	fprintf(out, "<p class=\"muted\">target: %lld observation(s), %lld rows in "
		"total, fence records %s.</p>\n", rview_int(t, "observations", 0),
		rview_int(t, "rows_total", 0),
		json_is_true(json_object_get(t, "fences_observed")) ?
		"observed" : "not observable");
}

static const char *status_name(enum report_class st)
{
	return st == REPORT_FAILED ? "failed" :
	       st == REPORT_UNVERIFIED ? "unverified" : "passed";
}

static int schedule_block(FILE *out, const json_t *s, int *svg_id,
			  bool timeline)
{
	enum report_class st = report_schedule_class(s);
	json_t *v;
	size_t i, nv = json_array_size(rview_arr(s, "violations"));
	int rc = 0;

	fprintf(out, "<details class=\"sched %s\"%s><summary>", status_name(st),
		st == REPORT_PASSED ? "" : " open");
	badge(out, "s-", status_name(st));
	fputs(" <b>", out);
	esc(out, rview_str(s, "scenario"));
	fputs("</b> <code>", out);
	esc(out, rview_str(s, "schedule"));
	fputs("</code> <span class=\"muted\">", out);
	esc(out, rview_str(s, "outcome"));
	fprintf(out, " · %lld ms", rview_int(s, "duration_ms", 0));
	if (nv)
		fprintf(out, " · %zu violation%s", nv, nv == 1 ? "" : "s");
	fputs("</span></summary>\n<div class=\"body\">\n", out);
	json_array_foreach(rview_arr(s, "violations"), i, v)
		violation_block(out, v, false);
	fputs("<p><b>outcome:</b> ", out);
	esc(out, rview_str(s, "outcome"));
	fputs(" — ", out);
	esc(out, rview_str(s, "outcome_detail"));
	if (*rview_str(s, "error")) {
		fputs("<br><b>harness error:</b> ", out);
		esc(out, rview_str(s, "error"));
	}
	fputs("</p>\n", out);
	if (json_object_get(s, "detail"))
		fputs("<p class=\"muted\">summarized in report.json: its "
		      "attempts and operations are kept for the first schedules "
		      "of each kind only; replay it, or certify with "
		      "--full-report, to see them</p>\n", out);
	else if (timeline) {
		fputs("<div class=\"svgwrap\">\n", out);
		rc = timeline_svg(out, s, (*svg_id)++);
		fputs("</div>\n", out);
	}
	operations_table(out, s);
	if (!nv && *rview_str(s, "reproduce")) {
		fputs("<p class=\"muted\">reproduce:</p>", out);
		repro(out, rview_str(s, "reproduce"));
	}
	fputs("</div></details>\n", out);
	return rc;
}

static void schedule_row(FILE *out, const json_t *s)
{
	fputs("<tr><td>", out);
	esc(out, rview_str(s, "scenario"));
	fputs("</td><td><code>", out);
	esc(out, rview_str(s, "schedule"));
	fputs("</code></td><td>", out);
	esc(out, rview_str(s, "outcome"));
	fprintf(out, "</td><td class=\"num\">%lld</td><td><code>",
		rview_int(s, "duration_ms", 0));
	esc(out, rview_str(s, "reproduce"));
	fputs("</code></td></tr>\n", out);
}

/* --- one route --------------------------------------------------------------------- */

static void name_list(FILE *out, const char *label, const json_t *names)
{
	json_t *n;
	size_t i;

	fprintf(out, "<dt>%s</dt><dd>", label);
	if (!json_array_size(names))
		fputs("<span class=\"muted\">none</span>", out);
	json_array_foreach(names, i, n) {
		fputs(i ? " " : "", out);
		fputs("<code>", out);
		esc(out, json_string_value(n) ? json_string_value(n) : "");
		fputs("</code>", out);
	}
	fputs("</dd>\n", out);
}

static void route_facts(FILE *out, const json_t *r)
{
	json_t *c = json_object_get(r, "coverage"), *x;
	json_t *cmd = rview_arr(r, "command");
	size_t i;

	fputs("<dl class=\"facts\">\n<dt>command</dt><dd><code>", out);
	json_array_foreach(cmd, i, x) {
		fputs(i ? " " : "", out);
		esc(out, json_string_value(x) ? json_string_value(x) : "");
	}
	fputs("</code></dd>\n", out);
	fact(out, "route digest", rview_str(r, "digest"), true);
	if (*rview_str(r, "executable_digest"))
		fact(out, "executable digest", rview_str(r, "executable_digest"),
		     true);
	name_list(out, "failpoints reached", rview_arr(c, "reached"));
	name_list(out, "faulted", rview_arr(c, "faulted"));
	name_list(out, "never faulted", rview_arr(c, "never_faulted"));
	json_array_foreach(rview_arr(c, "invariants_not_observable"), i, x) {
		char buf[300];
		snprintf(buf, sizeof(buf), "invariant %lld %s: %s",
			 rview_int(x, "invariant", 0), rview_str(x, "name"),
			 rview_str(x, "why"));
		fact(out, "not observable", buf, false);
	}
	json_array_foreach(rview_arr(c, "unverified"), i, x)
		fact(out, "unverified", json_string_value(x) ?
		     json_string_value(x) : "", false);
	fputs("</dl>\n", out);
}

static int route_section(FILE *out, const json_t *r, size_t ri, int *svg_id)
{
	json_t *scheds = rview_arr(r, "schedules"), *v;
	size_t n = json_array_size(scheds), i, passed = 0, shown_fail = 0;
	size_t *idx = malloc((n ? n : 1) * sizeof(*idx));
	int rc = 0;

	if (!idx)
		return FC_NOMEM;
	fprintf(out, "<section id=\"route-%zu\">\n<h2>", ri);
	esc(out, rview_str(r, "name"));
	fputs(" ", out);
	badge(out, "v-", rview_str(r, "verdict"));
	fputs(" <span class=\"muted\" style=\"font-size:13px;font-weight:400\">"
	      "expected ", out);
	esc(out, rview_str(r, "expected"));
	fprintf(out, "%s</span></h2>\n",
		json_is_true(json_object_get(r, "expectation_met")) ? " · met" :
		" · <b style=\"color:var(--bad)\">NOT met</b>");
	route_facts(out, r);
	if (json_array_size(rview_arr(r, "violations"))) {
		fprintf(out, "<h3>Violations (%zu)</h3>\n",
			json_array_size(rview_arr(r, "violations")));
		json_array_foreach(rview_arr(r, "violations"), i, v) {
			if (i == HTML_VIOLATIONS_MAX) {
				fprintf(out, "<p class=\"muted\">… and %zu more in "
					"report.json</p>\n",
					json_array_size(rview_arr(r, "violations")) - i);
				break;
			}
			violation_block(out, v, true);
		}
	}
	rview_schedule_order(r, idx);
	fprintf(out, "<h3>Schedules (%zu)</h3>\n", n);
	for (i = 0; i < n && !rc; i++) {
		json_t *s = json_array_get(scheds, idx[i]);
		if (report_schedule_class(s) != REPORT_PASSED) {
			rc = schedule_block(out, s, svg_id,
					    shown_fail++ < HTML_FAILING_TIMELINES);
			continue;
		}
		if (passed++ == 0)
			fprintf(out, "<details class=\"group\"><summary>%zu passing "
				"schedule(s)</summary>\n", n - i);
		if (passed <= HTML_PASSING_TIMELINES) {
			rc = schedule_block(out, s, svg_id, true);
			continue;
		}
		if (passed == HTML_PASSING_TIMELINES + 1)
			fputs("<table><thead><tr><th>scenario</th><th>schedule</th>"
			      "<th>outcome</th><th class=\"num\">ms</th><th>reproduce"
			      "</th></tr></thead><tbody>\n", out);
		schedule_row(out, s);
	}
	if (passed > HTML_PASSING_TIMELINES)
		fputs("</tbody></table>\n", out);
	if (passed)
		fputs("</details>\n", out);
	fputs("</section>\n", out);
	free(idx);
	return rc;
}

int report_html_write(const json_t *report, FILE *out)
{
	json_t *r;
	size_t i;
	int svg_id = 0, rc = 0;

	fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">"
	      "\n<meta name=\"viewport\" content=\"width=device-width, "
	      "initial-scale=1\">\n<title>fencecert report: ", out);
	esc(out, rview_str(json_object_get(report, "suite"), "name"));
	fprintf(out, "</title>\n<style>\n%s</style>\n</head>\n<body>\n<main>\n", css);
	header(out, report);
	cards(out, report);
	verdict_table(out, report);
	legend(out);
	json_array_foreach(rview_arr(report, "routes"), i, r) {
		rc = route_section(out, r, i, &svg_id);
		if (rc)
			break;
	}
	fputs("<footer>Generated by fencecert from report.json (schema ", out);
	esc(out, rview_str(report, "schema"));
	fprintf(out, "). Self-contained: no network, no external assets.</footer>\n"
		"</main>\n<script>\n%s</script>\n</body>\n</html>\n", script);
	if (rc)
		return rc;
	return fflush(out) || ferror(out) ? FC_IO : 0;
}
