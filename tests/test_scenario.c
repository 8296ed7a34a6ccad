/*
 * test_scenario.c -- the suite loader (harness/model/scenario.c).
 *
 * Data-driven: every file in tests/data/scenarios/bad/ is one test case that
 * must be refused at the LINE:COLUMN its first line names (see the README
 * there); the files in good/ must load into the model checked below.  Then
 * the pieces the data cannot reach: limits against alias bombs and huge
 * inputs, template expansion, the name tables, and a small deterministic
 * mutation run over the good files (the fuzzer does the long version).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "harness/model/scenario.h"
#include "harness/model/schedule.h"
#include "journal/identity.h"

static const char *data_dir(void)
{
	const char *d = getenv("FENCECERT_TESTDATA");

	return d ? d : "tests/data/scenarios";
}

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	long size;

	assert_non_null(f);
	assert_int_equal(fseek(f, 0, SEEK_END), 0);
	size = ftell(f);
	assert_true(size >= 0);
	rewind(f);
	buf = malloc((size_t)size + 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)size, f), (size_t)size);
	buf[size] = '\0';
	fclose(f);
	*len = (size_t)size;
	return buf;
}

static struct suite *load_good(const char *name)
{
	char path[512], err[512];
	struct suite *s = NULL;
	int rc;

	snprintf(path, sizeof(path), "%s/good/%s", data_dir(), name);
	rc = suite_load(path, &s, err, sizeof(err));
	if (rc != 0)
		fail_msg("%s: %s", path, err);
	assert_non_null(s);
	return s;
}

/* ---- bad/: one test per file --------------------------------------- */

static void test_bad_case(void **state)
{
	const char *path = *state;
	char line1[512], want[600], err[1024], *text;
	struct suite *s = (struct suite *)&s; /* must come back NULL */
	int line, col, skip = 0;
	size_t len;
	FILE *f = fopen(path, "rb");

	assert_non_null(f);
	assert_non_null(fgets(line1, sizeof(line1), f));
	fclose(f);
	line1[strcspn(line1, "\n")] = '\0';
	if (sscanf(line1, "# expect: %d:%d %n", &line, &col, &skip) != 2 || !skip)
		fail_msg("%s: first line must be '# expect: LINE:COL substring'", path);
	text = line1 + skip;

	assert_int_equal(suite_load(path, &s, err, sizeof(err)), FC_USAGE);
	assert_null(s);
	snprintf(want, sizeof(want), "%s:%d:%d: ", path, line, col);
	if (strncmp(err, want, strlen(want)) != 0 || !strstr(err, text))
		fail_msg("%s\n  want: %s...%s\n  got:  %s", path, want, text, err);

	/* The same bytes through the buffer API give the same message. */
	{
		char *buf = slurp(path, &len), err2[1024];

		assert_int_equal(suite_load_buffer(path, buf, len, &s, err2,
						   sizeof(err2)), FC_USAGE);
		assert_null(s);
		assert_string_equal(err, err2);
		free(buf);
	}
}

static int ends_with(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);

	return a >= b && strcmp(s + a - b, suffix) == 0;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(((const struct CMUnitTest *)a)->name,
		      ((const struct CMUnitTest *)b)->name);
}

static int run_bad_cases(size_t *count)
{
	char dir[512];
	struct CMUnitTest *tests = NULL;
	size_t n = 0;
	struct dirent *e;
	DIR *d;
	int failed;

	snprintf(dir, sizeof(dir), "%s/bad", data_dir());
	d = opendir(dir);
	if (!d) {
		fprintf(stderr, "cannot open '%s' (run from the repository root)\n", dir);
		return 1;
	}
	while ((e = readdir(d))) {
		char *path;

		if (!ends_with(e->d_name, ".yaml"))
			continue;
		tests = realloc(tests, (n + 1) * sizeof(*tests));
		if (!tests || asprintf(&path, "%s/%s", dir, e->d_name) < 0)
			abort();
		tests[n++] = (struct CMUnitTest){
			.name = path, .test_func = test_bad_case, .initial_state = path,
		};
	}
	closedir(d);
	qsort(tests, n, sizeof(*tests), by_name);
	failed = _cmocka_run_group_tests("scenario_bad_files", tests, n, NULL, NULL);
	for (size_t i = 0; i < n; i++)
		free(tests[i].initial_state);
	free(tests);
	*count = n;
	return failed;
}

/* ---- good/ ---------------------------------------------------------- */

