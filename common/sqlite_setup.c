/*
 * sqlite_setup.c -- see sqlite_setup.h.
 */
#include <stdbool.h>

#include <sqlite3.h>

#include "common/sqlite_setup.h"

/* The settings are in force in this process (a fork server's warm-up
 * applied them before its clones inherited SQLite). */
static bool applied;

/* SQLITE_MISUSE once SQLite is initialised: nothing was changed. */
static int configure(void)
{
	/* No static page buffer, and no pages preallocated per cache (the
	 * count doubles as SQLITE_DEFAULT_PCACHE_INITSZ when the buffer is
	 * NULL). */
	int rc = sqlite3_config(SQLITE_CONFIG_PAGECACHE, (void *)0, 0, 0);

	if (rc == SQLITE_OK)
		applied = true;
	return rc;
}

void fc_sqlite_setup(void)
{
	(void)configure();
}

void fc_sqlite_setup_fresh(void)
{
	if (applied || configure() != SQLITE_MISUSE)
		return;
	/* Initialised before us (a fork server's warm-up) with no connection
	 * ever opened in this process: undo it so the settings are taken.
	 * If shutting down fails, SQLite simply keeps its defaults. */
	if (sqlite3_shutdown() == SQLITE_OK)
		(void)configure();
}
