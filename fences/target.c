/*
 * target.c -- the read-only target observer (target.h).
 *
 * It reads the stored layout of each target kind directly -- the data table
 * and the fencecert_* tables of a SQLite target, the data files and
 * .fencecert/ epoch files of a file: target (see fence_sqlite.c and
 * fence_fs.c for the layouts) -- and never the fence's own answers: row
 * counts are counted, not taken from fence records.
 *
 * Invariants:
 *  1. Nothing is written: SQLite (target_sqlite.c) is opened without
 *     SQLITE_OPEN_CREATE, after a stat() shows the file exists, and with
 *     query_only set; directories are only listed and read.
 *  2. Results are sorted the same way for every target kind (bytewise,
 *     NULL first), so a checker can compare observations across kinds.
 *  3. A file: observation holds every row of every visible data file in
 *     memory while it sorts them; dot files (temp files, .fencecert) are
 *     never data.
 *  4. The route writes a file: target, so what is there is read as
 *     hostile: no directory of it is followed through a symbolic link, an
 *     entry that is neither a file nor a directory is an error (not
 *     skipped, not opened: a FIFO would block), epoch files are read
 *     bounded (fs_read_untrusted()).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "common/array.h"
#include "common/fsutil.h"
#include "fences/datafile.h"
#include "fences/fence.h"
#include "fences/target_etcd.h"
#include "fences/target_impl.h"
#include "fences/target_pg.h"

#define STATE_DIR ".fencecert"
#define TARGET_EPOCH_MAX (64 * 1024) /* bytes of one epoch file */

/* Same rule as the fence port's table names: a plain identifier. */
static int table_valid(const char *t)
{
	size_t n;

	if (!t || !((*t >= 'A' && *t <= 'Z') || (*t >= 'a' && *t <= 'z') ||
		    *t == '_'))
		return 0;
	for (n = 0; t[n]; n++)
		if (!((t[n] >= 'A' && t[n] <= 'Z') ||
		      (t[n] >= 'a' && t[n] <= 'z') ||
		      (t[n] >= '0' && t[n] <= '9') || t[n] == '_'))
			return 0;
	return n <= 63;
}

/* ---- file: ----------------------------------------------------------- */

/* Rows as read: each key owned by v, each op by the file list (NULL:
 * a header-less file). */
struct collect {
	struct target_pair *v;
	size_t n, cap;
	char **ops; /* one op string per file read */
	size_t nops, capops;
	char *cur_op;
};

static int grow(void **v, size_t *cap, size_t n, size_t size)
{
	return array_grow(v, cap, n, size, 64);
}

static int collect_row(void *ctx, const char *key, const char *payload)
{
	struct collect *c = ctx;
	char *k = NULL;

	(void)payload;
	if (grow((void **)&c->v, &c->cap, c->n, sizeof(*c->v)) ||
	    (key && !(k = strdup(key))))
		return FC_NOMEM;
	c->v[c->n].key = k;
	c->v[c->n].op = c->cur_op;
	c->n++;
	return 0;
}

static void collect_release(struct collect *c)
{
	for (size_t i = 0; i < c->n; i++)
		free(c->v[i].key);
	for (size_t i = 0; i < c->nops; i++)
		free(c->ops[i]);
	free(c->v);
	free(c->ops);
}

