/*
 * freeze.c -- stop an attempt's processes for a snapshot (freeze.h).
 *
 * Invariants:
 *  1. Every process found is sent SIGSTOP before the next /proc scan, and
 *     the scans repeat until one finds no new process: a process created
 *     by one not yet stopped is found by the next scan.
 *  2. freeze_tree() returns 0 only once every process found is stopped or
 *     gone -- except the init of an attempt's PID namespace, which the
 *     kernel does not stop and which writes nothing.
 */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/clock.h"
#include "harness/proc/freeze.h"

static bool member(const struct frozen *f, pid_t p)
{
	for (size_t i = 0; i < f->n; i++)
		if (f->pids[i] == p)
			return true;
	return false;
}

static int add(struct frozen *f, pid_t p)
{
	pid_t *v;

	if (member(f, p))
		return 0;
	if (f->n >= FREEZE_MAX)
		return FC_IO;
	v = realloc(f->pids, (f->n + 1) * sizeof(*v));
	if (!v)
		return FC_NOMEM;
	f->pids = v;
	f->pids[f->n++] = p;
	if (kill(p, SIGSTOP) < 0 && errno != ESRCH)
		return FC_IO;
	return 0;
}

/* Add the children of every thread of p; *added counts the new ones. */
static int add_children(struct frozen *f, pid_t p, size_t *added)
{
	char path[64];
	DIR *d;
	struct dirent *de;
	int rc = 0;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)p);
	if (!(d = opendir(path)))
		return 0; /* gone */
	while (!rc && (de = readdir(d))) {
		char cpath[300];
		FILE *c;
		long child;
		size_t before;

		if (de->d_name[0] == '.')
			continue;
		snprintf(cpath, sizeof(cpath), "/proc/%d/task/%s/children",
			 (int)p, de->d_name);
		if (!(c = fopen(cpath, "re")))
			continue;
		while (!rc && fscanf(c, "%ld", &child) == 1) {
			before = f->n;
			rc = add(f, (pid_t)child);
			*added += f->n - before;
		}
		fclose(c);
	}
	closedir(d);
	return rc;
}

/* 'T', 't', 'Z', 'X', or 0 when gone. */
static char state_of(pid_t p)
{
	char path[64], buf[512], *close_paren;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)p);
	if (!(f = fopen(path, "re")))
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	close_paren = strrchr(buf, ')');
	return close_paren && close_paren[1] == ' ' ? close_paren[2] : 0;
}

/* Is p the init of a PID namespace below ours (NSpid ends in 1)? */
static bool namespace_init(pid_t p)
{
	char path[64], line[256];
	FILE *f;
	bool init = false;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)p);
	if (!(f = fopen(path, "re")))
		return false;
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, "NSpid:", 6) == 0) {
			char *last = strrchr(line, '\t');
			init = last && strtol(last + 1, NULL, 10) == 1 &&
			       strchr(line + 6, '\t') != last;
			break;
		}
	fclose(f);
	return init;
}

static bool all_stopped(const struct frozen *f, pid_t skip)
{
	for (size_t i = 0; i < f->n; i++) {
		char s;
		if (f->pids[i] == skip)
			continue;
		s = state_of(f->pids[i]);
		if (s && s != 'T' && s != 't' && s != 'Z' && s != 'X')
			return false;
	}
	return true;
}

int freeze_tree(pid_t root, struct frozen *f)
{
	long long deadline = clock_mono_ms() + FREEZE_WAIT_MS;
	pid_t skip;
	size_t added;
	int rc;

	memset(f, 0, sizeof(*f));
	f->group = root;
	if (kill(-root, SIGSTOP) < 0 && errno != ESRCH)
		return FC_IO;
	rc = add(f, root);
	skip = namespace_init(root) ? root : 0;
	do { /* invariant 1 */
		added = 0;
		for (size_t i = 0; !rc && i < f->n; i++)
			rc = add_children(f, f->pids[i], &added);
	} while (!rc && added);
	while (!rc && !all_stopped(f, skip)) { /* invariant 2 */
		if (clock_mono_ms() > deadline)
			rc = FC_IO;
		else
			nanosleep(&(struct timespec){ .tv_nsec = 100000 }, NULL);
	}
	if (rc)
		freeze_thaw(f);
	return rc;
}

void freeze_thaw(struct frozen *f)
{
	for (size_t i = 0; i < f->n; i++)
		kill(f->pids[i], SIGCONT);
	if (f->group > 0)
		kill(-f->group, SIGCONT);
	free(f->pids);
	memset(f, 0, sizeof(*f));
}
