/*
 * test_reports.c -- signatures, JUnit/Markdown/HTML rendering, render_all,
 * the release gate's rules (gate.h) and the merge of shards (merge.h).
 *
 * Most cases start from tests/data/reports/controls-small.json, a real
 * `fencecert certify` report (tests/data/reports/README.md says how it
 * was made): a certified route and two controls the harness rejected,
 * one of them (naive) duplicating rows after a kill at
 * after_target_commit.  Cases that need odd strings build a small report
 * by hand.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "harness/check/check.h"
#include "harness/model/record.h"
#include "reports/gate.h"
#include "reports/merge.h"
#include "reports/outdir.h"
#include "reports/render.h"
#include "reports/report_html.h"
#include "reports/report_junit.h"
#include "harness/certify/report_json.h"
#include "reports/report_md.h"
#include "reports/rview.h"
#include "reports/sign.h"
#include "reports/timeline.h"

#define KEY "fencecert-test-key"

static json_t *fixture(void)
{
	const char *dir = getenv("FENCECERT_TEST_DATA");
	char path[1024], err[512];
	json_t *doc = NULL;

	snprintf(path, sizeof(path), "%s/reports/controls-small.json",
		 dir ? dir : "tests/data");
	if (rview_load(path, &doc, err, sizeof(err)))
		fail_msg("%s", err);
	return doc;
}

static const struct sign_key test_key = {
	(const unsigned char *)KEY, sizeof(KEY) - 1,
};

/* Render with fn into a heap string. */
static char *render(int (*fn)(const json_t *, FILE *), const json_t *report)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	assert_int_equal(fn(report, f), 0);
	assert_int_equal(fclose(f), 0);
	return buf;
}

/* --- signatures ------------------------------------------------------------------ */

/* Known answer, computed independently with `openssl dgst -hmac` over the
 * canonical text {"a":1,"b":"é \"q\"","schema":"x"}. */
static void test_sign_known_answer(void **state)
{
	json_t *doc = json_loads("{\"schema\":\"x\",\"b\":\"\xc3\xa9 \\\"q\\\"\","
				 "\"a\":1,\"signature\":{\"alg\":\"x\"}}", 0, NULL);
	char hex[SIGN_HEX_LEN + 1], *canon;

	(void)state;
	assert_non_null(doc);
	assert_int_equal(sign_canonical(doc, &canon), 0);
	assert_string_equal(canon, "{\"a\":1,\"b\":\"\xc3\xa9 \\\"q\\\"\","
			    "\"schema\":\"x\"}");
	free(canon);
	assert_int_equal(sign_compute(doc, &test_key, hex), 0);
	assert_string_equal(hex, "520a47f41722c73cf441ebef7b9a186a"
			    "06de39a5e881f8387898ba1d9ab41185");
	json_decref(doc);
}

static void test_sign_round_trip(void **state)
{
	json_t *doc = fixture(), *again;
	const struct sign_key other = { (const unsigned char *)"other", 5 };
	char err[256], *text;

	(void)state;
	assert_int_equal(sign_verify(doc, &test_key, err, sizeof(err)),
			 FC_NOT_FOUND);
	assert_int_equal(sign_report(doc, &test_key), 0);
	assert_int_equal(sign_verify(doc, &test_key, err, sizeof(err)), 0);
	assert_int_equal(sign_verify(doc, &other, err, sizeof(err)), FC_CORRUPT);
	assert_non_null(strstr(err, "does not match"));

	/* Layout and key order do not matter: dump another way, reload. */
	text = json_dumps(doc, JSON_INDENT(7) | JSON_SORT_KEYS);
	assert_non_null(text);
	again = json_loads(text, 0, NULL);
	free(text);
	assert_non_null(again);
	assert_int_equal(sign_verify(again, &test_key, err, sizeof(err)), 0);

	/* Signing again replaces the signature, it does not sign it. */
	assert_int_equal(sign_report(again, &test_key), 0);
	assert_true(json_equal(json_object_get(again, "signature"),
			       json_object_get(doc, "signature")));
	json_decref(again);
	json_decref(doc);
}

