/*
 * sqlite_reader.c -- see sqlite_reader.h.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/fsutil.h"
#include "common/sqlite_reader.h"

static bool keep_wal;
static char refusal[4200]; /* why the last open was refused; "" if not */

void fc_sqlite_readers_keep_wal(bool on)
{
	keep_wal = on;
}

/* What the file at path is not, for a refusal: 0 if it may be read. */
static int refuse(const char *path, const char *suffix, int e)
{
	snprintf(refusal, sizeof(refusal), "'%s%s' %s: refused", path, suffix,
		 e == ELOOP ? "is a symbolic link or lies under one" :
		 e == EINVAL ? "is not a regular file (a FIFO, a device, a "
			       "directory?)" : strerror(e));
	errno = e;
	return SQLITE_CANTOPEN;
}

/* The file and the side files SQLite would open beside it (its -wal,
 * -shm, -journal): regular files, no symlink on the way, or absent.  The
 * check opens without blocking, so a FIFO does not hold the reader
 * (SQLite's own open and reads would).  A file swapped in after the check
 * is not seen: the harness reads after the route's processes ended. */
static int check(const char *path)
{
	static const char *const side[] = { "-wal", "-shm", "-journal" };
	char buf[4096];
	int fd = fs_open_untrusted(path, 0);

	if (fd < 0 && errno != ENOENT)
		return refuse(path, "", errno);
	if (fd >= 0)
		close(fd);
	for (size_t i = 0; i < sizeof(side) / sizeof(side[0]); i++) {
		struct stat st;

		if (snprintf(buf, sizeof(buf), "%s%s", path, side[i]) >=
		    (int)sizeof(buf))
			return refuse(path, "", ENAMETOOLONG);
		if (lstat(buf, &st) < 0) {
			if (errno != ENOENT)
				return refuse(path, side[i], errno);
			continue;
		}
		if (!S_ISREG(st.st_mode))
			return refuse(path, side[i],
				      S_ISLNK(st.st_mode) ? ELOOP : EINVAL);
	}
	return SQLITE_OK;
}

int fc_sqlite_open_reader(const char *path, int extra, sqlite3 **db)
{
	int flags, rc;

	*db = NULL;
	refusal[0] = '\0';
	if ((rc = check(path)) != SQLITE_OK)
		return rc;
	flags = access(path, W_OK) == 0 ? SQLITE_OPEN_READWRITE :
		SQLITE_OPEN_READONLY;
	rc = sqlite3_open_v2(path, db, flags | extra, NULL);
	if (rc == SQLITE_OK && keep_wal)
		rc = sqlite3_db_config(*db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1,
				       NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_exec(*db, "PRAGMA query_only = 1", NULL, NULL,
				  NULL);
	return rc;
}

const char *fc_sqlite_reader_errmsg(sqlite3 *db, int rc)
{
	if (refusal[0])
		return refusal;
	return db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
}
