/*
 * test_recover.c -- the recovery plan, table-driven: each journal state x
 * fence answer (and the lease / intent / prepared-transaction facts that
 * change a verdict) -> the verdict of every action; plus properties that
 * must hold over every combination, and the audit record's shape.
 *
 * The expected verdicts are written out by name below, from SPEC section 3
 * and the recovery rules of docs/runbook.md, not computed from recover.c.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "recover/recover.h"
#include "journal/journal.h"

/* Verdict letters, so the table reads as one line per situation:
 * S safe, F force-only, W wait, R refused, N not applicable. */
static enum recover_verdict verdict_of(char c)
{
	switch (c) {
	case 'S': return RECOVER_SAFE;
	case 'F': return RECOVER_FORCE_ONLY;
	case 'W': return RECOVER_WAIT;
	case 'R': return RECOVER_REFUSED;
	default: return RECOVER_NOT_APPLICABLE;
	}
}

#define OK_INTENT 1
#define OTHER_INTENT 0

static const struct row {
	const char *state;
	enum fence_probe_answer answer;
	int intent_matches, prepared_txn, lease_live;
	/* mark-committed, mark-failed-pre-commit, commit-prepared,
	 * rollback-prepared */
	const char *want;
} rows[] = {
	/* The two states that wait for an operator. */
	{ "COMMIT_UNKNOWN", FENCE_APPLIED, OK_INTENT, 0, 0, "SRNN" },
	{ "COMMIT_UNKNOWN", FENCE_ABSENT, OK_INTENT, 0, 0, "RSNN" },
	{ "COMMIT_UNKNOWN", FENCE_UNKNOWN, OK_INTENT, 0, 0, "FFNN" },
	{ "COMMITTING", FENCE_APPLIED, OK_INTENT, 0, 0, "SRNN" },
	{ "COMMITTING", FENCE_ABSENT, OK_INTENT, 0, 0, "RSNN" },
	{ "COMMITTING", FENCE_UNKNOWN, OK_INTENT, 0, 0, "FFNN" },
	/* A running lease: fencing must wait, a commit proof need not. */
	{ "COMMITTING", FENCE_APPLIED, OK_INTENT, 0, 1, "SRNN" },
	{ "COMMITTING", FENCE_ABSENT, OK_INTENT, 0, 1, "RWNN" },
	{ "COMMIT_UNKNOWN", FENCE_UNKNOWN, OK_INTENT, 0, 1, "FWNN" },
	/* The fence holds another intent: nothing resolves it. */
	{ "COMMIT_UNKNOWN", FENCE_APPLIED, OTHER_INTENT, 0, 0, "RRNN" },
	{ "COMMITTING", FENCE_APPLIED, OTHER_INTENT, 0, 1, "RRNN" },
	/* A pending prepared transaction (pg-2pc): decide it, not around it. */
	{ "COMMIT_UNKNOWN", FENCE_UNKNOWN, OK_INTENT, 1, 0, "RRSS" },
	{ "COMMITTING", FENCE_UNKNOWN, OK_INTENT, 1, 1, "RRSS" },
	/* COMPLETE: nothing to do, whatever the target says. */
	{ "COMPLETE", FENCE_APPLIED, OK_INTENT, 0, 0, "RRRR" },
	{ "COMPLETE", FENCE_ABSENT, OK_INTENT, 0, 0, "RRRR" },
	{ "COMPLETE", FENCE_UNKNOWN, OK_INTENT, 1, 1, "RRRR" },
	/* States the route resumes by itself. */
	{ "PREPARING", FENCE_ABSENT, OK_INTENT, 0, 0, "RRNN" },
	{ "PREPARING", FENCE_APPLIED, OK_INTENT, 0, 0, "RRNN" },
	{ "PREPARING", FENCE_UNKNOWN, OK_INTENT, 0, 0, "RRNN" },
	{ "PREPARED", FENCE_ABSENT, OK_INTENT, 0, 0, "RRNN" },
	{ "PREPARED", FENCE_APPLIED, OK_INTENT, 0, 0, "RRNN" },
	{ "PREPARED", FENCE_UNKNOWN, OK_INTENT, 1, 0, "RRRR" },
	{ "FAILED_PRE_COMMIT", FENCE_ABSENT, OK_INTENT, 0, 0, "RRNN" },
	{ "FAILED_PRE_COMMIT", FENCE_UNKNOWN, OK_INTENT, 0, 1, "RRNN" },
	{ "TARGET_COMMITTED", FENCE_APPLIED, OK_INTENT, 0, 0, "RRNN" },
	{ "TARGET_COMMITTED", FENCE_UNKNOWN, OK_INTENT, 0, 0, "RRNN" },
	{ "COMMITTED_INCOMPLETE", FENCE_APPLIED, OK_INTENT, 0, 0, "RRNN" },
	{ "COMMITTED_INCOMPLETE", FENCE_ABSENT, OK_INTENT, 0, 0, "RRNN" },
};

