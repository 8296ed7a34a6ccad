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
 *  1. Nothing is written: SQLite is opened without SQLITE_OPEN_CREATE,
 *     after a stat() shows the file exists, and with query_only set;
 *     directories are only listed and read.
 *  2. Results are sorted the same way for every target kind (bytewise,
 *     NULL first), so a checker can compare observations across kinds.
 *  3. A file: observation holds every row of every visible data file in
 *     memory while it sorts them; dot files (temp files, .fencecert) are
 *     never data.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <jansson.h>
#include <sqlite3.h>

#include "datafile.h"
#include "fence.h"
#include "target.h"
#include "target_etcd.h"
#include "target_pg.h"

#define BUSY_TIMEOUT_MS 3000
#define STATE_DIR ".fencecert"

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

/* NULL sorts first, then bytewise, as SQLite's BINARY collation does. */
static int cmp_nullable(const char *a, const char *b)
{
	if (!a || !b)
		return (a != NULL) - (b != NULL);
	return strcmp(a, b);
}

/* ---- sqlite: ---------------------------------------------------------- */

static int sqlite_fail(sqlite3 *db, const char *path, const char *what,
		       char *err, size_t errlen)
{
	snprintf(err, errlen, "cannot %s in '%s': %s", what, path,
		 db ? sqlite3_errmsg(db) : "no connection");
	return FC_FENCE_UNAVAILABLE;
}

/* Open for reading; *db stays NULL when the file does not exist. */
static int sqlite_open_ro(const char *path, sqlite3 **db, char *err,
			  size_t errlen)
{
	struct stat st;

	*db = NULL;
	if (stat(path, &st) != 0) {
		if (errno == ENOENT)
			return 0;
		snprintf(err, errlen, "cannot open target '%s': %s", path,
			 strerror(errno));
		return FC_FENCE_UNAVAILABLE;
	}
	/* Not SQLITE_OPEN_READONLY: a read-only connection to a WAL database
	 * creates the -wal and -shm files and cannot remove them on close.
	 * A writable connection that SQL cannot write through (query_only)
	 * leaves the directory as it found it. */
	if (sqlite3_open_v2(path, db, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK ||
	    sqlite3_exec(*db, "PRAGMA query_only = 1", NULL, NULL, NULL)) {
		int rc = sqlite_fail(*db, path, "open target", err, errlen);

		sqlite3_close_v2(*db);
		*db = NULL;
		return rc;
	}
	sqlite3_busy_timeout(*db, BUSY_TIMEOUT_MS);
	return 0;
}

static int sqlite_has_table(sqlite3 *db, const char *path, const char *name,
			    int *has, char *err, size_t errlen)
{
	sqlite3_stmt *st;
	int rc;

	if (sqlite3_prepare_v2(db, "SELECT count(*) FROM main.sqlite_master "
			       "WHERE type IN ('table', 'view') AND name = ?",
			       -1, &st, NULL) != SQLITE_OK)
		return sqlite_fail(db, path, "read the schema", err, errlen);
	sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	*has = rc == SQLITE_ROW && sqlite3_column_int(st, 0) > 0;
	sqlite3_finalize(st);
	if (rc != SQLITE_ROW)
		return sqlite_fail(db, path, "read the schema", err, errlen);
	return 0;
}

static const char *text(sqlite3_stmt *st, int col)
{
	return (const char *)sqlite3_column_text(st, col);
}

static int sqlite_rows(const char *path, const char *table, target_row_fn fn,
		       void *ctx, char *err, size_t errlen)
{
	sqlite3 *db;
	sqlite3_stmt *st = NULL;
	char sql[256];
	int has, rc, step;

	rc = sqlite_open_ro(path, &db, err, errlen);
	if (rc || !db)
		return rc;
	rc = sqlite_has_table(db, path, table, &has, err, errlen);
	if (rc || !has)
		goto out;
	snprintf(sql, sizeof(sql), "SELECT row_key, operation_id, count(*) "
		 "FROM main.\"%s\" GROUP BY row_key, operation_id "
		 "ORDER BY row_key, operation_id", table);
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
		rc = sqlite_fail(db, path, "read the rows", err, errlen);
		goto out;
	}
	while ((step = sqlite3_step(st)) == SQLITE_ROW) {
		rc = fn(ctx, text(st, 0), text(st, 1),
			sqlite3_column_int64(st, 2));
		if (rc)
			goto out;
	}
	if (step != SQLITE_DONE)
		rc = sqlite_fail(db, path, "read the rows", err, errlen);
out:
	sqlite3_finalize(st);
	sqlite3_close_v2(db);
	return rc;
}

