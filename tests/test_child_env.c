/*
 * test_child_env.c -- the environment of what the harness starts is built
 * from an allow-list (harness/proc/child_env.h): the builder itself, the
 * names --pass-env refuses, and, with FENCECERT_SIGNING_KEY and other
 * harness variables in this process's environment, what a process the
 * supervisor starts sees (`env` run as a route, and so as an observer or
 * the operator: they are started the same way) and what a service script
 * sees (fake scripts in FENCECERT_CI_DIR that record their environment);
 * and a suite's {env:FENCECERT_SIGNING_KEY} is refused.
 * The certify-level checks are tests/integration/route_env.sh.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/clock.h"
#include "harness/proc/child_env.h"
#include "harness/model/scenario.h"
#include "harness/proc/supervise.h"
#include "harness/run/services.h"
#include "reports/sign.h"

#define SECRET "child-env-test-secret"

static char tmp[] = "/tmp/fc-child-env-XXXXXX";

/* The harness's environment for these tests: allowed names, a name to
 * pass on, the secret, and harness variables that must stay home. */
static void harness_env(void)
{
	setenv(CHILD_ENV_SECRET, SECRET, 1);
	setenv("FENCECERT_CI_DIR_TEST_OWN", "harness-only", 1);
	setenv("FENCECERT_LIBPQ", "/nonexistent/libpq.so", 1);
	setenv("CHILD_ENV_PASSED", "passed", 1);
	setenv("CHILD_ENV_NOT_PASSED", "kept", 1);
	setenv("LC_CHILD_ENV", "allowed", 1);
	setenv("ETCD_WAIT", "7", 1);
	setenv("PATH", "/usr/bin:/bin", 1);
}

/* The names a process may show: the allow-list, the ones passed on or
 * set, and what a shell adds itself. */
static bool name_ok(const char *entry, const char *const *also)
{
	size_t len = strcspn(entry, "=");

	if (child_env_allowed(entry, len))
		return true;
	for (size_t i = 0; also && also[i]; i++)
		if (strlen(also[i]) == len && memcmp(entry, also[i], len) == 0)
			return true;
	return false;
}

/* Every line of the file `path` (`env` output) is allowed; the secret
 * and the test's harness-only variables are in none; want[] are. */
static void check_env_file(const char *path, const char *const *also,
			   const char *const *want)
{
	char line[8192];
	FILE *f = fopen(path, "r");
	size_t found = 0, nwant = 0;

	if (!f)
		fail_msg("no environment was recorded in '%s'", path);
	while (want && want[nwant])
		nwant++;
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		if (strstr(line, SECRET) || strstr(line, CHILD_ENV_SECRET))
			fail_msg("%s: the signing key reached it: '%s'", path,
				 line);
		if (!name_ok(line, also))
			fail_msg("%s: '%s' is not on the allow-list", path, line);
		for (size_t i = 0; i < nwant; i++)
			if (strcmp(line, want[i]) == 0)
				found++;
	}
	fclose(f);
	if (found != nwant)
		fail_msg("%s: %zu of the %zu expected entries", path, found,
			 nwant);
}

/* --- the builder ----------------------------------------------------------- */

static void test_build(void **state)
{
	char *set[] = { (char *)"A=1", (char *)CHILD_ENV_SECRET "=from-set",
			(char *)"PATH=/override", (char *)"A=2", NULL };
	const char *pass[] = { "CHILD_ENV_PASSED", NULL };
	char **env;
	size_t n = 0;

	(void)state;
	harness_env();
	env = child_env_build(set, pass, "FENCECERT_FAILPOINT_FD=3");
	assert_non_null(env);
	for (; env[n]; n++) {
		assert_null(strstr(env[n], SECRET));
		assert_null(strstr(env[n], "from-set"));
		assert_null(strstr(env[n], "NOT_PASSED"));
		assert_null(strstr(env[n], "FENCECERT_LIBPQ"));
		assert_null(strstr(env[n], "FENCECERT_CI_DIR_TEST_OWN"));
		assert_null(strstr(env[n], "A=2"));
		assert_null(strstr(env[n], "PATH=/usr/bin"));
	}
	assert_string_equal(env[0], "FENCECERT_FAILPOINT_FD=3");
	assert_string_equal(env[1], "A=1");
	assert_string_equal(env[2], "PATH=/override");
	for (size_t i = 0, seen = 0; i <= n; i++) {
		if (i == n) {
			assert_int_equal(seen, 2);
			break;
		}
		seen += strcmp(env[i], "CHILD_ENV_PASSED=passed") == 0 ||
			strcmp(env[i], "LC_CHILD_ENV=allowed") == 0;
	}
	free(env);
}

/* Nor through a template: {env:FENCECERT_SIGNING_KEY} is refused. */
static void test_template_refused(void **state)
{
	struct template_vars v = { .dir = "/tmp" };
	char err[300], *out = NULL;

	(void)state;
	harness_env();
	assert_int_equal(scenario_expand("k={env:" SIGN_KEY_ENV "}", &v, &out,
					 err, sizeof(err)), FC_USAGE);
	assert_null(out);
	assert_non_null(strstr(err, "signing key is never given to a route"));
	assert_int_equal(scenario_expand("{env:LC_CHILD_ENV}", &v, &out, err,
					 sizeof(err)), 0);
	assert_string_equal(out, "allowed");
	free(out);
}

