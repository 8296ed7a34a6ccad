/*
 * snapshot_power.c -- the power-loss model of snapshot.h: what a machine
 * that lost power would leave of a schedule's directory.
 *
 * Everything is known by inode (device, number, birth time: a number the
 * file system hands out again after an unlink is another file).  Each
 * inode the model has seen has a record with, at most:
 *   - its durable content (a regular file): the object of its last sync,
 *     and its mode then;
 *   - its durable listing (a directory): name -> (inode, type, mode,
 *     symlink target) as its last sync read it.
 * The baseline (snap_durable_new) is one sync of the whole tree, so
 * "last synced, else baseline" is one slot that a sync overwrites.
 *
 *   snap_durable_new()        baseline: every record of the tree now
 *   snap_durable_synced()     one record replaced (content or listing)
 *   snap_durable_synced_all() every record of the tree now replaced
 *   snap_take_power()         a walk from the root through durable
 *                             listings only, written as a manifest
 *   snap_take_model()         the records that bear on the tree now, each
 *                             inode named by its path (else "#N"), stored
 *   snap_durable_restore()    those records put back over a restored copy
 *                             of the tree, on the inodes its paths name
 *
 * The walk meets a directory once: listings from different moments may
 * place one directory inode in two places, or inside itself, which no
 * real tree can; the first place a depth-first walk in name order meets
 * wins, so the walk always ends.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <jansson.h>

#include "common/array.h"
#include "harness/run/snapshot_impl.h"

#define POWER_FIRST_BUCKETS 256
#define DELETED_SUFFIX " (deleted)"

struct inode_key {
	uint64_t dev, ino;
	int64_t btime_sec;
	uint32_t btime_nsec;
};

/* One name of a durable listing. */
struct dent {
	char *name;
	struct inode_key key;
	char type;                 /* 'd', 'f' or 'l' */
	unsigned mode;             /* 'f': permission bits when listed */
	char *target;              /* 'l' */
};

struct listing {
	struct dent *v;
	size_t n, cap;
};

struct inode_rec {
	struct inode_rec *next;
	struct inode_key key;
	bool has_content, has_listing;
	unsigned mode;             /* has_content: permission bits then */
	char object[SNAP_DIGEST_HEX + 1];
	struct listing listing;
	unsigned visit;            /* == snap_durable.visit: walked already */
};

struct snap_durable {
	snap_store *st;
	char root[PATH_MAX];
	size_t rootlen;
	struct inode_key root_key;
	struct inode_rec **bucket;
	size_t nbucket, nrec;
	unsigned visit;            /* this power take's mark */
};

/* A power take in progress. */
struct power {
	snap_durable *d;
	struct snap_manifest m;
	char rel[PATH_MAX];
	char empty[SNAP_DIGEST_HEX + 1]; /* "" until first needed */
	char *err;
	size_t errlen;
};

static struct inode_key key_of(const struct statx *sx)
{
	struct inode_key k = {
		.dev = makedev(sx->stx_dev_major, sx->stx_dev_minor),
		.ino = sx->stx_ino,
	};

	if (sx->stx_mask & STATX_BTIME) {
		k.btime_sec = sx->stx_btime.tv_sec;
		k.btime_nsec = sx->stx_btime.tv_nsec;
	}
	return k;
}

static bool key_equal(const struct inode_key *a, const struct inode_key *b)
{
	return a->dev == b->dev && a->ino == b->ino &&
	       a->btime_sec == b->btime_sec && a->btime_nsec == b->btime_nsec;
}

static size_t key_hash(const struct inode_key *k)
{
	uint64_t h = k->ino * 0x9e3779b97f4a7c15ULL;

	h ^= (k->dev + (uint64_t)k->btime_sec * 31 + k->btime_nsec) *
	     0xbf58476d1ce4e5b9ULL;
	return (size_t)(h ^ (h >> 29));
}

/* --- records ---------------------------------------------------------- */

static void listing_release(struct listing *l)
{
	for (size_t i = 0; i < l->n; i++) {
		free(l->v[i].name);
		free(l->v[i].target);
	}
	free(l->v);
	memset(l, 0, sizeof(*l));
}

