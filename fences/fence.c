/*
 * fence.c -- the fence port: URL dispatch and the checks every backend can
 * rely on, so a backend file holds only what is specific to its target.
 * Backends record failures with fence__fail() (fence_backend.c, below
 * both), never by calling back into the port.
 *
 * Invariants kept here, before any backend runs:
 *  1. A backend is reached only with a validated request: operation ids and
 *     intent digests are 1..JOURNAL_ID_MAX-1 printable ASCII characters
 *     without spaces (they end up in file names and header lines), epochs are
 *     >= 1, the table name is a plain identifier (never interpolated SQL),
 *     and every row has a key.  A refused request is FC_USAGE with outcome
 *     FENCE_PROVED_ABSENT: nothing was attempted.
 *  2. fence_apply() always sets *outcome, so a caller never reads a stale
 *     classification; a backend that forgets to set it reports UNKNOWN.
 *  3. fence_errmsg() describes the last failure and is cleared by each call.
 *  4. An optional operation reaches a backend only when its ops table
 *     claims the feature; otherwise it is FC_USAGE, naming the fence.
 *
 * Adding a fence is one row in `backends`.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fences/fence_impl.h"

static const struct fence_ops *const backends[] = {
	&fence_sqlite_ops,
	&fence_fs_ops,
	&fence_etcd_ops,
	&fence_pg_txn_ops,
	&fence_pg_short_ops,
	NULL,
};

#define TABLE_NAME_MAX 63

static size_t scheme_len(const char *url)
{
	const char *colon = strchr(url, ':');

	return colon ? (size_t)(colon - url) : 0;
}

static int scheme_is(const char *url, size_t len, const char *scheme)
{
	return strlen(scheme) == len && strncmp(url, scheme, len) == 0;
}

int fence_open(const char *url, fence **out, char *err, size_t errlen)
{
	const struct fence_ops *ops = NULL;
	size_t len;
	fence *f;
	int rc;

	*out = NULL;
	if (!url || !(len = scheme_len(url))) {
		snprintf(err, errlen, "target url '%s' has no scheme (expected "
			 "sqlite:PATH, file:DIR, etcd://... or postgresql://...)",
			 url ? url : "");
		return FC_USAGE;
	}
	for (const struct fence_ops *const *b = backends; *b; b++)
		if (scheme_is(url, len, (*b)->scheme))
			ops = *b;
	if (!ops) {
		snprintf(err, errlen, "unknown target scheme in '%.*s:' (expected "
			 "sqlite:PATH, file:DIR, etcd://... or postgresql://...)",
			 (int)len, url);
		return FC_USAGE;
	}
	f = calloc(1, sizeof(*f));
	if (!f) {
		snprintf(err, errlen, "out of memory opening target");
		return FC_NOMEM;
	}
	f->ops = ops;
	rc = ops->open(f, url);
	if (rc) {
		snprintf(err, errlen, "%s", f->errmsg);
		if (f->impl)
			ops->close(f->impl);
		free(f);
		return rc;
	}
	*out = f;
	return 0;
}

void fence_close(fence *f)
{
	if (!f)
		return;
	if (f->impl)
		f->ops->close(f->impl);
	free(f);
}

const char *fence_errmsg(const fence *f)
{
	return f ? f->errmsg : "no fence";
}

enum fence_capability fence_capability(const fence *f)
{
	return f->ops->capability;
}

const char *fence_name(const fence *f)
{
	return f->ops->name;
}

/* Ids travel into file names and header lines: printable, no spaces. */
static int id_valid(const char *s)
{
	size_t n = 0;

	if (!s)
		return 0;
	for (; s[n]; n++)
		if (s[n] <= ' ' || s[n] > '~')
			return 0;
	return n > 0 && n < JOURNAL_ID_MAX;
}

static int table_valid(const char *t)
{
	size_t n = 0;

	if (!t || !((*t >= 'A' && *t <= 'Z') || (*t >= 'a' && *t <= 'z') ||
		    *t == '_'))
		return 0;
	for (; t[n]; n++) {
		char c = t[n];

		if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
		      (c >= '0' && c <= '9') || c == '_'))
			return 0;
	}
	/* sqlite_* is SQLite's, fencecert_* holds the fence records. */
	return n <= TABLE_NAME_MAX && strncasecmp(t, "sqlite_", 7) != 0 &&
	       strncasecmp(t, "fencecert_", 10) != 0;
}

