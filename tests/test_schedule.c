/*
 * test_schedule.c -- the string form of fault schedules (harness/model/schedule.c).
 *
 * The property that matters: a schedule printed in a report replays as the
 * same faults.  Checked on a table of known strings and on many generated
 * fault lists; then the strings people type that must be refused, each at a
 * known position.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/model/schedule.h"

static bool fault_equal(const struct fault *a, const struct fault *b)
{
	return a->action == b->action && a->attempt == b->attempt &&
	       a->after_attempt == b->after_attempt &&
	       strcmp(a->failpoint, b->failpoint) == 0 && a->hit == b->hit &&
	       a->operation == b->operation && a->resume == b->resume &&
	       strcmp(a->resume_at, b->resume_at) == 0 &&
	       strcmp(a->member, b->member) == 0 &&
	       strcmp(a->service, b->service) == 0 &&
	       strcmp(a->rule, b->rule) == 0 &&
	       a->decision == b->decision && a->force == b->force &&
	       a->wrong_target == b->wrong_target &&
	       strcmp(a->proxy, b->proxy) == 0 && a->delay_ms == b->delay_ms;
}

static struct fault member(struct fault f, const char *service, const char *m)
{
	snprintf(f.service, sizeof(f.service), "%s", service);
	snprintf(f.member, sizeof(f.member), "%s", m);
	return f;
}

static struct fault at_fp(enum fault_action a, const char *fp, int attempt,
			  int hit, int op)
{
	struct fault f = { .action = a, .attempt = attempt, .hit = hit,
			   .operation = op };

	snprintf(f.failpoint, sizeof(f.failpoint), "%s", fp);
	return f;
}

static struct fault between(enum fault_action a, int after, int op)
{
	return (struct fault){ .action = a, .after_attempt = after, .operation = op };
}

static struct fault operator(enum operator_decision d, int after, int op,
			     bool force, bool wrong_target)
{
	return (struct fault){ .action = FAULT_RECOVER, .after_attempt = after,
			       .operation = op, .decision = d, .force = force,
			       .wrong_target = wrong_target };
}

/* A proxy fault during try `attempt` (hit for cut/hold, ms for delay). */
static struct fault proxied(struct fault f, const char *proxy, int ms)
{
	snprintf(f.proxy, sizeof(f.proxy), "%s", proxy);
	f.delay_ms = ms;
	return f;
}

static struct fault during(enum fault_action a, int attempt, int hit, int op)
{
	return (struct fault){ .action = a, .attempt = attempt, .hit = hit,
			       .operation = op };
}

