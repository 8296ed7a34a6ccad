/*
 * rview.h -- reading a fencecert.report.v1 document (a json_t *
 * loaded from report.json) for the renderers, the gate and merge.
 *
 * The renderers work from the JSON document, never from harness structs,
 * so a report written by one build can be rendered, gated or merged by
 * another.  These helpers make a missing or mistyped member read as a
 * neutral value ("" or 0) instead of crashing a renderer; the structural
 * check rview_check() is what decides whether a document is a
 * report at all (a known verdict by harness/check/verdict.h's names).
 *
 * Who includes it: every file of reports/, cli/ and tests/.  It sits at
 * the bottom of reports/ and calls only jansson and the verdict module.
 *
 * Ownership: every json_t * returned is borrowed from the document.
 */
#ifndef FENCECERT_RVIEW_H
#define FENCECERT_RVIEW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include <jansson.h>

#include "common/error.h"
#include "harness/check/report_summary.h"

#define RVIEW_SCHEMA "fencecert.report.v1"

/* obj[key] as a string, or "" when absent or not a string. */
const char *rview_str(const json_t *obj, const char *key);

/* obj[key] as an integer, or dflt when absent or not an integer. */
long long rview_int(const json_t *obj, const char *key, long long dflt);

/* obj[key] when it is an array, else NULL (jansson treats NULL as an
 * empty array in json_array_size() and json_array_foreach()). */
json_t *rview_arr(const json_t *obj, const char *key);

/*
 * Load path into *out.  FC_IO when unreadable or a directory (err then
 * names DIR/report.json when there is one), FC_CORRUPT when it is not
 * JSON or fails rview_check(); err says what and where.
 */
int rview_load(const char *path, json_t **out, char *err, size_t errlen)
	FC_MUST_CHECK;

/* The members every consumer relies on: schema, tool, suite, routes with
 * name / verdict / schedules.  FC_CORRUPT with a message otherwise. */
int rview_check(const json_t *report, char *err, size_t errlen)
	FC_MUST_CHECK;

/* Verdicts ranked for gates: certified-automatic 2, certified-fail-closed
 * 1, anything else (rejected, unverified, unknown) 0. */
int rview_verdict_rank(const char *verdict);

/* How a schedule counts in renderers: report_schedule_class()
 * (harness/check/report_summary.h), the classes certify and merge cap
 * a report's detail by. */

/*
 * The schedules of a route with failed first, then unverified, then
 * passed, each group in report order.  Fills idx[0..n) with indices into
 * the route's "schedules"; idx must hold json_array_size() entries.
 */
void rview_schedule_order(const json_t *route, size_t *idx);

/* "2024-05-01T12:00:00Z" for Unix ms (UTC); "" for ms <= 0. */
void rview_iso_time(long long ms, char *out, size_t len, bool zone);

/* Write s escaped for XML / HTML text and attribute values: & < > " '
 * and characters XML 1.0 forbids (replaced by U+FFFD).  Newlines in
 * attributes become &#10; so they survive attribute normalisation. */
void rview_xml(FILE *out, const char *s, bool attribute);

/* Like rview_xml() for at most max bytes of s (cut at a UTF-8 boundary),
 * followed by "…" when cut. */
void rview_xml_cut(FILE *out, const char *s, size_t max, bool attribute);

/* Write s for a Markdown table cell or inline text: | ` * _ [ ] < > \
 * escaped, newlines as <br>. */
void rview_md(FILE *out, const char *s);

#endif