static int check_op(fence *f, const char *op, long long epoch)
{
	if (!id_valid(op))
		return fence__fail(f, FC_USAGE, "invalid operation id '%s'",
				   op ? op : "");
	if (epoch < 1)
		return fence__fail(f, FC_USAGE, "invalid epoch %lld for '%s' "
				   "(epochs start at 1)", epoch, op);
	return 0;
}

static int check_batch(fence *f, long long epoch, const struct fence_batch *b)
{
	int rc;

	if (!b)
		return fence__fail(f, FC_USAGE, "no batch given");
	rc = check_op(f, b->operation_id, epoch);
	if (rc)
		return rc;
	if (!id_valid(b->intent_digest))
		return fence__fail(f, FC_USAGE, "invalid intent digest '%s'",
				   b->intent_digest ? b->intent_digest : "");
	if (b->table && !table_valid(b->table))
		return fence__fail(f, FC_USAGE, "invalid table name '%s'",
				   b->table);
	if (b->strategy != FENCE_APPEND && b->strategy != FENCE_REPLACE)
		return fence__fail(f, FC_USAGE, "unknown load strategy %d",
				   (int)b->strategy);
	if (b->nrows && !b->rows)
		return fence__fail(f, FC_USAGE, "batch of %zu rows has no rows",
				   b->nrows);
	for (size_t i = 0; i < b->nrows; i++)
		if (!b->rows[i].row_key)
			return fence__fail(f, FC_USAGE, "row %zu has no row key",
					   i);
	return 0;
}

int fence_prepare(fence *f, const char *op, long long epoch)
{
	int rc;

	f->errmsg[0] = '\0';
	rc = check_op(f, op, epoch);
	if (rc)
		return rc;
	return f->ops->prepare(f, op, epoch);
}

int fence_apply(fence *f, long long epoch, const struct fence_batch *b,
		enum fence_outcome *outcome)
{
	struct fence_batch resolved;
	enum fence_outcome ignored;
	int rc;

	if (!outcome)
		outcome = &ignored;
	*outcome = FENCE_PROVED_ABSENT;
	f->errmsg[0] = '\0';
	rc = check_batch(f, epoch, b);
	if (rc)
		return rc;
	resolved = *b;
	if (!resolved.table)
		resolved.table = FENCE_DEFAULT_TABLE;
	*outcome = FENCE_OUTCOME_UNKNOWN;
	return f->ops->apply(f, epoch, &resolved, outcome);
}

int fence_probe(fence *f, const char *op, struct fence_probe *out)
{
	int rc;

	memset(out, 0, sizeof(*out));
	out->answer = FENCE_UNKNOWN;
	f->errmsg[0] = '\0';
	rc = check_op(f, op, 1);
	if (rc)
		return rc;
	rc = f->ops->probe(f, op, out);
	if (rc) {
		/* Whatever a failing backend filled in, it proved nothing. */
		out->answer = FENCE_UNKNOWN;
		return rc;
	}
	return 0;
}

void fence_hands_off(fence *f)
{
	f->hands_off = 1;
}

unsigned fence_features(const fence *f)
{
	return f->ops->features;
}

int fence_skip_sync(fence *f)
{
	f->errmsg[0] = '\0';
	if (!(f->ops->features & FENCE_CAN_SKIP_SYNC))
		return fence__fail(f, FC_USAGE, "fence '%s' cannot leave out "
				   "its syncs", f->ops->name);
	f->no_sync = 1;
	return 0;
}

/* Invariant 4: the request is valid and the fence can serve it. */
static int check_in_doubt(fence *f, const char *op, int *n)
{
	int rc;

	if (n)
		*n = 0;
	f->errmsg[0] = '\0';
	if ((rc = check_op(f, op, 1)))
		return rc;
	if (!(f->ops->features & FENCE_HAS_IN_DOUBT))
		return fence__fail(f, FC_USAGE, "fence '%s' holds no in-doubt "
				   "transactions", f->ops->name);
	return 0;
}

int fence_in_doubt(fence *f, const char *op, int *n)
{
	int rc = check_in_doubt(f, op, n);

	return rc ? rc : f->ops->in_doubt(f, op, n);
}

int fence_resolve_in_doubt(fence *f, const char *op, int commit, int *n)
{
	int rc = check_in_doubt(f, op, n);

	return rc ? rc : f->ops->resolve_in_doubt(f, op, commit ? 1 : 0, n);
}