/* Known faults and their one canonical string. */
static void test_known_strings(void **state)
{
	struct fault resume_at = at_fp(FAULT_PAUSE, "after_prepared", 1, 1, 0);
	struct fault never = at_fp(FAULT_PAUSE, "a", 1, 1, 0);
	struct {
		struct fault f;
		const char *s;
	} table[] = {
		{ at_fp(FAULT_KILL, "after_target_commit", 1, 1, 0), "k:after_target_commit@1" },
		{ at_fp(FAULT_PAUSE, "after_committing", 1, 1, 0), "p:after_committing@1>next" },
		{ at_fp(FAULT_FAIL, "before_target_commit", 2, 3, 2), "f:before_target_commit@2#3/op2" },
		{ between(FAULT_LOSE_XCOM, 1, 0), "x@1" },
		{ between(FAULT_LOSE_POD, 2, 0), "l@2" },
		{ between(FAULT_CHANGE_SOURCE, 1, 1), "s@1/op1" },
		{ resume_at, "p:after_prepared@1>after_reconcile_probe" },
		{ never, "p:a@1>never" },
		{ member(at_fp(FAULT_STOP_MEMBER, "after_lease", 1, 1, 0), "", "m2"),
		  "d:after_lease@1=m2" },
		{ member(between(FAULT_START_MEMBER, 2, 1), "etcd-1", "m3"),
		  "u@2/op1=etcd-1/m3" },
		{ member(at_fp(FAULT_START_MEMBER, "x", 3, 2, 0), "e.x", "m1"),
		  "u:x@3#2=e.x/m1" },
		{ operator(DECIDE_MARK_COMMITTED, 2, 0, false, false), "o:committed@2" },
		{ { .action = FAULT_SYSCALL, .attempt = 1,
		    .rule = "fdatasync#2:kill_after@{dir}/journal.db*" },
		  "y@1=fdatasync#2:kill_after@{dir}/journal.db*" },
		{ { .action = FAULT_SYSCALL, .attempt = 2, .operation = 1,
		    .rule = "write:errno:EIO@/x:y#z@w" },
		  "y@2/op1=write:errno:EIO@/x:y#z@w" },
		{ operator(DECIDE_MARK_FAILED_PRE_COMMIT, 3, 1, true, false),
		  "o:failed_pre_commit@3/op1+force" },
		{ operator(DECIDE_MARK_FAILED_PRE_COMMIT, 2, 0, true, true),
		  "o:failed_pre_commit@2+force+wrong_target" },
		{ operator(DECIDE_MARK_COMMITTED, 1, 2, false, true),
		  "o:committed@1/op2+wrong_target" },
		{ proxied(during(FAULT_CUT_AFTER_COMMIT, 1, 1, 0), "pg", 0), "c@1=pg" },
		{ proxied(during(FAULT_CUT_AFTER_COMMIT, 2, 3, 1), "pg-t", 0), "c@2#3/op1=pg-t" },
		{ proxied(during(FAULT_HOLD_COMMIT, 1, 2, 0), "pg", 0), "h@1#2=pg" },
		{ proxied(during(FAULT_REFUSE, 2, 0, 0), "pgj", 0), "r@2=pgj" },
		{ proxied(at_fp(FAULT_REFUSE, "after_claim", 2, 1, 0), "pgj", 0),
		  "r:after_claim@2=pgj" },
		{ proxied(during(FAULT_DELAY, 1, 0, 2), "p.x", 50), "w@1*50/op2=p.x" },
		{ between(FAULT_POWER_LOSS, 1, 0), "b@1" },
		{ at_fp(FAULT_POWER_LOSS, "after_complete", 2, 1, 1), "b:after_complete@2/op1" },
	};

	table[6].f.resume = RESUME_AT_NEXT_FAILPOINT;
	strcpy(table[6].f.resume_at, "after_reconcile_probe");
	table[7].f.resume = RESUME_NEVER;
	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
		char out[SCHEDULE_STR_MAX], err[256];
		struct fault *back;
		size_t n;

		assert_int_equal(schedule_format(&table[i].f, 1, out, sizeof(out)), 0);
		assert_string_equal(out, table[i].s);
		if (schedule_parse(table[i].s, &back, &n, err, sizeof(err)) != 0)
			fail_msg("'%s': %s", table[i].s, err);
		assert_int_equal(n, 1);
		assert_true(fault_equal(&back[0], &table[i].f));
		assert_int_equal(back[0].line, 0);
		free(back);
	}
}

static void test_clean(void **state)
{
	char out[16], err[256];
	struct fault *f = (struct fault *)&f;
	size_t n = 99;

	assert_int_equal(schedule_format(NULL, 0, out, sizeof(out)), 0);
	assert_string_equal(out, "clean");
	assert_int_equal(schedule_parse("clean", &f, &n, err, sizeof(err)), 0);
	assert_int_equal(n, 0);
	assert_null(f);
}

/* Forms people type, and the canonical string each one becomes. */
static void test_accepted_forms(void **state)
{
	static const char *const pairs[][2] = {
		{ "p:after_committing@1#1>next;x@1/op2", "p:after_committing@1>next;x@1/op2" },
		{ "kill:after_intent@2", "k:after_intent@2" },
		{ "pause:x@1", "p:x@1>next" },
		{ "lose_xcom@1;lose_pod@1;change_source@2/op3", "x@1;l@1;s@2/op3" },
		{ "p:a@1>next2", "p:a@1>next2" },
		{ "k:A_1@3#1000000/op1000000", "k:A_1@3#1000000/op1000000" },
		{ "stop_member:after_lease@1#1=m2;start_member@1=e/m2",
		  "d:after_lease@1=m2;u@1=e/m2" },
		{ "recover:committed@2;x@2", "o:committed@2;x@2" },
		{ "cut_after_commit@1#1=pg;hold_commit@2=pg;refuse@3=j;delay@1*7=j",
		  "c@1=pg;h@2=pg;r@3=j;w@1*7=j" },
	};

	for (size_t i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++) {
		char out[SCHEDULE_STR_MAX], err[256];
		struct fault *f;
		size_t n;

		if (schedule_parse(pairs[i][0], &f, &n, err, sizeof(err)) != 0)
			fail_msg("'%s': %s", pairs[i][0], err);
		assert_int_equal(schedule_format(f, n, out, sizeof(out)), 0);
		assert_string_equal(out, pairs[i][1]);
		free(f);
	}
}

