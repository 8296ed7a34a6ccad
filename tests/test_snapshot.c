/*
 * test_snapshot.c -- the snapshot store and the power-loss model
 * (harness/run/snapshot.c, snapshot_power.c).
 *
 * Every state is checked by what snap_restore() writes into a fresh
 * directory: its files, modes and links read back with plain syscalls,
 * and its own snap_take() digest, so a manifest that records too little
 * (or a restore that writes too little) fails here.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "common/fsutil.h"
#include "harness/run/snapshot.h"
#include "journal/identity.h"

struct fx {
	char top[64];              /* everything of one test */
	char store_root[128];
	snap_store *st;
	int ndirs;
	char err[512];
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	strcpy(f->top, "/tmp/fc-snapshot-XXXXXX");
	assert_non_null(mkdtemp(f->top));
	snprintf(f->store_root, sizeof(f->store_root), "%s/store", f->top);
	assert_int_equal(snap_store_open(f->store_root, &f->st, f->err,
					 sizeof(f->err)), 0);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	snap_store_close(f->st);
	assert_int_equal(fs_remove_tree(f->top), 0);
	free(f);
	return 0;
}

/* A new empty directory of the test; the caller frees the path. */
static char *new_dir(struct fx *f)
{
	char *d = malloc(PATH_MAX);

	assert_non_null(d);
	snprintf(d, PATH_MAX, "%s/d%d", f->top, ++f->ndirs);
	assert_int_equal(mkdir(d, 0755), 0);
	return d;
}

static char *at(const char *dir, const char *rel)
{
	static char buf[4][PATH_MAX];
	static int n;
	char *p = buf[n++ % 4];

	snprintf(p, PATH_MAX, "%s/%s", dir, rel);
	return p;
}

static void put_file(const char *path, const void *data, size_t len,
		     mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	assert_true(fd >= 0);
	assert_int_equal(fs_write_all(fd, data, len), 0);
	assert_int_equal(fchmod(fd, mode), 0);
	assert_int_equal(close(fd), 0);
}

static void put_text(const char *path, const char *text)
{
	put_file(path, text, strlen(text), 0644);
}

/* The file's bytes, NUL-terminated; NULL when it does not exist. */
static char *get_text(const char *path)
{
	char *buf;
	size_t len;
	int fd = open(path, O_RDONLY);

	if (fd < 0) {
		assert_int_equal(errno, ENOENT);
		return NULL;
	}
	assert_int_equal(fs_read_all(fd, 64, 1 << 20, &buf, &len), 0);
	close(fd);
	return buf;
}

static void assert_text(const char *path, const char *want)
{
	char *got = get_text(path);

	if (!got)
		fail_msg("'%s' is missing", path);
	assert_string_equal(got, want);
	free(got);
}

static void assert_absent(const char *path)
{
	struct stat sb;

	if (lstat(path, &sb) == 0)
		fail_msg("'%s' exists", path);
	assert_int_equal(errno, ENOENT);
}

static mode_t mode_of(const char *path)
{
	struct stat sb;

	assert_int_equal(lstat(path, &sb), 0);
	return sb.st_mode;
}

static void take(struct fx *f, const char *dir, char d[SNAP_DIGEST_HEX + 1])
{
	if (snap_take(f->st, dir, d, f->err, sizeof(f->err)) != 0)
		fail_msg("snap_take '%s': %s", dir, f->err);
	assert_int_equal(strlen(d), SNAP_DIGEST_HEX);
}

static void restore(struct fx *f, const char *digest, const char *dir)
{
	if (snap_restore(f->st, digest, dir, f->err, sizeof(f->err)) != 0)
		fail_msg("snap_restore into '%s': %s", dir, f->err);
}

/* State digest restored into a new directory, whose own take must give
 * the same digest back. */
static char *restored(struct fx *f, const char *digest)
{
	char *d = new_dir(f), again[SNAP_DIGEST_HEX + 1];

	restore(f, digest, d);
	take(f, d, again);
	assert_string_equal(again, digest);
	return d;
}

/* A tree with every kind of entry. */
static void make_tree(const char *dir)
{
	static const char bin[] = { 'a', 0, 'b', '\n', (char)0xff };

	put_text(at(dir, "a.txt"), "hello\n");
	put_file(at(dir, "run.sh"), "#!/bin/sh\n", 10, 0750);
	assert_int_equal(mkdir(at(dir, "sub"), 0755), 0);
	assert_int_equal(mkdir(at(dir, "sub/deeper"), 0755), 0);
	put_file(at(dir, "sub/deeper/b.bin"), bin, sizeof(bin), 0600);
	assert_int_equal(mkdir(at(dir, "empty"), 0755), 0);
	assert_int_equal(symlink("sub/deeper/b.bin", at(dir, "link")), 0);
	assert_int_equal(symlink("/nowhere/at all", at(dir, "dangling")), 0);
	put_text(at(dir, "odd\nname %41"), "newline in the name\n");
	put_file(at(dir, "empty.txt"), "", 0, 0444);
}

/* A file of several copy buffers, not a multiple of any of them. */
static void make_big(const char *path)
{
	size_t len = 300007;
	char *buf = malloc(len);

	assert_non_null(buf);
	for (size_t i = 0; i < len; i++)
		buf[i] = (char)(i * 7 + i / 251);
	put_file(path, buf, len, 0644);
	free(buf);
}

/* --- take and restore ------------------------------------------------- */

