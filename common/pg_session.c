/*
 * pg_session.c -- how a statement reaches a PostgreSQL server, and what it
 * means when it does not (the promises are pg_session.h's).
 *
 *   open --parse url--> [connect (connect_timeout) --> configure session]
 *                                                        |
 *   every call: pg_session_live() -- idle socket readable, session lost
 *   or inside a transaction? -> drop, connect again (once) --> prepare
 *   (first use) --> send --> poll with the client deadline --> result |
 *   drop the session
 *
 * Failure families (pg_code()): libpq transport errors, SQLSTATE classes
 * 08 (connection) and 57 (shutdown, cancel, statement timeout), 53, 58,
 * 40, lock_timeout (55P03), read-only standby (25006) are the session's
 * `unavailable` code; data and schema errors (22, 23, 42) are FC_CORRUPT.
 * The session is dropped when the error says it is gone (no SQLSTATE,
 * class 08, 57P0x) or a reply did not come in time (pg_check(),
 * pg_reply()).
 */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/clock.h"
#include "common/dl_pq.h"
#include "common/pg_session.h"
#include "common/url_query.h"

struct pg_session {
	PGconn *conn;        /* NULL while disconnected */
	char *conninfo;      /* the URL less fencecert's own parameters */
	char *password;      /* the URL's password, to scrub messages; or NULL */
	char url[256];       /* conf->shown, for messages */
	char schema[PG_SCHEMA_MAX]; /* "" = the server's search_path */
	int timeout_ms;      /* statement_timeout and lock_timeout */
	const char *kind;    /* conf->kind */
	int unavailable;     /* conf->unavailable */
	int readonly;        /* conf->readonly */
	unsigned prepared;   /* bit per statement id prepared on conn */
	unsigned long connection; /* counts connections made */
	char errmsg[512];
};

#define PG_TIMEOUT_MS_DEFAULT 10000
#define PG_CONNECT_TIMEOUT_S "5"
#define PG_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* ---- errors ------------------------------------------------------------- */

/*
 * SQLSTATE classes that say "not now" rather than "not ever": connection
 * exceptions (08), operator intervention (57: shutdown, cancel, statement
 * timeout), insufficient resources (53), system errors (58), transaction
 * rollback (40), lock_timeout (55P03), a read-only standby (25006).
 */
static int pg_code(const pg_session *p, const char *sqlstate)
{
	static const char *const transient[] = { "08", "57", "53", "58", "40" };

	if (!sqlstate)
		return p->unavailable;
	for (size_t i = 0; i < PG_ARRAY_SIZE(transient); i++)
		if (strncmp(sqlstate, transient[i], 2) == 0)
			return p->unavailable;
	if (strcmp(sqlstate, "55P03") == 0 || strcmp(sqlstate, "25006") == 0)
		return p->unavailable;
	/* Data or schema not as we wrote them. */
	if (strncmp(sqlstate, "22", 2) == 0 || strncmp(sqlstate, "23", 2) == 0 ||
	    strncmp(sqlstate, "42", 2) == 0)
		return FC_CORRUPT;
	return p->unavailable;
}

/* A libpq message, one line, with the URL's password masked. */
static void pg_scrub(const pg_session *p, const char *msg, char *out,
		     size_t len)
{
	const char *pw = p->password;
	size_t pwlen = pw ? strlen(pw) : 0, used = 0;

	out[0] = '\0';
	while (msg && *msg && used + 1 < len) {
		if (pwlen && strncmp(msg, pw, pwlen) == 0) {
			used += (size_t)snprintf(out + used, len - used, "***");
			msg += pwlen;
			continue;
		}
		/* libpq's "line\n\tmore" becomes "line more". */
		if (strchr("\n\r\t", *msg)) {
			if (used > 0 && out[used - 1] != ' ')
				out[used++] = ' ';
		} else {
			out[used++] = *msg;
		}
		out[used] = '\0';
		msg++;
	}
	while (used > 0 && out[used - 1] == ' ')
		out[--used] = '\0';
}

