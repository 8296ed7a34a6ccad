/* report_summary.c -- see report_summary.h. */
#include <string.h>

#include "harness/check/check.h"
#include "harness/check/report_summary.h"

json_t *report_summary(const json_t *routes)
{
	json_t *by = json_object(), *r;
	size_t i, met = 0, schedules = 0, violations = 0;

	json_array_foreach(routes, i, r) {
		const char *v = json_string_value(json_object_get(r, "verdict"));
		json_t *c = json_object_get(by, v ? v : "");

		json_object_set_new(by, v ? v : "",
				    json_integer(c ? json_integer_value(c) + 1
						   : 1));
		met += json_is_true(json_object_get(r, "expectation_met"));
		schedules += json_array_size(json_object_get(r, "schedules"));
		violations += json_array_size(json_object_get(r, "violations"));
	}
	return json_pack("{s:I, s:I, s:I, s:I, s:o}", "routes",
			 (json_int_t)json_array_size(routes), "expectations_met",
			 (json_int_t)met, "schedules", (json_int_t)schedules,
			 "violations", (json_int_t)violations, "verdicts", by);
}

enum report_class report_schedule_class(const json_t *schedule)
{
	const char *o = json_string_value(json_object_get(schedule, "outcome"));

	if (json_array_size(json_object_get(schedule, "violations")))
		return REPORT_FAILED;
	if (o && strcmp(o, outcome_name(OUTCOME_UNVERIFIED)) == 0)
		return REPORT_UNVERIFIED;
	return REPORT_PASSED;
}

void report_cap_details(json_t *schedules)
{
	static const char *const detail[] = {
		"attempts", "operations", "reached", "applied",
	};
	size_t seen[3] = { 0 }, i;
	json_t *s;

	json_array_foreach(schedules, i, s) {
		if (++seen[report_schedule_class(s)] <= REPORT_DETAIL_KEPT ||
		    json_object_get(s, "detail"))
			continue;
		for (size_t k = 0; k < sizeof(detail) / sizeof(*detail); k++)
			json_object_del(s, detail[k]);
		json_object_set_new(s, "detail", json_string("summary"));
	}
}

bool report_schedule_windows(const json_t *schedule, bool *before,
			     bool *after)
{
	json_t *stops = json_object_get(schedule, "retried_stops"), *s;
	size_t i;

	*before = *after = false;
	if (!json_is_array(stops))
		return false;
	json_array_foreach(stops, i, s) {
		const char *w = json_string_value(json_object_get(s, "window"));
		*before |= w && strcmp(w, stop_window_name(
			WINDOW_BEFORE_MUTATION)) == 0;
		*after |= w && strcmp(w, stop_window_name(
			WINDOW_AFTER_MUTATION)) == 0;
	}
	return true;
}
