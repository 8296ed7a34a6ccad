/*
 * fence_etcd.c -- the fence for an etcd 3.4 target
 * ("etcd://HOST:PORT[,HOST:PORT...]/PREFIX"), spoken through the v3 JSON
 * gateway client of common/etcd_client.h.  Key layout: etcd_layout.h;
 * long form: docs/fence-etcd.md.
 *
 * Invariants:
 *  1. apply() is ONE txn.  Compares: create_revision(fence key) == 0 AND
 *     mod_revision(epoch key) == M, M being the revision at which we saw
 *     the epoch key hold an epoch <= ours (0: no key).  Success branch: the
 *     REPLACE range deletes, one put per row, the fence put, and the epoch
 *     put when our epoch raises it.  Failure branch: range of the fence
 *     key and of the epoch key.  etcd applies a txn whole or not at all,
 *     and a batch is never split over several txns (that would not be
 *     atomic): a batch over the limits of etcd_layout.h is refused
 *     (FC_USAGE) before any I/O.
 *  2. A failed compare is classified from the failure branch, read at the
 *     same revision as the compare: a fence record wins (ALREADY_APPLIED
 *     with our intent, INTENT_CONFLICT with another; never merged), unless
 *     it carries this call's write_id -- libcurl re-sent our txn on a fresh
 *     connection and the first copy applied, so it is our success; then
 *     an epoch above ours refuses (STALE_EPOCH).  An epoch key that moved
 *     but still allows us is decided again, at most ROUNDS times.
 *  3. prepare(op, e) puts e under a compare on the epoch key's
 *     mod_revision, only when the stored epoch is below e: the epoch key
 *     only grows, and an apply without a prepare raises it too.
 *  4. Why a probe's ABSENT is final: etcd is linearizable.  Once
 *     prepare(op, e) committed at revision r, an apply at an epoch below e
 *     either committed before r -- and the probe, a linearizable read
 *     after it, sees the fence key -- or executes after r, where the epoch
 *     key's mod_revision is no longer the M it compares, and is refused.
 *  5. Outcomes.  Nothing sent, or refused before execution (no leader, an
 *     invalid request, a limit): PROVED_ABSENT.  Sent and no answer:
 *     FENCE_OUTCOME_UNKNOWN / FC_ERR_COMMIT_UNKNOWN; the txn is never sent
 *     again by us (it may still sit in the raft log): the caller prepares
 *     a higher epoch and probes (invariant 4).  A probe that cannot read
 *     is UNKNOWN, never ABSENT.
 *  6. The handle caches the epoch key it last read or wrote for one
 *     operation, so prepare-then-apply costs one round trip each.  The
 *     cache only chooses the M of a compare; etcd decides, and every
 *     refusal is reported from a fresh read, never from the cache.
 *
 *   apply: epoch key (cache, or one read-only txn with the fence key)
 *      -> fence present? -> ALREADY_APPLIED / INTENT_CONFLICT
 *      -> epoch > ours?   -> STALE_EPOCH
 *      -> txn[create(F) == 0, mod(P) == M : rows, F, P | range F, range P]
 *            succeeded -> PRESENT     compare failed -> decide again
 *            answer lost -> UNKNOWN   not executed -> ABSENT
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/rand.h>

#include "common/clock.h"
#include "common/etcd_client.h"
#include "fences/etcd_layout.h"
#include "fences/fence_impl.h"

#define ROUNDS 8      /* decisions per call before giving up a race */
#define OP_OVERHEAD 8 /* bytes etcd adds per txn op, roughly (protobuf) */

struct epoch_state {
	long long epoch; /* 0: no epoch key */
	long long rev;   /* its mod_revision; 0 when there is none */
};

struct fence_etcd {
	etcd_client *client;
	struct etcd_where where;
	char url[ETCD_LAYOUT_MEMBERS_MAX + ETCD_LAYOUT_PREFIX_MAX + 16];
	struct {
		int valid;
		char op[JOURNAL_ID_MAX];
		struct epoch_state st;
	} cache;
};

