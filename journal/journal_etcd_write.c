/*
 * journal_etcd_write.c -- every write of the etcd journal adapter, and the
 * settling of a write whose answer was lost (journal_etcd.c states the
 * invariants; this file keeps 1 and 3).
 *
 *   create:  txn[create_revision(entry) == 0 : put entry, put hist/1
 *                | range entry, range hist/1]
 *   cas:     txn[mod_revision(entry) == R : put entry v+1, put hist/v+1
 *                | range entry, range hist/v+1]
 *   lease:   txn[mod_revision(entry) == R : put entry (epoch + 1)
 *                | range entry]
 *   purge:   txn[mod_revision(entry) == R : delete entry, delete hist/,
 *                put tombstone]
 *
 * Our write is recognized by its write_id wherever it lands: the answer to
 * the success branch, the failure branch (a copy libcurl re-sent after a
 * reused connection died silently, whose first copy applied), or the read
 * of settle().  Nothing here re-sends a txn whose outcome is unknown, except
 * create, whose compare lets at most one copy apply.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "journal/journal_etcd_impl.h"

/* ---- settling a lost answer (invariant 3) -------------------------------- */

/*
 * Fill cur from answer slot 0 (the entry key) and, when hist is set, hwid
 * from slot 1 (a history key; "" when absent).
 */
static int pair_from(journal *j, const struct etcd_txn_result *res,
		     const char *key, const char *hist, struct je_cur *cur,
		     char hwid[JE_WRITE_ID_LEN + 1])
{
	struct journal_transition tr;
	int rc;

	hwid[0] = '\0';
	if (res->n < (hist ? 2u : 1u))
		return journal_etcd__corrupt(j, key);
	if ((rc = journal_etcd__cur_from(j, &res->ranges[0], key, cur)))
		return rc;
	if (hist && res->ranges[1].n &&
	    journal_etcd__transition_decode(res->ranges[1].kvs[0].value, &tr,
					    hwid))
		return journal_etcd__corrupt(j, hist);
	return 0;
}

/* Entry and (optional) history key at one revision: a read-only txn. */
static int read_pair(journal *j, const char *key, const char *hist,
		     struct je_cur *cur, char hwid[JE_WRITE_ID_LEN + 1])
{
	struct je *s = je_of(j);
	struct etcd_txn_result res;
	struct etcd_txn t;
	int rc;

	if ((rc = etcd_txn_init(&t)) ||
	    (rc = etcd_txn_range(&t, ETCD_SUCCESS, key, NULL)) ||
	    (hist && (rc = etcd_txn_range(&t, ETCD_SUCCESS, hist, NULL))) ||
	    (rc = etcd_client_txn(s->client, &t, &res))) {
		etcd_txn_release(&t);
		return journal_etcd__client_fail(j, rc, "read");
	}
	etcd_txn_release(&t);
	rc = pair_from(j, &res, key, hist, cur, hwid);
	etcd_txn_result_release(&res);
	return rc;
}

/* Rewrite the entry unchanged under "mod_revision == guard"; *applied
 * tells whether it did (then *rev is its new mod_revision). */
static int barrier(journal *j, const char *key, long long guard,
		   const char *raw, int *applied, long long *rev)
{
	struct je *s = je_of(j);
	struct etcd_txn_result res;
	struct etcd_txn t;
	int rc;

	if ((rc = etcd_txn_init(&t)) ||
	    (rc = etcd_txn_compare(&t, key, ETCD_MOD, guard)) ||
	    (rc = etcd_txn_put(&t, ETCD_SUCCESS, key, raw, strlen(raw))) ||
	    (rc = etcd_client_txn(s->client, &t, &res))) {
		etcd_txn_release(&t);
		return journal_etcd__client_fail(j, rc, "write");
	}
	etcd_txn_release(&t);
	*applied = res.succeeded;
	*rev = res.revision;
	etcd_txn_result_release(&res);
	return 0;
}

enum settled { SETTLED_APPLIED, SETTLED_NOT_APPLIED };

/*
 * After FC_ERR_COMMIT_UNKNOWN for a txn guarded by "mod_revision(entry) ==
 * guard" and tagged wid: find out whether it applied.  hist is the history
 * key it wrote (cas) or NULL (lease).  On SETTLED_NOT_APPLIED, *cur holds
 * the entry to decide on again.  Returns an enum settled or an error.
 */
