/*
 * failpoint.h -- the failpoint channel, route side (SPEC section 7).
 *
 * A failpoint is a named protocol step where a supervisor may kill, pause or
 * fail the route.  When FENCECERT_FAILPOINT_FD names an open descriptor (a
 * socket the supervisor holds the other end of), failpoint_hit(name) writes
 * "HIT <name>\n" to it and blocks until the supervisor answers one byte:
 *
 *   'c'  continue: failpoint_hit() returns 0
 *   'f'  fail this step as an I/O error would: returns FC_IO
 *
 * When FENCECERT_FAILPOINT_WAIT is set too (a comma-separated list of names,
 * possibly empty), only the names in it wait as above; any other failpoint
 * writes "PASS <name>\n" and returns 0 without reading: the supervisor
 * said it will not act there.  Unset: every failpoint waits.
 *
 * Without the channel every failpoint is a no-op that costs one branch.
 *
 * Fail closed: once a channel was configured, a channel that breaks (EOF, a
 * write or read error, an answer other than 'c'/'f') makes this and every
 * later failpoint_hit() return FC_IO.  A route that cannot ask its supervisor
 * must not run on as if it had been told to continue: the supervisor may be
 * gone precisely because the scenario wanted this step to fail.
 *
 * The module keeps, in process, the list of names hit so far once recording
 * was switched on (failpoint_record()), with or without a channel, so unit
 * tests can check which steps ran; a route does not record.  Names are the
 * stable list of docs/failpoints.md, FP_* in common/protocol.h; the
 * variable names, lines and answers are there too.
 *
 * Who includes it: the route runtime, the controls and the route command
 * (routes/, cli/cmd_route.c).  The harness's end of the channel is the
 * supervisor (harness/proc/supervise.h), which shares only protocol.h.
 *
 * Not thread-safe: a route attempt is one thread.
 */
#ifndef FENCECERT_FAILPOINT_H
#define FENCECERT_FAILPOINT_H

#include <stdbool.h>
#include <stddef.h>

#include "common/error.h"
#include "common/protocol.h"

/*
 * Read FENCECERT_FAILPOINT_FD and FENCECERT_FAILPOINT_WAIT (again, if called
 * again) and forget earlier hits.  Returns 0, or FC_USAGE with a message in err when the variable is
 * set but is not the number of an open descriptor.  Unset or empty: the
 * channel is off.
 */
int failpoint_init(char *err, size_t errlen) FC_MUST_CHECK;

/* True when a channel is configured (and has not broken). */
bool failpoint_enabled(void);

int failpoint__hit(const char *name);

/*
 * The step `name` is about to run (before_X) or has run (after_X).
 * Returns 0 to go on, FC_IO when the step must fail (answer 'f', or the
 * channel broke).  Inline so that a route without a channel pays one branch.
 */
extern bool failpoint__active;
static inline int failpoint_hit(const char *name)
{
	if (!failpoint__active)
		return 0;
	return failpoint__hit(name);
}

/* Record hit names even without a channel (tests).  Off by default. */
void failpoint_record(bool on);

/* Number of names hit since failpoint_init(); the i-th one (NULL if out of
 * range).  The strings are owned by the module. */
size_t failpoint_hit_count(void);
const char *failpoint_hit_name(size_t i);

/* Forget the channel and the recorded hits (tests; atexit is not needed). */
void failpoint_reset(void);

#endif