static const char applied_part[] =
	"SELECT operation_id, epoch AS applied, 0 AS prepared, "
	"intent_digest AS intent, rows FROM main.fencecert_fence";
static const char prepared_part[] =
	"SELECT operation_id, 0, epoch, NULL, 0 FROM main.fencecert_epoch";

static int sqlite_fences(const char *path, target_fence_fn fn, void *ctx,
			 char *err, size_t errlen)
{
	struct target_fence_record r;
	sqlite3 *db;
	sqlite3_stmt *st = NULL;
	char sql[768];
	int has_fence, has_epoch, rc, step;

	rc = sqlite_open_ro(path, &db, err, errlen);
	if (rc || !db)
		return rc;
	if ((rc = sqlite_has_table(db, path, "fencecert_fence", &has_fence,
				   err, errlen)) ||
	    (rc = sqlite_has_table(db, path, "fencecert_epoch", &has_epoch,
				   err, errlen)) ||
	    (!has_fence && !has_epoch))
		goto out;
	/* Both sides, so a fence row without an epoch row (or the reverse)
	 * still shows: the observer does not assume the fence kept its own
	 * invariants. */
	snprintf(sql, sizeof(sql), "SELECT operation_id, max(applied), "
		 "max(prepared), max(intent), max(rows) FROM (%s%s%s) "
		 "GROUP BY operation_id ORDER BY operation_id",
		 has_fence ? applied_part : "",
		 has_fence && has_epoch ? " UNION ALL " : "",
		 has_epoch ? prepared_part : "");
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
		rc = sqlite_fail(db, path, "read the fences", err, errlen);
		goto out;
	}
	while ((step = sqlite3_step(st)) == SQLITE_ROW) {
		r.operation_id = text(st, 0);
		r.applied_epoch = sqlite3_column_int64(st, 1);
		r.prepared_epoch = sqlite3_column_int64(st, 2);
		r.intent_digest = text(st, 3);
		r.rows = sqlite3_column_int64(st, 4);
		if ((rc = fn(ctx, &r)))
			goto out;
	}
	if (step != SQLITE_DONE)
		rc = sqlite_fail(db, path, "read the fences", err, errlen);
out:
	sqlite3_finalize(st);
	sqlite3_close_v2(db);
	return rc;
}

/* ---- file: ----------------------------------------------------------- */

struct pair {
	char *key;      /* NULL: no key */
	const char *op; /* owned by the file list; NULL: header-less file */
};

struct collect {
	struct pair *v;
	size_t n, cap;
	char **ops; /* one op string per file read */
	size_t nops, capops;
	const char *cur_op;
};

