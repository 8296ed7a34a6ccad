/*
 * fence_fs.c -- the fence for a target that is a directory of files, data
 * lake style ("file:DIR").
 *
 * Layout:
 *
 *   DIR/<table>/<id>.csv          one data file per applied operation; its
 *                                 header line is the fence record
 *                                 (datafile.h)
 *   DIR/<table>/.tmp-XXXXXX       a data file being written (never data)
 *   DIR/.fencecert/<id>.epoch     {"operation_id":..., "epoch":N}: the
 *                                 highest epoch prepared or applied
 *   DIR/.fencecert/<id>.lock      flock()ed around every epoch check+write
 *
 * <id> is the 64 hex digits of a "sha256:" operation id, or "op-" followed
 * by the id with every byte outside [A-Za-z0-9-] written as "_xx" (hex);
 * the two forms cannot collide and neither starts with '.'.
 *
 * Apply, in order:
 *
 *   write .tmp-XXXXXX, fsync      -- failure: PROVED_ABSENT
 *   flock <id>.lock (bounded)     -- timeout: PROVED_ABSENT, UNAVAILABLE
 *   <id>.csv in any table?        -- yes: ALREADY_APPLIED / INTENT_CONFLICT
 *   epoch file > epoch?           -- yes: STALE_EPOCH, PROVED_ABSENT
 *   raise epoch file to epoch     -- failure: PROVED_ABSENT
 *   link(.tmp, <id>.csv)          -- the commit point; EEXIST: classify the
 *                                    existing file as above; other failure:
 *                                    PROVED_ABSENT (link is atomic)
 *   unlink .tmp, fsync table dir  -- failure: OUTCOME_UNKNOWN,
 *                                    FC_ERR_COMMIT_UNKNOWN (the file is
 *                                    visible, its durability is not; the
 *                                    probe decides)
 *   unlock
 *
 * Invariants:
 *  1. A data file becomes visible complete or not at all: it is written and
 *     fsynced under a dot name and link()ed into place, which is atomic and
 *     refuses to replace an existing file.  Readers ignore dot files.
 *  2. The epoch check and the link happen under the operation's lock, and
 *     prepare's compare-and-write of the epoch file does too, so an apply
 *     from a stale epoch can never link after a newer prepare returned.
 *  3. Why a probe's ABSENT is final: after prepare(op, e) returned, an apply
 *     from an epoch below e either linked before (it held the lock first),
 *     so the probe sees the file, or takes the lock later, reads epoch e and
 *     refuses.  A stopped (SIGSTOP) holder of the lock makes prepare fail
 *     after LOCK_TIMEOUT_MS instead of waiting: the zombie keeps the
 *     question open, so nobody may claim absence.
 *  4. probe() reads without the lock (link is atomic): a data file whose
 *     header parses, names the operation and counts exactly the rows in the
 *     file is APPLIED once its directory is synced (so a file an apply left
 *     unsynced cannot vanish after the answer); no file is ABSENT (a missing
 *     DIR too, when its parent exists); anything unreadable or inconsistent
 *     is UNKNOWN.
 *  5. An operation is applied at most once across all tables: the existence
 *     check looks in every table directory.
 *  6. Only append: REPLACE would need to rewrite other operations' files,
 *     which is no single atomic step here, so it is refused (FC_USAGE).
 *  7. Every fsync here goes through sync_file() or sync_dir(), so
 *     fence_skip_sync() (the no-fsync control only) leaves out all of them
 *     and nothing else: the same files, names and answers, durable only
 *     as far as the page cache is.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "common/fsutil.h"
#include "fences/datafile.h"
#include "fences/fence_impl.h"

#define LOCK_TIMEOUT_MS 2000
#define LOCK_RETRY_MS 10
#define STATE_DIR ".fencecert"
#define ID_MAX (4 + 3 * JOURNAL_ID_MAX) /* "op-" + escaped id + NUL */

struct fence_fs {
	char *dir;
};

static struct fence_fs *impl(fence *f)
{
	return f->impl;
}

static int is_hex_digest(const char *op)
{
	if (strncmp(op, "sha256:", 7) != 0 || strlen(op) != 7 + 64)
		return 0;
	for (const char *p = op + 7; *p; p++)
		if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
			return 0;
	return 1;
}

static void file_id(const char *op, char id[ID_MAX])
{
	static const char hex[] = "0123456789abcdef";
	char *o = id;

	if (is_hex_digest(op)) {
		snprintf(id, ID_MAX, "%s", op + 7);
		return;
	}
	o += sprintf(o, "op-");
	for (const unsigned char *p = (const unsigned char *)op; *p; p++) {
		if ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') ||
		    (*p >= '0' && *p <= '9') || *p == '-') {
			*o++ = (char)*p;
		} else {
			*o++ = '_';
			*o++ = hex[*p >> 4];
			*o++ = hex[*p & 15];
		}
	}
	*o = '\0';
}

