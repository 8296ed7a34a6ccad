/*
 * orchestrator_recover.c -- the operator family (orchestrator_family.h):
 * the `recover` fault.  Between two tries, once every lease ran out, an
 * operator resolves the stopped operation with `fencecert recover`, the
 * way a person on call would, and then clears the Airflow task so it gets
 * a new try (the loop does that when this family says `cleared`).
 *
 * Invariants:
 *  1. The operator is this fencecert binary run as a child process with
 *     the route's journal and target URLs: `recover plan --json` (kept as
 *     evidence), then `recover apply --action D --expect-version V --actor
 *     harness-operator --reason ... [--force] --json`.  The harness does
 *     not decide or write anything itself; the apply's CAS, plan checks,
 *     fencing and audit record are the CLI's.
 *  2. V is read through the journal port opened read-only, as an operator
 *     reads it from `recover inspect`.
 *  3. wrong_target models an operator who points --target at a
 *     look-alike database: the route's target URL expanded with {dir} =
 *     DIR/wrong-target, an empty directory, so the probe finds no fence
 *     there.  Whatever the CLI then allows is what happens.
 *  4. A lease apply took to fence (mark-failed-pre-commit) is reported
 *     back, and the next try waits until the journal says it expired.
 *  5. The fault fired only when apply exited 0; the applied entry says
 *     what moved (state and version before and after) or why it was
 *     refused (exit status and the CLI's message).
 * The family has no state of its own.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/fsutil.h"
#include "harness/proc/supervise.h"
#include "harness/run/orchestrator_family.h"
#include "journal/journal.h"

#define OPERATOR_TIMEOUT_MS 60000

/* Run `fencecert recover ...`; the exit status, or -1 (err set). */
static int run_cli(const struct orch_sched *s, char *const *argv, const char *out,
		   const char *errp, char *err, size_t errlen)
{
	struct sv_spawn req = {
		.argv = argv, .stdout_path = out, .stderr_path = errp,
		.timeout_ms = OPERATOR_TIMEOUT_MS,
	};
	struct sv_status st;

	if (supervisor_run(s->p->sv, &req, &st, err, errlen))
		return -1;
	if (st.end != SV_EXITED) {
		snprintf(err, errlen, "'fencecert %s %s' did not exit (signal "
			 "%d%s)", argv[1], argv[2], st.signal,
			 st.timed_out ? ", timed out" : "");
		return -1;
	}
	return st.code;
}

/* The first line of a file, or "". */
static void first_line(const char *path, char *out, size_t len)
{
	FILE *f = fopen(path, "re");

	out[0] = '\0';
	if (!f)
		return;
	if (fgets(out, (int)len, f))
		out[strcspn(out, "\n")] = '\0';
	fclose(f);
}

/* "COMMIT_UNKNOWN v4 -> TARGET_COMMITTED v5" from apply --json. */
static void moved(const char *path, char *out, size_t len)
{
	json_t *j = json_load_file(path, 0, NULL);
	json_t *b = json_object_get(j, "before"), *a = json_object_get(j, "after");

	snprintf(out, len, "%s v%lld -> %s v%lld%s",
		 json_string_value(json_object_get(b, "state")) ?: "?",
		 (long long)json_integer_value(json_object_get(b, "version")),
		 json_string_value(json_object_get(a, "state")) ?: "?",
		 (long long)json_integer_value(json_object_get(a, "version")),
		 json_is_true(json_object_get(j, "forced")) ? " (forced)" : "");
	json_decref(j);
}

/* The entry of op, read as `recover inspect` reads it. */
static int read_entry(const char *url, const char *op, struct journal_entry *e,
		      char *err, size_t errlen)
{
	journal *j;
	int rc = journal_open_readonly(url, &j, err, errlen);

	if (rc)
		return rc;
	rc = journal_get(j, op, e);
	if (rc)
		snprintf(err, errlen, "%s", journal_errmsg(j));
	journal_close(j);
	return rc;
}

static char *target_url(const struct orch_sched *s, const struct fault *f,
			char *err, size_t errlen)
{
	char *dir = NULL, *url = NULL;

	if (!f->wrong_target) {
		if (scenario_expand(s->p->route->target, &s->vars, &url, err,
				    errlen))
			return NULL;
		return url;
	}
	if (asprintf(&dir, "%s/wrong-target", s->p->dir) < 0)
		return NULL;
	if (fs_mkdirs(dir))
		snprintf(err, errlen, "cannot create '%s'", dir);
	else {
		struct template_vars v = s->vars;

		v.dir = dir;
		if (scenario_expand(s->p->route->target, &v, &url, err, errlen))
			url = NULL;
	}
	free(dir);
	return url;
}

/* The files the operator leaves in DIR/op<op>, named after try k. */
struct operator_files {
	char *plan, *apply, *err;
};

/* Run `recover plan` then `recover apply` on entry version e->version.
 * apply's exit status, or -1 when either could not run (err says why). */
