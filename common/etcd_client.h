/*
 * etcd_client.h -- a small client for etcd's v3 JSON gateway, over libcurl.
 *
 * It speaks the four KV calls the journal (and an etcd fence) need:
 * /v3/kv/range and /v3/kv/txn, with puts, ranges and delete-ranges inside
 * txns.  Keys and values travel base64-encoded (OpenSSL EVP), requests and
 * answers as JSON (jansson); this module hides both: callers see C strings.
 *
 * Members and failover.  A client knows the members listed at creation
 * ("host:port,host:port").  Each call starts at the member that last
 * answered and walks the list; it keeps walking (with a short pause after a
 * full round) until the call budget is spent.  One CURL easy handle per
 * client keeps a keep-alive connection per member.
 *
 * Timeouts: connect ETCD_CONNECT_TIMEOUT_MS, a whole request
 * ETCD_REQUEST_TIMEOUT_MS; no new attempt starts once ETCD_CALL_BUDGET_MS
 * have passed since the call began, so no call takes longer than the budget
 * plus one request.
 *
 * Outcomes of a txn that writes (the rule the journal builds on):
 *  1. Not sent (no connection, or nothing of the request left this host),
 *     or refused before execution ("etcdserver: no leader", which every
 *     request provokes on a leaderless member because it carries the
 *     "hasleader" metadata; an invalid request): nothing was applied, so the
 *     next member may be tried.
 *  2. Sent and then no answer (timeout, reset, a server-side timeout such as
 *     "etcdserver: request timed out", an answer we cannot parse): the txn
 *     may have been applied, or may still be applied later.  The call stops
 *     at once and returns FC_ERR_COMMIT_UNKNOWN; it never re-sends, because
 *     only the caller knows how to read back what it wrote and decide.
 * Reads (range calls and txns without puts or deletes) have no outcome to
 * lose, so they simply move on to the next member.  All reads are
 * linearizable (the gateway default; "serializable" is never set).
 *
 * Errors: 0 on success; FC_JOURNAL_UNAVAILABLE when no member executed the
 * call; FC_ERR_COMMIT_UNKNOWN as above; FC_USAGE when etcd refused the request
 * as invalid (a bug, or a value over --max-request-bytes); FC_CORRUPT for a
 * malformed answer to a read; FC_NOMEM.  A fence using this module reports
 * FC_FENCE_UNAVAILABLE where it gets FC_JOURNAL_UNAVAILABLE.  The detail is
 * in etcd_client_errmsg().
 *
 * Ownership: an etcd_client is not thread-safe; use one per thread.  Result
 * structs are caller-allocated and filled by the call; release them with
 * their _release function (safe on a zeroed or already released struct).
 *
 * Included by the etcd journal (journal/journal_etcd*), the etcd fence
 * and observer (fences/), and the harness's services (harness/run).
 */
#ifndef FENCECERT_ETCD_CLIENT_H
#define FENCECERT_ETCD_CLIENT_H

#include <stddef.h>

#include <jansson.h>

#include "common/error.h"

#define ETCD_CONNECT_TIMEOUT_MS 1000
#define ETCD_REQUEST_TIMEOUT_MS 3000
#define ETCD_CALL_BUDGET_MS 3000
#define ETCD_MEMBERS_MAX 16
#define ETCD_RESPONSE_MAX (16u << 20) /* bytes of one answer, as JSON */

typedef struct etcd_client etcd_client; /* opaque; etcd_client.c only */

/* One key-value pair of a range answer, decoded. */
struct etcd_kv {
	char *key;   /* NUL-terminated */
	char *value; /* NUL-terminated; value_len does not count the NUL */
	size_t value_len;
	long long create_revision;
	long long mod_revision;
	long long version;
};

struct etcd_range {
	struct etcd_kv *kvs; /* in key order */
	size_t n;
	int more;            /* the limit cut the answer short */
	long long revision;  /* store revision the answer was read at */
};

