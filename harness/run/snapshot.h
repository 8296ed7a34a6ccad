/*
 * snapshot.h -- the durable state of a schedule's directory, stored and
 * restored, for crash-state exploration: a harness records one run of a
 * route, snapshots the directory at every fault point, and later seeds
 * other schedules from those snapshots.  Plus a power-loss model: the
 * state a machine that lost power would leave.
 *
 * Owns: the snapshot store (a directory on disk, shared by the worker
 * processes of one certify run), the manifest format and the power
 * model's text (snap_take_model), the per-store cache of file digests,
 * and the durability bookkeeping of one directory.
 * Nothing of the route: a snapshot is taken while the route's processes
 * are held or gone, and restored before any of them starts.
 *
 * Who includes it: harness/run's orchestrator (which takes and restores)
 * and harness/certify (which opens the one store of a run); tests/.
 * Files: snapshot.c (store, take, restore), snapshot_power.c (the
 * power-loss model), sharing snapshot_impl.h.
 *
 * The store:
 *
 *   ROOT/objects/<hex>          a file's bytes (or a power model's text,
 *                               snap_take_model), named by their SHA-256
 *   ROOT/states/<digest>.json   one manifest per distinct state; its
 *                               bytes are the canonical text, so
 *                               sha256sum of the file is <digest>
 *
 * A manifest is jansson's compact, key-sorted JSON of
 *   {"entries":[E...],"format":"fencecert-snapshot/1"}
 * with one E per entry, sorted by path (strcmp), a parent before what it
 * holds:
 *   {"path":P,"type":"dir"}
 *   {"mode":M,"object":HEX,"path":P,"type":"file"}   M: permission bits
 *   {"path":P,"target":T,"type":"symlink"}
 * P is relative to the directory; P and T are percent-encoded (every byte
 * below 0x20, 0x7f and above, and '%' as %XX), so any name -- a newline,
 * bytes that are not UTF-8 -- is one JSON string and cannot forge an
 * entry.  Directories carry no mode: restore makes a missing one with
 * 0755 (less the umask) and leaves an existing one's mode alone.
 *
 * Invariants:
 *   1. Content-addressed and write-once: an object or manifest is written
 *      to a temporary name in its own directory and renamed into place,
 *      so a reader never sees half of one, and two writers of the same
 *      content agree.  Nothing is ever removed from a store.
 *   2. Canonical: equal trees give equal digests wherever they were
 *      taken; any difference in a path, type, mode, content or target
 *      gives another digest.
 *   3. Excluded names are neither recorded nor touched, whatever their
 *      type: "try-*.out" and "try-*.err" (the harness's captures) and
 *      "NAME-shm" (SQLite's shared-memory WAL index, rebuilt after a
 *      crash).  A directory the state lacks is removed unless it still
 *      holds an excluded name, which keeps it (holding only those).
 *      Sockets, fifos and devices are skipped.  A directory is never
 *      left through a symbolic link.
 *   4. Memory is bounded by the number of entries, never by file sizes:
 *      files are streamed through a fixed buffer.  The digest cache holds
 *      at most SNAP_CACHE_MAX files and starts over when full; the
 *      manifests a handle keeps checked, the last SNAP_MANIFESTS_KEPT and
 *      65536 entries in all.
 *   5. The cache never hides a change: an entry is used only when the
 *      file's (inode, size, mtime ns, ctime ns) are unchanged AND its
 *      ctime is older than the moment it was hashed (git's "racily clean"
 *      rule: a write in the same clock tick as the hash cannot hide).
 *
 * The power-loss model (snap_durable_*, snap_take_power), LazyFS's "lose
 * unsynced data" for file contents, and POSIX's rule for names:
 *   - a regular file's content is its last fsync'd/fdatasync'd content,
 *     else its baseline content, else empty: no torn writes, no
 *     reordering within a sync interval, and data written through an fd
 *     after its last fsync is lost entirely;
 *   - a directory's entries are its last fsync'd listing, else its
 *     baseline listing; a directory created since the baseline exists
 *     only if a durable listing of its parent names it (a create or
 *     rename is durable once its directory is synced, never before, so
 *     an unsynced rename over an old file leaves the old file);
 *   - O_SYNC/O_DSYNC writes and msync of an mmap are not seen as syncs
 *     (only the fsync family and sync/syncfs are);
 *   - files and directories are known by inode (with device and birth
 *     time, so a reused inode number is another file).
 *
 * Ownership: snap_store_open() and snap_durable_new() return heap objects
 * freed by snap_store_close() and snap_durable_free(); a snap_durable
 * borrows its store, which must outlive it.  One object per process: the
 * objects are not for sharing between threads.
 *
 * Errors: 0 or a negative FC_ code, the detail in the caller's err buffer
 * (lower-case, subject in quotes).  A failing take or power take may have
 * stored objects no manifest names, which is harmless; a failing restore
 * leaves the directory part way.
 */
