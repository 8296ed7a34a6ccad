/*
 * scenario_faults.c -- the `scenarios:` list of a suite: each scenario's
 * fixed fault schedule or exploration request.
 *
 * Invariants:
 *   1. A loaded fault is in the normal form schedule.c produces, so
 *      schedule_parse(schedule_format(faults)) gives back the same faults:
 *      kill/pause/fail carry failpoint, attempt and hit (after_attempt 0);
 *      lose_xcom/lose_pod/change_source carry only after_attempt (attempt 0,
 *      hit 0, failpoint ""); recover carries after_attempt and its
 *      decision, force and wrong_target (no other fault does); only pause
 *      carries a resume; operation is 0 for "every operation".
 *      stop_member/start_member take either form (a failpoint, or
 *      after_attempt) and always carry a member; power_loss takes either
 *      form too (after_attempt: power lost once that try ended).
 *   2. A fault can fire: its attempt is one of the orchestrator's tries and
 *      its operation one of the scenario's operations; a member action
 *      names a member of one of the suite's etcd services.  A fault that cannot
 *      fire would leave a failpoint unreached and the verdict unverified, so
 *      it is refused here where the line number is known.
 *   3. A fixed schedule fits SCHEDULE_STR_MAX, so every scenario has a
 *      reproducible string form.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/inject/inject_seccomp.h"
#include "harness/model/schedule.h"
#include "harness/model/scenario_impl.h"

static const char *const scenario_keys[] = {
	"name", "faults", "explore", "operations", "routes", NULL,
};
static const char *const fault_keys[] = {
	"action", "attempt", "after_attempt", "failpoint", "hit", "operation",
	"resume", "recover", "force", "wrong_target", "member", "service",
	"proxy", "delay_ms", "syscall", "path", NULL,
};
static const char *const resume_keys[] = { "at", NULL };
static const char *const explore_keys[] = {
	"failpoints", "actions", "interleavings", "random", "syscalls", "paths",
	"proxy", NULL,
};
static const char *const random_keys[] = { "schedules", "seed", "faults", NULL };

#define HIT_MAX 1000000
#define RANDOM_SCHEDULES_MAX 10000
#define RANDOM_FAULTS_MAX 6 /* keeps generated schedules within the string form */

/* What the faults are checked against (invariant 2). */
struct fault_bounds {
	int tries;
	int operations;
};

static int get_failpoint(struct yctx *c, yaml_node_t *n, const char *key,
			 char buf[FAILPOINT_NAME_MAX])
{
	const char *name;

	if (scenario__get_str(c, n, key, &name) < 0)
		return FC_USAGE;
	if (!fault_failpoint_valid(name, strlen(name)))
		return scenario__error(c, n,
				       "'%.40s' is not a failpoint name (1 to %d of [A-Za-z0-9_], not next/never/clean/all)",
				       name, FAILPOINT_NAME_MAX - 1);
	memcpy(buf, name, strlen(name) + 1);
	return 0;
}

static int check_failpoint(struct yctx *c, yaml_node_t *n, const char *s)
{
	char buf[FAILPOINT_NAME_MAX];

	return get_failpoint(c, n, "failpoints", buf);
}

static bool scalar_equals(const yaml_node_t *n, const char *s)
{
	return n->type == YAML_SCALAR_NODE && n->data.scalar.length == strlen(s) &&
	       memcmp(n->data.scalar.value, s, strlen(s)) == 0;
}

static int parse_resume(struct yctx *c, yaml_node_t *n, struct fault *f)
{
	yaml_node_t *at;

	if (n->type == YAML_MAPPING_NODE) {
		if (scenario__map_check(c, n, resume_keys, "resume") < 0 ||
		    scenario__map_need(c, n, "at", "resume", &at) < 0 ||
		    get_failpoint(c, at, "at", f->resume_at) < 0)
			return FC_USAGE;
		f->resume = RESUME_AT_NEXT_FAILPOINT;
		return 0;
	}
	if (scalar_equals(n, "after_next_attempt")) {
		f->resume = RESUME_AFTER_NEXT_ATTEMPT;
		return 0;
	}
	if (scalar_equals(n, "never")) {
		f->resume = RESUME_NEVER;
		return 0;
	}
	return scenario__error(c, n,
			       "'resume' must be after_next_attempt, never or {at: FAILPOINT}, got %s",
			       scenario__kind(n));
}