static void test_example_model(void **state)
{
	struct suite *s = load_good("example.yaml");
	const struct route_spec *r;
	const struct scenario *sc;
	char digest[IDENTITY_DIGEST_LEN + 1], path[512];
	size_t len;
	char *bytes;

	assert_int_equal(s->version, 1);
	assert_string_equal(s->name, "example");
	snprintf(path, sizeof(path), "%s/good/example.yaml", data_dir());
	assert_string_equal(s->path, path);
	bytes = slurp(path, &len);
	identity_buffer_digest(bytes, len, digest);
	assert_string_equal(s->digest, digest);
	free(bytes);

	assert_int_equal(s->nroutes, 1);
	r = &s->routes[0];
	assert_string_equal(r->name, "sqlite-fenced");
	assert_string_equal(r->command[0], "build/fencecert");
	assert_string_equal(r->command[1], "route");
	assert_null(r->command[2]);
	assert_string_equal(r->journal, "sqlite:{dir}/journal.db");
	assert_string_equal(r->target, "sqlite:{dir}/target.db");
	assert_string_equal(r->observe_sql,
			    "SELECT row_key, COUNT(*) FROM events GROUP BY row_key");
	assert_null(r->observe_command);
	assert_non_null(r->env);
	assert_null(r->env[0]);
	assert_int_equal(r->expect, EXPECT_CERTIFIED_AUTOMATIC);
	assert_int_equal(r->line, 4);
	assert_int_equal(r->column, 5);

	assert_int_equal(s->workload.operations, 3);
	assert_int_equal(s->workload.rows_per_operation, 100);
	assert_true(s->workload.seed == 1);
	assert_string_equal(s->workload.strategy, "append");
	assert_string_equal(s->workload.table, "events");
	assert_int_equal(s->orchestrator.retries, 3);
	assert_int_equal(s->orchestrator.zombie_delay_ms, 500);
	assert_int_equal(s->orchestrator.attempt_timeout_ms, 30000);
	assert_int_equal(s->orchestrator.lease_ttl_ms, 200);

	assert_int_equal(s->nscenarios, 5);
	sc = &s->scenarios[0];
	assert_string_equal(sc->name, "clean");
	assert_int_equal(sc->nfaults, 0);
	assert_null(sc->explore);
	assert_int_equal(sc->operations, 0);
	assert_int_equal(sc->line, 19);

	sc = &s->scenarios[1];
	assert_string_equal(sc->name, "kill-after-target-commit");
	assert_int_equal(sc->nfaults, 1);
	assert_int_equal(sc->faults[0].action, FAULT_KILL);
	assert_int_equal(sc->faults[0].attempt, 1);
	assert_int_equal(sc->faults[0].after_attempt, 0);
	assert_string_equal(sc->faults[0].failpoint, "after_target_commit");
	assert_int_equal(sc->faults[0].hit, 1);
	assert_int_equal(sc->faults[0].operation, 0);
	assert_int_equal(sc->faults[0].line, 22);
	assert_int_equal(sc->faults[0].column, 9);

	sc = &s->scenarios[2];
	assert_string_equal(sc->name, "xcom-lost");
	assert_int_equal(sc->nfaults, 2);
	assert_int_equal(sc->faults[1].action, FAULT_LOSE_XCOM);
	assert_int_equal(sc->faults[1].after_attempt, 1);
	assert_int_equal(sc->faults[1].attempt, 0);
	assert_int_equal(sc->faults[1].hit, 0);
	assert_string_equal(sc->faults[1].failpoint, "");

	sc = &s->scenarios[3];
	assert_string_equal(sc->name, "zombie-worker");
	assert_int_equal(sc->faults[0].action, FAULT_PAUSE);
	assert_string_equal(sc->faults[0].failpoint, "after_committing");
	assert_int_equal(sc->faults[0].resume, RESUME_AFTER_NEXT_ATTEMPT);

	sc = &s->scenarios[4];
	assert_string_equal(sc->name, "every-failpoint");
	assert_int_equal(sc->nfaults, 0);
	assert_non_null(sc->explore);
	assert_true(sc->explore->failpoints_all);
	assert_null(sc->explore->failpoints);
	assert_int_equal(sc->explore->actions, FAULT_BIT(FAULT_KILL) |
			 FAULT_BIT(FAULT_PAUSE) | FAULT_BIT(FAULT_FAIL));
	assert_false(sc->explore->interleavings);
	assert_int_equal(sc->explore->random_schedules, 0);
	assert_int_equal(sc->explore->max_faults, 3);
	suite_free(s);
}

static void test_defaults(void **state)
{
	struct suite *s = load_good("minimal.yaml");
	const struct explore_spec *e;

	assert_string_equal(s->name, "minimal");
	assert_int_equal(s->routes[0].expect, EXPECT_CERTIFIED);
	assert_false(s->routes[0].fork_server);
	assert_null(s->routes[0].observe_sql);
	assert_string_equal(s->routes[0].observe_command[0], "count-rows");
	assert_string_equal(s->routes[0].observe_command[1], "{dir}/target.db");
	assert_null(s->routes[0].observe_command[2]);
	assert_null(s->routes[0].env[0]);
	assert_int_equal(s->workload.operations, 1);
	assert_int_equal(s->workload.rows_per_operation, 100);
	assert_true(s->workload.seed == 1);
	assert_string_equal(s->workload.strategy, "append");
	assert_string_equal(s->workload.table, "events");
	assert_int_equal(s->orchestrator.retries, 3);
	assert_int_equal(s->orchestrator.zombie_delay_ms, 500);
	assert_int_equal(s->orchestrator.attempt_timeout_ms, 30000);
	assert_int_equal(s->orchestrator.lease_ttl_ms, 200);
	e = s->scenarios[1].explore;
	assert_non_null(e);
	assert_true(e->failpoints_all);
	assert_int_equal(e->actions, FAULT_BIT(FAULT_KILL));
	assert_false(e->interleavings);
	assert_int_equal(e->random_schedules, 0);
	assert_true(e->random_seed == 1);
	assert_int_equal(e->max_faults, 3);
	suite_free(s);
}