static struct inode_rec *rec_find(const snap_durable *d,
				  const struct inode_key *k)
{
	struct inode_rec *r;

	if (!d->nbucket)
		return NULL;
	for (r = d->bucket[key_hash(k) & (d->nbucket - 1)]; r; r = r->next)
		if (key_equal(&r->key, k))
			return r;
	return NULL;
}

static int rec_grow(snap_durable *d)
{
	size_t n = d->nbucket ? d->nbucket * 2 : POWER_FIRST_BUCKETS;
	struct inode_rec **b = calloc(n, sizeof(*b));

	if (!b)
		return FC_NOMEM;
	for (size_t i = 0; i < d->nbucket; i++) {
		while (d->bucket[i]) {
			struct inode_rec *r = d->bucket[i];
			size_t h = key_hash(&r->key) & (n - 1);

			d->bucket[i] = r->next;
			r->next = b[h];
			b[h] = r;
		}
	}
	free(d->bucket);
	d->bucket = b;
	d->nbucket = n;
	return 0;
}

/* The record of k, made empty when there is none; NULL when out of
 * memory. */
static struct inode_rec *rec_get(snap_durable *d, const struct inode_key *k)
{
	struct inode_rec *r = rec_find(d, k);
	size_t h;

	if (r)
		return r;
	if (d->nrec >= d->nbucket && rec_grow(d) < 0)
		return NULL;
	if (!(r = calloc(1, sizeof(*r))))
		return NULL;
	r->key = *k;
	h = key_hash(k) & (d->nbucket - 1);
	r->next = d->bucket[h];
	d->bucket[h] = r;
	d->nrec++;
	return r;
}

/* --- syncs ------------------------------------------------------------ */

static int dent_cmp(const void *a, const void *b)
{
	return strcmp(((const struct dent *)a)->name,
		      ((const struct dent *)b)->name);
}

/* One name of the directory at buf (len bytes) into l; a name gone by
 * now, or not a directory, file or symlink, is left out. */
static int list_one(char buf[PATH_MAX], size_t len, const char *name,
		    struct listing *l, char *err, size_t errlen)
{
	size_t sub = snap__path_push(buf, len, name);
	struct dent *e;
	struct statx sx;
	int rc = 0;

	if (!sub)
		return snap__fail(err, errlen, FC_IO, "path too long: '%s/%s'",
				  buf, name);
	if (snap__stat(buf, &sx) < 0) {
		if (errno != ENOENT)
			rc = snap__fail(err, errlen, FC_IO, "cannot stat '%s': %s",
					buf, strerror(errno));
		goto out;
	}
	if (!S_ISDIR(sx.stx_mode) && !S_ISREG(sx.stx_mode) &&
	    !S_ISLNK(sx.stx_mode))
		goto out;
	if (array_grow((void **)&l->v, &l->cap, l->n, sizeof(*l->v), 16) < 0) {
		rc = snap__fail(err, errlen, FC_NOMEM, "out of memory");
		goto out;
	}
	e = memset(&l->v[l->n], 0, sizeof(*e));
	e->key = key_of(&sx);
	e->type = S_ISDIR(sx.stx_mode) ? 'd' : S_ISREG(sx.stx_mode) ? 'f' : 'l';
	e->mode = sx.stx_mode & 07777;
	if (e->type == 'l' && (rc = snap__read_target(buf, &e->target, err,
						      errlen)) < 0)
		goto out;
	if (!(e->name = strdup(name))) {
		free(e->target);
		rc = snap__fail(err, errlen, FC_NOMEM, "out of memory");
		goto out;
	}
	l->n++;
out:
	buf[len] = '\0';
	return rc;
}

/* The listing of the directory at buf (len bytes), sorted by name. */
static int read_listing(char buf[PATH_MAX], size_t len, struct listing *l,
			char *err, size_t errlen)
{
	struct snap_names nm;
	int rc = snap__read_names(buf, &nm, err, errlen);

	memset(l, 0, sizeof(*l));
	for (size_t i = 0; !rc && i < nm.n; i++)
		rc = list_one(buf, len, nm.v[i], l, err, errlen);
	snap__names_release(&nm);
	if (rc)
		listing_release(l);
	else if (l->n)
		qsort(l->v, l->n, sizeof(*l->v), dent_cmp);
	return rc;
}

