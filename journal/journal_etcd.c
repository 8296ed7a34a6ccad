/*
 * journal_etcd.c -- the etcd journal adapter:
 * "etcd://HOST:PORT[,HOST:PORT...]/PREFIX" (etcd 3.4 v3 JSON gateway,
 * through etcd_client.c).  docs/etcd.md is the long form of this comment.
 *
 * Key layout under PREFIX (values are JSON text):
 *
 *   PREFIX/schema               "1": the schema version
 *   PREFIX/ops/<op>             the entry: every journal_entry field
 *   PREFIX/hist/<op>/<v:%020>   the transition that produced version v
 *   PREFIX/purged/<op>          tombstone written by purge
 *
 * Every value written carries a random write_id, so a writer that lost the
 * answer to its txn can recognize its own write when it reads back.
 *
 * Invariants:
 *  1. Each write is ONE txn guarded by a compare on the entry key: create
 *     compares create_revision == 0; cas, lease and purge compare
 *     mod_revision with the revision of the entry they decided on.  A CAS
 *     puts the entry and its history key in that same txn.
 *  2. journal__check_cas() decides on the entry the txn's compare pins.  The
 *     entry may come from this handle's cache of its last read or write
 *     (the compare proves it current); a refusal is only ever reported from
 *     an entry read fresh from etcd, never from the cache.
 *  3. A txn whose answer was lost (FC_ERR_COMMIT_UNKNOWN from the client) is
 *     never re-sent blindly.  settle() reads back: our write_id in the
 *     history key (cas) or the entry (lease) means it applied; an entry
 *     whose mod_revision moved means it never will; an unmoved entry is
 *     rewritten unchanged under the same compare (a "barrier"), after which
 *     it never will either.  Only then is the operation decided again.  If
 *     even that cannot be done, the call fails FC_JOURNAL_UNAVAILABLE and
 *     says the outcome is unknown (the next reader reconciles).
 *  4. Epochs: acquire_lease writes lease_epoch + 1 under the compare, so two
 *     acquirers can never get the same epoch and it only grows.
 *  5. Reads are linearizable; listings page through one pinned revision.
 *
 *   cas:  entry (cache or range) -> journal__check_cas()
 *          -> txn[mod == R : put entry v+1, put hist/v+1 | range entry]
 *             succeeded -> done        compare failed -> decide again
 *             answer lost -> settle() -> applied / decide again / unknown
 */
#include <jansson.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

static int je_init(journal *j)
{
	return journal_etcd__ready(j);
}

/* Version 1 is the first etcd layout: migrating means creating it. */
static int je_migrate(journal *j, int *from, int *to)
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

/* ---- open / close -------------------------------------------------------- */

static int prefix_valid(const char *p, size_t n)
{
	if (n == 0 || n > JE_PREFIX_MAX || p[0] == '/' || p[n - 1] == '/')
		return 0;
	for (size_t i = 0; i < n; i++)
		if (p[i] <= ' ' || p[i] > '~' || p[i] == '?' || p[i] == '#' ||
		    (p[i] == '/' && p[i + 1] == '/'))
			return 0;
	return 1;
}

static void je_close(void *impl)
{
	struct je *s = impl;

	if (!s)
		return;
	etcd_client_free(s->client);
	free(s);
}

/*
 * Options after '?': first=pid starts each process at member (pid mod
 * members) -- spreading many processes, e.g. racing routes, over the
 * cluster -- and first=N at member N (0-based).  Failover still walks the
 * whole list from there.
 */
static int parse_options(journal *j, struct je *s, const char *q,
			 unsigned long nmembers)
{
	unsigned long first;
	char *end;

	if (strcmp(q, "first=pid") == 0) {
		first = (unsigned long)getpid() % nmembers;
	} else if (strncmp(q, "first=", 6) == 0 && q[6] >= '0' && q[6] <= '9') {
		first = strtoul(q + 6, &end, 10);
		if (*end || first >= nmembers)
			return journal__fail(j, FC_USAGE, "etcd journal option "
					     "'%s': no such member", q);
	} else {
		return journal__fail(j, FC_USAGE, "unknown etcd journal option "
				     "'%s' (known: first=pid, first=N)", q);
	}
	etcd_client_prefer(s->client, first);
	return 0;
}

