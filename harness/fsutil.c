/*
 * fsutil.c -- mkdir -p and rm -rf for schedule directories (fsutil.h).
 */
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fsutil.h"

int fs_mkdirs(const char *path)
{
	char buf[PATH_MAX];
	size_t len = strlen(path);

	if (len == 0 || len >= sizeof(buf))
		return FC_IO;
	memcpy(buf, path, len + 1);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, 0755) < 0 && errno != EEXIST)
			return FC_IO;
		*p = '/';
	}
	if (mkdir(buf, 0755) < 0 && errno != EEXIST)
		return FC_IO;
	return 0;
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

int fs_remove_tree(const char *path)
{
	struct stat sb;

	if (lstat(path, &sb) < 0)
		return errno == ENOENT ? 0 : FC_IO;
	if (nftw(path, remove_one, 16, FTW_DEPTH | FTW_PHYS) < 0)
		return FC_IO;
	return 0;
}

int fs_empty_dir(const char *path)
{
	int rc = fs_remove_tree(path);

	return rc ? rc : fs_mkdirs(path);
}
