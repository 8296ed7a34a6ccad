/*
 * etcd_layout.h -- what an "etcd://" target holds and where.  Shared by the
 * etcd fence (fence_etcd.c, which writes it) and the target observer
 * (target_etcd.c, which reads it back without trusting the fence), as
 * datafile.h is for "file:" targets.  docs/fence-etcd.md is the long form.
 *
 * URL:  etcd://HOST:PORT[,HOST:PORT...]/PREFIX[?first=pid|first=N]
 *
 * Keys (<x> is x percent-encoded by curl_easy_escape(): only letters,
 * digits and "-._~" stay as they are, so no part holds a '/' or a byte
 * below '!'):
 *
 *   PREFIX/<table>/rows/<row_key>/<op>/<epoch>-<i>   one data row
 *   PREFIX/fencecert_fence/<op>                      the fence record
 *   PREFIX/fencecert_epoch/<op>                      highest epoch prepared
 *
 * Values are compact JSON (jansson):
 *
 *   row     {"payload": "..." | null}
 *   fence   {"operation_id", "intent_digest", "epoch", "rows", "table",
 *            "applied_at" (ms since 1970), "write_id"}
 *   epoch   {"operation_id", "epoch"}
 *
 * Why this layout:
 *  1. One key per row, named by the row, the operation, the epoch and the
 *     row's position in its batch, so no two rows of all applies ever share
 *     a key: a row written twice (a second apply, a hand-made copy) is two
 *     keys under PREFIX/<table>/rows/<row_key>/ and the observer counts two.
 *     A layout keyed by row_key alone would let the second write overwrite
 *     the first and hide the duplicate.
 *  2. Everything of one row_key is one key range, so REPLACE deletes it
 *     with range deletes, and the observer groups by row_key from the key.
 *  3. The fence and epoch keys live under fencecert_* names, which the
 *     fence port refuses as table names (fence.c), so no table's rows can
 *     ever fall into their ranges, as in the SQLite fence's tables.
 *  4. Operation ids and row keys are encoded whole (not shortened or
 *     hashed): two operations can never write the same key.
 *
 * Included by fences/ only.
 */
#ifndef FENCECERT_ETCD_LAYOUT_H
#define FENCECERT_ETCD_LAYOUT_H

#include <stddef.h>

#include "common/error.h"
#include "journal/journal.h"

#define ETCD_LAYOUT_PREFIX_MAX 200
#define ETCD_LAYOUT_MEMBERS_MAX 255
#define ETCD_LAYOUT_WRITE_ID_LEN 32 /* hex digits */

#define ETCD_LAYOUT_FENCE_DIR "fencecert_fence"
#define ETCD_LAYOUT_EPOCH_DIR "fencecert_epoch"

/*
 * Limits of one apply (one txn).  The fence refuses a larger batch before
 * any I/O.  OPS counts the txn's success branch: one put per row, the
 * fence and epoch puts, and for REPLACE up to one range delete per row
 * plus one per distinct row_key.  BYTES counts the keys and values it
 * sends (before base64).  A server started with a lower --max-txn-ops
 * (etcd's default is 128) or --max-request-bytes (1.5 MiB) refuses the txn
 * itself, which the fence reports the same way (FC_USAGE, nothing
 * applied).
 */
#define ETCD_LAYOUT_OPS_MAX 2048
#define ETCD_LAYOUT_BYTES_MAX (1u << 20)

/* A parsed target URL. */
struct etcd_where {
	char members[ETCD_LAYOUT_MEMBERS_MAX + 1]; /* "host:port,..." */
	char prefix[ETCD_LAYOUT_PREFIX_MAX + 1];   /* without a final '/' */
	int first;                                 /* -1: not given */
};

/*
 * Parse url into *w; a first=pid option is resolved with getpid() here.
 * FC_USAGE with a message in err when the URL is malformed (credentials
 * are refused, and the message never repeats the member list).
 */
int etcd_layout_parse(const char *url, struct etcd_where *w, char *err,
		      size_t errlen) FC_MUST_CHECK;

/*
 * Key builders.  Each returns a new string (free() it), or NULL when out of
 * memory.  table must already be a valid table name.
 */
char *etcd_layout_fence_key(const struct etcd_where *w, const char *op);
char *etcd_layout_epoch_key(const struct etcd_where *w, const char *op);
/* "PREFIX/fencecert_fence/" and "PREFIX/fencecert_epoch/" */
char *etcd_layout_fence_dir(const struct etcd_where *w);
char *etcd_layout_epoch_dir(const struct etcd_where *w);
/* "PREFIX/<table>/rows/" */
char *etcd_layout_rows_dir(const struct etcd_where *w, const char *table);
/* "PREFIX/<table>/rows/<row_key>/" */
char *etcd_layout_row_dir(const struct etcd_where *w, const char *table,
			  const char *row_key);
/* "PREFIX/<table>/rows/<row_key>/<op>/<epoch>-<i>" */
char *etcd_layout_row_key(const struct etcd_where *w, const char *table,
			  const char *row_key, const char *op,
			  long long epoch, size_t i);

/*
 * Split what follows a rows dir ("<row_key>/<op>/<rest>") into the decoded
 * row key and operation id (new strings; free() them).  *op is NULL when
 * the key does not have the fence's shape (a row written by hand).
 * FC_NOMEM or 0.
 */
int etcd_layout_split_row(const char *rest, char **row_key, char **op)
	FC_MUST_CHECK;

/* The decoded id of a key under a fence or epoch dir into *op (new
 * string); *op is NULL when rest is empty or holds a '/' (not one of
 * ours).  FC_NOMEM or 0. */
int etcd_layout_split_op(const char *rest, char **op) FC_MUST_CHECK;

/* The values, as new JSON text (free() it) or NULL when out of memory. */
char *etcd_layout_row_value(const char *payload);
char *etcd_layout_epoch_value(const char *op, long long epoch);

struct etcd_fence_value {
	char operation_id[JOURNAL_ID_MAX];
	char intent_digest[JOURNAL_ID_MAX];
	char table[64];
	long long epoch;
	long long rows;
	long long applied_at;
	char write_id[ETCD_LAYOUT_WRITE_ID_LEN + 1];
};

char *etcd_layout_fence_value(const struct etcd_fence_value *v);

/* Decode a stored value; FC_CORRUPT when it is not what we write. */
int etcd_layout_fence_decode(const char *text, struct etcd_fence_value *v)
	FC_MUST_CHECK;
int etcd_layout_epoch_decode(const char *text, long long *epoch)
	FC_MUST_CHECK;

#endif