static int path_of(fence *f, char out[PATH_MAX], const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int path_of(fence *f, char out[PATH_MAX], const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(out, PATH_MAX, fmt, ap);
	va_end(ap);
	if (n < 0 || n >= PATH_MAX)
		return fence__fail(f, FC_USAGE, "path under '%s' is too long",
				   impl(f)->dir);
	return 0;
}

/* fsync() a file, and fs_fsync_dir(): left out after fence_skip_sync(). */
static int sync_file(fence *f, int fd)
{
	return f->no_sync ? 0 : fsync(fd);
}

static int sync_dir(fence *f, const char *path)
{
	return f->no_sync ? 0 : fs_fsync_dir(path);
}

/* mkdir path if needed and make its entry durable in its parent. */
static int ensure_dir(fence *f, const char *path)
{
	char parent[PATH_MAX];

	if (mkdir(path, 0755) != 0 && errno != EEXIST)
		return fence__fail(f, FC_FENCE_UNAVAILABLE, "cannot create "
				   "directory '%s': %s", path, strerror(errno));
	snprintf(parent, sizeof(parent), "%s", path);
	if (sync_dir(f, dirname(parent)) != 0)
		return fence__fail(f, FC_FENCE_UNAVAILABLE, "cannot sync the "
				   "directory holding '%s': %s", path,
				   strerror(errno));
	return 0;
}

static int lock_op(fence *f, const char *id, int *fd_out)
{
	struct timespec pause = { 0, LOCK_RETRY_MS * 1000000L };
	char path[PATH_MAX];
	int fd, rc, waited = 0;

	rc = path_of(f, path, "%s/" STATE_DIR "/%s.lock", impl(f)->dir, id);
	if (rc)
		return rc;
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		return fence__fail(f, FC_FENCE_UNAVAILABLE, "cannot open lock "
				   "'%s': %s", path, strerror(errno));
	/* Never block: a stopped process may hold the lock forever. */
	while (flock(fd, LOCK_EX | LOCK_NB) != 0) {
		if (errno != EWOULDBLOCK && errno != EINTR) {
			rc = fence__fail(f, FC_FENCE_UNAVAILABLE, "cannot lock "
					 "'%s': %s", path, strerror(errno));
			close(fd);
			return rc;
		}
		if (waited >= LOCK_TIMEOUT_MS) {
			close(fd);
			return fence__fail(f, FC_FENCE_UNAVAILABLE, "lock '%s' "
					   "is still held after %d ms", path,
					   LOCK_TIMEOUT_MS);
		}
		nanosleep(&pause, NULL);
		waited += LOCK_RETRY_MS;
	}
	*fd_out = fd;
	return 0;
}

/* The epoch recorded for op; *found = 0 when no epoch file exists. */
static int read_epoch(fence *f, const char *op, const char *id,
		      long long *epoch, int *found)
{
	char path[PATH_MAX];
	json_error_t jerr;
	json_t *doc;
	const char *stored = NULL;
	int rc;

	*found = 0;
	rc = path_of(f, path, "%s/" STATE_DIR "/%s.epoch", impl(f)->dir, id);
	if (rc)
		return rc;
	if (access(path, F_OK) != 0 && errno == ENOENT)
		return 0;
	doc = json_load_file(path, 0, &jerr);
	if (!doc)
		return fence__fail(f, FC_FENCE_UNAVAILABLE, "cannot read epoch "
				   "file '%s': %s", path, jerr.text);
	if (json_unpack(doc, "{s:s, s:I}", "operation_id", &stored, "epoch",
			epoch) != 0 || strcmp(stored, op) != 0) {
		json_decref(doc);
		return fence__fail(f, FC_FENCE_UNAVAILABLE, "epoch file '%s' "
				   "is malformed or names another operation",
				   path);
	}
	json_decref(doc);
	*found = 1;
	return 0;
}

/* text and a newline in one write; -1 unless all of it was written. */
static int write_line(int fd, const char *text)
{
	size_t len = strlen(text);
	char *buf = malloc(len + 1);
	ssize_t w;

	if (!buf)
		return -1;
	memcpy(buf, text, len);
	buf[len] = '\n';
	w = write(fd, buf, len + 1);
	free(buf);
	return w == (ssize_t)(len + 1) ? 0 : -1;
}

/* Replace the epoch file atomically: temp file, fsync, rename, fsync. */
static int write_epoch(fence *f, const char *op, const char *id,
		       long long epoch)
{
	char tmp[PATH_MAX], path[PATH_MAX], dir[PATH_MAX];
	json_t *doc;
	char *text;
	int fd, rc;

	if ((rc = path_of(f, dir, "%s/" STATE_DIR, impl(f)->dir)) ||
	    (rc = path_of(f, tmp, "%s/.epoch-XXXXXX", dir)) ||
	    (rc = path_of(f, path, "%s/%s.epoch", dir, id)))
		return rc;
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0)
		return fence__fail(f, FC_FENCE_UNAVAILABLE, "cannot create "
				   "'%s': %s", tmp, strerror(errno));
	doc = json_pack("{s:s, s:I}", "operation_id", op, "epoch",
			(json_int_t)epoch);
	/* one write of the whole text: json_dumpfd() writes piecewise and
	 * does not stop at every failed write, which left torn epoch files
	 * when a write failed (found by syscall faults, scenarios/syscalls.yaml) */
	text = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
	rc = !text || write_line(fd, text) != 0 || fchmod(fd, 0644) != 0 ||
	     sync_file(f, fd) != 0;
	free(text);
	json_decref(doc);
	if (close(fd) != 0 || rc || rename(tmp, path) != 0) {
		rc = fence__fail(f, FC_FENCE_UNAVAILABLE, "cannot write epoch "
				 "file '%s': %s", path, strerror(errno));
		unlink(tmp);
		return rc;
	}
	if (sync_dir(f, dir) != 0)
		return fence__fail(f, FC_FENCE_UNAVAILABLE, "cannot sync '%s': "
				   "%s", dir, strerror(errno));
	return 0;
}

