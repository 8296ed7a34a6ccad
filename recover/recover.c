/*
 * recover.c -- the recovery plan: which operator actions a stopped
 * operation allows, from the facts alone (rules in recover.h), and the
 * audit record an executed action leaves in the journal.
 *
 * Invariants:
 *  1. The decision is a pure function of struct recover_facts: no clock,
 *     no I/O, so `plan` and `apply` decide alike and the tests can walk
 *     every state x fence answer.
 *  2. Legality comes from states.c (state_transition_legal()); this file
 *     adds only what the fence proves, never a second transition table.
 *  3. --force widens UNKNOWN only.  Nothing here lets a person contradict
 *     a proof, skip the fencing an absence needs, or act on a terminal
 *     operation.
 *  4. The audit JSON is built with jansson and bounded by the journal's
 *     evidence limit; free text (actor, reason) is only ever a JSON string.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "journal/journal.h"
#include "recover/recover.h"

/* What an action claims and what it acts on; indexed by the action. */
static const struct action_info {
	const char *name;
	enum fc_state next;
	enum fence_probe_answer proof; /* the probe answer that makes it safe */
	bool on_prepared_txn;          /* acts on a prepared transaction */
	bool fences_first;
	const char *safe_why;
} actions[RECOVER_ACTION_COUNT] = {
	[RECOVER_MARK_COMMITTED] = {
		"mark-committed", FC_TARGET_COMMITTED, FENCE_APPLIED, false,
		false,
		"the fence proves the mutation committed; the next attempt "
		"finishes the evidence without writing" },
	[RECOVER_MARK_FAILED_PRE_COMMIT] = {
		"mark-failed-pre-commit", FC_FAILED_PRE_COMMIT, FENCE_ABSENT,
		false, true,
		"the fence shows the mutation absent; apply first takes a new "
		"lease, prepares the fence at its epoch so no older attempt can "
		"land, and probes again; the next attempt then applies once" },
	[RECOVER_COMMIT_PREPARED] = {
		"commit-prepared", FC_TARGET_COMMITTED, FENCE_UNKNOWN, true,
		false,
		"the target holds the operation's prepared transaction: "
		"committing it applies the mutation exactly once" },
	[RECOVER_ROLLBACK_PREPARED] = {
		"rollback-prepared", FC_FAILED_PRE_COMMIT, FENCE_UNKNOWN, true,
		false,
		"the target holds the operation's prepared transaction: rolling "
		"it back makes the mutation absent for good" },
};

static const char *const verdict_names[] = {
	[RECOVER_SAFE] = "safe",
	[RECOVER_FORCE_ONLY] = "force-only",
	[RECOVER_WAIT] = "wait",
	[RECOVER_REFUSED] = "refused",
	[RECOVER_NOT_APPLICABLE] = "not-applicable",
};

const char *recover_action_name(enum recover_action a)
{
	return (unsigned)a < RECOVER_ACTION_COUNT ? actions[a].name : NULL;
}

int recover_action_parse(const char *name, enum recover_action *out)
{
	for (int a = 0; name && a < RECOVER_ACTION_COUNT; a++) {
		if (strcmp(name, actions[a].name) == 0) {
			*out = (enum recover_action)a;
			return 0;
		}
	}
	return FC_USAGE;
}

const char *recover_verdict_name(enum recover_verdict v)
{
	return (unsigned)v <= RECOVER_NOT_APPLICABLE ? verdict_names[v] : "?";
}

const char *recover_answer_name(enum fence_probe_answer a)
{
	switch (a) {
	case FENCE_APPLIED: return "APPLIED";
	case FENCE_ABSENT: return "ABSENT";
	default: return "UNKNOWN";
	}
}