static void facts_of(const struct row *r, struct recover_facts *f)
{
	memset(f, 0, sizeof(*f));
	assert_int_equal(state_parse(r->state, &f->state), 0);
	f->answer = r->answer;
	f->intent_matches = r->intent_matches;
	f->prepared_txn = r->prepared_txn;
	f->lease_live = r->lease_live;
}

static void test_table(void **unused)
{
	(void)unused;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		const struct row *r = &rows[i];
		struct recover_facts f;
		struct recover_plan plan;

		facts_of(r, &f);
		recover_plan_compute(&f, &plan);
		assert_non_null(plan.summary);
		for (int a = 0; a < RECOVER_ACTION_COUNT; a++) {
			enum recover_verdict want = verdict_of(r->want[a]);
			const struct recover_option *o = &plan.options[a];

			if (o->verdict != want)
				fail_msg("row %zu (%s, %s, intent %d, 2pc %d, "
					 "lease %d): %s is %s, want %s (%s)", i,
					 r->state, recover_answer_name(r->answer),
					 r->intent_matches, r->prepared_txn,
					 r->lease_live, recover_action_name(a),
					 recover_verdict_name(o->verdict),
					 recover_verdict_name(want), o->why);
			assert_true(strlen(o->why) > 0);
		}
	}
}

static void test_next_states_and_fencing(void **unused)
{
	struct recover_facts f = { .state = FC_COMMIT_UNKNOWN,
				   .answer = FENCE_ABSENT };
	struct recover_plan plan;

	(void)unused;
	recover_plan_compute(&f, &plan);
	assert_int_equal(plan.options[RECOVER_MARK_COMMITTED].next,
			 FC_TARGET_COMMITTED);
	assert_int_equal(plan.options[RECOVER_MARK_FAILED_PRE_COMMIT].next,
			 FC_FAILED_PRE_COMMIT);
	assert_int_equal(plan.options[RECOVER_COMMIT_PREPARED].next,
			 FC_TARGET_COMMITTED);
	assert_int_equal(plan.options[RECOVER_ROLLBACK_PREPARED].next,
			 FC_FAILED_PRE_COMMIT);
	/* Only an absence needs older epochs fenced out first. */
	assert_false(plan.options[RECOVER_MARK_COMMITTED].fences_first);
	assert_true(plan.options[RECOVER_MARK_FAILED_PRE_COMMIT].fences_first);
	assert_false(plan.options[RECOVER_COMMIT_PREPARED].fences_first);
	assert_false(plan.options[RECOVER_ROLLBACK_PREPARED].fences_first);
	assert_string_equal(plan.options[RECOVER_COMMIT_PREPARED].why,
			    "not applicable: target has no prepared "
			    "transactions");
	assert_non_null(strstr(plan.summary, "new lease"));
}

/* Every combination of facts, against rules that must always hold. */
static void test_properties_over_every_combination(void **unused)
{
	int combos = 0;

	(void)unused;
	for (int s = FC_PREPARING; s < FC_STATE_COUNT; s++)
	for (int ans = FENCE_ABSENT; ans <= FENCE_UNKNOWN; ans++)
	for (int bits = 0; bits < 8; bits++) {
		struct recover_facts f = {
			.state = (enum fc_state)s,
			.answer = (enum fence_probe_answer)ans,
			.intent_matches = bits & 1,
			.prepared_txn = (bits >> 1) & 1,
			.lease_live = (bits >> 2) & 1,
		};
		struct recover_plan plan;

		recover_plan_compute(&f, &plan);
		combos++;
		for (int a = 0; a < RECOVER_ACTION_COUNT; a++) {
			const struct recover_option *o = &plan.options[a];
			bool acts = o->verdict == RECOVER_SAFE ||
				    o->verdict == RECOVER_FORCE_ONLY ||
				    o->verdict == RECOVER_WAIT;

			/* Only edges of states.c, never from COMPLETE. */
			if (acts)
				assert_true(state_transition_legal(f.state, o->next));
			if (f.state == FC_COMPLETE)
				assert_int_equal(o->verdict, RECOVER_REFUSED);
			/* --force never overrides a proof. */
			if (a == RECOVER_MARK_FAILED_PRE_COMMIT &&
			    f.answer == FENCE_APPLIED)
				assert_false(acts);
			if (a == RECOVER_MARK_COMMITTED &&
			    f.answer == FENCE_ABSENT)
				assert_false(acts);
			/* Force is for UNKNOWN only. */
			if (o->verdict == RECOVER_FORCE_ONLY)
				assert_int_equal(f.answer, FENCE_UNKNOWN);
			/* Fencing needs the lease: never safe while it runs. */
			if (o->fences_first && f.lease_live)
				assert_int_not_equal(o->verdict, RECOVER_SAFE);
			/* Nothing acts on a target without prepared
			 * transactions through the 2PC actions. */
			if ((a == RECOVER_COMMIT_PREPARED ||
			     a == RECOVER_ROLLBACK_PREPARED) && !f.prepared_txn)
				assert_false(acts);
		}
	}
	assert_int_equal(combos, 8 * 3 * 8);
}

