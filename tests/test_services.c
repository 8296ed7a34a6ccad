/*
 * test_services.c -- harness-managed servers (harness/run/services.c) against a
 * real three-member etcd cluster the module starts itself.
 *
 * Checks: the address and the {service:NAME} / {schedule_id} expansion,
 * namespace names, cleaning one schedule's keys and no other's, stopping
 * and starting a member (and refusing an unknown one), services_leave()
 * bringing every member back after an exclusive schedule, and
 * services_free() leaving no server and no directory behind; for
 * postgresql, a server started with ci/pg-up and cleaning that drops one
 * schedule's schemas only.  Teardown
 * when the harness is SIGKILLed is tests/integration/services_kill.sh.
 */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <libpq-fe.h>

#include "harness/run/services.h"
#include "common/etcd_client.h"

static char base[256];

static struct suite *load(const char *yaml)
{
	struct suite *s = NULL;
	char err[512];

	if (suite_load_buffer("t.yaml", yaml, strlen(yaml), &s, err, sizeof(err)))
		fail_msg("%s", err);
	return s;
}

/* Processes whose command line mentions `needle`. */
static int procs_with(const char *needle)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	int n = 0;

	assert_non_null(d);
	while ((e = readdir(d))) {
		char path[300], buf[8192];
		size_t len;
		FILE *f;

		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/cmdline", e->d_name);
		if (!(f = fopen(path, "r")))
			continue;
		len = fread(buf, 1, sizeof(buf) - 1, f);
		fclose(f);
		for (size_t i = 0; i < len; i++)
			if (!buf[i])
				buf[i] = ' ';
		buf[len] = '\0';
		n += strstr(buf, needle) != NULL;
	}
	closedir(d);
	return n;
}

static int put_key(const char *members, const char *key)
{
	struct etcd_txn t;
	struct etcd_txn_result r = { 0 };
	etcd_client *c;
	char err[256];
	int rc;

	if (etcd_client_new(members, &c, err, sizeof(err)))
		fail_msg("%s", err);
	rc = etcd_txn_init(&t);
	if (!rc)
		rc = etcd_txn_put(&t, ETCD_SUCCESS, key, "v", 1);
	if (!rc)
		rc = etcd_client_txn(c, &t, &r);
	etcd_txn_result_release(&r);
	etcd_txn_release(&t);
	etcd_client_free(c);
	return rc;
}

/* 1 when key exists, 0 when not, negative when etcd did not answer. */
static int has_key(const char *members, const char *key)
{
	struct etcd_range r = { 0 };
	etcd_client *c;
	char err[256];
	int rc;

	if (etcd_client_new(members, &c, err, sizeof(err)))
		fail_msg("%s", err);
	rc = etcd_client_range(c, key, NULL, 0, 0, &r);
	if (!rc)
		rc = r.n > 0;
	etcd_range_release(&r);
	etcd_client_free(c);
	return rc;
}

static void test_no_services(void **state)
{
	struct suite *s = load("version: 1\nsuite: s\nroutes:\n"
			       "  - {name: r, command: [p], journal: j, target: 'sqlite:t',"
			       " observe: {sql: 'SELECT 1, 1'}}\nscenarios:\n  - name: a\n");
	char dir[300], err[512];
	services *sv;

	snprintf(dir, sizeof(dir), "%s/none", base);
	assert_int_equal(services_start(s, dir, &sv, err, sizeof(err)), 0);
	assert_null(services_address(sv, "etcd"));
	assert_int_equal(services_enter(sv, true, err, sizeof(err)), 0);
	assert_int_equal(services_clean(sv, "fc_0123456789ab_x", err, sizeof(err)), 0);
	assert_int_equal(services_leave(sv, err, sizeof(err)), 0);
	assert_int_equal(services_member(sv, "", "m1", false, err, sizeof(err)),
			 FC_USAGE);
	services_free(sv);
	assert_int_equal(access(dir, F_OK), -1); /* nothing was created */
	suite_free(s);
}

static void test_schedule_id(void **state)
{
	char a[64], b[64];

	services_schedule_id("r0-s1-J5", a, sizeof(a));
	services_schedule_id("r0-s1-J5", b, sizeof(b));
	assert_int_equal(strncmp(a, "fc_", 3), 0);
	assert_string_equal(a + 15, "_r0_s1_j5");
	assert_string_not_equal(a, b); /* a fresh namespace every time */
	services_schedule_id("a-very-long-tag-that-goes-on-and-on-and-on-and-on-and-on-x",
			     a, sizeof(a));
	assert_true(strlen(a) <= 63);
}