static int grow(void **v, size_t *cap, size_t n, size_t size)
{
	void *p;
	size_t c;

	if (n < *cap)
		return 0;
	c = *cap ? *cap * 2 : 64;
	p = realloc(*v, c * size);
	if (!p)
		return FC_NOMEM;
	*v = p;
	*cap = c;
	return 0;
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

static int by_key_then_op(const void *a, const void *b)
{
	const struct pair *x = a, *y = b;
	int c = cmp_nullable(x->key, y->key);

	return c ? c : cmp_nullable(x->op, y->op);
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
 * lists nothing. */
static int list_entries(const char *dir, mode_t type, const char *suffix,
			char ***names, size_t *n, char *err, size_t errlen)
{
	size_t cap = 0, sl = suffix ? strlen(suffix) : 0;
	struct dirent *de;
	DIR *d;
	int rc = 0;

	*names = NULL;
	*n = 0;
	if (!(d = opendir(dir))) {
		if (errno == ENOENT)
			return 0;
		snprintf(err, errlen, "cannot list '%s': %s", dir,
			 strerror(errno));
		return FC_FENCE_UNAVAILABLE;
	}
	while (!rc && (errno = 0, de = readdir(d))) {
		size_t len = strlen(de->d_name);
		char path[PATH_MAX];
		struct stat st;

		if (de->d_name[0] == '.' || (suffix && (len <= sl ||
		    strcmp(de->d_name + len - sl, suffix) != 0)))
			continue;
		if (snprintf(path, sizeof(path), "%s/%s", dir, de->d_name) >=
		    (int)sizeof(path) || stat(path, &st) != 0 ||
		    (st.st_mode & S_IFMT) != type)
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
	size_t nfiles, i, j;
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
	if (!rc && c.n)
		qsort(c.v, c.n, sizeof(*c.v), by_key_then_op);
	for (i = 0; !rc && i < c.n; i = j) {
		for (j = i + 1; j < c.n && by_key_then_op(&c.v[i], &c.v[j]) == 0;
		     j++)
			;
		rc = fn(ctx, c.v[i].key, c.v[i].op, (long long)(j - i));
	}
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
		json_error_t jerr;
		json_t *doc = json_load_file(files[i], 0, &jerr);
		const char *op;
		json_int_t epoch;

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

static int split_url(const char *url, const char **rest, int *is_sqlite,
		     char *err, size_t errlen)
{
	if (url && strncmp(url, "sqlite:", 7) == 0 && url[7]) {
		*rest = url + 7;
		*is_sqlite = 1;
		return 0;
	}
	if (url && strncmp(url, "file:", 5) == 0 && url[5]) {
		*rest = url + 5;
		*is_sqlite = 0;
		return 0;
	}
	snprintf(err, errlen, "cannot observe target '%s' (expected "
		 "sqlite:PATH, file:DIR, etcd://... or postgresql://...)",
		 url ? url : "");
	return FC_USAGE;
}

int target_observe_rows(const char *url, const char *table, target_row_fn fn,
			void *ctx, char *err, size_t errlen)
{
	const char *where;
	int is_sqlite, rc;

	if (!table)
		table = FENCE_DEFAULT_TABLE;
	/* Before any dispatch: every backend may rely on a valid name. */
	if (!table_valid(table)) {
		snprintf(err, errlen, "invalid table name '%s'", table);
		return FC_USAGE;
	}
	if (url && strncmp(url, "etcd:", 5) == 0)
		return target_etcd_rows(url, table, fn, ctx, err, errlen);
	if (target_pg_is_url(url))
		return target_pg_rows(url, table, fn, ctx, err, errlen);
	rc = split_url(url, &where, &is_sqlite, err, errlen);
	if (rc)
		return rc;
	if (is_sqlite)
		return sqlite_rows(where, table, fn, ctx, err, errlen);
	return fs_rows(where, table, fn, ctx, err, errlen);
}

int target_list_fences(const char *url, target_fence_fn fn, void *ctx,
		       char *err, size_t errlen)
{
	const char *where;
	int is_sqlite, rc;

	if (url && strncmp(url, "etcd:", 5) == 0)
		return target_etcd_fences(url, fn, ctx, err, errlen);
	if (target_pg_is_url(url))
		return target_pg_fences(url, fn, ctx, err, errlen);
	rc = split_url(url, &where, &is_sqlite, err, errlen);
	if (rc)
		return rc;
	if (is_sqlite)
		return sqlite_fences(where, fn, ctx, err, errlen);
	return fs_fences(where, fn, ctx, err, errlen);
}