static int by_string(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void free_names(char **names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

/* Entries of dir of one type (S_IFREG or S_IFDIR), without dot names and
 * ending in suffix when one is given, as full paths, sorted.  A missing dir
 * lists nothing.  The route writes here (invariant 4): dir itself is not
 * followed if it is a symlink, and an entry that is neither a file nor a
 * directory (a symlink, a FIFO, a device) is refused. */
static int list_entries(const char *dir, mode_t type, const char *suffix,
			char ***names, size_t *n, char *err, size_t errlen)
{
	size_t cap = 0, sl = suffix ? strlen(suffix) : 0;
	struct dirent *de;
	DIR *d = NULL;
	int rc = 0, fd;

	*names = NULL;
	*n = 0;
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK |
		  O_CLOEXEC);
	if (fd >= 0 && !(d = fdopendir(fd)))
		close(fd);
	if (!d) {
		struct stat st;
		int e = errno;

		if (e == ENOENT)
			return 0;
		if (e != ELOOP && e != ENOTDIR) {
			snprintf(err, errlen, "cannot list '%s': %s", dir,
				 strerror(e));
			return FC_FENCE_UNAVAILABLE;
		}
		snprintf(err, errlen, "cannot list '%s': %s: refused", dir,
			 lstat(dir, &st) == 0 && S_ISLNK(st.st_mode) ?
			 "a symbolic link" : "not a directory");
		return FC_CORRUPT;
	}
	while (!rc && (errno = 0, de = readdir(d))) {
		size_t len = strlen(de->d_name);
		char path[PATH_MAX];
		struct stat st;

		if (de->d_name[0] == '.' || (suffix && (len <= sl ||
		    strcmp(de->d_name + len - sl, suffix) != 0)))
			continue;
		if (snprintf(path, sizeof(path), "%s/%s", dir, de->d_name) >=
		    (int)sizeof(path) || lstat(path, &st) != 0)
			continue;
		if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) {
			snprintf(err, errlen, "'%s' is not a file or a "
				 "directory (a symbolic link, a FIFO?): refused",
				 path);
			rc = FC_CORRUPT;
			break;
		}
		if ((st.st_mode & S_IFMT) != type)
			continue;
		if (grow((void **)names, &cap, *n, sizeof(**names)) ||
		    !((*names)[*n] = strdup(path)))
			rc = FC_NOMEM;
		else
			(*n)++;
	}
	if (!rc && errno) {
		snprintf(err, errlen, "cannot list '%s': %s", dir,
			 strerror(errno));
		rc = FC_FENCE_UNAVAILABLE;
	}
	closedir(d);
	if (rc) {
		free_names(*names, *n);
		*names = NULL;
		*n = 0;
		return rc;
	}
	if (*n)
		qsort(*names, *n, sizeof(**names), by_string);
	return 0;
}

static int list_files(const char *dir, const char *suffix, char ***names,
		      size_t *n, char *err, size_t errlen)
{
	return list_entries(dir, S_IFREG, suffix, names, n, err, errlen);
}

/* Subdirectories of dir that may be tables (not dot names), sorted. */
static int list_tables(const char *dir, char ***names, size_t *n, char *err,
		       size_t errlen)
{
	return list_entries(dir, S_IFDIR, NULL, names, n, err, errlen);
}

/* datafile_read's codes, as the observer reports them. */
static int read_code(int rc)
{
	return rc == FC_CORRUPT || rc == FC_NOMEM ? rc : FC_FENCE_UNAVAILABLE;
}

static int fs_collect_file(struct collect *c, const char *path, char *err,
			   size_t errlen)
{
	struct datafile_header h;
	char *op = NULL;
	int rc;

	/* Read the header first to know the op the rows belong to. */
	rc = datafile_read(path, &h, NULL, NULL, err, errlen);
	if (rc)
		return read_code(rc);
	if (h.present && !(op = strdup(h.operation_id)))
		return FC_NOMEM;
	if (grow((void **)&c->ops, &c->capops, c->nops, sizeof(*c->ops))) {
		free(op);
		return FC_NOMEM;
	}
	c->ops[c->nops++] = op;
	c->cur_op = op;
	rc = datafile_read(path, &h, collect_row, c, err, errlen);
	if (rc == FC_NOMEM)
		snprintf(err, errlen, "out of memory reading '%s'", path);
	return rc ? read_code(rc) : 0;
}

static int fs_rows(const char *dir, const char *table, target_row_fn fn,
		   void *ctx, char *err, size_t errlen)
{
	struct collect c = { 0 };
	char tdir[PATH_MAX], **files;
	size_t nfiles, i;
	int rc;

	if (snprintf(tdir, sizeof(tdir), "%s/%s", dir, table) >=
	    (int)sizeof(tdir)) {
		snprintf(err, errlen, "path '%s' is too long", dir);
		return FC_USAGE;
	}
	rc = list_files(tdir, NULL, &files, &nfiles, err, errlen);
	if (rc)
		return rc;
	for (i = 0; i < nfiles && !rc; i++)
		rc = fs_collect_file(&c, files[i], err, errlen);
	free_names(files, nfiles);
	if (!rc)
		rc = target__report_rows(c.v, c.n, fn, ctx);
	collect_release(&c);
	return rc;
}

struct fence_list {
	struct target_fence_record *v;
	size_t n, cap;
};