/* The directory at buf (len bytes; sx its statx) was synced. */
static int sync_dir(snap_durable *d, char buf[PATH_MAX], size_t len,
		    const struct statx *sx, char *err, size_t errlen)
{
	struct inode_key k = key_of(sx);
	struct inode_rec *r;
	struct listing l;
	int rc = read_listing(buf, len, &l, err, errlen);

	if (rc)
		return rc;
	if (!(r = rec_get(d, &k))) {
		listing_release(&l);
		return snap__fail(err, errlen, FC_NOMEM, "out of memory");
	}
	listing_release(&r->listing);
	r->listing = l;
	r->has_listing = true;
	return 0;
}

/* The regular file at path (sx its statx) was synced. */
static int sync_file(snap_durable *d, const char *path,
		     const struct statx *sx, char *err, size_t errlen)
{
	struct inode_key k = key_of(sx);
	char hex[SNAP_DIGEST_HEX + 1];
	struct inode_rec *r;
	int rc = snap__store_file(d->st, path, sx, hex, err, errlen);

	if (rc)
		return rc;
	if (!(r = rec_get(d, &k)))
		return snap__fail(err, errlen, FC_NOMEM, "out of memory");
	memcpy(r->object, hex, sizeof(hex));
	r->mode = sx->stx_mode & 07777;
	r->has_content = true;
	return 0;
}

/* Everything below and including the directory at buf (len bytes, sx its
 * statx) was synced: its listing, then what the listing names. */
static int sync_tree(snap_durable *d, char buf[PATH_MAX], size_t len,
		     const struct statx *sx, char *err, size_t errlen)
{
	struct inode_key k = key_of(sx);
	const struct inode_rec *r;
	int rc = sync_dir(d, buf, len, sx, err, errlen);

	if (rc)
		return rc;
	r = rec_find(d, &k);
	for (size_t i = 0; !rc && i < r->listing.n; i++) {
		const struct dent *e = &r->listing.v[i];
		size_t sub = snap__path_push(buf, len, e->name);
		struct statx csx;

		/* r's listing is not touched below: a directory is not in
		 * itself, and a name gone since it was listed is skipped */
		if (e->type != 'l' && snap__stat(buf, &csx) == 0) {
			if (e->type == 'd' && S_ISDIR(csx.stx_mode))
				rc = sync_tree(d, buf, sub, &csx, err, errlen);
			else if (e->type == 'f' && S_ISREG(csx.stx_mode))
				rc = sync_file(d, buf, &csx, err, errlen);
		}
		buf[len] = '\0';
	}
	return rc;
}

/* An empty model of the existing directory dir (its root's statx in
 * *sx), or NULL with *rc and err set. */
static snap_durable *durable_of(snap_store *st, const char *dir,
				struct statx *sx, int *rc, char *err,
				size_t errlen)
{
	snap_durable *d = calloc(1, sizeof(*d));

	if (!d) {
		*rc = snap__fail(err, errlen, FC_NOMEM, "out of memory");
		return NULL;
	}
	d->st = st;
	if (!(d->rootlen = snap__resolve_dir(dir, d->root, err, errlen))) {
		*rc = FC_IO;
		free(d);
		return NULL;
	}
	if (snap__stat(d->root, sx) < 0) {
		*rc = snap__fail(err, errlen, FC_IO, "cannot stat '%s': %s",
				 d->root, strerror(errno));
		free(d);
		return NULL;
	}
	d->root_key = key_of(sx);
	return d;
}

int snap_durable_new(snap_store *st, const char *dir, snap_durable **out,
		     char *err, size_t errlen)
{
	struct statx sx;
	int rc = 0;
	snap_durable *d = durable_of(st, dir, &sx, &rc, err, errlen);

	*out = NULL;
	if (!d)
		return rc;
	if ((rc = sync_tree(d, d->root, d->rootlen, &sx, err, errlen)) < 0) {
		snap_durable_free(d);
		return rc;
	}
	*out = d;
	return 0;
}