static void test_services(void **state)
{
	struct suite *s = load_good("services.yaml");
	const struct fault *f = s->scenarios[0].faults;
	char form[SCHEDULE_STR_MAX];

	assert_int_equal(s->nservices, 2);
	assert_string_equal(s->services[0].name, "etcd");
	assert_int_equal(s->services[0].kind, SERVICE_ETCD);
	assert_int_equal(s->services[0].members, 3);
	assert_int_equal(s->services[1].kind, SERVICE_POSTGRESQL);
	assert_string_equal(s->services[1].env, "FENCECERT_PG_URL");
	assert_ptr_equal(suite_service(s, ""), &s->services[0]);
	assert_ptr_equal(suite_service(s, "pg"), &s->services[1]);
	assert_null(suite_service(s, "nope"));
	assert_int_equal(s->scenarios[0].nfaults, 3);
	assert_int_equal(f[0].action, FAULT_STOP_MEMBER);
	assert_true(fault_at_failpoint(&f[0]));
	assert_string_equal(f[0].member, "m2");
	assert_string_equal(f[0].service, "");
	assert_string_equal(f[1].service, "etcd");
	assert_int_equal(f[2].action, FAULT_START_MEMBER);
	assert_false(fault_at_failpoint(&f[2]));
	assert_int_equal(f[2].after_attempt, 1);
	assert_int_equal(schedule_format(f, 3, form, sizeof(form)), 0);
	assert_string_equal(form, "d:after_lease@1=m2;d:after_lease@1=etcd/m3;u@1=m2");
	suite_free(s);
}

static void test_proxies(void **state)
{
	struct suite *s = load_good("proxies.yaml");
	const struct scenario *sc = &s->scenarios[0];
	const struct fault *f = sc->faults;
	char form[SCHEDULE_STR_MAX];

	assert_int_equal(s->nproxies, 2);
	assert_string_equal(s->proxies[0].name, "pgj");
	assert_string_equal(s->proxies[0].upstream, "{service:pg}");
	assert_ptr_equal(suite_proxy(s, "raw"), &s->proxies[1]);
	assert_null(suite_proxy(s, "nope"));
	assert_string_equal(s->routes[0].journal, "{proxy:pgj}?schema={schedule_id}");
	assert_non_null(sc->routes);
	assert_string_equal(sc->routes[0], "r");
	assert_null(sc->routes[1]);
	assert_null(s->scenarios[0].routes[1]);
	assert_int_equal(sc->nfaults, 4);
	assert_int_equal(f[0].action, FAULT_CUT_AFTER_COMMIT);
	assert_int_equal(f[0].hit, 2);
	assert_string_equal(f[0].proxy, "pgj");
	assert_int_equal(f[1].action, FAULT_HOLD_COMMIT);
	assert_int_equal(f[1].hit, 1);
	assert_false(fault_at_failpoint(&f[1]));
	assert_int_equal(f[2].action, FAULT_REFUSE);
	assert_true(fault_at_failpoint(&f[2]));
	assert_int_equal(f[3].delay_ms, 30);
	assert_int_equal(schedule_format(f, 4, form, sizeof(form)), 0);
	assert_string_equal(form, "c@1#2=pgj;h@2=pgj;r:after_lease@3#2=pgj;w@4*30/op1=raw");
	suite_free(s);
}

