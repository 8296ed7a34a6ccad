/*
 * schedule_check.c -- whether a schedule string names what exists, for
 * `certify --schedule STRING` (schedule.h): before the replay against the
 * suite, after it against what the route reached.
 *
 * A suite's own faults are checked by its loader where the line is known
 * (scenario_faults.c, invariant 2); a replayed string has no line, and
 * without these checks a fault that can never fire only shows as an
 * unverified schedule, which reads like a gap in the route rather than a
 * typo in the command.
 *
 * Invariants:
 *   1. Before the run, the loader's rules: a try within the orchestrator's
 *      tries, an operation within the scenario's operations, a member of
 *      one of the suite's etcd services, a proxy of the suite.
 *   2. After the run, a failpoint occurrence (X#N in try K of operation O)
 *      is called missing only when the run proves it: that try ran to its
 *      own end (it exited; no fault, timeout or end of schedule stopped it)
 *      and reported X fewer than N times, or it never started although the
 *      schedule finished.  Anything else that kept a fault from firing (an
 *      earlier fault of the same schedule stopped the try) stays what it
 *      was: an unverified schedule.
 *   3. Pure: no I/O, no state; the caller hands in what the run recorded.
 */
#include <stdio.h>
#include <string.h>

#include "harness/model/schedule.h"

/* "'k:a@1/op3'" for messages: the one fault in its string form. */
static const char *fault_form(const struct fault *f, char *buf, size_t size)
{
	if (schedule_format(f, 1, buf, size) != 0)
		snprintf(buf, size, "?");
	return buf;
}

static int member_check(const struct suite *s, const struct fault *f,
			char *err, size_t errlen)
{
	const struct service_spec *sv = suite_service(s, f->service);
	int idx = 0;

	if (f->service[0] && (!sv || sv->kind != SERVICE_ETCD)) {
		snprintf(err, errlen, "service '%s' is not an etcd service of "
			 "the suite", f->service);
		return FC_USAGE;
	}
	if (!sv) {
		snprintf(err, errlen, "a member action needs one etcd service "
			 "in the suite (or '=SERVICE/MEMBER')");
		return FC_USAGE;
	}
	if (f->member[0] == 'm' && f->member[1] >= '1' && f->member[1] <= '9' &&
	    !f->member[2])
		idx = f->member[1] - '0';
	if (idx < 1 || idx > sv->members) {
		snprintf(err, errlen, "'%s' is not a member of service '%s' (m1 "
			 "to m%d)", f->member, sv->name, sv->members);
		return FC_USAGE;
	}
	return 0;
}

/* One fault against invariant 1; err without the fault's name. */
static int fault_check(const struct suite *s, const struct fault *f,
		       int operations, char *err, size_t errlen)
{
	int tries = s->orchestrator.retries + 1;
	bool during = fault_at_failpoint(f) || f->action == FAULT_SYSCALL ||
		      fault_is_proxy_action(f->action);
	int try_no = during ? f->attempt : f->after_attempt;

	if (try_no > tries) {
		snprintf(err, errlen, "%s %d is beyond the last try (retries: %d "
			 "gives %d tries)", during ? "try" : "after try",
			 try_no, tries - 1, tries);
		return FC_USAGE;
	}
	if (f->operation > operations) {
		snprintf(err, errlen, "operation %d does not exist (the "
			 "scenario runs %d operation%s)", f->operation,
			 operations, operations == 1 ? "" : "s");
		return FC_USAGE;
	}
	if (fault_is_member_action(f->action))
		return member_check(s, f, err, errlen);
	if (fault_is_proxy_action(f->action) && !suite_proxy(s, f->proxy)) {
		snprintf(err, errlen, "'%s' names no proxy of the suite (see "
			 "'proxies')", f->proxy);
		return FC_USAGE;
	}
	return 0;
}

int schedule_operations(const struct suite *s, const struct scenario *sc)
{
	if (sc->operations)
		return sc->operations;
	return sc->explore ? 1 : s->workload.operations;
}

