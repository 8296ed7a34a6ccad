/*
 * fuzz_schedule.c -- libFuzzer target for schedule strings (schedule.h):
 * what `certify --schedule STRING` and a report's reproduce command feed
 * the harness.  Built and run by tests/integration/fuzz_smoke.sh.
 *
 * Checks, trapping when one breaks:
 *   - a refusal says "bad schedule" and names a position inside the input;
 *   - a string that parses formats back (when it fits) to a string that
 *     parses to the same faults, and that canonical form is a fixed point;
 *   - every fault parsed is one the loader could hold: a valid failpoint
 *     name where one is given, a try and a hit of at least 1.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/model/schedule.h"
#include "tests/fuzz/fuzz_fault.h"

static void check_fault(const struct fault *f)
{
	if ((unsigned)f->action >= FAULT_ACTION_COUNT || f->operation < 0)
		__builtin_trap();
	if (fault_at_failpoint(f) &&
	    (!fault_failpoint_valid(f->failpoint, strlen(f->failpoint)) ||
	     f->attempt < 1 || f->hit < 1))
		__builtin_trap();
	if (f->resume == RESUME_AT_NEXT_FAILPOINT &&
	    !fault_failpoint_valid(f->resume_at, strlen(f->resume_at)))
		__builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *str = malloc(size + 1), err[256];
	struct fault *f = NULL;
	size_t n = 0;

	if (!str)
		return 0;
	memcpy(str, data, size);
	str[size] = '\0';
	if (schedule_parse(str, &f, &n, err, sizeof(err)) == 0) {
		for (size_t i = 0; i < n; i++)
			check_fault(&f[i]);
		fuzz_round_trip(f, n, false);
		free(f);
	} else if (f || !strstr(err, "schedule")) {
		__builtin_trap();
	}
	free(str);
	return 0;
}