/* One byte of one verdict changed in the file text: refused. */
static void test_sign_tampered_verdict(void **state)
{
	json_t *doc = fixture(), *tampered;
	char err[256], *text, *at;

	(void)state;
	assert_int_equal(sign_report(doc, &test_key), 0);
	text = json_dumps(doc, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
	assert_non_null(text);
	at = strstr(text, "\"verdict\": \"rejected\"");
	assert_non_null(at);
	at[strlen("\"verdict\": \"rejecte")] = 'r'; /* rejected -> rejecter */
	tampered = json_loads(text, 0, NULL);
	assert_non_null(tampered);
	assert_int_equal(sign_verify(tampered, &test_key, err, sizeof(err)),
			 FC_CORRUPT);
	json_decref(tampered);

	/* The same edit with the verdict put back verifies again: the
	 * check above failed because of the byte, not the reload. */
	at[strlen("\"verdict\": \"rejecte")] = 'd';
	tampered = json_loads(text, 0, NULL);
	assert_int_equal(sign_verify(tampered, &test_key, err, sizeof(err)), 0);
	json_decref(tampered);
	free(text);
	json_decref(doc);
}

static void test_sign_malformed(void **state)
{
	json_t *doc = fixture();
	char err[256], hex[SIGN_HEX_LEN + 1];

	(void)state;
	assert_int_equal(sign_compute(doc, &test_key, hex), 0);
	json_object_set_new(doc, "signature", json_pack("{s:s, s:s}", "alg",
				"hmac-sha1", "value", hex));
	assert_int_equal(sign_verify(doc, &test_key, err, sizeof(err)),
			 FC_CORRUPT);
	assert_non_null(strstr(err, "hmac-sha1"));
	hex[SIGN_HEX_LEN - 1] = '\0'; /* one digit short */
	json_object_set_new(doc, "signature", json_pack("{s:s, s:s}", "alg",
				SIGN_ALG, "value", hex));
	assert_int_equal(sign_verify(doc, &test_key, err, sizeof(err)),
			 FC_CORRUPT);
	json_object_set_new(doc, "signature", json_string("x"));
	assert_int_equal(sign_verify(doc, &test_key, err, sizeof(err)),
			 FC_CORRUPT);
	json_decref(doc);
}

static void test_sign_key_env(void **state)
{
	struct sign_key k;

	(void)state;
	unsetenv(SIGN_KEY_ENV);
	assert_int_equal(sign_key_from_env(&k), 0);
	setenv(SIGN_KEY_ENV, "", 1);
	assert_int_equal(sign_key_from_env(&k), FC_USAGE);
	setenv(SIGN_KEY_ENV, "abc", 1);
	assert_int_equal(sign_key_from_env(&k), 1);
	assert_int_equal(k.len, 3);
	assert_memory_equal(k.bytes, "abc", 3);
	unsetenv(SIGN_KEY_ENV);
}

/* --- JUnit ----------------------------------------------------------------------- */

/* A report whose strings hold everything XML cares about. */
static json_t *nasty_report(void)
{
	const char *evil = "a<b>&\"c'\x01" "d\nnext ]]> \xef\xbf\xbe";
	json_t *v = json_pack("{s:i, s:s, s:s, s:s, s:s, s:s, s:s}", "invariant",
			      1, "name", "no-duplicate", "operation_id", "op",
			      "scenario", evil, "schedule", "k:x@1", "detail", evil,
			      "reproduce", "fencecert certify 's.yaml' --only "
			      "'a<b>' # ```");
	json_t *sched = json_pack("{s:s, s:s, s:s, s:b, s:s, s:i, s:s, s:s, "
				  "s:n, s:[O], s:[], s:[], s:[], s:[], s:[], "
				  "s:[], s:[]}",
				  "scenario", evil, "schedule", "k:x@1>next",
				  "kind", "fixed", "strict", 1, "reproduce",
				  "fencecert certify 's.yaml'", "duration_ms", 1234,
				  "outcome", "not-converged", "outcome_detail",
				  evil, "error", "violations", v, "unobservable",
				  "faults", "applied", "reached", "faulted",
				  "attempts", "operations");
	json_t *route = json_pack("{s:s, s:[s], s:s, s:s, s:s, s:b, s:{}, s:[o], "
				  "s:[o]}", "name", evil, "command", "x",
				  "digest", "sha256:00", "verdict", "rejected",
				  "expected", "certified", "expectation_met", 0,
				  "coverage", "violations", v, "schedules", sched);
	json_t *doc = json_pack("{s:s, s:{s:s, s:s, s:s}, s:{s:s, s:s}, "
				"s:I, s:I, s:[o]}", "schema", RVIEW_SCHEMA,
				"tool", "name", "fencecert", "version", "0.1.0",
				"git_rev", "abc", "suite", "name", evil, "digest",
				"sha256:00", "started_at", (json_int_t)1700000000000,
				"duration_ms", (json_int_t)1500, "routes", route);
	char err[256];

	assert_non_null(doc);
	assert_int_equal(rview_check(doc, err, sizeof(err)), 0);
	return doc;
}

static void test_junit_escaping(void **state)
{
	json_t *doc = nasty_report();
	char *xml = render(report_junit_write, doc);

	(void)state;
	/* attribute: quotes, angle brackets, newline as a reference */
	assert_non_null(strstr(xml, "name=\"a&lt;b&gt;&amp;&quot;c&#39;"
				    "\xef\xbf\xbd" "d&#10;next ]]&gt; \xef\xbf\xbd"));
	/* text: newline kept, control character and U+FFFE replaced */
	assert_non_null(strstr(xml, "a&lt;b&gt;&amp;&quot;c&#39;\xef\xbf\xbd"
				    "d\nnext ]]&gt;"));
	assert_null(strchr(xml, '\x01'));
	assert_null(strstr(xml, "\xef\xbf\xbe"));
	assert_null(strstr(xml, "<b>"));
	assert_non_null(strstr(xml, "<failure message=\"invariant 1 no-duplicate: "));
	assert_non_null(strstr(xml, "tests=\"1\" failures=\"1\" errors=\"0\""));
	assert_non_null(strstr(xml, "timestamp=\"2023-11-14T22:13:20\""));
	free(xml);
	json_decref(doc);
}

static void test_junit_fixture(void **state)
{
	json_t *doc = fixture();
	char *xml = render(report_junit_write, doc);
	const char *naive = strstr(xml, "<testsuite name=\"naive\"");

	(void)state;
	assert_non_null(naive);
	/* 21 schedules: 5 with violations (4 naive, 1 checkpoint-guard),
	 * 3 unverified ones reported as errors */
	assert_non_null(strstr(xml, "<testsuites name=\"fencecert reports-small\" "
				    "tests=\"21\" failures=\"5\" errors=\"3\""));
	assert_non_null(strstr(naive, "<testcase name=\"kill-after-target-commit "
				      "k:after_target_commit@1\" classname=\"naive\""));
	assert_non_null(strstr(naive, "<error type=\"unverified\""));
	assert_non_null(strstr(naive, "reproduce: fencecert certify "));
	free(xml);
	json_decref(doc);
}

/* --- Markdown and HTML ------------------------------------------------------------ */

static void test_md_fixture(void **state)
{
	json_t *doc = fixture();
	char *md = render(report_md_write, doc);

	(void)state;
	assert_non_null(strstr(md, "## ✅ fencecert: suite `reports-small` — 3 "
				   "of 3 routes met their expectation"));
	assert_non_null(strstr(md, "| naive | ❌ rejected | rejected | yes | 7 | 6 "
				   "| 6 / 4 / 2 |"));
	assert_non_null(strstr(md, "- invariant 1 **no-duplicate** in "
				   "`kill-after-target-commit` schedule "
				   "`k:after_target_commit@1`"));
	assert_non_null(strstr(md, "  ```sh\n  fencecert certify "
				   "/tmp/rp/small.yaml --route naive --only "
				   "kill-after-target-commit --schedule "
				   "'k:after_target_commit@1'\n  ```\n"));
	/* 5 per route: naive's 6th is counted, not printed */
	assert_non_null(strstr(md, "_1 more violation(s)"));
	assert_non_null(strstr(md, "### Unverified"));
	free(md);
	json_decref(doc);
}

static void test_md_escaping(void **state)
{
	json_t *doc = nasty_report();
	char *md = render(report_md_write, doc);

	(void)state;
	/* a command holding ``` gets a longer fence */
	assert_non_null(strstr(md, "  ````sh\n  fencecert certify 's.yaml' "
				   "--only 'a<b>' # ```\n  ````\n"));
	/* a table cell cannot be split or turned into HTML */
	assert_non_null(strstr(md, "| a&lt;b&gt;&amp;\"c'"));
	assert_null(strstr(md, "| a<b>"));
	free(md);
	json_decref(doc);
}

static void test_html_fixture(void **state)
{
	json_t *doc = fixture();
	char *html = render(report_html_write, doc);
	const char *naive, *failed, *passed, *svg;

	(void)state;
	assert_non_null(strstr(html, "<!DOCTYPE html>"));
	assert_non_null(strstr(html, "<style>"));
	/* self-contained: nothing to fetch (the SVG namespace is a name) */
	assert_null(strstr(html, "src="));
	assert_null(strstr(html, "<link"));
	assert_null(strstr(html, "href=\"http"));
	assert_null(strstr(html, "url(http"));
	/* the verdict table */
	assert_non_null(strstr(html, "<a href=\"#route-1\">naive</a></td><td>"
				     "<span class=\"badge v-rejected\">rejected"));
	naive = strstr(html, "<section id=\"route-1\">");
	assert_non_null(naive);
	/* failing schedules first and open, passing ones collapsed */
	failed = strstr(naive, "<details class=\"sched failed\" open>");
	passed = strstr(naive, "<details class=\"sched passed\">");
	assert_non_null(failed);
	assert_non_null(passed);
	assert_true(failed < passed);
	assert_true(strstr(naive, "<details class=\"sched unverified\" open>") <
		    passed);
	/* the timeline says which attempt duplicated which rows after what */
	svg = strstr(failed, "<svg");
	assert_non_null(svg);
	assert_non_null(strstr(svg, "class=\"dupband\""));
	assert_non_null(strstr(svg, "+5 duplicate rows: o1-r1, o1-r2, o1-r3 … "
				    "o1-r5 — after kill at after_target_commit#1 "
				    "in try 1"));
	assert_non_null(strstr(svg, "class=\"kill\""));
	assert_non_null(strstr(svg, "SIGKILL"));
	assert_non_null(strstr(html, "data-fc-script"));
	free(html);
	json_decref(doc);
}

static void test_html_escaping(void **state)
{
	json_t *doc = nasty_report();
	char *html = render(report_html_write, doc);

	(void)state;
	assert_null(strstr(html, "<b>&"));
	assert_null(strstr(html, "a<b>"));
	assert_non_null(strstr(html, "a&lt;b&gt;&amp;&quot;c&#39;"));
	free(html);
	json_decref(doc);
}

/* Journal transitions land on the attempt that made them, whether the
 * offset is given (wall_start_ms) or estimated from failpoint hits. */
static void test_timeline_lanes(void **state)
{
	const char *text =
		"{\"scenario\":\"s\",\"schedule\":\"k:after_intent@1\","
		"\"applied\":[{\"at_ms\":20,\"fault\":\"k:after_intent@1\","
		"\"attempt\":1,\"operation\":1,\"what\":\"kill at after_intent#1 in try 1\"}],"
		"\"attempts\":["
		"{\"index\":1,\"operation\":1,\"try\":1,\"start_ms\":0,\"end_ms\":25,"
		"\"end\":\"SIGKILL\",\"killed\":true,\"exit\":null,"
		"\"failpoints\":[{\"name\":\"after_intent\",\"at_ms\":20,\"answer\":\"k\"}]},"
		"{\"index\":2,\"operation\":1,\"try\":2,\"start_ms\":40,\"end_ms\":200,"
		"\"end\":\"exit 0\",\"exit\":0,"
		"\"failpoints\":[{\"name\":\"after_prepared\",\"at_ms\":120,\"answer\":\"c\"},"
		"{\"name\":\"after_complete\",\"at_ms\":190,\"answer\":\"c\"}]}],"
		"\"operations\":[{\"index\":1,\"history\":["
		"{\"version\":1,\"from\":\"NONE\",\"to\":\"PREPARING\",\"at\":5000019},"
		"{\"version\":2,\"from\":\"PREPARING\",\"to\":\"PREPARED\",\"at\":5000119},"
		"{\"version\":3,\"from\":\"PREPARED\",\"to\":\"COMPLETE\",\"at\":5000189}]}]}";
	json_t *s = json_loads(text, 0, NULL);

	(void)state;
	assert_non_null(s);
	for (int exact = 0; exact < 2; exact++) {
		char *buf = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&buf, &len);
		if (exact)
			json_object_set_new(s, "wall_start_ms", json_integer(5000000));
		assert_int_equal(timeline_svg(f, s, 7), 0);
		fclose(f);
		assert_non_null(strstr(buf, "<g class=\"tr\" data-attempt=\"1\">"
					    "<title>journal v1: NONE -&gt; PREPARING"));
		assert_non_null(strstr(buf, "<g class=\"tr\" data-attempt=\"2\">"
					    "<title>journal v3: PREPARED -&gt; COMPLETE"));
		assert_non_null(strstr(buf, "id=\"hatch-7\""));
		assert_true((strstr(buf, "(time estimated)") != NULL) == !exact);
		free(buf);
	}
	json_decref(s);
}

