/*
 * bench_journal_pg.c -- journal CAS rate on PostgreSQL against the rate of
 * a bare single-row UPDATE on the same server, measured in the same run.
 *
 *   journal:  journal_cas() around the cycle PREPARING -> PREPARED ->
 *             FAILED_PRE_COMMIT -> PREPARING on one operation (each CAS is
 *             one statement: guarded UPDATE plus its history INSERT);
 *   raw:      a libpq prepared "UPDATE ... SET v = v + 1, evidence = $1
 *             WHERE id = 1" on a one-row table, each its own transaction,
 *             on a connection set up as the adapter sets up its own
 *             (connect_timeout, statement/lock timeout, synchronous_commit
 *             on, the same schema).
 *
 * Both sides commit once per operation with fsync on, so the ratio is the
 * cost of the adapter's guard, history row and result parsing over the
 * commit every durable write pays.  The sides alternate operation by
 * operation (which one leads flips every round), so a burst of someone
 * else's fsyncs on a shared machine hits both alike; each side's rate is
 * the median over rounds.  Target: journal >= 80% of raw.
 *
 * Server: FENCECERT_PG_URL, else one started with ci/pg-up in a temp dir
 * (and stopped after).  Knobs: BENCH_ROUNDS (default 21), BENCH_OPS (per
 * side per round, default 60).
 *
 * Exit status: 0 when the run completed (the verdict is in the output), 1
 * when it could not run.
 */
#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench/common.h"
#include "journal/journal.h"

#define TARGET 0.80
#define EVIDENCE "{\"bench\":true}"

static char server[512];
static struct bench_service svc = { .kind = "pg" };

static int find_server(void)
{
	const char *url = getenv("FENCECERT_PG_URL");

	if (url && *url) {
		snprintf(server, sizeof(server), "%s", url);
		return 0;
	}
	return bench_service_up(&svc, server, sizeof(server));
}

/* ---- the two sides ------------------------------------------------------ */

/* One CAS; adds its wall time to *spent. */
static int journal_op(journal *j, struct journal_entry *e, double *spent)
{
	const struct journal_cas req = {
		.operation_id = e->operation_id,
		.expected_version = e->version,
		.expected_states = STATE_BIT(e->state),
		.next = bench_next_state(e->state),
		.evidence = EVIDENCE,
	};
	double t0 = bench_now_s();
	int rc = journal_cas(j, &req, e);

	*spent += bench_now_s() - t0;
	if (rc)
		fprintf(stderr, "bench_journal_pg: cas: %s (%s)\n",
			error_name(rc), journal_errmsg(j));
	return rc;
}

/* One baseline UPDATE; adds its wall time to *spent. */
static int raw_op(PGconn *c, double *spent)
{
	const char *param = EVIDENCE;
	double t0 = bench_now_s();
	PGresult *r = PQexecPrepared(c, "raw", 1, &param, NULL, NULL, 0);
	int ok;

	*spent += bench_now_s() - t0;
	ok = PQresultStatus(r) == PGRES_COMMAND_OK &&
	     strcmp(PQcmdTuples(r), "1") == 0;
	if (!ok)
		fprintf(stderr, "bench_journal_pg: raw update: %s\n",
			PQresultErrorMessage(r));
	PQclear(r);
	return ok ? 0 : -1;
}

/*
 * One round: ops pairs, the two sides alternating operation by operation
 * (which goes first flips every round), so a burst of someone else's I/O
 * lands on both sides alike.
 */
static int round_run(journal *j, struct journal_entry *e, PGconn *c, int ops,
		     int flip, double *jrate, double *rrate)
{
	double js = 0, rs = 0;
	int rc = 0;

	for (int i = 0; i < ops && !rc; i++) {
		if ((i + flip) % 2 == 0)
			rc = journal_op(j, e, &js) || raw_op(c, &rs);
		else
			rc = raw_op(c, &rs) || journal_op(j, e, &js);
	}
	*jrate = ops / js;
	*rrate = ops / rs;
	return rc;
}

/* ---- main --------------------------------------------------------------- */

static int raw_exec(PGconn *c, const char *sql)
{
	PGresult *r = PQexec(c, sql);
	int ok = PQresultStatus(r) == PGRES_COMMAND_OK ||
		 PQresultStatus(r) == PGRES_TUPLES_OK;

	if (!ok)
		fprintf(stderr, "bench_journal_pg: '%s': %s\n", sql,
			PQresultErrorMessage(r));
	PQclear(r);
	return ok ? 0 : -1;
}

