/*
 * fsutil.c -- mkdir -p, rm -rf, whole reads and writes, directory syncs
 * (fsutil.h).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/openat2.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/fsutil.h"

#define FS_REMOVE_FAST_DEPTH 32 /* deeper: nftw() */

/* mkdir -p of buf (which it may change and restores): the directory
 * itself first, its parents only when it says ENOENT, so the usual case
 * -- the parent exists -- is one mkdir() instead of one per component. */
static int mkdirs(char *buf)
{
	char *slash;
	int rc;

	if (mkdir(buf, 0755) == 0 || errno == EEXIST)
		return 0;
	if (errno != ENOENT || !(slash = strrchr(buf, '/')) || slash == buf)
		return FC_IO;
	*slash = '\0';
	rc = mkdirs(buf);
	*slash = '/';
	if (rc)
		return rc;
	return mkdir(buf, 0755) == 0 || errno == EEXIST ? 0 : FC_IO;
}

int fs_mkdirs(const char *path)
{
	char buf[PATH_MAX];
	size_t len = strlen(path);

	if (len == 0 || len >= sizeof(buf))
		return FC_IO;
	memcpy(buf, path, len + 1);
	while (len > 1 && buf[len - 1] == '/')
		buf[--len] = '\0';
	return mkdirs(buf);
}

static int remove_one(const char *path, const struct stat *sb, int flag,
		      struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	if (remove(path) < 0 && errno != ENOENT)
		return -1;
	return 0;
}

/* The header of one entry getdents64() returns (linux_dirent64). */
struct dent64 {
	unsigned long long ino;
	long long off;
	unsigned short reclen;
	unsigned char type;
	char name[];
};

/* Empty the directory open as dfd (which this closes), depth first,
 * without a stat per entry: each entry's type says what it is, and where
 * it cannot (DT_UNKNOWN) unlink is tried first.  Symbolic links are
 * removed, never followed.  The entries come from getdents64() itself, not
 * readdir(): fdopendir() would fstat and fcntl each directory first, three
 * system calls per level of every schedule directory.  -1 on any failure:
 * fs_remove_tree() then hands what is left to nftw(), which needs no file
 * descriptor per level. */
static int empty_fd(int dfd, int depth)
{
	char buf[4096] __attribute__((aligned(8)));
	ssize_t len;
	int rc = 0;

	while (!rc && (len = getdents64(dfd, buf, sizeof(buf))) > 0) {
		for (ssize_t at = 0; !rc && at < len;) {
			const struct dent64 *e = (const void *)(buf + at);
			const char *n = e->name;
			int sub;

			at += e->reclen;
			if (n[0] == '.' && (!n[1] || (n[1] == '.' && !n[2])))
				continue;
			if (e->type != DT_DIR &&
			    (unlinkat(dfd, n, 0) == 0 || errno == ENOENT))
				continue;
			if ((e->type != DT_DIR && e->type != DT_UNKNOWN &&
			     errno != EISDIR) || depth >= FS_REMOVE_FAST_DEPTH) {
				rc = -1;
				break;
			}
			sub = openat(dfd, n, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
				     O_CLOEXEC);
			if (sub < 0 || empty_fd(sub, depth + 1) < 0 ||
			    (unlinkat(dfd, n, AT_REMOVEDIR) < 0 && errno != ENOENT))
				rc = -1;
		}
	}
	if (len < 0)
		rc = -1;
	close(dfd);
	return rc;
}

int fs_remove_tree(const char *path)
{
	struct stat sb;
	int dfd;

	if (lstat(path, &sb) < 0)
		return errno == ENOENT ? 0 : FC_IO;
	if (!S_ISDIR(sb.st_mode))
		return unlink(path) < 0 && errno != ENOENT ? FC_IO : 0;
	dfd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd >= 0 && empty_fd(dfd, 0) == 0 &&
	    (rmdir(path) == 0 || errno == ENOENT))
		return 0;
	if (nftw(path, remove_one, 16, FTW_DEPTH | FTW_PHYS) < 0)
		return FC_IO;
	return 0;
}

int fs_empty_dir(const char *path)
{
	int rc, dfd;

	/* the usual case, a fresh try's XCom dir: one mkdir() says it was
	 * missing and is now there, empty */
	if (mkdir(path, 0755) == 0)
		return 0;
	if (errno != EEXIST)
		return fs_mkdirs(path);
	/* the directory itself stays (same inode: a power-loss model that
	 * counts it as synced still finds it); only its entries go */
	dfd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd >= 0 && empty_fd(dfd, 0) == 0)
		return 0;
	rc = fs_remove_tree(path);
	return rc ? rc : fs_mkdirs(path);
}

/* The one write-everything loop: write(), or send() without SIGPIPE on a
 * socket (falling back to write() on ENOTSOCK). */
