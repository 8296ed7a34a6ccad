/*
 * record.c -- lifecycle and small queries of the schedule record.
 *
 * Arrays in a record grow by record__push(): capacity is the next power of
 * two at or above the element count, so no separate capacity is stored.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/model/record.h"

struct rec_schedule *record_new(void)
{
	return calloc(1, sizeof(struct rec_schedule));
}

static bool is_pow2(size_t n)
{
	return n && !(n & (n - 1));
}

void *record__push(void **arr, size_t *n, size_t sz)
{
	char *a = *arr;

	if (*n == 0 || (*n >= 8 && is_pow2(*n))) {
		size_t cap = *n ? *n * 2 : 8;
		char *na = realloc(a, cap * sz);
		if (!na)
			return NULL;
		a = na;
		*arr = a;
	}
	memset(a + *n * sz, 0, sz);
	return a + (*n)++ * sz;
}

void record_free(struct rec_schedule *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->nattempts; i++) {
		struct rec_attempt *a = &r->attempts[i];
		free(a->hits);
		free(a->hit_names);
		free(a->deltas.first.row_key);
		for (size_t k = 0; k < a->deltas.nkept; k++)
			free(a->deltas.kept[k].row_key);
		free(a->deltas.kept);
		free(a->stdout_path);
		free(a->stderr_path);
		for (size_t k = 0; k < a->nsyscalls; k++)
			free(a->syscalls[k].path);
		free(a->syscalls);
	}
	free(r->attempts);
	free(r->snaps);
	for (size_t i = 0; i < r->nobs; i++)
		free(r->obs[i].fences);
	free(r->obs);
	obs_store_free(r->rows);
	for (size_t i = 0; i < r->nops; i++) {
		struct rec_operation *o = &r->ops[i];
		for (size_t k = 0; k < o->nentries; k++)
			free(o->entries[k].history);
		free(o->entries);
		free(o->evidence);
	}
	free(r->ops);
	free(r->applied);
	free(r->faults);
	free(r->fired);
	free(r);
}

const struct rec_fence *record_fence(const struct rec_observation *o,
				     const char *op)
{
	for (size_t i = 0; i < o->nfences; i++)
		if (strcmp(o->fences[i].operation_id, op) == 0)
			return &o->fences[i];
	return NULL;
}

void record_attempt_end(const struct rec_attempt *a, char *out, size_t len)
{
	const char *sig;

	if (a->spawn_failed) {
		snprintf(out, len, "spawn failed");
		return;
	}
	if (a->signal == 0) {
		snprintf(out, len, "exit %d", a->exit_code);
		return;
	}
	sig = sigabbrev_np(a->signal);
	snprintf(out, len, "%sSIG%s", a->timed_out ? "timeout " : "",
		 sig ? sig : "?");
}

int record_hit(struct rec_attempt *a, const char *name, long long at_ms,
	       struct rec_hit **kept, int *nth)
{
	struct rec_hit_count *c = NULL;
	struct rec_hit *h = NULL;

	*kept = NULL;
	*nth = 0;
	for (size_t i = 0; i < a->nhit_names && !c; i++)
		if (strcmp(a->hit_names[i].name, name) == 0)
			c = &a->hit_names[i];
	if (!c && a->nhit_names < RECORD_HIT_NAMES_MAX) {
		if (!(c = RECORD_PUSH(a->hit_names, a->nhit_names)))
			return FC_NOMEM;
		snprintf(c->name, sizeof(c->name), "%s", name);
	}
	if (a->nhits < RECORD_HITS_KEPT) {
		if (!(h = RECORD_PUSH(a->hits, a->nhits))) {
			if (c && c->n == 0)
				a->nhit_names--;
			return FC_NOMEM;
		}
		snprintf(h->name, sizeof(h->name), "%s", name);
		h->at_ms = at_ms;
		h->answer = 'c';
	}
	a->hits_total++;
	if (c)
		*nth = ++c->n;
	*kept = h;
	return 0;
}

size_t record_hits_total(const struct rec_attempt *a)
{
	return a->hits_total > a->nhits ? a->hits_total : a->nhits;
}

bool record_has_failpoints(const struct rec_schedule *r)
{
	for (size_t i = 0; i < r->nattempts; i++)
		if (r->attempts[i].nhits)
			return true;
	return false;
}

static bool is_first_insert(long long before, long long after)
{
	return before == 0 && after == 1;
}

size_t record_deltas_listed(const struct rec_deltas *d)
{
	return d->changed - d->first_inserts;
}

bool record_deltas_truncated(const struct rec_deltas *d)
{
	return d->nkept < record_deltas_listed(d);
}

/* How many bytes of key are kept: all of it up to RECORD_ROW_KEY_MAX,
 * else that many cut back to a UTF-8 boundary (the report's strings must
 * stay valid UTF-8). */