/* Refuse a key that does not belong to f's action. */
static int refuse_key(struct yctx *c, yaml_node_t *n, const char *key,
		      const struct fault *f, const char *hint)
{
	yaml_node_t *k = NULL;

	if (!scenario__map_get(c, n, key, &k))
		return c->failed ? FC_USAGE : 0;
	return scenario__error(c, k, "'%s' does not apply to action '%s'%s", key,
			       fault_action_name(f->action), hint);
}

/* `key` (attempt or after_attempt, required): one of the orchestrator's
 * tries (invariant 2). */
static int get_try(struct yctx *c, yaml_node_t *n, const char *key,
		   const char *what, int *out, const struct fault_bounds *b)
{
	yaml_node_t *v;

	if (scenario__map_need(c, n, key, what, &v) < 0 ||
	    scenario__get_int(c, v, key, 1, 21, out) < 0)
		return FC_USAGE;
	if (*out > b->tries)
		return scenario__error(c, v,
				       "%s %d is beyond the last try (retries: %d gives %d tries)",
				       key, *out, b->tries - 1, b->tries);
	return 0;
}

static int get_attempt(struct yctx *c, yaml_node_t *n, const char *what,
		       struct fault *f, const struct fault_bounds *b)
{
	return get_try(c, n, "attempt", what, &f->attempt, b);
}

/* `hit`, 1 when not given. */
static int get_hit(struct yctx *c, yaml_node_t *n, struct fault *f)
{
	yaml_node_t *v;

	f->hit = 1;
	if ((v = scenario__map_get(c, n, "hit", NULL)) &&
	    scenario__get_int(c, v, "hit", 1, HIT_MAX, &f->hit) < 0)
		return FC_USAGE;
	return 0;
}

static int parse_failpoint_fault(struct yctx *c, yaml_node_t *n,
				 struct fault *f, const struct fault_bounds *b)
{
	char what[64];
	yaml_node_t *v;

	snprintf(what, sizeof(what), "fault with action '%s'",
		 fault_action_name(f->action));
	if (refuse_key(c, n, "after_attempt", f, " (use 'attempt')") < 0 ||
	    (f->action != FAULT_PAUSE &&
	     refuse_key(c, n, "resume", f, " (only pause resumes)") < 0) ||
	    scenario__map_need(c, n, "failpoint", what, &v) < 0 ||
	    get_failpoint(c, v, "failpoint", f->failpoint) < 0 ||
	    get_attempt(c, n, what, f, b) < 0 || get_hit(c, n, f) < 0)
		return FC_USAGE;
	if ((v = scenario__map_get(c, n, "resume", NULL)) &&
	    parse_resume(c, v, f) < 0)
		return FC_USAGE;
	return c->failed ? FC_USAGE : 0;
}

static int parse_between_fault(struct yctx *c, yaml_node_t *n,
			       struct fault *f, const struct fault_bounds *b)
{
	char what[64];

	snprintf(what, sizeof(what), "fault with action '%s'",
		 fault_action_name(f->action));
	if (refuse_key(c, n, "attempt", f, " (use 'after_attempt')") < 0 ||
	    refuse_key(c, n, "failpoint", f, " (it happens between attempts)") < 0 ||
	    refuse_key(c, n, "hit", f, " (it happens between attempts)") < 0 ||
	    refuse_key(c, n, "resume", f, " (only pause resumes)") < 0)
		return FC_USAGE;
	return get_try(c, n, "after_attempt", what, &f->after_attempt, b);
}

