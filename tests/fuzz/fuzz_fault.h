/*
 * fuzz_fault.h -- what the fuzz targets over faults share: whether two
 * faults are the same schedule entry, and the round trip through the
 * schedule string that every schedule must survive (schedule.h).
 * Included by fuzz_scenario.c and fuzz_schedule.c only.
 */
#ifndef FENCECERT_FUZZ_FAULT_H
#define FENCECERT_FUZZ_FAULT_H

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "harness/model/schedule.h"

/* Every field a schedule string carries (not the source position). */
static inline bool fuzz_same_fault(const struct fault *a, const struct fault *b)
{
	return a->action == b->action && a->attempt == b->attempt &&
	       a->after_attempt == b->after_attempt &&
	       strcmp(a->failpoint, b->failpoint) == 0 && a->hit == b->hit &&
	       a->operation == b->operation && strcmp(a->rule, b->rule) == 0 &&
	       a->resume == b->resume && strcmp(a->resume_at, b->resume_at) == 0 &&
	       strcmp(a->member, b->member) == 0 &&
	       strcmp(a->service, b->service) == 0 &&
	       a->decision == b->decision && a->force == b->force &&
	       a->wrong_target == b->wrong_target &&
	       strcmp(a->proxy, b->proxy) == 0 && a->delay_ms == b->delay_ms;
}

/* faults -> string -> faults must be the identity; a schedule that must
 * fit (a loaded one) traps when it does not. */
static inline void fuzz_round_trip(const struct fault *f, size_t n,
				   bool must_fit)
{
	char form[SCHEDULE_STR_MAX], again[SCHEDULE_STR_MAX], err[256];
	struct fault *back = NULL;
	size_t got = 0;

	if (schedule_format(f, n, form, sizeof(form)) != 0) {
		if (must_fit)
			__builtin_trap();
		return;
	}
	if (schedule_parse(form, &back, &got, err, sizeof(err)) != 0 || got != n)
		__builtin_trap();
	for (size_t i = 0; i < n; i++)
		if (!fuzz_same_fault(&f[i], &back[i]))
			__builtin_trap();
	/* the canonical form is a fixed point */
	if (schedule_format(back, got, again, sizeof(again)) != 0 ||
	    strcmp(form, again) != 0)
		__builtin_trap();
	free(back);
}

#endif