static void decide(struct recover_option *o, enum recover_verdict v,
		   const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void decide(struct recover_option *o, enum recover_verdict v,
		   const char *fmt, ...)
{
	va_list ap;

	o->verdict = v;
	va_start(ap, fmt);
	vsnprintf(o->why, sizeof(o->why), fmt, ap);
	va_end(ap);
}

/* Rule 3: why a state other than COMMITTING / COMMIT_UNKNOWN is left to
 * the route. */
static void leave_to_route(const struct recover_facts *f,
			   struct recover_option *o)
{
	const char *st = state_name(f->state);

	if (f->state == FC_TARGET_COMMITTED ||
	    f->state == FC_COMMITTED_INCOMPLETE)
		decide(o, RECOVER_REFUSED, "the commit is already recorded "
		       "(%s); run the route again: it finishes the evidence "
		       "without writing", st);
	else if (f->answer == FENCE_APPLIED)
		decide(o, RECOVER_REFUSED, "the target holds the operation "
		       "although the journal says %s, which the protocol rules "
		       "out; no recovery action covers it: escalate", st);
	else
		decide(o, RECOVER_REFUSED, "nothing was committing; the next "
		       "attempt resumes %s by itself (it probes first)", st);
}

/* Rules 7 and 8 for an action that claims an outcome of the fence. */
static void judge_proof(const struct recover_facts *f,
			const struct action_info *a, struct recover_option *o)
{
	if (f->answer == a->proof) {
		decide(o, RECOVER_SAFE, "%s", a->safe_why);
	} else if (f->answer == FENCE_UNKNOWN) {
		decide(o, RECOVER_FORCE_ONLY, "the fence cannot prove either "
		       "outcome: only with --force, after checking the target "
		       "yourself");
	} else {
		decide(o, RECOVER_REFUSED, "the fence proves the mutation %s; "
		       "--force does not override a proof",
		       f->answer == FENCE_APPLIED ? "committed" : "absent");
		return;
	}
	if (a->fences_first && f->lease_live)
		decide(o, RECOVER_WAIT, "a lease on the operation is still "
		       "running, so a worker may still be writing; apply must "
		       "take a new lease to fence it out: wait until it "
		       "expires");
}

static void judge(const struct recover_facts *f, enum recover_action act,
		  struct recover_option *o)
{
	const struct action_info *a = &actions[act];

	o->next = a->next;
	o->fences_first = a->fences_first;
	if (f->state == FC_COMPLETE)
		decide(o, RECOVER_REFUSED, "the operation is COMPLETE: nothing "
		       "to do");
	else if (a->on_prepared_txn && !f->prepared_txn)
		decide(o, RECOVER_NOT_APPLICABLE, "not applicable: target has "
		       "no prepared transactions");
	else if (f->state != FC_COMMITTING && f->state != FC_COMMIT_UNKNOWN)
		leave_to_route(f, o);
	else if (!state_transition_legal(f->state, a->next))
		decide(o, RECOVER_REFUSED, "%s cannot move to %s",
		       state_name(f->state), state_name(a->next));
	else if (a->on_prepared_txn)
		decide(o, RECOVER_SAFE, "%s", a->safe_why);
	else if (f->prepared_txn)
		decide(o, RECOVER_REFUSED, "a prepared transaction of the "
		       "operation is pending at the target: commit-prepared or "
		       "rollback-prepared decides the outcome");
	else if (f->answer == FENCE_APPLIED && !f->intent_matches)
		decide(o, RECOVER_REFUSED, "the target holds this operation "
		       "with another intent (INTENT_CONFLICT); no recovery "
		       "action resolves that: find out who wrote it");
	else
		judge_proof(f, a, o);
}

/* One paragraph for a person: what this situation means. */
static const char *summary(const struct recover_facts *f)
{
	switch (f->state) {
	case FC_COMPLETE:
		return "Nothing to do: the operation is COMPLETE.";
	case FC_TARGET_COMMITTED:
	case FC_COMMITTED_INCOMPLETE:
		return "The target commit is recorded; only the evidence is "
		       "missing. Run the route again (clear the task in the "
		       "orchestrator): it finishes the evidence without "
		       "writing to the target.";
	case FC_COMMITTING:
	case FC_COMMIT_UNKNOWN:
		break;
	default:
		return f->answer == FENCE_APPLIED ?
		       "The target holds the operation although the journal "
		       "says it never started committing. The protocol rules "
		       "this out: do not rerun, escalate to the route's "
		       "owner." :
		       "Nothing was committing. The next attempt of the route "
		       "resumes the operation by itself, probing the fence "
		       "first.";
	}
	if (f->prepared_txn)
		return "A prepared transaction of the operation is pending at "
		       "the target: commit it or roll it back.";
	if (f->answer == FENCE_APPLIED && !f->intent_matches)
		return "The target holds this operation id with another "
		       "intent: an INTENT_CONFLICT. Do not mark it either way; "
		       "find out who wrote it.";
	switch (f->answer) {
	case FENCE_APPLIED:
		return "The fence proves the mutation committed: "
		       "mark-committed is safe, and the next attempt finishes "
		       "the evidence without writing.";
	case FENCE_ABSENT:
		return "The fence shows the mutation absent. Absence is final "
		       "only once no older epoch can still land, so apply "
		       "first takes a new lease and prepares the fence at that "
		       "epoch (a write, which plan never does), probes again, "
		       "and only then marks the operation FAILED_PRE_COMMIT; "
		       "the next attempt starts over and applies once.";
	default:
		return "The fence can prove neither outcome. Do not guess: "
		       "look at the target itself (fencecert target probe / "
		       "rows), then force the matching action; a forced "
		       "action is recorded with your name and reason.";
	}
}

void recover_plan_compute(const struct recover_facts *f,
			  struct recover_plan *out)
{
	memset(out, 0, sizeof(*out));
	for (int a = 0; a < RECOVER_ACTION_COUNT; a++)
		judge(f, (enum recover_action)a, &out->options[a]);
	out->summary = summary(f);
}

/* ---- the audit record ------------------------------------------------- */

static json_t *epoch_or_null(long long epoch)
{
	return epoch > 0 ? json_integer(epoch) : json_null();
}

static json_t *audit_object(const struct recover_audit *a)
{
	json_t *fj = json_pack("{s:o, s:s, s:o, s:o}",
		"name", a->fence_name ? json_string(a->fence_name) :
					json_null(),
		"answer", recover_answer_name(a->answer),
		"epoch", epoch_or_null(a->answer == FENCE_APPLIED ?
				       a->applied_epoch : 0),
		"fenced_epoch", epoch_or_null(a->fenced_epoch));
	json_t *rec = json_pack("{s:s, s:s, s:s, s:b, s:I, "
				"s:{s:s, s:I}, s:{s:s, s:I}, s:o}",
		"actor", a->actor, "reason", a->reason,
		"action", recover_action_name(a->action), "forced", a->forced,
		"at", (json_int_t)a->at,
		"before", "state", state_name(a->before_state),
		"version", (json_int_t)a->before_version,
		"after", "state", state_name(a->after_state),
		"version", (json_int_t)(a->before_version + 1),
		"fence", fj);
	json_t *root;

	if (!rec)
		return NULL;
	root = json_pack("{s:o}", "recovery", rec);
	/* A later attempt takes the committed result from the newest
	 * evidence holding "epoch" and "rows": give it the proven ones. */
	if (root && a->answer == FENCE_APPLIED && a->applied_epoch > 0 &&
	    (json_object_set_new(root, "epoch",
				 json_integer(a->applied_epoch)) ||
	     json_object_set_new(root, "rows", json_integer(a->rows)) ||
	     (a->fence_name && json_object_set_new(root, "fence",
					json_string(a->fence_name))))) {
		json_decref(root);
		return NULL;
	}
	return root;
}

/* The code point at *p (advancing *p), or -1 for bytes that are not
 * UTF-8 (text_ok() refuses those through jansson anyway). */
static long utf8_next(const unsigned char **p)
{
	const unsigned char *s = *p;
	int len = s[0] < 0x80 ? 1 : (s[0] & 0xe0) == 0xc0 ? 2 :
		  (s[0] & 0xf0) == 0xe0 ? 3 : (s[0] & 0xf8) == 0xf0 ? 4 : 0;
	long cp = len == 1 ? s[0] : len == 2 ? (s[0] & 0x1f) :
		  len == 3 ? (s[0] & 0x0f) : (s[0] & 0x07);

	if (!len)
		return -1;
	for (int i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return -1;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	*p = s + len;
	return cp;
}

/* White space (Unicode White_Space) and the zero-width characters that
 * show as nothing. */
static bool invisible(long cp)
{
	return (cp >= 0x09 && cp <= 0x0d) || cp == 0x20 || cp == 0x85 ||
	       cp == 0xa0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200d) ||
	       cp == 0x2028 || cp == 0x2029 || cp == 0x202f || cp == 0x205f ||
	       cp == 0x2060 || cp == 0x3000 || cp == 0xfeff;
}

bool recover_text_blank(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	if (!s)
		return true;
	while (*p) {
		long cp = utf8_next(&p);

		if (cp < 0 || !invisible(cp))
			return false;
	}
	return true;
}

/* Not blank, bounded, and valid UTF-8 (jansson refuses anything else). */
static int text_ok(const char *s, size_t max)
{
	json_t *v;

	if (recover_text_blank(s) || strlen(s) >= max)
		return 0;
	v = json_string(s);
	json_decref(v);
	return v != NULL;
}

int recover_audit_json(const struct recover_audit *a, char **out)
{
	json_t *root;
	char *text;

	*out = NULL;
	if (!text_ok(a->actor, RECOVER_ACTOR_MAX) ||
	    !text_ok(a->reason, RECOVER_REASON_MAX) ||
	    !recover_action_name(a->action))
		return FC_USAGE;
	root = audit_object(a);
	if (!root)
		return FC_NOMEM;
	text = json_dumps(root, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(root);
	if (!text)
		return FC_NOMEM;
	if (strlen(text) >= JOURNAL_JSON_MAX) {
		free(text);
		return FC_USAGE;
	}
	*out = text;
	return 0;
}