/* What a read (or a failure branch) says about one operation. */
struct state {
	int fenced;
	struct etcd_fence_value fence;
	struct epoch_state ep;
};

struct op_keys {
	char *fence;
	char *epoch;
};

/* Everything an apply sends, built once; a new round only changes M. */
struct plan {
	char **keys, **values; /* one per row */
	size_t nrows;
	char **del_from, **del_to;
	size_t ndel;
	char *fence_value, *epoch_value;
	size_t ops, bytes;
};

static struct fence_etcd *impl(fence *f)
{
	return f->impl;
}

static int client_fail(fence *f, int rc, const char *what)
{
	struct fence_etcd *s = impl(f);

	if (rc == FC_JOURNAL_UNAVAILABLE)
		rc = FC_FENCE_UNAVAILABLE;
	return fence__fail(f, rc, "cannot %s in target '%s': %s", what, s->url,
			   etcd_client_errmsg(s->client));
}

static int nomem(fence *f)
{
	return fence__fail(f, FC_NOMEM, "out of memory");
}

static int corrupt(fence *f, const char *key)
{
	return fence__fail(f, FC_CORRUPT, "malformed value of key '%s' in "
			   "target '%s'", key, impl(f)->url);
}


static int op_keys_init(fence *f, const char *op, struct op_keys *k)
{
	struct fence_etcd *s = impl(f);

	k->fence = etcd_layout_fence_key(&s->where, op);
	k->epoch = etcd_layout_epoch_key(&s->where, op);
	if (!k->fence || !k->epoch) {
		free(k->fence);
		free(k->epoch);
		return nomem(f);
	}
	return 0;
}

static void op_keys_release(struct op_keys *k)
{
	free(k->fence);
	free(k->epoch);
}

/* ---- the cache of invariant 6 ---------------------------------------- */

static void cache_put(fence *f, const char *op, const struct epoch_state *st)
{
	struct fence_etcd *s = impl(f);

	s->cache.valid = 1;
	snprintf(s->cache.op, sizeof(s->cache.op), "%s", op);
	s->cache.st = *st;
}

/* The cached epoch key of op when it shows an epoch below `limit`, or
 * up to it with or_equal: a state on which we would send a txn.  Anything
 * else (a refusal, nothing to do) is decided on a fresh read. */
static int cache_get(fence *f, const char *op, long long limit, int or_equal,
		     struct epoch_state *st)
{
	struct fence_etcd *s = impl(f);

	if (!s->cache.valid || strcmp(s->cache.op, op) != 0 ||
	    s->cache.st.epoch > limit ||
	    (s->cache.st.epoch == limit && !or_equal))
		return 0;
	*st = s->cache.st;
	return 1;
}

static void cache_drop(fence *f)
{
	impl(f)->cache.valid = 0;
}

/* ---- reading state --------------------------------------------------- */

static int epoch_from(fence *f, const struct etcd_range *r,
		      struct epoch_state *st)
{
	st->epoch = 0;
	st->rev = 0;
	if (!r->n)
		return 0;
	if (etcd_layout_epoch_decode(r->kvs[0].value, &st->epoch))
		return corrupt(f, r->kvs[0].key);
	st->rev = r->kvs[0].mod_revision;
	return 0;
}

static int fence_from(fence *f, const struct etcd_range *r, struct state *st)
{
	st->fenced = r->n > 0;
	if (st->fenced && etcd_layout_fence_decode(r->kvs[0].value, &st->fence))
		return corrupt(f, r->kvs[0].key);
	return 0;
}

/* Ranges [0] fence key and [1] epoch key of a txn answer. */
static int state_from(fence *f, const struct etcd_txn_result *res,
		      struct state *st)
{
	int rc;

	if (res->n < 2)
		return fence__fail(f, FC_CORRUPT, "short txn answer from "
				   "target '%s'", impl(f)->url);
	rc = fence_from(f, &res->ranges[0], st);
	return rc ? rc : epoch_from(f, &res->ranges[1], &st->ep);
}