static int settle(journal *j, const char *op, const char *hist, long long guard,
		  const char *wid, struct je_cur *cur)
{
	struct je *s = je_of(j);
	char key[JE_KEY_MAX], hwid[JE_WRITE_ID_LEN + 1];
	int rc = 0, applied;
	long long rev;

	key_op(s, op, key);
	cache_drop(s);
	for (int round = 0; round < 3; round++) {
		if ((rc = read_pair(j, key, hist, cur, hwid)))
			break;
		if ((hist && strcmp(hwid, wid) == 0) ||
		    (!hist && cur->found && strcmp(cur->write_id, wid) == 0))
			return SETTLED_APPLIED;
		/* A moved (or deleted) entry fails our compare forever. */
		if (!cur->found || cur->rev != guard)
			return SETTLED_NOT_APPLIED;
		/* Same compare as ours: once the barrier applied, ours has
		 * been refused or will be. */
		if ((rc = barrier(j, key, guard, cur->raw, &applied, &rev)))
			break;
		if (applied) {
			cur->rev = rev;
			return SETTLED_NOT_APPLIED;
		}
	}
	if (rc == FC_NOMEM || rc == FC_CORRUPT)
		return rc;
	return journal__fail(j, FC_JOURNAL_UNAVAILABLE, "outcome unknown: "
			     "the write to '%s' in journal '%s' may or may "
			     "not have been applied; the next reader decides "
			     "(%s)", op, s->url, etcd_client_errmsg(s->client));
}

/* ---- create -------------------------------------------------------------- */

/* The entry existed: hand it out, unless its intent is another one. */
static int existing(journal *j, const struct je_cur *cur, const char *intent,
		    struct journal_entry *out, int *created)
{
	int rc = journal__check_intent(j, &cur->e, intent);

	if (rc)
		return rc;
	*out = cur->e;
	*created = 0;
	return 0;
}

/* The create txn: entry and history key 1, if the entry key is absent;
 * else read both. */
static int create_txn(journal *j, const struct journal_entry *e,
		      const char *wid, const char *key, const char *hist,
		      const char *tomb, struct etcd_txn_result *res)
{
	struct je *s = je_of(j);
	struct journal_transition tr = {
		.version = 1, .from = FC_STATE_NONE, .to = FC_PREPARING,
		.epoch = 0, .at = e->created_at,
	};
	char *entry = journal_etcd__entry_encode(e, wid), *first;
	struct etcd_txn t = { 0 };
	int rc;

	snprintf(tr.operation_id, sizeof(tr.operation_id), "%s",
		 e->operation_id);
	strcpy(tr.evidence, "{}");
	first = journal_etcd__transition_encode(&tr, wid);
	rc = entry && first ? etcd_txn_init(&t) : FC_NOMEM;
	if (!rc && !(rc = etcd_txn_compare(&t, key, ETCD_CREATE, 0)) &&
	    !(rc = etcd_txn_compare(&t, tomb, ETCD_CREATE, 0)) &&
	    !(rc = etcd_txn_put(&t, ETCD_SUCCESS, key, entry, strlen(entry))) &&
	    !(rc = etcd_txn_put(&t, ETCD_SUCCESS, hist, first,
				strlen(first))) &&
	    !(rc = etcd_txn_range(&t, ETCD_FAILURE, key, NULL)) &&
	    !(rc = etcd_txn_range(&t, ETCD_FAILURE, hist, NULL)))
		rc = etcd_client_txn(s->client, &t, res);
	etcd_txn_release(&t);
	free(entry);
	free(first);
	return rc;
}

/* A purged operation completed once; re-creating it would let a late retry
 * apply the same mutation again, so creation is refused with FC_PURGED. */
static int purged(journal *j, const char *tomb, const char *op)
{
	struct je *s = je_of(j);
	struct etcd_range r;
	int rc = etcd_client_range(s->client, tomb, NULL, 1, 0, &r);

	if (rc)
		return journal_etcd__client_fail(j, rc, "read");
	rc = r.n ? journal__fail(j, FC_PURGED, "operation '%s' was purged "
				 "from journal '%s' after completing; refusing "
				 "to create it again", op, s->url) : 0;
	etcd_range_release(&r);
	return rc;
}

