/*
 * test_fence_sqlite.c -- the SQLite fence: the conformance suite, then what
 * only a SQLite target can show: the tables it creates, a busy writer,
 * and the error classification around COMMIT, driven by a VFS shim that
 * fails the N-th write or sync of the real file.
 */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "fences/fence.h"
#include "tests/fence_conformance.h"

static void sqlite_url(const char *dir, char *url, size_t len)
{
	snprintf(url, len, "sqlite:%s/target.db", dir);
}

static void sqlite_unreachable(const char *dir, char *url, size_t len)
{
	char file[CONFORMANCE_PATH_MAX];
	FILE *fp;

	snprintf(file, sizeof(file), "%s/plain-file", dir);
	fp = fopen(file, "w");
	assert_non_null(fp);
	fclose(fp);
	snprintf(url, len, "sqlite:%s/target.db", file);
}

static const struct fence_conformance backend = {
	.name = "sqlite",
	.fresh_url = sqlite_url,
	.unreachable_url = sqlite_unreachable,
	.supports_replace = 1,
};

/* ---- a VFS that fails on demand ---------------------------------------- */

/*
 * Wraps the default VFS.  When armed, the fail_write-th xWrite (or the
 * fail_sync-th xSync) on any file returns an I/O error without touching
 * the disk, as a failing device would.
 */
static sqlite3_vfs *real_vfs;
static sqlite3_vfs shim_vfs;
static int fail_write, fail_sync; /* countdowns; 0 = off */

struct shim_file {
	sqlite3_file base;
	sqlite3_file *real; /* follows this struct in the same allocation */
};

static sqlite3_io_methods shim_io;

static int countdown(int *n)
{
	return *n > 0 && --*n == 0;
}

static int shim_close(sqlite3_file *f)
{
	struct shim_file *s = (struct shim_file *)f;
	int rc = s->real->pMethods ? s->real->pMethods->xClose(s->real)
				   : SQLITE_OK;

	return rc;
}

static int shim_read(sqlite3_file *f, void *b, int n, sqlite3_int64 off)
{
	struct shim_file *s = (struct shim_file *)f;

	return s->real->pMethods->xRead(s->real, b, n, off);
}

static int shim_write(sqlite3_file *f, const void *b, int n,
		      sqlite3_int64 off)
{
	struct shim_file *s = (struct shim_file *)f;

	if (countdown(&fail_write))
		return SQLITE_IOERR_WRITE;
	return s->real->pMethods->xWrite(s->real, b, n, off);
}

static int shim_truncate(sqlite3_file *f, sqlite3_int64 size)
{
	struct shim_file *s = (struct shim_file *)f;

	return s->real->pMethods->xTruncate(s->real, size);
}

static int shim_sync(sqlite3_file *f, int flags)
{
	struct shim_file *s = (struct shim_file *)f;

	if (countdown(&fail_sync))
		return SQLITE_IOERR_FSYNC;
	return s->real->pMethods->xSync(s->real, flags);
}

#define PASS(name, sig, args)                                            \
	static int shim_##name sig                                       \
	{                                                                \
		struct shim_file *s = (struct shim_file *)f;             \
		return s->real->pMethods->x##name args;                  \
	}

PASS(FileSize, (sqlite3_file *f, sqlite3_int64 *p), (s->real, p))
PASS(Lock, (sqlite3_file *f, int l), (s->real, l))
PASS(Unlock, (sqlite3_file *f, int l), (s->real, l))
PASS(CheckReservedLock, (sqlite3_file *f, int *r), (s->real, r))
PASS(FileControl, (sqlite3_file *f, int op, void *a), (s->real, op, a))
PASS(SectorSize, (sqlite3_file *f), (s->real))
PASS(DeviceCharacteristics, (sqlite3_file *f), (s->real))
PASS(ShmMap, (sqlite3_file *f, int i, int sz, int e, void volatile **pp),
     (s->real, i, sz, e, pp))
PASS(ShmLock, (sqlite3_file *f, int o, int n, int fl), (s->real, o, n, fl))
PASS(ShmUnmap, (sqlite3_file *f, int d), (s->real, d))

static void shim_ShmBarrier(sqlite3_file *f)
{
	struct shim_file *s = (struct shim_file *)f;

	s->real->pMethods->xShmBarrier(s->real);
}