static uint64_t next(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static void random_name(uint64_t *rng, char *buf, size_t maxlen)
{
	static const char chars[] =
		"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_";
	size_t len = 1 + next(rng) % maxlen;

	for (size_t i = 0; i < len; i++)
		buf[i] = chars[next(rng) % (sizeof(chars) - 1)];
	buf[len] = '\0';
	if (strcmp(buf, "next") == 0 || strcmp(buf, "never") == 0 ||
	    strcmp(buf, "clean") == 0 || strcmp(buf, "all") == 0)
		strcpy(buf, "fp");
}

/* A random fault in the normal form the suite loader produces. */
static struct fault random_fault(uint64_t *rng)
{
	static const int numbers[] = { 1, 2, 3, 9, 10, 21, 999, 1000000 };
	struct fault f = { .action = (enum fault_action)(next(rng) % FAULT_ACTION_COUNT) };

	bool member_at = false;

	if (next(rng) % 2)
		f.operation = numbers[next(rng) % 8];
	if (fault_is_member_action(f.action)) {
		static const char *const services[] = { "", "etcd", "e.t-c_d", "9" };
		snprintf(f.service, sizeof(f.service), "%s", services[next(rng) % 4]);
		snprintf(f.member, sizeof(f.member), "m%d", (int)(next(rng) % 3) + 1);
		member_at = next(rng) % 2;
	}
	if (fault_is_proxy_action(f.action)) {
		static const char *const proxies[] = { "pg", "p.g-1_x", "9" };

		snprintf(f.proxy, sizeof(f.proxy), "%s", proxies[next(rng) % 3]);
		member_at = f.action == FAULT_REFUSE && next(rng) % 2;
		if (!member_at) {
			f.attempt = numbers[next(rng) % 8];
			if (f.action == FAULT_CUT_AFTER_COMMIT ||
			    f.action == FAULT_HOLD_COMMIT)
				f.hit = numbers[next(rng) % 8];
			if (f.action == FAULT_DELAY)
				f.delay_ms = numbers[next(rng) % 8];
			return f;
		}
	}
	/* power_loss takes either form too: at a failpoint or once a try ended */
	if (f.action == FAULT_POWER_LOSS && next(rng) % 2) {
		f.after_attempt = numbers[next(rng) % 8];
	} else if (fault_is_point_action(f.action) || member_at) {
		random_name(rng, f.failpoint, FAILPOINT_NAME_MAX - 1);
		f.attempt = numbers[next(rng) % 8];
		f.hit = next(rng) % 2 ? 1 : numbers[next(rng) % 8];
		if (f.action == FAULT_PAUSE) {
			f.resume = (enum fault_resume)(next(rng) % 3);
			if (f.resume == RESUME_AT_NEXT_FAILPOINT)
				random_name(rng, f.resume_at, 12);
		}
	} else if (f.action == FAULT_SYSCALL) {
		static const char *const rules[] = {
			"fsync#2:kill_before@{dir}/journal.db*",
			"fdatasync:errno:EIO", "write#1000000:kill_after@/a:b#c@d",
			"pwrite64#3:errno:ENOSPC@{dir}/t/*",
			"fdatasync#3:power_loss@{dir}/t.db-wal",
		};
		f.attempt = numbers[next(rng) % 8];
		strcpy(f.rule, rules[next(rng) % 5]);
	} else {
		f.after_attempt = numbers[next(rng) % 8];
	}
	if (f.action == FAULT_RECOVER) {
		f.decision = next(rng) % 2 ? DECIDE_MARK_COMMITTED :
			     DECIDE_MARK_FAILED_PRE_COMMIT;
		f.force = next(rng) % 2;
		f.wrong_target = next(rng) % 2;
	}
	return f;
}

static void test_round_trip_property(void **state)
{
	uint64_t rng = 42;
	int checked = 0, too_long = 0;

	for (int round = 0; round < 20000; round++) {
		struct fault in[40], *back;
		size_t n = next(&rng) % 40, got;
		char s[SCHEDULE_STR_MAX], again[SCHEDULE_STR_MAX], err[256];

		for (size_t i = 0; i < n; i++)
			in[i] = random_fault(&rng);
		if (schedule_format(in, n, s, sizeof(s)) != 0) {
			/* Only length may refuse a normal-form list. */
			too_long++;
			assert_string_equal(s, "");
			continue;
		}
		if (schedule_parse(s, &back, &got, err, sizeof(err)) != 0)
			fail_msg("'%s': %s", s, err);
		assert_int_equal(got, n);
		for (size_t i = 0; i < n; i++)
			if (!fault_equal(&in[i], &back[i]))
				fail_msg("fault %zu changed through '%s'", i, s);
		assert_int_equal(schedule_format(back, got, again, sizeof(again)), 0);
		assert_string_equal(s, again);
		free(back);
		checked++;
	}
	assert_true(checked > 10000);
	assert_true(too_long > 0); /* the generator reaches the length limit */
}

static void test_bad_strings(void **state)
{
	static const struct {
		const char *s;
		const char *want;
	} table[] = {
		{ "", "ends at position 1" },
		{ "k", "ends at position 2, expected ':'" },
		{ "k:", "ends at position 3, expected a failpoint name" },
		{ "k:@1", "unexpected '@' at position 3" },
		{ "k:a", "ends at position 4, expected '@'" },
		{ "k:a@", "ends at position 5, expected an attempt number" },
		{ "k:a@0", "unexpected '0' at position 5" },
		{ "k:a@01", "unexpected '0' at position 5" },
		{ "k:a@1;", "ends at position 7, expected an action" },
		{ ";k:a@1", "unexpected ';' at position 1, expected an action" },
		{ "k:a@1#0", "unexpected '0' at position 7" },
		{ "k:a@1/op0", "unexpected '0' at position 9" },
		{ "k:a@1>next", "unexpected '>' at position 6" },
		{ "x:a@1", "unexpected ':' at position 2" },
		{ "x@1#2", "unexpected '#' at position 4" },
		{ "z:a@1", "unexpected 'z' at position 1" },
		{ "k:a b@1", "unexpected ' ' at position 4" },
		{ "k:next@1", "unexpected 'n' at position 3, expected a failpoint name" },
		{ "k:a@1000001", "position 5, expected a number up to 1000000" },
		{ "clean;k:a@1", "unexpected 'c' at position 1" },
		{ "k:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa@1",
		  "unexpected 'a' at position 3" },
		{ "p:a@1>", "ends at position 7, expected a failpoint name" },
		{ "k:a@1#2#3", "unexpected '#' at position 8" },
		{ "k:a@99999999999999999999", "position 5, expected a number up to" },
		{ "y@1", "ends at position 4, expected '/op' or '='" },
		{ "y:fsync@1", "unexpected ':' at position 2, expected '@'" },
		{ "y@1=", "at position 5: " },
		{ "y@1=fsync:boom", "at position 5: unknown action 'boom'" },
		{ "y@1=nosuch:kill_before", "at position 5: " },
		{ "y@1=openat:kill_after", "kill_after is not supported" },
		{ "y@1=fsync:kill_before@{nope}", "unknown placeholder '{nope}'" },
		{ "d:a@1", "ends at position 6, expected '=' and a member" },
		{ "d@1", "ends at position 4, expected '=' and a member" },
		{ "u@1=", "ends at position 5, expected a member name" },
		{ "u@1=e/", "ends at position 7, expected a member name" },
		{ "u@1=m2x y", "unexpected ' ' at position 8, expected ';' or the end" },
		{ "u@1=-m", "unexpected '-' at position 5, expected a member name" },
		{ "k:a@1=m2", "unexpected '=' at position 6" },
		{ "c@1", "ends at position 4, expected '=' and a proxy" },
		{ "c:a@1=pg", "unexpected ':' at position 2, expected '@' and an attempt" },
		{ "w@1=pg", "unexpected '=' at position 4, expected '*' and a delay" },
		{ "w@1*0=pg", "position 5, expected a number from 1" },
		{ "r@1#2=pg", "unexpected '#' at position 4, expected '=' and a proxy" },
		{ "h@1=", "ends at position 5, expected a member name" },
		{ "u@1=aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
		  "position 5, expected a member name of at most 31" },
		{ "o@2", "unexpected '@' at position 2, expected ':' and an operator decision" },
		{ "o:commit@2", "position 3, expected an operator decision (committed, failed_pre_commit)" },
		{ "o:committed", "ends at position 12, expected '@'" },
		{ "o:committed@2+wrong_target+force",
		  "unexpected '+' at position 27, expected '/op', '+force', '+wrong_target', ';' or the end" },
		{ "o:committed@2#1", "unexpected '#' at position 14" },
	};

	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
		struct fault *f = (struct fault *)&f;
		size_t n = 99;
		char err[512];

		assert_int_equal(schedule_parse(table[i].s, &f, &n, err, sizeof(err)),
				 FC_USAGE);
		assert_null(f);
		assert_int_equal(n, 0);
		if (!strstr(err, table[i].want))
			fail_msg("'%s': want '%s', got '%s'", table[i].s, table[i].want, err);
	}
}