/* --- row deltas in the report ------------------------------------------------------ */

/* Row key of observation n in r's row store (created in memory at the
 * first row) at count. */
static void put_row(struct rec_schedule *r, int n, const char *key,
		    long long count)
{
	char err[200];

	if (!r->rows)
		assert_int_equal(obs_store_open(NULL, &r->rows, err, sizeof(err)),
				 0);
	assert_int_equal(obs_store_add(r->rows, n, key, count), 0);
}

/* An attempt that turned {a:1, b:1} into {a:2, b:0, c:1}: c's first insert
 * is counted in rows_added, a's duplicate and b's loss are listed, and the
 * timeline still blames it for the duplicate and counts both rows it
 * added. */
static void test_row_deltas_compact(void **state)
{
	struct rec_schedule *r = record_new();
	struct check_result c = { 0 };
	struct rec_attempt *a;
	json_t *s, *at, *d;
	char *buf = NULL;
	size_t len = 0;
	FILE *f;

	(void)state;
	assert_non_null(r);
	put_row(r, 0, "a", 1); /* before: observation 0 */
	put_row(r, 0, "b", 1);
	put_row(r, 1, "a", 2); /* after: observation 1 */
	put_row(r, 1, "c", 1);
	a = RECORD_PUSH(r->attempts, r->nattempts);
	assert_non_null(a);
	a->operation = 1;
	a->try_number = 1;
	a->end_ms = 50;
	assert_int_equal(record_credit_delta(a, r->rows, 0, 1,
					     RECORD_DELTAS_KEPT), 0);
	/* the checker still counts all three */
	assert_int_equal(a->deltas.changed, 3);
	assert_string_equal(a->deltas.first.row_key, "a");
	s = report_json_schedule(r, &c, &(struct report_job_info){
		.reproduce = "fencecert certify x.yaml" });
	assert_non_null(s);
	at = json_array_get(json_object_get(s, "attempts"), 0);
	assert_int_equal(rview_int(at, "rows_added", -1), 1);
	d = json_object_get(at, "row_deltas");
	assert_int_equal(json_array_size(d), 2);
	assert_string_equal(rview_str(json_array_get(d, 0), "row_key"), "a");
	assert_int_equal(rview_int(json_array_get(d, 0), "before", -1), 1);
	assert_int_equal(rview_int(json_array_get(d, 0), "after", -1), 2);
	assert_string_equal(rview_str(json_array_get(d, 1), "row_key"), "b");
	assert_int_equal(rview_int(json_array_get(d, 1), "before", -1), 1);
	assert_int_equal(rview_int(json_array_get(d, 1), "after", -1), 0);
	assert_int_equal(rview_int(at, "row_deltas_total", -1), 2);
	assert_int_equal(rview_int(at, "row_deltas_duplicated", -1), 1);
	assert_int_equal(rview_int(at, "row_deltas_gained", -1), 1);
	assert_int_equal(rview_int(at, "row_deltas_lost", -1), 1);
	assert_null(json_object_get(at, "row_deltas_truncated"));

	f = open_memstream(&buf, &len);
	assert_non_null(f);
	assert_int_equal(timeline_svg(f, s, 1), 0);
	fclose(f);
	assert_non_null(strstr(buf, "+2 rows"));
	assert_non_null(strstr(buf, "+1 duplicate row: a"));
	free(buf);
	json_decref(s);
	record_free(r);
}

