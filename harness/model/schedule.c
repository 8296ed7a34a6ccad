/*
 * schedule.c -- the string form of a fault schedule (grammar in schedule.h).
 *
 * Invariants:
 *   1. Round trip: for every fault list in normal form (see
 *      scenario_faults.c), schedule_parse(schedule_format(f)) == f, field by
 *      field (line/column are 0 after parsing: a string has no file).
 *   2. One canonical string per schedule: format omits defaults ('#1',
 *      '/op0') and always writes a pause's '>' resume, so reports can
 *      compare schedules as strings.  Parse also takes the forms people
 *      type -- an explicit '#1', a pause without '>' (resume next), long
 *      action names -- and format(parse(s)) is their canonical form.
 *      Numbers have no leading zeros, so '/op0' and '@01' are refused.
 *   3. Fields that do not apply to an action are ignored by format and zero
 *      after parse; a value format would have to print must be valid, or
 *      format refuses (FC_USAGE) rather than write an unreplayable string.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/inject/inject_seccomp.h"
#include "harness/model/schedule.h"

#define NUMBER_MAX 1000000

static const struct {
	char letter;
	enum fault_action action;
} letters[] = {
	{ 'k', FAULT_KILL }, { 'p', FAULT_PAUSE }, { 'f', FAULT_FAIL },
	{ 'x', FAULT_LOSE_XCOM }, { 'l', FAULT_LOSE_POD },
	{ 's', FAULT_CHANGE_SOURCE }, { 'o', FAULT_RECOVER },
	{ 'd', FAULT_STOP_MEMBER }, { 'u', FAULT_START_MEMBER },
	{ 'c', FAULT_CUT_AFTER_COMMIT }, { 'h', FAULT_HOLD_COMMIT },
	{ 'r', FAULT_REFUSE }, { 'w', FAULT_DELAY },
	{ 'y', FAULT_SYSCALL }, { 'b', FAULT_POWER_LOSS },
};

/* The operator decisions of recover faults in the string form. */
static const char *const decision_words[] = {
	[DECIDE_MARK_COMMITTED] = "committed",
	[DECIDE_MARK_FAILED_PRE_COMMIT] = "failed_pre_commit",
};
#define NDECISIONS (sizeof(decision_words) / sizeof(decision_words[0]))
#define NLETTERS (sizeof(letters) / sizeof(letters[0]))

static bool member_char(char ch, bool first)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
	       (ch >= '0' && ch <= '9') ||
	       (!first && (ch == '.' || ch == '_' || ch == '-'));
}

/* A member or service name: [A-Za-z0-9][A-Za-z0-9._-]*, shorter than max. */
static bool member_valid(const char *s, size_t max)
{
	size_t len = strnlen(s, max);

	if (len == 0 || len >= max)
		return false;
	for (size_t i = 0; i < len; i++)
		if (!member_char(s[i], i == 0))
			return false;
	return true;
}

/* "=[SERVICE/]MEMBER" of a member action, "=PROXY" of a proxy action,
 * into buf. */
static int format_member(const struct fault *f, char *buf, size_t size)
{
	if (fault_is_proxy_action(f->action)) {
		if (!member_valid(f->proxy, sizeof(f->proxy)))
			return FC_USAGE;
		snprintf(buf, size, "=%s", f->proxy);
		return 0;
	}
	if (!fault_is_member_action(f->action)) {
		buf[0] = '\0';
		return 0;
	}
	if (!member_valid(f->member, sizeof(f->member)) ||
	    (f->service[0] && !member_valid(f->service, sizeof(f->service))))
		return FC_USAGE;
	snprintf(buf, size, "=%s%s%s", f->service, f->service[0] ? "/" : "",
		 f->member);
	return 0;
}

