/*
 * target_etcd.c -- observing an "etcd://" target (target_etcd.h): the keys
 * as stored, never the fence's answers.
 *
 * Invariants:
 *  1. Nothing is written: only range reads, which are linearizable.
 *  2. One observation is one snapshot: every page of every range it reads
 *     is pinned to the store revision of its first answer.
 *  3. Every key under PREFIX/<table>/rows/ is one row, whatever its value
 *     and whether or not it has the fence's shape (a row written by hand
 *     counts, with operation NULL): a duplicate is two keys, counted two.
 *  4. Results are sorted by the decoded strings (bytewise, NULL first), as
 *     for the other target kinds -- not in etcd's order of encoded keys.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/array.h"
#include "common/etcd_client.h"
#include "fences/etcd_layout.h"
#include "fences/target_etcd.h"
#include "fences/target_impl.h"

#define PAGE 1000

struct reader {
	etcd_client *client;
	struct etcd_where where;
	long long rev; /* 0 until the first answer pins the snapshot */
	char *err;
	size_t errlen;
};

typedef int (*visit_fn)(struct reader *r, const char *rest,
			const struct etcd_kv *kv, void *arg);

static int reader_open(struct reader *r, const char *url, char *err,
		       size_t errlen)
{
	int rc;

	memset(r, 0, sizeof(*r));
	r->err = err;
	r->errlen = errlen;
	rc = etcd_layout_parse(url, &r->where, err, errlen);
	if (!rc)
		rc = etcd_client_new(r->where.members, &r->client, err, errlen);
	if (!rc && r->where.first >= 0)
		etcd_client_prefer(r->client, (size_t)r->where.first);
	return rc;
}

static void reader_close(struct reader *r)
{
	etcd_client_free(r->client);
}

static int nomem(struct reader *r)
{
	snprintf(r->err, r->errlen, "out of memory observing target "
		 "'etcd://%s/%s'", r->where.members, r->where.prefix);
	return FC_NOMEM;
}

/* Call visit for every key under dir (a '/'-terminated prefix), with the
 * part after dir, a page at a time. */
static int scan(struct reader *r, const char *dir, visit_fn visit, void *arg)
{
	size_t n = strlen(dir) + 1;
	char *end = malloc(n), *start = strdup(dir);
	struct etcd_range page;
	int rc = 0, more = 1;

	if (!end || !start || etcd_prefix_end(dir, end, n)) {
		free(end);
		free(start);
		return nomem(r);
	}
	while (!rc && more) {
		rc = etcd_client_range(r->client, start, end, PAGE, r->rev,
				       &page);
		if (rc) {
			snprintf(r->err, r->errlen, "cannot read target "
				 "'etcd://%s/%s': %s", r->where.members,
				 r->where.prefix,
				 etcd_client_errmsg(r->client));
			if (rc == FC_JOURNAL_UNAVAILABLE)
				rc = FC_FENCE_UNAVAILABLE;
			break;
		}
		if (!r->rev)
			r->rev = page.revision;
		more = page.more && page.n > 0;
		for (size_t i = 0; !rc && i < page.n; i++)
			rc = visit(r, page.kvs[i].key + n - 1, &page.kvs[i],
				   arg);
		/* Our keys hold no byte below '!' (etcd_layout.c). */
		if (!rc && more) {
			free(start);
			if (asprintf(&start, "%s\x01",
				     page.kvs[page.n - 1].key) < 0) {
				start = NULL;
				rc = nomem(r);
			}
		}
		etcd_range_release(&page);
	}
	free(start);
	free(end);
	return rc;
}

static int grow(void **v, size_t *cap, size_t n, size_t size)
{
	return array_grow(v, cap, n, size, 64);
}

/* ---- rows ------------------------------------------------------------ */

/* Each row owns its key and op (NULL: not written by the fence). */
struct rows {
	struct target_pair *v;
	size_t n, cap;
};

static int collect_row(struct reader *r, const char *rest,
		       const struct etcd_kv *kv, void *arg)
{
	struct rows *rows = arg;
	struct target_pair *row;

	(void)kv;
	if (grow((void **)&rows->v, &rows->cap, rows->n, sizeof(*rows->v)))
		return nomem(r);
	row = &rows->v[rows->n];
	if (etcd_layout_split_row(rest, &row->key, &row->op))
		return nomem(r);
	rows->n++;
	return 0;
}