static void test_pass_refused(void **state)
{
	(void)state;
	assert_string_equal(CHILD_ENV_SECRET, SIGN_KEY_ENV);
	assert_non_null(child_env_pass_refused("FENCECERT_SIGNING_KEY"));
	assert_non_null(strstr(child_env_pass_refused("FENCECERT_SIGNING_KEY"),
			       "signing key"));
	assert_non_null(child_env_pass_refused("FENCECERT_JOURNAL"));
	assert_non_null(child_env_pass_refused("FENCECERT_FAILPOINT_FD"));
	assert_non_null(child_env_pass_refused(""));
	assert_non_null(child_env_pass_refused("A=B"));
	assert_non_null(child_env_pass_refused("1A"));
	assert_non_null(child_env_pass_refused("A-B"));
	assert_null(child_env_pass_refused("FENCECERT_LIBPQ"));
	assert_null(child_env_pass_refused("PGPASSWORD"));
	assert_null(child_env_pass_refused("_x1"));
}

/* --- what the supervisor starts -------------------------------------------- */

static void test_spawned(void **state)
{
	static const char *const pass[] = { "CHILD_ENV_PASSED", NULL };
	static const char *const secret[] = { CHILD_ENV_SECRET, NULL };
	const char *also[] = { "CHILD_ENV_PASSED", "ROUTE_VAR", NULL };
	const char *want[] = { "CHILD_ENV_PASSED=passed", "ROUTE_VAR=1",
			       "LC_CHILD_ENV=allowed", "PATH=/usr/bin:/bin",
			       NULL };
	char out[300], err[300];
	char *argv[] = { (char *)"env", NULL };
	char *env[] = { (char *)"ROUTE_VAR=1", NULL };
	struct sv_status st;
	supervisor *sv;

	(void)state;
	harness_env();
	snprintf(out, sizeof(out), "%s/spawned.env", tmp);
	assert_int_equal(supervisor_new(&sv, err, sizeof(err)), 0);
	assert_int_equal(supervisor_pass_env(sv, secret, err, sizeof(err)),
			 FC_USAGE);
	assert_non_null(strstr(err, "cannot pass 'FENCECERT_SIGNING_KEY' on"));
	assert_int_equal(supervisor_pass_env(sv, pass, err, sizeof(err)), 0);
	assert_int_equal(supervisor_run(sv, &(struct sv_spawn){ .argv = argv,
			.env = env, .stdout_path = out, .timeout_ms = 20000 },
			&st, err, sizeof(err)), 0);
	assert_int_equal(st.code, 0);
	check_env_file(out, also, want);
	/* without a request or a name passed on (an observer, the operator) */
	assert_int_equal(supervisor_pass_env(sv, NULL, err, sizeof(err)), 0);
	assert_int_equal(supervisor_run(sv, &(struct sv_spawn){ .argv = argv,
			.stdout_path = out, .timeout_ms = 20000 }, &st, err,
			sizeof(err)), 0);
	check_env_file(out, NULL, (const char *[]){ "LC_CHILD_ENV=allowed",
						    NULL });
	supervisor_free(sv);
}

/* --- service scripts ---------------------------------------------------------- */

static void write_script(const char *dir, const char *name, const char *body)
{
	char path[600];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f, "#!/bin/sh\n%s\n", body);
	fclose(f);
	assert_int_equal(chmod(path, 0755), 0);
}

static void test_service_scripts(void **state)
{
	const char *also[] = { "PWD", "SHLVL", "_", "OLDPWD", "ETCD_WAIT", NULL };
	const char *want[] = { "ETCD_WAIT=7", "LC_CHILD_ENV=allowed", NULL };
	static const char yaml[] =
		"version: 1\nsuite: s\n"
		"services:\n  - {name: etcd, kind: etcd, members: 1}\n"
		"routes:\n  - name: r\n    command: [true]\n"
		"    journal: 'sqlite:{dir}/j.db'\n    target: 'sqlite:{dir}/t.db'\n"
		"    observe: {sql: 'SELECT 1, 1'}\n"
		"scenarios:\n  - name: a\n";
	char ci[300], body[600], dir[300], path[400], err[512];
	struct suite *s = NULL;
	services *svc = NULL;

	(void)state;
	harness_env();
	snprintf(ci, sizeof(ci), "%s/ci", tmp);
	snprintf(dir, sizeof(dir), "%s/services", tmp);
	assert_int_equal(mkdir(ci, 0755), 0);
	snprintf(body, sizeof(body), "env > '%s/etcd-up.env'\n"
		 "echo http://127.0.0.1:1", tmp);
	write_script(ci, "etcd-up", body);
	snprintf(body, sizeof(body), "env > '%s/etcd-down.env'", tmp);
	write_script(ci, "etcd-down", body);
	setenv("FENCECERT_CI_DIR", ci, 1);
	assert_int_equal(suite_load_buffer("t.yaml", yaml, strlen(yaml), &s, err,
					   sizeof(err)), 0);
	if (services_start(s, dir, &svc, err, sizeof(err)))
		fail_msg("%s", err);
	services_free(svc); /* the keeper runs etcd-down */
	suite_free(s);
	unsetenv("FENCECERT_CI_DIR");
	snprintf(path, sizeof(path), "%s/etcd-up.env", tmp);
	check_env_file(path, also, want);
	snprintf(path, sizeof(path), "%s/etcd-down.env", tmp);
	check_env_file(path, also, want);
}

static int teardown(void **state)
{
	char cmd[300];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
	return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_build),
		cmocka_unit_test(test_pass_refused),
		cmocka_unit_test(test_template_refused),
		cmocka_unit_test(test_spawned),
		cmocka_unit_test(test_service_scripts),
	};

	if (!mkdtemp(tmp))
		return 1;
	return cmocka_run_group_tests_name("child env", tests, NULL, teardown);
}
