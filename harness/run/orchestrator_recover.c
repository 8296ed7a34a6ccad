/*
 * orchestrator_recover.c -- the `recover` fault: between two tries an
 * operator resolves the stopped operation with `fencecert recover`, the
 * way a person on call would, and (orchestrator.c) clears the Airflow task
 * so it gets a new try.
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
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "journal/journal.h"
#include "common/fsutil.h"
#include "harness/run/orchestrator_impl.h"
#include "harness/proc/supervise.h"

#define OPERATOR_TIMEOUT_MS 60000

/* Run `fencecert recover ...`; the exit status, or -1 (err set). */
static int run_cli(struct orch *o, char *const *argv, const char *out,
		   const char *errp, char *err, size_t errlen)
{
	struct sv_spawn req = {
		.argv = argv, .stdout_path = out, .stderr_path = errp,
		.timeout_ms = OPERATOR_TIMEOUT_MS,
	};
	struct sv_status st;

	if (supervisor_run(o->p->sv, &req, &st, err, errlen))
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

static char *target_url(struct orch *o, const struct fault *f, char *err,
			size_t errlen)
{
	char *dir = NULL, *url = NULL;

	if (!f->wrong_target) {
		if (scenario_expand(o->p->route->target, &o->vars, &url, err,
				    errlen))
			return NULL;
		return url;
	}
	if (asprintf(&dir, "%s/wrong-target", o->p->dir) < 0)
		return NULL;
	if (fs_mkdirs(dir))
		snprintf(err, errlen, "cannot create '%s'", dir);
	else {
		struct template_vars v = o->vars;

		v.dir = dir;
		if (scenario_expand(o->p->route->target, &v, &url, err, errlen))
			url = NULL;
	}
	free(dir);
	return url;
}

int orch__operator(struct orch *o, int fi, int op, int k, char *what,
		   size_t whatlen, long long *lease_left_ms)
{
	struct journal_entry e;
	const struct fault *f = &o->p->faults[fi];
	const char *opid = o->rec->ops[op - 1].operation_id;
	const char *decision = operator_decision_name(f->decision);
	char *tgt, *plan_out = NULL, *out = NULL, *errp = NULL;
	char err[400], version[24], reason[128], line[200];
	int rc = -1;

	*lease_left_ms = 0;
	tgt = target_url(o, f, err, sizeof(err));
	plan_out = orch__op_path(o, op, "operator-after-try-%d.plan.json", k);
	out = orch__op_path(o, op, "operator-after-try-%d.apply.json", k);
	errp = orch__op_path(o, op, "operator-after-try-%d.err", k);
	if (!tgt || !plan_out || !out || !errp) {
		snprintf(what, whatlen, "operator could not start: %s", tgt ?
			 "out of memory" : err);
		goto done;
	}
	if (read_entry(o->journal_url, opid, &e, err, sizeof(err))) {
		snprintf(what, whatlen, "operator found no entry to recover: %.120s",
			 err);
		goto done;
	}
	snprintf(version, sizeof(version), "%lld", e.version);
	snprintf(reason, sizeof(reason), "scenario %s: %s after try %d",
		 o->p->scenario, decision, k);
	{
		char *plan[] = { (char *)orch__self_exe(), "recover", "plan",
				 "--journal", o->journal_url, "--target", tgt,
				 "--op", (char *)opid, "--json", NULL };
		char *apply[] = { (char *)orch__self_exe(), "recover", "apply",
				  "--journal", o->journal_url, "--target", tgt,
				  "--op", (char *)opid, "--action", (char *)decision,
				  "--expect-version", version, "--actor",
				  "harness-operator", "--reason", reason, "--json",
				  f->force ? "--force" : NULL, NULL };
		if (run_cli(o, plan, plan_out, errp, err, sizeof(err)) < 0 ||
		    (rc = run_cli(o, apply, out, errp, err, sizeof(err))) < 0) {
			snprintf(what, whatlen, "operator could not run recover: "
				 "%.120s", err);
			rc = -1;
			goto done;
		}
	}
	if (rc == 0) {
		/* apply fenced under a lease of its own (mark-failed-pre-commit):
		 * the cleared task's next try starts once it ran out */
		if (!read_entry(o->journal_url, opid, &e, err, sizeof(err)) &&
		    e.lease_owner[0] && e.lease_expires_at > journal_now_ms())
			*lease_left_ms = e.lease_expires_at - journal_now_ms();
		moved(out, line, sizeof(line));
		snprintf(what, whatlen, "operator: recover apply %s%s%s on op %d "
			 "after try %d: %s", decision, f->force ? " --force" : "",
			 f->wrong_target ? " (wrong --target)" : "", op, k, line);
	} else {
		first_line(errp, line, sizeof(line));
		snprintf(what, whatlen, "operator: recover apply %s%s%s on op %d "
			 "after try %d refused (exit %d): %s", decision,
			 f->force ? " --force" : "", f->wrong_target ?
			 " (wrong --target)" : "", op, k, rc, line);
	}
done:
	free(tgt);
	free(plan_out);
	free(out);
	free(errp);
	return rc;
}