static int put_all(int fd, const void *buf, size_t len, bool sock)
{
	const char *p = buf;

	while (len) {
		ssize_t r = sock ? send(fd, p, len, MSG_NOSIGNAL) :
			    write(fd, p, len);

		if (r < 0 && sock && errno == ENOTSOCK) {
			sock = false;
			continue;
		}
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			if (r == 0)
				errno = EIO;
			return FC_IO;
		}
		p += r;
		len -= (size_t)r;
	}
	return 0;
}

int fs_write_all(int fd, const void *buf, size_t len)
{
	return put_all(fd, buf, len, false);
}

int fs_send_all(int fd, const void *buf, size_t len)
{
	return put_all(fd, buf, len, true);
}

int fs_fsync_dir(const char *path)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int rc, e;

	if (fd < 0)
		return FC_IO;
	rc = fsync(fd);
	e = errno;
	close(fd);
	errno = e;
	return rc < 0 ? FC_IO : 0;
}

int fs_read_all(int fd, size_t cap, size_t max_cap, char **out, size_t *len)
{
	char *buf = malloc(cap), *grown;

	*out = NULL;
	*len = 0;
	if (!buf)
		return FC_NOMEM;
	for (;;) {
		ssize_t got;

		if (*len + 1 == cap) {
			if (cap >= max_cap) {
				free(buf);
				return FC_USAGE;
			}
			grown = realloc(buf, cap * 2);
			if (!grown) {
				free(buf);
				return FC_NOMEM;
			}
			buf = grown;
			cap *= 2;
		}
		got = read(fd, buf + *len, cap - 1 - *len);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			int e = errno;

			free(buf);
			errno = e;
			return FC_IO;
		}
		if (got == 0)
			break;
		*len += (size_t)got;
	}
	buf[*len] = '\0';
	*out = buf;
	return 0;
}

/* openat2(RESOLVE_NO_SYMLINKS), or open(O_NOFOLLOW) on a kernel without
 * it (Linux < 5.6: then only the last component is checked). */
static int open_no_symlinks(const char *path, int flags, int mode)
{
	struct open_how how = { .flags = (unsigned long long)flags,
				.mode = (unsigned long long)mode,
				.resolve = RESOLVE_NO_SYMLINKS |
					   RESOLVE_NO_MAGICLINKS };
	long fd = syscall(SYS_openat2, AT_FDCWD, path, &how, sizeof(how));

	if (fd < 0 && errno == ENOSYS)
		fd = open(path, flags, mode);
	return (int)fd;
}

int fs_open_untrusted(const char *path, size_t max_size)
{
	struct stat st;
	int fd = open_no_symlinks(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK |
				  O_CLOEXEC | O_NOCTTY, 0);
	int e;

	if (fd < 0)
		return -1;
	if (fstat(fd, &st) < 0)
		goto fail;
	if (!S_ISREG(st.st_mode)) {
		errno = EINVAL;
		goto fail;
	}
	if (max_size && (unsigned long long)st.st_size > max_size) {
		errno = EFBIG;
		goto fail;
	}
	if (fcntl(fd, F_SETFL, 0) < 0)
		goto fail;
	return fd;
fail:
	e = errno;
	close(fd);
	errno = e;
	return -1;
}

int fs_read_untrusted(const char *path, size_t max_size, char **out,
		      size_t *len)
{
	int fd = fs_open_untrusted(path, max_size), rc, e;

	*out = NULL;
	if (fd < 0)
		return FC_IO;
	/* the file may grow after the fstat: the read is bounded too */
	rc = fs_read_all(fd, 4096, max_size ? max_size + 1 : SIZE_MAX / 2,
			 out, len);
	e = errno;
	close(fd);
	if (rc == FC_USAGE) {
		rc = FC_IO;
		e = EFBIG;
	}
	errno = e;
	return rc;
}

int fs_create_untrusted(const char *path, int mode)
{
	const char *slash = strrchr(path, '/');
	const char *name = slash ? slash + 1 : path;
	char dir[4096];
	int dfd, fd = -1, e;

	/* the directory opened once, with no symlink on its path: the
	 * unlink and the create below act in it, never through a link */
	if (slash && (size_t)(slash - path) >= sizeof(dir)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	if (slash) {
		memcpy(dir, path, (size_t)(slash - path));
		dir[slash - path] = '\0';
	}
	dfd = open_no_symlinks(slash ? (slash == path ? "/" : dir) : ".",
			       O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
	if (dfd < 0)
		return -1;
	for (int tries = 0; tries < 4 && fd < 0; tries++) {
		if (unlinkat(dfd, name, 0) < 0 && errno != ENOENT &&
		    errno != EISDIR)
			break;
		fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
			    O_NONBLOCK | O_CLOEXEC | O_NOCTTY, mode);
		if (fd < 0 && errno != EEXIST)
			break;
		/* someone made it again between the unlink and the open */
	}
	e = errno;
	close(dfd);
	if (fd >= 0 && fcntl(fd, F_SETFL, 0) < 0) {
		e = errno;
		close(fd);
		fd = -1;
	}
	errno = e;
	return fd;
}
