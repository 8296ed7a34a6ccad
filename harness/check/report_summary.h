/*
 * report_summary.h -- the `summary` member of a fencecert.report.v1
 * document (docs/report-format.md): counts derived from its routes.
 *
 * Owns: how the summary is counted, and how a schedule's retried stops
 * are read back for the verdict's window rule.  A run's report (harness/certify)
 * and a merge of shards (reports/merge.c) both count it here, so a merged
 * summary cannot differ from the one a single run would have written --
 * the same reason the verdict rule lives in verdict.h.
 *
 * Who includes it: harness/certify and reports/.  It depends on jansson
 * only.
 */
#ifndef FENCECERT_REPORT_SUMMARY_H
#define FENCECERT_REPORT_SUMMARY_H

#include <stdbool.h>

#include <jansson.h>

/*
 * {"routes", "expectations_met", "schedules", "violations", "verdicts"}
 * over a report's `routes` array: the number of routes, of routes whose
 * expectation_met is true, of their schedules and violations, and the
 * number of routes per verdict name.  A new reference, or NULL when out
 * of memory.
 */
json_t *report_summary(const json_t *routes);

/*
 * Which windows a schedule of a report challenged, from its
 * `retried_stops` (docs/report-format.md): *before / *after when some
 * stop there is "before-mutation" / "after-mutation".  False (and both
 * false) for a schedule that does not say -- written by a harness older
 * than the window rule.  A run (harness/certify) and a merge of its shards
 * (reports/merge.c) read it here, so both fold the same counts.
 */
bool report_schedule_windows(const json_t *schedule, bool *before,
			     bool *after);

/* A schedule's class as readers order them: a violation, else an
 * unverified outcome, else passed. */
enum report_class {
	REPORT_PASSED,
	REPORT_FAILED,
	REPORT_UNVERIFIED,
};
enum report_class report_schedule_class(const json_t *schedule);

/*
 * How many schedules of each class per route keep their detail
 * (`attempts`, `operations`, `reached`, `applied`): the first ones in the
 * array's order, which readers show first (the HTML report draws their
 * timelines).  The others keep what a reader, `gate` and `merge` use --
 * outcome, violations with their text, retried stops, target counts,
 * faults, the reproduce line -- and say `"detail": "summary"`, so a
 * report's size grows with schedules by about a kilobyte each, whatever
 * the routes did.  `certify --full-report` and `merge --full-report` keep
 * every detail.
 */
#define REPORT_DETAIL_KEPT 10

/* Summarize every schedule of the array past the first REPORT_DETAIL_KEPT
 * of its class (a schedule already summarized counts as kept). */
void report_cap_details(json_t *schedules);

#endif
