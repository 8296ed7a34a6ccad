/*
 * fence_pg_impl.h -- what the PostgreSQL fence files share (fence_pg.c:
 * open, prepare, apply; fence_pg_probe.c: probe and the prepared
 * transactions; target_pg.c: the read-only observer).  Nothing else
 * includes it.
 *
 * A "postgresql://" (or "postgres://") target URL is a libpq URL plus
 * fencecert's own query parameters, which are taken off before libpq sees
 * it:
 *
 *   fence=pg-txn|pg-2pc      which fence (default pg-txn)
 *   probe=fence-row-only     control only (routes/controls.c,
 *                            pg-fence-row-only): the probe ignores the
 *                            transaction status; never certified
 *   schema=NAME, timeout_ms=N  as for the journal (journal_pg_session.c)
 *
 * The connection, timeouts and error families are the journal's session
 * (common/pg_session.h), opened with kind "target" so that a
 * transient failure is FC_FENCE_UNAVAILABLE.  A struct journal serves as
 * the session's message holder only; it is never a journal.
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
	char *session_url;  /* malloc'd: what journal_pg__open_as() takes */
};

/* Split url; FC_USAGE / FC_NOMEM with a message in err. */
int pg_target__parse_url(const char *url, struct pg_target_url *out,
			 char *err, size_t errlen);
void pg_target__url_release(struct pg_target_url *u);

/* Both schemes, so either spelling of the URL reaches the fence. */
int pg_target__is_url(const char *url);

struct fence_pg {
	struct journal main;   /* the apply/probe session (impl: struct pg) */
	struct journal side;   /* records the xid before COMMIT */
	enum pg_fence_kind kind;
	int row_only;
	int hands_off;         /* fence_pg_hands_off() */
	PGconn *ddl_conn;      /* connection on which the tables were made */
	char ddl_table[64];    /* ... with this data table ("" none) */
};

static inline struct pg *fence_pg__session(struct journal *j)
{
	return j->impl;
}

/* Copy the session's message onto f and return code. */
int fence_pg__fail(fence *f, struct journal *j, int code);

/* The gid prefix of op's prepared transactions on this session:
 * "fencecert:<schema>:<op>:" (the epoch follows). */
void fence_pg__gid_prefix(struct journal *j, const char *op, char *out,
			  size_t len);

/* COMMIT PREPARED (commit = 1) or ROLLBACK PREPARED every transaction left
 * prepared for op; *n (if n) receives how many. */
int fence_pg__resolve_prepared(fence *f, const char *op, int commit,
			       int *n);

int fence_pg__probe(fence *f, const char *op, struct fence_probe *out);

#endif