/* Both keys of op at one revision: a read-only txn of two ranges. */
static int read_state(fence *f, const struct op_keys *k, struct state *st)
{
	struct etcd_txn_result res;
	struct etcd_txn t;
	int rc;

	if (etcd_txn_init(&t))
		return nomem(f);
	if (etcd_txn_range(&t, ETCD_SUCCESS, k->fence, NULL) ||
	    etcd_txn_range(&t, ETCD_SUCCESS, k->epoch, NULL)) {
		etcd_txn_release(&t);
		return nomem(f);
	}
	rc = etcd_client_txn(impl(f)->client, &t, &res);
	etcd_txn_release(&t);
	if (rc)
		return client_fail(f, rc, "read the fence");
	rc = state_from(f, &res, st);
	etcd_txn_result_release(&res);
	return rc;
}

static int read_epoch(fence *f, const struct op_keys *k,
		      struct epoch_state *st)
{
	struct etcd_range r;
	int rc;

	rc = etcd_client_range(impl(f)->client, k->epoch, NULL, 0, 0, &r);
	if (rc)
		return client_fail(f, rc, "read the epoch");
	rc = epoch_from(f, &r, st);
	etcd_range_release(&r);
	return rc;
}

/* ---- open / close ---------------------------------------------------- */

static int etcd_open(fence *f, const char *url)
{
	struct fence_etcd *s = calloc(1, sizeof(*s));
	char err[256];
	int rc;

	if (!s)
		return nomem(f);
	f->impl = s;
	rc = etcd_layout_parse(url, &s->where, err, sizeof(err));
	if (rc)
		return fence__fail(f, rc, "%s", err);
	snprintf(s->url, sizeof(s->url), "etcd://%s/%s", s->where.members,
		 s->where.prefix);
	/* No I/O here: like a SQLite target, etcd is first touched by the
	 * first call that needs it. */
	rc = etcd_client_new(s->where.members, &s->client, err, sizeof(err));
	if (rc)
		return fence__fail(f, rc, "cannot open target '%s': %s",
				   s->url, err);
	if (s->where.first >= 0)
		etcd_client_prefer(s->client, (size_t)s->where.first);
	return 0;
}

static void etcd_close(void *p)
{
	struct fence_etcd *s = p;

	etcd_client_free(s->client);
	free(s);
}

/* ---- prepare --------------------------------------------------------- */

/* One compare-and-put of the epoch key; *won, or *st refreshed from the
 * failure branch. */
static int prepare_txn(fence *f, const char *op, const struct op_keys *k,
		       long long epoch, struct epoch_state *st, int *won)
{
	struct etcd_txn_result res;
	struct etcd_txn t;
	char *value = etcd_layout_epoch_value(op, epoch);
	int rc;

	*won = 0;
	if (!value || etcd_txn_init(&t)) {
		free(value);
		return nomem(f);
	}
	rc = etcd_txn_compare(&t, k->epoch, ETCD_MOD, st->rev) ||
	     etcd_txn_put(&t, ETCD_SUCCESS, k->epoch, value, strlen(value)) ||
	     etcd_txn_range(&t, ETCD_FAILURE, k->epoch, NULL);
	free(value);
	if (rc) {
		etcd_txn_release(&t);
		return nomem(f);
	}
	rc = etcd_client_txn(impl(f)->client, &t, &res);
	etcd_txn_release(&t);
	if (rc == FC_ERR_COMMIT_UNKNOWN)
		return rc; /* the caller settles it */
	if (rc)
		return client_fail(f, rc, "prepare");
	if (res.succeeded) {
		*won = 1;
		st->epoch = epoch;
		st->rev = res.revision;
	} else if (res.n < 1) {
		rc = fence__fail(f, FC_CORRUPT, "short txn answer from target "
				 "'%s'", impl(f)->url);
	} else {
		rc = epoch_from(f, &res.ranges[0], st);
	}
	etcd_txn_result_release(&res);
	return rc;
}