/* member (and service) of a stop_member/start_member fault. */
static int parse_member(struct yctx *c, yaml_node_t *n, struct fault *f)
{
	const struct service_spec *sv;
	yaml_node_t *v, *svnode;
	const char *name;
	int idx = 0;

	if ((svnode = scenario__map_get(c, n, "service", NULL)) &&
	    scenario__get_name(c, svnode, "service", f->service) < 0)
		return FC_USAGE;
	if (scenario__map_need(c, n, "member", "member action", &v) < 0 ||
	    scenario__get_str(c, v, "member", &name) < 0)
		return FC_USAGE;
	sv = suite_service(c->suite, f->service);
	if (svnode && (!sv || sv->kind != SERVICE_ETCD))
		return scenario__error(c, svnode,
				       "service '%s' is not an etcd service of the suite",
				       f->service);
	if (!sv)
		return scenario__error(c, n,
				       "a member action needs one etcd service in 'services' (or 'service: NAME')");
	if (name[0] == 'm' && name[1] >= '1' && name[1] <= '9' && !name[2])
		idx = name[1] - '0';
	if (idx < 1 || idx > sv->members)
		return scenario__error(c, v,
				       "'%.40s' is not a member of service '%s' (m1 to m%d)",
				       name, sv->name, sv->members);
	snprintf(f->member, sizeof(f->member), "%s", name);
	return 0;
}

/* {attempt: N, syscall: S, hit: H, action: kill_before | kill_after |
 *  "errno:E", path: GLOB} -> one FAULT_SYSCALL with its rule string. */
static int parse_syscall_fault(struct yctx *c, yaml_node_t *n, struct fault *f,
			       const struct fault_bounds *b)
{
	const char *sys, *action, *path = NULL;
	yaml_node_t *v, *act, *sysn;
	char msg[300];

	f->action = FAULT_SYSCALL;
	if (refuse_key(c, n, "after_attempt", f, " (use 'attempt')") < 0 ||
	    refuse_key(c, n, "failpoint", f, " (it fires at a system call)") < 0 ||
	    refuse_key(c, n, "resume", f, " (only pause resumes)") < 0 ||
	    scenario__map_need(c, n, "syscall", "syscall fault", &sysn) < 0 ||
	    scenario__get_str(c, sysn, "syscall", &sys) < 0 ||
	    scenario__map_need(c, n, "action", "syscall fault", &act) < 0 ||
	    scenario__get_str(c, act, "action", &action) < 0 ||
	    get_try(c, n, "attempt", "syscall fault", &f->attempt, b) < 0)
		return FC_USAGE;
	if (!inject_seccomp_syscall_info(sys, &(bool){ false }))
		return scenario__error(c, sysn,
				       "syscall '%.40s' cannot be intercepted (docs/syscall-faults.md lists the supported ones)",
				       sys);
	if (get_hit(c, n, f) < 0)
		return FC_USAGE;
	if ((v = scenario__map_get(c, n, "path", NULL)) &&
	    scenario__get_str(c, v, "path", &path) < 0)
		return FC_USAGE;
	if (schedule_rule_make(f->rule, sizeof(f->rule), sys,
			       (unsigned long)f->hit, action, path, msg,
			       sizeof(msg)) < 0)
		return scenario__error(c, v && path ? v : act, "%s", msg);
	f->hit = 0; /* the rule carries it (normal form) */
	return 0;
}

/* recover: the operator's decision, and how the operator gets it wrong */
static int parse_recover(struct yctx *c, yaml_node_t *n, struct fault *f)
{
	const char *name;
	yaml_node_t *v;

	if (f->action != FAULT_RECOVER)
		return refuse_key(c, n, "recover", f, "") < 0 ||
		       refuse_key(c, n, "force", f, "") < 0 ||
		       refuse_key(c, n, "wrong_target", f, "") < 0 ? FC_USAGE : 0;
	if (scenario__map_need(c, n, "recover", "fault with action 'recover'",
			       &v) < 0 ||
	    scenario__get_str(c, v, "recover", &name) < 0)
		return FC_USAGE;
	if (operator_decision_parse(name, &f->decision))
		return scenario__error(c, v, "unknown recover decision '%.40s' "
				       "(expected mark-committed or "
				       "mark-failed-pre-commit)", name);
	if ((v = scenario__map_get(c, n, "force", NULL)) &&
	    scenario__get_bool(c, v, "force", &f->force) < 0)
		return FC_USAGE;
	if ((v = scenario__map_get(c, n, "wrong_target", NULL)) &&
	    scenario__get_bool(c, v, "wrong_target", &f->wrong_target) < 0)
		return FC_USAGE;
	return c->failed ? FC_USAGE : 0;
}