static void test_extensions(void **state)
{
	struct suite *s = load_good("extensions.yaml");
	const struct route_spec *r = &s->routes[0];
	const struct scenario *sc;
	const struct explore_spec *e;

	assert_int_equal(r->expect, EXPECT_CERTIFIED_FAIL_CLOSED);
	assert_true(r->fork_server);
	assert_false(s->routes[1].fork_server);
	assert_string_equal(r->env[0], "LAKE_ROOT={dir}/lake");
	assert_string_equal(r->env[1], "HOME_COPY={env:HOME}");
	assert_string_equal(r->env[2], "LITERAL={{not a placeholder}");
	assert_null(r->env[3]);
	/* The alias *observe resolves to the first route's observe. */
	assert_int_equal(s->routes[1].expect, EXPECT_REJECTED);
	assert_string_equal(s->routes[1].observe_command[2], "rows");
	assert_true(s->workload.seed == UINT64_MAX);
	assert_string_equal(s->workload.strategy, "replace");
	assert_string_equal(s->workload.table, "orders_2026");
	assert_int_equal(s->workload.operations, 4);
	assert_int_equal(s->workload.rows_per_operation, 7);
	assert_int_equal(s->orchestrator.retries, 2);
	assert_int_equal(s->orchestrator.zombie_delay_ms, 750);
	assert_int_equal(s->orchestrator.attempt_timeout_ms, 5000);
	assert_int_equal(s->orchestrator.lease_ttl_ms, 100);

	sc = &s->scenarios[0];
	assert_int_equal(sc->operations, 2);
	assert_int_equal(sc->faults[0].action, FAULT_FAIL);
	assert_int_equal(sc->faults[0].attempt, 2);
	assert_int_equal(sc->faults[0].hit, 2);
	assert_int_equal(sc->faults[0].operation, 2);
	sc = &s->scenarios[1];
	assert_int_equal(sc->faults[0].resume, RESUME_AT_NEXT_FAILPOINT);
	assert_string_equal(sc->faults[0].resume_at, "after_reconcile_probe");
	assert_int_equal(sc->faults[1].action, FAULT_LOSE_POD);
	assert_int_equal(s->scenarios[2].faults[0].resume, RESUME_NEVER);
	/* routes: narrows a scenario to the routes it names */
	assert_null(sc->routes);
	assert_true(scenario_applies_to(sc, "fs-fenced"));
	assert_string_equal(s->scenarios[2].routes[0], "naive-append");
	assert_null(s->scenarios[2].routes[1]);
	assert_true(scenario_applies_to(&s->scenarios[2], "naive-append"));
	assert_false(scenario_applies_to(&s->scenarios[2], "fs-fenced"));
	sc = &s->scenarios[3];
	assert_int_equal(sc->faults[1].action, FAULT_CHANGE_SOURCE);
	assert_int_equal(sc->faults[1].after_attempt, 1);
	assert_int_equal(sc->faults[1].operation, 3);

	e = s->scenarios[4].explore;
	assert_false(e->failpoints_all);
	assert_string_equal(e->failpoints[0], "after_intent");
	assert_string_equal(e->failpoints[1], "after_committing");
	assert_null(e->failpoints[2]);
	assert_int_equal(e->actions, FAULT_BIT(FAULT_PAUSE) | FAULT_BIT(FAULT_FAIL));
	assert_true(e->interleavings);
	assert_int_equal(e->random_schedules, 50);
	assert_true(e->random_seed == 9);
	assert_int_equal(e->max_faults, 2);
	e = s->scenarios[5].explore;
	assert_int_equal(e->random_schedules, 5);
	assert_true(e->random_seed == 1);
	assert_int_equal(e->max_faults, 3);
	sc = &s->scenarios[6];
	assert_int_equal(sc->faults[2].action, FAULT_RECOVER);
	assert_int_equal(sc->faults[2].after_attempt, 2);
	assert_int_equal(sc->faults[2].decision, DECIDE_MARK_FAILED_PRE_COMMIT);
	assert_true(sc->faults[2].force);
	assert_true(sc->faults[2].wrong_target);
	assert_int_equal(sc->faults[2].operation, 1);
	assert_int_equal(sc->faults[0].decision, DECIDE_NONE);
	suite_free(s);
}

static bool fault_equal(const struct fault *a, const struct fault *b)
{
	return a->action == b->action && a->attempt == b->attempt &&
	       a->after_attempt == b->after_attempt &&
	       strcmp(a->failpoint, b->failpoint) == 0 && a->hit == b->hit &&
	       a->operation == b->operation && a->resume == b->resume &&
	       strcmp(a->resume_at, b->resume_at) == 0 &&
	       strcmp(a->member, b->member) == 0 &&
	       strcmp(a->service, b->service) == 0 &&
	       a->decision == b->decision && a->force == b->force &&
	       a->wrong_target == b->wrong_target;
}

/* Loaded faults are in schedule.c's normal form: their string form parses
 * back to the same faults. */
static void test_loaded_faults_round_trip(void **state)
{
	const char *files[] = { "example.yaml", "extensions.yaml", "services.yaml",
				"proxies.yaml" };
	int checked = 0;

	for (size_t f = 0; f < sizeof(files) / sizeof(files[0]); f++) {
		struct suite *s = load_good(files[f]);

		for (size_t i = 0; i < s->nscenarios; i++) {
			const struct scenario *sc = &s->scenarios[i];
			char form[SCHEDULE_STR_MAX], err[256];
			struct fault *back;
			size_t n;

			assert_int_equal(schedule_format(sc->faults, sc->nfaults,
							 form, sizeof(form)), 0);
			assert_int_equal(schedule_parse(form, &back, &n, err,
							sizeof(err)), 0);
			assert_int_equal(n, sc->nfaults);
			for (size_t k = 0; k < n; k++, checked++)
				if (!fault_equal(&back[k], &sc->faults[k]))
					fail_msg("%s/%s: fault %zu changed through '%s'",
						 files[f], sc->name, k, form);
			free(back);
		}
		suite_free(s);
	}
	assert_true(checked >= 10);
}

/* ---- limits ---------------------------------------------------------- */

static const char suite_head[] =
	"version: 1\nsuite: s\n"
	"routes: [{name: r, command: [p], journal: j, target: 'sqlite:t',"
	" observe: {sql: 'SELECT 1, 2'}}]\n";