static int etcd_prepare(fence *f, const char *op, long long epoch)
{
	struct epoch_state st;
	struct op_keys k;
	int rc, won = 0, lost = 0;

	rc = op_keys_init(f, op, &k);
	if (rc)
		return rc;
	if (!cache_get(f, op, epoch, 0, &st))
		rc = read_epoch(f, &k, &st);
	for (int round = 0; !rc && !won; round++) {
		/* Only a fresh read gets here with st.epoch >= epoch. */
		if (st.epoch > epoch) {
			rc = fence__fail(f, FC_STALE_EPOCH, "epoch %lld for "
					 "'%s' is stale: epoch %lld is "
					 "prepared", epoch, op, st.epoch);
			break;
		}
		if (st.epoch == epoch) {
			won = 1; /* already prepared: idempotent */
			break;
		}
		if (round == ROUNDS) {
			rc = fence__fail(f, FC_FENCE_UNAVAILABLE, "cannot "
					 "prepare '%s' in target '%s': lost %d "
					 "races for its epoch key", op,
					 impl(f)->url, ROUNDS);
			break;
		}
		rc = prepare_txn(f, op, &k, epoch, &st, &won);
		if (rc == FC_ERR_COMMIT_UNKNOWN && !lost++) {
			/* Harmless to ask again: the compare lets at most one
			 * copy apply, and a fresh read shows which. */
			cache_drop(f);
			rc = read_epoch(f, &k, &st);
		} else if (rc == FC_ERR_COMMIT_UNKNOWN) {
			rc = fence__fail(f, FC_FENCE_UNAVAILABLE, "cannot "
					 "prepare '%s' in target '%s': outcome "
					 "unknown twice: %s", op,
					 impl(f)->url,
					 etcd_client_errmsg(impl(f)->client));
		}
	}
	if (rc)
		cache_drop(f);
	else
		cache_put(f, op, &st);
	op_keys_release(&k);
	return rc;
}

/* ---- apply: the plan ------------------------------------------------- */

static void plan_release(struct plan *p)
{
	for (size_t i = 0; i < p->nrows; i++) {
		free(p->keys ? p->keys[i] : NULL);
		free(p->values ? p->values[i] : NULL);
	}
	for (size_t i = 0; i < p->ndel; i++) {
		free(p->del_from[i]);
		free(p->del_to[i]);
	}
	free(p->keys);
	free(p->values);
	free(p->del_from);
	free(p->del_to);
	free(p->fence_value);
	free(p->epoch_value);
	memset(p, 0, sizeof(*p));
}

/* qsort_r() order of row indexes by their key (arg: the keys). */
static int by_key(const void *a, const void *b, void *arg)
{
	char *const *keys = arg;

	return strcmp(keys[*(const size_t *)a], keys[*(const size_t *)b]);
}

static int add_delete(struct plan *p, char *from, char *to)
{
	if (!from || !to) {
		free(from);
		free(to);
		return FC_NOMEM;
	}
	p->del_from[p->ndel] = from;
	p->del_to[p->ndel] = to;
	p->ndel++;
	p->bytes += strlen(from) + strlen(to) + OP_OVERHEAD;
	return 0;
}

/* "K" "\x01": the first key after K that this layout can hold. */
static char *after(const char *key)
{
	char *s;

	return asprintf(&s, "%s\x01", key) < 0 ? NULL : s;
}

static char *range_end(const char *prefix)
{
	size_t n = strlen(prefix) + 1;
	char *end = malloc(n);

	if (end && etcd_prefix_end(prefix, end, n)) {
		free(end);
		return NULL;
	}
	return end;
}

/*
 * REPLACE: delete every key of each row_key of the batch except the keys
 * this apply puts.  etcd refuses a txn that puts a key inside a range it
 * deletes, so each row_key's range is deleted in the gaps around our keys:
 * [dir, k1) [k1 "\x01", k2) ... [kn "\x01", end(dir)).
 */
static int plan_deletes(fence *f, const struct fence_batch *b,
			struct plan *p)
{
	size_t *order, i, j;
	int rc = 0;

