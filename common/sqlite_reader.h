/*
 * sqlite_reader.h -- open an existing SQLite file to read it and change
 * nothing: what `recover inspect`/`plan` need of the SQLite journal
 * (journal_open_readonly()) and of the SQLite fence's probe, and how the
 * harness's observer reads a SQLite target (fences/target_sqlite.c).
 *
 * SQLITE_OPEN_READONLY alone is not enough: on a WAL database a read-only
 * connection creates the -wal and -shm files and, unable to checkpoint,
 * leaves them behind.  So the file is opened read-write without
 * SQLITE_OPEN_CREATE and made PRAGMA query_only (a setting of the
 * connection, nothing is written): any write statement fails, a missing
 * file is not created, no journal_mode or synchronous pragma runs, and a
 * WAL file's -wal/-shm vanish again when the connection closes as they
 * would for any reader.  A file we may not write is opened
 * SQLITE_OPEN_READONLY instead.
 *
 * Keeping the WAL (fc_sqlite_readers_keep_wal(true), for every schedule
 * the harness runs): the last reader's close would copy the -wal into
 * the database, fsync it and delete the -wal -- a write the route did not
 * make: the route's next try would meet a journal and target tidied by
 * the harness, and the model of the route's syncs under power loss
 * (harness/run/snapshot.h) could not see it.  While on, readers close
 * without a checkpoint (SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE) and the -wal/-shm
 * stay as a killed writer leaves them.  A process-wide switch: a harness
 * worker runs one schedule at a time.
 *
 * What a route can write is read as hostile (docs/security.md): the file,
 * and the -wal, -shm and -journal SQLite would open beside it, must be
 * regular files with no symbolic link on the way (or absent); a FIFO, a
 * device or a link is refused before SQLite opens anything, since its
 * open or first read of a FIFO would block the reader for ever.
 *
 * Included by the SQLite journal's read-only open (journal/), the SQLite
 * fence and target reader, the observer's (fences/), and the orchestrator
 * (harness/run), which turns keep-WAL on for each schedule.
 */
#ifndef FENCECERT_SQLITE_READER_H
#define FENCECERT_SQLITE_READER_H

#include <stdbool.h>

#include <sqlite3.h>

/* An SQLite result code; *db is set as sqlite3_open_v2() sets it (close it
 * even on failure), or NULL with SQLITE_CANTOPEN and errno (ELOOP, EINVAL)
 * when the file was refused.  `extra` is OR-ed into the open flags. */
int fc_sqlite_open_reader(const char *path, int extra, sqlite3 **db);

/* Why fc_sqlite_open_reader() returned rc (its *db, maybe NULL): the
 * refusal ("'x' is not a regular file ...: refused") or SQLite's message.
 * Valid until the next open. */
const char *fc_sqlite_reader_errmsg(sqlite3 *db, int rc);

void fc_sqlite_readers_keep_wal(bool on);

#endif