int target_etcd_rows(const char *url, const char *table, target_row_fn fn,
		     void *ctx, char *err, size_t errlen)
{
	struct rows rows = { 0 };
	struct reader r;
	char *dir = NULL;
	int rc;

	rc = reader_open(&r, url, err, errlen);
	if (!rc && !(dir = etcd_layout_rows_dir(&r.where, table)))
		rc = nomem(&r);
	if (!rc)
		rc = scan(&r, dir, collect_row, &rows);
	if (!rc)
		rc = target__report_rows(rows.v, rows.n, fn, ctx);
	for (size_t i = 0; i < rows.n; i++) {
		free(rows.v[i].key);
		free(rows.v[i].op);
	}
	free(rows.v);
	free(dir);
	reader_close(&r);
	return rc;
}

/* ---- fences ---------------------------------------------------------- */

struct fences {
	struct target_fence_record *v;
	size_t n, cap;
};

static int add_record(struct reader *r, struct fences *l, const char *rest,
		      const struct target_fence_record *rec)
{
	struct target_fence_record *slot;
	char *op;

	if (etcd_layout_split_op(rest, &op))
		return nomem(r);
	if (!op)
		return 0; /* not a key of ours: not a fence */
	if (grow((void **)&l->v, &l->cap, l->n, sizeof(*l->v))) {
		free(op);
		return nomem(r);
	}
	slot = &l->v[l->n];
	*slot = *rec;
	slot->operation_id = op;
	slot->intent_digest = rec->intent_digest ? strdup(rec->intent_digest)
						 : NULL;
	if (rec->intent_digest && !slot->intent_digest) {
		free(op);
		return nomem(r);
	}
	l->n++;
	return 0;
}

static int corrupt(struct reader *r, const char *key)
{
	snprintf(r->err, r->errlen, "malformed value of key '%s' in target "
		 "'etcd://%s/%s'", key, r->where.members, r->where.prefix);
	return FC_CORRUPT;
}

static int collect_fence(struct reader *r, const char *rest,
			 const struct etcd_kv *kv, void *arg)
{
	struct target_fence_record rec = { 0 };
	struct etcd_fence_value v;

	if (etcd_layout_fence_decode(kv->value, &v))
		return corrupt(r, kv->key);
	rec.applied_epoch = v.epoch;
	rec.intent_digest = v.intent_digest;
	rec.rows = v.rows;
	return add_record(r, arg, rest, &rec);
}

static int collect_epoch(struct reader *r, const char *rest,
			 const struct etcd_kv *kv, void *arg)
{
	struct target_fence_record rec = { 0 };

	if (etcd_layout_epoch_decode(kv->value, &rec.prepared_epoch))
		return corrupt(r, kv->key);
	return add_record(r, arg, rest, &rec);
}

static int by_op(const void *a, const void *b)
{
	const struct target_fence_record *x = a, *y = b;

	return strcmp(x->operation_id, y->operation_id);
}

/* Both dirs, one snapshot; then one record per operation, merged. */
static int read_fences(struct reader *r, struct fences *l)
{
	char *fdir = etcd_layout_fence_dir(&r->where);
	char *edir = etcd_layout_epoch_dir(&r->where);
	int rc;

	if (!fdir || !edir)
		rc = nomem(r);
	else if (!(rc = scan(r, fdir, collect_fence, l)))
		rc = scan(r, edir, collect_epoch, l);
	free(fdir);
	free(edir);
	return rc;
}

int target_etcd_fences(const char *url, target_fence_fn fn, void *ctx,
		       char *err, size_t errlen)
{
	struct fences l = { 0 };
	struct reader r;
	size_t i, j;
	int rc;

	rc = reader_open(&r, url, err, errlen);
	if (!rc)
		rc = read_fences(&r, &l);
	if (!rc && l.n)
		qsort(l.v, l.n, sizeof(*l.v), by_op);
	for (i = 0; !rc && i < l.n; i = j) {
		struct target_fence_record m = l.v[i];

		/* An operation has at most one key in each dir. */
		for (j = i + 1; j < l.n && by_op(&l.v[i], &l.v[j]) == 0; j++) {
			const struct target_fence_record *o = &l.v[j];

			if (o->applied_epoch) {
				m.applied_epoch = o->applied_epoch;
				m.intent_digest = o->intent_digest;
				m.rows = o->rows;
			}
			if (o->prepared_epoch > m.prepared_epoch)
				m.prepared_epoch = o->prepared_epoch;
		}
		rc = fn(ctx, &m);
	}
	for (i = 0; i < l.n; i++) {
		free((char *)l.v[i].operation_id);
		free((char *)l.v[i].intent_digest);
	}
	free(l.v);
	reader_close(&r);
	return rc;
}