static void test_round_trip(void **state)
{
	struct fx *f = *state;
	char *src = new_dir(f), *dst, digest[SNAP_DIGEST_HEX + 1];
	char manifest[PATH_MAX], file_digest[IDENTITY_DIGEST_LEN + 1];
	char target[PATH_MAX], again[SNAP_DIGEST_HEX + 1], *third;
	snap_store *other;
	ssize_t n;
	char *bin;

	make_tree(src);
	make_big(at(src, "sub/big"));
	take(f, src, digest);
	dst = restored(f, digest);

	assert_text(at(dst, "a.txt"), "hello\n");
	assert_text(at(dst, "odd\nname %41"), "newline in the name\n");
	assert_text(at(dst, "empty.txt"), "");
	assert_int_equal(mode_of(at(dst, "run.sh")) & 07777, 0750);
	assert_int_equal(mode_of(at(dst, "a.txt")) & 07777, 0644);
	assert_int_equal(mode_of(at(dst, "empty.txt")) & 07777, 0444);
	assert_int_equal(mode_of(at(dst, "sub/deeper/b.bin")) & 07777, 0600);
	bin = get_text(at(dst, "sub/deeper/b.bin"));
	assert_memory_equal(bin, "a\0b\n\xff", 5);
	free(bin);
	assert_true(S_ISDIR(mode_of(at(dst, "empty"))));
	assert_true(S_ISLNK(mode_of(at(dst, "link"))));
	n = readlink(at(dst, "link"), target, sizeof(target));
	assert_int_equal(n, strlen("sub/deeper/b.bin"));
	assert_memory_equal(target, "sub/deeper/b.bin", n);
	n = readlink(at(dst, "dangling"), target, sizeof(target));
	assert_int_equal(n, strlen("/nowhere/at all"));

	/* the manifest's bytes are what the digest is of */
	snprintf(manifest, sizeof(manifest), "%s/states/%s.json", f->store_root,
		 digest);
	assert_int_equal(identity_file_digest(manifest, file_digest), 0);
	assert_string_equal(file_digest + 7, digest);
	assert_int_equal(identity_file_digest(at(src, "sub/big"), file_digest), 0);
	assert_int_equal(identity_file_digest(at(dst, "sub/big"), target), 0);
	assert_string_equal(file_digest, target);

	/* another handle on the same root (another worker) sees the state */
	assert_int_equal(snap_store_open(f->store_root, &other, f->err,
					 sizeof(f->err)), 0);
	third = new_dir(f);
	assert_int_equal(snap_restore(other, digest, third, f->err,
				      sizeof(f->err)), 0);
	assert_int_equal(snap_take(other, third, again, f->err,
				   sizeof(f->err)), 0);
	assert_string_equal(again, digest);
	snap_store_close(other);
	free(third);
	free(src);
	free(dst);
}

static void test_equal_trees_equal_digests(void **state)
{
	struct fx *f = *state;
	char *a = new_dir(f), *b = new_dir(f);
	char da[SNAP_DIGEST_HEX + 1], db[SNAP_DIGEST_HEX + 1];
	char dc[SNAP_DIGEST_HEX + 1], dm[SNAP_DIGEST_HEX + 1];

	make_tree(a);
	/* the same tree, made in another order */
	put_file(at(b, "empty.txt"), "", 0, 0444);
	assert_int_equal(mkdir(at(b, "empty"), 0755), 0);
	assert_int_equal(mkdir(at(b, "sub"), 0755), 0);
	assert_int_equal(symlink("/nowhere/at all", at(b, "dangling")), 0);
	assert_int_equal(mkdir(at(b, "sub/deeper"), 0755), 0);
	put_file(at(b, "sub/deeper/b.bin"), "a\0b\n\xff", 5, 0600);
	assert_int_equal(symlink("sub/deeper/b.bin", at(b, "link")), 0);
	put_text(at(b, "odd\nname %41"), "newline in the name\n");
	put_file(at(b, "run.sh"), "#!/bin/sh\n", 10, 0750);
	put_text(at(b, "a.txt"), "hello\n");
	take(f, a, da);
	take(f, b, db);
	assert_string_equal(da, db);

	/* one byte */
	put_text(at(b, "a.txt"), "hellO\n");
	take(f, b, dc);
	assert_string_not_equal(dc, da);
	/* a mode */
	put_text(at(b, "a.txt"), "hello\n");
	take(f, b, db);
	assert_string_equal(db, da);
	assert_int_equal(chmod(at(b, "a.txt"), 0640), 0);
	take(f, b, dm);
	assert_string_not_equal(dm, da);
	/* a symlink's target, an empty directory */
	assert_int_equal(chmod(at(b, "a.txt"), 0644), 0);
	assert_int_equal(unlink(at(b, "link")), 0);
	assert_int_equal(symlink("sub/deeper/b.bi", at(b, "link")), 0);
	take(f, b, dm);
	assert_string_not_equal(dm, da);
	assert_int_equal(unlink(at(b, "link")), 0);
	assert_int_equal(symlink("sub/deeper/b.bin", at(b, "link")), 0);
	assert_int_equal(rmdir(at(b, "empty")), 0);
	take(f, b, dm);
	assert_string_not_equal(dm, da);
	free(a);
	free(b);
}

static void test_excluded_names(void **state)
{
	struct fx *f = *state;
	char *a = new_dir(f), *b = new_dir(f), *c;
	char da[SNAP_DIGEST_HEX + 1], db[SNAP_DIGEST_HEX + 1];

	put_text(at(a, "data.db"), "rows");
	put_text(at(b, "data.db"), "rows");
	put_text(at(b, "try-1.out"), "captured stdout");
	put_text(at(b, "try-12.err"), "captured stderr");
	put_text(at(b, "data.db-shm"), "wal index");
	assert_int_equal(mkfifo(at(b, "fifo"), 0600), 0);
	take(f, a, da);
	take(f, b, db);
	assert_string_equal(da, db);
	/* names that only look alike are recorded */
	put_text(at(b, "try-.out"), "x");
	put_text(at(b, "-shm"), "x");
	put_text(at(b, "try-1.outs"), "x");
	take(f, b, db);
	assert_string_not_equal(da, db);

	/* restore leaves them alone */
	c = new_dir(f);
	put_text(at(c, "try-3.out"), "mine");
	put_text(at(c, "other.db-shm"), "rebuilt by sqlite");
	put_text(at(c, "junk"), "goes");
	assert_int_equal(mkdir(at(c, "olddir"), 0755), 0);
	put_text(at(c, "olddir/inner"), "goes");
	assert_int_equal(mkdir(at(c, "kept"), 0755), 0);
	put_text(at(c, "kept/try-1.err"), "mine too");
	put_text(at(c, "kept/other"), "goes");
	restore(f, da, c);
	assert_text(at(c, "data.db"), "rows");
	assert_text(at(c, "try-3.out"), "mine");
	assert_text(at(c, "other.db-shm"), "rebuilt by sqlite");
	assert_absent(at(c, "junk"));
	assert_absent(at(c, "olddir"));
	assert_text(at(c, "kept/try-1.err"), "mine too");
	assert_absent(at(c, "kept/other"));
	free(a);
	free(b);
	free(c);
}

