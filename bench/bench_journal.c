/*
 * bench_journal.c -- the journal's CAS against the cheapest durable write
 * SQLite can do, measured in the same run on the same file system.
 *
 *   raw_update   one row, "UPDATE t SET v = v + 1" in its own
 *                BEGIN IMMEDIATE ... COMMIT, with the journal's pragmas (WAL,
 *                synchronous=FULL) and statements prepared once
 *   journal_cas  journal_cas() cycling one operation
 *                PREPARING <-> FAILED_PRE_COMMIT (a state change plus its
 *                history row per call)
 *
 * The two alternate for ROUNDS slices of SLICE_MS each and the verdict is
 * the median of the per-round ratios, so a neighbour's compile job slows
 * both sides of a ratio instead of one.  Exit status 1 below the target.
 * $FENCECERT_BENCH_SLICE_MS shortens or lengthens the slices.
 */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/fsutil.h"
#include "bench/common.h"
#include "journal/journal.h"

#define ROUNDS 9
#define SLICE_MS_DEFAULT 1200
#define TARGET_PERCENT 85.0

struct raw {
	sqlite3 *db;
	sqlite3_stmt *begin, *update, *commit;
};

static void die(const char *what, const char *why)
{
	fprintf(stderr, "bench_journal: %s: %s\n", what, why);
	exit(2);
}

static void raw_exec(sqlite3 *db, const char *sql)
{
	if (sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK)
		die(sql, sqlite3_errmsg(db));
}

static sqlite3_stmt *raw_prepare(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *st;

	if (sqlite3_prepare_v3(db, sql, -1, SQLITE_PREPARE_PERSISTENT, &st,
			       NULL) != SQLITE_OK)
		die(sql, sqlite3_errmsg(db));
	return st;
}

static void raw_open(struct raw *r, const char *path)
{
	if (sqlite3_open(path, &r->db) != SQLITE_OK)
		die(path, sqlite3_errmsg(r->db));
	sqlite3_busy_timeout(r->db, 10000);
	raw_exec(r->db, "PRAGMA journal_mode=WAL");
	raw_exec(r->db, "PRAGMA synchronous=FULL");
	raw_exec(r->db, "CREATE TABLE t(id INTEGER PRIMARY KEY, v INTEGER NOT NULL);"
			"INSERT INTO t VALUES(1, 0)");
	r->begin = raw_prepare(r->db, "BEGIN IMMEDIATE");
	r->update = raw_prepare(r->db, "UPDATE t SET v = v + 1 WHERE id = 1");
	r->commit = raw_prepare(r->db, "COMMIT");
}

static void raw_step(struct raw *r, sqlite3_stmt *st)
{
	if (sqlite3_step(st) != SQLITE_DONE)
		die("raw update", sqlite3_errmsg(r->db));
	sqlite3_reset(st);
}

/* Operations per second for slice_ms of raw updates. */
static double raw_slice(struct raw *r, double slice_s)
{
	double start = bench_now_s(), end = start + slice_s, t;
	long n = 0;

	do {
		raw_step(r, r->begin);
		raw_step(r, r->update);
		raw_step(r, r->commit);
		n++;
	} while ((t = bench_now_s()) < end);
	return (double)n / (t - start);
}

static double cas_slice(journal *j, struct journal_entry *e, double slice_s)
{
	double start = bench_now_s(), end = start + slice_s, t;
	long n = 0;

	do {
		const struct journal_cas req = {
			.operation_id = e->operation_id,
			.expected_version = e->version,
			.expected_states = STATE_BIT(e->state),
			.next = e->state == FC_PREPARING ? FC_FAILED_PRE_COMMIT
							 : FC_PREPARING,
		};

		if (journal_cas(j, &req, e))
			die("journal cas", journal_errmsg(j));
		n++;
	} while ((t = bench_now_s()) < end);
	return (double)n / (t - start);
}

int main(void)
{
	const char *env = getenv("FENCECERT_BENCH_SLICE_MS");
	const char *tmp = getenv("TMPDIR");
	double slice_s = (env ? atof(env) : SLICE_MS_DEFAULT) / 1000.0;
	double raw[ROUNDS], cas[ROUNDS], ratio[ROUNDS], result;
	char dir[512], path[600], url[620], err[512];
	struct journal_entry e;
	struct raw r;
	journal *j;
	int created;

	if (slice_s <= 0)
		die("FENCECERT_BENCH_SLICE_MS", "not a positive number");
	snprintf(dir, sizeof(dir), "%s/fc-bench-journal-XXXXXX",
		 tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(dir))
		die(dir, "cannot create temp dir");
	snprintf(path, sizeof(path), "%s/raw.db", dir);
	raw_open(&r, path);
	snprintf(url, sizeof(url), "sqlite:%s/journal.db", dir);
	if (journal_open(url, &j, err, sizeof(err)))
		die(url, err);
	if (journal_create_or_get(j, "bench-op", "bench-intent", NULL, &e,
				  &created))
		die("journal create", journal_errmsg(j));

	/* Warm both (page cache, WAL file, statement caches). */
	raw_slice(&r, slice_s / 10);
	cas_slice(j, &e, slice_s / 10);

	printf("%-7s %14s %14s %8s\n", "round", "raw_update/s", "journal_cas/s",
	       "ratio");
	for (int i = 0; i < ROUNDS; i++) {
		/* Alternate which goes first so drift favours neither. */
		if (i % 2 == 0) {
			raw[i] = raw_slice(&r, slice_s);
			cas[i] = cas_slice(j, &e, slice_s);
		} else {
			cas[i] = cas_slice(j, &e, slice_s);
			raw[i] = raw_slice(&r, slice_s);
		}
		ratio[i] = 100.0 * cas[i] / raw[i];
		printf("%-7d %14.0f %14.0f %7.1f%%\n", i + 1, raw[i], cas[i],
		       ratio[i]);
	}
	result = bench_median(ratio, ROUNDS);
	printf("%-7s %14.0f %14.0f %7.1f%%\n", "median", bench_median(raw, ROUNDS),
	       bench_median(cas, ROUNDS), result);
	printf("journal_cas_vs_raw_update: %.1f%% (target >= %.0f%%)\n", result,
	       TARGET_PERCENT);

	journal_close(j);
	sqlite3_finalize(r.begin);
	sqlite3_finalize(r.update);
	sqlite3_finalize(r.commit);
	sqlite3_close(r.db);
	if (fs_remove_tree(dir))
		fprintf(stderr, "cannot remove '%s'\n", dir);
	return result >= TARGET_PERCENT ? 0 : 1;
}
