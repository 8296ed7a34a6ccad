/*
 * outdir.c -- certify's --out, staged beside it and renamed into place
 * (outdir.h).
 *
 * Invariants:
 *  1. Nothing is deleted that certify did not write: only a directory
 *     whose every entry is a report file (render_is_report_file()) is
 *     ever removed, and only with force; it is classified again right
 *     before the removal.
 *  2. --out holds either nothing of this run or all of it: the reports
 *     are rendered in the staging directory, and one rename(2) makes them
 *     --out.  rename() replaces a missing or empty --out and fails on
 *     anything else, so a file that appears meanwhile is never lost.
 *  3. The staging directory is a sibling of --out (same file system, so
 *     the rename is atomic) and its name starts with a dot and says
 *     "incomplete", so a glob for reports does not pick it up and a
 *     reader who finds one left by a SIGKILL knows what it is.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/fsutil.h"
#include "reports/outdir.h"
#include "reports/render.h"

struct outdir {
	char *path;      /* --out without trailing slashes */
	char *parent;    /* its directory ("." when none is named) */
	char *staging;   /* NULL until outdir_stage() */
	bool force;
	bool done;       /* published, or kept after a failed publish */
};

enum state {
	OUT_MISSING,
	OUT_EMPTY,
	OUT_REPORTS,     /* a directory holding only report files */
};

/* What --out is now; FC_USAGE (refused) or FC_IO with err set. */
static int classify(const outdir *d, enum state *st, char *err, size_t errlen)
{
	struct dirent *e;
	struct stat sb;
	DIR *dir;
	bool any = false;

	if (lstat(d->path, &sb) < 0) {
		if (errno == ENOENT) {
			*st = OUT_MISSING;
			return 0;
		}
		snprintf(err, errlen, "cannot look at --out '%s': %s", d->path,
			 strerror(errno));
		return FC_IO;
	}
	if (S_ISLNK(sb.st_mode) || !S_ISDIR(sb.st_mode)) {
		snprintf(err, errlen, "--out '%s' is %s: certify replaces --out "
			 "whole, so give it a directory of its own", d->path,
			 S_ISLNK(sb.st_mode) ? "a symbolic link" :
			 "not a directory");
		return FC_USAGE;
	}
	if (!(dir = opendir(d->path))) {
		snprintf(err, errlen, "cannot read --out '%s': %s", d->path,
			 strerror(errno));
		return FC_IO;
	}
	while ((e = readdir(dir))) {
		const char *n = e->d_name;

		if (n[0] == '.' && (!n[1] || (n[1] == '.' && !n[2])))
			continue;
		if (!render_is_report_file(n)) {
			snprintf(err, errlen, "--out '%s' holds '%s', which is not "
				 "a fencecert report: certify replaces --out whole, "
				 "so give it a directory of its own", d->path, n);
			closedir(dir);
			return FC_USAGE;
		}
		any = true;
	}
	closedir(dir);
	if (any && !d->force) {
		snprintf(err, errlen, "--out '%s' holds the reports of an earlier "
			 "run: give --force to replace them whole, or another "
			 "--out", d->path);
		return FC_USAGE;
	}
	*st = any ? OUT_REPORTS : OUT_EMPTY;
	return 0;
}

/* Split path into d->path (no trailing slash) and d->parent; FC_USAGE for
 * a path that names no replaceable directory ("", "/", ".", ".."). */
static int split(outdir *d, const char *path, char *err, size_t errlen)
{
	size_t n = strlen(path);
	const char *name, *slash;

	while (n > 1 && path[n - 1] == '/')
		n--;
	if (!(d->path = strndup(path, n)))
		return FC_NOMEM;
	slash = strrchr(d->path, '/');
	name = slash ? slash + 1 : d->path;
	if (!*name || strcmp(name, ".") == 0 || strcmp(name, "..") == 0) {
		snprintf(err, errlen, "--out '%s' names no directory certify "
			 "could replace: give it a name of its own", path);
		return FC_USAGE;
	}
	if (!slash)
		d->parent = strdup(".");
	else if (slash == d->path)
		d->parent = strdup("/");
	else
		d->parent = strndup(d->path, (size_t)(slash - d->path));
	return d->parent ? 0 : FC_NOMEM;
}

int outdir_open(const char *path, bool force, outdir **out, char *err,
		size_t errlen)
{
	outdir *d = calloc(1, sizeof(*d));
	enum state st;
	int rc;

	*out = NULL;
	if (!d)
		return FC_NOMEM;
	d->force = force;
	rc = split(d, path, err, errlen);
	if (!rc)
		rc = classify(d, &st, err, errlen);
	if (rc) {
		if (rc == FC_NOMEM)
			snprintf(err, errlen, "out of memory");
		outdir_free(d);
		return rc;
	}
	*out = d;
	return 0;
}

int outdir_stage(outdir *d, char *err, size_t errlen)
{
	const char *slash = strrchr(d->path, '/');
	enum state st;
	mode_t mask;
	int rc;

	if ((rc = classify(d, &st, err, errlen)))
		return rc;
	if (st == OUT_REPORTS && fs_remove_tree(d->path)) {
		snprintf(err, errlen, "cannot remove the earlier reports in '%s': "
			 "%s", d->path, strerror(errno));
		return FC_IO;
	}
	if (fs_mkdirs(d->parent)) {
		snprintf(err, errlen, "cannot create '%s': %s", d->parent,
			 strerror(errno));
		return FC_IO;
	}
	if (asprintf(&d->staging, "%s/.%s.incomplete-XXXXXX", d->parent,
		     slash ? slash + 1 : d->path) < 0) {
		d->staging = NULL;
		snprintf(err, errlen, "out of memory");
		return FC_NOMEM;
	}
	if (!mkdtemp(d->staging)) {
		snprintf(err, errlen, "cannot create a directory beside --out "
			 "'%s': %s", d->path, strerror(errno));
		free(d->staging);
		d->staging = NULL;
		return FC_IO;
	}
	/* mkdtemp() makes it 0700; --out gets the mode mkdir would give */
	mask = umask(0);
	umask(mask);
	if (chmod(d->staging, 0755 & ~mask) < 0) {
		/* the reports are still written; only their mode differs */
	}
	return 0;
}

const char *outdir_staging(const outdir *d)
{
	return d ? d->staging : NULL;
}

int outdir_publish(outdir *d, char *err, size_t errlen)
{
	if (!d->staging || d->done) {
		snprintf(err, errlen, "no staged reports to publish");
		return FC_USAGE;
	}
	if (rename(d->staging, d->path) < 0) {
		snprintf(err, errlen, "cannot move the reports to --out '%s' (%s: "
			 "did something else write there during the run?); they "
			 "are in '%s'", d->path, strerror(errno), d->staging);
		d->done = true; /* keep them for the user */
		return FC_IO;
	}
	d->done = true;
	return 0;
}

void outdir_free(outdir *d)
{
	if (!d)
		return;
	if (d->staging && !d->done && fs_remove_tree(d->staging))
		fprintf(stderr, "fencecert: IO: cannot remove '%s'\n", d->staging);
	free(d->staging);
	free(d->parent);
	free(d->path);
	free(d);
}