static void test_etcd(void **state)
{
	struct suite *s = load("version: 1\nsuite: s\n"
			       "services:\n  - {name: etcd, kind: etcd, members: 3}\n"
			       "routes:\n  - {name: r, command: [p],"
			       " journal: 'etcd://{service:etcd}/{schedule_id}/j',"
			       " target: 'sqlite:t', observe: {sql: 'SELECT 1, 1'}}\n"
			       "scenarios:\n  - name: a\n");
	char dir[300], err[512], id[64], other[64], key[128], m2[64];
	struct template_vars v = { .service = services_address };
	const char *addr;
	char *url = NULL;
	services *sv;

	snprintf(dir, sizeof(dir), "%s/svc", base);
	if (services_start(s, dir, &sv, err, sizeof(err)))
		fail_msg("%s", err);
	assert_int_equal(procs_with(dir), 3);

	/* the address, and the templates that use it */
	addr = services_address(sv, "etcd");
	assert_non_null(addr);
	assert_int_equal(strncmp(addr, "127.0.0.1:", 10), 0);
	assert_non_null(strchr(strchr(addr, ',') + 1, ','));
	assert_null(strstr(addr, "http"));
	services_schedule_id("r0-s0-j0", id, sizeof(id));
	services_schedule_id("r0-s0-j1", other, sizeof(other));
	v.dir = dir;
	v.schedule_id = id;
	v.service_ctx = sv;
	assert_int_equal(scenario_expand(s->routes[0].journal, &v, &url, err,
					 sizeof(err)), 0);
	assert_true(strncmp(url, "etcd://", 7) == 0 &&
		    strncmp(url + 7, addr, strlen(addr)) == 0);
	assert_non_null(strstr(url, id));
	free(url);

	/* cleaning removes one schedule's keys, not another's */
	snprintf(key, sizeof(key), "%s/j/ops/x", id);
	assert_int_equal(put_key(addr, key), 0);
	snprintf(key, sizeof(key), "%s/j/ops/x", other);
	assert_int_equal(put_key(addr, key), 0);
	assert_int_equal(services_enter(sv, false, err, sizeof(err)), 0);
	assert_int_equal(services_clean(sv, id, err, sizeof(err)), 0);
	assert_int_equal(services_leave(sv, err, sizeof(err)), 0);
	snprintf(key, sizeof(key), "%s/j/ops/x", id);
	assert_int_equal(has_key(addr, key), 0);
	snprintf(key, sizeof(key), "%s/j/ops/x", other);
	assert_int_equal(has_key(addr, key), 1);
	assert_int_equal(services_clean(sv, "fc_", err, sizeof(err)), FC_USAGE);

	/* members: stop, refuse an unknown one, leave brings it back */
	snprintf(m2, sizeof(m2), "%.*s", (int)strcspn(strchr(addr, ',') + 1, ","),
		 strchr(addr, ',') + 1);
	assert_int_equal(services_enter(sv, true, err, sizeof(err)), 0);
	assert_int_equal(services_member(sv, "", "m2", false, err, sizeof(err)), 0);
	assert_true(has_key(m2, key) < 0);      /* m2 is down */
	assert_int_equal(has_key(addr, key), 1); /* a quorum is left */
	assert_int_equal(procs_with(dir), 2);
	assert_int_equal(services_member(sv, "etcd", "m9", false, err, sizeof(err)),
			 FC_USAGE);
	assert_non_null(strstr(err, "no member 'm9'"));
	assert_int_equal(services_member(sv, "pg", "m1", false, err, sizeof(err)),
			 FC_USAGE);
	assert_int_equal(services_leave(sv, err, sizeof(err)), 0);
	assert_int_equal(has_key(m2, key), 1);   /* m2 serves again */
	assert_int_equal(procs_with(dir), 3);

	services_free(sv);
	assert_int_equal(procs_with(dir), 0);
	assert_int_equal(access(dir, F_OK), -1);
	suite_free(s);
}

/* Run sql on url; returns the first value of the first row ("" if none). */
static char *pg_query(const char *url, const char *sql)
{
	PGconn *c = PQconnectdb(url);
	PGresult *r;
	char *out;

	if (PQstatus(c) != CONNECTION_OK)
		fail_msg("connect: %s", PQerrorMessage(c));
	r = PQexec(c, sql);
	if (PQresultStatus(r) != PGRES_COMMAND_OK &&
	    PQresultStatus(r) != PGRES_TUPLES_OK)
		fail_msg("%s: %s", sql, PQerrorMessage(c));
	out = strdup(PQntuples(r) ? PQgetvalue(r, 0, 0) : "");
	PQclear(r);
	PQfinish(c);
	return out;
}