/* An attempt over 30 duplicated rows (d00..d29, 1 -> 2), 5 lost (l00..l04,
 * 1 -> 0) and 10 first inserts (n00..n09), its journal failed so the
 * checker names its changes; `keep` as certify passes it. */
static struct rec_schedule *many_deltas(size_t keep)
{
	char key[8];
	struct rec_schedule *r = record_new();
	struct rec_operation *op;
	struct rec_attempt *a;

	assert_non_null(r);
	/* before: observation 0; after: observation 1 */
	for (int i = 0; i < 30; i++) {
		snprintf(key, sizeof(key), "d%02d", i);
		put_row(r, 0, key, 1);
		put_row(r, 1, key, 2);
	}
	for (int i = 0; i < 5; i++) {
		snprintf(key, sizeof(key), "l%02d", i);
		put_row(r, 0, key, 1);
	}
	for (int i = 0; i < 10; i++) {
		snprintf(key, sizeof(key), "n%02d", i);
		put_row(r, 1, key, 1);
	}
	assert_non_null(op = RECORD_PUSH(r->ops, r->nops));
	op->index = 1;
	assert_non_null(a = RECORD_PUSH(r->attempts, r->nattempts));
	a->operation = 1;
	a->try_number = 1;
	a->end_ms = 50;
	a->obs_after = -1;
	a->journal_failed = true;
	assert_int_equal(record_credit_delta(a, r->rows, 0, 1, keep), 0);
	return r;
}

/* The report of many_deltas(keep), its dead-journal detail in *detail. */
static json_t *many_deltas_report(size_t keep, char *detail, size_t len)
{
	struct rec_schedule *r = many_deltas(keep);
	struct check_result c = { 0 };
	json_t *s;

	assert_int_equal(check_schedule(r, false, &c), 0);
	detail[0] = 0;
	for (size_t i = 0; i < c.nviolations; i++)
		if (c.violations[i].invariant == INV_DEAD_JOURNAL)
			snprintf(detail, len, "%s", c.violations[i].detail);
	s = report_json_schedule(r, &c, &(struct report_job_info){
		.reproduce = "fencecert certify x.yaml" });
	assert_non_null(s);
	check_result_release(&c);
	record_free(r);
	return s;
}

static char *timeline_of(const json_t *s)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	assert_int_equal(timeline_svg(f, s, 1), 0);
	fclose(f);
	return buf;
}

/* More changes than RECORD_DELTAS_KEPT: the record keeps and the report
 * lists the first 20, with counts of all and row_deltas_truncated; with
 * certify --full-deltas (keep SIZE_MAX) all 35.  The checker's detail and
 * the timeline's counts are the same either way. */