/*
 * Look for <id>.csv in every table directory.  *found = 1 and path set
 * when there is one.  A missing DIR means none.
 */
static int find_applied(fence *f, const char *id, char path[PATH_MAX],
			int *found)
{
	const char *dir = impl(f)->dir;
	struct dirent *de;
	DIR *d;
	int rc = 0;

	*found = 0;
	d = opendir(dir);
	if (!d) {
		if (errno == ENOENT)
			return 0;
		return fence__fail(f, FC_FENCE_UNAVAILABLE, "cannot list '%s': "
				   "%s", dir, strerror(errno));
	}
	while (!rc && !*found && (errno = 0, de = readdir(d))) {
		struct stat st;

		if (de->d_name[0] == '.')
			continue;
		rc = path_of(f, path, "%s/%s/%s.csv", dir, de->d_name, id);
		if (rc)
			break;
		if (lstat(path, &st) == 0)
			*found = 1;
		else if (errno != ENOENT && errno != ENOTDIR)
			rc = fence__fail(f, FC_FENCE_UNAVAILABLE, "cannot stat "
					 "'%s': %s", path, strerror(errno));
	}
	if (!rc && !*found && errno)
		rc = fence__fail(f, FC_FENCE_UNAVAILABLE, "cannot list '%s': "
				 "%s", dir, strerror(errno));
	closedir(d);
	return rc;
}

/* An existing data file for the batch's operation: same intent or not. */
static int classify_existing(fence *f, const char *path,
			     const struct fence_batch *b,
			     enum fence_outcome *outcome)
{
	struct datafile_header h;
	char err[PATH_MAX + 128];

	if (datafile_read(path, &h, NULL, NULL, err, sizeof(err)) != 0 ||
	    !h.present || strcmp(h.operation_id, b->operation_id) != 0) {
		*outcome = FENCE_OUTCOME_UNKNOWN;
		return fence__fail(f, FC_FENCE_UNAVAILABLE, "fence file '%s' "
				   "exists but cannot be read as '%s': %s", path,
				   b->operation_id, err);
	}
	*outcome = FENCE_PROVED_PRESENT;
	if (strcmp(h.intent_digest, b->intent_digest) == 0)
		return fence__fail(f, FC_ALREADY_APPLIED, "'%s' was already "
				   "applied at epoch %lld", b->operation_id,
				   h.epoch);
	return fence__fail(f, FC_INTENT_CONFLICT, "'%s' was applied with "
			   "intent '%s', not '%s'", b->operation_id,
			   h.intent_digest, b->intent_digest);
}