static void test_restore_replaces(void **state)
{
	struct fx *f = *state;
	char *src = new_dir(f), *dst = new_dir(f);
	char d[SNAP_DIGEST_HEX + 1], again[SNAP_DIGEST_HEX + 1], buf[16];
	int old;

	make_tree(src);
	take(f, src, d);
	/* dst in the way of everything: extras, wrong types, wrong bytes */
	put_text(at(dst, "a.txt"), "old content");
	put_text(at(dst, "extra.txt"), "extra");
	assert_int_equal(mkdir(at(dst, "extra-dir"), 0755), 0);
	assert_int_equal(mkdir(at(dst, "extra-dir/nested"), 0755), 0);
	put_text(at(dst, "extra-dir/nested/f"), "extra");
	put_text(at(dst, "sub"), "a file where a directory goes");
	assert_int_equal(mkdir(at(dst, "run.sh"), 0755), 0);
	put_text(at(dst, "run.sh/x"), "a directory where a file goes");
	assert_int_equal(symlink("elsewhere", at(dst, "link")), 0);
	assert_int_equal(symlink(src, at(dst, "empty")), 0);
	put_file(at(dst, "empty.txt"), "", 0, 0644);
	old = open(at(dst, "a.txt"), O_RDONLY);
	assert_true(old >= 0);

	restore(f, d, dst);
	take(f, dst, again);
	assert_string_equal(again, d);
	assert_absent(at(dst, "extra.txt"));
	assert_absent(at(dst, "extra-dir"));
	assert_true(S_ISDIR(mode_of(at(dst, "empty"))));
	assert_int_equal(mode_of(at(dst, "empty.txt")) & 07777, 0444);
	/* the symlink to src was removed, never followed */
	assert_text(at(src, "a.txt"), "hello\n");
	/* a handle on the old file keeps the old bytes */
	assert_int_equal(read(old, buf, sizeof(buf)), 11);
	assert_memory_equal(buf, "old content", 11);
	close(old);
	assert_text(at(dst, "a.txt"), "hello\n");

	/* restoring again over the same state changes nothing */
	restore(f, d, dst);
	take(f, dst, again);
	assert_string_equal(again, d);
	free(src);
	free(dst);
}

static void rewrite_in_place(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY);

	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, text, strlen(text), 0), strlen(text));
	close(fd);
}

static void test_repeat_take_sees_rewrite(void **state)
{
	struct fx *f = *state;
	char *a = new_dir(f), *ref = new_dir(f);
	char d1[SNAP_DIGEST_HEX + 1], d2[SNAP_DIGEST_HEX + 1];
	char dref[SNAP_DIGEST_HEX + 1];
	struct timespec nap = { 0, 50 * 1000 * 1000 };
	struct timespec times[2];
	struct stat sb;

	put_text(at(a, "f"), "aaaa");
	put_text(at(a, "g"), "unchanged");
	/* written well before the take: the cache trusts what it hashed */
	nanosleep(&nap, NULL);
	take(f, a, d1);
	take(f, a, d2);
	assert_string_equal(d1, d2);

	/* same size, in place, and the old mtime put back: ctime still moves */
	assert_int_equal(stat(at(a, "f"), &sb), 0);
	rewrite_in_place(at(a, "f"), "bbbb");
	times[0] = sb.st_atim;
	times[1] = sb.st_mtim;
	assert_int_equal(utimensat(AT_FDCWD, at(a, "f"), times, 0), 0);
	take(f, a, d2);
	assert_string_not_equal(d2, d1);
	put_text(at(ref, "f"), "bbbb");
	put_text(at(ref, "g"), "unchanged");
	take(f, ref, dref);
	assert_string_equal(d2, dref);

	/* and at once, in the same clock tick as the last take */
	rewrite_in_place(at(a, "f"), "cccc");
	take(f, a, d2);
	rewrite_in_place(at(a, "f"), "dddd");
	take(f, a, d1);
	put_text(at(ref, "f"), "dddd");
	take(f, ref, dref);
	assert_string_equal(d1, dref);
	assert_string_not_equal(d1, d2);
	free(a);
	free(ref);
}

static void test_errors(void **state)
{
	struct fx *f = *state;
	char *a = new_dir(f), d[SNAP_DIGEST_HEX + 1];

	assert_int_equal(snap_restore(f->st, "0000000000000000000000000000000000000000000000000000000000000000",
				      a, f->err, sizeof(f->err)), FC_USAGE);
	assert_non_null(strstr(f->err, "no state"));
	assert_int_equal(snap_restore(f->st, "../x", a, f->err, sizeof(f->err)),
			 FC_USAGE);
	assert_int_equal(snap_take(f->st, at(f->top, "missing"), d, f->err,
				   sizeof(f->err)), FC_IO);
	assert_non_null(strstr(f->err, "missing"));
	snap_store_close(NULL);
	snap_durable_free(NULL);
	free(a);
}