/*
 * A proxy action: during try `attempt`, through suite proxy `proxy`;
 * cut/hold count COMMITs (hit), delay needs delay_ms, refuse may start at a
 * failpoint (failpoint, hit) instead of the try's start.
 */
static int parse_proxy_fault(struct yctx *c, yaml_node_t *n, struct fault *f,
			     const struct fault_bounds *b)
{
	bool counts = f->action == FAULT_CUT_AFTER_COMMIT ||
		      f->action == FAULT_HOLD_COMMIT;
	bool at = f->action == FAULT_REFUSE &&
		  scenario__map_get(c, n, "failpoint", NULL);
	char what[64];
	yaml_node_t *v;

	snprintf(what, sizeof(what), "fault with action '%s'",
		 fault_action_name(f->action));
	if (refuse_key(c, n, "after_attempt", f, " (it happens during 'attempt')") < 0 ||
	    refuse_key(c, n, "resume", f, counts ? " (a held COMMIT goes on once the next try ended)" : "") < 0 ||
	    (f->action != FAULT_DELAY &&
	     refuse_key(c, n, "delay_ms", f, " (only delay)") < 0) ||
	    (f->action != FAULT_REFUSE &&
	     refuse_key(c, n, "failpoint", f, " (it counts COMMITs or messages, not failpoints)") < 0) ||
	    (!counts && !at &&
	     refuse_key(c, n, "hit", f, " (hit counts COMMITs, or a refuse's failpoint)") < 0))
		return FC_USAGE;
	if (at) {
		if (parse_failpoint_fault(c, n, f, b) < 0)
			return FC_USAGE;
	} else {
		if (get_attempt(c, n, what, f, b) < 0 ||
		    (counts && get_hit(c, n, f) < 0))
			return FC_USAGE;
	}
	if (f->action == FAULT_DELAY &&
	    (scenario__map_need(c, n, "delay_ms", what, &v) < 0 ||
	     scenario__get_int(c, v, "delay_ms", 1, 60000, &f->delay_ms) < 0))
		return FC_USAGE;
	if (scenario__map_need(c, n, "proxy", what, &v) < 0 ||
	    scenario__get_name(c, v, "proxy", f->proxy) < 0)
		return FC_USAGE;
	if (!suite_proxy(c->suite, f->proxy))
		return scenario__error(c, v, "'%s' names no proxy of the suite (see 'proxies')",
				       f->proxy);
	return c->failed ? FC_USAGE : 0;
}

/* An action that takes either form (fault_takes_either_form()): at a
 * failpoint when the fault names one or an attempt, else between tries
 * ({after_attempt: N}: once try N ended). */
static int parse_either_form(struct yctx *c, yaml_node_t *n, struct fault *f,
			     const struct fault_bounds *b)
{
	bool at = scenario__map_get(c, n, "failpoint", NULL) ||
		  scenario__map_get(c, n, "attempt", NULL);

	return at ? parse_failpoint_fault(c, n, f, b)
		  : parse_between_fault(c, n, f, b);
}

