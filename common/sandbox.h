/*
 * sandbox.h -- the file system an attempt sees, and the privileges it
 * keeps: the steps a route process takes in new user and mount namespaces
 * (common/child_setup.h calls them) before it runs route code.
 *
 * After sandbox_enter(), in the process's own mount namespace:
 *
 *   /               every mount read-only and nosuid (the checkout,
 *                   build/, the harness's work dirs, other schedules')
 *   /proc           a proc of the attempt's own PID namespace
 *                   (new_proc; else the host's, left writable: a
 *                   fork server's, where each attempt's init writes
 *                   its id maps and mounts its own)
 *   /dev/shm        a tmpfs of the attempt's own, SANDBOX_TMP_BYTES
 *   /tmp            the host's /tmp read-only under an upper layer of
 *                   the attempt's own (an overlay; kept on /dev/shm):
 *                   it reads the host's files, writes only its own
 *                   (an empty tmpfs where no overlay can be made)
 *   writable[i]     the same directory as outside, writable: the
 *                   attempt's schedule dir first, then what the suite
 *                   names (`writable:`); bound after the tmpfs, so a
 *                   directory under /tmp or /dev/shm shows through
 *   home            a directory made in the private /tmp (HOME)
 *
 * Nothing propagates back to the host's mounts (the tree is made private
 * first).  The mounts the process makes belong to its user namespace, so
 * once sandbox_drop_caps() has run neither it nor anything it starts can
 * undo them: a nested user namespace gets them locked (the kernel's rule
 * for mounts copied into a less privileged namespace).
 *
 * Who includes it: common/ (child_setup.c) and the supervisor, which
 * fills a struct sandbox before it starts the child.
 *
 * Invariants:
 *  1. sandbox_enter() and sandbox_drop_caps() are allocation-free and
 *     write no global but errno: they run in a child that may share the
 *     supervisor's memory until it execs (child_setup.h, invariant 1).
 *  2. A failing step returns its -errno and the caller ends the child:
 *     an attempt never runs half sandboxed.
 */
#ifndef FENCECERT_SANDBOX_H
#define FENCECERT_SANDBOX_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "common/error.h"

#define SANDBOX_WRITABLE_MAX 16
/* /tmp and /dev/shm of one attempt: a route that fills them gets ENOSPC,
 * the host's memory is not at stake */
#define SANDBOX_TMP_BYTES (256ULL << 20)
#define SANDBOX_HOME "/tmp/home"
/* The id a route has inside its user namespace when certify runs as
 * root: not 0, so that an exec grants it no capability there, and its
 * own clones can map their ids (a namespace's root without capabilities
 * cannot).  Outside it is root still, without any capability. */
#define SANDBOX_ROOT_ID 64999

struct sandbox {
	const char *writable[SANDBOX_WRITABLE_MAX + 1]; /* NULL-terminated,
						   absolute, existing */
	bool new_proc;       /* mount a proc of the current PID namespace */
	char tmp_opts[64];   /* the tmpfs options (sandbox_init()) */
};

/* An empty sandbox (no writable directory yet). */
void sandbox_init(struct sandbox *sb, bool new_proc);

/* Append a writable directory (the caller keeps the string alive).
 * FC_USAGE when SANDBOX_WRITABLE_MAX are there already. */
int sandbox_add_writable(struct sandbox *sb, const char *path) FC_MUST_CHECK;

/* The steps above, in a process that holds CAP_SYS_ADMIN in the user
 * namespace owning its (new) mount namespace.  0, or -errno of the step
 * that failed. */
int sandbox_enter(const struct sandbox *sb);

/* Give up every capability for good: the bounding set emptied, ambient
 * ones cleared, then (when uid is not (uid_t)-1) the supplementary groups
 * dropped and the ids switched to uid/gid, then permitted, effective and
 * inheritable sets zeroed and no_new_privs set.  0, or -errno. */
int sandbox_drop_caps(uid_t uid, gid_t gid);

/* Whether this process can start sandboxed children: a child is cloned
 * into new user, PID and mount namespaces and takes every step of
 * sandbox_enter() with a scratch writable directory, then exits.  0, or
 * -errno with why saying which step the kernel refused. */
int sandbox_probe(char *why, size_t whylen) FC_MUST_CHECK;

#endif