#ifndef FENCECERT_SNAPSHOT_H
#define FENCECERT_SNAPSHOT_H

#include <stddef.h>

#include "common/error.h"

#define SNAP_DIGEST_HEX 64            /* hex SHA-256 */
/* Checked manifests a store handle keeps, the last ones it restored
 * (snap_restore() does not read or check them again). */
#define SNAP_MANIFESTS_KEPT 64
#define SNAP_CACHE_MAX (1 << 20)      /* files whose digest a store remembers */

/* A directory shared by the worker processes of one certify run (one per
 * route x scenario: harness/certify/certify.c). */
typedef struct snap_store snap_store;

/*
 * Open (create if missing) a store rooted at `root`: root/objects/<hex>
 * holds file contents by their SHA-256, root/states/<digest>.json one
 * manifest per distinct state. Several processes may use one root at once:
 * every file is written to a temporary name in the same directory and
 * renamed into place, so a reader never sees a half-written object or
 * manifest, and two writers of the same content agree. 0, or FC_IO/FC_NOMEM
 * with err set.
 */
int snap_store_open(const char *root, snap_store **out, char *err,
		    size_t errlen) FC_MUST_CHECK;
void snap_store_close(snap_store *st); /* NULL: no-op */

/*
 * How big the store may grow.  A file the store would keep as a new object
 * is refused with FC_NOSPACE (nothing written, the take fails, the state
 * is not recorded) when the objects every process sharing `used` stored
 * would then hold more than max_bytes (0: no such limit), or when its file
 * system would keep less free than a tenth of its size, bounded to
 * SNAP_FREE_KEEP_MIN..SNAP_FREE_KEEP_MAX.  The file is refused before it
 * is hashed, so also when its content turns out to be stored already.  `used` counts the bytes of new objects; to
 * share it between processes it lives in memory they share (MAP_SHARED),
 * NULL counts this process's alone.  Without a call: the free-space rule
 * only.
 */
/*
 * Remove the store rooted at `root` (no process uses it any more) and take
 * the bytes of its objects off `used` (snap_store_limit()'s counter; NULL:
 * none), so a later store of the run gets them.  0, or FC_IO with err set:
 * what could not be removed stays, and its bytes stay counted.
 */
int snap_store_remove(const char *root, unsigned long long *used, char *err,
		      size_t errlen) FC_MUST_CHECK;

#define SNAP_FREE_KEEP_MIN (256ULL << 20)
#define SNAP_FREE_KEEP_MAX (4ULL << 30)
void snap_store_limit(snap_store *st, unsigned long long max_bytes,
		      unsigned long long *used);

/*
 * The state of `dir` as a killed process leaves it (the files' current
 * contents, page cache included): every directory, regular file (content +
 * permission bits) and symlink (its target text) below dir, in a manifest
 * sorted by path, except names that are the harness's own captures or
 * rebuilt by their owner: any file named "try-*.out" or "try-*.err", and
 * "NAME-shm" (SQLite's shared-memory WAL index, which SQLite rebuilds after
 * a crash). Other file types (sockets, fifos) are skipped. The digest is the
 * hex SHA-256 of the manifest's canonical text, so equal trees give equal
 * digests wherever they were taken (paths are relative to dir). Fast on
 * repeat: a snapshot taken of the same dir again re-hashes only files whose
 * (inode, size, mtime ns, ctime ns) changed since the last
 * snap_take/snap_durable call on this store for that dir -- the cache lives
 * in the store object, keyed by absolute path (and trusted only as invariant
 * 5 says). 0, or FC_IO (a file vanished or could not be read: message names
 * it) / FC_NOMEM.
 */
int snap_take(snap_store *st, const char *dir,
	      char digest[SNAP_DIGEST_HEX + 1], char *err, size_t errlen)
	FC_MUST_CHECK;

/*
 * Make `dir` (exists) hold exactly state `digest`: remove every entry not in
 * the manifest (except the excluded names above, which are left alone),
 * create directories, write files with their mode (one that is there is
 * replaced by a temporary renamed over it, so an open handle on the old
 * file keeps the old content; one that is not is written in place),
 * create symlinks. 0, FC_USAGE (no such state in the store), FC_IO,
 * FC_NOMEM; FC_CORRUPT when the manifest is malformed or names an object the
 * store lacks. A file already holding its content and mode (by the cache) is
 * left as it is.
 */
