/*
 * target_rows.c -- the one order of target.h's row groups, for the
 * observers that count rows themselves (file: in target.c, etcd:// in
 * target_etcd.c; the SQL observers sort in their query): sorted by
 * row_key, then operation_id, NULL first, then bytewise -- so a checker
 * can compare observations across kinds (target.c, invariant 2).
 */
#include <stdlib.h>
#include <string.h>

#include "fences/target_impl.h"

/* NULL sorts first, then bytewise, as SQLite's BINARY collation does. */
static int cmp_nullable(const char *a, const char *b)
{
	if (!a || !b)
		return (a != NULL) - (b != NULL);
	return strcmp(a, b);
}

static int by_key_then_op(const void *a, const void *b)
{
	const struct target_pair *x = a, *y = b;
	int c = cmp_nullable(x->key, y->key);

	return c ? c : cmp_nullable(x->op, y->op);
}

int target__report_rows(struct target_pair *v, size_t n, target_row_fn fn,
			void *ctx)
{
	size_t i, j;
	int rc = 0;

	if (n)
		qsort(v, n, sizeof(*v), by_key_then_op);
	for (i = 0; !rc && i < n; i = j) {
		for (j = i + 1; j < n && by_key_then_op(&v[i], &v[j]) == 0; j++)
			;
		rc = fn(ctx, v[i].key, v[i].op, (long long)(j - i));
	}
	return rc;
}