/*
 * Create-if-absent.  A lost answer is settled by reading back: history key
 * 1 carries our write_id if our txn made the entry.  While the entry is
 * still absent the same txn is sent again -- not blindly: its
 * create_revision == 0 compare lets at most one copy apply, and reading
 * history key 1 tells which.
 */
int journal_etcd__create_or_get(journal *j, const char *op, const char *intent,
				const char *meta, struct journal_entry *out,
				int *created)
{
	struct je *s = je_of(j);
	struct journal_entry e;
	struct je_cur cur = { 0 };
	struct etcd_txn_result res;
	char wid[JE_WRITE_ID_LEN + 1], hwid[JE_WRITE_ID_LEN + 1];
	char key[JE_KEY_MAX], hist[JE_KEY_MAX], tomb[JE_KEY_MAX];
	int rc;

	if ((rc = journal_etcd__ready(j)) ||
	    (rc = journal_etcd__write_id(j, wid)))
		return rc;
	journal__new_entry(&e, op, intent, meta);
	key_op(s, op, key);
	key_hist(s, op, 1, hist);
	snprintf(tomb, sizeof(tomb), "%s/purged/%s", s->prefix, op);
	for (int round = 0; round < 3; round++) {
		rc = create_txn(j, &e, wid, key, hist, tomb, &res);
		if (rc == FC_ERR_COMMIT_UNKNOWN) {
			cache_drop(s);
			rc = read_pair(j, key, hist, &cur, hwid);
		} else if (rc) {
			rc = journal_etcd__client_fail(j, rc, "write");
		} else if (res.succeeded) {
			cache_put(s, &e, res.revision);
			etcd_txn_result_release(&res);
			*out = e;
			*created = 1;
			return 0;
		} else {
			rc = pair_from(j, &res, key, hist, &cur, hwid);
			etcd_txn_result_release(&res);
		}
		if (rc)
			break;
		if (!cur.found) { /* still absent (lost answer), or purged */
			if ((rc = purged(j, tomb, op)))
				break;
			continue;
		}
		if (strcmp(hwid, wid) == 0) {
			*out = cur.e;
			*created = 1;
		} else {
			rc = existing(j, &cur, intent, out, created);
		}
		journal_etcd__cur_release(&cur);
		return rc;
	}
	journal_etcd__cur_release(&cur);
	if (rc)
		return rc;
	return journal__fail(j, FC_JOURNAL_UNAVAILABLE, "outcome unknown: "
			     "creating '%s' in journal '%s' got no answer (%s)",
			     op, s->url, etcd_client_errmsg(s->client));
}

/* ---- cas, lease ---------------------------------------------------------- */

/* The entry to decide on: the cache when it holds op, else a fresh read. */
static int decide_on(journal *j, const char *op, struct je_cur *cur)
{
	struct je *s = je_of(j);

	if (s->cache.valid && strcmp(s->cache.e.operation_id, op) == 0) {
		journal_etcd__cur_release(cur);
		cur->found = 1;
		cur->rev = s->cache.rev;
		cur->e = s->cache.e;
		cur->write_id[0] = '\0';
		return 0;
	}
	return journal_etcd__read_entry(j, op, cur);
}

/*
 * One guarded write of the entry (and, for a cas, its history key):
 * txn[mod_revision(entry) == cur->rev : put entry (+ put hist) | range
 * entry (+ range hist)].  Returns 0 with *done = 1 when our write is in
 * etcd, *done = 0 when the compare failed (*cur is then the entry read in
 * the same txn), or a raw client code (FC_ERR_COMMIT_UNKNOWN: settle it).
 *
 * A failed compare can hide our own success: libcurl re-sends a request
 * whose reused connection died before any answer byte, and the first copy
 * may have applied.  Our write_id in the history key (cas) or the entry
 * (lease) read by the failure branch tells.
 */
