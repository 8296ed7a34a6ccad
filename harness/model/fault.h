/*
 * fault.h -- the fault vocabulary: what one fault of a schedule is (struct
 * fault and its enums), the names of actions and operator decisions, which
 * family an action belongs to, and the rules for failpoint names.
 *
 * Owns: the action and decision name tables (fault.c), the failpoint name
 * rule both the suite loader (scenario_faults.c) and the schedule string
 * (schedule.c) enforce, and which failpoints belong to a target call (the
 * checker's invariants 5 and 6 and its outcomes), which actions take a
 * failpoint or an after_attempt, and which faults lose power (a syscall
 * rule's action read with the rule grammar of harness/inject).  It sits
 * below every other file of harness/model: it calls nothing of the model,
 * so the suite loader and the schedule string can both stand on it.
 *
 * Who includes it: scenario.h (so every user of the suite model sees it)
 * and anything in harness/ at or above harness/model (ci/check-layers).
 *
 * Invariants:
 *   1. Each action has one long name ("kill", "lose_xcom", ...) and each
 *      decision one name ("mark-committed", ...); fault_action_parse() and
 *      operator_decision_parse() are the exact inverses of the _name()
 *      functions.  The schedule string's one-letter forms are schedule.c's.
 *   2. A failpoint name is 1..FAILPOINT_NAME_MAX-1 of [A-Za-z0-9_] and not
 *      one of the schedule keywords "next", "never", "clean", "all", so a
 *      name can never be read as a keyword of the string form.
 *   3. Functions here are pure: no allocation, no state, no I/O.
 */
#ifndef FENCECERT_FAULT_H
#define FENCECERT_FAULT_H

#include <stdbool.h>
#include <stddef.h>

#include "common/protocol.h"

/* A name the suite gives (suite, route, scenario, service, proxy); a
 * fault names a service and a proxy, so the limit lives here. */
#define SCENARIO_NAME_MAX 128
/* a failpoint name as the route protocol bounds it */
#define FAILPOINT_NAME_MAX PROTO_FAILPOINT_NAME_MAX
#define FAULT_RULE_MAX 256 /* a syscall fault's rule string, '\0' included */

enum fault_action {
	FAULT_KILL,          /* SIGKILL the attempt's process group at a failpoint */
	FAULT_PAUSE,         /* SIGSTOP at a failpoint; SIGCONT per `resume` */
	FAULT_FAIL,          /* answer 'f' at a failpoint */
	FAULT_LOSE_XCOM,     /* wipe the XCom dir(s) after an attempt */
	FAULT_LOSE_POD,      /* wipe the attempt's run dir after an attempt */
	FAULT_CHANGE_SOURCE, /* rewrite the source partition after an attempt */
	FAULT_STOP_MEMBER,   /* stop one member of an etcd service */
	FAULT_START_MEMBER,  /* start it again (waits until it serves) */
	FAULT_SYSCALL,       /* a seccomp rule (`rule`) active during an attempt */
	FAULT_RECOVER,       /* an operator's `fencecert recover apply` after an
				attempt, then the task is cleared */
	FAULT_CUT_AFTER_COMMIT, /* proxy: relay a COMMIT, cut before its answer */
	FAULT_HOLD_COMMIT,   /* proxy: hold a COMMIT until the next try ended */
	FAULT_REFUSE,        /* proxy: reset and refuse every connection */
	FAULT_DELAY,         /* proxy: delay every client message */
	FAULT_POWER_LOSS,    /* at a failpoint: the machine loses power -- every
				process of the schedule is killed and the
				schedule's files go back to what was synced
				(harness/run/snapshot.h, docs/syscall-faults.md) */
	FAULT_ACTION_COUNT
};

/* What the operator of a recover fault decides (`recover apply --action`). */
enum operator_decision {
	DECIDE_NONE,
	DECIDE_MARK_COMMITTED,          /* "mark-committed" */
	DECIDE_MARK_FAILED_PRE_COMMIT,  /* "mark-failed-pre-commit" */
};

/* When a paused (zombie) attempt is resumed. */
enum fault_resume {
	RESUME_AFTER_NEXT_ATTEMPT, /* once the next try has ended (default) */
	RESUME_AT_NEXT_FAILPOINT,  /* when the next try reaches `resume_at` */
	RESUME_NEVER,              /* killed at the end of the schedule */
};