static int format_one(const struct fault *f, char *buf, size_t size)
{
	char op[24] = "", hit[24] = "", resume[FAILPOINT_NAME_MAX + 2] = "";
	char member[SCENARIO_NAME_MAX + MEMBER_NAME_MAX + 2], delay[24] = "";
	char letter = 0;

	for (size_t i = 0; i < NLETTERS; i++)
		if (letters[i].action == f->action)
			letter = letters[i].letter;
	if (!letter || f->operation < 0 || f->operation > NUMBER_MAX ||
	    format_member(f, member, sizeof(member)) < 0)
		return FC_USAGE;
	if (f->operation > 0)
		snprintf(op, sizeof(op), "/op%d", f->operation);
	if (f->action == FAULT_SYSCALL) {
		char err[8];
		if (f->attempt < 1 || f->attempt > NUMBER_MAX ||
		    strnlen(f->rule, FAULT_RULE_MAX) == FAULT_RULE_MAX ||
		    schedule_rule_check(f->rule, err, sizeof(err)))
			return FC_USAGE;
		return snprintf(buf, size, "y@%d%s=%s", f->attempt, op, f->rule);
	}
	if (f->action == FAULT_RECOVER) {
		if (f->after_attempt < 1 || f->after_attempt > NUMBER_MAX ||
		    f->decision <= DECIDE_NONE || (size_t)f->decision >= NDECISIONS)
			return FC_USAGE;
		return snprintf(buf, size, "o:%s@%d%s%s%s",
				decision_words[f->decision], f->after_attempt, op,
				f->force ? "+force" : "",
				f->wrong_target ? "+wrong_target" : "");
	}
	if (fault_is_proxy_action(f->action) && !fault_at_failpoint(f)) {
		/* during try `attempt`: c/h carry a hit, w a delay */
		bool counts = f->action == FAULT_CUT_AFTER_COMMIT ||
			      f->action == FAULT_HOLD_COMMIT;

		if (f->attempt < 1 || f->attempt > NUMBER_MAX ||
		    (counts && (f->hit < 1 || f->hit > NUMBER_MAX)) ||
		    (f->action == FAULT_DELAY &&
		     (f->delay_ms < 1 || f->delay_ms > NUMBER_MAX)))
			return FC_USAGE;
		if (counts && f->hit != 1)
			snprintf(hit, sizeof(hit), "#%d", f->hit);
		if (f->action == FAULT_DELAY)
			snprintf(delay, sizeof(delay), "*%d", f->delay_ms);
		return snprintf(buf, size, "%c@%d%s%s%s%s", letter, f->attempt,
				hit, delay, op, member);
	}
	if (!fault_at_failpoint(f)) {
		if (f->after_attempt < 1 || f->after_attempt > NUMBER_MAX)
			return FC_USAGE;
		return snprintf(buf, size, "%c@%d%s%s", letter, f->after_attempt,
				op, member);
	}
	if (!fault_failpoint_valid(f->failpoint,
				   strnlen(f->failpoint, FAILPOINT_NAME_MAX)) ||
	    f->attempt < 1 || f->attempt > NUMBER_MAX || f->hit < 1 ||
	    f->hit > NUMBER_MAX)
		return FC_USAGE;
	if (f->hit != 1)
		snprintf(hit, sizeof(hit), "#%d", f->hit);
	if (f->action == FAULT_PAUSE) {
		switch (f->resume) {
		case RESUME_AFTER_NEXT_ATTEMPT:
			strcpy(resume, ">next");
			break;
		case RESUME_NEVER:
			strcpy(resume, ">never");
			break;
		case RESUME_AT_NEXT_FAILPOINT:
			if (!fault_failpoint_valid(f->resume_at,
						   strnlen(f->resume_at, FAILPOINT_NAME_MAX)))
				return FC_USAGE;
			snprintf(resume, sizeof(resume), ">%s", f->resume_at);
			break;
		default:
			return FC_USAGE;
		}
	}
	return snprintf(buf, size, "%c:%s@%d%s%s%s%s", letter, f->failpoint,
			f->attempt, hit, op, resume, member);
}

int schedule_format(const struct fault *faults, size_t n, char *out,
		    size_t outlen)
{
	size_t used = 0;

	if (outlen == 0)
		return FC_USAGE;
	if (n == 0) {
		if (outlen < sizeof("clean"))
			return FC_USAGE;
		strcpy(out, "clean");
		return 0;
	}
	for (size_t i = 0; i < n; i++) {
		int len;

		if (i > 0) {
			if (used + 1 >= outlen)
				goto too_long;
			out[used++] = ';';
		}
		len = format_one(&faults[i], out + used, outlen - used);
		if (len < 0) {
			out[0] = '\0';
			return FC_USAGE;
		}
		if ((size_t)len >= outlen - used)
			goto too_long;
		used += (size_t)len;
	}
	out[used] = '\0';
	return 0;
too_long:
	out[0] = '\0';
	return FC_USAGE;
}

/* ---- parsing -------------------------------------------------------- */

struct cursor {
	const char *s;     /* the whole string, for messages */
	const char *p;
	char *err;
	size_t errlen;
};

