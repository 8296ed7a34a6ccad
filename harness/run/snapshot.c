/*
 * snapshot.c -- the snapshot store: objects, manifests and the digest
 * cache; snap_take() and snap_restore() (snapshot.h).
 *
 * Why it reads the way it does:
 *   - A file is read once: its bytes go through the hash into a temporary
 *     object file, which is renamed to objects/<hex> or, when another
 *     snapshot already stored that content, unlinked.  Knowing the name
 *     first would take a second read of every new file.
 *   - Names are collected per directory and the directory closed before
 *     anything below it is opened, so a deep tree costs no descriptor per
 *     level; the whole manifest is sorted once, by path, when it is
 *     committed, which puts every parent before what it holds.
 *   - Restore prunes first (depth first: what the state lacks goes), then
 *     creates in manifest order.  A file that is there is replaced by one
 *     renamed into place, so a process holding the old file open keeps
 *     the old bytes; one that is not (a fresh schedule's directory) is
 *     written where it goes, since nobody can hold it.  What it writes it
 *     also puts in the cache, so the take that usually follows a restore
 *     does not read the files back.
 *   - A manifest is read, parsed and checked against its name once per
 *     store handle; the checked entries stay in memory, where nothing a
 *     route does can reach them (the last SNAP_MANIFESTS_KEPT manifests,
 *     up to SNAP_KEPT_ENTRIES entries in all; a bigger one is not kept).
 *   - The cache is keyed by absolute path and trusted only under the
 *     racily-clean rule of snapshot.h (invariant 5); the clock it compares
 *     with is the coarse one the kernel stamps files with.
 *   - What a route can write is read as hostile: a schedule's files, and
 *     the store's own objects and manifests too (a route might reach the
 *     store in a weaker containment).  Each is opened with
 *     fs_open_untrusted() -- no symlink on the path (the schedule dir and
 *     the store's directories are resolved once, so only what lies below
 *     them is checked), never blocking, a regular file only, manifests
 *     bounded (SNAP_MANIFEST_MAX) -- and a take records a FIFO, device or
 *     socket as nothing, never opening it.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "common/array.h"
#include "common/fsutil.h"
#include "common/put.h"
#include "journal/identity.h"
#include "harness/run/snapshot_impl.h"

#define SNAP_FORMAT "fencecert-snapshot/1"
#define SNAP_COPY_BUF (64 * 1024)
#define SNAP_FIRST_BUCKETS 1024
#define SNAP_TMP_PREFIX ".snap-tmp-"
#define SNAP_HASH_PREFIX 7 /* "sha256:" of identity_hash_final() */
#define SNAP_KEPT_ENTRIES 65536 /* their entries in all, at most */
#define SNAP_MANIFEST_MAX (64L * 1024 * 1024) /* bytes of one manifest */

/* A manifest as restore checked it, by state digest. */
struct kept_manifest {
	char digest[SNAP_DIGEST_HEX + 1];
	struct snap_manifest m;
};

/* What the store remembers of one file it hashed. */
struct cache_ent {
	struct cache_ent *next;
	uint64_t ino, size;
	struct statx_timestamp mtime, ctime;
	struct timespec hashed;    /* the coarse clock before it was read */
	char hex[SNAP_DIGEST_HEX + 1];
	char path[];
};

struct snap_store {
	char *objects;             /* ROOT/objects */
	char *states;              /* ROOT/states */
	struct cache_ent **bucket; /* by path; NULL until the first put */
	size_t nbucket, ncache;
	unsigned char *buf;        /* SNAP_COPY_BUF bytes, every copy's */
	unsigned tmp_seq;          /* names of temporary symlinks */
	unsigned long long max;    /* snap_store_limit(): 0, none */
	unsigned long long *used;  /* bytes of new objects, maybe shared */
	unsigned long long own_used;
	struct kept_manifest *kept; /* SNAP_MANIFESTS_KEPT, oldest first */
	size_t nkept, kept_entries;
};

int snap__fail(char *err, size_t errlen, int code, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return code;
}

bool snap__excluded(const char *name)
{
	size_t len = strlen(name);

	if (len > 8 && strncmp(name, "try-", 4) == 0 &&
	    (strcmp(name + len - 4, ".out") == 0 ||
	     strcmp(name + len - 4, ".err") == 0))
		return true;
	return len > 4 && strcmp(name + len - 4, "-shm") == 0;
}

int snap__stat(const char *path, struct statx *sx)
{
	return statx(AT_FDCWD, path, AT_SYMLINK_NOFOLLOW,
		     STATX_BASIC_STATS | STATX_BTIME, sx);
}

static struct timespec coarse_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME_COARSE, &ts);
	return ts;
}