static int guarded_put(journal *j, struct je_cur *cur,
		       const struct journal_entry *next, const char *wid,
		       const char *hist, const struct journal_transition *tr,
		       int *done)
{
	struct je *s = je_of(j);
	char key[JE_KEY_MAX], hwid[JE_WRITE_ID_LEN + 1];
	char *entry = journal_etcd__entry_encode(next, wid);
	char *trans = tr ? journal_etcd__transition_encode(tr, wid) : NULL;
	struct etcd_txn_result res;
	struct etcd_txn t = { 0 };
	int rc;

	key_op(s, next->operation_id, key);
	rc = entry && (!tr || trans) ? etcd_txn_init(&t) : FC_NOMEM;
	if (!rc && !(rc = etcd_txn_compare(&t, key, ETCD_MOD, cur->rev)) &&
	    !(rc = etcd_txn_put(&t, ETCD_SUCCESS, key, entry, strlen(entry))) &&
	    !(tr && (rc = etcd_txn_put(&t, ETCD_SUCCESS, hist, trans,
				       strlen(trans)))) &&
	    !(rc = etcd_txn_range(&t, ETCD_FAILURE, key, NULL)) &&
	    !(tr && (rc = etcd_txn_range(&t, ETCD_FAILURE, hist, NULL))))
		rc = etcd_client_txn(s->client, &t, &res);
	etcd_txn_release(&t);
	free(entry);
	free(trans);
	if (rc)
		return rc;
	*done = res.succeeded;
	if (res.succeeded) {
		cache_put(s, next, res.revision);
	} else if (!(rc = pair_from(j, &res, key, tr ? hist : NULL, cur,
				    hwid))) {
		*done = tr ? strcmp(hwid, wid) == 0
			   : cur->found && strcmp(cur->write_id, wid) == 0;
		if (cur->found)
			cache_put(s, &cur->e, cur->rev);
	}
	etcd_txn_result_release(&res);
	return rc;
}

/*
 * The loop both cas and acquire_lease run: decide on the entry (cache or
 * read), write under its mod_revision, and on a failed compare or a
 * settled lost answer decide again on what etcd holds now.  decide()
 * returns 0 with *next filled (and *tr for a cas), or the refusal.  A
 * refusal based on the cache is re-checked on a fresh read first.
 */
struct je_move {
	const char *op;
	const char *what; /* for messages: "cas", "lease" */
	int (*decide)(journal *j, const struct journal_entry *cur,
		      const void *arg, struct journal_entry *next,
		      struct journal_transition *tr);
	const void *arg;
	int history;      /* the move writes history key next->version */
};

static int move(journal *j, const struct je_move *m, struct journal_entry *out)
{
	struct je *s = je_of(j);
	struct je_cur cur = { 0 };
	struct journal_entry next;
	struct journal_transition tr;
	char wid[JE_WRITE_ID_LEN + 1], hist[JE_KEY_MAX];
	int rc, fresh, done = 0;

	if ((rc = journal_etcd__ready(j)) || (rc = decide_on(j, m->op, &cur)))
		return rc;
	fresh = cur.raw != NULL;
	for (int round = 0; round < JE_ROUNDS; round++) {
		if (!cur.found) {
			rc = journal_etcd__not_found(j, m->op);
			break;
		}
		rc = m->decide(j, &cur.e, m->arg, &next, &tr);
		if (rc && !fresh) {
			/* Never refuse on the strength of the cache. */
			if ((rc = journal_etcd__read_entry(j, m->op, &cur)))
				break;
			fresh = 1;
			round--;
			continue;
		}
		if (rc || (rc = journal_etcd__write_id(j, wid)))
			break;
		key_hist(s, m->op, next.version, hist);
		rc = guarded_put(j, &cur, &next, wid, m->history ? hist : NULL,
				 m->history ? &tr : NULL, &done);
		if (rc == FC_ERR_COMMIT_UNKNOWN) {
			rc = settle(j, m->op, m->history ? hist : NULL,
				    cur.rev, wid, &cur);
			if (rc == SETTLED_APPLIED) {
				/* cur is what etcd holds now, maybe later
				 * than our write. */
				cache_put(s, &cur.e, cur.rev);
				done = 1;
			} else if (rc != SETTLED_NOT_APPLIED) {
				break;
			}
			rc = 0;
		} else if (rc) {
			if (rc != FC_CORRUPT)
				rc = journal_etcd__client_fail(j, rc, "write");
			break;
		}
		if (done) {
			*out = next;
			break;
		}
		fresh = 1;
	}
	if (!rc && !done)
		rc = journal__fail(j, FC_CAS_CONFLICT, "%s on '%s' kept losing "
				   "races in journal '%s' (%d rounds)", m->what,
				   m->op, s->url, JE_ROUNDS);
	journal_etcd__cur_release(&cur);
	return rc;
}