	if (!b->nrows)
		return 0;
	order = malloc(b->nrows * sizeof(*order));
	p->del_from = calloc(2 * b->nrows, sizeof(char *));
	p->del_to = calloc(2 * b->nrows, sizeof(char *));
	if (!order || !p->del_from || !p->del_to) {
		free(order);
		return nomem(f);
	}
	for (i = 0; i < b->nrows; i++)
		order[i] = i;
	qsort_r(order, b->nrows, sizeof(*order), by_key, p->keys);
	/* Escaped row keys hold no '/': one row_key's keys are adjacent. */
	for (i = 0; !rc && i < b->nrows; i = j) {
		const char *row_key = b->rows[order[i]].row_key;
		char *dir = etcd_layout_row_dir(&impl(f)->where, b->table,
						row_key);
		char *from = dir ? strdup(dir) : NULL;

		for (j = i; !rc && j < b->nrows &&
		     strcmp(b->rows[order[j]].row_key, row_key) == 0; j++) {
			rc = add_delete(p, from, strdup(p->keys[order[j]]));
			from = rc ? NULL : after(p->keys[order[j]]);
		}
		if (!rc)
			rc = add_delete(p, from, dir ? range_end(dir) : NULL);
		else
			free(from);
		free(dir);
	}
	free(order);
	return rc ? nomem(f) : 0;
}

static int plan_build(fence *f, long long epoch, const struct fence_batch *b,
		      const char *wid, struct plan *p)
{
	struct fence_etcd *s = impl(f);
	struct etcd_fence_value v = { .epoch = epoch };
	int rc;

	memset(p, 0, sizeof(*p));
	p->keys = calloc(b->nrows + 1, sizeof(char *));
	p->values = calloc(b->nrows + 1, sizeof(char *));
	if (!p->keys || !p->values)
		return nomem(f);
	for (size_t i = 0; i < b->nrows; i++) {
		p->nrows = i + 1;
		p->keys[i] = etcd_layout_row_key(&s->where, b->table,
						 b->rows[i].row_key,
						 b->operation_id, epoch, i);
		p->values[i] = etcd_layout_row_value(b->rows[i].payload);
		if (!p->keys[i] || !p->values[i])
			return nomem(f);
		p->bytes += strlen(p->keys[i]) + strlen(p->values[i]) +
			    OP_OVERHEAD;
	}
	if (b->strategy == FENCE_REPLACE && (rc = plan_deletes(f, b, p)))
		return rc;
	snprintf(v.operation_id, sizeof(v.operation_id), "%s",
		 b->operation_id);
	snprintf(v.intent_digest, sizeof(v.intent_digest), "%s",
		 b->intent_digest);
	snprintf(v.table, sizeof(v.table), "%s", b->table);
	snprintf(v.write_id, sizeof(v.write_id), "%s", wid);
	v.rows = (long long)b->nrows;
	v.applied_at = clock_wall_ms();
	p->fence_value = etcd_layout_fence_value(&v);
	p->epoch_value = etcd_layout_epoch_value(b->operation_id, epoch);
	if (!p->fence_value || !p->epoch_value)
		return nomem(f);
	p->ops = p->nrows + p->ndel + 2;
	p->bytes += strlen(p->fence_value) + strlen(p->epoch_value) +
		    2 * (JOURNAL_ID_MAX + ETCD_LAYOUT_PREFIX_MAX + OP_OVERHEAD);
	if (p->ops > ETCD_LAYOUT_OPS_MAX || p->bytes > ETCD_LAYOUT_BYTES_MAX)
		return fence__fail(f, FC_USAGE, "batch of %zu rows for '%s' is "
				   "too large for one etcd txn: %zu operations "
				   "and %zu bytes (at most %d and %u); an "
				   "operation cannot be split over several txns",
				   b->nrows, b->operation_id, p->ops, p->bytes,
				   ETCD_LAYOUT_OPS_MAX, ETCD_LAYOUT_BYTES_MAX);
	return 0;
}

