/*
 * observe.h -- read what a target actually holds, after each attempt and
 * at the end of a schedule, without trusting the route or its fence.
 *
 * Rows come from, in order of preference:
 *   observe.sql      the query runs on the sqlite: target, read-only
 *                    (target_reader_sql); it yields (row_key, count) rows
 *   observe.command  argv ({dir} expanded) run under the supervisor with a
 *                    time limit; stdout lines "row_key count", bounded size
 *   neither          target_reader_rows() on the target
 * One target_reader serves every observation of the schedule, so a sqlite:
 * target is opened once (fences/target.h says what that keeps open), until
 * observer_free() -- or each time, with observer_one_shot(), or again
 * after observer_drop() (the files were replaced under it).
 * Rows with the same key are summed (by the row store, obs_store.h).
 *
 * Fence records (for the fencing invariant) come from target_reader_fences()
 * when the target URL is sqlite: or file:; other schemes are "not
 * observable" (fences_observed false), never guessed.
 *
 * A target that does not exist yet holds no rows.
 *
 * Ownership: observer_new() returns a heap object; observer_free()
 * releases it.  observer_take() fills a caller-provided rec_observation
 * whose arrays the record then owns.
 *
 * Included by harness/run only (the orchestrator and its setup).
 */
#ifndef FENCECERT_OBSERVE_H
#define FENCECERT_OBSERVE_H

#include <stddef.h>

#include "common/error.h"
#include "harness/model/record.h"
#include "harness/model/scenario.h"
#include "harness/proc/supervise.h"

#define OBSERVE_OUTPUT_MAX (16L * 1024 * 1024) /* bytes of command output */
#define OBSERVE_TIMEOUT_MS 10000

typedef struct observer observer;

/* Bind a route's observation settings to a schedule.  The target URL the
 * route is given is expanded with route_vars (observer_target()); what the
 * harness reads -- the target, observe.command -- is expanded with
 * harness_vars, whose {proxy:NAME} is the proxy's upstream: a fault a
 * proxy injects into the route's connection never meets the observer.
 * route_vars->dir holds the observer's files.  sv runs observe.command
 * (may be NULL when the route has none). */
int observer_new(const struct route_spec *rs, const struct workload_spec *wl,
		 const struct template_vars *route_vars,
		 const struct template_vars *harness_vars, supervisor *sv,
		 observer **out, char *err, size_t errlen) FC_MUST_CHECK;
void observer_free(observer *o); /* NULL is a no-op */

/*
 * Close the target after every observation instead of keeping it open for
 * the schedule: for schedules whose route runs under syscall faults, so
 * the route's own close (checkpoint and all) is what it would be alone,
 * and its syscalls are the ones discovery counted.
 */
void observer_one_shot(observer *o);

/* Close the target now, once: the files under it were replaced (a
 * restored state), so the next observation opens them afresh. */
void observer_drop(observer *o);

/* The expanded target URL, as the route is given it. */
const char *observer_target(const observer *o);

/*
 * Observe now, as observation n of the row store `rows`.  On success the
 * rows are in the store (in one transaction), out->fences are filled and
 * out->status is 0.  On failure the store holds no rows of n, out->status
 * is the error and the message is in observer_errmsg().
 */
int observer_take(observer *o, obs_store *rows, int n,
		  struct rec_observation *out) FC_MUST_CHECK;
const char *observer_errmsg(const observer *o);

#endif