static void expect_error(const char *buf, size_t len, const char *want)
{
	struct suite *s = NULL;
	char err[512];
	int rc = suite_load_buffer("gen.yaml", buf, len, &s, err, sizeof(err));

	assert_int_equal(rc, FC_USAGE);
	assert_null(s);
	if (!strstr(err, want))
		fail_msg("want '%s', got '%s'", want, err);
}

/* Many distinct scenarios sharing one aliased fault list: legal YAML whose
 * expansion is far larger than the file.  The visit budget stops it. */
static void test_alias_expansion_budget(void **state)
{
	size_t cap = 1 << 20, len;
	char *buf = malloc(cap);
	FILE *f = fmemopen(buf, cap, "w");

	assert_non_null(f);
	fprintf(f, "%sscenarios:\n  - name: s0\n    faults: &F\n", suite_head);
	for (int i = 0; i < 32; i++)
		fprintf(f, "      - {action: kill, failpoint: a, attempt: 1}\n");
	for (int i = 1; i < 2000; i++)
		fprintf(f, "  - {name: s%d, faults: *F}\n", i);
	len = (size_t)ftell(f);
	fclose(f);
	expect_error(buf, len, "too large once aliases are expanded");

	/* The same file with few scenarios loads: the budget is not a
	 * limit on honest suites. */
	f = fmemopen(buf, cap, "w");
	fprintf(f, "%sscenarios:\n  - name: s0\n    faults: &F\n", suite_head);
	for (int i = 0; i < 32; i++)
		fprintf(f, "      - {action: kill, failpoint: a, attempt: 1}\n");
	for (int i = 1; i < 100; i++)
		fprintf(f, "  - {name: s%d, faults: *F}\n", i);
	len = (size_t)ftell(f);
	fclose(f);
	{
		struct suite *s = NULL;
		char err[512];

		assert_int_equal(suite_load_buffer("gen.yaml", buf, len, &s, err,
						   sizeof(err)), 0);
		assert_int_equal(s->nscenarios, 100);
		assert_int_equal(s->scenarios[99].nfaults, 32);
		suite_free(s);
	}
	free(buf);
}

/* The 100001st node is named, in a flow list on line 4 that starts at
 * column 5: node k (0-based) is at column 5 + 2k. */
static void test_node_limit(void **state)
{
	size_t cap = 1 << 20, len;
	char *buf = malloc(cap), want[64];
	FILE *f = fmemopen(buf, cap, "w");

	fprintf(f, "%sx: [", suite_head);
	for (int i = 0; i < 100001; i++)
		fputs("0,", f);
	fputs("0]\n", f);
	len = (size_t)ftell(f);
	fclose(f);
	/* 23 nodes come before the first item: the root mapping, 20 in
	 * suite_head, "x" and the list */
	snprintf(want, sizeof(want), "gen.yaml:4:%d: suite has more than 100000 nodes",
		 5 + 2 * (100001 - 24));
	expect_error(buf, len, want);
	free(buf);
}

