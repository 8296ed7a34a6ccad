/*
 * sqlite_reader.h -- open an existing SQLite file to read it and change
 * nothing: what `recover inspect`/`plan` need of the SQLite journal
 * (journal_open_readonly()) and of the SQLite fence's probe.
 *
 * SQLITE_OPEN_READONLY alone is not enough: on a WAL database a read-only
 * connection creates the -wal and -shm files and, unable to checkpoint,
 * leaves them behind.  So the file is opened read-write without
 * SQLITE_OPEN_CREATE and made PRAGMA query_only (a setting of the
 * connection, nothing is written): any write statement fails, a missing
 * file is not created, no journal_mode or synchronous pragma runs.  Nor
 * does the close checkpoint (SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE): a last
 * connection's close would copy the -wal into the database, fsync it and
 * delete the -wal by name -- a write the route did not make, which a
 * power-loss model of the route's syncs cannot see (harness/run/
 * snapshot.h), and a deletion that hits whatever file holds that name by
 * then.  The -wal and -shm stay as a killed writer leaves them; the next
 * writer's close checkpoints.  A file we may not write is opened
 * SQLITE_OPEN_READONLY instead.
 *
 * Included by the SQLite journal's read-only open (journal/) and the
 * SQLite fence and observer (fences/).
 */
#ifndef FENCECERT_SQLITE_READER_H
#define FENCECERT_SQLITE_READER_H

#include <sqlite3.h>

/* An SQLite result code; *db is set as sqlite3_open_v2() sets it (close it
 * even on failure).  `extra` is OR-ed into the open flags. */
int fc_sqlite_open_reader(const char *path, int extra, sqlite3 **db);

#endif
