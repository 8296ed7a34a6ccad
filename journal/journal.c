/*
 * journal.c -- the journal port: URL dispatch to the adapters and argument
 * validation shared by every adapter.  What the adapters call back for
 * (the error slot, the CAS rules, the clock) is in journal_adapter.c, below
 * both.
 *
 * Everything an adapter could get wrong the same way twice lives here once:
 *
 *  1. Every public call validates its arguments before the adapter sees
 *     them, so adapters may assume: ids and intents are non-empty printable
 *     ASCII without spaces and shorter than JOURNAL_ID_MAX; owners likewise
 *     and shorter than JOURNAL_OWNER_MAX; meta and evidence are JSON objects
 *     in compact form (jansson's JSON_COMPACT, key order kept), never NULL
 *     and shorter than JOURNAL_JSON_MAX.  A refused argument is FC_USAGE and
 *     nothing is touched.
 *  2. journal__check_cas() (journal_adapter.c) is the only place that
 *     decides whether a CAS may be applied.
 *  3. journal_errmsg() keeps the message of the last failure on the handle;
 *     a later success does not clear it.
 *
 * Adding an adapter is one line in `schemes` below (plus its extern in
 * journal_impl.h).
 */
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "journal/journal_impl.h"

/* Leases longer than this are a typo, and now + ttl must not overflow. */
#define LEASE_TTL_MAX_MS (100LL * 365 * 24 * 3600 * 1000)

/*
 * Every scheme the port knows.  A NULL ops means the adapter is planned but
 * not in this build; its URLs are refused with a clear message rather than
 * "unknown scheme".
 */
static const struct scheme {
	const char *name;
	const struct journal_ops *ops;
} schemes[] = {
	{ "sqlite", &journal_sqlite_ops },
	{ "postgresql", &journal_pg_ops },
	{ "postgres", &journal_pg_ops },
	{ "etcd", &journal_etcd_ops },
	{ NULL, NULL },
};

const char *journal_errmsg(const journal *j)
{
	return j ? j->errmsg : "no journal";
}

