/*
 * test_sqlite_setup.c -- common/sqlite_setup.h: the settings take effect
 * in a process whose SQLite was initialised before (a fork server's
 * attempt), and the plain call leaves such a process as it was.
 *
 * What is observed is the largest single allocation SQLite makes while a
 * connection reads a small database: with the default bulk page cache it
 * is the 20-page block (over 20 x 4096 bytes), without it a page or the
 * lookaside buffer.  Each case runs in a child process, since SQLite's
 * configuration is per process.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "common/sqlite_setup.h"

#define BULK_BYTES (20 * 4096)

static char dbpath[256];

/* The largest allocation made while a fresh connection reads dbpath. */
static long long largest_malloc_reading(void)
{
	sqlite3_int64 cur, hw;
	sqlite3 *db;

	sqlite3_status64(SQLITE_STATUS_MALLOC_SIZE, &cur, &hw, 1);
	if (sqlite3_open_v2(dbpath, &db, SQLITE_OPEN_READONLY, NULL) ||
	    sqlite3_exec(db, "SELECT count(*) FROM t", NULL, NULL, NULL))
		return -1;
	sqlite3_status64(SQLITE_STATUS_MALLOC_SIZE, &cur, &hw, 0);
	sqlite3_close(db);
	return hw;
}

/* In a child: initialise SQLite as a fork server's warm-up does, apply
 * `setup`, and exit 0 when the largest allocation is below the bulk
 * block (1 above, 2 on error). */
static int run_child(void (*setup)(void))
{
	pid_t pid = fork();
	int status;

	assert_true(pid >= 0);
	if (pid == 0) {
		long long hw;

		if (sqlite3_initialize() != SQLITE_OK)
			_exit(2);
		setup();
		hw = largest_malloc_reading();
		_exit(hw < 0 ? 2 : hw < BULK_BYTES ? 0 : 1);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	return WEXITSTATUS(status);
}

static void make_db(void)
{
	sqlite3 *db;

	snprintf(dbpath, sizeof(dbpath), "/tmp/fc-test-sqlite-setup-%d.db",
		 (int)getpid());
	unlink(dbpath);
	assert_int_equal(sqlite3_open(dbpath, &db), SQLITE_OK);
	assert_int_equal(sqlite3_exec(db, "CREATE TABLE t(x);"
				      "INSERT INTO t VALUES(1),(2);",
				      NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
	/* the parent's SQLite must not be what the children inherit */
	assert_int_equal(sqlite3_shutdown(), SQLITE_OK);
}

static void nothing(void)
{
}

/* The control: the default does allocate the bulk block, so the check
 * below can tell the difference. */
static void test_default_allocates_bulk(void **state)
{
	(void)state;
	make_db();
	assert_int_equal(run_child(nothing), 1);
	unlink(dbpath);
}

/* fc_sqlite_setup() after sqlite3_initialize() is refused by SQLite. */
static void test_plain_setup_too_late(void **state)
{
	(void)state;
	make_db();
	assert_int_equal(run_child(fc_sqlite_setup), 1);
	unlink(dbpath);
}

/* fc_sqlite_setup_fresh() takes effect although SQLite was initialised. */
static void test_fresh_setup_after_init(void **state)
{
	(void)state;
	make_db();
	assert_int_equal(run_child(fc_sqlite_setup_fresh), 0);
	unlink(dbpath);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_default_allocates_bulk),
		cmocka_unit_test(test_plain_setup_too_late),
		cmocka_unit_test(test_fresh_setup_after_init),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