static void test_too_long_input(void **state)
{
	char s[SCHEDULE_STR_MAX + 8], err[256];
	struct fault *f;
	size_t n;

	memset(s, 'x', sizeof(s) - 1);
	s[sizeof(s) - 1] = '\0';
	assert_int_equal(schedule_parse(s, &f, &n, err, sizeof(err)), FC_USAGE);
	assert_non_null(strstr(err, "longer than 1023"));
}

/* format refuses what it could not replay, and what does not fit. */
static void test_format_refuses(void **state)
{
	struct fault ok = at_fp(FAULT_KILL, "after_intent", 1, 1, 0);
	struct fault bad[] = {
		at_fp(FAULT_KILL, "", 1, 1, 0),
		at_fp(FAULT_KILL, "has space", 1, 1, 0),
		at_fp(FAULT_KILL, "next", 1, 1, 0),
		at_fp(FAULT_KILL, "a", 0, 1, 0),
		at_fp(FAULT_KILL, "a", 1, 0, 0),
		at_fp(FAULT_KILL, "a", 1, 1, -1),
		between(FAULT_LOSE_XCOM, 0, 0),
		at_fp(FAULT_ACTION_COUNT, "a", 1, 1, 0),
		{ .action = FAULT_SYSCALL, .attempt = 1, .rule = "fsync:kill_before@a;b" },
		{ .action = FAULT_SYSCALL, .attempt = 1, .rule = "openat:kill_after" },
		{ .action = FAULT_SYSCALL, .attempt = 0, .rule = "fsync:kill_before" },
		{ .action = FAULT_SYSCALL, .attempt = 1, .rule = "" },
	};
	struct fault pause = at_fp(FAULT_PAUSE, "a", 1, 1, 0);
	struct fault many[200];
	char out[SCHEDULE_STR_MAX];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		strcpy(out, "junk");
		assert_int_equal(schedule_format(&bad[i], 1, out, sizeof(out)), FC_USAGE);
		assert_string_equal(out, "");
	}
	pause.resume = RESUME_AT_NEXT_FAILPOINT; /* with an empty resume_at */
	assert_int_equal(schedule_format(&pause, 1, out, sizeof(out)), FC_USAGE);
	/* Fits exactly / one byte short. */
	assert_int_equal(schedule_format(&ok, 1, out, strlen("k:after_intent@1") + 1), 0);
	assert_int_equal(schedule_format(&ok, 1, out, strlen("k:after_intent@1")), FC_USAGE);
	assert_int_equal(schedule_format(NULL, 0, out, 5), FC_USAGE);
	for (size_t i = 0; i < 200; i++)
		many[i] = ok;
	assert_int_equal(schedule_format(many, 200, out, sizeof(out)), FC_USAGE);
	assert_int_equal(schedule_format(many, 50, out, sizeof(out)), 0);
}

