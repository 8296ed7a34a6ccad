/*
 * journal_etcd_read.c -- what every call of the etcd journal adapter reads
 * first (journal_etcd_impl.h): the schema key (created on first use, or by
 * migrate), an operation's entry, and scans of a key prefix at one pinned
 * revision; and how a failed read is told.
 *
 * It calls nothing else of the adapter but the codec: the writes
 * (journal_etcd_write.c) and the ops table (journal_etcd.c) are built on
 * it.  Invariants 2 and 5 of journal_etcd.c are kept here: an entry read
 * from etcd refreshes the handle's cache, and listings page through one
 * revision.
 */
#include <jansson.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/array.h"
#include "journal/journal_etcd_impl.h"

int journal_etcd__client_fail(journal *j, int rc, const char *what)
{
	struct je *s = je_of(j);

	if (rc == FC_NOMEM)
		return journal__fail(j, rc, "out of memory");
	if (rc == FC_ERR_COMMIT_UNKNOWN)
		rc = FC_JOURNAL_UNAVAILABLE;
	return journal__fail(j, rc, "cannot %s journal '%s': %s", what, s->url,
			     etcd_client_errmsg(s->client));
}

int journal_etcd__corrupt(journal *j, const char *key)
{
	return journal__fail(j, FC_CORRUPT, "malformed value at key '%s' in "
			     "journal '%s'", key, je_of(j)->url);
}

int journal_etcd__not_found(journal *j, const char *op)
{
	return journal__fail(j, FC_NOT_FOUND, "operation '%s' not found in "
			     "journal '%s'", op, je_of(j)->url);
}

void journal_etcd__cur_release(struct je_cur *c)
{
	free(c->raw);
	c->raw = NULL;
}

int journal_etcd__write_id(journal *j, char out[JE_WRITE_ID_LEN + 1])
{
	static const char hex[] = "0123456789abcdef";
	unsigned char r[JE_WRITE_ID_LEN / 2];

	if (RAND_bytes(r, sizeof(r)) != 1)
		return journal__fail(j, FC_IO, "cannot draw random bytes for "
				     "a write id");
	for (size_t i = 0; i < sizeof(r); i++) {
		out[2 * i] = hex[r[i] >> 4];
		out[2 * i + 1] = hex[r[i] & 15];
	}
	out[JE_WRITE_ID_LEN] = '\0';
	return 0;
}

int journal_etcd__cur_from(journal *j, const struct etcd_range *r,
			   const char *key, struct je_cur *cur)
{
	journal_etcd__cur_release(cur);
	cur->found = 0;
	if (r->n == 0)
		return 0;
	if (journal_etcd__entry_decode(r->kvs[0].value, &cur->e, cur->write_id))
		return journal_etcd__corrupt(j, key);
	cur->raw = strdup(r->kvs[0].value);
	if (!cur->raw)
		return journal__fail(j, FC_NOMEM, "out of memory");
	cur->found = 1;
	cur->rev = r->kvs[0].mod_revision;
	return 0;
}

int journal_etcd__read_entry(journal *j, const char *op, struct je_cur *cur)
{
	struct je *s = je_of(j);
	struct etcd_range r;
	char key[JE_KEY_MAX];
	int rc;

	key_op(s, op, key);
	rc = etcd_client_range(s->client, key, NULL, 0, 0, &r);
	if (rc)
		return journal_etcd__client_fail(j, rc, "read");
	rc = journal_etcd__cur_from(j, &r, key, cur);
	etcd_range_release(&r);
	if (!rc && cur->found)
		cache_put(s, &cur->e, cur->rev);
	return rc;
}

/* ---- schema -------------------------------------------------------------- */

/* The stored schema version; 0 when PREFIX has none yet. */
static int read_schema(journal *j, int *version)
{
	struct je *s = je_of(j);
	struct etcd_range r;
	char key[JE_KEY_MAX], *end;
	long v = 0;
	int rc;

	snprintf(key, sizeof(key), "%s/schema", s->prefix);
	if ((rc = etcd_client_range(s->client, key, NULL, 0, 0, &r)))
		return journal_etcd__client_fail(j, rc, "read the schema of");
	if (r.n) {
		v = strtol(r.kvs[0].value, &end, 10);
		if (*end || end == r.kvs[0].value || v < 1 || v > 1000000) {
			etcd_range_release(&r);
			return journal_etcd__corrupt(j, key);
		}
	}
	etcd_range_release(&r);
	*version = (int)v;
	return 0;
}

/*
 * Write the current schema version if PREFIX has none.  Creating it is
 * idempotent (create_revision == 0), so a lost answer is settled by
 * reading the version again.
 */