static bool valid_hex(const char *s)
{
	size_t i;

	for (i = 0; i < SNAP_DIGEST_HEX; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return s[i] == '\0';
}

/* --- the digest cache ------------------------------------------------- */

static size_t path_hash(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ULL; /* FNV-1a */

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
	return (size_t)h;
}

static struct cache_ent *cache_find(const snap_store *st, const char *path)
{
	struct cache_ent *e;

	if (!st->bucket)
		return NULL;
	e = st->bucket[path_hash(path) & (st->nbucket - 1)];
	while (e && strcmp(e->path, path) != 0)
		e = e->next;
	return e;
}

static void cache_clear(snap_store *st)
{
	for (size_t i = 0; i < st->nbucket; i++) {
		while (st->bucket[i]) {
			struct cache_ent *e = st->bucket[i];

			st->bucket[i] = e->next;
			free(e);
		}
	}
	st->ncache = 0;
}

static bool ts_before(struct statx_timestamp a, struct timespec b)
{
	return a.tv_sec < b.tv_sec ||
	       (a.tv_sec == b.tv_sec && (long)a.tv_nsec < b.tv_nsec);
}

static bool ts_equal(struct statx_timestamp a, struct statx_timestamp b)
{
	return a.tv_sec == b.tv_sec && a.tv_nsec == b.tv_nsec;
}

/* The cached digest of the file at path, if it can be trusted
 * (snapshot.h, invariant 5). */
static const char *cache_lookup(const snap_store *st, const char *path,
				const struct statx *sx)
{
	const struct cache_ent *e = cache_find(st, path);

	if (!e || e->ino != sx->stx_ino || e->size != sx->stx_size ||
	    !ts_equal(e->mtime, sx->stx_mtime) ||
	    !ts_equal(e->ctime, sx->stx_ctime) || !ts_before(e->ctime, e->hashed))
		return NULL;
	return e->hex;
}

/* Double the buckets (or make the first); on failure the table stays. */
static void cache_grow(snap_store *st)
{
	size_t n = st->nbucket ? st->nbucket * 2 : SNAP_FIRST_BUCKETS;
	struct cache_ent **b = calloc(n, sizeof(*b));

	if (!b)
		return;
	for (size_t i = 0; i < st->nbucket; i++) {
		while (st->bucket[i]) {
			struct cache_ent *e = st->bucket[i];
			size_t h = path_hash(e->path) & (n - 1);

			st->bucket[i] = e->next;
			e->next = b[h];
			b[h] = e;
		}
	}
	free(st->bucket);
	st->bucket = b;
	st->nbucket = n;
}

/* Remember that the file at path, as sx describes it, held hex when the
 * coarse clock said `hashed`.  Only an optimization: out of memory, the
 * file is simply not remembered. */
static void cache_put(snap_store *st, const char *path, const struct statx *sx,
		      const char *hex, struct timespec hashed)
{
	struct cache_ent *e = cache_find(st, path);

	if (!e) {
		size_t len = strlen(path);

		if (st->ncache >= SNAP_CACHE_MAX)
			cache_clear(st);
		if (st->ncache >= st->nbucket)
			cache_grow(st);
		if (!st->bucket || !(e = malloc(sizeof(*e) + len + 1)))
			return;
		memcpy(e->path, path, len + 1);
		e->next = st->bucket[path_hash(path) & (st->nbucket - 1)];
		st->bucket[path_hash(path) & (st->nbucket - 1)] = e;
		st->ncache++;
	}
	e->ino = sx->stx_ino;
	e->size = sx->stx_size;
	e->mtime = sx->stx_mtime;
	e->ctime = sx->stx_ctime;
	e->hashed = hashed;
	memcpy(e->hex, hex, SNAP_DIGEST_HEX + 1);
}

/* --- the store -------------------------------------------------------- */

static char *join(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	char *s = malloc(la + lb + 2);

	if (s) {
		memcpy(s, a, la);
		s[la] = '/';
		memcpy(s + la + 1, b, lb + 1);
	}
	return s;
}

/* *path as realpath() has it, with no symlink left in it: what the
 * store opens below it is then checked for symlinks alone (a route's,
 * never the work dir's own).  -1 with errno. */
static int resolve(char **path)
{
	char *real = realpath(*path, NULL);

	if (!real)
		return -1;
	free(*path);
	*path = real;
	return 0;
}

int snap_store_open(const char *root, snap_store **out, char *err,
		    size_t errlen)
{
	snap_store *st = calloc(1, sizeof(*st));

	*out = NULL;
	if (!st || !(st->objects = join(root, "objects")) ||
	    !(st->states = join(root, "states")) ||
	    !(st->buf = malloc(SNAP_COPY_BUF))) {
		snap_store_close(st);
		return snap__fail(err, errlen, FC_NOMEM,
				  "out of memory opening snapshot store '%s'", root);
	}
	st->used = &st->own_used;
	if (fs_mkdirs(st->objects) < 0 || fs_mkdirs(st->states) < 0 ||
	    resolve(&st->objects) < 0 || resolve(&st->states) < 0) {
		int e = errno;

		snap_store_close(st);
		return snap__fail(err, errlen, e == ENOMEM ? FC_NOMEM : FC_IO,
				  "cannot create snapshot store '%s': %s", root,
				  strerror(e));
	}
	*out = st;
	return 0;
}

void snap_store_close(snap_store *st)
{
	if (!st)
		return;
	if (st->bucket)
		cache_clear(st);
	for (size_t i = 0; i < st->nkept; i++)
		snap__manifest_release(&st->kept[i].m);
	free(st->kept);
	free(st->bucket);
	free(st->buf);
	free(st->objects);
	free(st->states);
	free(st);
}

void snap_store_limit(snap_store *st, unsigned long long max_bytes,
		      unsigned long long *used)
{
	st->max = max_bytes;
	st->used = used ? used : &st->own_used;
}

int snap_store_remove(const char *root, unsigned long long *used, char *err,
		      size_t errlen)
{
	char *objects = join(root, "objects");
	unsigned long long bytes = 0, now;
	DIR *d = objects ? opendir(objects) : NULL;
	struct dirent *e;
	struct stat sb;

	if (!objects)
		return snap__fail(err, errlen, FC_NOMEM, "out of memory");
	/* the published objects: what snap_store_limit() counted */
	while (d && (e = readdir(d)))
		if (strlen(e->d_name) == SNAP_DIGEST_HEX &&
		    fstatat(dirfd(d), e->d_name, &sb, AT_SYMLINK_NOFOLLOW) == 0 &&
		    S_ISREG(sb.st_mode))
			bytes += (unsigned long long)sb.st_size;
	if (d)
		closedir(d);
	free(objects);
	if (fs_remove_tree(root))
		return snap__fail(err, errlen, FC_IO, "cannot remove the state "
				  "store '%s'", root);
	if (!used)
		return 0;
	now = __atomic_load_n(used, __ATOMIC_RELAXED);
	while (!__atomic_compare_exchange_n(used, &now, now > bytes ?
					    now - bytes : 0, false,
					    __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
	return 0;
}

/* May a new object of `size` bytes be written (snap_store_limit)? */
static int room_for(snap_store *st, unsigned long long size, char *err,
		    size_t errlen)
{
	unsigned long long used = __atomic_load_n(st->used, __ATOMIC_RELAXED);
	unsigned long long avail, keep;
	struct statvfs fs;

	if (st->max && used + size > st->max)
		return snap__fail(err, errlen, FC_NOSPACE, "the state store "
				  "holds %llu KiB of objects and would pass its "
				  "limit of %llu KiB with %llu more", used >> 10,
				  st->max >> 10, (size + 1023) >> 10);
	if (statvfs(st->objects, &fs) < 0)
		return 0; /* the write itself will say what is wrong */
	avail = (unsigned long long)fs.f_bavail * fs.f_frsize;
	keep = (unsigned long long)fs.f_blocks * fs.f_frsize / 10;
	if (keep < SNAP_FREE_KEEP_MIN)
		keep = SNAP_FREE_KEEP_MIN;
	if (keep > SNAP_FREE_KEEP_MAX)
		keep = SNAP_FREE_KEEP_MAX;
	if (avail < size || avail - size < keep)
		return snap__fail(err, errlen, FC_NOSPACE, "only %llu MiB are "
				  "free on the file system of '%s', which keeps "
				  "%llu MiB free", avail >> 20, st->objects,
				  keep >> 20);
	return 0;
}

/* A new temporary file in dir; its name into tmp.  -1 with errno. */
static int make_temp(const char *dir, char tmp[PATH_MAX])
{
	if ((size_t)snprintf(tmp, PATH_MAX, "%s/" SNAP_TMP_PREFIX "XXXXXX",
			     dir) >= PATH_MAX) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return mkostemp(tmp, O_CLOEXEC);
}

/* Rename tmp to final unless final is already there (same name, same
 * bytes: the store is content-addressed).  1 when it is new, 0 when it
 * was there, -1 with errno; tmp is gone either way. */
static int publish(const char *tmp, const char *final)
{
	int e;

	if (access(final, F_OK) == 0) {
		unlink(tmp);
		return 0;
	}
	if (rename(tmp, final) == 0)
		return 1;
	e = errno;
	unlink(tmp);
	errno = e;
	return -1;
}

/* Copy fd (or, when fd < 0, len bytes of buf) into out, hashing on the
 * way.  -1 with errno on a failed read or write. */
static int copy_hashed(snap_store *st, int fd, const void *buf, size_t len,
		       int out, struct identity_hash *h)
{
	ssize_t n;

	if (fd < 0) {
		identity_hash_update(h, buf, len);
		return fs_write_all(out, buf, len) < 0 ? -1 : 0;
	}
	for (;;) {
		n = read(fd, st->buf, SNAP_COPY_BUF);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -1 : 0;
		identity_hash_update(h, st->buf, (size_t)n);
		if (fs_write_all(out, st->buf, (size_t)n) < 0)
			return -1;
	}
}

/* Store the bytes of fd (read to its end), or of buf when fd < 0, as an
 * object; `what` names the source in a message. */
static int store_stream(snap_store *st, int fd, const void *buf, size_t len,
			const char *what, char hex[SNAP_DIGEST_HEX + 1],
			char *err, size_t errlen)
{
	char tmp[PATH_MAX], final[PATH_MAX], full[IDENTITY_DIGEST_LEN + 1];
	struct identity_hash *h;
	struct stat in;
	unsigned long long size = len;
	int out, rc, e;

	if (fd >= 0 && fstat(fd, &in) == 0)
		size = (unsigned long long)in.st_size;
	if ((rc = room_for(st, size, err, errlen)))
		return rc;
	if ((out = make_temp(st->objects, tmp)) < 0)
		return snap__fail(err, errlen, FC_IO,
				  "cannot create an object in '%s': %s",
				  st->objects, strerror(errno));
	if (!(h = identity_hash_new())) {
		close(out);
		unlink(tmp);
		return snap__fail(err, errlen, FC_NOMEM,
				  "out of memory storing '%s'", what);
	}
	rc = copy_hashed(st, fd, buf, len, out, h);
	e = errno;
	identity_hash_final(h, full);
	if (rc == 0 && fchmod(out, 0444) < 0)
		rc = -1, e = errno;
	if (close(out) < 0 && rc == 0)
		rc = -1, e = errno;
	if (rc < 0) {
		unlink(tmp);
		return snap__fail(err, errlen, FC_IO, "cannot store '%s': %s",
				  what, strerror(e));
	}
	memcpy(hex, full + SNAP_HASH_PREFIX, SNAP_DIGEST_HEX + 1);
	put(final, sizeof(final), "%s/%s", st->objects, hex);
	rc = publish(tmp, final);
	if (rc < 0)
		return snap__fail(err, errlen, FC_IO, "cannot store object '%s': %s",
				  final, strerror(errno));
	if (rc > 0)
		__atomic_add_fetch(st->used, size, __ATOMIC_RELAXED);
	return 0;
}

int snap__store_bytes(snap_store *st, const void *buf, size_t len,
		      char hex[SNAP_DIGEST_HEX + 1], char *err, size_t errlen)
{
	return store_stream(st, -1, buf, len, "a buffer", hex, err, errlen);
}

int snap__load_bytes(snap_store *st, const char *hex, size_t max, char **out,
		     size_t *len, char *err, size_t errlen)
{
	char path[PATH_MAX], full[IDENTITY_DIGEST_LEN + 1];
	int fd, rc;

	*out = NULL;
	if (!valid_hex(hex))
		return snap__fail(err, errlen, FC_USAGE, "bad object name '%s'", hex);
	put(path, sizeof(path), "%s/%s", st->objects, hex);
	/* a FIFO or a link planted as the object: refused, at once */
	if ((fd = fs_open_untrusted(path, max)) < 0)
		return snap__fail(err, errlen, errno == ENOENT ? FC_USAGE : FC_IO,
				  "no object '%s' in the store: %s", hex,
				  errno == EINVAL ? "not a regular file" :
				  errno == EFBIG ? "too large" : strerror(errno));
	rc = fs_read_all(fd, 4096, max, out, len);
	close(fd);
	if (rc)
		return snap__fail(err, errlen, rc == FC_NOMEM ? FC_NOMEM : FC_IO,
				  "cannot read object '%s'", path);
	identity_buffer_digest(*out, *len, full);
	if (strcmp(full + SNAP_HASH_PREFIX, hex) != 0) {
		free(*out);
		*out = NULL;
		return snap__fail(err, errlen, FC_CORRUPT, "object '%s' does not "
				  "hold the bytes it is named after (the state "
				  "store was changed)", path);
	}
	return 0;
}

int snap__store_file(snap_store *st, const char *abs, const struct statx *sx,
		     char hex[SNAP_DIGEST_HEX + 1], char *err, size_t errlen)
{
	const char *cached = cache_lookup(st, abs, sx);
	struct timespec hashed;
	struct stat fs;
	int fd, rc;

	if (cached) {
		memcpy(hex, cached, SNAP_DIGEST_HEX + 1);
		return 0;
	}
	hashed = coarse_now();
	/* a FIFO put in the file's place must not hang us, a directory
	 * swapped for a link on the way must not lead out (abs lies below
	 * the resolved schedule dir) */
	fd = fs_open_untrusted(abs, 0);
	if (fd < 0 && errno == EINVAL)
		return snap__fail(err, errlen, FC_IO,
				  "'%s' was replaced while it was read", abs);
	if (fd < 0)
		return snap__fail(err, errlen, FC_IO, "cannot open '%s': %s", abs,
				  strerror(errno));
	if (fstat(fd, &fs) < 0 || !S_ISREG(fs.st_mode) ||
	    fs.st_ino != sx->stx_ino) {
		close(fd);
		return snap__fail(err, errlen, FC_IO,
				  "'%s' was replaced while it was read", abs);
	}
	rc = store_stream(st, fd, NULL, 0, abs, hex, err, errlen);
	close(fd);
	if (rc == 0)
		cache_put(st, abs, sx, hex, hashed);
	return rc;
}

/* --- manifests -------------------------------------------------------- */

static bool needs_escape(unsigned char c)
{
	return c < 0x20 || c >= 0x7f || c == '%';
}

/* s percent-encoded (snapshot.h), malloc'd; NULL when out of memory. */
static char *pct_encode(const char *s)
{
	static const char hexd[] = "0123456789ABCDEF";
	size_t n = 0;
	char *out, *o;

	for (const char *p = s; *p; p++)
		n += needs_escape((unsigned char)*p) ? 3 : 1;
	if (!(out = o = malloc(n + 1)))
		return NULL;
	for (const unsigned char *p = (const void *)s; *p; p++) {
		if (needs_escape(*p)) {
			*o++ = '%';
			*o++ = hexd[*p >> 4];
			*o++ = hexd[*p & 15];
		} else {
			*o++ = (char)*p;
		}
	}
	*o = '\0';
	return out;
}

static int hex_val(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	return c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* Decode s into *out (malloc'd).  FC_CORRUPT unless s is exactly what
 * pct_encode() makes of some NUL-free string; FC_NOMEM. */
static int pct_decode(const char *s, char **out)
{
	char *o = *out = malloc(strlen(s) + 1);

	if (!o)
		return FC_NOMEM;
	for (; *s; s++) {
		int hi, lo;

		if (*s != '%') {
			if (needs_escape((unsigned char)*s))
				goto bad;
			*o++ = *s;
			continue;
		}
		if ((hi = hex_val(s[1])) < 0 || (lo = hex_val(s[2])) < 0 ||
		    (hi == 0 && lo == 0) ||
		    !needs_escape((unsigned char)(hi << 4 | lo)))
			goto bad;
		*o++ = (char)(hi << 4 | lo);
		s += 2;
	}
	*o = '\0';
	return 0;
bad:
	free(*out);
	*out = NULL;
	return FC_CORRUPT;
}

int snap__manifest_add(struct snap_manifest *m, const char *path, char type,
		       unsigned mode, const char *object, const char *target)
{
	struct snap_entry *e;

	if (array_grow((void **)&m->v, &m->cap, m->n, sizeof(*m->v), 64) < 0)
		return FC_NOMEM;
	e = &m->v[m->n];
	memset(e, 0, sizeof(*e));
	e->type = type;
	e->mode = mode;
	if (object)
		memcpy(e->object, object, SNAP_DIGEST_HEX + 1);
	if (!(e->path = strdup(path)) || (target && !(e->target = strdup(target)))) {
		free(e->path);
		return FC_NOMEM;
	}
	m->n++;
	return 0;
}

void snap__manifest_release(struct snap_manifest *m)
{
	for (size_t i = 0; i < m->n; i++) {
		free(m->v[i].path);
		free(m->v[i].target);
	}
	free(m->v);
	memset(m, 0, sizeof(*m));
}

static int entry_cmp(const void *a, const void *b)
{
	return strcmp(((const struct snap_entry *)a)->path,
		      ((const struct snap_entry *)b)->path);
}

/* The JSON of one entry; NULL when out of memory. */
static json_t *entry_json(const struct snap_entry *e)
{
	char *path = pct_encode(e->path), *target = NULL;
	json_t *j = NULL;

	if (!path)
		return NULL;
	if (e->type == 'd')
		j = json_pack("{s:s, s:s}", "path", path, "type", "dir");
	else if (e->type == 'f')
		j = json_pack("{s:I, s:s, s:s, s:s}", "mode", (json_int_t)e->mode,
			      "object", e->object, "path", path, "type", "file");
	else if ((target = pct_encode(e->target)))
		j = json_pack("{s:s, s:s, s:s}", "path", path, "target", target,
			      "type", "symlink");
	free(path);
	free(target);
	return j;
}

/* The canonical text of the sorted manifest m (json_dumps'), or NULL. */
static char *manifest_text(const struct snap_manifest *m)
{
	json_t *arr = json_array(), *root;
	char *text;

	if (!arr)
		return NULL;
	for (size_t i = 0; i < m->n; i++) {
		if (json_array_append_new(arr, entry_json(&m->v[i])) < 0) {
			json_decref(arr);
			return NULL;
		}
	}
	if (!(root = json_pack("{s:o, s:s}", "entries", arr, "format",
			       SNAP_FORMAT)))
		return NULL;
	text = json_dumps(root, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(root);
	return text;
}

int snap__manifest_commit(snap_store *st, struct snap_manifest *m,
			  char digest[SNAP_DIGEST_HEX + 1], char *err,
			  size_t errlen)
{
	char full[IDENTITY_DIGEST_LEN + 1], final[PATH_MAX], tmp[PATH_MAX];
	char *text;
	size_t len;
	int fd;

	if (m->n)
		qsort(m->v, m->n, sizeof(*m->v), entry_cmp);
	if (!(text = manifest_text(m)))
		return snap__fail(err, errlen, FC_NOMEM,
				  "out of memory writing a manifest");
	len = strlen(text);
	identity_buffer_digest(text, len, full);
	memcpy(digest, full + SNAP_HASH_PREFIX, SNAP_DIGEST_HEX + 1);
	put(final, sizeof(final), "%s/%s.json", st->states, digest);
	if (access(final, F_OK) == 0) {
		free(text);
		return 0;
	}
	if ((fd = make_temp(st->states, tmp)) < 0) {
		free(text);
		return snap__fail(err, errlen, FC_IO,
				  "cannot create a manifest in '%s': %s",
				  st->states, strerror(errno));
	}
	if (fs_write_all(fd, text, len) < 0 || fchmod(fd, 0444) < 0) {
		int e = errno;

		close(fd);
		unlink(tmp);
		free(text);
		return snap__fail(err, errlen, FC_IO, "cannot write '%s': %s",
				  tmp, strerror(e));
	}
	free(text);
	if (close(fd) < 0 || publish(tmp, final) < 0) {
		unlink(tmp);
		return snap__fail(err, errlen, FC_IO, "cannot write '%s': %s",
				  final, strerror(errno));
	}
	return 0;
}

/* --- walking a tree --------------------------------------------------- */

void snap__names_release(struct snap_names *nm)
{
	for (size_t i = 0; i < nm->n; i++)
		free(nm->v[i]);
	free(nm->v);
}

int snap__read_names(const char *path, struct snap_names *nm, char *err,
		     size_t errlen)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	DIR *d = fd < 0 ? NULL : fdopendir(fd);
	struct dirent *de;
	int rc = 0;

	memset(nm, 0, sizeof(*nm));
	if (!d) {
		if (fd >= 0)
			close(fd);
		return snap__fail(err, errlen, FC_IO, "cannot open directory '%s': %s",
				  path, strerror(errno));
	}
	errno = 0;
	while (!rc && (de = readdir(d))) {
		const char *n = de->d_name;

		if ((n[0] == '.' && (!n[1] || (n[1] == '.' && !n[2]))) ||
		    snap__excluded(n))
			continue;
		if (array_grow((void **)&nm->v, &nm->cap, nm->n, sizeof(*nm->v),
			       16) < 0 || !(nm->v[nm->n] = strdup(n)))
			rc = snap__fail(err, errlen, FC_NOMEM,
					"out of memory reading '%s'", path);
		else
			nm->n++;
		errno = 0;
	}
	if (!rc && errno)
		rc = snap__fail(err, errlen, FC_IO, "cannot read directory '%s': %s",
				path, strerror(errno));
	closedir(d);
	if (rc)
		snap__names_release(nm);
	return rc;
}

size_t snap__path_push(char buf[PATH_MAX], size_t len, const char *name)
{
	size_t n = strlen(name);

	if (len + 1 + n >= PATH_MAX)
		return 0;
	buf[len] = '/';
	memcpy(buf + len + 1, name, n + 1);
	return len + 1 + n;
}

int snap__read_target(const char *path, char **out, char *err, size_t errlen)
{
	char *buf = malloc(PATH_MAX);
	ssize_t n = buf ? readlink(path, buf, PATH_MAX) : -1;

	if (!buf)
		return snap__fail(err, errlen, FC_NOMEM, "out of memory");
	if (n < 0 || n >= PATH_MAX) {
		free(buf);
		return snap__fail(err, errlen, FC_IO, "cannot read symlink '%s': %s",
				  path, n < 0 ? strerror(errno) : "too long");
	}
	buf[n] = '\0';
	*out = buf;
	return 0;
}

struct take {
	snap_store *st;
	struct snap_manifest m;
	char path[PATH_MAX];       /* the directory, then the entry */
	size_t rootlen;
	char *err;
	size_t errlen;
};

static int take_entry(struct take *t, size_t len);

/* Add everything below the directory at t->path (len bytes). */
static int take_tree(struct take *t, size_t len)
{
	struct snap_names nm;
	int rc = snap__read_names(t->path, &nm, t->err, t->errlen);

	for (size_t i = 0; !rc && i < nm.n; i++) {
		size_t sub = snap__path_push(t->path, len, nm.v[i]);

		rc = sub ? take_entry(t, sub)
			 : snap__fail(t->err, t->errlen, FC_IO,
				      "path too long: '%s/%s'", t->path, nm.v[i]);
		t->path[len] = '\0';
	}
	snap__names_release(&nm);
	return rc;
}

/* Add the entry at t->path (len bytes), and what it holds. */
static int take_entry(struct take *t, size_t len)
{
	const char *rel = t->path + t->rootlen + 1;
	char hex[SNAP_DIGEST_HEX + 1], *target;
	struct statx sx;
	int rc;

	if (snap__stat(t->path, &sx) < 0)
		return snap__fail(t->err, t->errlen, FC_IO, "cannot stat '%s': %s",
				  t->path, strerror(errno));
	if (S_ISDIR(sx.stx_mode)) {
		if (snap__manifest_add(&t->m, rel, 'd', 0, NULL, NULL) < 0)
			return snap__fail(t->err, t->errlen, FC_NOMEM, "out of memory");
		return take_tree(t, len);
	}
	if (S_ISREG(sx.stx_mode)) {
		rc = snap__store_file(t->st, t->path, &sx, hex, t->err, t->errlen);
		if (!rc && snap__manifest_add(&t->m, rel, 'f', sx.stx_mode & 07777,
					      hex, NULL) < 0)
			rc = snap__fail(t->err, t->errlen, FC_NOMEM, "out of memory");
		return rc;
	}
	if (!S_ISLNK(sx.stx_mode))
		return 0;
	if ((rc = snap__read_target(t->path, &target, t->err, t->errlen)) < 0)
		return rc;
	if (snap__manifest_add(&t->m, rel, 'l', 0, NULL, target) < 0)
		rc = snap__fail(t->err, t->errlen, FC_NOMEM, "out of memory");
	free(target);
	return rc;
}

size_t snap__resolve_dir(const char *dir, char buf[PATH_MAX], char *err,
			  size_t errlen)
{
	struct stat sb;

	if (!realpath(dir, buf) || stat(buf, &sb) < 0) {
		snap__fail(err, errlen, FC_IO, "cannot open directory '%s': %s",
			   dir, strerror(errno));
		return 0;
	}
	if (!S_ISDIR(sb.st_mode)) {
		snap__fail(err, errlen, FC_IO, "'%s' is not a directory", dir);
		return 0;
	}
	return strlen(buf);
}

int snap_take(snap_store *st, const char *dir,
	      char digest[SNAP_DIGEST_HEX + 1], char *err, size_t errlen)
{
	struct take t = { .st = st, .err = err, .errlen = errlen };
	int rc;

	if (!(t.rootlen = snap__resolve_dir(dir, t.path, err, errlen)))
		return FC_IO;
	rc = take_tree(&t, t.rootlen);
	if (!rc)
		rc = snap__manifest_commit(st, &t.m, digest, err, errlen);
	snap__manifest_release(&t.m);
	return rc;
}

/* --- restore ---------------------------------------------------------- */

struct restore {
	snap_store *st;
	const struct snap_manifest *m; /* sorted, checked: the store's, or */
	struct snap_manifest own;      /* this one when it keeps none */
	char path[PATH_MAX];
	size_t rootlen;
	char *err;
	size_t errlen;
};

/* A relative path with no empty, ".", ".." or excluded component. */
static bool valid_rel(const char *p)
{
	char comp[NAME_MAX + 1];

	if (!*p || *p == '/')
		return false;
	while (*p) {
		size_t n = strcspn(p, "/");

		if (n == 0 || n > NAME_MAX)
			return false;
		memcpy(comp, p, n);
		comp[n] = '\0';
		if (!strcmp(comp, ".") || !strcmp(comp, "..") || snap__excluded(comp))
			return false;
		p += n;
		if (*p == '/' && !*++p)
			return false;
	}
	return true;
}

static const struct snap_entry *find_entry(const struct snap_manifest *m,
					   const char *path)
{
	struct snap_entry key = { .path = (char *)path };

	return m->n ? bsearch(&key, m->v, m->n, sizeof(*m->v), entry_cmp)
		    : NULL;
}

/* One manifest entry from its JSON; FC_CORRUPT when it is not one. */
static int load_entry(struct snap_manifest *m, json_t *j)
{
	const char *type = NULL, *path = NULL, *object = NULL, *target = NULL;
	json_int_t mode = 0;
	char *p = NULL, *t = NULL, *slash;
	char kind;
	int rc;

	if (json_unpack(j, "{s:s, s:s, s?I, s?s, s?s !}", "type", &type, "path",
			&path, "mode", &mode, "object", &object, "target",
			&target) < 0)
		return FC_CORRUPT;
	kind = !strcmp(type, "dir") ? 'd' : !strcmp(type, "file") ? 'f'
	     : !strcmp(type, "symlink") ? 'l' : 0;
	if (!kind || (kind == 'f') != (object != NULL) ||
	    (kind == 'l') != (target != NULL) || mode < 0 || mode > 07777 ||
	    (object && !valid_hex(object)))
		return FC_CORRUPT;
	if ((rc = pct_decode(path, &p)) < 0 ||
	    (target && (rc = pct_decode(target, &t)) < 0))
		goto out;
	rc = FC_CORRUPT;
	/* sorted, unique, and every parent a directory already seen */
	if (!valid_rel(p) || (m->n && strcmp(m->v[m->n - 1].path, p) >= 0))
		goto out;
	if ((slash = strrchr(p, '/'))) {
		const struct snap_entry *parent;

		*slash = '\0';
		parent = find_entry(m, p);
		*slash = '/';
		if (!parent || parent->type != 'd')
			goto out;
	}
	rc = snap__manifest_add(m, p, kind, (unsigned)mode, object, t);
out:
	free(p);
	free(t);
	return rc;
}

/* Is root the manifest whose canonical text hashes to digest? */
static bool manifest_named(json_t *root, const char *digest)
{
	char *text = json_dumps(root, JSON_COMPACT | JSON_SORT_KEYS);
	char full[IDENTITY_DIGEST_LEN + 1];

	if (!text)
		return false;
	identity_buffer_digest(text, strlen(text), full);
	free(text);
	return strcmp(full + SNAP_HASH_PREFIX, digest) == 0;
}

/* Read and check state digest's manifest into m. */
static int read_manifest(struct restore *r, const char *digest,
			 struct snap_manifest *m)
{
	char path[PATH_MAX], *text;
	json_error_t jerr;
	json_t *root, *entries;
	const char *format;
	size_t i, len;
	int rc = 0;

	if (!valid_hex(digest))
		return snap__fail(r->err, r->errlen, FC_USAGE,
				  "bad state digest '%s'", digest);
	put(path, sizeof(path), "%s/%s.json", r->st->states, digest);
	if ((rc = fs_read_untrusted(path, SNAP_MANIFEST_MAX, &text, &len)))
		return snap__fail(r->err, r->errlen,
				  rc == FC_NOMEM ? FC_NOMEM :
				  errno == ENOENT ? FC_USAGE : FC_IO,
				  "no state '%s' in the store: %s", digest,
				  errno == EINVAL ? "not a regular file" :
				  errno == EFBIG ? "too large" : strerror(errno));
	root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
	free(text);
	if (root && !manifest_named(root, digest)) {
		json_decref(root);
		return snap__fail(r->err, r->errlen, FC_CORRUPT, "manifest '%s' "
				  "does not hold the state it is named after (the "
				  "state store was changed)", path);
	}
	if (!root || json_unpack(root, "{s:o, s:s !}", "entries", &entries,
				 "format", &format) < 0 ||
	    strcmp(format, SNAP_FORMAT) != 0 || !json_is_array(entries)) {
		json_decref(root);
		return snap__fail(r->err, r->errlen, FC_CORRUPT,
				  "corrupt manifest '%s'", path);
	}
	for (i = 0; !rc && i < json_array_size(entries); i++)
		rc = load_entry(m, json_array_get(entries, i));
	json_decref(root);
	if (rc) {
		snap__manifest_release(m);
		return snap__fail(r->err, r->errlen, rc,
				  rc == FC_NOMEM ? "out of memory reading '%s'"
						 : "corrupt manifest '%s'",
				  path);
	}
	return 0;
}

/* Forget the oldest manifest this handle keeps. */
static void drop_oldest(snap_store *st)
{
	st->kept_entries -= st->kept[0].m.n;
	snap__manifest_release(&st->kept[0].m);
	memmove(st->kept, st->kept + 1, --st->nkept * sizeof(*st->kept));
}

/* State digest's manifest into r->m: the one this handle checked before,
 * or read and checked now (into r->own) and kept, the oldest going when
 * there is no room for it. */
static int load_manifest(struct restore *r, const char *digest)
{
	snap_store *st = r->st;
	struct kept_manifest *k;
	int rc;

	for (size_t i = 0; i < st->nkept; i++)
		if (strcmp(st->kept[i].digest, digest) == 0) {
			r->m = &st->kept[i].m;
			return 0;
		}
	r->m = &r->own;
	if ((rc = read_manifest(r, digest, &r->own)))
		return rc;
	if (r->own.n > SNAP_KEPT_ENTRIES / 4)
		return 0; /* read each time */
	if (!st->kept &&
	    !(st->kept = calloc(SNAP_MANIFESTS_KEPT, sizeof(*st->kept))))
		return 0;
	while (st->nkept && (st->nkept == SNAP_MANIFESTS_KEPT ||
			     st->kept_entries + r->own.n > SNAP_KEPT_ENTRIES))
		drop_oldest(st);
	k = &st->kept[st->nkept++];
	k->m = r->own;
	r->own = (struct snap_manifest){ 0 };
	put(k->digest, sizeof(k->digest), "%s", digest);
	st->kept_entries += k->m.n;
	r->m = &k->m;
	return 0;
}

/* Whether what sx describes may stay for entry e (restore_* then make it
 * exactly e). */
static bool same_kind(const struct snap_entry *e, const struct statx *sx)
{
	return e && ((e->type == 'f' && S_ISREG(sx->stx_mode)) ||
		     (e->type == 'l' && S_ISLNK(sx->stx_mode)));
}

/* Remove, below the directory at r->path (len bytes), every entry the
 * state lacks, but excluded names.  A directory that still holds an
 * excluded name stays. */
static int prune(struct restore *r, size_t len)
{
	struct snap_names nm;
	int rc = snap__read_names(r->path, &nm, r->err, r->errlen);

	for (size_t i = 0; !rc && i < nm.n; i++) {
		size_t sub = snap__path_push(r->path, len, nm.v[i]);
		const struct snap_entry *e;
		struct statx sx;

		if (!sub) {
			rc = snap__fail(r->err, r->errlen, FC_IO, "path too long: '%s/%s'",
					r->path, nm.v[i]);
			break;
		}
		e = find_entry(r->m, r->path + r->rootlen + 1);
		if (snap__stat(r->path, &sx) < 0) {
			if (errno != ENOENT)
				rc = snap__fail(r->err, r->errlen, FC_IO,
						"cannot stat '%s': %s", r->path,
						strerror(errno));
		} else if (S_ISDIR(sx.stx_mode)) {
			rc = prune(r, sub);
			if (!rc && (!e || e->type != 'd') && rmdir(r->path) < 0 &&
			    errno != ENOTEMPTY && errno != ENOENT)
				rc = snap__fail(r->err, r->errlen, FC_IO,
						"cannot remove '%s': %s", r->path,
						strerror(errno));
		} else if (!same_kind(e, &sx) && unlink(r->path) < 0 &&
			   errno != ENOENT) {
			rc = snap__fail(r->err, r->errlen, FC_IO,
					"cannot remove '%s': %s", r->path,
					strerror(errno));
		}
		r->path[len] = '\0';
	}
	snap__names_release(&nm);
	return rc;
}

/* The directory part of path into buf. */
static void parent_of(const char *path, char buf[PATH_MAX])
{
	const char *slash = strrchr(path, '/');
	size_t n = slash ? (size_t)(slash - path) : 0;

	memcpy(buf, path, n);
	buf[n] = '\0';
}

/* Copy the object open as `in` to r->path with ent's mode: into a new
 * temporary file beside it renamed over it when `there` (something is at
 * r->path), else into r->path itself, created.
 * The object's bytes, hashed on the way: a store the route could reach
 * and edit must not seed a schedule with what was never recorded, so an
 * object whose content is not its name is FC_CORRUPT. */
static int write_file(struct restore *r, const struct snap_entry *ent, int in,
		      bool there)
{
	char dir[PATH_MAX], tmp[PATH_MAX], full[IDENTITY_DIGEST_LEN + 1];
	struct identity_hash *h = identity_hash_new();
	int out = -1, rc = 0, e = 0;

	if (!h)
		return snap__fail(r->err, r->errlen, FC_NOMEM,
				  "out of memory restoring '%s'", r->path);
	parent_of(r->path, dir);
	if (!there) {
		out = open(r->path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		there = out < 0 && errno == EEXIST;
		put(tmp, sizeof(tmp), "%s", r->path);
	}
	if (there)
		out = make_temp(dir, tmp);
	if (out < 0) {
		identity_hash_final(h, full);
		return snap__fail(r->err, r->errlen, FC_IO, "cannot create '%s': %s",
				  tmp, strerror(errno));
	}
	rc = copy_hashed(r->st, in, NULL, 0, out, h);
	if (rc)
		e = errno;
	identity_hash_final(h, full);
	if (!rc && strcmp(full + SNAP_HASH_PREFIX, ent->object) != 0) {
		close(out);
		unlink(tmp);
		return snap__fail(r->err, r->errlen, FC_CORRUPT, "object '%s' of "
				  "'%s' does not hold what was recorded (the "
				  "state store was changed)", ent->object,
				  ent->path);
	}
	if (!rc && fchmod(out, ent->mode) < 0)
		rc = -1, e = errno;
	if (close(out) < 0 && !rc)
		rc = -1, e = errno;
	if (!rc && there && rename(tmp, r->path) < 0)
		rc = -1, e = errno;
	if (rc) {
		unlink(tmp);
		return snap__fail(r->err, r->errlen, FC_IO, "cannot write '%s': %s",
				  r->path, strerror(e));
	}
	return 0;
}

static int restore_file(struct restore *r, const struct snap_entry *e)
{
	char obj[PATH_MAX];
	const char *cached;
	struct statx sx;
	int got = snap__stat(r->path, &sx);
	bool there = got == 0 || errno != ENOENT; /* or cannot tell */
	int in, rc;

	if (got == 0 && S_ISREG(sx.stx_mode) &&
	    (sx.stx_mode & 07777) == e->mode &&
	    (cached = cache_lookup(r->st, r->path, &sx)) &&
	    strcmp(cached, e->object) == 0)
		return 0;
	put(obj, sizeof(obj), "%s/%s", r->st->objects, e->object);
	if ((in = fs_open_untrusted(obj, 0)) < 0)
		return snap__fail(r->err, r->errlen,
				  errno == ENOENT ? FC_CORRUPT : FC_IO,
				  "cannot open object '%s' of '%s': %s", obj,
				  e->path, errno == EINVAL ? "not a regular file"
				  : strerror(errno));
	rc = write_file(r, e, in, there);
	close(in);
	/* what was just written is known: the next take need not read it */
	if (!rc && snap__stat(r->path, &sx) == 0)
		cache_put(r->st, r->path, &sx, e->object, coarse_now());
	return rc;
}

/* A symlink to e->target at r->path: made under a temporary name beside
 * it and renamed into place. */
static int restore_link(struct restore *r, const struct snap_entry *e)
{
	char dir[PATH_MAX], tmp[PATH_MAX], *now = NULL;
	int rc;

	if (snap__read_target(r->path, &now, NULL, 0) == 0) {
		bool same = strcmp(now, e->target) == 0;

		free(now);
		if (same)
			return 0;
	}
	parent_of(r->path, dir);
	do {
		put(tmp, sizeof(tmp), "%s/" SNAP_TMP_PREFIX "%ld-%u", dir,
		    (long)getpid(), r->st->tmp_seq++);
		rc = symlink(e->target, tmp);
	} while (rc < 0 && errno == EEXIST);
	if (rc < 0 || rename(tmp, r->path) < 0) {
		int err = errno;

		if (rc == 0)
			unlink(tmp);
		return snap__fail(r->err, r->errlen, FC_IO,
				  "cannot make symlink '%s': %s", r->path,
				  strerror(err));
	}
	return 0;
}

static int restore_dir(struct restore *r)
{
	struct stat sb;

	if (mkdir(r->path, 0755) == 0)
		return 0;
	if (errno == EEXIST && lstat(r->path, &sb) == 0 && S_ISDIR(sb.st_mode))
		return 0;
	return snap__fail(r->err, r->errlen, FC_IO, "cannot make directory '%s': %s",
			  r->path, strerror(errno == EEXIST ? ENOTDIR : errno));
}

/* Create every entry of the manifest, parents first (manifest order). */
static int create_all(struct restore *r)
{
	int rc = 0;

	for (size_t i = 0; !rc && i < r->m->n; i++) {
		const struct snap_entry *e = &r->m->v[i];

		if (!snap__path_push(r->path, r->rootlen, e->path))
			return snap__fail(r->err, r->errlen, FC_IO,
					  "path too long: '%s/%s'", r->path, e->path);
		rc = e->type == 'd' ? restore_dir(r)
		   : e->type == 'f' ? restore_file(r, e)
				    : restore_link(r, e);
		r->path[r->rootlen] = '\0';
	}
	return rc;
}

int snap_restore(snap_store *st, const char *digest, const char *dir,
		 char *err, size_t errlen)
{
	struct restore r = { .st = st, .err = err, .errlen = errlen };
	int rc;

	if (!(r.rootlen = snap__resolve_dir(dir, r.path, err, errlen)))
		return FC_IO;
	rc = load_manifest(&r, digest);
	if (!rc)
		rc = prune(&r, r.rootlen);
	if (!rc)
		rc = create_all(&r);
	snap__manifest_release(&r.own);
	return rc;
}
