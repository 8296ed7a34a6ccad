/*
 * fsutil.h -- the few file operations every layer needs: make a path,
 * empty or remove a tree, read a file to its end, write or send a buffer
 * whole, make a directory's entries durable.
 *
 * Who includes it: anything (common/).  Invariants: trees are walked
 * without following symlinks, so a route cannot make the harness delete
 * outside a schedule directory; every loop here retries EINTR and short
 * transfers, and a failure is FC_IO with errno saying why.
 */
#ifndef FENCECERT_FSUTIL_H
#define FENCECERT_FSUTIL_H

#include <stddef.h>

#include "common/error.h"

/* mkdir -p with mode 0755 (one mkdir() when the parent exists).  FC_IO on
 * failure. */
int fs_mkdirs(const char *path) FC_MUST_CHECK;

/* rm -rf; a missing path is fine.  FC_IO when something stays. */
int fs_remove_tree(const char *path) FC_MUST_CHECK;

/* Remove everything inside dir and leave it empty (created if missing). */
int fs_empty_dir(const char *path) FC_MUST_CHECK;

/* write() all len bytes of buf to fd, again after EINTR or a short write.
 * FC_IO on failure (errno says why). */
int fs_write_all(int fd, const void *buf, size_t len) FC_MUST_CHECK;

/* The same for a socket: send() with MSG_NOSIGNAL, so a peer that is gone
 * is FC_IO (EPIPE) instead of a SIGPIPE.  An fd that turns out not to be a
 * socket (ENOTSOCK: a pipe a shell set up) is written to instead. */
int fs_send_all(int fd, const void *buf, size_t len) FC_MUST_CHECK;

/* fsync() the directory `path`, making the entries created, renamed or
 * removed in it durable.  FC_IO on failure (errno says why). */
int fs_fsync_dir(const char *path) FC_MUST_CHECK;

/* Read fd to its end into *out, a malloc'd NUL-terminated buffer of
 * *len bytes (plus the NUL) that starts with room for cap (>= 1) bytes,
 * NUL included, and doubles when full -- unless it already holds max_cap:
 * then FC_USAGE (too large).  FC_IO (errno says why) when a read fails,
 * FC_NOMEM; *out is NULL after any failure.  fd stays open. */
int fs_read_all(int fd, size_t cap, size_t max_cap, char **out,
		size_t *len) FC_MUST_CHECK;

/*
 * Open a file in a place a route can write, for reading, as hostile
 * input (docs/security.md): no symlink followed anywhere in the path
 * (openat2 RESOLVE_NO_SYMLINKS, O_NOFOLLOW), never blocking (O_NONBLOCK:
 * a FIFO or a device does not hold the caller), and only a regular file
 * of at most max_size bytes (0: any size) is accepted.  The fd, blocking
 * again, or -1 with errno: ENOENT, ELOOP (a symlink), EINVAL (not a
 * regular file), EFBIG (larger than max_size), or what open gave.
 */
int fs_open_untrusted(const char *path, size_t max_size);

/* fs_open_untrusted(), then fs_read_all() into *out (NUL-terminated,
 * *len bytes).  FC_IO with errno as above, FC_NOMEM. */
int fs_read_untrusted(const char *path, size_t max_size, char **out,
		      size_t *len) FC_MUST_CHECK;

/*
 * Create path afresh for writing where a route can write: whatever is
 * there (a FIFO, a symlink, a file another process holds open) is
 * unlinked first, then the file is made with O_CREAT | O_EXCL |
 * O_NOFOLLOW | O_NONBLOCK, so the caller never writes through something
 * the route planted.  The fd (close-on-exec), or -1 with errno.
 */
int fs_create_untrusted(const char *path, int mode);

#endif