int schedule_check_suite(const struct suite *s, const struct scenario *sc,
			 const struct fault *f, size_t n, char *err,
			 size_t errlen)
{
	char why[300], form[SCHEDULE_STR_MAX];

	for (size_t i = 0; i < n; i++) {
		if (fault_check(s, &f[i], schedule_operations(s, sc), why,
				sizeof(why)) == 0)
			continue;
		snprintf(err, errlen, "fault '%s' of the schedule cannot fire in "
			 "scenario '%s': %s", fault_form(&f[i], form,
							sizeof(form)),
			 sc->name, why);
		return FC_USAGE;
	}
	return 0;
}

/* ---- after the run --------------------------------------------------- */

static const struct schedule_attempt *find_attempt(
	const struct schedule_attempt *a, size_t na, int op, int try_no)
{
	for (size_t i = 0; i < na; i++)
		if (a[i].operation == op && a[i].try_number == try_no)
			return &a[i];
	return NULL;
}

static size_t count_hits(const struct schedule_attempt *a, const char *name)
{
	size_t k = 0;

	for (size_t h = 0; h < a->nhits; h++)
		k += strcmp(a->hits[h], name) == 0;
	return k;
}

/* "a, b (2 times), c": the distinct failpoints of a, in first-hit order. */
static void list_reached(const struct schedule_attempt *a, char *out,
			 size_t size)
{
	size_t used = 0;

	out[0] = '\0';
	for (size_t h = 0; h < a->nhits && used < size; h++) {
		size_t seen = 0, k = count_hits(a, a->hits[h]);
		int w;

		for (size_t g = 0; g < h; g++)
			seen += strcmp(a->hits[g], a->hits[h]) == 0;
		if (seen)
			continue; /* listed at its first hit */
		w = k > 1 ? snprintf(out + used, size - used, "%s%s (%zu times)",
				     used ? ", " : "", a->hits[h], k)
			  : snprintf(out + used, size - used, "%s%s",
				     used ? ", " : "", a->hits[h]);
		if (w < 0)
			break;
		used += (size_t)w;
	}
	if (!out[0])
		snprintf(out, size, "no failpoint at all");
}

/*
 * Whether fault f's occurrence is proven missing in operation op
 * (invariant 2); why says what that try did.
 */
static bool missing_in(const struct fault *f, int op,
		       const struct schedule_attempt *a, size_t na, char *why,
		       size_t size)
{
	const struct schedule_attempt *t = find_attempt(a, na, op, f->attempt);
	char reached[600];
	size_t k;

	if (!t) {
		snprintf(why, size, "op %d never reached try %d (the task ended "
			 "before it)", op, f->attempt);
		return true;
	}
	if (!t->ran_to_end)
		return false;
	k = count_hits(t, f->failpoint);
	if (k >= (size_t)f->hit)
		return false;
	list_reached(t, reached, sizeof(reached));
	if (k == 0)
		snprintf(why, size, "op %d try %d never reaches '%s'; it reaches "
			 "%s", op, f->attempt, f->failpoint, reached);
	else
		snprintf(why, size, "op %d try %d reaches '%s' %zu time%s, not "
			 "%d; it reaches %s", op, f->attempt, f->failpoint, k,
			 k == 1 ? "" : "s", f->hit, reached);
	return true;
}

int schedule_check_reached(const struct fault *f, size_t n, const bool *fired,
			   int operations, const struct schedule_attempt *a,
			   size_t na, char *err, size_t errlen)
{
	char why[800], form[SCHEDULE_STR_MAX];

	for (size_t i = 0; i < n; i++) {
		int first = f[i].operation ? f[i].operation : 1;
		int last = f[i].operation ? f[i].operation : operations;
		bool missing = first <= last;

		if (fired[i] || !fault_at_failpoint(&f[i]))
			continue;
		/* "every operation" is missing only where it is in all */
		for (int op = last; op >= first && missing; op--)
			missing = missing_in(&f[i], op, a, na, why, sizeof(why));
		if (!missing)
			continue;
		snprintf(err, errlen, "fault '%s' of the schedule names a "
			 "failpoint occurrence that does not exist: %s",
			 fault_form(&f[i], form, sizeof(form)), why);
		return FC_USAGE;
	}
	return 0;
}