/* Write the whole data file under a temp name in table_dir and fsync it. */
static int write_temp(fence *f, const char *table_dir, long long epoch,
		      const struct fence_batch *b, char tmp[PATH_MAX])
{
	struct datafile_header h = { .present = 1, .epoch = epoch,
				     .rows = (long long)b->nrows };
	FILE *fp;
	int fd, rc;

	if ((rc = path_of(f, tmp, "%s/.tmp-XXXXXX", table_dir)))
		return rc;
	snprintf(h.operation_id, sizeof(h.operation_id), "%s", b->operation_id);
	snprintf(h.intent_digest, sizeof(h.intent_digest), "%s",
		 b->intent_digest);
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0 || !(fp = fdopen(fd, "w"))) {
		rc = fence__fail(f, FC_FENCE_UNAVAILABLE, "cannot create '%s': "
				 "%s", tmp, strerror(errno));
		if (fd >= 0) {
			close(fd);
			unlink(tmp);
		}
		return rc;
	}
	rc = fchmod(fd, 0644) != 0 || datafile_write(fp, &h, b->rows,
						     b->nrows) != 0 ||
	     fflush(fp) != 0 || sync_file(f, fd) != 0;
	if (fclose(fp) != 0 || rc) {
		rc = fence__fail(f, FC_FENCE_UNAVAILABLE, "cannot write '%s': "
				 "%s", tmp, strerror(errno));
		unlink(tmp);
		return rc;
	}
	return 0;
}

static int fs_open(fence *f, const char *url)
{
	const char *dir = url + strlen("file:");
	struct fence_fs *s;
	size_t n = strlen(dir);

	if (!n)
		return fence__fail(f, FC_USAGE, "target url '%s' names no "
				   "directory", url);
	s = calloc(1, sizeof(*s));
	if (!s || !(s->dir = strdup(dir))) {
		free(s);
		return fence__fail(f, FC_NOMEM, "out of memory opening '%s'",
				   url);
	}
	/* "file:/x/" and "file:/x" are the same target. */
	while (n > 1 && s->dir[n - 1] == '/')
		s->dir[--n] = '\0';
	f->impl = s;
	return 0;
}

static void fs_close(void *p)
{
	struct fence_fs *s = p;

	free(s->dir);
	free(s);
}

static int ensure_layout(fence *f, const char *table)
{
	char path[PATH_MAX];
	int rc;

	if ((rc = ensure_dir(f, impl(f)->dir)) ||
	    (rc = path_of(f, path, "%s/" STATE_DIR, impl(f)->dir)) ||
	    (rc = ensure_dir(f, path)))
		return rc;
	if (table && ((rc = path_of(f, path, "%s/%s", impl(f)->dir, table)) ||
		      (rc = ensure_dir(f, path))))
		return rc;
	return 0;
}

static int fs_prepare(fence *f, const char *op, long long epoch)
{
	char id[ID_MAX];
	long long cur = 0;
	int lock, found, rc;

	file_id(op, id);
	rc = ensure_layout(f, NULL);
	if (rc || (rc = lock_op(f, id, &lock)))
		return rc;
	rc = read_epoch(f, op, id, &cur, &found);
	if (!rc && found && cur > epoch)
		rc = fence__fail(f, FC_STALE_EPOCH, "epoch %lld for '%s' is "
				 "stale: epoch %lld is prepared", epoch, op, cur);
	if (!rc && (!found || cur < epoch))
		rc = write_epoch(f, op, id, epoch);
	close(lock);
	return rc;
}

/* The part of apply that runs under the lock: checks, then the link. */
static int link_locked(fence *f, long long epoch, const struct fence_batch *b,
		       const char *id, const char *tmp, const char *final,
		       enum fence_outcome *outcome)
{
	char existing[PATH_MAX];
	long long cur = 0;
	int found, rc;

	rc = find_applied(f, id, existing, &found);
	if (rc)
		return rc;
	if (found)
		return classify_existing(f, existing, b, outcome);
	rc = read_epoch(f, b->operation_id, id, &cur, &found);
	if (rc)
		return rc;
	if (found && cur > epoch)
		return fence__fail(f, FC_STALE_EPOCH, "epoch %lld for '%s' is "
				   "stale: epoch %lld is prepared", epoch,
				   b->operation_id, cur);
	if ((!found || cur < epoch) &&
	    (rc = write_epoch(f, b->operation_id, id, epoch)))
		return rc;
	if (link(tmp, final) != 0) {
		if (errno == EEXIST)
			return classify_existing(f, final, b, outcome);
		return fence__fail(f, FC_FENCE_UNAVAILABLE, "cannot link '%s': "
				   "%s", final, strerror(errno));
	}
	*outcome = FENCE_OUTCOME_UNKNOWN; /* visible; durable once synced */
	return 0;
}