static int fail(struct cursor *c, const char *expected)
{
	size_t pos = (size_t)(c->p - c->s) + 1;

	if (*c->p)
		snprintf(c->err, c->errlen,
			 "bad schedule '%.80s': unexpected '%c' at position %zu, expected %s",
			 c->s, *c->p, pos, expected);
	else
		snprintf(c->err, c->errlen,
			 "bad schedule '%.80s': ends at position %zu, expected %s",
			 c->s, pos, expected);
	return FC_USAGE;
}

static bool name_char(char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
	       (ch >= '0' && ch <= '9') || ch == '_';
}

static int parse_number(struct cursor *c, const char *what, int *out)
{
	const char *start = c->p;
	long v = 0;

	if (*c->p < '0' || *c->p > '9')
		return fail(c, what);
	if (*c->p == '0')
		return fail(c, "a number from 1 (no leading zeros)");
	while (*c->p >= '0' && *c->p <= '9') {
		v = v * 10 + (*c->p - '0');
		if (v > NUMBER_MAX) {
			c->p = start;
			return fail(c, "a number up to 1000000");
		}
		c->p++;
	}
	*out = (int)v;
	return 0;
}

static int parse_name(struct cursor *c, char buf[FAILPOINT_NAME_MAX])
{
	const char *start = c->p;
	size_t len;

	while (name_char(*c->p))
		c->p++;
	len = (size_t)(c->p - start);
	if (!fault_failpoint_valid(start, len)) {
		c->p = start;
		return fail(c, "a failpoint name (1 to 63 of [A-Za-z0-9_], not next/never/clean/all)");
	}
	memcpy(buf, start, len);
	buf[len] = '\0';
	return 0;
}

static int parse_action(struct cursor *c, enum fault_action *out)
{
	size_t len = strcspn(c->p, ":@;");
	char word[24];

	if (len == 1) {
		for (size_t i = 0; i < NLETTERS; i++) {
			if (letters[i].letter == *c->p) {
				*out = letters[i].action;
				c->p++;
				return 0;
			}
		}
	} else if (len > 1 && len < sizeof(word)) {
		/* The long names are accepted for hand-written schedules. */
		memcpy(word, c->p, len);
		word[len] = '\0';
		if (fault_action_parse(word, out) == 0) {
			c->p += len;
			return 0;
		}
	}
	return fail(c, "an action (k, p, f, x, l, s, o, d, u, c, h, r, w, y)");
}

static int parse_decision(struct cursor *c, struct fault *f)
{
	size_t len = 0;

	while (name_char(c->p[len]))
		len++;
	for (size_t d = 1; d < NDECISIONS; d++) {
		if (strlen(decision_words[d]) == len &&
		    strncmp(c->p, decision_words[d], len) == 0) {
			f->decision = (enum operator_decision)d;
			c->p += len;
			return 0;
		}
	}
	return fail(c, "an operator decision (committed, failed_pre_commit)");
}

/* "+force" then "+wrong_target", each optional, in that order. */
static void parse_recover_flags(struct cursor *c, struct fault *f)
{
	if (strncmp(c->p, "+force", 6) == 0 && !name_char(c->p[6])) {
		f->force = true;
		c->p += 6;
	}
	if (strncmp(c->p, "+wrong_target", 13) == 0 && !name_char(c->p[13])) {
		f->wrong_target = true;
		c->p += 13;
	}
}

static int parse_resume(struct cursor *c, struct fault *f)
{
	if (strncmp(c->p, "next", 4) == 0 && !name_char(c->p[4])) {
		f->resume = RESUME_AFTER_NEXT_ATTEMPT;
		c->p += 4;
		return 0;
	}
	if (strncmp(c->p, "never", 5) == 0 && !name_char(c->p[5])) {
		f->resume = RESUME_NEVER;
		c->p += 5;
		return 0;
	}
	f->resume = RESUME_AT_NEXT_FAILPOINT;
	return parse_name(c, f->resume_at);
}

/* One name of "=[SERVICE/]MEMBER" into buf (size bytes). */
static int parse_member_name(struct cursor *c, char *buf, size_t size)
{
	const char *start = c->p;
	size_t len;

	while (member_char(*c->p, c->p == start))
		c->p++;
	len = (size_t)(c->p - start);
	if (len == 0 || len >= size) {
		c->p = start;
		return fail(c, "a member name ([A-Za-z0-9][A-Za-z0-9._-]*)");
	}
	memcpy(buf, start, len);
	buf[len] = '\0';
	return 0;
}