static void test_row_deltas_truncated(void **state)
{
	char cut_detail[512], full_detail[512], *cut_svg, *full_svg;
	json_t *cut, *full, *at, *d;
	struct rec_schedule *r;

	(void)state;
	r = many_deltas(RECORD_DELTAS_KEPT);
	assert_int_equal(r->attempts[0].deltas.nkept, RECORD_DELTAS_KEPT);
	assert_int_equal(r->attempts[0].deltas.changed, 45);
	assert_true(record_deltas_truncated(&r->attempts[0].deltas));
	record_free(r);

	cut = many_deltas_report(RECORD_DELTAS_KEPT, cut_detail,
				 sizeof(cut_detail));
	at = json_array_get(json_object_get(cut, "attempts"), 0);
	d = json_object_get(at, "row_deltas");
	assert_int_equal(json_array_size(d), RECORD_DELTAS_KEPT);
	assert_string_equal(rview_str(json_array_get(d, 0), "row_key"), "d00");
	assert_string_equal(rview_str(json_array_get(d, 19), "row_key"), "d19");
	assert_int_equal(rview_int(at, "rows_added", -1), 10);
	assert_int_equal(rview_int(at, "row_deltas_total", -1), 35);
	assert_int_equal(rview_int(at, "row_deltas_duplicated", -1), 30);
	assert_int_equal(rview_int(at, "row_deltas_gained", -1), 30);
	assert_int_equal(rview_int(at, "row_deltas_lost", -1), 5);
	assert_true(json_is_true(json_object_get(at, "row_deltas_truncated")));

	full = many_deltas_report(SIZE_MAX, full_detail, sizeof(full_detail));
	at = json_array_get(json_object_get(full, "attempts"), 0);
	d = json_object_get(at, "row_deltas");
	assert_int_equal(json_array_size(d), 35);
	assert_string_equal(rview_str(json_array_get(d, 34), "row_key"), "l04");
	assert_int_equal(rview_int(at, "rows_added", -1), 10);
	assert_int_equal(rview_int(at, "row_deltas_total", -1), 35);
	assert_int_equal(rview_int(at, "row_deltas_duplicated", -1), 30);
	assert_null(json_object_get(at, "row_deltas_truncated"));

	assert_non_null(strstr(cut_detail, "changed 45 target row(s) (first "
				"'d00' 1 -> 2)"));
	assert_string_equal(cut_detail, full_detail);

	cut_svg = timeline_of(cut);
	full_svg = timeline_of(full);
	assert_non_null(strstr(full_svg, "+40 rows"));
	assert_non_null(strstr(full_svg, "+30 duplicate rows: d00, d01, d02 … d29"));
	assert_non_null(strstr(cut_svg, "+40 rows"));
	assert_non_null(strstr(cut_svg, "+30 duplicate rows: d00, d01, d02 …"));
	assert_null(strstr(cut_svg, "d29")); /* never listed, never named */
	free(cut_svg);
	free(full_svg);
	json_decref(cut);
	json_decref(full);
}

/* --- render_all ------------------------------------------------------------------ */

static void test_render_all(void **state)
{
	char dir[] = "/tmp/fc-test-reports-XXXXXX", path[256], err[256];
	const char *files[] = { "report.json", "report.junit.xml", "summary.md",
				"report.html" };
	json_t *doc = fixture(), *back;

	(void)state;
	assert_non_null(mkdtemp(dir));
	assert_int_equal(report_render_all(doc, dir, "json,bogus", err,
					   sizeof(err)), FC_USAGE);
	assert_non_null(strstr(err, "unknown report format 'bogus'"));
	setenv(SIGN_KEY_ENV, "", 1);
	assert_int_equal(report_render_all(doc, dir, NULL, err, sizeof(err)),
			 FC_USAGE);
	setenv(SIGN_KEY_ENV, KEY, 1);
	assert_int_equal(report_render_all(doc, dir, NULL, err, sizeof(err)), 0);
	unsetenv(SIGN_KEY_ENV);
	for (size_t i = 0; i < 4; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, files[i]);
		assert_int_equal(access(path, R_OK), 0);
	}
	snprintf(path, sizeof(path), "%s/report.json", dir);
	assert_int_equal(rview_load(path, &back, err, sizeof(err)), 0);
	assert_int_equal(sign_verify(back, &test_key, err, sizeof(err)), 0);
	json_decref(back);
	for (size_t i = 0; i < 4; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, files[i]);
		unlink(path);
	}
	assert_int_equal(rmdir(dir), 0); /* no temporary file left behind */
	json_decref(doc);
}

/* certify's --out given to the gate: "a directory", not "not JSON" */
static void test_rview_load_directory(void **state)
{
	char dir[] = "/tmp/fc-test-rview-XXXXXX", path[256], err[512];
	json_t *doc = (json_t *)1;
	FILE *f;

	(void)state;
	assert_non_null(mkdtemp(dir));
	assert_int_equal(rview_load(dir, &doc, err, sizeof(err)), FC_IO);
	assert_non_null(strstr(err, "is a directory, not a report file"));
	snprintf(path, sizeof(path), "%s/report.json", dir);
	assert_non_null(f = fopen(path, "w"));
	fclose(f);
	assert_int_equal(rview_load(dir, &doc, err, sizeof(err)), FC_IO);
	assert_non_null(strstr(err, "give the report file"));
	assert_non_null(strstr(err, path));
	/* the file itself is read as usual (empty: not JSON) */
	assert_int_equal(rview_load(path, &doc, err, sizeof(err)), FC_CORRUPT);
	assert_non_null(strstr(err, "is not JSON"));
	unlink(path);
	assert_int_equal(rmdir(dir), 0);
}

/* --- certify's --out (outdir.h) ---------------------------------------------------- */

static void test_report_file_names(void **state)
{
	(void)state;
	assert_true(render_is_report_file("report.json"));
	assert_true(render_is_report_file("report.junit.xml"));
	assert_true(render_is_report_file("summary.md"));
	assert_true(render_is_report_file("report.html"));
	assert_true(render_is_report_file(".report.html.tmp.4711"));
	assert_false(render_is_report_file(".report.html.tmp."));
	assert_false(render_is_report_file(".report.html.tmp.47x"));
	assert_false(render_is_report_file("report.json.bak"));
	assert_false(render_is_report_file("report"));
	assert_false(render_is_report_file("notes.txt"));
	assert_false(render_is_report_file(""));
}

