/*
 * sqlite_reader.c -- see sqlite_reader.h.
 */
#include <stdbool.h>
#include <unistd.h>

#include "common/sqlite_reader.h"

static bool keep_wal;

void fc_sqlite_readers_keep_wal(bool on)
{
	keep_wal = on;
}

int fc_sqlite_open_reader(const char *path, int extra, sqlite3 **db)
{
	int flags = access(path, W_OK) == 0 ? SQLITE_OPEN_READWRITE :
		    SQLITE_OPEN_READONLY;
	int rc = sqlite3_open_v2(path, db, flags | extra, NULL);

	if (rc == SQLITE_OK && keep_wal)
		rc = sqlite3_db_config(*db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1,
				       NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_exec(*db, "PRAGMA query_only = 1", NULL, NULL,
				  NULL);
	return rc;
}