/* The baseline's connection, configured as journal_pg.c configures its. */
static PGconn *raw_connect(const char *schema)
{
	const char *keys[] = { "connect_timeout", "dbname", NULL };
	const char *vals[] = { "5", server, NULL };
	char sql[512];
	PGconn *c = PQconnectdbParams(keys, vals, 1);

	if (PQstatus(c) != CONNECTION_OK) {
		fprintf(stderr, "bench_journal_pg: %s", PQerrorMessage(c));
		PQfinish(c);
		return NULL;
	}
	snprintf(sql, sizeof(sql), "SET statement_timeout = 10000;"
		 " SET lock_timeout = 10000; SET synchronous_commit = on;"
		 " SET default_transaction_isolation = 'read committed';"
		 " SET search_path = %s; SET client_min_messages = warning;"
		 " CREATE TABLE bench_raw(id int PRIMARY KEY, v bigint,"
		 " evidence text); INSERT INTO bench_raw VALUES (1, 0, '{}')",
		 schema);
	if (raw_exec(c, sql)) {
		PQfinish(c);
		return NULL;
	}
	PQclear(PQprepare(c, "raw", "UPDATE bench_raw SET v = v + 1,"
			  " evidence = $1 WHERE id = 1", 0, NULL));
	return c;
}

int main(void)
{
	int rounds = bench_env_int("BENCH_ROUNDS", 21), ops = bench_env_int("BENCH_OPS", 60);
	double *jr = calloc((size_t)rounds, sizeof(double));
	double *rr = calloc((size_t)rounds, sizeof(double));
	char schema[64], url[640], err[512], sql[128];
	struct journal_entry e;
	journal *j = NULL;
	PGconn *raw = NULL;
	double jm, rm;
	int rc = 0, created;

	if (!jr || !rr || find_server()) {
		fprintf(stderr, "bench_journal_pg: no PostgreSQL (set "
			"FENCECERT_PG_URL or run ci/install-deps)\n");
		bench_service_down(&svc);
		return 1;
	}
	snprintf(schema, sizeof(schema), "fc_bench_%d", (int)getpid());
	snprintf(url, sizeof(url), "%s%cschema=%s", server,
		 strchr(server, '?') ? '&' : '?', schema);
	if ((rc = journal_open(url, &j, err, sizeof(err))))
		fprintf(stderr, "bench_journal_pg: %s\n", err);
	else if ((rc = journal_create_or_get(j, "sha256:bench",
					     "sha256:intent",
					     "{\"dag\":\"bench\"}", &e,
					     &created)))
		fprintf(stderr, "bench_journal_pg: create: %s\n",
			journal_errmsg(j));
	/* The journal created the schema; the baseline's table joins it. */
	if (!rc && !(raw = raw_connect(schema)))
		rc = -1;
	/* Warm-up: prepared statements, caches, the WAL writer. */
	if (!rc)
		rc = round_run(j, &e, raw, 20, 0, &jm, &rm);
	for (int i = 0; i < rounds && !rc; i++)
		rc = round_run(j, &e, raw, ops, i % 2, &jr[i], &rr[i]);
	journal_close(j);
	if (raw) {
		snprintf(sql, sizeof(sql), "DROP SCHEMA %s CASCADE", schema);
		raw_exec(raw, sql);
		PQfinish(raw);
	}
	bench_service_down(&svc);
	if (rc) {
		free(jr);
		free(rr);
		return 1;
	}
	jm = bench_median(jr, rounds);
	rm = bench_median(rr, rounds);
	printf("%-34s %10s %10s %8s  %s\n", "benchmark", "ops/s", "baseline",
	       "ratio", "target");
	printf("%-34s %10.0f %10.0f %7.1f%%  >= %.0f%% %s\n",
	       "journal cas on postgresql vs update", jm, rm, 100 * jm / rm,
	       100 * TARGET, jm / rm >= TARGET ? "met" : "MISSED");
	printf("  (%d rounds x %d ops per side, medians, fsync on)\n", rounds,
	       ops);
	free(jr);
	free(rr);
	return 0;
}