static int fs_apply(fence *f, long long epoch, const struct fence_batch *b,
		    enum fence_outcome *outcome)
{
	char id[ID_MAX], table_dir[PATH_MAX], tmp[PATH_MAX], final[PATH_MAX];
	int lock, rc;

	*outcome = FENCE_PROVED_ABSENT;
	if (b->strategy != FENCE_APPEND)
		return fence__fail(f, FC_USAGE, "file targets support the "
				   "append strategy only");
	file_id(b->operation_id, id);
	if ((rc = path_of(f, table_dir, "%s/%s", impl(f)->dir, b->table)) ||
	    (rc = path_of(f, final, "%s/%s.csv", table_dir, id)) ||
	    (rc = ensure_layout(f, b->table)) ||
	    (rc = write_temp(f, table_dir, epoch, b, tmp)))
		return rc;
	rc = lock_op(f, id, &lock);
	if (rc) {
		unlink(tmp);
		return rc;
	}
	rc = link_locked(f, epoch, b, id, tmp, final, outcome);
	unlink(tmp);
	/* Linked: the new entry and the unlink of the temp name become
	 * durable together, before the lock lets a newer prepare through. */
	if (!rc && *outcome == FENCE_OUTCOME_UNKNOWN) {
		if (sync_dir(f, table_dir) != 0)
			rc = fence__fail(f, FC_ERR_COMMIT_UNKNOWN, "linked '%s' "
					 "but cannot sync its directory: %s",
					 final, strerror(errno));
		else
			*outcome = FENCE_PROVED_PRESENT;
	}
	close(lock);
	return rc;
}

/* 1 when dir does not exist but its parent does. */
static int dir_provably_missing(const char *dir)
{
	struct stat st;
	char copy[PATH_MAX];

	if (stat(dir, &st) == 0 || errno != ENOENT)
		return 0;
	snprintf(copy, sizeof(copy), "%s", dir);
	return stat(dirname(copy), &st) == 0 && S_ISDIR(st.st_mode);
}

static int count_row(void *ctx, const char *key, const char *payload)
{
	(void)key;
	(void)payload;
	++*(long long *)ctx;
	return 0;
}

static int fs_probe(fence *f, const char *op, struct fence_probe *out)
{
	char id[ID_MAX], path[PATH_MAX], dir[PATH_MAX], err[PATH_MAX + 128];
	struct datafile_header h;
	long long rows = 0;
	int found, rc;

	if (dir_provably_missing(impl(f)->dir)) {
		out->answer = FENCE_ABSENT;
		return 0;
	}
	file_id(op, id);
	rc = find_applied(f, id, path, &found);
	if (rc)
		return rc;
	if (!found) {
		struct stat st;

		/* An unreadable or vanished DIR proves nothing. */
		if (stat(impl(f)->dir, &st) != 0 || !S_ISDIR(st.st_mode))
			return fence__fail(f, FC_FENCE_UNAVAILABLE, "target "
					   "directory '%s' is not there",
					   impl(f)->dir);
		out->answer = FENCE_ABSENT;
		return 0;
	}
	rc = datafile_read(path, &h, count_row, &rows, err, sizeof(err));
	if (rc)
		return fence__fail(f, rc == FC_CORRUPT ? FC_CORRUPT :
				   FC_FENCE_UNAVAILABLE, "%s", err);
	if (!h.present || strcmp(h.operation_id, op) != 0 || h.rows != rows)
		return fence__fail(f, FC_CORRUPT, "data file '%s' does not "
				   "hold the %lld rows of '%s' its header "
				   "claims (%lld found)", path, h.rows, op,
				   rows);
	/* An apply whose directory sync failed left a visible file that a
	 * crash could still take away; syncing here makes APPLIED final. */
	snprintf(dir, sizeof(dir), "%s", path);
	if (sync_dir(f, dirname(dir)) != 0)
		return fence__fail(f, FC_FENCE_UNAVAILABLE, "cannot sync the "
				   "directory of '%s': %s", path,
				   strerror(errno));
	out->answer = FENCE_APPLIED;
	out->epoch = h.epoch;
	snprintf(out->intent_digest, sizeof(out->intent_digest), "%s",
		 h.intent_digest);
	out->rows = rows;
	return 0;
}

const struct fence_ops fence_fs_ops = {
	.scheme = "file",
	.name = "fs",
	.capability = FENCE_CAP_AUTOMATIC,
	.open = fs_open,
	.close = fs_close,
	.prepare = fs_prepare,
	.apply = fs_apply,
	.probe = fs_probe,
	.features = FENCE_CAN_SKIP_SYNC,
};
