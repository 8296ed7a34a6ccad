/*
 * journal_impl.h -- what journal adapters see of struct journal, and the
 * ops table each fills.  Only journal/ includes this file: journal.c (the
 * port), journal_adapter.c (what it lends the adapters) and the adapters
 * (journal_<backend>*.c, directly or through their own
 * journal_<backend>_impl.h).  journal__ names never leave journal/.
 *
 * An adapter may rely on journal.c having validated the request; it
 * records failures with journal__fail(), sets j->impl in open() only on
 * success, and writes nothing when j->readonly.  Resources an adapter
 * shares with other layers (the PostgreSQL session, common/pg_session.h)
 * are held through their own objects, never through a struct journal.
 */
#ifndef FENCECERT_JOURNAL_IMPL_H
#define FENCECERT_JOURNAL_IMPL_H

#include "journal/journal.h"

struct journal_ops {
	const char *scheme; /* URL prefix before ':' */
	int (*open)(journal *j, const char *url);
	void (*close)(void *impl);
	/* optional: make the coming close leave the store's files as they
	 * are (journal_close_as_is()) */
	void (*leave_as_is)(void *impl);
	int (*init)(journal *j);
	int (*migrate)(journal *j, int *from, int *to);
	int (*create_or_get)(journal *j, const char *op, const char *intent,
			     const char *meta, struct journal_entry *out,
			     int *created);
	int (*get)(journal *j, const char *op, struct journal_entry *out);
	int (*cas)(journal *j, const struct journal_cas *req,
		   struct journal_entry *out);
	int (*history)(journal *j, const char *op,
		       struct journal_transition **out, size_t *n);
	int (*list)(journal *j, const struct journal_filter *f,
		    struct journal_entry **out, size_t *n);
	int (*acquire_lease)(journal *j, const char *op, const char *owner,
			     long long ttl_ms, struct journal_entry *out);
	int (*purge)(journal *j, long long before,
		     char (**ids)[JOURNAL_ID_MAX], size_t *n);
};

struct journal {
	const struct journal_ops *ops;
	void *impl;
	int readonly;       /* journal_open_readonly(): adapters write nothing */
	char errmsg[512];
};

/* Record a message on j and return code (so adapters can `return`). */
int journal__fail(journal *j, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/*
 * The CAS rules in one place: given the current entry, decide whether req
 * may be applied.  Returns 0 or FC_CAS_CONFLICT / FC_ILLEGAL_TRANSITION /
 * FC_LEASE_LOST with a message on j.  Adapters call it inside their atomic
 * step (or, where the store checks in one statement, to explain a refusal).
 */
int journal__check_cas(journal *j, const struct journal_entry *cur,
		       const struct journal_cas *req);

/*
 * The entry create_or_get() makes for op: PREPARING at version 1, no
 * lease, evidence "{}", created and updated now (clock_wall_ms()).
 */
void journal__new_entry(struct journal_entry *e, const char *op,
			const char *intent, const char *meta);

/* create_or_get() on an existing entry: it is handed out only to the same
 * intent.  0, or FC_INTENT_CONFLICT with a message on j. */
int journal__check_intent(journal *j, const struct journal_entry *cur,
			  const char *intent);

/* acquire_lease(): owner may take the lease on cur at time now unless
 * another owner's lease is still running.  0, or FC_LEASE_HELD with a
 * message on j. */
int journal__check_lease(journal *j, const struct journal_entry *cur,
			 const char *owner, long long now);

extern const struct journal_ops journal_sqlite_ops;
extern const struct journal_ops journal_pg_ops;
extern const struct journal_ops journal_etcd_ops;

#endif
