/*
 * outdir.h -- certify's --out: a run's reports appear there whole, or not
 * at all, and never mixed with an earlier run's.
 *
 *   outdir_open()     before anything runs: check what --out is now.
 *                     Missing or an empty directory: fine.  A directory
 *                     holding only reports (render.h's files): an
 *                     earlier run's, replaced whole only with `force`.
 *                     Anything else (other files, not a directory, a
 *                     symbolic link, ".", "/") is refused: certify never
 *                     deletes what it did not write.  Creates nothing.
 *   outdir_stage()    once the run is about to start: remove the earlier
 *                     run's reports (force) and create the staging
 *                     directory beside --out, PARENT/.NAME.incomplete-XXXXXX,
 *                     where the reports are rendered.
 *   outdir_publish()  the run is complete: rename the staging directory
 *                     to --out.
 *   outdir_free()     remove the staging directory unless it was
 *                     published (an interrupted or failed run).
 *
 * So an interrupted run leaves no report.json in --out: the earlier
 * reports are gone once a forced run started, the new ones are only in
 * the staging directory, which outdir_free() removes -- or, when the
 * process is SIGKILLed, its caller's janitor (cli/cmd_certify.c), and
 * failing both its name says "incomplete".
 *
 * Who includes it: cli/ (certify) and tests/.  Errors: FC_USAGE when
 * --out is refused (the run must not start: exit 2), FC_IO when the
 * file system fails, FC_NOMEM; err says which path and why.  Ownership:
 * outdir_open() hands a heap object to the caller (outdir_free() it);
 * outdir_staging() is borrowed from it.
 */
#ifndef FENCECERT_OUTDIR_H
#define FENCECERT_OUTDIR_H

#include <stdbool.h>
#include <stddef.h>

#include "common/error.h"

typedef struct outdir outdir;

int outdir_open(const char *path, bool force, outdir **out, char *err,
		size_t errlen) FC_MUST_CHECK;

/* Remove the earlier reports (force) and create the staging directory
 * (and --out's parent when missing).  The same checks as outdir_open()
 * run again first: FC_USAGE when --out changed meanwhile. */
int outdir_stage(outdir *d, char *err, size_t errlen) FC_MUST_CHECK;

/* The staging directory; NULL before outdir_stage(). */
const char *outdir_staging(const outdir *d);

/* Rename the staging directory to --out.  On failure (something appeared
 * at --out during the run) the staging directory is kept and err names
 * it. */
int outdir_publish(outdir *d, char *err, size_t errlen) FC_MUST_CHECK;

/* Remove the staging directory unless published or kept; NULL is a
 * no-op. */
void outdir_free(outdir *d);

#endif
