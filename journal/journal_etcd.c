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
#include "common/host_pid.h"

static int je_init(journal *j)
{
	return journal_etcd__ready(j);
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
		first = (unsigned long)host_pid() % nmembers;
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
	.migrate = journal_etcd__migrate,
	.create_or_get = journal_etcd__create_or_get,
	.get = je_get,
	.cas = journal_etcd__cas,
	.history = je_history,
	.list = je_list,
	.acquire_lease = journal_etcd__acquire_lease,
	.purge = journal_etcd__purge,
};