/* The txn of invariant 1 on the epoch key as st shows it. */
static int plan_txn(const struct plan *p, const struct op_keys *k,
		    const struct epoch_state *st, long long epoch,
		    struct etcd_txn *t)
{
	int rc;

	if (etcd_txn_init(t))
		return FC_NOMEM;
	rc = etcd_txn_compare(t, k->fence, ETCD_CREATE, 0) ||
	     etcd_txn_compare(t, k->epoch, ETCD_MOD, st->rev);
	for (size_t i = 0; !rc && i < p->ndel; i++)
		rc = etcd_txn_delete(t, ETCD_SUCCESS, p->del_from[i],
				     p->del_to[i]);
	for (size_t i = 0; !rc && i < p->nrows; i++)
		rc = etcd_txn_put(t, ETCD_SUCCESS, p->keys[i], p->values[i],
				  strlen(p->values[i]));
	rc = rc || etcd_txn_put(t, ETCD_SUCCESS, k->fence, p->fence_value,
				strlen(p->fence_value));
	if (!rc && st->epoch < epoch)
		rc = etcd_txn_put(t, ETCD_SUCCESS, k->epoch, p->epoch_value,
				  strlen(p->epoch_value));
	rc = rc || etcd_txn_range(t, ETCD_FAILURE, k->fence, NULL) ||
	     etcd_txn_range(t, ETCD_FAILURE, k->epoch, NULL);
	if (rc) {
		etcd_txn_release(t);
		return FC_NOMEM;
	}
	return 0;
}

/* ---- apply ----------------------------------------------------------- */

static int new_write_id(fence *f, char out[ETCD_LAYOUT_WRITE_ID_LEN + 1])
{
	unsigned char raw[ETCD_LAYOUT_WRITE_ID_LEN / 2];

	if (RAND_bytes(raw, (int)sizeof(raw)) != 1)
		return fence__fail(f, FC_FENCE_UNAVAILABLE, "cannot draw a "
				   "random write id");
	for (size_t i = 0; i < sizeof(raw); i++)
		snprintf(out + 2 * i, 3, "%02x", raw[i]);
	return 0;
}

/*
 * Decide on a fresh state (invariant 2).  Returns 1 when the txn may be
 * sent, 0 when it is our own write (success), or the refusal, each with
 * *outcome set.
 */
static int decide(fence *f, long long epoch, const struct fence_batch *b,
		  const char *wid, const struct state *st,
		  enum fence_outcome *outcome)
{
	const char *op = b->operation_id;

	if (st->fenced) {
		*outcome = FENCE_PROVED_PRESENT;
		if (strcmp(st->fence.write_id, wid) == 0)
			return 0;
		if (strcmp(st->fence.intent_digest, b->intent_digest) == 0)
			return fence__fail(f, FC_ALREADY_APPLIED, "'%s' was "
					   "already applied at epoch %lld", op,
					   st->fence.epoch);
		return fence__fail(f, FC_INTENT_CONFLICT, "'%s' was applied "
				   "with intent '%s', not '%s'", op,
				   st->fence.intent_digest, b->intent_digest);
	}
	*outcome = FENCE_PROVED_ABSENT;
	if (st->ep.epoch > epoch)
		return fence__fail(f, FC_STALE_EPOCH, "epoch %lld for '%s' is "
				   "stale: epoch %lld is prepared", epoch, op,
				   st->ep.epoch);
	return 1;
}

/* Send the plan once.  0 with *won, or with st refreshed from the failure
 * branch; FC_ERR_COMMIT_UNKNOWN or another error with *outcome set. */
static int apply_txn(fence *f, const struct plan *p, const struct op_keys *k,
		     long long epoch, struct state *st, int *won,
		     enum fence_outcome *outcome)
{
	struct etcd_txn_result res;
	struct etcd_txn t;
	int rc;