/* The postgresql kind started by the harness (the entry's variable is
 * unset), and cleaning drops exactly one schedule's schemas. */
static void test_postgresql(void **state)
{
	struct suite *s = load("version: 1\nsuite: s\n"
			       "services:\n  - {name: pg, kind: postgresql,"
			       " env: FC_TEST_SERVICES_UNSET}\n"
			       "routes:\n  - {name: r, command: [p],"
			       " journal: '{service:pg}?schema={schedule_id}_j',"
			       " target: 'sqlite:t', observe: {sql: 'SELECT 1, 1'}}\n"
			       "scenarios:\n  - name: a\n");
	char dir[300], err[512], id[64], other[64], sql[300];
	const char *url;
	char *v;
	services *sv;

	unsetenv("FC_TEST_SERVICES_UNSET");
	snprintf(dir, sizeof(dir), "%s/pgsvc", base);
	if (services_start(s, dir, &sv, err, sizeof(err)))
		fail_msg("%s", err);
	url = services_address(sv, "pg");
	assert_non_null(url);
	assert_int_equal(strncmp(url, "postgresql://", 13), 0);
	assert_true(procs_with(dir) >= 1); /* the postmaster */
	services_schedule_id("r0-s0-j0", id, sizeof(id));
	services_schedule_id("r0-s0-j1", other, sizeof(other));
	snprintf(sql, sizeof(sql), "CREATE SCHEMA %s_j; CREATE TABLE %s_j.t(x int)",
		 id, id);
	free(pg_query(url, sql));
	snprintf(sql, sizeof(sql), "CREATE SCHEMA %s_j", other);
	free(pg_query(url, sql));
	assert_int_equal(services_clean(sv, id, err, sizeof(err)), 0);
	snprintf(sql, sizeof(sql), "SELECT count(*) FROM pg_namespace WHERE "
		 "nspname IN ('%s_j', '%s_j')", id, other);
	v = pg_query(url, sql);
	assert_string_equal(v, "1"); /* ours dropped, the other kept */
	free(v);
	snprintf(sql, sizeof(sql), "DROP SCHEMA %s_j", other);
	free(pg_query(url, sql));
	services_free(sv);
	assert_int_equal(procs_with(dir), 0);
	assert_int_equal(access(dir, F_OK), -1);
	suite_free(s);
}

static void test_ci_dir_override(void **state)
{
	struct suite *s = load("version: 1\nsuite: s\n"
			       "services:\n  - {name: etcd, kind: etcd}\n"
			       "routes:\n  - {name: r, command: [p], journal: j,"
			       " target: 'sqlite:t', observe: {sql: 'SELECT 1, 1'}}\n"
			       "scenarios:\n  - name: a\n");
	char *saved = strdup(getenv("FENCECERT_CI_DIR"));
	char dir[300], err[512];
	services *sv = (services *)&sv;

	snprintf(dir, sizeof(dir), "%s/bad", base);
	setenv("FENCECERT_CI_DIR", "/nonexistent", 1);
	assert_int_equal(services_start(s, dir, &sv, err, sizeof(err)), FC_IO);
	assert_null(sv);
	assert_non_null(strstr(err, "FENCECERT_CI_DIR '/nonexistent'"));
	setenv("FENCECERT_CI_DIR", saved, 1);
	free(saved);
	suite_free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_no_services),
		cmocka_unit_test(test_schedule_id),
		cmocka_unit_test(test_ci_dir_override),
		cmocka_unit_test(test_etcd),
		cmocka_unit_test(test_postgresql),
	};
	char cwd[200], ci[256];
	int rc;

	if (!getenv("FENCECERT_CI_DIR") && getcwd(cwd, sizeof(cwd))) {
		snprintf(ci, sizeof(ci), "%s/ci", cwd);
		setenv("FENCECERT_CI_DIR", ci, 1);
	}
	snprintf(base, sizeof(base), "/tmp/fc-test-services-XXXXXX");
	if (!mkdtemp(base) || chmod(base, 0755) < 0) /* pg-up runs as postgres */
		return 1;
	rc = cmocka_run_group_tests_name("services", tests, NULL, NULL);
	rmdir(base);
	return rc;
}