/* Files in objects/ (temporaries included). */
static int objects_in(struct fx *f)
{
	char path[256];
	int n = 0;
	DIR *d;
	struct dirent *e;

	snprintf(path, sizeof(path), "%s/objects", f->store_root);
	assert_non_null(d = opendir(path));
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

/* The store's limit: past it a new file is refused (FC_NOSPACE) and
 * nothing is written; processes sharing the counter share the limit. */
static void test_limit(void **state)
{
	struct fx *f = *state;
	char *a = new_dir(f), *b = new_dir(f), d[SNAP_DIGEST_HEX + 1];
	unsigned long long used = 0;
	snap_store *other;

	put_text(at(a, "one.txt"), "a file of some forty bytes, give or take\n");
	snap_store_limit(f->st, 10, NULL);
	assert_int_equal(snap_take(f->st, a, d, f->err, sizeof(f->err)),
			 FC_NOSPACE);
	assert_non_null(strstr(f->err, "limit of 0 KiB"));
	assert_int_equal(objects_in(f), 0);

	/* no limit of its own, a counter to share: the bytes are counted */
	snap_store_limit(f->st, 0, &used);
	take(f, a, d);
	assert_int_equal(used, 41);
	take(f, a, d); /* nothing new: nothing counted */
	assert_int_equal(used, 41);

	/* another process's store with the same counter meets the limit */
	assert_int_equal(snap_store_open(f->store_root, &other, f->err,
					 sizeof(f->err)), 0);
	snap_store_limit(other, 60, &used);
	put_text(at(b, "two.txt"), "another file, thirty bytes\n");
	assert_int_equal(snap_take(other, b, d, f->err, sizeof(f->err)),
			 FC_NOSPACE);
	assert_int_equal(used, 41);
	snap_store_limit(other, 100, &used);
	assert_int_equal(snap_take(other, b, d, f->err, sizeof(f->err)), 0);
	assert_int_equal(used, 41 + 27);
	snap_store_close(other);

	/* a removed store gives its bytes back, and is gone */
	snap_store_close(f->st);
	f->st = NULL;
	assert_int_equal(snap_store_remove(f->store_root, &used, f->err,
					   sizeof(f->err)), 0);
	assert_int_equal(used, 0);
	assert_int_equal(access(f->store_root, F_OK), -1);
	/* what another store counted is not taken below zero */
	used = 5;
	assert_int_equal(snap_store_open(f->store_root, &f->st, f->err,
					 sizeof(f->err)), 0);
	snap_store_limit(f->st, 0, &used);
	take(f, a, d);
	assert_int_equal(used, 5 + 41);
	snap_store_close(f->st);
	f->st = NULL;
	used = 10;
	assert_int_equal(snap_store_remove(f->store_root, &used, f->err,
					   sizeof(f->err)), 0);
	assert_int_equal(used, 0);
	free(a);
	free(b);
}

/* A store the route could reach is checked on the way out: an edited
 * object or manifest never seeds a schedule (restore without the
 * checks writes the forged bytes and this fails). */
static void test_tampered_store(void **state)
{
	struct fx *f = *state;
	char *a = new_dir(f), *b = new_dir(f), *c = new_dir(f);
	char d[SNAP_DIGEST_HEX + 1], man[512], obj[512];
	snap_store *other;
	json_t *m;

	put_text(at(a, "journal.db"), "committed");
	take(f, a, d);
	snprintf(man, sizeof(man), "%s/states/%s.json", f->store_root, d);
	m = json_load_file(man, 0, NULL);
	assert_non_null(m);
	snprintf(obj, sizeof(obj), "%s/objects/%s", f->store_root,
		 json_string_value(json_object_get(json_array_get(
			json_object_get(m, "entries"), 0), "object")));
	json_decref(m);
	assert_int_equal(chmod(obj, 0644), 0);
	put_text(obj, "forged!!!");
	assert_int_equal(snap_restore(f->st, d, b, f->err, sizeof(f->err)),
			 FC_CORRUPT);
	assert_non_null(strstr(f->err, "was changed"));
	assert_absent(at(b, "journal.db"));
	/* a manifest edited in place is refused too, by a handle that reads
	 * it (f->st checked it above and keeps what it checked) */
	assert_int_equal(chmod(man, 0644), 0);
	put_text(man, "{\"entries\":[],\"format\":\"fencecert-snapshot/1\"}");
	assert_int_equal(snap_store_open(f->store_root, &other, f->err,
					 sizeof(f->err)), 0);
	assert_int_equal(snap_restore(other, d, c, f->err, sizeof(f->err)),
			 FC_CORRUPT);
	assert_non_null(strstr(f->err, "named after"));
	snap_store_close(other);
	free(a);
	free(b);
	free(c);
}

/* What a route leaves in its schedule dir: a FIFO (with no writer: a
 * plain open would block), links out of the dir and to a device, and as
 * root a device node.  A take neither blocks nor follows: links are
 * recorded as links, a FIFO or a device as nothing; a restore over a
 * FIFO replaces it. */
static void test_hostile_schedule_dir(void **state)
{
	struct fx *f = *state;
	char *a = new_dir(f), *b, *c = new_dir(f), d[SNAP_DIGEST_HEX + 1];
	char target[PATH_MAX];

	put_text(at(a, "journal.db"), "committed");
	assert_int_equal(mkfifo(at(a, "fifo"), 0644), 0);
	assert_int_equal(symlink("/dev/zero", at(a, "zero")), 0);
	put_text(at(f->top, "outside"), "not the route's");
	assert_int_equal(symlink(at(f->top, "outside"), at(a, "out")), 0);
	if (geteuid() == 0)
		assert_int_equal(mknod(at(a, "dev"), S_IFCHR | 0644,
				       makedev(1, 5)), 0);
	alarm(10);
	take(f, a, d);
	b = restored(f, d);
	alarm(0);
	assert_text(at(b, "journal.db"), "committed");
	assert_absent(at(b, "fifo"));
	assert_absent(at(b, "dev"));
	assert_true(S_ISLNK(mode_of(at(b, "zero"))));
	assert_true(S_ISLNK(mode_of(at(b, "out"))));
	assert_int_equal(readlink(at(b, "out"), target, sizeof(target)),
			 (ssize_t)strlen(at(f->top, "outside")));
	/* a FIFO where a restored file goes */
	assert_int_equal(mkfifo(at(c, "journal.db"), 0644), 0);
	alarm(10);
	restore(f, d, c);
	alarm(0);
	assert_true(S_ISREG(mode_of(at(c, "journal.db"))));
	assert_text(at(c, "journal.db"), "committed");
	free(a);
	free(b);
	free(c);
}

/* The store's own files, should a route reach them: a FIFO as an object
 * or a manifest, a manifest that is a link.  A restore fails at once,
 * never blocks. */
static void test_hostile_store(void **state)
{
	struct fx *f = *state;
	char *a = new_dir(f), *b = new_dir(f), d[SNAP_DIGEST_HEX + 1];
	char man[512], obj[512], copy[512];
	snap_store *other;
	json_t *m;

	put_text(at(a, "journal.db"), "committed");
	take(f, a, d);
	snprintf(man, sizeof(man), "%s/states/%s.json", f->store_root, d);
	m = json_load_file(man, 0, NULL);
	assert_non_null(m);
	snprintf(obj, sizeof(obj), "%s/objects/%s", f->store_root,
		 json_string_value(json_object_get(json_array_get(
			json_object_get(m, "entries"), 0), "object")));
	json_decref(m);
	/* the object a FIFO */
	assert_int_equal(unlink(obj), 0);
	assert_int_equal(mkfifo(obj, 0644), 0);
	alarm(10);
	assert_int_equal(snap_restore(f->st, d, b, f->err, sizeof(f->err)),
			 FC_IO);
	alarm(0);
	assert_non_null(strstr(f->err, "not a regular file"));
	assert_absent(at(b, "journal.db"));
	/* the manifest a FIFO, read by a handle that has not kept it */
	snprintf(copy, sizeof(copy), "%s/manifest-copy", f->top);
	assert_int_equal(rename(man, copy), 0);
	assert_int_equal(mkfifo(man, 0644), 0);
	assert_int_equal(snap_store_open(f->store_root, &other, f->err,
					 sizeof(f->err)), 0);
	alarm(10);
	assert_int_equal(snap_restore(other, d, b, f->err, sizeof(f->err)),
			 FC_IO);
	alarm(0);
	assert_non_null(strstr(f->err, "not a regular file"));
	/* ... or a link to a manifest elsewhere */
	assert_int_equal(unlink(man), 0);
	assert_int_equal(symlink(copy, man), 0);
	assert_int_equal(snap_restore(other, d, b, f->err, sizeof(f->err)),
			 FC_IO);
	assert_non_null(strstr(f->err, "no state"));
	snap_store_close(other);
	free(a);
	free(b);
}

/* No restore's temporary file left in dir. */
static void assert_no_temporaries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;

	assert_non_null(d);
	while ((e = readdir(d)))
		assert_null(strstr(e->d_name, ".snap-tmp-"));
	closedir(d);
}

