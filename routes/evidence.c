/*
 * evidence.c -- atomic JSON files for XCom and the local checkpoint.
 *
 * Invariants:
 *  1. The final name only ever points at a complete, fsynced file: the
 *     bytes go to a temporary name in the same directory first, and the
 *     rename is made durable by an fsync of the directory (and a directory
 *     created here by an fsync of its parent).
 *  2. A failing write leaves the previous file (if any) in place and no
 *     temporary file behind.
 *  3. Nothing secret is written: ids, counts and epochs only.
 *  4. EVIDENCE_NO_FSYNC leaves out the three syncs of 1 and nothing else.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/fsutil.h"
#include "routes/evidence.h"

/* mkdir dir if it is missing; one this call creates has its entry made
 * durable in the parent, or a power loss could take the directory and the
 * evidence in it away after the journal moved on. */
static int make_dir(const char *dir, enum evidence_sync sync, char *err,
		    size_t errlen)
{
	char parent[PATH_MAX]; /* mkdir() refuses longer paths */

	if (mkdir(dir, 0755) < 0) {
		if (errno == EEXIST)
			return 0;
		snprintf(err, errlen, "cannot create directory '%s': %s", dir,
			 strerror(errno));
		return FC_IO;
	}
	snprintf(parent, sizeof(parent), "%s", dir);
	if (sync == EVIDENCE_FSYNC && fs_fsync_dir(dirname(parent)) < 0) {
		snprintf(err, errlen, "cannot sync the directory holding '%s': %s",
			 dir, strerror(errno));
		return FC_IO;
	}
	return 0;
}

int evidence__write_json(const char *dir, const char *name, json_t *obj,
			 enum evidence_sync sync, char *err, size_t errlen)
{
	char tmp[4096], final[4096];
	char *text;
	int fd, saved, rc;

	if ((rc = make_dir(dir, sync, err, errlen)))
		return rc;
	if ((size_t)snprintf(final, sizeof(final), "%s/%s", dir, name) >= sizeof(final) ||
	    (size_t)snprintf(tmp, sizeof(tmp), "%s/.%s.%ld.tmp", dir, name,
			     (long)getpid()) >= sizeof(tmp)) {
		snprintf(err, errlen, "path in '%s' is too long", dir);
		return FC_IO;
	}
	text = json_dumps(obj, JSON_COMPACT);
	if (!text) {
		snprintf(err, errlen, "cannot encode '%s'", name);
		return FC_NOMEM;
	}
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		snprintf(err, errlen, "cannot create '%s': %s", tmp,
			 strerror(errno));
		free(text);
		return FC_IO;
	}
	if (fs_write_all(fd, text, strlen(text)) < 0 ||
	    fs_write_all(fd, "\n", 1) < 0 ||
	    (sync == EVIDENCE_FSYNC && fsync(fd) < 0)) {
		saved = errno;
		close(fd);
		unlink(tmp);
		free(text);
		snprintf(err, errlen, "cannot write '%s': %s", tmp,
			 strerror(saved));
		return FC_IO;
	}
	free(text);
	if (close(fd) < 0 || rename(tmp, final) < 0) {
		saved = errno;
		unlink(tmp);
		snprintf(err, errlen, "cannot put '%s' in place: %s", final,
			 strerror(saved));
		return FC_IO;
	}
	if (sync == EVIDENCE_FSYNC && fs_fsync_dir(dir) < 0) {
		/* The file is in place but its name may not survive a crash;
		 * report it so the caller does not claim durable evidence. */
		snprintf(err, errlen, "cannot sync directory '%s': %s", dir,
			 strerror(errno));
		return FC_IO;
	}
	return 0;
}

int evidence_write_return(const char *xcom_dir, const struct route_result *r,
			  enum evidence_sync sync, char *err, size_t errlen)
{
	json_t *obj;
	int rc;

	if (!xcom_dir)
		return 0;
	obj = json_pack("{s:s, s:s, s:s, s:I, s:I, s:I, s:b}",
			"operation_id", r->operation_id,
			"intent_digest", r->intent_digest,
			"state", "COMPLETE",
			"rows_written", (json_int_t)r->rows,
			"try_number", (json_int_t)r->try_number,
			"epoch", (json_int_t)r->epoch,
			"mutated", r->mutated);
	if (!obj) {
		snprintf(err, errlen, "cannot build return.json");
		return FC_NOMEM;
	}
	rc = evidence__write_json(xcom_dir, EVIDENCE_RETURN_FILE, obj, sync, err,
				  errlen);
	json_decref(obj);
	return rc;
}

int evidence_write_checkpoint(const char *run_dir, const char *state,
			      const struct route_result *r,
			      enum evidence_sync sync, char *err,
			      size_t errlen)
{
	json_t *obj;
	int rc;

	if (!run_dir)
		return 0;
	obj = json_pack("{s:s, s:s, s:s, s:I, s:I, s:I}",
			"operation_id", r->operation_id,
			"intent_digest", r->intent_digest,
			"state", state,
			"rows", (json_int_t)r->rows,
			"epoch", (json_int_t)r->epoch,
			"try_number", (json_int_t)r->try_number);
	if (!obj) {
		snprintf(err, errlen, "cannot build checkpoint.json");
		return FC_NOMEM;
	}
	rc = evidence__write_json(run_dir, EVIDENCE_CHECKPOINT_FILE, obj, sync,
				  err, errlen);
	json_decref(obj);
	return rc;
}

void evidence_remove_return(const char *xcom_dir)
{
	char path[4096];

	if (!xcom_dir)
		return;
	if ((size_t)snprintf(path, sizeof(path), "%s/%s", xcom_dir,
			     EVIDENCE_RETURN_FILE) < sizeof(path))
		unlink(path);
}
