/*
 * verdict.c -- the verdict and outcome names and the verdict rule
 * (verdict.h).  Constant tables and arithmetic on counts; it calls nothing
 * outside common/.
 */
#include <string.h>

#include "harness/check/verdict.h"

static const char *const verdict_names[VERDICT_COUNT] = {
	[VERDICT_CERTIFIED_AUTOMATIC] = "certified-automatic",
	[VERDICT_CERTIFIED_FAIL_CLOSED] = "certified-fail-closed",
	[VERDICT_REJECTED] = "rejected",
	[VERDICT_UNVERIFIED] = "unverified",
};

static const char *const outcome_names[OUTCOME_COUNT] = {
	[OUTCOME_CONVERGED] = "converged",
	[OUTCOME_STOP_EXCUSED] = "stopped-unprovable",
	[OUTCOME_EXHAUSTED] = "retries-exhausted-by-faults",
	[OUTCOME_STOPPED] = "stopped-fail-closed",
	[OUTCOME_NOT_CONVERGED] = "not-converged",
	[OUTCOME_UNVERIFIED] = "unverified",
};

/* The expectation met by either certified verdict (scenario.h
 * EXPECT_CERTIFIED); the other expectations are verdict names. */
#define EXPECT_EITHER_CERTIFIED "certified"

const char *verdict_name(enum verdict v)
{
	if ((unsigned)v >= VERDICT_COUNT)
		return "unknown";
	return verdict_names[v];
}

int verdict_parse(const char *name, enum verdict *out)
{
	for (int v = 0; v < VERDICT_COUNT; v++) {
		if (strcmp(verdict_names[v], name) == 0) {
			*out = (enum verdict)v;
			return 0;
		}
	}
	return FC_USAGE;
}

bool verdict_meets(enum verdict v, const char *expected)
{
	enum verdict want;

	if (strcmp(expected, EXPECT_EITHER_CERTIFIED) == 0)
		return v == VERDICT_CERTIFIED_AUTOMATIC ||
		       v == VERDICT_CERTIFIED_FAIL_CLOSED;
	if (verdict_parse(expected, &want) != 0 || want == VERDICT_UNVERIFIED)
		return false;
	return v == want;
}

const char *outcome_name(enum schedule_outcome o)
{
	if ((unsigned)o >= OUTCOME_COUNT)
		return "unknown";
	return outcome_names[o];
}

int outcome_parse(const char *name, enum schedule_outcome *out)
{
	for (int o = 0; o < OUTCOME_COUNT; o++) {
		if (strcmp(outcome_names[o], name) == 0) {
			*out = (enum schedule_outcome)o;
			return 0;
		}
	}
	return FC_USAGE;
}

void verdict_tally_add(struct verdict_tally *t, size_t nviolations,
		       enum schedule_outcome o)
{
	t->schedules++;
	t->violations += nviolations;
	if ((unsigned)o < OUTCOME_COUNT)
		t->by_outcome[o]++;
}

void verdict_tally_windows(struct verdict_tally *t, bool before, bool after)
{
	t->windows_known++;
	t->stopped[VERDICT_WINDOW_BEFORE] += before;
	t->stopped[VERDICT_WINDOW_AFTER] += after;
}

const char *verdict_window_gap(const struct verdict_tally *t,
			       enum verdict_window w)
{
	if (!t->windows_known || t->stopped[w])
		return NULL;
	return w == VERDICT_WINDOW_AFTER ?
	       "no schedule stopped a try after its target mutation: "
	       "no-duplicate was never challenged" :
	       "no schedule stopped a try before its target mutation: "
	       "no-loss was never challenged";
}

enum verdict verdict_tally_fold(const struct verdict_tally *t)
{
	if (t->violations)
		return VERDICT_REJECTED;
	if (!t->schedules || t->by_outcome[OUTCOME_UNVERIFIED])
		return VERDICT_UNVERIFIED;
	if (verdict_window_gap(t, VERDICT_WINDOW_BEFORE) ||
	    verdict_window_gap(t, VERDICT_WINDOW_AFTER))
		return VERDICT_UNVERIFIED;
	if (t->by_outcome[OUTCOME_STOPPED] || t->by_outcome[OUTCOME_NOT_CONVERGED])
		return VERDICT_CERTIFIED_FAIL_CLOSED;
	return VERDICT_CERTIFIED_AUTOMATIC;
}
