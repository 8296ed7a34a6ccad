/*
 * test_journal_pg.c -- the journal conformance suite on PostgreSQL, then
 * what only the PostgreSQL adapter promises: a stopped, restarted or hung
 * server is FC_JOURNAL_UNAVAILABLE within seconds and the same handle
 * works again afterwards; lock waits are bounded; schemas isolate
 * journals; the schema is created once, refused when foreign or newer; no
 * password reaches a message.
 *
 * The server is $FENCECERT_PG_URL when set, else one started here with
 * ci/pg-up in a temp dir.  Tests that stop or freeze a server always use a
 * server of their own (the one started here, or a second private one), so
 * a shared CI server is never disturbed.  Every journal lives in its own
 * schema ("?schema=fc_t_PID_N"); the schemas are dropped at the end.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <libpq-fe.h>

#include "common/fsutil.h"
#include "journal/journal.h"
#include "tests/journal_conformance.h"
#include "tests/pg_server.h"

#define MAX_SCHEMAS 256

static char base_url[512];    /* the server for the conformance suite */
static char own_dir[64];      /* set when we started base_url ourselves */
static char priv_dir[64];     /* a server this binary may stop and freeze */
static char priv_url[512];
static char *schemas[MAX_SCHEMAS];
static int n_schemas;

/* assert_int_equal for port calls, with the journal's message on failure */
#define assert_rc(j, call, want) do { \
	int rc_ = (call); \
	if (rc_ != (want)) \
		fail_msg("%s: got %s, want %s: %s", #call, error_name(rc_), \
			 error_name(want), journal_errmsg(j)); \
} while (0)

/* ---- servers ------------------------------------------------------------ */

/* ci/pg-up, ci/pg-down: pg_server_script() (tests/pg_server.c). */
#define pg_script pg_server_script

/*
 * A process that outlives us and stops the server in dir once we are gone,
 * however we go (an abort, a timeout's SIGKILL of our process group): it
 * waits for end-of-file on a pipe whose write end only this process holds
 * (close-on-exec, so neither pg-up nor the server inherits it).  After a
 * normal exit it finds nothing left to do.
 */