/* ---- schedule_check.c: does a replayed string name what exists ---- */

static const char check_suite_yaml[] =
	"version: 1\nsuite: s\n"
	"services:\n  - {name: etcd, kind: etcd, members: 3}\n"
	"proxies:\n  - {name: pgt, upstream: '127.0.0.1:1'}\n"
	"routes:\n  - {name: r, command: [p], journal: 'sqlite:{dir}/j',"
	" target: 'sqlite:{dir}/t', observe: {sql: 'SELECT 1, 1'}}\n"
	"workload: {operations: 2}\norchestrator: {retries: 1}\n"
	"scenarios:\n  - name: fixed\n  - name: three\n    operations: 3\n"
	"  - name: explored\n    explore: {failpoints: all}\n";

/* schedule_check_suite() on one string: 0, or the message must hold want. */
static void check_suite(const struct suite *s, size_t sc, const char *str,
			const char *want)
{
	struct fault *f = NULL;
	size_t n = 0;
	char err[512] = "";
	int rc;

	assert_int_equal(schedule_parse(str, &f, &n, err, sizeof(err)), 0);
	rc = schedule_check_suite(s, &s->scenarios[sc], f, n, err, sizeof(err));
	free(f);
	if (!want) {
		if (rc)
			fail_msg("'%s' refused: %s", str, err);
		return;
	}
	assert_int_equal(rc, FC_USAGE);
	if (!strstr(err, want))
		fail_msg("'%s': want '%s', got '%s'", str, want, err);
}