/* A scratch parent for --out; removed by rm_parent(). */
static void scratch(char *parent, size_t len, char *out, size_t outlen)
{
	snprintf(parent, len, "/tmp/fc-test-outdir-XXXXXX");
	assert_non_null(mkdtemp(parent));
	snprintf(out, outlen, "%s/out", parent);
}

static void touch(const char *dir, const char *name)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	assert_non_null(f = fopen(path, "w"));
	fputs("x\n", f);
	fclose(f);
}

static bool exists(const char *dir, const char *name)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return access(path, F_OK) == 0;
}

/* How many entries of parent start with prefix. */
static int count_prefixed(const char *parent, const char *prefix)
{
	char cmd[600];
	FILE *p;
	int n = -1;

	snprintf(cmd, sizeof(cmd), "ls -A '%s' | grep -c '^%s' || true", parent,
		 prefix);
	assert_non_null(p = popen(cmd, "r"));
	assert_int_equal(fscanf(p, "%d", &n), 1);
	pclose(p);
	return n;
}

static void rm_parent(const char *parent)
{
	char cmd[600];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", parent);
	assert_int_equal(system(cmd), 0);
}

static void test_outdir_fresh(void **state)
{
	char parent[64], out[128], err[512];
	const char *staging;
	outdir *d;

	(void)state;
	scratch(parent, sizeof(parent), out, sizeof(out));
	/* a missing --out: open creates nothing, stage makes the sibling */
	assert_int_equal(outdir_open(out, false, &d, err, sizeof(err)), 0);
	assert_null(outdir_staging(d));
	assert_int_equal(count_prefixed(parent, ""), 0);
	assert_int_equal(outdir_stage(d, err, sizeof(err)), 0);
	assert_non_null(staging = outdir_staging(d));
	assert_int_equal(strncmp(staging, parent, strlen(parent)), 0);
	assert_non_null(strstr(staging, "/.out.incomplete-"));
	assert_int_equal(access(out, F_OK), -1);
	touch(staging, "report.json");
	assert_int_equal(outdir_publish(d, err, sizeof(err)), 0);
	assert_true(exists(out, "report.json"));
	assert_int_equal(count_prefixed(parent, ".out.incomplete-"), 0);
	outdir_free(d);
	assert_true(exists(out, "report.json"));
	rm_parent(parent);
	/* an empty --out is fine; not published (an interrupted run), the
	 * staging dir goes and --out stays as it was */
	scratch(parent, sizeof(parent), out, sizeof(out));
	assert_int_equal(mkdir(out, 0755), 0);
	assert_int_equal(outdir_open(out, false, &d, err, sizeof(err)), 0);
	assert_int_equal(outdir_stage(d, err, sizeof(err)), 0);
	touch(outdir_staging(d), "report.json");
	outdir_free(d);
	assert_int_equal(count_prefixed(parent, ".out.incomplete-"), 0);
	assert_false(exists(out, "report.json"));
	rm_parent(parent);
}

static void test_outdir_replace(void **state)
{
	char parent[64], out[128], err[512];
	outdir *d;

	(void)state;
	scratch(parent, sizeof(parent), out, sizeof(out));
	assert_int_equal(mkdir(out, 0755), 0);
	touch(out, "report.json");
	touch(out, "report.html");
	touch(out, ".summary.md.tmp.123");
	/* an earlier run's reports: refused, untouched, without force */
	assert_int_equal(outdir_open(out, false, &d, err, sizeof(err)), FC_USAGE);
	assert_null(d);
	assert_non_null(strstr(err, "holds the reports of an earlier run"));
	assert_non_null(strstr(err, "--force"));
	assert_true(exists(out, "report.json") && exists(out, "report.html"));
	/* with force: gone whole once staged, nothing of them left after */
	assert_int_equal(outdir_open(out, true, &d, err, sizeof(err)), 0);
	assert_true(exists(out, "report.html"));
	assert_int_equal(outdir_stage(d, err, sizeof(err)), 0);
	assert_int_equal(access(out, F_OK), -1);
	touch(outdir_staging(d), "report.json");
	assert_int_equal(outdir_publish(d, err, sizeof(err)), 0);
	outdir_free(d);
	assert_true(exists(out, "report.json"));
	assert_false(exists(out, "report.html"));
	assert_false(exists(out, ".summary.md.tmp.123"));
	rm_parent(parent);
}

static void test_outdir_refuses(void **state)
{
	char parent[64], out[128], link[160], err[512];
	outdir *d;

	(void)state;
	scratch(parent, sizeof(parent), out, sizeof(out));
	assert_int_equal(mkdir(out, 0755), 0);
	touch(out, "report.json");
	touch(out, "notes.txt");
	/* somebody else's file: refused even with force, nothing removed */
	for (int force = 0; force < 2; force++) {
		assert_int_equal(outdir_open(out, force, &d, err, sizeof(err)),
				 FC_USAGE);
		assert_non_null(strstr(err, "holds 'notes.txt', which is not a "
				       "fencecert report"));
	}
	assert_true(exists(out, "notes.txt") && exists(out, "report.json"));
	/* a file, a symbolic link, names that are no directory of its own */
	touch(parent, "plain");
	snprintf(link, sizeof(link), "%s/plain", parent);
	assert_int_equal(outdir_open(link, true, &d, err, sizeof(err)), FC_USAGE);
	assert_non_null(strstr(err, "is not a directory"));
	snprintf(link, sizeof(link), "%s/link", parent);
	assert_int_equal(symlink(out, link), 0);
	assert_int_equal(outdir_open(link, true, &d, err, sizeof(err)), FC_USAGE);
	assert_non_null(strstr(err, "is a symbolic link"));
	assert_int_equal(outdir_open(".", true, &d, err, sizeof(err)), FC_USAGE);
	assert_non_null(strstr(err, "names no directory"));
	assert_int_equal(outdir_open("/", true, &d, err, sizeof(err)), FC_USAGE);
	assert_int_equal(outdir_open("a/..", true, &d, err, sizeof(err)), FC_USAGE);
	assert_int_equal(count_prefixed(parent, "\\."), 0); /* no staging dir */
	rm_parent(parent);
}

