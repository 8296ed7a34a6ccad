/*
 * bench_floor.c -- what one route attempt costs on this machine at the
 * least, whatever the harness: the floor that certification speed is
 * measured against.
 *
 * A minimal attempt does only what any journaled, fenced load must do
 * for one operation, with raw SQLite and nothing of fencecert:
 *   - the journal (WAL, synchronous=FULL): create the table if needed,
 *     insert the operation, then JOURNAL_STEPS more state changes, each in
 *     its own transaction (a compare-and-set UPDATE);
 *   - the target (WAL, synchronous=FULL): one transaction with ROWS rows
 *     and the fence row;
 *   - the evidence: two small files written atomically (write, fsync,
 *     rename, fsync of the directory);
 *   - close both databases.
 * Three attempts (three operations) go into each fresh directory, like
 * the tries of one schedule; files live on tmpfs (/dev/shm, else $TMPDIR),
 * where certify keeps its schedules.
 *
 * Two ways, alternating in rounds so a neighbour's load hits both alike:
 *   in-process   the attempts run in this process, one after another;
 *   forked       each attempt in a child forked from this process (which
 *                has SQLite initialised, like a fork server), waited for.
 * Reported: CPU ms per attempt (user + system, parent and children) for
 * each, the median over rounds, and their difference: what the process
 * boundary itself costs (fork, copy-on-write faults, page-table set-up and
 * teardown, reopening the files).  Route attempts are processes by design
 * (a kill must kill), so the forked figure is the floor a harness pays per
 * attempt; bench_certify.sh divides its own CPU per attempt by it.
 *
 * Knobs: BENCH_FLOOR_ROUNDS (default 5), BENCH_FLOOR_SCHEDULES (directories
 * per round and way, default 40), BENCH_FLOOR_ROWS (default 20, the
 * exhaustive suite's partition), BENCH_FLOOR_ATTEMPTS_PER_SCHEDULE (when
 * set, also the schedules/s that many forked attempts per schedule allow
 * on this machine's CPUs with a harness that costs nothing).  Prints one
 * "floor:" line per figure.
 */
#include <errno.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench/common.h"
#include "common/fsutil.h"

#define JOURNAL_STEPS 6   /* state changes after the insert */
#define ATTEMPTS_PER_DIR 3

static void die(const char *what, const char *why)
{
	fprintf(stderr, "bench_floor: %s: %s\n", what, why);
	exit(2);
}

static void exec_sql(sqlite3 *db, const char *sql)
{
	char *err = NULL;

	if (sqlite3_exec(db, sql, NULL, NULL, &err) != SQLITE_OK)
		die(sql, err ? err : sqlite3_errmsg(db));
}

static sqlite3 *open_wal(const char *dir, const char *name, const char *schema)
{
	char path[4096];
	sqlite3 *db;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (sqlite3_open(path, &db) != SQLITE_OK)
		die(path, sqlite3_errmsg(db));
	sqlite3_busy_timeout(db, 5000);
	exec_sql(db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL");
	exec_sql(db, schema);
	return db;
}

static void fsync_path(const char *path, int flags)
{
	int fd = open(path, flags | O_CLOEXEC);

	if (fd < 0 || fsync(fd) || close(fd))
		die(path, strerror(errno));
}

static void atomic_file(const char *dir, const char *name, int op)
{
	char tmp[4096], final[4096], body[64];
	int fd, n;

	snprintf(tmp, sizeof(tmp), "%s/.%s.tmp", dir, name);
	snprintf(final, sizeof(final), "%s/%s", dir, name);
	n = snprintf(body, sizeof(body), "{\"operation\": %d}\n", op);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || write(fd, body, (size_t)n) != n || fsync(fd) || close(fd))
		die(tmp, strerror(errno));
	if (rename(tmp, final))
		die(final, strerror(errno));
	fsync_path(dir, O_RDONLY | O_DIRECTORY);
}

static void attempt(const char *dir, int op, int rows)
{
	sqlite3 *j, *t;
	sqlite3_stmt *st;
	char sql[128];

	j = open_wal(dir, "journal.db", "CREATE TABLE IF NOT EXISTS ops "
		     "(id INTEGER PRIMARY KEY, state INTEGER NOT NULL)");
	snprintf(sql, sizeof(sql), "INSERT INTO ops VALUES (%d, 0)", op);
	exec_sql(j, sql);
	for (int s = 1; s <= JOURNAL_STEPS; s++) {
		snprintf(sql, sizeof(sql), "UPDATE ops SET state = %d "
			 "WHERE id = %d AND state = %d", s, op, s - 1);
		exec_sql(j, sql);
		if (sqlite3_changes(j) != 1)
			die("journal", "compare-and-set lost");
	}
	t = open_wal(dir, "target.db", "CREATE TABLE IF NOT EXISTS events "
		     "(row_key TEXT, payload TEXT); CREATE TABLE IF NOT EXISTS "
		     "fence (op INTEGER PRIMARY KEY)");
	exec_sql(t, "BEGIN IMMEDIATE");
	if (sqlite3_prepare_v2(t, "INSERT INTO events VALUES (?, ?)", -1, &st,
			       NULL) != SQLITE_OK)
		die("prepare", sqlite3_errmsg(t));
	for (int i = 0; i < rows; i++) {
		char key[32];

		snprintf(key, sizeof(key), "o%d-r%d", op, i);
		sqlite3_bind_text(st, 1, key, -1, SQLITE_TRANSIENT);
		sqlite3_bind_text(st, 2, "a payload of a few words", -1,
				  SQLITE_STATIC);
		if (sqlite3_step(st) != SQLITE_DONE)
			die("insert", sqlite3_errmsg(t));
		sqlite3_reset(st);
	}
	sqlite3_finalize(st);
	snprintf(sql, sizeof(sql), "INSERT INTO fence VALUES (%d); COMMIT", op);
	exec_sql(t, sql);
	atomic_file(dir, "checkpoint.json", op);
	atomic_file(dir, "return.json", op);
	sqlite3_close(t);
	sqlite3_close(j);
}