static int parse_member(struct cursor *c, struct fault *f)
{
	char first[SCENARIO_NAME_MAX];

	if (*c->p != '=')
		return fail(c, "'=' and a member");
	c->p++;
	if (parse_member_name(c, first, sizeof(first)) < 0)
		return FC_USAGE;
	if (*c->p != '/') {
		if (strlen(first) >= sizeof(f->member)) {
			c->p -= strlen(first);
			return fail(c, "a member name of at most 31 characters");
		}
		memcpy(f->member, first, strlen(first) + 1);
		return 0;
	}
	c->p++;
	memcpy(f->service, first, strlen(first) + 1);
	return parse_member_name(c, f->member, sizeof(f->member));
}

/* "@ATTEMPT[#HIT]" of cut/hold, "@ATTEMPT*MS" of delay, "@ATTEMPT" of
 * refuse: proxy actions during a try. */
static int parse_during(struct cursor *c, struct fault *f)
{
	if (*c->p != '@')
		return fail(c, "'@' and an attempt");
	c->p++;
	if (parse_number(c, "an attempt number", &f->attempt) < 0)
		return FC_USAGE;
	if (f->action == FAULT_CUT_AFTER_COMMIT || f->action == FAULT_HOLD_COMMIT) {
		f->hit = 1;
		if (*c->p == '#') {
			c->p++;
			return parse_number(c, "a hit number", &f->hit);
		}
	} else if (f->action == FAULT_DELAY) {
		if (*c->p != '*')
			return fail(c, "'*' and a delay in milliseconds");
		c->p++;
		return parse_number(c, "a delay in milliseconds", &f->delay_ms);
	}
	return 0;
}

/* 'y' '@' ATTEMPT ['/op' N] '=' RULE */
static int parse_syscall_fault(struct cursor *c, struct fault *f)
{
	size_t len;
	char why[256];

	if (*c->p != '@')
		return fail(c, "'@' and an attempt");
	c->p++;
	if (parse_number(c, "an attempt number", &f->attempt) < 0)
		return FC_USAGE;
	if (strncmp(c->p, "/op", 3) == 0) {
		c->p += 3;
		if (parse_number(c, "an operation number", &f->operation) < 0)
			return FC_USAGE;
	}
	if (*c->p != '=')
		return fail(c, "'/op' or '=' and a syscall rule");
	c->p++;
	len = strcspn(c->p, ";");
	if (len >= FAULT_RULE_MAX)
		return fail(c, "a syscall rule of at most 255 characters");
	memcpy(f->rule, c->p, len);
	f->rule[len] = '\0';
	if (schedule_rule_check(f->rule, why, sizeof(why)) < 0) {
		snprintf(c->err, c->errlen, "bad schedule '%.80s': at position %zu: %s",
			 c->s, (size_t)(c->p - c->s) + 1, why);
		return FC_USAGE;
	}
	c->p += len;
	return 0;
}

static int parse_fault(struct cursor *c, struct fault *f)
{
	bool at;

	memset(f, 0, sizeof(*f));
	if (parse_action(c, &f->action) < 0)
		return FC_USAGE;
	if (f->action == FAULT_SYSCALL)
		return parse_syscall_fault(c, f);
	if (f->action == FAULT_RECOVER) {
		if (*c->p != ':')
			return fail(c, "':' and an operator decision");
		c->p++;
		if (parse_decision(c, f) < 0)
			return FC_USAGE;
	}
	at = fault_takes_either_form(f->action) ? *c->p == ':' :
	     fault_is_point_action(f->action);
	if (at) {
		if (*c->p != ':')
			return fail(c, "':' and a failpoint");
		c->p++;
		if (parse_name(c, f->failpoint) < 0)
			return FC_USAGE;
		if (*c->p != '@')
			return fail(c, "'@' and an attempt");
		c->p++;
		if (parse_number(c, "an attempt number", &f->attempt) < 0)
			return FC_USAGE;
		f->hit = 1;
		if (*c->p == '#') {
			c->p++;
			if (parse_number(c, "a hit number", &f->hit) < 0)
				return FC_USAGE;
		}
	} else if (fault_is_proxy_action(f->action)) {
		if (parse_during(c, f) < 0)
			return FC_USAGE;
	} else {
		if (*c->p != '@')
			return fail(c, "'@' and the attempt it follows");
		c->p++;
		if (parse_number(c, "an attempt number", &f->after_attempt) < 0)
			return FC_USAGE;
	}
	if (strncmp(c->p, "/op", 3) == 0) {
		c->p += 3;
		if (parse_number(c, "an operation number", &f->operation) < 0)
			return FC_USAGE;
	}
	if (f->action == FAULT_PAUSE && *c->p == '>') {
		c->p++;
		if (parse_resume(c, f) < 0)
			return FC_USAGE;
	}
	if (f->action == FAULT_RECOVER)
		parse_recover_flags(c, f);
	if (fault_is_proxy_action(f->action)) {
		if (*c->p != '=')
			return fail(c, "'=' and a proxy");
		c->p++;
		return parse_member_name(c, f->proxy, sizeof(f->proxy)) < 0 ? FC_USAGE :
		       *c->p == ';' || *c->p == '\0' ? 0 : fail(c, "';' or the end");
	}
	if (fault_is_member_action(f->action))
		return parse_member(c, f) < 0 ? FC_USAGE :
		       *c->p == ';' || *c->p == '\0' ? 0 : fail(c, "';' or the end");
	if (*c->p != ';' && *c->p != '\0')
		return fail(c, f->action == FAULT_PAUSE ? "'#', '/op', '>', ';' or the end"
			    : at ? "'#', '/op', ';' or the end"
			    : f->action == FAULT_RECOVER ?
			    "'/op', '+force', '+wrong_target', ';' or the end"
			    : "'/op', ';' or the end");
	return 0;
}