static void test_outdir_publish_conflict(void **state)
{
	char parent[64], out[128], err[512], staging[256];
	outdir *d;

	(void)state;
	scratch(parent, sizeof(parent), out, sizeof(out));
	assert_int_equal(outdir_open(out, false, &d, err, sizeof(err)), 0);
	assert_int_equal(outdir_stage(d, err, sizeof(err)), 0);
	snprintf(staging, sizeof(staging), "%s", outdir_staging(d));
	touch(staging, "report.json");
	/* somebody wrote --out during the run: theirs stays, ours is kept */
	assert_int_equal(mkdir(out, 0755), 0);
	touch(out, "theirs");
	assert_int_equal(outdir_publish(d, err, sizeof(err)), FC_IO);
	assert_non_null(strstr(err, staging));
	outdir_free(d);
	assert_true(exists(out, "theirs"));
	assert_true(exists(staging, "report.json"));
	rm_parent(parent);
}

static void test_check_rejects(void **state)
{
	json_t *doc = fixture();
	char err[256];

	(void)state;
	json_object_set_new(json_array_get(json_object_get(doc, "routes"), 1),
			    "verdict", json_string("certified-maybe"));
	assert_int_equal(rview_check(doc, err, sizeof(err)), FC_CORRUPT);
	assert_non_null(strstr(err, "naive"));
	json_object_set_new(doc, "schema", json_string("fencecert.report.v2"));
	assert_int_equal(rview_check(doc, err, sizeof(err)), FC_CORRUPT);
	json_decref(doc);
}

/* --- gate ------------------------------------------------------------------------ */

/* The gate's answer for doc under req; asserts it could judge. */
static json_t *judge(const json_t *doc, const struct gate_require *req)
{
	json_t *verdict = NULL;

	assert_int_equal(gate_check(doc, req, &verdict), 0);
	assert_non_null(verdict);
	return verdict;
}

static bool passed(const json_t *verdict)
{
	return json_is_true(json_object_get(verdict, "passed"));
}

/* The idx-th reason, or "". */
static const char *reason(const json_t *verdict, size_t idx)
{
	const char *s = json_string_value(json_array_get(
		json_object_get(verdict, "reasons"), idx));

	return s ? s : "";
}

static void test_gate_rules(void **state)
{
	json_t *doc = fixture(), *v;
	const char *naive[] = { "naive" }, *ghost[] = { "c-sqlite", "ghost" };
	const char *digest[] = { "naive=sha256:00" };
	const struct sign_key empty = { (const unsigned char *)"", 0 };
	struct gate_require req = {
		.level = VERDICT_CERTIFIED_FAIL_CLOSED, .key = &test_key,
	};

	(void)state;
	assert_int_equal(sign_report(doc, &test_key), 0);
	/* every route: c-sqlite reaches the level, the controls were rejected */
	v = judge(doc, &req);
	assert_true(passed(v));
	assert_string_equal(rview_str(v, "signature"), "verified");
	assert_string_equal(rview_str(v, "required"), "certified-fail-closed");
	assert_int_equal(json_array_size(json_object_get(v, "routes")), 3);
	json_decref(v);
	/* a named route below the level, a route not in the report */
	req.routes = naive;
	req.nroutes = 1;
	req.level = VERDICT_CERTIFIED_AUTOMATIC;
	v = judge(doc, &req);
	assert_false(passed(v));
	assert_string_equal(reason(v, 0), "route 'naive' is rejected, required "
			    "certified-automatic");
	json_decref(v);
	req.routes = ghost;
	req.nroutes = 2;
	v = judge(doc, &req);
	assert_false(passed(v));
	assert_string_equal(reason(v, 0), "route 'ghost' is not in the report");
	json_decref(v);
	/* digests: every mismatch is one reason, in check order */
	req.nroutes = 0;
	req.level = VERDICT_CERTIFIED_FAIL_CLOSED;
	req.suite_digest = "sha256:0000";
	req.tool_version = "9.9.9";
	req.route_digests = digest;
	req.ndigests = 1;
	v = judge(doc, &req);
	assert_int_equal(json_array_size(json_object_get(v, "reasons")), 3);
	assert_non_null(strstr(reason(v, 0), "suite digest is"));
	assert_non_null(strstr(reason(v, 1), "fencecert '0.1.0', expected '9.9.9'"));
	assert_non_null(strstr(reason(v, 2), "route 'naive' digest is"));
	json_decref(v);
	req.suite_digest = req.tool_version = NULL;
	req.ndigests = 0;
	/* keys: empty refused; none noted, or refused when required */
	req.key = &empty;
	v = judge(doc, &req);
	assert_false(passed(v));
	assert_string_equal(rview_str(v, "signature"), "not-checked");
	assert_non_null(strstr(reason(v, 0), "is set but empty"));
	json_decref(v);
	req.key = NULL;
	v = judge(doc, &req);
	assert_true(passed(v));
	assert_string_equal(rview_str(v, "signature"), "not-checked");
	json_decref(v);
	req.require_signature = true;
	v = judge(doc, &req);
	assert_false(passed(v));
	assert_non_null(strstr(reason(v, 0), "no signing key"));
	json_decref(v);
	/* a release cannot require rejected or unverified */
	req.level = VERDICT_REJECTED;
	assert_int_equal(gate_check(doc, &req, &v), FC_USAGE);
	assert_null(v);
	json_decref(doc);
}

/* A control route that passed: the suite cannot tell wrong from right. */
static void test_gate_control(void **state)
{
	json_t *doc = fixture(), *v;
	struct gate_require req = { .level = VERDICT_CERTIFIED_FAIL_CLOSED };

	(void)state;
	json_object_set_new(json_array_get(json_object_get(doc, "routes"), 2),
			    "verdict", json_string("certified-automatic"));
	v = judge(doc, &req);
	assert_false(passed(v));
	assert_non_null(strstr(reason(v, 0), "control route 'checkpoint-guard' "
			       "is certified-automatic, expected rejected"));
	json_decref(v);
	json_decref(doc);
}