static size_t key_kept_len(const char *key, size_t len)
{
	size_t n = RECORD_ROW_KEY_MAX;

	if (len <= n)
		return len;
	while (n > 0 && ((unsigned char)key[n] & 0xC0) == 0x80)
		n--;
	return n;
}

static int delta_set(struct rec_deltas *ds, struct rec_delta *d,
		     const char *key, size_t len, long long before,
		     long long after)
{
	size_t n = key_kept_len(key, len);

	if (!(d->row_key = strndup(key, n)))
		return FC_NOMEM;
	d->before = before;
	d->after = after;
	ds->key_bytes += n;
	ds->keys_cut += n < len;
	return 0;
}

static void delta_unset(struct rec_deltas *ds, struct rec_delta *d,
			size_t len)
{
	size_t n = strlen(d->row_key);

	ds->key_bytes -= n;
	ds->keys_cut -= n < len;
	free(d->row_key);
	d->row_key = NULL;
}

/* Keep a change as ds->first when it is the first one, and among the kept
 * ones while fewer than `keep` are and its key fits the attempt's
 * RECORD_ROW_KEYS_BYTES; no count moves here.  On FC_NOMEM nothing
 * changed. */
static int keep_delta(struct rec_deltas *ds, const char *key, long long before,
		      long long after, size_t keep)
{
	size_t len = strlen(key);
	bool first = !ds->first.row_key;
	bool listed;
	struct rec_delta *d;

	if (first && delta_set(ds, &ds->first, key, len, before, after))
		return FC_NOMEM;
	listed = !is_first_insert(before, after) && ds->nkept < keep &&
		 ds->key_bytes + key_kept_len(key, len) <= RECORD_ROW_KEYS_BYTES;
	if (!listed)
		return 0;
	d = RECORD_PUSH(ds->kept, ds->nkept);
	if (d && !delta_set(ds, d, key, len, before, after))
		return 0;
	if (d)
		ds->nkept--;
	if (first)
		delta_unset(ds, &ds->first, len);
	return FC_NOMEM;
}

int record_add_delta(struct rec_attempt *a, const char *key, long long before,
		     long long after, size_t keep)
{
	struct rec_deltas *ds = &a->deltas;

	if (before == after)
		return 0;
	if (keep_delta(ds, key, before, after, keep))
		return FC_NOMEM;
	ds->changed++;
	if (is_first_insert(before, after)) {
		ds->first_inserts++;
	} else if (after > before) {
		ds->duplicated++;
		ds->gained += after - before;
	} else {
		ds->lost++;
	}
	return 0;
}

struct credit {
	struct rec_attempt *a;
	size_t keep;
};

static int credit_one(void *ctx, const char *key, long long before,
		      long long after)
{
	struct credit *c = ctx;

	return record_add_delta(c->a, key, before, after, c->keep);
}

int record_credit_delta(struct rec_attempt *a, obs_store *rows, int prev,
			int now, size_t keep)
{
	struct credit c = { a, keep };

	return obs_store_deltas(rows, prev, now, credit_one, &c);
}

void record_count_concurrency(struct rec_schedule *r)
{
	for (size_t i = 0; i < r->nattempts; i++)
		for (size_t j = 0; j < r->nattempts; j++)
			if (i != j && r->attempts[j].start_ms < r->attempts[i].end_ms &&
			    r->attempts[i].start_ms < r->attempts[j].end_ms)
				r->attempts[i].concurrent++;
}

struct rec_entry *record_entry(const struct rec_operation *op, const char *id)
{
	for (size_t i = 0; i < op->nentries; i++)
		if (strcmp(op->entries[i].operation_id, id) == 0)
			return &op->entries[i];
	return NULL;
}

struct rec_entry *record_attribute(struct rec_operation *op, const char *id,
				   int seen_after, long long created_at)
{
	struct rec_entry *e = record_entry(op, id);

	if (e)
		return e;
	e = RECORD_PUSH(op->entries, op->nentries);
	if (!e)
		return NULL;
	snprintf(e->operation_id, sizeof(e->operation_id), "%s", id);
	e->seen_after = seen_after;
	e->created_at = created_at;
	if (op->nentries == 1)
		snprintf(op->operation_id, sizeof(op->operation_id), "%s", id);
	return e;
}

bool record_journal_less(const struct rec_schedule *r)
{
	for (size_t i = 0; i < r->nops; i++)
		if (r->ops[i].nentries)
			return false;
	return true;
}
