/*
 * pg_session.h -- one libpq session to a PostgreSQL server, with the rules
 * every fencecert user of PostgreSQL shares: how a statement reaches the
 * server, how long anyone waits for it, and what its failure means.
 *
 * Owner: pg_session.c; `typedef struct pg_session pg_session` is opaque and
 * its fields are known to pg_session.c only.  Users: the PostgreSQL journal
 * adapter (journal/journal_pg.c), the PostgreSQL fences and target observer
 * (fences/fence_pg*.c, fences/target_pg.c).  Each holds its own sessions;
 * the session knows nothing of journals or fences, only the server `kind`
 * it names in messages and the code a transient failure returns.
 *
 * Invariants:
 *  1. No wait is unbounded: connect_timeout (5 s), the server's
 *     statement_timeout and lock_timeout (timeout_ms), and a client
 *     deadline of 1.5 x timeout_ms on every reply.
 *  2. A lost session is dropped at once and re-opened only by
 *     pg_session_live(), which its users call at the start of each of
 *     their operations: nothing is ever re-sent.
 *  3. Error families: a transport failure, SQLSTATE classes 08, 57, 53,
 *     58, 40, lock_timeout (55P03) and a read-only standby (25006) are
 *     "not now" (conf->unavailable); data and schema errors (22, 23, 42)
 *     are FC_CORRUPT; anything else is "not now".  A result that says the
 *     session is gone (no SQLSTATE, class 08, 57P0x) or a reply that did
 *     not come in time drops it.
 *  4. A prepared write (struct pg_stmt.write) whose reply was lost says
 *     "the outcome is unknown, re-read the operation" in its message: only
 *     a fresh read can tell whether it committed.
 *  5. Every pg_stmt is prepared once per connection, on first use.
 *  6. Messages show conf->shown (the caller redacts the URL) and libpq's
 *     own text with the URL's password masked, on one line; the password
 *     is wiped from memory on close.
 *
 * Errors: every fallible call returns 0 or a negative enum fc_error and
 * leaves the detail in pg_session_errmsg() (which a successful call does
 * not clear).  PGresults handed out are the caller's to PQclear().
 */
#ifndef FENCECERT_PG_SESSION_H
#define FENCECERT_PG_SESSION_H

#include <stddef.h>

#include <libpq-fe.h>

#include "common/error.h"

typedef struct pg_session pg_session;

#define PG_SCHEMA_MAX 64

/* Who opens a session and for what. */
struct pg_session_conf {
	const char *kind;  /* the server in messages: "journal", "target" */
	const char *shown; /* the URL as messages show it (redacted) */
	int unavailable;   /* the code of a transient failure:
			    * FC_JOURNAL_UNAVAILABLE, FC_FENCE_UNAVAILABLE */
	int readonly;      /* the server refuses every write of the session */
	int connect;       /* connect in pg_session_open(), so a wrong URL or
			    * a dead server shows there; 0: on first
			    * pg_session_live() */
};

/* A statement prepared on first use; id < 32 selects its bit. */
struct pg_stmt {
	const char *name;
	const char *sql;
	int write;         /* changes rows: a lost reply is "unknown" */
};

/*
 * Parse url (a libpq URL plus fencecert's own schema= and timeout_ms=,
 * taken off before libpq sees it) and, with conf->connect, connect and
 * configure the session.  On success *out is the new session; on failure
 * *out is NULL, the message is in err and nothing is left open.
 * FC_USAGE (bad URL), FC_NOMEM, conf->unavailable.
 */
int pg_session_open(const char *url, const struct pg_session_conf *conf,
		    pg_session **out, char *err, size_t errlen) FC_MUST_CHECK;
/* Disconnect and free; NULL is a no-op.  An open transaction ends with
 * the connection (the server rolls it back). */
void pg_session_close(pg_session *s);

/* The last failure's message. */
const char *pg_session_errmsg(const pg_session *s);
/* conf->shown, as open() kept it (at most 255 bytes). */
const char *pg_session_url(const pg_session *s);
/* The URL's schema= ("" when the server's search_path applies). */
const char *pg_session_schema(const pg_session *s);
/* statement_timeout and lock_timeout in ms (the URL's timeout_ms=). */
int pg_session_timeout_ms(const pg_session *s);
/* Which connection is current: a number that changes whenever the
 * session (re)connects; 0 while it is not connected. */
unsigned long pg_session_connection(const pg_session *s);

/* A live, idle session: the current one, or a new one if it was lost or
 * left inside a transaction (invariant 2). */
int pg_session_live(pg_session *s) FC_MUST_CHECK;

/* Run SQL text with at most one text parameter and check that the result
 * status is `want`; *out (if out) receives the result.  `what` completes
 * "cannot WHAT <kind> '<url>'" in a message. */
int pg_session_exec(pg_session *s, const char *sql, const char *param,
		    ExecStatusType want, const char *what, PGresult **out)
	FC_MUST_CHECK;

/* The same with n text parameters (n == 0: a simple query, which may hold
 * several statements). */
int pg_session_exec_n(pg_session *s, const char *sql, int n,
		      const char *const *params, ExecStatusType want,
		      const char *what, PGresult **out) FC_MUST_CHECK;

/* Run prepared statement st (id = its bit, < 32) with n text parameters
 * (invariants 4 and 5); *out receives the result. */
int pg_session_run(pg_session *s, const struct pg_stmt *st, unsigned id,
		   int n, const char *const *params, ExecStatusType want,
		   const char *what, PGresult **out) FC_MUST_CHECK;

/* End an open transaction (ROLLBACK; a session where that fails is
 * dropped), keeping the message of what failed in it. */
void pg_session_rollback(pg_session *s);

/* text as an SQL string literal, quoted for the current connection, into
 * out (for statements that take no parameters: PREPARE TRANSACTION,
 * COMMIT PREPARED).  FC_NOMEM when out of memory or out is too small. */
int pg_session_literal(pg_session *s, const char *text, char *out,
		       size_t len) FC_MUST_CHECK;

#endif