int schedule_parse(const char *s, struct fault **faults, size_t *n,
		   char *err, size_t errlen)
{
	struct cursor c = { .s = s, .p = s, .err = err, .errlen = errlen };
	struct fault *v;
	size_t count = 1, len = strlen(s);

	*faults = NULL;
	*n = 0;
	if (len >= SCHEDULE_STR_MAX) {
		snprintf(err, errlen, "bad schedule: longer than %d characters",
			 SCHEDULE_STR_MAX - 1);
		return FC_USAGE;
	}
	if (strcmp(s, "clean") == 0)
		return 0;
	if (len == 0)
		return fail(&c, "a fault or 'clean'");
	for (const char *p = s; *p; p++)
		count += *p == ';';
	v = calloc(count, sizeof(*v));
	if (!v) {
		snprintf(err, errlen, "out of memory parsing a schedule");
		return FC_NOMEM;
	}
	for (size_t i = 0; i < count; i++) {
		if (i > 0)
			c.p++; /* the ';' parse_fault stopped at */
		if (parse_fault(&c, &v[i]) < 0) {
			free(v);
			return FC_USAGE;
		}
	}
	*faults = v;
	*n = count;
	return 0;
}

/* ---- syscall rules -------------------------------------------------- */

int schedule_rule_check(const char *rule, char *err, size_t errlen)
{
	struct inject_seccomp_plan *p;
	const char *glob;
	int rc;

	if (strnlen(rule, FAULT_RULE_MAX) >= FAULT_RULE_MAX) {
		snprintf(err, errlen, "syscall rule longer than %d characters",
			 FAULT_RULE_MAX - 1);
		return FC_USAGE;
	}
	if (strchr(rule, ';')) {
		snprintf(err, errlen, "syscall rule '%s' contains ';'", rule);
		return FC_USAGE;
	}
	glob = strchr(rule, '@');
	if (glob && scenario_template_check(NULL, glob + 1, err, errlen) < 0)
		return FC_USAGE;
	if (inject_seccomp_plan_new(&p) < 0) {
		snprintf(err, errlen, "out of memory");
		return FC_NOMEM;
	}
	rc = inject_seccomp_plan_add_rule(p, rule);
	if (rc < 0)
		snprintf(err, errlen, "%s", inject_seccomp_plan_errmsg(p));
	inject_seccomp_plan_free(p);
	return rc < 0 ? FC_USAGE : 0;
}

int schedule_rule_make(char *out, size_t outlen, const char *syscall,
		       unsigned long hit, const char *action, const char *glob,
		       char *err, size_t errlen)
{
	char hitbuf[24] = "";
	int n;

	if (hit)
		snprintf(hitbuf, sizeof(hitbuf), "#%lu", hit);
	n = snprintf(out, outlen, "%s%s:%s%s%s", syscall, hitbuf, action,
		     glob && *glob ? "@" : "", glob ? glob : "");
	if (n < 0 || (size_t)n >= outlen) {
		snprintf(err, errlen, "syscall rule for '%s' is too long", syscall);
		if (outlen)
			out[0] = '\0';
		return FC_USAGE;
	}
	return schedule_rule_check(out, err, errlen);
}
