/*
 * clock.h -- the two clocks fencecert reads, in milliseconds.
 *
 * Owns: how time is read.  Who includes it: anything.
 *
 *   clock_mono_ms()  CLOCK_MONOTONIC: deadlines, timeouts and the times of
 *                    a schedule's record (relative, never goes back)
 *   clock_wall_ms()  CLOCK_REALTIME as Unix ms: what is stored (journal
 *                    timestamps, fence records, leases) and compared
 *                    across processes and hosts
 *
 * Invariant: no other file calls clock_gettime(), so a time in fencecert
 * is always one of these two, and every comparison of times is between
 * values of the same clock.
 */
#ifndef FENCECERT_CLOCK_H
#define FENCECERT_CLOCK_H

long long clock_mono_ms(void);
long long clock_wall_ms(void);

#endif