static int plan_and_apply(const struct orch_sched *s, const struct fault *f,
			  int k, const char *opid, const char *tgt,
			  const struct journal_entry *e,
			  const struct operator_files *fl, char *err,
			  size_t errlen)
{
	char *decision = (char *)operator_decision_name(f->decision);
	char *self = (char *)orch__self_exe(), *jurl = (char *)s->journal_url;
	char version[24], reason[128];
	char *plan[] = { self, "recover", "plan", "--journal", jurl,
			 "--target", (char *)tgt, "--op", (char *)opid, "--json",
			 NULL };
	char *apply[] = { self, "recover", "apply", "--journal", jurl,
			  "--target", (char *)tgt, "--op", (char *)opid,
			  "--action", decision, "--expect-version", version,
			  "--actor", "harness-operator", "--reason", reason,
			  "--json", f->force ? "--force" : NULL, NULL };

	snprintf(version, sizeof(version), "%lld", e->version);
	snprintf(reason, sizeof(reason), "scenario %s: %s after try %d",
		 s->p->scenario, decision, k);
	if (run_cli(s, plan, fl->plan, fl->err, err, errlen) < 0)
		return -1;
	return run_cli(s, apply, fl->apply, fl->err, err, errlen);
}

/* How long the lease apply took to fence (mark-failed-pre-commit) is
 * still held, so the cleared task's next try starts once it ran out. */
static long long lease_left_ms(const struct orch_sched *s, const char *opid)
{
	struct journal_entry e;
	char err[400];

	if (!read_entry(s->journal_url, opid, &e, err, sizeof(err)) &&
	    e.lease_owner[0] && e.lease_expires_at > clock_wall_ms())
		return e.lease_expires_at - clock_wall_ms();
	return 0;
}

/* The applied entry: what apply moved, or why it was refused. */
static void describe(const struct fault *f, int op, int k, int rc,
		     const struct operator_files *fl, char *what,
		     size_t whatlen)
{
	char line[200], refused[40] = "";

	if (rc == 0) {
		moved(fl->apply, line, sizeof(line));
	} else {
		first_line(fl->err, line, sizeof(line));
		snprintf(refused, sizeof(refused), " refused (exit %d)", rc);
	}
	snprintf(what, whatlen, "operator: recover apply %s%s%s on op %d after "
		 "try %d%s: %s", operator_decision_name(f->decision),
		 f->force ? " --force" : "",
		 f->wrong_target ? " (wrong --target)" : "", op, k, refused,
		 line);
}

/*
 * Fault fi after try k of op: run the operator.  Returns apply's exit
 * status (0: it moved the operation), or -1 when it could not run; `what`
 * describes it for the record; *lease_left is how long the lease apply
 * took is still held (0: none).
 */
static int operate(const struct orch_sched *s, int fi, int op, int k,
		   char *what, size_t whatlen, long long *lease_left)
{
	struct journal_entry e;
	const struct fault *f = &s->p->faults[fi];
	const char *opid = s->rec->ops[op - 1].operation_id;
	struct operator_files fl = {
		orch__op_path(s, op, "operator-after-try-%d.plan.json", k),
		orch__op_path(s, op, "operator-after-try-%d.apply.json", k),
		orch__op_path(s, op, "operator-after-try-%d.err", k),
	};
	char *tgt, err[400] = "out of memory";
	int rc = -1;

	*lease_left = 0;
	tgt = target_url(s, f, err, sizeof(err));
	if (!tgt || !fl.plan || !fl.apply || !fl.err)
		snprintf(what, whatlen, "operator could not start: %s", tgt ?
			 "out of memory" : err);
	else if (read_entry(s->journal_url, opid, &e, err, sizeof(err)))
		snprintf(what, whatlen, "operator found no entry to recover: "
			 "%.120s", err);
	else if ((rc = plan_and_apply(s, f, k, opid, tgt, &e, &fl, err,
				      sizeof(err))) < 0)
		snprintf(what, whatlen, "operator could not run recover: %.120s",
			 err);
	else {
		if (rc == 0)
			*lease_left = lease_left_ms(s, opid);
		describe(f, op, k, rc, &fl, what, whatlen);
	}
	free(tgt);
	free(fl.plan);
	free(fl.apply);
	free(fl.err);
	return rc;
}

static void between(void *st, struct orch_sched *s, int fi,
		    struct orch_between *b)
{
	char what[sizeof(s->rec->applied->what)];
	long long left;
	int rc = operate(s, fi, b->op, b->k, what, sizeof(what), &left);

	orch__note_applied(s, fi, -1, b->op, "%s", what);
	if (rc != 0)
		return; /* refused: recorded, the fault did not fire */
	if (s->rec->napplied)
		s->rec->applied[s->rec->napplied - 1].moved = true;
	s->rec->fired[fi] = true;
	b->hold_ms = left;
	b->cleared = true;
}

static bool owns(enum fault_action a)
{
	return a == FAULT_RECOVER;
}

const struct orch_family orch__operator = {
	.owns = owns,
	.leases_expire_first = true, /* the stopped try's lease runs out
					before anyone acts */
	.reads_entries = true,  /* operate() takes the operation's id */
	.between = between,
};