/* CPU seconds this process has used (user + system). */
static double cpu_seconds(void)
{
	struct rusage ru;

	assert_int_equal(getrusage(RUSAGE_SELF, &ru), 0);
	return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
	       (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

/* Load a 1 MiB buffer made by fill(); it must be refused with `want` at
 * well under a second of CPU.  Before the limits acted on the event
 * stream, libyaml's scanner spent minutes on the depth bomb. */
static void expect_cheap_refusal(void (*fill)(char *, size_t), const char *want)
{
	size_t len = 1 << 20;
	char *buf = malloc(len);
	double t0, spent;

	assert_non_null(buf);
	fill(buf, len);
	t0 = cpu_seconds();
	expect_error(buf, len, want);
	spent = cpu_seconds() - t0;
	free(buf);
	if (spent > 1.0)
		fail_msg("refusing took %.2f s of CPU", spent);
}

static void fill_deep(char *buf, size_t len)
{
	size_t head = (size_t)sprintf(buf, "version: 1\nsuite: s\nroutes: ");

	memset(buf + head, '[', len - head);
}

static void fill_deep_block(char *buf, size_t len)
{
	size_t k = (size_t)sprintf(buf, "version: 1\nsuite: s\nroutes:\n");

	/* "- - - - ...": one block list inside the other, on one line */
	for (; k + 2 <= len; k += 2)
		memcpy(buf + k, "- ", 2);
	memset(buf + k, ' ', len - k);
}

static void fill_wide(char *buf, size_t len)
{
	size_t k = (size_t)sprintf(buf, "version: 1\nsuite: s\nroutes: [");

	for (; k + 2 <= len; k += 2)
		memcpy(buf + k, "0,", 2);
	memset(buf + k, ' ', len - k);
}

/* 257 anchors, then aliases to them up to 1 MiB: libyaml looks every
 * alias up among all anchors. */
static void fill_anchors(char *buf, size_t len)
{
	size_t k = (size_t)sprintf(buf, "version: 1\nsuite: s\nroutes: [");

	for (int i = 0; i < 257; i++)
		k += (size_t)sprintf(buf + k, "&a%d 0,", i);
	for (int i = 0; k + 8 <= len; i = (i + 1) % 257)
		k += (size_t)sprintf(buf + k, "*a%d,", i);
	memset(buf + k, ' ', len - k);
}

static void test_bombs_are_cheap(void **state)
{
	/* the 64th '[' of line 3 (at column 9 + 63): with the root mapping, the 65th level */
	expect_cheap_refusal(fill_deep, "gen.yaml:3:72: suite nests lists and "
			     "mappings deeper than 64 levels");
	expect_cheap_refusal(fill_deep_block, "gen.yaml:4:127: suite nests lists "
			     "and mappings deeper than 64 levels");
	expect_cheap_refusal(fill_wide, "suite has more than 100000 nodes");
	expect_cheap_refusal(fill_anchors, "suite has more than 256 anchors");
}

/* 64 levels load (the limit is not off by one); 65 do not. */
static void test_depth_limit_exact(void **state)
{
	char buf[512];
	int n;

	for (int depth = 63; depth <= 64; depth++) {
		/* routes' list is level 2 below the root mapping */
		n = snprintf(buf, sizeof(buf), "version: 1\nsuite: s\nx: %.*s%.*s\n",
			     depth - 1, "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[",
			     depth - 1, "]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]");
		expect_error(buf, (size_t)n, "unknown key 'x' in suite");
	}
	n = snprintf(buf, sizeof(buf), "version: 1\nsuite: s\nx: %.*s\n", 64,
		     "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[");
	expect_error(buf, (size_t)n, "gen.yaml:3:67: suite nests lists and mappings deeper than 64 levels");
}

static void test_size_limit(void **state)
{
	size_t len = (1 << 20) + 1;
	char *buf = malloc(len), path[] = "/tmp/fc-test-big-XXXXXX", err[512];
	struct suite *s = (struct suite *)&s;
	int fd;

	memset(buf, ' ', len);
	expect_error(buf, len, "gen.yaml:1:1: suite is larger than 1 MiB (1048577 bytes, at most 1048576)");
	/* a file is refused by its size, before it is read */
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, buf, len), (ssize_t)len);
	close(fd);
	assert_int_equal(suite_load(path, &s, err, sizeof(err)), FC_USAGE);
	assert_null(s);
	if (!strstr(err, ":1:1: suite is larger than 1 MiB (1048577 bytes"))
		fail_msg("got '%s'", err);
	unlink(path);
	free(buf);
}

/* ---- observe.sql at load ------------------------------------------- */

static int load_observe(const char *target, const char *sql, char *err,
			size_t errlen)
{
	char buf[2048];
	struct suite *s = NULL;
	int n = snprintf(buf, sizeof(buf),
			 "version: 1\nsuite: s\n"
			 "services: [{name: pg, kind: postgresql}]\nroutes:\n  - name: r\n"
			 "    command: [p]\n    journal: j\n    target: '%s'\n"
			 "    observe: {sql: \"%s\"}\nscenarios: [{name: a}]\n",
			 target, sql);
	int rc = suite_load_buffer("o.yaml", buf, (size_t)n, &s, err, errlen);

	suite_free(s);
	return rc;
}

static void observe_ok(const char *target, const char *sql)
{
	char err[512];

	if (load_observe(target, sql, err, sizeof(err)) != 0)
		fail_msg("'%s' refused: %s", sql, err);
}

/* Refused at the sql value (line 9, column 20) with `want`. */
static void observe_bad(const char *target, const char *sql, const char *want)
{
	char err[512];

	assert_int_equal(load_observe(target, sql, err, sizeof(err)), FC_USAGE);
	if (strncmp(err, "o.yaml:9:20: ", 13) != 0 || !strstr(err, want))
		fail_msg("'%s': want 'o.yaml:9:20: ...%s', got '%s'", sql, want, err);
}

