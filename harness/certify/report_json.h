/*
 * report_json.h -- the JSON report of a certification run, schema
 * "fencecert.report.v1" (docs/harness.md lists the keys).
 *
 * Two levels:
 *   report_json_schedule()  one schedule: attempts (try, pid, times,
 *                           exit/signal, failpoints hit, faults applied,
 *                           row deltas), journal history per operation,
 *                           target observation summary, outcome and
 *                           violations.  Workers send these to the
 *                           coordinator as JSON lines.
 *   report_json_new() + report_json_add_route() + report_json_finish()
 *                           the whole report.
 *
 * Every value goes through jansson; nothing here formats JSON by hand.
 * Names of verdicts, outcomes and invariants come from the checker
 * (harness/check/verdict.h, check.h), so reports/ reads back exactly the
 * words written here.
 *
 * Who includes it: certify.c, cli/cmd_certify.c (and tests/).  It is the
 * harness's side of the report; reports/ reads it from the file, never
 * through this header.
 *
 * Ownership: functions returning json_t * return a new reference (NULL when
 * out of memory); report_json_add_route() steals the references it gets.
 */
#ifndef FENCECERT_REPORT_JSON_H
#define FENCECERT_REPORT_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "harness/check/check.h"
#include "harness/model/record.h"
#include "harness/model/scenario.h"
#include "common/error.h"

#define REPORT_SCHEMA "fencecert.report.v1"

struct report_job_info {
	const char *kind;       /* explore job kind ("fixed", "try1", ...) */
	bool strict;
	const char *reproduce;  /* the command that replays the schedule */
};

json_t *report_json_schedule(const struct rec_schedule *r,
			     const struct check_result *c,
			     const struct report_job_info *info);

/* Top level: schema, tool, suite, seed (NULL: none given), environment
 * (containment: supervisor_containment_name() of how the routes ran). */
json_t *report_json_new(const struct suite *s, const uint64_t *seed,
			int jobs, const char *containment);

/* Append a route object.  coverage, violations and schedules are stolen. */
int report_json_add_route(json_t *report, const struct route_spec *rs,
			  enum verdict v, json_t *coverage, json_t *violations,
			  json_t *schedules) FC_MUST_CHECK;

/* Set duration and the summary counts (routes, verdicts, schedules,
 * violations).  FC_NOMEM. */
int report_json_finish(json_t *report, long long duration_ms) FC_MUST_CHECK;

/* "sha256:..." of a route's definition (command, urls, observe, env). */
void report_json_route_digest(const struct route_spec *rs, char out[80]);

#endif
