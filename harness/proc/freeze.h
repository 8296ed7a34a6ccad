/*
 * freeze.h -- hold every process of an attempt still while the harness
 * copies its files.
 *
 * A snapshot taken while one process of a route waits at a failpoint or a
 * syscall notification is only what a kill there leaves if no other
 * process of the route writes meanwhile: a shell route's sqlite3, a
 * Python route's driver thread, a daemon it started.  A kill stops them
 * all at one instant; freeze_tree() gets as close as a user-space harness
 * can: SIGSTOP to the process group and to every descendant of `root`
 * (found through /proc/PID/task/TID/children, so setsid() does not hide
 * one), repeated until no new descendant appears, then it waits until
 * each one is stopped (state T or gone: a call in progress, a write
 * included, ends first).  freeze_thaw() sends SIGCONT to the same
 * processes.
 *
 * Who includes it: harness/run (the orchestrator's snapshots).
 * Ownership: a frozen set is the caller's; freeze_thaw() releases it.
 * Errors: 0, FC_NOMEM, or FC_IO when a process could not be stopped in
 * FREEZE_WAIT_MS (then the set is thawed and empty).
 */
#ifndef FENCECERT_FREEZE_H
#define FENCECERT_FREEZE_H

#include <stddef.h>
#include <sys/types.h>

#include "common/error.h"

#define FREEZE_WAIT_MS 2000
#define FREEZE_MAX 4096 /* processes of one attempt */

struct frozen {
	pid_t *pids;
	size_t n;
	pid_t group;
};

int freeze_tree(pid_t root, struct frozen *out) FC_MUST_CHECK;
void freeze_thaw(struct frozen *f);

#endif