/* A handle reads a state's manifest once: what it checked is what it
 * restores, whatever the file says later; a file that is not there yet
 * is written in place, one that is there replaced. */
static void test_restore_keeps_manifest(void **state)
{
	struct fx *f = *state;
	char *a = new_dir(f), *b = new_dir(f), *c = new_dir(f);
	char d[SNAP_DIGEST_HEX + 1], again[SNAP_DIGEST_HEX + 1], man[512];
	struct stat before, after;

	put_text(at(a, "journal.db"), "committed");
	put_text(at(a, "x.txt"), "x");
	take(f, a, d);
	restore(f, d, b);
	assert_text(at(b, "journal.db"), "committed");
	snprintf(man, sizeof(man), "%s/states/%s.json", f->store_root, d);
	assert_int_equal(chmod(man, 0644), 0);
	put_text(man, "{\"entries\":[],\"format\":\"fencecert-snapshot/1\"}");
	restore(f, d, c);
	take(f, c, again);
	assert_string_equal(again, d);
	/* over a state with other bytes: replaced (a new file), the rest
	 * left as it is */
	put_text(at(b, "journal.db"), "changed");
	assert_int_equal(stat(at(b, "journal.db"), &before), 0);
	restore(f, d, b);
	assert_int_equal(stat(at(b, "journal.db"), &after), 0);
	assert_true(before.st_ino != after.st_ino);
	assert_text(at(b, "journal.db"), "committed");
	assert_no_temporaries(b);
	free(a);
	free(b);
	free(c);
}

/* A fresh directory gets every file written where it goes: nothing is
 * renamed into it (a rename is what makes a process holding the old file
 * keep the old bytes, and there is no old file). */
static void test_restore_fresh_in_place(void **state)
{
	struct fx *f = *state;
	char *a = new_dir(f), *b = new_dir(f), buf[4096];
	char d[SNAP_DIGEST_HEX + 1], again[SNAP_DIGEST_HEX + 1];
	int in = inotify_init1(IN_NONBLOCK | IN_CLOEXEC), created = 0;
	ssize_t n;

	put_text(at(a, "journal.db"), "committed");
	put_text(at(a, "target.db"), "rows");
	take(f, a, d);
	assert_true(in >= 0);
	assert_true(inotify_add_watch(in, b, IN_CREATE | IN_MOVED_TO) >= 0);
	restore(f, d, b);
	while ((n = read(in, buf, sizeof(buf))) > 0)
		for (char *p = buf; p < buf + n;) {
			const struct inotify_event *ev = (const void *)p;
			assert_false(ev->mask & IN_MOVED_TO);
			created += (ev->mask & IN_CREATE) != 0;
			p += sizeof(*ev) + ev->len;
		}
	assert_int_equal(created, 2);
	take(f, b, again);
	assert_string_equal(again, d);
	close(in);
	free(a);
	free(b);
}