static int decide_cas(journal *j, const struct journal_entry *cur,
		      const void *arg, struct journal_entry *next,
		      struct journal_transition *tr)
{
	const struct journal_cas *req = arg;
	int rc;

	if ((rc = journal__check_cas(j, cur, req)))
		return rc;
	*next = *cur;
	next->state = req->next;
	next->version = cur->version + 1;
	next->updated_at = clock_wall_ms();
	snprintf(next->evidence, sizeof(next->evidence), "%s", req->evidence);
	memset(tr, 0, sizeof(*tr));
	snprintf(tr->operation_id, sizeof(tr->operation_id), "%s",
		 cur->operation_id);
	tr->version = next->version;
	tr->from = cur->state;
	tr->to = req->next;
	tr->epoch = req->epoch;
	tr->at = next->updated_at;
	snprintf(tr->evidence, sizeof(tr->evidence), "%s", req->evidence);
	return 0;
}

int journal_etcd__cas(journal *j, const struct journal_cas *req,
		      struct journal_entry *out)
{
	const struct je_move m = {
		.op = req->operation_id, .what = "cas",
		.decide = decide_cas, .arg = req, .history = 1,
	};

	return move(j, &m, out);
}

struct lease_req {
	const char *owner;
	long long ttl_ms;
};

/* Epoch = previous epoch + 1 (invariant 4); state, version and updated_at
 * stay, as in every adapter: a lease is not a transition. */
static int decide_lease(journal *j, const struct journal_entry *cur,
			const void *arg, struct journal_entry *next,
			struct journal_transition *tr)
{
	const struct lease_req *req = arg;
	long long now = clock_wall_ms();
	int rc;

	(void)tr;
	if ((rc = journal__check_lease(j, cur, req->owner, now)))
		return rc;
	*next = *cur;
	next->lease_epoch = cur->lease_epoch + 1;
	snprintf(next->lease_owner, sizeof(next->lease_owner), "%s",
		 req->owner);
	next->lease_expires_at = now + req->ttl_ms;
	return 0;
}

int journal_etcd__acquire_lease(journal *j, const char *op, const char *owner,
				long long ttl_ms, struct journal_entry *out)
{
	const struct lease_req req = { owner, ttl_ms };
	const struct je_move m = {
		.op = op, .what = "lease", .decide = decide_lease, .arg = &req,
	};

	return move(j, &m, out);
}

/* ---- purge --------------------------------------------------------------- */

struct purge {
	long long before;
	char (*ids)[JOURNAL_ID_MAX];
	size_t n, cap;
};

/* Did the tombstone at key come from the purge tagged wid? */
static int tombstone_ours(journal *j, const char *key, const char *wid,
			  int *ours)
{
	struct je *s = je_of(j);
	struct etcd_range r;
	json_t *obj;
	int rc;

	if ((rc = etcd_client_range(s->client, key, NULL, 0, 0, &r)))
		return journal_etcd__client_fail(j, rc, "read");
	obj = r.n ? json_loads(r.kvs[0].value, 0, NULL) : NULL;
	*ours = obj && json_is_string(json_object_get(obj, "write_id")) &&
		strcmp(json_string_value(json_object_get(obj, "write_id")),
		       wid) == 0;
	json_decref(obj);
	etcd_range_release(&r);
	return 0;
}

/*
 * One operation: txn[mod_revision(entry) == rev : delete entry, delete its
 * history range, put the tombstone].  A compare that failed means the entry
 * changed since it was read (only a lease can change a COMPLETE entry): it
 * stays, and the next purge looks again.  A lost answer is settled:
 * settle() makes sure our txn cannot apply any more; if the entry is then
 * gone, the tombstone's write_id says whether our txn or another purge
 * removed it.
 */
