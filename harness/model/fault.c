/*
 * fault.c -- the fault vocabulary (fault.h): action and decision names,
 * action families, failpoint name rules.  Pure functions over constant
 * tables; nothing else in harness/model is called from here.
 */
#include <string.h>

#include "common/error.h"
#include "common/protocol.h"
#include "harness/inject/inject_seccomp.h"
#include "harness/model/fault.h"

static const char *const action_names[FAULT_ACTION_COUNT] = {
	[FAULT_KILL] = "kill",
	[FAULT_PAUSE] = "pause",
	[FAULT_FAIL] = "fail",
	[FAULT_LOSE_XCOM] = "lose_xcom",
	[FAULT_LOSE_POD] = "lose_pod",
	[FAULT_CHANGE_SOURCE] = "change_source",
	[FAULT_STOP_MEMBER] = "stop_member",
	[FAULT_START_MEMBER] = "start_member",
	[FAULT_SYSCALL] = "syscall",
	[FAULT_RECOVER] = "recover",
	[FAULT_CUT_AFTER_COMMIT] = "cut_after_commit",
	[FAULT_HOLD_COMMIT] = "hold_commit",
	[FAULT_REFUSE] = "refuse",
	[FAULT_DELAY] = "delay",
	[FAULT_POWER_LOSS] = "power_loss",
};
static const char *const decision_names[] = {
	[DECIDE_MARK_COMMITTED] = "mark-committed",
	[DECIDE_MARK_FAILED_PRE_COMMIT] = "mark-failed-pre-commit",
};
#define DECISION_COUNT (sizeof(decision_names) / sizeof(decision_names[0]))

/* The failpoints around the target calls (docs/failpoints.md). */
static const char *const target_call_failpoints[] = {
	FP_BEFORE_FENCE_PREPARE, FP_AFTER_FENCE_PREPARE,
	FP_BEFORE_TARGET_COMMIT, FP_AFTER_TARGET_COMMIT,
	FP_BEFORE_PROBE, FP_AFTER_PROBE,
	FP_BEFORE_RECONCILE_PROBE, FP_AFTER_RECONCILE_PROBE,
};

const char *fault_action_name(enum fault_action a)
{
	if ((unsigned)a >= FAULT_ACTION_COUNT)
		return "unknown";
	return action_names[a];
}

int fault_action_parse(const char *name, enum fault_action *out)
{
	for (unsigned a = 0; a < FAULT_ACTION_COUNT; a++) {
		if (strcmp(name, action_names[a]) == 0) {
			*out = (enum fault_action)a;
			return 0;
		}
	}
	return FC_USAGE;
}

const char *operator_decision_name(enum operator_decision d)
{
	return (unsigned)d < DECISION_COUNT ? decision_names[d] : NULL;
}

int operator_decision_parse(const char *name, enum operator_decision *out)
{
	for (unsigned d = 1; d < DECISION_COUNT; d++) {
		if (strcmp(name, decision_names[d]) == 0) {
			*out = (enum operator_decision)d;
			return 0;
		}
	}
	return FC_USAGE;
}

bool fault_is_member_action(enum fault_action a)
{
	return a == FAULT_STOP_MEMBER || a == FAULT_START_MEMBER;
}

bool fault_is_proxy_action(enum fault_action a)
{
	return a == FAULT_CUT_AFTER_COMMIT || a == FAULT_HOLD_COMMIT ||
	       a == FAULT_REFUSE || a == FAULT_DELAY;
}

bool fault_takes_either_form(enum fault_action a)
{
	return fault_is_member_action(a) || a == FAULT_REFUSE ||
	       a == FAULT_POWER_LOSS;
}

bool fault_at_failpoint(const struct fault *f)
{
	if (fault_takes_either_form(f->action))
		return f->failpoint[0] != '\0';
	return fault_is_point_action(f->action);
}

bool fault_is_point_action(enum fault_action a)
{
	return a == FAULT_KILL || a == FAULT_PAUSE || a == FAULT_FAIL ||
	       a == FAULT_POWER_LOSS;
}

bool fault_rule_loses_power(const char *rule)
{
	enum inject_action a;

	return inject_seccomp_rule_action(rule, &a) == 0 &&
	       a == INJECT_POWER_LOSS;
}

bool fault_loses_power(const struct fault *f)
{
	return f->action == FAULT_POWER_LOSS ||
	       (f->action == FAULT_SYSCALL && fault_rule_loses_power(f->rule));
}

bool fault_failpoint_valid(const char *name, size_t len)
{
	static const char *const reserved[] = { "next", "never", "clean", "all", NULL };

	if (len == 0 || len >= FAILPOINT_NAME_MAX)
		return false;
	for (size_t i = 0; i < len; i++) {
		char ch = name[i];

		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		      (ch >= '0' && ch <= '9') || ch == '_'))
			return false;
	}
	for (const char *const *r = reserved; *r; r++)
		if (strlen(*r) == len && memcmp(*r, name, len) == 0)
			return false;
	return true;
}

bool fault_failpoint_is_target_call(const char *failpoint)
{
	size_t n = sizeof(target_call_failpoints) / sizeof(target_call_failpoints[0]);

	for (size_t i = 0; i < n; i++)
		if (strcmp(failpoint, target_call_failpoints[i]) == 0)
			return true;
	return false;
}
