/*
 * report_md.h -- a fencecert.report.v1 document as a Markdown summary for
 * a GitHub job summary ($GITHUB_STEP_SUMMARY) or a PR/MR comment.
 *
 * Sections: one heading line with the overall result; the verdict table;
 * violations grouped by route, each with its reproduce command in a code
 * block (at most MD_VIOLATIONS_PER_ROUTE per route and MD_VIOLATIONS_MAX
 * in all, so the summary stays far below GitHub's 1 MiB step limit);
 * unverified reasons; coverage; the run's facts (tool, suite digest,
 * signature).
 *
 * Who includes it: render.c (and tests/).  Invariant: the Markdown is a
 * function of the document alone (read through rview.h, verdicts by
 * harness/check/verdict.h) and bounded by the limits below.
 */
#ifndef FENCECERT_REPORT_MD_H
#define FENCECERT_REPORT_MD_H

#include <stdio.h>

#include <jansson.h>

#include "common/error.h"

#define MD_VIOLATIONS_PER_ROUTE 5
#define MD_VIOLATIONS_MAX 40

/* Write the Markdown to out.  Returns 0, or FC_IO. */
int report_md_write(const json_t *report, FILE *out) FC_MUST_CHECK;

#endif