static void test_check_suite(void **state)
{
	struct suite *s = NULL;
	char err[512];

	assert_int_equal(suite_load_buffer("t.yaml", check_suite_yaml,
					   strlen(check_suite_yaml), &s, err,
					   sizeof(err)), 0);
	/* the workload's 2 operations, 2 tries */
	check_suite(s, 0, "k:a@1/op2;x@2/op1;k:a@2", NULL);
	check_suite(s, 0, "k:a@1/op3", "operation 3 does not exist (the scenario runs 2 operations)");
	check_suite(s, 0, "k:a@1/op3", "fault 'k:a@1/op3' of the schedule cannot fire in scenario 'fixed'");
	check_suite(s, 0, "k:a@3", "try 3 is beyond the last try (retries: 1 gives 2 tries)");
	check_suite(s, 0, "x@3", "after try 3 is beyond the last try");
	check_suite(s, 0, "y@3=fsync:kill_before", "try 3 is beyond");
	/* a scenario's own operations; an exploration runs 1 */
	check_suite(s, 1, "k:a@1/op3", NULL);
	check_suite(s, 1, "k:a@1/op4", "operation 4 does not exist (the scenario runs 3 operations)");
	check_suite(s, 2, "k:a@1/op1", NULL);
	check_suite(s, 2, "k:a@1/op2", "the scenario runs 1 operation)");
	/* members and proxies the suite has */
	check_suite(s, 0, "d:a@1=m3;u@1=etcd/m1;c@1=pgt", NULL);
	check_suite(s, 0, "d:a@1=m4", "'m4' is not a member of service 'etcd' (m1 to m3)");
	check_suite(s, 0, "u@1=other/m1", "service 'other' is not an etcd service");
	check_suite(s, 0, "c@1#2=pgx", "'pgx' names no proxy of the suite");
	check_suite(s, 0, "r:a@1=pgx", "'pgx' names no proxy");
	assert_int_equal(schedule_operations(s, &s->scenarios[0]), 2);
	assert_int_equal(schedule_operations(s, &s->scenarios[1]), 3);
	assert_int_equal(schedule_operations(s, &s->scenarios[2]), 1);
	suite_free(s);
}

/* A run's attempt: op, try, whether it ran to its end, the hits. */
static struct schedule_attempt run_of(int op, int try_no, bool to_end,
				      const char *const *hits, size_t n)
{
	return (struct schedule_attempt){ .operation = op, .try_number = try_no,
		.hits = hits, .nhits = n, .ran_to_end = to_end };
}

static int check_reached(const char *str, const bool *fired, int ops,
			 const struct schedule_attempt *a, size_t na,
			 char *err, size_t errlen)
{
	struct fault *f = NULL;
	size_t n = 0;
	int rc;

	assert_int_equal(schedule_parse(str, &f, &n, err, errlen), 0);
	rc = schedule_check_reached(f, n, fired, ops, a, na, err, errlen);
	free(f);
	return rc;
}

static void expect_missing(const char *str, const bool *fired, int ops,
			   const struct schedule_attempt *a, size_t na,
			   const char *want)
{
	char err[1024] = "";

	assert_int_equal(check_reached(str, fired, ops, a, na, err, sizeof(err)),
			 FC_USAGE);
	if (!strstr(err, want))
		fail_msg("'%s': want '%s', got '%s'", str, want, err);
}

static void expect_possible(const char *str, const bool *fired, int ops,
			    const struct schedule_attempt *a, size_t na)
{
	char err[1024] = "";

	if (check_reached(str, fired, ops, a, na, err, sizeof(err)) != 0)
		fail_msg("'%s' called missing: %s", str, err);
}