int snap_restore(snap_store *st, const char *digest, const char *dir,
		 char *err, size_t errlen) FC_MUST_CHECK;

/* ---- power loss ---- */
typedef struct snap_durable snap_durable;

/*
 * Start tracking durability under `dir`: everything there now counts as
 * durable (the baseline: the harness made it before the route ran).
 */
int snap_durable_new(snap_store *st, const char *dir, snap_durable **out,
		     char *err, size_t errlen) FC_MUST_CHECK;
void snap_durable_free(snap_durable *d); /* NULL: no-op */

/*
 * A process just fsync'd/fdatasync'd the file or directory now at `path`
 * (absolute; the harness learns it from a seccomp notification while the
 * caller is held, so the content is what is being synced). A regular file:
 * its current content becomes the durable content of its inode (store the
 * object, remember inode -> object hash). A directory: its current entries
 * (name -> inode, type) become its durable listing. A path outside dir, or
 * one that no longer exists, or ending in " (deleted)", is ignored (return
 * 0), and so is an excluded name.  FC_IO / FC_NOMEM.
 */
int snap_durable_synced(snap_durable *d, const char *path, char *err,
			size_t errlen) FC_MUST_CHECK;

/* sync(2) / syncfs(2): everything under dir as it is now becomes durable.
 * FC_IO / FC_NOMEM. */
int snap_durable_synced_all(snap_durable *d, char *err, size_t errlen)
	FC_MUST_CHECK;

/*
 * The state a machine that lost power now would leave, stored like
 * snap_take's (same manifest format, so snap_restore restores it): start at
 * dir; a directory's entries are its durable listing (its last synced
 * listing; else its baseline listing if it existed in the baseline -- by
 * inode; else it is not durable at all and neither is anything below it,
 * unless a synced listing of its parent names it: then it exists with its
 * own durable listing, which may be empty); a regular file named by a
 * durable listing has its inode's durable content (last synced content; else
 * its baseline content if the inode existed in the baseline; else empty);
 * symlinks as in the baseline or as they are now if their parent's listing
 * was synced. The model (see the top of this file): LazyFS's "lose unsynced
 * data" -- no torn writes, no reordering within a sync interval,
 * O_SYNC/O_DSYNC writes and mmap msync are not seen as syncs, data written
 * through an fd after its last fsync is lost entirely. Excluded names are
 * excluded here too. A directory inode that durable listings would place
 * twice (directories moved between syncs) appears once, where a depth-first
 * walk in name order first meets it.
 */
int snap_take_power(snap_durable *d, char digest[SNAP_DIGEST_HEX + 1],
		    char *err, size_t errlen) FC_MUST_CHECK;

/*
 * The model itself, stored (an object: its digest is the SHA-256 of its
 * text) so that snap_durable_restore() can put it back over a restored
 * copy of the tree: every inode's durable content and durable listing as
 * they bear on the tree under dir now, for the inodes there now (named by
 * their paths) and for those the listings name (named by path, else "#N"
 * in the order a traversal in path and name order first meets them).
 * Two moments of one run with equal snap_take() digests and equal model
 * digests leave the same files and the same future under any later syncs
 * and power loss -- which a power state alone does not say: a file synced
 * but not yet named by a synced listing is not in it.  FC_IO, FC_NOMEM,
 * FC_NOSPACE (the store's limit), FC_CORRUPT (a name that is not UTF-8,
 * or a hard link, which a restored tree would not have: no model).
 */
int snap_take_model(snap_durable *d, char digest[SNAP_DIGEST_HEX + 1],
		    char *err, size_t errlen) FC_MUST_CHECK;

#define SNAP_MODEL_MAX (64 * 1024 * 1024) /* bytes of a model's text */

/*
 * A model over `dir`, which holds the snap_take() state that was taken
 * with model `model` (just restored): its records, each on the inode its
 * path names now (the "#N" ones on inodes no file has), so that syncs and
 * power losses from here on go as they would have in the run it was taken
 * from.  FC_USAGE (no such model), FC_IO, FC_NOMEM, FC_CORRUPT (the store
 * was changed, or the model names a path the tree lacks).
 */
int snap_durable_restore(snap_store *st, const char *dir, const char *model,
			 snap_durable **out, char *err, size_t errlen)
	FC_MUST_CHECK;

#endif
