/*
 * sqlite_setup.h -- process-wide SQLite settings that change what SQLite
 * costs, never what it does.
 *
 * fc_sqlite_setup() must run before the process's first SQLite call (the
 * settings are only accepted before sqlite3_initialize()); later calls, or
 * a call in a process that already used SQLite, change nothing.  It sets:
 *
 *  - no bulk page-cache allocation per connection.  By default every
 *    connection mallocs room for 20 pages at its first read and touches
 *    each one, about 20 page faults for a database of a few pages; the
 *    route opens two or three connections per attempt.  Pages are then
 *    allocated as they are used.  The cache's limit and behaviour are
 *    unchanged.
 *
 * fc_sqlite_setup_fresh() is the same for a process that has no SQLite
 * connection open and never had one, but may have inherited an initialised
 * SQLite: an attempt cloned by a fork server, whose warm-up calls
 * sqlite3_initialize() (docs/fork-server.md).  When the settings are
 * already in force (fencecert's warm-up calls fc_sqlite_setup() before it
 * initialises) it does nothing.  Otherwise they would be refused there, so
 * it shuts SQLite down first (allowed: nothing is open) and lets the next
 * call initialise it again with them.  Calling it with a connection open
 * is a programming error.
 *
 * Included by the entry points that run SQLite in a process of their
 * own: the `route` and `certify` commands (cli/) and the certify worker.
 */
#ifndef FENCECERT_SQLITE_SETUP_H
#define FENCECERT_SQLITE_SETUP_H

void fc_sqlite_setup(void);
void fc_sqlite_setup_fresh(void);

#endif