static void test_action_names(void **unused)
{
	enum recover_action a;

	(void)unused;
	for (int i = 0; i < RECOVER_ACTION_COUNT; i++) {
		assert_int_equal(recover_action_parse(recover_action_name(i), &a), 0);
		assert_int_equal(a, i);
	}
	assert_string_equal(recover_action_name(RECOVER_MARK_FAILED_PRE_COMMIT),
			    "mark-failed-pre-commit");
	assert_int_not_equal(recover_action_parse("mark-complete", &a), 0);
	assert_int_not_equal(recover_action_parse("", &a), 0);
	assert_int_not_equal(recover_action_parse(NULL, &a), 0);
	assert_null(recover_action_name(RECOVER_ACTION_COUNT));
}

/* ---- the audit record ---- */

static json_t *audit(const struct recover_audit *au)
{
	char *text = NULL;
	json_t *v;

	assert_int_equal(recover_audit_json(au, &text), 0);
	assert_non_null(text);
	assert_true(strlen(text) < JOURNAL_JSON_MAX);
	v = json_loads(text, JSON_REJECT_DUPLICATES, NULL);
	free(text);
	assert_non_null(v);
	return v;
}

static const char *str_at(json_t *root, const char *path)
{
	char buf[128], *save, *key;
	json_t *v = root;

	snprintf(buf, sizeof(buf), "%s", path);
	for (key = strtok_r(buf, ".", &save); key; key = strtok_r(NULL, ".", &save))
		v = json_object_get(v, key);
	return json_string_value(v);
}

static json_int_t int_at(json_t *root, const char *path)
{
	char buf[128], *save, *key;
	json_t *v = root;

	snprintf(buf, sizeof(buf), "%s", path);
	for (key = strtok_r(buf, ".", &save); key; key = strtok_r(NULL, ".", &save))
		v = json_object_get(v, key);
	if (!json_is_integer(v))
		fail_msg("%s is not an integer", path);
	return json_integer_value(v);
}

static void test_audit_mark_committed(void **unused)
{
	struct recover_audit au = {
		.actor = "alice", .reason = "fence shows \"applied\"\nticket 7",
		.action = RECOVER_MARK_COMMITTED, .forced = false,
		.at = 1767225600123LL, .before_state = FC_COMMIT_UNKNOWN,
		.before_version = 5, .after_state = FC_TARGET_COMMITTED,
		.answer = FENCE_APPLIED, .applied_epoch = 1, .rows = 2,
		.fence_name = "sqlite",
	};
	json_t *v, *rec;

	(void)unused;
	v = audit(&au);
	rec = json_object_get(v, "recovery");
	assert_true(json_is_object(rec));
	assert_string_equal(str_at(v, "recovery.actor"), "alice");
	assert_string_equal(str_at(v, "recovery.reason"), au.reason);
	assert_string_equal(str_at(v, "recovery.action"), "mark-committed");
	assert_true(json_is_false(json_object_get(rec, "forced")));
	assert_int_equal(int_at(v, "recovery.at"), 1767225600123LL);
	assert_string_equal(str_at(v, "recovery.before.state"), "COMMIT_UNKNOWN");
	assert_int_equal(int_at(v, "recovery.before.version"), 5);
	assert_string_equal(str_at(v, "recovery.after.state"), "TARGET_COMMITTED");
	assert_int_equal(int_at(v, "recovery.after.version"), 6);
	assert_string_equal(str_at(v, "recovery.fence.answer"), "APPLIED");
	assert_string_equal(str_at(v, "recovery.fence.name"), "sqlite");
	assert_int_equal(int_at(v, "recovery.fence.epoch"), 1);
	assert_true(json_is_null(json_object_get(
		json_object_get(rec, "fence"), "fenced_epoch")));
	/* The proven result, where a later attempt reads it. */
	assert_int_equal(int_at(v, "epoch"), 1);
	assert_int_equal(int_at(v, "rows"), 2);
	assert_string_equal(str_at(v, "fence"), "sqlite");
	json_decref(v);
}

