/*
 * fence_pg_impl.h -- what the PostgreSQL fence files share: fence_pg.c
 * (open, prepare, apply), fence_pg_probe.c (probe, prepared transactions,
 * and the error copy both use; fence_pg.c calls it, never the reverse),
 * fence_pg_url.c (the target URL and the sessions opened from it) and
 * target_pg.c (the read-only observer, which uses the URL part only).
 * Nothing else includes it.
 *
 * A "postgresql://" (or "postgres://") target URL is a libpq URL plus
 * fencecert's own query parameters, which are taken off before libpq sees
 * it:
 *
 *   fence=pg-txn|pg-2pc      which fence (default pg-txn)
 *   probe=fence-row-only     control only (routes/controls.c,
 *                            pg-fence-row-only): the probe ignores the
 *                            transaction status; never certified
 *   schema=NAME, timeout_ms=N  the session's (common/pg_session.h)
 *
 * Connections, timeouts and error families are common/pg_session.h's,
 * opened with kind "target" so that a transient failure is
 * FC_FENCE_UNAVAILABLE; a failing session call's message is copied onto
 * the fence (fence_pg__fail()).
 */
#ifndef FENCECERT_FENCE_PG_IMPL_H
#define FENCECERT_FENCE_PG_IMPL_H

#include "common/pg_session.h"
#include "fences/fence_impl.h"

enum pg_fence_kind { PG_FENCE_TXN, PG_FENCE_2PC };

/* The URL's fencecert-only parameters, and the URL without them. */
struct pg_target_url {
	enum pg_fence_kind kind;
	int row_only;       /* probe=fence-row-only */
	char *session_url;  /* malloc'd: what pg_target__open_session() takes */
};

/* Split url; FC_USAGE / FC_NOMEM with a message in err. */
int pg_target__parse_url(const char *url, struct pg_target_url *out,
			 char *err, size_t errlen);
void pg_target__url_release(struct pg_target_url *u);

/* Both schemes, so either spelling of the URL reaches the fence. */
int pg_target__is_url(const char *url);

/* A target session on session_url (kind "target", FC_FENCE_UNAVAILABLE,
 * messages showing the URL redacted); connect == 0 connects on first
 * pg_session_live().  pg_session_open()'s errors, the message in err. */
int pg_target__open_session(const char *session_url, int connect,
			    pg_session **out, char *err, size_t errlen);

/* f->impl of a PostgreSQL fence. */
struct fence_pg {
	pg_session *main;      /* the apply/probe session */
	pg_session *side;      /* records the xid before COMMIT */
	enum pg_fence_kind kind;
	int row_only;
	unsigned long ddl_connection; /* pg_session_connection() of main when
				       * the tables were made; 0 never */
	char ddl_table[64];    /* ... with this data table ("" none) */
};

/* A gid (< 300 bytes) quoted as a literal, every byte possibly doubled;
 * and a statement around it (COMMIT PREPARED ...). */
#define GID_LITERAL_MAX (2 * 300 + 3)
#define GID_SQL_MAX (GID_LITERAL_MAX + 32)

/* Copy the session's message onto f and return code. */
int fence_pg__fail(fence *f, const pg_session *s, int code);

/* The gid prefix of op's prepared transactions on this session:
 * "fencecert:<schema>:<op>:" (the epoch follows). */
void fence_pg__gid_prefix(const pg_session *s, const char *op, char *out,
			  size_t len);

/* COMMIT PREPARED (commit = 1) or ROLLBACK PREPARED every transaction left
 * prepared for op; *n (if n) receives how many.  The port's
 * resolve_in_doubt. */
int fence_pg__resolve_prepared(fence *f, const char *op, int commit,
			       int *n);

/* How many transactions of op are left prepared: the port's in_doubt. */
int fence_pg__in_doubt(fence *f, const char *op, int *n);

int fence_pg__probe(fence *f, const char *op, struct fence_probe *out);

#endif
