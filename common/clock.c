/*
 * clock.c -- the two clocks (clock.h).
 */
#include <time.h>

#include "common/clock.h"

static long long read_ms(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

long long clock_mono_ms(void)
{
	return read_ms(CLOCK_MONOTONIC);
}

long long clock_wall_ms(void)
{
	return read_ms(CLOCK_REALTIME);
}
