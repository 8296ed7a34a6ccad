/*
 * fuzz_scenario.c -- libFuzzer target for the suite loader.  Built and run
 * by tests/integration/fuzz_smoke.sh (all targets: tests/fuzz/README.md):
 *
 *   tests/integration/fuzz_smoke.sh scenario
 *
 * Besides "never crash, never leak, never hang", it checks the promises
 * the harness relies on, and traps when one breaks:
 *   - a refusal is "fuzz.yaml:LINE:COLUMN: message" with LINE, COLUMN >= 1;
 *   - every fixed schedule of a loaded suite round-trips through its
 *     string form (schedule.h);
 *   - a loaded suite's templates expand.
 * Schedule strings on their own are fuzz_schedule.c's.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/model/scenario.h"
#include "harness/model/schedule.h"
#include "tests/fuzz/fuzz_fault.h"

static void fuzz_suite(const char *data, size_t size)
{
	struct suite *s = NULL;
	char err[1024];
	int line = 0, column = 0;

	if (suite_load_buffer("fuzz.yaml", data, size, &s, err, sizeof(err)) != 0) {
		if (s || sscanf(err, "fuzz.yaml:%d:%d: ", &line, &column) != 2 ||
		    line < 1 || column < 1)
			__builtin_trap();
		return;
	}
	for (size_t i = 0; i < s->nscenarios; i++)
		fuzz_round_trip(s->scenarios[i].faults, s->scenarios[i].nfaults,
				true);
	for (size_t i = 0; i < s->nroutes; i++) {
		struct template_vars v = { .dir = "/d", .schedule_id = "fc_x" };
		char *out = NULL;

		/* Loaded templates are well-formed: only {env:...} and
		 * {service:...} (nothing runs here) may fail. */
		if (scenario_expand(s->routes[i].journal, &v, &out, err,
				    sizeof(err)) != 0 && !strstr(err, "environment") &&
		    !strstr(err, "is not running"))
			__builtin_trap();
		free(out);
	}
	suite_free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_suite((const char *)data, size);
	return 0;
}