/* The handle keeps the last SNAP_MANIFESTS_KEPT manifests it checked: an
 * older one is read and checked again (an edit is refused then), a
 * recent one is not. */
static void test_restore_forgets_oldest(void **state)
{
	struct fx *f = *state;
	char d[SNAP_MANIFESTS_KEPT + 1][SNAP_DIGEST_HEX + 1], man[PATH_MAX + 512];
	char text[32];
	char *src = new_dir(f), *dst;

	for (int i = 0; i <= SNAP_MANIFESTS_KEPT; i++) {
		snprintf(text, sizeof(text), "state %d", i);
		put_text(at(src, "journal.db"), text);
		take(f, src, d[i]);
		dst = new_dir(f);
		restore(f, d[i], dst);
		free(dst);
	}
	for (int i = 0; i <= SNAP_MANIFESTS_KEPT; i += SNAP_MANIFESTS_KEPT) {
		snprintf(man, sizeof(man), "%s/states/%s.json", f->store_root,
			 d[i]);
		assert_int_equal(chmod(man, 0644), 0);
		put_text(man, "{\"entries\":[],\"format\":\"fencecert-snapshot/1\"}");
	}
	dst = new_dir(f);
	restore(f, d[SNAP_MANIFESTS_KEPT], dst); /* kept: as checked */
	assert_text(at(dst, "journal.db"), text);
	free(dst);
	dst = new_dir(f);
	assert_int_equal(snap_restore(f->st, d[0], dst, f->err, sizeof(f->err)),
			 FC_CORRUPT);
	free(dst);
	free(src);
}

/* --- power loss ------------------------------------------------------- */

static snap_durable *durable(struct fx *f, const char *dir)
{
	snap_durable *d = NULL;

	if (snap_durable_new(f->st, dir, &d, f->err, sizeof(f->err)) != 0)
		fail_msg("snap_durable_new: %s", f->err);
	return d;
}

static void synced(struct fx *f, snap_durable *d, const char *path)
{
	char abs[PATH_MAX];

	assert_non_null(realpath(path, abs));
	if (snap_durable_synced(d, abs, f->err, sizeof(f->err)) != 0)
		fail_msg("snap_durable_synced '%s': %s", abs, f->err);
}

/* The power state, restored into a new directory. */
static char *power(struct fx *f, snap_durable *d)
{
	char digest[SNAP_DIGEST_HEX + 1];

	if (snap_take_power(d, digest, f->err, sizeof(f->err)) != 0)
		fail_msg("snap_take_power: %s", f->err);
	return restored(f, digest);
}

/* A schedule's dir as the harness made it: the baseline. */
static char *baseline_dir(struct fx *f)
{
	char *dir = new_dir(f);

	put_text(at(dir, "base.txt"), "base");
	put_text(at(dir, "data"), "OLD");
	assert_int_equal(mkdir(at(dir, "conf"), 0755), 0);
	put_text(at(dir, "conf/c.ini"), "[c]");
	return dir;
}

static void test_power_baseline_survives(void **state)
{
	struct fx *f = *state;
	char *dir = baseline_dir(f), *p;
	char base[SNAP_DIGEST_HEX + 1], pd[SNAP_DIGEST_HEX + 1];
	snap_durable *d = durable(f, dir);

	take(f, dir, base);
	assert_int_equal(snap_take_power(d, pd, f->err, sizeof(f->err)), 0);
	assert_string_equal(pd, base);
	/* unsynced changes to baseline files are lost */
	put_text(at(dir, "base.txt"), "changed but never synced");
	assert_int_equal(unlink(at(dir, "data")), 0);
	assert_int_equal(rename(at(dir, "conf/c.ini"), at(dir, "c.ini")), 0);
	p = power(f, d);
	assert_text(at(p, "base.txt"), "base");
	assert_text(at(p, "data"), "OLD");
	assert_text(at(p, "conf/c.ini"), "[c]");
	assert_absent(at(p, "c.ini"));
	snap_durable_free(d);
	free(dir);
	free(p);
}

static void test_power_synced_content_only(void **state)
{
	struct fx *f = *state;
	char *dir = baseline_dir(f), *p;
	snap_durable *d = durable(f, dir);

	put_text(at(dir, "base.txt"), "v1");
	synced(f, d, at(dir, "base.txt"));
	rewrite_in_place(at(dir, "base.txt"), "v2 and more");
	p = power(f, d);
	assert_text(at(p, "base.txt"), "v1");
	snap_durable_free(d);
	free(dir);
	free(p);
}

static void test_power_new_file_needs_dir_sync(void **state)
{
	struct fx *f = *state;
	char *dir = baseline_dir(f), *p1, *p2;
	snap_durable *d = durable(f, dir);

	put_text(at(dir, "new.txt"), "fresh");
	synced(f, d, at(dir, "new.txt"));
	p1 = power(f, d);
	assert_absent(at(p1, "new.txt"));
	assert_text(at(p1, "base.txt"), "base");
	synced(f, d, dir);
	p2 = power(f, d);
	assert_text(at(p2, "new.txt"), "fresh");
	snap_durable_free(d);
	free(dir);
	free(p1);
	free(p2);
}

static void test_power_rename_needs_dir_sync(void **state)
{
	struct fx *f = *state;
	char *dir = baseline_dir(f), *p1, *p2;
	snap_durable *d = durable(f, dir);

	put_text(at(dir, "data.tmp"), "NEW");
	synced(f, d, at(dir, "data.tmp"));
	assert_int_equal(rename(at(dir, "data.tmp"), at(dir, "data")), 0);
	p1 = power(f, d);
	assert_text(at(p1, "data"), "OLD");
	assert_absent(at(p1, "data.tmp"));
	synced(f, d, dir);
	p2 = power(f, d);
	assert_text(at(p2, "data"), "NEW");
	assert_absent(at(p2, "data.tmp"));
	snap_durable_free(d);
	free(dir);
	free(p1);
	free(p2);
}

