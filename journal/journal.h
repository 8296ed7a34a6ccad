/*
 * journal.h -- the durable commit journal port (SPEC section 4).
 *
 * A journal stores one entry per operation: its identity, intent, state,
 * version, lease and timestamps, plus an append-only history of transitions.
 * It never stores row values, SQL text, credentials or URLs with secrets.
 *
 * Invariants every adapter keeps (the conformance suite checks each):
 *  1. create_or_get is create-if-absent; an existing entry's intent is never
 *     overwritten; another intent for the same id is FC_INTENT_CONFLICT.
 *  2. Every state change is a compare-and-set on (expected version, expected
 *     states); the version rises by exactly one; the change and its history
 *     row are durable together before the call returns.
 *  3. Only edges of the table in states.c are taken (FC_ILLEGAL_TRANSITION).
 *  4. A CAS carrying a lease epoch other than the current one fails with
 *     FC_LEASE_LOST; epochs only grow.
 *  5. A failing call changes nothing.
 *
 * Adapters are chosen by URL scheme: "sqlite:PATH", "postgresql://...",
 * "etcd://HOST:PORT[,HOST:PORT...]/PREFIX".
 *
 * Ownership: entries are caller-allocated structs filled in place; arrays
 * returned through `**out` are malloc'd and the caller frees them with free().
 * The journal object owns its connection; journal_close() releases it.
 *
 * Included by everything that reads or moves the journal: routes/,
 * recover/, the harness (collecting records), fences/ (the fence port
 * shares the journal's id bounds) and the `journal` command.
 */
#ifndef FENCECERT_JOURNAL_H
#define FENCECERT_JOURNAL_H

#include <stddef.h>

#include "common/clock.h"
#include "common/error.h"
#include "journal/states.h"

#define JOURNAL_ID_MAX 80     /* holds an IDENTITY_DIGEST_LEN string + NUL */
#define JOURNAL_OWNER_MAX 128
#define JOURNAL_JSON_MAX 4096 /* meta and evidence objects, as JSON text */
#define JOURNAL_SCHEMA_VERSION 1

typedef struct journal journal; /* opaque; fields known to journal*.c only */

struct journal_entry {
	char operation_id[JOURNAL_ID_MAX];
	char intent_digest[JOURNAL_ID_MAX];
	enum fc_state state;
	long long version;          /* 1 after create, +1 per transition */
	long long lease_epoch;      /* 0 until the first lease */
	char lease_owner[JOURNAL_OWNER_MAX];
	long long lease_expires_at; /* ms since the Unix epoch; 0 = none */
	long long created_at;       /* ms since the Unix epoch */
	long long updated_at;
	char meta[JOURNAL_JSON_MAX];     /* JSON object given at create, "{}" */
	char evidence[JOURNAL_JSON_MAX]; /* JSON object of the last transition */
};

struct journal_transition {
	char operation_id[JOURNAL_ID_MAX];
	long long version;   /* the version this transition produced */
	enum fc_state from;  /* FC_STATE_NONE for the create row */
	enum fc_state to;
	long long epoch;     /* lease epoch of the mover; 0 = none (operator) */
	long long at;        /* ms since the Unix epoch */
	char evidence[JOURNAL_JSON_MAX];
};

struct journal_cas {
	const char *operation_id;
	long long expected_version;
	state_set expected_states; /* 0: any state from which `next` is legal */
	enum fc_state next;
	long long epoch;           /* 0: no lease check (operator recovery) */
	const char *evidence;      /* JSON object text, or NULL for "{}" */
};

struct journal_filter {
	state_set states;          /* 0: every state */
	long long updated_before;  /* ms; 0: no bound */
};

/* Open the journal named by url.  On failure *out is NULL and err holds a
 * message (FC_USAGE for a bad URL, FC_JOURNAL_UNAVAILABLE otherwise). */
int journal_open(const char *url, journal **out, char *err, size_t errlen)
	FC_MUST_CHECK;
/*
 * Open for reading only (`recover inspect`/`plan`/`list`): get, history
 * and list work; init, migrate, create_or_get, cas, acquire_lease and
 * purge fail with FC_USAGE before they reach the store.  The adapter
 * writes nothing, not even on a first read: SQLite opens the file
 * SQLITE_OPEN_READONLY (a missing file fails, none is created) without
 * its WAL/synchronous pragmas; PostgreSQL runs the session read-only
 * (default_transaction_read_only); neither creates a schema, so a store
 * without a fencecert schema is FC_JOURNAL_UNAVAILABLE ("not a fencecert
 * journal"); etcd only reads.
 */
int journal_open_readonly(const char *url, journal **out, char *err,
			  size_t errlen) FC_MUST_CHECK;
void journal_close(journal *j); /* NULL is a no-op */
/* The same, leaving the store's files as the writers left them: a SQLite
 * journal is closed without the checkpoint its last connection makes
 * (the -wal stays); other stores close as journal_close().  For a reader
 * that must not write what the route did not (the harness). */
void journal_close_as_is(journal *j); /* NULL is a no-op */

/* Message describing the last failure on j ("" if none). */
const char *journal_errmsg(const journal *j);

/* Create the schema if absent (idempotent). */
int journal_init(journal *j) FC_MUST_CHECK;

/* Upgrade the schema in place; *from and *to receive the versions. */
int journal_migrate(journal *j, int *from, int *to) FC_MUST_CHECK;

/* Create-if-absent.  *created is 1 when this call created the entry. */
int journal_create_or_get(journal *j, const char *op, const char *intent,
			  const char *meta_json, struct journal_entry *out,
			  int *created) FC_MUST_CHECK;

int journal_get(journal *j, const char *op, struct journal_entry *out)
	FC_MUST_CHECK;

/* Compare-and-set; on success *out is the new entry. */
int journal_cas(journal *j, const struct journal_cas *req,
		struct journal_entry *out) FC_MUST_CHECK;

/* Every transition of op, oldest first (the create row included). */
int journal_history(journal *j, const char *op,
		    struct journal_transition **out, size_t *n) FC_MUST_CHECK;

int journal_list(journal *j, const struct journal_filter *f,
		 struct journal_entry **out, size_t *n) FC_MUST_CHECK;

/*
 * Take the lease for owner for ttl_ms.  Succeeds when there is no lease, it
 * expired, or owner already holds it; the epoch rises by one on every
 * success and *out carries it.  FC_LEASE_HELD when another owner holds an
 * unexpired lease.  Does not change state or version.
 */
int journal_acquire_lease(journal *j, const char *op, const char *owner,
			  long long ttl_ms, struct journal_entry *out)
	FC_MUST_CHECK;

/* Delete COMPLETE operations (and their history) last updated before
 * `before` (ms); the removed ids are returned in *ids (caller frees). */
int journal_purge(journal *j, long long before,
		  char (**ids)[JOURNAL_ID_MAX], size_t *n) FC_MUST_CHECK;

/* The URL with any password replaced by "***", for messages and reports. */
void journal_redact_url(const char *url, char *out, size_t outlen);

#endif