static void test_observe_sql(void **state)
{
	const char *t = "sqlite:{dir}/t.db";

	/* reads, whatever tables and columns the target will have */
	observe_ok(t, "SELECT row_key, COUNT(*) FROM events GROUP BY row_key");
	observe_ok(t, "SELECT e.row_key, COUNT(*) FROM events e JOIN fencecert_fence f"
		   " ON e.op = f.operation_id WHERE f.epoch > 0 GROUP BY 1");
	observe_ok(t, "SELECT 1, 2; ; -- a comment after the statement");
	observe_ok(t, "SELECT 'a;b', 2 /* ; DELETE FROM t */");
	observe_ok(t, "WITH x AS (SELECT row_key FROM events) SELECT row_key, 1 FROM x");
	observe_ok("{env:FC_TARGET}", "SELECT row_key, 1 FROM events");
	/* what cannot be prepared without the target is left to run time */
	observe_ok(t, "SELECT my_function(row_key), 1 FROM events");
	observe_ok(t, "SELECT row_key, 1 FROM other.events");
	/* a write, found at load */
	observe_bad(t, "DELETE FROM events", "observe.sql must only read the target, but 'DELETE FROM events' writes");
	observe_bad(t, "UPDATE events SET n = n + 1", "writes");
	observe_bad(t, "INSERT INTO events VALUES (1, 2, 3)", "writes");
	observe_bad(t, "INSERT INTO events(row_key) SELECT row_key FROM other", "writes");
	observe_bad(t, "DROP TABLE events", "writes");
	observe_bad(t, "PRAGMA journal_mode = DELETE", "writes");
	observe_bad(t, "DELETE FROM events RETURNING row_key, 1", "writes");
	/* a second statement, which the observer would silently skip */
	observe_bad(t, "SELECT row_key, COUNT(*) FROM events GROUP BY 1; DELETE FROM events",
		    "observe.sql must be one statement, but another follows: 'DELETE FROM events'");
	observe_bad(t, "SELECT 1, 2; SELECT 3, 4", "another follows: 'SELECT 3, 4'");
	observe_bad(t, "SELECT 1, 2; garbage", "another follows: 'garbage'");
	/* statements that return no rows, none at all, bad syntax */
	observe_bad(t, "BEGIN", "must be a query returning (row_key, count) rows, but 'BEGIN' returns none");
	observe_bad(t, "ATTACH 'x.db' AS x", "returns none");
	observe_bad(t, "-- only a comment", "observe.sql holds no SQL statement");
	observe_bad(t, "SELEC row_key FROM events", "observe.sql is not valid SQL: near \"SELEC\": syntax error");
	observe_bad(t, "SELECT row_key, COUNT(* FROM events", "not valid SQL");
	/* observe.sql reads sqlite: targets only */
	observe_bad("postgresql://h/db", "SELECT 1, 2", "observe.sql needs a sqlite: target, not 'postgresql://h/db'");
	observe_bad("{service:pg}?schema=x", "SELECT 1, 2", "needs a sqlite: target");
	observe_bad("file:{dir}/lake", "SELECT 1, 2", "needs a sqlite: target");
}

static void test_unreadable_file(void **state)
{
	struct suite *s = (struct suite *)&s;
	char err[512];

	assert_int_equal(suite_load("/nonexistent/suite.yaml", &s, err, sizeof(err)),
			 FC_IO);
	assert_null(s);
	assert_non_null(strstr(err, "cannot read suite '/nonexistent/suite.yaml'"));
	assert_int_equal(suite_load("/", &s, err, sizeof(err)), FC_IO);
	assert_null(s);
}

/* Every prefix of each good file, and each byte replaced by a few
 * troublemakers: no crash, and every refusal is "FILE:LINE:COL: ...". */
static void test_mutations_never_crash(void **state)
{
	static const char repl[] = { ':', '[', '{', '&', '*', '-', '\n', '\0', '\t', '"' };
	const char *files[] = { "example.yaml", "minimal.yaml", "extensions.yaml" };
	long loads = 0, ok = 0;

	for (size_t f = 0; f < 3; f++) {
		char path[512], err[1024];
		size_t len;
		char *orig, *buf;

		snprintf(path, sizeof(path), "%s/good/%s", data_dir(), files[f]);
		orig = slurp(path, &len);
		buf = malloc(len + 1);
		for (size_t pos = 0; pos <= len; pos++) {
			/* try 0: the prefix of pos bytes; tries 1 and 2: byte
			 * pos replaced by two of the troublemakers, rotating so
			 * every one lands all over the file */
			for (size_t t = 0; t < 3; t++) {
				struct suite *s = NULL;
				size_t n = t == 0 ? pos : len;
				int rc, line, col;

				if (t > 0 && pos == len)
					break;
				memcpy(buf, orig, len);
				if (t > 0)
					buf[pos] = repl[(pos * (2 * t + 1) + t) % sizeof(repl)];
				rc = suite_load_buffer("m.yaml", buf, n, &s, err, sizeof(err));
				loads++;
				if (rc == 0) {
					ok++;
					suite_free(s);
					continue;
				}
				assert_int_equal(rc, FC_USAGE);
				assert_null(s);
				if (sscanf(err, "m.yaml:%d:%d: ", &line, &col) != 2 ||
				    line < 1 || col < 1)
					fail_msg("badly formed error: %s", err);
			}
		}
		free(buf);
		free(orig);
	}
	assert_true(loads > 6000);
	assert_true(ok > 0 && ok < loads);
}

/* ---- templates and names --------------------------------------------- */

static const char *fake_service(const void *ctx, const char *name)
{
	assert_string_equal((const char *)ctx, "ctx");
	return strcmp(name, "etcd") == 0 ? "127.0.0.1:1,127.0.0.1:3" : NULL;
}

static struct template_vars test_vars(const char *dir)
{
	return (struct template_vars){
		.dir = dir, .schedule_id = dir ? "fc_0123_r0" : NULL,
		.service = fake_service, .service_ctx = "ctx",
	};
}

static void expand_ok(const char *tmpl, const char *dir, const char *want)
{
	struct template_vars v = test_vars(dir);
	char *out = NULL, err[256];

	if (scenario_expand(tmpl, &v, &out, err, sizeof(err)) != 0)
		fail_msg("'%s': %s", tmpl, err);
	assert_string_equal(out, want);
	free(out);
}