static double cpu_ms(void)
{
	struct rusage self, kids;

	getrusage(RUSAGE_SELF, &self);
	getrusage(RUSAGE_CHILDREN, &kids);
	return (self.ru_utime.tv_sec + self.ru_stime.tv_sec +
		kids.ru_utime.tv_sec + kids.ru_stime.tv_sec) * 1e3 +
	       (self.ru_utime.tv_usec + self.ru_stime.tv_usec +
		kids.ru_utime.tv_usec + kids.ru_stime.tv_usec) / 1e3;
}

/* One round of one way: `dirs` fresh directories, 3 attempts each.
 * Returns CPU ms per attempt. */
static double round_of(const char *base, int dirs, int rows, int forked)
{
	double t0 = cpu_ms();

	for (int d = 0; d < dirs; d++) {
		char dir[4096];

		snprintf(dir, sizeof(dir), "%s/%c%d", base, forked ? 'f' : 'i', d);
		if (mkdir(dir, 0755))
			die(dir, strerror(errno));
		for (int op = 1; op <= ATTEMPTS_PER_DIR; op++) {
			pid_t pid;
			int status;

			if (!forked) {
				attempt(dir, op, rows);
				continue;
			}
			pid = fork();
			if (pid < 0)
				die("fork", strerror(errno));
			if (pid == 0) {
				attempt(dir, op, rows);
				_exit(0);
			}
			if (waitpid(pid, &status, 0) != pid || status != 0)
				die("attempt", "a forked attempt failed");
		}
		if (fs_remove_tree(dir) != 0)
			die(dir, "could not remove");
	}
	return (cpu_ms() - t0) / (dirs * ATTEMPTS_PER_DIR);
}

int main(void)
{
	int rounds = bench_env_int("BENCH_FLOOR_ROUNDS", 5);
	int dirs = bench_env_int("BENCH_FLOOR_SCHEDULES", 40);
	int rows = bench_env_int("BENCH_FLOOR_ROWS", 20);
	const char *parent = access("/dev/shm", W_OK) == 0 ? "/dev/shm" :
			     getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	double *in = calloc((size_t)rounds, sizeof(double));
	double *fk = calloc((size_t)rounds, sizeof(double));
	char base[4096];
	const char *aps = getenv("BENCH_FLOOR_ATTEMPTS_PER_SCHEDULE");
	double per_schedule = aps ? strtod(aps, NULL) : 0;
	double in_ms, fk_ms;

	if (!in || !fk)
		die("calloc", "out of memory");
	snprintf(base, sizeof(base), "%s/fc-bench-floor.XXXXXX", parent);
	if (!mkdtemp(base))
		die(base, strerror(errno));
	if (sqlite3_initialize() != SQLITE_OK)
		die("sqlite3_initialize", "failed");
	round_of(base, 2, rows, 0); /* warm the page cache and the heap */
	for (int r = 0; r < rounds; r++) {
		in[r] = round_of(base, dirs, rows, 0);
		fk[r] = round_of(base, dirs, rows, 1);
	}
	in_ms = bench_median(in, rounds);
	fk_ms = bench_median(fk, rounds);
	if (fs_remove_tree(base) != 0)
		fprintf(stderr, "bench_floor: could not remove %s\n", base);
	printf("floor: minimal attempt (%d journal transactions, a %d-row "
	       "target transaction with its fence, 2 atomic files; WAL, "
	       "synchronous=FULL, %s)\n", JOURNAL_STEPS + 1, rows, parent);
	printf("floor: in one process      %6.2f ms CPU per attempt\n", in_ms);
	printf("floor: forked per attempt  %6.2f ms CPU per attempt "
	       "(the process boundary: %.2f ms)\n", fk_ms, fk_ms - in_ms);
	if (per_schedule > 0)
		printf("floor: at %.2f attempts per schedule and no harness "
		       "cost at all, %ld cpu(s) run at most %.0f schedules/s\n",
		       per_schedule, sysconf(_SC_NPROCESSORS_ONLN),
		       sysconf(_SC_NPROCESSORS_ONLN) * 1000.0 /
		       (per_schedule * fk_ms));
	free(in);
	free(fk);
	return 0;
}