static int shim_open(sqlite3_vfs *vfs, const char *name, sqlite3_file *f,
		     int flags, int *out_flags)
{
	struct shim_file *s = (struct shim_file *)f;
	int rc;

	(void)vfs;
	s->real = (sqlite3_file *)(s + 1);
	rc = real_vfs->xOpen(real_vfs, name, s->real, flags, out_flags);
	f->pMethods = s->real->pMethods ? &shim_io : NULL;
	return rc;
}

static void shim_install(void)
{
	real_vfs = sqlite3_vfs_find(NULL);
	shim_vfs = *real_vfs;
	shim_vfs.zName = "fencecert-shim";
	shim_vfs.szOsFile = (int)sizeof(struct shim_file) + real_vfs->szOsFile;
	shim_vfs.xOpen = shim_open;
	shim_io = (sqlite3_io_methods){
		.iVersion = 2,
		.xClose = shim_close, .xRead = shim_read,
		.xWrite = shim_write, .xTruncate = shim_truncate,
		.xSync = shim_sync, .xFileSize = shim_FileSize,
		.xLock = shim_Lock, .xUnlock = shim_Unlock,
		.xCheckReservedLock = shim_CheckReservedLock,
		.xFileControl = shim_FileControl,
		.xSectorSize = shim_SectorSize,
		.xDeviceCharacteristics = shim_DeviceCharacteristics,
		.xShmMap = shim_ShmMap, .xShmLock = shim_ShmLock,
		.xShmBarrier = shim_ShmBarrier, .xShmUnmap = shim_ShmUnmap,
	};
	/* Make it the default so fence_open() picks it up unchanged. */
	assert_int_equal(sqlite3_vfs_register(&shim_vfs, 1), SQLITE_OK);
}

/* ---- fixtures ---- */

struct sctx {
	char dir[CONFORMANCE_DIR_MAX];
	char url[CONFORMANCE_PATH_MAX + 16];
	char path[CONFORMANCE_PATH_MAX];
	fence *f;
	char op[80], intent[80];
};

static int setup(void **state)
{
	struct sctx *x = calloc(1, sizeof(*x));
	char err[512];

	assert_non_null(x);
	conformance_tempdir(x->dir);
	snprintf(x->path, sizeof(x->path), "%s/target.db", x->dir);
	snprintf(x->url, sizeof(x->url), "sqlite:%s", x->path);
	assert_int_equal(fence_open(x->url, &x->f, err, sizeof(err)), 0);
	conformance_id("sqlite op", x->op);
	conformance_id("sqlite intent", x->intent);
	fail_write = fail_sync = 0;
	*state = x;
	return 0;
}

static int teardown(void **state)
{
	struct sctx *x = *state;

	fail_write = fail_sync = 0;
	fence_close(x->f);
	conformance_rmtree(x->dir);
	free(x);
	return 0;
}

static long long query_ll(const char *path, const char *sql)
{
	sqlite3 *db;
	sqlite3_stmt *st;
	long long v = -1;

	assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY,
					 NULL), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
	if (sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	sqlite3_close(db);
	return v;
}

/* ---- tests ---- */

static void test_layout_and_no_row_key_uniqueness(void **state)
{
	struct sctx *x = *state;
	struct conformance_batch *cb;
	struct fence_batch b;
	enum fence_outcome out;

	cb = conformance_batch_new(x->op, x->intent, "k", 3);
	b = *conformance_batch(cb);
	b.table = "orders";
	assert_int_equal(fence_prepare(x->f, x->op, 1), 0);
	assert_int_equal(fence_apply(x->f, 1, &b, &out), 0);
	assert_int_equal(query_ll(x->path, "SELECT count(*) FROM orders"), 3);
	assert_int_equal(query_ll(x->path, "SELECT rows FROM fencecert_fence"),
			 3);
	assert_int_equal(query_ll(x->path, "SELECT epoch FROM fencecert_epoch"),
			 1);
	/* WAL, and nothing stops a second copy of a row key from showing. */
	assert_int_equal(query_ll(x->path, "SELECT count(*) FROM "
				  "pragma_journal_mode WHERE journal_mode = "
				  "'wal'"), 1);
	assert_int_equal(query_ll(x->path, "SELECT count(*) FROM "
				  "pragma_index_list('orders')"), 0);
	conformance_batch_release(cb);
}

