/*
 * snapshot_impl.h -- what the two files of the snapshot module share:
 * snapshot.c (the store, its objects, manifests and digest cache; take
 * and restore) lends snapshot_power.c (the power-loss model) the pieces
 * it builds a power state from, and stores and loads a model's text
 * with.  Calls point one way: snapshot_power.c -> snapshot.c.
 *
 * Who includes it: harness/run/snapshot.c and snapshot_power.c only.
 */
#ifndef FENCECERT_SNAPSHOT_IMPL_H
#define FENCECERT_SNAPSHOT_IMPL_H

#include <stdbool.h>
#include <limits.h>
#include <stddef.h>
#include <sys/stat.h>

#include "harness/run/snapshot.h"

/* One entry of a manifest.  path is relative to the snapshot's dir. */
struct snap_entry {
	char *path;
	char type;                /* 'd', 'f' or 'l' */
	unsigned mode;            /* 'f': permission bits */
	char object[SNAP_DIGEST_HEX + 1]; /* 'f' */
	char *target;             /* 'l' */
};

/* A manifest being built: entries in any order until it is committed. */
struct snap_manifest {
	struct snap_entry *v;
	size_t n, cap;
};

/* code, after writing the message into err (which may be NULL). */
int snap__fail(char *err, size_t errlen, int code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* 1 for a name the module neither records nor touches (snapshot.h,
 * invariant 3). */
bool snap__excluded(const char *name);

/* statx() of path without following a symlink, with the birth time when
 * the file system has one.  -1 with errno set on failure. */
int snap__stat(const char *path, struct statx *sx);

/* Store the regular file at the absolute path abs (whose statx is sx) as
 * an object, through the store's digest cache, and say its hex.  FC_IO
 * (it vanished, changed type, could not be read) / FC_NOMEM. */
int snap__store_file(snap_store *st, const char *abs, const struct statx *sx,
		     char hex[SNAP_DIGEST_HEX + 1], char *err, size_t errlen)
	FC_MUST_CHECK;

/* The bytes of object hex (at most max), checked against its name, into
 * *out (malloc'd, *len bytes).  FC_USAGE (no such object), FC_IO,
 * FC_NOMEM, FC_CORRUPT (the bytes are not the object's). */
int snap__load_bytes(snap_store *st, const char *hex, size_t max, char **out,
		     size_t *len, char *err, size_t errlen) FC_MUST_CHECK;

/* Store len bytes of buf as an object (the empty file of the power model,
 * a model's text). */
int snap__store_bytes(snap_store *st, const void *buf, size_t len,
		      char hex[SNAP_DIGEST_HEX + 1], char *err, size_t errlen)
	FC_MUST_CHECK;

/* The names in directory path but ".", ".." and excluded ones, in
 * readdir order; the directory is closed when this returns.  FC_IO
 * (message names the directory) / FC_NOMEM. */
struct snap_names {
	char **v;
	size_t n, cap;
};
int snap__read_names(const char *path, struct snap_names *nm, char *err,
		     size_t errlen) FC_MUST_CHECK;
void snap__names_release(struct snap_names *nm);

/* Append "/name" to the path of len bytes in buf.  The new length, or 0
 * (buf unchanged) when it would not fit. */
size_t snap__path_push(char buf[PATH_MAX], size_t len, const char *name);

/* A symlink's target, malloc'd, into *out.  FC_IO / FC_NOMEM. */
int snap__read_target(const char *path, char **out, char *err, size_t errlen)
	FC_MUST_CHECK;

/* realpath() of the existing directory dir into buf: its length, or 0
 * with the message in err. */
size_t snap__resolve_dir(const char *dir, char buf[PATH_MAX], char *err,
			 size_t errlen);

/* Append an entry; path and target are copied.  FC_NOMEM. */
int snap__manifest_add(struct snap_manifest *m, const char *path, char type,
		       unsigned mode, const char *object, const char *target)
	FC_MUST_CHECK;

/* Sort m, write its canonical text to the store as a state and say its
 * digest.  m stays the caller's.  FC_IO / FC_NOMEM. */
int snap__manifest_commit(snap_store *st, struct snap_manifest *m,
			  char digest[SNAP_DIGEST_HEX + 1], char *err,
			  size_t errlen) FC_MUST_CHECK;

void snap__manifest_release(struct snap_manifest *m);

#endif