static void set_err(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void set_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || !errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

static int open_mode(const char *url, int readonly, journal **out, char *err,
		     size_t errlen)
{
	char safe[256];
	const char *colon;
	const struct scheme *s;
	journal *j;
	int rc;

	*out = NULL;
	set_err(err, errlen, "%s", "");
	if (!url || !*url) {
		set_err(err, errlen, "journal url is empty");
		return FC_USAGE;
	}
	journal_redact_url(url, safe, sizeof(safe));
	colon = strchr(url, ':');
	for (s = schemes; colon && s->name; s++)
		if (strlen(s->name) == (size_t)(colon - url) &&
		    strncmp(url, s->name, (size_t)(colon - url)) == 0)
			break;
	if (!colon || !s->name) {
		set_err(err, errlen, "unknown journal scheme in '%s' (expected "
			"sqlite:PATH, postgresql://... or etcd://...)", safe);
		return FC_USAGE;
	}
	if (!s->ops) {
		set_err(err, errlen, "journal scheme '%s' is not supported by "
			"this build ('%s')", s->name, safe);
		return FC_USAGE;
	}
	j = calloc(1, sizeof(*j));
	if (!j) {
		set_err(err, errlen, "out of memory opening journal '%s'",
			safe);
		return FC_NOMEM;
	}
	j->ops = s->ops;
	j->readonly = readonly;
	/* An adapter's open() sets j->impl only on success. */
	rc = j->ops->open(j, url);
	if (rc) {
		set_err(err, errlen, "%s", j->errmsg);
		free(j);
		return rc;
	}
	*out = j;
	return 0;
}

int journal_open(const char *url, journal **out, char *err, size_t errlen)
{
	return open_mode(url, 0, out, err, errlen);
}

int journal_open_readonly(const char *url, journal **out, char *err,
			  size_t errlen)
{
	return open_mode(url, 1, out, err, errlen);
}

/* Every call that writes asks here first. */
static int writable(journal *j, const char *what)
{
	if (!j->readonly)
		return 0;
	return journal__fail(j, FC_USAGE, "journal opened read-only: %s "
			     "refused", what);
}

void journal_close(journal *j)
{
	if (!j)
		return;
	if (j->impl)
		j->ops->close(j->impl);
	free(j);
}

void journal_close_as_is(journal *j)
{
	if (j && j->impl && j->ops->leave_as_is)
		j->ops->leave_as_is(j->impl);
	journal_close(j);
}

/* ---- argument validation ------------------------------------------------ */

/* Non-empty printable ASCII without spaces, shorter than max. */
static int token_valid(const char *s, size_t max)
{
	size_t n = 0;

	if (!s || !*s)
		return 0;
	for (; s[n]; n++)
		if (n + 1 >= max || s[n] <= ' ' || s[n] > '~')
			return 0;
	return 1;
}

static int check_token(journal *j, const char *what, const char *s, size_t max)
{
	if (token_valid(s, max))
		return 0;
	if (!s || !*s)
		return journal__fail(j, FC_USAGE, "empty %s", what);
	if (strlen(s) >= max)
		return journal__fail(j, FC_USAGE, "%s too long (max %zu "
				     "bytes): '%.40s...'", what, max - 1, s);
	/* Do not echo control characters into a terminal or a log. */
	return journal__fail(j, FC_USAGE, "%s must be printable ASCII "
			     "without spaces", what);
}

static int check_op(journal *j, const char *op)
{
	return check_token(j, "operation id", op, JOURNAL_ID_MAX);
}

/*
 * Validate a JSON object given as text and write its compact form to out.
 * NULL stands for "{}".  Compact storage keeps every adapter's bytes equal
 * for equal objects and bounds the stored size by what is kept, not typed.
 */
static int normalize_object(journal *j, const char *what, const char *text,
			    char out[JOURNAL_JSON_MAX])
{
	json_error_t jerr;
	json_t *root;
	size_t n;

	if (!text) {
		strcpy(out, "{}");
		return 0;
	}
	if (strlen(text) >= JOURNAL_JSON_MAX)
		return journal__fail(j, FC_USAGE, "%s too long (max %d bytes)",
				     what, JOURNAL_JSON_MAX - 1);
	root = json_loads(text, JSON_REJECT_DUPLICATES, &jerr);
	if (!root)
		return journal__fail(j, FC_USAGE, "invalid %s JSON: %s "
				     "(line %d, column %d)", what, jerr.text,
				     jerr.line, jerr.column);
	if (!json_is_object(root)) {
		json_decref(root);
		return journal__fail(j, FC_USAGE, "%s must be a JSON object",
				     what);
	}
	n = json_dumpb(root, out, JOURNAL_JSON_MAX - 1, JSON_COMPACT);
	json_decref(root);
	if (n == 0 || n >= JOURNAL_JSON_MAX)
		return journal__fail(j, FC_USAGE, "%s too long once "
				     "normalized (max %d bytes)", what,
				     JOURNAL_JSON_MAX - 1);
	out[n] = '\0';
	return 0;
}

/* ---- the port ----------------------------------------------------------- */

int journal_init(journal *j)
{
	if (!j)
		return FC_USAGE;
	if (writable(j, "init"))
		return FC_USAGE;
	return j->ops->init(j);
}

int journal_migrate(journal *j, int *from, int *to)
{
	int f = 0, t = 0, rc;

	if (!j)
		return FC_USAGE;
	if (writable(j, "migrate"))
		return FC_USAGE;
	rc = j->ops->migrate(j, &f, &t);
	if (rc)
		return rc;
	if (from)
		*from = f;
	if (to)
		*to = t;
	return 0;
}

int journal_create_or_get(journal *j, const char *op, const char *intent,
			  const char *meta_json, struct journal_entry *out,
			  int *created)
{
	char meta[JOURNAL_JSON_MAX];
	int rc;

	if (!j || !out || !created)
		return FC_USAGE;
	if (writable(j, "create"))
		return FC_USAGE;
	if ((rc = check_op(j, op)) ||
	    (rc = check_token(j, "intent digest", intent, JOURNAL_ID_MAX)) ||
	    (rc = normalize_object(j, "meta", meta_json, meta)))
		return rc;
	return j->ops->create_or_get(j, op, intent, meta, out, created);
}

int journal_get(journal *j, const char *op, struct journal_entry *out)
{
	int rc;

	if (!j || !out)
		return FC_USAGE;
	if ((rc = check_op(j, op)))
		return rc;
	return j->ops->get(j, op, out);
}

int journal_cas(journal *j, const struct journal_cas *req,
		struct journal_entry *out)
{
	char evidence[JOURNAL_JSON_MAX];
	struct journal_cas r;
	int rc;

	if (!j || !req || !out)
		return FC_USAGE;
	if (writable(j, "cas"))
		return FC_USAGE;
	if ((rc = check_op(j, req->operation_id)))
		return rc;
	if (req->expected_version < 1)
		return journal__fail(j, FC_USAGE, "expected version %lld of "
				     "'%s' is not positive",
				     req->expected_version, req->operation_id);
	if (req->expected_states & ~STATE_SET_ALL)
		return journal__fail(j, FC_USAGE, "expected states of '%s' "
				     "hold a value that is not a state",
				     req->operation_id);
	/* FC_STATE_NONE is a state, just never a legal target: the CAS rules
	 * answer ILLEGAL_TRANSITION for it, not a usage error. */
	if ((unsigned)req->next >= FC_STATE_COUNT)
		return journal__fail(j, FC_USAGE, "next state %d of '%s' is "
				     "not a state", (int)req->next,
				     req->operation_id);
	if (req->epoch < 0)
		return journal__fail(j, FC_USAGE, "epoch %lld of '%s' is "
				     "negative", req->epoch, req->operation_id);
	if ((rc = normalize_object(j, "evidence", req->evidence, evidence)))
		return rc;
	r = *req;
	r.evidence = evidence;
	return j->ops->cas(j, &r, out);
}

int journal_history(journal *j, const char *op,
		    struct journal_transition **out, size_t *n)
{
	int rc;

	if (!j || !out || !n)
		return FC_USAGE;
	if ((rc = check_op(j, op)))
		return rc;
	return j->ops->history(j, op, out, n);
}

int journal_list(journal *j, const struct journal_filter *f,
		 struct journal_entry **out, size_t *n)
{
	static const struct journal_filter all = { 0, 0 };

	if (!j || !out || !n)
		return FC_USAGE;
	if (!f)
		f = &all;
	if (f->states & ~STATE_SET_ALL)
		return journal__fail(j, FC_USAGE, "list filter holds a value "
				     "that is not a state");
	if (f->updated_before < 0)
		return journal__fail(j, FC_USAGE, "list filter time %lld is "
				     "negative", f->updated_before);
	return j->ops->list(j, f, out, n);
}

int journal_acquire_lease(journal *j, const char *op, const char *owner,
			  long long ttl_ms, struct journal_entry *out)
{
	int rc;

	if (!j || !out)
		return FC_USAGE;
	if (writable(j, "lease"))
		return FC_USAGE;
	if ((rc = check_op(j, op)) ||
	    (rc = check_token(j, "lease owner", owner, JOURNAL_OWNER_MAX)))
		return rc;
	if (ttl_ms < 1 || ttl_ms > LEASE_TTL_MAX_MS)
		return journal__fail(j, FC_USAGE, "lease ttl %lld ms for '%s' "
				     "is out of range (1..%lld)", ttl_ms, op,
				     LEASE_TTL_MAX_MS);
	return j->ops->acquire_lease(j, op, owner, ttl_ms, out);
}

int journal_purge(journal *j, long long before,
		  char (**ids)[JOURNAL_ID_MAX], size_t *n)
{
	if (!j || !ids || !n)
		return FC_USAGE;
	if (writable(j, "purge"))
		return FC_USAGE;
	if (before < 0)
		return journal__fail(j, FC_USAGE, "purge time %lld is negative",
				     before);
	return j->ops->purge(j, before, ids, n);
}