static int parse_fault(struct yctx *c, yaml_node_t *n, struct fault *f,
		       const struct fault_bounds *b)
{
	yaml_node_t *v;
	const char *action;

	memset(f, 0, sizeof(*f));
	f->line = (int)n->start_mark.line + 1;
	f->column = (int)n->start_mark.column + 1;
	if (scenario__map_check(c, n, fault_keys, "fault") < 0)
		return FC_USAGE;
	if (scenario__map_get(c, n, "syscall", NULL)) {
		if (parse_syscall_fault(c, n, f, b) < 0)
			return FC_USAGE;
	} else if (scenario__map_need(c, n, "action", "fault", &v) < 0 ||
		   scenario__get_str(c, v, "action", &action) < 0) {
		return FC_USAGE;
	} else if (fault_action_parse(action, &f->action) < 0 ||
		   f->action == FAULT_SYSCALL) {
		return scenario__error(c, v,
				       "unknown action '%.40s' (expected kill, pause, fail, power_loss, lose_xcom, lose_pod, change_source, recover, stop_member, start_member, cut_after_commit, hold_commit, refuse or delay; a fault with 'syscall' takes kill_before, kill_after, power_loss or errno:NAME)",
				       action);
	} else if (fault_is_member_action(f->action)) {
		if (parse_either_form(c, n, f, b) < 0 || parse_member(c, n, f) < 0)
			return FC_USAGE;
	} else if (refuse_key(c, n, "member", f, " (only stop_member and start_member)") < 0 ||
		   refuse_key(c, n, "service", f, " (only stop_member and start_member)") < 0) {
		return FC_USAGE;
	} else if (fault_is_proxy_action(f->action)) {
		if (parse_proxy_fault(c, n, f, b) < 0)
			return FC_USAGE;
	} else if (refuse_key(c, n, "proxy", f, " (only proxy actions)") < 0 ||
		   refuse_key(c, n, "delay_ms", f, " (only delay)") < 0) {
		return FC_USAGE;
	} else if (f->action == FAULT_POWER_LOSS) {
		if (parse_either_form(c, n, f, b) < 0)
			return FC_USAGE;
	} else if (fault_is_point_action(f->action)) {
		if (parse_failpoint_fault(c, n, f, b) < 0)
			return FC_USAGE;
	} else if (parse_between_fault(c, n, f, b) < 0) {
		return FC_USAGE;
	}
	if (parse_recover(c, n, f) < 0)
		return FC_USAGE;
	if ((v = scenario__map_get(c, n, "operation", NULL))) {
		if (scenario__get_int(c, v, "operation", 0, 1000, &f->operation) < 0)
			return FC_USAGE;
		if (f->operation > b->operations)
			return scenario__error(c, v,
					       "operation %d is beyond the workload's %d operations",
					       f->operation, b->operations);
	}
	return c->failed ? FC_USAGE : 0;
}

static int parse_faults(struct yctx *c, yaml_node_t *list, struct scenario *sc,
			const struct fault_bounds *b)
{
	char form[SCHEDULE_STR_MAX];
	size_t count;

	if (list->type != YAML_SEQUENCE_NODE)
		return scenario__error(c, list, "'faults' must be a list, got %s",
				       scenario__kind(list));
	count = (size_t)(list->data.sequence.items.top - list->data.sequence.items.start);
	if (count > SCENARIO_MAX_FAULTS)
		return scenario__error(c, list, "'faults' has more than %d entries",
				       SCENARIO_MAX_FAULTS);
	if (count == 0)
		return 0;
	sc->faults = calloc(count, sizeof(*sc->faults));
	if (!sc->faults) {
		scenario__error(c, list, "out of memory");
		return FC_NOMEM;
	}
	for (size_t i = 0; i < count; i++) {
		yaml_node_t *n = scenario__node(c, list->data.sequence.items.start[i]);

		if (!n || parse_fault(c, n, &sc->faults[i], b) < 0)
			return FC_USAGE;
		sc->nfaults = i + 1;
	}
	if (schedule_format(sc->faults, sc->nfaults, form, sizeof(form)) < 0)
		return scenario__error(c, list,
				       "faults do not fit the schedule string form (%d characters)",
				       SCHEDULE_STR_MAX - 1);
	return 0;
}

/* The `actions:` list of an exploration as a set of FAULT_BITs: at most
 * max names, each one of `allowed`; where and expected go in the error
 * ("cannot be explored<where> (expected <expected>)"). */
static int parse_action_set(struct yctx *c, yaml_node_t *n, unsigned allowed,
			    size_t max, const char *where, const char *expected,
			    unsigned *out)
{
	char **names = NULL;
	unsigned set = 0;
	int rc;

	rc = scenario__get_strv(c, n, "actions", 1, max, NULL, &names);
	if (rc < 0)
		return rc;
	for (size_t i = 0; names[i] && rc == 0; i++) {
		yaml_node_t *item = scenario__node(c, n->data.sequence.items.start[i]);
		enum fault_action a;

		if (!item)
			rc = FC_USAGE;
		else if (fault_action_parse(names[i], &a) < 0 ||
			 !(allowed & FAULT_BIT(a)))
			rc = scenario__error(c, item,
					     "action '%.40s' cannot be explored%s (expected %s)",
					     names[i], where, expected);
		else if (set & FAULT_BIT(a))
			rc = scenario__error(c, item, "action '%s' is listed twice",
					     names[i]);
		else
			set |= FAULT_BIT(a);
	}
	scenario__strv_free(names);
	if (rc == 0)
		*out = set;
	return rc;
}