static void start_reaper(const char *dir)
{
	char cmd[256], c;
	int fds[2], null;
	pid_t pid;

	if (pipe2(fds, O_CLOEXEC))
		return;
	snprintf(cmd, sizeof(cmd), "ci/pg-down '%s'; rm -rf '%s'", dir, dir);
	pid = fork();
	if (pid == 0) {
		setsid();
		close(fds[1]);
		if ((null = open("/dev/null", O_RDWR)) >= 0) {
			dup2(null, 0);
			dup2(null, 1);
			dup2(null, 2);
		}
		while (read(fds[0], &c, 1) < 0 && errno == EINTR)
			;
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	close(fds[0]);
	if (pid < 0)
		close(fds[1]);
}

static int start_server(char *dir, size_t dlen, char *url, size_t ulen)
{
	char tmpl[] = "/tmp/fc-pg-test-XXXXXX";

	if (!mkdtemp(tmpl))
		return -1;
	snprintf(dir, dlen, "%s", tmpl);
	start_reaper(dir);
	if (pg_script("pg-up", dir, url, ulen) == 0)
		return 0;
	fprintf(stderr, "cannot start a server with 'ci/pg-up %s' (run from "
		"the source tree, as root or the postgres user)\n", dir);
	return -1;
}

static void stop_server(const char *dir)
{
	if (!dir[0])
		return;
	pg_script("pg-down", dir, NULL, 0);
	if (fs_remove_tree(dir))
		fprintf(stderr, "cannot remove '%s'\n", dir);
}

/* The private server, started on first use. */
static const char *private_url(void)
{
	if (!priv_url[0] &&
	    start_server(priv_dir, sizeof(priv_dir), priv_url, sizeof(priv_url)))
		fail_msg("no private PostgreSQL server");
	return priv_url;
}

/* ---- URLs and raw connections ------------------------------------------ */

/* server URL + a fresh schema (+ extra parameters, "&k=v..."). */
static char *schema_url(const char *server, const char *extra, char **name)
{
	static int counter;
	char *url, *schema;

	if (asprintf(&schema, "fc_t_%ld_%d", (long)getpid(), counter++) < 0)
		return NULL;
	if (asprintf(&url, "%s%cschema=%s%s", server,
		     strchr(server, '?') ? '&' : '?', schema,
		     extra ? extra : "") < 0) {
		free(schema);
		return NULL;
	}
	if (n_schemas < MAX_SCHEMAS && strcmp(server, base_url) == 0)
		schemas[n_schemas++] = strdup(schema);
	if (name)
		*name = schema;
	else
		free(schema);
	return url;
}

static char *conformance_url(void)
{
	return schema_url(base_url, NULL, NULL);
}

static PGconn *raw_connect(const char *url)
{
	PGconn *c = PQconnectdb(url);

	if (PQstatus(c) != CONNECTION_OK)
		fail_msg("raw connect: %s", PQerrorMessage(c));
	return c;
}

/* Run sql; returns the first value of the first row ("" if none) in buf,
 * or fails the test unless the statement is expected to fail. */
static int raw_exec(PGconn *c, const char *sql, char *buf, size_t len,
		    int may_fail)
{
	PGresult *r = PQexec(c, sql);
	int ok = PQresultStatus(r) == PGRES_COMMAND_OK ||
		 PQresultStatus(r) == PGRES_TUPLES_OK;

	if (!ok && !may_fail)
		fail_msg("'%s': %s", sql, PQresultErrorMessage(r));
	if (buf)
		snprintf(buf, len, "%s", ok && PQntuples(r) > 0 ?
			 PQgetvalue(r, 0, 0) : "");
	PQclear(r);
	return ok ? 0 : -1;
}

static journal *open_ok(const char *url)
{
	char err[512];
	journal *j = NULL;
	int rc = journal_open(url, &j, err, sizeof(err));

	if (rc)
		fail_msg("cannot open '%s': %s (%s)", url, err, error_name(rc));
	return j;
}

static long long mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void create(journal *j, const char *op, struct journal_entry *e)
{
	int created;

	assert_int_equal(journal_create_or_get(j, op, "intent", NULL, e,
					       &created), 0);
}

static int move(journal *j, const struct journal_entry *e, enum fc_state next,
		struct journal_entry *out)
{
	const struct journal_cas req = {
		.operation_id = e->operation_id,
		.expected_version = e->version,
		.next = next,
	};

	return journal_cas(j, &req, out);
}

/* ---- adapter tests ------------------------------------------------------ */

/*
 * pg-down: every call is UNAVAILABLE at once; pg-up: the same handles work
 * again, both the one whose calls saw the server go and one that made no
 * call meanwhile (its dead session must be noticed before a statement is
 * sent into it).
 */
static void test_server_restart(void **state)
{
	const char *url0 = private_url();
	char *url = schema_url(url0, NULL, NULL), again[512];
	struct journal_entry e, got;
	long long t0;
	journal *j, *quiet;

	(void)state;
	j = open_ok(url);
	quiet = open_ok(url);
	create(j, "restart", &e);
	assert_rc(quiet, journal_get(quiet, "restart", &got), 0);

	assert_int_equal(pg_script("pg-down", priv_dir, NULL, 0), 0);
	t0 = mono_ms();
	assert_rc(j, journal_get(j, "restart", &got), FC_JOURNAL_UNAVAILABLE);
	assert_rc(j, move(j, &e, FC_PREPARED, &got), FC_JOURNAL_UNAVAILABLE);
	assert_rc(j, journal_get(j, "restart", &got), FC_JOURNAL_UNAVAILABLE);
	assert_true(mono_ms() - t0 < 5000);
	assert_non_null(strstr(journal_errmsg(j), "127.0.0.1"));

	/* Same port, same URL: each handle reconnects on its next call. */
	assert_int_equal(pg_script("pg-up", priv_dir, again, sizeof(again)), 0);
	assert_string_equal(again, url0);
	assert_rc(j, journal_get(j, "restart", &got), 0);
	assert_int_equal(got.version, e.version);
	assert_rc(quiet, move(quiet, &e, FC_PREPARED, &e), 0);
	assert_rc(j, move(j, &e, FC_COMMITTING, &e), 0);
	assert_int_equal(e.version, 3);
	journal_close(quiet);
	journal_close(j);
	free(url);
}

/* A backend that stops answering: the call gives up after 1.5 timeout_ms
 * and calls the outcome unknown; the statement it sent may still run, and
 * once that backend is gone a re-read on the same handle sees a consistent
 * entry either way. */
static void test_hung_backend(void **state)
{
	const char *server = private_url();
	char app[64], extra[128], sql[192], pid[32];
	struct journal_entry e, got;
	struct journal_transition *t;
	long long t0, elapsed;
	PGconn *raw;
	journal *j;
	char *url;
	bool gone = false;
	size_t n;
	int rc;

	(void)state;
	snprintf(app, sizeof(app), "fc_hang_%ld", (long)getpid());
	snprintf(extra, sizeof(extra), "&timeout_ms=1000&application_name=%s",
		 app);
	url = schema_url(server, extra, NULL);
	j = open_ok(url);
	create(j, "hang", &e);
	/* Once through, so the CAS is prepared and the frozen call is the
	 * statement itself. */
	assert_rc(j, move(j, &e, FC_PREPARED, &e), 0);

	raw = raw_connect(server);
	snprintf(sql, sizeof(sql), "SELECT pid FROM pg_stat_activity WHERE "
		 "application_name = '%s'", app);
	raw_exec(raw, sql, pid, sizeof(pid), 0);
	assert_true(atoi(pid) > 0);
	assert_int_equal(kill(atoi(pid), SIGSTOP), 0);

	t0 = mono_ms();
	rc = move(j, &e, FC_COMMITTING, &got);
	elapsed = mono_ms() - t0;
	kill(atoi(pid), SIGCONT);
	assert_rc(j, rc, FC_JOURNAL_UNAVAILABLE);
	assert_true(elapsed >= 1000 && elapsed < 4000);
	assert_non_null(strstr(journal_errmsg(j), "outcome is unknown"));

	/* The frozen backend, resumed, may still commit the CAS it was sent,
	 * between any two of our reads.  This call drops its connection (the
	 * handle reconnects); once that backend has gone, nothing can move
	 * the entry, and the entry and its history must agree. */
	assert_rc(j, journal_get(j, "hang", &got), 0);
	snprintf(sql, sizeof(sql), "SELECT count(*) FROM pg_stat_activity "
		 "WHERE pid = %d", atoi(pid));
	for (t0 = mono_ms(); !gone && mono_ms() - t0 < 10000; usleep(20000)) {
		char live[16];

		raw_exec(raw, sql, live, sizeof(live), 0);
		gone = atoi(live) == 0;
	}
	assert_true(gone);
	assert_rc(j, journal_get(j, "hang", &got), 0);
	assert_true(got.version == 2 || got.version == 3);
	assert_int_equal(journal_history(j, "hang", &t, &n), 0);
	assert_int_equal(n, (size_t)got.version);
	free(t);
	PQfinish(raw);
	journal_close(j);
	free(url);
}

/* A row lock held elsewhere: the CAS waits lock_timeout, then UNAVAILABLE
 * with nothing changed; reads are not blocked; afterwards it applies. */
static void test_lock_timeout(void **state)
{
	char *schema, *url = schema_url(base_url, "&timeout_ms=1000", &schema);
	struct journal_entry e, got;
	char sql[256];
	long long t0, elapsed;
	PGconn *raw;
	journal *j;
	int rc;

	(void)state;
	j = open_ok(url);
	create(j, "locked", &e);
	raw = raw_connect(base_url);
	raw_exec(raw, "BEGIN", NULL, 0, 0);
	snprintf(sql, sizeof(sql), "SELECT 1 FROM %s.fencecert_operations "
		 "WHERE operation_id = 'locked' FOR UPDATE", schema);
	raw_exec(raw, sql, NULL, 0, 0);

	t0 = mono_ms();
	rc = move(j, &e, FC_PREPARED, &got);
	elapsed = mono_ms() - t0;
	assert_int_equal(rc, FC_JOURNAL_UNAVAILABLE);
	assert_true(elapsed >= 900 && elapsed < 3000);
	assert_int_equal(journal_get(j, "locked", &got), 0);
	assert_int_equal(got.version, 1);

	raw_exec(raw, "ROLLBACK", NULL, 0, 0);
	assert_int_equal(move(j, &e, FC_PREPARED, &got), 0);
	assert_int_equal(got.version, 2);
	PQfinish(raw);
	journal_close(j);
	free(url);
	free(schema);
}

/* Calls on a healthy server reuse one session (so statements stay
 * prepared): the backend pid does not change over many calls. */
static void test_one_session(void **state)
{
	char app[64], extra[96], sql[192], pid0[32], pid1[32];
	struct journal_entry e, got;
	PGconn *raw;
	journal *j;
	char *url;

	(void)state;
	snprintf(app, sizeof(app), "fc_one_%ld", (long)getpid());
	snprintf(extra, sizeof(extra), "&application_name=%s", app);
	url = schema_url(base_url, extra, NULL);
	j = open_ok(url);
	raw = raw_connect(base_url);
	snprintf(sql, sizeof(sql), "SELECT string_agg(pid::text, ',') FROM "
		 "pg_stat_activity WHERE application_name = '%s'", app);
	raw_exec(raw, sql, pid0, sizeof(pid0), 0);
	assert_true(atoi(pid0) > 0);
	create(j, "one", &e);
	for (int i = 0; i < 10; i++) {
		assert_rc(j, move(j, &e, i % 2 ? FC_PREPARING :
				  FC_FAILED_PRE_COMMIT, &e), 0);
		assert_rc(j, journal_get(j, "one", &got), 0);
	}
	raw_exec(raw, sql, pid1, sizeof(pid1), 0);
	assert_string_equal(pid0, pid1);
	PQfinish(raw);
	journal_close(j);
	free(url);
}

/*
 * A create_or_get racing the purge of the same operation must never
 * re-create it: it is ordered either before the purge (the old COMPLETE
 * entry, created 0) or after it (FC_PURGED).  The purge is held open in a
 * raw transaction while a child process asks; an adapter that re-created
 * the row would block on that transaction and succeed after its commit.
 */
static void test_create_racing_purge(void **state)
{
	static const enum fc_state path[] = {
		FC_PREPARED, FC_COMMITTING, FC_TARGET_COMMITTED, FC_COMPLETE,
	};
	char *schema, *url = schema_url(base_url, NULL, &schema);
	char sql[512], waiting[16];
	struct { int rc, created, state; } got = { -1, -1, -1 };
	struct journal_entry e;
	struct pollfd pfd;
	int fds[2], created, status;
	PGconn *raw;
	journal *j;
	pid_t pid;

	(void)state;
	j = open_ok(url);
	create(j, "pr", &e);
	for (size_t i = 0; i < sizeof(path) / sizeof(path[0]); i++)
		assert_rc(j, move(j, &e, path[i], &e), 0);

	raw = raw_connect(base_url);
	raw_exec(raw, "BEGIN", NULL, 0, 0);
	snprintf(sql, sizeof(sql), "DELETE FROM %s.fencecert_transitions WHERE "
		 "operation_id = 'pr'; DELETE FROM %s.fencecert_operations WHERE "
		 "operation_id = 'pr'; INSERT INTO %s.fencecert_purged VALUES "
		 "('pr', 'intent', 1)", schema, schema, schema);
	raw_exec(raw, sql, NULL, 0, 0);

	assert_int_equal(pipe(fds), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char err[512], app[700];
		struct journal_entry c;
		journal *k;

		/* The parent's handle is not ours to use or close. */
		snprintf(app, sizeof(app), "%s&application_name=fc_pr_%ld", url,
			 (long)getpid());
		if (journal_open(app, &k, err, sizeof(err)) == 0) {
			got.rc = journal_create_or_get(k, "pr", "intent", NULL,
						       &c, &got.created);
			got.state = got.rc ? -1 : (int)c.state;
		}
		if (write(fds[1], &got, sizeof(got)) != (ssize_t)sizeof(got))
			_exit(2);
		_exit(0);
	}
	close(fds[1]);

	/* Until the child answered or waits on the purge's locks. */
	pfd.fd = fds[0];
	pfd.events = POLLIN;
	snprintf(sql, sizeof(sql), "SELECT count(*) FROM pg_stat_activity WHERE "
		 "application_name = 'fc_pr_%ld' AND wait_event_type = 'Lock'",
		 (long)pid);
	for (int i = 0; i < 100 && poll(&pfd, 1, 100) == 0; i++) {
		raw_exec(raw, sql, waiting, sizeof(waiting), 0);
		if (strcmp(waiting, "0") != 0)
			break;
	}
	raw_exec(raw, "COMMIT", NULL, 0, 0);
	assert_int_equal(poll(&pfd, 1, 20000), 1);
	assert_int_equal(read(fds[0], &got, sizeof(got)), (ssize_t)sizeof(got));
	close(fds[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);

	if (got.rc != FC_PURGED) {
		assert_int_equal(got.rc, 0);
		assert_int_equal(got.created, 0);
		assert_int_equal(got.state, FC_COMPLETE);
	}
	assert_rc(j, journal_get(j, "pr", &e), FC_NOT_FOUND);
	assert_rc(j, journal_create_or_get(j, "pr", "intent", NULL, &e,
					   &created), FC_PURGED);
	PQfinish(raw);
	journal_close(j);
	free(url);
	free(schema);
}

static void test_no_password_in_messages(void **state)
{
	static const char *const urls[] = {
		"postgresql://fc:s3cr3t@127.0.0.1:1/fencecert",
		"postgresql://fc@127.0.0.1:1/fencecert?password=s3cr3t",
		"postgresql://fc:s3cr3t@127.0.0.1:1/fencecert?bogus=1",
	};
	char err[512];
	journal *j;

	(void)state;
	for (size_t i = 0; i < sizeof(urls) / sizeof(urls[0]); i++) {
		long long t0 = mono_ms();
		int rc = journal_open(urls[i], &j, err, sizeof(err));

		assert_true(rc == FC_JOURNAL_UNAVAILABLE || rc == FC_USAGE);
		assert_null(j);
		assert_true(mono_ms() - t0 < 6000);
		assert_null(strstr(err, "s3cr3t"));
		assert_non_null(strstr(err, "***"));
	}
}

static void test_url_forms(void **state)
{
	static const char *const bad[] = {
		"?schema=Upper", "?schema=1abc", "?schema=a-b", "?schema=",
		"?timeout_ms=0", "?timeout_ms=x", "?no_such_libpq_param=1",
	};
	char url[640], err[512];
	journal *j;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(url, sizeof(url), "postgresql://127.0.0.1:1/x%s",
			 bad[i]);
		assert_int_equal(journal_open(url, &j, err, sizeof(err)),
				 FC_USAGE);
	}
	/* A dead port is UNAVAILABLE, not a usage error. */
	assert_int_equal(journal_open("postgresql://127.0.0.1:1/x", &j, err,
				      sizeof(err)), FC_JOURNAL_UNAVAILABLE);
}

/* postgres:// names the same adapter. */
static void test_postgres_scheme(void **state)
{
	char url[640], err[512];
	struct journal_entry e;
	journal *j;
	int rc;

	(void)state;
	snprintf(url, sizeof(url), "postgres%s", strstr(base_url, "://"));
	rc = journal_open(url, &j, err, sizeof(err));
	if (rc == FC_USAGE && strstr(err, "unknown journal scheme"))
		skip(); /* journal.c does not route "postgres" yet */
	assert_int_equal(rc, 0);
	assert_int_equal(journal_get(j, "nothing", &e), FC_NOT_FOUND);
	journal_close(j);
}

static void test_schemas_isolate(void **state)
{
	char *sa, *ua = schema_url(base_url, NULL, &sa);
	char *ub = schema_url(base_url, NULL, NULL);
	char sql[256], v[64];
	struct journal_entry e;
	journal *a, *b;
	PGconn *raw;

	(void)state;
	a = open_ok(ua);
	b = open_ok(ub);
	create(a, "iso", &e);
	assert_int_equal(journal_get(b, "iso", &e), FC_NOT_FOUND);

	raw = raw_connect(base_url);
	snprintf(sql, sizeof(sql), "SELECT version FROM %s.fencecert_schema", sa);
	raw_exec(raw, sql, v, sizeof(v), 0);
	assert_int_equal(atoi(v), JOURNAL_SCHEMA_VERSION);
	snprintf(sql, sizeof(sql), "SELECT count(*) FROM %s.fencecert_schema", sa);
	raw_exec(raw, sql, v, sizeof(v), 0);
	assert_string_equal(v, "1");
	/* History is append-only, also for an operator with psql. */
	snprintf(sql, sizeof(sql), "UPDATE %s.fencecert_transitions SET epoch "
		 "= 7", sa);
	assert_int_equal(raw_exec(raw, sql, NULL, 0, 1), -1);
	snprintf(sql, sizeof(sql), "SELECT count(*) FROM %s.fencecert_purged",
		 sa);
	raw_exec(raw, sql, v, sizeof(v), 0);
	assert_string_equal(v, "0");
	PQfinish(raw);
	journal_close(a);
	journal_close(b);
	free(ua);
	free(ub);
	free(sa);
}

/* journal_open_readonly(): no DDL on a schema that has none, writes are
 * refused by the port and change nothing. */
static void test_readonly(void **state)
{
	char *sa, *ua = schema_url(base_url, NULL, &sa);
	char sql[256], v[64], err[512];
	struct journal_entry e;
	struct journal_cas cas = { .operation_id = "ro", .expected_version = 1,
				   .next = FC_COMMITTING };
	journal *j, *ro;
	PGconn *raw;

	(void)state;
	assert_int_equal(journal_open_readonly(ua, &ro, err, sizeof(err)), 0);
	assert_int_equal(journal_get(ro, "ro", &e), FC_JOURNAL_UNAVAILABLE);
	assert_non_null(strstr(journal_errmsg(ro), "no fencecert schema"));
	journal_close(ro);
	raw = raw_connect(base_url);
	snprintf(sql, sizeof(sql), "SELECT count(*) FROM pg_namespace WHERE "
		 "nspname = '%s'", sa);
	raw_exec(raw, sql, v, sizeof(v), 0);
	assert_string_equal(v, "0"); /* not even the schema was created */

	j = open_ok(ua);
	create(j, "ro", &e);
	assert_int_equal(journal_open_readonly(ua, &ro, err, sizeof(err)), 0);
	assert_int_equal(journal_get(ro, "ro", &e), 0);
	assert_int_equal(e.version, 1);
	assert_int_equal(journal_cas(ro, &cas, &e), FC_USAGE);
	assert_int_equal(journal_acquire_lease(ro, "ro", "me", 1000, &e),
			 FC_USAGE);
	assert_int_equal(journal_get(j, "ro", &e), 0);
	assert_int_equal(e.version, 1);
	assert_int_equal(e.lease_epoch, 0);
	journal_close(ro);
	journal_close(j);
	PQfinish(raw);
	free(ua);
	free(sa);
}

static void test_newer_or_foreign_schema_refused(void **state)
{
	char *sa, *ua = schema_url(base_url, NULL, &sa);
	char *sf, *uf = schema_url(base_url, NULL, &sf);
	struct journal_entry e;
	char sql[256], v[64];
	int from, to;
	PGconn *raw;
	journal *j;

	(void)state;
	j = open_ok(ua);
	create(j, "n", &e);
	journal_close(j);
	raw = raw_connect(base_url);
	snprintf(sql, sizeof(sql), "UPDATE %s.fencecert_schema SET version = 99",
		 sa);
	raw_exec(raw, sql, NULL, 0, 0);
	j = open_ok(ua);
	assert_int_equal(journal_get(j, "n", &e), FC_USAGE);
	assert_non_null(strstr(journal_errmsg(j), "newer"));
	assert_int_equal(journal_migrate(j, &from, &to), FC_USAGE);
	journal_close(j);

	/* A table of ours by name but not by origin is never adopted. */
	snprintf(sql, sizeof(sql), "CREATE SCHEMA %s; CREATE TABLE "
		 "%s.fencecert_operations(x int)", sf, sf);
	raw_exec(raw, sql, NULL, 0, 0);
	j = open_ok(uf);
	assert_rc(j, journal_get(j, "n", &e), FC_CORRUPT);
	assert_rc(j, journal_init(j), FC_CORRUPT);
	journal_close(j);
	snprintf(sql, sizeof(sql), "SELECT to_regclass('%s.fencecert_schema') "
		 "IS NULL", sf);
	raw_exec(raw, sql, v, sizeof(v), 0);
	assert_string_equal(v, "t");
	PQfinish(raw);
	free(ua);
	free(uf);
	free(sa);
	free(sf);
}

/* ---- main --------------------------------------------------------------- */

static void drop_schemas(void)
{
	PGconn *c = PQconnectdb(base_url);
	char sql[128];

	PQclear(PQexec(c, "SET client_min_messages = warning"));
	for (int i = 0; i < n_schemas; i++) {
		if (PQstatus(c) == CONNECTION_OK) {
			snprintf(sql, sizeof(sql), "DROP SCHEMA IF EXISTS %s "
				 "CASCADE", schemas[i]);
			PQclear(PQexec(c, sql));
		}
		free(schemas[i]);
	}
	PQfinish(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_server_restart),
		cmocka_unit_test(test_hung_backend),
		cmocka_unit_test(test_lock_timeout),
		cmocka_unit_test(test_one_session),
		cmocka_unit_test(test_create_racing_purge),
		cmocka_unit_test(test_no_password_in_messages),
		cmocka_unit_test(test_url_forms),
		cmocka_unit_test(test_postgres_scheme),
		cmocka_unit_test(test_schemas_isolate),
		cmocka_unit_test(test_newer_or_foreign_schema_refused),
		cmocka_unit_test(test_readonly),
	};
	const char *env = getenv("FENCECERT_PG_URL");
	int failed;

	/* A server killed under us must not kill the test with SIGPIPE. */
	signal(SIGPIPE, SIG_IGN);
	if (env && *env) {
		snprintf(base_url, sizeof(base_url), "%s", env);
	} else {
		if (start_server(own_dir, sizeof(own_dir), base_url,
				 sizeof(base_url)))
			return 1;
		/* Ours to stop and freeze as well. */
		snprintf(priv_dir, sizeof(priv_dir), "%s", own_dir);
		snprintf(priv_url, sizeof(priv_url), "%s", base_url);
	}
	failed = journal_conformance_run("postgresql", conformance_url);
	failed += cmocka_run_group_tests_name("journal postgresql", tests,
					      NULL, NULL);
	if (!own_dir[0])
		drop_schemas();
	else
		for (int i = 0; i < n_schemas; i++)
			free(schemas[i]);
	if (strcmp(priv_dir, own_dir) != 0)
		stop_server(priv_dir);
	stop_server(own_dir);
	return failed ? 1 : 0;
}