	*won = 0;
	*outcome = FENCE_PROVED_ABSENT;
	if (plan_txn(p, k, &st->ep, epoch, &t))
		return nomem(f);
	rc = etcd_client_txn(impl(f)->client, &t, &res);
	etcd_txn_release(&t);
	if (rc == FC_ERR_COMMIT_UNKNOWN) {
		*outcome = FENCE_OUTCOME_UNKNOWN;
		return fence__fail(f, rc, "outcome of the apply in target '%s' "
				   "is unknown (probe it): %s", impl(f)->url,
				   etcd_client_errmsg(impl(f)->client));
	}
	if (rc)
		return client_fail(f, rc, "apply the batch");
	if (res.succeeded) {
		*won = 1;
		if (st->ep.epoch < epoch)
			st->ep = (struct epoch_state){ epoch, res.revision };
	} else {
		rc = state_from(f, &res, st);
	}
	etcd_txn_result_release(&res);
	return rc;
}

static int etcd_apply(fence *f, long long epoch, const struct fence_batch *b,
		      enum fence_outcome *outcome)
{
	char wid[ETCD_LAYOUT_WRITE_ID_LEN + 1];
	struct state st = { 0 };
	struct plan p;
	struct op_keys k;
	int rc, won = 0, fresh = 0;

	*outcome = FENCE_PROVED_ABSENT;
	if ((rc = new_write_id(f, wid)))
		return rc;
	rc = plan_build(f, epoch, b, wid, &p);
	if (!rc)
		rc = op_keys_init(f, b->operation_id, &k);
	if (rc) {
		plan_release(&p);
		return rc;
	}
	if (!cache_get(f, b->operation_id, epoch, 1, &st.ep)) {
		rc = read_state(f, &k, &st);
		fresh = 1;
	}
	for (int round = 0; !rc && !won; round++) {
		if (fresh && (rc = decide(f, epoch, b, wid, &st, outcome)) <= 0)
			break;
		if (round == ROUNDS) {
			rc = fence__fail(f, FC_FENCE_UNAVAILABLE, "cannot apply "
					 "'%s' in target '%s': lost %d races "
					 "for its epoch key", b->operation_id,
					 impl(f)->url, ROUNDS);
			break;
		}
		rc = apply_txn(f, &p, &k, epoch, &st, &won, outcome);
		fresh = 1;
	}
	/* A fence key we cannot read may be anyone's commit. */
	if (rc == FC_CORRUPT)
		*outcome = FENCE_OUTCOME_UNKNOWN;
	if (rc == 0) {
		*outcome = FENCE_PROVED_PRESENT;
		cache_put(f, b->operation_id, &st.ep);
	} else {
		cache_drop(f);
	}
	op_keys_release(&k);
	plan_release(&p);
	return rc;
}

/* ---- probe ----------------------------------------------------------- */

static int etcd_probe(fence *f, const char *op, struct fence_probe *out)
{
	struct state st = { 0 };
	struct etcd_range r;
	struct op_keys k;
	int rc;

	rc = op_keys_init(f, op, &k);
	if (rc)
		return rc;
	/* Linearizable (etcd_client never asks for serializable reads). */
	rc = etcd_client_range(impl(f)->client, k.fence, NULL, 0, 0, &r);
	op_keys_release(&k);
	if (rc)
		return client_fail(f, rc, "probe the fence");
	rc = fence_from(f, &r, &st);
	etcd_range_release(&r);
	if (rc)
		return rc;
	if (!st.fenced) {
		out->answer = FENCE_ABSENT;
		return 0;
	}
	out->answer = FENCE_APPLIED;
	out->epoch = st.fence.epoch;
	snprintf(out->intent_digest, sizeof(out->intent_digest), "%s",
		 st.fence.intent_digest);
	out->rows = st.fence.rows;
	return 0;
}

const struct fence_ops fence_etcd_ops = {
	.scheme = "etcd",
	.name = "etcd",
	.capability = FENCE_CAP_AUTOMATIC,
	.open = etcd_open,
	.close = etcd_close,
	.prepare = etcd_prepare,
	.apply = etcd_apply,
	.probe = etcd_probe,
};
