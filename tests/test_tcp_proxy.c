/*
 * test_tcp_proxy.c -- the fault proxy (harness/inject/tcp_proxy.c) with a real
 * PostgreSQL server behind it: what the client sees, and what the server
 * really did, read over a direct connection.
 *
 * The server is $FENCECERT_PG_URL when set, else one started here with
 * ci/pg-up (and stopped at the end).
 */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <libpq-fe.h>

#include "harness/inject/tcp_proxy.h"
#include "harness/inject/tcp_proxy_impl.h"

static char base_url[512];
static char own_dir[64];
static PGconn *direct;
static int table_no;
static char table[32];

/* ---- helpers ------------------------------------------------------------ */

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;

	assert_non_null(d);
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

static int count_threads(void)
{
	DIR *d = opendir("/proc/self/task");
	int n = 0;
	struct dirent *e;

	assert_non_null(d);
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

/* The thread count once it is `want`, or after 2 s whatever it is then.
 * A thread that pthread_join() has seen end can still be listed in
 * /proc/self/task for a moment while the kernel finishes its exit, so
 * a count taken right after a join may be one too high. */
static int threads_settled(int want)
{
	int n = count_threads();

	for (int i = 0; i < 200 && n != want; i++) {
		usleep(10000);
		n = count_threads();
	}
	return n;
}

static void ok(PGconn *c, const char *sql)
{
	PGresult *r = PQexec(c, sql);

	if (PQresultStatus(r) != PGRES_COMMAND_OK &&
	    PQresultStatus(r) != PGRES_TUPLES_OK)
		fail_msg("%s: %s", sql, PQerrorMessage(c));
	PQclear(r);
}

static void okf(PGconn *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void okf(PGconn *c, const char *fmt, ...)
{
	char sql[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(sql, sizeof(sql), fmt, ap);
	va_end(ap);
	ok(c, sql);
}

static long scalar(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static long scalar(const char *fmt, ...)
{
	char sql[512];
	va_list ap;
	PGresult *r;
	long v;

	va_start(ap, fmt);
	vsnprintf(sql, sizeof(sql), fmt, ap);
	va_end(ap);
	r = PQexec(direct, sql);
	if (PQresultStatus(r) != PGRES_TUPLES_OK)
		fail_msg("%s: %s", sql, PQerrorMessage(direct));
	v = atol(PQgetvalue(r, 0, 0));
	PQclear(r);
	return v;
}

/* A fresh table t<N>(k int) for one test. */
static void fresh_table(void)
{
	snprintf(table, sizeof(table), "proxy_t%d_%d", (int)getpid(), ++table_no);
	okf(direct, "CREATE TABLE %s (k int)", table);
}

static tcp_proxy *start(void)
{
	char err[256];
	tcp_proxy *p;

	if (tcp_proxy_start(base_url, TCP_PROXY_POSTGRESQL, &p, err, sizeof(err)))
		fail_msg("%s", err);
	return p;
}

static PGconn *via(tcp_proxy *p)
{
	char *url = tcp_proxy_rewrite_url(base_url, tcp_proxy_port(p));
	PGconn *c;

	assert_non_null(url);
	c = PQconnectdb(url);
	free(url);
	if (PQstatus(c) != CONNECTION_OK)
		fail_msg("connect through the proxy: %s", PQerrorMessage(c));
	return c;
}

static void arm(tcp_proxy *p, enum tcp_proxy_action a, int hit)
{
	tcp_proxy_arm(p, &(struct tcp_proxy_rule){ a, hit, 0 });
}

static long fired(tcp_proxy *p)
{
	struct tcp_proxy_stats st;

	tcp_proxy_stats(p, &st);
	return st.fired;
}

/* Run sql on c and say whether the client got an answer. */
static bool answered(PGconn *c, const char *sql)
{
	PGresult *r = PQexec(c, sql);
	bool good = PQresultStatus(r) == PGRES_COMMAND_OK ||
		    PQresultStatus(r) == PGRES_TUPLES_OK;

	PQclear(r);
	return good;
}

/* ---- the classifier ------------------------------------------------------- */

static void test_classify(void **state)
{
	static const struct {
		const char *sql;
		bool in_block;
		enum pgw_kind kind;
	} cases[] = {
		{ "COMMIT", true, PGW_COMMIT },
		{ "commit", true, PGW_COMMIT },
		{ "  \n\tCoMmIt;", true, PGW_COMMIT },
		{ "/* a /* nested */ comment */ -- and a line\n commit", true, PGW_COMMIT },
		{ "COMMIT PREPARED 'fc-1'", false, PGW_COMMIT },
		{ "END", true, PGW_COMMIT },
		{ "end transaction", true, PGW_COMMIT },
		{ "COMMIT AND CHAIN", true, PGW_COMMIT },
		{ "BEGIN; INSERT INTO t VALUES (1); COMMIT", false, PGW_COMMIT },
		{ "commitment", true, PGW_NONE },
		{ "endless", true, PGW_NONE },
		{ "SELECT 'COMMIT'", false, PGW_NONE },
		{ "SELECT $$; COMMIT$$", false, PGW_NONE },
		{ "SELECT \"commit\" FROM t", false, PGW_NONE },
		{ "-- COMMIT\nSELECT 1", false, PGW_NONE },
		{ "ROLLBACK", true, PGW_NONE },
		{ "PREPARE TRANSACTION 'x'", true, PGW_NONE },
		/* writes commit by themselves only outside a block */
		{ "INSERT INTO t VALUES (1)", false, PGW_WRITE },
		{ "INSERT INTO t VALUES (1)", true, PGW_NONE },
		{ "update t set k = 2", false, PGW_WRITE },
		{ "DELETE FROM t", false, PGW_WRITE },
		{ "WITH ins AS (INSERT INTO t VALUES (1) RETURNING k) SELECT k FROM ins", false, PGW_WRITE },
		{ "WITH x AS (SELECT 1) SELECT * FROM x", false, PGW_NONE },
		{ "WITH x AS (SELECT 'insert') SELECT * FROM x", false, PGW_NONE },
		{ "BEGIN; INSERT INTO t VALUES (1)", false, PGW_NONE },
		{ "SELECT 1", false, PGW_NONE },
		{ "", false, PGW_NONE },
		{ "/* unterminated", false, PGW_NONE },
		{ "SELECT 'unterminated", false, PGW_NONE },
		{ "COPY t FROM STDIN", false, PGW_COPY_IN },
		{ "copy t (a, b) from stdin with (format csv)", false, PGW_COPY_IN },
		{ "COPY t FROM STDIN", true, PGW_NONE },
		{ "COPY t TO STDOUT", false, PGW_NONE },
	};
	char what[96];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		enum pgw_kind k = tcp_proxy__pg_classify(cases[i].sql,
							 strlen(cases[i].sql),
							 cases[i].in_block,
							 what, sizeof(what));
		if (k != cases[i].kind)
			fail_msg("'%s' (in_block %d): got %d, want %d", cases[i].sql,
				 cases[i].in_block, k, cases[i].kind);
	}
}

/* A trigger split across reads is found once, where it starts. */
static void test_scan_split_messages(void **state)
{
	static const unsigned char msgs[] = {
		'S', 0, 0, 0, 4,                      /* Sync: not a query */
		'Q', 0, 0, 0, 11, 'C', 'O', 'M', 'M', 'I', 'T', 0,
	};
	struct pgw w;
	struct pgw_scan s;

	(void)state;
	tcp_proxy__pg_init(&w);
	w.phase = 1; /* after the startup message */
	for (size_t cut = 0; cut < sizeof(msgs); cut++) {
		size_t off;

		tcp_proxy__pg_init(&w);
		w.phase = 1;
		tcp_proxy__pg_scan(&w, msgs, cut, &s);
		off = s.decided;
		assert_false(s.trigger);
		assert_true(off <= 5);
		tcp_proxy__pg_scan(&w, msgs + off, sizeof(msgs) - off, &s);
		assert_true(s.trigger);
		assert_int_equal(off + s.trigger_at, 5);
		assert_int_equal(off + s.decided, sizeof(msgs));
		assert_string_equal(s.what, "Q COMMIT");
	}
}

/* An autocommit COPY FROM commits at its CopyDone, after the data: that
 * message is the trigger; in a block, or ended by CopyFail, none. */
static void test_scan_copy_done(void **state)
{
	static const unsigned char copy[] = {
		'Q', 0, 0, 0, 22, 'C', 'O', 'P', 'Y', ' ', 't', ' ', 'F', 'R', 'O',
		'M', ' ', 'S', 'T', 'D', 'I', 'N', 0,
		'd', 0, 0, 0, 8, 'a', ',', '1', '\n',  /* CopyData */
	};
	static const unsigned char done[] = { 'c', 0, 0, 0, 4 };
	static const unsigned char fail_msg_[] = { 'f', 0, 0, 0, 5, 0 };
	static const unsigned char ready_t[] = { 'Z', 0, 0, 0, 5, 'T' };
	struct pgw w;
	struct pgw_scan s;

	(void)state;
	tcp_proxy__pg_init(&w);
	w.phase = 1;
	tcp_proxy__pg_scan(&w, copy, sizeof(copy), &s);
	assert_false(s.trigger); /* the COPY itself commits nothing yet */
	assert_int_equal(s.decided, sizeof(copy));
	tcp_proxy__pg_scan(&w, done, sizeof(done), &s);
	assert_true(s.trigger);
	assert_int_equal(s.trigger_at, 0);
	assert_int_equal(s.decided, sizeof(done));
	assert_string_equal(s.what, "c CopyDone (autocommit COPY)");
	/* a second CopyDone without a COPY is nothing */
	tcp_proxy__pg_scan(&w, done, sizeof(done), &s);
	assert_false(s.trigger);

	/* CopyFail ends it without a commit */
	tcp_proxy__pg_init(&w);
	w.phase = 1;
	tcp_proxy__pg_scan(&w, copy, sizeof(copy), &s);
	tcp_proxy__pg_scan(&w, fail_msg_, sizeof(fail_msg_), &s);
	assert_false(s.trigger);
	tcp_proxy__pg_scan(&w, done, sizeof(done), &s);
	assert_false(s.trigger);

	/* inside a transaction block the COMMIT commits, not the CopyDone */
	tcp_proxy__pg_init(&w);
	w.phase = 1;
	assert_int_equal(tcp_proxy__pg_server(&w, ready_t, sizeof(ready_t)), 1);
	tcp_proxy__pg_scan(&w, copy, sizeof(copy), &s);
	tcp_proxy__pg_scan(&w, done, sizeof(done), &s);
	assert_false(s.trigger);
}

static void test_upstream_forms(void **state)
{
	char err[256], *u;
	tcp_proxy *p;

	(void)state;
	u = tcp_proxy_rewrite_url("postgresql://u:p@w@db.example:5433/x?a=b", 7);
	assert_string_equal(u, "postgresql://u:p@w@127.0.0.1:7/x?a=b");
	free(u);
	u = tcp_proxy_rewrite_url("127.0.0.1:2379", 9);
	assert_string_equal(u, "127.0.0.1:9");
	free(u);
	assert_int_equal(tcp_proxy_protocol_of("postgres://h/db"), TCP_PROXY_POSTGRESQL);
	assert_int_equal(tcp_proxy_protocol_of("http://h:1"), TCP_PROXY_RAW);
	assert_int_equal(tcp_proxy_start("127.0.0.1", TCP_PROXY_RAW, &p, err,
					 sizeof(err)), FC_USAGE);
	assert_null(p);
	assert_non_null(strstr(err, "no port"));
	assert_int_equal(tcp_proxy_start("http://[::1]:80", TCP_PROXY_RAW, &p,
					 err, sizeof(err)), FC_USAGE);
	/* postgresql:// without a port means 5432 */
	assert_int_equal(tcp_proxy_start("postgresql://127.0.0.1/db",
					 TCP_PROXY_POSTGRESQL, &p, err,
					 sizeof(err)), 0);
	tcp_proxy_free(p);
	tcp_proxy_free(NULL);
}

/* ---- against the server ------------------------------------------------------ */

/* Simple protocol: the COMMIT reaches the server, its answer never the
 * client; the server has committed. */
static void test_cut_after_commit_simple(void **state)
{
	tcp_proxy *p = start();
	PGconn *c = via(p);

	(void)state;
	fresh_table();
	ok(c, "BEGIN");
	okf(c, "INSERT INTO %s VALUES (1)", table);
	arm(p, TCP_PROXY_CUT_REPLY, 1);
	assert_false(answered(c, "COMMIT"));
	assert_int_equal(PQstatus(c), CONNECTION_BAD);
	assert_int_equal(fired(p), 1); /* counted once the answer is cut */
	{
		struct tcp_proxy_stats st;

		tcp_proxy_stats(p, &st);
		assert_string_equal(st.last, "relayed Q COMMIT, cut its answer");
	}
	assert_int_equal(scalar("SELECT count(*) FROM %s", table), 1);
	PQfinish(c);
	tcp_proxy_free(p);
}

/* Extended protocol (Parse/Bind/Execute) and COMMIT PREPARED. */
static void test_cut_after_commit_prepared(void **state)
{
	tcp_proxy *p = start();
	PGconn *c = via(p);
	char gid[64];
	PGresult *r;

	(void)state;
	fresh_table();
	snprintf(gid, sizeof(gid), "proxy-test-%d", (int)getpid());
	ok(c, "BEGIN");
	okf(c, "INSERT INTO %s VALUES (2)", table);
	okf(c, "PREPARE TRANSACTION '%s'", gid);
	assert_int_equal(scalar("SELECT count(*) FROM %s", table), 0);
	arm(p, TCP_PROXY_CUT_REPLY, 1);
	{
		char sql[128];

		snprintf(sql, sizeof(sql), "COMMIT PREPARED '%s'", gid);
		r = PQexecParams(c, sql, 0, NULL, NULL, NULL, NULL, 0);
	}
	assert_int_not_equal(PQresultStatus(r), PGRES_COMMAND_OK);
	PQclear(r);
	assert_int_equal(fired(p), 1);
	assert_int_equal(scalar("SELECT count(*) FROM %s", table), 1);
	assert_int_equal(scalar("SELECT count(*) FROM pg_prepared_xacts "
				"WHERE gid = '%s'", gid), 0);
	PQfinish(c);
	tcp_proxy_free(p);
}

/* An autocommit write through a named prepared statement commits by
 * itself; `hit` counts triggers, and a write inside a block is none. */
static void test_cut_autocommit_write_by_hit(void **state)
{
	tcp_proxy *p = start();
	PGconn *c = via(p);
	char sql[128];
	PGresult *r;
	const char *v = "7";

	(void)state;
	fresh_table();
	snprintf(sql, sizeof(sql), "INSERT INTO %s VALUES ($1::int)", table);
	r = PQprepare(c, "ins", sql, 1, NULL);
	assert_int_equal(PQresultStatus(r), PGRES_COMMAND_OK);
	PQclear(r);
	arm(p, TCP_PROXY_CUT_REPLY, 3);
	ok(c, "BEGIN");  /* not a trigger */
	r = PQexecPrepared(c, "ins", 1, &v, NULL, NULL, 0); /* in a block: none */
	assert_int_equal(PQresultStatus(r), PGRES_COMMAND_OK);
	PQclear(r);
	ok(c, "COMMIT"); /* trigger 1 */
	r = PQexecPrepared(c, "ins", 1, &v, NULL, NULL, 0); /* trigger 2 */
	assert_int_equal(PQresultStatus(r), PGRES_COMMAND_OK);
	PQclear(r);
	assert_int_equal(fired(p), 0);
	r = PQexecPrepared(c, "ins", 1, &v, NULL, NULL, 0); /* trigger 3: cut */
	assert_int_not_equal(PQresultStatus(r), PGRES_COMMAND_OK);
	PQclear(r);
	assert_int_equal(fired(p), 1);
	assert_int_equal(scalar("SELECT count(*) FROM %s", table), 3);
	PQfinish(c);
	tcp_proxy_free(p);
}

/* The COMMIT is held: the transaction stays open on the server (its row
 * invisible, its backend idle in transaction) until release; then the
 * client gets its answer. */
static void test_hold_commit(void **state)
{
	tcp_proxy *p = start();
	PGconn *c = via(p);
	struct tcp_proxy_stats st;
	PGresult *r;
	int pid;

	(void)state;
	fresh_table();
	pid = PQbackendPID(c);
	ok(c, "BEGIN");
	okf(c, "INSERT INTO %s VALUES (3)", table);
	arm(p, TCP_PROXY_HOLD, 0);
	assert_int_equal(PQsendQuery(c, "COMMIT"), 1);
	do { /* wait for the condition, not for a time */
		tcp_proxy_stats(p, &st);
	} while (st.held == 0 && usleep(1000) == 0);
	assert_int_equal(st.fired, 1);
	assert_string_equal(st.last, "held Q COMMIT");
	assert_int_equal(scalar("SELECT count(*) FROM %s", table), 0);
	assert_int_equal(scalar("SELECT count(*) FROM pg_stat_activity WHERE pid "
				"= %d AND state = 'idle in transaction'", pid), 1);
	tcp_proxy_release(p);
	r = PQgetResult(c);
	assert_int_equal(PQresultStatus(r), PGRES_COMMAND_OK);
	PQclear(r);
	assert_null(PQgetResult(c));
	assert_int_equal(scalar("SELECT count(*) FROM %s", table), 1);
	tcp_proxy_stats(p, &st);
	assert_int_equal(st.held, 0);
	PQfinish(c);
	tcp_proxy_free(p);
}

/* A held COMMIT whose client went away still reaches the server on
 * release: the late commit a zombie worker can cause. */
static void test_hold_commit_client_gone(void **state)
{
	tcp_proxy *p = start();
	PGconn *c = via(p);
	struct tcp_proxy_stats st;
	long long deadline;

	(void)state;
	fresh_table();
	ok(c, "BEGIN");
	okf(c, "INSERT INTO %s VALUES (4)", table);
	arm(p, TCP_PROXY_HOLD, 1);
	assert_int_equal(PQsendQuery(c, "COMMIT"), 1);
	do {
		tcp_proxy_stats(p, &st);
	} while (st.held == 0 && usleep(1000) == 0);
	PQfinish(c); /* the client dies waiting */
	assert_int_equal(scalar("SELECT count(*) FROM %s", table), 0);
	tcp_proxy_release(p);
	deadline = now_ms() + 30000; /* a bound, not an expectation */
	while (scalar("SELECT count(*) FROM %s", table) == 0 && now_ms() < deadline)
		usleep(2000);
	assert_int_equal(scalar("SELECT count(*) FROM %s", table), 1);
	tcp_proxy_free(p);
}

/* refuse: open connections are reset, new ones refused; disarmed, the
 * server is back. */
static void test_refuse(void **state)
{
	tcp_proxy *p = start();
	PGconn *c = via(p), *d;
	char *url = tcp_proxy_rewrite_url(base_url, tcp_proxy_port(p));

	(void)state;
	arm(p, TCP_PROXY_REFUSE, 0);
	assert_false(answered(c, "SELECT 1"));
	d = PQconnectdb(url);
	assert_int_not_equal(PQstatus(d), CONNECTION_OK);
	PQfinish(d);
	assert_true(fired(p) >= 2);
	tcp_proxy_disarm(p);
	d = PQconnectdb(url);
	assert_int_equal(PQstatus(d), CONNECTION_OK);
	assert_true(answered(d, "SELECT 1"));
	PQfinish(d);
	PQfinish(c);
	free(url);
	tcp_proxy_free(p);
}

/* delay_ms: every chunk waits at least that long. */
static void test_delay(void **state)
{
	tcp_proxy *p = start();
	PGconn *c = via(p);
	struct tcp_proxy_stats st;
	long long t0;

	(void)state;
	tcp_proxy_arm(p, &(struct tcp_proxy_rule){ TCP_PROXY_FORWARD, 0, 150 });
	t0 = now_ms();
	assert_true(answered(c, "SELECT 1"));
	assert_true(now_ms() - t0 >= 150);
	tcp_proxy_stats(p, &st);
	assert_int_equal(st.delayed, 1);
	assert_int_equal(st.fired, 0);
	PQfinish(c);
	tcp_proxy_free(p);
}

/* Nothing outlives a proxy: no socket, no thread, also with connections
 * open and one held at free time. */
static void test_no_leaks(void **state)
{
	/* the earlier tests' proxies are freed: their threads are gone once
	 * the kernel has finished their exits */
	int threads = threads_settled(1), fds = count_fds();
	tcp_proxy *p = start();
	PGconn *c = via(p), *d = via(p);

	(void)state;
	assert_int_equal(threads_settled(threads + 1), threads + 1);
	ok(c, "BEGIN");
	arm(p, TCP_PROXY_HOLD, 1);
	assert_int_equal(PQsendQuery(c, "COMMIT"), 1);
	tcp_proxy_free(p);
	PQfinish(c);
	PQfinish(d);
	assert_int_equal(count_fds(), fds);
	assert_int_equal(threads_settled(threads), threads);
}

/* ---- the server ------------------------------------------------------------ */

static int pg_script(const char *script, const char *dir, char *out, size_t len)
{
	char cmd[256];
	FILE *f;
	int rc;

	snprintf(cmd, sizeof(cmd), "ci/%s %s", script, dir);
	f = popen(cmd, "r");
	if (!f)
		return -1;
	if (out && (!fgets(out, (int)len, f) || !*out))
		out[0] = '\0';
	rc = pclose(f);
	if (out)
		out[strcspn(out, "\n")] = '\0';
	return rc == 0 && (!out || *out) ? 0 : -1;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_classify),
		cmocka_unit_test(test_scan_split_messages),
		cmocka_unit_test(test_scan_copy_done),
		cmocka_unit_test(test_upstream_forms),
		cmocka_unit_test(test_cut_after_commit_simple),
		cmocka_unit_test(test_cut_after_commit_prepared),
		cmocka_unit_test(test_cut_autocommit_write_by_hit),
		cmocka_unit_test(test_hold_commit),
		cmocka_unit_test(test_hold_commit_client_gone),
		cmocka_unit_test(test_refuse),
		cmocka_unit_test(test_delay),
		cmocka_unit_test(test_no_leaks),
	};
	const char *env = getenv("FENCECERT_PG_URL");
	int failed;

	if (env && *env) {
		snprintf(base_url, sizeof(base_url), "%s", env);
	} else {
		snprintf(own_dir, sizeof(own_dir), "/tmp/fc-proxy-test-XXXXXX");
		if (!mkdtemp(own_dir) ||
		    pg_script("pg-up", own_dir, base_url, sizeof(base_url))) {
			fprintf(stderr, "cannot start a server with ci/pg-up\n");
			return 1;
		}
	}
	direct = PQconnectdb(base_url);
	if (PQstatus(direct) != CONNECTION_OK) {
		fprintf(stderr, "cannot connect to '%s': %s", base_url,
			PQerrorMessage(direct));
		return 1;
	}
	failed = cmocka_run_group_tests_name("tcp proxy", tests, NULL, NULL);
	for (int i = 1; i <= table_no; i++) {
		snprintf(table, sizeof(table), "proxy_t%d_%d", (int)getpid(), i);
		okf(direct, "DROP TABLE IF EXISTS %s", table);
	}
	PQfinish(direct);
	if (own_dir[0]) {
		char cmd[128];

		pg_script("pg-down", own_dir, NULL, 0);
		snprintf(cmd, sizeof(cmd), "rm -rf %s", own_dir);
		if (system(cmd)) {
			/* a leftover directory in /tmp is harmless */
		}
	}
	return failed ? 1 : 0;
}