static int parse_actions(struct yctx *c, yaml_node_t *n, unsigned *out)
{
	return parse_action_set(c, n, FAULT_BIT(FAULT_KILL) |
				FAULT_BIT(FAULT_PAUSE) | FAULT_BIT(FAULT_FAIL) |
				FAULT_BIT(FAULT_POWER_LOSS), 4, "",
				"kill, pause, fail or power_loss", out);
}

static int parse_explore_failpoints(struct yctx *c, yaml_node_t *n,
				    struct explore_spec *e)
{
	if (scalar_equals(n, "all")) {
		e->failpoints_all = true;
		return 0;
	}
	if (n->type != YAML_SEQUENCE_NODE)
		return scenario__error(c, n,
				       "'failpoints' must be all or a list of failpoint names, got %s",
				       scenario__kind(n));
	e->failpoints_all = false;
	if (scenario__get_strv(c, n, "failpoints", 1, EXPLORE_MAX_FAILPOINTS,
			       check_failpoint, &e->failpoints) < 0)
		return FC_USAGE;
	for (size_t i = 1; e->failpoints[i]; i++)
		for (size_t j = 0; j < i; j++)
			if (strcmp(e->failpoints[i], e->failpoints[j]) == 0)
				return scenario__error(c,
						       scenario__node(c, n->data.sequence.items.start[i]),
						       "failpoint '%s' is listed twice",
						       e->failpoints[i]);
	return 0;
}

static int parse_random(struct yctx *c, yaml_node_t *n, struct explore_spec *e)
{
	yaml_node_t *v;

	if (scenario__map_check(c, n, random_keys, "random") < 0 ||
	    scenario__map_need(c, n, "schedules", "random", &v) < 0 ||
	    scenario__get_int(c, v, "schedules", 1, RANDOM_SCHEDULES_MAX,
			      &e->random_schedules) < 0)
		return FC_USAGE;
	if ((v = scenario__map_get(c, n, "seed", NULL)) &&
	    scenario__get_u64(c, v, "seed", &e->random_seed) < 0)
		return FC_USAGE;
	if ((v = scenario__map_get(c, n, "faults", NULL)) &&
	    scenario__get_int(c, v, "faults", 1, RANDOM_FAULTS_MAX, &e->max_faults) < 0)
		return FC_USAGE;
	return c->failed ? FC_USAGE : 0;
}

static int check_syscall(struct yctx *c, yaml_node_t *n, const char *s)
{
	if (!inject_seccomp_syscall_info(s, &(bool){ false }))
		return scenario__error(c, n,
				       "syscall '%.40s' cannot be intercepted (docs/syscall-faults.md lists the supported ones)",
				       s);
	return 0;
}

static int check_sys_action(struct yctx *c, yaml_node_t *n, const char *s)
{
	char rule[FAULT_RULE_MAX], msg[300];

	if (strcmp(s, "count") == 0)
		return scenario__error(c, n, "action 'count' cannot be explored (expected kill_before, kill_after, power_loss or errno:NAME)");
	/* kill_after is checked against each syscall when schedules are made */
	if (schedule_rule_make(rule, sizeof(rule), "fsync", 1, s, NULL, msg,
			       sizeof(msg)) < 0)
		return scenario__error(c, n, "%s (expected kill_before, kill_after, power_loss or errno:NAME)",
				       msg);
	return 0;
}

static int check_path_glob(struct yctx *c, yaml_node_t *n, const char *s)
{
	char msg[300];

	if (!*s || strchr(s, ';'))
		return scenario__error(c, n, "a path glob must be non-empty and hold no ';'");
	if (scenario_template_check(c->suite, s, msg, sizeof(msg)) < 0)
		return scenario__error(c, n, "%s", msg);
	return 0;
}

