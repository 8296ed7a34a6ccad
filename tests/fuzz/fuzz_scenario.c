/*
 * fuzz_scenario.c -- libFuzzer target for the suite loader and the
 * schedule parser.  Built and run by tests/integration/fuzz_smoke.sh:
 *
 *   clang -fsanitize=fuzzer,address,undefined ... -o fuzz_scenario
 *   ./fuzz_scenario -dict=tests/fuzz/scenario.dict CORPUS tests/fuzz/corpus
 *
 * Besides "never crash, never leak", it checks the promises the harness
 * relies on, and traps when one breaks:
 *   - a refusal is "fuzz.yaml:LINE:COLUMN: message" with LINE, COLUMN >= 1;
 *   - every fixed schedule of a loaded suite round-trips through its
 *     string form (schedule.h);
 *   - any input that parses as a schedule string formats back to a string
 *     that parses to the same faults.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/model/scenario.h"
#include "harness/model/schedule.h"

static int same_fault(const struct fault *a, const struct fault *b)
{
	return a->action == b->action && a->attempt == b->attempt &&
	       a->after_attempt == b->after_attempt &&
	       strcmp(a->failpoint, b->failpoint) == 0 && a->hit == b->hit &&
	       a->operation == b->operation && a->resume == b->resume &&
	       strcmp(a->resume_at, b->resume_at) == 0;
}

/* faults -> string -> faults must be the identity. */
static void check_round_trip(const struct fault *f, size_t n, int must_fit)
{
	char form[SCHEDULE_STR_MAX], err[256];
	struct fault *back;
	size_t got;

	if (schedule_format(f, n, form, sizeof(form)) != 0) {
		if (must_fit)
			__builtin_trap();
		return;
	}
	if (schedule_parse(form, &back, &got, err, sizeof(err)) != 0 || got != n)
		__builtin_trap();
	for (size_t i = 0; i < n; i++)
		if (!same_fault(&f[i], &back[i]))
			__builtin_trap();
	free(back);
}

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
		check_round_trip(s->scenarios[i].faults, s->scenarios[i].nfaults, 1);
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

static void fuzz_schedule(const char *data, size_t size)
{
	char *str = malloc(size + 1), err[256];
	struct fault *f;
	size_t n;

	if (!str)
		return;
	memcpy(str, data, size);
	str[size] = '\0';
	if (schedule_parse(str, &f, &n, err, sizeof(err)) == 0) {
		check_round_trip(f, n, 0);
		free(f);
	}
	free(str);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_suite((const char *)data, size);
	fuzz_schedule((const char *)data, size);
	return 0;
}