static int je_open(journal *j, const char *url)
{
	const char *hosts = url + strlen("etcd:");
	const char *slash, *query;
	char members[256], err[256];
	unsigned long count = 1;
	struct je *s;
	size_t n, plen;
	int rc;

	if (strncmp(hosts, "//", 2) != 0)
		return journal__fail(j, FC_USAGE, "journal url '%s' is not "
				     "etcd://HOST:PORT[,HOST:PORT...]/PREFIX",
				     url);
	hosts += 2;
	slash = strchr(hosts, '/');
	n = slash ? (size_t)(slash - hosts) : strlen(hosts);
	if (memchr(hosts, '@', n))
		return journal__fail(j, FC_USAGE, "journal url for etcd must "
				     "not carry credentials");
	query = slash ? strchr(slash, '?') : NULL;
	plen = slash ? (query ? (size_t)(query - slash - 1)
			      : strlen(slash + 1)) : 0;
	if (!slash || !prefix_valid(slash + 1, plen))
		return journal__fail(j, FC_USAGE, "journal url '%s' needs a "
				     "PREFIX: printable, no spaces, '?', '#' "
				     "or empty path segments, at most %d "
				     "bytes", url, JE_PREFIX_MAX);
	if (n >= sizeof(members))
		return journal__fail(j, FC_USAGE, "member list too long in "
				     "'%.60s...'", url);
	memcpy(members, hosts, n);
	members[n] = '\0';
	for (size_t i = 0; i < n; i++)
		count += members[i] == ',';
	s = calloc(1, sizeof(*s));
	if (!s)
		return journal__fail(j, FC_NOMEM, "out of memory opening a "
				     "journal");
	memcpy(s->prefix, slash + 1, plen);
	s->prefix[plen] = '\0';
	snprintf(s->url, sizeof(s->url), "%s", url);
	rc = etcd_client_new(members, &s->client, err, sizeof(err));
	if (rc) {
		free(s);
		return journal__fail(j, rc, "cannot open journal '%s': %s",
				     url, err);
	}
	if (query && (rc = parse_options(j, s, query + 1, count))) {
		je_close(s);
		return rc;
	}
	j->impl = s;
	return 0;
}

/* ---- reads --------------------------------------------------------------- */

static int je_get(journal *j, const char *op, struct journal_entry *out)
{
	struct je_cur cur = { 0 };
	int rc;

	if ((rc = journal_etcd__ready(j)) ||
	    (rc = journal_etcd__read_entry(j, op, &cur)))
		return rc;
	if (!cur.found)
		return journal_etcd__not_found(j, op);
	*out = cur.e;
	journal_etcd__cur_release(&cur);
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
	size_t ncap;
	void *p;

	if (n < *cap)
		return 0;
	ncap = *cap ? *cap * 2 : 8;
	if (ncap > ((size_t)-1) / elem || !(p = realloc(*arr, ncap * elem)))
		return journal__fail(j, FC_NOMEM, "out of memory reading "
				     "journal '%s'", je_of(j)->url);
	*arr = p;
	*cap = ncap;
	return 0;
}

struct collect {
	void *arr;
	size_t n, cap;
	const struct journal_filter *filter; /* list only */
};

static int visit_transition(journal *j, const struct etcd_kv *kv, void *arg)
{
	struct collect *c = arg;
	struct journal_transition *t;
	char wid[JE_WRITE_ID_LEN + 1];
	int rc;

	if ((rc = journal_etcd__grow(j, &c->arr, &c->cap, c->n, sizeof(*t))))
		return rc;
	t = (struct journal_transition *)c->arr + c->n;
	if (journal_etcd__transition_decode(kv->value, t, wid))
		return journal_etcd__corrupt(j, kv->key);
	c->n++;
	return 0;
}

static int je_history(journal *j, const char *op,
		      struct journal_transition **out, size_t *n)
{
	struct je *s = je_of(j);
	struct collect c = { 0 };
	char prefix[JE_KEY_MAX];
	int rc;

	if ((rc = journal_etcd__ready(j)))
		return rc;
	snprintf(prefix, sizeof(prefix), "%s/hist/%s/", s->prefix, op);
	rc = journal_etcd__scan(j, prefix, visit_transition, &c);
	/* create writes history key 1 with the entry: none means no op. */
	if (!rc && c.n == 0)
		rc = journal_etcd__not_found(j, op);
	if (rc) {
		free(c.arr);
		return rc;
	}
	*out = c.arr;
	*n = c.n;
	return 0;
}

static int visit_entry(journal *j, const struct etcd_kv *kv, void *arg)
{
	struct collect *c = arg;
	const struct journal_filter *f = c->filter;
	struct journal_entry *e;
	char wid[JE_WRITE_ID_LEN + 1];
	int rc;

	if ((rc = journal_etcd__grow(j, &c->arr, &c->cap, c->n, sizeof(*e))))
		return rc;
	e = (struct journal_entry *)c->arr + c->n;
	if (journal_etcd__entry_decode(kv->value, e, wid))
		return journal_etcd__corrupt(j, kv->key);
	if ((!f->states || (f->states & STATE_BIT(e->state))) &&
	    (!f->updated_before || e->updated_at < f->updated_before))
		c->n++;
	return 0;
}

static int je_list(journal *j, const struct journal_filter *f,
		   struct journal_entry **out, size_t *n)
{
	struct je *s = je_of(j);
	struct collect c = { .filter = f };
	char prefix[JE_KEY_MAX];
	int rc;

	if ((rc = journal_etcd__ready(j)))
		return rc;
	snprintf(prefix, sizeof(prefix), "%s/ops/", s->prefix);
	if ((rc = journal_etcd__scan(j, prefix, visit_entry, &c))) {
		free(c.arr);
		return rc;
	}
	*out = c.arr;
	*n = c.n;
	return 0;
}

const struct journal_ops journal_etcd_ops = {
	.scheme = "etcd",
	.open = je_open,
	.close = je_close,
	.init = je_init,
	.migrate = je_migrate,
	.create_or_get = journal_etcd__create_or_get,
	.get = je_get,
	.cas = journal_etcd__cas,
	.history = je_history,
	.list = je_list,
	.acquire_lease = journal_etcd__acquire_lease,
	.purge = journal_etcd__purge,
};
