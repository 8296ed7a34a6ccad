/*
 * timeline.h -- one schedule of a report as an inline SVG timeline.
 *
 * Time runs left to right in ms since the schedule started.  One lane per
 * attempt (worker process), grouped by operation:
 *
 *   - the bar spans the attempt's life; a hatched stretch is the time it
 *     spent stopped (pause .. resume);
 *   - thin ticks are failpoint hits; journal transitions are dots above
 *     the bar labelled with the state entered;
 *   - fault symbols: kill (red cross), pause (bars), resume (triangle),
 *     fail (exclamation); between-try faults (lost XCom, lost pod, changed
 *     source) sit on an "orchestrator" lane at the top;
 *   - how the attempt ended ("exit 0", "SIGKILL") and the rows it added
 *     follow the bar;
 *   - an attempt that made rows appear twice gets a red band and the line
 *     "+N duplicate rows: o1-r1 ... after <fault>"; an operation whose rows
 *     are missing at the end gets a dashed band on its last attempt.
 *
 * Journal timestamps are wall-clock while the schedule's times are
 * relative: the schedule's "wall_start_ms" places them exactly when the
 * report has it; otherwise the offset is estimated by matching each
 * transition with the after_<state> failpoint hit that follows it.
 *
 * Every string is escaped; `id` makes the SVG's internal ids unique in a
 * page holding many timelines.  Failpoint names are matched with the
 * constants of common/protocol.h, journal states with journal/states.h.
 *
 * Who includes it: report_html.c (and tests/).  timeline.c states the
 * layout's invariants.
 */
#ifndef FENCECERT_TIMELINE_H
#define FENCECERT_TIMELINE_H

#include <stdio.h>

#include <jansson.h>

#include "common/error.h"

/* Write the <svg> element for one schedule object of a report.
 * Returns 0, FC_NOMEM, or FC_IO when out reports an error. */
int timeline_svg(FILE *out, const json_t *schedule, int id) FC_MUST_CHECK;

#endif