/* The list under key (1..max entries), or the one-entry list {dflt}. */
static int get_list_or(struct yctx *c, yaml_node_t *map, const char *key,
		       size_t max,
		       int (*check)(struct yctx *, yaml_node_t *, const char *),
		       const char *dflt, char ***out)
{
	yaml_node_t *v = scenario__map_get(c, map, key, NULL);

	if (v)
		return scenario__get_strv(c, v, key, 1, max, check, out);
	if (!(*out = calloc(2, sizeof(char *))) || !((*out)[0] = strdup(dflt)))
		return scenario__error(c, map, "out of memory");
	return 0;
}

/* explore: {syscalls: [...], actions: [...], paths: [...]} */
static int parse_explore_syscalls(struct yctx *c, yaml_node_t *n,
				  yaml_node_t *list, struct explore_spec *e)
{
	static const char *const other[] = { "failpoints", "interleavings",
					      "random", NULL };
	yaml_node_t *k = NULL;

	for (const char *const *o = other; *o; o++)
		if (scenario__map_get(c, n, *o, &k))
			return scenario__error(c, k,
					       "'%s' does not apply to a syscall exploration (write a separate scenario)",
					       *o);
	if (scenario__get_strv(c, list, "syscalls", 1, 32, check_syscall,
			       &e->syscalls) < 0)
		return FC_USAGE;
	if (get_list_or(c, n, "actions", 8, check_sys_action, "kill_before",
			&e->sys_actions) < 0 ||
	    get_list_or(c, n, "paths", 16, check_path_glob, "{dir}/*",
			&e->sys_paths) < 0)
		return FC_USAGE;
	return c->failed ? FC_USAGE : 0;
}

/* actions of a proxy exploration: cut_after_commit, hold_commit. */
static int parse_proxy_actions(struct yctx *c, yaml_node_t *n, unsigned *out)
{
	return parse_action_set(c, n, FAULT_BIT(FAULT_CUT_AFTER_COMMIT) |
				FAULT_BIT(FAULT_HOLD_COMMIT), 2, " on a proxy",
				"cut_after_commit or hold_commit", out);
}

/* explore: {proxy: NAME, actions: [cut_after_commit, hold_commit]} */
static int parse_explore_proxy(struct yctx *c, yaml_node_t *n,
			       yaml_node_t *name, struct explore_spec *e)
{
	static const char *const other[] = { "failpoints", "interleavings",
					      "random", "syscalls", "paths",
					      NULL };
	yaml_node_t *k = NULL, *v;

	for (const char *const *o = other; *o; o++)
		if (scenario__map_get(c, n, *o, &k))
			return scenario__error(c, k,
					       "'%s' does not apply to a proxy exploration (write a separate scenario)",
					       *o);
	if (scenario__get_name(c, name, "proxy", e->proxy) < 0)
		return FC_USAGE;
	if (!suite_proxy(c->suite, e->proxy))
		return scenario__error(c, name, "'%s' names no proxy of the suite (see 'proxies')",
				       e->proxy);
	e->proxy_actions = FAULT_BIT(FAULT_CUT_AFTER_COMMIT);
	if ((v = scenario__map_get(c, n, "actions", NULL)) &&
	    parse_proxy_actions(c, v, &e->proxy_actions) < 0)
		return FC_USAGE;
	return c->failed ? FC_USAGE : 0;
}