/* Which branch of a txn an operation belongs to. */
enum etcd_branch { ETCD_SUCCESS, ETCD_FAILURE };

/* What a txn compare looks at. */
enum etcd_target { ETCD_CREATE, ETCD_MOD, ETCD_VERSION };

/*
 * A txn under construction: compares ANDed together, then the success or
 * the failure branch.  Caller-allocated; etcd_txn_init() / _release().
 */
struct etcd_txn {
	json_t *body;
	int writes; /* a put or delete in either branch */
};

struct etcd_txn_result {
	int succeeded;             /* the compares held: success branch ran */
	long long revision;        /* store revision after the txn */
	struct etcd_range *ranges; /* one per op of the branch that ran; a
				    * put or delete leaves its slot empty */
	size_t n;
};

/* members: "host:port[,host:port...]".  On failure *out is NULL and err
 * holds a message (FC_USAGE for a bad list). */
int etcd_client_new(const char *members, etcd_client **out, char *err,
		    size_t errlen) FC_MUST_CHECK;
void etcd_client_free(etcd_client *c); /* NULL is a no-op */

/* Message describing the last failure on c ("" if none). */
const char *etcd_client_errmsg(const etcd_client *c);

/* "host:port" of the member that answered last (or will be tried first). */
const char *etcd_client_member(const etcd_client *c);

/* Try member i (0-based, in the order given; taken modulo their number)
 * first from now on, until another member answers instead. */
void etcd_client_prefer(etcd_client *c, size_t i);

/* Keys from key (inclusive) to end (exclusive); end NULL: key alone.
 * limit 0: no limit.  revision 0: the latest; else read the store as of
 * that revision (pages of one listing read one snapshot). */
int etcd_client_range(etcd_client *c, const char *key, const char *end,
		      long long limit, long long revision,
		      struct etcd_range *out) FC_MUST_CHECK;

int etcd_client_txn(etcd_client *c, const struct etcd_txn *t,
		    struct etcd_txn_result *out) FC_MUST_CHECK;

int etcd_txn_init(struct etcd_txn *t) FC_MUST_CHECK;
void etcd_txn_release(struct etcd_txn *t);

/* Compare `target` of key with value for equality (the only comparison the
 * journal needs: a revision guard or "key absent" = ETCD_CREATE 0). */
int etcd_txn_compare(struct etcd_txn *t, const char *key,
		     enum etcd_target target, long long value) FC_MUST_CHECK;
int etcd_txn_put(struct etcd_txn *t, enum etcd_branch b, const char *key,
		 const char *value, size_t value_len) FC_MUST_CHECK;
int etcd_txn_range(struct etcd_txn *t, enum etcd_branch b, const char *key,
		   const char *end) FC_MUST_CHECK;
int etcd_txn_delete(struct etcd_txn *t, enum etcd_branch b, const char *key,
		    const char *end) FC_MUST_CHECK;

/*
 * Decode the JSON body of a range or txn answer exactly as
 * etcd_client_range() / etcd_client_txn() decode an answer they accept.
 * An answer is what a network peer wrote: these let tests and the fuzz
 * target (tests/fuzz/fuzz_etcd.c) feed it bytes without a server.  0,
 * FC_CORRUPT (not a JSON object, or malformed), FC_NOMEM; on error *out
 * holds nothing.
 */
int etcd_range_decode(const char *body, size_t len, struct etcd_range *out)
	FC_MUST_CHECK;
int etcd_txn_result_decode(const char *body, size_t len,
			   struct etcd_txn_result *out) FC_MUST_CHECK;

void etcd_range_release(struct etcd_range *r);
void etcd_txn_result_release(struct etcd_txn_result *r);

/* The end of the range of every key starting with prefix: prefix with its
 * last byte incremented.  0, or FC_USAGE if it does not fit in out. */
int etcd_prefix_end(const char *prefix, char *out, size_t outlen)
	FC_MUST_CHECK;

#endif
