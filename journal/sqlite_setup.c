/*
 * sqlite_setup.c -- see sqlite_setup.h.
 */
#include <sqlite3.h>

#include "sqlite_setup.h"

void fc_sqlite_setup(void)
{
	/* No static page buffer, and no pages preallocated per cache (the
	 * count doubles as SQLITE_DEFAULT_PCACHE_INITSZ when the buffer is
	 * NULL).  SQLITE_MISUSE once SQLite is initialised: nothing to do. */
	(void)sqlite3_config(SQLITE_CONFIG_PAGECACHE, (void *)0, 0, 0);
}