static int purge_one(journal *j, const struct journal_entry *e, long long rev,
		     struct purge *p)
{
	struct je *s = je_of(j);
	char key[JE_KEY_MAX], hist[JE_KEY_MAX], hist_end[JE_KEY_MAX];
	char tomb_key[JE_KEY_MAX], wid[JE_WRITE_ID_LEN + 1], *tomb;
	struct etcd_txn_result res;
	struct etcd_txn t = { 0 };
	struct je_cur cur = { 0 };
	int rc, applied = 0;

	key_op(s, e->operation_id, key);
	snprintf(hist, sizeof(hist), "%s/hist/%s/", s->prefix, e->operation_id);
	snprintf(tomb_key, sizeof(tomb_key), "%s/purged/%s", s->prefix,
		 e->operation_id);
	if ((rc = journal_etcd__write_id(j, wid)))
		return rc;
	if (etcd_prefix_end(hist, hist_end, sizeof(hist_end)))
		return journal__fail(j, FC_USAGE, "key '%s' too long", hist);
	tomb = journal_etcd__tombstone_encode(e, wid);
	rc = tomb ? etcd_txn_init(&t) : FC_NOMEM;
	if (!rc && !(rc = etcd_txn_compare(&t, key, ETCD_MOD, rev)) &&
	    !(rc = etcd_txn_delete(&t, ETCD_SUCCESS, key, NULL)) &&
	    !(rc = etcd_txn_delete(&t, ETCD_SUCCESS, hist, hist_end)) &&
	    !(rc = etcd_txn_put(&t, ETCD_SUCCESS, tomb_key, tomb,
				strlen(tomb))))
		rc = etcd_client_txn(s->client, &t, &res);
	etcd_txn_release(&t);
	free(tomb);
	if (!rc) {
		applied = res.succeeded;
		etcd_txn_result_release(&res);
	} else if (rc != FC_ERR_COMMIT_UNKNOWN) {
		return journal_etcd__client_fail(j, rc, "purge");
	} else {
		/* The entry never carries a purge's write_id, so settle()
		 * cannot answer "applied"; it only rules out a later apply. */
		rc = settle(j, e->operation_id, NULL, rev, wid, &cur);
		journal_etcd__cur_release(&cur);
		if (rc != SETTLED_NOT_APPLIED)
			return rc;
		if (!cur.found &&
		    (rc = tombstone_ours(j, tomb_key, wid, &applied)))
			return rc;
	}
	if (!applied)
		return 0;
	cache_drop(s);
	if ((rc = journal_etcd__grow(j, (void **)&p->ids, &p->cap, p->n,
				     sizeof(*p->ids))))
		return rc;
	snprintf(p->ids[p->n++], JOURNAL_ID_MAX, "%s", e->operation_id);
	return 0;
}

static int visit_purge(journal *j, const struct etcd_kv *kv, void *arg)
{
	struct purge *p = arg;
	struct journal_entry e;
	char wid[JE_WRITE_ID_LEN + 1];

	if (journal_etcd__entry_decode(kv->value, &e, wid))
		return journal_etcd__corrupt(j, kv->key);
	if (e.state != FC_COMPLETE || e.updated_at >= p->before)
		return 0;
	return purge_one(j, &e, kv->mod_revision, p);
}

/*
 * Unlike SQLite's, this purge is atomic per operation, not as a whole: on
 * a failure the operations already purged stay purged (the message counts
 * them), and running purge again finishes the job.
 */
int journal_etcd__purge(journal *j, long long before,
			char (**ids)[JOURNAL_ID_MAX], size_t *n)
{
	struct je *s = je_of(j);
	struct purge p = { .before = before };
	char prefix[JE_KEY_MAX], msg[sizeof(j->errmsg)];
	int rc;

	if ((rc = journal_etcd__ready(j)))
		return rc;
	snprintf(prefix, sizeof(prefix), "%s/ops/", s->prefix);
	if ((rc = journal_etcd__scan(j, prefix, visit_purge, &p))) {
		if (p.n) {
			snprintf(msg, sizeof(msg), "%s", j->errmsg);
			journal__fail(j, rc, "%s (after purging %zu "
				      "operations; run purge again)", msg,
				      p.n);
		}
		free(p.ids);
		return rc;
	}
	*ids = p.ids;
	*n = p.n;
	return 0;
}