void snap_durable_free(snap_durable *d)
{
	if (!d)
		return;
	for (size_t i = 0; i < d->nbucket; i++) {
		while (d->bucket[i]) {
			struct inode_rec *r = d->bucket[i];

			d->bucket[i] = r->next;
			listing_release(&r->listing);
			free(r);
		}
	}
	free(d->bucket);
	free(d);
}

/* Whether path is d's root or below it, and not an excluded name. */
static bool tracked(const snap_durable *d, const char *path)
{
	size_t len = strlen(path), sl = strlen(DELETED_SUFFIX);
	const char *base = strrchr(path, '/');

	if (len >= PATH_MAX || (len >= sl && !strcmp(path + len - sl,
						      DELETED_SUFFIX)))
		return false;
	if (strncmp(path, d->root, d->rootlen) != 0 ||
	    (path[d->rootlen] != '/' && path[d->rootlen] != '\0'))
		return false;
	return len == d->rootlen || !snap__excluded(base + 1);
}

int snap_durable_synced(snap_durable *d, const char *path, char *err,
			size_t errlen)
{
	char buf[PATH_MAX];
	struct statx sx;
	size_t len;
	int rc;

	if (!tracked(d, path))
		return 0;
	len = strlen(path);
	memcpy(buf, path, len + 1);
	while (len > d->rootlen && buf[len - 1] == '/')
		buf[--len] = '\0';
	if (snap__stat(buf, &sx) < 0)
		return errno == ENOENT || errno == ENOTDIR ? 0
		     : snap__fail(err, errlen, FC_IO, "cannot stat '%s': %s", buf,
				  strerror(errno));
	if (S_ISDIR(sx.stx_mode))
		return sync_dir(d, buf, len, &sx, err, errlen);
	if (!S_ISREG(sx.stx_mode))
		return 0;
	rc = sync_file(d, buf, &sx, err, errlen);
	/* gone between the stat and the read: as if it had been gone */
	if (rc == FC_IO && snap__stat(buf, &sx) < 0 && errno == ENOENT)
		rc = 0;
	return rc;
}

int snap_durable_synced_all(snap_durable *d, char *err, size_t errlen)
{
	char buf[PATH_MAX];
	struct statx sx;

	memcpy(buf, d->root, d->rootlen + 1);
	if (snap__stat(buf, &sx) < 0)
		return snap__fail(err, errlen, FC_IO, "cannot stat '%s': %s", buf,
				  strerror(errno));
	return sync_tree(d, buf, d->rootlen, &sx, err, errlen);
}

/* --- the power state -------------------------------------------------- */

/* p->rel (len bytes) + name, "name" at the top. */
static size_t rel_push(struct power *p, size_t len, const char *name)
{
	size_t n = strlen(name), at = len ? len + 1 : 0;

	if (at + n >= PATH_MAX)
		return 0;
	if (len)
		p->rel[len] = '/';
	memcpy(p->rel + at, name, n + 1);
	return at + n;
}

/* The durable file e names (e->type 'f') into p's manifest at p->rel. */
static int power_file(struct power *p, const struct dent *e)
{
	const struct inode_rec *r = rec_find(p->d, &e->key);
	bool synced = r && r->has_content;
	int rc;

	if (!synced && !p->empty[0] &&
	    (rc = snap__store_bytes(p->d->st, "", 0, p->empty, p->err,
				    p->errlen)) < 0)
		return rc;
	if (snap__manifest_add(&p->m, p->rel, 'f', synced ? r->mode : e->mode,
			       synced ? r->object : p->empty, NULL) < 0)
		return snap__fail(p->err, p->errlen, FC_NOMEM, "out of memory");
	return 0;
}

/* What the durable listing of directory k names, below p->rel (len
 * bytes; 0 at the top). */
