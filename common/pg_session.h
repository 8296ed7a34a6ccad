/*
 * journal_pg_session.h -- the libpq session under the PostgreSQL journal
 * adapter.  Only journal_pg.c and journal_pg_session.c include this file;
 * journal_pg.c says what is stored and how, journal_pg_session.c how a
 * statement reaches the server and what its failure means.
 *
 * The session promises (journal_pg.c's invariants 4, 5, 6 and 8):
 *  - no wait is unbounded: connect_timeout, the server's statement and lock
 *    timeouts, and a client deadline of 1.5 x timeout_ms on every reply;
 *  - a lost session is dropped at once and re-opened only at the start of
 *    the next call (journal_pg__live()), so nothing is ever re-sent;
 *  - a write whose reply was lost says "the outcome is unknown";
 *  - every statement is prepared once per connection;
 *  - messages show the redacted URL, and libpq's text loses the password.
 *
 * Every function records a message on j and returns 0 or a negative
 * enum fc_error, as the port does.  The pg fences (fences/fence_pg*.c) and
 * the PostgreSQL target observer reuse this session through
 * journal_pg__open_as(), so connection, timeout and error rules are
 * written once.
 */
#ifndef FENCECERT_JOURNAL_PG_SESSION_H
#define FENCECERT_JOURNAL_PG_SESSION_H

#include <libpq-fe.h>

#include "journal/journal_impl.h"

#define PG_SCHEMA_MAX 64

/* j->impl of a PostgreSQL journal. */
struct pg {
	PGconn *conn;        /* NULL while disconnected */
	char *conninfo;      /* the URL less fencecert's own parameters */
	char *password;      /* the URL's password, to scrub messages; or NULL */
	char url[256];       /* redacted, for messages */
	char schema[PG_SCHEMA_MAX]; /* "" = the server's search_path */
	int timeout_ms;      /* statement_timeout and lock_timeout */
	const char *kind;    /* "journal" or "target", for messages */
	int unavailable;     /* FC_JOURNAL_UNAVAILABLE or FC_FENCE_UNAVAILABLE */
	int ready;           /* schema seen at JOURNAL_SCHEMA_VERSION */
	unsigned prepared;   /* bit per statement id prepared on conn */
};

/* A statement prepared on first use; id < 32 selects its bit. */
struct pg_stmt {
	const char *name;
	const char *sql;
	int write;           /* changes rows: a lost reply is "unknown" */
};

/* Parse url, connect, configure the session; on success j->impl is set. */
int journal_pg__open(journal *j, const char *url);

/*
 * The same session for another user of PostgreSQL (the pg fences and the
 * target observer, which hold a journal shell only for its message): `kind`
 * names the server in messages ("target"), `unavailable` is the code a
 * transient failure returns (FC_FENCE_UNAVAILABLE).  connect == 0 only
 * parses; journal_pg__live() connects on first use.
 */
int journal_pg__open_as(journal *j, const char *url, const char *kind,
			int unavailable, int connect);
void journal_pg__close(void *impl);

/* A live, idle session: the current one, or a new one if it was lost. */
int journal_pg__live(journal *j);

/* Run SQL text with at most one parameter and check the result status;
 * *out (if out) receives the result, which the caller PQclear()s. */
int journal_pg__exec(journal *j, const char *sql, const char *param,
		     ExecStatusType want, const char *what, PGresult **out);

/* The same with n text parameters (n == 0: simple query, which may hold
 * several statements). */
int journal_pg__exec_n(journal *j, const char *sql, int n,
		       const char *const *params, ExecStatusType want,
		       const char *what, PGresult **out);

/* Run prepared statement s (id = its bit) with n text parameters. */
int journal_pg__run(journal *j, const struct pg_stmt *s, unsigned id, int n,
		    const char *const *params, ExecStatusType want,
		    const char *what, PGresult **out);

/* End an open transaction, keeping the message of what failed in it. */
void journal_pg__rollback(journal *j);

#endif