#define MEMBER_NAME_MAX 32

/*
 * stop_member/start_member happen at a failpoint (failpoint, attempt, hit,
 * like kill) or between tries (after_attempt, like lose_xcom): which one is
 * told by fault_at_failpoint().
 */
struct fault {
	enum fault_action action;
	int attempt;          /* try number it applies to (at a failpoint) */
	int after_attempt;    /* between tries (lose_xcom, lose_pod,
				 change_source, recover, member actions):
				 after try N */
	char failpoint[FAILPOINT_NAME_MAX]; /* at a failpoint */
	int hit;              /* the N-th hit of failpoint in that attempt; >= 1 */
	int operation;        /* 1-based operation index; 0 = every operation */
	/* FAULT_SYSCALL: an inject_seccomp rule string ("fsync#2:kill_after@
	 * {dir}/journal.db", inject_seccomp.h) whose glob may hold "{dir}";
	 * applied to try `attempt`.  Never contains ';'. */
	char rule[FAULT_RULE_MAX];
	enum fault_resume resume;
	char resume_at[FAILPOINT_NAME_MAX]; /* RESUME_AT_NEXT_FAILPOINT */
	char member[MEMBER_NAME_MAX];       /* stop/start_member: "m2" */
	char service[SCENARIO_NAME_MAX];    /* its service; "" = the suite's
					       only etcd service */
	enum operator_decision decision; /* recover only */
	bool force;           /* recover: apply --force */
	bool wrong_target;    /* recover: the operator probes a look-alike
				 target that holds no fence of the operation */
	char proxy[SCENARIO_NAME_MAX];      /* proxy actions: the proxy */
	int delay_ms;         /* delay: per client message */
	int line, column;     /* source position, 0 when built by code */
};

/* Bit set of fault actions, for explore.actions. */
#define FAULT_BIT(a) (1u << (unsigned)(a))

/* "kill", "lose_xcom", ...; "unknown" out of range. */
const char *fault_action_name(enum fault_action a);
/* 0, or FC_USAGE for another name (the long names only). */
int fault_action_parse(const char *name, enum fault_action *out);

/* "mark-committed", "mark-failed-pre-commit"; NULL for DECIDE_NONE. */
const char *operator_decision_name(enum operator_decision d);
/* 0, or FC_USAGE for another name. */
int operator_decision_parse(const char *name, enum operator_decision *out);

/* Actions that happen at a failpoint when given one, else between tries
 * (members, power_loss) or during a try (refuse). */
bool fault_takes_either_form(enum fault_action a);

/* True when f happens at a failpoint of an attempt (kill, pause, fail, and
 * the either-form actions given a failpoint), false otherwise. */
bool fault_at_failpoint(const struct fault *f);

/* The actions that only ever happen at a failpoint: kill, pause, fail,
 * power_loss. */
bool fault_is_point_action(enum fault_action a);
bool fault_is_member_action(enum fault_action a);

/* Does f lose power: a power_loss at a failpoint, or a syscall fault whose
 * rule's action is power_loss ("fdatasync#3:power_loss@{dir}/t.db-wal":
 * the machine goes down as the call is made, the call never runs)? */
bool fault_loses_power(const struct fault *f);

/* Is a rule string's action power_loss (inject_seccomp_rule_action())? */
bool fault_rule_loses_power(const char *rule);

/*
 * Proxy actions apply during try `attempt` (all of it), through the
 * suite's proxy `proxy`: cut_after_commit and hold_commit at the hit-th
 * COMMIT of that try, delay to every message, refuse from the try's start
 * or, given a failpoint, from its hit-th HIT on (fault_at_failpoint()).
 */
bool fault_is_proxy_action(enum fault_action a);

/* Whether the len bytes at name are a failpoint name (invariant 2). */
bool fault_failpoint_valid(const char *name, size_t len);

/* True for the before_/after_ failpoints of a target call (fence_prepare,
 * target_commit, probe, reconcile_probe: docs/failpoints.md). */
bool fault_failpoint_is_target_call(const char *failpoint);

#endif