static void model(struct fx *f, snap_durable *d, char out[SNAP_DIGEST_HEX + 1])
{
	if (snap_take_model(d, out, f->err, sizeof(f->err)) != 0)
		fail_msg("snap_take_model: %s", f->err);
}

/* The model's digest tells apart what the files and the power state do
 * not: a file synced that no synced listing names yet survives a power
 * loss once its directory is synced, an unsynced one comes back empty.
 * Equal models give equal digests, in two directories too. */
static void test_power_model_digest(void **state)
{
	struct fx *f = *state;
	char *a = baseline_dir(f), *b = baseline_dir(f), *p;
	char ka[SNAP_DIGEST_HEX + 1], kb[SNAP_DIGEST_HEX + 1];
	char pa[SNAP_DIGEST_HEX + 1], pb[SNAP_DIGEST_HEX + 1];
	char ma[SNAP_DIGEST_HEX + 1], mb[SNAP_DIGEST_HEX + 1];
	snap_durable *da = durable(f, a), *db = durable(f, b);

	model(f, da, ma);
	model(f, db, mb);
	assert_string_equal(ma, mb);
	/* the same write in both, synced in a only */
	put_text(at(a, "data.tmp"), "NEW");
	put_text(at(b, "data.tmp"), "NEW");
	synced(f, da, at(a, "data.tmp"));
	take(f, a, ka);
	take(f, b, kb);
	assert_string_equal(ka, kb);
	assert_int_equal(snap_take_power(da, pa, f->err, sizeof(f->err)), 0);
	assert_int_equal(snap_take_power(db, pb, f->err, sizeof(f->err)), 0);
	assert_string_equal(pa, pb); /* data.tmp is in no synced listing */
	model(f, da, ma);
	model(f, db, mb);
	assert_string_not_equal(ma, mb);
	/* and the futures differ: renamed, its directory synced */
	assert_int_equal(rename(at(b, "data.tmp"), at(b, "data")), 0);
	synced(f, db, b);
	p = power(f, db);
	assert_text(at(p, "data"), ""); /* never synced: empty */
	free(p);
	/* synced in b too: the same model again */
	snap_durable_free(db);
	free(b);
	b = baseline_dir(f);
	db = durable(f, b);
	put_text(at(b, "data.tmp"), "NEW");
	synced(f, db, at(b, "data.tmp"));
	model(f, db, mb);
	assert_string_equal(ma, mb);
	/* a file the listing names but that is gone now: named by number */
	assert_int_equal(unlink(at(a, "base.txt")), 0);
	assert_int_equal(unlink(at(b, "base.txt")), 0);
	model(f, da, ma);
	model(f, db, mb);
	assert_string_equal(ma, mb);
	p = power(f, da);
	assert_text(at(p, "base.txt"), "base");
	free(p);
	/* a's future: its synced data.tmp survives, renamed, once the
	 * directory is synced (b's came back empty above) */
	assert_int_equal(rename(at(a, "data.tmp"), at(a, "data")), 0);
	synced(f, da, a);
	p = power(f, da);
	assert_text(at(p, "data"), "NEW");
	free(p);
	snap_durable_free(da);
	snap_durable_free(db);
	free(a);
	free(b);
}

/* The model put back over a restored copy of the tree (another directory,
 * other inodes) goes on as the original does: the same syncs and renames
 * in both leave the same power state -- a file synced but not yet named
 * by a synced listing, one never synced, one gone that a synced listing
 * still names, a directory made since. */
static void test_power_model_restore(void **state)
{
	struct fx *f = *state;
	char *a = baseline_dir(f), *b = new_dir(f);
	char kill[SNAP_DIGEST_HEX + 1], m[SNAP_DIGEST_HEX + 1];
	char pa[SNAP_DIGEST_HEX + 1], pb[SNAP_DIGEST_HEX + 1];
	snap_durable *da = durable(f, a), *db = NULL;
	char *dirs[2] = { a, b };
	snap_durable *ds[2];

	put_text(at(a, "data.tmp"), "NEW");
	synced(f, da, at(a, "data.tmp"));
	put_text(at(a, "log"), "never synced");
	assert_int_equal(unlink(at(a, "base.txt")), 0);
	assert_int_equal(mkdir(at(a, "sub"), 0755), 0);
	put_text(at(a, "sub/x"), "x");
	synced(f, da, at(a, "sub/x"));
	take(f, a, kill);
	model(f, da, m);
	restore(f, kill, b);
	if (snap_durable_restore(f->st, b, m, &db, f->err, sizeof(f->err)))
		fail_msg("snap_durable_restore: %s", f->err);
	ds[0] = da;
	ds[1] = db;
	for (int i = 0; i < 2; i++) {
		/* before any more syncs: the same power state */
		assert_int_equal(snap_take_power(ds[i], i ? pb : pa, f->err,
						 sizeof(f->err)), 0);
	}
	assert_string_equal(pa, pb);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(rename(at(dirs[i], "data.tmp"),
					at(dirs[i], "data")), 0);
		synced(f, ds[i], dirs[i]);
		synced(f, ds[i], at(dirs[i], "sub"));
		assert_int_equal(snap_take_power(ds[i], i ? pb : pa, f->err,
						 sizeof(f->err)), 0);
	}
	assert_string_equal(pa, pb);
	{
		char *p = power(f, db);
		assert_text(at(p, "data"), "NEW");
		assert_text(at(p, "log"), "");
		assert_absent(at(p, "base.txt"));
		assert_text(at(p, "sub/x"), "x");
		free(p);
	}
	/* a model the tree does not fit is refused */
	assert_int_equal(unlink(at(b, "sub/x")), 0);
	snap_durable_free(db);
	db = NULL;
	assert_int_equal(snap_durable_restore(f->st, b, m, &db, f->err,
					      sizeof(f->err)), FC_CORRUPT);
	assert_null(db);
	snap_durable_free(da);
	free(a);
	free(b);
}

