/*
 * report_junit.h -- a fencecert.report.v1 document as JUnit XML, the
 * Jenkins/Ant shape CI servers read (tests/data/junit.xsd describes it).
 *
 * Mapping:
 *   <testsuites>   the run (name "fencecert SUITE")
 *   <testsuite>    one per route; properties carry verdict, expectation,
 *                  route digest, suite digest and tool version
 *   <testcase>     one per schedule: name "SCENARIO SCHEDULE",
 *                  classname = route name, time = schedule duration
 *   <failure>      the schedule broke an invariant:
 *                  message "invariant N NAME: detail" (first violation),
 *                  body = every violation and the reproduce command
 *   <error>        the schedule is unverified (type "unverified"): the
 *                  harness could not observe everything.  Not <skipped>:
 *                  skipped reads as harmless on CI pages, while the gate
 *                  never accepts an unverified route.
 *   <system-out>   outcome, its reason and the reproduce command
 *
 * Schedules that stopped fail-closed pass: stopping is the correct
 * behaviour there, and the route's verdict says so.
 *
 * Who includes it: render.c (and tests/).  Invariant: the XML is a
 * function of the document alone (read through rview.h) and valid
 * against junit.xsd for any document rview_check() accepts.
 */
#ifndef FENCECERT_REPORT_JUNIT_H
#define FENCECERT_REPORT_JUNIT_H

#include <stdio.h>

#include <jansson.h>

#include "common/error.h"

/* Write the XML to out.  Returns 0, or FC_IO when writing failed. */
int report_junit_write(const json_t *report, FILE *out) FC_MUST_CHECK;

#endif