static void make_db(const char *path, const char *sql)
{
	sqlite3 *db;

	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
}

/* A retry probes first, then prepares: the write that follows a probe
 * gets the writer's settings (WAL) on a file made in rollback mode, and
 * lands in the file the path names when it writes -- not in the one the
 * probe read, if that was moved away in between. */
static void test_write_after_probe(void **state)
{
	struct sctx *x = *state;
	struct fence_probe p;
	char moved[CONFORMANCE_PATH_MAX + 8];

	make_db(x->path, "PRAGMA journal_mode=DELETE; CREATE TABLE t(x)");
	assert_int_equal(fence_probe(x->f, x->op, &p), 0);
	assert_int_equal(p.answer, FENCE_ABSENT);
	assert_int_equal(fence_prepare(x->f, x->op, 2), 0);
	assert_int_equal(query_ll(x->path, "SELECT count(*) FROM "
				  "pragma_journal_mode WHERE journal_mode = "
				  "'wal'"), 1);
	assert_int_equal(query_ll(x->path, "SELECT epoch FROM fencecert_epoch"),
			 2);
	fence_close(x->f);
	/* probe, move the file away, put another in its place, prepare */
	assert_int_equal(fence_open(x->url, &x->f, NULL, 0), 0);
	assert_int_equal(fence_probe(x->f, x->op, &p), 0);
	snprintf(moved, sizeof(moved), "%s.old", x->path);
	assert_int_equal(rename(x->path, moved), 0);
	make_db(x->path, "CREATE TABLE t(x)");
	assert_int_equal(fence_prepare(x->f, x->op, 3), 0);
	assert_int_equal(query_ll(x->path, "SELECT epoch FROM fencecert_epoch"),
			 3);
	assert_int_equal(query_ll(moved, "SELECT epoch FROM fencecert_epoch"),
			 2);
}

/* Another connection holds the write lock: bounded wait, then absent. */
static void test_busy_target_is_unavailable_not_hung(void **state)
{
	struct sctx *x = *state;
	struct conformance_batch *cb;
	enum fence_outcome out = FENCE_OUTCOME_UNKNOWN;
	struct timespec t0, t1;
	sqlite3 *db;
	double waited;

	cb = conformance_batch_new(x->op, x->intent, "k", 3);
	assert_int_equal(fence_prepare(x->f, x->op, 1), 0);
	assert_int_equal(sqlite3_open(x->path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL),
			 SQLITE_OK);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(fence_apply(x->f, 1, conformance_batch(cb), &out),
			 FC_FENCE_UNAVAILABLE);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	waited = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
	assert_int_equal(out, FENCE_PROVED_ABSENT);
	assert_true(waited < 10.0);
	sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
	sqlite3_close(db);
	assert_int_equal(conformance_rows(x->url, NULL, NULL), 0);
	/* The lock is gone: the same call now works. */
	assert_int_equal(fence_apply(x->f, 1, conformance_batch(cb), &out), 0);
	conformance_batch_release(cb);
}

/* A write failing mid-transaction is before COMMIT: proved absent. */
static void test_write_error_before_commit_is_absent(void **state)
{
	struct sctx *x = *state;
	struct conformance_batch *cb;
	enum fence_outcome out = FENCE_OUTCOME_UNKNOWN;
	struct fence_probe p;

	cb = conformance_batch_new(x->op, x->intent, "k", 100000);
	assert_int_equal(fence_prepare(x->f, x->op, 1), 0);
	/* 100k rows overflow the page cache, so pages spill to the WAL
	 * while the rows are inserted. */
	fail_write = 5;
	assert_int_equal(fence_apply(x->f, 1, conformance_batch(cb), &out),
			 FC_FENCE_UNAVAILABLE);
	assert_int_equal(out, FENCE_PROVED_ABSENT);
	fail_write = 0;
	assert_int_equal(fence_probe(x->f, x->op, &p), 0);
	assert_int_equal(p.answer, FENCE_ABSENT);
	assert_int_equal(conformance_rows(x->url, NULL, NULL), 0);
	assert_int_equal(fence_apply(x->f, 1, conformance_batch(cb), &out), 0);
	assert_int_equal(conformance_rows(x->url, NULL, NULL), 100000);
	conformance_batch_release(cb);
}