static int power_dir(struct power *p, const struct inode_key *k, size_t len)
{
	const struct inode_rec *r = rec_find(p->d, k);
	int rc = 0;

	if (!r || !r->has_listing)
		return 0; /* named by its parent, never listed: empty */
	for (size_t i = 0; !rc && i < r->listing.n; i++) {
		const struct dent *e = &r->listing.v[i];
		size_t sub = rel_push(p, len, e->name);
		struct inode_rec *child;

		if (!sub) {
			rc = snap__fail(p->err, p->errlen, FC_IO,
					"path too long: '%s/%s'", p->rel, e->name);
			break;
		}
		if (e->type == 'f') {
			rc = power_file(p, e);
		} else if (e->type == 'l') {
			if (snap__manifest_add(&p->m, p->rel, 'l', 0, NULL,
					       e->target) < 0)
				rc = snap__fail(p->err, p->errlen, FC_NOMEM,
						"out of memory");
		} else if (!(child = rec_get(p->d, &e->key))) {
			rc = snap__fail(p->err, p->errlen, FC_NOMEM, "out of memory");
		} else if (child->visit != p->d->visit) {
			child->visit = p->d->visit;
			if (snap__manifest_add(&p->m, p->rel, 'd', 0, NULL, NULL) < 0)
				rc = snap__fail(p->err, p->errlen, FC_NOMEM,
						"out of memory");
			else
				rc = power_dir(p, &e->key, sub);
		}
		p->rel[len] = '\0';
	}
	return rc;
}

int snap_take_power(snap_durable *d, char digest[SNAP_DIGEST_HEX + 1],
		    char *err, size_t errlen)
{
	struct power p = { .d = d, .err = err, .errlen = errlen };
	struct inode_rec *root = rec_get(d, &d->root_key);
	int rc;

	if (!root)
		return snap__fail(err, errlen, FC_NOMEM, "out of memory");
	root->visit = ++d->visit;
	rc = power_dir(&p, &d->root_key, 0);
	if (!rc)
		rc = snap__manifest_commit(d->st, &p.m, digest, err, errlen);
	snap__manifest_release(&p.m);
	return rc;
}

/* --- the model, taken and restored ------------------------------------- */

/* Where an inode is now: its path under the root ("." for the root). */
struct placed {
	struct inode_key key;
	char *path;
};

struct places {
	struct placed *v;
	size_t n, cap;
};

static int key_cmp(const struct inode_key *a, const struct inode_key *b)
{
	if (a->dev != b->dev)
		return a->dev < b->dev ? -1 : 1;
	if (a->ino != b->ino)
		return a->ino < b->ino ? -1 : 1;
	if (a->btime_sec != b->btime_sec)
		return a->btime_sec < b->btime_sec ? -1 : 1;
	return a->btime_nsec < b->btime_nsec ? -1 : a->btime_nsec > b->btime_nsec;
}

static int placed_cmp(const void *a, const void *b)
{
	return key_cmp(&((const struct placed *)a)->key,
		       &((const struct placed *)b)->key);
}

