/*
 * journal_etcd_impl.h -- what the files of the etcd journal adapter share,
 * from the bottom up: journal_etcd_codec.c (stored values),
 * journal_etcd_read.c (the schema key, entries, scans, read errors),
 * journal_etcd_write.c (every guarded write and the settling of lost
 * answers) and journal_etcd.c (open, the ops table, get/history/list).
 * Each calls only files before it in that list.  No other file includes
 * it.
 */
#ifndef FENCECERT_JOURNAL_ETCD_IMPL_H
#define FENCECERT_JOURNAL_ETCD_IMPL_H

#include <stdio.h>

#include "common/etcd_client.h"
#include "journal/journal_impl.h"

#define JE_PREFIX_MAX 200
#define JE_KEY_MAX (JE_PREFIX_MAX + JOURNAL_ID_MAX + 48)
#define JE_WRITE_ID_LEN 32
#define JE_ROUNDS 8    /* decisions per call before giving up a race */
#define JE_PAGE 128    /* keys per range request when listing */

struct je {
	etcd_client *client;
	char prefix[JE_PREFIX_MAX + 1];
	char url[JE_PREFIX_MAX + 320]; /* for messages; holds no secret */
	int ready;                     /* schema checked on this handle */
	/* The entry this handle last read or wrote, as of `rev` (see
	 * invariant 2).  valid = 0 after any doubt. */
	struct {
		int valid;
		long long rev;
		struct journal_entry e;
	} cache;
};

/* The entry as read from etcd, with what guards a write on top of it. */
struct je_cur {
	int found;
	long long rev; /* mod_revision of the entry key */
	struct journal_entry e;
	char write_id[JE_WRITE_ID_LEN + 1];
	char *raw;     /* the stored bytes (for a barrier); owned */
};

static inline struct je *je_of(journal *j)
{
	return j->impl;
}

static inline void key_op(const struct je *s, const char *op,
			  char out[JE_KEY_MAX])
{
	snprintf(out, JE_KEY_MAX, "%s/ops/%s", s->prefix, op);
}

static inline void key_hist(const struct je *s, const char *op, long long v,
			    char out[JE_KEY_MAX])
{
	snprintf(out, JE_KEY_MAX, "%s/hist/%s/%020lld", s->prefix, op, v);
}

static inline void cache_put(struct je *s, const struct journal_entry *e,
			     long long rev)
{
	s->cache.valid = 1;
	s->cache.rev = rev;
	s->cache.e = *e;
}

static inline void cache_drop(struct je *s)
{
	s->cache.valid = 0;
}

/* ---- journal_etcd_read.c ------------------------------------------------ */

/* Record a failure the etcd client reported; FC_ERR_COMMIT_UNKNOWN that
 * reaches here could not be settled and becomes FC_JOURNAL_UNAVAILABLE. */
int journal_etcd__client_fail(journal *j, int rc, const char *what);
int journal_etcd__corrupt(journal *j, const char *key);
int journal_etcd__not_found(journal *j, const char *op);
int journal_etcd__write_id(journal *j, char out[JE_WRITE_ID_LEN + 1]);
/* Frees what cur owns; its fields stay readable. */
void journal_etcd__cur_release(struct je_cur *c);
/* Fill cur from a range answer holding the entry key (or nothing). */
int journal_etcd__cur_from(journal *j, const struct etcd_range *r,
			   const char *key, struct je_cur *cur);
/* Read op's entry from etcd (never the cache); refreshes the cache. */
int journal_etcd__read_entry(journal *j, const char *op, struct je_cur *cur);
/* Called first by every operation but migrate. */
int journal_etcd__ready(journal *j);
/* Create the schema key if PREFIX has none (the port's migrate). */
int journal_etcd__migrate(journal *j, int *from, int *to);
/* Make room for item n of an array of elem-byte items. */
int journal_etcd__grow(journal *j, void **arr, size_t *cap, size_t n,
		       size_t elem);
/* Visit every key under prefix ("/"-terminated), in key order, all pages
 * read at one revision; visit() returns 0 to go on or an error. */
int journal_etcd__scan(journal *j, const char *prefix,
		       int (*visit)(journal *j, const struct etcd_kv *kv,
				    void *arg),
		       void *arg);

/* ---- journal_etcd_write.c ----------------------------------------------- */

int journal_etcd__create_or_get(journal *j, const char *op, const char *intent,
				const char *meta, struct journal_entry *out,
				int *created);
int journal_etcd__cas(journal *j, const struct journal_cas *req,
		      struct journal_entry *out);
int journal_etcd__acquire_lease(journal *j, const char *op, const char *owner,
				long long ttl_ms, struct journal_entry *out);
int journal_etcd__purge(journal *j, long long before,
			char (**ids)[JOURNAL_ID_MAX], size_t *n);

/* ---- journal_etcd_codec.c: values as JSON text -------------------------- */

/* New JSON text (free() it), or NULL when out of memory. */
char *journal_etcd__entry_encode(const struct journal_entry *e,
				 const char *wid);
char *journal_etcd__transition_encode(const struct journal_transition *t,
				      const char *wid);
char *journal_etcd__tombstone_encode(const struct journal_entry *e,
				     const char *wid);
/* 0, or -1 when text is not a value of that kind. */
int journal_etcd__entry_decode(const char *text, struct journal_entry *e,
			       char wid[JE_WRITE_ID_LEN + 1]);
int journal_etcd__transition_decode(const char *text,
				    struct journal_transition *t,
				    char wid[JE_WRITE_ID_LEN + 1]);

#endif