static void expand_bad(const char *tmpl, const char *dir, const char *want)
{
	struct template_vars v = test_vars(dir);
	char *out = (char *)&out, err[256];

	assert_int_equal(scenario_expand(tmpl, &v, &out, err, sizeof(err)), FC_USAGE);
	assert_null(out);
	if (!strstr(err, want))
		fail_msg("'%s': want '%s', got '%s'", tmpl, want, err);
}

static void test_expand(void **state)
{
	setenv("FC_TEST_VAR", "v a l", 1);
	unsetenv("FC_TEST_UNSET");
	expand_ok("sqlite:{dir}/journal.db", "/tmp/x", "sqlite:/tmp/x/journal.db");
	expand_ok("{dir}{dir}", "d", "dd");
	expand_ok("no placeholders }", NULL, "no placeholders }");
	expand_ok("", NULL, "");
	expand_ok("[{env:FC_TEST_VAR}]", NULL, "[v a l]");
	expand_ok("{{dir}", "d", "{dir}");
	expand_ok("{{{dir}}", "d", "{d}");
	expand_bad("{workdir}/x", "d", "unknown placeholder '{workdir}'");
	expand_bad("{env:}", "d", "unknown placeholder '{env:}'");
	expand_bad("{env:1X}", "d", "unknown placeholder '{env:1X}'");
	expand_bad("{}", "d", "unknown placeholder '{}'");
	expand_bad("a{dir", "d", "unterminated placeholder '{dir'");
	expand_bad("{env:FC_TEST_UNSET}", "d",
		   "environment variable 'FC_TEST_UNSET' is not set");
	expand_bad("{dir}", NULL, "placeholder '{dir}' has no value here");
	expand_ok("etcd://{service:etcd}/{schedule_id}/j", "d",
		  "etcd://127.0.0.1:1,127.0.0.1:3/fc_0123_r0/j");
	expand_bad("{schedule_id}", NULL,
		   "placeholder '{schedule_id}' has no value here");
	expand_bad("{service:pg}", "d", "service 'pg' is not running");
	expand_bad("{service:}", "d", "unknown placeholder '{service:}'");
	expand_bad("{service:-x}", "d", "unknown placeholder '{service:-x}'");
}

static void test_names(void **state)
{
	for (int a = 0; a < FAULT_ACTION_COUNT; a++) {
		enum fault_action back;

		assert_int_equal(fault_action_parse(fault_action_name(a), &back), 0);
		assert_int_equal(back, a);
	}
	assert_string_equal(fault_action_name(FAULT_LOSE_XCOM), "lose_xcom");
	assert_string_equal(fault_action_name(FAULT_ACTION_COUNT), "unknown");
	{
		enum fault_action back;

		assert_int_equal(fault_action_parse("explode", &back), FC_USAGE);
	}
	assert_string_equal(expectation_name(EXPECT_CERTIFIED), "certified");
	assert_string_equal(expectation_name(EXPECT_REJECTED), "rejected");
	/* the failpoint name rule (fault.h invariant 2) */
	assert_true(fault_failpoint_valid("after_commit", 12));
	assert_true(fault_failpoint_valid("nextx", 5));
	assert_false(fault_failpoint_valid("next", 4));
	assert_false(fault_failpoint_valid("all", 3));
	assert_false(fault_failpoint_valid("a-b", 3));
	assert_false(fault_failpoint_valid("", 0));
	assert_false(fault_failpoint_valid("x", FAILPOINT_NAME_MAX));
	/* the failpoints of target calls (docs/failpoints.md) */
	assert_true(fault_failpoint_is_target_call("before_reconcile_probe"));
	assert_true(fault_failpoint_is_target_call("after_target_commit"));
	assert_true(fault_failpoint_is_target_call("before_fence_prepare"));
	assert_true(fault_failpoint_is_target_call("after_probe"));
	assert_false(fault_failpoint_is_target_call("after_committing"));
	assert_false(fault_failpoint_is_target_call("before_probe_x"));
	assert_false(fault_failpoint_is_target_call("probe"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_example_model),
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_extensions),
		cmocka_unit_test(test_services),
		cmocka_unit_test(test_proxies),
		cmocka_unit_test(test_loaded_faults_round_trip),
		cmocka_unit_test(test_alias_expansion_budget),
		cmocka_unit_test(test_node_limit),
		cmocka_unit_test(test_bombs_are_cheap),
		cmocka_unit_test(test_depth_limit_exact),
		cmocka_unit_test(test_size_limit),
		cmocka_unit_test(test_observe_sql),
		cmocka_unit_test(test_unreadable_file),
		cmocka_unit_test(test_mutations_never_crash),
		cmocka_unit_test(test_expand),
		cmocka_unit_test(test_names),
	};
	size_t nbad = 0;
	int failed = cmocka_run_group_tests_name("scenario", tests, NULL, NULL);

	failed += run_bad_cases(&nbad);
	if (nbad < 25) {
		fprintf(stderr, "only %zu files in bad/; the table needs at least 25\n", nbad);
		failed++;
	}
	return failed ? 1 : 0;
}