static int fence_list_add(struct fence_list *l, const char *op,
			  long long applied, long long prepared,
			  const char *intent, long long rows)
{
	struct target_fence_record *r;

	if (grow((void **)&l->v, &l->cap, l->n, sizeof(*l->v)))
		return FC_NOMEM;
	r = &l->v[l->n];
	r->operation_id = strdup(op);
	r->intent_digest = intent ? strdup(intent) : NULL;
	if (!r->operation_id || (intent && !r->intent_digest)) {
		free((char *)r->operation_id);
		free((char *)r->intent_digest);
		return FC_NOMEM;
	}
	r->applied_epoch = applied;
	r->prepared_epoch = prepared;
	r->rows = rows;
	l->n++;
	return 0;
}

static void fence_list_release(struct fence_list *l)
{
	for (size_t i = 0; i < l->n; i++) {
		free((char *)l->v[i].operation_id);
		free((char *)l->v[i].intent_digest);
	}
	free(l->v);
}

/* Applied records (one per data file) before prepared-only ones. */
static int by_op_applied_first(const void *a, const void *b)
{
	const struct target_fence_record *x = a, *y = b;
	int c = strcmp(x->operation_id, y->operation_id);

	if (c)
		return c;
	return (y->applied_epoch > 0) - (x->applied_epoch > 0);
}

static int fs_add_epochs(struct fence_list *l, const char *dir, char *err,
			 size_t errlen)
{
	char sdir[PATH_MAX], **files;
	size_t n;
	int rc;

	snprintf(sdir, sizeof(sdir), "%s/" STATE_DIR, dir);
	rc = list_files(sdir, ".epoch", &files, &n, err, errlen);
	for (size_t i = 0; i < n && !rc; i++) {
		json_t *doc = NULL;
		const char *op;
		json_int_t epoch;
		char *text;
		size_t len;

		/* invariant 4: no FIFO, no link, bounded */
		if (fs_read_untrusted(files[i], TARGET_EPOCH_MAX, &text,
				      &len) != 0) {
			snprintf(err, errlen, "cannot read epoch file '%s': %s",
				 files[i], strerror(errno));
			rc = errno == ENOENT ? FC_FENCE_UNAVAILABLE : FC_CORRUPT;
			break;
		}
		doc = json_loadb(text, len, 0, NULL);
		free(text);
		if (!doc || json_unpack(doc, "{s:s, s:I}", "operation_id", &op,
					"epoch", &epoch) != 0) {
			snprintf(err, errlen, "malformed epoch file '%s'",
				 files[i]);
			rc = FC_CORRUPT;
		} else {
			rc = fence_list_add(l, op, 0, epoch, NULL, 0);
		}
		json_decref(doc);
	}
	free_names(files, n);
	return rc;
}

static int fs_add_applied(struct fence_list *l, const char *dir, char *err,
			  size_t errlen)
{
	char **tables, **files;
	size_t nt, nf;
	int rc;

	rc = list_tables(dir, &tables, &nt, err, errlen);
	for (size_t t = 0; t < nt && !rc; t++) {
		rc = list_files(tables[t], NULL, &files, &nf, err, errlen);
		for (size_t i = 0; i < nf && !rc; i++) {
			struct datafile_header h;

			rc = datafile_read(files[i], &h, NULL, NULL, err,
					   errlen);
			if (rc)
				rc = read_code(rc);
			else if (h.present)
				rc = fence_list_add(l, h.operation_id, h.epoch,
						    0, h.intent_digest, h.rows);
		}
		free_names(files, nf);
	}
	free_names(tables, nt);
	return rc;
}

static int fs_fences(const char *dir, target_fence_fn fn, void *ctx,
		     char *err, size_t errlen)
{
	struct fence_list l = { 0 };
	size_t i, j;
	int rc;

	rc = fs_add_epochs(&l, dir, err, errlen);
	if (!rc)
		rc = fs_add_applied(&l, dir, err, errlen);
	if (!rc && l.n)
		qsort(l.v, l.n, sizeof(*l.v), by_op_applied_first);
	for (i = 0; !rc && i < l.n; i = j) {
		long long prepared = 0;

		for (j = i; j < l.n && strcmp(l.v[i].operation_id,
					      l.v[j].operation_id) == 0; j++)
			if (l.v[j].prepared_epoch > prepared)
				prepared = l.v[j].prepared_epoch;
		for (size_t k = i; !rc && k < j; k++) {
			/* Prepared-only records sort last: emit one only
			 * when nothing was applied. */
			if (!l.v[k].applied_epoch && k > i)
				break;
			l.v[k].prepared_epoch = prepared;
			rc = fn(ctx, &l.v[k]);
		}
	}
	fence_list_release(&l);
	return rc;
}

