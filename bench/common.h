/*
 * common.h -- what the C benchmarks share: a monotonic clock, knobs
 * from the environment, the median of rounds, the CAS cycle they drive,
 * and a private PostgreSQL or etcd started through the ci/ scripts when
 * the environment names none.
 */
#ifndef FENCECERT_BENCH_COMMON_H
#define FENCECERT_BENCH_COMMON_H

#include <stddef.h>

#include "journal/states.h"

/* CLOCK_MONOTONIC in seconds. */
double bench_now_s(void);

/* A positive integer from the environment, or def. */
int bench_env_int(const char *name, int def);

/* Sorts v in place and returns its median. */
double bench_median(double *v, int n);

/* The endless legal cycle the benchmarks walk an entry through:
 * PREPARING -> PREPARED -> FAILED_PRE_COMMIT -> PREPARING -> ... */
enum fc_state bench_next_state(enum fc_state s);

/* A server started for one benchmark run: `ci/KIND-up DIR/SUB` in a fresh
 * temporary DIR, its first output line kept in line. */
struct bench_service {
	const char *kind;   /* "pg" or "etcd": the ci/ script pair */
	char dir[64];
	char sub[32];       /* "" or the member directory under dir */
	int started;
};

/* Start it; 0 with the script's first line (newline stripped) in line. */
int bench_service_up(struct bench_service *s, char *line, size_t len);

/* Stop it and remove its directory; a no-op if it never started. */
void bench_service_down(struct bench_service *s);

#endif