static int create_schema(journal *j, int *version)
{
	struct je *s = je_of(j);
	struct etcd_txn_result res;
	struct etcd_txn t;
	char key[JE_KEY_MAX], text[16];
	int rc;

	snprintf(key, sizeof(key), "%s/schema", s->prefix);
	snprintf(text, sizeof(text), "%d", JOURNAL_SCHEMA_VERSION);
	if ((rc = etcd_txn_init(&t)) ||
	    (rc = etcd_txn_compare(&t, key, ETCD_CREATE, 0)) ||
	    (rc = etcd_txn_put(&t, ETCD_SUCCESS, key, text, strlen(text))))
		rc = journal__fail(j, rc, "out of memory");
	else
		rc = etcd_client_txn(s->client, &t, &res);
	etcd_txn_release(&t);
	if (rc == FC_ERR_COMMIT_UNKNOWN || (!rc && !res.succeeded)) {
		if (!rc)
			etcd_txn_result_release(&res);
		if ((rc = read_schema(j, version)))
			return rc;
		if (*version == 0)
			return journal__fail(j, FC_JOURNAL_UNAVAILABLE,
					     "cannot create the schema of "
					     "journal '%s': no answer", s->url);
		return 0;
	}
	if (rc)
		return journal_etcd__client_fail(j, rc, "write");
	etcd_txn_result_release(&res);
	*version = JOURNAL_SCHEMA_VERSION;
	return 0;
}

static int schema_refused(journal *j, int v)
{
	struct je *s = je_of(j);

	if (v > JOURNAL_SCHEMA_VERSION)
		return journal__fail(j, FC_USAGE, "journal '%s' has schema "
				     "version %d, newer than this fencecert "
				     "supports (%d)", s->url, v,
				     JOURNAL_SCHEMA_VERSION);
	return journal__fail(j, FC_USAGE, "journal '%s' has schema version "
			     "%d, this fencecert needs %d; run 'fencecert "
			     "journal migrate'", s->url, v,
			     JOURNAL_SCHEMA_VERSION);
}

/* Called first by every operation but migrate: an empty PREFIX gets the
 * schema implicitly, as a new SQLite file does. */
int journal_etcd__ready(journal *j)
{
	struct je *s = je_of(j);
	int rc, v;

	if (s->ready)
		return 0;
	if ((rc = read_schema(j, &v)) || (!v && (rc = create_schema(j, &v))))
		return rc;
	if (v != JOURNAL_SCHEMA_VERSION)
		return schema_refused(j, v);
	s->ready = 1;
	return 0;
}

/* Version 1 is the first etcd layout: migrating means creating it. */
int journal_etcd__migrate(journal *j, int *from, int *to)
{
	int rc, v, now;

	if ((rc = read_schema(j, &v)))
		return rc;
	if (v > JOURNAL_SCHEMA_VERSION)
		return schema_refused(j, v);
	now = v;
	if (!v && (rc = create_schema(j, &now)))
		return rc;
	if (now != JOURNAL_SCHEMA_VERSION)
		return schema_refused(j, now);
	je_of(j)->ready = 1;
	*from = v;
	*to = JOURNAL_SCHEMA_VERSION;
	return 0;
}

/*
 * Visit every key under prefix (the "/"-terminated key start), in key
 * order, JE_PAGE at a time, all pages read at the revision of the first.
 * visit() returns 0 to go on or an error (with a message on j).
 */
int journal_etcd__scan(journal *j, const char *prefix,
		       int (*visit)(journal *j, const struct etcd_kv *kv,
				    void *arg),
		       void *arg)
{
	struct je *s = je_of(j);
	char start[JE_KEY_MAX + 2], end[JE_KEY_MAX];
	long long rev = 0;
	struct etcd_range r;
	int rc, more = 1;

	if (etcd_prefix_end(prefix, end, sizeof(end)))
		return journal__fail(j, FC_USAGE, "key prefix too long");
	snprintf(start, sizeof(start), "%s", prefix);
	while (more) {
		if ((rc = etcd_client_range(s->client, start, end, JE_PAGE, rev,
					    &r)))
			return journal_etcd__client_fail(j, rc, "read");
		rev = rev ? rev : r.revision;
		more = r.more && r.n > 0;
		for (size_t i = 0; i < r.n && !rc; i++)
			rc = visit(j, &r.kvs[i], arg);
		/* The next page starts just after the last key.  Keys are
		 * printable, so nothing sorts between K and K "\x01". */
		if (!rc && more)
			snprintf(start, sizeof(start), "%s\x01",
				 r.kvs[r.n - 1].key);
		etcd_range_release(&r);
		if (rc)
			return rc;
	}
	return 0;
}

/* Make room for item n of an array of elem-byte items. */
int journal_etcd__grow(journal *j, void **arr, size_t *cap, size_t n,
		       size_t elem)
{
	if (array_grow(arr, cap, n, elem, 8))
		return journal__fail(j, FC_NOMEM, "out of memory reading "
				     "journal '%s'", je_of(j)->url);
	return 0;
}