static int placed_path_cmp(const void *a, const void *b)
{
	return strcmp(((const struct placed *)a)->path,
		      ((const struct placed *)b)->path);
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int place(struct places *pl, struct inode_key key, const char *rel)
{
	struct placed *p;

	if (array_grow((void **)&pl->v, &pl->cap, pl->n, sizeof(*pl->v), 64))
		return FC_NOMEM;
	p = &pl->v[pl->n];
	p->key = key;
	if (!(p->path = strdup(*rel ? rel : ".")))
		return FC_NOMEM;
	pl->n++;
	return 0;
}

/* Every inode of the tree at buf (len bytes; rel its path under the
 * root, "" at the top), depth first in name order, into pl. */
static int walk_places(char buf[PATH_MAX], size_t len, char rel[PATH_MAX],
		       size_t rlen, struct places *pl, char *err, size_t errlen)
{
	struct snap_names nm;
	int rc = snap__read_names(buf, &nm, err, errlen);

	if (!rc && nm.n)
		qsort(nm.v, nm.n, sizeof(*nm.v), name_cmp);
	for (size_t i = 0; !rc && i < nm.n; i++) {
		size_t sub = snap__path_push(buf, len, nm.v[i]), rsub;
		struct statx sx;

		rsub = rlen ? snap__path_push(rel, rlen, nm.v[i]) :
		       (size_t)snprintf(rel, PATH_MAX, "%s", nm.v[i]);
		if (!sub || !rsub || rsub >= PATH_MAX)
			rc = snap__fail(err, errlen, FC_IO, "path too long: '%s/%s'",
					buf, nm.v[i]);
		else if (snap__stat(buf, &sx) == 0 &&
			 (S_ISDIR(sx.stx_mode) || S_ISREG(sx.stx_mode) ||
			  S_ISLNK(sx.stx_mode))) {
			rc = place(pl, key_of(&sx), rel);
			if (!rc && S_ISDIR(sx.stx_mode))
				rc = walk_places(buf, sub, rel, rsub, pl, err,
						 errlen);
		}
		buf[len] = '\0';
		rel[rlen] = '\0';
	}
	snap__names_release(&nm);
	if (rc == FC_NOMEM)
		snap__fail(err, errlen, FC_NOMEM, "out of memory");
	return rc;
}

/* Every inode of d's tree now, the root as "." first.  FC_IO, FC_NOMEM
 * (err set); pl is the caller's to release either way. */
static int places_of(const snap_durable *d, struct places *pl, char *err,
		     size_t errlen)
{
	char buf[PATH_MAX], rel[PATH_MAX] = "";
	int rc = place(pl, d->root_key, "");

	if (rc)
		return snap__fail(err, errlen, FC_NOMEM, "out of memory");
	memcpy(buf, d->root, d->rootlen + 1);
	return walk_places(buf, d->rootlen, rel, 0, pl, err, errlen);
}

static void places_release(struct places *pl)
{
	for (size_t i = 0; i < pl->n; i++)
		free(pl->v[i].path);
	free(pl->v);
}

/* The model's text being written: records in the order first met, each
 * inode named by its path now, else by "#N" in the order first met. */
struct model_text {
	snap_durable *d;
	const struct places *pl;
	struct inode_key *syn;     /* inodes named "#N": N is the index */
	size_t nsyn, capsyn;
	struct inode_rec **queue;  /* records to write, in order */
	size_t nq, capq;
	json_t *out;
};

static const char *placed_path(const struct places *pl,
			       const struct inode_key *k)
{
	struct placed key = { .key = *k };
	const struct placed *p = pl->n ? bsearch(&key, pl->v, pl->n,
						 sizeof(*pl->v), placed_cmp)
				       : NULL;

	return p ? p->path : NULL;
}

/* k's name into out (a path, or "#N"); queues its record the first time.
 * FC_NOMEM. */
static int name_of(struct model_text *t, const struct inode_key *k,
		   char out[PATH_MAX])
{
	const char *path = placed_path(t->pl, k);
	struct inode_rec *r = rec_find(t->d, k);
	size_t i;

	if (path) {
		snprintf(out, PATH_MAX, "%s", path);
	} else {
		for (i = 0; i < t->nsyn && !key_equal(&t->syn[i], k); i++)
			;
		if (i == t->nsyn) {
			if (array_grow((void **)&t->syn, &t->capsyn, t->nsyn,
				       sizeof(*t->syn), 16))
				return FC_NOMEM;
			t->syn[t->nsyn++] = *k;
		}
		snprintf(out, PATH_MAX, "#%zu", i);
	}
	if (r && (r->has_content || r->has_listing) &&
	    r->visit != t->d->visit) {
		r->visit = t->d->visit;
		if (array_grow((void **)&t->queue, &t->capq, t->nq,
			       sizeof(*t->queue), 64))
			return FC_NOMEM;
		t->queue[t->nq++] = r;
	}
	return 0;
}

/* Record r as [name, object or null, mode, listing or null].  FC_NOMEM,
 * or FC_CORRUPT for a name that is not UTF-8 (JSON cannot hold it). */
static int write_record(struct model_text *t, const struct inode_rec *r)
{
	char name[PATH_MAX], child[PATH_MAX];
	json_t *listing = r->has_listing ? json_array() : json_null(), *rec;
	int rc = listing ? name_of(t, &r->key, name) : FC_NOMEM;

	for (size_t i = 0; !rc && r->has_listing && i < r->listing.n; i++) {
		const struct dent *e = &r->listing.v[i];
		json_t *j;

		if ((rc = name_of(t, &e->key, child)))
			break;
		j = json_pack("[s, s, s#, I, s?]", e->name, child, &e->type,
			      (size_t)1, (json_int_t)e->mode, e->target);
		if (!j || json_array_append_new(listing, j))
			rc = FC_CORRUPT;
	}
	rec = rc ? NULL : json_pack("[s, s?, I, O]", name, r->has_content ?
				    r->object : NULL, (json_int_t)(r->has_content ?
				    r->mode : 0), listing);
	json_decref(listing);
	if (rc)
		return rc;
	if (!rec)
		return FC_CORRUPT;
	return json_array_append_new(t->out, rec) ? FC_NOMEM : 0;
}

int snap_take_model(snap_durable *d, char digest[SNAP_DIGEST_HEX + 1],
		    char *err, size_t errlen)
{
	struct places pl = { 0 };
	struct model_text t = { .d = d, .pl = &pl, .out = json_array() };
	char name[PATH_MAX], *text = NULL;
	int rc = t.out ? places_of(d, &pl, err, errlen) : FC_NOMEM;

	/* by inode, for placed_path(); an inode with two names (a hard
	 * link) has no model: a restored tree has no links */
	if (!rc && pl.n) {
		qsort(pl.v, pl.n, sizeof(*pl.v), placed_cmp);
		for (size_t i = 1; i < pl.n && !rc; i++)
			if (key_equal(&pl.v[i - 1].key, &pl.v[i].key))
				rc = snap__fail(err, errlen, FC_CORRUPT, "'%s' and "
						"'%s' are one file (a hard link): the "
						"power model is not taken",
						pl.v[i - 1].path, pl.v[i].path);
	}
	/* the records of the inodes there now, in path order, then what
	 * their listings name, in the order met */
	d->visit++;
	if (!rc) {
		struct placed *byp = pl.n ? malloc(pl.n * sizeof(*byp)) : NULL;
		if (pl.n && !byp)
			rc = FC_NOMEM;
		if (byp) {
			memcpy(byp, pl.v, pl.n * sizeof(*byp));
			qsort(byp, pl.n, sizeof(*byp), placed_path_cmp);
		}
		for (size_t i = 0; !rc && i < pl.n; i++)
			rc = name_of(&t, &byp[i].key, name);
		free(byp);
	}
	for (size_t i = 0; !rc && i < t.nq; i++)
		if ((rc = write_record(&t, t.queue[i])) == FC_CORRUPT)
			snap__fail(err, errlen, FC_CORRUPT, "a name under '%s' is "
				   "not UTF-8: the power model is not taken",
				   d->root);
	if (!rc && !(text = json_dumps(t.out, JSON_COMPACT)))
		rc = FC_NOMEM;
	if (!rc)
		rc = snap__store_bytes(d->st, text, strlen(text), digest, err,
				       errlen);
	else if (rc == FC_NOMEM)
		snap__fail(err, errlen, FC_NOMEM, "out of memory");
	free(text);
	json_decref(t.out);
	free(t.syn);
	free(t.queue);
	places_release(&pl);
	return rc;
}

/* The key of an inode named `name` in a model over the tree pl (sorted by
 * path): its key there, or for "#N" one no file has.  false when the name
 * is neither. */
static bool key_named(const struct places *pl, const char *name,
		      struct inode_key *out)
{
	struct placed key = { .path = (char *)name };
	const struct placed *p;
	unsigned long long n;
	char *end;

	if (name[0] == '#') {
		errno = 0;
		n = strtoull(name + 1, &end, 10);
		if (errno || end == name + 1 || *end)
			return false;
		*out = (struct inode_key){ .dev = UINT64_MAX, .ino = n,
					   .btime_sec = -1 };
		return true;
	}
	p = pl->n ? bsearch(&key, pl->v, pl->n, sizeof(*pl->v),
			    placed_path_cmp) : NULL;
	if (p)
		*out = p->key;
	return p != NULL;
}

/* One record of a model's text into d.  FC_CORRUPT, FC_NOMEM. */
static int restore_record(snap_durable *d, const struct places *pl,
			  json_t *j)
{
	const char *name, *object;
	json_int_t mode;
	json_t *obj, *listing, *e;
	struct inode_key k;
	struct inode_rec *r;
	size_t i;

	/* json_unpack() has no "string or null": those come as "o" */
	if (json_unpack(j, "[s, o, I, o]", &name, &obj, &mode, &listing) ||
	    !(json_is_string(obj) || json_is_null(obj)) ||
	    !key_named(pl, name, &k))
		return FC_CORRUPT;
	object = json_string_value(obj);
	if ((object && strlen(object) != SNAP_DIGEST_HEX) ||
	    mode < 0 || mode > 07777 ||
	    !(json_is_array(listing) || json_is_null(listing)))
		return FC_CORRUPT;
	if (!(r = rec_get(d, &k)))
		return FC_NOMEM;
	if (object) {
		memcpy(r->object, object, SNAP_DIGEST_HEX + 1);
		r->mode = (unsigned)mode;
		r->has_content = true;
	}
	if (json_is_null(listing))
		return 0;
	r->has_listing = true;
	json_array_foreach(listing, i, e) {
		const char *dn, *child, *type, *target;
		json_int_t dm;
		json_t *tj;
		struct dent *de;

		if (json_unpack(e, "[s, s, s, I, o]", &dn, &child, &type, &dm,
				&tj) || strlen(type) != 1 ||
		    !strchr("dfl", type[0]) || dm < 0 || dm > 07777 ||
		    !(json_is_string(tj) || json_is_null(tj)))
			return FC_CORRUPT;
		target = json_string_value(tj);
		if (array_grow((void **)&r->listing.v, &r->listing.cap,
			       r->listing.n, sizeof(*r->listing.v), 16))
			return FC_NOMEM;
		de = memset(&r->listing.v[r->listing.n], 0, sizeof(*de));
		if (!key_named(pl, child, &de->key))
			return FC_CORRUPT;
		de->type = type[0];
		de->mode = (unsigned)dm;
		if (!(de->name = strdup(dn)) ||
		    (target && !(de->target = strdup(target)))) {
			free(de->name);
			return FC_NOMEM;
		}
		r->listing.n++;
	}
	return 0;
}

int snap_durable_restore(snap_store *st, const char *dir, const char *model,
			 snap_durable **out, char *err, size_t errlen)
{
	struct places pl = { 0 };
	char *text = NULL;
	struct statx sx;
	json_t *root = NULL, *j;
	json_error_t jerr;
	size_t len, i;
	int rc = 0;
	snap_durable *d = durable_of(st, dir, &sx, &rc, err, errlen);

	*out = NULL;
	if (!d)
		return rc;
	rc = snap__load_bytes(st, model, SNAP_MODEL_MAX, &text, &len, err,
			      errlen);
	if (!rc)
		rc = places_of(d, &pl, err, errlen);
	if (!rc && pl.n)
		qsort(pl.v, pl.n, sizeof(*pl.v), placed_path_cmp);
	if (!rc) {
		root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
		rc = json_is_array(root) ? 0 : FC_CORRUPT;
		json_array_foreach(rc ? NULL : root, i, j)
			if ((rc = restore_record(d, &pl, j)))
				break;
		if (rc == FC_CORRUPT)
			snap__fail(err, errlen, FC_CORRUPT, "power model '%s' does "
				   "not fit the tree under '%s'", model, d->root);
		else if (rc == FC_NOMEM)
			snap__fail(err, errlen, FC_NOMEM, "out of memory");
	}
	json_decref(root);
	free(text);
	places_release(&pl);
	if (rc) {
		snap_durable_free(d);
		return rc;
	}
	*out = d;
	return 0;
}