/* The sync of the COMMIT fails: outcome unknown, and the probe decides
 * consistently with what the target holds. */
static void test_commit_error_is_unknown(void **state)
{
	struct sctx *x = *state;
	struct conformance_batch *cb;
	enum fence_outcome out = FENCE_PROVED_ABSENT;
	struct fence_probe p;
	long long rows;

	cb = conformance_batch_new(x->op, x->intent, "k", 10);
	assert_int_equal(fence_prepare(x->f, x->op, 1), 0);
	/* Small batch: the only sync inside apply is the commit's. */
	fail_sync = 1;
	assert_int_equal(fence_apply(x->f, 1, conformance_batch(cb), &out),
			 FC_ERR_COMMIT_UNKNOWN);
	assert_int_equal(out, FENCE_OUTCOME_UNKNOWN);
	assert_int_equal(fail_sync, 0);
	assert_int_equal(fence_probe(x->f, x->op, &p), 0);
	rows = conformance_rows(x->url, NULL, x->op);
	if (p.answer == FENCE_APPLIED)
		assert_int_equal(rows, 10);
	else
		assert_true(p.answer == FENCE_ABSENT && rows == 0);
	conformance_batch_release(cb);
}

static void test_missing_directory_is_unknown(void **state)
{
	struct sctx *x = *state;
	char url[CONFORMANCE_PATH_MAX + 16], err[512];
	struct fence_probe p;
	fence *f;

	/* No database file in an existing directory: nothing was applied.
	 * No directory at all: maybe a missing mount; prove nothing. */
	snprintf(url, sizeof(url), "sqlite:%s/no-such-dir/target.db", x->dir);
	assert_int_equal(fence_open(url, &f, err, sizeof(err)), 0);
	assert_int_not_equal(fence_probe(f, x->op, &p), 0);
	assert_int_equal(p.answer, FENCE_UNKNOWN);
	fence_close(f);
}

static void test_not_a_database_is_unknown(void **state)
{
	struct sctx *x = *state;
	struct fence_probe p;
	FILE *fp = fopen(x->path, "w");

	assert_non_null(fp);
	fputs("this is not a database, but it is long enough to be read as "
	      "a header by sqlite when it opens the file ......\n", fp);
	fclose(fp);
	assert_int_not_equal(fence_probe(x->f, x->op, &p), 0);
	assert_int_equal(p.answer, FENCE_UNKNOWN);
}

static void test_url_errors(void **state)
{
	char err[512];
	fence *f;

	(void)state;
	assert_int_equal(fence_open("sqlite:", &f, err, sizeof(err)), FC_USAGE);
	assert_null(f);
	assert_int_equal(fence_open("postgresql://localhost/x?fence=nope", &f,
				    err, sizeof(err)), FC_USAGE);
	assert_non_null(strstr(err, "fence=nope"));
	assert_int_equal(fence_open("ftp://x", &f, err, sizeof(err)), FC_USAGE);
	assert_int_equal(fence_open("no-scheme", &f, err, sizeof(err)),
			 FC_USAGE);
	assert_int_equal(fence_open("sqlite:/tmp/x.db", &f, err, sizeof(err)),
			 0);
	assert_string_equal(fence_name(f), "sqlite");
	assert_int_equal(fence_capability(f), FENCE_CAP_AUTOMATIC);
	fence_close(f);
	fence_close(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
			test_layout_and_no_row_key_uniqueness, setup, teardown),
		cmocka_unit_test_setup_teardown(test_write_after_probe, setup,
						teardown),
		cmocka_unit_test_setup_teardown(
			test_busy_target_is_unavailable_not_hung, setup,
			teardown),
		cmocka_unit_test_setup_teardown(
			test_write_error_before_commit_is_absent, setup,
			teardown),
		cmocka_unit_test_setup_teardown(test_commit_error_is_unknown,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_missing_directory_is_unknown, setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_not_a_database_is_unknown, setup, teardown),
		cmocka_unit_test(test_url_errors),
	};
	int failed = fence_conformance_run(&backend);

	shim_install();
	return failed + cmocka_run_group_tests_name("fence sqlite", tests,
						    NULL, NULL);
}
