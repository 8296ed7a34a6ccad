/*
 * report_html.h -- a fencecert.report.v1 document as ONE self-contained
 * HTML file: inline CSS, inline SVG timelines (timeline.h), no network,
 * no external assets.  A few lines of inline JS add "expand all" /
 * "collapse all" buttons; everything else works without it.
 *
 * Page order: run facts (tool, suite digest, signature, environment);
 * verdict table; legend; one section per route with its coverage,
 * violations (with reproduce commands) and schedules -- failing first and
 * open, unverified next, passing collapsed under one <details>.  Beyond
 * HTML_PASSING_TIMELINES passing schedules per route, the rest are listed
 * without timelines so a large report stays small enough to open.
 *
 * Who includes it: render.c (and tests/).  Invariant: the page is a
 * function of the document alone -- read through rview.h, verdict names
 * from harness/check/verdict.h, no clock, no environment -- and every
 * string from the document is escaped (rview_xml()).
 */
#ifndef FENCECERT_REPORT_HTML_H
#define FENCECERT_REPORT_HTML_H

#include <stdio.h>

#include <jansson.h>

#include "common/error.h"

#define HTML_PASSING_TIMELINES 40
#define HTML_FAILING_TIMELINES 200
#define HTML_VIOLATIONS_MAX 100

/* Write the page to out.  Returns 0, FC_NOMEM, or FC_IO. */
int report_html_write(const json_t *report, FILE *out) FC_MUST_CHECK;

#endif