/* ---- dispatch -------------------------------------------------------- */

/* The directory of a file: URL; any other URL names no target we know
 * (sqlite:, etcd: and postgresql: are dispatched before). */
static int file_dir(const char *url, const char **dir, char *err,
		    size_t errlen)
{
	if (strncmp(url, "file:", 5) == 0 && url[5]) {
		*dir = url + 5;
		return 0;
	}
	snprintf(err, errlen, "cannot observe target '%s' (expected "
		 "sqlite:PATH, file:DIR, etcd://... or postgresql://...)", url);
	return FC_USAGE;
}

/* ---- the reader ------------------------------------------------------ */

struct target_reader {
	char *url;
	struct target_sqlite *sq; /* sqlite: targets keep a connection */
};

int target_reader_new(const char *url, target_reader **out, char *err,
		      size_t errlen)
{
	target_reader *r = calloc(1, sizeof(*r));
	int rc = 0;

	*out = NULL;
	if (!r || !(r->url = strdup(url ? url : "")))
		rc = FC_NOMEM;
	else if (strncmp(r->url, "sqlite:", 7) == 0 && r->url[7])
		rc = target_sqlite__new(r->url + 7, &r->sq);
	if (rc) {
		snprintf(err, errlen, "out of memory");
		target_reader_free(r);
		return rc;
	}
	*out = r;
	return 0;
}

void target_reader_free(target_reader *r)
{
	if (!r)
		return;
	target_sqlite__free(r->sq);
	free(r->url);
	free(r);
}

void target_reader_drop(target_reader *r)
{
	if (r && r->sq)
		target_sqlite__drop(r->sq);
}

int target_reader_rows(target_reader *r, const char *table, target_row_fn fn,
		       void *ctx, char *err, size_t errlen)
{
	const char *url = r->url, *dir;
	int rc;

	if (!table)
		table = FENCE_DEFAULT_TABLE;
	/* Before any dispatch: every backend may rely on a valid name. */
	if (!table_valid(table)) {
		snprintf(err, errlen, "invalid table name '%s'", table);
		return FC_USAGE;
	}
	if (r->sq)
		return target_sqlite__rows(r->sq, table, fn, ctx, err, errlen);
	if (strncmp(url, "etcd:", 5) == 0)
		return target_etcd_rows(url, table, fn, ctx, err, errlen);
	if (target_pg_is_url(url))
		return target_pg_rows(url, table, fn, ctx, err, errlen);
	rc = file_dir(url, &dir, err, errlen);
	return rc ? rc : fs_rows(dir, table, fn, ctx, err, errlen);
}

int target_reader_fences(target_reader *r, target_fence_fn fn, void *ctx,
			 char *err, size_t errlen)
{
	const char *url = r->url, *dir;
	int rc;

	if (r->sq)
		return target_sqlite__fences(r->sq, fn, ctx, err, errlen);
	if (strncmp(url, "etcd:", 5) == 0)
		return target_etcd_fences(url, fn, ctx, err, errlen);
	if (target_pg_is_url(url))
		return target_pg_fences(url, fn, ctx, err, errlen);
	rc = file_dir(url, &dir, err, errlen);
	return rc ? rc : fs_fences(dir, fn, ctx, err, errlen);
}

int target_reader_sql(target_reader *r, const char *sql, target_row_fn fn,
		      void *ctx, char *err, size_t errlen)
{
	if (!r->sq) {
		snprintf(err, errlen, "an SQL query needs a sqlite: target, "
			 "not '%s'", r->url);
		return FC_USAGE;
	}
	return target_sqlite__sql(r->sq, sql, fn, ctx, err, errlen);
}

/* The one-shot forms: a reader for one call. */
int target_observe_rows(const char *url, const char *table, target_row_fn fn,
			void *ctx, char *err, size_t errlen)
{
	target_reader *r;
	int rc = target_reader_new(url, &r, err, errlen);

	if (!rc)
		rc = target_reader_rows(r, table, fn, ctx, err, errlen);
	target_reader_free(r);
	return rc;
}

int target_list_fences(const char *url, target_fence_fn fn, void *ctx,
		       char *err, size_t errlen)
{
	target_reader *r;
	int rc = target_reader_new(url, &r, err, errlen);

	if (!rc)
		rc = target_reader_fences(r, fn, ctx, err, errlen);
	target_reader_free(r);
	return rc;
}