static int parse_explore(struct yctx *c, yaml_node_t *n, struct scenario *sc)
{
	struct explore_spec *e;
	yaml_node_t *v, *k = NULL;

	if (scenario__map_check(c, n, explore_keys, "explore") < 0)
		return FC_USAGE;
	e = calloc(1, sizeof(*e));
	if (!e) {
		scenario__error(c, n, "out of memory");
		return FC_NOMEM;
	}
	sc->explore = e;
	e->failpoints_all = true;
	e->actions = FAULT_BIT(FAULT_KILL);
	e->random_seed = 1;
	e->max_faults = 3;
	if ((v = scenario__map_get(c, n, "proxy", NULL)))
		return parse_explore_proxy(c, n, v, e);
	if ((v = scenario__map_get(c, n, "syscalls", NULL)))
		return parse_explore_syscalls(c, n, v, e);
	if ((v = scenario__map_get(c, n, "paths", &k)))
		return scenario__error(c, k, "'paths' needs 'syscalls'");
	if ((v = scenario__map_get(c, n, "failpoints", NULL)) &&
	    parse_explore_failpoints(c, v, e) < 0)
		return FC_USAGE;
	if ((v = scenario__map_get(c, n, "actions", NULL)) &&
	    parse_actions(c, v, &e->actions) < 0)
		return FC_USAGE;
	if ((v = scenario__map_get(c, n, "interleavings", NULL)) &&
	    scenario__get_bool(c, v, "interleavings", &e->interleavings) < 0)
		return FC_USAGE;
	if ((v = scenario__map_get(c, n, "random", NULL)) &&
	    parse_random(c, v, e) < 0)
		return FC_USAGE;
	return c->failed ? FC_USAGE : 0;
}

/* routes: [NAME, ...]: each a route of the suite, each once. */
static int parse_scenario_routes(struct yctx *c, yaml_node_t *n,
				 struct scenario *sc, const struct suite *s)
{
	if (scenario__get_strv(c, n, "routes", 1, SUITE_MAX_ROUTES, NULL,
			       &sc->routes) < 0)
		return FC_USAGE;
	for (size_t i = 0; sc->routes[i]; i++) {
		yaml_node_t *item = scenario__node(c,
			n->data.sequence.items.start[i]);
		bool known = false;

		for (size_t r = 0; r < s->nroutes && !known; r++)
			known = strcmp(s->routes[r].name, sc->routes[i]) == 0;
		if (!known)
			return scenario__error(c, item, "scenario '%s' names "
					       "route '%s', which the suite does "
					       "not define", sc->name,
					       sc->routes[i]);
		for (size_t j = 0; j < i; j++)
			if (strcmp(sc->routes[i], sc->routes[j]) == 0)
				return scenario__error(c, item, "route '%s' is "
						       "listed twice",
						       sc->routes[i]);
	}
	return 0;
}

static int parse_scenario(struct yctx *c, yaml_node_t *n, void *entry,
			  const struct suite *s)
{
	struct scenario *sc = entry;
	struct fault_bounds b = {
		.tries = s->orchestrator.retries + 1,
		.operations = s->workload.operations,
	};
	yaml_node_t *v, *faults, *explore, *explore_key = NULL;

	sc->line = (int)n->start_mark.line + 1;
	sc->column = (int)n->start_mark.column + 1;
	if (scenario__map_check(c, n, scenario_keys, "scenario") < 0 ||
	    scenario__map_need(c, n, "name", "scenario", &v) < 0 ||
	    scenario__get_name(c, v, "name", sc->name) < 0)
		return FC_USAGE;
	if ((v = scenario__map_get(c, n, "operations", NULL))) {
		if (scenario__get_int(c, v, "operations", 1, 1000, &sc->operations) < 0)
			return FC_USAGE;
		b.operations = sc->operations;
	}
	if ((v = scenario__map_get(c, n, "routes", NULL)) &&
	    parse_scenario_routes(c, v, sc, s) < 0)
		return FC_USAGE;
	faults = scenario__map_get(c, n, "faults", NULL);
	explore = scenario__map_get(c, n, "explore", &explore_key);
	if (c->failed)
		return FC_USAGE;
	if (faults && explore)
		return scenario__error(c, explore_key,
				       "scenario has both 'faults' and 'explore' (an explored scenario makes its own faults)");
	if (faults)
		return parse_faults(c, faults, sc, &b);
	if (explore)
		return parse_explore(c, explore, sc);
	return 0;
}

int scenario__parse_scenarios(struct yctx *c, yaml_node_t *list, struct suite *s)
{
	static const struct scenario__list scenarios = {
		"scenarios", "scenario", 1, SUITE_MAX_SCENARIOS,
		sizeof(struct scenario), offsetof(struct scenario, name),
		offsetof(struct scenario, line), parse_scenario,
	};

	return scenario__parse_list(c, list, &scenarios, s,
				    (void **)&s->scenarios, &s->nscenarios);
}