static void test_check_reached(void **state)
{
	static const char *const walk[] = { "after_intent", "after_lease",
					    "after_lease", "after_commit" };
	static const char *const cut[] = { "after_intent" };
	const bool no[4] = { false, false, false, false };
	const bool yes[1] = { true };
	struct schedule_attempt done[2] = { run_of(1, 1, true, walk, 4),
					    run_of(2, 1, true, walk, 4) };
	struct schedule_attempt killed[2] = { run_of(1, 1, false, cut, 1),
					      run_of(2, 1, true, walk, 4) };

	/* the occurrence exists, or fired: never called missing */
	expect_possible("k:after_lease@1#2", yes, 2, done, 2);
	expect_possible("k:after_lease@1#2", no, 2, done, 2);
	expect_possible("x@1;c@1#9=p", no, 2, done, 2); /* not at a failpoint */
	/* a try that ran to its end with fewer hits proves it missing */
	expect_missing("k:after_lease@1#3/op1", no, 2, done, 2,
		       "fault 'k:after_lease@1#3/op1' of the schedule names a failpoint occurrence that does not exist: "
		       "op 1 try 1 reaches 'after_lease' 2 times, not 3; it reaches after_intent, after_lease (2 times), after_commit");
	expect_missing("f:nowhere@1", no, 2, done, 2,
		       "op 1 try 1 never reaches 'nowhere'");
	expect_missing("p:after_commit@2>next", no, 2, done, 2,
		       "op 1 never reached try 2 (the task ended before it)");
	/* a try stopped by something else proves nothing */
	expect_possible("k:nowhere@1/op1", no, 2, killed, 2);
	/* every operation: missing only where it is missing in all */
	expect_possible("k:nowhere@1", no, 2, killed, 2);
	expect_missing("k:nowhere@1/op2", no, 2, killed, 2,
		       "op 2 try 1 never reaches 'nowhere'");
	expect_missing("k:nowhere@1", no, 2, done, 2, "never reaches 'nowhere'");
	/* the first missing fault is named, fired ones skipped */
	{
		const bool first_fired[2] = { true, false };

		expect_missing("k:after_intent@1;k:nowhere@1/op2", first_fired, 2,
			       done, 2, "fault 'k:nowhere@1/op2'");
	}
	/* a route that reports no failpoints at all */
	{
		struct schedule_attempt silent = run_of(1, 1, true, NULL, 0);

		expect_missing("k:after_intent@1", no, 1, &silent, 1,
			       "it reaches no failpoint at all");
	}
}

/* Which faults lose power: power_loss at a failpoint, and a syscall rule
 * whose action (not its glob) is power_loss. */
static void test_loses_power(void **state)
{
	struct fault f = { .action = FAULT_SYSCALL };
	struct {
		const char *rule;
		bool power;
	} rules[] = {
		{ "fsync:power_loss", true },
		{ "fsync#2:power_loss@{dir}/*", true },
		{ "fdatasync#3:power_loss@{dir}/a:b@c", true },
		{ "fsync#2:kill_before@{dir}/power_loss", false },
		{ "fsync:kill_before@/x:power_loss", false },
		{ "fsync:power_loss_x", false },
		{ "fsync:power_los", false },
		{ "power_loss", false },
	};
	char err[200];

	(void)state;
	for (size_t i = 0; i < sizeof(rules) / sizeof(rules[0]); i++) {
		snprintf(f.rule, sizeof(f.rule), "%s", rules[i].rule);
		if (fault_loses_power(&f) != rules[i].power)
			fail_msg("'%s': %d", rules[i].rule, !rules[i].power);
	}
	f = (struct fault){ .action = FAULT_POWER_LOSS };
	assert_true(fault_loses_power(&f));
	f.action = FAULT_KILL;
	assert_false(fault_loses_power(&f));
	/* the rule is a valid one everywhere a rule is checked */
	assert_int_equal(schedule_rule_make(f.rule, sizeof(f.rule), "fdatasync",
					    3, "power_loss", "{dir}/*", err,
					    sizeof(err)), 0);
	assert_string_equal(f.rule, "fdatasync#3:power_loss@{dir}/*");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_known_strings),
		cmocka_unit_test(test_clean),
		cmocka_unit_test(test_accepted_forms),
		cmocka_unit_test(test_round_trip_property),
		cmocka_unit_test(test_bad_strings),
		cmocka_unit_test(test_too_long_input),
		cmocka_unit_test(test_format_refuses),
		cmocka_unit_test(test_check_suite),
		cmocka_unit_test(test_check_reached),
		cmocka_unit_test(test_loses_power),
	};

	return cmocka_run_group_tests_name("schedule", tests, NULL, NULL);
}