/* --- merge ----------------------------------------------------------------------- */

/* Shard k of n of doc: each route's schedules dealt round-robin. */
static json_t *shard_of(const json_t *doc, size_t k, size_t n)
{
	json_t *shard = json_deep_copy(doc), *r, *all, *mine;
	size_t i, j;

	assert_non_null(shard);
	json_array_foreach(json_object_get(shard, "routes"), i, r) {
		all = json_object_get(r, "schedules");
		mine = json_array();
		for (j = k; j < json_array_size(all); j += n)
			json_array_append(mine, json_array_get(all, j));
		json_object_set_new(r, "schedules", mine);
	}
	json_object_set_new(shard, "shard", json_pack("{s:I, s:I}", "index",
		(json_int_t)k + 1, "count", (json_int_t)n));
	return shard;
}

static void test_merge_shards(void **state)
{
	static const char *const paths[] = { "s1.json", "s2.json", "s3.json" };
	json_t *doc = fixture(), *in[3], *out, *r;
	char err[1024];
	size_t i;

	(void)state;
	for (i = 0; i < 3; i++)
		in[i] = shard_of(doc, i, 3);
	/* a lying shard verdict is recomputed away */
	json_object_set_new(json_array_get(json_object_get(in[0], "routes"), 1),
			    "verdict", json_string("certified-automatic"));
	assert_int_equal(merge_reports(in, paths, 3, NULL, &out, err,
				       sizeof(err)), 0);
	assert_int_equal(rview_check(out, err, sizeof(err)), 0);
	json_array_foreach(json_object_get(out, "routes"), i, r) {
		const json_t *want = json_array_get(json_object_get(doc, "routes"), i);

		assert_string_equal(rview_str(r, "name"), rview_str(want, "name"));
		assert_string_equal(rview_str(r, "verdict"), rview_str(want, "verdict"));
		assert_true(json_equal(json_object_get(r, "expectation_met"),
				       json_object_get(want, "expectation_met")));
		assert_int_equal(json_array_size(rview_arr(r, "schedules")),
				 json_array_size(rview_arr(want, "schedules")));
	}
	assert_int_equal(json_array_size(rview_arr(out, "merged_from")), 3);
	/* no key: nothing verified, and the output says so */
	assert_null(json_object_get(out, "signature"));
	assert_string_equal(rview_str(out, "unsigned"), MERGE_UNSIGNED_NOTE);
	json_decref(out);
	/* a missing shard, a repeated one */
	assert_int_equal(merge_reports(in, paths, 2, NULL, &out, err,
				       sizeof(err)), FC_USAGE);
	assert_null(out);
	assert_non_null(strstr(err, "shard 3/3 is missing"));
	json_decref(in[2]);
	in[2] = json_incref(in[1]);
	assert_int_equal(merge_reports(in, paths, 3, NULL, &out, err,
				       sizeof(err)), FC_USAGE);
	assert_non_null(strstr(err, "is given twice"));
	for (i = 0; i < 3; i++)
		json_decref(in[i]);
	json_decref(doc);
}

static void test_merge_signed(void **state)
{
	static const char *const paths[] = { "s1.json", "s2.json" };
	const struct sign_key empty = { (const unsigned char *)"", 0 };
	json_t *doc = fixture(), *in[2], *out;
	char err[1024];

	(void)state;
	for (size_t i = 0; i < 2; i++)
		in[i] = shard_of(doc, i, 2);
	/* unsigned inputs under a key; an empty key */
	assert_int_equal(merge_reports(in, paths, 2, &test_key, &out, err,
				       sizeof(err)), FC_USAGE);
	assert_non_null(strstr(err, "'s1.json'"));
	assert_int_equal(merge_reports(in, paths, 2, &empty, &out, err,
				       sizeof(err)), FC_USAGE);
	assert_non_null(strstr(err, "is set but empty"));
	for (size_t i = 0; i < 2; i++)
		assert_int_equal(sign_report(in[i], &test_key), 0);
	assert_int_equal(merge_reports(in, paths, 2, &test_key, &out, err,
				       sizeof(err)), 0);
	assert_int_equal(sign_verify(out, &test_key, err, sizeof(err)), 0);
	assert_null(json_object_get(out, "unsigned"));
	json_decref(out);
	/* an input altered after signing is refused */
	json_object_set_new(json_array_get(json_object_get(in[1], "routes"), 1),
			    "verdict", json_string("certified-automatic"));
	assert_int_equal(merge_reports(in, paths, 2, &test_key, &out, err,
				       sizeof(err)), FC_USAGE);
	assert_null(out);
	assert_non_null(strstr(err, "'s2.json': signature does not match"));
	for (size_t i = 0; i < 2; i++)
		json_decref(in[i]);
	json_decref(doc);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sign_known_answer),
		cmocka_unit_test(test_sign_round_trip),
		cmocka_unit_test(test_sign_tampered_verdict),
		cmocka_unit_test(test_sign_malformed),
		cmocka_unit_test(test_sign_key_env),
		cmocka_unit_test(test_junit_escaping),
		cmocka_unit_test(test_junit_fixture),
		cmocka_unit_test(test_md_fixture),
		cmocka_unit_test(test_md_escaping),
		cmocka_unit_test(test_html_fixture),
		cmocka_unit_test(test_html_escaping),
		cmocka_unit_test(test_timeline_lanes),
		cmocka_unit_test(test_row_deltas_compact),
		cmocka_unit_test(test_row_deltas_truncated),
		cmocka_unit_test(test_render_all),
		cmocka_unit_test(test_report_file_names),
		cmocka_unit_test(test_outdir_fresh),
		cmocka_unit_test(test_outdir_replace),
		cmocka_unit_test(test_outdir_refuses),
		cmocka_unit_test(test_outdir_publish_conflict),
		cmocka_unit_test(test_rview_load_directory),
		cmocka_unit_test(test_check_rejects),
		cmocka_unit_test(test_gate_rules),
		cmocka_unit_test(test_gate_control),
		cmocka_unit_test(test_merge_shards),
		cmocka_unit_test(test_merge_signed),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