static int pg_error(pg_session *p, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Record a message on the session and return code. */
static int pg_error(pg_session *p, int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(p->errmsg, sizeof(p->errmsg), fmt, ap);
	va_end(ap);
	return code;
}

static int pg_fail(pg_session *p, int code, const char *what, const char *msg)
{
	char clean[384];

	pg_scrub(p, msg, clean, sizeof(clean));
	return pg_error(p, code, "cannot %s %s '%s': %s", what, p->kind,
			p->url, clean);
}

/* ---- connection --------------------------------------------------------- */


static void pg_drop(pg_session *p)
{
	if (p->conn)
		PQfinish(p->conn);
	p->conn = NULL;
	p->prepared = 0;
}

/* libpq gave up on the connection: say so with its message, then drop
 * the connection (nothing more can be sent on it); p->unavailable. */
static int pg_lost(pg_session *p, const char *what)
{
	int rc = pg_fail(p, p->unavailable, what, PQerrorMessage(p->conn));

	pg_drop(p);
	return rc;
}

/* Server notices (and a FATAL sent to an idle session) are not ours to
 * print: pg_session_live() notices a session the server closed. */
static void pg_quiet(void *arg, const char *message)
{
	(void)arg;
	(void)message;
}

/*
 * Collect the reply to what was just sent, waiting at most the client
 * deadline.  Returns 0 with *out set (the first error result if any, else
 * the last result), or p->unavailable with the connection dropped.
 */
static int pg_reply(pg_session *p, const char *what, PGresult **out)
{
	long long wait = (long long)p->timeout_ms + p->timeout_ms / 2;
	long long deadline = clock_mono_ms() + wait;
	PGresult *keep = NULL, *res;

	*out = NULL;
	for (;;) {
		while (PQisBusy(p->conn)) {
			struct pollfd pfd = { PQsocket(p->conn), POLLIN, 0 };
			long long left = deadline - clock_mono_ms();
			int n;

			if (left <= 0) {
				PQclear(keep);
				pg_drop(p);
				return pg_error(p, p->unavailable,
						"cannot %s %s '%s': no "
						"reply within %lld ms", what,
						p->kind, p->url, wait);
			}
			n = poll(&pfd, 1, (int)left);
			if ((n < 0 && errno != EINTR) ||
			    (n > 0 && !PQconsumeInput(p->conn)))
				break;
		}
		/* Never call PQgetResult() while busy: it would block. */
		if (PQstatus(p->conn) == CONNECTION_BAD || PQisBusy(p->conn))
			break;
		if (!(res = PQgetResult(p->conn)))
			break;
		if (!keep || (PQresultStatus(keep) != PGRES_FATAL_ERROR &&
			      PQresultStatus(res) == PGRES_FATAL_ERROR)) {
			PQclear(keep);
			keep = res;
		} else {
			PQclear(res);
		}
	}
	if (PQstatus(p->conn) == CONNECTION_BAD || PQisBusy(p->conn) || !keep) {
		PQclear(keep);
		return pg_lost(p, what);
	}
	*out = keep;
	return 0;
}

/* The session died with a write in flight: it may or may not have
 * committed, and only a fresh read can tell (pg_session.h, invariant 4). */
static void pg_outcome_unknown(pg_session *p)
{
	static const char note[] = "; the outcome is unknown, re-read the "
				   "operation";
	size_t len = strlen(p->errmsg);

	if (len + sizeof(note) > sizeof(p->errmsg))
		len = sizeof(p->errmsg) - sizeof(note);
	memcpy(p->errmsg + len, note, sizeof(note));
}

/*
 * Check a result; on an error record it and return the family.  A result
 * that says the session is gone (class 08, shutdown 57P0x, no SQLSTATE)
 * also drops the connection.  For writes the message says the outcome is
 * unknown when the session died under the statement.
 */
static int pg_check(pg_session *p, PGresult *res, ExecStatusType want,
		    const char *what, int write)
{
	const char *st;
	int lost, rc;

	if (PQresultStatus(res) == want)
		return 0;
	st = PQresultErrorField(res, PG_DIAG_SQLSTATE);
	lost = !st || strncmp(st, "08", 2) == 0 ||
	       strncmp(st, "57P0", 4) == 0;
	rc = pg_fail(p, pg_code(p, st), what, PQresultErrorMessage(res));
	if (lost && write)
		pg_outcome_unknown(p);
	if (lost)
		pg_drop(p);
	return rc;
}

/* Run SQL text (no parameters or one) and check for `want`. */
int pg_session_exec(pg_session *p, const char *sql, const char *param,
		    ExecStatusType want, const char *what, PGresult **out)
{
	return pg_session_exec_n(p, sql, param ? 1 : 0, &param, want, what,
				 out);
}

int pg_session_exec_n(pg_session *p, const char *sql, int n,
		      const char *const *params, ExecStatusType want,
		      const char *what, PGresult **out)
{
	PGresult *res;
	int rc;

	if (out)
		*out = NULL;
	if (!(n ? PQsendQueryParams(p->conn, sql, n, NULL, params, NULL,
				    NULL, 0) :
		  PQsendQuery(p->conn, sql)))
		return pg_lost(p, what);
	if ((rc = pg_reply(p, what, &res)))
		return rc;
	if ((rc = pg_check(p, res, want, what, 0)) || !out)
		PQclear(res);
	else
		*out = res;
	return rc;
}

static int pg_configure(pg_session *p)
{
	char timeout[24], setup[512];

	snprintf(timeout, sizeof(timeout), "%d", p->timeout_ms);
	snprintf(setup, sizeof(setup), "SELECT"
		 " set_config('statement_timeout', $1, false),"
		 " set_config('lock_timeout', $1, false),"
		 " set_config('synchronous_commit', 'on', false),"
		 " set_config('plan_cache_mode', 'force_generic_plan', false),"
		 " set_config('default_transaction_isolation', 'read committed',"
		 " false)%s%s%s%s", p->schema[0] ? ", set_config('search_path', '" :
		 "", p->schema, p->schema[0] ? "', false)" : "",
		 /* conf->readonly: the server refuses any write */
		 p->readonly ? ", set_config('default_transaction_read_only',"
		 " 'on', false)" : "");
	return pg_session_exec(p, setup, timeout, PGRES_TUPLES_OK,
			       "configure", NULL);
}

static int pg_connect(pg_session *p)
{
	const char *keys[] = { "connect_timeout", "fallback_application_name",
			       "dbname", NULL };
	const char *vals[] = { PG_CONNECT_TIMEOUT_S, "fencecert", p->conninfo,
			       NULL };

	pg_drop(p);
	/* Defaults first: the URL's own values (expanded dbname) win. */
	p->conn = PQconnectdbParams(keys, vals, 1);
	p->connection++;
	if (!p->conn)
		return pg_error(p, FC_NOMEM, "out of memory connecting to "
				"%s '%s'", p->kind, p->url);
	if (PQstatus(p->conn) != CONNECTION_OK)
		return pg_lost(p, "connect to");
	PQsetNoticeProcessor(p->conn, pg_quiet, NULL);
	return pg_configure(p);
}

/*
 * Make sure there is a live session, reconnecting once if the last one was
 * lost.  An idle session of ours is never sent anything (we LISTEN to
 * nothing), so a readable socket means the server said goodbye (a
 * shutdown's FATAL, EOF): a restarted server is noticed before a statement
 * is sent into the dead socket.  At worst we reconnect needlessly.
 */
int pg_session_live(pg_session *p)
{
	struct pollfd pfd;

	if (p->conn && PQstatus(p->conn) == CONNECTION_OK &&
	    PQtransactionStatus(p->conn) == PQTRANS_IDLE) {
		pfd.fd = PQsocket(p->conn);
		pfd.events = POLLIN;
		pfd.revents = 0;
		if (poll(&pfd, 1, 0) == 0)
			return 0;
	}
	return pg_connect(p);
}

int pg_session_run(pg_session *p, const struct pg_stmt *st, unsigned id,
		   int n, const char *const *params, ExecStatusType want,
		   const char *what, PGresult **out)
{
	int write = st->write;
	PGresult *res;
	int rc;

	*out = NULL;
	if (!(p->prepared & (1u << id))) {
		if (!PQsendPrepare(p->conn, st->name, st->sql, 0, NULL))
			return pg_lost(p, what);
		/* Nothing ran yet: a failure here is not "unknown". */
		if ((rc = pg_reply(p, what, &res)))
			return rc;
		rc = pg_check(p, res, PGRES_COMMAND_OK, what, 0);
		PQclear(res);
		if (rc)
			return rc;
		p->prepared |= 1u << id;
	}
	if (!PQsendQueryPrepared(p->conn, st->name, n, params, NULL, NULL, 0))
		return pg_lost(p, what);
	if ((rc = pg_reply(p, what, &res))) {
		if (write)
			pg_outcome_unknown(p);
		return rc;
	}
	if ((rc = pg_check(p, res, want, what, write))) {
		PQclear(res);
		return rc;
	}
	*out = res;
	return 0;
}

void pg_session_rollback(pg_session *p)
{
	char saved[sizeof(p->errmsg)];

	if (!p->conn || PQtransactionStatus(p->conn) == PQTRANS_IDLE)
		return;
	memcpy(saved, p->errmsg, sizeof(saved));
	if (pg_session_exec(p, "ROLLBACK", NULL, PGRES_COMMAND_OK,
			    "roll back", NULL))
		pg_drop(p); /* pg_session_live() would not reuse it */
	memcpy(p->errmsg, saved, sizeof(saved));
}

int pg_session_literal(pg_session *p, const char *text, char *out,
		       size_t len)
{
	char *lit = p->conn ? PQescapeLiteral(p->conn, text, strlen(text)) :
		    NULL;
	size_t n = lit ? strlen(lit) : 0;

	if (!lit || n >= len) {
		if (lit)
			PQfreemem(lit);
		return pg_error(p, FC_NOMEM, "cannot quote '%s' for %s '%s'",
				text, p->kind, p->url);
	}
	memcpy(out, lit, n + 1);
	PQfreemem(lit);
	return 0;
}

/* ---- open / close ------------------------------------------------------- */

static int pg_param(pg_session *p, const char *item, size_t len)
{
	const char *v = strchr(item, '=') + 1;
	size_t n = len - (size_t)(v - item);
	char *end;
	long t;

	if (strncmp(item, "schema=", 7) == 0) {
		int ok = n > 0 && n < sizeof(p->schema) &&
			 !(v[0] >= '0' && v[0] <= '9');

		for (size_t i = 0; ok && i < n; i++)
			ok = (v[i] >= 'a' && v[i] <= 'z') || v[i] == '_' ||
			     (v[i] >= '0' && v[i] <= '9');
		if (!ok)
			return pg_error(p, FC_USAGE, "invalid schema "
					"'%.*s' in %s url '%s' "
					"(expected [a-z_][a-z0-9_]*, at "
					"most 63 bytes)", (int)n, v, p->kind,
					p->url);
		memcpy(p->schema, v, n);
		p->schema[n] = '\0';
		return 0;
	}
	errno = 0;
	t = strtol(v, &end, 10);
	if (errno || end != v + n || t < 1 || t > INT_MAX / 2)
		return pg_error(p, FC_USAGE, "invalid timeout_ms '%.*s' in "
				"%s url '%s'", (int)n, v, p->kind, p->url);
	p->timeout_ms = (int)t;
	return 0;
}

/* url_query.h: schema= and timeout_ms= are ours. */
static int pg_take_param(void *ctx, const char *item, size_t len)
{
	pg_session *p = ctx;
	int rc;

	if (strncmp(item, "schema=", 7) != 0 &&
	    strncmp(item, "timeout_ms=", 11) != 0)
		return 0;
	return (rc = pg_param(p, item, len)) ? rc : 1;
}

/* Split fencecert's parameters off the URL; libpq checks the rest. */
static int pg_parse_url(pg_session *p, const char *url)
{
	PQconninfoOption *opts;
	char *err = NULL;
	int rc;

	p->timeout_ms = PG_TIMEOUT_MS_DEFAULT;
	if (!(p->conninfo = calloc(strlen(url) + 1, 1)))
		return pg_error(p, FC_NOMEM, "out of memory opening "
				"%s '%s'", p->kind, p->url);
	if ((rc = url_query_split(url, p->conninfo, pg_take_param, p)))
		return rc;
	if (!(opts = PQconninfoParse(p->conninfo, &err))) {
		/* libpq may quote the part it disliked: say nothing more
		 * when that part could hold a password. */
		rc = pg_error(p, err ? FC_USAGE : FC_NOMEM, "invalid %s "
			      "url '%s'%s%s", p->kind, p->url,
			      strcmp(p->url, url) ? "" : ": ",
			      strcmp(p->url, url) || !err ? "" : err);
		if (err)
			PQfreemem(err);
		for (char *c = p->errmsg; *c; c++)
			if (*c == '\n')
				*c = ' ';
		return rc;
	}
	rc = 0;
	for (PQconninfoOption *o = opts; o->keyword; o++)
		if (strcmp(o->keyword, "password") == 0 && o->val && *o->val &&
		    !(p->password = strdup(o->val)))
			rc = pg_error(p, FC_NOMEM, "out of memory opening "
				      "%s '%s'", p->kind, p->url);
	PQconninfoFree(opts);
	return rc;
}

void pg_session_close(pg_session *p)
{
	if (!p)
		return;
	pg_drop(p);
	/* Both may hold the password; do not leave it in freed memory. */
	if (p->conninfo)
		explicit_bzero(p->conninfo, strlen(p->conninfo));
	if (p->password)
		explicit_bzero(p->password, strlen(p->password));
	free(p->conninfo);
	free(p->password);
	free(p);
}

int pg_session_open(const char *url, const struct pg_session_conf *conf,
		    pg_session **out, char *err, size_t errlen)
{
	pg_session *p = calloc(1, sizeof(*p));
	int rc;

	*out = NULL;
	if (!p) {
		snprintf(err, errlen, "out of memory opening a %s", conf->kind);
		return FC_NOMEM;
	}
	p->kind = conf->kind;
	p->unavailable = conf->unavailable;
	p->readonly = conf->readonly;
	snprintf(p->url, sizeof(p->url), "%s", conf->shown);
	if ((rc = dl_pq_load(p->errmsg, sizeof(p->errmsg)))) {
		if (rc == FC_JOURNAL_UNAVAILABLE)
			rc = conf->unavailable;
	} else if (!(rc = pg_parse_url(p, url)) && conf->connect) {
		rc = pg_connect(p);
	}
	if (rc) {
		snprintf(err, errlen, "%s", p->errmsg);
		pg_session_close(p);
		return rc;
	}
	*out = p;
	return 0;
}

/* ---- what the session knows --------------------------------------------- */

const char *pg_session_errmsg(const pg_session *p)
{
	return p ? p->errmsg : "no session";
}

const char *pg_session_url(const pg_session *p)
{
	return p->url;
}

const char *pg_session_schema(const pg_session *p)
{
	return p->schema;
}

int pg_session_timeout_ms(const pg_session *p)
{
	return p->timeout_ms;
}

unsigned long pg_session_connection(const pg_session *p)
{
	return p->conn ? p->connection : 0;
}