static void test_audit_forced_without_proof(void **unused)
{
	struct recover_audit au = {
		.actor = "bob", .reason = "target restored from backup; rows "
		"checked by hand", .action = RECOVER_MARK_FAILED_PRE_COMMIT,
		.forced = true, .at = 1, .before_state = FC_COMMITTING,
		.before_version = 4, .after_state = FC_FAILED_PRE_COMMIT,
		.answer = FENCE_UNKNOWN, .applied_epoch = 3, .rows = 9,
		.fenced_epoch = 0, .fence_name = NULL,
	};
	json_t *v, *fj;

	(void)unused;
	v = audit(&au);
	assert_true(json_is_true(json_object_get(json_object_get(v, "recovery"),
						 "forced")));
	assert_string_equal(str_at(v, "recovery.fence.answer"), "UNKNOWN");
	fj = json_object_get(json_object_get(v, "recovery"), "fence");
	/* No proof: no applied epoch, no result for a later attempt. */
	assert_true(json_is_null(json_object_get(fj, "epoch")));
	assert_true(json_is_null(json_object_get(fj, "name")));
	assert_null(json_object_get(v, "epoch"));
	assert_null(json_object_get(v, "rows"));
	json_decref(v);

	au.answer = FENCE_ABSENT;
	au.fenced_epoch = 7;
	v = audit(&au);
	assert_int_equal(int_at(v, "recovery.fence.fenced_epoch"), 7);
	assert_string_equal(str_at(v, "recovery.fence.answer"), "ABSENT");
	json_decref(v);
}

static void test_audit_refuses_bad_text(void **unused)
{
	struct recover_audit au = {
		.actor = "alice", .reason = "ok",
		.action = RECOVER_MARK_COMMITTED, .before_state = FC_COMMITTING,
		.before_version = 1, .after_state = FC_TARGET_COMMITTED,
	};
	char big[RECOVER_REASON_MAX + 1], *out = (char *)1;

	(void)unused;
	au.actor = "";
	assert_int_equal(recover_audit_json(&au, &out), FC_USAGE);
	assert_null(out);
	au.actor = NULL;
	assert_int_equal(recover_audit_json(&au, &out), FC_USAGE);
	/* white space only, ASCII or Unicode (EN SPACE, NBSP, ZERO WIDTH
	 * SPACE, IDEOGRAPHIC SPACE): nobody, and no reason */
	au.actor = " \t ";
	assert_int_equal(recover_audit_json(&au, &out), FC_USAGE);
	assert_null(out);
	au.actor = "\xe2\x80\x82\xc2\xa0";
	assert_int_equal(recover_audit_json(&au, &out), FC_USAGE);
	au.actor = "alice";
	au.reason = "\n\r\t \xe2\x80\x8b\xe3\x80\x80";
	assert_int_equal(recover_audit_json(&au, &out), FC_USAGE);
	au.reason = "\xff\xfe not utf-8";
	assert_int_equal(recover_audit_json(&au, &out), FC_USAGE);
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	au.reason = big;
	assert_int_equal(recover_audit_json(&au, &out), FC_USAGE);
	/* The longest reason allowed still fits the journal's evidence. */
	big[RECOVER_REASON_MAX - 1] = '\0';
	assert_int_equal(recover_audit_json(&au, &out), 0);
	assert_true(strlen(out) < JOURNAL_JSON_MAX);
	free(out);
	au.action = RECOVER_ACTION_COUNT;
	assert_int_equal(recover_audit_json(&au, &out), FC_USAGE);
}

static void test_text_blank(void **unused)
{
	static const char *const blank[] = {
		"", " ", "\t\n\v\f\r ", "\xc2\xa0", "\xe2\x80\x82\xe2\x80\x83",
		"\xe2\x80\x8b", "\xe2\x80\xa8", "\xe3\x80\x80", "\xef\xbb\xbf",
		"\xc2\x85 \xe1\x9a\x80",
	};
	static const char *const said[] = {
		"a", " alice ", "\xc2\xa0x", "INC-1234", "\xc3\xa9",
		"\xe2\x80\x8bz", "\xff", " \xff",
	};

	(void)unused;
	assert_true(recover_text_blank(NULL));
	for (size_t i = 0; i < sizeof(blank) / sizeof(*blank); i++)
		assert_true(recover_text_blank(blank[i]));
	for (size_t i = 0; i < sizeof(said) / sizeof(*said); i++)
		assert_false(recover_text_blank(said[i]));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_next_states_and_fencing),
		cmocka_unit_test(test_properties_over_every_combination),
		cmocka_unit_test(test_action_names),
		cmocka_unit_test(test_audit_mark_committed),
		cmocka_unit_test(test_audit_forced_without_proof),
		cmocka_unit_test(test_audit_refuses_bad_text),
		cmocka_unit_test(test_text_blank),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