static void test_power_unsynced_file_is_empty(void **state)
{
	struct fx *f = *state;
	char *dir = baseline_dir(f), *p;
	snap_durable *d = durable(f, dir);

	put_file(at(dir, "log"), "never synced", 12, 0640);
	assert_int_equal(symlink("base.txt", at(dir, "ln")), 0);
	put_text(at(dir, "try-1.out"), "the harness's");
	synced(f, d, dir);
	p = power(f, d);
	assert_text(at(p, "log"), "");
	assert_int_equal(mode_of(at(p, "log")) & 07777, 0640);
	assert_true(S_ISLNK(mode_of(at(p, "ln"))));
	assert_absent(at(p, "try-1.out"));
	assert_text(at(p, "base.txt"), "base");
	snap_durable_free(d);
	free(dir);
	free(p);
}

static void test_power_new_directory(void **state)
{
	struct fx *f = *state;
	char *dir = baseline_dir(f), *p1, *p2, *p3;
	snap_durable *d = durable(f, dir);

	assert_int_equal(mkdir(at(dir, "sub"), 0755), 0);
	put_text(at(dir, "sub/f"), "in sub");
	synced(f, d, at(dir, "sub/f"));
	synced(f, d, at(dir, "sub"));
	/* the parent never synced: sub is not durable, nor what it holds */
	p1 = power(f, d);
	assert_absent(at(p1, "sub"));
	/* the parent synced: sub exists with its own durable listing */
	synced(f, d, dir);
	p2 = power(f, d);
	assert_text(at(p2, "sub/f"), "in sub");
	/* a second new directory named by its parent, never listed: empty */
	assert_int_equal(mkdir(at(dir, "sub2"), 0755), 0);
	put_text(at(dir, "sub2/g"), "lost");
	synced(f, d, at(dir, "sub2/g"));
	synced(f, d, dir);
	p3 = power(f, d);
	assert_true(S_ISDIR(mode_of(at(p3, "sub2"))));
	assert_absent(at(p3, "sub2/g"));
	snap_durable_free(d);
	free(dir);
	free(p1);
	free(p2);
	free(p3);
}

static void test_power_sync_all(void **state)
{
	struct fx *f = *state;
	char *dir = baseline_dir(f), *p;
	char now[SNAP_DIGEST_HEX + 1], pd[SNAP_DIGEST_HEX + 1];
	snap_durable *d = durable(f, dir);

	assert_int_equal(mkdir(at(dir, "a"), 0755), 0);
	assert_int_equal(mkdir(at(dir, "a/b"), 0755), 0);
	put_text(at(dir, "a/b/deep"), "deep");
	put_text(at(dir, "data.tmp"), "NEW");
	assert_int_equal(rename(at(dir, "data.tmp"), at(dir, "data")), 0);
	put_text(at(dir, "base.txt"), "rewritten");
	assert_int_equal(unlink(at(dir, "conf/c.ini")), 0);
	assert_int_equal(symlink("a/b/deep", at(dir, "ln")), 0);
	assert_int_equal(snap_durable_synced_all(d, f->err, sizeof(f->err)), 0);
	take(f, dir, now);
	assert_int_equal(snap_take_power(d, pd, f->err, sizeof(f->err)), 0);
	assert_string_equal(pd, now);
	/* and a write after it is lost again */
	put_text(at(dir, "a/b/deep"), "later");
	p = power(f, d);
	assert_text(at(p, "a/b/deep"), "deep");
	assert_text(at(p, "data"), "NEW");
	assert_absent(at(p, "conf/c.ini"));
	snap_durable_free(d);
	free(dir);
	free(p);
}

static void test_power_ignored_paths(void **state)
{
	struct fx *f = *state;
	char *dir = baseline_dir(f), *other = new_dir(f);
	char abs[PATH_MAX], path[PATH_MAX + 16];
	char base[SNAP_DIGEST_HEX + 1], pd[SNAP_DIGEST_HEX + 1];
	snap_durable *d = durable(f, dir);

	take(f, dir, base);
	assert_non_null(realpath(dir, abs));
	put_text(at(dir, "new"), "x");
	snprintf(path, sizeof(path), "%s/new (deleted)", abs);
	assert_int_equal(snap_durable_synced(d, path, f->err, sizeof(f->err)), 0);
	snprintf(path, sizeof(path), "%s/gone", abs);
	assert_int_equal(snap_durable_synced(d, path, f->err, sizeof(f->err)), 0);
	snprintf(path, sizeof(path), "%s-not-below", abs);
	assert_int_equal(snap_durable_synced(d, path, f->err, sizeof(f->err)), 0);
	synced(f, d, other);
	assert_int_equal(snap_take_power(d, pd, f->err, sizeof(f->err)), 0);
	assert_string_equal(pd, base);
	snap_durable_free(d);
	free(dir);
	free(other);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_round_trip),
		T(test_equal_trees_equal_digests),
		T(test_excluded_names),
		T(test_restore_replaces),
		T(test_repeat_take_sees_rewrite),
		T(test_errors),
		T(test_tampered_store),
		T(test_hostile_schedule_dir),
		T(test_hostile_store),
		T(test_restore_keeps_manifest),
		T(test_restore_fresh_in_place),
		T(test_restore_forgets_oldest),
		T(test_limit),
		T(test_power_baseline_survives),
		T(test_power_synced_content_only),
		T(test_power_new_file_needs_dir_sync),
		T(test_power_rename_needs_dir_sync),
		T(test_power_model_digest),
		T(test_power_model_restore),
		T(test_power_unsynced_file_is_empty),
		T(test_power_new_directory),
		T(test_power_sync_all),
		T(test_power_ignored_paths),
	};
#undef T

	return cmocka_run_group_tests_name("snapshot", tests, NULL, NULL);
}
